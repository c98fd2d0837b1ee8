"""--ckpt-keep-every: a history of checkpoints, each a full state that evaluates and resumes exactly."""

import os

import pytest
import torch

from fastjem.checkpoint import load_checkpoint
from fastjem.train import Trainer, resume_config


def params(state):
    return torch.cat([v.flatten().float() for v in state["model"].values()])


def test_every_nth_checkpoint_is_kept_and_resumes_exactly(tiny_config, tmp_path):
    run = tmp_path / "run"
    Trainer(tiny_config.replace(iters=12, ckpt_every=0, ckpt_keep_every=4), out_dir=run, progress=False).fit()
    kept = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert kept == ["iter_0000004.pt", "iter_0000008.pt", "iter_0000012.pt"]
    states = {n: load_checkpoint(run / "checkpoints" / f"iter_{n:07d}.pt") for n in (4, 8, 12)}
    assert [s["iteration"] for s in states.values()] == [4, 8, 12]
    assert not torch.equal(params(states[4]), params(states[8]))
    # the last one holds the latest checkpoint's state, in a file of its own
    assert not os.path.samefile(run / "checkpoints" / "iter_0000012.pt", run / "checkpoint.pt")
    assert (run / "checkpoints" / "iter_0000012.pt").read_bytes() == (run / "checkpoint.pt").read_bytes()
    # an old state resumes exactly: from iteration 4 to 8 it reaches the kept iteration 8 bitwise
    old = run / "checkpoints" / "iter_0000004.pt"
    branch = Trainer(resume_config(old, {"iters": 8}), out_dir=tmp_path / "branch", resume=old, progress=False)
    branch.fit()
    assert torch.equal(params(load_checkpoint(tmp_path / "branch")), params(states[8]))


def test_a_kept_checkpoint_survives_checkpoint_pt_overwritten_in_place(tiny_config, tmp_path):
    """``cp checkpoints/iter_2.pt checkpoint.pt`` (going back by hand) writes into checkpoint.pt's file: the kept
    state of the last iteration must not change with it (a hard link shared that file)."""
    import shutil

    run = tmp_path / "run"
    Trainer(tiny_config.replace(iters=4, ckpt_keep_every=2), out_dir=run, progress=False).fit()
    kept = run / "checkpoints" / "iter_0000004.pt"
    before = kept.read_bytes()
    shutil.copyfile(run / "checkpoints" / "iter_0000002.pt", run / "checkpoint.pt")
    assert kept.read_bytes() == before and load_checkpoint(kept)["iteration"] == 4
    assert load_checkpoint(run)["iteration"] == 2
    assert not list((run / "checkpoints").glob(".*"))  # no temporary files left


def test_eval_over_the_checkpoint_history(tiny_config, tmp_path, capsys):
    import json

    from fastjem.cli import main

    run = tmp_path / "run"
    Trainer(tiny_config.replace(iters=12, ckpt_every=0, ckpt_keep_every=4, lr=3e-3), out_dir=run,
            progress=False).fit()
    assert main(["eval", str(run / "checkpoints"), "accuracy", "--device", "cpu", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    out = run / "checkpoints" / "eval-history"
    history = json.loads((out / "accuracy_history.json").read_text())
    assert [r["iteration"] for r in history["rows"]] == [4, 8, 12]
    # each row is that checkpoint's own report, which stays beside it
    for row in history["rows"]:
        single = json.loads((out / f"iter_{row['iteration']:07d}" / "accuracy.json").read_text())
        assert row["plain acc"] == single["results"]["acc"] and single["iteration"] == row["iteration"]
    assert (out / "accuracy_history.png").exists()
    assert printed.count("\n") > 4 and "plain acc" in printed
    # each checkpoint as it starts, and where the reports went
    assert "[1/3] iter_0000004.pt\n" in printed and "[3/3] iter_0000012.pt\n" in printed
    assert f"per checkpoint: {out}/<checkpoint>/; history: {out / 'accuracy_history.json'}, " in printed
    # one task at a time; a single checkpoint still works as before
    assert main(["eval", str(run / "checkpoints"), "all"]) == 1
    assert "one task at a time" in capsys.readouterr().err
    assert main(["eval", str(run / "checkpoints" / "iter_0000008.pt"), "accuracy", "--device", "cpu",
                 "--no-progress"]) == 0
    assert (run / "checkpoints" / "eval-iter_0000008" / "accuracy.json").exists()


def test_an_unreadable_checkpoint_does_not_stop_the_history(tiny_config, tmp_path, capsys):
    """A kept checkpoint cut short (a copy, a full disk): the others are evaluated and make the history, the bad one
    is named with its error, and the command fails (status 1). It stopped at the bad checkpoint, with no history."""
    import json

    from fastjem.cli import main

    run = tmp_path / "run"
    Trainer(tiny_config.replace(iters=6, ckpt_every=0, ckpt_keep_every=2), out_dir=run, progress=False).fit()
    ckpts = run / "checkpoints"
    (ckpts / "iter_0000004.pt").write_bytes((ckpts / "iter_0000004.pt").read_bytes()[:100])
    assert main(["eval", str(ckpts), "accuracy", "--device", "cpu", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "  iter_0000004.pt: not evaluated: " in err
    assert "1 of 3 checkpoints not evaluated (iter_0000004.pt)" in err
    history = json.loads((ckpts / "eval-history" / "accuracy_history.json").read_text())
    assert [r["iteration"] for r in history["rows"]] == [2, 6]
    for name in ("iter_0000002.pt", "iter_0000006.pt"):
        (ckpts / name).write_bytes(b"not a checkpoint")
    assert main(["eval", str(ckpts), "accuracy", "--device", "cpu", "--no-progress",
                 "--out-dir", str(tmp_path / "none")]) == 1
    assert f"none of the 3 checkpoints in {ckpts} could be evaluated" in capsys.readouterr().err


def test_history_headlines_hold_only_the_tasks_measures():
    from fastjem.eval.history import headline

    ood = {"results": {"auroc": {"uniform": {"logpx": 0.9, "maxprob": 0.8, "grad_norm": 0.7, "n": 1000}}}}
    assert headline("ood", ood) == {"AUROC uniform logpx": 0.9, "AUROC uniform maxprob": 0.8,
                                    "AUROC uniform grad_norm": 0.7}
    acc = {"results": {"n": 360, "plain": {"n_steps": 0, "acc": 0.9, "nll": 0.3}, "acc": 0.9, "nll": 0.3}}
    assert headline("accuracy", acc) == {"plain acc": 0.9, "plain NLL": 0.3}
    # the evaluated model's ECE under one key; a compared model's under its name
    cal = {"checkpoint": "a.pt", "results": {"models": [{"checkpoint": "a.pt", "name": "a", "ece": 0.05},
                                                         {"checkpoint": "b.pt", "name": "base", "ece": 0.1}]}}
    assert headline("calibration", cal) == {"ECE": 0.05, "ECE base": 0.1}
    rob = {"results": {"accuracy": {"linf": {"0": [{"eps": 0.0, "acc": 0.9}, {"eps": 8 / 255, "acc": 0.3}]},
                                    "l2": {"10": [{"eps": 0.5, "acc": 0.6}]}}}}
    assert headline("robustness", rob) == {"linf refine=0 eps=0 acc": 0.9, "linf refine=0 eps=0.0314 acc": 0.3,
                                           "l2 refine=10 eps=0.5 acc": 0.6}
    assert headline("fid", {"results": {"fid": 42.0, "n": 1000}}) == {"FID": 42.0}


def test_the_history_table_shows_each_checkpoints_numbers_and_says_how_many_more_there_are():
    from fastjem.eval.history import format_history

    keys = [f"n{i}" for i in range(7)]
    rows = [{"iteration": 4, **{k: 0.5 + i / 10 for i, k in enumerate(keys)}}, {"iteration": 12, "n0": 0.25}]
    text = format_history({"rows": rows, "keys": keys}).splitlines()
    assert text[0].split() == ["iteration", *keys[:6]] and text[-1] == "(+1 more in the JSON and the plot)"
    # numbers right-aligned under their headings
    assert text[2] == "        4  0.5000  0.6000  0.7000  0.8000  0.9000  1.0000"
    assert text[3] == "       12  0.2500       -       -       -       -       -"
    assert "more in the JSON" not in format_history({"rows": rows, "keys": keys[:6]})


def test_the_history_plot_draws_each_number_against_iteration_three_panels_a_row(tmp_path, monkeypatch):
    """A panel per number (the first twelve), three a row, each the number's values at the checkpoints' iterations
    (a gap where a checkpoint lacks it); a number that barely moves is drawn flat, not as noise blown up."""
    import math

    import fastjem.eval.plots as plots
    from fastjem.eval.history import plot_history

    figs = []
    save = plots._save  # still written: the figure is kept to read back its panels
    monkeypatch.setattr(plots, "_save", lambda fig, path, tight=False: figs.append(fig) or save(fig, path, tight))
    keys = [f"n{i}" for i in range(14)]
    rows = [{"iteration": it, "checkpoint": f"iter_{it}.pt", **{k: it / 100 + j for j, k in enumerate(keys)}}
            for it in (4, 8, 12)]
    del rows[1]["n0"]
    for r, flat, moving in zip(rows, (0.9, 0.902, 0.904), (0.5, 0.51, 0.515)):
        r["n1"], r["n2"], r["n3"] = flat, moving, math.nan  # n3: a number that was NaN throughout (a diverged run)
    assert plot_history({"task": "accuracy", "rows": rows, "keys": keys}, tmp_path / "h.png").stat().st_size > 0
    axes = figs[-1].axes
    assert [ax.get_title() for ax in axes] == keys[:12]
    assert [(ax.get_subplotspec().rowspan.start, ax.get_subplotspec().colspan.start) for ax in axes] == \
        [divmod(i, 3) for i in range(12)]
    # the bottom row's panels say what the shared x axis is
    assert [ax.get_xlabel() for ax in axes] == [""] * 9 + ["iteration"] * 3
    for ax, key in zip(axes, keys):
        x, y = ax.lines[0].get_data()
        assert list(x) == [4, 8, 12]
        assert [v if math.isfinite(v) else None for v in y] == [r.get(key) if key != "n3" else None for r in rows]
    assert axes[1].get_ylim() == pytest.approx((0.902 - 0.005, 0.902 + 0.005), abs=1e-9)
    assert not any(ax.yaxis.get_major_formatter().get_useOffset() for ax in axes)  # 0.902, not 2e-3 + 0.9
    lo, hi = axes[2].get_ylim()
    assert lo < 0.5 and hi > 0.515  # a number that moves 0.015 is drawn on its own scale, every point in view
    # two numbers: two panels in one row; none: one empty panel, hidden
    plot_history({"task": "fid", "rows": rows, "keys": keys[:2]}, tmp_path / "h2.png")
    assert [(ax.get_subplotspec().rowspan.start, ax.get_subplotspec().colspan.start) for ax in figs[-1].axes] == \
        [(0, 0), (0, 1)]
    plot_history({"task": "fid", "rows": rows, "keys": []}, tmp_path / "h0.png")
    assert len(figs[-1].axes) == 1 and not figs[-1].axes[0].axison
    # a history of one checkpoint
    from fastjem.eval.history import write_history

    # the folder may be given as text, as the signature allows
    one = write_history("fid", [{"iteration": 4, "checkpoint": "iter_4.pt", "results": {"fid": 42.0}}], str(tmp_path))
    assert one["keys"] == ["FID"] and one["rows"] == [{"iteration": 4, "checkpoint": "iter_4.pt", "FID": 42.0}]
    assert os.path.exists(one["json"]) and os.path.exists(one["png"])


def test_a_diverged_seed_does_not_turn_its_combinations_mean_into_nan(tmp_path):
    """In a sweep's comparison, a run whose number is NaN (diverged) is left out of its combination's mean and
    spread: the others' finite mean and sample standard deviation stand."""
    import json

    from fastjem.eval.history import compare_runs

    (tmp_path / "sweep.json").write_text(json.dumps({"grid": {"lr": [0.1]}}))
    runs, reports = [], []
    for seed, acc in ((1, 0.8), (2, float("nan")), (3, 0.9)):
        run = tmp_path / f"lr=0.1+seed={seed}"
        run.mkdir()
        (run / "config.json").write_text(json.dumps({"lr": 0.1, "seed": seed}))
        runs.append(run)
        reports.append({"dataset": "digits", "results": {"test": {"acc": acc, "nll": 1.0}}})
    result = compare_runs("accuracy", reports, runs, str(tmp_path / "out"))  # a folder given as text
    assert os.path.exists(result["json"])

    def refuse(token):
        raise ValueError(f"not strict JSON: {token}")

    # the file every JSON reader takes: the NaN as null, not Python's bare NaN token
    written = json.loads(open(result["json"]).read(), parse_constant=refuse)
    assert [row["test acc"] for row in written["rows"]] == [0.8, None, 0.9]
    (group,) = result["groups"]
    assert group["runs"] == 3 and group["test acc"][0] == pytest.approx(0.85)
    # the spread is the sample standard deviation (over n - 1), as fastjem sweep's table gives it
    assert group["test acc"][1] == pytest.approx(0.1 / 2 ** 0.5)


def test_a_folder_of_checkpoints_is_taken_in_iteration_order(tiny_config, tmp_path):
    """iter_1 before iter_3 before iter_10 (not by name), and a checkpoint under another name by the iteration it
    holds; the samples task's headline is its conditional samples' class agreement."""
    import shutil

    from fastjem.eval.history import checkpoint_history, headline

    Trainer(tiny_config.replace(iters=2), out_dir=tmp_path / "run", progress=False).fit()
    (tmp_path / "ckpts").mkdir()
    for it in (10, 1, 3):
        (tmp_path / "ckpts" / f"iter_{it}.pt").write_bytes(b"")  # ordered by name: never opened
    # iteration 2, under a name whose digits are not an iteration
    shutil.copy(tmp_path / "run" / "checkpoint.pt", tmp_path / "ckpts" / "backup7.pt")
    assert [p.name for p in checkpoint_history(tmp_path / "ckpts")] == ["iter_1.pt", "backup7.pt", "iter_3.pt",
                                                                         "iter_10.pt"]
    # a run folder, or a checkpoint file, is one checkpoint: no history
    assert checkpoint_history(tmp_path / "run") is None
    assert checkpoint_history(tmp_path / "run" / "checkpoint.pt") is None
    rep = {"results": {"conditional": {"fraction_classified_as_target": 0.7}}}
    assert headline("samples", rep) == {"conditional samples classified as their class": 0.7}


def test_a_folder_without_checkpoints_is_named_as_such_not_as_an_empty_history(tmp_path, capsys):
    """A folder with no .pt in it (a hidden partial write does not count) is not a history of no checkpoints: eval
    says it has no checkpoint.pt, for one task and for all (not 'one task at a time')."""
    from fastjem.cli import main

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "readme.txt").write_text("no checkpoints here")
    (folder / ".checkpoint.pt.tmp.pt").write_bytes(b"partial")
    for task in ("accuracy", "all"):
        assert main(["eval", str(folder), task, "--device", "cpu", "--no-progress"]) == 1
        err = capsys.readouterr().err
        assert f"{folder} is a folder without checkpoint.pt in it" in err and "one task at a time" not in err
        assert "checkpoint files" not in err  # the partial write is none to give
    assert sorted(p.name for p in folder.iterdir()) == [".checkpoint.pt.tmp.pt", "readme.txt"]

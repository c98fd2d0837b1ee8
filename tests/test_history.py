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
    # one task at a time; a single checkpoint still works as before
    assert main(["eval", str(run / "checkpoints"), "all"]) == 1
    assert "one task at a time" in capsys.readouterr().err
    assert main(["eval", str(run / "checkpoints" / "iter_0000008.pt"), "accuracy", "--device", "cpu",
                 "--no-progress"]) == 0
    assert (run / "checkpoints" / "eval-iter_0000008" / "accuracy.json").exists()


def test_history_headlines_hold_only_the_tasks_measures():
    from fastjem.eval.history import headline

    ood = {"results": {"auroc": {"uniform": {"logpx": 0.9, "maxprob": 0.8, "grad_norm": 0.7, "n": 1000}}}}
    assert headline("ood", ood) == {"AUROC uniform logpx": 0.9, "AUROC uniform maxprob": 0.8,
                                    "AUROC uniform grad_norm": 0.7}
    acc = {"results": {"n": 360, "plain": {"n_steps": 0, "acc": 0.9, "nll": 0.3}, "acc": 0.9, "nll": 0.3}}
    assert headline("accuracy", acc) == {"plain acc": 0.9, "plain NLL": 0.3}


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
    result = compare_runs("accuracy", reports, runs, tmp_path / "out")
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
    shutil.copy(tmp_path / "run" / "checkpoint.pt", tmp_path / "ckpts" / "mid.pt")  # iteration 2
    assert [p.name for p in checkpoint_history(tmp_path / "ckpts")] == ["iter_1.pt", "mid.pt", "iter_3.pt",
                                                                         "iter_10.pt"]
    rep = {"results": {"conditional": {"fraction_classified_as_target": 0.7}}}
    assert headline("samples", rep) == {"conditional samples classified as their class": 0.7}

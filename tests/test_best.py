"""best.pt: the state of best validation accuracy (the authors' model selection), kept safely."""

import json

import pytest

from fastjem.checkpoint import load_checkpoint
from fastjem.cli import main
from fastjem.errors import ConfigError
from fastjem.train import Trainer, evaluate, resume_config


def val_records(run):
    lines = [json.loads(s) for s in (run / "metrics.jsonl").read_text().splitlines()]
    return [r for r in lines if "val_acc" in r]


def test_best_pt_holds_the_state_of_best_validation_accuracy(tiny_config, tmp_path):
    # lr x1e6 at iteration 14 wrecks the network (guard off, so nothing rolls it back): the best lies before
    cfg = tiny_config.replace(iters=24, eval_every=4, guard=False, lr=3e-3)
    t = Trainer(cfg, out_dir=tmp_path, progress=False)
    t.inject_fault(14, "lr")
    summary = t.fit()
    evals = val_records(tmp_path)
    assert [r["iter"] for r in evals] == [4, 8, 12, 16, 20, 24]
    accs = [r["val_acc"] for r in evals]
    best_iter = evals[accs.index(max(accs))]["iter"]  # the first of equal maxima: ties keep the earlier state
    assert best_iter <= 12 and accs[-1] < max(accs)
    # a record says "best" exactly where the validation accuracy beat every earlier one
    running = [max(accs[:i + 1]) for i in range(len(accs))]
    assert [r["best"] for r in evals] == [i == 0 or accs[i] > running[i - 1] for i in range(len(accs))]

    ckpt = load_checkpoint(tmp_path / "best.pt")
    assert ckpt["iteration"] == best_iter
    assert ckpt["best"] == {"iter": best_iter, "val_acc": max(accs)}
    model = t.model
    model.load_state_dict(ckpt["model"])
    assert evaluate(model, t.data.val_x, t.data.val_y)["acc"] == max(accs)
    best = summary["best"]
    assert (best["iter"], best["val_acc"]) == (best_iter, max(accs))
    assert best["test_acc"] == evaluate(model, t.data.test_x, t.data.test_y)["acc"]
    assert best["test_acc"] != summary["test_acc"]
    # the latest checkpoint is the final state, not the best one
    assert load_checkpoint(tmp_path / "checkpoint.pt")["iteration"] == 24


def test_without_validation_or_when_switched_off_no_best_pt(tiny_config, tmp_path):
    Trainer(tiny_config.replace(iters=4), out_dir=tmp_path / "a", progress=False).fit()
    summary = Trainer(tiny_config.replace(iters=4, eval_every=2, keep_best=False), out_dir=tmp_path / "b",
                      progress=False).fit()
    assert not (tmp_path / "a" / "best.pt").exists() and not (tmp_path / "b" / "best.pt").exists()
    assert summary["best"] is None
    # and no record says a best state was kept
    assert [r["best"] for r in val_records(tmp_path / "b")] == [False, False]


def test_an_unhealthy_state_never_becomes_best_and_a_rollback_remembers_best(tiny_config, tmp_path):
    t = Trainer(tiny_config.replace(eval_every=4), out_dir=tmp_path, progress=False)
    t.guard.take_snapshot()
    for _ in range(2):
        t.train_step()
    t.guard.flag.fill_(True)  # what observe() sets when a loss or energy goes bad
    assert t.keep_if_best(2, 0.9) is False  # what the validation record's "best" holds (false, not null)
    assert t.best is None and not (tmp_path / "best.pt").exists()
    t.guard.flag.zero_()
    assert t.keep_if_best(2, 0.9)
    assert load_checkpoint(tmp_path / "best.pt")["iteration"] == 2
    assert not t.keep_if_best(3, 0.9) and not t.keep_if_best(3, 0.5)  # not better: best.pt stays iteration 2
    assert load_checkpoint(tmp_path / "best.pt")["iteration"] == 2
    # rolling back to the snapshot (taken before best.pt) must not forget best.pt's record, or a worse state
    # than the one in best.pt could be written over it
    t.guard.restore_snapshot()
    assert t.iteration == 0 and t.best == {"iter": 2, "val_acc": 0.9}
    assert not t.keep_if_best(1, 0.8)


def test_best_pt_resumes_into_another_folder_only(tiny_config, tmp_path, capsys):
    run = tmp_path / "run"
    args = ["--width", "8", "--batch-size", "16", "--sgld-steps", "2", "--buffer-size", "100", "--log-every", "2",
            "--device", "cpu", "--no-compile", "--no-progress", "--eval-every", "2"]
    assert main(["train", "--iters", "6", "--out-dir", str(run), *args]) == 0
    out = capsys.readouterr().out
    best = load_checkpoint(run / "best.pt")
    assert f"best            {run / 'best.pt'}: iteration {best['iteration']}" in out
    latest = (run / "checkpoint.pt").read_bytes()
    # eval and sample read best.pt like any checkpoint; their outputs go apart from the latest checkpoint's
    assert main(["eval", str(run / "best.pt"), "accuracy", "--device", "cpu"]) == 0
    report = json.loads((run / "eval-best" / "accuracy.json").read_text())
    assert report["checkpoint"] == str(run / "best.pt") and report["iteration"] == best["iteration"]
    assert main(["sample", str(run / "best.pt"), "-n", "4", "--n-steps", "2", "--device", "cpu"]) == 0
    assert (run / "sampled-best" / "unconditional.npz").exists()
    assert not (run / "eval").exists() and not (run / "sampled").exists()
    # continuing best.pt in its own folder would overwrite the run's latest checkpoint: refused, nothing changed
    assert main(["train", "--resume", str(run / "best.pt"), "--iters", "8", "--no-progress"]) == 1
    assert "would overwrite" in capsys.readouterr().err
    assert (run / "checkpoint.pt").read_bytes() == latest
    with pytest.raises(ConfigError, match="another --out-dir"):
        Trainer(resume_config(run / "best.pt"), out_dir=run, resume=run / "best.pt", progress=False)
    branch = tmp_path / "branch"
    assert main(["train", "--resume", str(run / "best.pt"), "--iters", "8", "--out-dir", str(branch),
                 "--no-progress"]) == 0
    assert load_checkpoint(branch / "checkpoint.pt")["iteration"] == 8
    # the branch keeps its own best.pt, of the states it evaluated (here its last, iteration 8)
    assert load_checkpoint(branch / "best.pt")["best"]["iter"] == 8
    assert (run / "checkpoint.pt").read_bytes() == latest


def test_a_resumed_run_keeps_its_best_record_only_while_best_pt_is_there(tiny_config, tmp_path):
    """Resumed in its folder, a run keeps the best record its checkpoint holds while best.pt is there; with best.pt
    gone the record goes too (the next validation starts a new best.pt)."""
    cfg = tiny_config.replace(iters=4, eval_every=2)
    Trainer(cfg, out_dir=tmp_path, progress=False, log=lambda *a: None).fit()
    ckpt = tmp_path / "checkpoint.pt"
    record = load_checkpoint(ckpt)["best"]
    assert record is not None and (tmp_path / "best.pt").exists()
    more = resume_config(ckpt, {"iters": 6})
    assert Trainer(more, out_dir=tmp_path, resume=ckpt, progress=False, log=lambda *a: None).best == record
    (tmp_path / "best.pt").unlink()
    assert Trainer(more, out_dir=tmp_path, resume=ckpt, progress=False, log=lambda *a: None).best is None


def test_a_resume_that_keeps_no_best_pt_reports_the_earlier_one_as_kept_until_it(tmp_path, capsys):
    """--no-keep-best (or --eval-every 0) on a resume leaves the best.pt of the run before it as it was: the summary
    and the end's report say it was kept until the resume, not that it is the best of this run's validations; a
    later resume that keeps best.pt again compares with it, and the caveat goes."""
    run = tmp_path / "run"
    args = ["--width", "8", "--batch-size", "16", "--sgld-steps", "2", "--buffer-size", "100", "--log-every", "2",
            "--device", "cpu", "--no-compile", "--no-progress"]
    assert main(["train", "--iters", "4", "--eval-every", "2", "--out-dir", str(run), *args]) == 0
    capsys.readouterr()
    before = (run / "best.pt").read_bytes()
    record = load_checkpoint(run / "best.pt")["best"]
    assert main(["train", "--resume", str(run / "checkpoint.pt"), "--iters", "8", "--no-keep-best",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    best = json.loads((run / "summary.json").read_text())["best"]
    assert (best["iter"], best["val_acc"], best["kept_until"]) == (record["iter"], record["val_acc"], 4)
    assert (f"iteration {record['iter']}, validation {record['val_acc']:.4f}, test {best['test_acc']:.4f} (kept until "
            "iteration 4; no later validation was compared with it: --no-keep-best)\n") in out
    assert (run / "best.pt").read_bytes() == before
    # a further resume that keeps none either: still kept until 4 (the checkpoint carries it)
    assert main(["train", "--resume", str(run / "checkpoint.pt"), "--iters", "10", "--eval-every", "0",
                 "--no-progress"]) == 0
    assert json.loads((run / "summary.json").read_text())["best"]["kept_until"] == 4
    assert "(kept until iteration 4; no later validation was compared with it: --no-keep-best)" in \
        capsys.readouterr().out
    # keeping again: compared from here on, no caveat
    assert main(["train", "--resume", str(run / "checkpoint.pt"), "--iters", "12", "--keep-best", "--eval-every", "2",
                 "--no-progress"]) == 0
    assert "kept until" not in capsys.readouterr().out
    assert "kept_until" not in json.loads((run / "summary.json").read_text())["best"]


def test_curves_mark_what_best_pt_holds(tiny_config, tmp_path):
    from fastjem.curves import read_metrics

    cfg = tiny_config.replace(iters=12, eval_every=4, guard=False)
    t = Trainer(cfg, out_dir=tmp_path, progress=False)
    t.inject_fault(6, "lr")
    t.fit()
    kept = [e for e in read_metrics(tmp_path).evals if e.get("best")]
    assert kept and kept[-1]["iter"] == load_checkpoint(tmp_path / "best.pt")["iteration"]
    assert (tmp_path / "curves.png").exists()


@pytest.mark.gpu
def test_best_history_time_limit_and_export_with_the_cuda_graphs(tiny_config, tmp_path):
    """This session's run-keeping features between replays of the whole-iteration CUDA graph."""
    from fastjem.export import export_classifier

    cfg = tiny_config.replace(device="cuda", iters=12, eval_every=4, ckpt_keep_every=6, compile="off")
    t = Trainer(cfg, out_dir=tmp_path / "run", progress=False)
    summary = t.fit()
    assert t.engine.iteration_graph and "iteration" in t._graphs  # the graph ran, and was not dropped
    best = load_checkpoint(tmp_path / "run" / "best.pt")
    assert summary["best"]["iter"] == best["iteration"] and best["iteration"] in (4, 8, 12)
    kept = sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir())
    assert kept == ["iter_0000006.pt", "iter_0000012.pt"]
    assert load_checkpoint(tmp_path / "run" / "checkpoints" / "iter_0000006.pt")["iteration"] == 6
    r = export_classifier(tmp_path / "run" / "best.pt", device="cuda")
    assert r["max_relative_difference"] <= 1e-5
    # a time limit stops a graphed run cleanly too
    more = resume_config(tmp_path / "run", {"iters": 100_000, "max_minutes": 0.01})
    stopped = Trainer(more, resume=tmp_path / "run", progress=False).fit()
    assert stopped["interrupted"] and 12 < stopped["iteration"] < 100_000


def test_a_damaged_best_pt_costs_its_report_not_the_end_of_the_run(tiny_config, tmp_path, monkeypatch):
    """best.pt truncated after the run wrote it: the end of the run (here a resume of a run killed after its last
    checkpoint) read it to report its test accuracy and failed there, at every attempt. Now a warning that says
    to move it away, and the run ends with its summary."""
    import itertools

    import fastjem.train

    accs = (0.9 - 0.01 * n for n in itertools.count())  # validation falls: best.pt stays at iteration 4

    def falling(*args, **kwargs):
        return {**evaluate(*args, **kwargs), "acc": next(accs)}

    monkeypatch.setattr(fastjem.train, "evaluate", falling)
    run = tmp_path / "run"
    cfg = tiny_config.replace(iters=8, eval_every=4, ckpt_every=4)
    assert Trainer(cfg, out_dir=run, progress=False, log=lambda *a: None).fit()["best"]["iter"] == 4
    best = run / "best.pt"
    best.write_bytes(best.read_bytes()[: best.stat().st_size // 2])
    (run / "summary.json").unlink()
    lines = []
    summary = Trainer(resume_config(run, {}), out_dir=run, resume=run, progress=False, log=lines.append).fit()
    assert summary["iteration"] == 8 and summary["best"] is None and (run / "summary.json").exists()
    warned = [s for s in lines if s.startswith("warning: the best validation state (iteration 4) is not reported")]
    assert len(warned) == 1 and f"Move {best} away" in warned[0]

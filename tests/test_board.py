"""--tensorboard: the run's scalars, sample grids and events, one value per iteration even after going back."""

import json
import shutil
import sys

import pytest

from fastjem.errors import ConfigError
from fastjem.train import Trainer, resume_config

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402


def board(run):
    ea = EventAccumulator(str(run / "tensorboard"), size_guidance={"scalars": 0, "images": 0, "tensors": 0})
    ea.Reload()
    return ea


def scalars(ea, tag):
    return [(e.step, e.value) for e in ea.Scalars(tag)]


def records(run):
    return [json.loads(s) for s in (run / "metrics.jsonl").read_text().splitlines()]


def test_scalars_validation_samples_and_config_reach_tensorboard(tiny_config, tmp_path):
    cfg = tiny_config.replace(iters=8, log_every=4, eval_every=4, sample_every=4, tensorboard=True)
    assert Trainer(cfg, out_dir=tmp_path, progress=False).fit()["tensorboard"] == str(tmp_path / "tensorboard")
    ea = board(tmp_path)
    train = [r for r in records(tmp_path) if "loss" in r]
    for key, tag in [("loss", "loss/total"), ("ce", "loss/cross_entropy"), ("acc", "accuracy/train_batch"),
                     ("e_data", "energy/data"), ("e_sample", "energy/samples"),
                     ("gap", "energy/gap_samples_minus_data"), ("lr", "schedule/learning_rate"),
                     ("it_per_s", "speed/iterations_per_s")]:
        got = scalars(ea, tag)
        assert [s for s, _ in got] == [r["iter"] for r in train] == [4, 8], tag
        assert [v for _, v in got] == pytest.approx([r[key] for r in train], rel=1e-6), tag
    val = [r for r in records(tmp_path) if "val_acc" in r]
    assert scalars(ea, "accuracy/validation") == [(r["iter"], pytest.approx(r["val_acc"], rel=1e-6)) for r in val]
    assert scalars(ea, "accuracy/test") == [(8, pytest.approx(val[-1]["test_acc"], rel=1e-6))]
    images = ea.Images("samples")
    assert [im.step for im in images] == [4, 8] and images[0].width > 0
    assert "config/text_summary" in ea.Tags()["tensors"]



def test_a_classifier_only_run_logs_no_energies(tiny_config, tmp_path):
    """A classifier-only run computes no energies: neither metrics.jsonl nor TensorBoard holds energy curves (they
    were zeros, drawn as a flat energy beside the JEM's in an ablation)."""
    cfg = tiny_config.replace(px_weight=0.0, iters=4, log_every=2, tensorboard=True)
    Trainer(cfg, out_dir=tmp_path, progress=False).fit()
    train = [r for r in records(tmp_path) if "loss" in r]
    assert [r["iter"] for r in train] == [2, 4] and all("acc" in r and "ce" in r for r in train)
    assert not any(k in r for r in train for k in ("e_data", "e_sample", "gap"))
    tags = board(tmp_path).Tags()["scalars"]
    assert "loss/total" in tags and not [t for t in tags if t.startswith("energy/")]


def test_train_with_tensorboard_says_where_the_log_is_and_how_to_open_it(tmp_path, capsys):
    from fastjem.cli import main

    run = tmp_path / "run"
    assert main(["train", "--tensorboard", "--iters", "2", "--log-every", "2", "--out-dir", str(run), "--width", "8",
                 "--batch-size", "16", "--sgld-steps", "2", "--buffer-size", "100", "--device", "cpu", "--no-compile",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert f"  tensorboard     {run / 'tensorboard'} (tensorboard --logdir {run / 'tensorboard'})" in out
    assert f"  curves          {run / 'curves.png'}" in out
    assert scalars(board(run), "loss/total")


def test_a_run_that_fails_still_writes_what_it_logged_to_tensorboard(tiny_config, tmp_path, monkeypatch):
    """A run stopped by an error (a divergence without the guard) closes its event file on the way out: what it
    logged before is on disk at once, not waiting for the writer's next timed flush (nor left open in a notebook
    that goes on)."""
    from fastjem.board import TensorBoardLog
    from fastjem.train import DivergedError

    closed = []
    close = TensorBoardLog.close
    monkeypatch.setattr(TensorBoardLog, "close", lambda self: closed.append(self) or close(self))
    t = Trainer(tiny_config.replace(iters=12, log_every=2, guard=False, tensorboard=True), out_dir=tmp_path,
                progress=False)
    t.inject_fault(6, "nan")  # the step to iteration 7; the record of 8 finds the loss NaN, logs it and stops
    with pytest.raises(DivergedError):
        t.fit()
    assert [s for s, _ in scalars(board(tmp_path), "loss/total")] == [2, 4, 6, 8]
    assert closed == [t.board]


def test_a_stop_that_meets_a_divergence_logs_the_rollback_and_leaves_the_log_closed(tiny_config, tmp_path):
    """A stop between a divergence and its check recovers after the loop has closed the log: the rollback's event
    and purge are written, and the writer is closed again (the rewind reopened it, and the run's end left it open)."""
    import os
    import signal

    cfg = tiny_config.replace(iters=8, check_every=4, snapshot_every=4, log_every=4, lr=5e-3, tensorboard=True)
    t = Trainer(cfg, out_dir=tmp_path, progress=False, log=lambda *a: None)
    t.inject_fault(5, "nan")
    step = t.train_step

    def stop_at_7():
        if t.iteration == 6:
            os.kill(os.getpid(), signal.SIGTERM)
        return step()

    t.train_step = stop_at_7
    assert t.fit()["interrupted"] and t.iteration == 4
    assert t.board.writer.all_writers is None  # closed: everything on disk, no thread left writing
    text = board(tmp_path).Tensors("events/text_summary")
    assert [e.step for e in text] == [5] and b"rolled back to iteration 4" in text[0].tensor_proto.string_val[0]


def test_a_rollback_and_a_resume_leave_one_value_per_iteration(tiny_config, tmp_path):
    # a NaN at iteration 13 is found at the check of 14 and rolled back to the snapshot of 8: 10 and 12 run twice
    cfg = tiny_config.replace(iters=20, check_every=2, snapshot_every=8, log_every=2, lr=5e-3, tensorboard=True,
                              sample_every=4)
    t = Trainer(cfg, out_dir=tmp_path, progress=False)
    t.inject_fault(13, "nan")
    assert t.fit()["recoveries"] == 1
    logged = [r for r in records(tmp_path) if "loss" in r]
    assert [r["iter"] for r in logged].count(10) == 2
    last = {r["iter"]: r["loss"] for r in logged}  # what the run finally computed at each iteration
    got = scalars(board(tmp_path), "loss/total")
    assert [s for s, _ in got] == sorted(last)
    assert [v for _, v in got] == pytest.approx([last[s] for s in sorted(last)], rel=1e-6)
    text = board(tmp_path).Tensors("events/text_summary")
    assert len(text) == 1 and text[0].step == 9 and b"rolled back to iteration 8" in text[0].tensor_proto.string_val[0]
    # the grid of 12 was purged with the rollback and drawn again when the run got back there
    assert [e.step for e in board(tmp_path).Images("samples")] == [4, 8, 12, 16, 20]

    # a resume from an older checkpoint than what was logged: the later steps are logged once, not twice
    run = tmp_path / "resumed"
    Trainer(tiny_config.replace(iters=4, log_every=1, tensorboard=True), out_dir=run, progress=False).fit()
    shutil.copy(run / "checkpoint.pt", tmp_path / "at4.pt")
    for _ in range(2):
        Trainer(resume_config(run / "checkpoint.pt", {"iters": 8}), out_dir=run, resume=run / "checkpoint.pt",
                progress=False).fit()
        shutil.copy(tmp_path / "at4.pt", run / "checkpoint.pt")
    # metrics.jsonl too: the records past the checkpoint a resume continues from go (they are logged again)
    assert [r["iter"] for r in records(run) if "loss" in r] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert [s for s, _ in scalars(board(run), "loss/total")] == [1, 2, 3, 4, 5, 6, 7, 8]
    # the options are written once, by the run that started at iteration 0, not again by each resume
    assert [e.step for e in board(run).Tensors("config/text_summary")] == [0]


def test_a_resume_at_iteration_0_purges_what_the_killed_attempt_logged(tiny_config, tmp_path):
    """A rollback to the start is checkpointed at iteration 0; a run killed after it and resumed there purges the steps
    its killed attempt logged (a resume at 0 opened the log as a new run's: those steps were there twice) and does not
    write the options again."""
    cfg = tiny_config.replace(iters=8, check_every=2, snapshot_every=8, log_every=2, lr=5e-3, ckpt_every=8,
                              tensorboard=True)
    t = Trainer(cfg, out_dir=tmp_path, progress=False, log=lambda *a: None)
    t.inject_fault(3, "nan")
    step = t.train_step

    def step_then_die():
        out = step()
        if t.recovery.recoveries == 1 and t.iteration == 5:
            raise KeyboardInterrupt  # a kill: fit ends without its checkpoint
        return out

    t.train_step = step_then_die
    with pytest.raises(KeyboardInterrupt):
        t.fit()
    assert [s for s, _ in scalars(board(tmp_path), "loss/total")] == [2, 4]
    Trainer(cfg, resume=tmp_path / "checkpoint.pt", progress=False, log=lambda *a: None).fit()
    assert [s for s, _ in scalars(board(tmp_path), "loss/total")] == [2, 4, 6, 8]
    assert [e.step for e in board(tmp_path).Tensors("config/text_summary")] == [0]


def test_a_finished_run_resumed_at_its_end_logs_its_last_step_once(tiny_config, tmp_path):
    """fastjem train --resume on a finished run finishes it again: metrics.jsonl drops the end record and writes it
    anew, and TensorBoard likewise holds one value per tag at the last step (the training record that metrics.jsonl
    keeps there included), not the end's validation, test and sample grid twice."""
    cfg = tiny_config.replace(iters=6, log_every=3, eval_every=3, tensorboard=True)
    Trainer(cfg, out_dir=tmp_path, progress=False).fit()
    Trainer(resume_config(tmp_path / "checkpoint.pt", {}), out_dir=tmp_path, resume=tmp_path / "checkpoint.pt",
            progress=False).fit()
    ea = board(tmp_path)
    logged = records(tmp_path)
    assert [r["iter"] for r in logged if "test_acc" in r] == [6]
    for key, tag in [("loss", "loss/total"), ("acc", "accuracy/train_batch"), ("val_acc", "accuracy/validation"),
                     ("test_acc", "accuracy/test")]:
        want = [(r["iter"], pytest.approx(r[key], rel=1e-6)) for r in logged if key in r]
        assert scalars(ea, tag) == want, tag
    assert [e.step for e in ea.Images("samples")] == [6]


def test_without_the_tensorboard_package_the_run_says_what_to_install(tiny_config, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # import fails as if not installed
    with pytest.raises(ConfigError, match="pip install tensorboard"):
        Trainer(tiny_config.replace(tensorboard=True), out_dir=tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()
    Trainer(tiny_config.replace(iters=2), out_dir=tmp_path / "run", progress=False).fit()  # off: not needed


class RecordingWriter:
    """Stands in for SummaryWriter: what TensorBoardLog asks of it, in order; add_scalar fails once told to."""

    calls: list = []
    fail = False

    def __init__(self, folder, purge_step=None, flush_secs=120):
        self.calls.append(("open", purge_step))

    def add_scalar(self, tag, value, step):
        if RecordingWriter.fail:
            raise OSError(28, "No space left on device")
        self.calls.append(("scalar", tag, value, step))

    def add_image(self, tag, grid, step):
        self.calls.append(("image", tag, step))

    def add_text(self, tag, text, step):
        self.calls.append(("text", tag, step))

    def close(self):
        self.calls.append(("close",))


def test_a_writer_reopened_in_the_same_second_sorts_after_the_earlier_ones(tmp_path):
    """TensorBoard reads a folder's event files in name order (creation second, host, pid, per-process count): a
    rewind or resume in the same process opens its file in a later second, so the files sort in the order they were
    made whatever the count (".10" sorted before ".9", and a purged step came back from the earlier file)."""
    from fastjem.board import TensorBoardLog

    log = TensorBoardLog(tmp_path, 0, config={"lr": 1e-4})
    made = []
    for step in (4, 2):
        made += [p for p in tmp_path.glob("events.out.tfevents.*") if p not in made]
        log.scalars(step + 1, {"loss": 1.0})
        log.rewind(step, "rolled back")
    log.close()
    made += [p for p in tmp_path.glob("events.out.tfevents.*") if p not in made]
    assert len(made) == 3 and sorted(made) == made
    assert len({p.name.split(".")[3] for p in made}) == 3  # each in a second of its own


def test_the_log_purges_from_any_later_step_logs_numbers_only_and_rewrites_purged_images(tmp_path, monkeypatch):
    """Opened at iteration 1 or later it purges from there (at 0 there is nothing to purge); only known metrics with
    a number (not a bool, not None) become scalars; a rewind to N rewrites an image logged at N (purged with it); a
    failed write closes the writer and stops logging."""
    import torch

    import fastjem.board as board_module

    monkeypatch.setattr(board_module, "_summary_writer", lambda: RecordingWriter)
    monkeypatch.setattr(RecordingWriter, "calls", [])
    log = board_module.TensorBoardLog(tmp_path, 0, config={"lr": 1e-4})
    assert RecordingWriter.calls == [("open", None), ("text", "config", 0)]
    board_module.TensorBoardLog(tmp_path, 1, config={"lr": 1e-4})  # a resume: no config again
    assert RecordingWriter.calls[2:] == [("open", 1)]
    del RecordingWriter.calls[:]
    log.scalars(5, {"iter": 5, "loss": 1.5, "acc": 1, "gap": None, "val_acc": True, "e_data": "n/a"})
    assert RecordingWriter.calls == [("scalar", "loss/total", 1.5, 5), ("scalar", "accuracy/train_batch", 1, 5)]
    grid = torch.zeros(3, 4, 4)
    log.image("samples", grid, 4)
    log.image("samples", grid, 5)
    log.image("samples", grid, 5)  # once per iteration
    log.rewind(5, "rolled back")
    log.image("samples", grid, 5)  # purged with step 5: written again
    assert RecordingWriter.calls[2:] == [("image", "samples", 4), ("image", "samples", 5), ("close",), ("open", 5),
                                         ("text", "events", 5), ("image", "samples", 5)]
    del RecordingWriter.calls[:]
    warned = []
    log._warn = warned.append
    monkeypatch.setattr(RecordingWriter, "fail", True)
    log.scalars(6, {"loss": 1.0})
    assert RecordingWriter.calls == [("close",)] and log.writer is None
    assert len(warned) == 1 and "No space left on device" in warned[0] and "metrics.jsonl" in warned[0]
    log.scalars(7, {"loss": 1.0})
    log.close()
    assert RecordingWriter.calls == [("close",)] and len(warned) == 1


def test_a_rewind_after_close_writes_its_event_and_closes_the_writer_again(tmp_path, monkeypatch):
    import fastjem.board as board_module

    monkeypatch.setattr(board_module, "_summary_writer", lambda: RecordingWriter)
    monkeypatch.setattr(RecordingWriter, "calls", [])
    log = board_module.TensorBoardLog(tmp_path, 6)
    log.close()
    log.rewind(3, "rolled back")
    assert RecordingWriter.calls == [("open", 6), ("close",), ("close",), ("open", 3), ("text", "events", 3),
                                     ("close",)]
    log = board_module.TensorBoardLog(tmp_path, 6)  # open: the rewind leaves it open for the run to go on
    del RecordingWriter.calls[:]
    log.rewind(3, "rolled back")
    assert RecordingWriter.calls == [("close",), ("open", 3), ("text", "events", 3)]


def test_a_tensorboard_folder_that_cannot_be_made_warns_once_and_the_log_stays_quiet(tmp_path):
    """A file where tensorboard/ should be: the writer never opens, one warning names the folder, and every later
    call (scalars, images, rewind, close) is a no-op rather than an AttributeError in the middle of a run."""
    import torch

    from fastjem.board import TensorBoardLog

    (tmp_path / "tensorboard").write_text("not a folder")
    warned = []
    log = TensorBoardLog(tmp_path / "tensorboard", 0, config={"lr": 1e-4}, warn=warned.append)
    assert log.writer is None and len(warned) == 1 and "TensorBoard logging stopped" in warned[0]
    assert "tensorboard" in log.failed
    log.scalars(1, {"loss": 1.0})
    log.image("samples", torch.zeros(3, 4, 4), 1)
    log.rewind(0, "rolled back")
    log.close()
    assert len(warned) == 1 and (tmp_path / "tensorboard").read_text() == "not a folder"

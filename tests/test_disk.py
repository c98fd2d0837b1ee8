"""A full disk (ENOSPC) and damaged files: a picture or TensorBoard event that cannot be written costs a warning,
never the run; pictures are replaced whole or not at all; nothing saved is lost."""

import errno
import json

import pytest
import torch
from helpers import fail_grid_writes

from fastjem.checkpoint import load_checkpoint
from fastjem.train import Trainer


def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_sample_grid_that_cannot_be_written_does_not_stop_the_run(tiny_config, tmp_path, monkeypatch):
    """The periodic grid at iteration 4 falls at a checkpoint: the checkpoint of that iteration is still written
    and the run trains to its end (it stopped there, losing the checkpoint interval)."""
    fail_grid_writes(monkeypatch)
    lines = []
    cfg = tiny_config.replace(iters=8, ckpt_every=4, sample_every=4)
    summary = Trainer(cfg, out_dir=tmp_path / "run", progress=False, log=lines.append).fit()
    assert summary["iteration"] == 8 and summary["samples"] is None
    assert load_checkpoint(tmp_path / "run")["iteration"] == 8
    warned = [s for s in lines if s.startswith("warning: sample grid not written")]
    assert len(warned) == 3 and "No space left on device" in warned[0] and "samples_0000004.png" in warned[0]
    assert "samples.png" in warned[-1]
    run = tmp_path / "run"
    assert (run / "summary.json").exists() and not (run / "samples.png").exists() and not list(run.rglob(".*.tmp"))


def test_a_tensorboard_write_that_fails_on_its_thread_stops_the_live_view_not_the_run(tiny_config, tmp_path,
                                                                                      monkeypatch, capfd):
    """TensorBoard writes on a thread of its own: a full disk there raised at the next call in training (and
    printed the thread's traceback). Now one warning, the run goes on, and metrics.jsonl has every record."""
    pytest.importorskip("tensorboard")
    from tensorboard.summary.writer import record_writer

    writes = {"n": 0}
    real = record_writer.RecordWriter.write

    def fails_after_a_few(self, data):
        writes["n"] += 1
        if writes["n"] > 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(record_writer.RecordWriter, "write", fails_after_a_few)
    lines = []
    cfg = tiny_config.replace(iters=8, log_every=2, ckpt_every=4, tensorboard=True)
    summary = Trainer(cfg, out_dir=tmp_path / "run", progress=False, log=lines.append).fit()
    assert summary["iteration"] == 8 and load_checkpoint(tmp_path / "run")["iteration"] == 8
    warned = [s for s in lines if "TensorBoard logging stopped" in s]
    assert len(warned) == 1 and "No space left on device" in warned[0]
    records = [json.loads(s) for s in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["iter"] for r in records if "loss" in r] == [2, 4, 6, 8]
    assert "Traceback" not in capfd.readouterr().err
    import threading

    assert getattr(threading.excepthook, "fastjem_quiet", False)  # the thread's own report is held back (below)


def test_a_figure_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    """curves.png redrawn on a full disk: matplotlib had written part of the new PNG over the old one (4 bytes
    were left of a 114 KB picture). Now the old picture stays, and no temporary file."""
    import matplotlib.figure

    from fastjem.eval.plots import _save, image_grid

    path = tmp_path / "curves.png"
    fig = matplotlib.figure.Figure()
    fig.subplots().plot([0, 1], [1, 0])
    _save(fig, path)
    before = path.read_bytes()

    def half_then_full(self, fname, **kwargs):
        fname.write(b"\x89PNG")
        _full_disk()

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", half_then_full)
    with pytest.raises(OSError, match="No space left") as err:
        _save(matplotlib.figure.Figure(), path)
    assert err.value.filename == str(path)  # the message can say which file
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["curves.png"]

    grid = tmp_path / "grid.png"
    image_grid(torch.zeros(4, 1, 8, 8), grid)
    before = grid.read_bytes()
    monkeypatch.setattr("PIL.Image.Image.save", lambda self, fp, *a, **k: (fp.write(b"\x89PNG"), _full_disk()))
    with pytest.raises(OSError, match="No space left"):
        image_grid(torch.ones(4, 1, 8, 8), grid)
    assert grid.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["curves.png", "grid.png"]


def test_the_writer_threads_failed_write_is_reported_once_not_as_a_thread_traceback(monkeypatch):
    """The TensorBoard thread's OSError is said by TensorBoardLog's warning; Python's thread hook would print it
    as a traceback first. Other threads' errors, and the writer thread's other errors, still reach the hook."""
    import threading
    from types import SimpleNamespace

    from fastjem.board import _quiet_writer_thread

    seen = []
    monkeypatch.setattr(threading, "excepthook", seen.append)
    _quiet_writer_thread()
    _quiet_writer_thread()  # once: not a hook around a hook

    class _AsyncWriterThread(threading.Thread):  # TensorBoard's writer thread, by its name
        pass

    def fail(thread, exc):
        threading.excepthook(SimpleNamespace(thread=thread, exc_type=exc))

    fail(_AsyncWriterThread(), OSError)
    assert seen == []
    fail(_AsyncWriterThread(), ValueError)
    fail(threading.Thread(), OSError)
    assert [(type(a.thread).__name__, a.exc_type) for a in seen] == [("_AsyncWriterThread", ValueError),
                                                                     ("Thread", OSError)]


class _FullDiskFile:
    """A real file whose writes fail as on a full disk (the OSError of a write names no file)."""

    def __init__(self, f):
        self._f = f

    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()
        return False


def test_a_full_disk_names_the_file_it_could_not_write(tiny_config, tmp_path, monkeypatch, capsys):
    """A write that fails on a full disk names no file: the run folder's lock and metrics.jsonl said 'No space
    left on device: a file'. Now the message names it; the checkpoint written before is intact."""
    import builtins

    from fastjem.cli import main

    real_open = builtins.open
    failing = {"name": ".lock"}

    def full_for(file, mode="r", *args, **kwargs):
        f = real_open(file, mode, *args, **kwargs)
        return _FullDiskFile(f) if str(file).endswith(failing["name"]) and mode in ("a", "a+") else f

    run = tmp_path / "run"
    args = ["train", "--dataset", "digits", "--arch", "convnet", "--width", "8", "--batch-size", "16",
            "--sgld-steps", "2", "--buffer-size", "100", "--log-every", "2", "--ckpt-every", "2", "--iters", "4",
            "--device", "cpu", "--no-compile", "--no-progress", "--out-dir", str(run)]
    monkeypatch.setattr(builtins, "open", full_for)
    assert main(args) == 1
    assert f"No space left on device: {run / '.lock'}: free some space" in capsys.readouterr().err
    failing["name"] = "metrics.jsonl"
    assert main(args) == 1
    assert f"No space left on device: {run / 'metrics.jsonl'}: free some space" in capsys.readouterr().err


def test_a_benchmark_result_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    import os

    from fastjem.benchmark import write_result

    path = write_result({"it_per_s": 1.0}, tmp_path / "bench.json")
    monkeypatch.setattr(os, "fsync", _full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_result({"it_per_s": 2.0}, path)
    assert json.loads(path.read_text()) == {"it_per_s": 1.0} and [p.name for p in tmp_path.iterdir()] == ["bench.json"]


def test_the_small_parts_of_atomic_writes_and_the_run_lock(tmp_path, monkeypatch):
    """naming leaves an OSError that names its file as it is (not swallowed); atomic_write_bytes writes the bytes
    and no write leaves a file descriptor open; the umask falls back to 022 where /proc cannot say it; the run lock
    replaces a longer holder's line with this process's, and runs its block unguarded where flock does not exist."""
    import os
    import sys

    from fastjem import checkpoint

    with pytest.raises(OSError) as raised, checkpoint.naming(tmp_path / "written"):
        raise OSError(2, "No such file or directory", "other")
    assert raised.value.filename == "other"

    def open_fds():  # Linux says; elsewhere this part is not checked
        return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0

    fds = open_fds()
    for _ in range(20):
        checkpoint.atomic_write_bytes(b"\x00\x01data", tmp_path / "b.bin")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01data" and open_fds() == fds
    lock = tmp_path / ".lock"
    lock.write_text("pid 123456789012")
    with checkpoint.folder_lock(lock, "busy: {holder}"):
        assert lock.read_text() == f"pid {os.getpid()}"
    ran = []
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "fcntl", None)  # `import fcntl` raises ImportError, as on Windows
        with checkpoint.folder_lock(tmp_path / "other.lock", "busy: {holder}"):
            ran.append(True)
    assert ran == [True]

    def unreadable(*args, **kwargs):
        raise OSError(13, "Permission denied")

    monkeypatch.setattr(checkpoint, "open", unreadable, raising=False)
    assert checkpoint._umask() == 0o022


def test_a_write_is_on_disk_whole_and_its_folder_synced_before_it_counts(tmp_path, monkeypatch):
    """What fsync sees: the temporary file with every byte in it (flushed from Python's buffer first), then the
    folder that holds the renamed file. A folder that does not exist yet is made; one that cannot be made is
    named in the error; a copy has the source's bytes."""
    import os

    from fastjem import checkpoint

    real_fsync, synced = os.fsync, []

    def fsync(fd):
        path = os.readlink(f"/proc/self/fd/{fd}")
        synced.append((os.path.basename(path), os.path.getsize(path) if os.path.isfile(path) else None))
        real_fsync(fd)

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("reads the synced file's name from Linux's /proc/self/fd")
    monkeypatch.setattr(checkpoint.os, "fsync", fsync)
    text = "x" * 5000  # under io's buffer size: without the flush, fsync would see an empty file
    checkpoint.atomic_write_text(text, tmp_path / "new" / "deeper" / "notes.txt")
    (name, size), folder = synced
    assert name.startswith(".notes.txt.") and size == 5000 and folder == ("deeper", None)
    assert (tmp_path / "new" / "deeper" / "notes.txt").read_text() == text
    checkpoint.atomic_copy(tmp_path / "new" / "deeper" / "notes.txt", tmp_path / "copy.txt")
    assert (tmp_path / "copy.txt").read_text() == text

    (tmp_path / "a_file").write_text("")
    with pytest.raises(OSError) as raised:
        checkpoint.atomic_write_text("x", tmp_path / "a_file" / "notes.txt")
    assert raised.value.filename == str(tmp_path / "a_file" / "notes.txt")


def test_a_held_lock_names_its_holder(tmp_path):
    """flock locks belong to an open file: a second open of the lock, even in the same process, is refused and
    told who holds it."""
    import os

    from fastjem.checkpoint import folder_lock
    from fastjem.errors import ConfigError

    pytest.importorskip("fcntl")
    with folder_lock(tmp_path / ".lock", "busy: {holder}"):
        with pytest.raises(ConfigError, match=f"^busy: pid {os.getpid()}$"):
            with folder_lock(tmp_path / ".lock", "busy: {holder}"):
                pass
    with folder_lock(tmp_path / ".lock", "busy: {holder}"):  # released: taken again
        pass

"""TensorBoard logging of a training run (``--tensorboard``): scalars, sample grids, events.

Everything goes to ``<out-dir>/tensorboard/``; metrics.jsonl stays the record of the run, this is the live view
(``tensorboard --logdir runs``). A run that goes back in time — a divergence rollback, or a resume from a
checkpoint older than what was logged — reopens the writer with ``purge_step``, so TensorBoard drops the
steps that no longer happened and every curve shows one value per iteration.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from pathlib import Path

import torch

from fastjem.errors import ConfigError

# metrics.jsonl name -> TensorBoard tag
TAGS = {
    "loss": "loss/total", "ce": "loss/cross_entropy", "acc": "accuracy/train_batch",
    "e_data": "energy/data", "e_sample": "energy/samples", "gap": "energy/gap_samples_minus_data",
    "it_per_s": "speed/iterations_per_s", "lr": "schedule/learning_rate", "epoch": "schedule/epoch",
    "val_acc": "accuracy/validation", "val_nll": "loss/validation_nll", "test_acc": "accuracy/test",
    "test_nll": "loss/test_nll",
}


def _summary_writer():
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as err:
        raise ConfigError("--tensorboard needs the tensorboard package: pip install tensorboard (or pip install "
                          "'fastjem[tensorboard]'), or train without --tensorboard") from err
    return SummaryWriter


def check_available() -> None:
    """Raise ConfigError, saying what to install, when TensorBoard logging cannot work."""
    _summary_writer()


def _quiet_writer_thread() -> None:
    """TensorBoard writes events on a thread of its own, whose failed write (a full disk) Python prints as a
    traceback before the next call raises it here; TensorBoardLog reports it once, so the thread keeps quiet."""
    previous = threading.excepthook
    if getattr(previous, "fastjem_quiet", False):
        return

    def hook(args):
        if type(args.thread).__name__ != "_AsyncWriterThread" or not issubclass(args.exc_type, OSError):
            previous(args)

    hook.fastjem_quiet = True
    threading.excepthook = hook


class TensorBoardLog:
    """One run's TensorBoard events, written from rank 0. A write that fails (a full disk, a folder gone) costs the
    live view, never the run: ``warn`` says so once, and nothing more is written to TensorBoard (metrics.jsonl keeps
    every record)."""

    def __init__(self, folder: str | Path, iteration: int, config: dict | None = None, warn=print):
        self.folder = Path(folder)
        self._writer_cls = _summary_writer()
        self.writer = None
        self.closed = False  # by close(): a rewind after it writes its event and closes the writer again
        self._warn = warn
        self.failed: str | None = None  # why TensorBoard logging stopped
        self._images: dict[str, int] = {}
        _quiet_writer_thread()
        with self._guard():
            self._open(iteration)
            if iteration == 0 and config is not None:
                rows = "\n".join(f"| {k} | {json.dumps(v)} |" for k, v in config.items())
                self.writer.add_text("config", "| option | value |\n|---|---|\n" + rows, 0)

    @contextlib.contextmanager
    def _guard(self):
        try:
            yield
        except OSError as err:
            self.failed = f"{err.strerror or err}" + (f": {err.filename}" if err.filename else f" in {self.folder}")
            self._warn(f"warning: TensorBoard logging stopped ({self.failed}); the run goes on, metrics.jsonl keeps "
                       "every record")
            if self.writer is not None:
                with contextlib.suppress(Exception):
                    self.writer.close()
            self.writer = None

    def _open(self, iteration: int) -> None:
        # TensorBoard reads a folder's event files in name order, which begins with the second the file was made and
        # ends with a per-process count: a writer opened in the second of an earlier one (a rollback or a resume in
        # the same process) could sort before it (".10" < ".9"), and the earlier file's steps then outlived the purge
        wait = self._newest_second() + 1 - time.time()
        if wait > 0:
            time.sleep(wait)
        # purge_step: events at steps >= iteration, left by a run that then went back, are dropped by TensorBoard
        self.writer = self._writer_cls(str(self.folder), purge_step=iteration if iteration > 0 else None,
                                       flush_secs=30)

    def _newest_second(self) -> int:
        """The creation second in the newest event file's name (events.out.tfevents.<second>.<host>...); 0 if none."""
        seconds = [0]
        for path in self.folder.glob("events.out.tfevents.*"):
            with contextlib.suppress(ValueError, IndexError):
                seconds.append(int(path.name.split(".")[3]))
        return max(seconds)

    def scalars(self, iteration: int, record: dict) -> None:
        """Every known metric of a metrics.jsonl record (training window, validation or test)."""
        if self.writer is None:
            return
        with self._guard():
            for key, value in record.items():
                tag = TAGS.get(key)
                if tag is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
                    self.writer.add_scalar(tag, value, iteration)

    def image(self, tag: str, grid: torch.Tensor, iteration: int) -> None:
        """A [C, H, W] image in [0, 1]; once per tag and iteration (the last periodic grid is also the final one)."""
        if self.writer is None or self._images.get(tag) == iteration:
            return
        self._images[tag] = iteration
        with self._guard():
            self.writer.add_image(tag, grid, iteration)

    def rewind(self, iteration: int, why: str) -> None:
        """The run continues from ``iteration``: later steps are purged, and the reason is logged there."""
        if self.writer is None:
            return
        # the purged steps' images are gone: the run writes them again when it gets back there
        self._images = {tag: step for tag, step in self._images.items() if step < iteration}
        with self._guard():
            self.writer.close()
            self._open(iteration)
            self.writer.add_text("events", why, iteration)
            if self.closed:
                # a run that stopped, then rolled back (a divergence met by the stop): the event and the purge are
                # written, and the writer stays closed as its run left it
                self.writer.close()

    def close(self) -> None:
        self.closed = True
        if self.writer is None:
            return
        with self._guard():
            self.writer.close()

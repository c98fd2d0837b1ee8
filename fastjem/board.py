"""TensorBoard logging of a training run (``--tensorboard``): scalars, sample grids, events.

Everything goes to ``<out-dir>/tensorboard/``; metrics.jsonl stays the record of the run, this is the live view
(``tensorboard --logdir runs``). A run that goes back in time — a divergence rollback, or a resume from a
checkpoint older than what was logged — reopens the writer with ``purge_step``, so TensorBoard drops the
steps that no longer happened and every curve shows one value per iteration.
"""

from __future__ import annotations

import json
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


class TensorBoardLog:
    """One run's TensorBoard events, written from rank 0."""

    def __init__(self, folder: str | Path, iteration: int, config: dict | None = None):
        self.folder = Path(folder)
        self._writer_cls = _summary_writer()
        self.writer = None
        self._images: dict[str, int] = {}
        self._open(iteration)
        if iteration == 0 and config is not None:
            rows = "\n".join(f"| {k} | {json.dumps(v)} |" for k, v in config.items())
            self.writer.add_text("config", "| option | value |\n|---|---|\n" + rows, 0)

    def _open(self, iteration: int) -> None:
        # purge_step: events at steps >= iteration, left by a run that then went back, are dropped by TensorBoard
        self.writer = self._writer_cls(str(self.folder), purge_step=iteration if iteration > 0 else None,
                                       flush_secs=30)

    def scalars(self, iteration: int, record: dict) -> None:
        """Every known metric of a metrics.jsonl record (training window, validation or test)."""
        for key, value in record.items():
            tag = TAGS.get(key)
            if tag is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
                self.writer.add_scalar(tag, value, iteration)

    def image(self, tag: str, grid: torch.Tensor, iteration: int) -> None:
        """A [C, H, W] image in [0, 1]; once per tag and iteration (the last periodic grid is also the final one)."""
        if self._images.get(tag) == iteration:
            return
        self._images[tag] = iteration
        self.writer.add_image(tag, grid, iteration)

    def rewind(self, iteration: int, why: str) -> None:
        """The run continues from ``iteration``: later steps are purged, and the reason is logged there."""
        self.writer.close()
        self._open(iteration)
        self.writer.add_text("events", why, iteration)

    def close(self) -> None:
        self.writer.close()

"""``fastjem export``: a trained network as a ``torch.export`` program, to use without fastjem.

The file (``.pt2``) holds the classifier f: images [B, C, H, W] in [-1, 1] -> logits [B, K], with the batch size
free, and ``fastjem.json`` beside the program (``extra_files``): classes, input shape and range, the checkpoint
and iteration it came from. Load it with ``torch.export.load(path).module()``; log p~(x) = logsumexp of the logits
and p(y|x) = their softmax, as in training.
"""

from __future__ import annotations

import io
import json
import math
import os
from pathlib import Path

import torch

from fastjem.checkpoint import atomic_write_bytes, output_path
from fastjem.errors import ConfigError, error_line

META = "fastjem.json"


def default_output(em) -> Path:
    """<checkpoint folder>/model.pt2 (model-best.pt2 for best.pt, model-<name>.pt2 for other files)."""
    name = "model.pt2" if em.path.name == "checkpoint.pt" else f"model-{em.path.stem}.pt2"
    return em.path.parent / name


def export_classifier(checkpoint, out: str | os.PathLike | None = None, overwrite: bool = False,
                      device: str = "cpu", model: torch.nn.Module | None = None) -> dict:
    """Export ``checkpoint``'s network (``model=`` for one trained from Python) and check the exported program
    against it on random inputs of two batch sizes; returns what was written and the largest difference."""
    from fastjem.eval.core import load_model

    if out is not None:
        out = _check_output(Path(out), overwrite)
    em = load_model(checkpoint, device, model=model)
    out = _check_output(Path(out) if out is not None else default_output(em), overwrite)
    net = em.model.eval()
    c, s = em.info.channels, em.info.image_size
    example = torch.zeros(2, c, s, s, device=em.device)
    # no upper bound: one was a guard that failed past 65536 images (SVHN's training set is 73257)
    batch = torch.export.Dim("batch", min=1)
    try:
        program = torch.export.export(net, (example,), dynamic_shapes=({0: batch},))
    except Exception as err:  # noqa: BLE001 - say which network did not export, and why, in one line
        raise ConfigError(f"{em.path}: torch.export could not trace the network ({error_line(err)})") from err
    meta = {
        "format": "fastjem-export/1", "input": {"shape": ["B", c, s, s], "range": [-1.0, 1.0], "dtype": "float32",
                                                 "pixels": "x = 2 * uint8 / 255 - 1"},
        "output": "logits [B, K]: p(y|x) = softmax, log p~(x) = logsumexp", "classes": list(em.info.classes),
        "num_classes": em.num_classes, "dataset": em.info.name, "model": em.model_name,
        "checkpoint": str(em.path), "iteration": em.iteration, "torch": torch.__version__,
    }
    buf = io.BytesIO()
    torch.export.save(program, buf, extra_files={META: json.dumps(meta, indent=2)})
    atomic_write_bytes(buf.getvalue(), out)
    # the file, read back, computes what the network computes
    loaded = load_exported(out, device=em.device)
    gen = torch.Generator().manual_seed(0)
    worst = 0.0
    for b in (1, 7):
        x = (torch.rand(b, c, s, s, generator=gen) * 2 - 1).to(em.device)
        with torch.no_grad():
            want, got = net(x).float(), loaded(x).float()
        diff = float((want - got).abs().max() / want.abs().max().clamp_min(1e-12))
        # NaN is no match (max(0.0, nan) would keep 0.0 and pass a program of NaN logits)
        worst = max(worst, diff if math.isfinite(diff) else math.inf)
    if not worst <= 1e-5:
        raise ConfigError(f"the exported program's logits differ from the network's by {worst:.2e} (relative): "
                          f"{out} is kept for inspection but should not be used")
    return {"path": str(out), "meta": meta, "max_relative_difference": worst}


def load_exported(path: str | os.PathLike, device: str | torch.device = "cpu") -> torch.nn.Module:
    """The exported classifier as a module (images in [-1, 1] -> logits), on ``device``."""
    program = torch.export.load(str(path))
    return program.module().to(device)


def read_meta(path: str | os.PathLike) -> dict:
    """fastjem.json of an exported file: classes, input shape and range, source checkpoint."""
    extra = {META: ""}
    torch.export.load(str(path), extra_files=extra)
    return json.loads(extra[META])


def _check_output(path: Path, overwrite: bool) -> Path:
    return output_path(path, (".pt2",), "the exported program", overwrite, form=" (torch.export's format)")

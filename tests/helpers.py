"""Test helpers shared by several test files (imported as ``helpers``: pytest puts tests/ on sys.path)."""

import errno
import json
import os
from pathlib import Path

import numpy as np


def image_folder(root: Path, classes=("cat", "dog"), per_class: int = 10, noise: bool = False) -> Path:
    """An ImageFolder of 8x8 RGB PNGs, ``root/<class>/<i>.png``: image i of each class filled with 20 * i, or, with
    ``noise``, uniform noise (one generator of seed 0, drawn class by class)."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for c in classes:
        (root / c).mkdir(parents=True)
        for i in range(per_class):
            pixels = rng.integers(0, 255, (8, 8, 3), dtype=np.uint8) if noise else np.full((8, 8, 3), 20 * i, np.uint8)
            Image.fromarray(pixels).save(root / c / f"{i}.png")
    return root


def cache_bf16_probe(path: Path, fp32_ms: float, bf16_ms: float) -> None:
    """Write the bf16 probe's cache file ``path`` with these timings for this CPU and torch at every thread count,
    as a quiet machine keeps them (precision auto then decides the same in every process that reads it)."""
    from fastjem.engine import BF16_PROBE_SHAPE, bf16_probe_key

    entry = {"fp32_ms": fp32_ms, "bf16_ms": bf16_ms, "shape": list(BF16_PROBE_SHAPE), "other_cores": 0.0}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({bf16_probe_key(n): entry for n in range(1, (os.cpu_count() or 1) + 1)}))


def fail_grid_writes(monkeypatch) -> None:
    """From now on in the test, every PNG that fastjem.eval.plots writes fails as on a full disk (ENOSPC, naming
    the file); other files are written."""
    import fastjem.eval.plots

    real = fastjem.eval.plots.atomic_file

    def fails_for_grids(path, mode):
        if path.suffix == ".png":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, mode)

    monkeypatch.setattr(fastjem.eval.plots, "atomic_file", fails_for_grids)

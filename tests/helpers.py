"""Test helpers shared by several test files (imported as ``helpers``: pytest puts tests/ on sys.path)."""

import errno
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

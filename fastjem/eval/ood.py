"""Out-of-distribution detection: the three scores of the paper and the OOD sets.

Scores (higher = more in-distribution), Grathwohl et al. 2020, section 5.2:
  log p(x)   = logsumexp_y f(x)[y]          (the unnormalised log density of the JEM)
  max p(y|x) = max_y softmax(f(x))[y]       (the classifier's confidence; Hendrycks & Gimpel)
  grad norm  = -|| d log p(x) / dx ||_2     (the "approximate mass" score: a sharp density peak is unlikely)

Sets: datasets (svhn, cifar10, cifar100, digits, any image folder) resized and channel-converted to the
model's input, and the synthetic sets of the paper's Table 7: uniform noise, constant images and
interpolations of pairs of test images.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from fastjem.data import IMAGE_SUFFIXES, _decode_many, image_files, load_arrays, to_float
from fastjem.errors import DataNotFoundError, FastJEMError
from fastjem.eval.core import EvalModel, batches

SCORES = ("logpx", "maxprob", "grad_norm")
SCORE_TITLES = {"logpx": "log p(x)", "maxprob": "max p(y|x)", "grad_norm": "-||d log p(x)/dx||"}
SYNTHETIC_SETS = ("uniform", "constant", "interp")
DATASET_SETS = ("svhn", "cifar10", "cifar100", "digits")
OOD_SETS = SYNTHETIC_SETS + DATASET_SETS


class OODSetError(FastJEMError):
    """An OOD set name is unknown or its data is not available."""


class OODSetMissing(OODSetError):
    """A dataset OOD set whose files are not here: ``--ood all`` skips it (an unknown name is still an error)."""


def grad_norm_score(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """-||d LSE f(x) / dx||_2 per sample: x [B, C, H, W] -> [B], in x's dtype (fp32 for fp32 images; fp64 images
    through a float64 network keep fp64, as a finite-difference check needs).

    Samples do not interact in an eval-mode network, so the gradient of the summed log-density is each
    sample's own gradient.
    """
    with torch.enable_grad():
        xg = x.detach().requires_grad_(True)
        logpx = torch.logsumexp(model(xg).float(), dim=1)
        (grad,) = torch.autograd.grad(logpx.sum(), xg)
    return -grad.flatten(1).norm(dim=1)


def ood_scores(model: nn.Module, x: torch.Tensor, batch_size: int = 500, progress: bool = False,
               desc: str = "scores") -> dict[str, torch.Tensor]:
    """The three OOD scores of images x [N, C, H, W] in [-1, 1]: {name: [N] fp32 on the CPU}."""
    out = {k: [] for k in SCORES}
    for s in batches(len(x), batch_size, desc, progress):
        xb = x[s]
        with torch.no_grad():
            logits = model(xb).float()
        out["logpx"].append(torch.logsumexp(logits, 1).cpu())
        out["maxprob"].append(torch.softmax(logits, 1).amax(1).cpu())
        # fp32 as the other two scores (a float64 network's gradient is fp64)
        out["grad_norm"].append(grad_norm_score(model, xb).float().cpu())
    return {k: torch.cat(v) for k, v in out.items()}


# ------------------------------------------------------------------------------------------- sets
def uniform_noise(n: int, shape: tuple[int, ...], generator: torch.Generator | None = None) -> torch.Tensor:
    """n images of U(-1, 1) pixels."""
    return torch.rand((n, *shape), generator=generator) * 2 - 1


def constant_images(n: int, shape: tuple[int, ...], generator: torch.Generator | None = None) -> torch.Tensor:
    """n images that are one colour each: per-channel value U(-1, 1), the same at every pixel."""
    c = shape[0]
    colour = torch.rand((n, c, 1, 1), generator=generator) * 2 - 1
    return colour.expand(n, *shape).contiguous()


def interpolate_pairs(x: torch.Tensor, n: int, generator: torch.Generator | None = None,
                      weight: float = 0.5) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """n mixtures weight * x[i] + (1 - weight) * x[j] of random pairs of distinct images: (images, i, j)."""
    if len(x) < 2:
        raise ValueError("interpolations need at least two images")
    i = torch.randint(0, len(x), (n,), generator=generator)
    # j uniform over the other len(x) - 1 images: an offset in 1..len-1.
    j = (i + 1 + torch.randint(0, len(x) - 1, (n,), generator=generator)) % len(x)
    xc = x.cpu()
    return weight * xc[i] + (1 - weight) * xc[j], i, j


def match_shape(x: torch.Tensor, channels: int, size: int) -> torch.Tensor:
    """Images in [-1, 1] converted to ``channels`` (RGB -> grey by luma, grey -> RGB by copying) and resized to
    size x size (bilinear, antialiased when shrinking)."""
    if x.shape[1] != channels:
        if channels == 1 and x.shape[1] == 3:
            w = torch.tensor([0.299, 0.587, 0.114], dtype=x.dtype).view(1, 3, 1, 1)
            x = (x * w).sum(1, keepdim=True)
        elif channels == 3 and x.shape[1] == 1:
            x = x.expand(-1, 3, -1, -1)
        else:
            raise OODSetError(f"cannot convert {x.shape[1]}-channel images to {channels} channels")
    if x.shape[-1] != size or x.shape[-2] != size:
        shrink = x.shape[-1] > size
        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False, antialias=shrink)
    return x.clamp(-1, 1).contiguous()


def load_image_folder(folder: str | os.PathLike, n: int, channels: int, size: int,
                      generator: torch.Generator | None = None) -> torch.Tensor:
    """Up to n images from any folder (searched recursively, any sizes), decoded and resized as training data is
    (EXIF orientation, 16-bit rounding; the shorter side to the model's size, then the centre crop)."""
    folder = Path(folder)
    paths = image_files(folder)  # hidden files and folders skipped, as the training loader skips them
    if not paths:
        raise OODSetError(f"no images ({', '.join(IMAGE_SUFFIXES)}) found under {folder}")
    if len(paths) > n:
        keep = torch.randperm(len(paths), generator=generator)[:n].sort().values.tolist()
        paths = [paths[k] for k in keep]
    # decoded as the training loader decodes: every unreadable file named at once, and images past Pillow's
    # decompression-bomb threshold named in one warning (Pillow's own warning, printed raw, named no file)
    bad: list[str] = []
    try:
        images = _decode_many(paths, f"the OOD folder {folder}", size, total=len(paths), progress=False, bad=bad)
    except OSError as err:
        raise OODSetError(f"the OOD folder {folder} could not be read ({type(err).__name__}: {err})") from err
    if bad:
        more = f" (and {len(bad) - 10} more)" if len(bad) > 10 else ""
        raise OODSetError(f"{len(bad)} file(s) in the OOD folder {folder} are not readable images{more}: remove them, "
                          "or give a folder of images only:\n  " + "\n  ".join(bad[:10]))
    x = torch.stack(images)  # uint8 [N, 3, size, size]
    if channels == 1:
        # Pillow's "L" (ITU-R 601-2 luma, its fixed-point rounding)
        x = ((x[:, 0].int() * 19595 + x[:, 1].int() * 38470 + x[:, 2].int() * 7471 + 0x8000) >> 16).to(
            torch.uint8)[:, None]
    return to_float(x.contiguous())


def ood_set(name: str, em: EvalModel, n: int, data_dir: str | os.PathLike = "", download: bool = False,
            seed: int = 0, in_dist: torch.Tensor | None = None, progress: bool = True) -> torch.Tensor:
    """The OOD set ``name`` as n images shaped like the model's input, in [-1, 1], on the CPU.

    ``name``: uniform, constant, interp (pairs of ``in_dist`` test images, mixed half and half), svhn, cifar10,
    cifar100, digits (test splits, found in ``data_dir`` or downloaded), or a folder of images.
    """
    gen = torch.Generator().manual_seed(seed)
    shape = em.sample_shape
    if name == "uniform":
        return uniform_noise(n, shape, gen)
    if name == "constant":
        return constant_images(n, shape, gen)
    if name == "interp":
        if in_dist is None:
            raise ValueError("the interp set needs the in-distribution test images")
        if len(in_dist) < 2:
            raise OODSetError("the interp set needs at least two test images (--n-test >= 2)")
        return interpolate_pairs(in_dist, n, gen)[0]
    if name in DATASET_SETS:
        if name == em.config.dataset:
            raise OODSetError(f"{name} is the in-distribution dataset of this checkpoint; choose another OOD set")
        try:
            # the advice names --ood-data-dir: --data-dir would move the in-distribution set too
            arrays = load_arrays(name, data_dir, download, flag="--ood-data-dir", choose_dataset=False,
                                 progress=progress)
        except DataNotFoundError as err:
            raise OODSetMissing(f"OOD set {name}: {err}\n  - or leave it out: "
                              f"--ood {' '.join(SYNTHETIC_SETS)} needs no data") from err
        if any(a.test_x.shape == arrays.test_x.shape and torch.equal(a.test_x, arrays.test_x)
               for a in em.loaded_arrays()):
            # one folder read as both sets (an image folder passes for any dataset): AUROC 0.5, meaningless
            raise OODSetError(f"OOD set {name} read from {data_dir} holds the same test images as the in-distribution "
                              f"set {em.info.name}: both came from that folder. Pass --ood-data-dir FOLDER with the "
                              f"{name} data (and --data-dir with the {em.info.name} data, if not the training one)")
        x = arrays.test_x
        if len(x) > n:
            x = x[torch.randperm(len(x), generator=gen)[:n]]
        return match_shape(to_float(x), shape[0], shape[1])
    if Path(name).is_dir():
        return load_image_folder(name, n, shape[0], shape[1], gen)
    raise OODSetError(unknown_set_message(name))


def unknown_set_message(name: str) -> str:
    """The error for an OOD set that is neither built in nor a folder: a name with a path separator was meant as a
    folder of images, and is told apart from a misspelt set name."""
    path = Path(name).expanduser()
    if "/" in name or os.sep in name:
        what = "a file, not a folder" if path.exists() else "no such folder"
        return (f"OOD set {name}: {what}; give a folder of images (any layout, read recursively), or one of "
                f"{', '.join(OOD_SETS)}")
    return f"unknown OOD set {name!r}: choose from {', '.join(OOD_SETS)}, or give a folder of images"

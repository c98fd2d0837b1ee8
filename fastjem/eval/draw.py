"""``fastjem sample``: draw samples from a trained JEM and keep them as arrays, not only as pictures.

Unconditional samples run SGLD on E(x) = -LSE f(x); class-conditional ones on E(x, y) = -f(x)[y]. Chains
start from the checkpoint's replay buffer (``init="buffer"``, JEM's persistent chains) or from U(-1, 1)
(``"noise"``); ``"auto"`` takes the buffer when the checkpoint has one. The step size and noise are the
checkpoint's own SGLD settings unless given.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from fastjem.buffer import ClassGaussians
from fastjem.checkpoint import atomic_save, atomic_write_bytes, output_path
from fastjem.data import DeviceData, to_uint8
from fastjem.errors import ConfigError
from fastjem.eval import plots
from fastjem.eval.core import EvalModel, load_model, predict_logits, run_chains
from fastjem.graphs import default_generator

FORMATS = (".npz", ".pt")


@dataclass
class Drawn:
    """Samples and what the network says of them. ``x`` fp32 [N, C, H, W] (SGLD does not clip; ``images``
    are x clipped to [-1, 1] and mapped to uint8 0..255); ``target`` the class each conditional chain was
    drawn for (None for unconditional samples); ``pred`` the predicted class and ``logpx`` log p~(x)."""

    x: torch.Tensor
    target: torch.Tensor | None
    pred: torch.Tensor
    logpx: torch.Tensor
    settings: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        # shapes, not values (the dataclass's repr printed every sample's pixels)
        def shown(t):
            return "None" if t is None else f"[{', '.join(map(str, t.shape))}] {str(t.dtype).replace('torch.', '')}"

        return (f"Drawn(x={shown(self.x)}, target={shown(self.target)}, pred={shown(self.pred)}, "
                f"logpx={shown(self.logpx)}, settings={self.settings!r})")

    @property
    def images(self) -> torch.Tensor:
        return to_uint8(self.x)

    def arrays(self) -> dict[str, np.ndarray]:
        out = {"x": self.x, "images": self.images, "pred": self.pred, "logpx": self.logpx}
        if self.target is not None:
            out["target"] = self.target
        return {k: v.detach().cpu().numpy() for k, v in out.items()}


def parse_classes(spec: list[str] | None, num_classes: int, names: tuple[str, ...] = ()) -> list[int] | None:
    """``None`` (unconditional), ``["all"]``, or classes as strings -> list of class indices: a class name where one
    of ``names`` (an image folder's class folders, CIFAR's "cat") matches exactly, a number too (of folders numbered
    1..10, "3" is the folder named 3, index 2); else a number is an index 0..K-1."""
    if not spec:
        return None
    if spec == ["all"]:
        return list(range(num_classes))
    if "all" in spec:
        raise ConfigError(f"--class all stands alone (every class), got --class {' '.join(spec)}")
    named = dict(zip(names, range(num_classes))) if len(names) == num_classes else {}
    shown = f"; its classes are {', '.join(names[:12])}{', ...' if len(names) > 12 else ''}" if named else ""
    classes = []
    for s in spec:
        if s in named:
            c = named[s]
        elif re.fullmatch(r"\d+", s):
            c = int(s)
            if c >= num_classes:
                raise ConfigError(f"--class {s}: no class is named {s!r}, and the checkpoint's class indices are "
                                  f"0..{num_classes - 1}{shown}")
        else:
            raise ConfigError(f"--class takes class indices, class names or 'all', got {s!r}{shown}")
        if c in classes:
            raise ConfigError(f"--class {s} is given twice (class {class_label(c, names)}): each class once (--n "
                              "samples are drawn for each)")
        classes.append(c)
    return classes


def class_label(index: int, names: tuple[str, ...] = ()) -> str:
    """A class as messages name it: its index, and its name where that is another text ('2 (named "3")')."""
    name = names[index] if index < len(names) else str(index)
    return str(index) if name == str(index) else f'{index} (named "{name}")'


def check_counts(n: int, n_steps: int, batch_size: int) -> None:
    if n <= 0 or n_steps < 0 or batch_size <= 0:
        raise ConfigError(f"--n and --batch-size must be > 0 and --n-steps >= 0, got --n {n}, --batch-size "
                          f"{batch_size}, --n-steps {n_steps}")


def check_sgld(step_size: float | None, noise: float | None) -> None:
    """Refuse a step size or noise that is negative, infinite or NaN, naming which (None: the checkpoint's own,
    checked once resolved)."""
    bad = [f"{flag} {v}" for flag, v in (("--step-size", step_size), ("--noise", noise))
           if v is not None and not 0 <= v < math.inf]
    if bad:
        raise ConfigError(f"--step-size and --noise must be finite numbers >= 0, got {', '.join(bad)}")


INITS = ("auto", "buffer", "noise", "informative")


def class_gaussians(em: EvalModel, data_dir: str | os.PathLike = "", download: bool = False) -> ClassGaussians:
    """JEM++'s informative initialisation for ``em``: a Gaussian per class fitted to its dataset's training images
    (read from ``data_dir``, by default the folder its run trained on): the images its run fitted them to, its
    training split without the validation images and, semi-supervised, only its labelled subset."""
    cfg = em.config
    split = DeviceData(em.arrays(data_dir, download), torch.device("cpu"), cfg.val_size, cfg.labels_per_class,
                       augment=False, data_noise=0.0)
    labelled = split.labelled
    return ClassGaussians(split.train_x[labelled], split.train_y[labelled], em.num_classes).to(em.device)


def resolve_init(em: EvalModel, init: str) -> str:
    """Where chains start ('buffer', 'noise' or 'informative'); ``auto`` is the checkpoint's replay buffer when it
    has one, else where its run started chains (its --buffer-init)."""
    if init not in INITS:
        raise ConfigError(f"--init must be one of {', '.join(INITS)}, got {init!r}")
    if init == "buffer" and em.buffer is None:
        raise ConfigError(f"{em.path} has no replay buffer ({em.label}): use --init noise or informative")
    if init != "auto":
        return init
    return "buffer" if em.buffer is not None else ("informative" if em.config.buffer_init == "informative"
                                                   else "noise")


def chain_starts(em: EvalModel, init: str, n: int, target: torch.Tensor | None = None,
                 data_dir: str | os.PathLike = "", download: bool = False) -> torch.Tensor:
    """``n`` chain starts [n, *S] on the device, from ``init`` (resolved): buffer rows, U(-1, 1), or the class
    Gaussians (of class ``target`` when given) of the training images in ``data_dir`` (default: the run's); torch's
    generator draws them."""
    if init == "buffer":
        return em.buffer[torch.randint(0, len(em.buffer), (n,), device=em.device)]
    if init == "informative":
        return class_gaussians(em, data_dir, download).fill(n, target)
    return torch.rand((n, *em.sample_shape), device=em.device) * 2 - 1


def draw(checkpoint: str | os.PathLike | EvalModel, n: int = 100, classes: list[int] | None = None,
         n_steps: int = 100, init: str = "auto", step_size: float | None = None, noise: float | None = None,
         batch_size: int = 500, device: str = "auto", seed: int = 0, progress: bool = False,
         data_dir: str | os.PathLike = "", download: bool = False) -> Drawn:
    """``n`` unconditional samples, or ``n`` for each class in ``classes`` (class-major order). ``data_dir`` is
    where the training images of ``init="informative"`` are read (default: the folder the run trained on)."""
    check_counts(n, n_steps, batch_size)
    if init not in INITS:
        raise ConfigError(f"--init must be one of {', '.join(INITS)}, got {init!r}")
    em = load_model(checkpoint, device)
    init = resolve_init(em, init)
    a, s = em.energy_params()
    a = a if step_size is None else step_size
    s = s if noise is None else noise
    check_sgld(a, s)
    target = None
    if classes is not None:
        target = torch.tensor(classes, device=em.device).repeat_interleave(n)
    # the draw's own generator states: the caller's (a notebook's next draws) are left as they were
    with torch.random.fork_rng(devices=[em.device] if em.device.type == "cuda" else []):
        torch.default_generator.manual_seed(seed)
        default_generator(em.device).manual_seed(seed)  # on CUDA: em.device's, where the chains draw their noise
        x0 = chain_starts(em, init, n if target is None else len(target), target, data_dir, download)
        x = run_chains(em.model, x0, n_steps, a, s, target, batch_size, progress)
    logits = predict_logits(em.model, x, batch_size)
    settings = {"checkpoint": str(em.path.resolve()), "iteration": em.iteration, "model": em.label, "n": n,
                "classes": classes, "n_steps": n_steps, "init": init,
                # the classes' names, where the checkpoint knows them (the targets are indices)
                "class_names": ([em.info.classes[c] for c in classes]
                                if classes is not None and len(em.info.classes) == em.num_classes else None),
                "step_size": a, "noise": s, "seed": seed,
                # the seed repeats a draw only with these two: each batch of chains draws its own noise
                "batch_size": batch_size, "device": str(em.device)}
    return Drawn(x, target, logits.argmax(1), torch.logsumexp(logits, 1), settings)


def default_output(em: EvalModel, classes: list[int] | None) -> Path:
    """<checkpoint folder>/sampled/unconditional.npz, .../class-cat-dog.npz or .../all-classes.npz (sampled-best/ for
    best.pt). Classes go by name where the checkpoint knows them (--class 3 of folders numbered 1..10 is the folder
    named 3: class-3, not its index 2), by index where it does not; a name is made a file name's part (characters
    other than letters, digits, ".", "+" and "-" become "_"), and a long list is cut, with a digest of the whole.
    Where the names so made could name two lists of classes alike (two names made the same, "a b" and "a_b", or
    alike but for case, which some file systems ignore; or a name holding the "-" that joins them: "a-b" and "a",
    "b"), a digest of the classes' indices follows them: each list of classes gets a file of its own, the same one
    each time."""
    if classes is None:
        return em.output_dir("sampled") / "unconditional.npz"
    if classes == list(range(em.num_classes)):
        return em.output_dir("sampled") / "all-classes.npz"
    names = tuple(em.info.classes) if len(em.info.classes) == em.num_classes else ()
    safe = [re.sub(r"[^\w.+-]+", "_", n) for n in names]
    name = "class-" + "-".join(safe[c] if names else str(c) for c in classes)
    # (indices alone, as numbers joined by "-", name one list each)
    ambiguous = bool(names) and (len({s.lower() for s in safe}) < len(safe) or any("-" in s for s in safe))
    digest = hashlib.sha1(",".join(map(str, classes)).encode()).hexdigest()[:8]
    if len(name.encode()) > 120:  # a file name has at most 255 bytes; a digest keeps two long lists apart
        head = name[:100]
        while len(head.encode()) > 100:
            head = head[:-1]
        name = f"{head.rstrip('-')}-etc-{len(classes)}-{digest}"
    elif ambiguous:
        name = f"{name}-{digest}"
    return em.output_dir("sampled") / f"{name}.npz"


def check_output(path: str | os.PathLike, overwrite: bool = False) -> Path:
    """``path`` as a Path if samples may be written there: a known format, and no file to lose unless asked."""
    path = output_path(path, tuple(FORMATS), "the samples", overwrite)
    # and the picture of them written beside it: no file is replaced unasked
    output_path(path.with_suffix(".png"), (".png",), "the sample grid beside --out", overwrite)
    return path


def save(drawn: Drawn, path: str | os.PathLike, overwrite: bool = False) -> Path:
    """Write the samples atomically: ``.npz`` (NumPy arrays) or ``.pt`` (a dict of tensors + settings)."""
    path = check_output(path, overwrite)
    if path.suffix.lower() == ".pt":  # X.PT too: the suffix is checked in any case
        atomic_save({**{k: torch.from_numpy(v) for k, v in drawn.arrays().items()}, "settings": drawn.settings},
                    path)
    else:
        import io

        buf = io.BytesIO()
        np.savez(buf, **drawn.arrays())
        atomic_write_bytes(buf.getvalue(), path)
    return path


def save_grid(drawn: Drawn, path: str | os.PathLike, max_images: int = 100) -> Path:
    """A picture of the samples: at most ``max_images``; one row per class for conditional samples (one image of
    each class at least)."""
    n = drawn.settings["n"]
    if drawn.target is None:
        return plots.image_grid(drawn.x[:max_images], path)
    k = len(drawn.settings["classes"])
    per_row = min(n, max(1, max_images // k))
    rows = drawn.x.view(k, n, *drawn.x.shape[1:])[:, :per_row]
    return plots.image_grid(rows.reshape(-1, *drawn.x.shape[1:]), path, nrow=per_row)

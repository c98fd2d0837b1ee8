"""Datasets decoded once into uint8 tensors held on the training device; batches drawn and augmented there.

Supported: ``digits`` (scikit-learn's 8x8 digits, offline), ``cifar10``, ``cifar100``, ``svhn``
(torchvision layout, downloaded with ``--download`` or found in ``--data-dir``) and ``imagefolder``
(class subfolders; decoded once and cached). A ``--data-dir`` that holds ``train/`` and ``test/``
class folders is also accepted for cifar10/cifar100/svhn, e.g. the JPEG copy of CIFAR-10, and so is a
folder of archives (.tar.gz, .zip, ...) of such folders, read in place without unpacking.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import importlib.util
import math
import os
import stat
import sys
import tarfile
import time
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from fastjem.config import TENSORS
from fastjem.errors import ConfigError, DataNotFoundError, FastJEMWarning
from fastjem.memory import check_fits, free_bytes, size_text

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".jpe", ".jfif", ".bmp", ".gif", ".webp", ".tif", ".tiff", ".ppm", ".pgm",
                  ".pbm")
# images in other formats (phones' HEIC, AVIF, JPEG XL, JPEG 2000, cameras' raw files...): not read, which is said
UNREAD_IMAGE_SUFFIXES = (".heic", ".heif", ".avif", ".jxl", ".jp2", ".j2k", ".ico", ".tga", ".psd", ".svg", ".dng",
                         ".cr2", ".cr3", ".nef", ".arw", ".orf", ".rw2", ".raf", ".exr", ".hdr")
# the held-out split of an image folder: test/, else the first of these that exists
HELD_OUT = ("test", "val", "valid", "validation")
# archives of image folders, read in place (not unpacked)
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".zip")
# torchvision's own downloads: unpacked once found in --data-dir (checksum verified; nothing is fetched)
TORCHVISION_ARCHIVES = {"cifar10": "cifar-10-python.tar.gz", "cifar100": "cifar-100-python.tar.gz"}
TORCHVISION_FOLDERS = {"cifar10": "cifar-10-batches-py", "cifar100": "cifar-100-python"}
# The validation split and the labelled subset do not depend on the run's seed.
SPLIT_SEED = 1234


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    num_classes: int
    channels: int
    image_size: int
    pad: int  # reflect-pad before the random crop
    flip: bool  # horizontal flips (not for digits or SVHN)
    default_val_size: int
    classes: tuple[str, ...] = ()


@dataclass
class Arrays:
    """uint8 images [N, C, H, W] and int64 labels [N] for train and test, on the CPU."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor
    info: DatasetInfo
    # a digest of the training images' names (class/path) where the loader knows them (an image folder)
    files: str = ""

    def __repr__(self) -> str:
        # the sizes, not the images (the dataclass's repr printed four tensors)
        info = self.info
        return (f"Arrays({info.name}: {len(self.train_y)} train / {len(self.test_y)} test images of "
                f"{'x'.join(map(str, self.train_x.shape[1:]))} {self.train_x.dtype}, {info.num_classes} classes)")


def data_fingerprint(arrays: Arrays) -> dict:
    """What a resumed run checks its data against: the split sizes (for the message) and ``digest``, of the training
    labels in order and (image folders) the training files' names, which fix the validation split and labelled
    subset (the test set may change). Not the pixels, which another decoder version may round otherwise."""
    digest = hashlib.sha1(arrays.train_y.numpy().astype("<i8").tobytes() + b"|" + arrays.files.encode())
    return {"train": len(arrays.train_y), "test": len(arrays.test_y), "digest": digest.hexdigest()[:16]}


def _names_digest(splits: Iterable[tuple[Path, list[tuple[Path, int]]]], classes: Sequence[str]) -> str:
    """``Arrays.files`` of a folder: its training images as class/path within the class folder (the folder itself
    may move)."""
    names = [f"{classes[y]}/{p.relative_to(top / classes[y]).as_posix()}" for top, items in splits for p, y in items]
    return hashlib.sha1("\n".join(names).encode(errors="surrogateescape")).hexdigest()[:16]


def arrays_from_tensors(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor,
                        classes: Sequence[str] | None = None, name: str = "tensors", flip: bool = True,
                        pad: int | None = None, val_size: int | None = None) -> Arrays:
    """Your own dataset for ``Trainer(cfg, data=...)`` and ``load_model(..., data=...)``.

    Images [N, C, H, W] (square), uint8 in 0..255 or floating point in [0, 1]; labels integers in 0..K-1 with
    K = len(classes) (default: 1 + the largest label). ``flip``: horizontal flips in the augmentation (off for
    digits, text, anything whose mirror image is another class); ``pad``: reflect padding before the random crop
    (default H // 8); ``val_size``: the default held-out split (default a tenth of train, at most 5000).
    """
    xs = {"train_x": train_x, "test_x": test_x}
    for key, x in xs.items():
        if not torch.is_tensor(x) or x.dim() != 4:
            advice = ": pass torch.from_numpy(x)" if type(x).__module__ == "numpy" else ""
            raise ConfigError(f"{key} must be a tensor of images [N, C, H, W]; got "
                              f"{tuple(x.shape) if torch.is_tensor(x) else type(x).__name__}{advice}")
        if x.shape[1] == x.shape[2] and x.shape[3] in (1, 3, 4) and x.shape[1] not in (1, 3, 4):
            # channels last (NumPy's and PIL's layout) was told its images were not square, to resize or crop them
            raise ConfigError(f"{key} is {tuple(x.shape)}: images [N, H, W, C] with channels last; fastjem takes "
                              "them channels first, [N, C, H, W]: pass x.permute(0, 3, 1, 2)")
        if x.shape[-1] != x.shape[-2]:
            raise ConfigError(f"{key} holds {x.shape[-2]}x{x.shape[-1]} images: square images are needed (resize or "
                              "crop them, e.g. with fastjem.data.fit_size(x, size))")
        if x.dtype != torch.uint8:
            if not x.is_floating_point():
                raise ConfigError(f"{key} must be uint8 (0..255) or floating point in [0, 1]; got {x.dtype}")
            lo, hi = float(x.min()), float(x.max())
            if math.isnan(lo) or math.isnan(hi):
                # NaN passed the range check and became pixel 0 in the uint8 cast
                raise ConfigError(f"{key} holds NaN pixels: give finite images in [0, 1], or uint8")
            if lo < 0 or hi > 1:
                raise ConfigError(f"{key} is floating point in [{lo:.3g}, {hi:.3g}]: give it in [0, 1] (fastjem "
                                  "maps pixels to [-1, 1] itself), or as uint8")
            xs[key] = (x.float() * 255).round().to(torch.uint8)
    train_x, test_x = (xs[k].detach().cpu().contiguous() for k in ("train_x", "test_x"))
    if train_x.shape[1:] != test_x.shape[1:]:
        raise ConfigError(f"train images are {tuple(train_x.shape[1:])} and test images {tuple(test_x.shape[1:])}: "
                          "they must have one shape")
    ys = []
    for key, y, x in (("train_y", train_y, train_x), ("test_y", test_y, test_x)):
        y = torch.as_tensor(y)
        if y.dim() != 1 or len(y) != len(x) or y.is_floating_point() or y.dtype == torch.bool:
            raise ConfigError(f"{key} must be integer labels [N] for the {len(x)} images; got {y.dtype} "
                              f"{tuple(y.shape)}")
        ys.append(y.detach().cpu().to(torch.int64))
    train_y, test_y = ys
    k = len(classes) if classes is not None else int(max(train_y.max(), test_y.max())) + 1
    for key, y in (("train_y", train_y), ("test_y", test_y)):
        if len(y) and (int(y.min()) < 0 or int(y.max()) >= k):
            raise ConfigError(f"{key} has labels in {int(y.min())}..{int(y.max())}; they must lie in 0..{k - 1} "
                              f"({k} classes)")
    size = train_x.shape[-1]
    if pad is not None and not 0 <= pad < size:
        raise ConfigError(f"pad={pad}: the reflect padding before the random crop must lie in 0..{size - 1}, less than "
                          f"the images' side ({size}); 0 for none")
    names = tuple(classes) if classes is not None else tuple(str(i) for i in range(k))
    default_val = min(5000, len(train_y) // 10) if val_size is None else val_size
    info = DatasetInfo(name, k, train_x.shape[1], size, size // 8 if pad is None else pad, flip, default_val, names)
    return Arrays(train_x, train_y, test_x, test_y, info)


def check_arrays(data, given: str = "data=") -> Arrays:
    """Refuse ``data`` that is not the ``Arrays`` fastjem trains on: uint8 images [N, C, S, S] as its ``info``
    describes them and int64 labels [N] of its classes. ``arrays_from_tensors`` makes such data; an ``Arrays`` built
    by hand (or edited since: it is a plain dataclass) went unchecked, and float images in [0, 1] trained as images
    all near -1, labels past the classes failed inside the loss, mid-run."""
    fix = "make it with fastjem.data.arrays_from_tensors(train_x, train_y, test_x, test_y, classes)"
    if not isinstance(data, Arrays):
        raise ConfigError(f"{given} takes a fastjem.data.Arrays, got a {type(data).__name__}: {fix}")
    info = data.info
    shape = (info.channels, info.image_size, info.image_size)
    for split in ("train", "test"):
        x, y = getattr(data, f"{split}_x"), getattr(data, f"{split}_y")
        if not torch.is_tensor(x) or x.dtype != torch.uint8 or tuple(x.shape[1:]) != shape or x.dim() != 4:
            got = f"{x.dtype} {tuple(x.shape)}" if torch.is_tensor(x) else type(x).__name__
            raise ConfigError(f"{given}: {split}_x must be uint8 images [N, {', '.join(map(str, shape))}] (as its "
                              f"info says: {info.channels} channels of {info.image_size}x{info.image_size}), got "
                              f"{got}: {fix}")
        if not torch.is_tensor(y) or y.dtype != torch.int64 or tuple(y.shape) != (len(x),):
            got = f"{y.dtype} {tuple(y.shape)}" if torch.is_tensor(y) else type(y).__name__
            raise ConfigError(f"{given}: {split}_y must be int64 labels [{len(x)}] for its {len(x)} images, got {got}: "
                              f"{fix}")
        if len(y) and (int(y.min()) < 0 or int(y.max()) >= info.num_classes):
            raise ConfigError(f"{given}: {split}_y has labels in {int(y.min())}..{int(y.max())}, past its "
                              f"{info.num_classes} classes (0..{info.num_classes - 1}): {fix}")
    return data


def dataset_mismatch(saved: DatasetInfo, given: DatasetInfo) -> str | None:
    """Why ``given`` data cannot stand for the data a network was trained on (classes, channels, image size), or
    None when it can."""
    keys = ("num_classes", "channels", "image_size")
    if all(getattr(saved, k) == getattr(given, k) for k in keys):
        return None

    def desc(info: DatasetInfo) -> str:
        return f"{info.name} ({', '.join(f'{k} {getattr(info, k)}' for k in keys)})"

    return f"it was trained on {desc(saved)}; data= holds {desc(given)}"


def shown_classes(classes: Sequence[str]) -> str:
    """The first five class names, for messages."""
    return ", ".join(classes[:5]) + (", ..." if len(classes) > 5 else "")


def class_names_differ(trained: Sequence[str], given: Sequence[str]) -> bool:
    """Whether data whose classes are named ``given`` is not the data a network learnt ``trained`` from: the names
    or their order differ, where neither side names its classes by index only ("0", "1", ...: torchvision's SVHN,
    and exports that cannot be told apart from the data named in words); two sides named by index differ where
    their order does (folders 0..11 listed as text, 0, 1, 10, 11, 2, ..., would permute the labels)."""
    def by_index(names: Sequence[str]) -> bool:
        return sorted(names) == sorted(str(i) for i in range(len(names)))

    if list(trained) == list(given):
        return False
    if by_index(trained) and by_index(given):
        return True
    return not by_index(trained) and not by_index(given)


def class_order(names: Iterable[str]) -> list[str]:
    """Class folders' order, which gives their labels: by name, and by number where every name is one (0..K-1 as
    0, 1, 2, ..., 10, not 0, 1, 10, 2)."""
    names = list(names)
    if names and all(n.isdecimal() for n in names):
        return sorted(names, key=lambda n: (int(n), n))
    return sorted(names)


def default_data_dir() -> Path:
    return Path(os.environ.get("FASTJEM_DATA", Path.home() / ".cache" / "fastjem" / "data"))


def cache_dir() -> Path:
    return Path(os.environ.get("FASTJEM_CACHE", Path.home() / ".cache" / "fastjem" / "cache"))


def load_arrays(name: str, data_dir: str | os.PathLike = "", download: bool = False, image_size: int = 0,
                flag: str = "--data-dir", choose_dataset: bool = True, progress: bool = True) -> Arrays:
    """Load a dataset by name into uint8 CPU tensors; ``image_size`` > 0 resizes every image to that square
    (shorter side to ``image_size``, antialiased, then a centre crop). ``flag``: the option that gave
    ``data_dir``, named in the advice when the data is missing or another; ``choose_dataset``: whether that
    advice may suggest another ``--dataset`` (training can, evaluation takes the checkpoint's); ``progress``: bars
    while an image folder is decoded."""
    if name == TENSORS:
        raise ConfigError("dataset \"tensors\" is data given in Python: Trainer(cfg, data=fastjem.data."
                          "arrays_from_tensors(...)) to train, fastjem.eval.load_model(path, data=...) to evaluate")
    root = Path(data_dir).expanduser() if data_dir else default_data_dir()
    if root.is_file() and root.name == TORCHVISION_ARCHIVES.get(name):
        root = root.parent  # torchvision's own archive named directly: its folder is torchvision's root
    if root.is_dir() and root.name == TORCHVISION_FOLDERS.get(name):
        root = root.parent  # torchvision's unpacked folder named directly: the same
    if name == "digits":
        arrays = _load_digits()
    elif name in ("cifar10", "cifar100", "svhn"):
        if (_has_split_folders(root) or _has_lone_split(root) and not _torchvision_files_present(name, root)
                or (_image_archives(root) and not _torchvision_files_present(name, root))):
            # (a folder's or an archive's class folders are checked before its images are decoded: CIFAR-10's
            # 60 000 given as cifar100 were decoded to be refused)
            def check(classes: list[str]) -> None:
                _check_named_classes(name, classes, root, flag, choose_dataset)

            return _rename(_load_imagefolder(root, image_size, flag, progress, check), name, root, flag,
                           choose_dataset)
        arrays = _load_torchvision(name, root, download, flag)
    elif name == "imagefolder":
        _check_not_torchvision_download(root, flag, choose_dataset)
        return _load_imagefolder(root, image_size, flag, progress)
    else:
        raise DataNotFoundError(f"unknown dataset {name!r}; choose digits, cifar10, cifar100, svhn or imagefolder")
    if image_size and image_size != arrays.info.image_size:
        old = arrays.info.image_size
        arrays = Arrays(fit_size(arrays.train_x, image_size), arrays.train_y, fit_size(arrays.test_x, image_size),
                        arrays.test_y, replace(arrays.info, image_size=image_size,
                                               pad=round(arrays.info.pad * image_size / old)))
    return arrays


def validation_size(info: DatasetInfo, n_train: int, val_size: int = -1) -> int:
    """Training images held out for validation: ``val_size``, or the dataset's default when -1."""
    if val_size < -1:
        raise ConfigError(f"--val-size must be >= 0, or -1 for the dataset default; got {val_size}")
    given = val_size >= 0
    val_size = val_size if given else info.default_val_size
    if val_size >= n_train:
        what = f"--val-size {val_size}" if given else f"{info.name}'s default validation split of {val_size} images"
        raise DataNotFoundError(f"{what} leaves no training data ({n_train} training images): give a smaller "
                                f"--val-size (e.g. {n_train // 10}; 0 for none)")
    return val_size


def validation_split(n_train: int, val_size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Generator]:
    """The validation and training indices of ``n_train`` training images (a fixed permutation), and the generator
    after drawing it (the labelled subset draws on from it)."""
    g = torch.Generator().manual_seed(SPLIT_SEED)
    perm = torch.randperm(n_train, generator=g)
    return perm[:val_size], perm[val_size:], g


def untrained_classes(info: DatasetInfo, train_y: torch.Tensor) -> list[str]:
    """The classes with no image among the training labels ``train_y`` (what is left once validation is held out)."""
    counts = torch.bincount(train_y.cpu(), minlength=info.num_classes).tolist()
    names = info.classes if len(info.classes) == len(counts) else [str(i) for i in range(len(counts))]
    return [name for name, n in zip(names, counts) if n == 0]


def untrained_message(missing: list[str], val_size: int) -> str:
    held = f" once the {val_size} validation images are held out" if val_size else ""
    return (f"{len(missing)} class(es) have no training images{held}: {', '.join(missing[:10])}"
            f"{' ...' if len(missing) > 10 else ''}; the classifier never learns them: add images of them"
            + (", or give a smaller --val-size (0 for none)" if val_size else ""))


def summarize(arrays: Arrays, val_size: int = -1) -> dict:
    """What a run would train on: shape, classes, split sizes, images per class, pixel statistics."""
    info = arrays.info
    val = validation_size(info, len(arrays.train_y), val_size)
    k = info.num_classes
    train_counts = torch.bincount(arrays.train_y, minlength=k).tolist()
    test_counts = torch.bincount(arrays.test_y, minlength=k).tolist()
    # summed a chunk at a time: a float copy of the whole set (614 MB for CIFAR-10) is not needed for a mean
    total = torch.zeros(arrays.train_x.shape[1], dtype=torch.float64)
    for chunk in arrays.train_x.split(4096):
        total += chunk.sum(dim=(0, 2, 3), dtype=torch.float64)
    mean = total / max(1, arrays.train_x.shape[0] * arrays.train_x.shape[2] * arrays.train_x.shape[3])
    return {
        "dataset": info.name, "shape": [info.channels, info.image_size, info.image_size], "num_classes": k,
        "classes": list(info.classes), "train": len(arrays.train_y) - val, "val": val, "test": len(arrays.test_y),
        "train_per_class": train_counts, "test_per_class": test_counts,
        "pixel_mean": [round(float(m), 2) for m in mean],
        "augmentation": {"pad": info.pad, "flip": info.flip},
        # the validation split DeviceData holds out
        "untrained": untrained_classes(info, arrays.train_y[validation_split(len(arrays.train_y), val)[1]]),
    }


def fit_size(x: torch.Tensor, size: int) -> torch.Tensor:
    """uint8 images [..., C, H, W] -> [..., C, size, size]: the shorter side scaled to ``size`` (bilinear,
    antialiased when shrinking), then the centre ``size`` x ``size`` crop."""
    h, w = x.shape[-2:]
    if (h, w) == (size, size):
        return x
    if min(h, w) == size:
        top, left = (h - size) // 2, (w - size) // 2
        return x[..., top:top + size, left:left + size].contiguous()
    scale = size / min(h, w)
    new = (max(size, round(h * scale)), max(size, round(w * scale)))
    top, left = (new[0] - size) // 2, (new[1] - size) // 2
    c = x.shape[-3]
    flat = x.reshape(-1, c, h, w)
    out = torch.empty(flat.shape[0], c, size, size, dtype=torch.uint8, device=x.device)
    # a chunk of images at a time: the whole set in floats at the new size (CIFAR-10 at --image-size 224: 30 GB, four
    # times what the result takes) is not needed
    for i in range(0, flat.shape[0], FIT_CHUNK):
        part = F.interpolate(flat[i:i + FIT_CHUNK].float(), size=new, mode="bilinear", align_corners=False,
                             antialias=scale < 1)
        out[i:i + FIT_CHUNK] = part.round_().clamp_(0, 255)[..., top:top + size, left:left + size]
    return out.reshape(*x.shape[:-3], c, size, size)


# images resized at once by fit_size
FIT_CHUNK = 1024


# how many classes the named datasets have: a folder given for one of them must hold that many
KNOWN_CLASS_COUNTS = {"cifar10": 10, "cifar100": 100, "svhn": 10}
# CIFAR-10's class names (torchvision's, and the usual image-folder exports'): a folder named so is CIFAR-10
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


def _check_named_classes(name: str, classes: Sequence[str], root: Path, flag: str = "--data-dir",
                         choose_dataset: bool = True) -> None:
    """Refuse class folders ``classes`` as the named dataset where their count is not that dataset's (CIFAR-10's
    images given as cifar100, say), or their names are CIFAR-10's and the name another's (CIFAR-10 given as svhn).
    Other names are not checked: exports name classes by index as often as by word."""
    shown = shown_classes(classes)
    held = None
    if len(classes) != KNOWN_CLASS_COUNTS[name]:
        held = f"{name} has {KNOWN_CLASS_COUNTS[name]} classes, but {root} holds {len(classes)} ({shown})"
    elif name != "cifar10" and tuple(classes) == CIFAR10_CLASSES:
        held = f"{root} holds CIFAR-10's classes ({shown}), not {name}'s"
    if held is not None:
        advice = f"point {flag} at the {name} data"
        if choose_dataset:
            advice += ", give the --dataset it holds, or --dataset imagefolder for any folder of class folders"
        raise DataNotFoundError(f"{held}: {advice}")


def _rename(arrays: Arrays, name: str, root: Path, flag: str = "--data-dir", choose_dataset: bool = True) -> Arrays:
    """A folder of class folders read as the named dataset (its augmentation and validation split); refused where
    its classes are not that dataset's (``_check_named_classes``)."""
    info = arrays.info
    _check_named_classes(name, info.classes, root, flag, choose_dataset)
    flip = name != "svhn"
    # the torchvision layout's pad 4 at 32 pixels, scaled as load_arrays scales it for --image-size
    pad = min(info.image_size - 1, max(1, round(4 * info.image_size / 32)))  # (reflect padding: less than the side)
    # the named set's 5000 held-out images, or a tenth of a smaller folder's training images (5000 of a subset of
    # 5500 would leave 500 to train on)
    val = min(5000, len(arrays.train_y) // 10)
    arrays.info = DatasetInfo(name, info.num_classes, info.channels, info.image_size, pad, flip, val, info.classes)
    return arrays


def _digits_csv() -> tuple[np.ndarray, np.ndarray] | None:
    """scikit-learn's digits (images [1797, 8, 8] as float64 0..16, labels [1797]) read from the file it ships,
    without importing it (``import sklearn`` took 0.95 s of a 1-iteration run's 7 s); None where the file is not
    where scikit-learn keeps it, or is not the 1797 rows of 64 pixels and a label that ``load_digits`` reads."""
    spec = importlib.util.find_spec("sklearn")  # found, not imported
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" / "digits.csv.gz"
    try:
        data = np.loadtxt(path, delimiter=",")
    except (OSError, ValueError):
        return None
    if data.shape != (1797, 65):
        return None
    return data[:, :-1].reshape(-1, 8, 8), data[:, -1].astype(np.int64)


def _load_digits() -> Arrays:
    digits = _digits_csv()
    if digits is None:
        from sklearn.datasets import load_digits

        loaded = load_digits()
        digits = loaded.images, loaded.target
    images, target = digits
    # Pixel values 0..16 -> 0..255.
    x = torch.from_numpy(np.rint(images * (255.0 / 16.0)).astype(np.uint8)).unsqueeze(1)
    y = torch.from_numpy(target.astype(np.int64))
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(SPLIT_SEED))
    n_test = 360
    test, train = perm[:n_test], perm[n_test:]
    info = DatasetInfo("digits", 10, 1, 8, 0, False, 180, tuple(str(i) for i in range(10)))
    return Arrays(x[train], y[train], x[test], y[test], info)


# what torchvision reads of each set, below the data folder
TORCHVISION_FILES = {"cifar10": ("cifar-10-batches-py",), "cifar100": ("cifar-100-python",),
                     "svhn": ("train_32x32.mat", "test_32x32.mat")}


def _missing_message(name: str, root: Path, flag: str, download: bool = False) -> str:
    """What to do where ``name`` is not in ``root``; ``download``: it was asked for, and failed (said below this)."""
    layouts = {
        "cifar10": "cifar-10-batches-py/ (the python version from https://www.cs.toronto.edu/~kriz/cifar.html)",
        "cifar100": "cifar-100-python/ (the python version from https://www.cs.toronto.edu/~kriz/cifar.html)",
        "svhn": "train_32x32.mat and test_32x32.mat (http://ufldl.stanford.edu/housenumbers/)",
    }
    # a file (notes.txt, another set's archive) is no folder to download into or to fill
    where = f"{root}, a file, not a folder" if root.is_file() else root
    into = "the folder you give" if root.is_file() else root
    # "in that folder and pass --data-dir FOLDER" read as one step: the folder named needs no option
    offline = (f"put {layouts[name]} in a folder and pass {flag} FOLDER" if root.is_file() else
               f"put {layouts[name]} in {root}, or in a folder of yours and pass {flag} FOLDER")
    return (
        f"{name} was not found in {where}.\n"
        + ("  - the download failed (below): with no internet here, fetch the files on a machine that has it;\n"
           if download else f"  - on a machine with internet: add --download (it is saved in {into});\n") +
        f"  - offline: {offline};\n"
        f"  - or pass {flag} pointing at a folder with train/<class>/*.jpg and test/<class>/*.jpg, or with\n"
        f"    archives (.tar.gz, .zip, ...) of such folders, which are read in place."
    )


def _load_torchvision(name: str, root: Path, download: bool, flag: str = "--data-dir") -> Arrays:
    import torchvision

    archive = TORCHVISION_ARCHIVES.get(name)
    # with --download, the files' checksums too: a corrupt copy is fetched again, as torchvision's download step did
    if archive is not None and (download or (root / archive).is_file()) and not _torchvision_folder_complete(
            name, root, verify=download):
        from torchvision.datasets import utils as tv_utils

        cls = torchvision.datasets.CIFAR10 if name == "cifar10" else torchvision.datasets.CIFAR100
        if download:
            # fetched by torchvision's download helper alone (it checks the MD5, and keeps a file already there that
            # has it), then unpacked below as an archive found here is: torchvision's own extraction passes tarfile
            # no filter, and would write a member outside the folder
            try:
                tv_utils.download_url(cls.url, str(root), filename=archive, md5=cls.tgz_md5)
            except (RuntimeError, OSError) as err:
                raise DataNotFoundError(_missing_message(name, root, flag, download)
                                        + f"\n  (download failed: {err})") from err
        # checked here first: on a mismatch torchvision's download step would fetch the file again
        elif not tv_utils.check_integrity(str(root / archive), cls.tgz_md5):
            raise DataNotFoundError(_missing_message(name, root, flag) + f"\n  ({root / archive} is there but its MD5 "
                                    "checksum is not the published one: a truncated or different file? fetch it "
                                    "again, or pass --download)")
        try:
            # unpacked here (over a half-unpacked folder too), then read by torchvision without its download step
            _unpack_tar(root / archive, root)
        except (tarfile.TarError, OSError) as err:
            raise DataNotFoundError(f"{root / archive} is there, but it could not be unpacked into {root} "
                                    f"({type(err).__name__}: {err}): give a writable {flag} holding it, or unpack "
                                    f"it yourself there (tar xzf {archive})") from err
    try:
        if name == "svhn":
            train = torchvision.datasets.SVHN(str(root), split="train", download=download)
            test = torchvision.datasets.SVHN(str(root), split="test", download=download)
            tx, ty = torch.from_numpy(train.data), torch.from_numpy(np.asarray(train.labels, dtype=np.int64))
            vx, vy = torch.from_numpy(test.data), torch.from_numpy(np.asarray(test.labels, dtype=np.int64))
            info = DatasetInfo("svhn", 10, 3, 32, 4, False, 5000, tuple(str(i) for i in range(10)))
        else:
            cls = torchvision.datasets.CIFAR10 if name == "cifar10" else torchvision.datasets.CIFAR100
            # (fetched and unpacked above: torchvision's download step would unpack the archive itself)
            train = cls(str(root), train=True, download=False)
            test = cls(str(root), train=False, download=False)
            tx = torch.from_numpy(train.data).permute(0, 3, 1, 2).contiguous()
            vx = torch.from_numpy(test.data).permute(0, 3, 1, 2).contiguous()
            ty = torch.tensor(train.targets, dtype=torch.int64)
            vy = torch.tensor(test.targets, dtype=torch.int64)
            k = 10 if name == "cifar10" else 100
            info = DatasetInfo(name, k, 3, 32, 4, True, 5000, tuple(train.classes))
    except (RuntimeError, OSError) as err:
        hint = "" if not download else f"\n  (download failed: {err})"
        there = [str(root / p) for p in TORCHVISION_FILES[name] if (root / p).exists()]
        if there and not download:
            # not missing: present but short of a file, or with one whose checksum is not the published one
            verb = "is" if len(there) == 1 else "are"
            raise DataNotFoundError(
                f"{name} in {root} is incomplete or corrupt: {' and '.join(there)} {verb} "
                f"there, but torchvision cannot read the set ({str(err).strip()}). Fetch it again (or add --download "
                f"to replace it), or pass {flag} pointing at a complete copy") from err
        others = [n for n in TORCHVISION_FILES if n != name and _torchvision_files_present(n, root)]
        if others:
            # (cifar10 asked of a folder that holds cifar-100-python/: not "not found" alone)
            hint += f"\n  ({root} holds {' and '.join(others)} instead: another dataset than the one asked for)"
        raise DataNotFoundError(_missing_message(name, root, flag, download) + hint) from err
    return Arrays(tx, ty, vx, vy, info)


def _unpack_tar(archive: Path, dest: Path) -> None:
    """``archive`` unpacked into ``dest`` by tarfile's "data" filter (Python 3.14's default): a member that would
    land outside ``dest``, a link out of it or a device file is refused (tarfile.TarError), never written.
    torchvision's own unpacking passes no filter: it would write them, and Python 3.12 and 3.13 warn at every call."""
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter="data")
            return
        # a Python before the filters (3.10.11, 3.11.3): the same refusal, checked first
        top = dest.resolve()
        members = tar.getmembers()
        for m in members:
            inside = (top / m.name).resolve()
            if not (m.isfile() or m.isdir()) or (inside != top and top not in inside.parents):
                raise tarfile.TarError(f"{m.name!r} is not a file or folder inside {dest}")
        tar.extractall(dest, members=members)


def _torchvision_folder_complete(name: str, root: Path, verify: bool = False) -> bool:
    """torchvision's unpacked CIFAR folder holds every file its archive does (a half-unpacked one is unpacked
    again); ``verify``: each with its published MD5 checksum too."""
    import torchvision
    from torchvision.datasets.utils import check_integrity

    cls = torchvision.datasets.CIFAR10 if name == "cifar10" else torchvision.datasets.CIFAR100
    folder = root / cls.base_folder
    files = [*cls.train_list, *cls.test_list, (cls.meta["filename"], cls.meta["md5"])]
    if verify:
        return all(check_integrity(str(folder / f), md5) for f, md5 in files)
    return all((folder / f).is_file() for f, _ in files)


def _split_folders(root: Path) -> tuple[Path, Path] | None:
    """(train, held-out) folders of class subfolders under ``root``: train/ with test/ (or val/, valid/,
    validation/, in that order of preference), or None when ``root`` is not laid out that way."""
    train = root / "train"
    if not (train.is_dir() and any(p.is_dir() for p in train.iterdir())):
        return None
    return next(((train, root / name) for name in HELD_OUT if (root / name).is_dir()), None)


def _has_split_folders(root: Path) -> bool:
    return _split_folders(root) is not None


def _has_lone_split(root: Path) -> bool:
    """train/ (or test/, val/..., Train/, Testing/...) of class folders without its other half:
    _check_not_a_lone_split says what to do."""
    return root.is_dir() and any(_split_name(s.name) and s.is_dir() and any(p.is_dir() for p in s.iterdir())
                                 for s in root.iterdir())


# the splits' folders as other datasets spell them (Kaggle's Training/ and Testing/), lower-cased
SPLIT_SPELLINGS = {"training": "train", "testing": "test"}


def _split_name(name: str) -> str | None:
    """The split folder ``name`` spells, in any case (Train/, TEST/, Training/...: train, test), or None."""
    name = SPLIT_SPELLINGS.get(name.lower(), name.lower())
    return name if name in ("train", *HELD_OUT) else None


def _check_split_names(where: str | Path, classes: list[str], fix: str = "rename") -> None:
    """Split folders spelled otherwise than train/, test/ (or val/...) in lower case, with class folders inside: read
    as classes, Train/ and Test/ (or Training/ and Testing/) made a two-class problem of every image."""
    renames = [f"{c}/ to {_split_name(c)}/" for c in classes if c != _split_name(c)]
    if renames:
        raise DataNotFoundError(
            f"{where} holds {', '.join(c + '/' for c in classes)} with class folders inside: the splits are read "
            f"from folders named train/ and test/ (or {', '.join(h + '/' for h in HELD_OUT[1:])}), in lower case, so "
            f"these would be classes named after the splits: {fix} {', '.join(renames)}")


def _check_not_a_lone_split(root: Path, classes: list[str], flag: str) -> None:
    """Class folders named like splits (train/ alone, or val/ beside it without test/, or Train/ and Test/...) are
    a layout mistake, not two classes called 'train' and 'val'."""
    if not (classes and all(map(_split_name, classes))):
        return
    if any(p.is_dir() for c in classes for p in (root / c).iterdir()):
        _check_split_names(root, classes)
        raise DataNotFoundError(
            f"{root} holds {', '.join(c + '/' for c in classes)} with class folders inside, but not train/ beside "
            f"one of {', '.join(h + '/' for h in HELD_OUT)}: add the missing split, or point {flag} at the "
            "folder of class folders itself (about a sixth of each class's images is then the test set)")
    _check_not_flat_splits(root, classes)


def _check_not_flat_splits(where: str | Path, classes: list[str]) -> None:
    """train/ beside test/ (or val/..., in any case) holding images with no class folders: not classes named after
    them."""
    splits = [_split_name(c) for c in classes]
    if "train" in splits and len(classes) > 1 and all(splits):
        raise DataNotFoundError(
            f"{where} holds {', '.join(c + '/' for c in classes)} with images directly inside: they would be "
            "classes named after the splits. Put each split's images in class folders (train/<class>/<image>, "
            f"{next(s for s in splits if s != 'train')}/<class>/<image>)")


def _unread_splits(where, unread: list[str], test: str) -> list[str]:
    """Held-out folders beside train/ other than the test set (val/ beside test/) are not read: what says so (a
    warning), if any."""
    if not unread:
        return []
    return [f"{where}: {', '.join(h + '/' for h in unread)} not read: {test}/ is the test set and the validation split "
            f"is carved from train/ (--val-size); merge {unread[0]}/ into train/ to train on its images"]


def _warn_unread(where, unread: list[str], test: str) -> None:
    for note in _unread_splits(where, unread, test):
        warnings.warn(note, FastJEMWarning, stacklevel=3)


def _hidden(name: str) -> bool:
    """Dot-files and folders (.DS_Store, ._x.png, .ipynb_checkpoints) and macOS's __MACOSX: never data."""
    return name.startswith(".") or name == "__MACOSX"


def _has_class_folders(root: Path) -> bool:
    return any(p.is_dir() and not _hidden(p.name) for p in root.iterdir())


def _is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


def _image_archives(root: Path) -> list[Path]:
    """Archives in ``root`` (or ``root`` itself, an archive) that may hold image folders (torchvision's own
    downloads excepted, and hidden files: macOS's ._imgs.zip beside imgs.zip, copied to a USB stick, is metadata)."""
    if _is_archive(root):
        return [] if root.name in TORCHVISION_ARCHIVES.values() else [root]
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_file() and p.name.lower().endswith(ARCHIVE_SUFFIXES)
                  and p.name not in TORCHVISION_ARCHIVES.values() and not _hidden(p.name))


def _check_not_torchvision_download(root: Path, flag: str, choose_dataset: bool = True) -> None:
    """torchvision's own download given as an image folder (cifar-10-python.tar.gz, cifar-10-batches-py/,
    train_32x32.mat, or a folder of them alone): arrays, not image files, refused with the --dataset that reads them
    (the archive named itself was taken for a folder: "a file stands where a folder is needed: choose another
    --out-dir")."""
    own = {**{a: n for n, a in TORCHVISION_ARCHIVES.items()}, **{f: n for n, f in TORCHVISION_FOLDERS.items()},
           **{f: "svhn" for f in (*TORCHVISION_FILES["svhn"], "extra_32x32.mat")}}
    if root.name in own and root.exists():
        there, folder = [root.name], root.parent
    else:
        names = sorted(p.name for p in root.iterdir() if not _hidden(p.name)) if root.is_dir() else []
        there, folder = (names, root) if names and all(n in own for n in names) else ([], root)
    if not there:
        return
    sets = sorted({own[n] for n in there})
    advice = (f"give --dataset {' or '.join(sets)} {flag} {folder}" if choose_dataset
              else f"point {flag} at a folder of class folders")
    raise DataNotFoundError(f"{root} {'holds' if folder == root else 'is'} torchvision's download of "
                            f"{' and '.join(sets)} ({', '.join(there)}): arrays, not the image files --dataset "
                            f"imagefolder reads: {advice}")


def _torchvision_files_present(name: str, root: Path) -> bool:
    if name == "svhn":
        return (root / "train_32x32.mat").is_file()
    return (root / TORCHVISION_FOLDERS[name]).is_dir() or (root / TORCHVISION_ARCHIVES[name]).is_file()


def image_files(folder: Path, unread: list[Path] | None = None) -> list[Path]:
    """The image files under ``folder`` (a class folder), at any depth, symlinked folders followed, hidden ones
    (.ipynb_checkpoints, __MACOSX, ._x.png) skipped; sorted as paths. ``unread``: gets the images in formats that are
    not read (UNREAD_IMAGE_SUFFIXES)."""
    def unreadable(err: OSError):
        # os.walk skips a folder it cannot list without a word: its images would be left out of their class
        raise err

    found = []
    seen = set()  # folders already read, as real paths: a link back up (a loop) or to a folder read twice
    for top, dirs, files in os.walk(folder, followlinks=True, onerror=unreadable):
        real = os.path.realpath(top)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = [d for d in dirs if not _hidden(d)]
        files = [f for f in files if not _hidden(f)]
        # (os.walk lists a link to a missing folder among the files): an image's, or a folder's (no suffix); a link
        # to a missing labels.txt takes no image away
        for f in files:
            if f.lower().endswith(IMAGE_SUFFIXES) or not Path(f).suffix:
                _check_not_dangling(Path(top) / f)
        found += [Path(top) / f for f in files if f.lower().endswith(IMAGE_SUFFIXES) and (Path(top) / f).is_file()]
        if unread is not None:
            unread += [Path(top) / f for f in files if f.lower().endswith(UNREAD_IMAGE_SUFFIXES)]
    return sorted(found)


def _unread_formats(where, unread: list) -> list[str]:
    """Images in formats that are not read (a phone's HEIC photos among JPEGs) are left out: what says so, with
    their formats (a warning), if any."""
    if not unread:
        return []
    counts = collections.Counter(Path(str(n)).suffix.lower() for n in unread)
    return [f"{len(unread)} image(s) under {where} are in formats that are not read "
            f"({', '.join(f'{s} {n}' for s, n in counts.most_common())}; {sorted(unread)[0]}"
            f"{', ...' if len(unread) > 1 else ''}) and are left out: convert them to PNG or JPEG to use them (read: "
            f"{' '.join(IMAGE_SUFFIXES)})"]


def _warn_unread_formats(where, unread: list) -> None:
    for note in _unread_formats(where, unread):
        warnings.warn(note, FastJEMWarning, stacklevel=4)


def _check_not_dangling(p: Path) -> None:
    """A symbolic link to nothing (a moved folder, a disk not mounted) would leave its images out without a word."""
    if p.is_symlink() and not p.exists():
        raise DataNotFoundError(f"{p} is a symbolic link to {os.readlink(p)}, which does not exist (moved, or on a "
                                "disk not mounted?): mount or restore its target, or remove the link")


def _list_images(folder: Path) -> tuple[list[tuple[Path, int]], list[str]]:
    entries = [p for p in folder.iterdir() if not _hidden(p.name)]
    for p in entries:
        _check_not_dangling(p)
    classes = class_order(p.name for p in entries if p.is_dir())
    loose = sorted(p.name for p in entries if p.is_file() and p.name.lower().endswith(IMAGE_SUFFIXES))
    if classes and loose:
        # images beside the class folders belong to no class: left out, which is said
        warnings.warn(f"{len(loose)} image(s) directly in {folder} ({', '.join(loose[:3])}"
                      f"{', ...' if len(loose) > 3 else ''}) are not read: they are in no class folder; move them "
                      "into one to train on them", FastJEMWarning, stacklevel=3)
    if not classes:
        raise DataNotFoundError(f"{folder} has no class subfolders: expected {folder}/<class>/<image> "
                                f"(or {folder}/train/<class>/... and {folder}/test/<class>/... or val/), or archives "
                                f"({', '.join(ARCHIVE_SUFFIXES)}) of such folders")
    unread: list[Path] = []
    per_class = {c: image_files(folder / c, unread) for c in classes}
    _warn_unread_formats(folder, unread)
    if not any(per_class.values()):
        raise DataNotFoundError(f"no images ({', '.join(IMAGE_SUFFIXES)}) under {folder}")
    empty = [c for c in classes if not per_class[c]]
    if empty:
        # a class without images would still take a label (and shift every later one against an archive's)
        raise DataNotFoundError(f"class folder(s) {', '.join(str(folder / c) for c in empty)} hold no images "
                                f"({', '.join(IMAGE_SUFFIXES)}): add images or remove the folder(s)")
    # one file reached by two paths (a link to another class's folder, or up a level; or a hard link): refused,
    # since its copies would carry two labels or lie in two splits
    where: dict[tuple[int, int], Path] = {}
    for c in classes:
        for p in per_class[c]:
            first = where.setdefault(_file_id(p), p)
            if first != p:
                raise DataNotFoundError(f"{first} and {p} are one file, reached through {_link_between(first, p)}: a "
                                        "link makes one image two; remove the link, or copy the images you mean to "
                                        "have twice")
    items = [(p, label) for label, c in enumerate(classes) for p in per_class[c]]
    return items, classes


def _file_id(p: Path) -> tuple[int, int]:
    """(device, inode) of the file ``p`` names, through symbolic links: two paths of one file, by a symbolic or a hard
    link, share it."""
    st = os.stat(p)
    return st.st_dev, st.st_ino


def _link_between(a: Path, b: Path) -> str:
    """How two paths of one file are linked, for a message: the symbolic link (the path that is not its real one), or
    a hard link."""
    for p in (b, a):
        if os.path.realpath(p) != os.path.abspath(p):
            return f"a symbolic link ({p})"
    return "a hard link"


def _class_difference(train: list[str], held_out: list[str], held: str = "test") -> str:
    """How the class folders of train/ and of the held-out split (``held``/) differ, with what to do. Both must hold
    the same class folders, named alike: a label is its folder's place among train/'s, and a class missing from the
    test set would go unmeasured (a test set of some classes only is refused too)."""
    def listed(names: list[str]) -> str:
        return ", ".join(n + "/" for n in names[:10]) + (f", ... ({len(names)} in all)" if len(names) > 10 else "")

    only_train, only_held = class_order(set(train) - set(held_out)), class_order(set(held_out) - set(train))
    # the same class spelled in another case (Cat/ and cat/): a rename, not a class missing on each side
    folded = {n.lower(): n for n in only_held}
    cased = [(n, folded[n.lower()]) for n in only_train if n.lower() in folded]
    only_train = [n for n in only_train if all(n != a for a, _ in cased)]
    only_held = [n for n in only_held if all(n != b for _, b in cased)]
    parts = [f"train/{a}/ and {held}/{b}/ differ in case only: rename one as the other"
             for a, b in cased[:10]] + [f"({len(cased) - 10} more such)"] * (len(cased) > 10)
    if only_train:
        parts.append(f"only in train/: {listed(only_train)} (give each a folder in {held}/ with test images of the "
                     "class, or remove it from train/ to leave the class out)")
    if only_held:
        parts.append(f"only in {held}/: {listed(only_held)} (the network cannot learn a class without training "
                     f"images: move some of its images into a folder of that name in train/, or remove it from "
                     f"{held}/)")
    return "; ".join(parts) + f". train/ and {held}/ must hold the same class folders, named alike"


# JPEG's start-of-frame markers (baseline, progressive, lossless, arithmetic...; not C4, C8, CC), which hold its size
JPEG_FRAMES = frozenset((0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF))


def _header_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) as a JPEG's first frame header, a GIF's logical screen or a WebP's first chunk gives it, read
    from the bytes (measured here on CIFAR-10's 32 x 32 JPEGs: 5 to 6 us an image; Pillow's lazy open took 55 us,
    torchvision's whole decoding 64 us); None for another format, or a header not read so."""
    if data[:3] == b"\xff\xd8\xff":
        at = 2
        while at + 9 <= len(data) and data[at] == 0xFF:
            marker = data[at + 1]
            if marker == 0xFF:  # a fill byte
                at += 1
            elif marker == 0x01 or 0xD0 <= marker <= 0xD7:  # markers without a segment
                at += 2
            elif marker in JPEG_FRAMES:
                return int.from_bytes(data[at + 7:at + 9], "big"), int.from_bytes(data[at + 5:at + 7], "big")
            elif marker in (0xD9, 0xDA):  # the end, or a scan, before any frame header
                return None
            else:
                at += 2 + int.from_bytes(data[at + 2:at + 4], "big")
        return None
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        chunk = data[12:16]
        if chunk == b"VP8X" and len(data) >= 30:  # the extended format's canvas
            return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
        if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:  # lossless: 14 bits each, less one
            bits = int.from_bytes(data[21:25], "little")
            return 1 + (bits & 0x3FFF), 1 + (bits >> 14 & 0x3FFF)
        if chunk == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":  # lossy: a key frame's 14 bits
            return int.from_bytes(data[26:28], "little") & 0x3FFF, int.from_bytes(data[28:30], "little") & 0x3FFF
    return None


def _past_pixel_limit(data: bytes) -> bool:
    """A JPEG, GIF or WebP of more pixels than Pillow decodes (twice its decompression-bomb threshold, 180 M pixels):
    refused before torchvision's decoder is given it, which decoded it whole (a small file may claim gigabytes of
    pixels), as Pillow refuses other formats and ``_png_fault`` PNGs. The size from the header (``_header_size``),
    else from Pillow's lazy open, which reads the header only."""
    from PIL import Image

    limit = Image.MAX_IMAGE_PIXELS
    if limit is None:
        return False
    size = _header_size(data)
    if size is None:
        if not (data[:3] == b"\xff\xd8\xff" or data[:6] in (b"GIF87a", b"GIF89a")
                or data[:4] == b"RIFF" and data[8:12] == b"WEBP"):
            return False  # not a format torchvision decodes here: Pillow decodes it, and refuses it
        import io

        try:
            with Image.open(io.BytesIO(data)) as im:
                size = im.size
        except Image.DecompressionBombError:
            return True
        except Exception:  # what is wrong with it, the decoders say
            return False
    return size[0] * size[1] > 2 * limit


def _webp_with_exif(data: bytes) -> bool:
    """A WebP file that carries EXIF (the extended header's VP8X chunk, its flags byte's EXIF bit)."""
    return data[:4] == b"RIFF" and data[8:16] == b"WEBPVP8X" and len(data) > 20 and bool(data[20] & 0x08)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# the channels of each PNG colour type, and the bit depths it allows
PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
PNG_DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}
# Adam7 interlacing's passes: (first column, first row, column step, row step)
ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))
# libpng's default limit on a side: a larger PNG is refused as its header is read, an error torchvision raises
PNG_SIDE_LIMIT = 1_000_000
# bytes inflated at a time while a PNG's image data is checked (a large image is not held inflated twice)
INFLATE_STEP = 1 << 20


class PngChunks(NamedTuple):
    """What one walk over a PNG's chunks finds: ``damaged`` (``_png_damaged``), else its IHDR chunk's data (where it
    is the first chunk), its IDAT chunks' data and how many runs of consecutive IDAT chunks they form."""

    damaged: bool
    header: bytes = b""
    pieces: tuple = ()
    runs: int = 0


def _png_chunks(data: bytes) -> PngChunks:
    """The chunks of the PNG ``data`` walked once, to its IEND chunk (``PngChunks``); not damaged for another format."""
    if data[:8] != PNG_SIGNATURE:
        return PngChunks(False)
    view, at = memoryview(data), 8
    header, pieces, runs, previous = b"", [], 0, b""
    while at + 12 <= len(data):
        end = at + 8 + int.from_bytes(view[at:at + 4], "big")  # the chunk's type and data end here, then its CRC
        if end + 4 > len(data):
            return PngChunks(True)
        kind = bytes(view[at + 4:at + 8])
        # (an ancillary chunk's, lower-case, is only warned of by libpng, and dropped)
        if kind[:1].isupper() and zlib.crc32(view[at + 4:end]) != int.from_bytes(view[end:end + 4], "big"):
            return PngChunks(True)
        if kind == b"IHDR" and at == 8:
            header = bytes(view[at + 8:end])
        elif kind == b"IDAT":
            runs += previous != b"IDAT"
            pieces.append(view[at + 8:end])
        elif kind == b"IEND":
            return PngChunks(False, header, tuple(pieces), runs)
        previous, at = kind, end + 4
    return PngChunks(True)


def _png_damaged(data: bytes) -> bool:
    """A PNG whose critical chunks (header, palette, image data) fail their CRC checks, or are cut short: a bit flipped
    on disk or in a copy. torchvision's PNG decoder (0.29) crashes the process on damaged image data (a segmentation
    fault: the run ended without a word), where Pillow raises an error that names the file."""
    return _png_chunks(data).damaged


class PngFault(NamedTuple):
    """Why torchvision's PNG decoder must not be given a PNG; ``rows_whole``: every row of pixels is there (Pillow
    decodes it, or names what else is wrong), else the image data itself is short or broken."""

    why: str
    rows_whole: bool


def _png_rows(header: bytes) -> tuple[np.ndarray, int] | None:
    """Where each row of a PNG's inflated image data starts (its filter-type byte) and that data's size, from its
    IHDR chunk; None for a header libpng refuses as it reads it, before any row (an error, not a crash)."""
    if len(header) != 13:
        return None
    width, height = int.from_bytes(header[:4], "big"), int.from_bytes(header[4:8], "big")
    depth, kind, compression, filtering, interlace = header[8:13]
    if (not (0 < width <= PNG_SIDE_LIMIT and 0 < height <= PNG_SIDE_LIMIT) or depth not in PNG_DEPTHS.get(kind, ())
            or compression or filtering or interlace > 1):
        return None
    bits = PNG_CHANNELS[kind] * depth  # per pixel
    starts, size = [], 0
    for x0, y0, dx, dy in ADAM7 if interlace else ((0, 0, 1, 1),):
        cols, rows = -(-max(0, width - x0) // dx), -(-max(0, height - y0) // dy)
        if cols and rows:  # (a pass of a small image may hold no pixel, and then no row)
            stride = 1 + -(-cols * bits // 8)
            starts.append(size + stride * np.arange(rows, dtype=np.int64))
            size += stride * rows
    return np.concatenate(starts), size


def _png_fault(data: bytes) -> PngFault | None:
    """Why torchvision's PNG decoder (0.29) must not be given ``data``, or None (for any other format too). libpng's
    errors met while it reads the pixel rows crash the process there (a segmentation fault: the run ended without a
    word; errors in the header are raised): chunks that fail their CRC checks or are cut short (a bit flipped on disk
    or in a copy), and, in intact chunks (an encoder's bug), image data that is not one zlib stream to its end with
    its checksum, holds less than the image's rows, or a row of a filter type past PNG's five. The stream is inflated
    to tell, a step at a time (measured: it adds half to three quarters of torchvision's own decoding time to a PNG of
    256 to 1024 pixels a side; paid once, since the images are cached). A stream that fails its checksum is a fault
    even where libpng only warns (its rows read first): which bytes are wrong cannot be told."""
    if data[:8] != PNG_SIGNATURE:
        return None
    # (one walk over the chunks: their checks, and the header and image data gathered)
    chunks = _png_chunks(data)
    if chunks.damaged:
        return PngFault("its chunks fail their CRC checks", True)
    header, pieces, runs = chunks.header, chunks.pieces, chunks.runs
    layout = _png_rows(header)
    if layout is None or not pieces:
        return None  # refused by libpng before any row is read
    from PIL import Image

    limit = Image.MAX_IMAGE_PIXELS
    if limit is not None and int.from_bytes(header[:4], "big") * int.from_bytes(header[4:8], "big") > 2 * limit:
        # past Pillow's pixel limit, Pillow's refusal (as for other formats), not 30 GB inflated to check a few-MB file
        return PngFault("it has more pixels than Pillow decodes", True)
    starts, size = layout
    if runs > 1:
        # libpng reads the first run alone
        return PngFault("its image data (IDAT chunks) is split by other chunks", False)
    inflater, got = zlib.decompressobj(), 0
    try:
        for piece in pieces:
            while not inflater.eof:
                out = inflater.decompress(piece, INFLATE_STEP)
                piece = inflater.unconsumed_tail
                if got < size:
                    # the filter types of the rows that start in this step
                    lo, hi = np.searchsorted(starts, (got, got + len(out)))
                    kinds = np.frombuffer(out, dtype=np.uint8)[starts[lo:hi] - got]
                    if len(kinds) and int(kinds.max()) > 4:
                        first = int(np.argmax(kinds > 4))
                        return PngFault(f"row {lo + first} has filter type {kinds[first]}, not one of PNG's 0-4", False)
                got += len(out)
                if not piece and len(out) < INFLATE_STEP:
                    break
    except zlib.error as err:
        # (after its rows too, where libpng only warns: which bytes are wrong, a checksum does not tell)
        why = str(err).split(": ", 1)[-1]  # zlib's reason, without "Error -3 while decompressing data"
        return PngFault(f"its compressed image data is broken ({why})", False)
    if got < size:
        ended = "ends" if inflater.eof else "stops"
        return PngFault(f"its image data {ended} after {got} of the {size} bytes its rows take", False)
    if not inflater.eof:
        return PngFault("its compressed image data does not end (cut short after its rows?)", True)
    return None


def _torchvision_decode(data: bytes, png_checked: bool = False) -> torch.Tensor | None:
    """uint8 [3, H, W] from torchvision's decoders (JPEG, PNG, GIF, WebP), turned as the EXIF orientation says; None
    where they cannot decode the file, or would not turn it (a WebP with EXIF: its orientation is not applied), or
    would crash on it (a PNG with a fault, ``_png_fault``; ``png_checked``: the caller found none)."""
    if _webp_with_exif(data) or (not png_checked and _png_fault(data) is not None):
        return None
    try:
        from torchvision.io import ImageReadMode, decode_image

        x = decode_image(torch.frombuffer(bytearray(data), dtype=torch.uint8), mode=ImageReadMode.RGB,
                         apply_exif_orientation=True)
    except (ImportError, RuntimeError, ValueError):
        return None
    if x.dim() == 3 and x.dtype == torch.uint16:
        # 16-bit PNG: rounded to 8 bits (Pillow's convert("RGB") would clip it to white)
        x = ((x.int() * 255 + 32767) // 65535).to(torch.uint8)
    return x if x.dtype == torch.uint8 and x.dim() == 3 else None


def read_image(data: bytes, name: str = "an image") -> torch.Tensor:
    """An encoded image -> uint8 [3, H, W], turned as the camera's EXIF orientation says (as image viewers show it):
    torchvision's decoders where they can (``_torchvision_decode``), Pillow for the rest; the same pixels as Pillow's
    convert("RGB"), but 16-bit images are rounded to 8 bits where Pillow clips them."""
    if not data:
        raise DataNotFoundError(f"{name} is empty (0 bytes): remove or replace it")
    fault = _png_fault(data)
    if fault is not None and not fault.rows_whole:
        # Pillow fills the missing rows with black without a word
        raise DataNotFoundError(f"{name} is a PNG whose image data is damaged, {fault.why}: re-save it (its chunks' "
                                "checksums hold: a bug of the program that wrote it?) or remove it")
    # (past the pixel limit: Pillow's refusal, below)
    x = None if fault is not None or _past_pixel_limit(data) else _torchvision_decode(data, png_checked=True)
    if x is not None:
        return x
    import io

    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:
            # Pillow reads a 16-bit PGM (any maxval above 255) as 32-bit "I" scaled to 0..65535
            sixteen = im.mode.startswith("I;16") or (im.mode == "I" and im.format == "PPM")
            im = ImageOps.exif_transpose(im)
            if sixteen:
                # 16-bit grey (TIFF, PGM): rounded to 8 bits, where convert("RGB") would clip it to white
                grey = (np.asarray(im).astype(np.int64) * 255 + 32767) // 65535
                return torch.from_numpy(grey.astype(np.uint8)).unsqueeze(0).expand(3, -1, -1).contiguous()
            if im.mode in ("I", "F"):
                # convert("RGB") clips: floats in [0, 1] became black, 32-bit counts white, without a word
                kind = "32-bit integer" if im.mode == "I" else "floating-point"
                raise DataNotFoundError(f"{name} holds {kind} pixels (Pillow mode {im.mode}), whose range (0..1? "
                                        "0..65535?) cannot be known: save it as an 8- or 16-bit image (PNG or "
                                        "TIFF), scaled as you mean it to be seen")
            return torch.from_numpy(np.asarray(im.convert("RGB"), dtype=np.uint8).copy()).permute(2, 0, 1)
    except Image.DecompressionBombError as err:
        # (not an OSError: it left the command as a traceback) a scan or satellite tile of 180 M pixels and more
        raise DataNotFoundError(f"{name} has more pixels than Pillow decodes ({err}): shrink it first (--image-size "
                                "resizes it only once decoded), or remove it") from err
    except (OSError, ValueError, SyntaxError) as err:
        # Pillow names the in-memory buffer it read ("<_io.BytesIO object at 0x...>"), not the file
        why = ("not an image format it knows" if isinstance(err, UnidentifiedImageError)
               else f"{type(err).__name__}: {err}")
        raise DataNotFoundError(f"{name} is not an image that Pillow or torchvision can decode ({why}): remove or "
                                "replace it") from err


@contextlib.contextmanager
def _decoding():
    """torchvision >= 0.29 warns at every decode that its decoders are deprecated (for TorchCodec's); Pillow warns of
    an image past its decompression-bomb threshold without naming the file (``_decode_many`` names them)."""
    from PIL import Image

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"torchvision\.")
        warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)
        yield


def _decode_threads() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(8, cores))


def _bad_files(bad: list[str]) -> DataNotFoundError:
    """The error that names the files that could not be decoded (ten of them), each with why."""
    more = f" (and {len(bad) - 10} more)" if len(bad) > 10 else ""
    return DataNotFoundError(f"{len(bad)} file(s) could not be read as images{more}:\n  " + "\n  ".join(bad[:10]))


def _decode_many(sources: Iterable, desc: str, size: int = 0, total: int | None = None,
                 progress: bool = True, bad: list[str] | None = None) -> list[torch.Tensor]:
    """Encoded images -> uint8 [3, H, W] each, fitted to ``size`` when > 0. ``sources`` yields Paths to read or
    (name, bytes) pairs, and may be a generator (an archive being read): chunks go to a thread pool as they
    come, and torchvision's decoders release the GIL, so decoding overlaps the reading and uses the cores (8 at
    most). Files that cannot be decoded are named in one error at the end; ``bad``: they are added to it instead
    (their places in the list hold why), for the caller to name with another set's."""
    from concurrent.futures import ThreadPoolExecutor

    from PIL import Image

    from fastjem.console import progress_bar

    # Pillow's decompression-bomb threshold (89 M pixels; twice that it refuses): images past it, whichever decoder
    # read them, named in one warning at the end (Pillow's own warning named no file)
    limit = Image.MAX_IMAGE_PIXELS
    large: list[tuple[str, int]] = []

    def decode_one(src) -> torch.Tensor | str:
        name = str(src) if isinstance(src, Path) else src[0]
        try:
            x = read_image(src.read_bytes(), name) if isinstance(src, Path) else read_image(src[1], name)
        except DataNotFoundError as err:  # every bad file is named at the end, not the first alone
            return str(err)
        if limit is not None and x.shape[-2] * x.shape[-1] > limit:
            large.append((name, x.shape[-2] * x.shape[-1]))
        return fit_size(x, size) if size else x

    def work(chunk: list) -> list[torch.Tensor | str]:
        return [decode_one(src) for src in chunk]

    def chunks():
        chunk = []
        for src in sources:
            chunk.append(src)
            if len(chunk) == 256:
                yield chunk
                chunk = []
        if chunk:
            yield chunk

    out: list = []
    threads = _decode_threads()
    # without ``total`` (a tar read as it is decoded): the bytes of the images decoded so far, and the memory free at
    # the first of them
    held = {"bytes": 0, "images": 0, "free": None}

    def take(images: list) -> None:
        first = not any(not isinstance(x, str) for x in out)
        out.extend(images)
        bar.update(len(images))
        shape = next((x.shape for x in images if not isinstance(x, str)), None)
        if total is None:
            decoded = [x for x in images if not isinstance(x, str)]
            if first and shape is not None:
                held["free"] = free_bytes("cpu")
            held["bytes"] += sum(x.numel() for x in decoded)
            held["images"] += len(decoded)
            free = held["free"]
            if free is not None and 2 * held["bytes"] > free:
                # refused as the images pass what fits, before the machine's memory is spent
                n, c = held["images"], shape[0] if shape is not None else 3
                raise ConfigError(
                    f"decoding {desc} takes more than {size_text(2 * held['bytes'])} on cpu ({n} images read so far, "
                    f"uint8, held twice while they are stacked; how many the archive holds is known only once it is "
                    f"read), which had {size_text(free)} free: pass --image-size N to resize them as they are "
                    f"decoded (shorter side to N, centre crop; under {math.isqrt(free // (2 * n * c))}, less what "
                    "training takes)")
        elif first and shape is not None:
            # the decoded images are held, then stacked (a second copy): refused at the first chunk, not once the
            # machine's memory is spent (200 000 images of 512 x 512 take 146 GiB)
            c, h, w = shape
            check_fits(2 * total * c * h * w, "cpu",
                       f"decoding {desc} ({total} images of {c}x{h}x{w}, uint8, held twice while they are stacked)",
                       lambda free: "pass --image-size N to resize them as they are decoded (shorter side to N, centre "
                                    f"crop; at most {math.isqrt(free // (2 * total * c))} fits here, less what "
                                    "training takes)")

    with (_decoding(), ThreadPoolExecutor(threads) as pool,
          progress_bar(total=total, desc=f"decoding {desc}", unit="img", leave=False, tty_interval=1.0,
                       disable=not progress) as bar):
        # a few chunks in flight at a time: an archive's members are read as the decoding keeps up, not all at once
        pending = collections.deque()
        try:
            for chunk in chunks():
                pending.append(pool.submit(work, chunk))
                if len(pending) > 2 * threads:
                    take(pending.popleft().result())
            while pending:
                take(pending.popleft().result())
        except BaseException:
            for future in pending:  # not decoded only to be dropped
                future.cancel()
            raise
    failed = [x for x in out if isinstance(x, str)]
    if failed and bad is None:
        raise _bad_files(failed)
    if failed:
        bad += failed
        return out
    if large:
        def pixels(n: int) -> str:
            return f"{n / 1e6:.0f} M pixels" if n >= 10 ** 6 else f"{n} pixels"

        large.sort()
        shown = ", ".join(f"{name} ({pixels(n)})" for name, n in large[:3])
        warnings.warn(f"{len(large)} image(s) of {desc} have more than {pixels(limit)}, Pillow's decompression-bomb "
                      f"threshold: {shown}{', ...' if len(large) > 3 else ''}; each was decoded whole (3 bytes a "
                      "pixel) before any --image-size resize: shrink them first if they are larger than meant (Pillow "
                      f"refuses images of more than {pixels(2 * limit)})", FastJEMWarning, stacklevel=3)
    return out


def _stack(images: list[torch.Tensor], labels: list[int], names: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """uint8 [N, 3, H, W] and int64 labels; every image must have the first one's size."""
    shape = images[0].shape
    if shape[1] != shape[2]:
        raise DataNotFoundError(f"{names[0]} is {shape[2]}x{shape[1]}, not square: pass --image-size N to resize "
                                "the images on load (shorter side to N, centre crop to N x N)")
    for a, name in zip(images, names):
        if a.shape != shape:
            raise DataNotFoundError(f"{name} is {a.shape[2]}x{a.shape[1]} but earlier images are "
                                    f"{shape[2]}x{shape[1]}: pass --image-size N to resize them on load (shorter "
                                    "side to N, centre crop), or resize the images to one size first")
    return torch.stack(images).contiguous(), torch.tensor(labels, dtype=torch.int64)


def _decode_splits(splits: Sequence[tuple[list[tuple[Path, int]], str]], size: int = 0, progress: bool = True
                   ) -> list[torch.Tensor]:
    """(images, labels) of each split (its (path, label) items and name), stacked; the files of every split that
    cannot be decoded named in one error (the test split's were named only once the training split's were fixed)."""
    bad: list[str] = []
    decoded = [_decode_many([path for path, _ in items], desc, size, total=len(items), progress=progress, bad=bad)
               for items, desc in splits]
    if bad:
        raise _bad_files(bad)
    return [t for (items, _), images in zip(splits, decoded)
            for t in _stack(images, [label for _, label in items], [str(path) for path, _ in items])]


# 8: the warnings of what an archive leaves unread kept in the cache, said at every load (a cached load said nothing);
# 7: a plain tar cut short, one path in two archives, and split folders spelled Train/ or Testing/ refused (their
# caches held images missing, twice, or in two classes named after the splits); 6: 16-bit PGMs rounded (they were
# white), 32-bit and float images refused (clipped to white or black); 5: several archives' class folders read as the
# folder they unpack to together (an archive per class with subfolders took the subfolders as classes); 4: WebP files'
# EXIF orientation applied; 3: EXIF orientation applied, 16-bit TIFFs rounded; 2: a folder's test split by a hash of
# each image's path (1: a seeded shuffle of the whole list)
IMAGEFOLDER_CACHE_VERSION = 8


def split_hash(key: str) -> int:
    """The hash ``_split_off_test`` splits a folder by: of the image's key, under the fixed SPLIT_SEED."""
    return int.from_bytes(hashlib.sha1(f"{SPLIT_SEED}:{key}".encode(errors="surrogateescape")).digest()[:8], "big")


def _split_off_test(items: list, keys: list[str], where: str) -> tuple[list, list]:
    """A folder without train/ and test/: about a sixth of each class's images is the test set, picked by a hash of
    each image's ``key`` (its class and path within the class folder), not by the run's seed nor by the other files:
    adding or removing images never moves another between the splits (a shuffle of the whole list did, so that a
    trained model's images became test images). A class of two images or more gives at least one to the test set
    (its smallest hash) and keeps at least one for training (its largest); a class of one image trains. Items keep
    their order (class by class)."""
    digest = [split_hash(k) for k in keys]
    # the items of each class, in one pass (a pass over every item per class took minutes for 1000 classes)
    by_class: dict = {}
    for i, item in enumerate(items):
        by_class.setdefault(item[1], []).append(i)
    test = set()
    for members in by_class.values():
        chosen = {i for i in members if digest[i] % 6 == 0}
        if len(members) == 1:
            chosen = set()
        elif not chosen:
            chosen = {min(members, key=digest.__getitem__)}
        elif len(chosen) == len(members):
            chosen.discard(max(members, key=digest.__getitem__))
        test |= chosen
    if not test:
        raise DataNotFoundError(f"{where}: no class holds two images or more, so none can be held out as the test "
                                "set: add images (about a sixth of each class's go to the test set), or give the "
                                "folder train/<class>/ and test/<class>/")
    return [x for i, x in enumerate(items) if i not in test], [x for i, x in enumerate(items) if i in test]


def _archive_members(archive: Path):
    """(path inside the archive, open file, None) for every regular file, and (path, None, target) for every link
    (hard or symbolic), in the archive's own order."""
    if archive.name.lower().endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                try:
                    opened = zf.open(info)
                except (RuntimeError, NotImplementedError) as err:
                    # password-protected, or packed by a method zipfile lacks (Deflate64, PPMd): zipfile raised out of
                    # the command, a traceback; a member that is no image is not data either way
                    if _image_member(info.filename) is None:
                        continue
                    why = ("it is encrypted (a zip with a password)" if info.flag_bits & 0x1 else
                           f"{err} ({zipfile.compressor_names.get(info.compress_type, info.compress_type)})")
                    raise DataNotFoundError(f"{archive}: {info.filename} cannot be read: {why}; unpack the archive "
                                            "yourself and pass the folder") from err
                with opened as f:
                    if stat.S_ISLNK(info.external_attr >> 16):  # a symbolic link: its target is the content
                        yield info.filename, None, f.read().decode("utf-8", "replace")
                    else:
                        yield info.filename, f, None
    else:
        # a stream: read once, front to back, no seeks
        with tarfile.open(archive, mode="r|*", tarinfo=_MarkedEndTarInfo) as tar:
            for member in tar:
                if member.isfile():
                    yield member.name, tar.extractfile(member), None
                elif member.islnk() or member.issym():
                    yield member.name, None, member.linkname
            if not getattr(tar, "reached_end_marker", False):
                raise tarfile.ReadError(f"it ends before a tar archive's end marker, after {len(tar.members)} "
                                        "members")


class _MarkedEndTarInfo(tarfile.TarInfo):
    """A tar header that notes on its TarFile where the archive ended at its end marker (a block of zeros). tarfile
    ends the members alike there and where the file stops early or a header is garbled: a plain .tar cut short at a
    member's end read as fewer images, without a word (a compressed one fails its stream's own end check)."""

    @classmethod
    def fromtarfile(cls, tar):
        try:
            return super().fromtarfile(tar)
        except tarfile.EOFHeaderError:
            tar.reached_end_marker = True
            raise


def _image_member(name: str) -> list[str] | None:
    """The folders and file name of an archive member that is an image in a class folder (at any depth; no hidden
    part), or None for any other member."""
    parts = [q for q in name.split("/") if q and q != "."]
    if len(parts) < 2 or not parts[-1].lower().endswith(IMAGE_SUFFIXES) or any(map(_hidden, parts)):
        return None
    return parts


def _archive_image_count(archives: list[Path]) -> int | None:
    """The images in ``archives`` where that is known before they are read, for the decoding's memory check: a
    zip's central directory lists its members (read at once). A tar has no index: its members are counted only by a
    pass over the whole stream, decompressed, with a Python object per header (measured here: 1.0 s for the 50 000
    members of CIFAR-10's JPEG copy, seven times its 0.14 s to decompress, and a fifth of decoding them on two
    cores), paid at every decode to guard against a rare case; so where an archive is a tar this is None, and the
    decoding is refused as the images it has read pass the free memory (``_decode_many``)."""
    count = 0
    for archive in archives:
        if not archive.name.lower().endswith(".zip"):
            return None
        try:
            with zipfile.ZipFile(archive) as zf:
                count += sum(not info.is_dir() and _image_member(info.filename) is not None for info in zf.infolist())
        except (zipfile.BadZipFile, OSError):
            return None  # said by the reading, with what to do
    return count


@dataclass
class _ArchiveListing:
    """What ``_archive_images`` found of the image members of archives, in archive order."""

    records: list = field(default_factory=list)  # (split or None, class, path below the class, where)
    loose: list = field(default_factory=list)  # (index in records, folders of the path) outside train/ and test/
    misspelled: set = field(default_factory=set)  # split folders spelled otherwise than train/, test/...
    unread: list = field(default_factory=list)  # images in formats that are not read
    reading: list = field(default_factory=list)  # the archive being read: the one named when reading fails
    # torchvision's CIFAR folders inside (its download under another name): {dataset: archive}
    torchvision: dict = field(default_factory=dict)


def _archive_images(archives: list[Path], listing: _ArchiveListing, progress: bool = True):
    """(where, bytes) of each image member of ``archives``, in archive order, each recorded in ``listing``."""
    from fastjem.console import progress_bar

    for archive in archives:
        listing.reading[:] = [archive]
        # beside the decoding bar, in a terminal only: two bars in a log file are cursor-moving escape codes
        for name, f, link in progress_bar(iterable=_archive_members(archive), desc=f"reading {archive.name}",
                                          unit="file", leave=False, tty_interval=1.0,
                                          disable=not progress or not sys.stderr.isatty()):
            parts = _image_member(name)
            if parts is None:
                if name.lower().endswith(UNREAD_IMAGE_SUFFIXES) and not any(map(_hidden, name.split("/"))):
                    listing.unread.append(f"{archive.name}:{name}")
                top = next((q for q in name.split("/") if q and q != "."), "")
                for dataset, folder in TORCHVISION_FOLDERS.items():
                    if top == folder:
                        listing.torchvision.setdefault(dataset, archive)
                continue
            if link is not None:
                # read in one pass, a link cannot be followed back to its target; and an image reached by two
                # names would be two images (two labels, or both splits), which an unpacked folder refuses
                raise DataNotFoundError(f"{archive}: {name} is a link to {link}, which is not read from an "
                                        "archive: replace the link by a copy of the image or remove it, or "
                                        "unpack the archive and pass the folder")
            split_at = next((i for i, q in enumerate(parts[:-2]) if _split_name(q)), None)
            if split_at is not None and parts[split_at] != _split_name(parts[split_at]):
                listing.misspelled.add(parts[split_at])  # Train/, Testing/...: refused below, with every spelling
                continue
            if split_at is None:
                # the class is settled once every member is known (below): <prefix>/<class>/...
                listing.loose.append((len(listing.records), tuple(parts[:-1])))
                split, cls, rel = None, parts[-2], parts[-1:]
            else:
                split, cls, rel = parts[split_at], parts[split_at + 1], parts[split_at + 2:]
            # rel as a tuple of parts sorts as the unpacked folder's paths do
            listing.records.append((split, cls, tuple(rel), f"{archive.name}:{name}"))
            yield listing.records[-1][3], f.read()


def _handed_once(items: list):
    """The items of ``items``, each dropped from the list as it is handed on: the bytes of an image read from an
    archive go once it is decoded, not held beside every decoded image to the end."""
    for i, item in enumerate(items):
        items[i] = None
        yield item


def _archive_splits(archives: list[Path], listing: _ArchiveListing, images: list
                    ) -> tuple[list, list, list[str], list[str]]:
    """The training and test items (image, label, where) of archives' images (``images``, in ``listing``'s order),
    their classes, and the warnings of what is left unread (val/ beside test/, images in formats not read)."""
    names = ", ".join(str(a) for a in archives)
    _check_split_names(names, sorted(listing.misspelled), "unpack the archive(s) and rename")
    notes = _unread_formats(names, listing.unread)
    records = list(listing.records)
    # Outside train/ and test/, the class is the first folder below the folders every such image is in, in whichever
    # archive: the archives read as the one folder they unpack to together (a class folder at any depth below what
    # they share; an archive per class, its class's subfolders within it, takes each archive's top folder).
    folders = [f for _, f in listing.loose]
    common = len(os.path.commonprefix(folders)) if folders else 0
    for i, f in listing.loose:
        at = min(common, len(f) - 1)  # all in one folder: that folder is the class
        records[i] = (None, f[at], (*f[at + 1:], records[i][2][-1]), records[i][3])
    # one path twice (in two archives: a second download, "imgs (1).zip"; or appended twice to one tar): unpacked,
    # one copy replaces the other; read in place it was two images, in both splits perhaps
    first_of: dict[tuple, int] = {}
    for i, (split, cls, rel, where) in enumerate(records):
        first = first_of.setdefault((split, cls, rel), i)
        if first != i:
            path = "/".join(q for q in (split, cls, *rel) if q is not None)
            raise DataNotFoundError(f"{records[first][3]} and {where} are one image, {path}, twice: unpacked "
                                    "together, one would replace the other; remove the copy (a second download of an "
                                    "archive?)")
    found: dict[str | None, dict[str, list]] = {}
    for (split, cls, rel, where), image in zip(records, images):
        found.setdefault(split, {}).setdefault(cls, []).append((rel, image, where))

    def flat(by_class: dict, classes: list[str]) -> list[tuple[torch.Tensor, int, str]]:
        return [(image, label, name) for label, c in enumerate(classes)
                for _, image, name in sorted(by_class.get(c, []), key=lambda r: r[0])]

    held_out = next((h for h in HELD_OUT if h in found), None)
    if "train" in found:
        notes += _unread_splits(names, [h for h in HELD_OUT if h in found and h != held_out], held_out)
    if "train" in found or held_out:
        if not ("train" in found and held_out):
            have, missing = ("train", "test") if "train" in found else (held_out, "train")
            raise DataNotFoundError(f"the archives {names} hold images under {have}/ but none under "
                                    f"{missing}/<class>/: add the archive with the {missing} split")
        classes = class_order(found["train"])
        if class_order(found[held_out]) != classes:
            difference = _class_difference(classes, class_order(found[held_out]), held_out)
            raise DataNotFoundError(f"the archives {names} have different class folders under train/ and "
                                    f"{held_out}/: {difference}")
        return flat(found["train"], classes), flat(found[held_out], classes), classes, notes
    if None not in found:
        # (renamed, it is read as an archive of image folders, and holds none)
        for dataset, archive in list(listing.torchvision.items())[:1]:
            raise DataNotFoundError(f"{archive} is torchvision's download of {dataset} "
                                    f"({TORCHVISION_FOLDERS[dataset]}/ inside: arrays, not image files) under another "
                                    f"name: rename it "
                                    f"{TORCHVISION_ARCHIVES[dataset]} (the name --dataset {dataset} reads, its "
                                    f"checksum checked) and give --dataset {dataset} with the folder that holds it")
        raise DataNotFoundError(f"no images ({', '.join(IMAGE_SUFFIXES)}) in class folders inside {names}: expected "
                                "members train/<class>/<image> and test/<class>/<image>, or <class>/<image>")
    classes = class_order(found[None])
    _check_not_flat_splits(names, classes)
    # the same keys as the unpacked folder's: class/path within it
    keys = [f"{c}/{'/'.join(rel)}" for c in classes for rel, _, _ in sorted(found[None][c], key=lambda r: r[0])]
    train, test = _split_off_test(flat(found[None], classes), keys, names)
    return train, test, classes, notes


def _decode_archives(archives: list[Path], size: int = 0, progress: bool = True,
                     check_classes: Callable[[list[str]], None] | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, list, list[str]]:
    """Images straight from archives of image folders, nothing unpacked to disk: members under
    ``[prefix/]train/<class>/`` and ``[prefix/]test/<class>/`` form the splits; without those, members
    under ``[prefix/]<class>/`` form one set that is split as an unpacked folder would be. Images come out in
    the order an unpacked folder gives (classes sorted, files sorted within each class). Last, the warnings of what
    is left unread (val/ beside test/, images in formats not read): the caller warns them, and keeps them with the
    cached images to warn them at every load. ``check_classes``: called with the classes before any image is
    decoded (CIFAR-10's JPEG tarballs given as cifar100 were decoded, 60 000 images, to be refused): the archives are
    read once, each image's bytes kept as it is listed (about the images' size in the archives: 55 MB for CIFAR-10's
    JPEGs), then the classes checked, then the bytes decoded (a first pass that only listed the members, then a
    second that read them, decompressed a tar's stream twice: 2.2 to 3.9 s more of the CIFAR-10 tarballs' first
    load). Without it, the images are decoded as the archives are read: a large archive's bytes are never all
    held."""
    desc = ", ".join(a.name for a in archives)
    listing = _ArchiveListing(reading=archives[:1])

    def reading(read: Callable[[], list]) -> list:
        try:
            return read()
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as err:
            raise DataNotFoundError(f"could not read the archive {listing.reading[0]}: {type(err).__name__}: {err} (a "
                                    "truncated or corrupt download? fetch it again, or unpack it yourself and pass "
                                    "the folder)") from err

    if check_classes is None:
        images = reading(lambda: _decode_many(_archive_images(archives, listing, progress), desc, size,
                                              _archive_image_count(archives), progress=progress))
    else:
        members = reading(lambda: list(_archive_images(archives, listing, progress)))
        check_classes(_archive_splits(archives, listing, [None] * len(members))[2])
        images = _decode_many(_handed_once(members), desc, size, len(members), progress=progress)
    train, test, classes, notes = _archive_splits(archives, listing, images)

    def tensors(items):
        return _stack([r[0] for r in items], [r[1] for r in items], [r[2] for r in items])

    return (*tensors(train), *tensors(test), classes, notes)


def _load_imagefolder(root: Path, size: int = 0, flag: str = "--data-dir", progress: bool = True,
                      check_classes: Callable[[list[str]], None] | None = None) -> Arrays:
    """``check_classes``: called with the class folders of train/ and test/ once they are listed, before any image is
    decoded (an archive's once it is read, before its images are decoded and cached)."""
    if not (root.is_dir() or _is_archive(root)):
        what = "is a file, not a folder or an archive" if root.exists() else "does not exist"
        raise DataNotFoundError(f"image folder {root} {what}: pass {flag} pointing at a folder of "
                                "class subfolders (or with train/ and test/ subfolders of class folders), or at an "
                                f"archive ({', '.join(ARCHIVE_SUFFIXES)}) of one")
    # one spelling of the folder, whatever the working directory and however it was given: the cache key holds the
    # images' paths, and two spellings of one folder replaced each other's cache (decoded again at every switch)
    root = Path(os.path.abspath(root))
    archives = [] if root.is_dir() and _has_class_folders(root) else _image_archives(root)
    beside = _image_archives(root) if root.is_dir() and not archives else []
    if beside:
        # an archive per class beside the other classes' folders: its class would be missing without a word
        warnings.warn(f"{len(beside)} archive(s) in {root} ({', '.join(a.name for a in beside[:3])}"
                      f"{', ...' if len(beside) > 3 else ''}) are not read: a folder of class folders is read "
                      "without the archives beside them; unpack them there to train on their images, or move them "
                      "out", FastJEMWarning, stacklevel=3)
    files = ""  # an archive's names are known once it is read
    if archives:
        sources = [(a.resolve(), -1) for a in archives]

        def decode():
            return _decode_archives(archives, size, progress, check_classes)
    else:
        split = _split_folders(root)
        if split is not None:
            _warn_unread(root, [h for h in HELD_OUT if (root / h).is_dir() and root / h != split[1]], split[1].name)
            train_items, classes = _list_images(split[0])
            test_items, test_classes = _list_images(split[1])
            if test_classes != classes:
                raise DataNotFoundError(f"{split[0]} and {split[1]} have different class folders: "
                                        f"{_class_difference(classes, test_classes, split[1].name)}")
            if check_classes is not None:
                check_classes(classes)
            files = _names_digest(((split[0], train_items),), classes)
            trained = {_file_id(p): p for p, _ in train_items}
            both = next(((p, trained[i]) for p, i in ((p, _file_id(p)) for p, _ in test_items) if i in trained), None)
            if both:
                raise DataNotFoundError(f"{both[0]} is the training file {both[1]} ({_link_between(*both)}): an image "
                                        "in both splits would be tested on what the network trained on; remove the "
                                        "link")
        else:
            items, classes = _list_images(root)
            _check_not_a_lone_split(root, classes, flag)
            train_items, test_items = _split_off_test(
                items, [f"{classes[y]}/{p.relative_to(root / classes[y]).as_posix()}" for p, y in items], str(root))
            files = _names_digest(((root, train_items),), classes)
        sources = train_items + test_items

        def decode():
            # (what a folder leaves unread is said as it is listed, at every load)
            return (*_decode_splits(((train_items, "train"), (test_items, "test")), size, progress), classes, [])
    # the format's version: a change in how images are decoded or split must not find the old cache
    key = hashlib.sha1(f"v{IMAGEFOLDER_CACHE_VERSION}|".encode() + (f"size {size}|".encode() if size else b""))
    if not archives:
        key.update(f"classes {classes}|".encode())
    for p, label in sources:
        # inode and ctime too: files unpacked from one archive share an mtime, and swapping two class folders'
        # names keeps every path, label, size and mtime
        st = p.stat()
        # (surrogateescape: a name in another encoding than UTF-8, b"caf\xe9.png", hashed as its bytes)
        key.update(f"{p}|{label}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}|{st.st_ctime_ns}".encode(
            errors="surrogateescape"))
    # one cache file per folder (or archives) and size: a new decode of changed contents replaces the old one
    slot = hashlib.sha1(f"{os.path.abspath(root)}|{size}".encode(errors="surrogateescape")).hexdigest()[:8]
    cache = cache_dir() / f"imagefolder-{slot}-{key.hexdigest()[:16]}.pt"
    blob = None
    if cache.exists():
        from fastjem.checkpoint import damaged_member

        try:
            blob = torch.load(cache, weights_only=True)
            tx, ty, vx, vy, classes = blob["train_x"], blob["train_y"], blob["test_x"], blob["test_y"], blob["classes"]
            notes = list(blob["notes"])
            if damaged_member(cache):  # bytes changed on disk: torch.load reads them without checking
                raise ValueError(f"{cache} fails its checksum")
        except Exception:
            # a truncated or damaged cache is decoded again (and replaced where the folder is writable)
            blob = None
            with contextlib.suppress(OSError):
                cache.unlink(missing_ok=True)
    if blob is None:
        tx, ty, vx, vy, classes, notes = decode()
        if tx.shape[1:] != vx.shape[1:]:
            raise DataNotFoundError(f"{root}: the training images are {tx.shape[-1]}x{tx.shape[-2]} but the test "
                                    f"images {vx.shape[-1]}x{vx.shape[-2]}: pass --image-size N to resize both on "
                                    "load (shorter side to N, centre crop)")
        from fastjem.checkpoint import atomic_save

        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            # temporary files of cache writes killed mid-way (an hour old: not a write under way elsewhere)
            for stale in cache.parent.glob(".imagefolder-*.tmp"):
                with contextlib.suppress(OSError):
                    if time.time() - stale.stat().st_mtime > 3600:
                        stale.unlink()
            atomic_save({"train_x": tx, "train_y": ty, "test_x": vx, "test_y": vy, "classes": list(classes),
                         "notes": list(notes)}, cache)
            for old in cache.parent.glob(f"imagefolder-{slot}-*.pt"):
                if old != cache:
                    old.unlink(missing_ok=True)
        except OSError as err:
            # the images are decoded: a cache that cannot be written costs the next run the decoding, nothing more
            warnings.warn(f"the decoded images were not cached in {cache.parent} ({type(err).__name__}: {err}); "
                          "set FASTJEM_CACHE to a writable folder to decode them once only", FastJEMWarning,
                          stacklevel=2)
    for note in notes:
        # (an archive's: read once, then cached; said at every load, as a folder's are)
        warnings.warn(note, FastJEMWarning, stacklevel=3)
    if len(classes) == 1:
        # p(y|x) of one class is 1 for every image: its loss and gradient are 0 and accuracy is 1, whatever the
        # network; a folder given one level too deep (one class's folder, or train/ of one class) looks like this, and
        # one given a level too high (the folder an archive unpacked to, holding train/ and test/, or the classes)
        inner = root / classes[0]
        subs = sorted(d.name + "/" for d in inner.iterdir() if d.is_dir() and not _hidden(d.name)) if (
            inner.is_dir()) else []
        above = (f"; {inner} holds {', '.join(subs[:3])}{', ...' if len(subs) > 3 else ''}: if those are the "
                 f"classes (or train/ and test/), give {flag} {inner}") if subs else ""
        warnings.warn(f"image folder {root} has one class ({classes[0]!r}): classification is trivial (accuracy 1 "
                      "whatever the network; training gets no classifier gradient, only the generative term learns); "
                      f"for a classifier, give a folder with a subfolder per class{above}", FastJEMWarning,
                      stacklevel=2)
    size = tx.shape[-1]
    # an eighth of the side, at least 1, less than the side (reflect padding of a 1-pixel image failed mid-run)
    info = DatasetInfo("imagefolder", len(classes), tx.shape[1], size, min(size - 1, max(1, size // 8)), True,
                       min(5000, len(ty) // 10), tuple(classes))
    return Arrays(tx, ty, vx, vy, info, files)


def augment(x: torch.Tensor, pad: int, flip: bool, noise: float,
            generator: torch.Generator | None = None) -> torch.Tensor:
    """Batched augmentation on the device. x [B, C, H, W] float in [-1, 1].

    Reflect-pad by ``pad`` and take a random crop of the original size per image, flip each image
    horizontally with probability 1/2, then add N(0, noise^2). No host sync, no Python branch on data.
    """
    b, c, h, w = x.shape
    if pad > 0:
        xp = F.pad(x, (pad, pad, pad, pad), mode="reflect")  # [B, C, H+2p, W+2p]
        oy = torch.randint(0, 2 * pad + 1, (b, 1), device=x.device, generator=generator)
        ox = torch.randint(0, 2 * pad + 1, (b, 1), device=x.device, generator=generator)
        rows = oy + torch.arange(h, device=x.device)  # [B, H]
        cols = ox + torch.arange(w, device=x.device)  # [B, W]
        xp = xp.gather(2, rows[:, None, :, None].expand(b, c, h, w + 2 * pad))
        x = xp.gather(3, cols[:, None, None, :].expand(b, c, h, w))
    if flip:
        m = torch.rand(b, 1, 1, 1, device=x.device, generator=generator) < 0.5
        x = torch.where(m, x.flip(3), x)
    if noise > 0:
        x = x + noise * torch.randn(x.shape, device=x.device, dtype=x.dtype, generator=generator)
    return x


def to_float(x_u8: torch.Tensor) -> torch.Tensor:
    """uint8 [0, 255] -> fp32 [-1, 1]."""
    return x_u8.float().mul_(2.0 / 255.0).sub_(1.0)


def to_uint8(x: torch.Tensor) -> torch.Tensor:
    """[-1, 1] -> uint8 [0, 255], the inverse of ``to_float`` (values outside [-1, 1] are clipped first)."""
    return ((x.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)


class DeviceData:
    """A dataset split into train / validation / test, as uint8 tensors on ``device``.

    ``draw`` samples an iid batch on the device (with replacement): x_p from the whole training
    split and (x_lab, y_lab) from the labelled subset (all of it unless ``labels_per_class`` > 0).
    """

    def __init__(self, arrays: Arrays, device: torch.device, val_size: int = -1, labels_per_class: int = -1,
                 augment: bool = True, data_noise: float = 0.03):
        info = arrays.info
        self.info = info
        self.device = device
        self.augment_enabled = augment
        self.data_noise = data_noise
        n = len(arrays.train_y)
        val_size = validation_size(info, n, val_size)
        val_idx, train_idx, g = validation_split(n, val_size)
        # the images are held on the device, both splits copied there (on the CPU too: the test split was the
        # caller's own tensor, which an edit in a later notebook cell changed under the run): refused before the copy
        # where they cannot fit
        device = torch.device(device)
        needed = arrays.train_x.nbytes + arrays.test_x.nbytes
        c, h, w = arrays.train_x.shape[1:]
        check_fits(needed, device, f"the dataset ({len(arrays.train_x)} training and {len(arrays.test_x)} test images "
                                   f"of {c}x{h}x{w}, uint8, held on the training device)",
                   "give a smaller --image-size, a smaller dataset" + (", or train on --device cpu"
                                                                      if device.type != "cpu" else ""))
        self.train_x = arrays.train_x[train_idx].to(device)
        self.train_y = arrays.train_y[train_idx].to(device)
        self.val_x = arrays.train_x[val_idx].to(device)
        self.val_y = arrays.train_y[val_idx].to(device)
        self.test_x = arrays.test_x.to(device, copy=True)
        self.test_y = arrays.test_y.to(device, copy=True)
        self.labelled = self._labelled_subset(arrays.train_y[train_idx], labels_per_class, g)
        missing = untrained_classes(info, arrays.train_y[train_idx])
        if missing:
            # a rare class whose few images the random validation split took: trained on as no class at all
            warnings.warn(untrained_message(missing, val_size), FastJEMWarning, stacklevel=2)

    def __repr__(self) -> str:
        shape = "x".join(map(str, self.train_x.shape[1:]))
        return (f"DeviceData({self.info.name}: {len(self.train_y)} train / {len(self.val_y)} val / {len(self.test_y)} "
                f"test images of {shape}, {len(self.labelled)} labelled, device {self.device})")

    def _labelled_subset(self, y: torch.Tensor, per_class: int, g: torch.Generator) -> torch.Tensor:
        if per_class < 0:
            return torch.arange(len(y), device=self.device)
        counts = torch.bincount(y, minlength=self.info.num_classes).tolist()
        if min(counts) < per_class:
            names = self.info.classes if len(self.info.classes) == len(counts) else range(len(counts))
            short = [f"{name} ({n})" for name, n in zip(names, counts) if n < per_class]
            raise DataNotFoundError(f"--labels-per-class {per_class}: {len(short)} class(es) have fewer training "
                                    f"images (after the validation split): {', '.join(short[:10])}"
                                    f"{' ...' if len(short) > 10 else ''}; give at most {min(counts)}, or -1 for "
                                    "every label")
        chosen = []
        for k in range(self.info.num_classes):
            members = (y == k).nonzero().squeeze(1)
            chosen.append(members[torch.randperm(len(members), generator=g)[:per_class]])
        return torch.cat(chosen).to(self.device)

    @property
    def n_train(self) -> int:
        return len(self.train_y)

    @property
    def sample_shape(self) -> tuple[int, int, int]:
        return tuple(self.train_x.shape[1:])

    def prepare(self, x_u8: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        x = to_float(x_u8)
        if self.augment_enabled:
            return augment(x, self.info.pad, self.info.flip, self.data_noise, generator)
        if self.data_noise > 0:
            x = x + self.data_noise * torch.randn(x.shape, device=x.device, generator=generator)
        return x

    def draw_indices(self, batch_size: int, generator: torch.Generator | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor]:
        """Indices into the training split: (for x_p: any image, for x_lab: a labelled image), on the device."""
        ip = torch.randint(0, self.n_train, (batch_size,), device=self.device, generator=generator)
        il = self.labelled[torch.randint(0, len(self.labelled), (batch_size,), device=self.device,
                                         generator=generator)]
        return ip, il

    def draw(self, batch_size: int, generator: torch.Generator | None = None, shard: slice | None = None
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(x_p, x_lab, y_lab): two independent augmented batches in [-1, 1], fp32, on the device.

        Data-parallel ranks draw the same global batch (same ``generator`` state everywhere) and keep
        their ``shard`` of it, so N ranks see exactly what one process with the global batch sees.
        """
        ip, il = self.draw_indices(batch_size, generator)
        x_p, x_lab = self.prepare(self.train_x[ip], generator), self.prepare(self.train_x[il], generator)
        y_lab = self.train_y[il]
        if shard is not None:
            return x_p[shard], x_lab[shard], y_lab[shard]
        return x_p, x_lab, y_lab

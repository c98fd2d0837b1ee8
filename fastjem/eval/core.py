"""Loading a checkpoint for evaluation, batched prediction and differentiable SGLD refinement."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from fastjem.checkpoint import load_checkpoint
from fastjem.config import TrainConfig
from fastjem.data import (
    Arrays,
    DatasetInfo,
    check_arrays,
    class_names_differ,
    dataset_mismatch,
    load_arrays,
    shown_classes,
    to_float,
)
from fastjem.errors import CheckpointError, ConfigError, DataNotFoundError


@dataclass
class EvalModel:
    """A trained network ready for evaluation: eval mode, parameters frozen, on ``device``."""

    model: nn.Module
    config: TrainConfig
    info: DatasetInfo
    buffer: torch.Tensor | None  # the replay buffer [N, C, H, W] in [-1, 1], or None
    iteration: int
    path: Path
    device: torch.device
    custom_data: bool = False  # trained on data given in Python (Trainer(data=...)): only ``data`` holds it
    custom_model: str = ""  # the class path of a network given in Python (Trainer(model=...)), else ""
    data: Arrays | None = None  # the dataset given to load_model(data=...)
    _arrays: dict = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        # what was loaded, in one line: the dataclass's own repr printed the whole network and the replay buffer's
        # tensor (10000 images for CIFAR-10) into a notebook
        info = self.info
        buffer = "no buffer" if self.buffer is None else f"buffer [{', '.join(map(str, self.buffer.shape))}]"
        data = ", data given" if self.data is not None else ""
        return (f"EvalModel({self.label} {self.model_name}, iteration {self.iteration}, {info.name}: "
                f"{info.num_classes} classes of {info.channels}x{info.image_size}x{info.image_size}, {buffer}, "
                f"device {self.device}{data}, path='{self.path}')")

    @property
    def label(self) -> str:
        """'JEM' for a generative run, 'classifier-only' for the baseline."""
        return "JEM" if self.config.generative else "classifier-only"

    @property
    def model_name(self) -> str:
        """The network's name: its class for one given in Python, else the config's (e.g. WRN-28-10)."""
        return self.custom_model.rsplit(".", 1)[-1] if self.custom_model else self.config.model_name

    @property
    def num_classes(self) -> int:
        return self.info.num_classes

    def output_dir(self, kind: str) -> Path:
        """Where outputs of ``kind`` (eval, sampled) go by default: beside the checkpoint, in ``kind/`` for a run's
        checkpoint.pt and ``kind-<name>/`` for another file (best.pt -> eval-best/), so they never mix."""
        return self.path.parent / (kind if self.path.name == "checkpoint.pt" else f"{kind}-{self.path.stem}")

    @property
    def sample_shape(self) -> tuple[int, int, int]:
        return (self.info.channels, self.info.image_size, self.info.image_size)

    def arrays(self, data_dir: str | os.PathLike = "", download: bool = False, progress: bool = True) -> Arrays:
        """The checkpoint's dataset (uint8, CPU), loaded once; ``data_dir`` defaults to the training one."""
        if self.data is not None:
            return self.data
        if self.custom_data:
            raise ConfigError(f"{self.path} was trained on data given in Python (\"{self.info.name}\"): pass it again "
                              "with fastjem.eval.load_model(path, data=...) to evaluate on it")
        key = (str(data_dir or self.config.data_dir), download)
        if key not in self._arrays:
            arrays = load_arrays(self.config.dataset, key[0], download, self.config.image_size, choose_dataset=False,
                                 progress=progress)
            if class_names_differ(self.info.classes, arrays.info.classes):
                raise DataNotFoundError(
                    f"{key[0]} holds the classes {shown_classes(arrays.info.classes)}, but {self.path} was trained "
                    f"on {shown_classes(self.info.classes)}: point --data-dir at the data it was trained on")
            got, want = (arrays.info.channels, arrays.info.image_size), (self.info.channels, self.info.image_size)
            if got != want:
                # a network that pools globally takes any size: it was tested on, and sampled at, the folder's size
                raise DataNotFoundError(
                    f"{key[0]} holds {got[0]} x {got[1]} x {got[1]} images, but {self.path} was trained on "
                    f"{want[0]} x {want[1]} x {want[1]}: point --data-dir at the data it was trained on (or a copy "
                    f"resized to {want[1]} x {want[1]})")
            self._arrays[key] = arrays
        return self._arrays[key]

    def loaded_arrays(self) -> list[Arrays]:
        """The checkpoint's dataset as loaded so far (from each data folder asked for)."""
        return [self.data] if self.data is not None else list(self._arrays.values())

    def test_set(self, data_dir: str | os.PathLike = "", download: bool = False, limit: int = 0,
                 noise: float = 0.0, seed: int = 0, progress: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """Test images in [-1, 1] (fp32, on the device) and labels; ``limit`` > 0 of them, a fixed random subset."""
        a = self.arrays(data_dir, download, progress)
        x, y = a.test_x, a.test_y
        if 0 < limit < len(y):
            keep = fixed_subset(len(y), limit)
            x, y = x[keep], y[keep]
        x = to_float(x).to(self.device)
        if noise > 0:
            gen = torch.Generator().manual_seed(seed)
            x = x + noise * torch.randn(x.shape, generator=gen).to(self.device)
        return x, y.to(self.device)

    def buffer_rows(self, n: int) -> torch.Tensor:
        """``n`` chains of the replay buffer spread over all of it (a fixed random subset): a class-conditional
        buffer is K blocks, one per class, so its first n chains would be the first classes only."""
        if self.buffer is None:
            raise ConfigError(f"{self.path} has no replay buffer ({self.label})")
        return self.buffer[fixed_subset(len(self.buffer), n).to(self.buffer.device)]

    def energy_params(self) -> tuple[float, float]:
        """(step size, noise) of the checkpoint's SGLD, the defaults for refinement and sampling."""
        return self.config.sgld_step_size, self.config.sgld_noise


def fixed_subset(n_total: int, n: int) -> torch.Tensor:
    """Indices of ``n`` of ``n_total`` items, drawn at random but the same for every call (every task, checkpoint
    and seed compares the same images), in increasing order. Not the first n: image folders (and the CIFAR-10
    JPEG copy) store their images class by class, so the first n are often one class."""
    if n >= n_total:
        return torch.arange(n_total)
    return torch.randperm(n_total, generator=torch.Generator().manual_seed(0))[:n].sort().values


def load_model(checkpoint: str | os.PathLike | EvalModel, device: str | torch.device = "auto", *,
               model: nn.Module | None = None, data: Arrays | None = None) -> EvalModel:
    """Load a fastjem checkpoint (a file, or a run folder holding checkpoint.pt) for evaluation.

    A run trained with ``Trainer(..., model=net)`` or ``data=arrays`` is loaded by passing a network of the same
    kind and the same data. That network becomes the evaluated one: its weights are overwritten, it is put in eval
    mode and its parameters are frozen (``requires_grad`` False); pass a copy (``copy.deepcopy(net)``) to go on
    training the original.
    """
    if isinstance(checkpoint, EvalModel):
        return checkpoint
    from fastjem.models import build_model, plain_module, plain_state_dict
    from fastjem.train import resolve_device

    dev = device if isinstance(device, torch.device) else resolve_device(device)
    ckpt = load_checkpoint(checkpoint)
    cfg = TrainConfig.from_dict(ckpt["config"])
    if "dataset" not in ckpt:
        raise CheckpointError(f"checkpoint {ckpt['path']} lacks the dataset description: it is incomplete")
    d = dict(ckpt["dataset"])
    d["classes"] = tuple(d.get("classes", ()))
    info = DatasetInfo(**d)
    custom = ckpt.get("custom") or {}
    if custom.get("model") and model is None:
        raise CheckpointError(f"checkpoint {ckpt['path']} holds a network given in Python ({custom['model']}), which "
                              "only Python can build again: give a network of that kind as model= (to "
                              "fastjem.eval.load_model, fastjem.export.export_classifier, ...)")
    given = model is not None
    if given:
        model = plain_module(model)  # a torch.compile wrapper's names carry a prefix the checkpoint's lack
    else:
        model = build_model(cfg.arch, info.num_classes, info.channels, cfg.depth, cfg.width, cfg.norm, cfg.dropout)
    try:
        model.load_state_dict(plain_state_dict(ckpt["model"]))
    except RuntimeError as err:
        why = str(err).splitlines()[0]
        if given:
            trained = custom.get("model") or "the network its config describes"
            raise CheckpointError(f"the network given as model= does not fit the weights of checkpoint "
                                  f"{ckpt['path']} ({why}): pass a network of the kind and size it trained, "
                                  f"{trained}") from err
        raise CheckpointError(f"checkpoint {ckpt['path']} does not fit its own network description: {why}") from err
    model.to(dev).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    buffer = None
    if ckpt.get("buffer") is not None and cfg.generative:
        buffer = ckpt["buffer"]["data"].to(dev, torch.float32)
    em = EvalModel(model, cfg, info, buffer, int(ckpt["iteration"]), Path(ckpt["path"]), dev,
                   custom_data=bool(custom.get("data")), custom_model=custom.get("model") or "")
    if data is not None:
        why = dataset_mismatch(info, check_arrays(data).info)
        if why:
            raise CheckpointError(f"checkpoint {ckpt['path']}: {why}")
        em.data = data
    return em


def batches(n: int, batch_size: int, desc: str = "", progress: bool = False):
    """Slices covering range(n) in chunks of ``batch_size``, with an optional tqdm bar."""
    from fastjem.console import progress_bar

    starts = range(0, n, batch_size)
    if progress:
        starts = progress_bar(iterable=starts, desc=desc, unit="batch", leave=False, dynamic_ncols=True)
    for i in starts:
        yield slice(i, min(n, i + batch_size))


@torch.no_grad()
def predict_logits(model: nn.Module, x: torch.Tensor, batch_size: int = 500, progress: bool = False,
                   desc: str = "predict") -> torch.Tensor:
    """Logits [N, K] (fp32) of images x [N, C, H, W] in [-1, 1], in batches."""
    return torch.cat([model(x[s]).float() for s in batches(len(x), batch_size, desc, progress)])


def _at_least_fp32(logits: torch.Tensor) -> torch.Tensor:
    """Low-precision (bf16) logits are reduced in fp32, like fastjem.energy; fp64 ones stay fp64."""
    return logits if logits.dtype == torch.float64 else logits.float()


def sgld_refine(model: nn.Module, x: torch.Tensor, n_steps: int, step_size: float = 1.0, noise: float = 0.01,
                y: torch.Tensor | None = None, create_graph: bool = False) -> torch.Tensor:
    """n SGLD steps on E(x) = -LSE f(x) (or E(x, y) = -f(x)[y] with y) seeded at x.

    x <- x + step_size * d(-E)/dx + noise * N(0, I). With ``create_graph=True`` the result stays a
    differentiable function of the input x (each step's input gradient is itself part of the graph),
    which is what an attack on the whole refine-then-classify pipeline needs. Otherwise the chain is
    detached between steps, like ``fastjem.sampler.SGLD``.
    """
    for _ in range(n_steps):
        if not create_graph:
            x = x.detach()
        if not x.requires_grad:
            # A fresh leaf: nothing upstream wants gradients, and the caller's tensor is left untouched.
            x = x.detach().requires_grad_(True)
        with torch.enable_grad():
            logits = _at_least_fp32(model(x))
            energy = -torch.logsumexp(logits, 1) if y is None else -logits.gather(1, y.view(-1, 1)).squeeze(1)
            (grad,) = torch.autograd.grad(energy.sum(), x, create_graph=create_graph)
        x = x - step_size * grad + noise * torch.randn_like(x)
    return x if create_graph else x.detach()


def run_chains(model: nn.Module, x0: torch.Tensor, n_steps: int, step_size: float, noise: float,
               y: torch.Tensor | None = None, batch_size: int = 500, progress: bool = False,
               desc: str = "SGLD") -> torch.Tensor:
    """``sgld_refine`` over x0 in batches of ``batch_size`` (detached chains), the progress bar counting steps."""
    from fastjem.console import progress_bar

    out = []
    starts = range(0, len(x0), batch_size)
    with progress_bar(total=len(starts) * n_steps, desc=desc, unit="step", disable=not progress, leave=False,
                      dynamic_ncols=True) as bar:
        for i in starts:
            sl = slice(i, min(len(x0), i + batch_size))
            x, y_b = x0[sl], None if y is None else y[sl]
            for _ in range(n_steps):  # one step a call, for the bar: the same chain as n_steps in one call
                x = sgld_refine(model, x, 1, step_size, noise, y=y_b)
                bar.update(1)
            out.append(x.detach())
    return torch.cat(out) if out else x0[:0].detach()


class RefineThenClassify(nn.Module):
    """The pipeline x -> f(SGLD_n(x)): ``n_steps`` of refinement on E(x), then the classifier's logits.

    Differentiable end to end (the refinement keeps its graph), so it can be attacked as one model.
    """

    def __init__(self, model: nn.Module, n_steps: int, step_size: float = 1.0, noise: float = 0.01):
        super().__init__()
        self.model = model
        self.n_steps = n_steps
        self.step_size = step_size
        self.noise = noise

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.n_steps > 0:
            keep_graph = torch.is_grad_enabled()
            x = sgld_refine(self.model, x, self.n_steps, self.step_size, self.noise, create_graph=keep_graph)
        return _at_least_fp32(self.model(x))


def refined_logits(model: nn.Module, x: torch.Tensor, n_steps: int, step_size: float, noise: float,
                   batch_size: int = 500, progress: bool = False, desc: str = "refine") -> torch.Tensor:
    """Logits after ``n_steps`` of SGLD refinement seeded at each input (no graph kept)."""
    if n_steps == 0:
        return predict_logits(model, x, batch_size, progress, desc)
    out = []
    for s in batches(len(x), batch_size, desc, progress):
        xr = sgld_refine(model, x[s], n_steps, step_size, noise)
        with torch.no_grad():
            out.append(model(xr).float())
    return torch.cat(out)

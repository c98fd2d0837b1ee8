"""The JEM training loop (Grathwohl et al. 2020, Algorithm 1; DESIGN.md section 2).

One iteration: draw x_p and (x_lab, y_lab); draw B chains from the replay buffer (each restarted
from U(-1, 1) with probability rho); run SGLD on E(x) with the network in eval mode and frozen;
write the chains back; then

    L = pyx_weight * CE(f(x_lab), y_lab)
      + px_weight  * [mean LSE f(x_q) - mean LSE f(x_p)]
      + pxy_weight * [mean f(x_q|y)[y] - mean f(x_lab)[y]]     (optional; class-conditional chains)

and one optimiser step. Metrics accumulate in device tensors and are read every ``log_every``
iterations, the only host syncs in the loop.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import itertools
import json
import math
import os
import shlex
import signal
import sys
import time
import weakref
from dataclasses import asdict
from pathlib import Path

import torch
import torch.nn.functional as F

from fastjem import kernels
from fastjem.board import TensorBoardLog, check_available
from fastjem.buffer import ClassGaussians, ReplayBuffer
from fastjem.checkpoint import (
    FORMAT,
    RUN_LOCK,
    VERSION,
    atomic_copy,
    atomic_save,
    atomic_write_text,
    folder_lock,
    load_checkpoint,
    lock_holder,
    make_folder,
    naming,
    strict_json,
)
from fastjem.config import ARCH_FIELDS, TENSORS, TrainConfig, unread_options
from fastjem.console import console, progress_bar
from fastjem.data import (
    Arrays,
    DatasetInfo,
    DeviceData,
    check_arrays,
    class_names_differ,
    data_fingerprint,
    dataset_mismatch,
    load_arrays,
    shown_classes,
)
from fastjem.distributed import (
    DistInfo,
    all_reduce_grads_,
    all_reduce_mean_,
    any_rank,
    broadcast_parameters_,
    gather_to_main,
    init_from_env,
    max_over_ranks,
)
from fastjem.engine import Engine, backend_flags, engine_networks, resolve_engine, set_backend_flags
from fastjem.errors import CheckpointError, ConfigError, FastJEMError, error_line
from fastjem.guard import DivergenceGuard, RecoveryState
from fastjem.memory import check_fits
from fastjem.models import (
    build_model,
    check_batch_norm_batch,
    check_image_size,
    has_batch_norm,
    has_dropout,
    plain_module,
    plain_state_dict,
)
from fastjem.optim import DeviceSGD
from fastjem.runs import counted
from fastjem.sampler import SGLD, eval_mode, model_energy

METRIC_NAMES = ("loss", "ce", "acc", "e_data", "e_sample")
# what differs between data-parallel ranks (Trainer.local_state): a checkpoint or rollback file holds it per rank
LOCAL_STATE = ("buffer", "sampler", "rng", "metric_sums", "metric_count", "last_samples")


# what a finished run writes after its final checkpoint, as a stop there names those it did not write
END_SAMPLES, END_CURVES, END_SUMMARY = "samples.png (the sample grid)", "curves.png", "summary.json"
END_TEST = "the test-set evaluation (the last record of metrics.jsonl)"


class _StoppedAtTheEnd(BaseException):
    """A stop signal during what a run writes after its final checkpoint (test evaluation, sample grid, curves,
    summary.json): raised by the signal handler, caught by fit. A BaseException, so that no ``except Exception``
    on the way (the curves' drawing) takes it for a failure."""


class DivergedError(FastJEMError):
    """The loss became non-finite."""


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda was asked for but CUDA is not available; use --device cpu or auto")
    return torch.device(name)


def _class_path(obj) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _check_logits(model: torch.nn.Module, info) -> None:
    """A network given as model= must map this data's images to logits [B, K]; say so before any training. Its
    floating-point weights must be fp32, as the samples are (bf16 comes from autocast, by the precision option)."""
    other = {str(t.dtype).removeprefix("torch.") for t in itertools.chain(model.parameters(), model.buffers())
             if t.is_floating_point() and t.dtype != torch.float32}
    if other:
        raise ConfigError(f"model= holds {' and '.join(sorted(other))} weights: fastjem trains fp32 weights on fp32 "
                          "samples (bf16 by autocast where --precision says): pass model.float()")
    x = torch.zeros(2, info.channels, info.image_size, info.image_size)
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    try:
        with torch.no_grad(), eval_mode(model):
            out = model(x.to(device))
    except Exception as err:
        raise ConfigError(f"model= failed on a batch of images [2, {info.channels}, {info.image_size}, "
                          f"{info.image_size}]: {type(err).__name__}: {err}") from err
    if not (torch.is_tensor(out) and tuple(out.shape) == (2, info.num_classes)):
        got = tuple(out.shape) if torch.is_tensor(out) else type(out).__name__
        raise ConfigError(f"model= must return logits [B, {info.num_classes}] (one per class of the data); for a "
                          f"batch of 2 images it returned {got}")


def _check_same_custom_parts(ckpt: dict, model, data) -> None:
    """Resuming a run that trained a network given as model=, or on data given as data=, needs them again."""
    custom = ckpt.get("custom") or {}
    path = ckpt.get("path", "")
    if custom.get("model") and model is None:
        raise CheckpointError(f"{path} trained a network given in Python ({custom['model']}): pass the same kind "
                              "of network as model=")
    if model is not None and not custom.get("model"):
        raise CheckpointError(f"{path} trained the network its config describes; resume it without model=")
    if custom.get("data") and data is None:
        raise CheckpointError(f"{path} trained on data given in Python (\"{ckpt['dataset']['name']}\"): pass the "
                              "same data= to resume it")
    if data is not None:
        saved = DatasetInfo(**{**ckpt["dataset"], "classes": tuple(ckpt["dataset"].get("classes", ()))})
        if not custom.get("data"):
            raise CheckpointError(f"{path} trained on {saved.name}, not on data given in Python: resume it without "
                                  "data=")
        why = dataset_mismatch(saved, data.info)
        if why:
            raise CheckpointError(f"{path}: {why}")


def _flat(tensors: list[torch.Tensor]) -> torch.Tensor:
    """The tensors' values as one fp32 vector (empty for none)."""
    if not tensors:
        return torch.zeros(0)
    return torch.cat([t.detach().float().flatten() for t in tensors])


def _agreement(a: torch.Tensor, b: torch.Tensor) -> tuple[float, float]:
    """(cosine, norm ratio b/a) of two vectors; (nan, nan) when their sizes differ."""
    if a.numel() != b.numel():
        return float("nan"), float("nan")
    na, nb = float(a.norm()), float(b.norm())
    if a.numel() == 0 or na == nb == 0.0:
        return 1.0, 1.0
    return (float(torch.nn.functional.cosine_similarity(a, b, dim=0)),
            nb / na if na > 0 else float("inf"))


def learning_rate(cfg: TrainConfig, iteration: int, iters_per_epoch: int) -> float:
    """Linear warm-up over ``warmup_iters``, then x decay_rate at each of ``decay_epochs``."""
    warm = min(1.0, (iteration + 1) / cfg.warmup_iters) if cfg.warmup_iters > 0 else 1.0
    epoch = iteration / iters_per_epoch
    n_decays = sum(1 for e in cfg.decay_epochs if epoch >= e)
    return cfg.lr * warm * cfg.decay_rate**n_decays


def epoch_iterations(epochs: float, iters_per_epoch: int) -> int:
    """The length of a run of ``epochs``: the first iteration count whose epoch (n / iters_per_epoch, as the schedule
    reckons it) reaches ``epochs``, i.e. ceil(epochs * iters_per_epoch) in exact arithmetic. The float product
    alone overshoots where it is a whole number: 0.7 x 10 is 7.000000000000001, which trained 8 iterations."""
    n = math.ceil(epochs * iters_per_epoch)
    while n > 1 and (n - 1) / iters_per_epoch >= epochs:
        n -= 1
    return n


def decay_iterations(cfg: TrainConfig, iters_per_epoch: int) -> list[tuple[int, float]]:
    """(iteration, epoch) of each of ``decay_epochs``, in order: the first iteration (from 0) whose rate it decays,
    the epoch's last one done (0: from the start)."""
    return [(epoch_iterations(e, iters_per_epoch) if e > 0 else 0, e) for e in sorted(cfg.decay_epochs)]


def check_decay_reached(cfg: TrainConfig, iters_per_epoch: int, total_iters: int, resumed: bool = False) -> None:
    """Refuse --decay-rate 0 where a decay falls inside the run: from there on the learning rate is 0 and training
    changes nothing. A decay past the run's end never applies, so there the rate is taken."""
    reached = [m for m in decay_iterations(cfg, iters_per_epoch) if m[0] < total_iters] if cfg.decay_rate == 0 else []
    if not reached:
        return
    it, epoch = reached[0]
    shorter = f"--iters {it} at most" if it > 0 else ""
    # a resume may change the run's length, never its schedule
    advice = (shorter or "a new run" if resumed else "a rate > 0 (the paper's is 0.3), or, for no decay, "
              "--decay-epochs with no epoch after it" + (f", or {shorter}" if shorter else ""))
    raise ConfigError(f"--decay-rate 0 sets the learning rate to 0 after iteration {it} (epoch {epoch:g} of "
                      f"--decay-epochs), inside this run of {counted(total_iters, 'iteration')}: give {advice}")


def schedule_description(cfg: TrainConfig, iters_per_epoch: int, total_iters: int) -> str:
    """The learning-rate schedule in iterations, as the run's log states it at its start: the warm-up's end, and the
    iteration after which each decay of ``decay_epochs`` applies (the epoch's last, as ``learning_rate`` reckons
    epochs), those past the run's end named as never reached. The decays are given in epochs, whose length in
    iterations follows the batch size and the dataset: the quick preset's epochs 30 and 38 are iterations 570 and 722
    of its 800 at batch 64, but past the run's end at batch 16."""
    text = f"schedule: learning rate {cfg.lr:g}"
    if cfg.warmup_iters > 0:
        text += f", reached by a linear warm-up at iteration {cfg.warmup_iters}"
        if cfg.warmup_iters > total_iters:
            text += f" (past the run's end, iteration {total_iters})"
    if not cfg.decay_epochs:
        return text + "; no decay"
    milestones = decay_iterations(cfg, iters_per_epoch)

    def listed(ms):
        return " and ".join(f"{it} (epoch {e:g})" for it, e in ms)

    reached = [m for m in milestones if m[0] < total_iters]
    unreached = [m for m in milestones if m[0] >= total_iters]
    rate = f"x{cfg.decay_rate:g}"
    if reached:
        text += f"; {rate} after iteration{'s' * (len(reached) > 1)} {listed(reached)}"
    if unreached:
        epoch = f"{iters_per_epoch} iteration{'s' * (iters_per_epoch != 1)}"
        text += (f"; {rate} after iteration{'s' * (len(unreached) > 1)} {listed(unreached)} never reached: past the "
                 f"run's end (iteration {total_iters}; an epoch is {epoch} at --batch-size {cfg.batch_size})")
    return text


@torch.no_grad()
def evaluate(model: torch.nn.Module, x_u8: torch.Tensor, y: torch.Tensor, batch_size: int = 500,
             noise: float = 0.0, seed: int = 0) -> dict:
    """Accuracy and NLL of p(y|x) on uint8 images; the optional input noise uses its own generator."""
    from fastjem.data import to_float

    gen = torch.Generator(device=x_u8.device).manual_seed(seed)
    correct = torch.zeros((), device=x_u8.device)
    nll = torch.zeros((), device=x_u8.device)
    with eval_mode(model):
        for i in range(0, len(y), batch_size):
            x = to_float(x_u8[i:i + batch_size])
            if noise > 0:
                x = x + noise * torch.randn(x.shape, generator=gen, device=x.device)
            logits = model(x).float()
            correct += (logits.argmax(1) == y[i:i + batch_size]).sum()
            nll += F.cross_entropy(logits, y[i:i + batch_size], reduction="sum")
    n = max(1, len(y))
    return {"acc": correct.item() / n, "nll": nll.item() / n, "n": len(y)}


def _refuse_imported(ckpt: dict) -> None:
    """A checkpoint converted from the authors' code (fastjem convert) starts runs, it does not continue one."""
    if ckpt.get("imported"):
        cfg = ckpt.get("config", {})
        # the options that build its network, which a new run must give beside --init-weights
        names = ("arch", "depth", "width", "norm") if cfg.get("arch") == "wrn" else ("arch", "width", "norm")
        net = "".join(f" --{k} {cfg[k]}" for k in names if k in cfg)
        raise CheckpointError(f"{ckpt['path']} was converted from {ckpt['imported']['code']}: it holds the network "
                              "and replay buffer but no optimiser, RNG or schedule state, so it cannot be resumed; "
                              f"start a run from its network with --init-weights {ckpt['path']}{net}")


def resume_config(path: str | Path, overrides: dict | None = None) -> TrainConfig:
    """The config saved in a checkpoint, with ``overrides`` (options given on the command line) applied.

    Only options that do not change what is computed so far may differ (run length, logging, device,
    data location, CUDA graphs and the CPU allocator, which change how but not what); anything else raises
    CheckpointError.
    """
    ckpt = load_checkpoint(path)
    _refuse_imported(ckpt)
    saved = TrainConfig.from_dict(ckpt["config"])
    overrides = dict(overrides or {})
    if "epochs" in overrides and overrides["epochs"] != saved.epochs and saved.iters > 0 and "iters" not in overrides:
        raise CheckpointError(f"this run's length is --iters {saved.iters}, which overrides --epochs: give --iters N "
                              f"(past the checkpoint's iteration {ckpt['iteration']}), or --iters -1 --epochs E")
    changed = {k: v for k, v in overrides.items() if getattr(saved, k) != v}
    _refuse_changes(path, saved, changed)
    return saved.replace(**changed)


# the options a resumed run may change (run length, logging, device, data location, CUDA graphs and the CPU
# allocator: how, not what)
RESUME_CHANGEABLE = frozenset({
    "iters", "epochs", "max_minutes", "log_every", "eval_every", "ckpt_every", "ckpt_keep_every", "sample_every",
    "keep_best", "tensorboard", "device", "data_dir", "out_dir", "download", "cuda_graph", "iteration_graph",
    "cpu_malloc"})


def _refuse_changes(path, saved: TrainConfig, changed: dict, hint: str = "") -> None:
    """CheckpointError naming the options of ``changed`` (name -> asked value) that a resume may not change."""
    refused = sorted(set(changed) - RESUME_CHANGEABLE)
    if refused:
        desc = ", ".join(f"--{k.replace('_', '-')} (saved {getattr(saved, k)!r}, asked {changed[k]!r})"
                         for k in refused)
        raise CheckpointError(f"cannot change {desc} when resuming {path}: resume continues the same run; "
                              f"start a new run for a different setting{hint}")
    # the options a resume may change that this run would not read (--eval-every beside its --val-size 0): refused
    # as a new run's are, not ignored
    unread, _ = unread_options(saved.replace(**changed), set(changed), resumed=True)
    if unread:
        raise CheckpointError(f"when resuming {path}: {'; '.join(unread)}; nothing was changed")


def _run_folder(checkpoint: Path) -> Path:
    """The folder of the run a checkpoint file belongs to (resolved): its own, or for a kept checkpoint
    (checkpoints/iter_N.pt) the run folder above it."""
    folder = Path(checkpoint).resolve().parent
    if folder.name == "checkpoints" and not (folder / "metrics.jsonl").exists():
        folder = folder.parent  # a kept checkpoint: checkpoints/iter_N.pt of its run
    return folder


def resume_folder(path: str | Path) -> Path:
    """Where a run resumed from ``path`` continues when no --out-dir is given: the run folder (``path`` itself, or
    the folder of its checkpoint.pt). A kept checkpoint (checkpoints/iter_N.pt) is refused: continuing beside it
    would start a second run inside the first one's checkpoint history."""
    path = Path(path)
    if path.is_dir():
        return path
    folder = path.resolve().parent
    # the run's records tell its folder too: its checkpoint.pt may be gone (damaged, removed to go back to this one)
    if folder.name == "checkpoints" and any((folder.parent / n).exists() for n in ("checkpoint.pt", "metrics.jsonl")):
        raise ConfigError(f"{path} is a kept checkpoint of the run in {folder.parent}: give --out-dir for the run "
                          "that continues from it (continuing in checkpoints/ would mix a new run into the history)")
    return folder


def _rewind(bar, iteration: int) -> None:
    """The progress bar back at a rolled-back ``iteration``, its redraw bookkeeping with it: tqdm redraws only once
    the count passes the last one drawn, so the bar froze until the run got back to where it had diverged, and
    then showed a rate of those iterations over the whole time since."""
    bar.n = bar.last_print_n = iteration
    if not bar.disable:  # (a disabled bar has no clock)
        bar.last_print_t = bar._time()
    bar.refresh()


def _rng_states(device: torch.device) -> tuple[torch.Tensor, torch.Tensor | None]:
    """torch's global RNG states a run on ``device`` draws from: the CPU generator's, and the CUDA device's."""
    return torch.get_rng_state(), torch.cuda.get_rng_state(device) if device.type == "cuda" else None


def _set_rng_states(device: torch.device, states: tuple[torch.Tensor, torch.Tensor | None]) -> None:
    torch.set_rng_state(states[0])
    if states[1] is not None:
        torch.cuda.set_rng_state(states[1], device)


def _seeded_rng_states(seed: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The states ``torch.manual_seed(seed)`` gives the generators a run on ``device`` draws from (none touched)."""
    cuda = torch.Generator(device).manual_seed(seed).get_state() if device.type == "cuda" else None
    return torch.Generator().manual_seed(seed).get_state(), cuda


def _seed_rng(seed: int, device: torch.device) -> None:
    """``torch.manual_seed`` for the generators a run on ``device`` draws from only (not the other GPUs')."""
    _set_rng_states(device, _seeded_rng_states(seed, device))


def _file_stamp(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, modification time) of ``path``, None when it does not exist: whether it was written since."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


# the networks given as model= to a Trainer of this process (a notebook that runs its Trainer cell again with the same
# network starts from the weights the last run left)
_GIVEN_MODELS: weakref.WeakSet = weakref.WeakSet()


def _drawing(method):
    """A Trainer method run with the run's own torch RNG states swapped in (``Trainer._own_rng``)."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self._own_rng():
            return method(self, *args, **kwargs)

    return run


class Trainer:
    """Builds data, model, optimiser, buffer and sampler from a TrainConfig and runs the loop."""

    # the command a stopped run names to continue it; None where the caller says its own (a sweep)
    resume_hint: str | None = "fastjem train --resume {checkpoint}"
    # False where the caller removes the run folder as fit returns (a benchmark's temporary run): a stop then names no
    # checkpoint (it named one gone by the time it was read)
    checkpoint_kept: bool = True

    def __init__(self, cfg: TrainConfig, out_dir: str | Path | None = None, resume: str | Path | None = None,
                 progress: bool = True, log=console, *, model: torch.nn.Module | None = None,
                 data: Arrays | None = None, loaded: Arrays | None = None):
        """``model``: your own network (images [B, C, H, W] in [-1, 1] -> logits [B, K]) in place of the one the
        config describes; ``data``: your own dataset (``fastjem.data.arrays_from_tensors``) in place of
        ``cfg.dataset``. A run started with either is resumed by passing the same again. ``loaded``: the data ``cfg``
        names as ``load_arrays`` gave it (its dataset, data_dir, download and image_size), which the caller loaded
        already (a sweep's check did): trained on as if loaded here, not loaded again."""
        if not isinstance(cfg, TrainConfig):
            raise ConfigError(f"Trainer takes a TrainConfig, got a {type(cfg).__name__}: TrainConfig(**options), "
                              "TrainConfig.from_dict(a run's config.json) or fastjem.config.get_preset(name)")
        cfg.validate(new_run=resume is None)  # before any work: a wrong type failed deep inside the setup
        if data is not None:
            check_arrays(data)
            cfg = cfg.replace(dataset=TENSORS)  # what config.json and the checkpoint record
        if model is not None and not isinstance(model, torch.nn.Module):
            # a function failed with "'function' object has no attribute 'parameters'"
            raise ConfigError(f"model= must be your network, a torch.nn.Module (images [B, C, H, W] -> logits [B, K]), "
                              f"got a {type(model).__name__}")
        if model is not None and not any(p.requires_grad for p in model.parameters()):
            # load_model(..., model=net) freezes the network it evaluates: the README's example run again in a
            # notebook failed at the first backward ("element 0 of tensors does not require grad")
            raise ConfigError("model= has no parameter to train (all have requires_grad False; "
                              "fastjem.eval.load_model(..., model=net) freezes the network it evaluates): give a new "
                              "network, or load_model a copy (copy.deepcopy(net)) to keep this one trainable")
        self.dist: DistInfo = init_from_env(cfg.device)
        self.log = log if self.dist.is_main else (lambda *a, **k: None)
        self.progress = progress and self.dist.is_main
        ckpt = None
        if resume is not None:
            ckpt = load_checkpoint(resume)
            _refuse_imported(ckpt)
            # first: a run on data or a network given in Python, resumed without them, would otherwise be told of a
            # dataset or architecture it never asked for (the config's defaults)
            _check_same_custom_parts(ckpt, model, data)
            saved = TrainConfig.from_dict(ckpt["config"])
            mismatched = [f for f in ARCH_FIELDS if getattr(cfg, f) != getattr(saved, f)]
            if mismatched:
                desc = ", ".join(f"{f}={getattr(saved, f)!r} (asked {getattr(cfg, f)!r})" for f in mismatched)
                raise CheckpointError(f"checkpoint {ckpt['path']} was trained with {desc}: it cannot continue as "
                                      "another architecture or dataset")
            # the config given in Python is checked as the command line's options are (resume_config): a change of
            # what is computed would be taken silently, and config.json would record settings the run never used
            _refuse_changes(ckpt["path"], saved, {f: v for f, v in cfg.to_dict().items()
                                                  if f not in ARCH_FIELDS and v != getattr(saved, f)},
                            " (resume_config(checkpoint, overrides) gives the saved config with the changes allowed)")
        if cfg.data_dir:
            # recorded as an absolute path: eval or a resume started from another folder reads the same data
            cfg = cfg.replace(data_dir=str(Path(cfg.data_dir).expanduser().absolute()))
        world = self.dist.world
        # (the batch's divisibility by the processes, and batch norm's per-process batch at --image-size)
        self.cfg = cfg.validate(new_run=resume is None, world=world)
        if cfg.tensorboard and self.dist.is_main:
            check_available()  # before any work: say what to install
        self.board: TensorBoardLog | None = None
        self.device = resolve_device(cfg.device)
        if self.device.type == "cuda" and self.dist.enabled:
            self.device = torch.device("cuda", self.dist.local_rank)
        self.out_dir = Path(out_dir) if out_dir else (resume_folder(ckpt["path"]) if ckpt else None)
        self._resumed_from = Path(ckpt["path"]) if ckpt else None
        if self.out_dir is None:
            raise ConfigError("an output folder is needed (--out-dir)")
        self._check_out_dir()
        # checkpoint.pt as this Trainer last saw it (built, or written by it): fit() refuses a folder another run
        # wrote since (_check_unchanged)
        self._latest_seen = _file_stamp(self.out_dir / "checkpoint.pt")
        self._fitted = False
        self._finished = False  # a fit() of this Trainer reached the run's end

        # the run's own torch RNG states (model init, chain indices, dropout), swapped in while it works
        # (_own_rng): what else the process draws, another Trainer built before this one's fit() included, changes
        # nothing of the run, and the caller's global generator is left as it was
        self._rng = _seeded_rng_states(cfg.seed, self.device)
        self._rng_depth = 0
        with self._own_rng():
            self._build(cfg, ckpt, model, data, world, loaded)

    def _build(self, cfg: TrainConfig, ckpt: dict | None, model: torch.nn.Module | None, data: Arrays | None,
               world: int, loaded: Arrays | None = None) -> None:
        """The rest of __init__, drawing from the run's own RNG states."""
        if data is not None:
            if cfg.image_size and cfg.image_size != data.info.image_size:
                raise ConfigError(f"--image-size {cfg.image_size} asked, but data= holds {data.info.image_size}-pixel "
                                  "images: resize them (fastjem.data.fit_size) or leave image_size at 0")
            arrays = data
        elif loaded is not None:
            arrays = check_arrays(loaded, "loaded=")
        else:
            arrays = load_arrays(cfg.dataset, cfg.data_dir, cfg.download, cfg.image_size, progress=self.progress)
        if model is None:
            # images of their own size (no --image-size) too small for the norm: refused before they go to the device
            given = ("--image-size" if cfg.image_size else "the size of data='s images" if data is not None
                     else f"the size of the images in {cfg.data_dir or cfg.dataset}")
            check_image_size(cfg.arch, cfg.norm, arrays.info.image_size, given, width=cfg.width)
            # and with batch norm, a process's share of the batch: one image of 1x1 maps has no batch statistics
            check_batch_norm_batch(cfg.arch, cfg.norm, arrays.info.image_size, cfg.batch_size // world, world, given)
        if ckpt is not None and data is None:
            trained = tuple(ckpt.get("dataset", {}).get("classes", ()))
            if trained and class_names_differ(trained, arrays.info.classes):
                # the same number of classes under other names (a renamed folder): the labels would mean other classes
                raise ConfigError(f"{ckpt['path']} was trained on the classes {shown_classes(trained)}, but "
                                  f"{cfg.data_dir or cfg.dataset} holds {shown_classes(arrays.info.classes)}: resume "
                                  "it on the data it was trained on (--data-dir); nothing was changed")
        self.data_fingerprint = data_fingerprint(arrays)
        saved_data = (ckpt or {}).get("data_fingerprint")
        # the training images alone: the test set may change
        if saved_data and any(saved_data[k] != self.data_fingerprint[k] for k in ("train", "digest")):
            # the validation split and the labelled subset are drawn over the training images: a changed list redraws
            # them, and images the run trained on would be validated on (or unlabelled ones learnt with labels)
            now = self.data_fingerprint
            what = (f"{now['train']} training and {now['test']} test images"
                    if (now["train"], now["test"]) != (saved_data["train"], saved_data["test"])
                    else "as many images, but other files or labels")
            where = "data=" if data is not None else cfg.data_dir or cfg.dataset
            raise ConfigError(f"{ckpt['path']} was trained on {saved_data['train']} training and {saved_data['test']} "
                              f"test images; {where} now holds {what}: images were added, removed or renamed since, "
                              "and resuming would draw the validation split and labelled subset anew, mixing images "
                              "it trained on into them. Resume on the data it was trained on, or start a new run "
                              f"from its weights (--init-weights {ckpt['path']}); nothing was changed")
        self.data = DeviceData(arrays, self.device, cfg.val_size, cfg.labels_per_class, cfg.augment,
                               cfg.data_noise)
        info = self.data.info
        self.num_classes = info.num_classes
        if model is not None:
            if plain_module(model) is not model:
                # the checkpoint names the network's own parameters; the engine compiles it where it pays
                model = plain_module(model)
                self.log(f"model= is a torch.compile wrapper: training the {type(model).__name__} inside it (the "
                         "engine compiles it by --compile; checkpoints hold its own parameter names)")
            _check_logits(model, info)
            if model in _GIVEN_MODELS and ckpt is None and not cfg.init_weights:
                self.log("warning: model= was given to another Trainer in this process: this run starts from the "
                         "weights that one left, not from a fresh initialisation, and training either changes the "
                         "other's network; give each run a network of its own (build it again, or copy.deepcopy it)")
            _GIVEN_MODELS.add(model)
            self.model = model.to(self.device)
        else:
            self.model = build_model(cfg.arch, info.num_classes, info.channels, cfg.depth, cfg.width, cfg.norm,
                                     cfg.dropout).to(self.device)
        # what a checkpoint cannot rebuild from its config: the class of a network given as model=, data= given
        self.custom = {"model": _class_path(model) if model is not None else None, "data": data is not None}
        if cfg.init_weights and ckpt is None:
            self._init_weights(cfg.init_weights)
        # Every rank draws the same global batch from this generator and keeps its shard of it.
        self.data_gen = torch.Generator(device=self.device).manual_seed(cfg.seed)
        rank = self.dist.rank
        self.local_batch = cfg.batch_size // world
        # before a byte of it is allocated: an iteration holds at least three fp32 batches (x_p, x_lab, the SGLD
        # chains); a --batch-size past the machine's memory was drawn all the same (Linux overcommits) and the
        # process swapped or was killed without a word
        row = 3 * math.prod(self.data.sample_shape) * 4
        check_fits(self.local_batch * row, self.device,
                   f"an iteration's batches (3 x {self.local_batch} images of "
                   f"{'x'.join(map(str, self.data.sample_shape))}, fp32, before the network's activations)",
                   lambda free: f"give a smaller --batch-size (at most {free // row} fit, less what the network's "
                                "activations take; the paper's is 64)")
        self.shard = slice(rank * self.local_batch, (rank + 1) * self.local_batch) if self.dist.enabled else None
        if self.dist.enabled:
            broadcast_parameters_(self.model)
            # independent chains, chain indices and dropout masks per rank
            _seed_rng(cfg.seed + 104_729 * rank, self.device)
        # the precision auto gave the run when it started, on the same kind of device (a checkpoint from before
        # fastjem recorded it has none: probed again)
        started = ckpt.get("engine") if ckpt is not None else None
        same_kind = isinstance(started, dict) and started.get("device") == self.device.type
        started_in = started.get("precision") if same_kind else None
        self.nets = nets = engine_networks(
            resolve_engine(cfg, self.device, has_batch_norm(self.model), self.dist.enabled, has_dropout(self.model),
                           started_in=started_in),
            self.model,
            self.data.sample_shape, cfg, rows=self.local_batch)
        self.engine: Engine = nets.engine
        self.model, self.net = nets.model, nets.net
        self.sgld_model, self.sgld_net, self.cast_copy = nets.sgld_model, nets.sgld_net, nets.cast_copy
        self.optimizer = self._build_optimizer()
        conditional = cfg.class_cond_px or cfg.pxy_weight > 0
        backend = self.engine.kernels
        buffer_size = cfg.buffer_size // world
        if conditional and buffer_size % info.num_classes:
            raise ConfigError(f"class-conditional sampling splits each rank's buffer ({buffer_size} chains) into "
                              f"{info.num_classes} equal blocks: --buffer-size {cfg.buffer_size} is not divisible "
                              f"by {world} x {info.num_classes}")
        self.buffer = ReplayBuffer(buffer_size, self.data.sample_shape, cfg.reinit_prob,
                                   info.num_classes if conditional else None, self.device,
                                   seed=cfg.seed * 1_000_003 + 1 + 7 * rank, backend=backend,
                                   init=self._buffer_init() if cfg.generative else None)
        self.sampler = SGLD(cfg.sgld_steps, cfg.sgld_step_size, cfg.sgld_noise,
                            seed=cfg.seed * 1_000_003 + 2 + 7 * rank, backend=backend,
                            compiled_update=self.engine.compile_sgld)
        self.sampler.rng_for(self.device)
        self._graphs: dict = {}
        self._side: torch.cuda.Stream | None = None  # the overlapped backward's second stream
        # the iteration graph's warm-up, capture and check run the SGLD loop inline (no nested capture)
        self._inline_sgld = False
        self._iteration_graph_failed = False
        self.iters_per_epoch = max(1, self.data.n_train // cfg.batch_size)
        self.total_iters = cfg.iters if cfg.iters > 0 else epoch_iterations(cfg.epochs, self.iters_per_epoch)
        # at its end exactly: the run finishes again (test evaluation, summary.json), as after a kill before them
        if ckpt is not None and int(ckpt["iteration"]) > self.total_iters:
            raise ConfigError(f"{ckpt['path']} is at iteration {ckpt['iteration']}, and this run is "
                              f"{counted(self.total_iters, 'iteration')} long: give a larger --iters (or --epochs) to "
                              "train on; nothing was changed")
        check_decay_reached(cfg, self.iters_per_epoch, self.total_iters, resumed=ckpt is not None)
        self.iteration = 0
        self.last_samples: torch.Tensor | None = None
        self._acc = torch.zeros(len(METRIC_NAMES), device=self.device)
        self._acc_n = 0
        self.history: list[dict] = []
        # the validation record behind best.pt: {"iter", "val_acc"} (kept across rollbacks, saved in checkpoints)
        self.best: dict | None = None
        self.recovery = RecoveryState(sgld_steps=cfg.sgld_steps, energy_l2=cfg.energy_l2)
        self.guard = DivergenceGuard(self, cfg.energy_bound, cfg.gap_bound, cfg.buffer_margin) if cfg.guard else None
        self._snapshot_file: str | None = None  # the guard's rollback point on disk (_save_snapshot)
        self._faults: dict[int, str] = {}
        self._updating = False  # train_step between the optimiser's step and the iteration's count
        if ckpt is not None:
            self._restore(ckpt)

    def _check_out_dir(self) -> None:
        """Refuse an ``out_dir`` whose files the run would overwrite or mix its records into (another run's, a
        sweep's); the run resumed from ``_resumed_from`` may continue its own."""
        resumed = self._resumed_from
        latest = self.out_dir / "checkpoint.pt"
        records = latest.exists() or (self.out_dir / "metrics.jsonl").exists()
        holder = lock_holder(self.out_dir / RUN_LOCK) if resumed is None and records else None
        if holder is not None and holder != f"pid {os.getpid()}":
            # a run still training there: not one to resume, nor one that stopped before its first checkpoint
            raise ConfigError(f"{self.out_dir} is in use by another fastjem run ({holder}): wait for it, or choose "
                              "another --out-dir; nothing was changed")
        if resumed is None and latest.exists():
            raise ConfigError(f"{self.out_dir} already holds a run (checkpoint.pt): continue it with --resume "
                              f"{latest}, or choose another --out-dir; nothing was changed")
        if resumed is None and (self.out_dir / "sweep.json").exists():
            # run listings and eval would see this run and never the sweep's
            raise ConfigError(f"{self.out_dir} holds a sweep (sweep.json): choose another --out-dir for a single run; "
                              "nothing was changed")
        if resumed is None and (self.out_dir / "metrics.jsonl").exists():
            # a new run would append its records to the old ones
            raise ConfigError(f"{self.out_dir} holds the records of a run that stopped before its first checkpoint "
                              "(metrics.jsonl, no checkpoint.pt): remove the folder to start that run over, or choose "
                              "another --out-dir; nothing was changed")
        if resumed is not None and latest.exists() and not latest.samefile(resumed):
            # e.g. resuming best.pt beside the run's own latest checkpoint: continuing here would overwrite it
            raise ConfigError(f"resuming {resumed} into {self.out_dir} would overwrite {latest} (a different "
                              "state of the run): give another --out-dir for the run that continues from it; "
                              "nothing was changed")
        if resumed is None or Path(resumed).resolve().parent != self.out_dir.resolve():
            # a run that starts here, or continues here from another folder's checkpoint, would replace another
            # run's best.pt and kept checkpoints, or write its records into that run's metrics.jsonl
            held = [n for n in ("metrics.jsonl", "best.pt", "checkpoints") if (self.out_dir / n).exists()]
            held += sorted(p.name for p in self.out_dir.glob("rollback-*.pt"))
            if held:
                raise ConfigError(f"{self.out_dir} holds another run's {', '.join(held)}: choose another --out-dir "
                                  "(or move them away); nothing was changed")

    def _check_unchanged(self) -> None:
        """At fit(): the folder as this Trainer left it. Several Trainers in one process (a notebook, a loop that
        builds them all, then fits each) were each checked against the folder when built; the second to fit one
        folder then overwrote the first's checkpoint.pt and appended its records to the first's metrics.jsonl."""
        if not self._fitted:
            self._check_out_dir()  # a new run: the folder still holds no run (none has started there since)
        latest = self.out_dir / "checkpoint.pt"
        now = _file_stamp(latest)
        if now is not None and now != self._latest_seen:
            raise ConfigError(f"{latest} was written by another run since this Trainer was built or last saved it "
                              "(another Trainer in this process, or another process, trains in "
                              f"{self.out_dir}): fitting would overwrite that run's state with this Trainer's "
                              "older one and mix their records; build the Trainer again to continue it "
                              f"(Trainer(cfg, resume='{latest}')), or give another out_dir; nothing was changed")

    @contextlib.contextmanager
    def _own_rng(self):
        """torch's global generators (CPU, and the run's GPU) hold the run's states inside, the caller's again
        after, whatever ends it (an error, KeyboardInterrupt); nested uses swap once. So do the CUDA math flags
        (TF32, cuDNN autotuning: ``fastjem.engine.backend_flags``), which the run's engine sets inside and the
        caller's code finds as it left them."""
        if self._rng_depth:
            yield
            return
        outer = _rng_states(self.device)
        outer_flags = backend_flags()
        engine = getattr(self, "engine", None)  # (none yet while __init__ builds it)
        flags = engine.cuda_flags() if engine is not None else None
        if flags is not None:
            set_backend_flags(flags)
        _set_rng_states(self.device, self._rng)
        self._rng_depth += 1
        try:
            yield
        finally:
            self._rng_depth -= 1
            self._rng = _rng_states(self.device)
            _set_rng_states(self.device, outer)
            set_backend_flags(outer_flags)

    def __repr__(self) -> str:
        # (a Trainer whose __init__ failed has no data yet)
        if not hasattr(self, "guard"):
            return f"Trainer(not built, out_dir='{getattr(self, 'out_dir', None)}')"
        shape = "x".join(map(str, self.data.sample_shape))
        kind = "" if self.cfg.generative else ", classifier only"
        return (f"Trainer({self.data.info.name} {shape}, {self._model_desc()}, device {self.device}, iteration "
                f"{self.iteration} of {self.total_iters}{kind}, out_dir='{self.out_dir}')")

    # ----------------------------------------------------------------------------------- setup
    def _buffer_init(self) -> ClassGaussians | None:
        """--buffer-init informative: the class Gaussians of the labelled training images (None for uniform)."""
        if self.cfg.buffer_init != "informative":
            return None
        start = time.perf_counter()
        labelled = self.data.labelled
        init = ClassGaussians(self.data.train_x[labelled], self.data.train_y[labelled], self.num_classes)
        self.log(f"buffer: informative initialisation, a Gaussian per class fitted to {len(labelled)} labelled "
                 f"training images in {time.perf_counter() - start:.1f} s ({init.nbytes / 2**20:.1f} MB)")
        return init

    def _init_weights(self, path: str) -> None:
        """--init-weights: the network's parameters (and buffers) from another run's checkpoint, nothing else."""
        source = load_checkpoint(path)
        saved = TrainConfig.from_dict(source["config"])
        # the options that build the network (a ConvNet has no depth), which the command line can match
        options = ("arch", "depth", "width", "norm") if saved.arch == "wrn" else ("arch", "width", "norm")
        differ = [] if self.custom["model"] else [f for f in options if getattr(saved, f) != getattr(self.cfg, f)]
        if differ:
            flags = " ".join(f"--{f} {getattr(saved, f)}" for f in differ)
            raise ConfigError(f"--init-weights {source['path']} holds another network ({', '.join(differ)} differ: "
                              f"{saved.model_name} norm={saved.norm}); give {flags} to build its network, or a "
                              "checkpoint of this run's architecture")
        # the images it learnt, compared as loaded (not as options: --image-size 0 keeps each dataset's own size)
        info = self.data.info
        keys = ("num_classes", "channels", "image_size")
        mine = tuple(getattr(info, k) for k in keys)
        theirs = tuple(source.get("dataset", {}).get(k, v) for k, v in zip(keys, mine, strict=True))
        if theirs != mine:
            shape = lambda k, c, s: f"{c}-channel {s}x{s} images of {k} classes"
            resize = f" (--image-size {theirs[2]} resizes these)" if theirs[:2] == mine[:2] else ""
            raise ConfigError(f"--init-weights {source['path']} was trained on {shape(*theirs)}, and this run's data "
                              f"holds {shape(*mine)}: give data like its own{resize}, or a checkpoint trained on data "
                              "like this run's")
        try:
            self.model.load_state_dict(plain_state_dict(source["model"]))
        except RuntimeError as err:
            raise CheckpointError(f"--init-weights {source['path']} does not fit this network: "
                                  f"{str(err).splitlines()[0]}") from err
        self.log(f"initial weights from {source['path']} (iteration {source['iteration']})")

    def _build_optimizer(self) -> torch.optim.Optimizer:
        cfg = self.cfg
        params = self.model.parameters()
        # The learning rate lives in a device tensor that every iteration overwrites in place (warm-up, decay,
        # recovery), so a captured iteration reads the current value.
        cuda = self.device.type == "cuda"
        self.lr_t = torch.tensor(cfg.lr, dtype=torch.float32 if cuda else torch.float64, device=self.device)
        if cfg.optimizer == "adam":
            # On CUDA the fused Adam (one kernel pass over parameters, gradients and moments, where the foreach
            # one makes about ten) takes it with capturable=True (step counters on the device too); on CPU the
            # single-tensor Adam reads it as a number, bitwise what a float lr gives (fp64 keeps the value exact).
            self._adam_settings = {"capturable": cuda, "foreach": False, "fused": cuda}
            return torch.optim.Adam(params, lr=self.lr_t, weight_decay=cfg.weight_decay, **self._adam_settings)
        # torch's SGD reads a tensor learning rate on the host; DeviceSGD multiplies by it on the device
        return DeviceSGD(params, self.lr_t, momentum=cfg.momentum, weight_decay=cfg.weight_decay)

    def _set_lr(self, lr: float) -> None:
        self.lr_t.fill_(lr)  # a kernel argument, not a host sync

    def _adopt_optimizer_settings(self) -> None:
        """After loading an optimiser state: our device lr tensor and Adam mode, step counters where they belong."""
        if isinstance(self.optimizer, DeviceSGD):
            return  # its load_state_dict keeps its lr tensor (self.lr_t) and makes missing momentum buffers
        capturable = self._adam_settings["capturable"]
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr_t
            group.update(self._adam_settings)
            for p in group["params"]:
                state = self.optimizer.state.get(p)
                if state and "step" in state:
                    step = torch.as_tensor(state["step"], dtype=torch.float32)
                    state["step"] = step.to(p.device) if capturable else step.cpu()

    def _ensure_optimizer_state(self) -> None:
        """Create Adam's moments and step counters now, as zeros (what its first step creates), so that a
        snapshot and a captured graph see every state tensor from the first iteration on (DeviceSGD makes its
        momentum buffers itself). With the overlapped backward, the gradients too: both streams add into them, so
        they are allocated once, here, on the current stream."""
        if self.engine.overlap_data:
            self._ensure_grads()
        if isinstance(self.optimizer, DeviceSGD):
            self.optimizer.ensure_state()
            return
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                state = self.optimizer.state[p]
                if not state:
                    state["step"] = (torch.zeros((), dtype=torch.float32, device=p.device) if group["capturable"]
                                     else torch.tensor(0.0, dtype=torch.float32))
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)

    # ------------------------------------------------------------------------------- iteration
    def energy_fn(self, y: torch.Tensor | None = None):
        """E(x) (or E(x, y)) of the current network under the engine's precision and kernels."""
        return model_energy(self.net, y, autocast=self.engine.autocast, backend=self.engine.kernels)

    def run_sgld(self, x0: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
        """SGLD from x0: replayed from a captured CUDA graph when the engine has one, else the eager loop."""
        if self.cast_copy is not None:
            self.cast_copy.refresh_()  # the current weights, cast once for all the steps
        if self.engine.cuda_graph and not self._inline_sgld:
            key = (tuple(x0.shape), y is not None)
            if key not in self._graphs:
                self._graphs[key] = self.nets.graphed(self.sampler, x0, y, self._sgld_parts(x0))
            return self._graphs[key](x0, y)
        return self.sampler.sample_parts(self.nets.energies(y), x0, self._sgld_parts(x0), model=self.sgld_model)

    def _sgld_parts(self, x0: torch.Tensor) -> int:
        """The engine's SGLD parts for this batch (at most one per row)."""
        return min(self.engine.sgld_parts, x0.shape[0])

    @_drawing
    def sample(self, batch_size: int, y: torch.Tensor | None = None) -> torch.Tensor:
        """Draw chains from the buffer, run SGLD (on E(x), or E(x, y) when y is given), write them back."""
        x0, idx = self.buffer.sample(batch_size, y)
        x = self.run_sgld(x0, y)
        self.buffer.write_(idx, x)
        return x

    def forward(self, *xs: torch.Tensor) -> list[torch.Tensor]:
        """Logits of each batch: one concatenated forward when the engine fuses, else one forward each."""
        with self.engine.autocast():
            if self.engine.fused_forward and len(xs) > 1:
                return list(self.net(torch.cat(xs)).split([x.shape[0] for x in xs]))
            return [self.net(x) for x in xs]

    def loss(self, x_p, x_lab, y_lab, x_q: torch.Tensor | None = None):
        """The JEM loss and its parts (fp32 scalars on the device); ``x_q`` given skips the sampler."""
        cfg = self.cfg
        b = x_lab.shape[0]
        parts = {}
        loss = torch.zeros((), device=self.device)
        backend = self.engine.kernels
        if cfg.px_weight > 0:
            y_q = torch.randint(0, self.num_classes, (b,), device=self.device) if cfg.class_cond_px else None
            if x_q is None:
                x_q = self.sample(b, y_q)
            self.last_samples = x_q
            logits_p, logits_q, logits = self.forward(x_p, x_q, x_lab)
            e_data = kernels.lse_energy(logits_p, backend=backend)
            e_sample = kernels.lse_energy(logits_q, backend=backend)
            # -log p(x) surrogate: mean LSE f(x_q) - mean LSE f(x_p) = mean E(x_p) - mean E(x_q).
            loss = loss + cfg.px_weight * (e_data.mean() - e_sample.mean())
            if self.recovery.energy_l2 > 0:
                loss = loss + self.recovery.energy_l2 * ((e_data**2).mean() + (e_sample**2).mean())
            parts["e_data"], parts["e_sample"] = e_data.mean().detach(), e_sample.mean().detach()
        else:
            (logits,) = self.forward(x_lab)
        ce = F.cross_entropy(logits.float(), y_lab)
        loss = loss + cfg.pyx_weight * ce
        if cfg.pxy_weight > 0:
            x_qy = self.sample(b, y_lab)
            (logits_qy,) = self.forward(x_qy)
            # -log p(x, y) surrogate: mean f(x_q|y)[y] - mean f(x_lab)[y] = mean E(x_lab, y) - mean E(x_q, y).
            e_lab_y = kernels.lse_energy(logits, y_lab, backend=backend)
            e_qy = kernels.lse_energy(logits_qy, y_lab, backend=backend)
            loss = loss + cfg.pxy_weight * (e_lab_y.mean() - e_qy.mean())
            if cfg.px_weight == 0:
                # the only generative term: the energy penalty (--energy-l2, the guard's third remedy) and the
                # energies the guard bounds and the log shows are its own
                if self.recovery.energy_l2 > 0:
                    loss = loss + self.recovery.energy_l2 * ((e_lab_y**2).mean() + (e_qy**2).mean())
                parts["e_data"], parts["e_sample"] = e_lab_y.mean().detach(), e_qy.mean().detach()
        parts["ce"] = ce.detach()
        parts["acc"] = (logits.argmax(1) == y_lab).float().mean()
        parts["loss"] = loss.detach()
        return loss, parts

    @_drawing
    def train_step(self) -> dict:
        """One JEM iteration; returns the metric tensors (on the device, not synced).

        With the engine's iteration graph, one replay of the captured iteration (built, and checked
        against the eager iteration, on first use); otherwise ``_iteration`` runs eagerly.
        """
        lr = learning_rate(self.cfg, self.iteration, self.iters_per_epoch) * self.recovery.lr_scale
        fault = self._faults.pop(self.iteration, None)
        if fault == "lr":
            lr *= 1e6
        self._set_lr(lr)
        self._updating = False
        runner = self._iteration_graph() if self.engine.iteration_graph and fault is None else None
        if runner is not None:
            self._updating = True
            outputs = runner.replay()
            self.last_samples = outputs["samples"]
            parts = outputs["parts"]
        else:
            parts = self._iteration(fault)
        self.iteration += 1
        self._acc_n += 1
        self._updating = False
        return parts

    def _iteration(self, fault: str | None = None) -> dict:
        """The iteration itself, all on the device (what the iteration graph records): draw the data, sample,
        loss, backward, optimiser step, divergence flag, metric sums."""
        self.model.train()
        x_p, x_lab, y_lab = self.data.draw(self.cfg.batch_size, self.data_gen, self.shard)
        if self.engine.overlap_data:
            parts = self._overlapped_backward(x_p, x_lab, y_lab, fault)
        else:
            loss, parts = self.loss(x_p, x_lab, y_lab)
            if fault == "nan":
                loss = loss * float("nan")
                parts["loss"] = loss.detach()
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
        if self.dist.enabled:
            all_reduce_grads_(list(self.model.parameters()), self.dist.world)
        # from here to the count of the iteration, a second Ctrl-C waits (fit's on_signal): an update stopped halfway
        # (some parameters and Adam's step counters moved, the iteration not counted) would be trained on
        self._updating = True
        self.optimizer.step()
        if self.guard is not None:
            self.guard.observe(parts)
        zero = torch.zeros((), device=self.device)
        self._acc += torch.stack([parts.get(k, zero) for k in METRIC_NAMES])
        return parts

    def _overlapped_backward(self, x_p, x_lab, y_lab, fault: str | None = None) -> dict:
        """The JEM loss's gradient in two halves (engine option overlap_data): the data half, px * E(x_p) +
        pyx * CE(x_lab) (+ its energy penalty), is backpropagated on a second CUDA stream while the main stream
        samples x_q, then the samples' half, -px * E(x_q), adds to the same gradients. Neither half reads what the
        other writes until the join, and the weights do not change in between, so the sum is the one backward's
        gradient (summed in another order). The gradients stay allocated and are zeroed in place, so both streams
        add into memory the main stream owns. Returns the loss's parts, as ``loss`` does."""
        cfg = self.cfg
        backend = self.engine.kernels
        b = x_lab.shape[0]
        # the draws in ``loss``'s order: the class-conditional draw's classes first
        y_q = torch.randint(0, self.num_classes, (b,), device=self.device) if cfg.class_cond_px else None
        self._ensure_grads()
        self.optimizer.zero_grad(set_to_none=False)
        side = self._side_stream()
        if side is not None:
            side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side) if side is not None else contextlib.nullcontext():
            logits_p, logits = self.forward(x_p, x_lab)
            e_data = kernels.lse_energy(logits_p, backend=backend)
            ce = F.cross_entropy(logits.float(), y_lab)
            loss_data = cfg.px_weight * e_data.mean() + cfg.pyx_weight * ce
            if self.recovery.energy_l2 > 0:
                loss_data = loss_data + self.recovery.energy_l2 * (e_data**2).mean()
            if fault == "nan":
                loss_data = loss_data * float("nan")
            loss_data.backward()
            acc = (logits.argmax(1) == y_lab).float().mean()
        x_q = self.sample(b, y_q)
        self.last_samples = x_q
        if side is not None:
            torch.cuda.current_stream(self.device).wait_stream(side)
        (logits_q,) = self.forward(x_q)
        e_sample = kernels.lse_energy(logits_q, backend=backend)
        loss_sample = -cfg.px_weight * e_sample.mean()
        if self.recovery.energy_l2 > 0:
            loss_sample = loss_sample + self.recovery.energy_l2 * (e_sample**2).mean()
        loss_sample.backward()
        return {"e_data": e_data.mean().detach(), "e_sample": e_sample.mean().detach(), "ce": ce.detach(),
                "acc": acc, "loss": loss_data.detach() + loss_sample.detach()}

    def _ensure_grads(self) -> None:
        for p in self.model.parameters():
            if p.grad is None:
                p.grad = torch.zeros_like(p)

    def _side_stream(self) -> torch.cuda.Stream | None:
        """The second CUDA stream of the overlapped backward (None off CUDA)."""
        if self.device.type != "cuda":
            return None
        if self._side is None:
            self._side = torch.cuda.Stream(self.device)
        return self._side

    def _mutable_state(self) -> list[torch.Tensor]:
        """Every tensor an iteration changes in place."""
        tensors = [*self.model.parameters(), *self.model.buffers(), self.buffer.data, self.buffer.rng_state,
                   self.sampler.rng_for(self.device), self._acc]
        for state in self.optimizer.state.values():
            tensors += [v for v in state.values() if torch.is_tensor(v)]
        if self.guard is not None:
            tensors.append(self.guard.flag)
        tensors.append(self.lr_t)
        return tensors

    def _iteration_graph(self):
        """The captured iteration (built on first use and after a state reload), or None when capture failed."""
        runner = self._graphs.get("iteration")
        if runner is not None or self._iteration_graph_failed:
            return runner
        from fastjem.graphs import GraphedIteration, StateSnapshot, default_generator

        self._ensure_optimizer_state()
        snapshot = StateSnapshot(self._mutable_state(), [self.data_gen, default_generator(self.device)])

        params = list(self.model.parameters())

        def step() -> dict:
            parts = self._iteration()
            # the gradients the optimiser stepped with: the first replay is checked against them
            return {"parts": parts, "samples": self.last_samples, "grads": [p.grad for p in params]}

        self._inline_sgld = True
        try:
            runner = GraphedIteration(step, snapshot, self.device)
            report = self._check_iteration_graph(runner, step, snapshot)
        except Exception as err:  # noqa: BLE001 - any capture failure falls back to the eager iteration
            snapshot.restore()
            self._iteration_graph_failed = True
            self.log(f"engine: iteration graph off: {error_line(err)} (the SGLD graph and the eager iteration run "
                     "instead)")
            return None
        finally:
            self._inline_sgld = False
        snapshot.restore()
        self._graphs["iteration"] = runner
        self.log(f"engine: iteration graph captured; first replay vs eager iteration: {report}")
        return runner

    def _check_iteration_graph(self, runner, step, snapshot) -> str:
        """One iteration eagerly and one by replay from the same state must agree; raises when they do not.

        Not bitwise: cuDNN picks its algorithms anew under capture, so weight gradients may sum in another
        order, and under bf16 a last-bit difference can move a rounding; a wrong graph (frozen noise, missing
        write-back, lost or doubled update, the optimiser reading other gradients) differs by far more than
        the tolerances below. Compared closely: the gradients the optimiser received and the optimiser's
        state after its step, kind by kind (momenta, step counts). The parameters' change only in size:
        early in warm-up an update is mostly under one ulp of its weight (SGD on digits at the first lr,
        1e-7: 99.8% of the elements within two ulps) or a sign (Adam's first step), so a weight's fp32
        change is mostly rounding, which gradients differing in their last bits flip (an H100 refused an
        honest graph so).
        """
        params = [p for p in self.model.parameters()]
        start = [p.detach().float().clone() for p in params]
        buf0 = self.buffer.data.clone()
        eager = step()
        eager_parts = {k: v.detach().clone() for k, v in eager["parts"].items()}
        g_eager = _flat([g for g in eager["grads"] if g is not None])
        s_eager = self._optimizer_state()
        d_eager = _flat([p.detach().float() - s for p, s in zip(params, start)])
        buf_eager = self.buffer.data.clone()
        rng_eager = (self.sampler.rng_state.clone(), self.buffer.rng_state.clone())
        snapshot.restore()
        replayed = runner.replay()
        g_graph = _flat([g for g in replayed["grads"] if g is not None])
        s_graph = self._optimizer_state()
        d_graph = _flat([p.detach().float() - s for p, s in zip(params, start)])
        problems = []
        worst = 0.0
        for k, v in eager_parts.items():
            diff = float((replayed["parts"][k] - v).abs() / v.abs().clamp_min(1.0))
            worst = max(worst, diff)
            if not diff <= 1e-2:
                problems.append(f"{k} {float(v):.6g} (eager) vs {float(replayed['parts'][k]):.6g} (graph)")
        g_cos, g_ratio = _agreement(g_eager, g_graph)
        if not (g_cos >= 0.98 and abs(g_ratio - 1) <= 0.02):
            problems.append(f"gradients differ (cosine {g_cos:.4f}, norm ratio {g_ratio:.4f})")
        s_worst = 1.0
        for kind, values in s_eager.items():
            s_cos, s_ratio = _agreement(values, s_graph.get(kind, torch.zeros(0)))
            s_worst = min(s_worst, s_cos)
            if not (s_cos >= 0.98 and abs(s_ratio - 1) <= 0.02):
                problems.append(f"optimiser state {kind} differs (cosine {s_cos:.4f}, norm ratio {s_ratio:.4f})")
        d_cos, d_ratio = _agreement(d_eager, d_graph)
        if not abs(d_ratio - 1) <= 0.1:
            problems.append(f"parameter update differs in size (norm ratio {d_ratio:.4f})")
        moved = float((buf_eager - buf0).norm())
        buf_diff = float((self.buffer.data - buf_eager).norm()) / max(moved, 1e-30)
        if self.cfg.generative and not buf_diff <= 0.5:
            problems.append(f"replay buffer differs ({buf_diff:.3g} of its change)")
        if not (torch.equal(rng_eager[0], self.sampler.rng_state) and torch.equal(rng_eager[1], self.buffer.rng_state)):
            problems.append("device RNG states advanced differently")
        if problems:
            raise RuntimeError("graph replay disagrees with the eager iteration: " + "; ".join(problems))
        return (f"metrics within {worst:.1e} (relative), gradient cosine {g_cos:.5f} (norm ratio {g_ratio:.5f})"
                + (f", optimiser state cosine {s_worst:.5f}" if s_eager else "")
                + f", update cosine {d_cos:.5f}, norm ratio {d_ratio:.5f}"
                + (f", buffer within {buf_diff:.1e} of its change" if self.cfg.generative else ""))

    def _optimizer_state(self) -> dict[str, torch.Tensor]:
        """The optimiser's floating-point state, one fp32 vector per kind (``exp_avg``, ``exp_avg_sq``,
        ``momentum_buffer``, ``step``): compared kind by kind, since in one vector Adam's step counts (1, 2, ...)
        outweigh moments of 1e-3, and a graph whose moments went wrong passed."""
        kinds: dict[str, list[torch.Tensor]] = {}
        for state in self.optimizer.state.values():
            for kind, v in state.items():
                if torch.is_tensor(v) and v.is_floating_point():
                    kinds.setdefault(kind, []).append(v)
        return {kind: _flat(values) for kind, values in kinds.items()}

    def read_metrics(self) -> dict:
        """Read (and reset) the accumulated metrics: the one host sync every log_every iterations."""
        acc = self._acc / max(1, self._acc_n)
        if self.dist.enabled:
            all_reduce_mean_(acc, self.dist.world)
        values = acc.tolist()
        out = dict(zip(METRIC_NAMES, values))
        if self.cfg.generative:
            out["gap"] = out["e_sample"] - out["e_data"]
        else:  # no energies computed: none logged (zeros read as a flat energy curve in TensorBoard)
            del out["e_data"], out["e_sample"]
        self._acc.zero_()
        self._acc_n = 0
        return out

    # ------------------------------------------------------------------------------ state / io
    @_drawing
    def local_state(self) -> dict:
        """What differs between data-parallel ranks: buffer shard, sampler and torch RNG states."""
        rng = {"torch": torch.get_rng_state()}
        if self.device.type == "cuda":
            rng["cuda"] = torch.cuda.get_rng_state(self.device)
        # the metric sums of the logging window under way: a resumed run logs the line the whole run would
        # (the keys are LOCAL_STATE)
        return {"buffer": self.buffer.state_dict(), "sampler": self.sampler.state_dict(), "rng": rng,
                "metric_sums": self._acc.clone(), "metric_count": self._acc_n,
                # the sample grid a run resumed at its end draws, as the uninterrupted run drew it
                "last_samples": None if self.last_samples is None else self.last_samples.detach().clone()}

    def state_dict(self) -> dict:
        """This rank's full state (rank 0's is what a checkpoint's top level holds)."""
        return {
            "format": FORMAT, "version": VERSION, "config": self.cfg.to_dict(), "iteration": self.iteration,
            "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
            **self.local_state(), "data_rng": self.data_gen.get_state(), "dataset": asdict(self.data.info),
            "data_fingerprint": self.data_fingerprint,
            "history": self.history, "recovery": self.recovery.to_dict(), "world_size": self.dist.world,
            "best": self.best, "custom": self.custom,
            # what precision auto resolved to, kept by a resume on the same kind of device
            "engine": {"precision": self.engine.precision, "device": self.device.type},
        }

    def _restore(self, ckpt: dict) -> None:
        self.load_state(ckpt)
        # load_state leaves the best record alone (a rollback must not forget what best.pt holds); resume sets it,
        # when it continues in the folder whose best.pt the record describes (another folder starts its own)
        same_folder = Path(ckpt["path"]).resolve().parent == self.out_dir.resolve()
        self.best = ckpt.get("best") if same_folder and (self.out_dir / "best.pt").exists() else None
        if self.guard is not None:
            # the rollback point the run had when it wrote this checkpoint, where it is still on disk (in the folder
            # of the run the checkpoint belongs to: a run continued in another --out-dir or from a kept checkpoint
            # rolls back there too): a resumed run rolls back where the uninterrupted one would; else (a kept
            # checkpoint whose rollback file is gone) this state
            name = ckpt.get("snapshot_file")
            home = _run_folder(Path(ckpt["path"]))
            source = home / name if name else None
            snapshot = None
            if source is not None and source.is_file():
                try:
                    snapshot = load_checkpoint(source)
                except CheckpointError as err:
                    self.log(f"resume: the rollback point {source.name} is unreadable ({err}); the divergence guard "
                             "rolls back to this checkpoint instead")
            if snapshot is not None and "ranks" in snapshot:
                # data-parallel: the file holds every rank's local state; this rank keeps its own
                ranks = snapshot.pop("ranks")
                if len(ranks) == self.dist.world:
                    snapshot.update(ranks[self.dist.rank])
                else:
                    self.log(f"resume: the rollback point {source.name} holds {len(ranks)} processes' states, not "
                             f"{self.dist.world}; the divergence guard rolls back to this checkpoint instead")
                    snapshot = None
            if snapshot is not None:
                self.guard.snapshot = snapshot
                self._snapshot_file = name
                if home != self.out_dir.resolve():
                    self._snapshot_file = None  # continued in another folder: its next checkpoint writes it there
            else:
                self.guard.take_snapshot()

    @_drawing
    def load_state(self, ckpt: dict) -> None:
        """Model, optimiser, buffer, sampler, RNG states, iteration and remedies from a state dict."""
        try:
            self.model.load_state_dict(plain_state_dict(ckpt["model"]))
        except RuntimeError as err:
            raise CheckpointError(f"checkpoint {ckpt.get('path', '')} does not fit this network: "
                                  f"{str(err).splitlines()[0]}") from err
        saved_world = int(ckpt.get("world_size", 1))
        if saved_world != self.dist.world:
            raise CheckpointError(f"checkpoint {ckpt.get('path', '')} was written by {saved_world} process(es); "
                                  f"resume it with the same number (torchrun --nproc-per-node {saved_world}), "
                                  f"not {self.dist.world}")
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self._adopt_optimizer_settings()
        local = ckpt["ranks"][self.dist.rank] if "ranks" in ckpt else ckpt
        self.buffer.load_state_dict(local["buffer"])
        self.sampler.load_state_dict(local["sampler"])
        self.sampler.rng_state = self.sampler.rng_state.to(self.device)
        torch.set_rng_state(local["rng"]["torch"])
        if self.device.type == "cuda" and "cuda" in local["rng"]:
            torch.cuda.set_rng_state(local["rng"]["cuda"], self.device)
        if "metric_sums" in local:
            self._acc.copy_(local["metric_sums"])  # in place: the iteration graph holds this tensor
            self._acc_n = int(local["metric_count"])
        if local.get("last_samples") is not None:
            self.last_samples = local["last_samples"].to(self.device)
        if "data_rng" in ckpt:
            try:
                self.data_gen.set_state(ckpt["data_rng"])
            except RuntimeError:
                # written on another kind of device (resume may change --device): a CPU and a CUDA generator's
                # states do not convert, so the batches are drawn from a new seed, the same on every rank
                self.data_gen.manual_seed(self.cfg.seed + 1_000_003 * (int(ckpt["iteration"]) + 1))
                self.log(f"resume: the checkpoint's data generator was on another kind of device than "
                         f"{self.device}; batches from iteration {int(ckpt['iteration'])} on are drawn from a new "
                         "seed (the run continues, not bit for bit as on the first device)")
        self.iteration = int(ckpt["iteration"])
        self.history = list(ckpt.get("history", []))
        if "recovery" in ckpt:
            self.recovery = RecoveryState(**ckpt["recovery"])
        if self.iteration > 0:
            # the rate the last step used, as the optimiser held it when saved (a run resumed at its end takes no
            # step that would set it)
            self._set_lr(learning_rate(self.cfg, self.iteration - 1, self.iters_per_epoch) * self.recovery.lr_scale)
        self.sampler.n_steps = self.recovery.sgld_steps
        self._graphs.clear()

    def save_checkpoint(self, name: str = "checkpoint.pt") -> Path:
        """Write ``name`` (checkpoint.pt) atomically; under data parallelism rank 0 writes every rank's local state
        (all ranks must call it)."""
        path = self.out_dir / name
        if name == "checkpoint.pt" and self.guard is not None and self.guard.snapshot is not None:
            self._place_rollback_point()
        state = self.state_dict()
        state["snapshot_file"] = self._snapshot_file
        if self.dist.enabled:
            checksum = float(torch.cat([p.detach().double().flatten() for p in self.model.parameters()]).sum())
            gathered = gather_to_main((self.local_state(), checksum), self.dist)
            if not self.dist.is_main:
                return path
            state["ranks"] = [g[0] for g in gathered]
            state["replica_checksums"] = [g[1] for g in gathered]
            if len(set(state["replica_checksums"])) != 1:
                self.log(f"warning: replicas differ across ranks: {state['replica_checksums']}")
        atomic_save(state, path)
        if name == "checkpoint.pt":
            self._latest_seen = _file_stamp(path)
            # rollback files no checkpoint names any more
            for old in self.out_dir.glob("rollback-*.pt"):
                if old.name != self._snapshot_file:
                    old.unlink(missing_ok=True)
        return path

    def _take_snapshot(self) -> None:
        """The divergence guard's rollback point, in memory (on disk only where a checkpoint needs it:
        _place_rollback_point)."""
        self.guard.take_snapshot()
        self._snapshot_file = None

    def _place_rollback_point(self) -> None:
        """Where a run resumed from the checkpoint about to be written finds the guard's rollback point, so that it
        rolls back where the uninterrupted run would. A snapshot of this very iteration is taken again from the
        state the checkpoint holds (the same parameters; only records such as a validation since differ), which a
        resume takes from the checkpoint itself: nothing more is written, and the defaults' snapshots fall on
        checkpoint iterations. An older snapshot is written once, as a file the checkpoint names."""
        if int(self.guard.snapshot["iteration"]) == self.iteration:
            self._take_snapshot()
        elif self._snapshot_file is None:
            self._save_snapshot()

    def _save_snapshot(self) -> None:
        """rollback-<iteration>-r<recoveries>.pt: the guard's snapshot. Under data parallelism rank 0 writes every
        rank's local state, as in a checkpoint (all ranks take their snapshots at the same checks and write
        checkpoints together, so all call this)."""
        snap = self.guard.snapshot
        name = f"rollback-{int(snap['iteration']):07d}-r{int(snap['recovery']['recoveries'])}.pt"
        self._snapshot_file = name
        if self.dist.enabled:
            gathered = gather_to_main({k: snap[k] for k in LOCAL_STATE}, self.dist)
            if not self.dist.is_main:
                return
            snap = {**snap, "ranks": gathered}
        atomic_save(snap, self.out_dir / name)  # fit() made the folder

    def keep_checkpoint(self, path: Path) -> Path | None:
        """checkpoints/iter_<N>.pt: a copy of the checkpoint just written at ``path``, written atomically by rank 0.
        A copy, not a hard link: a link shared the file with checkpoint.pt until the next checkpoint, so a
        checkpoint.pt overwritten in place (``cp checkpoints/iter_<M>.pt checkpoint.pt`` to go back, a damaged
        disk block) changed the kept state too."""
        if not self.dist.is_main:
            return None
        dest = self.out_dir / "checkpoints" / f"iter_{self.iteration:07d}.pt"
        atomic_copy(path, dest)
        return dest

    def save_samples(self, name: str) -> Path | None:
        """A grid of the last SGLD samples (the buffer before any) as ``name``, and to TensorBoard when logging. A
        picture that cannot be written (a full disk) costs a warning, never the run (None then)."""
        from fastjem.eval.plots import grid_tensor, save_grid_image

        x = self.last_samples if self.last_samples is not None else self.buffer.data[:64]
        grid = grid_tensor(x[:100])
        if self.board is not None:
            self.board.image("samples", grid, self.iteration)
        path = self.out_dir / name
        try:
            save_grid_image(grid, path)
        except OSError as err:
            self.log(f"warning: sample grid not written ({err.strerror or err}: {err.filename or path}); the run "
                     "goes on")
            return None
        return path

    def _log_jsonl(self, record: dict) -> None:
        if not self.dist.is_main:
            return
        path = self.out_dir / "metrics.jsonl"
        # when it was written, on the wall clock (seconds since the Unix epoch): to line a run up with other logs
        record = {**record, "time": round(time.time(), 3)}
        with naming(path), open(path, "a") as f:
            # strict JSON: a diverged (unguarded) run's NaN loss is logged as null, which every JSON reader takes
            f.write(strict_json(record) + "\n")

    # ------------------------------------------------------------------------------------ loop
    @_drawing
    def fit(self) -> dict:
        """Train to ``total_iters`` and return the summary (also written to summary.json). Called again after a fit
        that stopped (a signal, ``KeyboardInterrupt``, an error) it continues from the iteration reached; after one
        that finished it trains nothing and computes the run's end again (to train longer, build a Trainer that
        resumes the checkpoint with a larger ``iters``: ``resume_config(checkpoint, {"iters": n})``)."""
        make_folder(self.out_dir)
        with self._folder_lock():
            if not self.dist.enabled:
                # (data-parallel ranks were checked together when built; only rank 0 writes, so the others' view of
                # checkpoint.pt is not theirs to compare)
                self._check_unchanged()
            self._fitted = True
            if self.dist.is_main:
                self._tidy_folder()
            # a resume at iteration 0 too: a rollback to the start is checkpointed at once, and a kill before the next
            # checkpoint left records past it
            if self.dist.is_main and (self.iteration > 0 or self._resumed_from is not None):
                self._continue_records()
            return self._fit()

    def _tidy_folder(self) -> None:
        """What a kill can leave in the run folder (this process holds its lock, so no write is under way): the
        temporary files of writes cut short, rollback files no checkpoint names (written for a checkpoint whose
        own write then failed: a full disk needs their space back) and the kept checkpoint a kill between
        checkpoint.pt and its copy never made (resuming past that iteration would never make it)."""
        for pattern in (".*.tmp", "checkpoints/.*.tmp"):
            for tmp in self.out_dir.glob(pattern):
                tmp.unlink(missing_ok=True)
        latest = self.out_dir / "checkpoint.pt"
        from_latest = self._resumed_from is not None and self._resumed_from.resolve() == latest.resolve()
        if from_latest:
            for old in self.out_dir.glob("rollback-*.pt"):
                if old.name != self._snapshot_file:
                    old.unlink(missing_ok=True)
        keep = self.cfg.ckpt_keep_every
        if (keep and self.iteration > 0 and self.iteration % keep == 0 and from_latest
                and not (self.out_dir / "checkpoints" / f"iter_{self.iteration:07d}.pt").exists()):
            self.keep_checkpoint(latest)

    @contextlib.contextmanager
    def _folder_lock(self):
        """One run at a time in a folder: a second process (a run started twice, two resumes of one checkpoint)
        is refused before it writes anything, where its metrics would mix with the first's."""
        if not self.dist.is_main:
            yield
            return
        with folder_lock(self.out_dir / RUN_LOCK, f"{self.out_dir} is in use by another fastjem run ({{holder}}): "
                                                  "wait for it, or choose another --out-dir; nothing was changed"):
            yield

    def _continue_records(self) -> None:
        """A resumed run continues its records from the checkpoint's state: summary.json (the end of an earlier
        length) goes, and so does every metrics.jsonl record from the first that the checkpoint's state does not
        include: one of an iteration past the checkpoint's (an attempt that died before its next checkpoint logged
        it; it is logged again as the run gets there), a rollback of the guard that the checkpoint has not made (the
        records before the rollbacks it has made stay, whatever their iterations), the end-of-run record at the
        checkpoint's iteration (a finished run resumed at its end finishes again) and a last line cut short (a kill
        or a full disk mid-write), which the next record would be glued onto."""
        (self.out_dir / "summary.json").unlink(missing_ok=True)
        path = self.out_dir / "metrics.jsonl"
        source = self._source_records()
        if not path.exists() and source is not None:
            # a run continued in another folder (a branch from best.pt or a kept checkpoint) starts with the records
            # of the run it continues, up to its checkpoint (the rest is trimmed below)
            atomic_write_text(source.read_text(), path)
        if not path.exists():
            return
        lines = path.read_text().splitlines(keepends=True)
        # the guard's rollbacks the checkpoint has made: the records up to the last of them are its past whatever
        # their iterations (an attempt the guard abandoned is kept, as the running run keeps it); after it, the
        # records reach the checkpoint's iteration, and a further rollback (logged just before a kill that kept it
        # from the checkpoint, or made later by the run a branch was taken from) is not its past
        made = self.recovery.recoveries
        seen = 0
        end = len(lines)
        for i, line in enumerate(lines):
            if not line.endswith("\n"):
                end = i  # cut short: the last line
                break
            try:
                record = json.loads(line)
                rollback = record.get("event") == "divergence" and record.get("action") == "recover"
                after = not rollback and (record.get("iter", 0) > self.iteration or (
                    # the end-of-run record is written again only when the run resumes at its end (a longer run
                    # keeps it)
                    record.get("iter") == self.iteration and "test_acc" in record
                    and self.iteration >= self.total_iters))
            except (ValueError, AttributeError, TypeError):
                continue
            if rollback:
                if seen == made:
                    end = i
                    break
                seen += 1
            elif seen == made and after:
                end = i
                break
        if end != len(lines):
            atomic_write_text("".join(lines[:end]), path)

    def _source_records(self) -> Path | None:
        """metrics.jsonl of the run the resumed checkpoint belongs to, when that run is in another folder."""
        if self._resumed_from is None:
            return None
        folder = _run_folder(self._resumed_from)
        records = folder / "metrics.jsonl"
        return records if records.exists() and folder != self.out_dir.resolve() else None

    def _fit(self) -> dict:
        cfg = self.cfg
        if self.dist.is_main:
            atomic_write_text(json.dumps(cfg.to_dict(), indent=2), self.out_dir / "config.json")
            if cfg.tensorboard:
                # a resumed run logs on from the checkpoint's iteration: later steps of an earlier attempt are purged;
                # one resumed at its end writes that iteration's end records again (metrics.jsonl dropped them), so
                # its step is purged too, and the records metrics.jsonl keeps there are logged again
                at_end = 0 < self.iteration >= self.total_iters
                resumed = self.iteration > 0 or self._resumed_from is not None
                start = self.iteration if at_end else self.iteration + 1 if resumed else 0
                self.board = TensorBoardLog(self.out_dir / "tensorboard", start, cfg.to_dict(), warn=self.log)
                if at_end and (self.out_dir / "metrics.jsonl").exists():
                    from fastjem.curves import read_metrics

                    m = read_metrics(self.out_dir)
                    for record in m.train + m.evals:
                        if record["iter"] == self.iteration:
                            self.board.scalars(self.iteration, record)
        shape = "x".join(map(str, self.data.sample_shape))
        self.log(f"fastjem: {self.data.info.name} {shape} ({self.data.n_train} train / {len(self.data.val_y)} val / "
                 f"{len(self.data.test_y)} test), {self._model_desc()}, device {self.device}, "
                 f"{counted(self.total_iters, 'iteration')} ({self.iters_per_epoch} per epoch)"
                 # (a checkpoint of iteration 0 too: one stopped or rolled back to its start)
                 + (f", resuming at iteration {self.iteration}" if self._resumed_from is not None else "")
                 + ("" if cfg.generative else ", classifier only (no sampling)")
                 + (f", {self.dist.world} data-parallel processes" if self.dist.enabled else ""))
        for note in self.engine.notes:
            self.log(f"engine: {note}")
        self.log(f"engine: {self.engine.describe()}")
        # in iterations: --decay-epochs count epochs, whose length follows the batch size and the dataset
        scaled = self.recovery.lr_scale != 1
        self.log(schedule_description(cfg, self.iters_per_epoch, self.total_iters)
                 + (f"; x{self.recovery.lr_scale:g} after the guard's recoveries" if scaled else ""))
        if self._finished:
            # a notebook's fit() run again, to train more: it would otherwise finish again without a word of why
            ckpt = self.out_dir / "checkpoint.pt"
            self.log(f"this Trainer has trained its {counted(self.total_iters, 'iteration')} already: nothing to "
                     "train, the run's end (validation, test, summary.json) is computed again. To train longer: "
                     f"Trainer(resume_config('{ckpt}', {{'iters': N}}), resume='{ckpt}').fit() with N > "
                     f"{self.total_iters}")
        if self._resumed_from is None and cfg.warmup_iters > self.total_iters:
            # the linear warm-up never ends: the run trains at a fraction of the learning rate asked for (said when
            # the run starts: a resume, even one at iteration 0, cannot change --warmup-iters)
            self.log(f"warning: --warmup-iters {cfg.warmup_iters} is longer than the run "
                     f"({counted(self.total_iters, 'iteration')}): the learning rate reaches only "
                     f"{cfg.lr * self.total_iters / cfg.warmup_iters:g} of --lr {cfg.lr:g}; give --warmup-iters at "
                     f"most {self.total_iters} (0 for none), or a longer run")
        n_train = self.data.n_train
        if self._resumed_from is None and cfg.batch_size > n_train:
            # real batches are drawn with replacement, so a batch larger than the data runs (at its cost in memory
            # and time) but repeats images rather than adding any
            self.log(f"warning: --batch-size {cfg.batch_size} is larger than the training set ({n_train} "
                     f"{'image' if n_train == 1 else 'images'}"
                     + (f", {len(self.data.val_y)} held out for validation" if len(self.data.val_y) else "")
                     + "): batches are drawn with replacement, so a batch holds each image "
                     f"{cfg.batch_size / n_train:.3g} times on average (and costs that many times the memory and time "
                     f"of a batch of {n_train}), and an epoch (for --epochs and --decay-epochs) is 1 iteration; give "
                     f"--batch-size at most {n_train} (the paper's is 64)")
        # "finishing": past the final checkpoint, where a signal stops what is left at once (it only notes it before:
        # the loop stops at its next iteration); "writing": a record being written, which the stop waits for
        stop = {"signal": None, "finishing": False, "writing": False}

        def on_signal(signum, frame):
            if signum == signal.SIGINT and stop["signal"] == signal.SIGINT:
                # a second Ctrl-C: stop now, not after an iteration that may take minutes (a notebook's interrupt
                # button is all it has: the first was noted and the second did nothing, until a kernel restart);
                # during the optimiser's update, once the iteration is whole; during a record of the end's, once it
                # is written (then the end's stop follows)
                if self._updating or stop["writing"]:
                    stop["abort"] = True
                    return
                raise KeyboardInterrupt
            if stop["signal"] is None and signum == signal.SIGINT and self.dist.is_main:
                try:
                    print("\nSIGINT received: stopping at the end of the iteration under way, with a checkpoint "
                          "(Ctrl-C again to stop at once, without one)", file=sys.stderr, flush=True)
                except RuntimeError:  # stderr was being written when the signal came (a reentrant call)
                    pass
            stop["signal"] = signum
            if stop["finishing"] and not stop["writing"]:
                raise _StoppedAtTheEnd(signum)

        previous = {}

        def restore_handlers():
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            previous.clear()

        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                previous[sig] = signal.signal(sig, on_signal)
            except ValueError:  # not the main thread
                pass
        # a terminal gets a live bar; a log file (not a TTY) an update every 30 s instead of every redraw
        bar = progress_bar(total=self.total_iters, initial=self.iteration, unit="it", disable=not self.progress,
                           dynamic_ncols=True)
        t_window, it_window = time.perf_counter(), self.iteration
        log = self.log
        if self.progress:
            # lines logged during the loop (graph capture, recoveries) go above the live bar, not through it; warnings
            # to stderr, as console sends them
            def above_bar(*parts):
                line = " ".join(map(str, parts))
                if log is console:
                    bar.write(line, file=sys.stderr if line.startswith("warning:") else sys.stdout)
                else:  # a caller's own log (a sweep's): the bar is cleared while it writes, then drawn again
                    with type(bar).external_write_mode():
                        log(*parts)

            self.log = above_bar
        if self.best is not None:
            if cfg.keep_best and cfg.eval_every:
                # this leg compares its validations with best.pt again
                self.best = {k: v for k, v in self.best.items() if k != "kept_until"}
            elif "kept_until" not in self.best:
                # a resume that keeps no best.pt (--no-keep-best, --eval-every 0) leaves the earlier legs' as it was:
                # its record says after which iteration no validation was compared with it (checkpoints carry it on)
                self.best = {**self.best, "kept_until": self.iteration}
        if self.guard is not None and self.guard.snapshot is None:
            self._take_snapshot()
        stopping = ended = False
        deadline = time.monotonic() + 60 * cfg.max_minutes if cfg.max_minutes > 0 else math.inf
        try:
            while self.iteration < self.total_iters and not stopping:
                self.train_step()
                if stop.get("abort"):
                    raise KeyboardInterrupt  # a second Ctrl-C that came during the update
                it = self.iteration
                keep_due = bool(cfg.ckpt_keep_every) and it % cfg.ckpt_keep_every == 0
                ckpt_due = (bool(cfg.ckpt_every) and it % cfg.ckpt_every == 0) or keep_due
                on_grid = it % cfg.check_every == 0
                check_due = on_grid or ckpt_due or it == self.total_iters
                if time.monotonic() >= deadline and stop["signal"] is None:
                    stop["signal"] = "time limit"
                if self.dist.enabled:
                    # ranks stop together, at a check point: a lone rank would hang the others' all-reduce
                    if check_due:
                        stopping = self._agree_on_stop(stop)
                else:
                    stopping = stop["signal"] is not None
                if self.guard is not None and check_due:
                    unhealthy = not self.guard.healthy()
                    if self.dist.enabled:
                        unhealthy = any_rank(unhealthy, self.device)
                    if unhealthy:
                        self.recover()
                        _rewind(bar, self.iteration)
                        t_window, it_window = time.perf_counter(), self.iteration
                        continue
                    # on the --check-every grid only, not at the checks a checkpoint adds: where the guard rolls back
                    # must not follow --ckpt-every, which a resume may change
                    if on_grid and it - self.guard.snapshot["iteration"] >= cfg.snapshot_every:
                        self._take_snapshot()
                bar.update(1)
                if it % cfg.log_every == 0 or it == self.total_iters:
                    m = self.read_metrics()
                    if self.guard is not None and not math.isfinite(m["loss"]):
                        # a non-finite loss since the last check (a log line off the check grid): the flag holds it
                        # and the next check would roll it back, so roll back now rather than log it and end the run
                        self.guard.healthy()  # the reasons
                        self.recover()
                        _rewind(bar, self.iteration)
                        t_window, it_window = time.perf_counter(), self.iteration
                        continue
                    now = time.perf_counter()
                    m.update(iter=it, epoch=it / self.iters_per_epoch, it_per_s=(it - it_window) / (now - t_window),
                             lr=learning_rate(cfg, it - 1, self.iters_per_epoch) * self.recovery.lr_scale)
                    t_window, it_window = now, it
                    self._log_jsonl(m)
                    if self.board is not None:
                        self.board.scalars(it, m)
                    if not math.isfinite(m["loss"]):
                        raise DivergedError(
                            f"the loss became {m['loss']} at iteration {it} (training diverged). "
                            f"{self._last_good()}; restart with a lower --lr, more --sgld-steps or another --seed")
                    post = {"loss": f"{m['loss']:.3f}", "acc": f"{m['acc']:.3f}"}
                    if cfg.generative:
                        post["gap"] = f"{m['gap']:.3f}"
                    bar.set_postfix(post, refresh=False)
                if cfg.eval_every and it % cfg.eval_every == 0 and it < self.total_iters and len(self.data.val_y):
                    val = evaluate(self.model, self.data.val_x, self.data.val_y, noise=cfg.test_noise)
                    # a guard check due this iteration has run above and found the state healthy
                    kept = self.keep_if_best(it, val["acc"], checked=check_due)
                    self._log_jsonl({"iter": it, "val_acc": val["acc"], "val_nll": val["nll"], "best": kept})
                    self.history.append({"iter": it, "val_acc": val["acc"]})
                    if self.board is not None:
                        self.board.scalars(it, {"val_acc": val["acc"], "val_nll": val["nll"]})
                    if self.dist.is_main:  # rank 0 logs (tqdm.write prints even where the bar is disabled)
                        bar.write(f"iter {it}: val acc {val['acc']:.4f}" + (" (best so far: best.pt)" if kept else ""))
                if cfg.sample_every and it % cfg.sample_every == 0 and cfg.generative and self.dist.is_main:
                    self.save_samples(f"samples/samples_{it:07d}.png")
                if ckpt_due and it < self.total_iters:
                    path = self.save_checkpoint()
                    if keep_due:
                        self.keep_checkpoint(path)
            ended = True
        finally:
            bar.close()
            self.log = log
            if self.board is not None and (stopping or self.iteration < self.total_iters):
                self.board.close()  # stopped early (signal, error); a finished run closes it after the final records
            if not ended:  # an error: as before the loop
                restore_handlers()
        # a signal during the final validation and checkpoint waits for the checkpoint, then stops the run as one in
        # the loop does, where it ended the process with the last iterations unsaved (every rank goes through the
        # validation's and the checkpoint's collectives, the signal only noted; they agree on stopping after them)
        try:
            if self.guard is not None:
                unhealthy = not self.guard.healthy()
                if self.dist.enabled:
                    unhealthy = any_rank(unhealthy, self.device)
                if unhealthy and stopping:
                    # stopped between checks after a divergence: never write an unhealthy state over a good
                    # checkpoint. Recover as the next check would (the flag holds until a rollback): a bare rollback,
                    # without the remedy, resumed into the same divergence, and a run stopped before that check again
                    # (a job's time limit) went back each time and never got past it
                    self.recover()
                elif unhealthy:
                    self.guard.restore_snapshot()
                elif not stopping:
                    # a finished run's end, healthy, is its last checkpoint's rollback point: no rollback file is left
                    # beside it (a run extended from it rolls back there at most)
                    self._take_snapshot()
            final = None if stopping else self._final_validation()
            ckpt_path = self.save_checkpoint()
            # the end's only: the loop kept a stop's iteration as it trained it, and a rollback met by a stop (to the
            # start too) must not replace the copy kept of the state trained then
            if cfg.ckpt_keep_every and self.iteration == self.total_iters and self.iteration % cfg.ckpt_keep_every == 0:
                self.keep_checkpoint(ckpt_path)
            if not stopping:
                # every rank, for the same reason, where one alone got the signal: the others would finish the run
                # (and rank 0 write summary.json) while it stopped, with another exit status
                stopping = self._agree_on_stop(stop) if self.dist.enabled else stop["signal"] is not None
        except BaseException:
            restore_handlers()
            raise
        if stopping:
            # (a run that finishes keeps them through the end's outputs, below)
            restore_handlers()
            if stop["signal"] == "time limit":
                why = f"time limit of {cfg.max_minutes:g} min (--max-minutes) reached"
            else:
                why = (signal.Signals(stop["signal"]).name if stop["signal"] is not None else "a stop signal") + \
                      " received"
            kept = f", checkpoint written to {ckpt_path}" if self.checkpoint_kept else ""
            self.log(f"{why}: stopped after iteration {self.iteration}{kept}")
            if self.resume_hint:
                # quoted for a shell: a folder named with a space must not split the command copied from here
                self.log(f"resume with: {self.resume_hint.format(checkpoint=shlex.quote(str(ckpt_path)))}")
            by = stop["signal"] if stop["signal"] in (None, "time limit") else signal.Signals(stop["signal"]).name
            return {"interrupted": True, "stopped_by": by, "iteration": self.iteration, "checkpoint": str(ckpt_path)}
        # the handlers stay through the end's outputs: a signal there (the test evaluation can take minutes) stops
        # them at once, says what was not written and how to write it, and exits as a stopped run does, where it
        # ended the process with Python's own KeyboardInterrupt (or, for SIGTERM, silently)
        left = self._end_outputs()
        try:
            stop["finishing"] = True
            if stop["signal"] is not None:  # come since the agreement above, before the handler stopped at once
                raise _StoppedAtTheEnd(stop["signal"])
            return self._finish(ckpt_path, *final, left=left, stop=stop)
        except _StoppedAtTheEnd as err:
            if self.board is not None:
                self.board.close()
            name = signal.Signals(err.args[0]).name
            held = f"{ckpt_path} holds iteration {self.iteration}, saved" if self.checkpoint_kept else \
                f"iteration {self.iteration}"
            self.log(f"{name} received after the final checkpoint: {held}; not written: {', '.join(left)}")
            if self.resume_hint:
                # a run resumed at its end trains no further: it evaluates and writes the end's outputs
                self.log("write them with: " + self.resume_hint.format(checkpoint=shlex.quote(str(ckpt_path)))
                         + " (the run is at its last iteration: it trains no further)")
            return {"interrupted": True, "stopped_by": name, "iteration": self.iteration, "checkpoint": str(ckpt_path),
                    "not_written": list(left)}
        finally:
            stop["finishing"] = False
            restore_handlers()

    def _end_outputs(self) -> list[str]:
        """What a finished run writes after its final checkpoint, in order (those of rank 0 on rank 0 only)."""
        main = self.dist.is_main
        return [*([END_SAMPLES] if self.cfg.generative and main else []), END_TEST,
                *([END_CURVES, END_SUMMARY] if main else [])]

    def _agree_on_stop(self, stop: dict) -> bool:
        """Whether any rank got a stop (a signal, its time limit): every rank then stops, for the same reason, so
        that they exit alike; a collective call. ``stop["signal"]`` becomes the reason agreed: 0 go on, 1 the time
        limit, 2 + the largest signal number."""
        mine = stop["signal"]
        code = max_over_ranks(0 if mine is None else 1 if mine == "time limit" else 2 + int(mine), self.device)
        if code > 0:
            stop["signal"] = "time limit" if code == 1 else code - 2
        return code > 0

    def keep_if_best(self, it: int, val_acc: float, checked: bool = False) -> bool:
        """Write best.pt when ``val_acc`` beats every earlier validation of the run (ties keep the earlier state)
        and the state is healthy (``checked``: the guard has just found it so); True when written. A collective
        call under data parallelism."""
        if not (self.cfg.keep_best and self.cfg.eval_every):
            return False
        better = self.best is None or val_acc > self.best["val_acc"]
        if self.dist.enabled:
            better = any_rank(better, self.device)
        if not better:
            return False
        if self.guard is not None and not checked:
            # an unhealthy state is rolled back at the next check: it must not become best.pt either
            unhealthy = not self.guard.healthy()
            if self.dist.enabled:
                unhealthy = any_rank(unhealthy, self.device)
            if unhealthy:
                return False
        self.best = {"iter": it, "val_acc": val_acc}
        self.save_checkpoint("best.pt")
        return True

    def inject_fault(self, iteration: int, kind: str) -> None:
        """Testing hook: at ``iteration``, make the loss NaN ("nan") or the learning rate x1e6 ("lr"), once."""
        if kind not in ("nan", "lr"):
            raise ValueError("fault kind must be 'nan' or 'lr'")
        self._faults[iteration] = kind

    @_drawing
    def recover(self) -> None:
        """Roll back to the last good snapshot, reseed, and apply the next remedy; give up after max_recoveries."""
        cfg = self.cfg
        reasons = "; ".join(self.guard.reasons)
        at = self.iteration
        n = self.recovery.recoveries
        if n >= cfg.max_recoveries:
            self._log_jsonl({"event": "divergence", "iter": at, "reason": reasons, "action": "stop",
                             "recoveries": n})
            raise DivergedError(
                f"training diverged at iteration {at} ({reasons}) and {n} automatic recoveries did not hold "
                f"(--max-recoveries {cfg.max_recoveries}). {self._last_good()}. Try a lower --lr, more "
                "--sgld-steps, --energy-l2 0.1 or another --seed.")
        ladder = RecoveryState(**self.recovery.to_dict())
        back_to = self.guard.restore_snapshot()
        # a classifier-only run samples nothing and has no energy term: of the ladder only the learning rate acts on
        # it (with no such rung, a recovery is the rollback and the new seed alone)
        rungs = cfg.remedies if cfg.generative else tuple(r for r in cfg.remedies if r == "lr")
        rung = rungs[min(n, len(rungs) - 1)] if rungs else "reseed"
        if rung == "sgld_steps":
            ladder.sgld_steps *= 2
        elif rung == "lr":
            ladder.lr_scale *= 0.5
        elif rung == "energy_l2":
            ladder.energy_l2 = 0.1 if ladder.energy_l2 == 0 else 2 * ladder.energy_l2
        ladder.recoveries = n + 1
        self.recovery = ladder
        self.sampler.n_steps = ladder.sgld_steps  # no graph since the rollback's load_state dropped them
        # a new seed: the rolled-back run must not walk into the same divergence
        salt = 7919 * (n + 1)
        _seed_rng(cfg.seed + salt + 104_729 * self.dist.rank, self.device)  # each rank its own stream, as at the start
        self.sampler.rng_state[0] += salt
        self.buffer.rng_state[0] += salt
        # and new batches (the same on every rank): without them a run whose remedy leaves its computation alone (a
        # classifier-only run's SGLD steps or energy penalty) trained the abandoned attempt again, bit for bit
        self.data_gen.manual_seed(cfg.seed + salt)
        self._acc.zero_()
        self._acc_n = 0
        desc = (f"sgld_steps {ladder.sgld_steps}, lr x{ladder.lr_scale:g}, energy_l2 {ladder.energy_l2:g}"
                if cfg.generative else f"lr x{ladder.lr_scale:g}; a classifier-only run: no SGLD, no energy term")
        self.log(f"divergence at iteration {at}: {reasons}. Rolled back to iteration {back_to}, reseeded, remedy "
                 f"'{rung}' ({desc}); recovery {n + 1} of at most {cfg.max_recoveries}")
        self._log_jsonl({"event": "divergence", "iter": at, "reason": reasons, "action": "recover",
                         "rolled_back_to": back_to, "remedy": rung, **ladder.to_dict()})
        if self.board is not None:
            self.board.rewind(back_to + 1, f"divergence at iteration {at} ({reasons}): rolled back to iteration "
                                           f"{back_to}, remedy '{rung}' ({desc})")
        # the rolled-back state with its remedy and new seed is the good state now: a stop before the next snapshot
        # restores this, not the state before the remedy (which would resume into the same divergence)
        self._take_snapshot()
        if cfg.ckpt_every or cfg.ckpt_keep_every:
            # and checkpoint.pt holds it, in a run that writes checkpoints as it trains (kept ones are written into
            # checkpoint.pt too): a kill before the next checkpoint would otherwise resume the state that was just
            # abandoned, and walk into the divergence again without the remedy
            self.save_checkpoint()

    def _last_good(self) -> str:
        """Where a diverged run's last good state is, as a clause of its error."""
        latest = self.out_dir / "checkpoint.pt"
        if latest.exists():
            return f"The last good checkpoint is intact: {latest}"
        return "No checkpoint was written before it (nothing to resume)"

    def _final_validation(self) -> tuple[dict, bool]:
        """The end's validation and best.pt, (val, kept): taken before the last checkpoint is written, so that its
        record of best.pt names this state (a run extended from it, a larger --iters, must not replace best.pt with
        a worse one). --val-size 0: no validation accuracy (not 0), no best.pt."""
        if not len(self.data.val_y):
            return {"acc": None, "nll": None}, False
        val = evaluate(self.model, self.data.val_x, self.data.val_y, noise=self.cfg.test_noise)
        # fit() checked (or rolled back) last
        kept = self.keep_if_best(self.iteration, val["acc"], checked=True)
        # a run resumed at its end (killed after its last checkpoint) finds best.pt already this state
        return val, kept or (self.best is not None and self.best.get("iter") == self.iteration)

    def _finish(self, ckpt_path: Path, val: dict, kept: bool, left: list | None = None, stop: dict | None = None
                ) -> dict:
        """The end's outputs after the final checkpoint (``_end_outputs``); each one written is taken off ``left``.
        ``stop``: fit's signal state. A signal stops the computations (the test evaluation, best.pt's) at once; one
        that comes while an output is written (the sample grid and the end's record, the curves, summary.json) waits
        for it, so that no record is cut and ``left`` is exactly what was not written."""
        cfg = self.cfg
        self._finished = True
        left = self._end_outputs() if left is None else left

        def written(what: str) -> None:
            if what in left:
                left.remove(what)

        @contextlib.contextmanager
        def whole(then_stop: bool = True):
            if stop is None:
                yield
                return
            stop["writing"] = True
            try:
                yield
            finally:
                stop["writing"] = False
            if then_stop and stop["signal"] is not None:
                raise _StoppedAtTheEnd(stop["signal"])

        test = evaluate(self.model, self.data.test_x, self.data.test_y, noise=cfg.test_noise)
        validation = {"val_acc": val["acc"]} if val["acc"] is not None else {}
        samples = None
        with whole():
            # (before the board closes: the grid goes to TensorBoard too)
            if cfg.generative and self.dist.is_main:
                samples = self.save_samples("samples.png")
                written(END_SAMPLES)
            self._log_jsonl({"iter": self.iteration, **validation, "test_acc": test["acc"], "test_nll": test["nll"],
                             "best": kept})
            if self.board is not None:
                self.board.scalars(self.iteration, {**validation, **({"val_nll": val["nll"]} if validation else {}),
                                                    "test_acc": test["acc"], "test_nll": test["nll"]})
                self.board.close()
            written(END_TEST)
        curves = None
        if self.dist.is_main:
            # (a second or two: a signal waits for it, so that the list of what was not written is true)
            with whole():
                curves = self._plot_curves()
                written(END_CURVES)
        summary = {
            "iteration": self.iteration, "val_acc": val["acc"], "test_acc": test["acc"], "test_nll": test["nll"],
            "model": self.custom["model"].rsplit(".", 1)[-1] if self.custom["model"] else cfg.model_name,
            "checkpoint": str(ckpt_path), "metrics": str(self.out_dir / "metrics.jsonl"),
            "samples": str(samples) if samples else None, "device": str(self.device),
            "recoveries": self.recovery.recoveries, "curves": str(curves) if curves else None,
            "best": self._best_summary(test) if self.best is not None and self.dist.is_main else None,
            "tensorboard": str(self.out_dir / "tensorboard") if cfg.tensorboard else None,
        }
        if self.dist.is_main:
            # the last output: a signal during it comes too late to stop anything
            with whole(then_stop=False):
                atomic_write_text(strict_json(summary, indent=2), self.out_dir / "summary.json")
                written(END_SUMMARY)
        return summary

    def _best_summary(self, final_test: dict) -> dict | None:
        """best.pt's validation record and its test accuracy / NLL (the paper's model selection); None, with a
        warning, where best.pt cannot be read (a damaged or deleted file must not fail every end of the run)."""
        path = self.out_dir / "best.pt"
        if self.best["iter"] == self.iteration:
            test = final_test
        else:
            try:
                state = load_checkpoint(path)
            except CheckpointError as err:
                self.log(f"warning: the best validation state (iteration {self.best['iter']}) is not reported: "
                         f"{str(err).splitlines()[0]}. Move {path} away: a later, better validation writes a new one")
                return None
            model = copy.deepcopy(self.model)
            model.load_state_dict(state["model"])
            test = evaluate(model, self.data.test_x, self.data.test_y, noise=self.cfg.test_noise)
        return {**self.best, "test_acc": test["acc"], "test_nll": test["nll"], "checkpoint": str(path)}

    def _plot_curves(self) -> Path | None:
        """curves.png from metrics.jsonl; a figure that fails to draw costs a warning, never the run."""
        from fastjem.curves import plot_run

        try:
            return plot_run(self.out_dir)
        except Exception as err:  # noqa: BLE001 - matplotlib trouble must not lose a finished run
            self.log(f"warning: training curves not drawn: {type(err).__name__}: {err}")
            return None

    def _model_desc(self) -> str:
        n = sum(p.numel() for p in self.model.parameters())
        cfg = self.cfg
        count = f"{n / 1e6:.2f} M" if n >= 100_000 else f"{n:,}"
        if self.custom["model"]:
            return f"{self.custom['model'].rsplit('.', 1)[-1]} ({count} params)"
        return f"{cfg.model_name} norm={cfg.norm} ({count} params)"

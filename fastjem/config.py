"""Frozen training configuration and the named presets.

One flat dataclass: every field is one ``fastjem train`` option (the CLI is generated from
the fields and their ``help`` metadata), so a run is fully described by ``asdict(config)``,
which is what checkpoints store.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from dataclasses import asdict, dataclass, field, fields, replace

from fastjem.errors import ConfigError

DATASETS = ("digits", "cifar10", "cifar100", "svhn", "imagefolder")
# data given in Python: Trainer(cfg, data=fastjem.data.arrays_from_tensors(...)) records its run as this dataset
TENSORS = "tensors"
ARCHS = ("wrn", "convnet")
NORMS = ("none", "batch", "instance", "layer")
OPTIMIZERS = ("adam", "sgd")
DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("auto", "fp32", "tf32", "bf16")
KERNELS = ("auto", "triton", "reference")
COMPILE_MODES = ("auto", "on", "off")
BUFFER_INITS = ("uniform", "informative")
REMEDIES = ("sgld_steps", "lr", "energy_l2")  # the divergence guard's remedy ladder's rungs


def _opt(default, help, choices=None, group="training"):
    meta = {"help": help, "group": group}
    if choices is not None:
        meta["choices"] = choices
    if isinstance(default, (list, tuple)):
        return field(default=tuple(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class TrainConfig:
    # data
    dataset: str = _opt("digits", "dataset to train on (tensors: data given in Python, Trainer(cfg, data=...))",
                        (*DATASETS, TENSORS), "data")
    data_dir: str = _opt("", "where the dataset lives (torchvision layout, or class subfolders for "
                         "imagefolder); default ~/.cache/fastjem/data", group="data")
    download: bool = _opt(False, "download torchvision datasets into --data-dir when missing (needs internet)",
                          group="data")
    image_size: int = _opt(0, "resize images on load: shorter side to N pixels (antialiased), then a centre crop "
                           "to N x N; 0 = as stored (an image folder's images must then share one size)",
                           group="data")
    val_size: int = _opt(-1, "training images held out for validation with a fixed seed; -1 = dataset default "
                         "(5000 for CIFAR/SVHN, 180 for digits, a tenth of an image folder's training images, at "
                         "most 5000), 0 = none (no validation accuracy, no best.pt)", group="data")
    labels_per_class: int = _opt(-1, "labelled training images per class for semi-supervised training "
                                 "(the rest are used unlabelled in the p(x) term); -1 = all", group="data")
    augment: bool = _opt(True, "training augmentation on the device: reflect-pad + random crop (+ flip where the "
                         "dataset allows; digits' 8x8 images get neither); --data-noise is added either way",
                         group="data")
    data_noise: float = _opt(0.03, "std of the Gaussian noise added to training images in [-1, 1]", group="data")
    test_noise: float = _opt(0.0, "std of Gaussian noise added to test images at evaluation (the authors' "
                             "evaluation used 0.03)", group="data")
    # model
    arch: str = _opt("wrn", "network: wrn (Wide-ResNet) or convnet (small net for 8x8 / 28x28 inputs)", ARCHS,
                     "model")
    depth: int = _opt(28, "Wide-ResNet depth (6n+4)", group="model")
    width: int = _opt(10, "Wide-ResNet widen factor k, or the convnet's base channel count", group="model")
    norm: str = _opt("none", "normalisation layer", NORMS, "model")
    dropout: float = _opt(0.0, "dropout rate inside residual blocks (the convnet: after its second convolution)",
                          group="model")
    init_weights: str = _opt("", "start from the network weights of this checkpoint (e.g. a classifier-only "
                             "baseline to fine-tune as a JEM); optimiser, buffer and schedule start fresh",
                             group="model")
    # JEM objective
    px_weight: float = _opt(1.0, "weight of the generative log p(x) term; 0 trains the classifier alone",
                            group="objective")
    pyx_weight: float = _opt(1.0, "weight of the cross-entropy log p(y|x) term", group="objective")
    pxy_weight: float = _opt(0.0, "weight of the optional log p(x, y) term (class-conditional SGLD on E(x, y))",
                             group="objective")
    energy_l2: float = _opt(0.0, "weight of an L2 penalty on data and sample energies (a divergence remedy)",
                            group="objective")
    class_cond_px: bool = _opt(False, "draw p(x) samples class-conditionally from a buffer of K class blocks",
                               group="objective")
    # SGLD and the replay buffer
    sgld_steps: int = _opt(20, "SGLD steps per iteration (eta)", group="sampler")
    sgld_step_size: float = _opt(1.0, "SGLD step size alpha: x <- x - alpha dE/dx + sigma N(0, I)", group="sampler")
    sgld_noise: float = _opt(0.01, "SGLD noise std sigma", group="sampler")
    buffer_size: int = _opt(10000, "replay buffer size N", group="sampler")
    reinit_prob: float = _opt(0.05, "probability that a drawn chain restarts from U(-1, 1) (rho)", group="sampler")
    buffer_init: str = _opt("uniform", "where chains start and restart: uniform = U(-1, 1) (JEM); informative = a "
                            "Gaussian per class fitted to the labelled training images, clamped to [-1, 1] (JEM++, "
                            "Yang & Ji 2021), which needs far fewer --sgld-steps", BUFFER_INITS, "sampler")
    # optimisation
    optimizer: str = _opt("adam", "optimiser", OPTIMIZERS, "optim")
    lr: float = _opt(1e-4, "learning rate", group="optim")
    momentum: float = _opt(0.9, "SGD momentum", group="optim")
    weight_decay: float = _opt(0.0, "weight decay", group="optim")
    warmup_iters: int = _opt(1000, "linear learning-rate warm-up iterations", group="optim")
    decay_epochs: tuple = _opt((50, 100), "epochs at which the learning rate is multiplied by --decay-rate (the "
                               "log's start gives them in iterations, and names those past the run's end)",
                               group="optim")
    decay_rate: float = _opt(0.3, "learning-rate decay factor (0 is taken where no decay epoch falls inside the run)",
                             group="optim")
    batch_size: int = _opt(64, "batch size B (of each of x_p, x_lab and the SGLD batch)", group="optim")
    epochs: float = _opt(150.0, "training length in epochs (an epoch = training set size / batch size iterations); "
                         "read when --iters is -1 (the quick preset sets --iters 800)", group="optim")
    iters: int = _opt(-1, "training length in iterations; overrides --epochs when > 0", group="optim")
    # engine: how it is computed (never what)
    precision: str = _opt("auto", "network precision: bf16 autocast, tf32 or fp32 matmuls/convs; auto = bf16 where the "
                          "device computes it fast (CUDA tensor cores; a CPU with AMX-BF16, or with AVX512-BF16 where "
                          "a probe times bf16 convolutions at least 1.1x as fast as fp32), else fp32. Samples, "
                          "buffer and SGLD arithmetic are always fp32", PRECISIONS, "engine")
    compile: str = _opt("auto", "torch.compile: on, off, or auto = the network on CUDA; on a CPU the network stays "
                        "eager (compiled it measured slower) and each SGLD step's input gradient is compiled as one "
                        "graph where a step computes >= 1 GFLOP; --no-compile = off", COMPILE_MODES, "engine")
    cuda_graph: bool = _opt(True, "capture the SGLD loop in a CUDA graph (CUDA only; CPU runs the same loop eagerly)",
                            group="engine")
    iteration_graph: bool = _opt(True, "capture the whole iteration (data draw, augmentation, sampling, loss, "
                                 "backward, Adam, buffer write-back) in one CUDA graph, checked against the eager "
                                 "iteration once; CUDA, one process; else the same iteration runs eagerly",
                                 group="engine")
    kernels: str = _opt("auto", "fused ops: triton kernels, or their PyTorch references; auto = triton on CUDA",
                        KERNELS, "engine")
    fused_forward: bool = _opt(True, "one forward of [x_p, x_q, x_lab] for the loss instead of three (only without "
                               "batch norm, where it computes the same)", group="engine")
    overlap_data: bool = _opt(False, "compute the data half of the loss gradient (cross-entropy on x_lab, E(x_p)) on "
                              "a second CUDA stream while SGLD samples, then the samples' half: the gradient's two "
                              "parts summed, as the one backward sums them; needs no batch norm, no dropout and no "
                              "p(x, y) term; on CPU the same order on one stream", group="engine")
    cast_weights_once: bool = _opt(True, "under bf16: SGLD runs a copy of the network whose convolution and linear "
                                   "weights are cast to bf16 once per sampling call (refreshed from the trained "
                                   "weights), not by autocast at each of its forwards: the same bf16 values, fewer "
                                   "kernels; fp32 and tf32 cast nothing", group="engine")
    sgld_parts: int = _opt(0, "cut the SGLD batch into N blocks of rows, each its own chain on its own CUDA stream "
                           "(one graph), so one block's convolutions may fill the SMs another's leave idle: the same "
                           "chains and noise, the network's arithmetic on fewer rows; on CPU the blocks run one after "
                           "another; 1 = the whole batch; 0 = auto: on CUDA 2 where at least 10% of the network's "
                           "convolution time at this batch is in last waves of tiles that leave SMs idle (on an H100 "
                           "at batch 64, WRN-28-10: 18%, 5.5-8% faster in two blocks; WRN-16-8: 2%, 4.8% slower), "
                           "else 1; 1 off CUDA", group="engine")
    cpu_malloc: bool = _opt(True, "on a Linux CPU, keep freed memory in glibc's heap (mmap threshold 32 MB, trim "
                            "threshold 1 GB) so that activations are not page-faulted in afresh at every step; "
                            "process-wide", group="engine")
    # divergence guard
    guard: bool = _opt(True, "detect divergence on the device and recover automatically (roll back to the last "
                       "good snapshot, reseed, apply the next remedy)", group="guard")
    check_every: int = _opt(25, "read the divergence flag every N iterations (the only host sync it adds)",
                            group="guard")
    snapshot_every: int = _opt(250, "keep an in-memory snapshot of a healthy state at most every N iterations",
                               group="guard")
    max_recoveries: int = _opt(3, "stop with a report after this many recoveries", group="guard")
    energy_bound: float = _opt(1e4, "an energy of larger magnitude counts as divergence", group="guard")
    gap_bound: float = _opt(1e4, "a data/sample energy gap of larger magnitude counts as divergence", group="guard")
    buffer_margin: float = _opt(100.0, "replay-buffer energy this far above fresh U(-1, 1) noise's counts as "
                                "divergence (the paper's diagnosis)", group="guard")
    remedies: tuple = _opt(REMEDIES, "the remedy ladder, one rung per recovery (the last repeats): sgld_steps (x2), "
                           "lr (x0.5), energy_l2 (0.1, then x2); a classifier-only run climbs the lr rungs only",
                           group="guard")
    # run
    seed: int = _opt(1, "random seed", group="run")
    device: str = _opt("auto", "training device (auto = cuda when available)", DEVICES, "run")
    out_dir: str = _opt("", "output folder for checkpoint, metrics and samples; default runs/<preset>-<dataset>-<time>",
                        group="run")
    log_every: int = _opt(25, "read device metrics and update the progress bar every N iterations", group="run")
    eval_every: int = _opt(0, "validation accuracy every N iterations (0 = only at the end)", group="run")
    ckpt_every: int = _opt(500, "write the checkpoint every N iterations (and at the end; 0 = only at the end)",
                           group="run")
    sample_every: int = _opt(0, "write a sample grid PNG every N iterations (0 = only at the end)", group="run")
    max_minutes: float = _opt(0.0, "stop cleanly after this many minutes of training in this invocation (checkpoint "
                              "written, resume command printed), e.g. under a cluster job's time limit; 0 = no limit",
                              group="run")
    ckpt_keep_every: int = _opt(0, "also keep the checkpoint of every N-th iteration as checkpoints/iter_<N>.pt (a "
                                "copy of the checkpoint written then); 0 = keep only the latest",
                                group="run")
    tensorboard: bool = _opt(False, "also log scalars, validation and sample grids for TensorBoard in "
                             "<out-dir>/tensorboard/ (needs the tensorboard package)", group="run")
    keep_best: bool = _opt(True, "with --eval-every, keep the state of best validation accuracy in best.pt (a full "
                           "checkpoint: evaluate it, or resume it into another --out-dir)", group="run")
    preset: str = _opt("custom", "name of the preset this config started from (informational)", group="run")

    def __post_init__(self):
        # compile=True / False (the Python API's natural spelling) mean "on" / "off"
        if isinstance(self.compile, bool):
            object.__setattr__(self, "compile", "on" if self.compile else "off")
        # the Python API's other natural spellings, made the types config.json records: a list for a tuple, 1 for
        # 1.0, a NumPy number, a Path for a folder (any other type is refused by validate)
        for f in fields(self):
            value = getattr(self, f.name)
            kind = OPTION_TYPES[f.type]
            if kind is tuple and isinstance(value, (list, tuple)):
                value = tuple(_plain_number(v) for v in value)
            elif isinstance(value, bool) or type(value) is kind:
                continue
            elif kind is float and isinstance(value, numbers.Real):
                value = float(value)
            elif kind is int and isinstance(value, numbers.Integral):
                value = int(value)
            elif kind is str and isinstance(value, os.PathLike):
                value = os.fspath(value)
            object.__setattr__(self, f.name, value)

    def validate(self, new_run: bool = True, world: int = 1) -> TrainConfig:
        """Raise ConfigError naming the first bad option; return self. ``new_run`` False (the config of a run that
        exists: a resume, a converted checkpoint) leaves out the rules a run that started before them may break
        (the learning rate's and the seed's size, SGLD steps 0 in a JEM): it could not be continued otherwise,
        since a resume may not change them."""
        for f in fields(self):
            value = getattr(self, f.name)
            if not has_option_type(f, value):
                raise ConfigError(f"--{_flag(f.name)} must be {option_type_name(f)} (like {f.default!r}), got "
                                  f"{value!r} ({type(value).__name__})")
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"--{_flag(f.name)} must be a finite number, got {value}")
            choices = f.metadata.get("choices")
            if choices and value not in choices:
                raise ConfigError(f"--{_flag(f.name)} must be one of {', '.join(choices)}; got {value!r}")
        positive = ["batch_size", "buffer_size", "lr", "log_every", "width"]
        for name in positive:
            if getattr(self, name) <= 0:
                raise ConfigError(f"--{_flag(name)} must be > 0, got {getattr(self, name)}")
        non_negative = ["energy_l2", "sgld_steps", "sgld_step_size", "sgld_noise", "data_noise", "test_noise",
                        "px_weight", "pyx_weight", "pxy_weight", "weight_decay", "warmup_iters", "eval_every",
                        "ckpt_every", "sample_every", "ckpt_keep_every", "max_minutes", "momentum", "decay_rate",
                        "epochs", "image_size", "sgld_parts"]
        for name in non_negative:
            if getattr(self, name) < 0:
                raise ConfigError(f"--{_flag(name)} must be >= 0, got {getattr(self, name)}")
        for name in ("reinit_prob", "dropout"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"--{_flag(name)} must be in [0, 1], got {getattr(self, name)}")
        if self.dropout >= 1.0:
            raise ConfigError("--dropout must be < 1")
        if new_run:
            self._validate_new_run()
        if self.sgld_parts > self.batch_size:
            raise ConfigError(f"--sgld-parts {self.sgld_parts} is more than the batch size {self.batch_size}: a "
                              f"part needs at least one row")
        if self.iters == 0 or self.iters < -1:
            raise ConfigError(f"--iters must be > 0, or -1 for the length that --epochs gives; got {self.iters}")
        if self.epochs <= 0 and self.iters <= 0:
            raise ConfigError("set a training length: --epochs > 0 or --iters > 0")
        if self.pyx_weight == 0 and self.px_weight == 0 and self.pxy_weight == 0:
            raise ConfigError("all loss weights are 0: nothing to train")
        if self.arch == "wrn" and ((self.depth - 4) % 6 != 0 or self.depth < 10):
            raise ConfigError(f"--depth must be 6n+4 with n >= 1 (10, 16, 22, 28, ...), got {self.depth}")
        if self.batch_size % world or self.buffer_size % world:
            raise ConfigError(f"with {world} processes, --batch-size ({self.batch_size}, the global batch) and "
                              f"--buffer-size ({self.buffer_size}) must be divisible by {world}")
        if self.image_size:
            from fastjem.models import check_batch_norm_batch, check_image_size

            # before the data is read: torch refuses the norm only at the first forward (with batch norm, at a
            # process's share of the batch)
            check_image_size(self.arch, self.norm, self.image_size, width=self.width)
            check_batch_norm_batch(self.arch, self.norm, self.image_size, self.batch_size // world, world)
        if self.labels_per_class == 0 or self.labels_per_class < -1:
            raise ConfigError("--labels-per-class must be a positive count, or -1 for all labels")
        if self.val_size < -1:
            raise ConfigError("--val-size must be >= 0, or -1 for the dataset default")
        # a bound of 0 would call every healthy run diverged
        for name in ("check_every", "energy_bound", "gap_bound"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"--{_flag(name)} must be > 0, got {getattr(self, name)}")
        for name in ("snapshot_every", "max_recoveries", "buffer_margin"):
            if getattr(self, name) < 0:
                raise ConfigError(f"--{_flag(name)} must be >= 0, got {getattr(self, name)}")
        if not self.momentum < 1:
            raise ConfigError(f"--momentum must be in [0, 1), got {self.momentum}")
        unknown = [r for r in self.remedies if r not in REMEDIES]
        if unknown or not self.remedies:
            raise ConfigError(f"--remedies takes one or more of {', '.join(REMEDIES)}; got {list(self.remedies)}")
        if any(not isinstance(e, (int, float)) or not 0 <= e < math.inf for e in self.decay_epochs):
            raise ConfigError(f"--decay-epochs must be finite numbers >= 0, got {self.decay_epochs}")
        if self.dataset == "imagefolder" and not self.data_dir:
            raise ConfigError("--dataset imagefolder needs --data-dir pointing at a folder of class subfolders "
                              "(or with train/ and test/ subfolders of class folders)")
        return self

    def _validate_new_run(self) -> None:
        """The rules for a run about to start (validate's new_run)."""
        if self.lr > MAX_LR:
            raise ConfigError(f"--lr must be at most {MAX_LR:g}, got {self.lr:g}: a step that large throws every "
                              "weight far past its scale (a minus sign dropped? 1e3 for 1e-3)")
        if not -SEED_LIMIT < self.seed < SEED_LIMIT:
            raise ConfigError(f"--seed must be between -{SEED_LIMIT - 1} and {SEED_LIMIT - 1}, got {self.seed}: the "
                              "sampler's and the buffer's seeds are derived from it in 64 bits")
        if self.generative and self.sgld_steps == 0:
            raise ConfigError("--sgld-steps 0 never moves the chains: the p(x) term would compare the data with the "
                              "buffer's starting noise, not with samples of the model; give --sgld-steps >= 1 (the "
                              "paper's 20), or --classifier-only to train without sampling")

    @property
    def model_name(self) -> str:
        """WRN-<depth>-<width> or ConvNet(width <w>): how logs and results name the network."""
        return f"WRN-{self.depth}-{self.width}" if self.arch == "wrn" else f"ConvNet(width {self.width})"

    @property
    def generative(self) -> bool:
        """Whether this run samples at all (False for the classifier-only baseline)."""
        return self.px_weight > 0 or self.pxy_weight > 0

    def __repr__(self) -> str:
        """As code that makes it again (``from fastjem import PRESETS, TrainConfig``), with only what differs: from
        the preset it started from, ``PRESETS['quick'].replace(iters=200)``, else ``TrainConfig(lr=0.001, ...)``
        (the dataclass's repr listed all 60 options, which a notebook cell wrapped over a screen)."""
        base = PRESETS.get(self.preset)
        start = f"PRESETS[{self.preset!r}].replace" if base is not None else "TrainConfig"
        changed = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)
                            if getattr(self, f.name) != (getattr(base, f.name) if base is not None else f.default))
        if base is not None and not changed:
            return f"PRESETS[{self.preset!r}]"
        return f"{start}({changed})"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"unknown config keys: {', '.join(unknown)}")
        return cls(**d)  # JSON's lists become tuples in __post_init__

    def replace(self, **changes) -> TrainConfig:
        return replace(self, **changes)


def _flag(name: str) -> str:
    return name.replace("_", "-")


# a learning rate above this is a typo (1e3 for 1e-3): Adam moves each weight by about lr a step (and past ~3e37
# its step does not fit in fp32)
MAX_LR = 10.0
# seeds of either sign below 2**40: the sampler's and the buffer's (seed x 1000003 + ...) stay within 64 bits
SEED_LIMIT = 2**40

# a TrainConfig field's annotation (a string: annotations are postponed) -> its type
OPTION_TYPES = {"int": int, "float": float, "bool": bool, "str": str, "tuple": tuple}


def _plain_number(v):
    """A NumPy number as the Python int or float it is (anything else as it is)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or type(v) in (int, float):
        return v
    return int(v) if isinstance(v, numbers.Integral) else float(v)


def has_option_type(f, value) -> bool:
    """Whether ``value`` has the type of TrainConfig field ``f`` exactly (True is no int, 1 no float): what
    validate and --config files accept. A tuple's elements: names for --remedies, numbers for --decay-epochs."""
    kind = OPTION_TYPES[f.type]
    if type(value) is not kind:
        return False
    if kind is tuple:
        element = str if isinstance(f.default[0], str) else (int, float)
        return all(isinstance(v, element) and not isinstance(v, bool) for v in value)
    return True


def option_type_name(f) -> str:
    """The type a TrainConfig field takes, as its type errors name it ('int', 'tuple of numbers')."""
    if f.type != "tuple":
        return f.type
    return f"tuple of {'names' if isinstance(f.default[0], str) else 'numbers'}"


# Model fields that must match for a checkpoint to load into a network.
ARCH_FIELDS = ("arch", "depth", "width", "norm", "dataset", "image_size")

PRESETS: dict[str, TrainConfig] = {
    # About a minute and a quarter on 2 CPU cores: digits (8x8), a small conv net, the paper's sampler settings. Not
    # compiled, on any device: building the graphs costs more than 800 tiny iterations save.
    "quick": TrainConfig(
        dataset="digits", arch="convnet", width=16, norm="none", batch_size=64, iters=800,
        warmup_iters=100, lr=1e-3, decay_epochs=(30, 38), sgld_steps=20, buffer_size=2000, log_every=25,
        ckpt_every=200, compile="off",
        data_noise=0.03, preset="quick",
    ),
    # Table 4 of Grathwohl et al. (2020): WRN-28-10, no norm, Adam 1e-4, warm-up 1000, decay x0.3 at 50/100,
    # 150 epochs, SGLD 20 steps alpha=1 sigma=0.01, buffer 10000, rho=0.05.
    "paper": TrainConfig(
        dataset="cifar10", arch="wrn", depth=28, width=10, norm="none", dropout=0.0, batch_size=64,
        epochs=150.0, lr=1e-4, warmup_iters=1000, decay_epochs=(50, 100), decay_rate=0.3, sgld_steps=20,
        sgld_step_size=1.0, sgld_noise=0.01, buffer_size=10000, reinit_prob=0.05, ckpt_every=2000, log_every=50,
        eval_every=2000, sample_every=2000, preset="paper",
    ),
}


def options_from_file(path) -> dict:
    """The options a config file sets, checked: a JSON object of option names (a run's config.json, or any subset),
    a run folder (its config.json) or a checkpoint (its config). ``out_dir`` is left out: a new run gets its own
    folder. ConfigError names what is wrong and where."""
    from pathlib import Path

    p = Path(path)
    if p.is_dir():
        if not (p / "config.json").exists():
            raise ConfigError(f"--config {p}: a folder without config.json (give a run folder, a config.json or a "
                              "checkpoint)")
        p = p / "config.json"
    if not p.exists():
        raise ConfigError(f"--config {p} does not exist")
    if p.suffix == ".pt":
        from fastjem.checkpoint import load_checkpoint

        data = load_checkpoint(p)["config"]
    else:
        try:
            data = json.loads(p.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise ConfigError(f"--config {p} is not a JSON file ({type(err).__name__}: {err}); write it as "
                              "`fastjem train ... --print-config` does") from err
    if not isinstance(data, dict):
        raise ConfigError(f"--config {p} must hold a JSON object of options, like `fastjem train --print-config` "
                          f"prints; it holds a {type(data).__name__}")
    by_name = {f.name: f for f in fields(TrainConfig)}
    unknown = sorted(set(data) - set(by_name))
    if unknown:
        raise ConfigError(f"--config {p}: unknown options {', '.join(unknown)} (`fastjem train --help` lists them; "
                          "names are written with underscores, as in config.json)")
    options = {}
    for name, value in data.items():
        f = by_name[name]
        kind = OPTION_TYPES[f.type]
        if kind is tuple and isinstance(value, list):
            value = tuple(value)
        elif kind is float and type(value) is int:
            value = float(value)
        if not has_option_type(f, value):
            raise ConfigError(f"--config {p}: {name} must be {option_type_name(f)} (like {json.dumps(f.default)}), "
                              f"got {json.dumps(value)}")
        if kind is float and not math.isfinite(value):
            raise ConfigError(f"--config {p}: {name} must be a finite number, got {value}")
        options[name] = value
    options.pop("out_dir", None)
    return options


# the options only a run that samples reads: a classifier-only run (px and pxy weights 0) has no sampler or buffer
SAMPLER_OPTIONS = ("sgld_steps", "sgld_step_size", "sgld_noise", "buffer_size", "reinit_prob", "buffer_init",
                   "class_cond_px", "sgld_parts", "buffer_margin")


def unread_options(cfg: TrainConfig, given, varied=(), changed=None, resumed: bool = False
                   ) -> tuple[list[str], list[str]]:
    """Of the options ``given`` on purpose (command-line flags, a sweep's grid), those ``cfg`` never reads, as
    (refused, warned): each '--flag value: why, and what to do'. ``changed``: those of them set to another value
    than they had anyway (default: all given), of which the sampler options a classifier-only run does not read are
    said (--classifier-only --sgld-steps 20 changes nothing). ``varied``: the options a sweep's grid sets per run,
    whose values are not known here (a rule that depends on one is left to the runs). Refused where what the user
    meant is lost (--epochs beside the quick preset's --iters trained 800 iterations; --data-dir beside digits);
    a classifier-only run's sampler options are only said (the same options with --classifier-only is how a
    baseline is made), unless a grid varies them (combinations that would all train alike). ``resumed``: ``cfg`` is
    a saved run's config with the options a resume may change applied, and the advice is what a resume can do."""
    def flags(names):
        # each with the value given (a grid's values are its runs')
        values = [None if n in varied else getattr(cfg, n) for n in names]
        return ", ".join(f"--{_flag(n)}" + ("" if v is None or isinstance(v, bool) else f" {v:g}"
                                             if isinstance(v, float) else f" {v}") for n, v in zip(names, values))

    refused, warned = [], []
    unread = [n for n in SAMPLER_OPTIONS if n in (given if changed is None else changed)]
    if not cfg.generative and unread and not {"px_weight", "pxy_weight"} & set(varied):
        (refused if set(unread) & set(varied) else warned).append(
            f"{flags(unread)}: this run never samples (it trains the classifier alone: --px-weight and --pxy-weight "
            f"0, or --classifier-only), so nothing reads {'it' if len(unread) == 1 else 'them'}")
    if "epochs" in given and cfg.iters > 0 and "iters" not in varied:
        preset = PRESETS.get(cfg.preset)
        from_preset = "iters" not in given and preset is not None and preset.iters == cfg.iters
        whose = f" (the {cfg.preset} preset's)" if from_preset else ""
        refused.append(f"{flags(['epochs'])}: this run's length is --iters {cfg.iters}{whose}, which overrides "
                       "--epochs; add --iters -1 to train for --epochs, or drop --epochs")
    if "eval_every" in given and cfg.eval_every > 0 and cfg.val_size == 0 and "val_size" not in varied:
        if resumed:  # (the held-out split is fixed when a run starts)
            refused.append(f"{flags(['eval_every'])}: this run was started with --val-size 0, no training images held "
                           "out to validate on, which a resume cannot change; drop --eval-every (the end reports the "
                           "test accuracy), or start a new run with --val-size > 0 (--init-weights CHECKPOINT to "
                           "begin from this one's network)")
        else:
            refused.append(f"{flags(['eval_every'])}: --val-size 0 holds no training images out to validate on; give "
                           "--val-size > 0 (or -1 for the dataset's default), or drop --eval-every")
    unread = [n for n in ("data_dir", "download") if n in given]
    if cfg.dataset == "digits" and unread and "dataset" not in varied:
        them = "it" if len(unread) == 1 else "them"
        refused.append(f"{flags(unread)}: --dataset digits is scikit-learn's, built in, and reads no files; "
                       + (f"this run trains on it: drop {them}" if resumed else "give --dataset cifar10, cifar100, "
                          f"svhn or imagefolder for data of your own, or drop {them}"))
    return refused, warned


def get_preset(name: str) -> TrainConfig:
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}")
    return PRESETS[name]

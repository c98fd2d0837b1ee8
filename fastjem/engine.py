"""The engine: how an iteration is computed (precision, compilation, CUDA graphs, kernels), never what.

``resolve_engine`` turns the config's requests into what this device can do; every option that
the hardware cannot honour falls back to the same code path, with one log line naming what was
turned off and why.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import math
import os
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from fastjem.checkpoint import atomic_write_text
from fastjem.config import TrainConfig
from fastjem.data import cache_dir
from fastjem.distributed import max_over_ranks
from fastjem.errors import error_line
from fastjem.sampler import SGLD, EnergyFn, InputGrad, compiled_input_grad, eval_mode, row_energies
from fastjem.weights import CastCopy, sampling_network


def cpu_bf16_flags() -> list[str]:
    """The CPU's bf16 matrix/vector extensions (Linux /proc/cpuinfo): amx_bf16, avx512_bf16."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return sorted(flags & {"amx_bf16", "avx512_bf16"})
    except OSError:
        pass
    return []


# glibc mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
CPU_MALLOC = {M_MMAP_THRESHOLD: 32 << 20, M_TRIM_THRESHOLD: 1 << 30, M_TOP_PAD: 64 << 20}


def _glibc():
    """glibc through ctypes, or (None, why not)."""
    import ctypes
    import platform

    if platform.system() != "Linux":
        return None, f"not Linux ({platform.system()})"
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None, "no libc.so.6"
    # glibc only: other C libraries' mallopt takes other parameters
    if not hasattr(libc, "gnu_get_libc_version"):
        return None, "the C library is not glibc"
    return libc, ""


def cpu_malloc_available() -> tuple[bool, str]:
    libc, why = _glibc()
    return libc is not None, why


def tune_cpu_malloc() -> bool:
    """Keep freed memory in glibc's heap; True when applied.

    By default glibc serves blocks above a (dynamic) threshold with fresh mmap pages and trims freed
    memory back to the OS, so the megabyte-sized activations of every forward/backward are page-faulted
    in again at every SGLD step. Raising the mmap threshold (to its 32 MB maximum) and the trim threshold
    keeps them in the heap for reuse. Process-wide and not undone; it changes where memory comes from,
    never a value.
    """
    libc, _ = _glibc()
    return libc is not None and all(libc.mallopt(param, value) == 1 for param, value in CPU_MALLOC.items())


def cpu_model() -> str:
    """The CPU's model name (Linux /proc/cpuinfo), else what the platform module knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def device_name(device: torch.device) -> str:
    """The GPU's name on CUDA, else the CPU's model name: how logs and results name the device."""
    return torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_model()


# precision auto takes bf16 on a CPU with AVX512-BF16 and no AMX where the probe's bf16 step is at least this much
# faster than its fp32 one. Timed by fastjem bench (bench/results/cpu-bf16/): an AMD EPYC (Zen 4) ran SGLD 1.22-2.13x
# as fast in bf16, an Intel Xeon 1.1-1.7x slower; the margin keeps a CPU near parity on fp32, the exact precision.
BF16_PROBE_SPEEDUP = 1.1
# the probe: WRN-10-2's middle stage at the CPU benchmark's batch (16 x 64 channels x 16 x 16, 3x3 convolutions)
BF16_PROBE_SHAPE = (16, 64, 16, 16)


def bf16_probe_step(x: torch.Tensor, weights: list[torch.Tensor], bf16: bool) -> torch.Tensor:
    """What an SGLD step computes, in small: the input gradient of conv -> LeakyReLU(0.2) -> conv, summed, channels
    last, the weights frozen; under bf16 autocast with weights already bf16 (as the engine casts them once)."""
    x = x.detach().requires_grad_(True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        h = F.leaky_relu(F.conv2d(x, weights[0], padding=1), 0.2)
        out = F.conv2d(h, weights[1], padding=1).float().sum()
    return torch.autograd.grad(out, x)[0]


def time_bf16_probe(rounds: int = 5, reps: int = 3) -> tuple[float, float]:
    """Milliseconds per probe step in fp32 and in bf16 on this CPU (medians of ``rounds`` alternated rounds of
    ``reps`` steps, after one of each to build oneDNN's kernels). Draws from its own generator, not the global one;
    takes gradients whatever mode the caller is in (an engine may be resolved under no_grad or inference_mode)."""
    gen = torch.Generator().manual_seed(0)
    channels = BF16_PROBE_SHAPE[1]
    times = {False: [], True: []}
    with torch.inference_mode(False), torch.enable_grad():
        x = torch.randn(BF16_PROBE_SHAPE, generator=gen).to(memory_format=torch.channels_last)
        fp32 = [(torch.randn(channels, channels, 3, 3, generator=gen) / (3 * channels ** 0.5))
                .to(memory_format=torch.channels_last) for _ in range(2)]
        weights = {False: fp32, True: [w.to(torch.bfloat16) for w in fp32]}
        for bf16 in (False, True):
            bf16_probe_step(x, weights[bf16], bf16)
        for _ in range(rounds):
            for bf16 in (False, True):
                start = time.perf_counter()
                for _ in range(reps):
                    bf16_probe_step(x, weights[bf16], bf16)
                times[bf16].append((time.perf_counter() - start) * 1e3 / reps)
    return statistics.median(times[False]), statistics.median(times[True])


# the probe is kept only where other work took at most this many cores beyond those its threads left free: timed
# beside a busy process on 2 cores, an AMD EPYC's bf16 step came out x0.94 the speed of fp32 (x1.7 timed alone), and
# the cached answer made that machine train in fp32 from then on
PROBE_OTHER_CORES = 0.5


class BF16Probe(NamedTuple):
    """What ``cpu_bf16_probe`` found: ms per probe step in fp32 and in bf16, where the figures came from (for the
    log), and whether they are steady: cached, or timed on cores no other work shared (a busy machine's are not)."""

    fp32_ms: float
    bf16_ms: float
    where: str
    steady: bool = True


def busy_cpu_seconds(cpus: set[int] | None = None) -> float | None:
    """CPU time that every process has taken so far on ``cpus`` (all of the machine's: None), in seconds, a
    hypervisor's steal included (Linux /proc/stat); None where it cannot be read."""
    ticks = 0
    try:
        with open("/proc/stat") as f:
            for line in f:
                name, *fields = line.split() or [""]
                if not name.startswith("cpu"):
                    break  # past the CPUs' lines, which come first
                if name != "cpu" and (cpus is None or int(name[3:]) in cpus):  # ("cpu": the machine's sum)
                    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[:8])
                    ticks += user + nice + system + irq + softirq + steal
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None


def usable_cpus() -> set[int] | None:
    """The CPUs this process may run on (its affinity: a cpuset, taskset, a batch system's cores); None where the
    system does not say."""
    with contextlib.suppress(AttributeError, OSError):
        return set(os.sched_getaffinity(0))
    return None


@contextlib.contextmanager
def other_cpu_load(cpus: set[int] | None = None) -> Iterator[dict]:
    """``load["cores"]``, set as the block ends: the cores' worth of CPU time that other processes (and steal) took
    on ``cpus`` (all: None) while it ran, their busy time less this process's; None where it is unknown."""
    load: dict = {"cores": None}
    start, own, machine = time.monotonic(), time.process_time(), busy_cpu_seconds(cpus)
    yield load
    wall, own, after = time.monotonic() - start, time.process_time() - own, busy_cpu_seconds(cpus)
    if machine is not None and after is not None and wall > 0:
        load["cores"] = max(0.0, (after - machine - own) / wall)


def bf16_probe_key(threads: int) -> str:
    """The probe cache's entry for this CPU model, its bf16 flags, torch's version and ``threads`` threads."""
    return f"{cpu_model()} | {' '.join(cpu_bf16_flags())} | torch {torch.__version__} | {threads} threads"


def cpu_bf16_probe() -> BF16Probe:
    """fp32 and bf16 ms of the probe step on this CPU, and where they came from: the cache file (one entry per CPU
    model, bf16 flags, torch version and thread count, so that a machine keeps the precision it picked), else timed
    now and written there, unless other work shared the CPU while it was timed (``PROBE_OTHER_CORES``): such a
    timing is not steady, nor kept (``fast_bf16`` takes fp32 for it), and the next run times it again."""
    path = cache_dir() / "cpu-bf16-probe.json"
    threads = torch.get_num_threads()
    key = bf16_probe_key(threads)
    known = {}
    with contextlib.suppress(OSError, ValueError):
        known = json.loads(path.read_text())
    known = known if isinstance(known, dict) else {}  # a file that is not ours is timed over
    entry = known.get(key)
    with contextlib.suppress(TypeError, KeyError, ValueError):
        fp32_ms, bf16_ms = float(entry["fp32_ms"]), float(entry["bf16_ms"])
        # (an entry without other_cores was written before the probe measured the machine's other work: timed over)
        if min(fp32_ms, bf16_ms) > 0 and math.isfinite(fp32_ms + bf16_ms) and "other_cores" in entry:
            return BF16Probe(fp32_ms, bf16_ms, f"probe cached in {path}")
    # the other work that matters is on the cores this process may run on (a pinned job's: its own)
    cpus = usable_cpus()
    with other_cpu_load(cpus) as load:
        fp32_ms, bf16_ms = time_bf16_probe()
    others, cores = load["cores"], len(cpus) if cpus else os.cpu_count() or 1
    if others is not None and others > max(0, cores - threads) + PROBE_OTHER_CORES:
        return BF16Probe(fp32_ms, bf16_ms, f"probe timed now while other work took {others:.1f} of the {cores} cores "
                         "it may run on, not cached: the next run times it again", steady=False)
    known[key] = {"fp32_ms": fp32_ms, "bf16_ms": bf16_ms, "shape": list(BF16_PROBE_SHAPE), "other_cores": others,
                  "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    try:
        atomic_write_text(json.dumps(known, indent=1) + "\n", path)
        where = f"probe timed now, cached in {path}"
    except OSError as err:
        where = f"probe timed now, not cached ({err.strerror}: {path})"
    return BF16Probe(fp32_ms, bf16_ms, where)


def fast_bf16(device: torch.device) -> tuple[bool, str]:
    """Whether ``device`` computes bf16 convolutions fast, and why (for the log).

    CUDA: tensor cores (compute capability >= 8). CPU: AMX-BF16; with AVX512-BF16 alone, where oneDNN's bf16
    convolutions are faster than its fp32 ones on this CPU, which differs by maker (``cpu_bf16_probe`` times it)."""
    if os.environ.get("FASTJEM_ASSUME_NO_BF16"):
        return False, "FASTJEM_ASSUME_NO_BF16 is set"
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        if major >= 8:
            return True, f"CUDA compute capability {major}.{minor} has bf16 tensor cores"
        return False, f"CUDA compute capability {major}.{minor} has no bf16 tensor cores"
    if device.type == "cpu":
        flags = cpu_bf16_flags()
        if not torch.backends.mkldnn.is_available():
            return False, "torch was built without oneDNN, whose kernels are the CPU's bf16 fast path"
        if "amx_bf16" in flags:
            return True, "CPU has AMX-BF16 (amx_bf16)"
        if "avx512_bf16" in flags:
            fp32_ms, bf16_ms, where, steady = cpu_bf16_probe()
            timed = (f"a bf16 convolution step ran x{fp32_ms / bf16_ms:.2f} the speed of fp32 here ({bf16_ms:.2f} "
                     f"against {fp32_ms:.2f} ms; {where})")
            if not steady:
                # a timing that other work distorted, either way: the exact precision, the same at every such run
                return False, (f"CPU has AVX512-BF16 but no AMX, and {timed}: fp32 where the timing cannot be "
                               "trusted (--precision bf16 forces bf16)")
            if fp32_ms >= BF16_PROBE_SPEEDUP * bf16_ms:
                return True, f"CPU has AVX512-BF16 (no AMX), and {timed}"
            return False, (f"CPU has AVX512-BF16 but no AMX, and {timed}, under the x{BF16_PROBE_SPEEDUP} "
                           "where bf16 pays (--precision bf16 forces it)")
        return False, "CPU has neither AMX-BF16 nor AVX512-BF16"
    return False, f"no bf16 fast path known for {device.type}"


def backend_flags() -> tuple[bool, bool, bool]:
    """torch's process-wide CUDA math flags an engine sets: TF32 matmuls, TF32 cuDNN convolutions, cuDNN
    autotuning (plain settings, readable and settable without a GPU)."""
    return torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark


def set_backend_flags(flags: tuple[bool, bool, bool]) -> None:
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark = flags


@dataclass(frozen=True)
class Engine:
    """The resolved engine for one device. ``notes`` are the log lines about fallbacks."""

    device: torch.device
    precision: str  # fp32 | tf32 | bf16
    compile: bool
    cuda_graph: bool
    kernels: str  # triton | reference
    fused_forward: bool
    notes: tuple[str, ...] = field(default=())
    iteration_graph: bool = False
    cpu_malloc: bool = False
    overlap_data: bool = False
    cast_weights_once: bool = False  # SGLD on a copy with the autocast-cast weights cast once per call
    sgld_parts: int = 1  # SGLD's batch as independent blocks of rows, each on its own CUDA stream
    compile_sgld: bool = False  # on a CPU: each SGLD step compiled, its input gradient (torch.func.grad) and update

    def autocast(self) -> contextlib.AbstractContextManager:
        """bf16 autocast for the network when the precision is bf16; a no-op otherwise."""
        if self.precision == "bf16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def cuda_flags(self) -> tuple[bool, bool, bool] | None:
        """The ``backend_flags`` this engine runs under on CUDA (None on a CPU): TF32 only when asked for ("fp32"
        convs are otherwise TF32 by default in cuDNN), and cuDNN autotuning, since every shape is static (it picks
        among algorithms that compute the same convolution)."""
        if self.device.type != "cuda":
            return None
        allow = self.precision == "tf32"
        return allow, allow, True

    def apply_backend_flags(self) -> None:
        """On CUDA: ``cuda_flags``, set process-wide (``Trainer`` keeps them to its own calls). On a CPU: glibc's
        heap thresholds (``tune_cpu_malloc``) when the engine has them."""
        flags = self.cuda_flags()
        if flags is not None:
            set_backend_flags(flags)
        if self.cpu_malloc:
            tune_cpu_malloc()

    def describe(self) -> str:
        graph = "iteration" if self.iteration_graph else ("SGLD loop" if self.cuda_graph else "off")
        # a CPU engine may compile its SGLD step and leave the network eager
        compiled = "on" if self.compile else ("SGLD step only" if self.compile_sgld else "off")
        return (f"precision {self.precision}, compile {compiled}, CUDA graph "
                f"{graph}, kernels {self.kernels}, fused forward "
                f"{'on' if self.fused_forward else 'off'}" + (", data gradient overlapped" if self.overlap_data else "")
                + (", SGLD weights cast once" if self.cast_weights_once else "")
                + (f", SGLD in {self.sgld_parts} parts" if self.sgld_parts > 1 else "")
                + (", CPU malloc tuned" if self.cpu_malloc else ""))


def compile_available(device: torch.device) -> tuple[bool, str]:
    """torch.compile needs a working inductor backend: a C++ compiler on CPU, triton on CUDA."""
    if device.type == "cuda":
        try:
            import triton  # noqa: F401
        except ImportError:
            return False, "triton is not installed"
        return True, ""
    import shutil

    if not (shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")):
        return False, "no C++ compiler found for inductor's CPU backend"
    return True, ""


# under --compile auto a CPU compiles the SGLD gradient where one step (all chains) computes at least this many
# convolution FLOPs: WRN-10-2 at batch 16 computes 4.7 G, and its compiled gradient took 1.5 s to compile and saved
# 1.7 ms a step (bench/results/cpu-compile-2026-11-27T214739-Intel-R-Xeon-R-Processor.json), paid back within
# about a thousand steps; the small networks of the digits presets (well under 1 G) would spend more compiling
SGLD_COMPILE_FLOPS = 1e9

# cuDNN's implicit-GEMM tile (output pixels x output channels) in the H100 profile of WRN-28-10's SGLD step
GEMM_TILE = (256, 64)
# auto splits SGLD in two where at least this share of the convolutions' time is spent in partly idle last waves
SPLIT_TAIL = 0.10


@dataclass(frozen=True)
class ConvLayer:
    """One convolution as the GPU's tiles see it, per sample: output pixels, output channels, FLOPs."""

    pixels: int
    channels: int
    flops: int


def conv_layers(model: torch.nn.Module, sample_shape: tuple[int, ...]) -> list[ConvLayer]:
    """The network's 2-d convolutions, from one forward of a zero sample (no gradient, eval mode, the mode
    restored after; nothing the network keeps changes)."""
    layers = []

    def record(conv, _inputs, out):
        k = conv.kernel_size[0] * conv.kernel_size[1] * conv.in_channels // conv.groups
        pixels = out.shape[2] * out.shape[3]
        layers.append(ConvLayer(pixels, out.shape[1], 2 * k * out.shape[1] * pixels))

    hooks = [m.register_forward_hook(record) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    training = model.training
    param = next(model.parameters(), None)
    x = torch.zeros(1, *sample_shape, device=param.device if param is not None else "cpu")
    try:
        model.eval()
        with torch.no_grad():
            model(x)
    finally:
        model.train(training)
        for h in hooks:
            h.remove()
    return layers


def wave_tail(layers: list[ConvLayer], batch: int, sms: int) -> float:
    """The share of the convolutions' time (their FLOPs as weights) spent in last waves of tiles that leave SMs
    idle, at ``batch`` rows on ``sms`` SMs: what a second block of rows, on its own stream, could fill. A layer
    of fewer tiles than SMs is one wave either way: splitting it only halves its tiles."""
    total = sum(layer.flops for layer in layers)
    if total == 0:
        return 0.0
    rows, cols = GEMM_TILE
    idle = 0.0
    for layer in layers:
        waves = -(-batch * layer.pixels // rows) * -(-layer.channels // cols) / sms
        idle += layer.flops * (1 - max(waves, 1.0) / math.ceil(waves))
    return idle / total


def auto_sgld_parts(device: torch.device, layers: list[ConvLayer] | None = None, batch: int = 0,
                    sms: int = 0) -> int:
    """``--sgld-parts 0`` (auto). On CUDA: two blocks of rows where the convolutions' partly idle last waves of
    tiles are at least ``SPLIT_TAIL`` of their time (``wave_tail``), which the other block's convolutions fill;
    one otherwise, where the split costs more than it fills. Measured on an H100 at batch 64: WRN-28-10 (18%
    in last waves) trained 5.5-8% faster in two blocks, WRN-16-8 (2%) 4.8% slower
    (bench/results/steps-2026-11-27T162818-NVIDIA-H100-80GB-HBM3.json). Without ``layers`` (no network yet):
    2 on CUDA, the paper's WRN-28-10's value. Elsewhere 1: the blocks would run one after another."""
    if device.type != "cuda":
        return 1
    if layers is None:
        return 2
    return 2 if wave_tail(layers, batch, sms) >= SPLIT_TAIL else 1


def fit_sgld_parts(engine: Engine, sample_shape: tuple[int, ...], cfg: TrainConfig | None = None,
                   model: torch.nn.Module | None = None, sms: int | None = None, rows: int | None = None) -> Engine:
    """The engine's SGLD parts fitted to the network: under auto (``cfg.sgld_parts`` 0) on CUDA, from its
    convolutions at ``rows`` chains per call (default ``cfg.batch_size``; a data-parallel rank's share) on ``sms``
    SMs (default: the device's), ``auto_sgld_parts``; and one part where a sample's element count is not a
    multiple of 4, the width of the noise counters a part starts at. Each change noted."""
    if cfg is not None and model is not None and cfg.sgld_parts == 0 and engine.device.type == "cuda":
        if sms is None:
            sms = torch.cuda.get_device_properties(engine.device).multi_processor_count
        rows = cfg.batch_size if rows is None else rows
        layers = conv_layers(model, sample_shape)
        parts = auto_sgld_parts(engine.device, layers, rows, sms)
        tail = wave_tail(layers, rows, sms)
        why = (f"SGLD parts auto -> {parts}: {tail:.0%} of the convolutions' time at batch {rows} is in "
               f"last waves of tiles that leave some of the {sms} SMs idle "
               + ("(a second block fills them)" if parts > 1 else f"(under {SPLIT_TAIL:.0%}: a split costs more)"))
        engine = replace(engine, sgld_parts=parts, notes=engine.notes + (why,))
    sample_numel = math.prod(sample_shape)
    if engine.sgld_parts <= 1 or sample_numel % 4 == 0:
        return engine
    why = (f"SGLD parts off: a sample's {sample_numel} elements are not a multiple of 4 (the width of the noise "
           "counters a part starts at)")
    # in place of the note on how the parts would have run
    kept = tuple(n for n in engine.notes if not n.startswith("SGLD parts: the "))
    return replace(engine, sgld_parts=1, notes=kept + (why,))


def fit_cpu_sgld_compile(engine: Engine, sample_shape: tuple[int, ...], cfg: TrainConfig,
                         model: torch.nn.Module, rows: int | None = None) -> Engine:
    """On a CPU, whether each SGLD step runs compiled: its input gradient as one graph (``torch.compile`` of
    ``torch.func.grad``: forward and input gradient together, nothing saved between graphs; the network itself stays
    eager, which compiled with autograd measured slower) and its update (``sgld_step_compiled_``, the noise's Philox
    rounds in compiled loops instead of NumPy): under ``--compile on`` always, under auto where one step
    of ``rows`` chains (default ``cfg.batch_size``) computes at least ``SGLD_COMPILE_FLOPS`` in convolutions, never
    under off or without a C++ compiler. Elsewhere the engine as it is (CUDA graphs the compiled network)."""
    if engine.device.type != "cpu" or cfg.compile == "off":
        return engine
    ok, why = compile_available(engine.device)
    if not ok:
        return engine  # resolve_engine noted it under --compile on; under auto nothing was asked
    rows = cfg.batch_size if rows is None else rows
    # forward and input gradient: twice the forward's convolutions
    flops = 2 * rows * sum(layer.flops for layer in conv_layers(model, sample_shape))
    if cfg.compile == "on":
        why = "SGLD gradient compiled (--compile on): forward and input gradient as one graph, and the update"
    elif flops >= SGLD_COMPILE_FLOPS:
        why = (f"SGLD gradient compiled on CPU (compile auto): a step computes {flops / 1e9:.1f} GFLOP, where the "
               "seconds of compiling pay back; forward and input gradient as one graph, and the update")
    else:
        note = (f"SGLD gradient eager: a step computes {flops / 1e9:.2f} GFLOP, under the "
                f"{SGLD_COMPILE_FLOPS / 1e9:.0f} where compiling pays back (--compile on forces it)")
        return replace(engine, notes=engine.notes + (note,))
    return replace(engine, compile_sgld=True, notes=engine.notes + (why,))


def resolve_engine(cfg: TrainConfig, device: torch.device, has_batch_norm: bool, distributed: bool = False,
                   has_dropout: bool | None = None, started_in: str | None = None) -> Engine:
    """The engine ``cfg`` asks for, as far as ``device`` and the network allow, each fallback noted.
    ``has_dropout``: whether the network has dropout (``fastjem.models.has_dropout``; None: ``cfg.dropout > 0``).
    ``started_in``: the precision (bf16, fp32) that ``auto`` gave a resumed run when it started on this kind of
    device (its checkpoint's), kept: probed again, a CPU's answer may differ (a probe timed beside other work is not
    cached), and the run would continue in another precision than it began."""
    notes = []
    dropout = cfg.dropout > 0 if has_dropout is None else has_dropout
    precision = cfg.precision
    if precision == "auto" and started_in in ("bf16", "fp32"):
        precision = started_in
        notes.append(f"precision auto -> {precision} (as the run started: its checkpoint records it)")
    elif precision == "auto":
        ok, why = fast_bf16(device)
        if distributed and device.type == "cpu" and torch.distributed.is_initialized():
            # each rank timed its own probe (or read the cache while another wrote it): a rank in bf16 beside one in
            # fp32 computed a different iteration; bf16 only where every rank found it fast
            if max_over_ranks(0 if ok else 1, device) and ok:
                ok, why = False, f"another rank's probe found bf16 no faster; this rank's: {why}"
        precision = "bf16" if ok else "fp32"
        notes.append(f"precision auto -> {precision} ({why})")
    elif precision == "tf32" and device.type != "cuda":
        notes.append("precision tf32 is a CUDA mode; on CPU it is fp32")
        precision = "fp32"
    if cfg.compile == "auto":
        compiled = device.type == "cuda"
        if not compiled:
            notes.append("compile auto -> network eager on CPU (compiled with autograd it measured slower: "
                         "bench/cpu_compile_study.py; --compile on forces it)")
    else:
        compiled = cfg.compile == "on"
    if compiled:
        ok, why = compile_available(device)
        if not ok:
            notes.append(f"compile off: {why}")
            compiled = False
    graph = cfg.cuda_graph
    if graph and device.type != "cuda":
        notes.append("CUDA graph off: not on a CUDA device (the same sampler loop runs eagerly)")
        graph = False
    whole = cfg.iteration_graph
    if whole and not graph:
        why = "not on a CUDA device" if device.type != "cuda" else "--no-cuda-graph"
        notes.append(f"iteration graph off: {why} (the same iteration runs eagerly)")
        whole = False
    elif whole and distributed:
        notes.append("iteration graph off: data parallel (the gradient all-reduce runs between graphs); the SGLD "
                     "loop is still graphed")
        whole = False
    kernels = cfg.kernels
    from fastjem.kernels._dispatch import interpreter_on, triton

    if kernels == "auto":
        kernels = "triton" if device.type == "cuda" and triton is not None else "reference"
    elif kernels == "triton" and (triton is None or (device.type != "cuda" and not interpreter_on())):
        why = "triton is not installed" if triton is None else "not on CUDA and TRITON_INTERPRET is not set"
        notes.append(f"kernels triton -> reference: {why}")
        kernels = "reference"
    malloc = cfg.cpu_malloc and device.type == "cpu"
    if malloc:
        malloc, why = cpu_malloc_available()
        notes.append("CPU allocator: glibc keeps freed memory for reuse (mmap threshold 32 MB, trim threshold 1 GB)"
                     if malloc else f"CPU allocator tuning off: {why}")
    fused = cfg.fused_forward
    if fused and has_batch_norm:
        notes.append("fused forward off: batch norm makes a sample's output depend on its batch")
        fused = False
    elif fused and dropout:
        notes.append("fused forward off: dropout would draw its masks in another order than three forwards do")
        fused = False
    overlap = cfg.overlap_data
    if overlap:
        why = None
        if cfg.pxy_weight > 0:
            why = "the p(x, y) term samples from the labelled batch's classes"
        elif cfg.px_weight <= 0:
            why = "no generative term, nothing to overlap with"
        elif has_batch_norm:
            why = "batch norm makes a sample's output depend on its batch"
        elif dropout:
            why = "dropout would draw its masks in another order"
        if why:
            notes.append(f"overlap off: {why}")
            overlap = False
        elif device.type != "cuda":
            notes.append("overlap: the data half of the gradient runs before sampling, on one stream (CUDA streams "
                         "only on CUDA)")
    # only bf16 autocast casts weights; the model's own check (fastjem.weights) can still turn it off
    cast = cfg.cast_weights_once and precision == "bf16"
    parts = cfg.sgld_parts or auto_sgld_parts(device)
    if cfg.sgld_parts > 1 and device.type != "cuda":
        notes.append(f"SGLD parts: the {parts} blocks run one after another (CUDA streams only on CUDA)")
    return Engine(device, precision, compiled, graph, kernels, fused, tuple(notes), whole, malloc, overlap, cast,
                  parts)


@dataclass
class Networks:
    """The modules an engine runs (``engine_networks``); training and ``fastjem bench`` both build theirs here, so
    that the benchmark times what training samples with."""

    engine: Engine
    model: nn.Module  # the trained module, channels_last
    net: nn.Module  # what the loss calls: ``model`` or its compiled wrapper
    sgld_model: nn.Module  # the module SGLD freezes: ``model`` or its bf16 CastCopy's module
    sgld_net: nn.Module  # what SGLD calls
    cast_copy: CastCopy | None  # refreshed before each sampling call
    sgld_grad: InputGrad | None  # a CPU engine's compiled input gradient (``Engine.compile_sgld``)

    def energies(self, y: torch.Tensor | None = None) -> Callable[[int, int], EnergyFn]:
        """``row_energies`` of the sampling network under the engine (what ``SGLD.sample_parts`` takes)."""
        return row_energies(self.sgld_net, y, autocast=self.engine.autocast, backend=self.engine.kernels,
                            input_grad=self.sgld_grad)

    def graphed(self, sampler: SGLD, x0: torch.Tensor, y: torch.Tensor | None = None, parts: int = 1):
        """The SGLD loop from ``x0``'s static buffer captured as a CUDA graph (``fastjem.graphs.GraphedSGLD``)."""
        from fastjem.graphs import GraphedSGLD

        return GraphedSGLD(sampler, self.sgld_net, self.sgld_model, x0, y, autocast=self.engine.autocast,
                           backend=self.engine.kernels, parts=parts)


class _NoCudaRuntimeNote(logging.Filter):
    """Drops torch's "No CUDA runtime is found, using CUDA_HOME=..." warning, which inductor's first compile on a
    machine without a GPU prints (torch.utils.cpp_extension, at import) though nothing of CUDA is used."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("No CUDA runtime is found")


def quiet_cpu_compile() -> None:
    """Keep a CPU engine's compile from printing torch's no-CUDA-runtime warning (once per process)."""
    cpp = logging.getLogger("torch.utils.cpp_extension")
    if not any(isinstance(f, _NoCudaRuntimeNote) for f in cpp.filters):
        cpp.addFilter(_NoCudaRuntimeNote())


def channels_last_failure(model: nn.Module, sample_shape: tuple[int, ...]) -> str | None:
    """Why ``model``, its weights channels_last, cannot run (None when it can), from one forward of a zero sample
    (eval mode, no gradient, modes restored). Its convolutions then return channels_last activations, which a
    network that ``.view``s them (``h.view(h.size(0), -1)``, common in user code) refuses."""
    if not any(p.dim() == 4 for p in model.parameters()):
        return None  # nothing was converted
    param = next(model.parameters())
    x = torch.zeros(1, *sample_shape, device=param.device)
    try:
        with torch.no_grad(), eval_mode(model):
            model(x)
    except RuntimeError as err:
        return (f"the network fails on channels_last activations ({error_line(err)}; .reshape or .flatten in place "
                "of .view takes both layouts)")
    return None


def channels_last_weights_(model: nn.Module, sample_shape: tuple[int, ...]) -> str | None:
    """``model``'s 4-d weights made channels_last in place (cuDNN and oneDNN convolutions prefer NHWC); where the
    network cannot take that, its weights NCHW again and the log line that says why (None when converted)."""
    try:
        model.to(memory_format=torch.channels_last)
        why = channels_last_failure(model, sample_shape)
    except RuntimeError as err:  # a 5-d parameter or buffer (a Conv3d) has no channels_last layout
        why = f"a tensor of the network has no channels_last layout ({error_line(err)})"
    if why is None:
        return None
    model.to(memory_format=torch.contiguous_format)
    return f"channels_last weights off: {why}; it runs in NCHW (slower on GPUs)"


def engine_networks(engine: Engine, model: nn.Module, sample_shape: tuple[int, ...], cfg: TrainConfig,
                    rows: int | None = None, cpp_wrapper: bool = True) -> Networks:
    """``model`` as ``engine`` runs it: the backend flags set, channels_last weights (cuDNN and oneDNN convolutions
    are faster in NHWC; the module is changed in place), compiled when the engine compiles, the sampling network
    (under bf16 a copy with the weights cast once per call, ``fastjem.weights``), and the engine fitted to the
    network: its SGLD parts and, on a CPU, its compiled SGLD step, at ``rows`` chains per call (default
    ``cfg.batch_size``), its graph called from inductor's C++ wrapper unless ``cpp_wrapper`` is False (what
    ``bench/profile_step.py`` profiles: torch.profiler does not see the C++ wrapper's operator calls)."""
    engine.apply_backend_flags()
    why_not = channels_last_weights_(model, sample_shape)
    if why_not:
        engine = replace(engine, notes=engine.notes + (why_not,))
    # the compiled wrapper shares the module's parameters; ``model`` stays the plain module
    net = torch.compile(model, dynamic=False) if engine.compile else model
    sgld_model, sgld_net, cast_copy, why = sampling_network(model, net, engine.cast_weights_once, engine.compile)
    if why:
        engine = replace(engine, cast_weights_once=False, notes=engine.notes + (why,))
    engine = fit_sgld_parts(engine, sample_shape, cfg, model, rows=rows)
    engine = fit_cpu_sgld_compile(engine, sample_shape, cfg, model, rows=rows)
    if engine.device.type == "cpu" and (engine.compile or engine.compile_sgld):
        quiet_cpu_compile()
    # on a CPU: each SGLD step's input gradient as one compiled graph, over the module SGLD freezes
    grad = compiled_input_grad(sgld_model, autocast=engine.autocast, cpp_wrapper=cpp_wrapper) \
        if engine.compile_sgld else None
    return Networks(engine, model, net, sgld_model, sgld_net, cast_copy, grad)

"""Where the SGLD time goes: one 20-step SGLD call of the bar model under engine variants, side by side.

SGLD is ~85% of a JEM iteration (WRN-28-10, batch 64: 20 x 1.52 of 37.3 TFLOP). This study times the
sampler alone, as fastjem runs it (bf16 autocast, frozen weights, fused kernels, replayed from a CUDA
graph on CUDA), and varies one knob at a time against the default:

- ``default``: channels_last, torch.compile (default mode), cuDNN autotuning on, under bf16 the sampler's
  copy of the network with its weights cast once per call (``fastjem.weights``), and the engine's SGLD parts
  (``--sgld-parts`` auto: 2 blocks of rows on CUDA, the whole batch on a CPU);
- ``one-part``: the batch sampled as one block (``--sgld-parts 1``);
- ``cast-each-step``: autocast casts the fp32 weights at every forward instead;
- ``split-2``, ``split-4``: ``--sgld-parts 2`` / ``4``: the batch cut in 2 or 4 blocks of rows, each
  its own chain on its own CUDA stream inside the graph, drawing the whole batch's noise, to see whether the
  blocks' convolutions fill the SMs that one batch-64 convolution's last wave leaves idle (the 8x8 stage's GEMMs
  are 1.2 waves on an H100);
- ``no-cudnn-benchmark``: cuDNN's heuristic algorithm choice;
- ``cudnn-try-all``: autotuning times every algorithm cuDNN offers, not only its heuristics' first 10
  (``torch.backends.cudnn.benchmark_limit = 0``);
- ``max-autotune``: torch.compile(mode="max-autotune-no-cudagraphs") (inductor may pick Triton conv templates);
- ``no-compile``: the eager network;
- ``nchw``: contiguous (NCHW) weights and inputs;
- ``eager-step`` (CPU): each SGLD step eager, where the default compiles it as the CPU engine does (its input
  gradient as one graph and its update, ``--cpu-compile``: auto compiles where a step computes >= 1 GFLOP);
- ``py-wrapper`` (CPU): the compiled SGLD gradient's graph called from inductor's generated Python, where the
  default calls it from its C++ wrapper (``compiled_input_grad``'s ``cpp_wrapper``).

Each variant starts from the same weights, chains and noise state; its samples are compared with the
default's (max abs difference: bf16 rounding may differ between algorithms). Also measured once: a large
bf16 matmul, the device's practical matrix ceiling. Writes ``bench/results/sgld-study-<date>-<device>.json``.

    python bench/sgld_study.py                       # CUDA: WRN-28-10, batch 64; CPU: WRN-10-2, batch 16
    python bench/sgld_study.py --device cpu --smoke  # the harness end to end in seconds
"""

from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interrupted import quiet_while_importing  # noqa: E402

quiet_while_importing(__name__)  # Ctrl-C while torch imports: run_script's line, not a traceback

import torch  # noqa: E402
from env_info import (  # noqa: E402
    RESULTS,
    check_sizes,
    device_info,
    git_state,
    matmul_flops,
    now_utc,
    peak_flops,
    pick_device,
    refuse_repeats,
    results_folder,
    run_script,
    smoke_sizes,
    timed,
    versions,
    write_result,
)
from steps_per_sec import count_flops  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

from fastjem.config import TrainConfig  # noqa: E402
from fastjem.engine import (  # noqa: E402
    auto_sgld_parts,
    conv_layers,
    fit_cpu_sgld_compile,
    quiet_cpu_compile,
    resolve_engine,
    tune_cpu_malloc,
)
from fastjem.models import WideResNet  # noqa: E402
from fastjem.sampler import SGLD, compiled_input_grad, row_energies  # noqa: E402
from fastjem.weights import CastCopy  # noqa: E402

VARIANTS = {
    "default": {},
    "cast-each-step": {"cast_once": False},
    "one-part": {"split": 1},
    "split-2": {"split": 2},
    "split-4": {"split": 4},
    "no-cudnn-benchmark": {"cudnn_benchmark": False},
    "cudnn-try-all": {"cudnn_benchmark_limit": 0},
    "max-autotune": {"compile_mode": "max-autotune-no-cudagraphs"},
    "no-compile": {"compile": False},
    "nchw": {"channels_last": False},
    "eager-step": {"compile_step": False},
    "py-wrapper": {"cpp_wrapper": False},
}
CPU_ONLY = ("eager-step", "py-wrapper")
# what --smoke runs of the variants asked for (eager-step on a CPU only)
SMOKE_VARIANTS = ("default", "cudnn-try-all", "nchw", "split-2", "eager-step")


def three_figures(x: float) -> str:
    """``x`` to 3 significant figures, without an exponent: a small network's 0.0123 TFLOP/s printed as 0.01 (or
    0.00) with 2 decimals."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    return f"{x:.{max(0, 2 - math.floor(math.log10(abs(x))))}f}"


def run_variant(name: str, opts: dict, args, device: torch.device, x0: torch.Tensor) -> tuple[dict, torch.Tensor]:
    torch.backends.cudnn.benchmark = opts.get("cudnn_benchmark", True)
    torch.backends.cudnn.benchmark_limit = opts.get("cudnn_benchmark_limit", 10)  # 10: torch's default
    torch.manual_seed(args.seed)
    model = WideResNet(args.depth, args.width, num_classes=10).to(device)
    fmt = torch.channels_last if opts.get("channels_last", True) else torch.contiguous_format
    model = model.to(memory_format=fmt)
    layers = conv_layers(model, tuple(x0.shape[1:]))  # before any cast copy: the fp32 network
    compile_step = False
    if device.type == "cpu" and opts.get("compile_step", True):
        # the CPU engine's own decision for this network and batch
        cfg = TrainConfig(device="cpu", precision=args.precision, batch_size=x0.shape[0], compile=args.cpu_compile)
        engine = resolve_engine(cfg, device, has_batch_norm=False)
        compile_step = fit_cpu_sgld_compile(engine, tuple(x0.shape[1:]), cfg, model).compile_sgld
        if compile_step:
            quiet_cpu_compile()
    x_start = x0.contiguous(memory_format=fmt) if fmt is torch.channels_last else x0
    cast_copy = None
    if args.precision == "bf16" and opts.get("cast_once", True):
        cast_copy = CastCopy(model)
        model = cast_copy.module
    net = model
    if opts.get("compile", args.compile):
        net = torch.compile(model, dynamic=False, mode=opts.get("compile_mode"))
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if args.precision == "bf16" \
        else contextlib.nullcontext
    sampler = SGLD(args.sgld_steps, 1.0, 0.01, seed=args.seed, backend=args.kernels, compiled_update=compile_step)
    if "split" in opts:
        parts = opts["split"]
    else:  # the default: the engine's --sgld-parts auto for this network and batch
        sms = torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 0
        parts = auto_sgld_parts(device, layers, x0.shape[0], sms)
    if device.type == "cuda":
        from fastjem.graphs import GraphedSGLD

        graphed = GraphedSGLD(sampler, net, model, x_start, autocast=autocast, backend=args.kernels, parts=parts)
        run = lambda: graphed(x_start)  # noqa: E731
    else:
        grad = compiled_input_grad(model, autocast=autocast, cpp_wrapper=opts.get("cpp_wrapper", True)) \
            if compile_step else None
        energy_for = row_energies(net, autocast=autocast, backend=args.kernels, input_grad=grad)
        run = lambda: sampler.sample_parts(energy_for, x_start, parts, model=model)  # noqa: E731

    def call() -> torch.Tensor:
        if cast_copy is not None:  # as training does: the current weights cast once per sampling call
            cast_copy.refresh_()
        return run()

    rng_start = sampler.rng_for(device).clone()
    frames = counters["frames"]["ok"]
    warm = [timed(call, 1, device) for _ in range(args.warmup)]
    sampler.rng_state.copy_(rng_start)
    samples = call().clone()
    windows = [timed(call, args.calls, device) / args.calls for _ in range(args.windows)]
    seconds = statistics.median(windows)
    return {"name": name, "options": opts, "warmup_s": warm, "call_s_median": seconds,
            "call_s_min": min(windows), "call_s_max": max(windows), "compiled_step": compile_step,
            # what ran compiled: the frames torch.compile compiled during this variant
            "compiled_frames": counters["frames"]["ok"] - frames,
            "sgld_step_ms": 1e3 * seconds / args.sgld_steps}, samples


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    # a CPU's default is its bar model (WRN-28-10 at batch 64 took hours a variant there)
    p.add_argument("--depth", type=int, default=None, help="default: 28 on CUDA, 10 on CPU")
    p.add_argument("--width", type=int, default=None, help="default: 10 on CUDA, 2 on CPU")
    p.add_argument("--batch-size", type=int, default=None, help="default: 64 on CUDA, 16 on CPU")
    p.add_argument("--sgld-steps", type=int, default=20)
    p.add_argument("--precision", default="", choices=("", "fp32", "bf16"), help="default: bf16 on CUDA, fp32 on CPU")
    p.add_argument("--kernels", default="", choices=("", "triton", "reference"), help="default: triton on CUDA")
    p.add_argument("--variants", default="", help=f"comma-separated, from {', '.join(VARIANTS)} (default: all that "
                   f"the device runs; {', '.join(CPU_ONLY)} on a CPU only)")
    p.add_argument("--cpu-compile", default="auto", choices=("auto", "on", "off"),
                   help="on a CPU, whether the default compiles each SGLD step, as train's --compile (auto: where a "
                        "step computes >= 1 GFLOP)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--windows", type=int, default=5)
    p.add_argument("--calls", type=int, default=5, help="SGLD calls per timed window")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--smoke", action="store_true",
                   help="WRN-10-1, batch 4, 2 steps, where left at their defaults; the network as in a full run: "
                        "compiled on CUDA, eager on a CPU, where --cpu-compile auto leaves steps this small eager "
                        "(on compiles them); variants "
                        + ", ".join(n + (" (on a CPU)" if n in CPU_ONLY else "") for n in SMOKE_VARIANTS))
    p.add_argument("--out", default=str(RESULTS), type=results_folder)
    args = p.parse_args(argv)
    device = pick_device(p, args.device)
    cuda = device.type == "cuda"
    if args.smoke:
        smoke_sizes(p, args, {"depth": 10, "width": 1, "batch_size": 4, "sgld_steps": 2, "warmup": 1, "windows": 2,
                              "calls": 1})
    for name, on_cuda, on_cpu in (("depth", 28, 10), ("width", 10, 2), ("batch_size", 64, 16)):
        if getattr(args, name) is None:
            setattr(args, name, on_cuda if cuda else on_cpu)
    check_sizes(p, args.depth, args.width, batch_size=args.batch_size, sgld_steps=args.sgld_steps,
                windows=args.windows, calls=args.calls)
    if args.warmup < 0:
        p.error(f"--warmup must be >= 0, got {args.warmup}")
    args.precision = args.precision or ("bf16" if cuda else "fp32")
    args.kernels = args.kernels or ("triton" if cuda else "reference")
    args.compile = cuda
    names = [v.strip() for v in args.variants.split(",") if v.strip()] or \
        [n for n in VARIANTS if not (cuda and n in CPU_ONLY)]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        p.error(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    refuse_repeats(p, "--variants", names, "each variant is timed once")
    if cuda and any(n in CPU_ONLY for n in names):
        p.error(f"{', '.join(n for n in names if n in CPU_ONLY)}: a CPU variant (CUDA compiles the network instead)")
    if args.smoke:
        dropped = [n for n in names if n not in SMOKE_VARIANTS]
        if dropped and args.variants != p.get_default("variants"):
            p.error(f"--smoke runs only {', '.join(SMOKE_VARIANTS)}: not {', '.join(dropped)}")
        names = [n for n in names if n in SMOKE_VARIANTS]
    started = now_utc()
    flops = count_flops(args.depth, args.width, args.batch_size, args.sgld_steps)
    peak = peak_flops(device_info(device)["name"], args.precision) if cuda else None
    gen = torch.Generator().manual_seed(args.seed)
    x0 = (torch.rand(args.batch_size, 3, 32, 32, generator=gen) * 2 - 1).to(device)
    # on a CPU, the allocator setting a CPU engine applies (process-wide, glibc's heap thresholds): without it every
    # SGLD step page-faults its activations in again, and the default here ran slower than training's SGLD steps
    cpu_malloc = not cuda and tune_cpu_malloc()
    report = {"schema": "fastjem-bench-sgld-study/1", "date": started.isoformat(timespec="seconds"),
              "device": device_info(device), "versions": versions(), "git": git_state(), "smoke": args.smoke,
              "args": {k: v for k, v in vars(args).items()}, "flops_per_sgld_step": flops["sgld_step"],
              "peak_flops_per_s": peak, "cpu_malloc_tuned": cpu_malloc, "variants": []}
    if cuda:
        # bf16 dense matmul on random data: the practical ceiling the network's convolutions aim at
        report["matmul_bf16_tflops"] = matmul_flops(device, "bf16", n=8192, reps=20) / 1e12
    path = None

    def save() -> None:
        # after every variant, before its line is printed: a run cut short (the CPU bars' timeout in the GPU suite,
        # Ctrl-C) keeps what it measured and printed; the first write claims a file of its own (a run started in the
        # same second keeps its file)
        nonlocal path
        path = write_result(report, "sgld-study", device, started, args.out, path)

    reference = None
    for name in names:
        try:
            row, samples = run_variant(name, VARIANTS[name], args, device, x0)
        except Exception as err:  # a variant that cannot run is recorded, the others go on
            report["variants"].append({"name": name, "error": f"{type(err).__name__}: {err}"})
            save()
            print(f"{name}: failed ({type(err).__name__}: {err})")
            continue
        if reference is None:
            reference = samples
        row["samples_max_abs_diff_vs_first"] = float((samples - reference).abs().max())
        row["tflops_per_s"] = flops["sgld_step"] * args.sgld_steps / row["call_s_median"] / 1e12
        row["mfu"] = row["tflops_per_s"] * 1e12 / peak if peak else None
        report["variants"].append(row)
        save()
        mfu = f", MFU {100 * row['mfu']:.1f}%" if row["mfu"] is not None else ""
        print(f"{name:<20} SGLD step {row['sgld_step_ms']:8.3f} ms  {three_figures(row['tflops_per_s']):>7} "
              f"TFLOP/s{mfu}  samples vs first {row['samples_max_abs_diff_vs_first']:.2e}", flush=True)
        torch._dynamo.reset()
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.benchmark_limit = 10
    save()
    if cuda:
        print(f"bf16 matmul {report['matmul_bf16_tflops']:.0f} TFLOP/s (8192^3, random data)")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))

"""Where an SGLD step's time goes: torch.profiler over SGLD calls, fastjem's engine and the reference.

Ops are grouped into categories (convolution forward, convolution input-gradient, other matmuls,
activations and other elementwise work, fastjem's fused kernels, copies and layout changes, the rest)
and each category's share of the profiled time is reported; the full top-op table goes to the JSON.
On CUDA the device (kernel) time is what counts, and the sampler runs unGraphed so the profiler sees
every kernel (replaying a graph runs the same kernels); on CPU it is the operators' own CPU time, and a compiled
SGLD gradient is called from inductor's Python wrapper, not from the C++ one the engine calls it from: the same
kernels, which the profiler does not see when C++ calls them (torch 2.14: the convolutions' input gradients vanish).

    python bench/profile_step.py                         # CUDA: WRN-28-10, batch 64; CPU: WRN-10-2, batch 16
    python bench/profile_step.py --device cpu --smoke   # the harness end to end in seconds

Writes ``bench/results/profile-<date>-<device>.json`` (``smoke-profile-...`` under --smoke, which report.py leaves
out).
"""

from __future__ import annotations

import argparse
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
    now_utc,
    pick_device,
    refuse_repeats,
    results_folder,
    run_script,
    smoke_sizes,
    versions,
    write_result,
)
from reference_eager import fp32_mode, sgld  # noqa: E402

from fastjem.benchmark import build_sampler_call  # noqa: E402
from fastjem.config import TrainConfig  # noqa: E402
from fastjem.models import WideResNet  # noqa: E402

# first match wins; names are profiler event names (aten ops on CPU, kernel names on CUDA)
CATEGORIES = (
    ("conv input-gradient", ("convolution_backward", "dgrad", "convolutionbackward")),
    ("convolution forward", ("convolution", "conv2d", "cudnn", "mkldnn", "sm90_xmma", "implicit_gemm", "fprop",
                             "wgrad")),
    ("fused fastjem kernels", ("fastjem", "_sgld_step", "_lse_energy", "lseenergy", "_buffer_")),
    ("matmul (linear)", ("addmm", "mm", "gemm", "matmul")),
    ("activation and elementwise", ("leaky", "relu", "add", "mul", "where", "triton_", "elementwise",
                                    "vectorized", "fill", "sum", "logsumexp", "exp", "reduce")),
    ("copies and layout", ("copy", "contiguous", "clone", "to_copy", "nchw", "nhwc", "transpose", "permute")),
)


def category(name: str) -> str:
    low = name.lower()
    for cat, keys in CATEGORIES:
        if any(k in low for k in keys):
            return cat
    return "other"


def profile(call, device: torch.device, reps: int, rows: int) -> dict:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    # warm-up calls under a profiler of their own, discarded: a process's first profiled operators ran ~10 times
    # slower (WRN-10-2 at batch 2 on the 2-thread Intel Xeon of this project's sessions: 109 ms per step in the
    # first profile, 9 ms in the next; not kept in a results file)
    with torch_profile(activities=activities):
        for _ in range(2):
            call()
        if device.type == "cuda":
            torch.cuda.synchronize()
    with torch_profile(activities=activities) as prof:
        for _ in range(reps):
            call()
        if device.type == "cuda":
            torch.cuda.synchronize()
    events = prof.key_averages()
    attr = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"

    def self_time(e) -> float:
        value = getattr(e, attr, None)
        if value is None and device.type == "cuda":
            value = getattr(e, "self_cuda_time_total", 0.0)
        return float(value or 0.0)

    if device.type == "cuda":
        # Device time belongs to kernels (and copies): the kernel events themselves. CPU-side events (aten ops,
        # inductor's launch records named like their kernels) also carry their kernels' device time, so
        # counting them as well counts every kernel twice (torch 2.11 on an H100: 8.1 ms per SGLD step
        # profiled against 4.2 ms measured).
        kernels = [e for e in events if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA]
        items = [(e.key, self_time(e), e.count) for e in (kernels or events)]
        items = [it for it in items if it[1] > 0]
    else:
        items = [(e.key, self_time(e), e.count) for e in events
                 if not e.key.startswith(("ProfilerStep", "## Call", "Torch-Compiled"))]
    total = sum(t for _, t, _ in items) or 1.0
    by_cat: dict[str, float] = {}
    for key, t, _ in items:
        by_cat[category(key)] = by_cat.get(category(key), 0.0) + t
    top = sorted(items, key=lambda it: -it[1])[:rows]
    return {
        "time_basis": "device (kernel) time" if device.type == "cuda" else "operators' own CPU time",
        "profiled_ms_per_call": total / 1e3 / reps,
        "categories": {k: {"ms_per_call": v / 1e3 / reps, "share": v / total}
                       for k, v in sorted(by_cat.items(), key=lambda kv: -kv[1])},
        "top": [{"name": k, "ms_per_call": t / 1e3 / reps, "share": t / total, "calls": c // reps}
                for k, t, c in top],
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--depth", type=int, default=0)
    p.add_argument("--width", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=0)
    p.add_argument("--steps", type=int, default=5, help="SGLD steps per profiled call")
    p.add_argument("--reps", type=int, default=3, help="profiled calls")
    p.add_argument("--rows", type=int, default=25, help="top ops kept in the JSON")
    p.add_argument("--engines", default="default,matched,reference", help="comma-separated: default, matched, "
                   "reference")
    p.add_argument("--out", default=str(RESULTS), type=results_folder)
    p.add_argument("--smoke", action="store_true", help="a check of the script, not a measurement: WRN-10-1, batch "
                   "2, one step, one call where those are left at their defaults; the file is named smoke-profile-...")
    args = p.parse_args(argv)
    if args.smoke:
        smoke_sizes(p, args, {"depth": 10, "width": 1, "batch_size": 2, "steps": 1, "reps": 1})
    for name in ("depth", "width", "batch_size"):
        if getattr(args, name) < 0:
            p.error(f"--{name.replace('_', '-')} must be > 0 (or 0 for the device's default)")
    for name in ("steps", "reps", "rows"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1")
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = [e for e in engines if e not in ("default", "matched", "reference")]
    if unknown or not engines:
        p.error(f"--engines takes default, matched, reference; got {args.engines!r}")
    # a repeat was profiled again, the first profile replaced
    refuse_repeats(p, "--engines", engines, "each engine is profiled once")
    device = pick_device(p, args.device)
    cuda = device.type == "cuda"
    depth, width = args.depth or (28 if cuda else 10), args.width or (10 if cuda else 2)
    check_sizes(p, depth, width)
    batch = args.batch_size or (64 if cuda else 16)
    started = now_utc()
    report = {"schema": "fastjem-bench-profile/1", "date": started.isoformat(timespec="seconds"),
              "device": device_info(device), "versions": versions(), "git": git_state(),
              "model": f"WRN-{depth}-{width}", "batch_size": batch, "sgld_steps_per_call": args.steps, "engines": {},
              "smoke": args.smoke}
    base = TrainConfig(arch="wrn", depth=depth, width=width, batch_size=batch, sgld_steps=args.steps,
                       cuda_graph=False, iteration_graph=False, device=device.type, seed=0)
    path = None  # claimed by the first write
    for name in engines:
        if name == "reference":
            torch.manual_seed(0)
            model = WideResNet(depth, width, 10, 3).to(device)
            x0 = torch.rand(batch, 3, 32, 32, device=device) * 2 - 1

            def call(model=model, x0=x0):
                with fp32_mode("ieee"):
                    return sgld(model, x0, args.steps, 1.0, 0.01)

            engine_desc = "reference eager (fp32, parameters requiring grad, NCHW)"
        elif name in ("default", "matched"):
            cfg = base if name == "default" else base.replace(precision="fp32")
            call, engine = build_sampler_call(cfg, device, cpp_wrapper=False)
            engine_desc = engine.describe()
            if engine.compile_sgld:
                engine_desc += " (SGLD gradient's graph called from Python, to be profiled)"
        else:
            p.error(f"unknown engine {name!r}")
        result = profile(call, device, args.reps, args.rows)
        result["engine"] = engine_desc
        report["engines"][name] = result
        # after every engine: a run cut short (the CPU bars' timeout in the GPU suite) keeps what it profiled; its
        # figures printed once written (a Ctrl-C in the write left them on the screen and in no file)
        path = write_result(report, "profile", device, started, args.out, path)
        shares = ", ".join(f"{k} {100 * v['share']:.0f}%" for k, v in result["categories"].items())
        per_step = result["profiled_ms_per_call"] / args.steps
        print(f"{name:<10} {per_step:8.2f} ms per SGLD step ({result['time_basis']}): {shares}", flush=True)
        torch._dynamo.reset()
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))

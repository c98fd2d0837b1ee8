"""Why torch.compile is off on a CPU (``--compile auto``), and which formulation of it would pay.

Times, on the CPU bar's model (WRN-10-2, batch 16, fp32, channels_last), the two gradients a JEM iteration
computes, each three ways:

- ``sgld``: dE/dx of E(x) = -LSE f(x) with the weights frozen (one SGLD step's gradient);
- ``train``: the weight gradient of the loss over one concatenated forward of [x_p, x_q, x_lab] (3 x batch);

- ``eager``: autograd on the eager network (fastjem's CPU engine);
- ``compiled-network``: torch.compile(network) with autograd over it (what ``--compile on`` does): AOTAutograd
  splits forward and backward into two graphs and saves what the backward needs between them;
- ``compiled-func-grad``: torch.compile(torch.func.grad(...)): forward and backward in one graph, nothing saved
  between graphs.

And a probe of the elementwise work the split leaves: LeakyReLU alone, LeakyReLU with the bool mask of its
input's sign (what the partition saves for LeakyReLU's backward when the weights are frozen), and a select on
that mask, eager and compiled, on one [B, 64, 32, 32] activation.

Each variant's gradient is compared with eager's (max abs difference). Compilation is timed apart.
Writes ``bench/results/cpu-compile-<date>-<device>.json``.

    python bench/cpu_compile_study.py           # WRN-10-2, batch 16
    python bench/cpu_compile_study.py --smoke   # a tiny network, one short window each
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interrupted import quiet_while_importing  # noqa: E402

quiet_while_importing(__name__)  # Ctrl-C while torch imports: run_script's line, not a traceback

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from env_info import (  # noqa: E402
    RESULTS,
    check_sizes,
    device_info,
    git_state,
    now_utc,
    results_folder,
    run_script,
    smoke_sizes,
    timed,
    versions,
    write_result,
    write_synthetic_imagefolder,
)

from fastjem import kernels  # noqa: E402
from fastjem.engine import tune_cpu_malloc  # noqa: E402
from fastjem.models import WideResNet  # noqa: E402
from fastjem.models.wrn import LEAK  # noqa: E402

CPU = torch.device("cpu")


def _race(fns: dict, reference: torch.Tensor | None, n: int, windows: int) -> dict:
    """Median ms per call of each function, their timed windows alternating (the order reversed every other
    window), so that the machine's drift falls on all alike; the first call (compilation) timed apart."""
    out = {}
    for name, fn in fns.items():
        t = time.perf_counter()
        value = fn()
        out[name] = {"first_call_s": time.perf_counter() - t, "windows_ms": []}
        if reference is not None:
            out[name]["max_abs_diff"] = float((value - reference).abs().max())
            out[name]["max_abs"] = float(value.abs().max())
        fn()
    for w in range(windows):
        for name in list(fns) if w % 2 == 0 else list(fns)[::-1]:
            out[name]["windows_ms"].append(1e3 * timed(fns[name], n, CPU) / n)
    for r in out.values():
        r["ms"] = statistics.median(r["windows_ms"])
    return out


def gradients(depth: int, width: int, batch: int, n: int, windows: int) -> Iterator[tuple[str, dict]]:
    """("sgld", its race), then ("train", its race), each as it finishes."""
    torch.manual_seed(0)
    net = WideResNet(depth, width).to(memory_format=torch.channels_last)
    params = {k: v.detach() for k, v in net.named_parameters()}
    x = (torch.rand(batch, 3, 32, 32) * 2 - 1).contiguous(memory_format=torch.channels_last)
    xs = (torch.rand(3 * batch, 3, 32, 32) * 2 - 1).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (batch,))

    def energy_sum(model, z):
        return -torch.logsumexp(model(z), 1).sum()

    def loss(logits):
        lp, lq, lab = logits.split(batch)
        return F.cross_entropy(lab, y) - torch.logsumexp(lp, 1).mean() + torch.logsumexp(lq, 1).mean()

    def flat(grads):
        return torch.cat([g.reshape(-1) for g in grads])

    compiled = torch.compile(net, dynamic=False)

    def sgld_autograd(model):
        z = x.detach().requires_grad_(True)
        return torch.autograd.grad(energy_sum(model, z), z)[0]

    def train_autograd(model):
        return flat(torch.autograd.grad(loss(model(xs)), list(net.parameters())))

    sgld_func = torch.compile(torch.func.grad(lambda z: energy_sum(net, z)), dynamic=False)
    train_func = torch.compile(torch.func.grad(lambda p: loss(torch.func.functional_call(net, p, (xs,)))),
                               dynamic=False)
    net.eval().requires_grad_(False)
    ref = sgld_autograd(net)
    yield "sgld", _race({"eager": lambda: sgld_autograd(net), "compiled-network": lambda: sgld_autograd(compiled),
                         "compiled-func-grad": lambda: sgld_func(x)}, ref, n, windows)
    net.requires_grad_(True)
    ref = train_autograd(net)
    yield "train", _race({"eager": lambda: train_autograd(net), "compiled-network": lambda: train_autograd(compiled),
                          "compiled-func-grad": lambda: flat(train_func(params).values())}, ref, max(1, n // 4),
                         windows)


def iterations(depth: int, width: int, batch: int, sgld_steps: int, n: int, windows: int, work: Path) -> dict:
    """fastjem's whole training iteration (the engine's CPU defaults, fp32, compile off) as it is, and with each SGLD
    step's gradient taken from one compiled torch.func.grad graph instead (patched in here, as the engine itself does
    under --compile auto since: Engine.compile_sgld); both from the same seeds, the parameters and the replay buffers
    (the SGLD samples written back: a few iterations of a small network move its parameters too little to tell a
    sampler that draws other samples) compared after the timed iterations."""
    from fastjem.config import TrainConfig
    from fastjem.sampler import SGLD
    from fastjem.train import Trainer

    data = write_synthetic_imagefolder(work / "data")
    cfg = TrainConfig(dataset="imagefolder", data_dir=str(data), arch="wrn", depth=depth, width=width,
                      batch_size=batch, sgld_steps=sgld_steps, buffer_size=10000, iters=10**9, ckpt_every=0,
                      log_every=10**9, device="cpu", seed=1, precision="fp32", compile="off")
    eager = Trainer(cfg, out_dir=work / "eager", progress=False, log=lambda *a: None)
    patched = Trainer(cfg, out_dir=work / "compiled", progress=False, log=lambda *a: None)
    model = patched.sgld_model
    grad = torch.compile(torch.func.grad(lambda z: -torch.logsumexp(model(z), 1).sum()), dynamic=False)
    sampler = patched.sampler

    compiled_steps = [0]

    def step_(energy_fn, x, rng=None, base=0, advance=None):  # SGLD.step_ with the compiled input gradient
        compiled_steps[0] += 1
        rng = sampler.rng_for(x.device) if rng is None else rng
        kernels.sgld_step_(x, grad(x), -sampler.step_size, sampler.noise, rng, backend=sampler.backend, base=base,
                           advance=advance)
        return x

    assert isinstance(sampler, SGLD) and cfg.pxy_weight == 0 and not cfg.class_cond_px  # E(x) only: no labels
    sampler.step_ = step_

    # the race interleaves the two trainers: each draws from its own generator states (a Trainer swaps them in
    # around its step), so each draws what it would alone
    out = _race({"eager": eager.train_step, "compiled-sgld-gradient": patched.train_step}, None, n, windows)
    flat = [torch.cat([p.detach().reshape(-1) for p in t.model.parameters()]) for t in (eager, patched)]
    out["params_max_abs_diff"] = float((flat[0] - flat[1]).abs().max())
    out["buffer_max_abs_diff"] = float((eager.buffer.data - patched.buffer.data).abs().max())
    out["iterations_each"] = 2 + n * windows
    # what ran: each trainer's iterations, and the SGLD steps that took the compiled gradient (all of the patched's)
    out["iterations_run"] = {"eager": eager.iteration, "compiled-sgld-gradient": patched.iteration}
    out["compiled_sgld_steps"] = compiled_steps[0]
    return out


def elementwise(batch: int, n: int, windows: int) -> Iterator[tuple[str, dict]]:
    """Each probe's name and race, as it finishes."""
    h = torch.randn(batch, 64, 32, 32).contiguous(memory_format=torch.channels_last)
    g = torch.randn_like(h)
    mask = h > 0
    probes = {
        "leaky_relu": (lambda t: F.leaky_relu(t, LEAK), (h,)),
        "leaky_relu + bool mask": (lambda t: (F.leaky_relu(t, LEAK), t > 0), (h,)),
        "select on a bool mask": (lambda m, t: torch.where(m, t, t * LEAK), (mask, g)),
    }
    for name, (fn, args) in probes.items():
        compiled = torch.compile(fn, dynamic=False)
        yield name, _race({"eager": lambda f=fn, a=args: f(*a), "compiled": lambda f=compiled, a=args: f(*a)},
                          None, n, windows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--depth", type=int, default=10)
    p.add_argument("--width", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--calls", type=int, default=20, help="calls per timed window (default: 20)")
    p.add_argument("--windows", type=int, default=7, help="timed windows per variant; the median counts (default: 7)")
    p.add_argument("--sgld-steps", type=int, default=20,
                   help="SGLD steps of the whole-iteration comparison; 0 skips it (default: 20)")
    p.add_argument("--smoke", action="store_true", help="a check of the script, not a measurement: WRN-10-1, batch 2, "
                   "one window of two calls, 2 SGLD steps where those are left at their defaults; the file is named "
                   "smoke-cpu-compile-...")
    p.add_argument("--out", default=str(RESULTS), type=results_folder, help="results folder (default: bench/results)")
    args = p.parse_args(argv)
    if args.smoke:
        smoke_sizes(p, args, {"depth": 10, "width": 1, "batch_size": 2, "calls": 2, "windows": 1, "sgld_steps": 2})
    check_sizes(p, args.depth, args.width, batch_size=args.batch_size, calls=args.calls, windows=args.windows)
    if args.sgld_steps < 0:
        p.error(f"--sgld-steps must be >= 0 (0 skips the whole-iteration comparison), got {args.sgld_steps}")
    device = CPU
    tune_cpu_malloc()  # as fastjem's CPU engine runs
    when = now_utc()
    report = {
        "schema": "fastjem-bench-cpu-compile/1", "date": when.isoformat(timespec="seconds"),
        "device": device_info(device), "versions": versions(), "git": git_state(), "smoke": args.smoke,
        "model": f"WRN-{args.depth}-{args.width}", "batch_size": args.batch_size, "precision": "fp32",
        "method": "median over windows of calls, the variants' windows alternating; the first call (compilation) "
                  "timed apart",
        "gradients_ms": {}, "elementwise_ms": {},
    }
    path = None
    # written after every race (smoke-cpu-compile-... when --smoke): a study cut short (Ctrl-C, a timeout) keeps what
    # it measured
    for section, races in (("gradients_ms", gradients(args.depth, args.width, args.batch_size, args.calls,
                                                       args.windows)),
                           ("elementwise_ms", elementwise(args.batch_size, args.calls * 5, args.windows))):
        for name, race in races:
            report[section][name] = race
            path = write_result(report, "cpu-compile", device, when, args.out, path)
    if args.sgld_steps:
        with tempfile.TemporaryDirectory() as tmp:
            report["iteration_ms"] = iterations(args.depth, args.width, args.batch_size, args.sgld_steps,
                                                max(1, args.calls // 10), args.windows, Path(tmp))
        path = write_result(report, "cpu-compile", device, when, args.out, path)
    print(f"{report['model']}, batch {args.batch_size}, {report['device']['name']}, {report['device']['threads']} "
          "threads (ms per call; max |diff| from eager)")
    for what, variants in report["gradients_ms"].items():
        for name, r in variants.items():
            print(f"  {what:6s} {name:19s} {r['ms']:8.2f} ms   {r['max_abs_diff']:.1e}   "
                  f"first call {r['first_call_s']:.1f} s")
    for name, r in report["elementwise_ms"].items():
        print(f"  {name:24s} eager {r['eager']['ms']:.3f} ms   compiled {r['compiled']['ms']:.3f} ms")
    if "iteration_ms" in report:
        it = report["iteration_ms"]
        print(f"  iteration ({args.sgld_steps} SGLD steps): eager {it['eager']['ms']:.1f} ms, SGLD gradient compiled "
              f"{it['compiled-sgld-gradient']['ms']:.1f} ms; after {it['iterations_each']} iterations parameters "
              f"differ by {it['params_max_abs_diff']:.1e}, replay buffers by {it['buffer_max_abs_diff']:.1e}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))

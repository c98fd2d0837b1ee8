"""JEM training iterations per second: the reference eager implementation vs fastjem, side by side.

    python bench/steps_per_sec.py                        # CPU: WRN-10-2, batch 16; CUDA: all configs, batch 64
    python bench/steps_per_sec.py --device cpu --smoke   # under a minute; exercised by tests/test_bench.py
    python bench/steps_per_sec.py --configs wrn-28-10 --batch-size 64

Engines, timed alternately (window by window, the order reversed every other window so drift does not
favour one), one computing at a time; on a CPU the reference runs in a process of its own at the
platform's default settings, since fastjem's engine tunes process-wide ones (glibc's allocator):
``--no-reference-process`` shares the process, which isolates what the engine's structure buys:

- ``reference-ieee``     bench/reference_eager.py in true fp32 (TF32 off);
- ``reference-default``  the same with PyTorch's default flags (cuDNN convs in TF32; CUDA only, on CPU
                          it is the same as ieee and is not run);
- ``fastjem-matched``    fastjem with ``precision=fp32`` (TF32 off on CUDA);
- ``fastjem-default``    fastjem with the TrainConfig defaults (precision auto, compile, CUDA graph, ...).

Method: every engine runs ``--warmup`` iterations first (compilation, autotuning and graph capture
happen there; their times are reported apart); then ``--windows`` timed windows of ``n`` iterations
each, ``n`` chosen from the last warm-up iteration so a window lasts about ``--window-s``; the device
is synchronised before every clock read. Reported: the median iterations/s over windows and its
spread (min, max), then component times (SGLD step, buffer draw + write-back, data draw, the rest of
the training step), FLOPs per iteration counted with torch.utils.flop_counter on the reference
iteration, and MFU against the device's peak for the precision the engine computes in (on a CPU, which has no
datasheet peak here, the share of a dense matmul's FLOP/s at that precision, measured in the same run, and
the ceiling that puts on each bar: ``ceiling_matched: xC``).

Correctness gate: before any timing, fastjem (precision fp32, reference kernels, same seed) and the
reference must give the same SGLD chains, loss and gradients on identical inputs, and SGLD noise of the same
standard deviation; if they do not, no fastjem speed is reported and the script exits with status 2.

Writes ``bench/results/steps-<date>-<device>.json`` (``--out`` to change the folder) and prints a
markdown table and the lines ``ratio_matched: X`` / ``ratio_default: Y`` for the bar configuration
(CPU: WRN-10-2 at batch 16; CUDA: WRN-28-10 at batch 64, with ``mfu_default: Z``); where the run did not measure
it, for the last configuration it measured, named on each line.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interrupted import quiet_while_importing  # noqa: E402

quiet_while_importing(__name__)  # Ctrl-C while torch imports: run_script's line, not a traceback

import torch  # noqa: E402
from env_info import (  # noqa: E402
    RESULTS,
    device_info,
    device_name,
    exit_on_sigterm,
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
    write_synthetic_imagefolder,
)
from reference_eager import ReferenceConfig, ReferenceJEM, fp32_mode, jem_loss, lse, sgld  # noqa: E402

from fastjem.config import TrainConfig  # noqa: E402
from fastjem.data import load_arrays  # noqa: E402
from fastjem.engine import auto_sgld_parts, conv_layers  # noqa: E402
from fastjem.models import WideResNet  # noqa: E402
from fastjem.train import Trainer  # noqa: E402

CONFIGS = {"wrn-10-2": (10, 2), "wrn-16-8": (16, 8), "wrn-28-10": (28, 10)}
# candidates: a failure to build or warm up is recorded, the other engines are still measured
OPTIONAL_ENGINES = ("fastjem-overlap", *(f"fastjem-parts{n}" for n in range(1, 65)))
ENGINE_FIELDS = ("precision", "compile", "cuda_graph", "iteration_graph", "kernels", "fused_forward",
                 "overlap_data", "cast_weights_once", "sgld_parts")
SCHEMA = "fastjem-bench-steps/1"


# ------------------------------------------------------------------------------------- FLOPs
def count_flops(depth: int, width: int, batch_size: int, sgld_steps: int, num_classes: int = 10,
                channels: int = 3, size: int = 32) -> dict:
    """FLOPs of one JEM iteration, counted by torch.utils.flop_counter on the meta device (nothing runs).

    SGLD step = forward + input gradient of LSE f(x); training step = the three forwards of the loss
    and the full backward. Both engines do this work; fastjem's graphs and fusions only remove overhead.
    """
    from torch.utils.flop_counter import FlopCounterMode

    model = WideResNet(depth, width, num_classes, channels).to("meta")
    x = torch.empty(batch_size, channels, size, size, device="meta")
    y = torch.zeros(batch_size, dtype=torch.long, device="meta")
    # The input gradient alone (autograd.grad conflicts with the counter's module hooks; frozen weights give
    # the same work: autograd prunes weight gradients nobody asked for).
    model.requires_grad_(False)
    with FlopCounterMode(display=False) as counter:
        xr = x.clone().requires_grad_(True)
        lse(model(xr)).sum().backward()
    sgld_step = counter.get_total_flops()
    model.requires_grad_(True)
    with FlopCounterMode(display=False) as counter:
        jem_loss(model, x, x, y, x).backward()
    train_step = counter.get_total_flops()
    return {"per_iter": sgld_steps * sgld_step + train_step, "sgld_step": sgld_step, "train_step": train_step,
            "params": sum(p.numel() for p in model.parameters()),
            "method": "torch.utils.flop_counter.FlopCounterMode, meta device"}


# ------------------------------------------------------------------------------------ engines
@dataclass
class Runner:
    """One engine under test: closures over its state, and where its numbers go."""

    name: str
    kind: str  # reference | fastjem
    precision: str  # what the network computes in: fp32 | tf32 | bf16
    step: Callable[[], object]
    sample: Callable[[], object]  # buffer draw + SGLD + write-back
    buffer_roundtrip: Callable[[], object]
    draw: Callable[[], object]
    enter: Callable[[], None]  # sets the process-wide flags this engine runs under
    info: dict = field(default_factory=dict)
    result: dict = field(default_factory=dict)
    close: Callable[[], None] = lambda: None  # ends a worker process, when the engine runs in one


def _strip(state: dict) -> dict:
    """A compiled module's state dict has '_orig_mod.' prefixes; the plain network's does not."""
    return {k.replace("_orig_mod.", ""): v for k, v in state.items()}


def _flags() -> tuple:
    """The process-wide backend flags an engine sets (TF32, cuDNN autotuning): each runner gets its own."""
    cuda, cudnn = torch.backends.cuda, torch.backends.cudnn
    return cudnn.allow_tf32, cuda.matmul.allow_tf32, torch.get_float32_matmul_precision(), cudnn.benchmark


def _set_flags(flags: tuple) -> None:
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = flags[0], flags[1]
    torch.set_float32_matmul_precision(flags[2])
    torch.backends.cudnn.benchmark = flags[3]


def _resolved_engine(trainer: Trainer) -> dict:
    """What the trainer actually runs (its resolved engine), when it exposes one."""
    engine = getattr(trainer, "engine", None)
    out = {}
    for name in (*ENGINE_FIELDS, "compile_sgld"):  # compile_sgld: resolved from --compile on a CPU
        if hasattr(engine, name):
            out[name] = getattr(engine, name)
    if hasattr(engine, "notes"):
        out["notes"] = list(engine.notes)
    return out


def _fastjem_precision(trainer: Trainer, cfg: TrainConfig, device: torch.device) -> str:
    resolved = _resolved_engine(trainer).get("precision")
    if resolved:
        return resolved
    if cfg.precision == "auto":
        return "bf16" if device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 8 else "fp32"
    return "fp32" if cfg.precision == "tf32" and device.type != "cuda" else cfg.precision


def fastjem_runner(name: str, cfg: TrainConfig, out_dir: Path) -> Runner:
    log: list[str] = []
    trainer = Trainer(cfg, out_dir=out_dir, progress=False, log=log.append)
    flags = _flags()  # what the trainer set up (e.g. TF32 off for fp32), re-applied before each of its windows
    b = cfg.batch_size

    def roundtrip():
        x0, idx = trainer.buffer.sample(b)
        trainer.buffer.write_(idx, x0)

    info = {"requested": {k: getattr(cfg, k) for k in ENGINE_FIELDS}, "resolved": _resolved_engine(trainer),
            "log": log}
    return Runner(name, "fastjem", _fastjem_precision(trainer, cfg, trainer.device), trainer.train_step,
                  lambda: trainer.sample(b), roundtrip, lambda: trainer.data.draw(b), lambda: _set_flags(flags),
                  info)


def reference_runner(name: str, precision: str, cfg: TrainConfig, train_x, train_y, device: torch.device) -> Runner:
    torch.manual_seed(cfg.seed)
    depth, width = cfg.depth, cfg.width
    model = WideResNet(depth, width, int(train_y.max()) + 1, train_x.shape[1])
    rcfg = ReferenceConfig(batch_size=cfg.batch_size, sgld_steps=cfg.sgld_steps, sgld_step_size=cfg.sgld_step_size,
                           sgld_noise=cfg.sgld_noise, buffer_size=cfg.buffer_size, reinit_prob=cfg.reinit_prob,
                           lr=cfg.lr, warmup_iters=cfg.warmup_iters, data_noise=cfg.data_noise, precision=precision)
    ref = ReferenceJEM(model, train_x, train_y, rcfg, device, seed=cfg.seed)
    b = cfg.batch_size

    def in_mode(fn):
        def run():
            with fp32_mode(precision):
                return fn()
        return run

    def roundtrip():
        x0, idx = ref.buffer_draw(b)
        ref.buffer_write(idx, x0)

    tf32 = precision == "default" and device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 8
    info = {"precision_mode": precision, "config": {f.name: getattr(rcfg, f.name) for f in fields(rcfg)}}
    return Runner(name, "reference", "tf32" if tf32 else "fp32", ref.step, in_mode(lambda: ref.sample(b)),
                  roundtrip, lambda: ref.draw(b), lambda: None, info)


def _reference_worker(conn, name: str, precision: str, cfg: dict, data_dir: str, device: str, threads: int) -> None:
    """A reference engine in its own process: runs what the parent asks, one call at a time. Ctrl-C (which reaches
    the whole process group) ends it with one line and exit status 130, where it printed a traceback beside the
    parent's."""
    try:
        torch.set_num_threads(threads)
        arrays = load_arrays("imagefolder", data_dir)
        r = reference_runner(name, precision, TrainConfig.from_dict(cfg), arrays.train_x, arrays.train_y,
                             torch.device(device))
        conn.send((r.precision, r.info))
        calls = {"step": r.step, "sample": r.sample, "buffer": r.buffer_roundtrip, "draw": r.draw}
        while (cmd := conn.recv()) != "close":
            calls[cmd]()
            conn.send(None)
    except KeyboardInterrupt:
        print(f"{name} worker process: interrupted", file=sys.stderr, flush=True)
        sys.exit(130)  # 128 + SIGINT, as a shell reports it; multiprocessing prints no traceback for a SystemExit


def reference_worker_runner(name: str, precision: str, cfg: TrainConfig, data_dir: Path,
                            device: torch.device) -> Runner:
    """The reference in a separate (spawned) process, driven call by call from this one.

    On a CPU, fastjem's engine changes process-wide settings (glibc's malloc thresholds); the authors'
    code runs without them, so the reference gets a process of its own, at the platform's defaults. Only
    one engine computes at a time (the worker waits on its pipe), so the alternation is unchanged; a call
    costs one pipe round-trip on top (tens of microseconds against iterations of a second).
    """
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_reference_worker, args=(child, name, precision, cfg.to_dict(), str(data_dir),
                                                       device.type, torch.get_num_threads()), daemon=True)
    proc.start()
    # the worker holds the child end now: this process's copy closed, a worker that dies ends recv() with EOFError
    # (with the copy open, recv() waited for ever on a dead worker)
    child.close()
    try:
        label, info = parent.recv()
    except EOFError as err:
        proc.join(timeout=30)
        raise RuntimeError(f"the {name} worker process failed to start (exit code {proc.exitcode}; its error is "
                           "printed above)") from err

    def call(cmd: str) -> Callable[[], None]:
        def run() -> None:
            parent.send(cmd)
            try:
                parent.recv()
            except EOFError as err:
                proc.join(timeout=30)
                raise RuntimeError(f"the {name} worker process died (exit code {proc.exitcode}; its error is printed "
                                   "above)") from err
        return run

    def close() -> None:
        with contextlib.suppress(OSError, BrokenPipeError):
            parent.send("close")
        proc.join(timeout=30)

    info = {**info, "process": "its own process, at the platform's default settings"}
    return Runner(name, "reference", label, call("step"), call("sample"), call("buffer"), call("draw"), lambda: None,
                  info, close=close)


# ------------------------------------------------------------------------------ correctness gate
def _fastjem_loss(trainer: Trainer, x_p, x_lab, y_lab, x_q) -> torch.Tensor:
    """fastjem's loss on given inputs, x_q included (its own sampler is bypassed for this one call)."""
    return trainer.loss(x_p, x_lab, y_lab, x_q=x_q)[0]


# the gate's noise check: sigma, and how far the moves' standard deviation may be from sigma sqrt(steps), relatively
# (at its smallest, 4 chains of 3x8x8 in the tests, the estimate's own spread is 2.6%; dropped noise is 100% off,
# noise frozen across 2 steps 41%)
GATE_NOISE = 0.05
GATE_NOISE_TOLERANCE = 0.15


def equivalence_check(base: TrainConfig, out_dir: Path, batch_size: int, device: torch.device) -> dict:
    """fastjem (fp32, reference kernels, same seed) vs the reference on identical inputs, on WRN-10-2.

    1. SGLD: every buffer row set to the same image, no resets, no noise: fastjem's ``sample`` (buffer
       draw + SGLD + write-back) must give the reference's chain from that image.
    2. Loss and gradients: the same (x_p, x_lab, y_lab, x_q) through fastjem's loss and the reference's
       three-forward loss, same weights.
    3. SGLD noise, which 1 leaves out (fastjem draws it in its kernels, the reference with ``randn_like``, so the
       two agree in law only): no step size, noise sigma; both chains' moves must have the standard deviation
       sigma sqrt(steps) and mean 0 (a fast path that dropped the noise, froze it across steps or scaled it passed
       1 and 2).

    The network runs uncompiled here: inductor reorders reductions, and a bias gradient (a sum with
    cancellation) then differs by up to ~2e-3 of its tensor's largest entry in fp32, which would blur
    this gate. Compiled against eager is checked on its own in tests/test_engine.py.
    """
    cfg = base.replace(depth=10, width=2, precision="fp32", kernels="reference", sgld_noise=0.0, reinit_prob=0.0,
                       sgld_steps=2, buffer_size=4 * batch_size, batch_size=batch_size, compile=False)
    out = {"config": {k: getattr(cfg, k) for k in ("depth", "width", "batch_size", "sgld_steps", *ENGINE_FIELDS)},
           "passed": False}
    saved_flags = _flags()
    try:
        trainer = Trainer(cfg, out_dir=out_dir, progress=False, log=lambda *a: None)
        trainer.model.train()
        ref_model = WideResNet(cfg.depth, cfg.width, trainer.num_classes, trainer.data.sample_shape[0]).to(device)
        ref_model.load_state_dict(_strip(trainer.model.state_dict()))
        ref_model.train()
        with fp32_mode("ieee"):
            gen = torch.Generator().manual_seed(cfg.seed)
            image = (torch.rand(trainer.data.sample_shape, generator=gen) * 2 - 1).to(device)
            trainer.buffer.data.copy_(image.expand_as(trainer.buffer.data))
            x_q_fast = trainer.sample(batch_size)
            x_q_ref = sgld(ref_model, image.expand(batch_size, *image.shape), cfg.sgld_steps, cfg.sgld_step_size, 0.0)
            out["sgld_max_abs_diff"] = (x_q_fast.float() - x_q_ref).abs().max().item()
            out["sgld_moved"] = (x_q_ref - image).abs().max().item()  # the check means something only if > 0

            x_p, x_lab, y_lab = trainer.data.draw(batch_size)
            x_q = x_q_ref + 0.1 * torch.randn(x_q_ref.shape, generator=gen).to(device)  # distinct rows
            loss_ref = jem_loss(ref_model, x_p, x_lab, y_lab, x_q)
            loss_ref.backward()
            trainer.optimizer.zero_grad(set_to_none=True)
            loss_fast = _fastjem_loss(trainer, x_p, x_lab, y_lab, x_q)
            loss_fast.backward()

            noisy = Trainer(cfg.replace(sgld_step_size=0.0, sgld_noise=GATE_NOISE), out_dir=Path(f"{out_dir}-noise"),
                            progress=False, log=lambda *a: None)
            noisy.buffer.data.copy_(image.expand_as(noisy.buffer.data))
            moves = {"fastjem": noisy.sample(batch_size).float() - image,
                     "reference": sgld(ref_model, image.expand(batch_size, *image.shape), cfg.sgld_steps, 0.0,
                                       GATE_NOISE) - image}
        expected = GATE_NOISE * cfg.sgld_steps ** 0.5
        out["sgld_noise_std"] = {"expected": expected, **{k: m.std().item() for k, m in moves.items()}}
        out["sgld_noise_mean"] = {k: m.mean().item() for k, m in moves.items()}
        # the sample mean of n moves lies within 5 standard errors of 0
        mean_bound = 5 * expected / moves["fastjem"].numel() ** 0.5
        grads_ref = {k: p.grad for k, p in ref_model.named_parameters()}
        worst = 0.0
        flat_fast, flat_ref = [], []
        for k, p in trainer.model.named_parameters():
            g_ref = grads_ref[k.replace("_orig_mod.", "")]
            if p.grad is None:
                raise AssertionError(f"fastjem's loss gave no gradient for {k}")
            worst = max(worst, ((p.grad - g_ref).abs().max() / (g_ref.abs().max() + 1e-12)).item())
            flat_fast.append(p.grad.flatten())
            flat_ref.append(g_ref.flatten())
        g_fast, g_ref = torch.cat(flat_fast), torch.cat(flat_ref)
        # Normwise over all parameters: convolution algorithms differ between the two (NHWC weights, one
        # forward of 3B against three of B, for which oneDNN may pick another algorithm, e.g. Winograd),
        # which moves the fp32 gradient by ~1e-4 normwise and one tensor's largest entry by ~2e-3 of itself
        # (measured here); a wrong or missing loss term moves the whole gradient by O(1e-1) or more.
        normwise = ((g_fast - g_ref).norm() / g_ref.norm()).item()
        out.update(loss_reference=loss_ref.item(), loss_fastjem=loss_fast.item(), grad_max_rel_diff=worst,
                   grad_normwise_rel_diff=normwise)
        out["loss_abs_diff"] = abs(out["loss_reference"] - out["loss_fastjem"])
        problems = []
        if not out["sgld_max_abs_diff"] <= 1e-4:
            problems.append(f"SGLD chains differ by {out['sgld_max_abs_diff']:.3g}")
        if not out["sgld_moved"] > 0:
            problems.append("SGLD did not move the chains: the check would be vacuous")
        if not out["loss_abs_diff"] <= 1e-5 * max(1.0, abs(out["loss_reference"])):
            problems.append(f"losses differ: reference {out['loss_reference']:.7g}, fastjem {out['loss_fastjem']:.7g}")
        if not normwise <= 1e-3:
            problems.append(f"gradients differ (normwise relative difference {normwise:.3g}, "
                            f"per-tensor max {worst:.3g})")
        for k in moves:
            std, mean = out["sgld_noise_std"][k], out["sgld_noise_mean"][k]
            if not (abs(std / expected - 1) <= GATE_NOISE_TOLERANCE and abs(mean) <= mean_bound):
                problems.append(f"SGLD noise of {k}: moves of std {std:.4g} and mean {mean:.3g}, where noise "
                                f"{GATE_NOISE:g} over {cfg.sgld_steps} steps gives std {expected:.4g} and mean 0")
        out["passed"] = not problems
        out["detail"] = "; ".join(problems) or "SGLD chains and noise, loss and gradients match"
    except Exception as err:  # a gate that cannot run has not passed
        out["detail"] = f"{type(err).__name__}: {err}"
        out["traceback"] = traceback.format_exc(limit=6)
    finally:
        _set_flags(saved_flags)
    return out


# --------------------------------------------------------------------------------------- timing
def _median_ms(fn: Callable[[], object], reps: int, device: torch.device) -> float:
    return 1e3 * statistics.median(timed(fn, 1, device) for _ in range(reps))


def parts_ablation(depth: int, width: int, batch: int, device: torch.device, candidate: int = 0,
                   sms: int | None = None) -> tuple[str, dict, str] | None:
    """(engine, overrides, folder) of the SGLD parts ``--sgld-parts 0`` (auto) does not choose for WRN-depth-width
    on 32x32 RGB at ``batch`` on CUDA: one block where auto splits in two, two where it keeps one, so that each
    config checks auto's choice; None where ``candidate`` (--sgld-parts) already times two. ``sms``: the
    device's SM count by default."""
    if sms is None:
        sms = torch.cuda.get_device_properties(device).multi_processor_count
    layers = conv_layers(WideResNet(depth, width, num_classes=10), (3, 32, 32))  # shapes only: on the CPU
    if auto_sgld_parts(device, layers, batch, sms) > 1:
        return "fastjem-one-part", dict(sgld_parts=1), "one-part"
    return None if candidate == 2 else ("fastjem-parts2", dict(sgld_parts=2), "parts2")


def fastjem_candidates(depth: int, width: int, batch: int, device: torch.device, sgld_parts: int = 0,
                       overlap: bool = False, sms: int | None = None) -> list[tuple[str, dict, str]]:
    """(engine, overrides, folder) of each fastjem engine timed for WRN-depth-width at ``batch``: fp32 and the
    default everywhere; on CUDA also the ablations (SGLD graph only, weights cast at each step, the SGLD parts
    auto did not choose) and the candidates asked for (--sgld-parts, --overlap)."""
    candidates = [("fastjem-matched", dict(precision="fp32"), "matched"), ("fastjem-default", {}, "default")]
    if device.type == "cuda":
        candidates += [
            # ablation: what capturing the whole iteration adds to capturing the SGLD loop alone
            ("fastjem-sgld-graph-only", dict(iteration_graph=False), "sgld-graph"),
            # ablation: what casting the SGLD weights once per call (the bf16 default) saves over autocast's
            # casts at every forward
            ("fastjem-cast-each-step", dict(cast_weights_once=False), "cast-each-step"),
        ]
        ablation = parts_ablation(depth, width, batch, device, sgld_parts, sms)
        if ablation:
            candidates.append(ablation)
        if sgld_parts > 0:
            # candidate: another number of SGLD parts than the default's
            candidates.append((f"fastjem-parts{sgld_parts}", dict(sgld_parts=sgld_parts), "parts"))
        if overlap:
            # candidate: the data half of the gradient on a second stream while SGLD samples (off by default;
            # 1.5% slower on an H100)
            candidates.append(("fastjem-overlap", dict(overlap_data=True), "overlap"))
    return candidates


def run_config(name: str, args, device: torch.device, data_dir: Path, work: Path, gate_passed: bool) -> dict:
    depth, width = CONFIGS[name]
    b = args.batch_size
    base = TrainConfig(dataset="imagefolder", data_dir=str(data_dir), arch="wrn", depth=depth, width=width,
                       batch_size=b, sgld_steps=args.sgld_steps, buffer_size=args.buffer_size, iters=10**9,
                       ckpt_every=0, log_every=10**9, device=device.type, seed=args.seed)
    flops = count_flops(depth, width, b, args.sgld_steps)
    arrays = load_arrays("imagefolder", str(data_dir))
    optional_failures: dict[str, str] = {}
    if args.reference_process:
        runners = [reference_worker_runner("reference-ieee", "ieee", base, data_dir, device)]
    else:
        runners = [reference_runner("reference-ieee", "ieee", base, arrays.train_x, arrays.train_y, device)]
    if device.type == "cuda":
        runners.append(reference_runner("reference-default", "default", base, arrays.train_x, arrays.train_y, device))
    if gate_passed:
        candidates = fastjem_candidates(depth, width, b, device, args.sgld_parts, args.overlap)
        for engine, overrides, folder in candidates:
            if engine in args.skip:
                continue
            try:
                runners.append(fastjem_runner(engine, base.replace(**overrides, **args.fastjem_overrides),
                                              work / f"{name}-{folder}"))
            except Exception as err:  # noqa: BLE001 - a candidate's failure is recorded, not fatal
                if engine not in OPTIONAL_ENGINES:
                    raise
                optional_failures[engine] = f"{type(err).__name__}: {err}"

    # Warm-up, engine by engine: compilation, autotuning and graph capture are timed here and only here.
    for r in list(runners):
        r.enter()
        try:
            warm = [timed(r.step, 1, device) for _ in range(args.warmup)]
        except Exception as err:
            if r.name not in OPTIONAL_ENGINES:
                raise
            # a candidate engine's failure is recorded; the other engines go on
            optional_failures[r.name] = f"{type(err).__name__}: {err}"
            print(f"{r.name}: failed in warm-up ({optional_failures[r.name]}); measured without it", flush=True)
            runners.remove(r)
            r.close()
            continue
        r.result["warmup_iter_s"] = warm
        r.result["first_iter_s"] = warm[0]
        r.result["iters_per_window"] = max(1, min(args.max_iters_per_window, round(args.window_s / warm[-1])))

    # Timed windows, alternating engines; the order is reversed every other window.
    for r in runners:
        r.result["window_it_per_s"] = []
    for w in range(args.windows):
        for r in runners if w % 2 == 0 else runners[::-1]:
            r.enter()
            n = r.result["iters_per_window"]
            r.result["window_it_per_s"].append(n / timed(r.step, n, device))

    # Components, also alternated, after one untimed call of each: with the whole-iteration graph the sampler's
    # own graph is captured on its first call here (the windows never called it alone).
    for r in runners:
        r.enter()
        for fn in (r.sample, r.buffer_roundtrip, r.draw):
            timed(fn, 1, device)
    comp: dict[str, dict[str, list[float]]] = {r.name: {"sample": [], "buffer": [], "data": []} for r in runners}
    for w in range(args.component_reps):
        for r in runners if w % 2 == 0 else runners[::-1]:
            r.enter()
            comp[r.name]["sample"].append(_median_ms(r.sample, 1, device))
            comp[r.name]["buffer"].append(_median_ms(r.buffer_roundtrip, 1, device))
            comp[r.name]["data"].append(_median_ms(r.draw, 1, device))

    engines = {}
    for r in runners:
        ips = r.result["window_it_per_s"]
        med = statistics.median(ips)
        iter_ms = 1e3 / med
        c = {k: statistics.median(v) for k, v in comp[r.name].items()}
        peak = peak_flops(device_name(device), r.precision) if device.type == "cuda" else None
        engines[r.name] = {
            "kind": r.kind, "precision": r.precision, **r.info, **r.result,
            "it_per_s_median": med, "it_per_s_min": min(ips), "it_per_s_max": max(ips),
            "it_per_s_spread_pct": 100 * (max(ips) - min(ips)) / med,
            "compile_and_warmup_overhead_s": r.result["first_iter_s"] - iter_ms / 1e3,
            "components_ms": {
                "iteration": iter_ms,
                "sample": c["sample"],  # buffer draw + SGLD + write-back
                "sgld_step": (c["sample"] - c["buffer"]) / max(1, args.sgld_steps),
                "buffer": c["buffer"],  # draw (indices, resets, gather) + write-back
                "data": c["data"],  # two real batches, drawn and augmented
                "train_step_rest": iter_ms - c["sample"] - c["data"],  # loss forwards, backward, optimiser
            },
            "achieved_flops_per_s": flops["per_iter"] * med,
            "peak_flops_per_s": peak,
            "mfu": flops["per_iter"] * med / peak if peak else None,
        }
    matmul = cpu_matmul_ceiling(engines, device, 256 if args.smoke else 2048) if device.type == "cpu" else None
    ratios = {}
    paired = {}
    if gate_passed:
        def it_s(engine: str) -> float | None:
            return engines[engine]["it_per_s_median"] if engine in engines else None

        # name: (numerator, denominator); a ratio whose engines were not timed (--skip) is left out
        wanted = {"matched": ("fastjem-matched", "reference-ieee"), "default": ("fastjem-default", "reference-ieee"),
                  "iteration_graph_gain": ("fastjem-default", "fastjem-sgld-graph-only"),
                  "cast_once_gain": ("fastjem-default", "fastjem-cast-each-step"),
                  "parts_gain": ("fastjem-default", "fastjem-one-part"),
                  "overlap_gain": ("fastjem-overlap", "fastjem-default"),
                  "default_vs_reference_default": ("fastjem-default", "reference-default")}
        candidate = next((e for e in engines if e.startswith("fastjem-parts")), None)
        if candidate:
            wanted["parts_candidate_gain"] = (candidate, "fastjem-default")
        for key, (num, den) in wanted.items():
            if it_s(num) and it_s(den):
                ratios[key] = it_s(num) / it_s(den)
        # The machine's speed drifts over a run (on a shared CPU by +-15%); windows of two engines timed next to
        # each other see the same drift, so the ratio within each window pair is the steadier estimate.
        ref_windows = engines["reference-ieee"]["window_it_per_s"]
        for key, engine in (("matched", "fastjem-matched"), ("default", "fastjem-default")):
            if engine not in engines:
                continue
            per_pair = [f / r for f, r in zip(engines[engine]["window_it_per_s"], ref_windows)]
            paired[key] = {"median": statistics.median(per_pair), "min": min(per_pair), "max": max(per_pair),
                           "pairs": len(per_pair)}
    for r in runners:
        r.close()
    del runners
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    # Each config compiles a new network: start the next from a clean compile cache.
    with contextlib.suppress(Exception):
        torch._dynamo.reset()
    return {"name": name, "depth": depth, "width": width, "batch_size": b, "sgld_steps": args.sgld_steps,
            "buffer_size": args.buffer_size, "flops": flops, "engines": engines, "ratios": ratios,
            "paired_ratios": paired, "matmul": matmul, "optional_engine_failures": optional_failures,
            "status": "ok" if gate_passed else "fastjem refused: equivalence check failed"}


def cpu_matmul_ceiling(engines: dict, device: torch.device, n: int) -> dict:
    """A CPU has no datasheet peak here: each engine's FLOP/s is set against a dense n^3 matmul's at the engine's
    precision, measured now at the same threads (``of_matmul``). ``ceilings``: fastjem's matmul rate at each
    bar's precision over the reference's achieved FLOP/s, the speed-up an engine whose every FLOP ran at the
    matmul's rate would reach; the bar's ratio can only approach it."""
    rates = {p: matmul_flops(device, p, n) for p in sorted({e["precision"] for e in engines.values()})}
    for e in engines.values():
        e["matmul_flops_per_s"] = rates[e["precision"]]
        e["of_matmul"] = e["achieved_flops_per_s"] / rates[e["precision"]]
    ref = engines["reference-ieee"]["achieved_flops_per_s"]
    ceilings = {key: engines[name]["matmul_flops_per_s"] / ref
                for key, name in (("matched", "fastjem-matched"), ("default", "fastjem-default")) if name in engines}
    return {"n": n, "threads": torch.get_num_threads(), "flops_per_s": rates, "ceilings": ceilings,
            "method": f"median of 3 windows of 5 products of two {n}x{n} random matrices, one untimed before"}


# ------------------------------------------------------------------------------------- output
def markdown_table(report: dict) -> str:
    lines = [f"{report['device']['name']} ({report['device']['type']}), torch {report['versions']['torch']}, "
             f"{report['date']}, git {str(report['git']['sha'])[:10]}", "",
             "| config | batch | engine | precision | it/s (median) | min-max | ms/iter | SGLD step ms | "
             "buffer ms | data ms | vs reference fp32 | MFU |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in report["configs"]:
        if "engines" not in c:
            lines.append(f"| {c['name']} | {c.get('batch_size', '')} | {c.get('status', 'failed')} |" + " |" * 9)
            continue
        ref = c["engines"]["reference-ieee"]["it_per_s_median"]
        for name, e in c["engines"].items():
            comp = e["components_ms"]
            mfu = (f"{100 * e['mfu']:.1f}%" if e["mfu"] is not None
                   else f"{e['of_matmul']:.0%} of matmul" if e.get("of_matmul") is not None else "n/a")
            lines.append(
                f"| {c['name']} | {c['batch_size']} | {name} | {e['precision']} | {e['it_per_s_median']:.3f} | "
                f"{e['it_per_s_min']:.3f}-{e['it_per_s_max']:.3f} | {comp['iteration']:.1f} | "
                f"{comp['sgld_step']:.2f} | "
                f"{comp['buffer']:.2f} | {comp['data']:.2f} | x{e['it_per_s_median'] / ref:.2f} | {mfu} |")
    return "\n".join(lines)


def bar_wanted(report: dict) -> tuple[str, int]:
    """The (config, batch size) the bars are stated for: WRN-10-2 b16 on CPU, WRN-28-10 b64 on CUDA."""
    return ("wrn-28-10", 64) if report["device"]["type"] == "cuda" else ("wrn-10-2", 16)


def bar_config(report: dict) -> dict | None:
    """The bars' configuration (``bar_wanted``) where the run measured it; else the last configuration it measured."""
    done = [c for c in report["configs"] if "engines" in c]
    for c in done:
        if (c["name"], c["batch_size"]) == bar_wanted(report):
            return c
    return done[-1] if done else None


def ratio_lines(report: dict) -> list[str]:
    lines = []
    for c in report["configs"]:
        for key, value in c.get("ratios", {}).items():
            lines.append(f"ratio_{key}[{c['name']},b{c['batch_size']}]: {value:.3f}")
        for key, p in c.get("paired_ratios", {}).items():
            lines.append(f"ratio_{key}_paired[{c['name']},b{c['batch_size']}]: {p['median']:.3f} "
                         f"(window pairs {p['min']:.3f}-{p['max']:.3f}, n={p['pairs']})")
    bar = bar_config(report)
    if bar is None or not bar.get("ratios"):
        why = "refused (equivalence check failed)" if not report["gate"]["passed"] else "not measured"
        lines += [f"ratio_matched: {why}", f"ratio_default: {why}"]
        return lines
    # another configuration's figures (the bar's was not measured) name it on each line: read as the bar's, a smoke
    # run's WRN-10-2 at batch 4 passed for the CPU bar
    want = bar_wanted(report)
    other = (bar["name"], bar["batch_size"]) != want
    tag = f" ({bar['name']} batch {bar['batch_size']}, not the bar's)" if other else ""
    lines.append(f"bar_config: {bar['name']} batch {bar['batch_size']} sgld_steps {bar['sgld_steps']}"
                 + (f" (the bar's {want[0]} batch {want[1]} not measured in this run)" if other else ""))
    for key in ("matched", "default"):
        ratio = bar["ratios"].get(key)
        lines.append(f"ratio_{key}: " + (f"{ratio:.3f}{tag}" if ratio is not None else "not measured (--skip)"))
    for key, engine in (("default", "fastjem-default"), ("matched", "fastjem-matched")):
        mfu = bar["engines"].get(engine, {}).get("mfu")
        if mfu is not None:
            lines.append(f"mfu_{key}: {mfu:.4f}{tag}")
    matmul = bar.get("matmul")
    if matmul:
        ref = bar["engines"]["reference-ieee"]
        for key, ceiling in matmul["ceilings"].items():
            e = bar["engines"][f"fastjem-{key}"]
            lines.append(f"ceiling_{key}: x{ceiling:.2f} (a {matmul['n']}^3 {e['precision']} matmul "
                         f"{e['matmul_flops_per_s'] / 1e9:.0f} GFLOP/s over the reference's "
                         f"{ref['achieved_flops_per_s'] / 1e9:.0f}; fastjem reaches {e['of_matmul']:.0%} of it, "
                         f"the reference {ref['of_matmul']:.0%} of the fp32 one){tag}")
    return lines


# --------------------------------------------------------------------------------------- main
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--configs", default="", help=f"comma-separated, from {', '.join(CONFIGS)}; default: CPU wrn-10-2, "
                   "CUDA all")
    p.add_argument("--batch-size", type=int, default=0, help="default: 16 on CPU, 64 on CUDA")
    p.add_argument("--sgld-steps", type=int, default=20)
    p.add_argument("--buffer-size", type=int, default=10000)
    p.add_argument("--warmup", type=int, default=None, help="warm-up iterations per engine, at least 1: they compile "
                   "and capture, and are never timed (default 3 CUDA, 2 CPU)")
    p.add_argument("--windows", type=int, default=5, help="timed windows per engine")
    p.add_argument("--window-s", type=float, default=0.0, help="target seconds per window (default 2 CUDA, 3 CPU)")
    p.add_argument("--max-iters-per-window", type=int, default=200)
    p.add_argument("--component-reps", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--time-budget", type=float, default=0.0,
                   help="seconds; a config starts only with as many seconds left as the slowest so far took")
    p.add_argument("--threads", type=int, default=0, help="CPU threads for torch (0 = torch's default; smoke: 1)")
    p.add_argument("--no-compile", action="store_true", help="fastjem engines with compile off (recorded)")
    p.add_argument("--compile", choices=("auto", "on", "off"), default=None,
                   help="fastjem engines' compile mode (default: the config default, auto; recorded)")
    p.add_argument("--smoke", action="store_true", help="tiny run (WRN-10-2, batch 4, 2 SGLD steps, 1-iteration "
                   "windows, compile off): checks the harness end to end in well under a minute on CPU")
    p.add_argument("--reference-process", action=argparse.BooleanOptionalAction, default=None,
                   help="run the reference in its own process, at the platform's default settings (default: on CPU, "
                        "where fastjem's engine tunes the process-wide allocator); --no-reference-process shares "
                        "this process with fastjem, which isolates what the engine's structure buys")
    p.add_argument("--overlap", action="store_true", help="also time the --overlap-data candidate (CUDA)")
    p.add_argument("--sgld-parts", type=int, default=0, choices=(0, 2, 4),
                   help="also time the --sgld-parts N candidate on CUDA as fastjem-partsN (default 0: not timed; "
                        "the default engine's parts are auto's choice per config, and the other choice, 1 or 2, "
                        "is timed as fastjem-one-part or fastjem-parts2)")
    p.add_argument("--skip", default="", help="comma-separated fastjem engines not to time (fastjem-matched, "
                   "fastjem-sgld-graph-only, fastjem-cast-each-step, fastjem-one-part, fastjem-parts2): a shorter "
                   "run; the ratios they enter are left out")
    p.add_argument("--out", default=str(RESULTS), type=results_folder,
                   help="folder for the JSON (default bench/results)")
    args = p.parse_args(argv)
    args.device = pick_device(p, args.device).type
    cuda = args.device == "cuda"
    if args.smoke:
        smoke_sizes(p, args, {"configs": "wrn-10-2", "batch_size": 4, "sgld_steps": 2, "buffer_size": 200, "warmup": 1,
                              "windows": 2, "window_s": 0.0, "max_iters_per_window": 1, "component_reps": 1})
        args.no_compile = True
        # One thread: on a shared machine, oversubscribed OpenMP threads make tiny ops 10-20x slower.
        args.threads = args.threads or 1
    args.configs = [c.strip().lower() for c in (args.configs or ("wrn-10-2,wrn-16-8,wrn-28-10" if cuda else
                                                                  "wrn-10-2")).split(",") if c.strip()]
    for name, low in (("batch_size", 0), ("sgld_steps", 1), ("buffer_size", 1), ("warmup", 1), ("windows", 1),
                      ("window_s", 0), ("max_iters_per_window", 1), ("component_reps", 1), ("threads", 0),
                      ("time_budget", 0)):
        if getattr(args, name) is not None and not getattr(args, name) >= low:
            p.error(f"--{name.replace('_', '-')} must be >= {low}, got {getattr(args, name)}")
    unknown = [c for c in args.configs if c not in CONFIGS]
    if unknown:
        p.error(f"unknown config(s) {', '.join(unknown)}; choose from {', '.join(CONFIGS)}")
    # a repeat was timed again, its row twice in the results
    refuse_repeats(p, "--configs", args.configs, "each config is timed once")
    skippable = ("fastjem-matched", "fastjem-sgld-graph-only", "fastjem-cast-each-step", "fastjem-one-part",
                 "fastjem-parts2")
    args.skip = {e.strip() for e in args.skip.split(",") if e.strip()}
    if args.skip - set(skippable):
        p.error(f"--skip takes {', '.join(skippable)}; got {', '.join(sorted(args.skip - set(skippable)))}")
    if args.reference_process is None:
        args.reference_process = not cuda
    args.batch_size = args.batch_size or (64 if cuda else 16)
    args.warmup = args.warmup if args.warmup is not None else (3 if cuda else 2)
    args.window_s = args.window_s or (2.0 if cuda else 3.0)
    args.fastjem_overrides = {"compile": "off"} if args.no_compile else {}
    if args.compile is not None and not args.no_compile:
        args.fastjem_overrides = {"compile": args.compile}
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()  # a SIGTERM still removes the temporary folders
    t_start = time.perf_counter()
    device = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    # Every engine of every config compiles the same WideResNet.forward in this one process (train and sampling
    # shapes, precisions, parts): more variants than dynamo's default 8 per function, past which it would run the
    # later engines uncompiled and time the wrong thing.
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
    ignored = [flag for flag, given in (("--overlap", args.overlap), ("--sgld-parts", args.sgld_parts > 0)) if given]
    if device.type != "cuda" and ignored:
        print(f"note: {' and '.join(ignored)} time CUDA candidates; on {device.type} they are not timed")
    started = now_utc()
    report = {
        "schema": SCHEMA, "date": started.isoformat(timespec="seconds"), "device": device_info(device),
        "versions": versions(), "git": git_state(), "smoke": args.smoke,
        "args": {k: v for k, v in vars(args).items() if k != "fastjem_overrides"},
        "fastjem_overrides": args.fastjem_overrides,
        "method": "alternating windows in one process; warm-up (compile, graph capture) excluded and reported as "
                  "warmup_iter_s; device synchronised before every clock read; median over windows",
        "configs": [],
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = None

    def save() -> None:
        # Written after every config, before its line is printed, so a run cut short (a stage timeout, Ctrl-C) still
        # leaves what it measured and printed; the first write claims a file of its own (a run started in the same
        # second keeps its file)
        nonlocal path
        report["total_seconds"] = time.perf_counter() - t_start
        path = write_result(report, "steps", device, started, out, path)

    with tempfile.TemporaryDirectory(prefix="fastjem-bench-") as tmp:
        tmp = Path(tmp)
        # Decoded-dataset caches go to the temp folder, not the user's cache.
        os.environ.setdefault("FASTJEM_CACHE", str(tmp / "cache"))
        data_dir = write_synthetic_imagefolder(tmp / "data")
        base = TrainConfig(dataset="imagefolder", data_dir=str(data_dir), arch="wrn", iters=10**9, ckpt_every=0,
                           log_every=10**9, device=device.type, seed=args.seed, **args.fastjem_overrides)
        t0 = time.perf_counter()
        report["gate"] = equivalence_check(base, tmp / "gate", min(args.batch_size, 8), device)
        report["gate"]["seconds"] = time.perf_counter() - t0
        save()
        print(f"equivalence check: {'passed' if report['gate']['passed'] else 'FAILED'} ({report['gate']['detail']})",
              flush=True)
        slowest = 0.0
        for name in args.configs:
            if not fits_budget(time.perf_counter() - t_start, args.time_budget, slowest):
                report["configs"].append({"name": name, "batch_size": args.batch_size,
                                          "status": "skipped: time budget"})
                continue
            t0 = time.perf_counter()
            try:
                result = run_config(name, args, device, data_dir, tmp / "runs", report["gate"]["passed"])
            except Exception as err:
                result = {"name": name, "batch_size": args.batch_size, "status": f"failed: {type(err).__name__}: {err}",
                          "traceback": traceback.format_exc(limit=8)}
                print(result["traceback"], file=sys.stderr)
            result["seconds"] = time.perf_counter() - t0
            slowest = max(slowest, result["seconds"])
            report["configs"].append(result)
            save()
            print(f"{name}: {result['status']} ({result['seconds']:.0f} s)", flush=True)
    save()
    print()
    print(markdown_table(report))
    print()
    for line in ratio_lines(report):
        print(line)
    print(f"results: {path}")
    return exit_status(report)


def fits_budget(elapsed, budget, slowest):
    """Whether a config may start ``elapsed`` seconds into a ``budget`` (0: none): only with at least as many
    seconds left as the slowest config so far took. A config's time is mostly its fixed timed windows and
    compilations, not its FLOPs, so a smaller network takes about as long; one started short of that would be
    killed by the caller's timeout (the GPU suite's) with nothing written for it."""
    return not budget or budget - elapsed >= max(slowest, 0.0) and elapsed <= budget


def exit_status(report: dict) -> int:
    """2: the equivalence gate failed; 1: a config failed, or none was measured; else 0 (a config skipped for
    lack of time is recorded in the results, not a failure)."""
    if not report["gate"]["passed"]:
        return 2
    statuses = [c.get("status", "") for c in report["configs"]]
    return 0 if "ok" in statuses and all(s == "ok" or s.startswith("skipped") for s in statuses) else 1


if __name__ == "__main__":
    sys.exit(run_script(main))

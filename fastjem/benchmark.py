"""``fastjem bench``: what SGLD sampling costs on this device, measured with the installed library alone.

The sampler runs exactly as training runs it (the engine resolved for the device: precision, compile,
CUDA graph, kernels; frozen weights, eval mode), on random chains of the given shape. Reported: the
time of one SGLD call (``sgld_steps`` steps over the batch) as the median of timed windows after a
warm-up that absorbs compilation and graph capture (reported apart), per-step time, chains advanced
per second, and the FLOP rate (FLOPs counted by ``torch.utils.flop_counter`` on the meta device:
forward plus input gradient per step). The repository's ``bench/`` has the side-by-side comparison with
the authors' eager implementation; this command is for sizing a run on your own hardware.
"""

from __future__ import annotations

import copy
import json
import platform
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

import torch
from torch import nn

import fastjem
from fastjem.checkpoint import atomic_write_text
from fastjem.config import TrainConfig
from fastjem.engine import cpu_bf16_flags, device_name, engine_networks, resolve_engine
from fastjem.kernels._dispatch import triton
from fastjem.models import build_model, check_image_size, has_batch_norm, has_dropout
from fastjem.sampler import SGLD


def _network(cfg: TrainConfig, num_classes: int, channels: int, model: nn.Module | None) -> nn.Module:
    """A copy of ``model`` (the caller's module is left as it is), else the network ``cfg`` describes."""
    if model is not None:
        return copy.deepcopy(model)
    return build_model(cfg.arch, num_classes, channels, cfg.depth, cfg.width, cfg.norm, cfg.dropout)


def sgld_step_flops(cfg: TrainConfig, num_classes: int, channels: int, size: int, batch_size: int,
                    model: nn.Module | None = None) -> dict:
    """FLOPs of one SGLD step (forward + input gradient) and of one forward, counted on the meta device."""
    from torch.utils.flop_counter import FlopCounterMode

    model = _network(cfg, num_classes, channels, model).to("meta").eval()
    model.requires_grad_(False)
    x = torch.empty(batch_size, channels, size, size, device="meta")
    with FlopCounterMode(display=False) as counter:
        model(x)
    forward = counter.get_total_flops()
    with FlopCounterMode(display=False) as counter:
        xr = x.clone().requires_grad_(True)
        model(xr).logsumexp(1).sum().backward()
    return {"sgld_step": counter.get_total_flops(), "forward": forward}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def build_sampler_call(cfg: TrainConfig, device: torch.device, num_classes: int = 10, channels: int = 3,
                       size: int = 32, model: nn.Module | None = None, cpp_wrapper: bool = True):
    """(call, engine): ``call()`` runs ``cfg.sgld_steps`` SGLD steps on a fixed random batch, as training would
    (the engine resolved for ``device``; replayed from a CUDA graph when the engine has one). ``model``: your own
    network (a copy is timed) in place of the one ``cfg`` describes. ``cpp_wrapper`` False: a CPU engine's compiled
    SGLD gradient called from Python (``engine_networks``), as a profile needs it."""
    if model is None:
        check_image_size(cfg.arch, cfg.norm, size, width=cfg.width)
    torch.manual_seed(cfg.seed)
    model = _network(cfg, num_classes, channels, model).to(device)
    engine = resolve_engine(cfg, device, has_batch_norm(model), has_dropout=has_dropout(model))
    nets = engine_networks(engine, model, (channels, size, size), cfg, cpp_wrapper=cpp_wrapper)
    engine, cast_copy = nets.engine, nets.cast_copy
    sampler = SGLD(cfg.sgld_steps, cfg.sgld_step_size, cfg.sgld_noise, seed=cfg.seed, backend=engine.kernels,
                   compiled_update=engine.compile_sgld)
    x0 = torch.rand(cfg.batch_size, channels, size, size, device=device) * 2 - 1
    parts = min(engine.sgld_parts, cfg.batch_size)
    if engine.cuda_graph:
        run = nets.graphed(sampler, x0, parts=parts)
    else:
        energy_for = nets.energies()
        run = lambda x: sampler.sample_parts(energy_for, x, parts, model=nets.sgld_model)  # noqa: E731

    def call() -> torch.Tensor:
        if cast_copy is not None:
            cast_copy.refresh_()
        return run(x0)

    return call, engine


def bench_sampler(cfg: TrainConfig, device: torch.device, num_classes: int = 10, channels: int = 3, size: int = 32,
                  seconds: float = 10.0, warmup: int = 3, model: nn.Module | None = None) -> dict:
    """Time ``cfg.sgld_steps`` SGLD steps over a batch of ``cfg.batch_size`` chains; see the module doc.
    ``model``: your own network (images [B, channels, size, size] -> logits) instead of ``cfg``'s."""
    t0 = time.perf_counter()
    call, engine = build_sampler_call(cfg, device, num_classes, channels, size, model)
    for _ in range(max(1, warmup)):
        call()
    _sync(device)
    warmup_s = time.perf_counter() - t0
    # size the windows from one timed call: about ten windows in ``seconds``
    t1 = time.perf_counter()
    call()
    _sync(device)
    one = time.perf_counter() - t1
    per_window = max(1, round(seconds / 10 / max(one, 1e-9)))
    windows = []
    deadline = time.perf_counter() + seconds
    while len(windows) < 3 or (time.perf_counter() < deadline and len(windows) < 50):
        t = time.perf_counter()
        for _ in range(per_window):
            call()
        _sync(device)
        windows.append((time.perf_counter() - t) / per_window)
    call_s = statistics.median(windows)
    flops = sgld_step_flops(cfg, num_classes, channels, size, cfg.batch_size, model)
    result = {
        "model": type(model).__name__ if model is not None else cfg.model_name, "batch_size": cfg.batch_size,
        "sgld_steps": cfg.sgld_steps,
        "input": [channels, size, size], "num_classes": num_classes, "device": device_name(device),
        "device_type": device.type,
        # on a CPU the threads set the speed as much as the CPU does
        "torch_threads": torch.get_num_threads() if device.type == "cpu" else None,
        "cpu_bf16_flags": cpu_bf16_flags() if device.type == "cpu" else None, "seed": cfg.seed,
        "precision": engine.precision, "precision_requested": cfg.precision,
        "engine": engine.describe(), "engine_notes": list(engine.notes), "fastjem": fastjem.__version__,
        "torch": torch.__version__, "triton": triton.__version__ if triton is not None else None,
        "python": platform.python_version(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds_asked": seconds, "warmup_s": warmup_s, "windows": len(windows), "calls_per_window": per_window,
        "window_call_ms": [1e3 * w for w in windows],
        "sgld_call_ms": 1e3 * call_s, "sgld_call_ms_min": 1e3 * min(windows), "sgld_call_ms_max": 1e3 * max(windows),
        "sgld_step_ms": 1e3 * call_s / max(1, cfg.sgld_steps),
        "chains_per_s": cfg.batch_size / call_s,
        "flops_per_step": flops["sgld_step"], "flops_per_forward": flops["forward"],
        "tflop_per_s": flops["sgld_step"] * cfg.sgld_steps / call_s / 1e12,
    }
    return result


def print_result(r: dict) -> None:
    print(f"fastjem bench: {r['model']}, batch {r['batch_size']}, {r['sgld_steps']} SGLD steps, input "
          f"{'x'.join(map(str, r['input']))}, on {r['device']}")
    print(f"  engine          {r['engine']}")
    for note in r["engine_notes"]:
        print(f"                  ({note})")
    print(f"  warm-up         {r['warmup_s']:.1f} s (compilation, autotuning, graph capture)")
    print(f"  SGLD call       {r['sgld_call_ms']:.2f} ms (median of {r['windows']} windows, "
          f"{r['sgld_call_ms_min']:.2f}-{r['sgld_call_ms_max']:.2f})")
    print(f"  per step        {r['sgld_step_ms']:.3f} ms, {r['flops_per_step'] / 1e9:.1f} GFLOP -> "
          f"{r['tflop_per_s']:.2f} TFLOP/s")
    print(f"  throughput      {r['chains_per_s']:.1f} chains/s advanced by {r['sgld_steps']} steps")


def _precision_label(r: dict) -> str:
    """The precision a run used, and what was asked for when that differs (auto -> fp32)."""
    asked = r.get("precision_requested")
    return r["precision"] if asked in (None, r["precision"]) else f"{asked} -> {r['precision']}"


def print_scaling(results: list[dict]) -> None:
    """One line per run (batch size, precision): how the cost of a step and the throughput scale."""
    print(f"\n{results[0]['model']}, {results[0]['sgld_steps']} SGLD steps, on {results[0]['device']}:")
    print(f"  {'precision':>14} {'batch':>6} {'ms/step':>10} {'ms/step/chain':>14} {'chains/s':>10} {'TFLOP/s':>9}")
    for r in results:
        print(f"  {_precision_label(r):>14} {r['batch_size']:>6} {r['sgld_step_ms']:>10.3f} "
              f"{r['sgld_step_ms'] / r['batch_size']:>14.4f} {r['chains_per_s']:>10.1f} {r['tflop_per_s']:>9.2f}")


def print_precisions(results: list[dict]) -> None:
    """For each batch size, each precision's step time against the first precision's, and the fastest."""
    for b in dict.fromkeys(r["batch_size"] for r in results):
        rows = [r for r in results if r["batch_size"] == b]
        first = rows[0]
        fastest = min(rows, key=lambda r: r["sgld_step_ms"])
        print(f"\nprecision at batch {b} (speed against {_precision_label(first)}):")
        for r in rows:
            print(f"  {_precision_label(r):>14} {r['sgld_step_ms']:>10.3f} ms/step  "
                  f"x{first['sgld_step_ms'] / r['sgld_step_ms']:.2f}" + ("  fastest" if r is fastest else ""))


def plot_batch_scaling(results: list[dict], path: str | Path) -> Path:
    """chains/s and ms per SGLD step against the batch size (log x axis), as a PNG at ``path``."""
    from fastjem.eval.plots import _figures, _save

    plt = _figures()
    rs = sorted(results, key=lambda r: r["batch_size"])
    b = sorted({r["batch_size"] for r in rs})
    labels = list(dict.fromkeys(_precision_label(r) for r in results))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for label in labels:  # one line per precision
        line = [r for r in rs if _precision_label(r) == label]
        x = [r["batch_size"] for r in line]
        ax1.plot(x, [r["chains_per_s"] for r in line], "o-", label=label)
        ax2.plot(x, [r["sgld_step_ms"] for r in line], "o-", label=label)
    ax1.set(ylabel=f"chains/s advanced by {rs[0]['sgld_steps']} steps", title="throughput")
    ax2.set(ylabel="ms per SGLD step", title="step time")
    if len(labels) > 1:
        ax1.legend(title="precision")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xticks(b, [str(x) for x in b])
        ax.minorticks_off()
        ax.set_xlabel("batch size (chains)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    what = rs[0]["engine"] if len(labels) == 1 else f"precisions {', '.join(labels)}"
    fig.suptitle(f"fastjem bench: {rs[0]['model']} on {rs[0]['device']} ({what})", fontsize=9)
    fig.tight_layout()
    return _save(fig, path)


def write_result(r: dict | list[dict], path: str | Path) -> Path:
    path = Path(path)
    atomic_write_text(json.dumps(r, indent=2) + "\n", path)  # its folder made; a failed write leaves the old file whole
    return path

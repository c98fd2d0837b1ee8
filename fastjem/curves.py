"""Training curves from a run's metrics.jsonl: loss, accuracy, energies, throughput, as one PNG.

Written at the end of ``fastjem train`` (``curves.png`` in the run folder) and by ``fastjem plot RUN`` at any
time, a running job included. A record whose iteration is not past the last one kept (a resumed run, or a
divergence rollback that recomputed iterations) replaces the records it overlaps, so the curves show the
iterations the final model went through; rollbacks are marked.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from fastjem.errors import ConfigError


@dataclass
class Metrics:
    train: list[dict] = field(default_factory=list)  # every log_every iterations: loss, acc, energies, it/s, lr
    evals: list[dict] = field(default_factory=list)  # val_acc (and test_acc at the end)
    events: list[dict] = field(default_factory=list)  # divergence recoveries


def _keep_before(records: list[dict], it: int) -> list[dict]:
    return [r for r in records if r["iter"] < it]


def read_metrics(path: str | os.PathLike) -> Metrics:
    """Parse metrics.jsonl (a run folder or the file). A torn last line (a run killed mid-write) is skipped."""
    path = Path(path)
    if path.is_dir():
        path = path / "metrics.jsonl"
    if not path.exists():
        raise ConfigError(f"{path} does not exist: give a fastjem run folder (the --out-dir of fastjem train)")
    m = Metrics()
    for line in path.read_text().splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(r, dict) or "iter" not in r:
            continue
        if "event" in r:
            m.events.append(r)
        elif "loss" in r:
            m.train = _keep_before(m.train, r["iter"]) + [r]
            m.evals = _keep_before(m.evals, r["iter"])  # an iteration's evaluation is logged after its record
        elif "val_acc" in r:
            m.evals = _keep_before(m.evals, r["iter"]) + [r]
    return m


def plot_curves(metrics: Metrics, path: str | os.PathLike, title: str = "") -> Path:
    """Four panels against iteration: loss (and cross-entropy), train / validation / test accuracy, mean
    energy of data and samples (JEM runs), iterations per second with the learning rate."""
    from fastjem.eval.plots import _pyplot, _save

    if not metrics.train:
        raise ConfigError("no training records to plot yet (the first comes after --log-every iterations)")
    plt = _pyplot()
    it = [r["iter"] for r in metrics.train]

    def col(key):
        return [r.get(key, float("nan")) for r in metrics.train]

    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5), sharex=True)
    ax = axes[0, 0]
    ax.plot(it, col("loss"), label="loss")
    if any("ce" in r for r in metrics.train):
        ax.plot(it, col("ce"), label="cross-entropy", alpha=0.8)
    ax.set_ylabel("loss")
    ax.legend(fontsize=8)
    ax = axes[0, 1]
    ax.plot(it, col("acc"), label="train (batch)")
    val = [e for e in metrics.evals if "val_acc" in e]
    if val:
        ax.plot([e["iter"] for e in val], [e["val_acc"] for e in val], "o-", ms=3, label="validation")
    test = [e for e in metrics.evals if "test_acc" in e]
    if test:
        ax.plot([test[-1]["iter"]], [test[-1]["test_acc"]], "*", ms=12, label=f"test {test[-1]['test_acc']:.4f}")
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=8)
    ax = axes[1, 0]
    if any("e_data" in r for r in metrics.train):
        ax.plot(it, col("e_data"), label="data")
        ax.plot(it, col("e_sample"), label="SGLD samples")
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "classifier only: no samples", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylabel("mean energy E(x) = -LSE f(x)")
    ax.set_xlabel("iteration")
    ax = axes[1, 1]
    ax.plot(it, col("it_per_s"), color="tab:green")
    ax.set_ylabel("iterations / s", color="tab:green")
    ax.set_xlabel("iteration")
    lr = ax.twinx()
    lr.plot(it, col("lr"), color="tab:purple", alpha=0.7)
    lr.set_ylabel("learning rate", color="tab:purple")
    for e in metrics.events:
        for a in axes.flat:
            a.axvline(e["iter"], color="tab:red", ls="--", lw=0.8)
    if metrics.events:
        axes[0, 0].plot([], [], color="tab:red", ls="--", lw=0.8, label="divergence, rolled back")
        axes[0, 0].legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def plot_run(run: str | os.PathLike, out: str | os.PathLike | None = None) -> Path:
    """curves.png (or ``out``) for the run folder ``run``; its config names the title when there is one."""
    run = Path(run)
    folder = run if run.is_dir() else run.parent
    title = folder.name
    cfg_path = folder / "config.json"
    if cfg_path.exists():
        try:
            cfg = json.loads(cfg_path.read_text())
            title = f"{folder.name}: {cfg.get('dataset')}, {cfg.get('arch')}, batch {cfg.get('batch_size')}"
        except (json.JSONDecodeError, AttributeError):
            pass
    return plot_curves(read_metrics(run), out or folder / "curves.png", title)

"""Training curves from a run's metrics.jsonl: loss, accuracy, energies, throughput, as one PNG.

Written at the end of ``fastjem train`` (``curves.png`` in the run folder) and by ``fastjem plot RUN`` at any
time, a running job included. A record whose iteration is not past the last one kept (a resumed run, or a
divergence rollback that recomputed iterations) replaces the records it overlaps, so the curves show the
iterations the final model went through; rollbacks are marked.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from fastjem.errors import ConfigError

# the numbers of a training or evaluation record (metrics.jsonl writes one that is NaN or infinite as null)
NUMBERS = ("loss", "ce", "acc", "e_data", "e_sample", "gap", "epoch", "it_per_s", "lr", "val_acc", "val_nll",
           "test_acc", "test_nll")


@dataclass
class Metrics:
    train: list[dict] = field(default_factory=list)  # every log_every iterations: loss, acc, energies, it/s, lr
    evals: list[dict] = field(default_factory=list)  # val_acc (and test_acc at the end)
    events: list[dict] = field(default_factory=list)  # divergence recoveries
    generative: bool = True  # False for a classifier-only run: its logged energies are placeholders

    def __repr__(self) -> str:
        # counts and the span, not every record (a long run logs thousands)
        span = f" (iterations {self.train[0]['iter']}..{self.train[-1]['iter']})" if self.train else ""
        return (f"Metrics({len(self.train)} training records{span}, {len(self.evals)} evaluations, "
                f"{len(self.events)} divergence events, generative={self.generative})")


def _folder(run: str | os.PathLike) -> Path:
    """The run folder, given the folder or its metrics.jsonl."""
    run = Path(run)
    return run if run.is_dir() else run.parent


def _run_config(folder: Path) -> dict | None:
    """The run's config.json as a dict, or None when it is missing or unreadable."""
    try:
        cfg = json.loads((folder / "config.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return cfg if isinstance(cfg, dict) else None


def _generative(folder: Path, train: list[dict]) -> bool:
    """From the run's config.json (px or pxy weight > 0); without one, whether any sample energy was logged."""
    cfg = _run_config(folder)
    if cfg is None:
        return any(r.get("e_sample", 0.0) != 0.0 for r in train)
    return cfg.get("px_weight", 1.0) > 0 or cfg.get("pxy_weight", 0.0) > 0


def _keep_before(records: list[dict], it: int) -> None:
    """Drop, in place, the records at iteration ``it`` or later. The lists read_metrics builds are in increasing
    iteration order, so they go from the end: a pass over the whole list per line made a long log's read quadratic
    (300 000 lines: hours)."""
    while records and records[-1]["iter"] >= it:
        records.pop()


def read_metrics(path: str | os.PathLike) -> Metrics:
    """Parse metrics.jsonl (a run folder or the file). A torn last line (a run killed mid-write) is skipped."""
    path = Path(path)
    if path.is_dir():
        path = path / "metrics.jsonl"
    if not path.exists():
        if (path.parent / "checkpoint.pt").exists() or (path.parent / "config.json").exists():
            from fastjem.checkpoint import RUN_LOCK, lock_holder

            holder = lock_holder(path.parent / RUN_LOCK)
            if holder is not None:
                # not "stopped": a run still training has not reached its first log line yet
                raise ConfigError(f"{path.parent} has no records yet (no metrics.jsonl): its run is still training "
                                  f"({holder}) and logs its first line after --log-every iterations: plot it again "
                                  "then")
            raise ConfigError(f"{path.parent} has no records yet (no metrics.jsonl): the run stopped before its first "
                              "log line (--log-every), so there is nothing to plot")
        raise ConfigError(f"{path} does not exist: give a fastjem run folder (the --out-dir of fastjem train)")
    if path.suffix != ".jsonl":
        raise ConfigError(f"{path} is not a metrics.jsonl: give a fastjem run folder (the --out-dir of fastjem "
                          "train) or its metrics.jsonl")
    m = Metrics()
    for line in path.read_text().splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(r, dict) or "iter" not in r:
            continue
        # a number JSON cannot hold (a NaN loss) is written as null: read back as NaN, a gap in the curves
        r = {k: math.nan if v is None and k in NUMBERS else v for k, v in r.items()}
        if "event" in r:
            m.events.append(r)
        elif "loss" in r:
            _keep_before(m.train, r["iter"])
            m.train.append(r)
            _keep_before(m.evals, r["iter"])  # an iteration's evaluation is logged after its record
        elif "val_acc" in r or "test_acc" in r:  # the end record has no val_acc without a validation set
            _keep_before(m.evals, r["iter"])
            m.evals.append(r)
    m.generative = _generative(path.parent, m.train)
    return m


def plot_curves(runs: Metrics | dict[str, Metrics], path: str | os.PathLike, title: str = "") -> Path:
    """Four panels against iteration: loss (and cross-entropy), train / validation / test accuracy, mean
    energy of data and samples (JEM runs), iterations per second (and the learning rate for one run).

    ``runs`` is one run's Metrics, or {label: Metrics} to overlay several (one colour each: an ablation, or a
    JEM against its classifier-only baseline)."""
    from fastjem.eval.plots import COLOURS, _figures, _save

    if isinstance(runs, Metrics):
        runs = {"": runs}
    empty = [label for label, m in runs.items() if not m.train]
    # a run that diverged before its first log line has divergence events and no training records
    diverged = [label for label in empty if runs[label].events]
    waiting = [label for label in empty if label not in diverged]
    if len(empty) == len(runs):
        where = f" in {', '.join(empty)}" if empty[0] else ""
        if diverged:
            raise ConfigError(f"nothing to plot{where}: the run diverged before its first training record (see its "
                              "metrics.jsonl; fastjem runs shows it as diverged)")
        raise ConfigError(f"no training records to plot yet{where} (the first comes after --log-every iterations)")
    # an overlay leaves them out, and says so in the title
    runs = {label: m for label, m in runs.items() if m.train}
    notes = ([f"not plotted, diverged before any record: {', '.join(diverged)}"] if diverged else []) + \
        ([f"not plotted, no records yet: {', '.join(waiting)}"] if waiting else [])
    if notes:
        title = "; ".join(([title] if title else []) + notes)
    plt = _figures()
    many = len(runs) > 4
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5), sharex=True)
    single = len(runs) == 1
    generative = False
    # more runs than the palette: tab20's colours (an overlaid sweep of 12 runs stays readable)
    palette = COLOURS if len(runs) <= len(COLOURS) else [plt.get_cmap("tab20")(i % 20) for i in range(len(runs))]
    for k, (label, m) in enumerate(runs.items()):
        colour = palette[k]
        it = [r["iter"] for r in m.train]
        # one record: a marker, since a line through one point draws nothing
        dot = {"marker": "o", "ms": 4} if len(it) == 1 else {}

        def col(key, m=m):
            return [r.get(key, float("nan")) for r in m.train]

        def name(what, label=label):
            return f"{label}: {what}" if label else what

        axes[0, 0].plot(it, col("loss"), color=colour, label=name("loss"), **dot)
        if any("ce" in r for r in m.train):
            axes[0, 0].plot(it, col("ce"), color=colour, ls="--", alpha=0.8, label=name("cross-entropy"), **dot)
        ax = axes[0, 1]
        ax.plot(it, col("acc"), color=colour, lw=1, alpha=0.7, label=name("train (batch)"), **dot)
        val = [e for e in m.evals if "val_acc" in e]
        if val:
            ax.plot([e["iter"] for e in val], [e["val_acc"] for e in val], "o--", color=colour, ms=3,
                    label=name("validation"))
            kept = [e for e in val if e.get("best")]
            if kept:  # the last one written is what best.pt holds
                ax.plot([kept[-1]["iter"]], [kept[-1]["val_acc"]], "o", mfc="none", color=colour, ms=10,
                        label=name(f"best.pt (iteration {kept[-1]['iter']})"))
        test = [e for e in m.evals if "test_acc" in e]
        if test:  # behind the lines: the validation point of the same (last) iteration stays in sight
            ax.plot([test[-1]["iter"]], [test[-1]["test_acc"]], "*", color=colour, ms=12, zorder=1.5,
                    label=name(f"test {test[-1]['test_acc']:.4f}"))
        if m.generative and any("e_data" in r for r in m.train):
            generative = True
            axes[1, 0].plot(it, col("e_data"), color=colour, label=name("data"), **dot)
            axes[1, 0].plot(it, col("e_sample"), color=colour, ls="--", label=name("SGLD samples"), **dot)
        axes[1, 1].plot(it, col("it_per_s"), color=colour, label=name("it/s"), **dot)
        if single:
            lr = axes[1, 1].twinx()
            lr.plot(it, col("lr"), color="tab:purple", alpha=0.7, **dot)
            lr.set_ylabel("learning rate", color="tab:purple")
        for e in m.events:
            for a in axes.flat:
                a.axvline(e["iter"], color=colour, ls=":", lw=1)
        # a run that stopped at a divergence was not rolled back: its last event says so
        for kind in dict.fromkeys("diverged, stopped" if e.get("action") == "stop" else "divergence, rolled back"
                                  for e in m.events):
            axes[0, 0].plot([], [], color=colour, ls=":", lw=1, label=name(kind))
    if not generative:
        axes[1, 0].text(0.5, 0.5, "classifier only: no samples", ha="center", va="center",
                        transform=axes[1, 0].transAxes)
    axes[0, 0].set_ylabel("loss")
    axes[0, 1].set_ylabel("accuracy")
    axes[1, 0].set_ylabel("mean energy E(x) = -LSE f(x)")
    axes[1, 1].set_ylabel("iterations / s")
    for ax in axes[1]:
        ax.set_xlabel("iteration")
    if many:
        # one legend of the runs beside the panels, and a key of the line styles, instead of a legend per panel
        # that would cover the curves
        from matplotlib.lines import Line2D

        # outside the panels, to the right; the saved image grows to hold it (long sweep names included)
        fig.legend([Line2D([], [], color=palette[k]) for k in range(len(runs))], list(runs), loc="center left",
                   bbox_to_anchor=(1.0, 0.5), fontsize=7, title="runs", title_fontsize=8)
        styles = [Line2D([], [], color="k"), Line2D([], [], color="k", ls="--")]
        axes[0, 0].legend(styles, ["loss", "cross-entropy"], fontsize=7)
        if generative:
            axes[1, 0].legend(styles, ["data", "SGLD samples"], fontsize=7)
        marks = [Line2D([], [], color="k", lw=1, alpha=0.7), Line2D([], [], color="k", ls="--", marker="o", ms=3),
                 Line2D([], [], color="k", ls="", marker="o", mfc="none", ms=10),
                 Line2D([], [], color="k", ls="", marker="*", ms=12)]
        axes[0, 1].legend(marks, ["train (batch)", "validation", "best.pt", "test"], fontsize=7)
    else:
        for ax in axes.flat:
            if ax.get_legend_handles_labels()[0] and (ax is not axes[1, 1] or not single):
                ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path, tight=many)


def plot_run(run: str | os.PathLike, out: str | os.PathLike | None = None) -> Path:
    """curves.png (or ``out``) for the run folder ``run``; its config names the title when there is one."""
    folder = _folder(run)
    cfg = _run_config(folder)
    title = folder.name
    if cfg is not None:
        title += f": {cfg.get('dataset')}, {cfg.get('arch')}, batch {cfg.get('batch_size')}"
    return plot_curves(read_metrics(run), out or folder / "curves.png", title)


def _metrics_or_none(run: str | os.PathLike) -> Metrics:
    """A run's records; none yet (a run started, nothing logged) as empty ones."""
    folder = Path(run)
    return read_metrics(run) if not folder.is_dir() or (folder / "metrics.jsonl").exists() else Metrics()


def plot_runs(runs: list[str | os.PathLike], out: str | os.PathLike) -> Path:
    """Several runs overlaid in one figure, labelled by their folder names."""
    folders = [_folder(r) for r in runs]
    labels = [f.name for f in folders]
    if len(set(labels)) < len(labels):
        labels = [str(f) for f in folders]
    return plot_curves({label: _metrics_or_none(r) for label, r in zip(labels, runs)}, out)


def _mean_sd(columns: list[list[float]]) -> tuple[list[float], list[float]]:
    """Per position: the mean over the lists, and the sample standard deviation (0 for a single list); NaN for both
    where a list holds a NaN or an infinity (a seed's loss that diverged: a gap in the line, not a crash)."""
    import math
    import statistics

    rows = [v if all(map(math.isfinite, v)) else None for v in zip(*columns)]
    mean = [math.nan if v is None else statistics.fmean(v) for v in rows]
    sd = [math.nan if v is None else statistics.stdev(v) if len(v) > 1 else 0.0 for v in rows]
    return mean, sd


def plot_sweep_mean(folder: str | os.PathLike, out: str | os.PathLike | None = None) -> Path:
    """A sweep's curves, one line per combination: the mean over its seeds' runs at every logged iteration all of
    them reached, in a band of ± one sample standard deviation (2 seeds or more); validation accuracy likewise, and
    the test accuracy's mean ± sd at the end. ``out`` defaults to FOLDER/curves-mean.png."""
    from fastjem.eval.plots import COLOURS, _figures, _save
    from fastjem.sweep import combinations

    folder = Path(folder)
    groups = combinations(folder)
    if groups is None:
        raise ConfigError(f"{folder} is not a sweep folder (no readable sweep.json): --mean averages a fastjem sweep's "
                          "seeds; plot runs without it")
    plt = _figures()
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5), sharex=True)
    palette = COLOURS if len(groups) <= len(COLOURS) else [plt.get_cmap("tab20")(i % 20) for i in range(len(groups))]
    drawn, generative = [], False
    for k, (label, runs) in enumerate(groups):
        ms = [_metrics_or_none(r) for r in runs if (r / "metrics.jsonl").exists()]
        ms = [m for m in ms if m.train]
        if not ms:
            continue
        colour = palette[k]
        drawn.append((label, colour, len(ms)))
        rows = [{r["iter"]: r for r in m.train} for m in ms]
        its = sorted(set.intersection(*(set(r) for r in rows)))
        panels = [(axes[0, 0], "loss", "-"), (axes[0, 1], "acc", "-"), (axes[1, 1], "it_per_s", "-")]
        if any(m.generative for m in ms):
            generative = True
            panels += [(axes[1, 0], "e_data", "-"), (axes[1, 0], "e_sample", "--")]
        # one iteration all seeds reached (early in a sweep): a marker, since a line through one point draws nothing
        dot = {"marker": "o", "ms": 4} if len(its) == 1 else {}
        for ax, key, ls in panels:
            mean, sd = _mean_sd([[r[i].get(key, float("nan")) for i in its] for r in rows])
            ax.plot(its, mean, color=colour, ls=ls, lw=1 if key == "acc" else 1.5, **dot)
            ax.fill_between(its, [a - b for a, b in zip(mean, sd)], [a + b for a, b in zip(mean, sd)], color=colour,
                            alpha=0.15, lw=0)
        vals = [{e["iter"]: e["val_acc"] for e in m.evals if "val_acc" in e} for m in ms]
        v_its = sorted(set.intersection(*(set(v) for v in vals)))
        if v_its:
            mean, sd = _mean_sd([[v[i] for i in v_its] for v in vals])
            axes[0, 1].errorbar(v_its, mean, yerr=sd, fmt="o--", color=colour, ms=3, capsize=2)
        tests = [[e["test_acc"] for e in m.evals if "test_acc" in e][-1:] for m in ms]
        if all(tests):
            mean, sd = _mean_sd([t for t in tests])
            axes[0, 1].errorbar([max(its)], mean, yerr=sd, fmt="*", color=colour, ms=12, capsize=3)
    if not drawn:
        raise ConfigError(f"no training records to plot yet in {folder} (the first comes after --log-every "
                          "iterations)")
    if not generative:
        axes[1, 0].text(0.5, 0.5, "classifier only: no samples", ha="center", va="center",
                        transform=axes[1, 0].transAxes)
    for ax, name in zip(axes.flat, ("loss", "accuracy (batch; o validation, * test)", "mean energy E(x) = -LSE f(x)"
                                    " (-- samples)", "iterations / s")):
        ax.set_ylabel(name, fontsize=9)
    for ax in axes[1]:
        ax.set_xlabel("iteration")
    from matplotlib.lines import Line2D

    fig.legend([Line2D([], [], color=c) for _, c, _ in drawn], [f"{lab} (n={n})" for lab, _, n in drawn],
               loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7, title="mean ± sd over seeds",
               title_fontsize=8)
    fig.suptitle(f"{folder.name}: each combination's mean over its seeds, band ± 1 sample sd", fontsize=10)
    fig.tight_layout()
    return _save(fig, out or folder / "curves-mean.png", tight=True)

"""One evaluation task over a run's checkpoint history (``fastjem eval RUN/checkpoints TASK``), or over the runs
of a folder (``fastjem eval SWEEP TASK``: a row per run, and per grid combination in a sweep).

``--ckpt-keep-every`` leaves checkpoints/iter_<N>.pt; evaluating each with the same settings shows how accuracy,
calibration, OOD detection, samples or robustness move during training. Each checkpoint keeps its own report
and figures (in <out>/<checkpoint name>/); the headline numbers go to <out>/<task>_history.json, a table and
<out>/<task>_history.png (one panel per number, against iteration).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from fastjem.checkpoint import atomic_write_text, strict_json
from fastjem.errors import ConfigError


def checkpoint_history(path) -> list[Path] | None:
    """The checkpoints of a folder that holds several (``checkpoints/``) in iteration order; None for a single
    checkpoint (a file, or a run folder with checkpoint.pt)."""
    path = Path(path)
    if not path.is_dir() or (path / "checkpoint.pt").exists():
        return None
    files = [p for p in path.glob("*.pt") if not p.name.startswith(".")]
    if not files:
        return None

    def iteration(p: Path) -> int:
        digits = "".join(c for c in p.stem if c.isdigit())
        if p.stem.startswith("iter_") and digits:
            return int(digits)
        from fastjem.checkpoint import load_checkpoint

        return int(load_checkpoint(p)["iteration"])  # CheckpointError, not a traceback, for a stray .pt

    return sorted(files, key=lambda p: (iteration(p), p.name))


def run_folders(path) -> list[Path] | None:
    """The runs in a folder of runs (a ``fastjem sweep``, or runs/), each holding checkpoint.pt; None for anything
    else (a checkpoint, a run folder, a folder of checkpoints)."""
    path = Path(path)
    if not path.is_dir() or (path / "checkpoint.pt").exists() or any(path.glob("*.pt")):
        return None
    runs = sorted(p for p in path.iterdir() if (p / "checkpoint.pt").exists())
    return runs or None


def compare_runs(task: str, reports: list[dict], runs: list[Path], out_dir: str | Path) -> dict:
    """<task>_runs.json: each run's headline numbers; in a sweep (sweep.json beside the runs) also their mean and
    standard deviation per combination of the grid, read from each run's config.json."""
    import statistics

    out_dir = Path(out_dir)
    rows = [{"run": run.name, "dataset": rep["dataset"], **headline(task, rep)} for run, rep in zip(runs, reports)]
    keys = [k for k in rows[0] if k not in ("run", "dataset")] if rows else []
    result: dict = {"task": task, "rows": rows, "keys": keys, "groups": None}
    spec = runs[0].parent / "sweep.json" if runs else None
    if spec is not None and spec.exists():
        grid = list(json.loads(spec.read_text())["grid"])
        groups: dict[tuple, list[dict]] = {}
        for run, row in zip(runs, rows):
            cfg = json.loads((run / "config.json").read_text()) if (run / "config.json").exists() else {}
            # keyed by the values' JSON text (a list is not hashable); reported as the values themselves
            groups.setdefault(tuple(json.dumps(cfg.get(k)) for k in grid), []).append(row)
        result["grid"] = grid
        result["groups"] = [
            {**{k: json.loads(v) for k, v in zip(grid, combo)}, "runs": len(members),
             **{k: [statistics.mean(v), statistics.stdev(v) if len(v) > 1 else None]  # one run: no spread
                for k in keys if (v := [m[k] for m in members if k in m and math.isfinite(m[k])])}}
            for combo, members in groups.items()]
    # strict JSON: a diverged run's NaN is written as null
    atomic_write_text(strict_json(result, indent=2), out_dir / f"{task}_runs.json")
    result["json"] = str(out_dir / f"{task}_runs.json")
    return result


def _mean_pm(mean: float, sd: float | None) -> str:
    return f"{mean:.4f}" + ("" if sd is None else f" ± {sd:.4f}")


def format_comparison(result: dict, limit: int = 4) -> str:
    """A row per run, or per sweep combination (mean ± std over its seeds); the first ``limit`` numbers."""
    from fastjem.runs import text_table
    from fastjem.sweep import show_value

    keys = result["keys"][:limit]
    if result["groups"]:
        grid = result["grid"]
        rows = [[*(show_value(g[k]) for k in grid), str(g["runs"]),
                 *(_mean_pm(*g[k]) if k in g else "-" for k in keys)] for g in result["groups"]]
        table = text_table([*grid, "runs", *keys], rows)
    else:
        # runs of several datasets side by side: say which is which
        named = ["run", "dataset"] if len({r["dataset"] for r in result["rows"]}) > 1 else ["run"]
        rows = [[*(r[n] for n in named), *(f"{r[k]:.4f}" if k in r else "-" for k in keys)] for r in result["rows"]]
        table = text_table([*named, *keys], rows)
    more = len(result["keys"]) - len(keys)
    return table + (f"\n(+{more} more in the JSON)" if more > 0 else "")


def headline(task: str, report: dict) -> dict[str, float]:
    """The task's numbers worth following over training (names as in the summary table)."""
    r = report["results"]
    out: dict[str, float] = {}
    if task == "accuracy":
        for key, v in r.items():
            if isinstance(v, dict):
                out[f"{key} acc"] = v["acc"]
                out[f"{key} NLL"] = v["nll"]
    elif task == "calibration":
        main = report.get("checkpoint")
        for m in r["models"]:
            # The evaluated model under one key across runs/checkpoints (its name holds the run folder).
            out["ECE" if m["checkpoint"] == main else f"ECE {m['name']}"] = m["ece"]
    elif task == "ood":
        from fastjem.eval.ood import SCORES

        for name, scores in r["auroc"].items():
            for score in SCORES:
                if score in scores:
                    out[f"AUROC {name} {score}"] = scores[score]
    elif task == "samples":
        out["conditional samples classified as their class"] = r["conditional"]["fraction_classified_as_target"]
    elif task == "robustness":
        for norm, by_n in r["accuracy"].items():
            for n, pts in by_n.items():
                for p in pts:
                    out[f"{norm} refine={n} eps={p['eps']:.3g} acc"] = p["acc"]
    elif task == "fid":
        out["FID"] = r["fid"]
    return out


def write_history(task: str, reports: list[dict], out_dir: str | Path) -> dict:
    """<task>_history.json and .png from the reports of one task over checkpoints; returns the history."""
    out_dir = Path(out_dir)
    rows = [{"iteration": rep["iteration"], "checkpoint": rep["checkpoint"], **headline(task, rep)} for rep in reports]
    keys = [k for k in rows[0] if k not in ("iteration", "checkpoint")] if rows else []
    history = {"task": task, "rows": rows, "keys": keys}
    atomic_write_text(strict_json(history, indent=2), out_dir / f"{task}_history.json")
    history["json"] = str(out_dir / f"{task}_history.json")
    history["png"] = str(plot_history(history, out_dir / f"{task}_history.png"))
    return history


def plot_history(history: dict, path: Path) -> Path:
    from fastjem.eval.plots import _figures, _save

    plt = _figures()
    keys = history["keys"][:12]
    cols = min(3, max(1, len(keys)))
    rows = max(1, math.ceil(len(keys) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.8 * rows + 0.4), squeeze=False, sharex=True,
                             constrained_layout=True)
    it = [r["iteration"] for r in history["rows"]]
    for ax, key in zip(axes.flat, keys):
        values = [r.get(key, math.nan) for r in history["rows"]]
        ax.plot(it, values, "o-", ms=4)
        # numbers on their own scale (no "1e-6+9.9999e-1" offset), and a change of a millionth drawn flat
        ax.ticklabel_format(axis="y", useOffset=False, style="plain")
        finite = [v for v in values if math.isfinite(v)]
        if finite and max(finite) - min(finite) < 0.01:
            mid = (max(finite) + min(finite)) / 2
            ax.set_ylim(mid - 0.005, mid + 0.005)
        ax.set_title(key, fontsize=9)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("iteration")
    fig.suptitle(f"{history['task']} over the checkpoint history", fontsize=11)
    return _save(fig, path)


def format_history(history: dict, limit: int = 6) -> str:
    """The history as a text table: a row per checkpoint, the first ``limit`` numbers as columns."""
    from fastjem.runs import text_table

    keys = history["keys"][:limit]
    rows = [[str(r["iteration"]), *(f"{r[k]:.4f}" if k in r else "-" for k in keys)] for r in history["rows"]]
    more = len(history["keys"]) - len(keys)
    return text_table(["iteration", *keys], rows, right=True) + (
        f"\n(+{more} more in the JSON and the plot)" if more > 0 else "")


def refuse_all(task: str) -> None:
    if task == "all":
        raise ConfigError("a folder of checkpoints or of runs is evaluated one task at a time (accuracy, "
                          "calibration, ood, samples, robustness, fid); run all on one checkpoint")

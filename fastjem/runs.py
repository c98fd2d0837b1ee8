"""``fastjem runs``: one line per run folder, to compare runs (seeds, an ablation, a sweep) at a glance.

Everything comes from what a run writes as it goes — config.json, metrics.jsonl, summary.json at the end — so
a run that is still training (or was stopped) shows where it stands.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from pathlib import Path

from fastjem.config import TrainConfig
from fastjem.curves import Metrics, read_metrics
from fastjem.errors import ConfigError, FastJEMError

COLUMNS = [  # (key, heading, format)
    ("run", "run", "{}"), ("dataset", "dataset", "{}"), ("model", "model", "{}"), ("kind", "kind", "{}"),
    ("iteration", "iter", "{}"), ("status", "status", "{}"), ("it_per_s", "it/s", "{:.2f}"),
    ("train_acc", "train acc", "{:.4f}"), ("val_acc", "val acc", "{:.4f}"), ("test_acc", "test acc", "{:.4f}"),
    ("best", "best (iter: val / test)", "{}"), ("recoveries", "recov", "{}"),
]
SORT_KEYS = ("run", "test_acc", "val_acc", "it_per_s", "iteration")


def _json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _summary(path: Path) -> dict | None:
    """A run's summary.json, or None where it is not one a run writes: torn, or fields of another type (a hand edit:
    an iteration given as "12" failed the whole table with a TypeError)."""
    summary = _json(path)
    if summary is None:
        return None
    iteration, best = summary.get("iteration"), summary.get("best")
    good_best = not best or isinstance(best, dict) and all(_number(best.get(k)) for k in ("iter", "val_acc",
                                                                                           "test_acc"))
    fits = (isinstance(iteration, int) and not isinstance(iteration, bool)
            and (summary.get("test_acc") is None or _number(summary["test_acc"])) and good_best)
    return summary if fits else None


def run_row(folder: str | os.PathLike) -> dict:
    """What one run folder says about its run (None where it does not say)."""
    folder = Path(folder)
    cfg = _json(folder / "config.json") or {}
    summary = _summary(folder / "summary.json")
    # started, nothing logged yet (or killed before its first log line): listed at iteration 0
    m = read_metrics(folder) if (folder / "metrics.jsonl").exists() else Metrics()
    model = kind = None
    if cfg:  # without config.json nothing is known of the network (the defaults would name the wrong one)
        try:
            config = TrainConfig.from_dict(cfg)
            model, kind = config.model_name, ("JEM" if config.generative else "classifier")
        except (FastJEMError, TypeError):
            pass
    # the first window holds compilation, graph capture and warm-up: the steady rate is the median of the rest
    rates = [r["it_per_s"] for r in m.train[1:] if math.isfinite(r.get("it_per_s", math.nan))]
    val = [e for e in m.evals if "val_acc" in e]
    iteration = m.train[-1]["iter"] if m.train else 0
    saved = None
    if (folder / "checkpoint.pt").exists():
        # its checkpoint's iteration, past the last log line when it stopped between two (also a finished run
        # resumed past its summary.json's end and stopped before its next log line)
        saved = _checkpoint_iteration(folder / "checkpoint.pt")
        iteration = max(iteration, saved)
    # summary.json is written at the end; a run resumed past it (and not finished again) is not done
    done = summary is not None and summary.get("iteration", -1) >= iteration
    # an epoch-based run (iters <= 0, the paper preset) gives its length in epochs
    iters, epochs = (cfg.get(k) if _number(cfg.get(k)) else 0 for k in ("iters", "epochs"))
    total = iters if iters > 0 else (f"{epochs:g} epoch{'s' * (epochs != 1)}" if epochs else None)
    # a process training in the folder holds its lock (released however that process ends); imported here, as
    # fastjem.checkpoint imports torch and the CLI's parser reads this module (SORT_KEYS)
    from fastjem.checkpoint import RUN_LOCK, lock_holder

    state = "running" if lock_holder(folder / RUN_LOCK) else "stopped"
    status = "done" if done else (f"{state} ({iteration}/{total})" if total else state)
    stopped_by_divergence = bool(m.events) and m.events[-1].get("action") == "stop"  # after its last recovery
    if not done and ((folder / "diverged.txt").exists() or stopped_by_divergence):
        status = "diverged"  # fastjem sweep also marks it so
    elif summary is None and state == "stopped" and (folder / "summary.json").exists():
        # there but not readable (a disk that failed, a hand edit): the run may have ended, which cannot be told
        status = "summary.json unreadable"
    row = {
        "run": folder.name, "path": str(folder), "dataset": cfg.get("dataset"),
        "model": (summary or {}).get("model") or model, "kind": kind,
        "iteration": summary["iteration"] if done else iteration,
        "status": status,
        "it_per_s": statistics.median(rates) if rates else (m.train[0].get("it_per_s") if m.train else None),
        "train_acc": m.train[-1].get("acc") if m.train else None,
        "val_acc": val[-1]["val_acc"] if val else None,
        "test_acc": summary.get("test_acc") if done else None,
        "best": None,
        "recoveries": sum(1 for e in m.events if e.get("action") == "recover"),
        # where a resume continues: the checkpoint's iteration, behind the last log line after a hard kill
        "resumes_at": None if done else saved,
    }
    best = (summary or {}).get("best") if done else None
    if best:
        row["best"] = f"{best['iter']}: {best['val_acc']:.4f} / {best['test_acc']:.4f}"
    elif (folder / "best.pt").exists():
        kept = [e for e in val if e.get("best")]
        if kept:
            row["best"] = f"{kept[-1]['iter']}: {kept[-1]['val_acc']:.4f} / -"
    return row


def _checkpoint_iteration(path: Path) -> int:
    """The iteration a checkpoint holds, read without reading its tensors (memory-mapped); 0 when unreadable."""
    import torch

    try:
        ckpt = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
        return int(ckpt.get("iteration", 0)) if isinstance(ckpt, dict) else 0
    except Exception:  # noqa: BLE001 - a torn or foreign file: the log's iteration stands
        return 0


def is_run(folder: Path) -> bool:
    """A training run's folder: its records, or (started, nothing logged yet) its config.json."""
    return (folder / "metrics.jsonl").exists() or ((folder / "config.json").exists() and not (folder / "sweep.json")
                                                   .exists())


def find_runs(paths: list[str]) -> list[Path]:
    """Run folders among ``paths``: each a run folder (with metrics.jsonl) or a folder of them (one level down, and
    the runs of the sweeps there: runs/ holding single runs and fastjem sweep folders)."""
    found = []
    for p in map(Path, paths):
        if is_run(p):
            found.append(p)
        elif p.is_dir():
            for q in sorted(p.iterdir()):
                if is_run(q):
                    found.append(q)
                elif (q / "sweep.json").exists():
                    found += sorted(r for r in q.iterdir() if is_run(r))
        elif not p.exists():
            raise ConfigError(f"{p} does not exist: give run folders (fastjem train --out-dir) or folders of them; "
                              "the default is runs/ in the current folder")
        else:
            raise ConfigError(f"{p} is not a run folder (no metrics.jsonl) nor a folder of runs")
    if not found:
        raise ConfigError(f"no runs in {', '.join(paths)}: a run folder holds metrics.jsonl (fastjem train "
                          "--out-dir; the default is runs/)")
    return found


def sort_rows(rows: list[dict], key: str) -> list[dict]:
    """By ``key``: runs by name; measures best first, runs without the measure last."""
    if key not in SORT_KEYS:
        raise ConfigError(f"--sort must be one of {', '.join(SORT_KEYS)}; got {key!r}")
    if key == "run":
        return sorted(rows, key=lambda r: r["run"])
    return sorted(rows, key=lambda r: (r[key] is None, -(r[key] or 0)))


def counted(n: int, word: str) -> str:
    """``n`` and ``word``, plural unless ``n`` is 1: "1 run", "3 runs"."""
    return f"{n} {word}{'s' * (n != 1)}"


def text_table(head: list[str], rows: list[list[str]], right: bool = False) -> str:
    """Columns padded to their widest cell (right-aligned for numbers), a rule under the heading."""
    cells = [head, *rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    lines = ["  ".join(c[i].rjust(w) if right else c[i].ljust(w) for i, w in enumerate(widths)).rstrip()
             for c in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


TABLE_FORMATS = ("text", "md", "csv")


def render_table(head: list[str], rows: list[list[str]], fmt: str = "text") -> str:
    """``text``: aligned columns; ``md``: a Markdown table (paste into a README or a paper's notes); ``csv``."""
    if fmt == "text":
        return text_table(head, rows)
    if fmt == "md":
        cells = [[c.replace("|", "\\|") for c in r] for r in (head, *rows)]
        lines = ["| " + " | ".join(r) + " |" for r in cells]
        lines.insert(1, "|" + "|".join("---" for _ in head) + "|")
        return "\n".join(lines)
    if fmt == "csv":
        import csv
        import io

        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows([head, *rows])
        return out.getvalue().rstrip("\n")
    raise ConfigError(f"--format must be one of {', '.join(TABLE_FORMATS)} (or json); got {fmt!r}")


def format_table(rows: list[dict], fmt: str = "text") -> str:
    """A table, one run per line; '-' where a run has no value yet."""
    return render_table([h for _, h, _ in COLUMNS],
                        [["-" if r[k] is None else fmt_.format(r[k]) for k, _, fmt_ in COLUMNS] for r in rows], fmt)


def run_label(folder: Path, given: list[str]) -> str:
    """A run's name in a table: its folder's name, with its sweep's name in front when it was found inside a sweep
    (two sweeps' runs share names)."""
    folder = Path(folder)
    roots = {Path(g).resolve() for g in given}
    if folder.resolve() in roots or folder.parent.resolve() in roots:
        return folder.name
    return f"{folder.parent.name}/{folder.name}"

"""``fastjem sweep``: every combination of a grid of options, over seeds, one run folder each, then one table.

The sweep folder holds ``sweep.json`` (what the sweep is: the base options, the grid, the seeds) and a run folder
per combination and seed, named by them (``sgld_steps=5+buffer_init=informative+seed=1``). Running the same
command again continues it: finished runs are skipped, an interrupted run resumes from its checkpoint, runs not
started start. A different grid or base in the same folder is refused. At the end (and whenever it is run again)
the runs are summarised per combination: mean and standard deviation of test and validation accuracy over the
seeds, median speed, divergence recoveries, in ``results.json`` and as a table. A run that diverges beyond its
remedies is marked (``diverged.txt``), counted, not run again, and the sweep goes on.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import statistics
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

from fastjem.checkpoint import atomic_write_text
from fastjem.config import TrainConfig
from fastjem.errors import ConfigError
from fastjem.runs import run_row, text_table

SPEC = "sweep.json"
RESULTS = "results.json"
# options a grid may not vary: where runs go, which seed (--seeds), and what names the preset
NOT_IN_GRID = {"out_dir", "seed", "preset", "init_weights"}
# how, not what: a sweep continued on another machine may change these (as a resumed run may)
MACHINE_OPTIONS = ("device", "data_dir", "download", "cuda_graph", "iteration_graph", "cpu_malloc", "tensorboard",
                   "max_minutes")


def parse_value(name: str, text: str):
    """``text`` as the type of TrainConfig option ``name`` (bool: true/false/on/off/1/0; a tuple: values joined by
    ':')."""
    field = {f.name: f for f in fields(TrainConfig)}[name]
    kind = field.type
    try:
        if kind == "bool":
            low = text.lower()
            if low not in ("true", "false", "on", "off", "1", "0", "yes", "no"):
                raise ValueError(text)
            return low in ("true", "on", "1", "yes")
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "tuple":
            element = str if field.default and isinstance(field.default[0], str) else float
            return tuple(element(v) for v in text.split(":") if v)
        return text
    except ValueError as err:
        raise ConfigError(f"--grid {name}: {text!r} is not a {kind}") from err


def parse_grid(items: list[str]) -> dict[str, list]:
    """``["sgld_steps=5,20", "buffer-init=uniform,informative"]`` -> {option: [values]} in the order given."""
    names = {f.name for f in fields(TrainConfig)}
    grid: dict[str, list] = {}
    for item in items:
        key, sep, values = item.partition("=")
        name = key.strip().lstrip("-").replace("-", "_")
        if not sep or not values:
            raise ConfigError(f"--grid takes OPTION=V1,V2,...; got {item!r}")
        if name not in names:
            raise ConfigError(f"--grid {key}: no such option (`fastjem train --help` lists them)")
        if name in NOT_IN_GRID:
            why = "give the seeds with --seeds" if name == "seed" else "it is not a training option a grid varies"
            raise ConfigError(f"--grid {key}: {why}")
        if name in grid:
            raise ConfigError(f"--grid {key} is given twice")
        parsed = [parse_value(name, v.strip()) for v in values.split(",")]
        if len(set(map(repr, parsed))) != len(parsed):
            raise ConfigError(f"--grid {key}: a value is repeated in {values!r}")
        grid[name] = parsed
    if not grid:
        raise ConfigError("--grid needs at least one OPTION=V1,V2,...")
    return grid


def _show(value) -> str:
    if isinstance(value, tuple):
        return ":".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).lower() if isinstance(value, bool) else str(value)


def run_name(combo: dict, seed: int) -> str:
    """The run folder's name: ``option=value+...+seed=N`` (safe in a path: '/' becomes '_')."""
    parts = [f"{k}={_show(v)}" for k, v in combo.items()] + [f"seed={seed}"]
    return "+".join(parts).replace(os.sep, "_")


def plan(base: TrainConfig, grid: dict[str, list], seeds: list[int],
         folder: Path) -> list[tuple[str, dict, TrainConfig]]:
    """(name, combination, config) of every run, grid-major then seed; each config checked."""
    if not seeds or len(set(seeds)) != len(seeds):
        raise ConfigError("--seeds must be one or more distinct seeds")
    runs = []
    for values in itertools.product(*grid.values()):
        combo = dict(zip(grid, values))
        for seed in seeds:
            name = run_name(combo, seed)
            try:
                cfg = base.replace(**combo, seed=seed, out_dir=str(folder / name)).validate()
            except ConfigError as err:
                raise ConfigError(f"run {name}: {err}") from err
            runs.append((name, combo, cfg))
    names = [name for name, _, _ in runs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        # values that print alike (0.0010000001 and 0.001 at 6 digits, a/b and a_b) would share a folder
        raise ConfigError(f"two grid values give the run folder {twice[0]}: make the values differ in their first "
                          "6 significant digits (and not only by '/' against '_')")
    return runs


def spec_of(base: TrainConfig, grid: dict, seeds: list[int]) -> dict:
    options = {k: v for k, v in base.to_dict().items() if k not in ("out_dir", "seed", *MACHINE_OPTIONS)}
    return json.loads(json.dumps({"base": options, "grid": grid, "seeds": list(seeds)}))


def check_spec(folder: Path, spec: dict) -> None:
    """Write ``sweep.json``, or check that the one there describes the same sweep."""
    path = folder / SPEC
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--out-dir {folder} is a file: give a folder for the sweep")
    if path.exists():
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            raise ConfigError(f"{path} is not a sweep description ({type(err).__name__}: {err}): give another "
                              "--out-dir, or delete it if the folder is yours to reuse") from err
        if not isinstance(saved, dict) or not isinstance(saved.get("grid"), dict):
            raise ConfigError(f"{path} is not a sweep description (no grid): give another --out-dir")
        differ = sorted(k for k in set(saved.get("base", {})) | set(spec["base"])
                        if saved.get("base", {}).get(k) != spec["base"].get(k))
        # the grid's order too: it names the run folders (a reordered grid would train every run again)
        if list(saved["grid"].items()) != list(spec["grid"].items()):
            differ.append("grid")
        if saved.get("seeds") != spec["seeds"]:
            differ.append("seeds")
        if differ:
            raise ConfigError(f"{folder} holds another sweep ({path} differs in {', '.join(differ)}); give another "
                              "--out-dir, or the same options to continue that one")
        return
    single = [name for name in ("checkpoint.pt", "metrics.jsonl") if (folder / name).exists()]
    if single:
        # run listings and eval would see the single run and never the sweep's
        raise ConfigError(f"{folder} holds a training run ({', '.join(single)}), not a sweep: give the sweep another "
                          "--out-dir")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(json.dumps(spec, indent=2), path)
    except OSError as err:
        raise ConfigError(f"cannot write the sweep into {folder} ({type(err).__name__}: {err}): give another "
                          "--out-dir") from err


DIVERGED = "diverged.txt"


def status(folder: Path) -> str:
    """'done', 'diverged' (stopped after its last recovery; not run again), 'partial' (a checkpoint to resume)
    or 'new'."""
    if (folder / "metrics.jsonl").exists() and run_row(folder)["status"] == "done":
        return "done"
    if (folder / DIVERGED).exists():
        return "diverged"
    return "partial" if (folder / "checkpoint.pt").exists() else "new"


def describe_plan(base: TrainConfig, grid: dict[str, list], seeds: list[int], folder: str | os.PathLike) -> str:
    """What ``run_sweep`` would do with each run, without doing it (the sweep's spec is checked, not written)."""
    folder = Path(folder)
    runs = plan(base, grid, seeds, folder)
    if (folder / SPEC).exists():
        check_spec(folder, spec_of(base, grid, seeds))
    action = {"done": "skip (done)", "diverged": "skip (diverged)", "partial": "resume", "new": "start"}
    lines = [f"sweep: {len(runs)} runs in {folder}"]
    lines += [f"  {action[status(folder / name)]:<16} {name}" for name, _, _ in runs]
    return "\n".join(lines)


def run_sweep(base: TrainConfig, grid: dict[str, list], seeds: list[int], folder: str | os.PathLike,
              progress: bool = True, log: Callable[[str], None] = print) -> dict:
    """Run (or continue) the sweep in ``folder``; returns the summary that ``results.json`` holds. Stops after a
    run that was interrupted (Ctrl-C, SIGTERM, --max-minutes), its checkpoint written: the same call continues."""
    import shutil
    import time

    from fastjem.train import DivergedError, Trainer, resume_config

    folder = Path(folder)
    runs = plan(base, grid, seeds, folder)
    # --max-minutes bounds the whole invocation (a cluster job's time limit), not each run
    deadline = time.monotonic() + 60 * base.max_minutes if base.max_minutes > 0 else math.inf
    check_spec(folder, spec_of(base, grid, seeds))
    log(f"sweep: {len(runs)} runs ({' x '.join(str(len(v)) for v in grid.values())} combinations x {len(seeds)} "
        f"seeds) in {folder}")
    interrupted = stopped_by = None
    for i, (name, _, cfg) in enumerate(runs, start=1):
        out = folder / name
        state = status(out)
        if state in ("done", "diverged"):
            log(f"[{i}/{len(runs)}] {name}: {state}, skipped" + (f" (delete {out} to run it again)"
                                                                  if state == "diverged" else ""))
            continue
        left = (deadline - time.monotonic()) / 60
        if left <= 0:
            interrupted, stopped_by = name, "time limit"
            log(f"sweep stopped before {name}: time limit of {base.max_minutes:g} min (--max-minutes) reached; run "
                f"the same command (--out-dir {folder}) again to continue")
            break
        if math.isfinite(left):
            cfg = cfg.replace(max_minutes=left)
        if state == "partial":
            ckpt = out / "checkpoint.pt"
            log(f"[{i}/{len(runs)}] {name}: resuming {ckpt}")
            machine = {k: getattr(cfg, k) for k in MACHINE_OPTIONS}
            trainer = Trainer(resume_config(ckpt, machine), out_dir=out, resume=ckpt, progress=progress, log=log)
        else:
            log(f"[{i}/{len(runs)}] {name}")
            # killed before its first checkpoint: what it logged goes, or the restart would log every step twice
            for stale in ("metrics.jsonl", "summary.json", "curves.png"):
                (out / stale).unlink(missing_ok=True)
            shutil.rmtree(out / "tensorboard", ignore_errors=True)
            trainer = Trainer(cfg, out_dir=out, progress=progress, log=log)
        try:
            summary = trainer.fit()
        except DivergedError as err:
            # one run that diverges beyond its remedies does not stop the sweep; it is not run again
            atomic_write_text(f"{err}\n", out / DIVERGED)
            log(f"[{i}/{len(runs)}] {name}: diverged beyond recovery ({str(err).splitlines()[0]}); the sweep goes on")
            continue
        if summary.get("interrupted"):
            interrupted, stopped_by = name, summary.get("stopped_by")
            log(f"sweep stopped at {name} (its checkpoint is written): run the same command (--out-dir {folder}) "
                "again to continue")
            break
        log(f"[{i}/{len(runs)}] {name}: test accuracy {summary['test_acc']:.4f}")
    result = summarise(folder, grid, runs)
    result["interrupted"] = interrupted
    result["stopped_by"] = stopped_by  # a signal's name, "time limit", or None
    atomic_write_text(json.dumps(result, indent=2), folder / RESULTS)
    return result


def summarise(folder: Path, grid: dict[str, list], runs: list[tuple[str, dict, TrainConfig]]) -> dict:
    """Per combination: the finished runs' mean and standard deviation of test and validation accuracy, the median
    of their speeds and their recoveries; and every run's row."""
    rows = {name: (run_row(folder / name) if (folder / name / "metrics.jsonl").exists() else None)
            for name, _, _ in runs}
    groups = []
    for values in itertools.product(*grid.values()):
        combo = dict(zip(grid, values))
        mine = [rows[name] for name, c, _ in runs if c == combo]
        done = [r for r in mine if r is not None and r["status"] == "done"]
        diverged = sum((folder / name / DIVERGED).exists() for name, c, _ in runs if c == combo)

        test, test_sd = _mean_std(done, "test_acc")
        val, val_sd = _mean_std(done, "val_acc")
        speeds = [r["it_per_s"] for r in done if r.get("it_per_s")]
        groups.append({**{k: _show(v) for k, v in combo.items()}, "runs": len(mine), "done": len(done),
                       "diverged": diverged,
                       "test_acc": test, "test_acc_std": test_sd, "val_acc": val, "val_acc_std": val_sd,
                       "it_per_s": statistics.median(speeds) if speeds else None,
                       "recoveries": sum(r["recoveries"] for r in done)})
    return {"folder": str(folder), "grid": {k: [_show(v) for v in vs] for k, vs in grid.items()},
            "groups": groups, "runs": rows}


def _mean_std(rows: list[dict], key: str) -> tuple[float | None, float | None]:
    vals = [r[key] for r in rows if r.get(key) is not None and math.isfinite(r[key])]
    if not vals:
        return None, None
    # one run has no spread to report (not a spread of 0)
    return statistics.mean(vals), (statistics.stdev(vals) if len(vals) > 1 else None)


def format_summary(result: dict) -> str:
    """The per-combination table."""
    keys = list(result["grid"])

    def pm(mean, sd):
        return "-" if mean is None else f"{mean:.4f}" + ("" if sd is None else f" ± {sd:.4f}")

    rows = [[g[k] for k in keys] + [f"{g['done']}/{g['runs']}" + (f" ({g['diverged']} diverged)" if g["diverged"]
                                                                   else ""), pm(g["test_acc"], g["test_acc_std"]),
                                    pm(g["val_acc"], g["val_acc_std"]),
                                    "-" if g["it_per_s"] is None else f"{g['it_per_s']:.2f}", str(g["recoveries"])]
            for g in result["groups"]]
    return text_table(keys + ["done", "test acc", "val acc", "it/s", "recov"], rows)

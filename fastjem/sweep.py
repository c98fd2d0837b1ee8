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
from typing import TYPE_CHECKING

from fastjem.checkpoint import RUN_LOCK, atomic_write_text, folder_lock, lock_holder
from fastjem.config import TrainConfig
from fastjem.console import console
from fastjem.errors import ConfigError, FastJEMError
from fastjem.runs import counted, render_table, run_row

if TYPE_CHECKING:
    from fastjem.data import Arrays

SPEC = "sweep.json"
RESULTS = "results.json"
SWEEP_LOCK = ".sweep.lock"
# options a grid may not vary: where runs go, which seed (--seeds), what names the preset, and the time limit (it
# bounds the whole sweep; per run, each continuation stopped its run again and the sweep never passed it)
NOT_IN_GRID = {"out_dir", "seed", "preset", "init_weights", "max_minutes"}
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
        if not sep or not values or not name:
            raise ConfigError(f"--grid takes OPTION=V1,V2,...; got {item!r}")
        if any(not v.strip() for v in values.split(",")):
            raise ConfigError(f"--grid {key}: an empty value in {values!r}")
        if name not in names:
            # train's flags that set other options: the grid varies those options
            flags = {"classifier_only": "it sets --px-weight 0 (and --pxy-weight 0): vary px-weight",
                     "no_compile": "it is --compile off: vary compile (on, off, auto)"}
            if name.startswith("no_") and name[3:] in names:
                flags[name] = f"it turns {name[3:].replace('_', '-')} off: vary {name[3:].replace('_', '-')} (on, off)"
            raise ConfigError(f"--grid {key}: " + (flags[name] if name in flags else
                                                   "no such option (`fastjem train --help` lists them)"))
        if name in NOT_IN_GRID:
            why = ("give the seeds with --seeds" if name == "seed" else
                   "--max-minutes bounds the whole sweep (each continuation would stop a run again at its limit): "
                   "give it as an option, or vary --iters" if name == "max_minutes" else
                   "it is not a training option a grid varies")
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


def show_value(value) -> str:
    """A grid value as run folders and tables print it: ``0.001``, ``true``, ``5:20`` (a tuple or list)."""
    if isinstance(value, (tuple, list)):
        return ":".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).lower() if isinstance(value, bool) else str(value)


def run_name(combo: dict, seed: int) -> str:
    """The run folder's name: ``option=value+...+seed=N`` (safe in a path: '/' becomes '_')."""
    parts = [f"{k}={show_value(v)}" for k, v in combo.items()] + [f"seed={seed}"]
    return "+".join(parts).replace(os.sep, "_")


def plan(base: TrainConfig, grid: dict[str, list], seeds: list[int], folder: Path,
         check: bool = True) -> list[tuple[str, dict, TrainConfig]]:
    """(name, combination, config) of every run, grid-major then seed; each config checked (unless ``check`` is
    False)."""
    if not seeds or len(set(seeds)) != len(seeds):
        raise ConfigError("--seeds must be one or more distinct seeds")
    runs = []
    for values in itertools.product(*grid.values()):
        combo = dict(zip(grid, values))
        for seed in seeds:
            name = run_name(combo, seed)
            try:
                cfg = base.replace(**combo, seed=seed, out_dir=str(folder / name))
                if check:
                    # a run the sweep started already continues under the rules it started with
                    cfg.validate(new_run=not (folder / name / "checkpoint.pt").exists())
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


def data_key(cfg: TrainConfig) -> tuple:
    """The options that name a run's data, as ``load_arrays`` takes them."""
    return cfg.dataset, cfg.data_dir, cfg.download, cfg.image_size


def check_decays(runs: list[tuple[str, dict, TrainConfig]], folder: Path, progress: bool = False
                 ) -> tuple[tuple, Arrays] | None:
    """Refuse, before anything is written, a run whose --decay-rate 0 sets the learning rate to 0 inside it: where a
    decay epoch falls needs the epoch's length, which only the data gives, so the data of such runs is loaded here
    (once per dataset): failed by each run in turn, the runs were reported as for the same command to try again,
    which fails them again. Data that cannot be loaded is left to the run, which reports it. Returns the data loaded
    last, (``data_key``, Arrays), for the sweep's first run to train on (it was loaded twice), or None."""
    from fastjem.data import load_arrays, validation_size
    from fastjem.train import check_decay_reached, epoch_iterations

    sizes: dict[tuple, tuple | None] = {}  # (training images, DatasetInfo) of each dataset
    kept = None
    for name, _, cfg in runs:
        # a run already started passed this check when it started, under the same options
        if cfg.decay_rate != 0 or not cfg.decay_epochs or status(folder / name) != "new":
            continue
        key = data_key(cfg)
        if key not in sizes:
            kept = None  # the images go before the next dataset's load
            try:
                arrays = load_arrays(cfg.dataset, cfg.data_dir, cfg.download, cfg.image_size, progress=progress)
                sizes[key] = len(arrays.train_y), arrays.info
                kept = key, arrays
            except (FastJEMError, OSError):
                sizes[key] = None
            arrays = None
        if sizes[key] is None:
            continue
        images, info = sizes[key]
        try:
            n_train = images - validation_size(info, images, cfg.val_size)
        except FastJEMError:
            continue
        iters_per_epoch = max(1, n_train // cfg.batch_size)
        total = cfg.iters if cfg.iters > 0 else epoch_iterations(cfg.epochs, iters_per_epoch)
        try:
            check_decay_reached(cfg, iters_per_epoch, total)
        except ConfigError as err:
            raise ConfigError(f"run {name}: {err}; nothing was changed") from err
    return kept


def spec_of(base: TrainConfig, grid: dict, seeds: list[int]) -> dict:
    options = {k: v for k, v in base.to_dict().items() if k not in ("out_dir", "seed", *MACHINE_OPTIONS)}
    return json.loads(json.dumps({"base": options, "grid": grid, "seeds": list(seeds)}))


def check_folder(folder: Path) -> None:
    """The checks on ``--out-dir`` that need nothing written (a dry run makes them too)."""
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--out-dir {folder} is a file: give a folder for the sweep")
    if any(parent.exists() and not parent.is_dir() for parent in folder.parents):
        raise ConfigError(f"--out-dir {folder} lies below a file: give a folder for the sweep")
    single = [name for name in ("checkpoint.pt", "metrics.jsonl") if (folder / name).exists()]
    if single and not (folder / SPEC).exists():
        # run listings and eval would see the single run and never the sweep's
        raise ConfigError(f"{folder} holds a training run ({', '.join(single)}), not a sweep: give the sweep another "
                          "--out-dir")


def _differences(saved: dict, spec: dict) -> list[str]:
    """What differs between a saved sweep description and this one, with both values."""
    base, mine = saved.get("base", {}), spec["base"]
    out = [f"{k}: {_show_json(base.get(k))} there, {_show_json(mine.get(k))} here"
           for k in sorted(set(base) | set(mine)) if base.get(k) != mine.get(k)]
    # the grid's order too: it names the run folders (a reordered grid would train every run again)
    if list(saved["grid"].items()) != list(spec["grid"].items()):
        out.append(f"grid: {_show_grid(saved['grid'])} there, {_show_grid(spec['grid'])} here")
    if saved.get("seeds") != spec["seeds"]:
        out.append(f"seeds: {saved.get('seeds')} there, {spec['seeds']} here")
    return out


def _show_json(value) -> str:
    return "(not set)" if value is None else json.dumps(value)


def _show_grid(grid: dict) -> str:
    return " ".join(f"{k.replace('_', '-')}={','.join(map(_show_json, v))}" for k, v in grid.items())


def check_spec(folder: Path, spec: dict, write: bool = True) -> None:
    """Write ``sweep.json`` (unless ``write`` is False), or check that the one there describes the same sweep."""
    check_folder(folder)
    path = folder / SPEC
    if path.exists():
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            raise ConfigError(f"{path} is not a sweep description ({type(err).__name__}: {err}): give another "
                              "--out-dir") from err
        if not isinstance(saved, dict) or not isinstance(saved.get("grid"), dict):
            raise ConfigError(f"{path} is not a sweep description (no grid): give another --out-dir")
        differ = _differences(saved, spec)
        if differ:
            raise ConfigError(f"{folder} holds another sweep ({path}): " + "; ".join(differ) + ". Give another "
                              "--out-dir, or the same options to continue that one")
        return
    if not write:
        return
    try:
        atomic_write_text(json.dumps(spec, indent=2), path)  # makes the folder
    except OSError as err:
        raise ConfigError(f"cannot write the sweep into {folder} ({type(err).__name__}: {err}): give another "
                          "--out-dir") from err


def _comparable(cfg: dict) -> dict:
    """A config's options as JSON has them (tuples as lists), where and on what it runs left out."""
    return {k: v for k, v in json.loads(json.dumps(cfg)).items() if k not in ("out_dir", *MACHINE_OPTIONS)}


def check_runs(folder: Path, runs: list[tuple[str, dict, TrainConfig]]) -> None:
    """Every run folder already there was trained with the options this sweep gives it: a folder reused under a
    new sweep.json (or a run trained by hand into it) would be skipped or resumed with its own, and the table would
    report them as this sweep's."""
    for name, _, cfg in runs:
        path = folder / name / "config.json"
        if not path.exists():
            continue
        try:
            saved = _comparable(TrainConfig.from_dict(json.loads(path.read_text())).to_dict())
        except (OSError, ValueError, TypeError, ConfigError) as err:
            raise ConfigError(f"{path} is not a run's options ({type(err).__name__}: {err}): move {folder / name} "
                              "away, or give the sweep another --out-dir") from err
        mine = _comparable(cfg.to_dict())
        differ = [f"{k}: {_show_json(saved.get(k))} there, {_show_json(mine.get(k))} here"
                  for k in sorted(set(saved) | set(mine)) if saved.get(k) != mine.get(k)]
        if differ:
            raise ConfigError(f"{folder / name} was trained with other options than this sweep gives it ("
                              + "; ".join(differ) + "): move it away to train it again, or give the sweep another "
                              "--out-dir")


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
    check_spec(folder, spec_of(base, grid, seeds), write=False)
    check_runs(folder, runs)
    check_decays(runs, folder)
    action = {"done": "skip (done)", "diverged": "skip (diverged)", "partial": "resume", "new": "start"}
    states = {name: status(folder / name) for name, _, _ in runs}
    rows = {name: run_row(folder / name) for name, _, _ in runs if states[name] in ("done", "partial")}
    lines = [f"sweep: {counted(len(runs), 'run')} in {folder}"]
    to_go = [name for name in states if states[name] in ("new", "partial")]
    total, unknown = 0.0, []
    for name, combo, cfg in runs:
        line = f"  {action[states[name]]:<16} {name}"
        if name in to_go:
            guess = _time_to_go(name, combo, cfg, runs, states, rows)
            if guess is None:
                unknown.append(name)
            else:
                seconds, iters, rate, basis = guess
                total += seconds
                line += f"   about {_duration(seconds)} ({counted(iters, 'iteration')} at {rate:.3g} it/s, {basis})"
        lines.append(line)
    if to_go:
        known = len(to_go) - len(unknown)
        if known:
            which = f"the {counted(known, 'run')}" if known == len(to_go) else \
                f"{known} of the {counted(len(to_go), 'run')}"
            lines.append(f"training time to go: about {_duration(total)} for {which} to train, from the speeds "
                         "measured in this folder (evaluation not counted)"
                         + (f"; {len(unknown)} without a measured speed of their combination" if unknown else ""))
        else:
            lines.append("training time to go: not known yet (no run of these combinations has logged its speed here)")
    return "\n".join(lines)


def _time_to_go(name: str, combo: dict, cfg: TrainConfig, runs: list[tuple[str, dict, TrainConfig]],
                states: dict[str, str], rows: dict[str, dict]) -> tuple[float, int, float, str] | None:
    """(seconds, iterations, it/s, whose speed) that run ``name`` has left to train, from what was measured in the
    sweep folder: the median speed of its combination's finished runs, else of its stopped ones (its own among
    them); its length from ``--iters``, else from a finished run of its combination (an epoch-based run). None
    where either is not known."""
    mine = [n for n, c, _ in runs if c == combo and n in rows]
    finished = [rows[n] for n in mine if states[n] == "done"]
    for kind, these in (("finished", finished), ("stopped", [rows[n] for n in mine if states[n] == "partial"])):
        rates = [r["it_per_s"] for r in these if r.get("it_per_s") and math.isfinite(r["it_per_s"])]
        if rates:
            rate = statistics.median(rates)
            basis = f"the speed of {counted(len(rates), kind + ' run')} of this combination"
            break
    else:
        return None
    length = cfg.iters if cfg.iters > 0 else (finished[0]["iteration"] if finished else None)
    if length is None:
        return None
    # a stopped run continues from its checkpoint (behind its last log line when it was killed between the two)
    done_so_far = (rows[name]["resumes_at"] or 0) if name in rows else 0
    left = max(0, length - done_so_far)
    return left / rate, left, rate, basis


def run_sweep(base: TrainConfig, grid: dict[str, list], seeds: list[int], folder: str | os.PathLike,
              progress: bool = True, log: Callable[[str], None] = console) -> dict:
    """Run (or continue) the sweep in ``folder``; returns the summary that ``results.json`` holds. Stops after a
    run that was interrupted (Ctrl-C, SIGTERM, --max-minutes), its checkpoint written: the same call continues.
    One sweep at a time in a folder (a second is refused before it changes anything)."""
    folder = Path(folder)
    runs = plan(base, grid, seeds, folder)
    spec = spec_of(base, grid, seeds)
    check_spec(folder, spec, write=False)
    checked = _CheckedData(check_decays(runs, folder, progress))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"cannot make the sweep folder {folder} ({type(err).__name__}: {err}): give another "
                          "--out-dir") from err
    with folder_lock(folder / SWEEP_LOCK, f"{folder} is in use by another fastjem sweep ({{holder}}): wait for it, "
                                          "or give another --out-dir; nothing was changed"):
        check_runs(folder, runs)
        check_spec(folder, spec)
        return _run_all(base, grid, seeds, folder, runs, progress, log, checked)


class _CheckedData:
    """The data ``check_decays`` loaded, (``data_key``, Arrays) or None, on its way to the sweep's first run, which
    trains on it where it names that data. ``take`` gives it once and keeps no reference: passed as a plain argument,
    the caller's variable held the images for the whole sweep (the next runs load their own, as the run's other
    memory goes between runs)."""

    def __init__(self, loaded: tuple[tuple, Arrays] | None):
        self._loaded = loaded

    def take(self) -> tuple[tuple, Arrays] | None:
        loaded, self._loaded = self._loaded, None
        return loaded


def _run_all(base, grid, seeds, folder, runs, progress, log, checked: _CheckedData | None = None) -> dict:
    """``checked``: the data the decay check loaded, taken here for the first run trained (``_CheckedData``)."""
    import gc
    import shutil
    import time

    loaded = checked.take() if checked is not None else None

    from fastjem.train import DivergedError, Trainer, resume_config

    # --max-minutes bounds the whole invocation (a cluster job's time limit), not each run
    started = time.monotonic()
    deadline = started + 60 * base.max_minutes if base.max_minutes > 0 else math.inf
    sizes = " x ".join(str(len(v)) for v in grid.values())
    combos = math.prod(len(v) for v in grid.values())
    log(f"sweep: {counted(len(runs), 'run')} ({sizes} combination{'s' * (combos != 1)} x "
        f"{counted(len(seeds), 'seed')}) in {folder}")
    interrupted = stopped_by = None
    failed: dict[str, str] = {}
    refused: list[str] = []  # the failed runs whose error was a ConfigError
    shown: set[str] = set()

    def run_log(line: str) -> None:
        # the engine's lines are the same for every run: said once
        if line.startswith("engine:"):
            if line in shown:
                return
            shown.add(line)
        log(line)

    took: list[float] = []  # wall time of each run trained here, for the estimate of what is left
    # read once: a run's state changes only when this loop trains it
    states = [status(folder / name) for name, _, _ in runs]
    for i, (name, _, cfg) in enumerate(runs, start=1):
        out = folder / name
        state = states[i - 1]
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
        holder = lock_holder(out / RUN_LOCK)
        if holder is not None:
            raise ConfigError(f"{out} is in use by another fastjem run ({holder}): wait for it, or give the sweep "
                              "another --out-dir; nothing of that run was changed")
        t0 = time.monotonic()
        given = loaded[1] if loaded is not None and loaded[0] == data_key(cfg) and state == "new" else None
        loaded = None
        try:
            if state == "partial":
                ckpt = out / "checkpoint.pt"
                log(f"[{i}/{len(runs)}] {name}: resuming {ckpt}")
                machine = {k: getattr(cfg, k) for k in MACHINE_OPTIONS}
                trainer = Trainer(resume_config(ckpt, machine), out_dir=out, resume=ckpt, progress=progress,
                                  log=run_log)
            else:
                log(f"[{i}/{len(runs)}] {name}")
                # killed before its first checkpoint: what it logged and kept goes, or the restart would log every
                # step twice (and a new run refuses a folder holding another attempt's best.pt or kept checkpoints)
                for stale in ("metrics.jsonl", "summary.json", "curves.png", "best.pt", *out.glob("rollback-*.pt")):
                    (out / stale).unlink(missing_ok=True)
                for stale in ("tensorboard", "checkpoints"):
                    shutil.rmtree(out / stale, ignore_errors=True)
                trainer = Trainer(cfg, out_dir=out, progress=progress, log=run_log, loaded=given)
            trainer.resume_hint = None  # a stopped run is continued by the sweep's command, said below
            summary = trainer.fit()
        except DivergedError as err:
            # one run that diverges beyond its remedies does not stop the sweep; it is not run again
            atomic_write_text(f"{err}\n", out / DIVERGED)
            log(f"[{i}/{len(runs)}] {name}: diverged beyond recovery ({str(err).splitlines()[0]}); the sweep goes on")
            continue
        except Exception as err:  # noqa: BLE001 - one run's failure is reported; the others go on
            # missing data, a damaged checkpoint, out of memory at one grid point, ...: the other runs go on, the
            # table comes, and the same command tries this run again once its cause is mended
            failed[name] = str(err) if isinstance(err, FastJEMError) else f"{type(err).__name__}: {err}"
            if isinstance(err, ConfigError):
                # options the sweep gives the run fail it again under the same command, and another sweep.json is
                # refused in this folder
                refused.append(name)
                again = ("the same command fails it again where the sweep's options are refused: give other "
                         "options with another --out-dir")
            else:
                again = "the same command tries it again"
            log(f"[{i}/{len(runs)}] {name}: failed: {failed[name]}; the sweep goes on ({again})")
            continue
        finally:
            # the run's network, optimiser, buffer and data (on the GPU) go before the next run starts: they refer to
            # each other, which only the cycle collector frees (every finished run of the sweep stayed in memory)
            trainer = given = None
            gc.collect()
        if summary.get("interrupted"):
            interrupted, stopped_by = name, summary.get("stopped_by")
            log(f"sweep stopped at {name} (its checkpoint is written): run the same command (--out-dir {folder}) "
                "again to continue")
            break
        took.append(time.monotonic() - t0)
        to_go = sum(state in ("new", "partial") for state in states[i:])
        eta = f"; {to_go} to go, about {_duration(statistics.mean(took) * to_go)} at this pace" if to_go else ""
        log(f"[{i}/{len(runs)}] {name}: test accuracy {summary['test_acc']:.4f} in {_duration(took[-1])} (sweep: "
            f"{_duration(time.monotonic() - started)} so far{eta})")
    result = summarise(folder, grid, runs, failed)
    result["interrupted"] = interrupted
    result["stopped_by"] = stopped_by  # a signal's name, "time limit", or None
    result["refused"] = refused
    atomic_write_text(json.dumps(result, indent=2), folder / RESULTS)
    return result


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


def summarise(folder: Path, grid: dict[str, list], runs: list[tuple[str, dict, TrainConfig]],
              failed: dict[str, str] | None = None) -> dict:
    """Per combination: the finished runs' mean and sample standard deviation of test and validation accuracy, the
    median of their speeds, and the recoveries of all its runs; every run's row; and ``failed`` (run: why), the runs
    that stopped with an error this time."""
    failed = failed or {}
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
        # the grid's values as JSON numbers, booleans and strings (a tuple as a list): what a plotting script sorts
        groups.append({**{k: _typed(v) for k, v in combo.items()}, "runs": len(mine), "done": len(done),
                       "diverged": diverged, "failed": sum(name in failed for name, c, _ in runs if c == combo),
                       "test_acc": test, "test_acc_std": test_sd, "val_acc": val, "val_acc_std": val_sd,
                       "it_per_s": statistics.median(speeds) if speeds else None,
                       "recoveries": sum(r["recoveries"] for r in mine if r is not None)})
    return {"folder": str(folder), "grid": {k: [_typed(v) for v in vs] for k, vs in grid.items()},
            "groups": groups, "runs": rows, "failed": dict(failed)}


def _typed(value):
    return list(value) if isinstance(value, tuple) else value


def _mean_std(rows: list[dict], key: str) -> tuple[float | None, float | None]:
    vals = [r[key] for r in rows if r.get(key) is not None and math.isfinite(r[key])]
    if not vals:
        return None, None
    # one run has no spread to report (not a spread of 0)
    return statistics.mean(vals), (statistics.stdev(vals) if len(vals) > 1 else None)


def planned(folder: str | os.PathLike) -> tuple[dict, list[tuple[str, dict, TrainConfig]]] | None:
    """(grid, runs) of the sweep in ``folder`` as its sweep.json describes it (None: not a sweep folder)."""
    folder = Path(folder)
    try:
        spec = json.loads((folder / SPEC).read_text())
        base = TrainConfig.from_dict(spec["base"])
        tuples = {f.name for f in fields(TrainConfig) if f.type == "tuple"}
        grid = {k: [tuple(v) if k in tuples else v for v in vs] for k, vs in spec["grid"].items()}
        # not checked: sweep.json leaves out where the data lives (--data-dir), which an imagefolder run needs
        return grid, plan(base, grid, list(spec["seeds"]), folder, check=False)
    except (OSError, ValueError, KeyError, TypeError, ConfigError):
        return None


def summarise_folder(folder: str | os.PathLike) -> dict | None:
    """The per-combination summary of the sweep in ``folder`` as its files stand now (None: not a sweep folder)."""
    found = planned(folder)
    return None if found is None else summarise(Path(folder), *found)


def combinations(folder: str | os.PathLike) -> list[tuple[str, list[Path]]] | None:
    """Each combination of the sweep in ``folder``: its label (``sgld_steps=5+buffer_init=informative``) and its
    runs' folders, one per seed (None: not a sweep folder)."""
    found = planned(folder)
    if found is None:
        return None
    grid, runs = found
    out = []
    for values in itertools.product(*grid.values()):
        combo = dict(zip(grid, values))
        label = "+".join(f"{k}={show_value(v)}" for k, v in combo.items())
        out.append((label, [Path(folder) / name for name, c, _ in runs if c == combo]))
    return out


def format_summary(result: dict, fmt: str = "text") -> str:
    """The per-combination table (mean ± sample standard deviation over the finished runs)."""
    keys = list(result["grid"])

    def pm(mean, sd):
        return "-" if mean is None else f"{mean:.4f}" + ("" if sd is None else f" ± {sd:.4f}")

    if fmt == "csv":
        # numbers in columns of their own, for a spreadsheet or a plotting script
        def num(value, digits=6):
            return "" if value is None else f"{value:.{digits}g}"

        head = keys + ["runs", "done", "diverged", "failed", "test_acc_mean", "test_acc_sd", "val_acc_mean",
                       "val_acc_sd", "it_per_s", "recoveries"]
        return render_table(head, [[show_value(g[k]) for k in keys]
                                   + [str(g["runs"]), str(g["done"]), str(g["diverged"]), str(g.get("failed", 0)),
                                      num(g["test_acc"]), num(g["test_acc_std"]), num(g["val_acc"]),
                                      num(g["val_acc_std"]), num(g["it_per_s"], 4), str(g["recoveries"])]
                                   for g in result["groups"]], "csv")

    def done(g):
        notes = [f"{g[k]} {k}" for k in ("diverged", "failed") if g.get(k)]
        return f"{g['done']}/{g['runs']}" + (f" ({', '.join(notes)})" if notes else "")

    rows = [[show_value(g[k]) for k in keys] + [done(g), pm(g["test_acc"], g["test_acc_std"]),
                                    pm(g["val_acc"], g["val_acc_std"]),
                                    "-" if g["it_per_s"] is None else f"{g['it_per_s']:.2f}", str(g["recoveries"])]
            for g in result["groups"]]
    return render_table(keys + ["done", "test acc (mean ± sd)", "val acc (mean ± sd)", "it/s", "recov"], rows, fmt)

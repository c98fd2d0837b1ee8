"""A timed JEM run on the real CIFAR-10: fastjem trains for a fixed number of minutes, then reports
iterations/s, the test accuracy reached and a grid of SGLD samples.

    python bench/cifar_run.py --minutes 2                      # the paper's WRN-28-10, batch 64
    python bench/cifar_run.py --minutes 2 --depth 16 --width 8 # a stated smaller WRN

The CIFAR-10 copy is found at --cifar-dir, else $FASTJEM_CIFAR10_DIR, else .data/cifar10/ in the
repository, else ../shared/data/cifar10 beside it: either the two tarballs (cifar10-train.tar.gz,
cifar10-test.tar.gz; fastjem reads them in place) or an unpacked folder with train/ and test/.

The minutes are wall-clock training time including compilation and graph capture (what a user
waits for); iterations/s is also reported for the steady part, after the first ``--warmup``
iterations. Writes ``cifar-<date>-<device>.json`` and ``cifar-samples-<date>-<device>.png`` to --out (both
``...-2``, ``-3``, ... where a run started in the same second on the same device holds the name).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interrupted import quiet_while_importing  # noqa: E402

quiet_while_importing(__name__)  # Ctrl-C while torch imports: run_script's line, not a traceback

import torch  # noqa: E402
from env_info import (  # noqa: E402
    REPO,
    RESULTS,
    check_sizes,
    device_info,
    exit_on_sigterm,
    git_state,
    now_utc,
    pick_device,
    results_folder,
    run_script,
    saved,
    sync,
    versions,
    write_result,
)

from fastjem.checkpoint import atomic_copy  # noqa: E402
from fastjem.config import get_preset  # noqa: E402
from fastjem.train import Trainer, evaluate  # noqa: E402

TARBALLS = ("cifar10-train.tar.gz", "cifar10-test.tar.gz")


def _holds_cifar(p: Path) -> bool:
    return all((p / t).is_file() for t in TARBALLS) or ((p / "train").is_dir() and (p / "test").is_dir())


def find_cifar(explicit: str = "") -> Path:
    """The CIFAR-10 folder: ``explicit`` (--cifar-dir) when given, which must hold it (a typo does not fall back to
    another copy), else the first of FASTJEM_CIFAR10_DIR, .data/cifar10 and ../shared/data/cifar10 that does."""
    if explicit:
        if not _holds_cifar(Path(explicit)):
            raise SystemExit(f"--cifar-dir {explicit} does not hold CIFAR-10: expected {' and '.join(TARBALLS)} (or "
                             "train/ and test/ image folders) in it")
        return Path(explicit)
    candidates = [os.environ.get("FASTJEM_CIFAR10_DIR", ""), str(REPO / ".data" / "cifar10"),
                  str(REPO.parent / "shared" / "data" / "cifar10")]
    for c in candidates:
        if c and _holds_cifar(Path(c)):
            return Path(c)
    raise SystemExit("CIFAR-10 not found: pass --cifar-dir or set FASTJEM_CIFAR10_DIR to a folder holding "
                     f"{' and '.join(TARBALLS)} (or train/ and test/ image folders); looked in "
                     + ", ".join(c for c in candidates if c))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=2.0, help="training wall-clock minutes (compilation included)")
    p.add_argument("--depth", type=int, default=28)
    p.add_argument("--width", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--total-seconds", type=float, default=0.0, help="whole-script budget (decode, train, "
                   "evaluate); when set, training gets what setup leaves minus --eval-reserve, at most --minutes")
    p.add_argument("--eval-reserve", type=float, default=30.0, help="seconds kept for evaluation and the grid")
    p.add_argument("--warmup", type=int, default=5, help="iterations excluded from the steady iterations/s")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--cifar-dir", default="")
    p.add_argument("--out", default=str(RESULTS), type=results_folder)
    args = p.parse_args(argv)
    exit_on_sigterm()  # a SIGTERM still removes the temporary folders
    device = pick_device(p, args.device)
    check_sizes(p, args.depth, args.width, batch_size=args.batch_size)
    if not 0 < args.minutes < math.inf:
        p.error(f"--minutes must be a finite number > 0, got {args.minutes}")
    if args.warmup < 0:
        p.error(f"--warmup must be >= 0 (iterations left out of the steady it/s), got {args.warmup}")
    for name in ("total_seconds", "eval_reserve"):
        if not 0 <= getattr(args, name) < math.inf:
            p.error(f"--{name.replace('_', '-')} must be a finite number >= 0, got {getattr(args, name)}")
    # before the results file is claimed: a folder without CIFAR-10 ended the script with its file saying "started"
    data_dir = find_cifar(args.cifar_dir)  # fastjem reads the tarballs in place
    started = now_utc()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = f"WRN-{args.depth}-{args.width}"
    rep = {"schema": "fastjem-bench-cifar/1", "date": started.isoformat(timespec="seconds"),
           "device": device_info(device), "versions": versions(), "git": git_state(), "model": model,
           "batch_size": args.batch_size, "minutes_budget": args.minutes, "status": "started"}
    # the run's name claimed now (another run's file left alone; a run killed leaves it "started", Ctrl-C marks it
    # "interrupted"), the sample grid named after it: a run started in the same second wrote its grid over this one's
    path = write_result(rep, "cifar", device, started, out)
    png_name = "cifar-samples-" + path.name.removeprefix("cifar-").removesuffix(".json") + ".png"
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fastjem-cifar-") as tmp:
        tmp = Path(tmp)
        os.environ.setdefault("FASTJEM_CACHE", str(tmp / "cache"))
        trainer = None
        try:
            t0 = time.perf_counter()
            cfg = get_preset("paper").replace(data_dir=str(data_dir), depth=args.depth, width=args.width,
                                              batch_size=args.batch_size, iters=10**9, device=device.type,
                                              eval_every=0, ckpt_every=0, sample_every=0, log_every=10**9)
            log: list[str] = []
            trainer = Trainer(cfg, out_dir=tmp / "run", progress=False, log=log.append)
            rep["setup_seconds"] = time.perf_counter() - t0  # decode + build
            rep["config"] = cfg.to_dict()
            engine = getattr(trainer, "engine", None)
            rep["engine"] = engine.describe() if hasattr(engine, "describe") else None
            print(f"{model} on CIFAR-10 ({trainer.data.n_train} train images), {device}, "
                  f"{args.minutes} min; setup {rep['setup_seconds']:.0f} s", flush=True)

            budget = 60 * args.minutes
            if args.total_seconds:
                budget = min(budget, args.total_seconds - (time.perf_counter() - t_all) - args.eval_reserve)
            rep["train_budget_seconds"] = budget
            sync(device)
            t_train = time.perf_counter()
            t_steady = t_train if args.warmup == 0 else None
            metrics = []
            while True:
                trainer.train_step()
                it = trainer.iteration
                if it == args.warmup:
                    sync(device)
                    t_steady = time.perf_counter()
                    rep["warmup_seconds"] = t_steady - t_train
                over = time.perf_counter() - t_train > budget  # the host's clock: no sync per iteration
                if it % 25 == 0 or over:
                    m = trainer.read_metrics()  # a host sync every 25 iterations, as the trainer's log does
                    m["iter"], m["seconds"] = it, time.perf_counter() - t_train
                    metrics.append(m)
                if over:
                    break
            sync(device)
            t_end = time.perf_counter()
            rep["iterations"] = trainer.iteration
            rep["train_seconds"] = t_end - t_train
            rep["it_per_s_overall"] = trainer.iteration / (t_end - t_train)
            steady = trainer.iteration - args.warmup
            rep["it_per_s_steady"] = steady / (t_end - t_steady) if t_steady and steady > 0 else None
            rep["epochs"] = trainer.iteration / trainer.iters_per_epoch
            rep["metrics"] = metrics[-4:]
            rep["final_loss"] = metrics[-1]["loss"] if metrics else None

            net = getattr(trainer.model, "_orig_mod", trainer.model)
            autocast = (torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda"
                        else torch.autocast("cpu", enabled=False))
            t0 = time.perf_counter()
            with autocast:
                rep["test_acc"] = evaluate(net, trainer.data.test_x, trainer.data.test_y)["acc"]
            rep["eval_seconds"] = time.perf_counter() - t0
            rep["eval_precision"] = "bf16 autocast" if device.type == "cuda" else "fp32"
            grid = trainer.save_samples("samples.png")
            atomic_copy(grid, out / png_name)  # whole or not at all (Ctrl-C during the copy)
            saved(out / png_name)
            rep["samples_png"] = png_name
            rep["log"] = log
            rep["status"] = "ok"
        except KeyboardInterrupt:
            # Ctrl-C: the file says the run was interrupted, when, and after how many iterations (it said "started");
            # run_script's line, naming the file, follows
            rep["status"] = "interrupted"
            rep["interrupted_at"] = now_utc().isoformat(timespec="seconds")
            if trainer is not None:
                rep["iterations"] = trainer.iteration
            rep["total_seconds"] = time.perf_counter() - t_all
            write_result(rep, "cifar", device, started, out, path)
            raise
        except Exception as err:
            rep["status"] = f"failed: {type(err).__name__}: {err}"
            rep["traceback"] = traceback.format_exc(limit=8)
            print(rep["traceback"], file=sys.stderr)
    rep["total_seconds"] = time.perf_counter() - t_all
    write_result(rep, "cifar", device, started, out, path)
    if rep["status"] == "ok":
        print(f"cifar_iterations: {rep['iterations']}")
        steady = rep["it_per_s_steady"]
        print(f"cifar_it_per_s_steady: {steady:.3f}" if steady else "cifar_it_per_s_steady: not measured (the run "
              f"ended within its {args.warmup} warm-up iterations: give it more --minutes, or a smaller --warmup)")
        print(f"cifar_test_acc: {rep['test_acc']:.4f}")
    print(f"results: {path}")
    return 0 if rep["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(run_script(main))

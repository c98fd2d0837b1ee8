"""Does bf16 cost quality? The quick preset trained by the fp32 engine and the bf16 engine, over seeds.

Issue bar: the bf16 engine's test accuracy within 1 point of the fp32 engine's. Each seed trains both
engines (same seed, same data order); the file records every run and the mean difference. On a CPU
without bf16 instructions the bf16 run is emulated, slower, with the same rounding; with AVX512-BF16 and no AMX
its speed depends on the CPU (faster on an AMD EPYC, slower on an Intel Xeon: fastjem.engine.fast_bf16).

    python bench/precision_quality.py --seeds 1 2 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interrupted import quiet_while_importing  # noqa: E402

quiet_while_importing(__name__)  # Ctrl-C while torch imports: run_script's line, not a traceback

from env_info import (  # noqa: E402
    RESULTS,
    device_info,
    exit_on_sigterm,
    git_state,
    now_utc,
    results_folder,
    run_script,
    versions,
    write_result,
)
from quick_run import train_timed  # noqa: E402

from fastjem.config import PRESETS, get_preset  # noqa: E402
from fastjem.errors import FastJEMError  # noqa: E402


def compare(runs: list[dict], seeds: list[int], base: str, low: str) -> dict:
    """The runs' mean test accuracy per precision, and ``low``'s difference from ``base`` per seed and on average,
    in points; of a study cut short, over the runs it finished (the differences over the seeds that trained both)."""
    acc = {(r["seed"], r["precision"]): r["test_acc"] for r in runs}
    mean = {pr: statistics.mean(accs) for pr in (base, low)
            if (accs := [a for (_, p), a in acc.items() if p == pr])}
    diffs = [acc[s, low] - acc[s, base] for s in seeds if (s, low) in acc and (s, base) in acc]
    return {"mean_test_acc": mean, "per_seed_diff_points": [100 * d for d in diffs],
            "mean_diff_points": 100 * statistics.mean(diffs) if diffs else None,
            "within_1_point": abs(statistics.mean(diffs)) <= 0.01 if diffs else None}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="quick", choices=sorted(PRESETS))
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--precisions", nargs=2, default=["fp32", "bf16"], metavar=("BASE", "LOW"))
    p.add_argument("--iters", type=int, default=0, help="override the preset's length: a check of the script, "
                                                        "written as a smoke-precision-quality-*.json that the README "
                                                        "leaves out")
    p.add_argument("--out", default=str(RESULTS), type=results_folder)
    args = p.parse_args(argv)
    exit_on_sigterm()  # a SIGTERM still removes the temporary run folders
    if len(set(args.seeds)) != len(args.seeds) or args.precisions[0] == args.precisions[1]:
        p.error("--seeds must be distinct, and --precisions two different precisions")
    if args.iters < 0:
        p.error(f"--iters must be > 0 (0: the preset's length), got {args.iters}")
    # every run's config checked before the first trains (a typo would otherwise show after the first runs)
    configs = []
    for seed in args.seeds:
        for precision in args.precisions:
            try:
                cfg = get_preset(args.preset).replace(seed=seed, precision=precision)
                configs.append((cfg.replace(iters=args.iters) if args.iters else cfg).validate())
            except FastJEMError as err:
                p.error(str(err))
    started = now_utc()
    base, low = args.precisions
    runs = []
    rep = path = None
    for cfg in configs:
        seed, precision = cfg.seed, cfg.precision
        summary, trainer, seconds = train_timed(cfg)
        runs.append({"seed": seed, "precision": precision, "engine": trainer.engine.describe(),
                     "test_acc": summary["test_acc"], "val_acc": summary["val_acc"],
                     "wall_seconds": seconds, "it_per_s_median": summary["it_per_s_median"],
                     "recoveries": summary["recoveries"]})
        print(f"seed {seed} {precision}: test accuracy {summary['test_acc']:.4f} in {seconds:.0f} s", flush=True)
        if rep is None:
            rep = {"schema": "fastjem-bench-precision-quality/1", "date": started.isoformat(timespec="seconds"),
                   "device": device_info(trainer.device), "versions": versions(), "git": git_state(),
                   "preset": args.preset, "iters": configs[0].iters, "runs": runs}
        rep.update(compare(runs, args.seeds, base, low), smoke=args.iters > 0)
        # after every run: a study cut short (Ctrl-C, a timeout) keeps the runs it finished
        path = write_result(rep, "precision-quality", trainer.device, started, args.out, path)
    mean = rep["mean_test_acc"]
    print(f"mean test accuracy: {base} {mean[base]:.4f}, {low} {mean[low]:.4f} "
          f"({rep['mean_diff_points']:+.2f} points); wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))

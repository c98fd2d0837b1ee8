"""Informative initialisation (JEM++) against JEM's uniform one: the quick preset over seeds and SGLD step counts.

JEM++'s claim (Yang & Ji 2021): chains started from a Gaussian per class, fitted to the training images, need far
fewer SGLD steps than chains started from U(-1, 1). Each seed trains every (buffer init, SGLD steps) variant from
the same seed; the file records every run (test accuracy, the data/sample energy gap at the end, divergence
recoveries, wall time) and the means per variant.

    python bench/buffer_init_quality.py --seeds 1 2 3 --variants uniform:20 uniform:5 informative:5
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

from fastjem.config import BUFFER_INITS, PRESETS, get_preset  # noqa: E402
from fastjem.errors import FastJEMError  # noqa: E402


def parse_variant(text: str) -> tuple[str, int]:
    init, _, steps = text.partition(":")
    if init not in BUFFER_INITS or not steps.isdigit():
        raise argparse.ArgumentTypeError(f"a variant is INIT:STEPS with INIT one of {', '.join(BUFFER_INITS)}, "
                                         f"got {text!r}")
    return init, int(steps)


def variant_means(runs: list[dict], variants: list[tuple[str, int]]) -> dict:
    """Each variant's mean (and spread) over its seeds' runs; of a study cut short, over the runs it finished, the
    variants with none left out."""
    means = {}
    for init, steps in variants:
        mine = [r for r in runs if (r["buffer_init"], r["sgld_steps"]) == (init, steps)]
        if not mine:
            continue
        means[f"{init}:{steps}"] = {
            "test_acc": statistics.mean(r["test_acc"] for r in mine),
            "test_acc_std": statistics.stdev(r["test_acc"] for r in mine) if len(mine) > 1 else 0.0,
            "wall_seconds": statistics.mean(r["wall_seconds"] for r in mine),
            "recoveries": sum(r["recoveries"] for r in mine),
        }
    return means


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="quick", choices=sorted(PRESETS))
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--variants", type=parse_variant, nargs="+",
                   default=[("uniform", 20), ("uniform", 5), ("informative", 5), ("informative", 20)])
    p.add_argument("--iters", type=int, default=0, help="training length in iterations (default: the preset's; "
                                                        "part of what the README table compares)")
    p.add_argument("--out", default=str(RESULTS), type=results_folder)
    args = p.parse_args(argv)
    exit_on_sigterm()  # a SIGTERM still removes the temporary run folders
    if args.iters < 0:
        p.error(f"--iters must be > 0 (0: the preset's length), got {args.iters}")
    if len(set(args.seeds)) != len(args.seeds) or len(set(args.variants)) != len(args.variants):
        p.error("--seeds and --variants must be distinct (a repeat is the same run again: a spread of 0)")
    # every run's config checked before the first trains (uniform:0 was refused only when its turn came, the runs
    # before it lost)
    configs = {}
    for seed in args.seeds:
        for init, steps in args.variants:
            cfg = get_preset(args.preset).replace(seed=seed, buffer_init=init, sgld_steps=steps)
            try:
                configs[seed, init, steps] = (cfg.replace(iters=args.iters) if args.iters > 0 else cfg).validate()
            except FastJEMError as err:
                p.error(f"--variants {init}:{steps}: {err}")
    started = now_utc()
    runs = []
    rep = path = None
    for k, seed in enumerate(args.seeds):
        # the variants' order rotates with the seed, so that no variant always runs first and pays the
        # process's one-time costs in its wall time
        shift = k % len(args.variants)
        for init, steps in args.variants[shift:] + args.variants[:shift]:
            summary, trainer, seconds = train_timed(configs[seed, init, steps])
            last = summary["last_train_record"]
            runs.append({"seed": seed, "buffer_init": init, "sgld_steps": steps, "test_acc": summary["test_acc"],
                         "val_acc": summary["val_acc"], "final_gap": last.get("gap"),
                         "final_e_data": last.get("e_data"), "final_e_sample": last.get("e_sample"),
                         "wall_seconds": seconds, "it_per_s_median": summary["it_per_s_median"],
                         "recoveries": summary["recoveries"]})
            print(f"seed {seed} {init}:{steps}: test accuracy {summary['test_acc']:.4f}, gap {last.get('gap')}, "
                  f"{summary['recoveries']} recoveries, {seconds:.0f} s", flush=True)
            if rep is None:
                rep = {"schema": "fastjem-bench-buffer-init/1", "date": started.isoformat(timespec="seconds"),
                       "device": device_info(trainer.device), "versions": versions(), "git": git_state(),
                       "preset": args.preset, "iters": args.iters or get_preset(args.preset).iters, "runs": runs}
            rep["means"] = variant_means(runs, args.variants)
            # after every run: a study cut short (Ctrl-C, a timeout) keeps the runs it finished
            path = write_result(rep, "buffer-init", trainer.device, started, args.out, path)
    means = rep["means"]
    for name, m in means.items():
        print(f"{name:>16}: test accuracy {m['test_acc']:.4f} +- {m['test_acc_std']:.4f}, {m['wall_seconds']:.0f} s, "
              f"{m['recoveries']} recoveries")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))

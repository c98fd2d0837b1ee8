"""The README's main job, measured: `fastjem train` with a preset (default quick), timed end to end.

Writes bench/results/quick-<date>-<device>.json: device, versions, git sha, the config, wall seconds
(data loading, training, evaluation), iterations/s and the test accuracy of the run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interrupted import quiet_while_importing  # noqa: E402

quiet_while_importing(__name__)  # Ctrl-C while torch imports: run_script's line, not a traceback

import torch  # noqa: E402
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

from fastjem.config import PRESETS, get_preset  # noqa: E402
from fastjem.errors import FastJEMError  # noqa: E402
from fastjem.runs import counted  # noqa: E402
from fastjem.train import Trainer  # noqa: E402


def train_timed(cfg) -> tuple[dict, Trainer, float]:
    """Train ``cfg`` in a temporary folder: (summary with median it/s, trainer, wall seconds)."""
    with tempfile.TemporaryDirectory(prefix="fastjem-quick-") as tmp:
        t0 = time.perf_counter()
        trainer = Trainer(cfg, out_dir=Path(tmp) / "run", progress=False)
        # its checkpoint goes with the temporary folder: nothing to resume, and a stop names none
        trainer.resume_hint = None
        trainer.checkpoint_kept = False
        summary = trainer.fit()
        seconds = time.perf_counter() - t0
        if summary.get("stopped_by") == "SIGINT":
            # Ctrl-C, which training caught to stop at the end of an iteration: the script's own (run_script) follows
            raise KeyboardInterrupt
        if summary.get("interrupted"):
            # its checkpoint lies in this temporary folder, about to go: nothing to resume, nothing to record
            raise SystemExit(f"interrupted at iteration {summary['iteration']}: nothing recorded (the run was "
                             "temporary; run the measurement again)")
        lines = [json.loads(s) for s in (Path(tmp) / "run" / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in lines if "it_per_s" in r]
    speeds = sorted(r["it_per_s"] for r in train)
    summary["it_per_s_median"] = speeds[len(speeds) // 2] if speeds else None
    summary["last_train_record"] = train[-1] if train else {}
    return summary, trainer, seconds


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="quick", choices=sorted(PRESETS))
    p.add_argument("--classifier-only", action="store_true")
    p.add_argument("--precision", default=None, choices=("fp32", "tf32", "bf16", "auto"),
                   help="override the preset's precision")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--iters", type=int, default=0, help="override the preset's length: a check of the script, "
                                                        "written as a smoke-quick-*.json that the README leaves out")
    p.add_argument("--out", default=str(RESULTS), type=results_folder)
    args = p.parse_args(argv)
    exit_on_sigterm()  # a SIGTERM still removes the temporary folders
    cfg = get_preset(args.preset).replace(seed=args.seed)
    if args.precision:
        cfg = cfg.replace(precision=args.precision)
    if args.classifier_only:
        cfg = cfg.replace(px_weight=0.0, pxy_weight=0.0)
    if args.iters < 0:
        p.error(f"--iters must be > 0 (0: the preset's length), got {args.iters}")
    if args.iters:
        cfg = cfg.replace(iters=args.iters)
    try:
        cfg.validate()
    except FastJEMError as err:
        p.error(str(err))
    started = now_utc()
    summary, trainer, seconds = train_timed(cfg)
    rep = {
        "schema": "fastjem-bench-quick/1", "date": started.isoformat(timespec="seconds"),
        "device": device_info(trainer.device), "versions": versions(), "git": git_state(),
        "preset": args.preset, "classifier_only": args.classifier_only, "config": cfg.to_dict(),
        "engine": trainer.engine.describe(), "torch_threads": torch.get_num_threads(),
        "wall_seconds": seconds, "iterations": summary["iteration"], "it_per_s_median": summary["it_per_s_median"],
        "test_acc": summary["test_acc"], "val_acc": summary["val_acc"], "test_nll": summary["test_nll"],
        "recoveries": summary["recoveries"], "smoke": args.iters > 0,
    }
    path = write_result(rep, "quick", trainer.device, started, args.out)
    print(f"{args.preset}{' (classifier only)' if args.classifier_only else ''}: "
          f"{counted(summary['iteration'], 'iteration')} "
          f"in {seconds:.1f} s on {rep['device'].get('name', trainer.device)}, test accuracy {summary['test_acc']:.4f}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))

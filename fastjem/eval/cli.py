"""``fastjem eval CHECKPOINT <task>``: the command line of fastjem.eval."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from fastjem.cli import TASK_HELP, NameArgument, PathArgument, int64
from fastjem.errors import ConfigError, FastJEMError, FastJEMWarning

# the options only some tasks read (every other option is common to all); `all` reads them all
TASK_OPTIONS = {
    "n_steps": ("accuracy", "samples", "fid"), "n_samples": ("samples",), "per_class": ("samples",),
    "init": ("samples",), "bins": ("calibration",), "compare": ("calibration",), "ood": ("ood",),
    "ood_data_dir": ("ood",), "n_ood": ("ood",), "norms": ("robustness",), "linf_eps": ("robustness",),
    "l2_eps": ("robustness",), "refine_steps": ("robustness",), "pgd_steps": ("robustness",),
    "n_attack": ("robustness",), "inception_weights": ("fid",), "features_model": ("fid",), "source": ("fid",),
    "n_fid": ("fid",),
}


def refuse_ignored_options(args: argparse.Namespace) -> None:
    """An option the task does not read, given a value other than its default, is an error: the user meant it to
    change something (``fastjem eval ckpt accuracy --compare other.pt`` compared nothing)."""
    if args.task == "all":
        return
    ignored = [(dest, tasks) for dest, tasks in TASK_OPTIONS.items()
               if args.task not in tasks and getattr(args, dest) != args.eval_defaults[dest]]
    if ignored:
        said = "; ".join(f"--{dest.replace('_', '-')} is for {' and '.join(tasks)}" for dest, tasks in ignored)
        raise ConfigError(f"{said}: the {args.task} task does not use {'it' if len(ignored) == 1 else 'them'}. "
                          f"Drop {'it' if len(ignored) == 1 else 'them'}, or run the task "
                          f"{'it belongs' if len(ignored) == 1 else 'they belong'} to (or `all`)")


def add_eval_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``fastjem eval`` (its parser is made by fastjem.cli.build_parser)."""
    from fastjem.eval.attacks import NORMS
    from fastjem.eval.ood import OOD_SETS, SYNTHETIC_SETS

    p.add_argument("checkpoint", action=PathArgument,
                   help="checkpoint file, a run folder holding checkpoint.pt, a folder of checkpoints (a run's "
                        "checkpoints/, from --ckpt-keep-every: the task on each, then its history) or a folder of runs "
                        "(a fastjem sweep: the task on each run, then a comparison, mean ± std per grid combination)")
    p.add_argument("task", metavar="TASK", help=f"one of: {', '.join(TASK_HELP)}")
    g = p.add_argument_group("common")
    g.add_argument("--out-dir", default=None, action=PathArgument,
                   help="output folder (default: eval/ beside a run's checkpoint.pt, eval-<name>/ beside any other "
                        "checkpoint file: eval-best/ for best.pt)")
    g.add_argument("--batch-size", type=int64, default=500, help="evaluation batch size (default: 500)")
    g.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="device (default: auto)")
    g.add_argument("--data-dir", default="", action=PathArgument,
                   help="where the datasets live (default: the checkpoint's training --data-dir, else "
                        "~/.cache/fastjem/data)")
    g.add_argument("--download", action="store_true", help="download missing torchvision datasets (needs internet)")
    g.add_argument("--n-test", type=int64, default=0,
                   help="use N test images, a fixed random subset, the same for every task and checkpoint (default: "
                        "all)")
    g.add_argument("--test-noise", type=float, default=None,
                   help="std of Gaussian noise added to test images (default: the checkpoint's --test-noise)")
    g.add_argument("--seed", type=int64, default=0, help="random seed (default: 0)")
    g.add_argument("--no-progress", action="store_true", help="no progress bars")
    g = p.add_argument_group("accuracy and samples")
    g.add_argument("--n-steps", type=int64, default=None,
                   help="SGLD steps: refinement before classifying (accuracy, default 0) or chain length for "
                        "fresh and class-conditional samples (samples and fid, default 100)")
    g.add_argument("--n-samples", type=int64, default=100, help="unconditional samples per grid (default: 100)")
    g.add_argument("--per-class", type=int64, default=10, help="samples per class row (default: 10)")
    g.add_argument("--init", default="auto", choices=("auto", "buffer", "noise", "informative"),
                   help="start of the class-conditional chains: the replay buffer, U(-1, 1) or the class Gaussians "
                        "of the training images (default: auto = the buffer when there is one, else the run's "
                        "--buffer-init)")
    g = p.add_argument_group("calibration")
    g.add_argument("--bins", type=int64, default=20, help="equal-width confidence bins for ECE (default: 20)")
    g.add_argument("--compare", metavar="CHECKPOINT", default=None, action=PathArgument,
                   help="a second checkpoint (e.g. the classifier-only baseline) drawn on the same diagram")
    g = p.add_argument_group("ood")
    g.add_argument("--ood", nargs="+", default=None, metavar="SET", action=NameArgument, names="no OOD set",
                   expected=f"{', '.join(OOD_SETS)}, all or a folder of images, or drop --ood for the default "
                            f"({' '.join(SYNTHETIC_SETS)})",
                   help=f"OOD sets: {', '.join(OOD_SETS)} or a folder of images (default: {' '.join(SYNTHETIC_SETS)}; "
                        "'all' tries every set and skips those not available)")
    g.add_argument("--ood-data-dir", default=None, action=PathArgument,
                   help="where the OOD datasets live (default: --data-dir)")
    g.add_argument("--n-ood", type=int64, default=1000, help="images per OOD set (default: 1000)")
    g = p.add_argument_group("robustness")
    g.add_argument("--norms", nargs="+", default=list(NORMS), choices=NORMS, help="attack norms (default: both)")
    g.add_argument("--linf-eps", nargs="+", type=float, default=None, metavar="EPS",
                   help="L-inf epsilons in 1/255 units of the [0, 1] pixel scale (default: 0 2 4 8 16 32)")
    g.add_argument("--l2-eps", nargs="+", type=float, default=None, metavar="EPS",
                   help="L2 epsilons on the [0, 1] pixel scale (default: 0 0.1 0.25 0.5 1 2)")
    g.add_argument("--refine-steps", nargs="+", type=int64, default=[0, 1, 10], metavar="N",
                   help="SGLD refinement steps before classifying, attacked through (default: 0 1 10)")
    g.add_argument("--pgd-steps", type=int64, default=10, help="PGD iterations (default: 10)")
    g.add_argument("--n-attack", type=int64, default=500,
                   help="test images attacked, a fixed random subset of those --n-test leaves; 0 = all of them "
                        "(default: 500)")
    g = p.add_argument_group("fid")
    g.add_argument("--inception-weights", default=None, metavar="PATH", action=PathArgument,
                   help="local Inception v3 weights, torch-fidelity's weights-inception-2015-12-05-6726825d.pth, for "
                        "FID / Inception score via torchmetrics (pip install 'torchmetrics[image]')")
    g.add_argument("--features-model", default=None, metavar="SPEC", action=NameArgument, names="no feature model",
                   expected="'classifier', a torch.export or TorchScript file, or 'module.path:name' (or "
                            "--inception-weights PATH instead)",
                   help="any feature extractor: 'module.path:name', a file from torch.export.save (fixed or dynamic "
                        "batch) or torch.jit.save, or 'classifier' (this "
                        "network's own features); images in [-1, 1] -> [B, D]")
    g.add_argument("--source", default="auto", choices=("auto", "buffer", "fresh"),
                   help="which samples FID scores (default: auto = the buffer when there is one)")
    g.add_argument("--n-fid", type=int64, default=10000,
                   help="samples for FID (default: 10000, capped by the buffer's size, and with --source fresh by "
                        "the number of test images)")
    p.set_defaults(eval_defaults={dest: p.get_default(dest) for dest in TASK_OPTIONS})


def _task_options(args: argparse.Namespace) -> dict:
    from fastjem.eval.tasks import DEFAULT_L2_EPS, DEFAULT_LINF_EPS

    linf = DEFAULT_LINF_EPS if args.linf_eps is None else tuple(e / 255 for e in args.linf_eps)
    l2 = DEFAULT_L2_EPS if args.l2_eps is None else tuple(args.l2_eps)
    return {
        "accuracy": {"n_steps": 0 if args.n_steps is None else args.n_steps},
        "calibration": {"n_bins": args.bins},
        "ood": {"n_ood": args.n_ood, "ood_data_dir": args.ood_data_dir},
        "samples": {"n_steps": 100 if args.n_steps is None else args.n_steps, "n_samples": args.n_samples,
                    "per_class": args.per_class, "init": args.init},
        "robustness": {"norms": tuple(args.norms), "linf_eps": linf, "l2_eps": l2,
                       "refine_steps": tuple(args.refine_steps), "pgd_steps": args.pgd_steps,
                       "n_attack": args.n_attack},
        "fid": {"source": args.source, "n_fid": args.n_fid, "n_steps": 100 if args.n_steps is None else args.n_steps},
    }


def run_eval(args: argparse.Namespace) -> int:
    from fastjem.eval import tasks

    if args.task not in TASK_HELP:
        raise ConfigError(f"unknown eval task {args.task!r}: choose one of {', '.join(TASK_HELP)} "
                          "(fastjem eval --help describes each)")
    refuse_ignored_options(args)
    if args.n_ood <= 0 or args.n_test < 0:
        raise ConfigError(f"--n-ood must be > 0 and --n-test >= 0, got --n-ood {args.n_ood}, --n-test {args.n_test}")
    common = {"out_dir": args.out_dir, "batch_size": args.batch_size, "device": args.device,
              "data_dir": args.data_dir, "download": args.download, "progress": not args.no_progress,
              "seed": args.seed, "test_noise": args.test_noise, "n_test": args.n_test}
    opts = _task_options(args)
    ood_all = args.ood is not None and "all" in args.ood
    sets = args.ood
    from fastjem.eval.history import checkpoint_history, refuse_all, run_folders

    history = checkpoint_history(args.checkpoint)
    runs = run_folders(args.checkpoint)
    if history is not None or runs is not None:
        refuse_all(args.task)
    if runs is not None:
        return _run_runs(args, runs, common, opts, ood_all)
    if args.task == "all":
        reports = tasks.run_all(args.checkpoint, ood_sets=sets, compare=args.compare,
                                inception_weights=args.inception_weights, features_model=args.features_model,
                                task_options=opts, **common)
        rows = tasks.summary_rows(reports)
        out = next((Path(r["files"][-1]).parent for r in reports.values() if "files" in r), None)
        print(tasks.format_table(rows))
        if out is not None:
            print(f"\nreports and figures in {out}/ (summary: {out / 'all.json'}; with the figures: "
                  f"{out / 'report.md'})")
            # a skipped task's report from an earlier run lies beside the new ones, and looks as current
            earlier = [t for t, r in reports.items() if "skipped" in r and (out / f"{t}.json").exists()]
            if earlier:
                print(f"note: {', '.join(f'{t}.json' for t in earlier)} in {out} "
                      f"{'is' if len(earlier) == 1 else 'are'} from an earlier run: this `all` skipped "
                      f"{', '.join(earlier)}, which the summary and report.md leave out")
        return 0
    if history is not None:
        return _run_history(args, history, common, opts, ood_all)
    report = _run_task(args, args.checkpoint, common, opts, ood_all)
    print(tasks.format_table(tasks.summary_rows({args.task: report})))
    print("\nwritten:\n" + "\n".join(f"  {f}" for f in report["files"]))
    out = Path(report["files"][-1]).parent
    stale = [f for f in ("all.json", "report.md") if (out / f).exists()]
    if stale:
        # an earlier `all` wrote its summary here, and this report now disagrees with it
        print(f"note: {' and '.join(stale)} in {out} are from an earlier `all` and do not show this {args.task} "
              "report: run `all` again to bring them up to date")
    return 0


def _run_task(args: argparse.Namespace, checkpoint, common: dict, opts: dict, ood_all: bool) -> dict:
    """One task (not all) on one checkpoint; returns its report."""
    from fastjem.eval import tasks
    from fastjem.eval.ood import OOD_SETS

    if args.task == "accuracy":
        return tasks.accuracy(checkpoint, **opts["accuracy"], **common)
    if args.task == "calibration":
        return tasks.calibration(checkpoint, compare=args.compare, **opts["calibration"], **common)
    if args.task == "ood":
        chosen = tuple(d for d in OOD_SETS) if ood_all else tuple(args.ood or tasks.SYNTHETIC_SETS)
        if ood_all:
            from fastjem.eval.core import load_model

            dataset = load_model(checkpoint, args.device).config.dataset
            chosen = tuple(d for d in chosen if d != dataset) + tuple(
                d for d in args.ood if d != "all" and d not in OOD_SETS)  # folders named beside all
        return tasks.ood(checkpoint, sets=chosen, skip_missing=ood_all, **opts["ood"], **common)
    if args.task == "samples":
        return tasks.samples(checkpoint, **opts["samples"], **common)
    if args.task == "robustness":
        return tasks.robustness(checkpoint, **opts["robustness"], **common)
    return tasks.fid(checkpoint, inception_weights=args.inception_weights, features_model=args.features_model,
                     **opts["fid"], **common)


def _run_history(args: argparse.Namespace, checkpoints: list, common: dict, opts: dict, ood_all: bool) -> int:
    """The task on every checkpoint of a folder (checkpoints/), each with its own outputs, then the history."""
    from fastjem.eval.history import format_history, write_history

    out_root = Path(args.out_dir) if args.out_dir else Path(args.checkpoint) / "eval-history"
    reports, _, failed = _each(args, checkpoints, lambda path: out_root / path.stem, common, opts, ood_all,
                               "checkpoints", f"in {args.checkpoint}")
    history = write_history(args.task, reports, out_root)
    print(format_history(history))
    print(f"\nper checkpoint: {out_root}/<checkpoint>/; history: {history['json']}, {history['png']}")
    return _said_failed(failed, len(checkpoints), "checkpoints", "history")


def _each(args: argparse.Namespace, paths: list, out_dir, common: dict, opts: dict, ood_all: bool, what: str,
          place: str) -> tuple[list, list, list]:
    """The task on each of ``paths`` (checkpoints, or runs), its outputs in ``out_dir(path)``, going on past one that
    cannot be evaluated (named with its error): (reports, the paths evaluated, the names of the others). None
    evaluated is one error; a single path's own error is raised as it is."""
    reports, evaluated, failed = [], [], []
    for k, path in enumerate(paths):
        print(f"[{k + 1}/{len(paths)}] {path.name}", flush=True)
        try:
            reports.append(_run_task(args, path, {**common, "out_dir": out_dir(path)}, opts, ood_all))
        except FastJEMError as err:
            # one that cannot be evaluated (its checkpoint unreadable or cut short, its data missing) stopped those
            # after it, and the history or comparison of those before it
            if len(paths) == 1:
                raise
            print(f"  {path.name}: not evaluated: {err}", file=sys.stderr, flush=True)
            failed.append(path.name)
            continue
        evaluated.append(path)
    if not reports:
        raise ConfigError(f"none of the {len(paths)} {what} {place} could be evaluated: each one's error is above")
    return reports, evaluated, failed


def _said_failed(failed: list, total: int, what: str, holder: str) -> int:
    """The exit status after ``_each``: 1, said, where some were not evaluated."""
    if failed:
        print(f"fastjem: error: {len(failed)} of {total} {what} not evaluated ({', '.join(failed)}): their errors "
              f"are above; the {holder} holds the others", file=sys.stderr)
        return 1
    return 0


def _run_runs(args: argparse.Namespace, runs: list, common: dict, opts: dict, ood_all: bool) -> int:
    """The task on every run of a folder (a sweep), each report in the run's own eval/ (or --out-dir/<run>/), then
    one comparison: a row per run, mean ± std per grid combination in a sweep."""
    from fastjem.eval.history import compare_runs, format_comparison

    folder = Path(args.checkpoint)
    reports, evaluated, failed = _each(args, runs, lambda run: Path(args.out_dir) / run.name if args.out_dir else None,
                                       common, opts, ood_all, "runs", f"of {folder}")
    result = compare_runs(args.task, reports, evaluated, Path(args.out_dir) if args.out_dir else folder)
    print(format_comparison(result))
    per_run = Path(args.out_dir) / "<run>" if args.out_dir else Path("<run>") / "eval"
    print(f"\nper run: {per_run / args.task}.json; comparison: {result['json']}")
    return _said_failed(failed, len(runs), "runs", "comparison")


def add_sample_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``fastjem sample`` (its parser is made by fastjem.cli.build_parser)."""
    p.add_argument("checkpoint", action=PathArgument, help="checkpoint file, or a run folder holding checkpoint.pt")
    p.add_argument("-n", "--n", type=int64, default=100,
                   help="samples (per class with --class) (default: 100)")
    p.add_argument("--class", dest="classes", nargs="+", default=None, metavar="C",
                   help="class-conditional: class names (cat, dog: the dataset's class names, an image folder's class "
                        "folders), class indices 0..K-1, or 'all' (default: unconditional); a name wins over an "
                        "index: of folders numbered 1..10, --class 3 is the folder named 3 (index 2), --class 0 "
                        "index 0; the classes drawn are printed as index (name)")
    p.add_argument("--n-steps", type=int64, default=100, help="SGLD steps per chain (default: 100)")
    p.add_argument("--init", default="auto", choices=("auto", "buffer", "noise", "informative"),
                   help="chain start: the checkpoint's replay buffer, U(-1, 1), or informative = a Gaussian per class "
                        "fitted to the dataset's training images (JEM++); default: auto = the buffer when there is "
                        "one, else the run's own --buffer-init")
    p.add_argument("--data-dir", default="", action=PathArgument,
                   help="where --init informative reads the training images (default: the checkpoint's training "
                        "--data-dir)")
    p.add_argument("--download", action="store_true",
                   help="download a missing torchvision dataset for --init informative (needs internet)")
    p.add_argument("--step-size", type=float, default=None, help="SGLD step size (default: the checkpoint's)")
    p.add_argument("--noise", type=float, default=None, help="SGLD noise std (default: the checkpoint's)")
    p.add_argument("--out", default=None, action=PathArgument,
                   help="output file, .npz or .pt (default: <unconditional|class-NAME-...|all-classes>.npz in sampled/ "
                        "beside a run's checkpoint.pt, in sampled-<name>/ beside any other checkpoint file)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.add_argument("--batch-size", type=int64, default=500, help="chains run at once (default: 500)")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="device (default: auto)")
    p.add_argument("--seed", type=int64, default=0,
                   help="random seed: the same seed, --batch-size and device repeat a draw (default: 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def run_sample(args: argparse.Namespace) -> int:
    import torch

    from fastjem.checkpoint import make_folder
    from fastjem.eval import draw
    from fastjem.eval.core import load_model

    draw.check_counts(args.n, args.n_steps, args.batch_size)
    draw.check_sgld(args.step_size, args.noise)
    if args.out is not None:
        draw.check_output(args.out, args.force)
    em = load_model(args.checkpoint, args.device)
    classes = draw.parse_classes(args.classes, em.num_classes, tuple(em.info.classes))
    start = draw.resolve_init(em, args.init)
    if (args.data_dir or args.download) and start != "informative":
        given = "--data-dir" if args.data_dir else "--download"
        where = "the replay buffer" if start == "buffer" else start
        raise ConfigError(f"{given} is read only by chains that start informative (the class Gaussians of the "
                          f"training images), and these start from {where}: drop it, or add --init informative")
    unread = [flag for flag, given in (("--data-dir", args.data_dir), ("--download", args.download)) if given]
    if unread and em.config.dataset == "digits":
        # said, as eval says it: a mistyped or wrong folder was taken without a word (digits is read from no files)
        given = f"--data-dir {args.data_dir}" if args.data_dir else "--download"
        warnings.warn(f"{given}{' and --download' if len(unread) == 2 else ''} "
                      f"{'is' if len(unread) == 1 else 'are'} not read: {em.path} was trained on digits, "
                      "scikit-learn's built-in set, which reads no files", FastJEMWarning, stacklevel=1)
    # checked before minutes of sampling, not after: the name, and its folder (a file standing where it goes)
    out = draw.check_output(args.out or draw.default_output(em, classes), args.force)
    make_folder(out.parent)
    drawn = draw.draw(em, args.n, classes, args.n_steps, args.init, args.step_size, args.noise,
                      args.batch_size, args.device, args.seed, progress=not args.no_progress,
                      data_dir=args.data_dir, download=args.download)
    path = draw.save(drawn, out, overwrite=args.force)
    bad = int((~torch.isfinite(drawn.x.flatten(1)).all(1)).sum())
    if bad:  # saved as drawn, but not without a word
        s = drawn.settings
        warnings.warn(f"{bad} of the {len(drawn.x)} samples in {path} are not finite: the chains diverged (step size "
                      f"{s['step_size']:g}, noise {s['noise']:g}); give a smaller --step-size or --noise, or fewer "
                      "--n-steps", FastJEMWarning, stacklevel=1)
    try:
        grid = draw.save_grid(drawn, path.with_suffix(".png"))
    except OSError as err:  # the samples are saved: a picture of them that cannot be written costs only itself
        grid = None
        warnings.warn(f"{path.with_suffix('.png')} not written ({err.strerror or err}); the samples are in {path}",
                      FastJEMWarning, stacklevel=1)
    s = drawn.settings
    kind = "unconditional" if classes is None else f"conditional on {len(classes)} class(es)"
    start = {"buffer": "the replay buffer", "noise": "uniform noise", "informative": "the class Gaussians"}
    print(f"{len(drawn.x)} samples, {kind}: {s['n_steps']} SGLD steps from {start.get(s['init'], s['init'])}, "
          f"step size {s['step_size']:g}, noise {s['noise']:g} ({s['model']}, iteration {s['iteration']})")
    if classes is not None:
        # which class each --class given is, by index (the saved targets) and name
        names = tuple(em.info.classes)
        more = f", ... ({len(classes)} in all)" if len(classes) > 20 else ""
        print(f"  classes         {', '.join(draw.class_label(c, names) for c in classes[:20])}{more}")
    print(f"  mean log p~(x)  {drawn.logpx.mean().item():.3f}")
    if drawn.target is not None:
        print(f"  classified as their target class: {(drawn.pred == drawn.target).float().mean().item():.3f}")
    else:
        # how many samples the network puts in each class, by name where the data has names
        hist = torch.bincount(drawn.pred, minlength=em.num_classes).tolist()
        names = list(em.info.classes) if len(em.info.classes) == em.num_classes else list(range(em.num_classes))
        print(f"  samples per predicted class  {', '.join(f'{name}: {n}' for name, n in zip(names, hist))}")
    print(f"  samples         {path}")
    print(f"  grid            {grid if grid else 'not written'}")
    return 0

"""The command line: ``fastjem train`` (options generated from TrainConfig's fields), ``fastjem eval``,
``fastjem sample``, ``fastjem plot``, ``fastjem bench``, ``fastjem data``, ``fastjem env``."""

from __future__ import annotations

import argparse
import contextlib
import errno
import itertools
import json
import math
import os
import shlex
import sys
import time
import warnings
from dataclasses import MISSING, fields
from datetime import datetime
from pathlib import Path

from fastjem.config import (
    ARCHS,
    COMPILE_MODES,
    KERNELS,
    NORMS,
    PRECISIONS,
    PRESETS,
    TrainConfig,
    get_preset,
    options_from_file,
    unread_options,
)
from fastjem.errors import ConfigError, FastJEMError, FastJEMWarning

GROUP_TITLES = {
    "data": "data", "model": "model", "objective": "JEM objective", "sampler": "SGLD sampler and replay buffer",
    "optim": "optimisation", "engine": "engine (how it is computed, never what)",
    "guard": "divergence guard", "run": "run and output",
}


def _preset_table() -> str:
    lines = ["presets (an option given on the command line overrides the preset):"]
    base = TrainConfig()
    for name, cfg in PRESETS.items():
        diff = {f.name: getattr(cfg, f.name) for f in fields(cfg)
                if getattr(cfg, f.name) != getattr(base, f.name) and f.name != "preset"}
        lines.append(f"  {name:7s} " + ", ".join(f"{k}={v}" for k, v in diff.items()))
    lines.append("each option's (default: ...) above is its own default, before a preset applies.")
    return "\n".join(lines)


# what the options of fastjem train mean to a sweep, where they differ; None: refused there (a sweep continues itself,
# takes its seeds from --seeds), so left out of its help
SWEEP_HELP = {
    "resume": None, "print_config": None, "seed": None,
    "out_dir": "the sweep's folder, one run folder in it per combination and seed; default "
               "runs/sweep-<preset>-<dataset>-<grid options> (the same command finds it again)",
    "max_minutes": "stop cleanly after this many minutes of the whole sweep in this invocation (the running run's "
                   "checkpoint written; the same command continues it); 0 = no limit (default: 0.0)",
}


def add_train_arguments(p: argparse.ArgumentParser, sweep: bool = False) -> None:
    """fastjem train's options on ``p``; ``sweep``: as fastjem sweep takes them (SWEEP_HELP)."""
    def said(name: str, text: str) -> str:
        if not sweep or name not in SWEEP_HELP:
            return text
        return argparse.SUPPRESS if SWEEP_HELP[name] is None else SWEEP_HELP[name].replace("%", "%%")

    p.add_argument("--preset", default=None, choices=sorted(PRESETS),
                   help="starting configuration (default: quick)")
    p.add_argument("--resume", metavar="CHECKPOINT", default=None, action=PathArgument,
                   help=said("resume", "continue the run saved in CHECKPOINT (its config is reused; run length and "
                                       "logging options may change)"))
    p.add_argument("--config", metavar="FILE", default=None, action=PathArgument,
                   help="start from the options in FILE, on top of --preset: a JSON object of options (a run's "
                        "config.json, or any subset; --print-config writes one), a run folder or a checkpoint; "
                        "options given on the command line override it, and --out-dir never comes from it")
    p.add_argument("--print-config", action="store_true",
                   help=said("print_config", "print the configuration these options resolve to, as JSON, and exit "
                                             "(a --config file)"))
    p.add_argument("--classifier-only", action="store_true",
                   help="train the same network as a plain classifier (px and pxy weights 0): the baseline")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (metrics still go to the log)")
    p.add_argument("--no-compile", dest="compile", action="store_const", const="off", default=argparse.SUPPRESS,
                   help="same as --compile off")
    groups = {}
    for f in fields(TrainConfig):
        if f.name == "preset":
            continue
        meta = f.metadata
        g = groups.setdefault(meta["group"], p.add_argument_group(GROUP_TITLES[meta["group"]]))
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not MISSING else None
        kw = dict(dest=f.name, default=argparse.SUPPRESS, help=said(f.name, config_help(f.name)))
        if isinstance(default, bool):
            g.add_argument(flag, action=argparse.BooleanOptionalAction, **kw)
        elif isinstance(default, tuple) and all(isinstance(v, str) for v in default):
            g.add_argument(flag, nargs="+", type=str, metavar="NAME", **kw)
        elif isinstance(default, tuple):
            g.add_argument(flag, nargs="*", type=float, metavar="EPOCH", **kw)
        elif f.name in PATH_OPTIONS:
            g.add_argument(flag, action=PathArgument, **kw)
        else:
            g.add_argument(flag, type=int64 if type(default) is int else type(default), choices=meta.get("choices"),
                           **kw)


def config_help(name: str) -> str:
    """A TrainConfig field's help and default, as argparse shows it: what ``fastjem train`` and ``fastjem bench`` say
    of the option they share."""
    f = next(f for f in fields(TrainConfig) if f.name == name)
    default = f.default if f.default is not MISSING else None
    text = f.metadata["help"]
    if isinstance(default, tuple):  # as the option takes it: --decay-epochs 50 100, not "(50, 100)"
        text += f" (default: {' '.join(map(str, default))})"
    elif default == "":  # not set: the help says what that means ("default runs/<preset>-...") or it is none
        text += "" if "default" in text else " (default: none)"
    else:
        text += f" (default: {default})"
    return text.replace("%", "%%")  # argparse formats help with %


def int64(text: str) -> int:
    """An integer option within what torch takes (signed 64 bits): one beyond ended in a C++ traceback."""
    value = int(text)
    if value >= 2**63:
        raise argparse.ArgumentTypeError(f"{text} is too large (at most {2**63 - 1})")
    if value < -(2**63):
        raise argparse.ArgumentTypeError(f"{text} is too small (at least {-(2**63)})")
    return value


int64.__name__ = "int"  # argparse names the type in "invalid int value: ..."


class PathArgument(argparse.Action):
    """A file or folder argument, stored as given, that refuses '' (an unset shell variable: ``--out-dir "$DIR"``):
    it was taken as the current folder, or as the option not given, without a word."""

    def __call__(self, parser, namespace, values, option_string=None):
        if "" in (values if isinstance(values, list) else [values]):
            raise argparse.ArgumentError(self, self.refusal(option_string))
        setattr(namespace, self.dest, values)

    def refusal(self, option_string: str | None) -> str:
        """What the error says of ''."""
        if option_string is None:  # a positional: it has no default to fall back on
            return "an empty path ('', an unset shell variable?) names no file or folder: give its path ('.' for the " \
                   "current folder)"
        return ("an empty path ('', an unset shell variable?) names no file or folder: give a path, or drop "
                f"{option_string} for its default")


class NameArgument(PathArgument):
    """A free-text argument naming something other than a path (an OOD set, a feature model), that refuses '' as
    PathArgument does: ``--ood ""`` scored the current folder's images as an OOD set without a word. ``names``: what
    '' fails to name; ``expected``: what to give instead."""

    def __init__(self, option_strings, dest, names: str = "nothing", expected: str = "a value", **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.names, self.expected = names, expected

    def refusal(self, option_string: str | None) -> str:
        return f"an empty name ('', an unset shell variable?) names {self.names}: give {self.expected}"


# TrainConfig's options that name a file or folder (their "" is the default, never a value to give)
PATH_OPTIONS = ("data_dir", "init_weights", "out_dir")


class _Version(argparse.Action):
    """--version on one line (argparse's own action wraps it at the terminal's width)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(_version_line())
        parser.exit()


def _version_line() -> str:
    """fastjem's version and what it runs on (what a bug report needs)."""
    import torch

    import fastjem

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = "not installed"
    cuda = torch.version.cuda or "none"
    return (f"fastjem {fastjem.__version__} (torch {torch.__version__}, triton {triton_version}, CUDA build {cuda}, "
            f"CUDA available: {torch.cuda.is_available()})")


# the eval tasks and what each does (`fastjem eval --help`)
TASK_HELP = {
    "accuracy": "test accuracy and NLL, optionally after --n-steps SGLD refinement steps seeded at the input",
    "calibration": "expected calibration error and a reliability diagram (--compare draws a second model)",
    "ood": "AUROC of log p(x), max p(y|x) and -||d log p(x)/dx|| against OOD sets, and score histograms",
    "samples": "sample grids: replay buffer, fresh chains, class-conditional, buffer sorted by class",
    "robustness": "PGD (L-inf, L2) through SGLD refinement: accuracy against epsilon",
    "fid": "FID (and Inception score) with local Inception weights or any feature model",
    "all": "every task the available data allows, then a summary table",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The fastjem command line. ``command``: give only that command its options (what main does with the command
    it is given: the others need only their one-line help, and eval's and sample's options import torch, ~2 s);
    None gives every command its options."""
    parser = argparse.ArgumentParser(prog="fastjem", description="Train and use Joint Energy-based Models, fast.")
    parser.add_argument("--version", action=_Version, help="print fastjem's, torch's and triton's versions and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train a JEM", epilog=_preset_table(),
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           description="Train a JEM (Grathwohl et al. 2020). Without options: the quick preset "
                                       "on scikit-learn's digits, about a minute on 2 CPU cores.")
    add_train_arguments(train)
    tasks = "\n".join(f"  {k:12s} {v}" for k, v in TASK_HELP.items())
    evaluate = sub.add_parser(
        "eval", help="evaluate a checkpoint: accuracy, calibration, ood, samples, robustness, fid, all",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Check the paper's claims on a checkpoint. Every task writes <task>.json and its PNGs to "
                    "--out-dir (default: eval/ beside a run's checkpoint.pt, eval-<name>/ beside any other "
                    "checkpoint file, e.g. eval-best/ for best.pt).",
        epilog=f"tasks:\n{tasks}\n\nexamples:\n  fastjem eval runs/jem/checkpoint.pt calibration --compare "
               "runs/baseline/checkpoint.pt\n  fastjem eval runs/jem ood --ood uniform constant interp svhn "
               "--data-dir ~/data\n  fastjem eval runs/jem all")
    sample = sub.add_parser(
        "sample", help="draw samples from a checkpoint and save them as arrays (.npz / .pt) and a grid",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Draw samples from a trained JEM with SGLD: unconditional (E(x) = -LSE f(x)) or, with --class, "
                    "class-conditional (E(x, y) = -f(x)[y]). Writes x (fp32), images (uint8), the predicted class, "
                    "log p~(x) and, when conditional, the target class, plus a PNG grid beside the file.",
        epilog="examples:\n  fastjem sample runs/jem -n 1000\n  fastjem sample runs/jem/checkpoint.pt --class all "
               "-n 16 --out cond.pt\n  fastjem sample runs/jem --class 3 7 --init noise --n-steps 500")
    if command in (None, "eval", "sample"):
        from fastjem.eval.cli import add_eval_arguments, add_sample_arguments

        add_eval_arguments(evaluate)
        add_sample_arguments(sample)
    add_plot_parser(sub)
    add_bench_parser(sub)
    add_data_parser(sub)
    add_runs_parser(sub)
    add_export_parser(sub)
    add_convert_parser(sub)
    add_sweep_parser(sub)
    add_env_parser(sub)
    return parser


def add_env_parser(sub) -> None:
    p = sub.add_parser("env", help="this machine (CPU, bf16 instructions, GPUs, Triton) and the engine training "
                                   "would use on it, with why",
                       description="What fastjem finds on this machine: the CPU and its bf16 instructions, the GPUs, "
                                   "Triton; then, on each device, the engine each preset resolves (`fastjem train`: "
                                   "the quick preset; `--preset paper`), fitted to its network as a run fits it "
                                   "(precision, compile, CUDA graphs, kernels, SGLD parts) with the reason for each "
                                   "choice. Paste it into a bug report.")
    p.add_argument("--json", action="store_true", help="print it as JSON")


# classes, channels and image size of the presets' datasets: the network env fits the engine to, without the data
PRESET_SHAPES = {"digits": (10, 1, 8), "cifar10": (10, 3, 32)}


def preset_engine(name: str, device) -> dict:
    """The engine a run of preset ``name`` resolves on ``device``, fitted to the preset's network (SGLD parts on
    CUDA, the compiled SGLD step on a CPU) as the run fits it, with every note."""
    import torch

    from fastjem.engine import fit_cpu_sgld_compile, fit_sgld_parts, resolve_engine
    from fastjem.models import build_model, has_batch_norm, has_dropout

    cfg = get_preset(name).replace(device=device.type)
    classes, channels, size = PRESET_SHAPES[cfg.dataset]
    # built on the meta device: no weights allocated (WRN-28-10 has 36 M), the convolutions' shapes all the same
    with torch.device("meta"):
        model = build_model(cfg.arch, classes, channels, cfg.depth, cfg.width, cfg.norm, cfg.dropout)
    engine = resolve_engine(cfg, device, has_batch_norm(model), has_dropout=has_dropout(model))
    engine = fit_sgld_parts(engine, (channels, size, size), cfg, model)
    engine = fit_cpu_sgld_compile(engine, (channels, size, size), cfg, model)
    return {"engine": engine.describe(), "notes": list(engine.notes)}


def machine_report() -> dict:
    """``fastjem env``: the machine and, on each of its devices, the engine of each preset (``quick`` is what a bare
    ``fastjem train`` runs)."""
    import torch

    from fastjem.engine import cpu_bf16_flags, cpu_model
    from fastjem.kernels._dispatch import interpreter_on, triton

    cuda = torch.cuda.is_available()
    gpus = []
    for i in range(torch.cuda.device_count() if cuda else 0):
        props = torch.cuda.get_device_properties(i)
        gpus.append({"index": i, "name": props.name, "capability": f"{props.major}.{props.minor}",
                     "memory_gib": round(props.total_memory / 2**30, 1)})
    engines = {device.type: {name: preset_engine(name, device) for name in PRESETS}
               for device in [torch.device("cpu")] + ([torch.device("cuda", 0)] if cuda else [])}
    return {
        "version": _version_line(),
        "cpu": {"model": cpu_model(), "logical_cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                "isa": torch.backends.cpu.get_cpu_capability(), "onednn": torch.backends.mkldnn.is_available(),
                "bf16_flags": cpu_bf16_flags()},
        "gpus": gpus,
        "triton": {"installed": triton is not None, "interpreter": interpreter_on()},
        "engines": engines,
    }


def run_env(args: argparse.Namespace) -> int:
    r = machine_report()
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    cpu = r["cpu"]
    flags = cpu["bf16_flags"]
    print(r["version"])
    print(f"CPU     {cpu['model']}, {cpu['logical_cpus']} logical CPUs, torch uses {cpu['torch_threads']} threads, "
          f"vector ISA {cpu['isa']}, oneDNN {'yes' if cpu['onednn'] else 'no'}")
    print(f"        bf16 instructions: {', '.join(flags) if flags else 'none'}"
          + (" (no AMX)" if flags and "amx_bf16" not in flags else ""))
    for g in r["gpus"]:
        print(f"GPU {g['index']}   {g['name']}, compute capability {g['capability']}, {g['memory_gib']} GiB")
    if not r["gpus"]:
        print("GPU     none (torch sees no CUDA device)")
    t = r["triton"]
    print(f"Triton  {'installed' if t['installed'] else 'not installed'}; kernels run on CUDA"
          + (", and here on CPU tensors under TRITON_INTERPRET=1" if t["interpreter"] else ""))
    for device, presets in r["engines"].items():
        said = set()
        for name, e in presets.items():
            run = "fastjem train" + ("" if name == "quick" else f" --preset {name}")
            print(f"\n{run} on {device}: {e['engine']}")
            # a note the preset before gave holds for this one too: each is said once
            for note in e["notes"]:
                if note not in said:
                    print(f"  - {note}")
            said.update(e["notes"])
    return 0


def add_export_parser(sub) -> None:
    p = sub.add_parser("export", help="save a checkpoint's classifier as a torch.export program (.pt2)",
                       description="Write the trained network as a torch.export program: images [B, C, H, W] in "
                                   "[-1, 1] -> logits [B, K], any batch size, loadable with torch alone "
                                   "(torch.export.load(path).module()). Classes, input shape and range travel in "
                                   "the file (fastjem.json). The program is checked against the network before "
                                   "the command returns.")
    p.add_argument("checkpoint", action=PathArgument,
                   help="checkpoint file (checkpoint.pt, best.pt, ...), or a run folder")
    p.add_argument("--out", default=None, action=PathArgument,
                   help="output .pt2 (default: <checkpoint folder>/model.pt2 for checkpoint.pt, model-<name>.pt2 "
                        "for any other file: model-best.pt2 for best.pt)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.add_argument("--device", default="cpu", choices=("auto", "cpu", "cuda"),
                   help="device the program is traced on and runs on (default: cpu)")


def run_export(args: argparse.Namespace) -> int:
    from fastjem.export import export_classifier

    r = export_classifier(args.checkpoint, args.out, args.force, args.device)
    m = r["meta"]
    print(f"exported {m['model']} ({m['dataset']}, iteration {m['iteration']}) to {r['path']}")
    print(f"  input   images [B, {', '.join(map(str, m['input']['shape'][1:]))}] in [-1, 1] "
          f"({m['input']['pixels']})")
    print(f"  output  logits [B, {m['num_classes']}]; classes {', '.join(m['classes'][:10])}"
          + (" ..." if len(m["classes"]) > 10 else ""))
    print(f"  checked against the network: largest relative difference {r['max_relative_difference']:.1e}")
    print(f"  use     net = torch.export.load({str(r['path'])!r}).module()")
    return 0


def add_convert_parser(sub) -> None:
    p = sub.add_parser("convert", help="checkpoints of the authors' JEM code to fastjem's, and back",
                       description="A checkpoint of the authors' JEM code (github.com/wgrathwohl/JEM: "
                                   "{'model_state_dict', 'replay_buffer'}, e.g. their released CIFAR-10 model) becomes "
                                   "a fastjem checkpoint, which evaluates, samples, exports and starts runs "
                                   "(--init-weights), but cannot be resumed (it holds no optimiser state). A fastjem "
                                   "checkpoint or run folder of a 32 x 32 RGB Wide-ResNet becomes a file their scripts "
                                   "load with --load_path. The direction follows from the file given.")
    p.add_argument("checkpoint", action=PathArgument,
                   help="the authors' .pt file, or a fastjem checkpoint / run folder")
    p.add_argument("--out", default=None, action=PathArgument,
                   help="output .pt (default: beside the input, <name>-fastjem.pt or <name>-jem.pt)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    g = p.add_argument_group("authors' checkpoint -> fastjem")
    g.add_argument("--dataset", default=None, choices=("cifar10", "cifar100", "svhn"),
                   help="what the network was trained on (default: cifar10, or cifar100 for 100 classes)")
    g.add_argument("--data-dir", default="", action=PathArgument,
                   help="where that dataset lives, recorded for fastjem eval (default: none recorded: eval reads "
                        "~/.cache/fastjem/data unless given its own --data-dir)")
    g.add_argument("--norm", default=None, choices=("none", "batch", "instance", "layer"),
                   help="the authors' --norm, needed only for instance or layer norm (their state dicts look alike)")
    g.add_argument("--classifier-only", action="store_true",
                   help="the network was trained without the generative term (its replay buffer is left out)")


def run_convert(args: argparse.Namespace) -> int:
    from fastjem.convert import export_jem, import_jem, is_jem_file

    src = Path(args.checkpoint)
    if not is_jem_file(src):
        given = [f"--{k.replace('_', '-')}" for k in ("dataset", "data_dir", "norm", "classifier_only")
                 if getattr(args, k)]
        if given:
            raise ConfigError(f"{' '.join(given)} describe(s) an authors' checkpoint being imported; {src} is not one")
        r = export_jem(src, args.out, args.force)
        buffer = f"replay buffer {' x '.join(map(str, r['buffer']))}" if r["buffer"] else "no replay buffer"
        print(f"wrote {r['path']}: {r['model']} (norm {r['norm']}, iteration {r['iteration']}), {buffer}, in the "
              "authors' format")
        depth, width = r["model"].split("-")[1:3]
        net = (f"--load_path {shlex.quote(str(r['path']))} --depth {depth} --width {width}"
               + (f" --norm {r['norm']}" if r["norm"] != "none" else ""))
        if r["num_classes"] == 10:
            print(f"  use     python eval_wrn_ebm.py {net}  (in github.com/wgrathwohl/JEM)")
        else:  # their eval_wrn_ebm.py builds a 10-class head: its strict load refuses any other
            print(f"  use     python train_wrn_ebm.py {net} --n_classes {r['num_classes']}  (in "
                  "github.com/wgrathwohl/JEM; their eval_wrn_ebm.py takes 10 classes only)")
        return 0
    r = import_jem(src, args.out, dataset=args.dataset, norm=args.norm, classifier_only=args.classifier_only,
                   data_dir=args.data_dir, overwrite=args.force)
    buffer = f"replay buffer {' x '.join(map(str, r['buffer']))}" if r["buffer"] else "no replay buffer"
    print(f"wrote {r['path']}: {r['model']} (norm {r['norm']}, {r['params'] / 1e6:.1f} M parameters, "
          f"{r['num_classes']} classes, {r['dataset']}), {buffer}")
    data = f" --data-dir {shlex.quote(args.data_dir)}" if args.data_dir else " --data-dir DIR"
    path = shlex.quote(str(r["path"]))  # commands to copy: a path with a space stays one argument
    print(f"  evaluate  fastjem eval {path} all{'' if args.data_dir else data}")
    print(f"  sample    fastjem sample {path} -n 64")
    # the paper preset's network unless the weights say otherwise (--init-weights needs the same architecture)
    paper = PRESETS["paper"]
    net = "".join(f" --{k} {r[k]}" for k in ("depth", "width", "norm") if r[k] != getattr(paper, k))
    print(f"  train     fastjem train --preset paper --dataset {r['dataset']}{data} --init-weights {path}{net}")
    return 0


def add_runs_parser(sub) -> None:
    from fastjem.runs import SORT_KEYS

    p = sub.add_parser("runs", help="a table of runs: status, speed, accuracies, best checkpoint",
                       description="One line per run folder (seeds, an ablation, a sweep): dataset, model, "
                                   "iteration and status, median it/s, last train / validation accuracy, test "
                                   "accuracy, best.pt's record and divergence recoveries. Read from what runs write "
                                   "as they go, so unfinished runs show where they stand.")
    p.add_argument("runs", nargs="*", default=["runs"], metavar="RUN", action=PathArgument,
                   help="run folders, or folders of runs (default: runs/)")
    p.add_argument("--sort", choices=SORT_KEYS, default="run", help="order of the lines (default: run name; "
                                                                     "measures best first)")
    p.add_argument("--format", choices=("text", "md", "csv", "json"), default="text",
                   help="text (default), md (a Markdown table), csv, or json (the rows)")
    p.add_argument("--json", action="store_true", help="the same as --format json")
    p.add_argument("--combinations", action="store_true",
                   help="a sweep folder's per-combination table alone (mean ± sd over seeds, as the sweep printed it "
                        "at its end), not its runs; json: a list of one summary a sweep, shaped as its results.json")


def run_runs(args: argparse.Namespace) -> int:
    from fastjem.checkpoint import strict_json
    from fastjem.runs import find_runs, format_table, run_label, run_row, sort_rows
    from fastjem.sweep import format_summary, summarise_folder

    if args.json and args.format not in ("text", "json"):
        raise ConfigError(f"--json is --format json: it cannot be given with --format {args.format}")
    fmt = "json" if args.json else args.format
    if args.combinations:
        sweeps = [(p, summarise_folder(p)) for p in args.runs]
        missing = [p for p, summary in sweeps if summary is None]
        if missing:
            raise ConfigError(f"--combinations takes sweep folders (fastjem sweep --out-dir); not a sweep: "
                              f"{', '.join(missing)}")
        if fmt == "json":
            # a list, one summary a sweep, shaped as its results.json, as its runs stand now
            print(strict_json([summary for _, summary in sweeps], indent=2))
        else:
            print("\n\n".join(format_summary(summary, fmt) for _, summary in sweeps))
        return 0
    rows = [{**run_row(p), "run": run_label(p, args.runs)} for p in find_runs(args.runs)]
    rows = sort_rows(rows, args.sort)
    if fmt == "json":
        print(json.dumps(rows, indent=2))  # a sweep's per-combination summary is its results.json
        return 0
    print(format_table(rows, fmt))
    if fmt != "csv":  # one table per CSV: --combinations prints a sweep's
        for path, summary in ((p, summarise_folder(p)) for p in args.runs):
            if summary is not None:
                print(f"\nsweep {path}, per combination (--combinations alone):\n" + format_summary(summary, fmt))
    return 0


def add_data_parser(sub) -> None:
    from fastjem.config import DATASETS

    p = sub.add_parser("data", help="load a dataset as training would, and say what it holds",
                       description="Load (and cache) a dataset exactly as `fastjem train` would, then print its "
                                   "image shape, classes, split sizes and images per class; --grid draws a few "
                                   "training images of each class. A cheap check of a folder before a long run.")
    p.add_argument("--dataset", choices=DATASETS, default="digits",
                   help="the dataset to load, as fastjem train --dataset (default: digits)")
    p.add_argument("--data-dir", default="", action=PathArgument,
                   help="where it lives, as for fastjem train (not for digits, which is built in); default "
                        "~/.cache/fastjem/data")
    p.add_argument("--download", action="store_true", help="download torchvision datasets when missing")
    p.add_argument("--image-size", type=int64, default=0, help="resize on load, as fastjem train --image-size "
                                                               "(default: 0, as stored)")
    p.add_argument("--val-size", type=int64, default=-1, help="training images held out for validation "
                                                            "(default: -1 = the dataset's, as fastjem train "
                                                            "--val-size says)")
    p.add_argument("--grid", default=None, metavar="PNG", action=PathArgument,
                   help="write up to 8 training images per class (10 classes at most) to this PNG")
    p.add_argument("--force", action="store_true", help="replace an existing --grid file")


def run_data(args: argparse.Namespace) -> int:
    import torch

    from fastjem.data import IMAGE_SUFFIXES, load_arrays, summarize, to_float, untrained_message

    if args.image_size < 0:
        raise ConfigError("--image-size must be >= 0")
    # as fastjem train refuses them: a folder given without its --dataset was ignored, digits described instead
    unread = [flag for flag, given in (("--data-dir", args.data_dir), ("--download", args.download)) if given]
    if args.dataset == "digits" and unread:
        raise ConfigError(f"{', '.join(unread)}: --dataset digits is scikit-learn's, built in, and reads no files; "
                          "give --dataset cifar10, cifar100, svhn or imagefolder for data of your own, or drop "
                          f"{'it' if len(unread) == 1 else 'them'}")
    if args.grid and Path(args.grid).suffix.lower() not in IMAGE_SUFFIXES:
        raise ConfigError(f"--grid {args.grid}: name an image file (.png, .jpg, ...), e.g. --grid {args.grid}.png")
    if args.grid:  # no file is replaced unasked (a run's samples.png given by mistake), never a checkpoint
        from fastjem.checkpoint import output_path

        output_path(args.grid, IMAGE_SUFFIXES, "--grid", args.force, flag="--grid")
    arrays = load_arrays(args.dataset, args.data_dir, args.download, args.image_size)
    r = summarize(arrays, args.val_size)
    where = f" from {args.data_dir}" if args.data_dir else ""
    print(f"fastjem data: {r['dataset']}{where}")
    print(f"  images        {' x '.join(map(str, r['shape']))} uint8, {r['num_classes']} classes, pixel mean "
          f"{', '.join(f'{m:.1f}' for m in r['pixel_mean'])} (0-255)")
    print(f"  splits        train {r['train']}, validation {r['val']} (held out of train, fixed seed), "
          f"test {r['test']}")
    aug = r["augmentation"]
    parts = ([f"reflect-pad {aug['pad']} + random crop"] if aug["pad"] else []) + (
        ["horizontal flips"] if aug["flip"] else [])
    print(f"  augmentation  {', '.join(parts) or 'none'} (then the --data-noise Gaussian), unless --no-augment")
    width = max(len(c) for c in r["classes"]) if r["classes"] else 5
    print(f"  {'class':<{width}}  {'train+val':>9}  {'test':>6}")
    for i, (tr, te) in enumerate(zip(r["train_per_class"], r["test_per_class"])):
        if i == 20 and r["num_classes"] > 24:
            print(f"  ... {r['num_classes'] - 20} more classes")
            break
        name = r["classes"][i] if i < len(r["classes"]) else str(i)
        print(f"  {name:<{width}}  {tr:>9}  {te:>6}")
    counts = r["train_per_class"]
    if r["untrained"]:  # (every class with no image in train+val too)
        print(f"  note: {untrained_message(r['untrained'], r['val'])}")
    elif max(counts) > 2 * min(counts):
        print(f"  note: classes are imbalanced ({min(counts)} to {max(counts)} training images)")
    if args.grid:
        from fastjem.eval.plots import image_grid

        rows = [arrays.train_x[arrays.train_y == c][:8] for c in range(min(10, r["num_classes"]))]
        rows = [torch.cat([row, torch.zeros(8 - len(row), *row.shape[1:], dtype=row.dtype)]) for row in rows]
        # which class each row is: index order, which names that are numbers need not follow (folders 1..10)
        shown = [r["classes"][c] if c < len(r["classes"]) else str(c) for c in range(len(rows))]
        print(f"  grid          {image_grid(to_float(torch.cat(rows)), args.grid, nrow=8)} (a row per class, top to "
              f"bottom: {', '.join(shown)}{', ...' if r['num_classes'] > len(rows) else ''})")
    return 0


def add_bench_parser(sub) -> None:
    p = sub.add_parser("bench", help="what SGLD sampling costs on this device",
                       description="Time SGLD sampling as training runs it (the engine resolved for this device) on "
                                   "random chains: ms per SGLD call and step, chains/s, TFLOP/s. Defaults: WRN-28-10, "
                                   "batch 64 on CUDA; WRN-10-2, batch 16 on a CPU.")
    p.add_argument("--arch", choices=ARCHS, default="wrn",
                   help="network: wrn (Wide-ResNet) or convnet (the quick preset's small net) (default: wrn)")
    p.add_argument("--depth", type=int64, default=None, help="WRN depth (default: 28 on CUDA, 10 on CPU)")
    p.add_argument("--width", type=int64, default=None,
                   help="WRN widen factor (default: 10 on CUDA, 2 on CPU), or the conv net's width (default: 16, the "
                        "quick preset's)")
    p.add_argument("--norm", choices=NORMS, default="none", help="normalisation layer (default: none)")
    p.add_argument("--batch-size", type=int64, nargs="+", default=None, metavar="N",
                   help="chains per SGLD call (default: 64 CUDA, 16 CPU); several sizes time each in turn and print "
                        "a table of how the cost scales")
    p.add_argument("--sgld-steps", type=int64, default=20, help="SGLD steps per sampling call (default: 20)")
    p.add_argument("--image-size", type=int64, default=32, help="side of the chains' square images in pixels "
                                                                "(default: 32)")
    p.add_argument("--channels", type=int64, default=3, help="channels of the chains' images (default: 3)")
    p.add_argument("--num-classes", type=int64, default=10, help="classes K of the network's logits (default: 10)")
    p.add_argument("--precision", choices=PRECISIONS, nargs="+", default=["auto"],
                   help="network precision (default auto: what training picks here); several, e.g. fp32 bf16, time "
                        "each in turn and print how they compare, to see which this machine runs faster")
    # the engine's options, as ``fastjem train`` takes them
    p.add_argument("--compile", choices=COMPILE_MODES, default="auto", help=config_help("compile"))
    p.add_argument("--no-compile", dest="compile", action="store_const", const="off", help="same as --compile off")
    p.add_argument("--cuda-graph", action=argparse.BooleanOptionalAction, default=True, help=config_help("cuda_graph"))
    p.add_argument("--kernels", choices=KERNELS, default="auto", help=config_help("kernels"))
    p.add_argument("--cast-weights-once", action=argparse.BooleanOptionalAction, default=True,
                   help=config_help("cast_weights_once"))
    p.add_argument("--sgld-parts", type=int64, default=0, metavar="N", help=config_help("sgld_parts"))
    p.add_argument("--cpu-malloc", action=argparse.BooleanOptionalAction, default=True,
                   help=config_help("cpu_malloc"))
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="device to time (default: auto = cuda when available)")
    p.add_argument("--seconds", type=float, default=10.0, help="timed seconds after the warm-up (default 10)")
    p.add_argument("--seed", type=int64, default=0, help="random seed of the network's weights and the chains "
                                                         "(default: 0)")
    p.add_argument("--out", default=None, action=PathArgument,
                   help="also write the result as JSON to this file (a list for several batch sizes or precisions)")
    p.add_argument("--plot", default=None, metavar="PNG", action=PathArgument,
                   help="with several batch sizes: draw chains/s and ms per step against the batch size to this "
                        "file")
    p.add_argument("--force", action="store_true", help="replace an existing --out / --plot file")


def run_bench(args: argparse.Namespace) -> int:
    from fastjem.benchmark import (
        bench_sampler,
        plot_batch_scaling,
        print_precisions,
        print_result,
        print_scaling,
        write_result,
    )
    from fastjem.train import resolve_device

    for name in ("sgld_steps", "image_size", "channels", "num_classes"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            raise ConfigError(f"--{name.replace('_', '-')} must be > 0")
    if args.batch_size is not None and min(args.batch_size) <= 0:
        raise ConfigError("--batch-size must be > 0")
    if args.arch == "convnet" and args.depth is not None:
        raise ConfigError("--depth is the Wide-ResNet's: the conv net has no depth option (its size is --width)")
    if not 0 < args.seconds < math.inf:
        raise ConfigError(f"--seconds must be a finite number > 0, got {args.seconds}")
    if args.plot and (args.batch_size is None or len(args.batch_size) < 2):
        raise ConfigError("--plot draws how the cost scales with the batch size: give --batch-size two or more sizes")
    if args.plot and Path(args.plot).suffix.lower() not in FIGURE_SUFFIXES:
        raise ConfigError(f"--plot {args.plot}: name a figure file ({', '.join(FIGURE_SUFFIXES)})")
    from fastjem.checkpoint import output_path

    # no file is replaced unasked, and never a run's checkpoint (it became the benchmark's JSON)
    for flag, target, suffixes in (("--out", args.out, (".json",)), ("--plot", args.plot, FIGURE_SUFFIXES)):
        if target:
            output_path(target, suffixes, flag, args.force, flag=flag)
    if len(set(args.precision)) < len(args.precision):
        raise ConfigError(f"--precision lists a precision twice: {' '.join(args.precision)}")
    if args.batch_size is not None and len(set(args.batch_size)) < len(args.batch_size):
        raise ConfigError(f"--batch-size lists a size twice: {' '.join(map(str, args.batch_size))}")
    for target in (args.out, args.plot):
        # before the timing, not after it: a folder that cannot be made
        if target:
            try:
                Path(target).parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise ConfigError(f"cannot write {target}: {type(err).__name__}: {err}") from err
    device = resolve_device(args.device)
    cuda = device.type == "cuda"

    def pick(given, on_cuda, on_cpu):
        return given if given is not None else (on_cuda if cuda else on_cpu)

    # the conv net's default width is the quick preset's (the WRN's widen factor means another thing)
    width = args.width if args.width is not None else (
        get_preset("quick").width if args.arch == "convnet" else pick(None, 10, 2))
    # every run's settings checked before the first is timed
    configs = [TrainConfig(arch=args.arch, depth=pick(args.depth, 28, 10), width=width,
                           norm=args.norm, batch_size=batch_size, sgld_steps=args.sgld_steps,
                           precision=precision, compile=args.compile, cuda_graph=args.cuda_graph,
                           iteration_graph=False,  # the sampler alone: its own graph
                           cpu_malloc=args.cpu_malloc, cast_weights_once=args.cast_weights_once,
                           sgld_parts=args.sgld_parts, kernels=args.kernels, seed=args.seed,
                           device=device.type).validate()
               for precision, batch_size in itertools.product(args.precision, pick(args.batch_size, [64], [16]))]
    results = []
    for cfg in configs:
        results.append(bench_sampler(cfg, device, args.num_classes, args.channels, args.image_size, args.seconds))
        print_result(results[-1])
    if len(results) > 1:
        print_scaling(results)
    if len(args.precision) > 1:
        print_precisions(results)
    try:
        if args.out:
            print(f"written to {write_result(results[0] if len(results) == 1 else results, args.out)}")
        if args.plot:
            print(f"plot: {plot_batch_scaling(results, args.plot)}")
    except OSError as err:
        raise ConfigError(f"cannot write the results: {type(err).__name__}: {err}") from err
    return 0


def config_from_args(args: argparse.Namespace, grid: dict | None = None) -> tuple[TrainConfig, dict]:
    """(config, explicit overrides) from parsed arguments: the preset with the options the user gave (``grid``: the
    values a sweep gives each run)."""
    names = {f.name for f in fields(TrainConfig)} - {"preset"}
    overrides = {k: v for k, v in vars(args).items() if k in names}
    for key in ("decay_epochs", "remedies"):
        if key in overrides:
            overrides[key] = tuple(overrides[key])
    if args.classifier_only:
        given = [f"--{k.replace('_', '-')} {overrides[k]:g}" for k in ("px_weight", "pxy_weight") if overrides.get(k)]
        if given:
            raise ConfigError(f"--classifier-only trains without the generative terms (their weights 0), but "
                              f"{' and '.join(given)} asks for one: give one or the other")
        overrides.update(px_weight=0.0, pxy_weight=0.0)
    base = get_preset(args.preset or "quick")
    if args.resume and args.preset:
        raise ConfigError("--preset starts a new run; --resume continues a saved one with its own config: give one "
                          "of them")
    if args.config:
        if args.resume:
            raise ConfigError("--config starts a new run; --resume continues a saved one with its own config: give "
                              "one of them")
        from_file = options_from_file(args.config)
        if args.preset:
            from_file.pop("preset", None)  # the preset given as a flag names the values the run starts from
        elif from_file.get("preset") in PRESETS:
            # a file that names its preset starts from that preset's values (a partial file of "preset": "paper"
            # took the quick preset's under the paper's name)
            base = get_preset(from_file["preset"])
        elif (from_file.get("preset", "custom") != "custom"
              and not {f.name for f in fields(TrainConfig)} - {"out_dir"} <= set(from_file)):
            # a partial file of a misspelt name ("pape") took the quick preset's values under that name without a
            # word (a whole config.json, a run made in Python under a name of its own, needs none)
            raise ConfigError(f"--config {args.config}: preset {from_file['preset']!r} is no preset, and the options "
                              f"the file leaves out would come from the quick one: give one of {', '.join(PRESETS)} "
                              "(or custom: a config made in Python), or drop it from the file")
        preset = base.preset  # the preset whose values the file's options change
        base = base.replace(**from_file)
        # a file of epochs alone kept the preset's --iters, which overrides them: 800 iterations, whatever it said
        if ("epochs" in from_file and "iters" not in from_file and "iters" not in overrides
                and "iters" not in (grid or ()) and base.iters > 0):
            raise ConfigError(f"--config {args.config} sets epochs {from_file['epochs']:g} but not iters, and this "
                              f"run's length is --iters {base.iters} (the {preset} preset's), which overrides "
                              "--epochs: add \"iters\": -1 to the file (or --iters -1) to train for its epochs, or "
                              "drop epochs from it")
    cfg = base.replace(**overrides)
    # a resumed run's network is its own; a sweep whose grid has a Wide-ResNet takes --depth for those runs
    if "depth" in overrides and cfg.arch != "wrn" and not args.resume and "wrn" not in (grid or {}).get("arch", ()):
        source = ("--arch" if "arch" in overrides else f"--config {args.config}" if args.config
                  else f"the {cfg.preset} preset")
        raise ConfigError(f"--depth sets a Wide-ResNet's depth, but this run's network is {cfg.arch} (from {source}): "
                          f"add --arch wrn (or --preset paper), or drop --depth")
    if not args.resume:  # a resumed run's changes are resume_config's to judge
        # an option set to the value it has anyway changes nothing for a classifier (--classifier-only --sgld-steps
        # 20); --epochs 150 beside --iters is still an --epochs the run does not read
        changed = {k for k, v in overrides.items() if v != getattr(base, k)} | set(grid or ())
        refused, warned = unread_options(cfg, set(overrides) | set(grid or ()), varied=grid or (), changed=changed)
        if refused:
            raise ConfigError("; ".join(refused))
        for said in warned:
            warnings.warn(said, FastJEMWarning, stacklevel=2)
    return cfg, overrides


def run_train(args: argparse.Namespace) -> int:
    from fastjem.distributed import world_from_env
    from fastjem.runs import counted
    from fastjem.train import Trainer, resume_config, resume_folder

    cfg, overrides = config_from_args(args)
    if args.resume:
        cfg = resume_config(args.resume, overrides)
        out_dir = Path(cfg.out_dir) if "out_dir" in overrides else resume_folder(args.resume)
        cfg = cfg.replace(out_dir=str(out_dir))  # config.json names the folder the run continues in
    else:
        if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not cfg.out_dir:
            raise ConfigError("under torchrun every process must write to the same folder: pass --out-dir")
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        out_dir = Path(cfg.out_dir or f"runs/{cfg.preset}-{cfg.dataset}-{stamp}")
        cfg = cfg.replace(out_dir=str(out_dir))
    # torchrun's processes: a batch each cannot train is refused before the process group is joined and the data read
    cfg.validate(new_run=not args.resume, world=world_from_env())
    if args.print_config:
        options = cfg.to_dict()
        if not args.resume and "out_dir" not in overrides:
            options["out_dir"] = ""  # not chosen: a run names its folder when it starts
        print(json.dumps(options, indent=2))
        return 0
    start = time.perf_counter()
    trainer = Trainer(cfg, out_dir=out_dir, resume=args.resume, progress=not args.no_progress)
    resumed_at = trainer.iteration
    try:
        summary = trainer.fit()
    except OSError as err:
        from fastjem.checkpoint import WRITE_ERRNOS

        last = Path(trainer.out_dir) / "checkpoint.pt"
        if err.errno in WRITE_ERRNOS and last.is_file():
            print(f"fastjem: the last checkpoint written whole is {last}; once the cause below is mended, resume "
                  f"with: fastjem train --resume {shlex.quote(str(last))}", file=sys.stderr)
        raise
    # a data-parallel run's process group is left at exit (fastjem.distributed's exit handler)
    if summary.get("interrupted"):
        return stopped_status(summary.get("stopped_by"))
    if not trainer.dist.is_main:
        return 0
    elapsed = time.perf_counter() - start
    # the time is this invocation's: a resumed run says how many of the iterations it trained
    here = f" ({summary['iteration'] - resumed_at} here, resumed at iteration {resumed_at})" if args.resume else ""
    print(f"\ndone: {counted(summary['iteration'], 'iteration')}{here} in {elapsed:.1f} s on {summary['device']}")
    validation = "no validation set" if summary["val_acc"] is None else f"validation {summary['val_acc']:.4f}"
    print(f"  test accuracy   {summary['test_acc']:.4f}   ({validation}, "
          f"test NLL {summary['test_nll']:.4f})")
    print(f"  checkpoint      {summary['checkpoint']}")
    best = summary.get("best")
    if best:
        # (a resume that kept no best.pt left the earlier one: said, so that it is not read as this run's best)
        unkept = "" if best.get("kept_until") is None else (
            f" (kept until iteration {best['kept_until']}; no later validation was compared with it: "
            f"{'--no-keep-best' if not trainer.cfg.keep_best else '--eval-every 0'})")
        print(f"  best            {best['checkpoint']}: iteration {best['iter']}, validation {best['val_acc']:.4f}, "
              f"test {best['test_acc']:.4f}{unkept}")
    print(f"  metrics log     {summary['metrics']}")
    if summary["samples"]:
        print(f"  sample grid     {summary['samples']}")
    if summary.get("curves"):
        print(f"  curves          {summary['curves']}")
    if summary.get("tensorboard"):
        board = summary["tensorboard"]
        print(f"  tensorboard     {board} (tensorboard --logdir {shlex.quote(board)})")
    return 0


def add_sweep_parser(sub) -> None:
    p = sub.add_parser("sweep", help="train every combination of a grid of options over seeds, then one table",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Train every combination of --grid over --seeds, one run folder each under "
                                   "--out-dir, then summarise each combination over its seeds (mean and std of test "
                                   "and validation accuracy, speed, recoveries) in a table and results.json. The "
                                   "other options are those of fastjem train and hold for every run. The same "
                                   "command continues an interrupted sweep: finished runs are skipped, the "
                                   "interrupted one resumes from its checkpoint.",
                       epilog="example:\n  fastjem sweep --grid sgld-steps=5,20 buffer-init=uniform,informative "
                              "--seeds 1 2 3 --out-dir runs/init-ablation")
    p.add_argument("--grid", nargs="+", action="extend", required=True, metavar="OPTION=V1,V2",
                   help="options to vary and their values (a tuple option's values joined by ':'); --grid A=1,2 "
                        "--grid B=3,4 is --grid A=1,2 B=3,4")
    p.add_argument("--seeds", nargs="+", type=int64, default=[1], help="seeds of each combination (default: 1)")
    p.add_argument("--dry-run", action="store_true",
                   help="list the runs and what the sweep would do with each (start, resume, skip), with about how "
                        "long each has left to train at the speed its combination's runs logged in the folder, and "
                        "exit")
    p.add_argument("--format", choices=("text", "md", "csv"), default="text",
                   help="the closing table as text (default), md (Markdown) or csv; `fastjem runs FOLDER` prints it "
                        "again")
    add_train_arguments(p, sweep=True)


def run_sweep_command(args: argparse.Namespace) -> int:
    from fastjem.distributed import world_from_env
    from fastjem.runs import counted
    from fastjem.sweep import format_summary, parse_grid, run_sweep

    world = world_from_env()
    if world > 1:
        # each of torchrun's processes ran the whole sweep: all but one were refused the sweep folder's lock, and the
        # one left waited for them in its first run's process group
        raise ConfigError(f"fastjem sweep trains its runs one after another in one process; under torchrun "
                          f"(WORLD_SIZE={world}) each of the {world} processes would run the whole sweep: start it "
                          "without torchrun, or train each combination data-parallel with torchrun ... -m fastjem "
                          "train --out-dir FOLDER")
    if args.resume or args.print_config:
        raise ConfigError("fastjem sweep continues itself (run the same command again) and has no --print-config; "
                          "--resume and --print-config are for fastjem train")
    grid = parse_grid(args.grid)
    varied = [name for name in ("px_weight", "pxy_weight") if name in grid]
    if args.classifier_only and varied:
        # (its weights 0 are overrides: the conflict below named --px-weight, which was not given)
        raise ConfigError(f"--classifier-only sets --px-weight and --pxy-weight to 0 for every run, but --grid varies "
                          f"{' and '.join('--' + n.replace('_', '-') for n in varied)}: give one or the other")
    base, overrides = config_from_args(args, grid)
    if "seed" in overrides:
        raise ConfigError("a sweep takes its seeds from --seeds, not --seed")
    both = [name for name in grid if name in overrides]
    if both:
        flags = ", ".join(f"--{n.replace('_', '-')}" for n in both)
        raise ConfigError(f"{flags} given both as an option and in --grid: the grid sets it for each run, so give it "
                          "in one place")
    # named by what it varies, not by the clock: the same command run again (a requeued job) continues it
    folder = Path(base.out_dir or f"runs/sweep-{base.preset}-{base.dataset}-{'+'.join(grid)}")
    if args.dry_run:
        from fastjem.sweep import describe_plan

        print(describe_plan(base, grid, args.seeds, folder))
        return 0
    result = run_sweep(base, grid, args.seeds, folder, progress=not args.no_progress)
    print()
    print(format_summary(result, args.format))
    print(f"\nper run and again: fastjem runs {shlex.quote(str(folder))}; summary: {folder / 'results.json'}")
    if result["interrupted"]:
        return stopped_status(result["stopped_by"])
    if result["failed"]:
        refused = len(result.get("refused", ()))
        print(f"{counted(len(result['failed']), 'run')} failed (above): mend the cause and run the same command "
              "again" + (f"; of these, {refused} failed for an option: where the sweep gives it, give the sweep other "
                         "options with another --out-dir (this folder keeps its options)" if refused else ""),
              file=sys.stderr)
        return 1
    return 0


def stopped_status(stopped_by: str | None) -> int:
    """Exit status of a run or sweep stopped before its end, its checkpoint written: 0 for its time limit
    (--max-minutes: the length asked for), else 128 + the signal's number (130 for SIGINT, 143 for SIGTERM), as a
    shell reports a process a signal ended, so that `fastjem train ... && fastjem eval ...` does not go on to
    evaluate a half-trained network."""
    import signal

    if stopped_by == "time limit":
        return 0
    signum = getattr(signal, stopped_by, signal.SIGINT) if stopped_by else signal.SIGINT
    return 128 + int(signum)


def add_plot_parser(sub) -> None:
    p = sub.add_parser("plot", help="draw a run's training curves (also while it trains), or overlay several",
                       description="Loss, accuracy (train, validation, test), data and sample energies, it/s and "
                                   "learning rate against iteration, from RUN/metrics.jsonl, as one PNG. Several "
                                   "runs are overlaid, one colour each (an ablation, a JEM and its baseline).")
    p.add_argument("runs", nargs="+", metavar="RUN", action=PathArgument,
                   help="run folders (the --out-dir of fastjem train), their metrics.jsonl, or folders of runs (a "
                        "fastjem sweep: every run in it)")
    p.add_argument("--out", default=None, action=PathArgument,
                   help="PNG to write (default: RUN/curves.png for one run or one folder of runs; required for "
                        "several)")
    p.add_argument("--mean", action="store_true",
                   help="a sweep folder: one line per combination, the mean over its seeds with a band of ± one sample "
                        "standard deviation (default --out: SWEEP/curves-mean.png)")
    p.add_argument("--force", action="store_true",
                   help="let --out replace an existing file that is not a figure fastjem drew (one it drew, such as "
                        "the curves of an earlier plot, is replaced without it)")


# what matplotlib's savefig writes
FIGURE_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")


def run_plot(args: argparse.Namespace) -> int:
    from fastjem.curves import plot_run, plot_runs
    from fastjem.runs import find_runs

    runs, out = [], args.out
    if out is not None:
        out_path = Path(out)
        if out_path.is_dir():
            out = str(out_path / "curves.png")  # a folder: the figure goes in it
        elif out_path.suffix.lower() not in FIGURE_SUFFIXES:
            raise ConfigError(f"--out {out}: name a figure file ({', '.join(FIGURE_SUFFIXES)}), e.g. --out "
                              f"{out_path.with_suffix('.png')}")
        if Path(out).exists() and not args.force:
            from fastjem.eval.plots import drawn_by_fastjem

            # plot is drawn again and again over its own figure (while a run trains); anything else at --out (a
            # run's samples.png, a figure of another program) is not its to replace unasked
            if not drawn_by_fastjem(out):
                raise ConfigError(f"{out} exists and is not a figure fastjem drew: pass --force to replace it, or give "
                                  "--out another file")
    if args.mean:
        from fastjem.curves import plot_sweep_mean

        if len(args.runs) != 1:
            raise ConfigError("--mean takes one sweep folder")
        try:
            path = plot_sweep_mean(args.runs[0], out)
        except OSError as err:
            raise ConfigError(f"cannot write the figure {err.filename or out or ''}: {err.strerror or err}") from err
        print(f"curves written to {path}")
        return 0
    for r in args.runs:
        p = Path(r)
        if p.is_dir() and not (p / "metrics.jsonl").exists():
            runs += [str(q) for q in find_runs([r])]  # a folder of runs (a sweep): all of them
            if out is None and len(args.runs) == 1:
                out = str(p / "curves.png")
        else:
            runs.append(r)
    try:
        if len(runs) == 1:
            path = plot_run(runs[0], out)
        elif out is None:
            raise ConfigError("several runs go into one figure: pass --out FILE.png")
        else:
            path = plot_runs(runs, out)
    except OSError as err:
        raise ConfigError(f"cannot write the figure {err.filename or out or ''}: {err.strerror or err}") from err
    print(f"curves written to {path}")
    return 0


def _one_line_warnings(shown):
    """A warnings.showwarning that prints fastjem's own warnings as one line, like its errors (not the library's
    file and line), and hands the others to ``shown``."""
    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, FastJEMWarning):
            print(f"fastjem: warning: {message}", file=file or sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)
    return show


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # the command is the first word that is not an option (the top level has only --help and --version)
    parser = build_parser(next((a for a in argv if not a.startswith("-")), ""))
    args = parser.parse_args(argv)
    shown = warnings.showwarning
    warnings.showwarning = _one_line_warnings(shown)
    try:
        return _run_command(parser, args)
    finally:
        warnings.showwarning = shown


def _run_command(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        if args.command == "train":
            return run_train(args)
        if args.command == "eval":
            from fastjem.eval.cli import run_eval

            return run_eval(args)
        if args.command == "sample":
            from fastjem.eval.cli import run_sample

            return run_sample(args)
        if args.command == "plot":
            return run_plot(args)
        if args.command == "bench":
            return run_bench(args)
        if args.command == "data":
            return run_data(args)
        if args.command == "runs":
            return run_runs(args)
        if args.command == "export":
            return run_export(args)
        if args.command == "convert":
            return run_convert(args)
        if args.command == "sweep":
            return run_sweep_command(args)
        if args.command == "env":
            return run_env(args)
    except FastJEMError as err:
        print(f"fastjem: error: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # the reader of the output went away (`fastjem runs | head`): nothing more to say to it
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter's final flush goes here
        return 0
    except OSError as err:
        from fastjem.checkpoint import WRITE_ERRNOS

        where = err.filename or "a file"
        if err.errno in (errno.EEXIST, errno.ENOTDIR) and err.filename and any(
                p.exists() and not p.is_dir() for p in (Path(err.filename), *Path(err.filename).parents)):
            # mkdir of an output folder that is a file (or a device, /dev/null), or below one
            print(f"fastjem: error: {where}: a file stands where a folder is needed: choose another --out-dir / --out",
                  file=sys.stderr)
            return 1
        if err.errno not in WRITE_ERRNOS:
            raise
        if err.errno in (errno.EACCES, errno.EPERM):
            # a file read (an input) or written (an output): the errno does not say which
            print(f"fastjem: error: {err.strerror}: {where}: check its permissions (an input must be readable, an "
                  "output's folder writable; or choose another --out-dir / --out)", file=sys.stderr)
            return 1
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            advice = "free some space, or choose a folder on another disk (--out-dir / --out)"
        else:
            advice = "choose a folder you can write to (--out-dir / --out)"
        print(f"fastjem: error: {err.strerror}: {where}: {advice}. Checkpoints and reports are replaced only when "
              "written whole", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fastjem: interrupted", file=sys.stderr)
        return 130
    except (RuntimeError, MemoryError) as err:
        # sizes the machine cannot hold (a --buffer-size of a billion images, a GPU too small for the batch)
        what = str(err).splitlines()[0] if str(err) else type(err).__name__
        # (a size past 64 bits of bytes, --buffer-size 2**62: torch's "Storage size calculation overflowed")
        if not isinstance(err, MemoryError) and not any(s in what for s in ("can't allocate memory", "out of memory",
                                                                            "Storage size calculation overflowed")):
            raise
        print(f"fastjem: error: out of memory: {what}: make the run smaller (--batch-size, --buffer-size, --width, "
              "--image-size), or use a machine with more memory", file=sys.stderr)
        return 1
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())

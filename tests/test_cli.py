import dataclasses
import errno
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import fields
from pathlib import Path

import pytest
from helpers import fail_grid_writes

from fastjem.cli import main
from fastjem.config import TrainConfig

TINY = ["--width", "8", "--batch-size", "16", "--sgld-steps", "2", "--buffer-size", "100", "--log-every", "2",
        "--device", "cpu", "--no-compile", "--no-progress"]


def run_cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "fastjem", *args], capture_output=True, text=True, timeout=timeout)


def test_help_answers_without_importing_torch():
    """`fastjem --help` took ~3.4 s here, 2 s of it importing torch (through `import fastjem`, the errors module and
    the config's network checks). The top level's help and the help of every command whose options need no torch
    module answer without it; eval's and sample's options come from torch modules (OOD sets, attack norms), so their
    parsers are filled in only when named. The library's names still import on use."""
    code = ("import sys\nfrom fastjem.cli import main\n"
            "for argv in ([], ['--help'], ['train', '--help'], ['sweep', '--help'], ['runs', '--help'], "
            "['bench', '--help'], ['plot', '--help'], ['data', '--help'], ['trian']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print('torch' in sys.modules)\n"
            "import fastjem\nprint(fastjem.SGLD.__module__, 'SGLD' in dir(fastjem), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-3:] == ["False", "fastjem.sampler True True", ""], out.stdout[-500:]
    assert "invalid choice: 'trian'" in out.stderr  # a misspelt command is still refused, with the list
    eval_help = run_cli("eval", "--help")
    assert eval_help.returncode == 0 and "--n-fid" in eval_help.stdout and "OOD sets:" in eval_help.stdout
    sample_help = run_cli("sample", "--help")
    assert sample_help.returncode == 0 and "--class C" in sample_help.stdout
    with pytest.raises(AttributeError, match="no attribute 'sgld'"):
        import fastjem

        fastjem.sgld  # noqa: B018


def test_train_help_explains_every_option():
    out = run_cli("train", "--help")
    assert out.returncode == 0
    for f in fields(TrainConfig):
        if f.name != "preset":
            assert "--" + f.name.replace("_", "-") in out.stdout, f.name
    for extra in ("--preset", "--resume", "--classifier-only", "quick", "paper"):
        assert extra in out.stdout
    # the presets' table: each preset's line lists exactly the options it sets away from the defaults
    from fastjem.config import PRESETS

    table = out.stdout.split("presets (an option given on the command line overrides the preset):\n")[1]
    base = TrainConfig()
    for name, cfg in PRESETS.items():
        line = next(row for row in table.splitlines() if row.startswith(f"  {name:7s} "))
        for f in fields(cfg):
            value = getattr(cfg, f.name)
            differs = value != getattr(base, f.name) and f.name != "preset"
            assert (re.search(f" {f.name}=", line) is not None) == differs, (name, f.name)
            assert not differs or f" {f.name}={value}" in line, (name, f.name)
    assert table.splitlines()[len(PRESETS)] == ("each option's (default: ...) above is its own default, before a "
                                                "preset applies.")


def test_sweep_help_says_what_its_options_mean_to_a_sweep(capsys):
    """fastjem sweep --help listed --resume, --print-config and --seed with train's words though the sweep refuses
    them, called --out-dir a run's folder (default runs/<preset>-<dataset>-<time>) and --max-minutes one run's limit;
    the sweep's own folder and its whole-invocation limit are what they are."""
    from fastjem.cli import build_parser

    subs = next(a for a in build_parser()._actions if a.dest == "command").choices
    with pytest.raises(SystemExit):
        subs["sweep"].parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for refused in ("[--resume CHECKPOINT]", "--resume CHECKPOINT continue", "[--print-config]",
                    "--print-config print the configuration", "[--seed SEED]", "--seed SEED random seed"):
        assert refused not in text, refused
    assert "--seeds" in text and "--config FILE" in text
    assert "--out-dir OUT_DIR the sweep's folder, one run folder in it per combination and seed; default " \
           "runs/sweep-<preset>-<dataset>-<grid options>" in text
    assert "runs/<preset>-<dataset>-<time>" not in text
    assert "--max-minutes MAX_MINUTES stop cleanly after this many minutes of the whole sweep" in text
    # still parsed, so that the sweep refuses them with what to do (test_command_line_mistakes_are_refused_...)
    args = subs["sweep"].parse_args(["--grid", "lr=1e-3", "--resume", "x", "--print-config", "--seed", "2"])
    assert args.resume == "x" and args.print_config and args.seed == 2
    # train's help is train's
    with pytest.raises(SystemExit):
        subs["train"].parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--resume CHECKPOINT continue the run saved in CHECKPOINT" in text and "--print-config" in text
    assert "default runs/<preset>-<dataset>-<time>" in text and "the whole sweep" not in text


def test_precision_help_says_when_auto_picks_bf16_on_a_cpu():
    """auto is bf16 on a CPU with AMX-BF16, and on one with AVX512-BF16 where the probe times bf16 convolutions
    faster (engine.fast_bf16; README: the engine's precision); the help said AMX-BF16 alone, else fp32."""
    from fastjem.engine import BF16_PROBE_SPEEDUP

    out = run_cli("train", "--help")
    text = " ".join(out.stdout.split("--precision {auto,fp32,tf32,bf16}\n", 1)[1].split("--compile")[0].split())
    assert "AMX-BF16" in text and "AVX512-BF16" in text and "probe" in text, text
    assert f"{BF16_PROBE_SPEEDUP}x" in text, text


def test_bench_explains_the_engine_options_as_train_does():
    """The options fastjem bench shares with training carry the config's one text, and --no-compile means off."""
    from fastjem.cli import build_parser

    parser = build_parser()
    subs = next(a for a in parser._actions if a.dest == "command").choices
    helps = {name: {a.dest: a.help for a in subs[name]._actions if a.option_strings[:1] != ["--no-compile"]}
             for name in ("train", "bench")}
    for dest in ("compile", "cuda_graph", "kernels", "cast_weights_once", "sgld_parts", "cpu_malloc"):
        assert helps["bench"][dest] == helps["train"][dest], dest
        assert TrainConfig.__dataclass_fields__[dest].metadata["help"].replace("%", "%%") in helps["bench"][dest]
    assert parser.parse_args(["bench", "--no-compile"]).compile == "off"
    assert parser.parse_args(["bench"]).compile == "auto"


def test_every_help_default_is_the_parsers_own():
    """Each '(default: X)' that names a value says the value the parser really uses, in every command; a default
    resolved later (None) or spelled in words is left to the test of its command."""
    import argparse

    from fastjem.cli import build_parser

    worded = {("eval", "n_test"): (0, "all"), ("eval", "norms"): (["linf", "l2"], "both"),
              ("runs", "runs"): (["runs"], "runs/"), ("sample", "classes"): (None, "unconditional"),
              ("runs", "sort"): ("run", "run name")}
    checked, seen_worded = [], set()

    def walk(parser, command):
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    walk(sub, name)
                continue
            said = re.search(r"\(default: ([^);]*)", a.help or "")
            if said is None or a.default is argparse.SUPPRESS:  # train's options: the config's own, tested there
                continue
            said = said.group(1).split(" = ")[0].split(", ")[0]
            if (command, a.dest) in worded:
                assert (a.default, said) == worded[command, a.dest], (command, a.dest)
                seen_worded.add((command, a.dest))
            elif a.default is not None and re.fullmatch(r"[\w.-]+( [\w.-]+)*", said):
                real = " ".join(map(str, a.default)) if isinstance(a.default, list) else str(a.default)
                assert said == real, (command, a.option_strings, said, a.default)
                checked.append((command, a.dest))

    walk(build_parser(), "fastjem")
    assert seen_worded == set(worded)
    for expected in [("sample", "n"), ("sample", "n_steps"), ("sample", "batch_size"), ("sample", "seed"),
                     ("eval", "batch_size"), ("eval", "n_ood"), ("eval", "refine_steps"), ("eval", "init"),
                     ("eval", "n_fid"), ("bench", "sgld_parts"), ("sweep", "seeds"), ("export", "device"),
                     ("bench", "sgld_steps"), ("bench", "image_size"), ("bench", "channels"), ("bench", "num_classes"),
                     ("bench", "seed"), ("bench", "arch"), ("bench", "norm"), ("bench", "device"),
                     ("data", "dataset"), ("data", "image_size")]:
        assert expected in checked, expected


def test_every_option_of_every_command_says_what_it_does():
    """Each option in every command's --help has a text (bench's --sgld-steps, --image-size, --channels,
    --num-classes, --device, --seed, --arch, --norm and data's --dataset showed their name alone: no meaning, no
    default), and one with a default a user needs says it."""
    import argparse

    from fastjem.cli import build_parser

    silent = []

    def walk(parser, command):
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    walk(sub, name)
            elif a.help is None or (a.help != argparse.SUPPRESS and not a.help.strip()):
                silent.append((command, a.option_strings or a.dest))
            elif a.option_strings and a.default not in (None, False, argparse.SUPPRESS) and a.dest != "help" \
                    and "default" not in a.help:
                silent.append((command, a.option_strings, "no default"))

    walk(build_parser(), "fastjem")
    assert silent == [], silent


def test_trains_help_defaults_read_as_the_option_is_typed():
    """fastjem train --help shows each option's default as one would type it: a list option's words
    (--decay-epochs 50 100), which parse back to the default, not a Python tuple "(50, 100)"; an unset path says
    none or what it means, never an empty "(default: )"."""
    from fastjem.cli import build_parser, config_help

    parser = build_parser()
    for f in dataclasses.fields(TrainConfig):
        if f.name == "preset":
            continue
        text = config_help(f.name)
        assert "(default: )" not in text and "(default: (" not in text, (f.name, text)
        if isinstance(f.default, tuple):
            said = re.search(r"\(default: ([^)]*)\)$", text).group(1).split()
            flag = "--" + f.name.replace("_", "-")
            parsed = getattr(parser.parse_args(["train", flag, *said]), f.name)
            assert tuple(type(v)(w) for v, w in zip(f.default, parsed)) == f.default, (f.name, said)
    assert config_help("init_weights").endswith("(default: none)")
    assert config_help("out_dir").endswith("default runs/<preset>-<dataset>-<time>")


def test_version_names_fastjem_torch_and_triton():
    import torch

    import fastjem

    out = run_cli("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"fastjem {fastjem.__version__} (torch {torch.__version__}, triton ")
    assert f"CUDA available: {torch.cuda.is_available()}" in out.stdout
    assert f"CUDA build {torch.version.cuda or 'none'}," in out.stdout  # a CPU-only torch says none
    # without triton (a CPU install may lack it): said, not an ImportError
    from fastjem.cli import _version_line

    with pytest.MonkeyPatch.context() as m:
        m.setitem(sys.modules, "triton", None)
        assert ", triton not installed, " in _version_line()


def test_no_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        main([])
    assert exit_.value.code == 2
    assert "the following arguments are required: command" in capsys.readouterr().err


def test_a_reader_that_goes_away_ends_the_command_quietly():
    """`fastjem env | head -1`: output written to a pipe no one reads any more ends the command with status 0 and
    nothing on stderr (no BrokenPipeError traceback, none at the interpreter's last flush)."""
    proc = subprocess.Popen([sys.executable, "-m", "fastjem", "env"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # before the child has written anything: each of its writes meets a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and "Error" not in err, err


def test_ctrl_c_outside_training_ends_with_one_line_and_status_130(monkeypatch, capsys):
    """Ctrl-C in a command that does not catch it itself (eval, runs, ...): one line, the shell's status for
    SIGINT (training catches it to write its checkpoint first: test_guard)."""
    from fastjem import cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "run_runs", interrupted)
    assert main(["runs"]) == 130
    assert capsys.readouterr().err == "fastjem: interrupted\n"


def test_train_end_to_end_in_a_subprocess(tmp_path):
    start = time.perf_counter()
    out = run_cli("train", "--iters", "6", "--out-dir", str(tmp_path / "run"), *TINY)
    wall = time.perf_counter() - start
    assert out.returncode == 0, out.stderr
    assert "test accuracy" in out.stdout
    # the time it says it trained: within the command's own
    assert 0 < float(re.search(r"done: 6 iterations in ([0-9.]+) s", out.stdout).group(1)) < wall
    assert "it/s" not in out.stderr  # --no-progress: no bar
    # the quick preset's decays, epochs 30 and 38, at batch 16 come after its end: said, on stdout (not a warning)
    assert ("\nschedule: learning rate 0.001, reached by a linear warm-up at iteration 100 (past the run's end, "
            "iteration 6); x0.3 after iterations 2340 (epoch 30) and 2964 (epoch 38) never reached: past the run's end "
            "(iteration 6; an epoch is 78 iterations at --batch-size 16)\n") in out.stdout
    for name in ("checkpoint.pt", "metrics.jsonl", "samples.png", "curves.png"):
        assert str(tmp_path / "run" / name) in out.stdout
        assert (tmp_path / "run" / name).exists()
    # and it resumes from the command line
    out = run_cli("train", "--resume", str(tmp_path / "run" / "checkpoint.pt"), "--iters", "8")
    assert out.returncode == 0, out.stderr
    assert "done: 8 iterations" in out.stdout
    assert re.search(r"8/8 \[.*(it/s|s/it)", out.stderr), out.stderr  # the bar (s/it when slow)
    # it says where it resumed, and that its time is that of the 2 iterations it trained, not of all 8
    assert ", 8 iterations (78 per epoch), resuming at iteration 6\n" in out.stdout
    assert "done: 8 iterations (2 here, resumed at iteration 6) in " in out.stdout
    assert re.search(r"\b6/8 \[", out.stderr), out.stderr  # the bar starts where the run resumed
    from fastjem.curves import read_metrics

    # the resumed run's curves go on from where the first part stopped
    assert [r["iter"] for r in read_metrics(tmp_path / "run").train] == [2, 4, 6, 8]


def test_a_run_resumed_at_iteration_0_is_reported_as_resumed(tiny_config, tmp_path, capsys):
    """A checkpoint of iteration 0 (a run stopped or rolled back at its start): the end says the run resumed there."""
    from fastjem.train import Trainer

    first = Trainer(tiny_config.replace(iters=2), out_dir=tmp_path, progress=False, log=lambda *a: None)
    ckpt = first.save_checkpoint()
    assert main(["train", "--resume", str(ckpt), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert ", resuming at iteration 0\n" in out and "done: 2 iterations (2 here, resumed at iteration 0) in " in out


def sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def finished_run(tmp_path):
    assert main(["train", "--iters", "2", "--out-dir", str(tmp_path / "run"), *TINY]) == 0
    return tmp_path / "run"


@pytest.mark.parametrize("args,match", [
    (["--dataset", "cifar10", "--data-dir", "{tmp}/nothing"], "--download"),
    (["--class-cond-px", "--buffer-size", "1001"], "divisible"),
    (["--lr", "nan"], "finite"),
    (["--sgld-steps", "-3"], "sgld-steps"),
    (["--reinit-prob", "2"], "reinit-prob"),
    (["--dataset", "imagefolder"], "--data-dir"),
    # the quick preset's network is the convnet: a depth would be ignored; the error names where the network came from
    (["--depth", "16"], "but this run's network is convnet (from the quick preset): add --arch wrn"),
    (["--arch", "convnet", "--depth", "16"], "but this run's network is convnet (from --arch): add --arch wrn"),
    (["--iters", "0"], "--iters must be > 0"),  # not the preset's epochs instead
    (["--iters", "-5"], "--iters must be > 0"),
])
def test_bad_input_gets_one_clear_error(args, match, tmp_path, capsys):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    code = main(["train", "--iters", "2", "--out-dir", str(tmp_path / "run"), *TINY, *args])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("fastjem: error:") and match in err
    assert "Traceback" not in err


@pytest.mark.parametrize("args", [["--dataset", "mnist"], ["--preset", "huge"], ["--norm", "group"]])
def test_unknown_choices_are_refused(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", *args])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_a_sweep_without_a_grid_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["sweep", "--seeds", "1", "2"])
    assert exc.value.code == 2
    assert "the following arguments are required: --grid" in capsys.readouterr().err


def test_resume_with_another_architecture_is_refused(finished_run, capsys):
    ckpt = finished_run / "checkpoint.pt"
    before = sha(ckpt)
    assert main(["train", "--resume", str(ckpt), "--width", "32", "--no-progress"]) == 1
    assert "width" in capsys.readouterr().err
    # the saved run's own network is what a changed --depth is compared with, not the default preset's
    assert main(["train", "--resume", str(ckpt), "--arch", "wrn", "--depth", "16", "--no-progress"]) == 1
    assert main(["train", "--resume", str(ckpt), "--depth", "16", "--no-progress"]) == 1
    assert "cannot change --depth" in capsys.readouterr().err
    assert sha(ckpt) == before


def test_resume_with_the_same_list_options_spelled_out_is_accepted(tmp_path, capsys):
    """--decay-epochs and --remedies take several values; given again as the run was trained, they are the same
    options (a list from the command line was compared with the saved tuple and refused as a change)."""
    same = ["--decay-epochs", "30", "38", "--remedies", "lr", "sgld_steps"]
    assert main(["train", "--iters", "2", "--out-dir", str(tmp_path / "run"), *same, *TINY]) == 0
    assert main(["train", "--resume", str(tmp_path / "run"), "--iters", "3", *same, *TINY]) == 0, \
        capsys.readouterr().err
    assert main(["train", "--resume", str(tmp_path / "run"), "--iters", "4", "--remedies", "lr", *TINY]) == 1
    assert "cannot change --remedies (saved ('lr', 'sgld_steps'), asked ('lr',))" in capsys.readouterr().err


def test_resume_into_another_folder_leaves_the_run_it_continues(finished_run, tmp_path, capsys):
    from fastjem.runs import run_row

    before = sha(finished_run / "checkpoint.pt")
    new = tmp_path / "continued"
    assert main(["train", "--resume", str(finished_run), "--out-dir", str(new), "--iters", "4", "--no-progress"]) == 0
    assert sha(finished_run / "checkpoint.pt") == before
    assert '"out_dir": "' + str(finished_run) + '"' in (finished_run / "config.json").read_text()
    assert '"out_dir": "' + str(new) + '"' in (new / "config.json").read_text()
    assert run_row(new)["status"] == "done" and run_row(new)["iteration"] == 4
    # the continued run's records start with those of the run it continues, up to its checkpoint
    import json

    records = [json.loads(line) for line in (new / "metrics.jsonl").read_text().splitlines()]
    assert [r["iter"] for r in records if "loss" in r] == [2, 4]
    assert [r["iter"] for r in records if "test_acc" in r] == [2, 4]  # the end of its first length, and its own
    # a run resumed past its end and stopped is not "done" (its old summary.json went when it resumed)
    assert main(["train", "--resume", str(new), "--iters", "40", "--max-minutes", "1e-9", "--no-progress"]) == 0
    assert run_row(new)["status"].startswith("stopped")
    assert main(["train", "--resume", str(new), "--preset", "paper", "--no-progress"]) == 1
    assert "--preset starts a new run" in capsys.readouterr().err


def test_a_run_continued_from_a_kept_checkpoint_starts_with_its_runs_records(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", "--iters", "4", "--ckpt-keep-every", "2", "--out-dir", str(run), *TINY]) == 0
    first = (run / "metrics.jsonl").read_text().splitlines(keepends=True)
    kept = run / "checkpoints" / "iter_0000002.pt"
    assert kept.exists()
    # without --out-dir it would continue inside checkpoints/: refused, nothing written there
    before = sorted(p.name for p in kept.parent.iterdir())
    assert main(["train", "--resume", str(kept), "--iters", "4", "--no-progress"]) == 1
    assert f"{kept} is a kept checkpoint of the run in {run}: give --out-dir" in capsys.readouterr().err
    assert sorted(p.name for p in kept.parent.iterdir()) == before
    # checkpoints/iter_N.pt belongs to the run above that folder: its records up to N come along
    branch = tmp_path / "branch"
    assert main(["train", "--resume", str(kept), "--out-dir", str(branch), "--iters", "4", "--no-progress"]) == 0
    lines = (branch / "metrics.jsonl").read_text().splitlines(keepends=True)
    assert lines[0] == first[0] and json.loads(lines[0])["iter"] == 2
    assert [json.loads(line)["iter"] for line in lines if "loss" in line] == [2, 4]
    # only a folder named checkpoints is a run's: a checkpoint copied into another subfolder brings no records
    copied = run / "saved" / "iter_0000002.pt"
    copied.parent.mkdir()
    copied.write_bytes(kept.read_bytes())
    bare = tmp_path / "bare"
    assert main(["train", "--resume", str(copied), "--out-dir", str(bare), "--iters", "4", "--no-progress"]) == 0
    assert [json.loads(line)["iter"] for line in (bare / "metrics.jsonl").read_text().splitlines()
            if "loss" in line] == [4]


def test_unreadable_checkpoint_is_refused_and_kept(tmp_path, capsys):
    bad = tmp_path / "checkpoint.pt"
    bad.write_bytes(b"\x00garbage")
    assert main(["train", "--resume", str(bad), "--no-progress"]) == 1
    assert "cannot read checkpoint" in capsys.readouterr().err
    assert bad.read_bytes() == b"\x00garbage"


def test_existing_run_folder_is_not_overwritten(finished_run, capsys):
    before = sha(finished_run / "checkpoint.pt")
    assert main(["train", "--iters", "2", "--out-dir", str(finished_run), *TINY]) == 1
    assert "--resume" in capsys.readouterr().err
    assert sha(finished_run / "checkpoint.pt") == before
    # a run killed before its first checkpoint left only its records: a new run would append to them
    (finished_run / "checkpoint.pt").unlink()
    records = (finished_run / "metrics.jsonl").read_text()
    assert main(["train", "--iters", "2", "--out-dir", str(finished_run), *TINY]) == 1
    assert "stopped before its first checkpoint" in capsys.readouterr().err
    assert (finished_run / "metrics.jsonl").read_text() == records


def test_the_printed_resume_command_works_copied_verbatim_from_a_folder_with_a_space(tmp_path, capsys):
    """A stopped run prints the command that continues it: split as a shell splits it, that command names the
    checkpoint as one argument and resumes the run (a folder named with a space split it in two)."""
    import shlex

    from fastjem.checkpoint import load_checkpoint

    run = tmp_path / "my run"
    assert main(["train", "--iters", "100000", "--max-minutes", "0.001", "--out-dir", str(run), *TINY]) == 0
    out = capsys.readouterr().out
    [hint] = [line.split("resume with: ", 1)[1] for line in out.splitlines() if line.startswith("resume with: ")]
    argv = shlex.split(hint)
    assert argv[:3] == ["fastjem", "train", "--resume"] and argv[3] == str(run / "checkpoint.pt"), hint
    stopped = load_checkpoint(run / "checkpoint.pt")["iteration"]
    assert main([*argv[1:], "--iters", str(stopped + 2), "--max-minutes", "0"]) == 0
    assert json.loads((run / "summary.json").read_text())["iteration"] == stopped + 2


def test_a_run_of_one_iteration_says_iteration_not_iterations(tmp_path, capsys):
    """"1 iterations" in the start line, the warm-up warning, the summary and a resume's refusal: the singular
    where the count is 1."""
    from fastjem.errors import ConfigError
    from fastjem.train import Trainer, resume_config

    run = tmp_path / "one"
    assert main(["train", "--iters", "1", "--warmup-iters", "8", "--out-dir", str(run), *TINY]) == 0
    out, err = capsys.readouterr()
    assert ", 1 iteration (78 per epoch)\n" in out and "done: 1 iteration in " in out
    assert "longer than the run (1 iteration): the learning rate" in err
    assert "1 iterations" not in out + err
    assert main(["train", "--resume", str(run / "checkpoint.pt"), "--iters", "2"]) == 0
    assert "done: 2 iterations (1 here, resumed at iteration 1) in " in capsys.readouterr().out
    with pytest.raises(ConfigError, match="at iteration 2, and this run is 1 iteration long: give a larger"):
        Trainer(resume_config(run / "checkpoint.pt", {"iters": 1}), resume=run / "checkpoint.pt", progress=False)


def test_a_runs_cautions_go_to_stderr_and_its_log_to_stdout(tmp_path, capsys, monkeypatch):
    """`fastjem train > log`: the warnings a run says (at its start, and during its loop above a live progress bar)
    reach the terminal on stderr, with the errors; stdout has the log and the summary, no warning."""
    assert main(["train", "--iters", "2", "--warmup-iters", "8", "--out-dir", str(tmp_path / "a"), *TINY]) == 0
    out, err = capsys.readouterr()
    assert "warning: --warmup-iters 8 is longer than the run" in err and "warning:" not in out
    assert "done: 2 iterations" in out

    fail_grid_writes(monkeypatch)
    with_bar = [a for a in TINY if a != "--no-progress"]
    assert main(["train", "--iters", "4", "--warmup-iters", "0", "--sample-every", "2", "--out-dir",
                 str(tmp_path / "b"), *with_bar]) == 0
    out, err = capsys.readouterr()
    assert "warning: sample grid not written" in err and "samples_0000002.png" in err
    assert "warning:" not in out and "done: 4 iterations" in out


def test_a_full_disk_mid_run_gets_one_clear_error_and_keeps_the_last_checkpoint(tmp_path, capsys, monkeypatch):
    """The disk fills at the second checkpoint: one error naming the file and the cause, the resume command, no
    traceback, no temporary file left, and the first checkpoint whole (files are replaced only when written
    whole)."""
    import errno
    import os

    from fastjem import checkpoint
    from fastjem.checkpoint import load_checkpoint

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd to tell which file a descriptor writes")
    fsync, writes = os.fsync, []

    def fsync_filling_up(fd):
        if ".checkpoint.pt." in os.readlink(f"/proc/self/fd/{fd}"):
            writes.append(fd)
            if len(writes) >= 2:
                raise OSError(errno.ENOSPC, "No space left on device")
        fsync(fd)

    monkeypatch.setattr(checkpoint.os, "fsync", fsync_filling_up)
    run = tmp_path / "run"
    code = main(["train", "--iters", "12", "--ckpt-every", "5", "--out-dir", str(run), *TINY])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err, err
    assert f"No space left on device: {run / 'checkpoint.pt'}: free some space" in err
    assert f"resume with: fastjem train --resume {run / 'checkpoint.pt'}" in err
    assert load_checkpoint(run / "checkpoint.pt")["iteration"] == 5
    assert not [p.name for p in run.iterdir() if p.name.endswith(".tmp")]


def test_an_unwritable_output_folder_gets_one_clear_error(tmp_path, capsys, monkeypatch):
    """A read-only place (simulated: tests may run as root, whom permissions do not stop): one line, no
    traceback."""
    import errno

    from fastjem import checkpoint

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(checkpoint.tempfile, "mkstemp", read_only)
    code = main(["train", "--iters", "2", "--out-dir", str(tmp_path / "run"), *TINY])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err, err
    assert err.startswith("fastjem: error: Read-only file system: ") and "choose a folder you can write to" in err


def test_a_file_that_cannot_be_read_is_not_called_damaged_or_an_output(tmp_path, capsys, monkeypatch):
    """A checkpoint without read permission was 'truncated, corrupted or not a torch file' (an invitation to
    delete a good one), and an input folder that cannot be read got the advice for outputs."""
    import errno

    import torch

    from fastjem import checkpoint

    assert main(["train", "--iters", "2", "--out-dir", str(tmp_path / "run"), *TINY]) == 0
    capsys.readouterr()
    path = tmp_path / "run" / "checkpoint.pt"

    def no_permission(f, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(f))

    monkeypatch.setattr(checkpoint.torch, "load", no_permission)
    assert main(["eval", str(path), "accuracy", "--device", "cpu"]) == 1
    err = capsys.readouterr().err
    assert f"cannot read checkpoint {path}: Permission denied (check the file's permissions" in err
    assert "corrupted" not in err
    monkeypatch.setattr(checkpoint.torch, "load", torch.load)
    monkeypatch.setattr("fastjem.runs.Path.iterdir", no_permission)
    assert main(["runs", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "Permission denied" in err and "an input must be readable" in err and "Traceback" not in err


def test_an_output_folder_that_is_a_file_gets_one_clear_error(finished_run, tmp_path, capsys):
    """--out-dir naming a file, or a folder below one, in train and eval: one line, no traceback."""
    (tmp_path / "afile").write_text("mine")
    for argv in (["train", "--iters", "2", "--out-dir", str(tmp_path / "afile"), *TINY],
                 ["train", "--iters", "2", "--out-dir", str(tmp_path / "afile" / "run"), *TINY],
                 ["eval", str(finished_run), "accuracy", "--out-dir", str(tmp_path / "afile"), "--no-progress"],
                 ["train", "--iters", "2", "--out-dir", os.devnull, *TINY]):  # a device, not a file: a traceback
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 1 and "Traceback" not in err, err
        assert "a file stands where a folder is needed: choose another --out-dir" in err, err
    assert (tmp_path / "afile").read_text() == "mine"
    # a folder made twice (EEXIST on a folder, no file in the way) is a bug: its traceback, not that advice
    import errno

    from fastjem import cli

    def made_twice(args):
        raise FileExistsError(errno.EEXIST, "File exists", str(tmp_path / "folder"))

    (tmp_path / "folder").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cli, "run_runs", made_twice)
        with pytest.raises(FileExistsError):
            main(["runs", str(tmp_path)])


def test_an_output_folder_the_file_system_will_not_make_gets_one_clear_error(finished_run, tmp_path, capsys):
    """--out-dir below /proc (mkdir there is ENOENT) or through a dangling link (EEXIST with nothing there): one line
    that names the folder or the link, no traceback; eval's reports too (their atomic write makes the folder), and
    sample's --out (an atomic write alone: it stopped at a FileExistsError traceback)."""
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    cases = [(tmp_path / "dangling", "dangling is a link to"), (tmp_path / "dangling" / "run", "dangling is a link to")]
    if Path("/proc/self").is_dir():
        cases.append((Path("/proc/fastjem-run"), "cannot make the folder /proc/fastjem-run (No such file"))
    for folder, said in cases:
        for argv in (["train", "--iters", "2", "--out-dir", str(folder), *TINY],
                     ["eval", str(finished_run), "accuracy", "--out-dir", str(folder), "--no-progress"],
                     ["sample", str(finished_run), "-n", "2", "--n-steps", "1", "--no-progress", "--out",
                      str(folder / "s.pt")]):
            code = main(argv)
            err = capsys.readouterr().err
            assert code == 1 and "Traceback" not in err, err
            assert said in err and "choose another --out-dir" in err, err
    assert not (tmp_path / "gone").exists()

def test_bench_times_the_sampler_and_writes_json(tmp_path, capsys):
    import json

    out = tmp_path / "bench.json"
    rc = main(["bench", "--depth", "10", "--width", "1", "--batch-size", "4", "--sgld-steps", "3", "--image-size", "8",
               "--seconds", "0.3", "--device", "cpu", "--out", str(out)])
    assert rc == 0
    r = json.loads(out.read_text())
    assert r["model"] == "WRN-10-1" and r["batch_size"] == 4 and r["sgld_steps"] == 3 and r["windows"] >= 3
    assert r["fastjem"] and r["torch"] and r["python"] and "triton" in r
    assert 0 < r["sgld_call_ms_min"] <= r["sgld_call_ms"] <= r["sgld_call_ms_max"]
    assert r["sgld_step_ms"] == pytest.approx(r["sgld_call_ms"] / 3)
    # what reproduces it: the threads, the windows' own times, the budget asked for, the seed
    import statistics

    import torch

    assert r["device_type"] == "cpu" and r["torch_threads"] == torch.get_num_threads() and isinstance(r["seed"], int)
    assert len(r["window_call_ms"]) == r["windows"] and r["seconds_asked"] == 0.3
    assert statistics.median(r["window_call_ms"]) == pytest.approx(r["sgld_call_ms"])
    # one step is a forward and an input gradient: the gradient costs about what the forward costs
    assert 1.7 < r["flops_per_step"] / r["flops_per_forward"] < 2.3
    assert r["tflop_per_s"] == pytest.approx(r["flops_per_step"] * 3 / (r["sgld_call_ms"] / 1e3) / 1e12)
    assert "SGLD call" in capsys.readouterr().out


def test_bench_times_the_sampling_call_training_makes_after_its_warm_up(tiny_config, monkeypatch):
    """Each call the bench makes is training's sampling call: the cast copy refreshed from the weights (bf16), the
    batch in the engine's parts; the warm-up calls come first, then one call sizes the windows, then the windows."""
    import torch

    from fastjem.benchmark import bench_sampler
    from fastjem.sampler import SGLD
    from fastjem.weights import CastCopy

    refreshes, parts = [], []
    refresh, sample_parts = CastCopy.refresh_, SGLD.sample_parts

    def counted_refresh(self):
        refreshes.append(1)
        return refresh(self)

    def recorded_parts(self, energy_for, x0, n, model=None):
        parts.append(n)
        return sample_parts(self, energy_for, x0, n, model)

    monkeypatch.setattr(CastCopy, "refresh_", counted_refresh)
    monkeypatch.setattr(SGLD, "sample_parts", recorded_parts)
    cfg = tiny_config.replace(precision="bf16", sgld_parts=2, batch_size=4, sgld_steps=2)
    r = bench_sampler(cfg, torch.device("cpu"), num_classes=10, channels=1, size=8, seconds=0.2, warmup=3)
    assert "SGLD weights cast once" in r["engine"] and "SGLD in 2 parts" in r["engine"]
    calls = 3 + 1 + r["windows"] * r["calls_per_window"]
    assert len(parts) == calls and set(parts) == {2}
    assert len(refreshes) == 1 + calls  # the copy's own first refresh, then one a call


def test_bench_sweeps_batch_sizes_into_a_table_json_and_plot(tmp_path, capsys):
    import json

    out, png = tmp_path / "sweep.json", tmp_path / "sweep.png"
    assert main(["bench", "--depth", "10", "--width", "1", "--batch-size", "2", "8", "--sgld-steps", "2",
                 "--image-size", "8", "--seconds", "0.2", "--device", "cpu", "--out", str(out),
                 "--plot", str(png)]) == 0
    runs = json.loads(out.read_text())
    assert [r["batch_size"] for r in runs] == [2, 8]
    # the FLOPs of a step grow with the batch: each run measured its own size
    assert runs[1]["flops_per_step"] == pytest.approx(4 * runs[0]["flops_per_step"], rel=1e-6)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = capsys.readouterr().out
    assert "ms/step/chain" in text and text.count("SGLD call") == 2


def test_bench_compares_precisions(tmp_path, capsys, monkeypatch):
    """Several --precision values: each timed with that engine (recorded), then compared at each batch size."""
    import json

    monkeypatch.setattr("fastjem.engine.cpu_bf16_flags", lambda: [])  # auto resolves to fp32 on any CPU
    out = tmp_path / "prec.json"
    assert main(["bench", "--depth", "10", "--width", "1", "--batch-size", "2", "--sgld-steps", "2", "--image-size",
                 "8", "--seconds", "0.2", "--device", "cpu", "--precision", "auto", "bf16", "--out", str(out)]) == 0
    runs = json.loads(out.read_text())
    assert [(r["precision_requested"], r["precision"]) for r in runs] == [("auto", "fp32"), ("bf16", "bf16")]
    assert runs[0]["engine"].startswith("precision fp32") and runs[1]["engine"].startswith("precision bf16")
    text = capsys.readouterr().out
    assert "precision at batch 2 (speed against auto -> fp32)" in text and text.count("fastest") == 1
    assert main(["bench", "--precision", "fp32", "fp32", "--device", "cpu"]) == 1
    assert "twice" in capsys.readouterr().err
    # the results cannot be written once timed (a disk that filled meanwhile): one line, no traceback
    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("fastjem.benchmark.write_result", full)
    assert main(["bench", "--depth", "10", "--width", "1", "--batch-size", "2", "--sgld-steps", "2", "--image-size",
                 "8", "--seconds", "0.1", "--device", "cpu", "--precision", "fp32", "--out", str(out), "--force"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fastjem: error: cannot write the results: OSError: [Errno 28] No space left") and \
        "Traceback" not in err


def test_bench_sizes_its_windows_from_one_call_and_stops_at_fifty(tiny_config, monkeypatch):
    """On a clock where the warm-up and the sizing call take 100 ms and later calls 0.1 ms (1 ms in every fifth
    window): a window is seconds / 10 / 100 ms calls, windows run until the time asked for is spent or there are
    fifty, the call time is the windows' median per call, and the warm-up time is the warm-up calls' alone."""
    from types import SimpleNamespace

    import torch

    from fastjem import benchmark

    clock = SimpleNamespace(now=0.0, calls=0)

    def call():  # 3 warm-up calls and the sizing call are slow; then every fifth window's calls take 1 ms
        clock.now += 0.1 if clock.calls < 4 else 1e-3 if (clock.calls - 4) // 10 % 5 == 0 else 1e-4
        clock.calls += 1

    engine = SimpleNamespace(precision="fp32", notes=[], describe=lambda: "precision fp32, eager")
    monkeypatch.setattr(benchmark, "build_sampler_call", lambda *a, **k: (call, engine))
    monkeypatch.setattr(benchmark, "time", SimpleNamespace(perf_counter=lambda: clock.now))
    cfg = tiny_config.replace(batch_size=4, sgld_steps=2)
    class TwoLinear(torch.nn.Module):  # the input gradient goes through one of the two layers
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(64, 10), torch.nn.Linear(64, 10)

        def forward(self, x):
            return self.a(x.flatten(1)) + self.b(x.flatten(1).detach())

    r = benchmark.bench_sampler(cfg, torch.device("cpu"), num_classes=10, channels=1, size=8, seconds=10.0, warmup=3,
                                model=TwoLinear())
    # 2 * batch * 64 * 10 FLOPs a layer forward; the step adds one layer's input gradient, as many again
    assert r["model"] == "TwoLinear" and r["flops_per_forward"] == 10240 and r["flops_per_step"] == 15360
    assert r["calls_per_window"] == 10 and r["windows"] == 50  # 10 s / 10 / 0.1 s; fifty long before 10 s
    assert clock.calls == 4 + 50 * 10
    assert r["warmup_s"] == pytest.approx(0.3)
    assert r["window_call_ms"] == pytest.approx([1.0 if w % 5 == 0 else 0.1 for w in range(50)])
    assert r["sgld_call_ms"] == pytest.approx(0.1) and r["sgld_step_ms"] == pytest.approx(0.05)
    assert (r["sgld_call_ms_min"], r["sgld_call_ms_max"]) == pytest.approx((0.1, 1.0))
    assert r["chains_per_s"] == pytest.approx(4 / 1e-4)
    assert r["tflop_per_s"] == pytest.approx(15360 * 2 / 1e-4 / 1e12)


def test_bench_times_the_sampler_in_parts(tmp_path, capsys):
    import json

    out = tmp_path / "bench.json"
    assert main(["bench", "--depth", "10", "--width", "1", "--batch-size", "4", "--sgld-steps", "2", "--image-size",
                 "8", "--seconds", "0.2", "--device", "cpu", "--sgld-parts", "2", "--out", str(out)]) == 0
    assert "SGLD in 2 parts" in json.loads(out.read_text())["engine"]
    assert main(["bench", "--batch-size", "4", "--sgld-parts", "5", "--device", "cpu"]) == 1
    assert "more than the batch size" in capsys.readouterr().err


def test_bench_defaults_are_the_documented_ones_on_each_device(tmp_path, monkeypatch, capsys):
    """Without size options: WRN-10-2, batch 16 on a CPU and WRN-28-10, batch 64 on CUDA (faked here), 20 SGLD
    steps on 32 x 32 x 3 images of 10 classes, 10 timed seconds, seed 0, the sampler alone (not the iteration's
    graph); the conv net takes the quick preset's width. The timing itself is faked: what reaches it is the test.
    Sizes of 1 are valid, and --out's missing folders are made before the timing."""
    import json

    import torch

    from fastjem.config import get_preset

    calls = []

    def fake(cfg, device, num_classes, channels, size, seconds):
        calls.append((cfg, device, num_classes, channels, size, seconds))
        return {"batch_size": cfg.batch_size, "device": str(device)}

    monkeypatch.setattr("fastjem.benchmark.bench_sampler", fake)
    monkeypatch.setattr("fastjem.benchmark.print_result", lambda r: None)
    assert main(["bench", "--device", "cpu"]) == 0
    cfg, device, *rest = calls.pop()
    assert (cfg.arch, cfg.depth, cfg.width, cfg.batch_size, cfg.sgld_steps, cfg.seed) == ("wrn", 10, 2, 16, 20, 0)
    assert device == torch.device("cpu") and rest == [10, 3, 32, 10.0]
    assert not cfg.iteration_graph and cfg.device == "cpu"
    with monkeypatch.context() as m:
        m.setattr("fastjem.train.resolve_device", lambda name: torch.device("cuda"))
        assert main(["bench"]) == 0
    cfg, device, *rest = calls.pop()
    assert (cfg.depth, cfg.width, cfg.batch_size, device, cfg.device) == (28, 10, 64, torch.device("cuda"), "cuda")
    assert not cfg.iteration_graph and rest == [10, 3, 32, 10.0]
    assert main(["bench", "--arch", "convnet", "--device", "cpu"]) == 0
    assert calls.pop()[0].width == get_preset("quick").width
    out = tmp_path / "new" / "deeper" / "r.json"
    assert main(["bench", "--device", "cpu", "--sgld-steps", "1", "--image-size", "1", "--channels", "1",
                 "--num-classes", "1", "--batch-size", "1", "--out", str(out)]) == 0
    cfg, device, *rest = calls.pop()
    assert (cfg.sgld_steps, cfg.batch_size, rest) == (1, 1, [1, 1, 1, 10.0])
    assert json.loads(out.read_text()) == {"batch_size": 1, "device": "cpu"}


def test_bench_refuses_bad_sizes(capsys):
    assert main(["bench", "--batch-size", "0", "--device", "cpu"]) == 1
    assert "--batch-size must be > 0" in capsys.readouterr().err
    assert main(["bench", "--batch-size", "4", "--plot", "x.png", "--device", "cpu"]) == 1
    assert "two or more sizes" in capsys.readouterr().err
    # refused before anything is timed: each of these would otherwise fail after the benchmark, or midway
    for args, message in ((["--seconds", "nan"], "finite number"), (["--batch-size", "2", "2"], "a size twice"),
                          (["--batch-size", "4", "2", "--plot", "p.txt"], "name a figure file"),
                          (["--batch-size", "4", "1", "--sgld-parts", "2"], "more than the batch size"),
                          (["--out", "/proc/none/b.json"], "cannot write"),
                          (["--arch", "convnet", "--depth", "16"], "the conv net has no depth option")):
        assert main(["bench", "--device", "cpu", *args]) == 1, args
        err = capsys.readouterr()
        assert message in err.err and "SGLD call" not in err.out and "Traceback" not in err.err, args


@pytest.mark.gpu
def test_bench_on_cuda_runs_the_graphed_sampler(tmp_path):
    import json

    out = tmp_path / "bench.json"
    assert main(["bench", "--depth", "10", "--width", "2", "--batch-size", "32", "--sgld-steps", "5",
                 "--compile", "off", "--seconds", "1", "--device", "cuda", "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert "CUDA graph SGLD loop" in r["engine"] and "kernels triton" in r["engine"] and r["tflop_per_s"] > 0


def test_data_command_summarizes_a_dataset_and_draws_a_grid(tmp_path, capsys):
    png = tmp_path / "grid.png"
    assert main(["data", "--grid", str(png)]) == 0
    out = capsys.readouterr().out
    assert "1 x 8 x 8 uint8, 10 classes" in out and "train 1257, validation 180" in out and "test 360" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    with Image.open(png) as im:  # 10 rows of 8 digits, each enlarged to 32 px, 2 px padding
        assert im.size == (8 * 34 + 2, 10 * 34 + 2)


def test_data_command_replaces_an_existing_grid_file_only_with_force(tmp_path, capsys):
    png = tmp_path / "samples.png"
    png.write_bytes(b"a run's sample grid")
    assert main(["data", "--grid", str(png)]) == 1
    assert f"{png} exists: pass --force to replace it, or give --grid another file" in capsys.readouterr().err
    assert png.read_bytes() == b"a run's sample grid"  # left as it was
    assert main(["data", "--grid", str(png), "--force"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (tmp_path / "dir.png").mkdir()
    assert main(["data", "--grid", str(tmp_path / "dir.png")]) == 1
    assert "is a folder: give --grid a file's name" in capsys.readouterr().err


def test_data_command_reports_what_is_wrong_with_a_folder(tmp_path, capsys):
    import numpy as np
    from PIL import Image

    for c, size in (("a", 8), ("b", 12)):
        (tmp_path / "mixed" / c).mkdir(parents=True)
        for i in range(3):
            Image.fromarray(np.full((size, size, 3), 40 * i, np.uint8)).save(tmp_path / "mixed" / c / f"{i}.png")
    assert main(["data", "--dataset", "imagefolder", "--data-dir", str(tmp_path / "mixed")]) == 1
    assert "--image-size" in capsys.readouterr().err
    assert main(["data", "--dataset", "imagefolder", "--data-dir", str(tmp_path / "mixed"), "--image-size", "8",
                 "--val-size", "0"]) == 0
    out = capsys.readouterr().out
    assert "3 x 8 x 8 uint8, 2 classes" in out and "train 4, validation 0" in out and "test 2" in out
    # a validation size that train refuses is refused here too (it printed the default split)
    assert main(["data", "--dataset", "imagefolder", "--data-dir", str(tmp_path / "mixed"), "--image-size", "8",
                 "--val-size", "-7"]) == 1
    assert "--val-size must be >= 0, or -1 for the dataset default; got -7" in capsys.readouterr().err
    # a grid path that is not an image file: said before the data is loaded
    assert main(["data", "--dataset", "imagefolder", "--data-dir", str(tmp_path / "nowhere"), "--grid", "out"]) == 1
    assert "name an image file" in capsys.readouterr().err


def test_the_validation_split_help_states_is_the_one_a_folder_gets(tmp_path, capsys):
    """--val-size's help named the defaults of CIFAR/SVHN and digits alone; an image folder's (a tenth of its training
    images, at most 5000) is the one a user of their own data needs. Text and behaviour checked together."""
    import numpy as np
    from PIL import Image

    from fastjem.cli import config_help

    assert "a tenth of an image folder's training images, at most 5000" in config_help("val_size")
    for c in ("a", "b"):
        (tmp_path / "f" / c).mkdir(parents=True)
        for i in range(37):
            Image.fromarray(np.full((8, 8, 3), 3 * i, np.uint8)).save(tmp_path / "f" / c / f"{i}.png")
    assert main(["data", "--dataset", "imagefolder", "--data-dir", str(tmp_path / "f")]) == 0
    split = re.search(r"train (\d+), validation (\d+)", capsys.readouterr().out)
    train, val = int(split.group(1)), int(split.group(2))
    assert val == (train + val) // 10 and val > 0, (train, val)


def test_data_command_tabulates_classes_notes_gaps_and_imbalance_and_grids_a_row_per_class(tmp_path, capsys,
                                                                                          monkeypatch):
    """fastjem data's class table (the names' width; a class without a name by its index; the first 20 rows of more
    than 24 classes), its notes (classes without training images; more than twice as many images in one class as
    in another) and its grid (the first 8 training images of each of the first 10 classes, blanks after)."""
    from types import SimpleNamespace

    import torch

    import fastjem.data
    import fastjem.eval.plots
    from fastjem.data import to_float

    def summary(classes, train, names=None):
        names = [f"c{i}" for i in range(classes)] if names is None else names
        return {"dataset": "made", "shape": [1, 8, 8], "num_classes": classes, "pixel_mean": [12.0],
                "train": sum(train), "val": 0, "test": classes, "augmentation": {"pad": 0, "flip": False},
                "train_per_class": train, "test_per_class": [1] * classes, "classes": names,
                "untrained": [names[i] if i < len(names) else str(i) for i, n in enumerate(train) if n == 0]}

    y = torch.cat([torch.full((9,), 0), torch.arange(1, 25).repeat_interleave(3)])
    images = SimpleNamespace(train_x=torch.randint(0, 256, (len(y), 1, 8, 8), dtype=torch.uint8), train_y=y)
    grids = []
    monkeypatch.setattr(fastjem.data, "load_arrays", lambda *a, **k: images)
    monkeypatch.setattr(fastjem.eval.plots, "image_grid", lambda x, path, nrow: grids.append((x, nrow)) or path)

    def table(r, *flags):
        monkeypatch.setattr(fastjem.data, "summarize", lambda arrays, val_size: r)
        assert main(["data", *flags]) == 0
        return capsys.readouterr().out.splitlines()[4:]

    # 25 classes, one named at length, one with 21 images to the others' 10: imbalanced
    r = summary(25, [10] * 24 + [21])
    r["classes"][3] = "a_long_name"
    out = table(r, "--grid", str(tmp_path / "g.png"))
    assert out[0] == "  class        train+val    test" and out[1] == "  c0                  10       1"
    assert out[4] == "  a_long_name         10       1" and out[20] == "  c19                 10       1"
    assert out[21:24] == ["  ... 5 more classes", "  note: classes are imbalanced (10 to 21 training images)",
                          f"  grid          {tmp_path / 'g.png'} (a row per class, top to bottom: c0, c1, c2, "
                          "a_long_name, c4, c5, c6, c7, c8, c9, ...)"]
    (x, nrow), = grids
    rows = x.view(10, 8, 1, 8, 8)
    assert nrow == 8 and torch.equal(rows[0], to_float(images.train_x[:8]))
    for c in range(1, 10):
        assert torch.equal(rows[c, :3], to_float(images.train_x[y == c])) and (rows[c, 3:] == -1).all()
    # 24 classes: every row; twice as many images in one class is not yet imbalance
    out = table(summary(24, [10] * 23 + [20]))
    assert len(out) == 25 and out[-1] == "  c23         20       1"
    # a class without training images, one without a name; no names at all
    out = table(summary(3, [5, 0, 1], names=["cat", "dog"]))
    assert out == ["  class  train+val    test", "  cat          5       1", "  dog          0       1",
                   "  2            1       1",
                   "  note: 1 class(es) have no training images: dog; the classifier never learns them: add images of "
                   "them"]
    assert table(summary(3, [5, 0, 0]))[-1].startswith("  note: 2 class(es) have no training images: c1, c2; ")
    out = table(summary(2, [4, 4], names=[]))
    assert out == ["  class  train+val    test", "  0              4       1", "  1              4       1"]


def as_json(obj):
    import json

    return json.loads(json.dumps(obj))


def test_print_config_and_config_files_round_trip(tmp_path, capsys):
    import json

    from fastjem.checkpoint import load_checkpoint
    from fastjem.config import get_preset

    assert main(["train", "--preset", "paper", "--dataset", "cifar10", "--lr", "2e-4", "--print-config"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == as_json({**get_preset("paper").replace(dataset="cifar10", lr=2e-4).to_dict(), "out_dir": ""})
    assert not (tmp_path / "runs").exists()
    # a printed config, edited, starts a run; options on the command line override the file
    assert main(["train", *TINY, "--seed", "7", "--print-config"]) == 0
    options = json.loads(capsys.readouterr().out)
    options.update(seed=9, sgld_steps=3)
    (tmp_path / "mine.json").write_text(json.dumps(options))
    run = tmp_path / "run"
    assert main(["train", "--config", str(tmp_path / "mine.json"), "--iters", "2", "--out-dir", str(run)]) == 0
    used = json.loads((run / "config.json").read_text())
    assert used == {**options, "iters": 2, "out_dir": str(run)}
    # a run folder or its checkpoint is a config too (its out_dir is not taken: a new run gets its own folder)
    again = tmp_path / "again"
    assert main(["train", "--config", str(run), "--seed", "10", "--out-dir", str(again)]) == 0
    assert json.loads((again / "config.json").read_text()) == {**used, "seed": 10, "out_dir": str(again)}
    capsys.readouterr()
    assert main(["train", "--config", str(run / "checkpoint.pt"), "--print-config"]) == 0
    assert json.loads(capsys.readouterr().out)["seed"] == 9
    assert load_checkpoint(run)["config"]["sgld_steps"] == 3
    # what a resume would run: the saved config, the run's own folder (not blanked as a new run's is), the override
    assert main(["train", "--resume", str(run / "checkpoint.pt"), "--iters", "5", "--print-config"]) == 0
    assert json.loads(capsys.readouterr().out) == {**used, "iters": 5}
    # a file that sets only some options: the rest come from --preset
    (tmp_path / "part.json").write_text('{"lr": 0.0005, "decay_epochs": [10, 20]}')
    assert main(["train", "--config", str(tmp_path / "part.json"), "--print-config"]) == 0
    part = json.loads(capsys.readouterr().out)
    assert part == as_json({**get_preset("quick").replace(lr=5e-4, decay_epochs=(10, 20)).to_dict(), "out_dir": ""})


@pytest.mark.parametrize("content,match", [
    ("{not json", "not a JSON file"),
    ("[1, 2]", "JSON object of options"),
    ('{"learning_rate": 0.1}', "unknown options learning_rate"),
    ('{"lr": "fast"}', "lr must be float"),
    ('{"iters": 2.5}', "iters must be int"),
    ('{"augment": 1}', "augment must be bool"),
    ('{"sgld_noise": -1}', "--sgld-noise must be >= 0"),
])
def test_bad_config_files_get_one_clear_error(content, match, tmp_path, capsys):
    path = tmp_path / "c.json"
    path.write_text(content)
    assert main(["train", "--config", str(path), "--out-dir", str(tmp_path / "run"), *TINY]) == 1
    assert match in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_config_file_mistakes_outside_the_file(finished_run, tmp_path, capsys):
    assert main(["train", "--config", str(tmp_path / "missing.json")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main(["train", "--config", str(tmp_path)]) == 1
    assert "without config.json" in capsys.readouterr().err
    assert main(["train", "--config", str(finished_run), "--resume", str(finished_run)]) == 1
    assert "give one of them" in capsys.readouterr().err


def test_env_reports_the_machine_and_the_default_engine_with_why(capsys, monkeypatch):
    import json

    from fastjem.engine import BF16Probe

    monkeypatch.setattr("fastjem.engine.cpu_bf16_flags", lambda: ["avx512_bf16"])
    monkeypatch.setattr("fastjem.engine.cpu_bf16_probe", lambda: BF16Probe(4.0, 5.0, "probe cached in X"))
    assert main(["env"]) == 0
    out = capsys.readouterr().out
    from fastjem.cli import _version_line

    assert out.startswith(_version_line() + "\nCPU     ")  # what a bug report needs, first
    assert "bf16 instructions: avx512_bf16 (no AMX)" in out
    assert "\nfastjem train on cpu: precision fp32" in out and "AVX512-BF16 but no AMX" in out
    assert "ran x0.80 the speed of fp32 here (5.00 against 4.00 ms; probe cached in X)" in out
    # each preset's engine fitted to its network: a bare `fastjem train` (quick) never compiles, the paper's
    # WRN-28-10 compiles its SGLD step on a CPU; a note the quick preset gave is not said again
    quick, paper = out.split("\nfastjem train on cpu: ")[1].split("\nfastjem train --preset paper on cpu: ")
    assert quick.startswith("precision fp32, compile off,") and "SGLD gradient" not in quick
    assert paper.startswith("precision fp32, compile SGLD step only,")
    assert "SGLD gradient compiled on CPU (compile auto): a step computes 1523.5 GFLOP" in paper
    assert "compile auto -> network eager on CPU" in paper and "precision auto" not in paper
    assert "\nGPU     none (torch sees no CUDA device)\n" in out
    from fastjem.kernels._dispatch import interpreter_on, triton

    here = ", and here on CPU tensors under TRITON_INTERPRET=1" if interpreter_on() else ""
    assert f"\nTriton  {'installed' if triton else 'not installed'}; kernels run on CUDA{here}\n" in out
    for flags, line in (([], "none"), (["amx_bf16", "avx512_bf16"], "amx_bf16, avx512_bf16")):
        monkeypatch.setattr("fastjem.engine.cpu_bf16_flags", lambda flags=flags: flags)
        assert main(["env"]) == 0
        assert f"\n        bf16 instructions: {line}\n" in capsys.readouterr().out
    assert main(["env", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["cpu"]["bf16_flags"] == ["amx_bf16", "avx512_bf16"] and r["cpu"]["logical_cpus"] >= 1
    assert r["gpus"] == [] and r["triton"] == {"installed": triton is not None, "interpreter": interpreter_on()}
    assert list(r["engines"]["cpu"]) == ["quick", "paper"]
    assert r["engines"]["cpu"]["quick"]["engine"].startswith("precision bf16")
    assert any("AMX-BF16" in n for n in r["engines"]["cpu"]["paper"]["notes"])


def test_env_lists_every_gpu_with_its_memory_and_resolves_the_engine_of_the_first(capsys, monkeypatch):
    """On a CPU machine with CUDA faked: each GPU's line (memory in GiB to one decimal), and the CUDA engine of each
    preset resolved for device 0 and fitted to the preset's network on its SMs."""
    import json
    from types import SimpleNamespace

    import torch

    import fastjem.engine

    gib = 2**30
    props = [SimpleNamespace(name="NVIDIA H200", major=9, minor=0, total_memory=int(139.81 * gib),
                             multi_processor_count=132),
             SimpleNamespace(name="NVIDIA A100", major=8, minor=0, total_memory=int(39.38 * gib),
                             multi_processor_count=108)]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: len(props))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: props[getattr(i, "index", i)])
    real, calls = fastjem.engine.resolve_engine, []

    def resolve(cfg, device, has_batch_norm, distributed=False, has_dropout=None):
        engine = real(cfg.replace(device="cpu"), torch.device("cpu"), has_batch_norm, distributed, has_dropout)
        if device.type == "cpu":
            return engine
        calls.append((cfg.preset, cfg.device, device, has_batch_norm, has_dropout))
        return dataclasses.replace(engine, device=device, notes=("a cuda note",))

    monkeypatch.setattr(fastjem.engine, "resolve_engine", resolve)
    assert main(["env"]) == 0
    out = capsys.readouterr().out
    assert "\nGPU 0   NVIDIA H200, compute capability 9.0, 139.8 GiB\n" in out
    assert "\nGPU 1   NVIDIA A100, compute capability 8.0, 39.4 GiB\n" in out
    assert "GPU     none" not in out
    assert "\nfastjem train on cuda: " in out and "\n  - a cuda note\n  - SGLD parts auto -> 1: " in out
    # the paper's WRN-28-10 at batch 64 on the first GPU's 132 SMs: 18% of its convolutions' time in last waves
    assert "\n  - SGLD parts auto -> 2: 18% of the convolutions' time at batch 64 is in last waves of tiles " \
           "that leave some of the 132 SMs idle" in out.split("--preset paper on cuda: ")[1]
    assert calls == [("quick", "cuda", torch.device("cuda", 0), False, False),
                     ("paper", "cuda", torch.device("cuda", 0), False, False)]
    assert main(["env", "--json"]) == 0
    assert [g["memory_gib"] for g in json.loads(capsys.readouterr().out)["gpus"]] == [139.8, 39.4]


@pytest.mark.gpu
def test_env_on_cuda_lists_the_gpus_and_the_cuda_engine(capsys):
    import torch

    assert main(["env"]) == 0
    out = capsys.readouterr().out
    assert "GPU 0   " + torch.cuda.get_device_name(0) in out
    assert "fastjem train --preset paper on cuda: precision bf16, compile on" in out


def test_no_validation_set_reports_none_not_zero(tmp_path, capsys):
    """--val-size 0 trains on every training image: there is no validation accuracy (not 0.0, which sweeps would
    average and best.pt would be chosen on), no best.pt, and the run table says so."""
    import json

    from fastjem.runs import run_row

    run = tmp_path / "run"
    # validations on the way too (from a config file: --eval-every beside --val-size 0 is refused as unread)
    (tmp_path / "every.json").write_text(json.dumps({"eval_every": 1}))
    assert main(["train", "--iters", "2", "--val-size", "0", "--config", str(tmp_path / "every.json"), "--out-dir",
                 str(run), *TINY]) == 0
    assert "(no validation set, test NLL" in capsys.readouterr().out
    assert json.loads((run / "summary.json").read_text())["val_acc"] is None
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert not any("val_acc" in r for r in records) and any("test_acc" in r for r in records)
    assert not (run / "best.pt").exists() and [r["best"] for r in records if "test_acc" in r] == [False]
    assert run_row(run)["val_acc"] is None and run_row(run)["status"] == "done"
    from fastjem.curves import read_metrics

    assert [e["iter"] for e in read_metrics(run).evals if "test_acc" in e] == [2]  # the curves' test marker
    assert main(["runs", str(tmp_path)]) == 0


def test_a_stopped_run_exits_with_the_signals_status_and_a_time_limit_with_0():
    """128 + the signal's number, as a shell reports it (the SIGTERM case runs end to end in test_guard); the time
    limit the user asked for is a normal end."""
    from fastjem.cli import stopped_status

    assert stopped_status("SIGINT") == 130 and stopped_status("SIGTERM") == 143
    assert stopped_status(None) == 130  # another rank's signal
    assert stopped_status("time limit") == 0


def test_fastjem_warnings_are_one_line_and_others_keep_their_form(tmp_path, capsys):
    """A warning of fastjem's own (here: an image folder of one class) reads like its errors, one line without the
    library's file and line; a warning from elsewhere keeps Python's form, and main() leaves the hook as it was."""
    import warnings

    import numpy as np
    from PIL import Image

    (tmp_path / "imgs" / "cats").mkdir(parents=True)
    for i in range(8):
        Image.fromarray(np.full((8, 8, 3), 30 * i, np.uint8)).save(tmp_path / "imgs" / "cats" / f"{i}.png")
    before = warnings.showwarning
    assert main(["train", *TINY, "--iters", "2", "--dataset", "imagefolder", "--data-dir", str(tmp_path / "imgs"),
                 "--out-dir", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    assert f"fastjem: warning: image folder {tmp_path / 'imgs'} has one class ('cats')" in err
    assert "UserWarning" not in err and "data.py" not in err
    assert warnings.showwarning is before
    from fastjem.cli import _one_line_warnings

    shown = []
    _one_line_warnings(lambda *a: shown.append(a))("other", DeprecationWarning, "x.py", 3)
    assert shown == [("other", DeprecationWarning, "x.py", 3, None, None)]


def test_no_saved_file_is_replaced_unasked(tmp_path, capsys):
    """Each of these replaced or rewrote a file a run had saved, exit 0: bench --out over a checkpoint (JSON in
    its place), sample over the PNG beside its --out, a new run over another run's best.pt and kept checkpoints,
    a resume into another run's metrics.jsonl."""
    import shutil

    run = tmp_path / "run"
    assert main(["train", *TINY, "--iters", "4", "--eval-every", "2", "--ckpt-every", "2", "--ckpt-keep-every", "2",
                 "--out-dir", str(run)]) == 0
    saved = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    bench = ["bench", "--arch", "convnet", "--width", "8", "--image-size", "8", "--channels", "1", "--sgld-steps",
             "1", "--batch-size", "2", "--seconds", "0.1", "--device", "cpu"]
    sample = ["sample", str(run), "--n", "2", "--n-steps", "1", "--device", "cpu", "--no-progress"]
    (tmp_path / "mine.png").write_bytes(b"precious")
    keep = tmp_path / "keep"
    keep.mkdir()
    shutil.copy(run / "best.pt", keep)
    shutil.copytree(run / "checkpoints", keep / "checkpoints")
    records = tmp_path / "records"
    records.mkdir()
    shutil.copy(run / "metrics.jsonl", records)
    for args, message in (
            ([*bench, "--out", str(run / "checkpoint.pt")],
             f"--out {run / 'checkpoint.pt'}: a name ending in .json is needed; give e.g. --out "
             f"{run / 'checkpoint.json'}"),
            ([*bench, "--out", str(run / "config.json")], "exists: pass --force"),
            ([*bench, "--out", str(tmp_path), "--force"], f"{tmp_path} is a folder: give --out a file's name"),
            ([*bench, "--batch-size", "2", "4", "--plot", str(run / "samples.png")],
             "exists: pass --force to replace it, or give --plot another file"),
            ([*sample, "--out", str(tmp_path / "mine.npz")], "mine.png exists: pass --force"),
            (["train", *TINY, "--iters", "2", "--out-dir", str(keep)], "holds another run's best.pt, checkpoints"),
            (["train", *TINY, "--resume", str(run / "checkpoints" / "iter_0000002.pt"), "--out-dir", str(records)],
             "holds another run's metrics.jsonl")):
        assert main(args) == 1, args
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, (args, err)
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == saved
    assert (tmp_path / "mine.png").read_bytes() == b"precious"
    assert (keep / "best.pt").read_bytes() == saved[run / "best.pt"]
    assert (records / "metrics.jsonl").read_bytes() == saved[run / "metrics.jsonl"]


def test_non_finite_values_are_refused_where_they_were_taken(tmp_path, capsys):
    """Accepted before, and computed with (noise -1 as none, NaN samples, a NaN epsilon, a schedule that never
    decays, written as NaN into config.json)."""
    run = tmp_path / "run"
    assert main(["train", *TINY, "--iters", "2", "--out-dir", str(run)]) == 0
    for args, message in (
            (["eval", str(run), "accuracy", "--test-noise", "-1"], "--test-noise must be a finite number >= 0"),
            (["eval", str(run), "accuracy", "--test-noise", "nan"], "--test-noise must be a finite number >= 0"),
            (["eval", str(run), "calibration", "--bins", "100000000"], "--bins must be between 1 and 1000"),
            (["eval", str(run), "robustness", "--linf-eps", "nan"], "epsilons must be finite numbers >= 0"),
            (["eval", str(run), "robustness", "--linf-eps", "0", "-8"], "; got --linf-eps -8/255"),
            (["sample", str(run), "--noise", "inf", "--out", str(tmp_path / "s.npz")], "must be finite numbers >= 0"),
            (["sample", str(run), "--step-size", "nan", "--out", str(tmp_path / "s.npz")], "must be finite numbers"),
            (["train", *TINY, "--iters", "2", "--decay-epochs", "nan", "--out-dir", str(tmp_path / "q")],
             "--decay-epochs must be finite numbers >= 0")):
        assert main([*args, "--device", "cpu"] if args[0] != "train" else args) == 1, args
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, (args, err)
    assert not (tmp_path / "s.npz").exists() and not (tmp_path / "q" / "config.json").exists()


def test_config_options_that_were_quietly_overridden(tmp_path, capsys):
    """--classifier-only set an explicit --px-weight 1 to 0 without a word; a config file of {"preset": "paper"}
    took the quick preset's values under the paper's name."""
    import json

    assert main(["train", "--classifier-only", "--px-weight", "1", "--print-config"]) == 1
    assert "--classifier-only trains without the generative terms" in capsys.readouterr().err
    assert main(["train", "--classifier-only", "--px-weight", "0", "--print-config"]) == 0  # no conflict
    capsys.readouterr()
    (tmp_path / "p.json").write_text(json.dumps({"preset": "paper", "seed": 4}))
    assert main(["train", "--config", str(tmp_path / "p.json"), "--print-config"]) == 0
    cfg = json.loads(capsys.readouterr().out)
    assert cfg["preset"] == "paper" and cfg["arch"] == "wrn" and cfg["lr"] == 1e-4 and cfg["seed"] == 4
    assert main(["train", "--config", str(tmp_path / "p.json"), "--preset", "quick", "--print-config"]) == 0
    cfg = json.loads(capsys.readouterr().out)  # --preset given: its values and name, the file's seed
    assert (cfg["preset"], cfg["arch"], cfg["seed"]) == ("quick", "convnet", 4)
    # a misspelt preset in a file trained the quick preset's values under that name without a word
    (tmp_path / "typo.json").write_text(json.dumps({"preset": "Paper", "seed": 4}))
    for cmd in (["train", "--print-config"], ["sweep", "--grid", "lr=0.1,0.2", "--dry-run"]):
        assert main([*cmd, "--config", str(tmp_path / "typo.json")]) == 1
        assert (f"--config {tmp_path / 'typo.json'}: preset 'Paper' is no preset, and the options the file leaves "
                "out would come from the quick one: give one of quick, paper (or custom") in capsys.readouterr().err
    (tmp_path / "custom.json").write_text(json.dumps({"preset": "custom", "seed": 4}))  # a Trainer's own config.json
    assert main(["train", "--config", str(tmp_path / "custom.json"), "--print-config"]) == 0
    assert json.loads(capsys.readouterr().out)["preset"] == "custom"
    # a whole config.json of a run made in Python under a name of its own is taken as it is
    whole = {**dataclasses.asdict(TrainConfig(preset="mine", seed=4)), "decay_epochs": [50, 100], "remedies": ["lr"]}
    (tmp_path / "whole.json").write_text(json.dumps(whole))
    assert main(["train", "--config", str(tmp_path / "whole.json"), "--print-config"]) == 0
    cfg = json.loads(capsys.readouterr().out)
    assert (cfg["preset"], cfg["arch"], cfg["seed"]) == ("mine", "wrn", 4)


def test_a_config_file_of_epochs_alone_is_not_overridden_by_the_presets_iters(tmp_path, capsys):
    """A file setting epochs but not iters kept the quick preset's --iters 800, which overrides --epochs: the run
    trained 800 iterations whatever the file said. Refused, as --epochs beside that preset is; the file's or the
    command line's iters (-1: train for the epochs) settles it."""
    import json

    (tmp_path / "e.json").write_text(json.dumps({"epochs": 2.0}))
    assert main(["train", "--config", str(tmp_path / "e.json"), "--print-config"]) == 1
    err = capsys.readouterr().err
    assert "sets epochs 2 but not iters" in err and "--iters 800 (the quick preset's)" in err and '"iters": -1' in err
    assert main(["train", "--config", str(tmp_path / "e.json"), "--iters", "-1", "--print-config"]) == 0
    assert json.loads(capsys.readouterr().out)["epochs"] == 2.0
    (tmp_path / "both.json").write_text(json.dumps({"epochs": 2.0, "iters": -1}))
    assert main(["train", "--config", str(tmp_path / "both.json"), "--print-config"]) == 0
    assert json.loads(capsys.readouterr().out)["iters"] == -1
    (tmp_path / "paper.json").write_text(json.dumps({"epochs": 2.0, "preset": "paper"}))  # a length in epochs
    assert main(["train", "--config", str(tmp_path / "paper.json"), "--print-config"]) == 0
    capsys.readouterr()


def test_a_batch_past_the_free_memory_is_refused_before_training(tmp_path, capsys, monkeypatch):
    """--batch-size 999999999 on digits warned that the batch was larger than the data, then drew it (Linux
    overcommits): the process swapped for minutes or was killed without a word. An iteration's three fp32 batches
    that cannot fit are now refused before anything is drawn, naming --batch-size and how many would fit."""
    import fastjem.memory

    row = 3 * 64 * 4  # x_p, x_lab and the chains, 1x8x8 fp32
    monkeypatch.setattr(fastjem.memory, "_meminfo", lambda: {"MemAvailable": 1000 * row - 1, "SwapFree": 0})
    monkeypatch.setattr(fastjem.memory, "PROC_CGROUP", fastjem.memory.Path("/nonexistent/cgroup"))
    t = time.time()
    assert main(["train", *TINY, "--iters", "1", "--warmup-iters", "0", "--batch-size", "1000", "--out-dir",
                 str(tmp_path / "big")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fastjem: error: an iteration's batches (3 x 1000 images of 1x8x8, fp32, before the "
                          "network's activations) takes 750.0 KiB on cpu"), err
    assert "give a smaller --batch-size (at most 999 fit" in err
    assert not (tmp_path / "big" / "checkpoint.pt").exists()
    monkeypatch.undo()
    assert main(["train", *TINY, "--iters", "1", "--warmup-iters", "0", "--batch-size", "999999999", "--out-dir",
                 str(tmp_path / "huge")]) == 1
    assert "give a smaller --batch-size" in capsys.readouterr().err
    assert time.time() - t < 60


def test_numbers_beyond_64_bits_and_runs_beyond_memory_get_one_line(tmp_path, capsys, monkeypatch):
    """A seed or size above 2^63 ended in a C++ 'Overflow when unpacking long long' traceback; a size the machine
    cannot hold in torch's allocator traceback. Other runtime errors keep theirs (a bug must show where)."""
    from fastjem.train import Trainer

    for args in (["train", "--seed", "99999999999999999999"], ["eval", "x", "accuracy", "--n-test", str(2**63)],
                 ["sample", "x", "--n", str(2**64)], ["sweep", "--grid", "sgld-steps=1", "--seeds", str(2**70)]):
        with pytest.raises(SystemExit):
            main(args)
        assert "is too large (at most 9223372036854775807)" in capsys.readouterr().err, args
    from fastjem.cli import int64

    assert int64(str(2**63 - 1)) == 2**63 - 1 and int64(str(-(2**63))) == -(2**63)  # the whole int64 range
    with pytest.raises(SystemExit):
        main(["train", "--seed", str(-(2**63) - 1)])
    assert "is too small (at least -9223372036854775808)" in capsys.readouterr().err

    # a batch of a size beyond 64 bits of bytes is refused before it is drawn, naming its option
    assert main(["train", *TINY, "--iters", "2", "--warmup-iters", "0", "--batch-size", str(2**62), "--out-dir",
                 str(tmp_path / "huge")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fastjem: error: an iteration's batches (3 x 4611686018427387904 images of 1x8x8"), err
    assert "give a smaller --batch-size" in err
    # a buffer of that size is refused before it is allocated, naming its option
    assert main(["train", *TINY, "--iters", "2", "--buffer-size", str(2**62), "--out-dir", str(tmp_path / "big")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fastjem: error: the replay buffer (4611686018427387904 chains of 1x8x8, fp32) takes"), err
    assert "give a smaller --buffer-size" in err

    def fit(self):
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't allocate memory: you "
                           "tried to allocate 25600000000000 bytes")

    monkeypatch.setattr(Trainer, "fit", fit)
    assert main(["train", *TINY, "--iters", "2", "--out-dir", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fastjem: error: out of memory: [enforce fail") and "--buffer-size" in err

    import torch

    def overflow(self):  # a size past 64 bits of bytes that no up-front check caught: torch's own words
        torch.empty(2**62, 64)

    monkeypatch.setattr(Trainer, "fit", overflow)
    assert main(["train", *TINY, "--iters", "2", "--out-dir", str(tmp_path / "run3")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fastjem: error: out of memory: Storage size calculation overflowed"), err
    assert "make the run smaller (--batch-size, --buffer-size" in err

    def bug(self):
        raise RuntimeError("bug")

    monkeypatch.setattr(Trainer, "fit", bug)
    with pytest.raises(RuntimeError, match="bug"):
        main(["train", *TINY, "--iters", "2", "--out-dir", str(tmp_path / "run2")])


def test_a_config_files_nan_and_a_run_without_records_are_named(tmp_path, capsys):
    import json

    (tmp_path / "c.json").write_text(json.dumps({"lr": float("nan")}))
    assert main(["train", "--config", str(tmp_path / "c.json"), "--print-config"]) == 1
    assert f"--config {tmp_path / 'c.json'}: lr must be a finite number, got nan" in capsys.readouterr().err
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}")  # stopped before its first log line
    assert main(["plot", str(run)]) == 1
    assert f"{run} has no records yet (no metrics.jsonl)" in capsys.readouterr().err


@pytest.mark.parametrize("args,match", [
    (["convert", "{tmp}/run/checkpoint.pt", "--dataset", "cifar10"], "--dataset describe(s) an authors' checkpoint"),
    (["runs", "{tmp}", "--json", "--format", "csv"], "--json is --format json: it cannot be given with --format csv"),
    (["runs", "{tmp}", "--combinations"], "--combinations takes sweep folders"),
    (["data", "--image-size", "-1"], "--image-size must be >= 0"),
    # a folder given without its --dataset: the built-in digits were described instead, the folder never read
    (["data", "--data-dir", "{tmp}/a"], "--data-dir: --dataset digits is scikit-learn's, built in, and reads no files"),
    (["data", "--download", "--grid", "{tmp}/g.png"], "--download: --dataset digits is scikit-learn's, built in"),
    (["bench", "--sgld-steps", "0"], "--sgld-steps must be > 0"),
    (["bench", "--batch-size", "8", "0", "--out", "{tmp}/new/r.json"], "--batch-size must be > 0"),
    (["bench", "--image-size", "0", "--out", "{tmp}/new/r.json"], "--image-size must be > 0"),
    (["bench", "--seconds", "0"], "--seconds must be a finite number > 0, got 0.0"),
    (["bench", "--seconds", "inf"], "--seconds must be a finite number > 0, got inf"),
    (["bench", "--precision", "fp32", "bf16", "fp32"], "--precision lists a precision twice: fp32 bf16 fp32"),
    (["train", "--resume", "{tmp}/run/checkpoint.pt", "--preset", "paper"], "--preset starts a new run"),
    (["sweep", "--grid", "lr=1e-3,2e-3", "--resume", "{tmp}/run/checkpoint.pt"], "fastjem sweep continues itself"),
    (["sweep", "--grid", "lr=1e-3,2e-3", "--print-config"], "fastjem sweep continues itself"),
    (["sweep", "--grid", "lr=1e-3,2e-3", "--seed", "3"], "a sweep takes its seeds from --seeds, not --seed"),
    (["plot", "{tmp}/a", "{tmp}/b", "--mean"], "--mean takes one sweep folder"),
    (["plot", "{tmp}/a", "{tmp}/b"], "several runs go into one figure: pass --out FILE.png"),
    # an option given that the run never reads (--epochs beside the quick preset's --iters trained 800 iterations)
    (["train", "--epochs", "5", "--print-config"], "--epochs 5: this run's length is --iters 800 (the quick "
                                                    "preset's), which overrides --epochs; add --iters -1"),
    (["train", "--iters", "10", "--epochs", "5", "--print-config"], "--epochs 5: this run's length is --iters 10, "),
    # given at the value it has anyway, it is no less unread
    (["train", "--epochs", "150", "--print-config"], "--epochs 150: this run's length is --iters 800"),
    (["train", "--data-dir", "{tmp}/a", "--download", "--print-config"], ", --download: --dataset digits is "
                                                                         "scikit-learn's, built in"),
    (["train", "--val-size", "0", "--eval-every", "5", "--print-config"], "--eval-every 5: --val-size 0 holds no"),
    (["sweep", "--grid", "sgld-steps=1,2", "--classifier-only", "--dry-run", "--out-dir", "{tmp}/s"],
     "--sgld-steps: this run never samples"),  # every combination would train alike
    # values that broke the run (a traceback at the first sampler for the seed) or made it meaningless
    (["train", "--seed", str(2**63 - 1), "--print-config"], "--seed must be between -1099511627775 and 1099511627775"),
    (["train", "--lr", "1e3", "--print-config"], "--lr must be at most 10, got 1000"),
    (["train", "--sgld-steps", "0", "--print-config"], "--sgld-steps 0 never moves the chains"),
])
def test_command_line_mistakes_are_refused_before_any_work(args, match, tmp_path, capsys):
    """Each command's own refusals: one line saying what to give, exit status 1, nothing written or trained."""
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        (tmp_path / run / "metrics.jsonl").write_text(json.dumps({"iter": 2, "loss": 1.0}) + "\n")
    before = sorted(tmp_path.rglob("*"))
    code = main([a.replace("{tmp}", str(tmp_path)) for a in args])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("fastjem: error:") and match in err, err
    assert "Traceback" not in err and sorted(tmp_path.rglob("*")) == before


def test_options_the_run_reads_or_given_at_their_value_are_taken(tmp_path, capsys):
    """The other side of the refusals of options never read: each is taken where a run (or some runs of a sweep)
    reads it, or where it changes nothing."""
    for args in (["train", "--classifier-only", "--sgld-steps", "20", "--print-config"],  # the preset's own value
                 ["train", "--epochs", "5", "--iters", "-1", "--print-config"],
                 ["train", "--preset", "paper", "--val-size", "0", "--print-config"],  # the preset's --eval-every
                 ["train", "--dataset", "imagefolder", "--data-dir", str(tmp_path), "--print-config"],
                 ["sweep", "--grid", "pxy-weight=0,1", "--px-weight", "0", "--sgld-steps", "5", "--dry-run",
                  "--out-dir", str(tmp_path / "s")],  # the pxy-weight 1 runs sample
                 ["sweep", "--grid", "iters=-1,10", "--epochs", "3", "--dry-run", "--out-dir", str(tmp_path / "t")]):
        assert main(args) == 0, (args, capsys.readouterr().err)
        assert "warning" not in capsys.readouterr().err, args
    # a classifier-only run's sampler options are said, not refused: the same options with --classifier-only is how
    # the baseline of a JEM is made
    for args, unread in ((["--classifier-only", "--sgld-steps", "5", "--buffer-size", "7"], "--sgld-steps 5, "
                          "--buffer-size 7: this run never samples"),
                         (["--px-weight", "0", "--reinit-prob", "0.5"], "--reinit-prob 0.5: this run never samples")):
        assert main(["train", *args, "--print-config"]) == 0
        assert capsys.readouterr().err.startswith(f"fastjem: warning: {unread} (it trains the classifier alone")


def test_under_torchrun_a_run_needs_one_folder_for_every_process(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.chdir(tmp_path)
    assert main(["train", *TINY]) == 1
    assert "under torchrun every process must write to the same folder: pass --out-dir" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_a_sweep_under_torchrun_is_refused_before_it_touches_its_folder(tmp_path, capsys, monkeypatch):
    """Each of torchrun's processes ran the whole sweep: one took the folder's lock and the others were told that
    another fastjem sweep was using it (their own sibling), then torchrun ended the first."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--grid", "lr=1e-3,2e-3", *TINY, "--out-dir", "sw"]) == 1
    err = capsys.readouterr().err
    assert "under torchrun (WORLD_SIZE=2) each of the 2 processes would run the whole sweep: start it without " \
           "torchrun" in err, err
    assert not any(tmp_path.iterdir())
    monkeypatch.delenv("RANK")  # WORLD_SIZE set by hand or left by another tool: no torchrun, as fastjem train reads it
    assert main(["sweep", "--grid", "lr=1e-3,2e-3", *TINY, "--out-dir", "sw", "--dry-run"]) == 0


def test_bench_prints_and_plots_what_it_measured(tmp_path, drawn, capsys):
    """print_result's lines and the scaling table's heading; the scaling figure: chains/s and ms per step against
    the batch size on a log-2 axis ticked at the sizes run, from 0 up, one line per precision (a legend when there
    are several), titled with the model and device; write_result makes its folder and returns the file."""
    import json

    from fastjem import benchmark

    def result(b, precision, ms):
        return {"model": "WRN-10-1", "batch_size": b, "sgld_steps": 2, "input": [3, 8, 8], "device": "cpu X",
                "engine": "precision fp32, eager", "engine_notes": ["no CUDA device"], "warmup_s": 1.5,
                "sgld_call_ms": 2 * ms, "windows": 5, "sgld_call_ms_min": 2 * ms - 0.5,
                "sgld_call_ms_max": 2 * ms + 0.5, "sgld_step_ms": ms, "flops_per_step": 3e9, "tflop_per_s": 0.5,
                "chains_per_s": b / (2 * ms) * 1e3, "precision": precision, "precision_requested": precision}

    rs = [result(2, "fp32", 1.0), result(8, "fp32", 2.0), result(2, "bf16", 0.5), result(8, "bf16", 1.5)]
    benchmark.print_result(rs[0])
    benchmark.print_scaling(rs)
    out = capsys.readouterr().out
    for line in ("fastjem bench: WRN-10-1, batch 2, 2 SGLD steps, input 3x8x8, on cpu X\n",
                 "  engine          precision fp32, eager\n", "                  (no CUDA device)\n",
                 "  warm-up         1.5 s (compilation, autotuning, graph capture)\n",
                 "  SGLD call       2.00 ms (median of 5 windows, 1.50-2.50)\n",
                 "  per step        1.000 ms, 3.0 GFLOP -> 0.50 TFLOP/s\n",
                 "  throughput      1000.0 chains/s advanced by 2 steps\n", "\nWRN-10-1, 2 SGLD steps, on cpu X:\n"):
        assert line in out, line
    figures = drawn
    benchmark.plot_batch_scaling(rs, tmp_path / "s.png")
    benchmark.plot_batch_scaling(rs[:2], tmp_path / "one.png")
    ax1, ax2 = figures[0].axes
    assert [line.get_label() for line in ax1.lines] == ["fp32", "bf16"] == [line.get_label() for line in ax2.lines]
    assert list(ax1.lines[0].get_xdata()) == [2, 8] and list(ax1.lines[0].get_ydata()) == [1000.0, 2000.0]
    assert list(ax2.lines[1].get_ydata()) == [0.5, 1.5]
    assert (ax1.get_title(), ax1.get_ylabel()) == ("throughput", "chains/s advanced by 2 steps")
    assert (ax2.get_title(), ax2.get_ylabel()) == ("step time", "ms per SGLD step")
    for ax in (ax1, ax2):
        assert ax.get_xscale() == "log" and list(ax.get_xticks()) == [2, 8] and ax.get_ylim()[0] == 0
        assert [t.get_text() for t in ax.get_xticklabels()] == ["2", "8"]
        assert ax.get_xlabel() == "batch size (chains)"
    assert [t.get_text() for t in ax1.get_legend().get_texts()] == ["fp32", "bf16"]
    assert figures[0]._suptitle.get_text() == "fastjem bench: WRN-10-1 on cpu X (precisions fp32, bf16)"
    assert figures[1].axes[0].get_legend() is None
    assert figures[1]._suptitle.get_text() == "fastjem bench: WRN-10-1 on cpu X (precision fp32, eager)"
    written = benchmark.write_result(rs, str(tmp_path / "new" / "dir" / "r.json"))
    assert written == tmp_path / "new" / "dir" / "r.json" and json.loads(written.read_text()) == rs


def test_bench_tables_give_each_runs_cost_per_chain_and_speed_against_the_first_precision(capsys):
    """The scaling table's numbers (ms/step/chain = ms/step / batch), and the precision comparison's: each
    precision's speed as the first one's step time over its own, "fastest" on the one of least step time; a
    precision auto resolved is named as asked and as run."""
    from fastjem import benchmark

    def result(b, asked, precision, ms):
        return {"model": "WRN-10-1", "batch_size": b, "sgld_steps": 2, "device": "cpu X", "sgld_step_ms": ms,
                "chains_per_s": b / (2 * ms) * 1e3, "tflop_per_s": 0.25 * b, "precision": precision,
                "precision_requested": asked}

    rs = [result(4, "auto", "fp32", 2.0), result(8, "auto", "fp32", 3.0), result(4, "bf16", "bf16", 0.5),
          result(8, "bf16", "bf16", 4.0)]
    benchmark.print_scaling(rs)
    rows = capsys.readouterr().out.splitlines()[3:]
    assert [row.split() for row in rows] == [
        ["auto", "->", "fp32", "4", "2.000", "0.5000", "1000.0", "1.00"],
        ["auto", "->", "fp32", "8", "3.000", "0.3750", "1333.3", "2.00"],
        ["bf16", "4", "0.500", "0.1250", "4000.0", "1.00"], ["bf16", "8", "4.000", "0.5000", "1000.0", "2.00"]]
    benchmark.print_precisions(rs)
    out = capsys.readouterr().out
    assert [line.split() for line in out.splitlines() if line.startswith("  ")] == [
        ["auto", "->", "fp32", "2.000", "ms/step", "x1.00"], ["bf16", "0.500", "ms/step", "x4.00", "fastest"],
        ["auto", "->", "fp32", "3.000", "ms/step", "x1.00", "fastest"], ["bf16", "4.000", "ms/step", "x0.75"]]
    assert "precision at batch 4 (speed against auto -> fp32):" in out and "precision at batch 8 (" in out


# every argument that names a file or folder, as (command line before it, the argument, command line after it)
PATH_ARGUMENTS = [
    *((cmd, flag, extra) for cmd, extra in (("train", []), ("sweep", ["--grid", "lr=1e-3,2e-3"]))
      for flag in ("--resume", "--config", "--data-dir", "--init-weights", "--out-dir")),
    ("eval", "checkpoint", ["accuracy"]),
    *(("eval x accuracy", flag, []) for flag in ("--out-dir", "--data-dir", "--compare", "--ood-data-dir",
                                                  "--inception-weights")),
    ("sample", "checkpoint", []), *(("sample x", flag, []) for flag in ("--data-dir", "--out")),
    ("plot", "RUN", []), ("plot x", "--out", []), ("bench", "--out", []), ("bench", "--plot", []),
    ("data", "--data-dir", []), ("data", "--grid", []), ("runs", "RUN", []),
    ("export", "checkpoint", []), ("export x", "--out", []),
    ("convert", "checkpoint", []), *(("convert x", flag, []) for flag in ("--out", "--data-dir")),
]


@pytest.mark.parametrize("before,argument,after", PATH_ARGUMENTS, ids=lambda v: v if isinstance(v, str) else "")
def test_an_empty_path_is_refused_by_the_parser_naming_its_argument(tmp_path, monkeypatch, capsys, before, argument,
                                                                     after):
    """'' (an unset shell variable: --out-dir "$DIR") was the current folder (a run folder, an eval's output), or the
    option not given at all (--config, --resume: a new run from the preset), without a word."""
    monkeypatch.chdir(tmp_path)
    given = [""] if argument.isupper() or argument == "checkpoint" else [argument, ""]
    with pytest.raises(SystemExit) as exit_:
        main([*before.split(), *given, *after])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and f"argument {argument}: an empty path ('', an unset shell variable?)" in err, err
    if given == [""]:  # a positional has no default to drop to
        assert "give its path ('.' for the current folder)" in err and "drop" not in err, err
    else:
        assert f"give a path, or drop {argument} for its default" in err, err
    assert not any(tmp_path.iterdir())


def test_every_file_and_folder_argument_refuses_an_empty_path():
    """A file or folder argument added to a command without PathArgument would take '' again."""
    import argparse

    from fastjem.cli import PathArgument, build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    paths = {(cmd, a.option_strings[0] if a.option_strings else a.metavar or a.dest)
             for cmd, sub in commands.items() for a in sub._actions if type(a) is PathArgument}
    assert paths == {(before.split()[0], argument) for before, argument, _ in PATH_ARGUMENTS}
    # the other free-text arguments name no file: a task, class names, remedies; OOD sets and a feature model's spec
    # refuse '' too (NameArgument)
    free = {(cmd, a.dest) for cmd, sub in commands.items() for a in sub._actions
            if type(a) is argparse._StoreAction and a.type in (None, str) and not a.choices}
    assert free == {("train", "remedies"), ("sweep", "remedies"), ("eval", "task"), ("sample", "classes")}


@pytest.mark.parametrize("task,given,message", [
    ("ood", ["--ood", ""], "argument --ood: an empty name ('', an unset shell variable?) names no OOD set: give "
                           "uniform, constant, interp, svhn, cifar10, cifar100, digits, all or a folder of images, or "
                           "drop --ood for the default (uniform constant interp)"),
    ("ood", ["--ood", "uniform", ""], "argument --ood: an empty name"),
    ("fid", ["--features-model", ""], "argument --features-model: an empty name ('', an unset shell variable?) names "
                                      "no feature model: give 'classifier', a torch.export or TorchScript file, or "
                                      "'module.path:name' (or --inception-weights PATH instead)"),
], ids=["ood", "ood-second", "features-model"])
def test_an_empty_ood_set_or_feature_model_is_refused_naming_the_option(tmp_path, monkeypatch, capsys, task, given,
                                                                         message):
    """--ood '' (an unset shell variable: --ood "$SET") scored the current folder's images as an OOD set without a
    word, and --features-model '' failed only once the checkpoint was loaded: both are refused by the parser, the
    option named, before anything is read or written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.png").write_bytes(b"")  # a folder an OOD set '' would read
    with pytest.raises(SystemExit) as exit_:
        main(["eval", "missing.pt", task, *given])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err, err
    assert [p.name for p in tmp_path.iterdir()] == ["a.png"]


def test_a_decay_rate_of_0_says_how_to_train_without_decay(capsys, tmp_path):
    """--decay-rate 0 with a decay inside the run is refused (the learning rate 0 from there on), saying how to train
    without decay (leaving --decay-epochs out keeps the preset's epochs); with every decay past the run's end (the
    quick preset's epochs 30 and 38 beside --iters 100) no decay happens, and the run is taken."""
    # the quick preset's 19 iterations an epoch: epoch 0.1 decays from iteration 2 on
    assert main(["train", "--decay-rate", "0", "--decay-epochs", "0.1", "--iters", "3", "--out-dir",
                 str(tmp_path / "a"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert ("--decay-rate 0 sets the learning rate to 0 after iteration 2 (epoch 0.1 of --decay-epochs), inside this "
            "run of 3 iterations: give a rate > 0 (the paper's is 0.3), or, for no decay, --decay-epochs with no "
            "epoch after it, or --iters 2 at most") in err, err
    assert not (tmp_path / "a").exists()
    # each advice, taken: the options it names are accepted as written
    assert main(["train", "--decay-rate", "0", "--decay-epochs", "--print-config"]) == 0
    assert json.loads(capsys.readouterr().out)["decay_epochs"] == []
    assert main(["train", "--decay-rate", "0", "--iters", "100", "--print-config"]) == 0


@pytest.mark.parametrize("command", [["sample"], ["export"], ["eval", "{run}", "accuracy"]])
def test_a_run_still_training_before_its_first_checkpoint_is_said_to_train(tmp_path, capsys, command):
    """sample / export / eval on a run that trains in another process and has no checkpoint yet: still training."""
    import fcntl

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}")
    argv = [a.format(run=run) for a in command] if len(command) > 1 else [*command, str(run)]
    with open(run / ".lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 12345")
        held.flush()
        assert main(argv) == 1
        assert "still training (pid 12345)" in capsys.readouterr().err
    assert main(argv) == 1
    assert f"{run} is a folder without checkpoint.pt in it" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["sample", "export"])
def test_a_folder_of_checkpoints_or_of_runs_given_for_a_checkpoint_says_what_to_give(tmp_path, capsys, command):
    """A run's checkpoints/ or a folder of runs where one checkpoint is wanted: the error names a file or run to
    give, the newest checkpoint (by name, iteration order) or the first run; a folder of neither says no more."""
    keep = tmp_path / "run" / "checkpoints"
    keep.mkdir(parents=True)
    for name in ("iter_0000100.pt", "iter_0000200.pt"):
        (keep / name).write_bytes(b"")
    assert main([command, str(keep)]) == 1
    assert f"give one of its checkpoint files, e.g. {keep / 'iter_0000200.pt'}" in capsys.readouterr().err
    sweep = tmp_path / "sweep"
    for name in ("a", "b"):
        (sweep / name).mkdir(parents=True)
        (sweep / name / "checkpoint.pt").write_bytes(b"")
    assert main([command, str(sweep)]) == 1
    assert f"it holds runs (a, b): give one, e.g. {sweep / 'a'}" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main([command, str(tmp_path / "empty")]) == 1
    assert capsys.readouterr().err.strip().endswith("is a folder without checkpoint.pt in it")

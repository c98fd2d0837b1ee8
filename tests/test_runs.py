"""fastjem runs: a table of run folders, from what each run wrote."""

import json
import statistics

import pytest

from fastjem.cli import main
from fastjem.curves import read_metrics
from fastjem.errors import ConfigError
from fastjem.runs import find_runs, run_row, sort_rows
from fastjem.train import Trainer


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_config_module):
    root = tmp_path_factory.mktemp("runs")
    cfg = tiny_config_module.replace(iters=12, log_every=3, eval_every=6)
    jem = Trainer(cfg, out_dir=root / "jem", progress=False).fit()
    base = Trainer(cfg.replace(px_weight=0.0), out_dir=root / "base", progress=False).fit()
    Trainer(cfg.replace(iters=6), out_dir=root / "cut", progress=False).fit()
    (root / "cut" / "summary.json").unlink()  # as if killed before the end
    (root / "notes").mkdir()  # not a run: ignored
    return root, jem, base


def test_rows_say_what_each_run_wrote(runs):
    root, jem, base = runs
    row = run_row(root / "jem")
    assert (row["dataset"], row["model"], row["kind"], row["iteration"], row["status"]) == \
        ("digits", "ConvNet(width 8)", "JEM", 12, "done")
    assert row["test_acc"] == jem["test_acc"]
    assert row["best"] == f"{jem['best']['iter']}: {jem['best']['val_acc']:.4f} / {jem['best']['test_acc']:.4f}"
    windows = [r["it_per_s"] for r in read_metrics(root / "jem").train]
    assert len(windows) == 4 and row["it_per_s"] == statistics.median(windows[1:])  # first window: warm-up
    assert run_row(root / "base")["kind"] == "classifier" and run_row(root / "base")["test_acc"] == base["test_acc"]
    cut = run_row(root / "cut")
    assert cut["status"] == "stopped (6/6)" and cut["test_acc"] is None and cut["iteration"] == 6
    assert (row["resumes_at"], cut["resumes_at"]) == (None, 6)  # done; stopped: where a resume continues
    assert (cut["model"], cut["kind"]) == ("ConvNet(width 8)", "JEM")  # from its config, with no summary.json


def test_a_run_whose_summary_cannot_be_read_says_so(runs, tmp_path):
    """A finished run's summary.json damaged: listed as 'stopped (12/12)' it read as a run to resume."""
    import shutil

    root, _, _ = runs
    shutil.copytree(root / "jem", tmp_path / "jem")
    (tmp_path / "jem" / "summary.json").write_text('{"iteration": 12, "test_')
    row = run_row(tmp_path / "jem")
    assert row["status"] == "summary.json unreadable" and row["test_acc"] is None and row["iteration"] == 12
    # JSON that is no object (a list, a number) says as little as a torn file, and breaks no table
    (tmp_path / "jem" / "summary.json").write_text("[12]")
    (tmp_path / "jem" / "config.json").write_text("[]")
    row = run_row(tmp_path / "jem")
    assert row["status"] == "summary.json unreadable" and (row["dataset"], row["model"]) == (None, None)
    # hand-edited fields of another type: the run's summary is not trusted, and the table is still drawn (a TypeError
    # failed it)
    shutil.copy(root / "jem" / "config.json", tmp_path / "jem" / "config.json")
    summary = json.loads((root / "jem" / "summary.json").read_text())
    for edit in ({"iteration": "12"}, {"iteration": True}, {"test_acc": "0.9"}, {"best": {"iter": 6, "val_acc": "x"}},
                 {"best": [6]}):
        (tmp_path / "jem" / "summary.json").write_text(json.dumps({**summary, **edit}))
        row = run_row(tmp_path / "jem")
        assert row["status"] == "summary.json unreadable" and row["test_acc"] is None, edit
        assert main(["runs", str(tmp_path)]) == 0
    config = json.loads((root / "jem" / "config.json").read_text())
    (tmp_path / "jem" / "summary.json").unlink()
    (tmp_path / "jem" / "config.json").write_text(json.dumps({**config, "iters": "12"}))
    assert run_row(tmp_path / "jem")["status"].startswith("stopped")  # a length of another type is no length


def test_a_finished_runs_iteration_is_its_summarys(runs, tmp_path):
    """A finished run whose checkpoint was deleted (to free the disk) and whose log ends before its last iteration
    is listed at the iteration it finished at, not its last log line's."""
    import shutil

    root, jem, _ = runs
    shutil.copytree(root / "jem", tmp_path / "jem")
    (tmp_path / "jem" / "checkpoint.pt").unlink()
    lines = (tmp_path / "jem" / "metrics.jsonl").read_text().splitlines()
    last = max(i for i, line in enumerate(lines) if json.loads(line).get("iter") == 12 and "it_per_s" in line)
    (tmp_path / "jem" / "metrics.jsonl").write_text("\n".join(lines[:last] + lines[last + 1:]) + "\n")
    assert read_metrics(tmp_path / "jem").train[-1]["iter"] == 9
    row = run_row(tmp_path / "jem")
    assert (row["status"], row["iteration"], row["test_acc"]) == ("done", 12, jem["test_acc"])


def test_a_run_without_its_config_says_less_not_something_wrong(runs, tmp_path):
    import shutil

    root, _, _ = runs
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(root / "jem" / "metrics.jsonl", bare / "metrics.jsonl")
    row = run_row(bare)
    assert row["model"] is None and row["kind"] is None and row["dataset"] is None
    assert row["iteration"] == 12 and row["status"] == "stopped"
    # a config.json that is no TrainConfig (an option of another version): listed the same way, with what the
    # file still says
    cfg = json.loads((root / "jem" / "config.json").read_text())
    (bare / "config.json").write_text(json.dumps({**cfg, "an_option_of_another_version": 1}))
    row = run_row(bare)
    assert row["model"] is None and row["kind"] is None and row["dataset"] == cfg["dataset"]
    assert row["iteration"] == 12 and row["status"].startswith("stopped"), row["status"]


def test_the_command_prints_a_sorted_table_and_json(runs, capsys):
    root, jem, base = runs
    assert main(["runs", str(root), "--sort", "test_acc"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["run", "dataset", "model"]
    names = [line.split()[0] for line in lines[2:]]
    first, second = ("jem", "base") if jem["test_acc"] > base["test_acc"] else ("base", "jem")  # ties: by name
    assert names == [first, second, "cut"]  # the run without a test accuracy last
    assert main(["runs", str(root / "jem"), str(root / "cut"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["run"] for r in rows] == ["cut", "jem"] and rows[1] == run_row(root / "jem")


def test_a_value_a_run_does_not_have_yet_is_a_dash_in_every_format(runs):
    """A stopped run has no test accuracy yet: '-' in its cell (a Python 'None' read as a value)."""
    import csv

    from fastjem.runs import format_table

    root, _, _ = runs
    row = run_row(root / "cut")
    assert row["test_acc"] is None
    head, cells = list(csv.reader(format_table([row], "csv").splitlines()))
    said = dict(zip(head, cells))
    assert (said["test acc"], said["run"]) == ("-", "cut")
    for fmt in ("text", "md"):
        assert "None" not in format_table([row], fmt)


def test_sorting_puts_the_best_first_and_runs_without_the_measure_last():
    rows = [{"run": "b", "test_acc": 0.5, "it_per_s": 9.0}, {"run": "a", "test_acc": None, "it_per_s": 30.0},
            {"run": "c", "test_acc": 0.9, "it_per_s": None}]
    assert [r["run"] for r in sort_rows(rows, "test_acc")] == ["c", "b", "a"]
    assert [r["run"] for r in sort_rows(rows, "it_per_s")] == ["a", "b", "c"]
    assert [r["run"] for r in sort_rows(rows, "run")] == ["a", "b", "c"]
    with pytest.raises(ConfigError, match="--sort must be one of run, .*; got 'speed'"):
        sort_rows(rows, "speed")


def test_no_runs_is_a_clear_error(tmp_path, capsys):
    assert main(["runs", str(tmp_path)]) == 1
    assert "no runs in" in capsys.readouterr().err
    assert main(["runs", str(tmp_path / "missing")]) == 1
    assert "missing does not exist" in capsys.readouterr().err
    (tmp_path / "file.txt").write_text("x")
    assert main(["runs", str(tmp_path / "file.txt")]) == 1
    assert "not a run folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse refuses the choice
        main(["runs", str(tmp_path), "--sort", "speed"])


def test_an_epoch_based_run_gives_its_length_in_epochs(runs, tmp_path):
    import shutil

    root, _, _ = runs
    shutil.copytree(root / "cut", tmp_path / "epochs")
    cfg = json.loads((tmp_path / "epochs" / "config.json").read_text())
    (tmp_path / "epochs" / "config.json").write_text(json.dumps({**cfg, "iters": -1, "epochs": 3}))
    assert run_row(tmp_path / "epochs")["status"] == "stopped (6/3 epochs)"
    (tmp_path / "epochs" / "config.json").write_text(json.dumps({**cfg, "iters": -1, "epochs": 1}))
    assert run_row(tmp_path / "epochs")["status"] == "stopped (6/1 epoch)"


def test_a_run_stopped_by_divergence_says_so(runs, tmp_path):
    """Its last recovery did not hold: the run's records end in the divergence event that stopped it (a single
    run has no diverged.txt, which only fastjem sweep writes)."""
    import shutil

    root, _, _ = runs
    shutil.copytree(root / "cut", tmp_path / "div")
    assert run_row(tmp_path / "div")["status"].startswith("stopped")
    with open(tmp_path / "div" / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"event": "divergence", "iter": 7, "reason": "loss nan", "action": "stop",
                            "recoveries": 3}) + "\n")
    assert run_row(tmp_path / "div")["status"] == "diverged"
    # a run that finished after all (a sweep's diverged run resumed to its end): done, whatever mark it left
    shutil.copytree(root / "jem", tmp_path / "ended")
    (tmp_path / "ended" / "diverged.txt").write_text("loss nan at iteration 7\n")
    assert run_row(tmp_path / "ended")["status"] == "done"


def test_runs_of_sweeps_inside_the_folder_are_listed_with_their_sweeps_name(runs, tmp_path, capsys):
    import shutil

    root, _, _ = runs
    for sweep in ("abl", "other"):  # two sweeps whose runs share names
        (tmp_path / sweep).mkdir()
        (tmp_path / sweep / "sweep.json").write_text("{}")
        (tmp_path / sweep / "config.json").write_text("{}")  # its base options kept beside it: still a sweep
        shutil.copytree(root / "jem", tmp_path / sweep / "lr=0.001+seed=1")
    shutil.copytree(root / "base", tmp_path / "single")
    assert main(["runs", str(tmp_path), "--json"]) == 0
    assert sorted(r["run"] for r in json.loads(capsys.readouterr().out)) == [
        "abl/lr=0.001+seed=1", "other/lr=0.001+seed=1", "single"]
    assert main(["runs", str(tmp_path / "abl"), "--json"]) == 0  # the sweep itself: its runs by their names
    assert [r["run"] for r in json.loads(capsys.readouterr().out)] == ["lr=0.001+seed=1"]
    from fastjem.runs import run_label

    assert run_label(str(tmp_path / "abl" / "lr=0.001+seed=1"), [str(tmp_path)]) == "abl/lr=0.001+seed=1"
    # --json is --format json: beside another --format it was one of the two, silently
    assert main(["runs", str(tmp_path), "--json", "--format", "md"]) == 1
    assert "cannot be given with --format md" in capsys.readouterr().err
    assert main(["runs", str(tmp_path), "--json", "--format", "json"]) == 0


def test_a_run_stopped_between_log_lines_shows_its_checkpoints_iteration(tiny_config, tmp_path):
    import os
    import signal

    t = Trainer(tiny_config, out_dir=tmp_path / "stopped", progress=False, log=lambda *a: None)
    step = t.train_step

    def step_then_stop():  # Ctrl-C during iteration 5; the run logs every 4
        if t.iteration == 4:
            os.kill(os.getpid(), signal.SIGINT)
        return step()

    t.train_step = step_then_stop
    assert t.fit()["iteration"] == 5
    row = run_row(tmp_path / "stopped")
    assert row["iteration"] == 5 and row["status"] == "stopped (5/12)" and row["resumes_at"] == 5
    # a process training in the folder holds its lock: running, not stopped (a kill -9 leaves no lock held)
    from fastjem.checkpoint import folder_lock

    with folder_lock(tmp_path / "stopped" / ".lock", "busy"):
        assert run_row(tmp_path / "stopped")["status"] == "running (5/12)"
    # killed hard after logging iteration 8, its checkpoint at 5: listed at 8, resumes from 5
    log = tmp_path / "stopped" / "metrics.jsonl"
    logged = log.read_text()
    last = [json.loads(line) for line in logged.splitlines() if '"it_per_s"' in line][-1]
    log.write_text(logged + json.dumps({**last, "iter": 8}) + "\n")
    row = run_row(tmp_path / "stopped")
    assert (row["iteration"], row["resumes_at"]) == (8, 5)
    log.write_text(logged)
    # a torn checkpoint (a copy cut short): the log's last iteration stands; the folder may be given as text
    (tmp_path / "stopped" / "checkpoint.pt").write_bytes(b"torn")
    assert run_row(str(tmp_path / "stopped"))["iteration"] == 4
    # started, nothing logged yet: listed at iteration 0, not left out
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "config.json").write_text(json.dumps(tiny_config.to_dict()))
    assert run_row(tmp_path / "new")["status"] == "stopped (0/12)" and find_runs([str(tmp_path)]) == [
        tmp_path / "new", tmp_path / "stopped"]


def test_a_rows_columns_are_the_runs_latest_and_its_sweep_mark(runs, tmp_path):
    """The columns read the last records (train acc, val acc, the last best.pt), count recoveries, not every event,
    and a run fastjem sweep marked diverged (diverged.txt) says so; a summary older than the records is not done."""
    import shutil

    root, _, _ = runs
    run = tmp_path / "late"
    shutil.copytree(root / "cut", run)
    lines = [{"iter": 2, "loss": 1.0, "acc": 0.25, "it_per_s": 5.0}, {"iter": 2, "val_acc": 0.3, "best": True},
             {"event": "divergence", "iter": 3, "reason": "loss nan", "action": "recover", "recoveries": 1},
             {"iter": 4, "loss": 0.5, "acc": 0.75, "it_per_s": 5.0}, {"iter": 4, "val_acc": 0.6, "best": True},
             {"event": "divergence", "iter": 5, "reason": "loss nan", "action": "recover", "recoveries": 2},
             {"iter": 6, "loss": 0.4, "acc": 0.8, "it_per_s": 5.0}, {"iter": 6, "val_acc": 0.5}]
    stop = {"event": "divergence", "iter": 7, "reason": "loss nan", "action": "stop", "recoveries": 2}
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [*lines, stop]))
    (run / "best.pt").write_bytes(b"")
    row = run_row(run)
    assert (row["train_acc"], row["val_acc"], row["best"]) == (0.8, 0.5, "4: 0.6000 / -")
    assert row["recoveries"] == 2 and row["status"] == "diverged"  # two recoveries, then the stop
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert run_row(run)["status"] == "stopped (6/6)"
    (run / "diverged.txt").write_text("loss nan\n")
    assert run_row(run)["status"] == "diverged"
    (run / "diverged.txt").unlink()
    (run / "summary.json").write_text(json.dumps({"iteration": 4, "test_acc": 0.5}))  # resumed past its end
    assert run_row(run)["status"] == "stopped (6/6)" and run_row(run)["test_acc"] is None
    assert run_row(run)["resumes_at"] == 6
    # resumed past its end (summary.json at 6) and stopped at 8 before its next log line: not done, resumes at 8
    import torch

    ckpt = torch.load(run / "checkpoint.pt", weights_only=True)
    torch.save({**ckpt, "iteration": 8}, run / "checkpoint.pt")
    (run / "summary.json").write_text(json.dumps({"iteration": 6, "test_acc": 0.5}))
    row = run_row(run)
    assert (row["status"], row["resumes_at"], row["test_acc"]) == ("stopped (8/6)", 8, None)


def test_csv_keeps_its_header_row():
    from fastjem.runs import render_table

    assert render_table(["run", "test acc"], [["a", "0.5"]], "csv").splitlines() == ["run,test acc", "a,0.5"]
    with pytest.raises(ConfigError, match=r"--format must be one of text, md, csv \(or json\); got 'html'"):
        render_table(["run"], [["a"]], "html")


def test_a_markdown_table_has_its_header_row_then_the_rule():
    from fastjem.runs import render_table

    assert render_table(["run", "test acc"], [["a", "0.5"], ["b", "0.6"]], "md").splitlines() == [
        "| run | test acc |", "|---|---|", "| a | 0.5 |", "| b | 0.6 |"]


def test_the_speed_is_the_median_of_the_finite_windows_after_the_first_else_the_first(tmp_path):
    """it/s: the median over the training windows after the first (warm-up) that logged a finite rate; a run with a
    single window shows that window's rate rather than none."""
    def logged(*rates):
        (tmp_path / "metrics.jsonl").write_text("".join(
            json.dumps({"iter": i + 1, "loss": 1.0, **({} if r is None else {"it_per_s": r})}) + "\n"
            for i, r in enumerate(rates)))
        return run_row(tmp_path)["it_per_s"]

    assert logged(0.5, float("nan"), 4.0, None, 6.0, float("inf")) == 5.0
    assert logged(0.5) == 0.5

"""fastjem sweep: the grid, the run folders, continuing an interrupted sweep, and the per-combination table."""

import csv
import io
import json
import re
import statistics

import pytest

from fastjem.cli import main
from fastjem.errors import ConfigError
from fastjem.sweep import parse_grid, run_name

TINY = ["--dataset", "digits", "--arch", "convnet", "--width", "8", "--batch-size", "16", "--buffer-size", "200",
        "--iters", "6", "--warmup-iters", "5", "--lr", "1e-3", "--log-every", "2", "--ckpt-every", "3",
        "--device", "cpu", "--no-progress", "--no-compile"]


def test_grid_values_take_each_options_type():
    grid = parse_grid(["sgld-steps=5,20", "buffer_init=uniform,informative", "lr=1e-4,3e-4", "augment=on,off",
                       "decay_epochs=50:100,60"])
    assert grid == {"sgld_steps": [5, 20], "buffer_init": ["uniform", "informative"], "lr": [1e-4, 3e-4],
                    "augment": [True, False], "decay_epochs": [(50.0, 100.0), (60.0,)]}
    assert run_name({"sgld_steps": 5, "lr": 3e-4, "decay_epochs": (50.0, 100.0)}, 2) == \
        "sgld_steps=5+lr=0.0003+decay_epochs=50:100+seed=2"
    for bad, message in (("nope=1,2", "no such option"), ("seed=1,2", "--seeds"), ("sgld_steps=a", "not a int"),
                         ("lr", "OPTION=V1"), ("sgld_steps=5,5", "repeated"), ("out_dir=a,b", "not a training"),
                         ("sgld_steps=5,,20", "an empty value in '5,,20'"), ("=5", "OPTION=V1"), ("lr=", "OPTION=V1"),
                         ("augment=on,maybe", "not a bool"), ("max-minutes=5,10", "bounds the whole sweep"),
                         # train's flags that set another option: the grid names the option to vary
                         ("classifier-only=0,1", "vary px-weight"), ("no-compile=0,1", "vary compile"),
                         ("no-keep-best=0,1", "it turns keep-best off: vary keep-best")):
        with pytest.raises(ConfigError, match=message):
            parse_grid([bad])
    with pytest.raises(ConfigError, match="--grid lr is given twice"):
        parse_grid(["lr=1e-4", "lr=3e-4"])
    with pytest.raises(ConfigError, match="--grid needs at least one OPTION=V1,V2"):
        parse_grid([])


def test_seeds_are_distinct_and_a_sweep_folder_keeps_its_seeds(tmp_path):
    """A seed given twice is refused as such (not as two runs sharing a folder), and a sweep folder made with other
    seeds is refused, naming both lists, before anything is written."""
    from fastjem.config import TrainConfig
    from fastjem.sweep import check_spec, plan, spec_of

    base, grid = TrainConfig(preset="test"), {"sgld_steps": [1, 2]}
    with pytest.raises(ConfigError, match="--seeds must be one or more distinct seeds"):
        plan(base, grid, [1, 1], tmp_path)
    check_spec(tmp_path, spec_of(base, grid, [1, 2]))
    saved = (tmp_path / "sweep.json").read_text()
    with pytest.raises(ConfigError, match=r"seeds: \[1, 2\] there, \[1, 3\] here"):
        check_spec(tmp_path, spec_of(base, grid, [1, 3]))
    assert (tmp_path / "sweep.json").read_text() == saved
    # a sweep.json that is JSON but no sweep's (a list, an object without a grid): refused, left as it is
    for other in ("[1, 2]", '{"seeds": [1, 2]}'):
        (tmp_path / "sweep.json").write_text(other)
        with pytest.raises(ConfigError, match="is not a sweep description \\(no grid\\): give another --out-dir"):
            check_spec(tmp_path, spec_of(base, grid, [1, 2]))
        assert (tmp_path / "sweep.json").read_text() == other


def test_sweep_runs_every_combination_skips_finished_runs_and_resumes_a_partial_one(tmp_path, capsys):
    folder = tmp_path / "sw"
    args = ["sweep", "--grid", "sgld-steps=1,2", "--seeds", "1", "2", "--out-dir", str(folder), *TINY]
    # one run was stopped early (here by a time limit; Ctrl-C does the same): the sweep continues it
    partial = folder / "sgld_steps=2+seed=1"
    assert main(["train", *TINY, "--sgld-steps", "2", "--seed", "1", "--out-dir", str(partial),
                 "--max-minutes", "1e-6"]) == 0
    from fastjem.checkpoint import load_checkpoint

    assert not (partial / "summary.json").exists() and load_checkpoint(partial)["iteration"] < 6
    capsys.readouterr()
    assert main([*args, "--dry-run"]) == 0
    planned = capsys.readouterr().out
    assert "resume           sgld_steps=2+seed=1" in planned and planned.count("start ") == 3
    assert not (folder / "sweep.json").exists()
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"resuming {partial / 'checkpoint.pt'}" in out
    assert out.count("engine: CUDA graph off") == 1  # the same for every run: said once
    names = ["sgld_steps=1+seed=1", "sgld_steps=1+seed=2", "sgld_steps=2+seed=1", "sgld_steps=2+seed=2"]
    for name in names:
        summary = json.loads((folder / name / "summary.json").read_text())
        assert summary["iteration"] == 6
    assert json.loads((folder / "sgld_steps=2+seed=1" / "config.json").read_text())["sgld_steps"] == 2
    result = json.loads((folder / "results.json").read_text())
    assert [g["sgld_steps"] for g in result["groups"]] == [1, 2] and all(g["done"] == 2 for g in result["groups"])
    for g, pair in zip(result["groups"], (names[:2], names[2:])):
        accs = [json.loads((folder / n / "summary.json").read_text())["test_acc"] for n in pair]
        assert g["test_acc"] == pytest.approx(statistics.mean(accs))
        assert g["test_acc_std"] == pytest.approx(statistics.stdev(accs))
    assert "test acc" in out and "±" in out
    # the table again, as the folder stands, in a pasteable form; and the runs with it
    assert main(["runs", str(folder), "--combinations", "--format", "csv"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("sgld_steps,runs,done,diverged,failed,test_acc_mean") and len(table) == 3
    assert float(table[1].split(",")[5]) == pytest.approx(result["groups"][0]["test_acc"], rel=1e-5)
    # and as JSON: one summary a sweep, results.json's shape
    assert main(["runs", str(folder), "--combinations", "--format", "json"]) == 0
    (now,) = json.loads(capsys.readouterr().out)
    assert now["groups"] == result["groups"] and now["grid"] == result["grid"] == {"sgld_steps": [1, 2]}
    assert main(["runs", str(folder), "--format", "md"]) == 0
    assert "per combination" in capsys.readouterr().out
    # one table per CSV: the runs, with no combination table after them to break a reader
    assert main(["runs", str(folder), "--format", "csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 1 + len(names) and {len(r) for r in rows} == {len(rows[0])}
    assert main(["runs", str(folder / names[0]), "--combinations"]) == 1
    assert "not a sweep" in capsys.readouterr().err
    # the sweep's runs overlaid in one figure, beside them
    assert main(["plot", str(folder)]) == 0
    assert (folder / "curves.png").stat().st_size > 10000
    # one eval task over the sweep: each run's own report, then mean ± std per combination
    capsys.readouterr()
    assert main(["eval", str(folder), "accuracy", "--no-progress", "--device", "cpu", "--n-test", "60"]) == 0
    assert "± " in capsys.readouterr().out
    comparison = json.loads((folder / "accuracy_runs.json").read_text())
    assert [r["run"] for r in comparison["rows"]] == names
    for group, pair in zip(comparison["groups"], (names[:2], names[2:])):
        accs = [json.loads((folder / n / "eval" / "accuracy.json").read_text())["results"]["acc"] for n in pair]
        assert group["runs"] == 2 and group["plain acc"] == pytest.approx([statistics.mean(accs),
                                                                          statistics.stdev(accs)])
    # again: nothing to do
    mtime = (folder / names[0] / "checkpoint.pt").stat().st_mtime_ns
    assert main(args) == 0
    assert capsys.readouterr().out.count("done, skipped") == 4
    assert (folder / names[0] / "checkpoint.pt").stat().st_mtime_ns == mtime
    # another grid, or other base options, in the same folder: refused, nothing touched
    assert main(["sweep", "--grid", "sgld-steps=1,3", "--out-dir", str(folder), *TINY]) == 1
    assert "holds another sweep" in capsys.readouterr().err
    assert main([*args, "--lr", "2e-3"]) == 1
    assert "lr: 0.001 there, 0.002 here" in capsys.readouterr().err
    assert main(["sweep", "--grid", "sgld-steps=1", "--seed", "3", "--out-dir", str(tmp_path / "x"), *TINY]) == 1
    assert "--seeds" in capsys.readouterr().err
    # an option given both ways: the grid would silently win
    assert main([*args, "--sgld-steps", "10"]) == 1
    assert "--sgld-steps given both as an option and in --grid" in capsys.readouterr().err


def test_a_dry_run_says_1_iteration_not_1_iterations(tmp_path, capsys, monkeypatch):
    """A run with one iteration left to train: "1 iteration at", not "1 iterations at"."""
    import fastjem.sweep

    monkeypatch.setattr(fastjem.sweep, "_time_to_go", lambda *a: (20.0, 1, 0.05, "the speed of 1 stopped run"))
    assert main(["sweep", "--grid", "sgld-steps=1", "--seeds", "1", "--out-dir", str(tmp_path / "sw"), *TINY,
                 "--dry-run"]) == 0
    assert "about 0m20s (1 iteration at 0.05 it/s, the speed of 1 stopped run)" in capsys.readouterr().out


def test_a_dry_run_says_how_long_each_run_has_left_from_the_speeds_measured_in_the_folder(tmp_path, capsys):
    """A finished run's speed estimates its combination's other seeds; a stopped run's logged speed (and its
    iterations done) its own and its siblings'; a combination with no logged speed is said to be unknown."""
    folder = tmp_path / "sw"
    for steps in (1, 2):
        assert main(["train", *TINY, "--sgld-steps", str(steps), "--seed", "1",
                     "--out-dir", str(folder / f"sgld_steps={steps}+seed=1")]) == 0
    stopped = folder / "sgld_steps=2+seed=1"
    (stopped / "summary.json").unlink()  # as if stopped at its last checkpoint (iteration 6 of 6)
    # speeds as a real network's would be (the tiny one's 6 iterations take no measurable time)
    for run, rate in (("sgld_steps=1+seed=1", 0.02), ("sgld_steps=2+seed=1", 0.05)):
        path = folder / run / "metrics.jsonl"
        records = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps({**r, "it_per_s": rate} if "it_per_s" in r else r) + "\n" for r in records))
    capsys.readouterr()
    assert main(["sweep", "--grid", "sgld-steps=1,2,3", "--seeds", "1", "2", "--out-dir", str(folder), *TINY,
                 "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()[1:-1]
    lines = {next(w for w in line.split() if "+seed=" in w): line for line in out}
    assert lines["sgld_steps=1+seed=2"].endswith(
        "about 5m00s (6 iterations at 0.02 it/s, the speed of 1 finished run of this combination)")
    assert lines["sgld_steps=2+seed=1"].startswith("  resume") and "about 0m00s (0 iterations at" in \
        lines["sgld_steps=2+seed=1"]
    assert "about 2m00s (6 iterations at 0.05 it/s, the speed of 1 stopped run of" in lines["sgld_steps=2+seed=2"]
    assert "about" not in lines["sgld_steps=3+seed=1"] and "about" not in lines["sgld_steps=3+seed=2"]
    assert main(["sweep", "--grid", "sgld-steps=1,2,3", "--seeds", "1", "2", "--out-dir", str(folder), *TINY,
                 "--dry-run"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == ("training time to go: about 7m00s for 3 of the 5 runs to train, from the speeds measured in this "
                    "folder (evaluation not counted); 2 without a measured speed of their combination")
    assert main(["sweep", "--grid", "sgld-steps=1,2", "--seeds", "1", "2", "--out-dir", str(folder), *TINY,
                 "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "training time to go: about 7m00s for the 3 runs to train, from the speeds measured in this folder "
        "(evaluation not counted)")
    # nothing measured: said so
    assert main(["sweep", "--grid", "sgld-steps=4", "--out-dir", str(tmp_path / "new"), *TINY, "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"sweep: 1 run in {tmp_path / 'new'}"
    assert out[-1].startswith("training time to go: not known yet")


def test_an_epoch_based_runs_time_to_go_takes_its_length_from_a_finished_run_of_its_combination():
    from fastjem.config import TrainConfig
    from fastjem.sweep import _time_to_go

    cfg = TrainConfig(preset="test").replace(iters=-1, epochs=2.0)
    combo = {"lr": 1e-3}
    runs = [(f"lr=0.001+seed={s}", combo, cfg) for s in (1, 2, 3)]
    states = dict(zip([n for n, _, _ in runs], ("done", "partial", "new")))
    rows = {"lr=0.001+seed=1": {"it_per_s": 2.0, "iteration": 40, "status": "done"},
            # killed hard after logging iteration 12: it resumes from its checkpoint's 10
            "lr=0.001+seed=2": {"it_per_s": 1.0, "iteration": 12, "resumes_at": 10, "status": "stopped"}}
    basis = "the speed of 1 finished run of this combination"
    assert _time_to_go("lr=0.001+seed=3", combo, cfg, runs, states, rows) == (20.0, 40, 2.0, basis)
    assert _time_to_go("lr=0.001+seed=2", combo, cfg, runs, states, rows) == (15.0, 30, 2.0, basis)
    # no finished run: the speed is known from the stopped one, the length is not
    states["lr=0.001+seed=1"] = "partial"
    assert _time_to_go("lr=0.001+seed=3", combo, cfg, runs, states, rows) is None


def test_a_run_that_diverges_beyond_recovery_is_marked_and_the_sweep_goes_on(tmp_path, capsys, monkeypatch):
    from fastjem.train import DivergedError, Trainer

    real_fit = Trainer.fit

    def fit(self):
        if self.cfg.seed == 2:
            self.save_checkpoint()
            events = [{"event": "divergence", "iter": 3, "action": "recover"}] * 3 + [
                {"event": "divergence", "iter": 3, "action": "stop"}]
            (self.out_dir / "metrics.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
            raise DivergedError("divergence at iteration 3 after 3 recoveries: stopped")
        return real_fit(self)

    monkeypatch.setattr(Trainer, "fit", fit)
    folder = tmp_path / "sw"
    args = ["sweep", "--grid", "sgld-steps=1", "--seeds", "1", "2", "3", "--out-dir", str(folder), *TINY]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "sgld_steps=1+seed=2: diverged beyond recovery" in out and "2/3 (1 diverged)" in out
    assert (folder / "sgld_steps=1+seed=2" / "diverged.txt").exists()
    group = json.loads((folder / "results.json").read_text())["groups"][0]
    assert group["done"] == 2 and group["diverged"] == 1
    assert group["recoveries"] == 3  # the diverged run's, which the combination's table must not hide
    # not run again (its checkpoint would resume into the same divergence)
    monkeypatch.setattr(Trainer, "fit", real_fit)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"sgld_steps=1+seed=2: diverged, skipped (delete {folder / 'sgld_steps=1+seed=2'} to run it again)" in out
    assert "sgld_steps=1+seed=1: done, skipped\n" in out
    from fastjem.runs import run_row

    (folder / "sgld_steps=1+seed=2" / "metrics.jsonl").write_text(json.dumps({"iter": 2, "loss": 1.0}) + "\n")
    assert run_row(folder / "sgld_steps=1+seed=2")["status"] == "diverged"


def test_a_sweep_folder_holds_one_grid_in_its_order_and_bad_folders_are_refused(tmp_path, monkeypatch):
    from fastjem.config import TrainConfig
    from fastjem.sweep import check_spec, plan, spec_of

    base = TrainConfig(preset="test")
    check_spec(tmp_path / "sw", spec_of(base, {"sgld_steps": [1, 2], "lr": [1e-3, 2e-3]}, [1]))
    # the same grid listed in another order names other run folders: refused, not trained again
    with pytest.raises(ConfigError, match="grid: sgld-steps=1,2 lr=0.001,0.002 there, lr=0.001,0.002 sgld-steps=1,2 "
                                          "here"):
        check_spec(tmp_path / "sw", spec_of(base, {"lr": [1e-3, 2e-3], "sgld_steps": [1, 2]}, [1]))
    # another base option is another sweep; another machine to run it on is the same sweep
    with pytest.raises(ConfigError, match=r"holds another sweep .*: batch_size: 64 there, 32 here\. Give another"):
        check_spec(tmp_path / "sw", spec_of(base.replace(batch_size=32), {"sgld_steps": [1, 2], "lr": [1e-3, 2e-3]},
                                            [1]))
    check_spec(tmp_path / "sw", spec_of(base.replace(device="cpu", data_dir="/elsewhere"),
                                        {"sgld_steps": [1, 2], "lr": [1e-3, 2e-3]}, [1]))
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "sweep.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not a sweep description"):
        check_spec(tmp_path / "bad", spec_of(base, {"lr": [1e-3]}, [1]))
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        check_spec(tmp_path / "file", spec_of(base, {"lr": [1e-3]}, [1]))
    with pytest.raises(ConfigError, match="give the run folder lr=0.001\\+seed=1"):
        plan(base, {"lr": [0.0010000001, 0.001]}, [1], tmp_path / "dup")
    # a single run's folder is not a sweep's, nor a sweep's a single run's: listings would show only one of them
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.jsonl").write_text("")
    with pytest.raises(ConfigError, match="holds a training run .metrics.jsonl., not a sweep"):
        check_spec(tmp_path / "run", spec_of(base, {"lr": [1e-3]}, [1]))
    assert not (tmp_path / "run" / "sweep.json").exists()
    # a folder that cannot be written (a read-only disk: simulated, root writes anywhere)
    import errno

    import fastjem.sweep

    def read_only(text, path):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    with monkeypatch.context() as patch:
        patch.setattr(fastjem.sweep, "atomic_write_text", read_only)
        with pytest.raises(ConfigError, match=r"cannot write the sweep into .*ro \(OSError: .*Read-only file system"
                                              r".*\): give another --out-dir"):
            check_spec(tmp_path / "ro", spec_of(base, {"lr": [1e-3]}, [1]))
    from fastjem.train import Trainer

    with pytest.raises(ConfigError, match="holds a sweep .sweep.json.: choose another --out-dir"):
        Trainer(TrainConfig(dataset="digits", arch="convnet", width=8, iters=2, device="cpu"), out_dir=tmp_path / "sw",
                progress=False, log=lambda *a: None)


def test_max_minutes_bounds_the_whole_sweep(tmp_path, capsys, monkeypatch):
    import time

    from fastjem.train import Trainer

    clock = [1000.0]
    given = []
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])

    def fit(self):  # each run takes 30 s of the sweep's 60
        given.append(self.cfg.max_minutes)
        clock[0] += 30
        return {"test_acc": 0.5, "iteration": 6}

    monkeypatch.setattr(Trainer, "fit", fit)
    # into a folder whose parent is not made yet (a first sweep into runs/abl)
    args = ["sweep", "--grid", "sgld-steps=1,2,3", "--out-dir", str(tmp_path / "runs" / "abl"), "--max-minutes", "1",
            *TINY]
    assert main(args) == 0
    # the third would start with no time left (0 minutes would mean no limit for it)
    assert given == [pytest.approx(1.0), pytest.approx(0.5)]
    out = capsys.readouterr().out
    assert "sweep stopped before sgld_steps=3+seed=1: time limit of 1 min" in out
    assert "sgld_steps=1+seed=1: test accuracy 0.5000 in 0m30s (sweep: 0m30s so far; 2 to go, about 1m00s at this " \
           "pace)" in out


def test_durations_read_in_minutes_below_an_hour_and_hours_from_one():
    from fastjem.sweep import _duration

    assert [_duration(s) for s in (0, 59.4, 61, 3599.4, 3600, 7260)] == ["0m00s", "0m59s", "1m01s", "59m59s", "1h00m",
                                                                         "2h01m"]


def test_a_run_stopped_inside_a_sweep_names_the_sweep_command_not_a_train_resume(tmp_path, capsys):
    """A run the time limit stops mid-way is continued by the sweep's own command: the Trainer's "resume with:
    fastjem train --resume" line would continue that one run outside the sweep (no table, no other runs)."""
    folder = tmp_path / "sw"
    long = [*TINY, "--iters", "100000", "--max-minutes", "0.03"]
    assert main(["sweep", "--grid", "sgld-steps=1", "--out-dir", str(folder), *long]) == 0
    out = capsys.readouterr().out
    assert "min (--max-minutes) reached: stopped after iteration" in out
    assert f"sweep stopped at sgld_steps=1+seed=1 (its checkpoint is written): run the same command (--out-dir " \
           f"{folder}) again" in out
    assert "fastjem train --resume" not in out


def test_a_run_killed_before_its_first_checkpoint_starts_over_with_clean_records(tmp_path):
    run = tmp_path / "sw" / "sgld_steps=1+seed=1"
    run.mkdir(parents=True)
    (run / "metrics.jsonl").write_text(json.dumps({"iter": 2, "loss": 9.0}) + "\n")  # what the killed attempt logged
    (run / "best.pt").write_bytes(b"its best state")  # and kept (validated before its first checkpoint)
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "iter_0000002.pt").write_bytes(b"a kept state")
    assert main(["sweep", "--grid", "sgld-steps=1", "--out-dir", str(tmp_path / "sw"), *TINY]) == 0
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iter"] for r in records if "loss" in r] == [2, 4, 6] and all(r.get("loss") != 9.0 for r in records)
    assert not (run / "best.pt").exists() and not (run / "checkpoints").exists()


def test_each_run_of_a_sweep_shows_its_progress_bar_unless_no_progress(tmp_path, capsys):
    shown = [a for a in TINY if a != "--no-progress"]
    assert main(["sweep", "--grid", "sgld-steps=1", "--out-dir", str(tmp_path / "bars"), *shown]) == 0
    assert re.search(r"6/6 \[.*it/s", capsys.readouterr().err)
    assert main(["sweep", "--grid", "sgld-steps=1", "--out-dir", str(tmp_path / "quiet"), *TINY]) == 0
    assert "it/s" not in capsys.readouterr().err


def test_one_seed_has_no_spread_to_report():
    """A combination with one finished run reports its accuracy, not "± 0.0000" (a spread it never measured)."""
    from fastjem.eval.history import format_comparison
    from fastjem.sweep import _mean_std, format_summary

    assert _mean_std([{"a": 0.5}], "a") == (0.5, None)
    # a run without the number (no validation set) or with a NaN one does not count
    assert _mean_std([{"a": 0.5}, {"a": None}, {}, {"a": float("nan")}], "a") == (0.5, None)
    assert _mean_std([{"a": 0.5}, {"a": 0.7}], "a")[1] == pytest.approx(statistics.stdev([0.5, 0.7]))
    group = {"lr": "0.001", "runs": 1, "done": 1, "diverged": 0, "test_acc": 0.9, "test_acc_std": None,
             "val_acc": 0.8, "val_acc_std": None, "it_per_s": 2.0, "recoveries": 0}
    table = format_summary({"grid": {"lr": ["0.001"]}, "groups": [group]})
    row = table.splitlines()[2]
    assert "0.9000" in row and "±" not in row
    # the same table as Markdown and as CSV (numbers in columns of their own, an empty sd)
    assert format_summary({"grid": {"lr": ["0.001"]}, "groups": [group]}, "md").splitlines()[2] == \
        "| 0.001 | 1/1 | 0.9000 | 0.8000 | 2.00 | 0 |"
    assert format_summary({"grid": {"lr": ["0.001"]}, "groups": [group]}, "csv").splitlines()[1] == \
        "0.001,1,1,0,0,0.9,,0.8,,2,0"
    comparison = {"keys": ["acc"], "grid": ["lr"], "groups": [{"lr": "0.001", "runs": 1, "acc": [0.9, None]}],
                  "rows": []}
    assert "0.9000" in format_comparison(comparison) and "±" not in format_comparison(comparison)


def test_a_folder_reused_for_another_sweep_a_busy_folder_and_a_failed_run(tmp_path, capsys, monkeypatch):
    """Runs already in the folder must have been trained with the options the sweep gives them (a sweep.json
    deleted to reuse a folder made the table report the old runs as the new sweep's); a second sweep in a folder,
    or a run folder another process trains in, is refused before anything is changed (a second sweep deleted the
    first's live metrics.jsonl); a run that fails (missing data, ...) does not stop the others, and the table
    says so."""
    from fastjem.checkpoint import folder_lock
    from fastjem.errors import DataNotFoundError
    from fastjem.train import Trainer

    folder = tmp_path / "sw"
    args = ["sweep", "--grid", "sgld-steps=1", "--seeds", "1", "--out-dir", str(folder), *TINY]
    assert main(args) == 0
    assert f"sweep: 1 run (1 combination x 1 seed) in {folder}" in capsys.readouterr().out
    run = folder / "sgld_steps=1+seed=1"
    mtime = (run / "checkpoint.pt").stat().st_mtime_ns
    (folder / "sweep.json").unlink()
    capsys.readouterr()
    for extra in (["--dry-run"], []):
        assert main([*args, "--lr", "1e-2", *extra]) == 1
        err = capsys.readouterr().err
        assert f"{run} was trained with other options" in err and "lr: 0.001 there, 0.01 here" in err
    assert (run / "checkpoint.pt").stat().st_mtime_ns == mtime and not (folder / "sweep.json").exists()
    assert main(args) == 0  # the options it was trained with: done, skipped
    # a second sweep in the same folder, then a run folder another process trains in
    capsys.readouterr()
    with folder_lock(folder / ".sweep.lock", "busy"):
        assert main(args) == 1
    assert "in use by another fastjem sweep" in capsys.readouterr().err
    other = tmp_path / "sw2"
    args2 = ["sweep", "--grid", "sgld-steps=1", "--seeds", "1", "--out-dir", str(other), *TINY]
    live = other / "sgld_steps=1+seed=1"
    live.mkdir(parents=True)
    (live / "metrics.jsonl").write_text('{"iter": 2, "loss": 1.0}\n')
    with folder_lock(live / ".lock", "busy"):
        assert main(args2) == 1
    assert "in use by another fastjem run" in capsys.readouterr().err
    assert (live / "metrics.jsonl").read_text() == '{"iter": 2, "loss": 1.0}\n'
    # a failing run: the sweep goes on, says so in its table and results, exits non-zero; the same command retries
    real_fit = Trainer.fit

    def fit(self):
        if self.cfg.seed == 2:
            raise DataNotFoundError("cifar10 was not found in /nowhere")
        if self.cfg.seed == 3:  # not fastjem's own error (it ended the sweep, without a table)
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_fit(self)

    monkeypatch.setattr(Trainer, "fit", fit)
    failing = ["sweep", "--grid", "sgld-steps=1", "--seeds", "1", "2", "3", "--out-dir", str(tmp_path / "f"), *TINY]
    assert main(failing) == 1
    out, err = capsys.readouterr()
    assert "2 runs failed (above): mend the cause and run the same command again" in err
    assert f"sweep: 3 runs (1 combination x 3 seeds) in {tmp_path / 'f'}" in out
    assert f"per run and again: fastjem runs {tmp_path / 'f'}; summary: {tmp_path / 'f' / 'results.json'}" in out
    assert "sgld_steps=1+seed=2: failed: cifar10 was not found" in out and "1/3 (2 failed)" in out
    assert "sgld_steps=1+seed=3: failed: RuntimeError: CUDA out of memory" in out
    assert "2 to go, about" in out  # after the first run: what is left, at this pace
    result = json.loads((tmp_path / "f" / "results.json").read_text())
    assert list(result["failed"]) == ["sgld_steps=1+seed=2", "sgld_steps=1+seed=3"]
    assert result["groups"][0]["failed"] == 2
    monkeypatch.setattr(Trainer, "fit", real_fit)
    assert main(failing) == 0
    assert json.loads((tmp_path / "f" / "results.json").read_text())["groups"][0]["done"] == 3


def test_a_run_folder_whose_options_cannot_be_read_is_named(tmp_path, capsys):
    folder = tmp_path / "sw"
    run = folder / "sgld_steps=1+seed=1"
    run.mkdir(parents=True)
    (run / "config.json").write_text('{"lr": 0.001, "sgld')  # cut off mid-write
    for extra in (["--dry-run"], []):
        assert main(["sweep", "--grid", "sgld-steps=1", "--seeds", "1", "--out-dir", str(folder), *extra, *TINY]) == 1
        err = capsys.readouterr().err
        assert f"{run / 'config.json'} is not a run's options (JSONDecodeError" in err and f"move {run} away" in err
    assert sorted(p.name for p in run.iterdir()) == ["config.json"]


def test_a_sweep_folder_that_cannot_be_made_is_named(tmp_path, capsys, monkeypatch):
    import errno
    from pathlib import Path

    real = Path.mkdir

    def mkdir(self, *args, **kwargs):
        if self.name == "ro":  # a read-only disk, simulated (root writes anywhere)
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    assert main(["sweep", "--grid", "sgld-steps=1", "--seeds", "1", "--out-dir", str(tmp_path / "ro"), *TINY]) == 1
    assert (f"cannot make the sweep folder {tmp_path / 'ro'} (OSError: [Errno 30] Read-only file system: "
            f"'{tmp_path / 'ro'}'): give another --out-dir") in capsys.readouterr().err


def test_a_dry_run_refuses_what_the_sweep_would(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    single = tmp_path / "single"
    single.mkdir()
    (single / "metrics.jsonl").write_text("")
    for folder, message in ((tmp_path / "afile", "is a file"), (tmp_path / "afile" / "below", "lies below a file"),
                            (single, "holds a training run")):
        for extra in (["--dry-run"], []):
            assert main(["sweep", "--grid", "sgld-steps=1", "--out-dir", str(folder), *TINY, *extra]) == 1
            assert message in capsys.readouterr().err


def test_two_grid_flags_vary_both_options(tmp_path, capsys):
    """A second --grid replaced the first (argparse keeps the last): the sweep varied one option of two."""
    assert main(["sweep", "--grid", "buffer-init=uniform,informative", "--grid", "sgld-steps=1,2", "--dry-run",
                 "--out-dir", str(tmp_path / "sw"), *TINY]) == 0
    out = capsys.readouterr().out
    assert "sweep: 4 runs" in out and "buffer_init=informative+sgld_steps=2+seed=1" in out


def test_a_bad_value_names_its_run_and_a_plan_takes_a_text_folder(tmp_path, capsys):
    from fastjem.config import TrainConfig
    from fastjem.sweep import describe_plan

    for extra in (["--dry-run"], []):
        assert main(["sweep", "--grid", "sgld-noise=0.01,-1", "--out-dir", str(tmp_path / "sw"), *TINY, *extra]) == 1
        assert "run sgld_noise=-1+seed=1: --sgld-noise must be >= 0, got -1.0" in capsys.readouterr().err
    assert not (tmp_path / "sw").exists()
    text = describe_plan(TrainConfig(iters=6), {"sgld_steps": [1, 2]}, [1], str(tmp_path / "sw"))
    assert "sweep: 2 runs" in text and "sgld_steps=2+seed=1" in text


def test_a_sweep_a_signal_stopped_exits_as_the_signal_says_after_its_table(tmp_path, capsys, monkeypatch):
    """SIGTERM (a scheduler's preemption) stopping a run inside a sweep: the sweep stops, prints its table and
    exits 143, so that `fastjem sweep ... && next-step` does not go on as if the grid were trained."""
    from fastjem.train import Trainer

    def fit(self):
        return {"interrupted": True, "stopped_by": "SIGTERM", "iteration": 3}

    monkeypatch.setattr(Trainer, "fit", fit)
    folder = tmp_path / "sw"
    assert main(["sweep", "--grid", "sgld-steps=1,2", "--out-dir", str(folder), *TINY]) == 143
    out = capsys.readouterr().out
    assert "sweep stopped at sgld_steps=1+seed=1 (its checkpoint is written)" in out
    assert f"per run and again: fastjem runs {folder}" in out
    assert "[2/2]" not in out  # the second run was not started
    assert json.loads((folder / "results.json").read_text())["stopped_by"] == "SIGTERM"


def test_a_sweep_on_an_image_folder_is_read_back_as_a_sweep(tmp_path, capsys):
    """sweep.json leaves --data-dir out (it may change between machines), which --dataset imagefolder needs: the
    folder was "not a sweep" to `fastjem runs --combinations` and `fastjem plot --mean`."""
    from fastjem.config import TrainConfig
    from fastjem.sweep import check_spec, combinations, spec_of, summarise_folder

    folder = tmp_path / "sw"
    base = TrainConfig(dataset="imagefolder", data_dir=str(tmp_path / "images"), iters=6)
    check_spec(folder, spec_of(base, {"sgld_steps": [1, 2]}, [1, 2]))
    assert [g["sgld_steps"] for g in summarise_folder(folder)["groups"]] == [1, 2]
    assert [label for label, _ in combinations(folder)] == ["sgld_steps=1", "sgld_steps=2"]
    assert main(["runs", str(folder), "--combinations"]) == 0
    assert "0/2" in capsys.readouterr().out


def test_depth_goes_to_the_wide_resnets_of_a_grid_over_arch(tmp_path, capsys):
    """--depth with --grid arch=wrn,convnet was refused as given to a ConvNet (the quick preset's), and the advice,
    --arch wrn, is refused beside a grid over --arch: the wrn runs could not be given a depth."""
    args = ["sweep", "--grid", "arch=wrn,convnet", "--depth", "10", "--dry-run", "--out-dir", str(tmp_path / "sw")]
    assert main(args) == 0
    assert "arch=wrn+seed=1" in capsys.readouterr().out
    # without a Wide-ResNet in the grid, --depth would set nothing: still refused
    assert main(["sweep", "--grid", "sgld-steps=1,2", "--depth", "10", "--dry-run", "--out-dir",
                 str(tmp_path / "sw2")]) == 1
    assert "--depth sets a Wide-ResNet's depth" in capsys.readouterr().err


def test_classifier_only_against_a_grid_over_the_generative_weights_names_itself(tmp_path, capsys):
    """The refusal named --px-weight "given both as an option and in --grid", an option the user never gave."""
    assert main(["sweep", "--classifier-only", "--grid", "px-weight=0,1", "--dry-run", "--out-dir",
                 str(tmp_path / "sw")]) == 1
    err = capsys.readouterr().err
    assert "--classifier-only sets --px-weight and --pxy-weight to 0 for every run, but --grid varies --px-weight" \
        in err and "given both" not in err
    # a grid over the classifier's own weight goes with it
    assert main(["sweep", "--classifier-only", "--grid", "pyx-weight=0.5,1", "--dry-run", "--out-dir",
                 str(tmp_path / "sw")]) == 0


def test_a_finished_run_is_freed_before_the_next_run_of_the_sweep_starts(tmp_path, monkeypatch):
    """A Trainer's parts refer to each other: only the cycle collector frees them, so every finished run of a sweep
    (its network, optimiser, buffer and data, on the GPU) stayed in memory while the next ones trained."""
    import weakref

    from fastjem.train import Trainer

    alive, seen = weakref.WeakSet(), []
    real_init = Trainer.__init__

    def init(self, *args, **kwargs):
        seen.append(len(alive))
        real_init(self, *args, **kwargs)
        alive.add(self)

    monkeypatch.setattr(Trainer, "__init__", init)
    assert main(["sweep", "--grid", "sgld-steps=1", "--seeds", "1", "2", "--out-dir", str(tmp_path / "sw"),
                 *TINY, "--iters", "2", "--buffer-size", "32"]) == 0
    assert seen == [0, 0]


def test_results_json_holds_the_grid_values_as_json_numbers_booleans_and_lists(tmp_path):
    """results.json gave every grid value as printed text ("20", "0.0001", "true"): a script plotting accuracy
    against sgld_steps sorted "20" before "5". The tables still print them as the run folders name them."""
    from fastjem.eval.history import compare_runs, format_comparison
    from fastjem.sweep import format_summary, summarise

    grid = {"sgld_steps": [5, 20], "lr": [1e-4], "augment": [False], "decay_epochs": [(50, 100)]}
    result = json.loads(json.dumps(summarise(tmp_path, grid, [])))
    assert result["grid"] == {"sgld_steps": [5, 20], "lr": [1e-4], "augment": [False], "decay_epochs": [[50, 100]]}
    assert [[g[k] for k in grid] for g in result["groups"]] == [[5, 0.0001, False, [50, 100]],
                                                                 [20, 0.0001, False, [50, 100]]]
    assert format_summary(result, "csv").splitlines()[1].startswith("5,0.0001,false,50:100,")
    # an eval comparison over a sweep's runs groups them by the same typed values
    sweep = tmp_path / "sw"
    (sweep / "a").mkdir(parents=True)
    (sweep / "b").mkdir()
    (sweep / "sweep.json").write_text(json.dumps({"grid": {"augment": [True], "decay_epochs": [[50, 100]]}}))
    for run in ("a", "b"):
        (sweep / run / "config.json").write_text(json.dumps({"augment": True, "decay_epochs": [50, 100]}))
    reports = [{"dataset": "digits", "results": {"plain": {"acc": acc, "nll": 0.1}}} for acc in (0.5, 0.7)]
    cmp = compare_runs("accuracy", reports, [sweep / "a", sweep / "b"], tmp_path / "cmp")
    assert [(g["augment"], g["decay_epochs"], g["runs"]) for g in cmp["groups"]] == [(True, [50, 100], 2)]
    assert format_comparison(cmp).splitlines()[2].split()[:3] == ["true", "50:100", "2"]


def test_the_table_gives_each_combinations_mean_sd_and_median_speed(tmp_path, monkeypatch):
    """Three finished seeds of uneven accuracy and speed: the table's accuracy is their mean (not the median),
    its ± their sample standard deviation, test and validation each its own, and its it/s their median speed (not
    the mean, which one slow or fast run would pull); the same numbers in the text, Markdown and CSV tables (the
    speed to 4 significant digits there)."""
    import fastjem.sweep
    from fastjem.sweep import format_summary, summarise

    test, val, speed = [0.5, 0.6, 0.9], [0.3, 0.35, 0.7], [1.0, 2.3456, 6.0]
    grid = {"lr": [0.001]}
    runs = [(f"lr=0.001+seed={s}", {"lr": 0.001}, None) for s in (1, 2, 3)]
    rows = {}
    for (name, _, _), t, v, s in zip(runs, test, val, speed):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.jsonl").write_text("")
        rows[name] = {"status": "done", "test_acc": t, "val_acc": v, "it_per_s": s, "recoveries": 0}
    monkeypatch.setattr(fastjem.sweep, "run_row", lambda folder: rows[folder.name])
    (g,) = summarise(tmp_path, grid, runs)["groups"]
    assert g["test_acc"] == pytest.approx(statistics.mean(test)) and g["val_acc"] == pytest.approx(0.45)
    assert g["test_acc_std"] == pytest.approx(statistics.stdev(test))
    assert g["val_acc_std"] == pytest.approx(statistics.stdev(val))
    assert g["it_per_s"] == 2.3456
    result = {"grid": grid, "groups": [g]}
    sd_test, sd_val = f"{statistics.stdev(test):.4f}", f"{statistics.stdev(val):.4f}"
    assert (sd_test, sd_val) == ("0.2082", "0.2179")
    assert format_summary(result, "md").splitlines()[2] == \
        f"| 0.001 | 3/3 | 0.6667 ± {sd_test} | 0.4500 ± {sd_val} | 2.35 | 0 |"
    assert format_summary(result).splitlines()[2].split() == \
        ["0.001", "3/3", "0.6667", "±", sd_test, "0.4500", "±", sd_val, "2.35", "0"]
    assert format_summary(result, "csv").splitlines()[1] == \
        f"0.001,3,3,0,0,0.666667,{statistics.stdev(test):.6g},0.45,{statistics.stdev(val):.6g},2.346,0"


def test_a_dry_runs_time_to_go_takes_the_median_speed_of_its_combinations_runs():
    """Three finished seeds at 1, 2 and 6 it/s: the fourth seed's 40 iterations take about 20 s (2 it/s, their
    median), not 13 s (3 it/s, their mean, pulled by one fast run)."""
    from fastjem.config import TrainConfig
    from fastjem.sweep import _time_to_go

    cfg = TrainConfig(preset="test").replace(iters=40)
    combo = {"lr": 1e-3}
    runs = [(f"lr=0.001+seed={s}", combo, cfg) for s in (1, 2, 3, 4)]
    states = dict(zip([n for n, _, _ in runs], ("done", "done", "done", "new")))
    rows = {n: {"it_per_s": rate, "iteration": 40, "status": "done"} for (n, _, _), rate in zip(runs, (1.0, 6.0, 2.0))}
    basis = "the speed of 3 finished runs of this combination"
    assert _time_to_go("lr=0.001+seed=4", combo, cfg, runs, states, rows) == (20.0, 40, 2.0, basis)


def test_after_each_run_the_time_the_rest_will_take_is_at_the_mean_pace_of_the_runs_so_far(tmp_path, capsys,
                                                                                           monkeypatch):
    """Runs of 10, 50 and 20 s: after the second, 2 to go at 30 s each (not the last run's 50 s); after the third, 1
    to go at 26.67 s (their mean; not the last run's 20 s, nor their median's 20 s)."""
    import time

    from fastjem.train import Trainer

    clock, took = [1000.0], iter([10, 50, 20, 40])
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])

    def fit(self):
        clock[0] += next(took)
        return {"test_acc": 0.5, "iteration": 6}

    monkeypatch.setattr(Trainer, "fit", fit)
    assert main(["sweep", "--grid", "sgld-steps=1,2,3,4", "--out-dir", str(tmp_path / "sw"), *TINY]) == 0
    out = capsys.readouterr().out
    assert "[1/4] sgld_steps=1+seed=1: test accuracy 0.5000 in 0m10s (sweep: 0m10s so far; 3 to go, about 0m30s at " \
           "this pace)" in out
    assert "[2/4] sgld_steps=2+seed=1: test accuracy 0.5000 in 0m50s (sweep: 1m00s so far; 2 to go, about 1m00s at " \
           "this pace)" in out
    assert "[3/4] sgld_steps=3+seed=1: test accuracy 0.5000 in 0m20s (sweep: 1m20s so far; 1 to go, about 0m27s at " \
           "this pace)" in out
    assert "[4/4] sgld_steps=4+seed=1: test accuracy 0.5000 in 0m40s (sweep: 2m00s so far)\n" in out


def test_a_decay_rate_0_that_a_run_reaches_is_refused_before_the_sweep_folder_is_made(tmp_path, capsys):
    """The check needs the epoch's length, which only the data gives: each run failed it in turn, reported for the
    same command to try again (which fails it again); the sweep loads the data and refuses it up front."""
    folder = tmp_path / "sw"
    args = ["sweep", "--grid", "decay-rate=0,0.3", "--seeds", "1", "--out-dir", str(folder), *TINY]
    # digits: 1257 training images, 78 iterations an epoch at batch 16; epoch 0.01 ends after iteration 1 of 6
    for extra in (["--dry-run"], []):
        assert main([*args, "--decay-epochs", "0.01", *extra]) == 1
        assert ("run decay_rate=0+seed=1: --decay-rate 0 sets the learning rate to 0 after iteration 1 (epoch 0.01 "
                "of --decay-epochs), inside this run of 6 iterations") in capsys.readouterr().err
        assert not folder.exists()
    # a decay past the run's end never applies: the rate 0 is taken
    assert main([*args, "--decay-epochs", "0.1", "--dry-run"]) == 0
    assert "start            decay_rate=0+seed=1" in capsys.readouterr().out


def test_the_data_the_decay_rate_0_check_loads_is_trained_on_not_loaded_again(tmp_path, capsys, monkeypatch):
    """The --decay-rate 0 check loads the data; the sweep's first run trains on what it loaded (it was loaded a
    second time, in full, by the run); the next run loads its own (the images are not held between runs), and the
    runs record the dataset, not data given in Python."""
    import weakref

    import fastjem.data
    import fastjem.train

    loads, checked_alive = [], []
    real, real_init = fastjem.data.load_arrays, fastjem.train.Trainer.__init__

    def counted(*args, **kwargs):
        arrays = real(*args, **kwargs)
        loads.append(weakref.ref(arrays))
        return arrays

    def init(self, *args, **kwargs):
        checked_alive.append(loads[0]() is not None)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(fastjem.data, "load_arrays", counted)
    monkeypatch.setattr(fastjem.train, "load_arrays", counted)
    monkeypatch.setattr(fastjem.train.Trainer, "__init__", init)
    folder = tmp_path / "sw"
    assert main(["sweep", "--grid", "decay-rate=0,0.3", "--seeds", "1", "--out-dir", str(folder), *TINY,
                 "--decay-epochs", "0.1"]) == 0
    assert len(loads) == 2  # the check's (the first run's too), the second run's
    assert checked_alive == [True, False]  # and the check's images go once the first run is done
    for run in ("decay_rate=0+seed=1", "decay_rate=0.3+seed=1"):
        assert json.loads((folder / run / "config.json").read_text())["dataset"] == "digits"
    assert json.loads((folder / "results.json").read_text())["interrupted"] is None
    capsys.readouterr()


def test_a_run_refused_for_its_options_is_not_said_to_be_tried_again_by_the_same_command(tmp_path, capsys,
                                                                                      monkeypatch):
    import fastjem.train

    def refuse(cfg, **kwargs):
        raise ConfigError("--buffer-size 200 is not divisible by 1 x 3")

    monkeypatch.setattr(fastjem.train, "Trainer", refuse)
    folder = tmp_path / "sw"
    assert main(["sweep", "--grid", "sgld-steps=1", "--seeds", "1", "--out-dir", str(folder), *TINY]) == 1
    out, err = capsys.readouterr()
    assert ("sgld_steps=1+seed=1: failed: --buffer-size 200 is not divisible by 1 x 3; the sweep goes on (the same "
            "command fails it again where the sweep's options are refused: give other options with another "
            "--out-dir)") in out
    assert ("1 run failed (above): mend the cause and run the same command again; of these, 1 failed for an option: "
            "where the sweep gives it, give the sweep other options with another --out-dir") in err
    assert json.loads((folder / "results.json").read_text())["refused"] == ["sgld_steps=1+seed=1"]

"""fastjem sweep: the grid, the run folders, continuing an interrupted sweep, and the per-combination table."""

import json
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
                         ("lr", "OPTION=V1"), ("sgld_steps=5,5", "repeated"), ("out_dir=a,b", "not a training")):
        with pytest.raises(ConfigError, match=message):
            parse_grid([bad])


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
    names = ["sgld_steps=1+seed=1", "sgld_steps=1+seed=2", "sgld_steps=2+seed=1", "sgld_steps=2+seed=2"]
    for name in names:
        summary = json.loads((folder / name / "summary.json").read_text())
        assert summary["iteration"] == 6
    assert json.loads((folder / "sgld_steps=2+seed=1" / "config.json").read_text())["sgld_steps"] == 2
    result = json.loads((folder / "results.json").read_text())
    assert [g["sgld_steps"] for g in result["groups"]] == ["1", "2"] and all(g["done"] == 2 for g in result["groups"])
    for g, pair in zip(result["groups"], (names[:2], names[2:])):
        accs = [json.loads((folder / n / "summary.json").read_text())["test_acc"] for n in pair]
        assert g["test_acc"] == pytest.approx(statistics.mean(accs))
        assert g["test_acc_std"] == pytest.approx(statistics.stdev(accs))
    assert "test acc" in out and "±" in out
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
    assert "differs in lr" in capsys.readouterr().err
    assert main(["sweep", "--grid", "sgld-steps=1", "--seed", "3", "--out-dir", str(tmp_path / "x"), *TINY]) == 1
    assert "--seeds" in capsys.readouterr().err


def test_a_run_that_diverges_beyond_recovery_is_marked_and_the_sweep_goes_on(tmp_path, capsys, monkeypatch):
    from fastjem.train import DivergedError, Trainer

    real_fit = Trainer.fit

    def fit(self):
        if self.cfg.seed == 2:
            self.save_checkpoint()
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
    # not run again (its checkpoint would resume into the same divergence)
    monkeypatch.setattr(Trainer, "fit", real_fit)
    assert main(args) == 0
    assert "sgld_steps=1+seed=2: diverged, skipped" in capsys.readouterr().out

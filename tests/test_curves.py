"""Training curves: what metrics.jsonl holds, read the way the run went, and drawn."""

import json

import pytest

from fastjem.cli import main
from fastjem.curves import plot_run, read_metrics
from fastjem.errors import ConfigError


def _write(path, records, torn_tail=False):
    text = "".join(json.dumps(r) + "\n" for r in records)
    path.write_text(text + ('{"iter": 9, "lo' if torn_tail else ""))


def _train(it, loss=1.0):
    return {"iter": it, "loss": loss, "ce": loss, "acc": 0.5, "e_data": 0.0, "e_sample": 0.1, "it_per_s": 10.0,
            "lr": 1e-3}


def test_read_metrics_keeps_the_iterations_the_final_model_went_through(tmp_path):
    records = [_train(2), _train(4), {"iter": 4, "val_acc": 0.6}, _train(6, loss=9.0), {"iter": 6, "val_acc": 0.1},
               {"event": "divergence", "iter": 6, "rolled_back_to": 4},
               _train(6, loss=0.5), _train(8), {"iter": 8, "val_acc": 0.7, "test_acc": 0.71},
               {"loss": 3.0}, [8, 1.0]]  # lines that are not records (no iteration) are passed over
    _write(tmp_path / "metrics.jsonl", records, torn_tail=True)
    m = read_metrics(tmp_path)
    assert [r["iter"] for r in m.train] == [2, 4, 6, 8]
    assert m.train[2]["loss"] == 0.5  # the recomputed iteration replaced the diverged one
    assert [(e["iter"], e["val_acc"]) for e in m.evals] == [(4, 0.6), (8, 0.7)]  # the rolled-back eval is gone
    assert [e["iter"] for e in m.events] == [6]


def test_a_long_log_is_read_in_time_linear_in_its_lines(tmp_path, monkeypatch):
    """Hundreds of thousands of lines (--log-every 1 on a long run): each record compared with the whole list read
    so far made fastjem plot / fastjem runs quadratic (hours). Counted in comparisons of iterations, not seconds."""
    import fastjem.curves as curves

    compared = [0]

    class Iter(int):
        def __lt__(self, other):
            compared[0] += 1
            return int(self) < int(other)

        def __ge__(self, other):
            compared[0] += 1
            return int(self) >= int(other)

    class CountingJson:
        JSONDecodeError = json.JSONDecodeError

        @staticmethod
        def loads(line):
            r = json.loads(line)
            if isinstance(r, dict) and "iter" in r:
                r["iter"] = Iter(r["iter"])
            return r

    n = 3000
    records = [_train(i) for i in range(1, n + 1)] + [{"iter": i, "val_acc": 0.5} for i in range(n, n + 1)]
    records += [_train(n - 1, loss=0.25)]  # a rollback's recomputed iteration still replaces the later records
    _write(tmp_path / "metrics.jsonl", records)
    monkeypatch.setattr(curves, "json", CountingJson)
    m = read_metrics(tmp_path)
    assert [r["iter"] for r in m.train[-2:]] == [n - 2, n - 1] and m.train[-1]["loss"] == 0.25 and m.evals == []
    assert len(m.train) == n - 1
    assert compared[0] < 10 * len(records), f"{compared[0]} comparisons for {len(records)} lines"


def test_training_writes_curves_and_plot_redraws_them(tiny_config, tmp_path, capsys):
    from fastjem.train import Trainer

    out = tmp_path / "run"
    summary = Trainer(tiny_config, out_dir=out, progress=False, log=lambda *a: None).fit()
    assert summary["curves"] == str(out / "curves.png")
    assert (out / "curves.png").stat().st_size > 20000
    (out / "curves.png").unlink()
    assert main(["plot", str(out), "--out", str(tmp_path / "again.png")]) == 0
    assert (tmp_path / "again.png").stat().st_size > 20000 and not (out / "curves.png").exists()
    assert str(tmp_path / "again.png") in capsys.readouterr().out


def test_curves_that_fail_to_draw_cost_a_warning_not_the_run(tiny_config, tmp_path, monkeypatch):
    import fastjem.curves
    from fastjem.train import Trainer

    def broken(run_dir):
        raise RuntimeError("no usable font")

    monkeypatch.setattr(fastjem.curves, "plot_run", broken)
    said = []
    summary = Trainer(tiny_config.replace(iters=2), out_dir=tmp_path, progress=False,
                      log=lambda *a: said.append(" ".join(map(str, a)))).fit()
    assert summary["curves"] is None and (tmp_path / "summary.json").exists()
    assert "warning: training curves not drawn: RuntimeError: no usable font" in said


def test_the_test_star_leaves_the_last_validation_point_in_sight(tmp_path, drawn):
    """A run evaluated only at its end draws its validation point where the test star is (0.95 against 0.96 on the
    quick preset): the star lies behind the lines, the point on it."""
    _write(tmp_path / "metrics.jsonl", [_train(2), _train(4), {"iter": 4, "val_acc": 0.95, "test_acc": 0.96}])
    plot_run(tmp_path)
    ax = drawn[0].axes[1]
    (val,) = [line for line in ax.lines if line.get_label() == "validation"]
    (test,) = [line for line in ax.lines if line.get_label().startswith("test ")]
    assert list(test.get_xdata()) == list(val.get_xdata()) == [4] and test.get_zorder() < val.get_zorder()


def test_plot_errors_say_what_to_give(tmp_path, capsys):
    assert main(["plot", str(tmp_path)]) == 1
    assert "a run folder holds metrics.jsonl" in capsys.readouterr().err
    (tmp_path / "metrics.jsonl").write_text("")
    with pytest.raises(ConfigError, match="no training records"):
        plot_run(tmp_path)
    for made in ("config.json", "checkpoint.pt"):  # a run that stopped before its first log line, either way
        run = tmp_path / made.split(".")[0]
        run.mkdir()
        (run / made).write_text("{}")
        with pytest.raises(ConfigError, match="stopped before its first log line"):
            read_metrics(run)
    for gone in (tmp_path / "nope", tmp_path / "nope" / "metrics.jsonl"):  # a mistyped folder, or its file
        with pytest.raises(ConfigError, match=r"nope(/metrics\.jsonl)? does not exist: give a fastjem run folder"):
            read_metrics(gone)


def test_classifier_only_runs_are_not_drawn_with_sample_energies(tmp_path):
    _write(tmp_path / "metrics.jsonl", [_train(2), _train(4)])
    assert read_metrics(tmp_path).generative  # no config: a sample energy was logged
    _write(tmp_path / "metrics.jsonl", [{**_train(2), "e_sample": 0.0}, {**_train(4), "e_sample": 0.0}])
    assert not read_metrics(tmp_path).generative  # no config, and no sample energy ever logged
    _write(tmp_path / "metrics.jsonl", [{"iter": 2, "loss": 1.0}])
    assert not read_metrics(tmp_path).generative  # nor any energy at all
    _write(tmp_path / "metrics.jsonl", [_train(2), _train(4)])
    (tmp_path / "config.json").write_text(json.dumps({"px_weight": 0.0, "pxy_weight": 0.0}))
    assert not read_metrics(tmp_path).generative
    (tmp_path / "config.json").write_text(json.dumps({"px_weight": 1.0, "pxy_weight": 0.0}))
    assert read_metrics(tmp_path).generative


def test_plot_overlays_several_runs(tiny_config, tmp_path, capsys):
    from fastjem.train import Trainer

    for name, cfg in (("jem", tiny_config), ("clf", tiny_config.replace(px_weight=0.0))):
        Trainer(cfg, out_dir=tmp_path / name, progress=False, log=lambda *a: None).fit()
    assert main(["plot", str(tmp_path / "jem"), str(tmp_path / "clf")]) == 1
    assert "--out" in capsys.readouterr().err
    assert main(["plot", str(tmp_path / "jem"), str(tmp_path / "clf"), "--out", str(tmp_path / "both.png")]) == 0
    assert (tmp_path / "both.png").stat().st_size > 20000


def _blue_pixels(path):
    """Pixels of the runs' first colour (tab:blue), not of the black text and axes."""
    import numpy as np
    from PIL import Image

    a = np.asarray(Image.open(path).convert("RGB"), dtype=int)
    return int(((a[..., 2] - a[..., 0]) > 80).sum())


def test_plot_output_paths_and_runs_with_little_or_nothing_logged(tmp_path, capsys, monkeypatch):
    for name, records in (("one", [_train(2)]), ("none", [])):
        (tmp_path / "sw" / name).mkdir(parents=True)
        _write(tmp_path / "sw" / name / "metrics.jsonl", records)
    for k in range(7):  # more runs than the palette's six colours
        (tmp_path / "sw" / f"r{k}").mkdir()
        _write(tmp_path / "sw" / f"r{k}" / "metrics.jsonl", [_train(2, 1.0 + k), _train(4, 0.5 + k)])
    # a run started with nothing logged yet (its config.json alone): listed among the runs, drawn as nothing
    (tmp_path / "sw" / "started").mkdir()
    (tmp_path / "sw" / "started" / "config.json").write_text("{}")
    # a sweep's folder with a run that logged nothing: the others are drawn, the empty one named in the title
    assert main(["plot", str(tmp_path / "sw")]) == 0
    assert (tmp_path / "sw" / "curves.png").stat().st_size > 20000
    # --out given: the figure goes there, not into the sweep's folder
    (tmp_path / "sw" / "curves.png").unlink()
    assert main(["plot", str(tmp_path / "sw"), "--out", str(tmp_path / "sweep.png")]) == 0
    assert (tmp_path / "sweep.png").exists() and not (tmp_path / "sw" / "curves.png").exists()
    # one record: drawn as a marker (a line through one point draws nothing)
    two = plot_run(tmp_path / "sw" / "r0", tmp_path / "two.png")
    one = plot_run(tmp_path / "sw" / "one", tmp_path / "one.png")
    assert _blue_pixels(one) > 0.1 * _blue_pixels(two)  # without markers about 0.06 (only the legend's swatches)
    with pytest.raises(ConfigError, match="no training records"):
        plot_run(tmp_path / "sw" / "none")
    # a run that diverged before its first record is named as such, alone and in an overlay
    (tmp_path / "div").mkdir()
    _write(tmp_path / "div" / "metrics.jsonl", [{"event": "divergence", "iter": 2, "action": "stop"}])
    with pytest.raises(ConfigError, match="diverged before its first training record"):
        plot_run(tmp_path / "div")
    from fastjem.curves import plot_curves, read_metrics

    said = []
    monkeypatch.setattr("fastjem.eval.plots._save", lambda fig, path, tight=False: said.append(
        (fig._suptitle.get_text(), tight, [t.get_text() for t in fig.legends[0].get_texts()])))
    plot_curves({**{f"sgld_steps=5+buffer_init=informative+seed={k}": read_metrics(tmp_path / "sw" / f"r{k}")
                    for k in range(5)}, "lr=50+seed=1": read_metrics(tmp_path / "div"),
                 "lr=1+seed=1": read_metrics(tmp_path / "sw" / "none")}, tmp_path / "x.png")
    monkeypatch.undo()
    title, tight, labels = said[0]
    assert title == "not plotted, diverged before any record: lr=50+seed=1; not plotted, no records yet: lr=1+seed=1"
    # more than four runs: one legend of the runs beside the panels, and the saved image grows to hold it
    assert tight and len(labels) == 5
    capsys.readouterr()
    # --out: a folder takes curves.png, a name that is not a figure file is refused, an unwritable place is an error
    assert main(["plot", str(tmp_path / "sw" / "r0"), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "curves.png").exists() and str(tmp_path / "curves.png") in capsys.readouterr().out
    for out, message in ((tmp_path / "o.txt", "name a figure file"), (tmp_path / "two.png" / "x.png",
                                                                         "cannot write the figure")):
        assert main(["plot", str(tmp_path / "sw" / "r0"), "--out", str(out)]) == 1
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
    assert main(["plot", str(tmp_path / "sw" / "r0" / "metrics.jsonl").replace("metrics.jsonl", "config.json")]) == 1
    (tmp_path / "sw" / "r0" / "config.json").write_text("{}")
    assert main(["plot", str(tmp_path / "sw" / "r0" / "config.json")]) == 1
    assert "is not a metrics.jsonl" in capsys.readouterr().err


def test_plot_replaces_its_own_figure_at_out_and_nothing_else_without_force(tmp_path, capsys):
    """plot is drawn again over its own figure while a run trains; a mistaken --out RUN/samples.png (a sample grid)
    or any other program's file was replaced unasked. Every figure fastjem writes carries its mark, in each format's
    metadata, and plot --out replaces a file only when it holds the mark, or with --force."""
    import torch
    from PIL import Image

    from fastjem.eval.plots import _figures, _save, drawn_by_fastjem, image_grid

    for suffix in (".pdf", ".svg", ".eps", ".tif", ".webp"):  # each format's metadata
        fig, ax = _figures().subplots(figsize=(1, 1))
        assert drawn_by_fastjem(_save(fig, tmp_path / f"fig{suffix}")), suffix
    (tmp_path / "r").mkdir()
    _write(tmp_path / "r" / "metrics.jsonl", [_train(2), _train(4, 0.5)])
    for out in (tmp_path / "fig.png", tmp_path / "fig.png", tmp_path / "fig.jpg", tmp_path / "fig.jpg"):
        assert main(["plot", str(tmp_path / "r"), "--out", str(out)]) == 0  # the second draws over the first
        assert drawn_by_fastjem(out)
    grid = image_grid(torch.zeros(4, 3, 8, 8), tmp_path / "samples.png")  # a run's sample grid
    Image.new("RGB", (4, 4)).save(tmp_path / "photo.jpg")
    for other in (grid, tmp_path / "photo.jpg"):
        before = other.read_bytes()
        capsys.readouterr()
        assert main(["plot", str(tmp_path / "r"), "--out", str(other)]) == 1
        err = capsys.readouterr().err
        assert "is not a figure fastjem drew: pass --force" in err and "Traceback" not in err
        assert other.read_bytes() == before and not drawn_by_fastjem(other)
    assert main(["plot", str(tmp_path / "r"), "--out", str(grid), "--force"]) == 0
    assert drawn_by_fastjem(grid)
    # the default output, RUN/curves.png, is plot's own by name (a run's curves drawn before the mark)
    (tmp_path / "r" / "curves.png").write_bytes(before)
    assert main(["plot", str(tmp_path / "r")]) == 0 and drawn_by_fastjem(tmp_path / "r" / "curves.png")


def test_a_sweeps_mean_curves_average_each_combinations_seeds(tmp_path, capsys, monkeypatch):
    """fastjem plot SWEEP --mean: one line per combination, the mean over its seeds at the iterations all of them
    logged (a seed's extra iteration is left out), a band of ± one sample standard deviation, the validation and
    test accuracies' means with error bars; the legend says how many seeds each line averages."""
    import statistics

    from fastjem.config import TrainConfig
    from fastjem.sweep import check_spec, run_name, spec_of

    grid = {"lr": [1e-3, 2e-3]}
    check_spec(tmp_path / "sw", spec_of(TrainConfig(preset="test"), grid, [1, 2]))
    losses = {(1e-3, 1): [1.0, 0.8, 0.7, 0.5], (1e-3, 2): [1.2, 0.6, 0.9], (2e-3, 1): [2.0, 1.0, 0.5],
              (2e-3, 2): [3.0, 2.0, 1.5]}
    for (lr, seed), ls in losses.items():
        run = tmp_path / "sw" / run_name({"lr": lr}, seed)
        run.mkdir()
        records = [_train(2 * (i + 1), loss) for i, loss in enumerate(ls)]
        records.insert(2, {"iter": 4, "val_acc": 0.5 + seed / 10})
        _write(run / "metrics.jsonl", records + [{"iter": 2 * len(ls), "test_acc": 0.6 + seed / 10}])
    figures = []
    monkeypatch.setattr("fastjem.eval.plots._save", lambda fig, path, tight=False: figures.append((fig, path, tight)))
    assert main(["plot", str(tmp_path / "sw"), "--mean"]) == 0
    fig, path, tight = figures[0]
    assert path == tmp_path / "sw" / "curves-mean.png" and tight
    loss_ax, acc_ax = fig.axes[0], fig.axes[1]
    lines = [ln for ln in loss_ax.lines]
    assert list(lines[0].get_xdata()) == [2, 4, 6]  # iteration 8 only one seed reached
    assert list(lines[0].get_ydata()) == pytest.approx([1.1, 0.7, 0.8])
    assert list(lines[1].get_ydata()) == pytest.approx([2.5, 1.5, 1.0])
    band = loss_ax.collections[0].get_paths()[0].vertices[:, 1]
    sd = statistics.stdev([1.0, 1.2])
    assert max(band) == pytest.approx(1.1 + sd)
    assert min(band) == pytest.approx(min(0.7 - statistics.stdev([0.8, 0.6]), 0.8 - statistics.stdev([0.7, 0.9])))
    # validation and test: mean ± sd over the seeds (0.6 and 0.7; 0.7 and 0.8)
    val, test = acc_ax.containers[:2]
    assert list(val.lines[0].get_xdata()) == [4] and list(val.lines[0].get_ydata()) == pytest.approx([0.65])
    assert list(test.lines[0].get_ydata()) == pytest.approx([0.75])
    assert val.lines[2][0].get_segments()[0][:, 1] == pytest.approx([0.65 - statistics.stdev([0.6, 0.7]),
                                                                     0.65 + statistics.stdev([0.6, 0.7])])
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["lr=0.001 (n=2)", "lr=0.002 (n=2)"]
    monkeypatch.undo()
    assert main(["plot", str(tmp_path / "sw" / run_name({"lr": 1e-3}, 1)), "--mean"]) == 1
    assert "is not a sweep folder" in capsys.readouterr().err


def test_a_run_with_only_the_pxy_term_is_drawn_as_generative(tmp_path):
    """A run with --px-weight 0 and --pxy-weight 1 samples (class-conditionally): its curves have the sample
    energies, not the classifier-only layout."""
    from fastjem.curves import _generative

    (tmp_path / "config.json").write_text(json.dumps({"px_weight": 0.0, "pxy_weight": 1.0}))
    assert _generative(tmp_path, [])
    (tmp_path / "config.json").write_text(json.dumps({"px_weight": 0.0, "pxy_weight": 0.0}))
    assert not _generative(tmp_path, [])


def test_runs_of_one_name_are_two_lines_and_the_best_marker_is_the_last_kept(tmp_path, monkeypatch):
    """`fastjem plot a/run b/run`: two runs named alike are told apart by their paths (one of them was dropped
    from the overlay); the best.pt marker sits at the last validation that was kept (what best.pt holds)."""
    import fastjem.curves as curves
    import fastjem.eval.plots as plots

    seen = {}
    real = curves.plot_curves
    monkeypatch.setattr(curves, "plot_curves", lambda runs, out, **k: seen.update(runs=runs) or real(runs, out, **k))
    labels = []
    save = plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, path, **k: labels.extend(
        line.get_label() for ax in fig.axes for line in ax.get_lines()) or save(fig, path, **k))
    for parent in ("a", "b"):
        run = tmp_path / parent / "run"
        run.mkdir(parents=True)
        rows = [{"iter": i, "loss": 1.0 / i, "acc": 0.5, "ce": 1.0} for i in (2, 4, 6, 8)]
        rows += [{"iter": 4, "val_acc": 0.6, "best": True}, {"iter": 6, "val_acc": 0.5, "best": False},
                 {"iter": 8, "val_acc": 0.7, "best": True}]
        (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    curves.plot_runs([tmp_path / "a" / "run", tmp_path / "b" / "run"], tmp_path / "both.png")
    assert sorted(seen["runs"]) == [str(tmp_path / "a" / "run"), str(tmp_path / "b" / "run")]
    assert any("best.pt (iteration 8)" in label for label in labels)
    assert not any("best.pt (iteration 4)" in label for label in labels)


def test_plot_names_the_run_and_its_setup_in_the_title(tmp_path, drawn):
    run = tmp_path / "myrun"
    run.mkdir()
    _write(run / "metrics.jsonl", [_train(2), _train(4)])
    plot_run(run)
    assert drawn[-1]._suptitle.get_text() == "myrun"  # no config.json: the folder's name alone
    (run / "config.json").write_text(json.dumps({"dataset": "digits", "arch": "convnet", "batch_size": 32}))
    plot_run(run)
    assert drawn[-1]._suptitle.get_text() == "myrun: digits, convnet, batch 32"


def test_a_sweeps_mean_leaves_out_the_test_mark_until_every_seed_has_one(tmp_path, drawn):
    """Mid-sweep, one seed finished (a test accuracy logged) and the other still running: --mean draws the curves
    and leaves the test mark out rather than averaging one seed or failing."""
    from fastjem.config import TrainConfig
    from fastjem.sweep import check_spec, run_name, spec_of

    check_spec(tmp_path / "sw", spec_of(TrainConfig(preset="test"), {"lr": [1e-3]}, [1, 2]))
    for seed in (1, 2):
        run = tmp_path / "sw" / run_name({"lr": 1e-3}, seed)
        run.mkdir()
        done = [{"iter": 4, "test_acc": 0.7}] if seed == 1 else []
        _write(run / "metrics.jsonl", [_train(2), _train(4)] + done)
    assert main(["plot", str(tmp_path / "sw"), "--mean"]) == 0
    acc_ax = drawn[0].axes[1]
    assert not acc_ax.containers  # no error bars: no validation, and the test mark waits for seed 2
    # seed 2 finished at iteration 2 and was resumed to 4 (fastjem train --resume --iters 4): its last test counts
    _write(tmp_path / "sw" / run_name({"lr": 1e-3}, 2) / "metrics.jsonl", [_train(2), {"iter": 2, "test_acc": 0.1},
                                                                          _train(4), {"iter": 4, "test_acc": 0.8}])
    assert main(["plot", str(tmp_path / "sw"), "--mean"]) == 0
    (test,) = drawn[1].axes[1].containers
    assert list(test.lines[0].get_xdata()) == [4] and list(test.lines[0].get_ydata()) == pytest.approx([0.75])


def test_a_sweeps_mean_waits_for_records(tmp_path, drawn, capsys):
    """--mean before any run has logged a training record says so; a combination whose seeds have none yet (no
    metrics.jsonl, or only a validation) is left out of the figure and its legend, the others drawn."""
    from fastjem.config import TrainConfig
    from fastjem.sweep import check_spec, run_name, spec_of

    check_spec(tmp_path / "sw", spec_of(TrainConfig(preset="test"), {"lr": [1e-3, 2e-3]}, [1]))
    for lr in (1e-3, 2e-3):
        (tmp_path / "sw" / run_name({"lr": lr}, 1)).mkdir()
    _write(tmp_path / "sw" / run_name({"lr": 2e-3}, 1) / "metrics.jsonl", [{"iter": 0, "val_acc": 0.1}])
    assert main(["plot", str(tmp_path / "sw"), "--mean"]) == 1
    err = capsys.readouterr().err
    assert "no training records to plot yet in" in err and "Traceback" not in err and not drawn
    _write(tmp_path / "sw" / run_name({"lr": 1e-3}, 1) / "metrics.jsonl", [_train(2), _train(4)])
    assert main(["plot", str(tmp_path / "sw"), "--mean"]) == 0
    assert [t.get_text() for t in drawn[0].legends[0].get_texts()] == ["lr=0.001 (n=1)"]
    assert len(drawn[0].axes[0].lines) == 1


def _panel(ax):
    """{label: y values} of the lines an axis draws."""
    return {line.get_label(): list(line.get_ydata()) for line in ax.get_lines() if line.get_label()[0] != "_"}


def test_a_run_stopped_at_a_divergence_is_not_labelled_rolled_back(tmp_path, drawn):
    """The guard's records say what it did: a rollback (action recover) and the stop that ended the run (action stop,
    nothing rolled back) each get their own legend entry."""
    from fastjem.curves import plot_curves

    rows = [{"iter": i, "loss": 2.0 / i, "ce": 1.0 / i, "acc": 0.1 * i, "it_per_s": 7, "lr": 1e-3} for i in (2, 4)]
    rows += [{"event": "divergence", "iter": 3, "reason": ["loss"], "action": "recover"},
             {"event": "divergence", "iter": 4, "reason": ["loss"], "action": "stop"}]
    _write(tmp_path / "metrics.jsonl", rows)
    plot_curves(read_metrics(tmp_path), tmp_path / "c.png")
    labels = [t.get_text() for t in drawn[-1].axes[0].get_legend().get_texts()]
    assert labels.count("divergence, rolled back") == 1 and labels.count("diverged, stopped") == 1
    _write(tmp_path / "metrics.jsonl", rows[:2] + rows[3:])
    plot_curves(read_metrics(tmp_path), tmp_path / "c.png")
    assert "divergence, rolled back" not in [t.get_text() for t in drawn[-1].axes[0].get_legend().get_texts()]


def test_each_panel_draws_its_own_records(tmp_path, drawn):
    """One run: loss and cross-entropy top left; batch, validation, best.pt and test accuracy top right; data and
    sample energies bottom left; it/s bottom right with the learning rate on its own axis; a legend on every
    panel but the speed one. A classifier-only run says so where the energies would be."""
    from fastjem.curves import plot_curves

    rows = [{"iter": i, "loss": 2.0 / i, "ce": 1.0 / i, "acc": 0.1 * i, "e_data": -i, "e_sample": i, "it_per_s": 7 + i,
             "lr": 1e-3 * i} for i in (2, 4)]
    rows += [{"iter": 2, "val_acc": 0.3, "best": True}, {"iter": 4, "val_acc": 0.35, "test_acc": 0.4},
             {"event": "divergence", "iter": 3, "rolled_back_to": 2}]
    _write(tmp_path / "metrics.jsonl", rows)
    plot_curves(read_metrics(tmp_path), tmp_path / "c.png")
    loss, acc, energy, speed, lr = drawn[-1].axes
    # the divergence: a dotted line at its iteration on every panel, named in the loss panel's legend
    for ax in (loss, acc, energy, speed):
        assert [list(line.get_xdata()) for line in ax.get_lines() if line.get_linestyle() == ":"][0] == [3, 3]
    assert "divergence, rolled back" in [t.get_text() for t in loss.get_legend().get_texts()]
    assert _panel(loss) == {"loss": [1.0, 0.5], "cross-entropy": [0.5, 0.25], "divergence, rolled back": []}
    assert _panel(acc) == {"train (batch)": [0.2, 0.4], "validation": [0.3, 0.35], "best.pt (iteration 2)": [0.3],
                           "test 0.4000": [0.4]}
    assert _panel(energy) == {"data": [-2, -4], "SGLD samples": [2, 4]} and not energy.texts
    assert _panel(speed) == {"it/s": [9, 11]} and [list(line.get_ydata()) for line in lr.get_lines()] == [[2e-3, 4e-3]]
    assert [ax.get_legend() is not None for ax in (loss, acc, energy, speed)] == [True, True, True, False]
    assert [ax.get_ylabel() for ax in (loss, acc, energy, speed, lr)] == [
        "loss", "accuracy", "mean energy E(x) = -LSE f(x)", "iterations / s", "learning rate"]
    assert [ax.get_xlabel() for ax in (energy, speed)] == ["iteration", "iteration"]  # under the bottom panels
    (tmp_path / "config.json").write_text(json.dumps({"px_weight": 0.0, "pxy_weight": 0.0}))
    plot_curves(read_metrics(tmp_path), tmp_path / "c.png")
    energy = drawn[-1].axes[2]
    assert not _panel(energy) and [t.get_text() for t in energy.texts] == ["classifier only: no samples"]
    assert energy.texts[0].get_transform() is energy.transAxes  # in the middle of its own panel


@pytest.mark.parametrize("n", [4, 5, 6, 7])
def test_an_overlay_of_more_than_four_runs_has_one_legend_beside_the_panels(tmp_path, drawn, n):
    """Up to four runs: a legend on each panel, speed included. More: one legend of the runs beside the panels and
    a key of the line styles. Up to six runs take the palette's colours; more take tab20's."""
    import matplotlib.pyplot as plt

    from fastjem.curves import plot_curves
    from fastjem.eval.plots import COLOURS

    runs = {f"r{k}": read_metrics(_run(tmp_path / f"r{k}")) for k in range(n)}
    plot_curves(runs, tmp_path / "c.png")
    fig = drawn[-1]
    loss, acc, energy, speed = fig.axes
    assert len(fig.legends) == (n > 4) and all(ax.get_legend() is not None for ax in (loss, acc, energy))
    assert (speed.get_legend() is not None) == (n <= 4) and len(fig.axes) == 4  # no learning-rate axis in an overlay
    if n > 4:
        assert [t.get_text() for t in fig.legends[0].get_texts()] == list(runs)
        assert [t.get_text() for t in loss.get_legend().get_texts()] == ["loss", "cross-entropy"]
        assert [t.get_text() for t in energy.get_legend().get_texts()] == ["data", "SGLD samples"]
        assert [t.get_text() for t in acc.get_legend().get_texts()] == ["train (batch)", "validation", "best.pt",
                                                                        "test"]
    colours = [line.get_color() for line in loss.get_lines()[::2]]  # each run's loss, then its cross-entropy
    assert colours == (list(COLOURS[:n]) if n <= len(COLOURS) else [plt.get_cmap("tab20")(k) for k in range(n)])


def _run(folder):
    folder.mkdir()
    _write(folder / "metrics.jsonl", [_train(2), _train(4)])
    return folder


def test_a_sweep_of_one_seed_has_its_mean_without_a_band(tmp_path, drawn):
    """One seed per combination: the mean is that seed's curve and the ± sd band has no width (the sample sd of one
    value is undefined; it is drawn as 0, not an error)."""
    from fastjem.config import TrainConfig
    from fastjem.sweep import check_spec, run_name, spec_of

    check_spec(tmp_path / "sw", spec_of(TrainConfig(preset="test"), {"lr": [1e-3]}, [1, 2]))
    _run(tmp_path / "sw" / run_name({"lr": 1e-3}, 1))
    # the second seed has started but logged no training window yet: not counted, not drawn
    (tmp_path / "sw" / run_name({"lr": 1e-3}, 2)).mkdir()
    _write(tmp_path / "sw" / run_name({"lr": 1e-3}, 2) / "metrics.jsonl", [{"iter": 2, "val_acc": 0.9}])
    assert main(["plot", str(tmp_path / "sw"), "--mean"]) == 0
    assert drawn[0]._suptitle.get_text() == "sw: each combination's mean over its seeds, band ± 1 sample sd"
    assert [ax.get_xlabel() for ax in drawn[0].axes] == ["", "", "iteration", "iteration"]
    assert [ax.get_ylabel() for ax in drawn[0].axes] == ["loss", "accuracy (batch; o validation, * test)",
                                                         "mean energy E(x) = -LSE f(x) (-- samples)", "iterations / s"]
    loss_ax = drawn[0].axes[0]
    assert list(loss_ax.lines[0].get_ydata()) == [1.0, 1.0]
    assert set(loss_ax.collections[0].get_paths()[0].vertices[:, 1]) == {1.0}
    assert [t.get_text() for t in drawn[0].legends[0].get_texts()] == ["lr=0.001 (n=1)"]
    # the other panels: batch accuracy, data and sample energies, it/s
    _, acc, energy, speed = drawn[0].axes
    assert [list(line.get_ydata()) for line in acc.lines] == [[0.5, 0.5]]
    assert [(list(line.get_ydata()), line.get_linestyle()) for line in energy.lines] == [
        ([0.0, 0.0], "-"), ([0.1, 0.1], "--")] and not energy.texts
    assert [list(line.get_ydata()) for line in speed.lines] == [[10.0, 10.0]]
    # a classifier-only sweep: no energies, and the panel says why
    (tmp_path / "sw" / run_name({"lr": 1e-3}, 1) / "config.json").write_text(json.dumps({"px_weight": 0.0}))
    assert main(["plot", str(tmp_path / "sw"), "--mean"]) == 0
    energy = drawn[1].axes[2]
    assert not energy.lines and [t.get_text() for t in energy.texts] == ["classifier only: no samples"]
    assert energy.texts[0].get_transform() is energy.transAxes


@pytest.mark.parametrize("n", [6, 7])
def test_a_sweeps_mean_of_more_combinations_than_the_palette_takes_tab20(tmp_path, drawn, n):
    """As an overlay: six combinations take the palette's six colours, seven take tab20's."""
    import matplotlib.pyplot as plt

    from fastjem.config import TrainConfig
    from fastjem.eval.plots import COLOURS
    from fastjem.sweep import check_spec, run_name, spec_of

    lrs = [1e-3 * (k + 1) for k in range(n)]
    check_spec(tmp_path / "sw", spec_of(TrainConfig(preset="test"), {"lr": lrs}, [1]))
    for lr in lrs:
        _run(tmp_path / "sw" / run_name({"lr": lr}, 1))
    assert main(["plot", str(tmp_path / "sw"), "--mean"]) == 0
    colours = [line.get_color() for line in drawn[0].axes[0].lines]
    assert colours == (list(COLOURS) if n <= len(COLOURS) else [plt.get_cmap("tab20")(k) for k in range(n)])


def test_an_overlay_names_runs_by_their_folders(tmp_path, drawn):
    """Runs of distinct folder names are labelled by the names alone (two of one name, by their paths)."""
    from fastjem.curves import plot_runs

    plot_runs([_run(tmp_path / "a"), _run(tmp_path / "b")], tmp_path / "c.png")
    assert [line.get_label() for line in drawn[0].axes[0].get_lines()] == [
        "a: loss", "a: cross-entropy", "b: loss", "b: cross-entropy"]


def test_a_sweeps_mean_over_a_seed_that_logged_nan_or_inf_leaves_a_gap(tmp_path, drawn):
    """A seed whose loss went NaN (logged just before the run stopped as diverged) or an energy infinite: --mean
    draws the combination with a gap where a seed's value is not finite, instead of failing in statistics."""
    import math

    from fastjem.config import TrainConfig
    from fastjem.sweep import check_spec, run_name, spec_of

    check_spec(tmp_path / "sw", spec_of(TrainConfig(preset="test"), {"lr": [1e-3]}, [1, 2]))
    for seed, bad in ((1, float("nan")), (2, float("inf"))):
        run = tmp_path / "sw" / run_name({"lr": 1e-3}, seed)
        run.mkdir()
        _write(run / "metrics.jsonl", [_train(2), _train(4, loss=bad if seed == 1 else 2.0), _train(6, loss=bad)])
    assert main(["plot", str(tmp_path / "sw"), "--mean"]) == 0
    loss = drawn[0].axes[0].lines[0].get_ydata()
    assert loss[0] == pytest.approx(1.0) and math.isnan(loss[1]) and math.isnan(loss[2])


def test_a_sweeps_mean_at_its_first_record_draws_a_point(tmp_path, drawn):
    """Early in a sweep every seed has logged one training record: --mean marks that point (as a single run's plot
    does), where a line through one point drew empty panels."""
    from fastjem.config import TrainConfig
    from fastjem.sweep import check_spec, run_name, spec_of

    check_spec(tmp_path / "sw", spec_of(TrainConfig(preset="test"), {"lr": [1e-3]}, [1, 2]))
    for seed in (1, 2):
        run = tmp_path / "sw" / run_name({"lr": 1e-3}, seed)
        run.mkdir()
        _write(run / "metrics.jsonl", [_train(2, loss=seed)])
    assert main(["plot", str(tmp_path / "sw"), "--mean"]) == 0
    (line,) = drawn[0].axes[0].lines
    assert list(line.get_xdata()) == [2] and list(line.get_ydata()) == [1.5] and line.get_marker() == "o"


def test_a_run_still_training_before_its_first_log_line_is_not_said_stopped(tmp_path):
    """plot on a run that trains in another process and has logged nothing yet: still training, not stopped."""
    import fcntl

    (tmp_path / "config.json").write_text("{}")
    with open(tmp_path / ".lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 12345")
        held.flush()
        with pytest.raises(ConfigError, match=r"still training \(pid 12345\)") as err:
            read_metrics(tmp_path)
        assert "stopped" not in str(err.value)
    with pytest.raises(ConfigError, match="stopped before its first log line"):
        read_metrics(tmp_path)

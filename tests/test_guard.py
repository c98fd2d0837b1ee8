"""Divergence recovery and crash safety (issue: training that survives)."""

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch

from fastjem.checkpoint import load_checkpoint
from fastjem.train import DivergedError, Trainer, resume_config


def params(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


@pytest.fixture
def guarded(tiny_config):
    return tiny_config.replace(iters=24, check_every=2, snapshot_every=4, log_every=2, lr=5e-3)


def events(run_dir):
    lines = [json.loads(s) for s in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [r for r in lines if r.get("event") == "divergence"], [r for r in lines if "loss" in r]


def test_healthy_run_is_bit_identical_with_the_guard_on_or_off(guarded, tmp_path):
    on = Trainer(guarded, out_dir=tmp_path / "on", progress=False)
    on.fit()
    off = Trainer(guarded.replace(guard=False), out_dir=tmp_path / "off", progress=False)
    off.fit()
    assert on.guard is not None and off.guard is None
    assert torch.equal(params(on.model), params(off.model))
    assert torch.equal(on.buffer.data, off.buffer.data)
    assert on.recovery.recoveries == 0


@pytest.mark.parametrize("e_data,e_sample,bad", [
    (1.0, 2.0, False),       # healthy
    (1.0, 1.0 + 60.0, True),  # a gap of 60 > --gap-bound 50 with both energies within --energy-bound 100
    (-30.0, 25.0, True),     # energies of both signs
    (30.0, -25.0, True),     # the samples' energy 55 below the data's: the gap in the other direction
    (120.0, 125.0, True),    # energies beyond --energy-bound with a small gap
    (80.0, 120.0, True),     # the samples' energy alone beyond it (data's within, gap 40 within)
    (-120.0, -80.0, True),   # the data's energy alone beyond it (samples' within, gap 40 within)
    (-118.0, -120.0, True),
    (float("nan"), 1.0, True),
    (1.0, float("nan"), True),     # the samples' energy alone not finite (its gap NaN: no comparison flags it)
    (100.0, 99.0, False),          # at --energy-bound is within it ("exceeds" flags)
    (-100.0, -50.0, False),        # a gap of exactly --gap-bound is within it
])
def test_guard_flags_each_bound(guarded, tmp_path, e_data, e_sample, bad):
    """Each of the guard's checks fires on its own: non-finite, an energy's magnitude, the data/sample gap."""
    t = Trainer(guarded.replace(energy_bound=100.0, gap_bound=50.0), out_dir=tmp_path, progress=False)
    parts = {"loss": torch.tensor(0.5), "e_data": torch.tensor(e_data), "e_sample": torch.tensor(e_sample)}
    t.guard.observe(parts)
    assert bool(t.guard.flag) is bad
    assert t.guard.healthy() is not bad
    if bad:
        assert "|gap| > 50" in t.guard.reasons[0]


def test_a_bad_iteration_stays_flagged_after_good_ones(guarded, tmp_path):
    """The flag ORs every iteration since the last check: a later healthy iteration does not clear an earlier bad one
    (a check reads the flag only every --check-every iterations)."""
    t = Trainer(guarded.replace(energy_bound=100.0, gap_bound=50.0), out_dir=tmp_path, progress=False)
    good = {"loss": torch.tensor(0.5), "e_data": torch.tensor(1.0), "e_sample": torch.tensor(2.0)}
    t.guard.observe({"loss": torch.tensor(0.5), "e_data": torch.tensor(1.0), "e_sample": torch.tensor(float("inf"))})
    t.guard.observe(good)
    t.guard.observe(good)
    assert bool(t.guard.flag) and not t.guard.healthy()


def test_a_snapshot_and_a_rollback_each_start_with_the_flag_clear(guarded, tmp_path):
    """The flag covers what happened since the last good state: taking a snapshot clears it, and rolling back to one
    clears it too (the rolled-back state is good, whatever the flag held); the rollback restores the parameters and
    says the snapshot's iteration."""
    t = Trainer(guarded, out_dir=tmp_path, progress=False)
    bad = {"loss": torch.tensor(float("nan"))}
    t.guard.observe(bad)
    t.guard.take_snapshot()
    assert not bool(t.guard.flag)
    before = params(t.model).clone()
    with torch.no_grad():
        for p in t.model.parameters():
            p.add_(1.0)
    t.iteration = 7
    t.guard.observe(bad)
    assert bool(t.guard.flag)
    assert t.guard.restore_snapshot() == 0
    assert not bool(t.guard.flag) and t.guard.healthy()
    assert torch.equal(params(t.model), before)


def test_a_snapshot_outlives_the_training_after_each_rollback_to_it(guarded, tmp_path):
    """Rolled back to twice, a snapshot restores the same state both times: what the first rollback loaded (the
    optimiser's moments, the buffer's chains, the parameters) is a copy that the training after it updates in place,
    not the snapshot's own tensors."""
    t = Trainer(guarded, out_dir=tmp_path, progress=False)
    t.train_step()
    t.guard.take_snapshot()

    def state():
        moments = [v.clone() for s in t.optimizer.state.values() for v in s.values() if isinstance(v, torch.Tensor)]
        return params(t.model).clone(), t.buffer.data.clone(), moments

    saved = state()
    assert saved[2], "the check needs an optimiser with moments"
    for _ in range(2):
        t.guard.restore_snapshot()
        got = state()
        assert torch.equal(got[0], saved[0]) and torch.equal(got[1], saved[1])
        assert all(torch.equal(a, b) for a, b in zip(got[2], saved[2], strict=True))
        t.train_step()
        t.train_step()
    assert not torch.equal(params(t.model), saved[0])


def test_a_non_finite_parameter_is_unhealthy_with_the_flag_clear(guarded, tmp_path):
    """One parameter tensor of many holding an inf (and the losses fine) is enough."""
    t = Trainer(guarded, out_dir=tmp_path, progress=False)
    assert t.guard.healthy()
    last = list(t.model.parameters())[-1]
    with torch.no_grad():
        last.view(-1)[0] = float("inf")
    assert not bool(t.guard.flag) and not t.guard.healthy()
    assert t.guard.reasons == ["non-finite parameters"]


@pytest.mark.parametrize("kind", ["nan", "lr"])
def test_injected_fault_is_recovered_and_training_continues(kind, guarded, tmp_path):
    t = Trainer(guarded.replace(iters=40), out_dir=tmp_path, progress=False)
    t.inject_fault(13, kind)
    summary = t.fit()
    assert summary["recoveries"] == 1
    assert all(torch.isfinite(p).all() for p in t.model.parameters())
    div, train = events(tmp_path)
    assert len(div) == 1 and div[0]["action"] == "recover" and div[0]["rolled_back_to"] <= 12
    assert div[0]["remedy"] == "sgld_steps" and t.sampler.n_steps == 2 * guarded.sgld_steps
    after = [r["loss"] for r in train if r["iter"] > div[0]["iter"] or r is train[-1]]
    assert all(math.isfinite(v) for v in after)
    # still learning after the recovery: cross-entropy at the end is below the start
    assert train[-1]["ce"] < train[0]["ce"]
    ckpt = load_checkpoint(tmp_path / "checkpoint.pt")
    assert ckpt["recovery"]["recoveries"] == 1 and ckpt["iteration"] == 40


@pytest.mark.parametrize("fault", ["nan", "lr"])
def test_a_fault_in_the_last_iteration_off_the_check_grid_is_recovered(guarded, tmp_path, fault):
    """The last iteration is always checked, on the check_every grid or not: a NaN loss there (iteration 13 of 13,
    checks every 2) is rolled back and trained again, not logged as a divergence that ends the run. So is an update
    that blows the weights up (a finite loss, logged): the end found it and rolled back without the remedy, to
    iteration 12, leaving the run one iteration short."""
    t = Trainer(guarded.replace(iters=13), out_dir=tmp_path, progress=False, log=lambda *a: None)
    t.inject_fault(12, fault)  # the step from iteration 12 to 13
    summary = t.fit()
    assert summary["recoveries"] == 1 and summary["iteration"] == 13 and math.isfinite(summary["test_nll"])
    div, train = events(tmp_path)
    assert [d["iter"] for d in div] == [13] and train[-1]["iter"] == 13 and math.isfinite(train[-1]["loss"])


def test_the_progress_bar_goes_on_drawing_after_a_rollback(guarded, tmp_path, monkeypatch):
    """A rollback sets the bar back to the iteration it returns to, and its redraws restart from there: tqdm draws
    only once the count passes the last count drawn, so the bar froze for the iterations trained again and then
    showed their rate over the whole time since."""
    import tqdm

    rewound = []

    class Watched(tqdm.tqdm):
        def refresh(self, *args, **kwargs):
            rewound.append((self.n, self.last_print_n))
            return super().refresh(*args, **kwargs)

    monkeypatch.setattr(tqdm, "tqdm", Watched)
    t = Trainer(guarded.replace(iters=16), out_dir=tmp_path, progress=True, log=lambda *a: None)
    t.inject_fault(9, "nan")  # seen at the check of iteration 10, rolled back to the snapshot of 8
    assert t.fit()["recoveries"] == 1
    assert (8, 8) in rewound and not [(n, last) for n, last in rewound if n < last], rewound


def test_ctrl_c_during_the_final_validation_still_writes_the_last_checkpoint(guarded, tmp_path, monkeypatch):
    """Ctrl-C while the finished loop validates (minutes for a large network on a CPU): the run writes the
    checkpoint of its last iteration and stops as one stopped in the loop does (resume command, interrupted), where
    Ctrl-C ended the process there and lost every iteration since the last periodic checkpoint."""
    seen = []

    def caller(signum, frame):  # the caller's own handler, which the run puts back when it returns
        seen.append(signum)

    previous = signal.signal(signal.SIGINT, caller)
    try:
        lines = []
        t = Trainer(guarded.replace(iters=10, ckpt_every=4), out_dir=tmp_path, progress=False, log=lines.append)
        validate = t._final_validation

        def interrupted_validation():
            signal.raise_signal(signal.SIGINT)
            return validate()

        monkeypatch.setattr(t, "_final_validation", interrupted_validation)
        summary = t.fit()
        assert signal.getsignal(signal.SIGINT) is caller and not seen  # the run's handler took it, then left
    finally:
        signal.signal(signal.SIGINT, previous)
    assert summary["interrupted"] and summary["stopped_by"] == "SIGINT" and summary["iteration"] == 10
    assert load_checkpoint(tmp_path / "checkpoint.pt")["iteration"] == 10
    assert any(s.startswith("resume with: fastjem train --resume") for s in lines)
    assert not (tmp_path / "summary.json").exists()
    resumed = Trainer(resume_config(tmp_path / "checkpoint.pt"), resume=tmp_path / "checkpoint.pt", progress=False,
                      log=lambda *a: None).fit()
    assert resumed["iteration"] == 10 and (tmp_path / "summary.json").exists()


def test_gives_up_after_max_recoveries_keeping_the_last_good_checkpoint(guarded, tmp_path):
    # logged every 4: no record of iteration 10 stands between the rollback's and the give-up's
    t = Trainer(guarded.replace(iters=40, max_recoveries=1, ckpt_every=4, log_every=4), out_dir=tmp_path,
                progress=False)
    t.inject_fault(9, "nan")
    t.inject_fault(10, "nan")  # after the rollback to 8, the next iteration fails again
    with pytest.raises(DivergedError, match="automatic recoveries did not hold") as err:
        t.fit()
    assert f"The last good checkpoint is intact: {tmp_path / 'checkpoint.pt'}" in str(err.value)
    ckpt = load_checkpoint(tmp_path / "checkpoint.pt")
    assert ckpt["iteration"] == 8
    assert all(torch.isfinite(v).all() for v in ckpt["model"].values())
    div, _ = events(tmp_path)
    assert [d["action"] for d in div] == ["recover", "stop"]
    # resumed from that checkpoint, the run continues its records from there: the rollback stays, the stop goes
    Trainer(resume_config(tmp_path / "checkpoint.pt", {"iters": 12}), resume=tmp_path / "checkpoint.pt",
            progress=False).fit()
    div, train = events(tmp_path)
    assert [d["action"] for d in div] == ["recover"] and train[-1]["iter"] == 12


def test_without_the_guard_a_fault_stops_the_run_and_the_checkpoint_is_kept(guarded, tmp_path):
    t = Trainer(guarded.replace(guard=False, iters=40, ckpt_every=4), out_dir=tmp_path, progress=False)
    t.inject_fault(9, "nan")
    with pytest.raises(DivergedError, match="The last good checkpoint is intact"):
        t.fit()
    ckpt = load_checkpoint(tmp_path / "checkpoint.pt")
    assert ckpt["iteration"] == 8 and all(torch.isfinite(v).all() for v in ckpt["model"].values())
    # diverged before any checkpoint: not "intact: checkpoint.pt (if one was written)"
    t = Trainer(guarded.replace(guard=False, iters=40, ckpt_every=20), out_dir=tmp_path / "early", progress=False)
    t.inject_fault(3, "nan")
    with pytest.raises(DivergedError, match="No checkpoint was written before it"):
        t.fit()


def test_an_unguarded_runs_nan_loss_is_logged_as_strict_json(guarded, tmp_path):
    """The record of the iteration that went NaN is kept (it says where the run diverged) as JSON every reader
    takes: null, not Python's bare NaN token, which jq, JavaScript, Go and Rust refuse; fastjem's own readers
    (curves, runs) read it back as NaN."""
    from fastjem.cli import main
    from fastjem.curves import read_metrics

    t = Trainer(guarded.replace(guard=False, iters=40), out_dir=tmp_path, progress=False, log=lambda *a: None)
    t.inject_fault(3, "nan")
    with pytest.raises(DivergedError):
        t.fit()

    def refuse(token):
        raise ValueError(f"not strict JSON: {token}")

    records = [json.loads(s, parse_constant=refuse) for s in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iter"] for r in records] == [2, 4] and records[-1]["loss"] is None
    assert math.isfinite(records[-1]["ce"])
    assert math.isnan(read_metrics(tmp_path).train[-1]["loss"])
    assert main(["plot", str(tmp_path)]) == 0 and main(["runs", str(tmp_path)]) == 0


def _train_cmd(out_dir, iters, *extra):
    return [sys.executable, "-m", "fastjem", "train", "--width", "8", "--batch-size", "16", "--sgld-steps", "2",
            "--buffer-size", "100", "--device", "cpu", "--no-compile", "--no-progress", "--iters", str(iters),
            "--out-dir", str(out_dir), "--ckpt-every", "3", "--log-every", "3", "--seed", "4", *extra]


def _wait_for_checkpoint(path, proc, min_iter, timeout=240):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise AssertionError(f"run ended before it could be killed: {proc.stderr.read()}")
        if path.exists():
            try:
                if load_checkpoint(path)["iteration"] >= min_iter:
                    return
            except Exception:
                pass  # written atomically, but may be replaced while we read: try again
        time.sleep(0.05)
    raise AssertionError("no checkpoint appeared")


def test_sigkill_leaves_a_loadable_checkpoint_and_resume_is_exact(tmp_path):
    full = subprocess.run(_train_cmd(tmp_path / "full", 30), capture_output=True, text=True, timeout=300)
    assert full.returncode == 0, full.stderr
    proc = subprocess.Popen(_train_cmd(tmp_path / "killed", 30), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    _wait_for_checkpoint(tmp_path / "killed" / "checkpoint.pt", proc, 6)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    ckpt = load_checkpoint(tmp_path / "killed" / "checkpoint.pt")
    assert 6 <= ckpt["iteration"] < 30
    leftovers = [p.name for p in (tmp_path / "killed").iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) <= 1  # at most the temp file of a write in flight, never a half checkpoint
    resumed = subprocess.run([sys.executable, "-m", "fastjem", "train", "--resume",
                              str(tmp_path / "killed" / "checkpoint.pt"), "--no-progress"],
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    a = load_checkpoint(tmp_path / "full" / "checkpoint.pt")
    b = load_checkpoint(tmp_path / "killed" / "checkpoint.pt")
    assert a["iteration"] == b["iteration"] == 30
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    assert torch.equal(a["buffer"]["data"], b["buffer"]["data"])


def test_sigterm_finishes_the_iteration_writes_a_checkpoint_and_prints_the_resume_command(tmp_path):
    proc = subprocess.Popen(_train_cmd(tmp_path / "run", 100000), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    _wait_for_checkpoint(tmp_path / "run" / "checkpoint.pt", proc, 3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err  # stopped, not finished: `train && eval` stops there
    assert "SIGTERM received" in out and "fastjem train --resume" in out
    ckpt = load_checkpoint(tmp_path / "run" / "checkpoint.pt")
    assert ckpt["iteration"] >= 3
    cfg = resume_config(tmp_path / "run" / "checkpoint.pt", {"iters": ckpt["iteration"] + 2})
    t = Trainer(cfg, out_dir=tmp_path / "run", resume=tmp_path / "run" / "checkpoint.pt", progress=False)
    assert t.fit()["iteration"] == ckpt["iteration"] + 2
    assert os.path.exists(tmp_path / "run" / "summary.json")


def test_max_minutes_stops_cleanly_and_the_run_resumes(tiny_config, tmp_path):
    lines = []
    t = Trainer(tiny_config.replace(iters=100_000, max_minutes=0.005), out_dir=tmp_path, progress=False,
                log=lambda *a: lines.append(" ".join(map(str, a))))
    start = time.monotonic()
    summary = t.fit()
    assert time.monotonic() - start < 30
    assert summary["interrupted"] and 0 < summary["iteration"] < 100_000
    assert any("time limit of 0.005 min (--max-minutes) reached" in s for s in lines)
    assert any("resume with: fastjem train --resume" in s for s in lines)
    ckpt = load_checkpoint(tmp_path / "checkpoint.pt")
    assert ckpt["iteration"] == summary["iteration"]
    # the next invocation gets its own budget (here none) and finishes the run
    more = resume_config(tmp_path / "checkpoint.pt", {"iters": summary["iteration"] + 3, "max_minutes": 0.0})
    done = Trainer(more, resume=tmp_path / "checkpoint.pt", progress=False).fit()
    assert not done.get("interrupted") and done["iteration"] == summary["iteration"] + 3


def test_the_time_limit_stops_after_the_iteration_that_reaches_it(tiny_config, tmp_path, monkeypatch):
    """--max-minutes against the monotonic clock, in minutes: a clock that moves 5 s a step reaches a half-minute limit
    with the 6th step, after which the run stops (not sooner, not one later)."""
    import fastjem.train as train_mod

    clock = [1000.0]
    monkeypatch.setattr(train_mod.time, "monotonic", lambda: clock[0])
    t = Trainer(tiny_config.replace(iters=20, max_minutes=0.5), out_dir=tmp_path, progress=False,
                log=lambda *a: None)
    step = t.train_step

    def timed_step():
        clock[0] += 5.0
        return step()

    t.train_step = timed_step
    summary = t.fit()
    assert summary["interrupted"] and summary["stopped_by"] == "time limit" and summary["iteration"] == 6


def test_a_custom_log_gets_the_loops_lines_with_the_bar_on(guarded, tmp_path, capsys):
    """The live bar takes over print only: a log function of the caller's own still receives what the loop logs
    (here a rollback) while the bar runs."""
    lines = []
    t = Trainer(guarded.replace(iters=16), out_dir=tmp_path, progress=True,
                log=lambda *a: lines.append(" ".join(map(str, a))))
    t.inject_fault(9, "nan")
    assert t.fit()["recoveries"] == 1
    assert any("Rolled back to iteration" in line for line in lines)
    assert "Rolled back" not in capsys.readouterr().out


def test_a_custom_logs_lines_start_their_own_line_beside_the_bar(guarded, tmp_path, monkeypatch):
    """A caller's own log that prints (a sweep's, into `fastjem sweep > log 2>&1`): the bar is cleared before each
    line the loop logs and drawn again after it, where the line was glued onto the bar's ("...it/s]divergence at
    ...")."""
    import io

    both = io.StringIO()  # stdout and stderr into one file, as `> log 2>&1` has them
    monkeypatch.setattr(sys, "stdout", both)
    monkeypatch.setattr(sys, "stderr", both)
    t = Trainer(guarded.replace(iters=16), out_dir=tmp_path, progress=True, log=lambda *a: print(*a))
    t.inject_fault(9, "nan")
    assert t.fit()["recoveries"] == 1
    text = both.getvalue()
    before = text[:text.index("divergence at iteration")]
    assert before.endswith(("\r", "\n")), repr(before[-120:])


def test_a_blow_up_in_the_update_just_before_a_snapshot_is_not_snapshotted(guarded, tmp_path):
    """The learning-rate fault at iteration 13 blows the parameters up in the update that ends iteration 14, a
    check at which a snapshot is due (snapshot_every 2). No loss has been computed from those parameters yet,
    so the flag is clean; the check must still see that the current parameters' energies are out of bound,
    roll back to iteration 12 and not take the blown-up state as the last good snapshot (from which every
    recovery would fail)."""
    t = Trainer(guarded.replace(iters=30, snapshot_every=2), out_dir=tmp_path, progress=False)
    t.inject_fault(13, "lr")
    summary = t.fit()
    assert summary["recoveries"] == 1
    div, _ = events(tmp_path)
    assert len(div) == 1 and div[0]["iter"] == 14 and div[0]["rolled_back_to"] == 12
    assert "current parameters" in div[0]["reason"]


def test_after_a_recovery_the_rollback_point_is_the_remedied_state(guarded, tmp_path):
    """The state a recovery rolls back to, with its remedy and new seed, is the guard's rollback point from then on
    (until the next snapshot): a later rollback returns to it, not to the state before the remedy."""
    t = Trainer(guarded.replace(iters=8, check_every=2, snapshot_every=100, ckpt_every=0), out_dir=tmp_path,
                progress=False, log=lambda *a: None)
    t.inject_fault(3, "nan")
    recover, seen = t.recover, []

    def recover_and_look():
        recover()
        seen.append((int(t.guard.snapshot["iteration"]), t.guard.snapshot["recovery"], t.recovery.to_dict()))

    t.recover = recover_and_look
    assert t.fit()["recoveries"] == 1
    (at, snapshot_ladder, ladder), = seen
    assert at == 0 and snapshot_ladder == ladder and ladder["recoveries"] == 1


def test_a_stop_after_a_recovery_keeps_the_remedy(guarded, tmp_path):
    """A preemption between checks, after a recovery and a second fault: the state saved is rolled back with the
    remedies of both recoveries (the stop recovers as the next check would), not the state before a remedy (which
    would resume into the divergence)."""
    t = Trainer(guarded.replace(iters=40, check_every=4, log_every=4, snapshot_every=100), out_dir=tmp_path,
                progress=False, log=lambda *a: None)
    t.inject_fault(5, "nan")
    recover, step = t.recover, t.train_step
    recovered = []

    def recover_then_fault_again():
        recover()
        recovered.append(t.iteration)
        t.inject_fault(t.iteration + 1, "nan")

    def step_then_preempt():
        if recovered and t.iteration == recovered[0] + 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return step()

    t.recover, t.train_step = recover_then_fault_again, step_then_preempt
    assert t.fit()["interrupted"]
    ckpt = load_checkpoint(tmp_path)
    saved = ckpt["recovery"]
    assert saved["recoveries"] == 2 and saved["sgld_steps"] == 2 * guarded.sgld_steps and saved["lr_scale"] == 0.5
    # the checkpoint holds the rolled-back state, not the one the second fault made (the stop came between checks)
    assert ckpt["iteration"] == recovered[0] == recovered[1]
    assert all(torch.isfinite(v).all() for v in ckpt["model"].values() if v.is_floating_point())


def test_a_stop_between_a_divergence_and_its_check_recovers_and_the_run_gets_past_it(guarded, tmp_path):
    """Stopped after a divergence but before the check that would see it, the run used to roll back without the
    remedy: resumed, it walked into the same divergence, and stopped there again (a job's time limit at the same
    pace) it went back to the same checkpoint each time, for ever. The stop recovers as that check would: the same
    rollback point, remedy and new seed, so the resumed run is the uninterrupted one (whose record says the check's
    iteration), and a second stop at the same iteration keeps its progress. The copy of iteration 4 kept before the
    divergence stays the state trained then: the stop's rolled-back state, with its remedy, used to replace it."""
    cfg = guarded.replace(iters=8, check_every=4, log_every=4, snapshot_every=4, ckpt_keep_every=4)
    ref = Trainer(cfg, out_dir=tmp_path / "ref", progress=False, log=lambda *a: None)
    ref.inject_fault(5, "nan")
    assert ref.fit()["recoveries"] == 1
    saved = []
    for attempt in range(2):
        resume = tmp_path / "run" / "checkpoint.pt" if attempt else None
        t = Trainer(cfg, out_dir=tmp_path / "run", resume=resume, progress=False, log=lambda *a: None)
        if t.recovery.recoveries == 0:
            t.inject_fault(5, "nan")  # the divergence the state before the remedy walks into
        step = t.train_step

        def stop_at_7(t=t, step=step):
            if t.iteration == 6:
                os.kill(os.getpid(), signal.SIGTERM)
            return step()

        t.train_step = stop_at_7
        assert t.fit()["interrupted"]
        ckpt = load_checkpoint(tmp_path / "run" / "checkpoint.pt")
        saved.append((ckpt["iteration"], ckpt["recovery"]["recoveries"]))
    assert saved == [(4, 1), (7, 1)]
    Trainer(cfg, resume=tmp_path / "run" / "checkpoint.pt", progress=False, log=lambda *a: None).fit()
    # the same run, but for the iteration at which the divergence was seen: 7 at the stop, 8 at the check
    (div,), _ = events(tmp_path / "run")
    assert div["iter"] == 7
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().replace('"iter": 7, "reason"', '"iter": 8, "reason"')
    (tmp_path / "run" / "metrics.jsonl").write_text(lines)
    _assert_same_run(tmp_path / "ref", tmp_path / "run")
    for kept in ("iter_0000004.pt", "iter_0000008.pt"):
        a, b = (load_checkpoint(tmp_path / run / "checkpoints" / kept) for run in ("ref", "run"))
        assert a["recovery"] == b["recovery"] and all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])


def test_where_the_guard_rolls_back_does_not_follow_ckpt_every(guarded, tmp_path):
    """A resume may change --ckpt-every, never what the run computes. A checkpoint adds a check, which took the
    guard's snapshot off the --check-every grid (here at 5, then 10, where the run without checkpoints took 8): a
    later divergence rolled back elsewhere, and the weights differed. Snapshots are taken on the grid only."""
    weights, rolled = [], []
    for ckpt_every in (0, 5):
        cfg = guarded.replace(iters=14, check_every=4, snapshot_every=5, log_every=4, ckpt_every=ckpt_every)
        t = Trainer(cfg, out_dir=tmp_path / str(ckpt_every), progress=False, log=lambda *a: None)
        t.inject_fault(13, "nan")
        t.fit()
        weights.append(params(t.model))
        rolled.append([r["rolled_back_to"] for r in events(tmp_path / str(ckpt_every))[0]])
    assert rolled == [[8], [8]]
    assert torch.equal(weights[0], weights[1])


def test_each_rank_reseeds_its_own_stream_after_a_recovery(guarded, tmp_path):
    from dataclasses import replace as dc_replace

    draws = []
    for rank in (0, 1):
        t = Trainer(guarded.replace(iters=8), out_dir=tmp_path / f"r{rank}", progress=False, log=lambda *a: None)
        t.dist = dc_replace(t.dist, rank=rank)  # the rank only (no collectives: world stays 1)
        t.out_dir.mkdir()
        t.guard.take_snapshot()
        t.guard.reasons = ["test"]
        t.recover()
        with t._own_rng():  # the run's own stream (the caller's generator is not the run's)
            draws.append(torch.randint(0, 1000, (8,)))
    assert not torch.equal(draws[0], draws[1])


def test_a_recovery_draws_new_sgld_and_buffer_noise_and_starts_a_new_metric_window(guarded, tmp_path):
    """After a rollback the sampler's and the buffer's Philox streams take new seeds at the snapshot's offsets (new
    noise, not the abandoned attempt's stream again or shifted), and the metrics logged next are of the steps after
    the rollback alone (not of those before the snapshot either)."""
    t = Trainer(guarded.replace(iters=8), out_dir=tmp_path, progress=False, log=lambda *a: None)
    t.train_step()
    t.guard.take_snapshot()  # with a window under way, which the rollback restores
    before = t.sampler.rng_state.clone(), t.buffer.rng_state.clone()
    for _ in range(2):
        t.train_step()  # the abandoned attempt
    t.guard.reasons = ["test"]
    t.recover()
    for state, old in zip((t.sampler.rng_state, t.buffer.rng_state), before):
        assert state[0] != old[0] and state[1] == old[1], (state, old)
    one = {k: float(v) for k, v in t.train_step().items()}
    got = t.read_metrics()
    assert all(got[name] == pytest.approx(one[name], rel=1e-5, abs=1e-6) for name in ("loss", "ce", "acc", "e_data"))


# ------------------------------------------------------------------ a kill around the guard's rollbacks, resumed
class _Killed(Exception):
    """A process killed at this point: nothing after it runs (fit's normal end, which writes a checkpoint, never
    comes)."""


def _final(run_dir):
    ckpt = load_checkpoint(run_dir / "checkpoint.pt")
    return ckpt, [json.loads(s) for s in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _assert_same_run(a_dir, b_dir):
    (a, a_log), (b, b_log) = _final(a_dir), _final(b_dir)
    assert a["iteration"] == b["iteration"] and a["recovery"] == b["recovery"]
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    assert torch.equal(a["buffer"]["data"], b["buffer"]["data"])
    assert torch.equal(a["sampler"]["rng_state"], b["sampler"]["rng_state"])
    a_opt, b_opt = a["optimizer"]["state"], b["optimizer"]["state"]
    assert all(torch.equal(a_opt[i][k], b_opt[i][k]) for i in a_opt for k in a_opt[i])
    drop = ("it_per_s", "time")
    assert [{k: v for k, v in r.items() if k not in drop} for r in a_log] == \
        [{k: v for k, v in r.items() if k not in drop} for r in b_log]


def _kill_after(t: Trainer, iteration: int) -> None:
    """Run ``t`` until it has trained ``iteration``, then die as a kill would (nothing after that step)."""
    step = t.train_step

    def step_then_die():
        out = step()
        if t.iteration == iteration:
            raise _Killed
        return out

    t.train_step = step_then_die
    with pytest.raises(_Killed):
        t.fit()


def _faulted_pair(guarded, tmp_path):
    """(cfg, trainer): the uninterrupted run in tmp_path/ref, its fault at 13 rolled back once, and a trainer of the
    same run with the same fault in tmp_path/run, not started."""
    cfg = guarded.replace(iters=30, ckpt_every=4, snapshot_every=8)
    ref = Trainer(cfg, out_dir=tmp_path / "ref", progress=False, log=lambda *a: None)
    ref.inject_fault(13, "nan")
    assert ref.fit()["recoveries"] == 1
    t = Trainer(cfg, out_dir=tmp_path / "run", progress=False, log=lambda *a: None)
    t.inject_fault(13, "nan")
    return cfg, t


def test_a_kill_right_after_a_rollback_resumes_the_rolled_back_run(guarded, tmp_path):
    """After a rollback checkpoint.pt held the state the guard had just abandoned until the next checkpoint: a
    kill in between resumed into the divergence. The rolled-back state is written at once, and the resumed run
    is the uninterrupted one."""
    cfg, t = _faulted_pair(guarded, tmp_path)
    recover = t.recover

    def recover_then_die():
        recover()
        raise _Killed

    t.recover = recover_then_die
    with pytest.raises(_Killed):
        t.fit()
    assert load_checkpoint(tmp_path / "run" / "checkpoint.pt")["recovery"]["recoveries"] == 1
    Trainer(cfg, resume=tmp_path / "run" / "checkpoint.pt", progress=False, log=lambda *a: None).fit()
    _assert_same_run(tmp_path / "ref", tmp_path / "run")


def test_a_kill_between_a_rollbacks_record_and_its_checkpoint_resumes_with_the_records_once(guarded, tmp_path):
    """The rollback's record is written before the rolled-back state's checkpoint: killed in between, the run
    resumes from the checkpoint before the divergence, whose past holds neither that record nor the abandoned
    iterations logged after the checkpoint. They are logged once, as the resumed run gets there again: the records
    are the uninterrupted run's (they used to hold both twice, and `fastjem runs` counted two recoveries)."""
    cfg, t = _faulted_pair(guarded, tmp_path)
    log = t._log_jsonl

    def log_then_die(record):
        log(record)
        if record.get("action") == "recover":
            raise _Killed

    t._log_jsonl = log_then_die
    with pytest.raises(_Killed):
        t.fit()
    assert load_checkpoint(tmp_path / "run" / "checkpoint.pt")["recovery"]["recoveries"] == 0
    resumed = Trainer(cfg, resume=tmp_path / "run" / "checkpoint.pt", progress=False, log=lambda *a: None)
    resumed.inject_fault(13, "nan")
    resumed.fit()
    _assert_same_run(tmp_path / "ref", tmp_path / "run")
    assert len(events(tmp_path / "run")[0]) == 1


def test_a_run_rolled_back_to_its_start_and_killed_resumes_with_the_records_once(guarded, tmp_path):
    """A divergence before the first snapshot after the start rolls back to iteration 0, whose state is checkpointed
    at once; killed before the next checkpoint, the run resumes at iteration 0. The records the killed attempt logged
    after the rollback are past that checkpoint and go (a resume at 0 kept them: 2 and 4 were logged twice)."""
    cfg = guarded.replace(iters=12, ckpt_every=8, snapshot_every=8)
    assert _killed_after_a_rollback_to_the_start(cfg, tmp_path, fault=3, die_at=6)["iteration"] == 0
    Trainer(cfg, resume=tmp_path / "run" / "checkpoint.pt", progress=False, log=lambda *a: None).fit()
    _assert_same_run(tmp_path / "ref", tmp_path / "run")


def _killed_after_a_rollback_to_the_start(cfg, tmp_path, fault: int, die_at: int) -> dict:
    """A reference run of ``cfg`` in ref/ with a NaN at iteration ``fault`` (one recovery, back to iteration 0), and
    the same run in run/ killed at iteration ``die_at`` after that rollback: the checkpoint it left."""
    ref = Trainer(cfg, out_dir=tmp_path / "ref", progress=False, log=lambda *a: None)
    ref.inject_fault(fault, "nan")
    assert ref.fit()["recoveries"] == 1
    assert [r["rolled_back_to"] for r in events(tmp_path / "ref")[0]] == [0]
    t = Trainer(cfg, out_dir=tmp_path / "run", progress=False, log=lambda *a: None)
    t.inject_fault(fault, "nan")
    step = t.train_step

    def step_then_die():
        out = step()
        if t.recovery.recoveries == 1 and t.iteration == die_at:
            raise _Killed
        return out

    t.train_step = step_then_die
    with pytest.raises(_Killed):
        t.fit()
    return load_checkpoint(tmp_path / "run" / "checkpoint.pt")


def test_a_rollback_is_checkpointed_at_once_by_a_run_that_keeps_checkpoints_only(guarded, tmp_path):
    """--ckpt-every 0 with --ckpt-keep-every N writes checkpoint.pt as it trains (at every kept one), so a rollback
    checkpoints the rolled-back state at once there too: checkpoint.pt held iteration 4 of the abandoned attempt, and
    a run killed before its next kept checkpoint resumed that, not the state with its remedy."""
    cfg = guarded.replace(iters=12, ckpt_every=0, ckpt_keep_every=4, snapshot_every=8)
    ckpt = _killed_after_a_rollback_to_the_start(cfg, tmp_path, fault=5, die_at=2)
    assert (ckpt["iteration"], ckpt["recovery"]["recoveries"]) == (0, 1)
    Trainer(cfg, resume=tmp_path / "run" / "checkpoint.pt", progress=False, log=lambda *a: None).fit()
    _assert_same_run(tmp_path / "ref", tmp_path / "run")


def test_a_stop_that_meets_a_rollback_to_the_start_keeps_no_checkpoint_of_iteration_0(guarded, tmp_path):
    """A stop (Ctrl-C, --max-minutes) in the iteration whose check rolls back to the start saves the rolled-back
    state, iteration 0: no kept checkpoint (checkpoints/iter_0000000.pt, which 0 % N made due) is written for it, as
    an uninterrupted run never keeps one (iteration 4's rolled back before it was kept)."""
    t = Trainer(guarded.replace(iters=12, snapshot_every=8, ckpt_keep_every=4), out_dir=tmp_path, progress=False,
                log=lambda *a: None)
    t.inject_fault(3, "nan")
    step = t.train_step

    def step_then_stop():
        out = step()
        if t.iteration == 4:
            os.kill(os.getpid(), signal.SIGINT)
        return out

    t.train_step = step_then_stop
    summary = t.fit()
    assert summary["interrupted"] and summary["iteration"] == 0 and t.recovery.recoveries == 1
    assert load_checkpoint(tmp_path / "checkpoint.pt")["iteration"] == 0
    assert not list(tmp_path.glob("checkpoints/*.pt"))


def test_a_branch_from_a_kept_checkpoint_takes_the_records_of_its_own_past(guarded, tmp_path):
    """A run continued in another folder from a kept checkpoint starts with the records of the run it was taken
    from, as far as that checkpoint's state goes: from before the rollback, not the rollback nor what followed it
    (it then runs as a run that never met the fault); from after it, the rollback and the abandoned attempt
    included (it then is the uninterrupted run)."""
    cfg = guarded.replace(iters=30, ckpt_every=4, snapshot_every=8, ckpt_keep_every=4)
    ref = Trainer(cfg, out_dir=tmp_path / "ref", progress=False, log=lambda *a: None)
    ref.inject_fault(13, "nan")
    assert ref.fit()["recoveries"] == 1
    Trainer(cfg, out_dir=tmp_path / "plain", progress=False, log=lambda *a: None).fit()
    kept = tmp_path / "ref" / "checkpoints"
    for iteration, same_as in ((8, "plain"), (20, "ref")):
        branch = tmp_path / f"branch{iteration}"
        Trainer(cfg, resume=kept / f"iter_{iteration:07d}.pt", out_dir=branch, progress=False,
                log=lambda *a: None).fit()
        _assert_same_run(tmp_path / same_as, branch)


def test_a_resumed_run_rolls_back_where_the_uninterrupted_one_does(guarded, tmp_path):
    """The guard's rollback point lies between checkpoints (here the snapshot of iteration 24, the checkpoint of
    28): a resumed run used to take its own at the checkpoint, and a later divergence rolled back elsewhere. The
    checkpoint names a rollback file holding the point, and the run resumed from it is the uninterrupted one."""
    cfg = guarded.replace(iters=40, ckpt_every=4, snapshot_every=8)
    ref = Trainer(cfg, out_dir=tmp_path / "ref", progress=False, log=lambda *a: None)
    for it in (13, 31):
        ref.inject_fault(it, "nan")
    assert ref.fit()["recoveries"] == 2
    rolled = [r["rolled_back_to"] for r in events(tmp_path / "ref")[0]]
    t = Trainer(cfg, out_dir=tmp_path / "run", progress=False, log=lambda *a: None)
    t.inject_fault(13, "nan")
    _kill_after(t, 30)
    saved = load_checkpoint(tmp_path / "run" / "checkpoint.pt")
    assert saved["iteration"] == 28 and saved["snapshot_file"] == f"rollback-{rolled[1]:07d}-r1.pt" != \
        "rollback-0000028-r1.pt"
    shutil.copytree(tmp_path / "run", tmp_path / "damaged")
    # a resumed run killed again before its next checkpoint: the rollback file checkpoint.pt names is still there
    # (the resume keeps its name, so the folder's tidying spares it)
    shutil.copytree(tmp_path / "run", tmp_path / "twice")
    _kill_after(Trainer(cfg, resume=tmp_path / "twice" / "checkpoint.pt", progress=False, log=lambda *a: None), 29)
    assert (tmp_path / "twice" / saved_name(tmp_path / "twice")).is_file()
    resumed = Trainer(cfg, resume=tmp_path / "run" / "checkpoint.pt", progress=False, log=lambda *a: None)
    resumed.inject_fault(31, "nan")
    resumed.fit()
    assert [r["rolled_back_to"] for r in events(tmp_path / "run")[0]] == rolled
    _assert_same_run(tmp_path / "ref", tmp_path / "run")
    # the last checkpoint (40) is its own rollback point, the snapshot of 40: what no checkpoint names is gone
    assert saved_name(tmp_path / "run") is None and not list((tmp_path / "run").glob("rollback-*.pt"))
    # a damaged rollback file does not stop a resume: the guard rolls back to the checkpoint instead, and says so
    rollback = tmp_path / "damaged" / saved["snapshot_file"]
    rollback.write_bytes(rollback.read_bytes()[:1000])
    said = []
    again = Trainer(cfg, resume=tmp_path / "damaged" / "checkpoint.pt", progress=False, log=said.append)
    assert any("is unreadable" in line for line in said)
    assert again.guard.snapshot["iteration"] == 28


def test_snapshots_on_checkpoint_iterations_write_no_rollback_file_and_resume_exactly(guarded, tmp_path):
    """Where a snapshot falls on a checkpoint's iteration (the defaults: snapshots every 250, checkpoints every 500),
    that checkpoint is the rollback point, and no rollback file is written (on WRN-28-10 one is as large as a
    checkpoint, and was written at every snapshot). A run killed after such a checkpoint and resumed rolls back
    and finishes as the uninterrupted run, records included: the validation at the snapshot's iteration, which
    comes after the snapshot, is in both runs' history."""
    cfg = guarded.replace(iters=24, ckpt_every=8, snapshot_every=8, eval_every=8)
    ref = Trainer(cfg, out_dir=tmp_path / "ref", progress=False, log=lambda *a: None)
    ref.inject_fault(19, "nan")
    assert ref.fit()["recoveries"] == 1
    _kill_after(Trainer(cfg, out_dir=tmp_path / "run", progress=False, log=lambda *a: None), 18)
    assert load_checkpoint(tmp_path / "run" / "checkpoint.pt")["iteration"] == 16
    assert saved_name(tmp_path / "run") is None
    resumed = Trainer(cfg, resume=tmp_path / "run" / "checkpoint.pt", progress=False, log=lambda *a: None)
    resumed.inject_fault(19, "nan")
    resumed.fit()
    assert [r["rolled_back_to"] for r in events(tmp_path / "ref")[0]] == \
        [r["rolled_back_to"] for r in events(tmp_path / "run")[0]] == [16]
    _assert_same_run(tmp_path / "ref", tmp_path / "run")
    assert _final(tmp_path / "ref")[0]["history"] == _final(tmp_path / "run")[0]["history"]
    assert {r["iter"] for r in _final(tmp_path / "ref")[0]["history"]} >= {8, 16}
    assert not list(tmp_path.glob("*/rollback-*.pt"))


def test_a_finished_run_leaves_no_rollback_file(guarded, tmp_path):
    """A run whose end does not fall on a snapshot (here 26, snapshots every 4) is healthy at its end, which is
    then its last checkpoint's rollback point: no rollback file is left beside it (on WRN-28-10 one is as large
    as the checkpoint, in every run of a sweep)."""
    Trainer(guarded.replace(iters=26, ckpt_every=4), out_dir=tmp_path / "run", progress=False,
            log=lambda *a: None).fit()
    assert saved_name(tmp_path / "run") is None and not list((tmp_path / "run").glob("rollback-*.pt"))


def saved_name(run_dir):
    return load_checkpoint(run_dir / "checkpoint.pt")["snapshot_file"]


def test_a_run_killed_after_its_last_checkpoint_finishes_as_it_would_have(guarded, tmp_path):
    """Killed between checkpoint.pt and its kept copy, mid-run and then at the end: the kept checkpoint the
    kill lost is made on resume (resuming past its iteration never made it), temporary files of cut writes are
    gone, and the run resumed at its end finishes as the uninterrupted one did: its end record says best.pt holds
    this state, and the optimiser holds the learning rate the last step used (mid warm-up here)."""
    cfg = guarded.replace(iters=12, ckpt_every=4, ckpt_keep_every=4, eval_every=12, warmup_iters=100)
    Trainer(cfg, out_dir=tmp_path / "ref", progress=False, log=lambda *a: None).fit()
    for dies_at in (8, 12):
        first = dies_at == 8
        t = Trainer(cfg, out_dir=None if not first else tmp_path / "run",
                    resume=None if first else tmp_path / "run" / "checkpoint.pt", progress=False, log=lambda *a: None)
        keep = t.keep_checkpoint

        def keep_or_die(path, t=t, keep=keep, dies_at=dies_at):
            if t.iteration == dies_at:
                raise _Killed  # after checkpoint.pt of this iteration, before its kept link
            return keep(path)

        t.keep_checkpoint = keep_or_die
        with pytest.raises(_Killed):
            t.fit()
        assert not (tmp_path / "run" / "checkpoints" / f"iter_{dies_at:07d}.pt").exists()
    (tmp_path / "run" / ".checkpoint.pt.abc.tmp").write_bytes(b"cut short")
    Trainer(cfg, resume=tmp_path / "run" / "checkpoint.pt", progress=False, log=lambda *a: None).fit()
    _assert_same_run(tmp_path / "ref", tmp_path / "run")
    a, b = _final(tmp_path / "ref"), _final(tmp_path / "run")
    assert a[1][-1]["best"] is True and b[1][-1]["best"] is True
    assert a[0]["optimizer"]["param_groups"][0]["lr"] == b[0]["optimizer"]["param_groups"][0]["lr"] != cfg.lr
    kept = sorted(p.name for p in (tmp_path / "run" / "checkpoints").glob("iter_*.pt"))
    assert kept == ["iter_0000004.pt", "iter_0000008.pt", "iter_0000012.pt"]
    assert not list((tmp_path / "run").glob(".*.tmp"))
    # the end's sample grid is of the last SGLD samples, as the uninterrupted run's (not of the replay buffer)
    assert (tmp_path / "ref" / "samples.png").read_bytes() == (tmp_path / "run" / "samples.png").read_bytes()


def test_a_rollback_file_whose_checkpoint_was_never_written_is_cleared_on_resume(guarded, tmp_path, monkeypatch):
    """At iteration 18 the rollback point (iteration 16) is written for checkpoint.pt, whose own write then fails
    (a full disk): the file stayed, holding space the next checkpoint needs, until a checkpoint succeeded. The
    resume clears it (checkpoint.pt, of iteration 12, names no rollback file)."""
    import errno

    import fastjem.train

    real = fastjem.train.atomic_save
    writes = []

    def fails_third_checkpoint(state, path):
        if str(path).endswith("checkpoint.pt"):
            writes.append(path)
            if len(writes) == 3:
                raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(state, path)

    monkeypatch.setattr(fastjem.train, "atomic_save", fails_third_checkpoint)
    run = tmp_path / "run"
    with pytest.raises(OSError, match="No space left"):
        Trainer(guarded.replace(iters=24, ckpt_every=6), out_dir=run, progress=False, log=lambda *a: None).fit()
    assert [p.name for p in run.glob("rollback-*.pt")] == ["rollback-0000016-r0.pt"]
    assert load_checkpoint(run)["iteration"] == 12 and load_checkpoint(run)["snapshot_file"] is None
    t = Trainer(resume_config(run, {}), out_dir=run, resume=run, progress=False, log=lambda *a: None)
    t._tidy_folder()
    assert not list(run.glob("rollback-*.pt"))


def test_buffer_far_above_noise_is_the_papers_diagnosis(guarded, tmp_path):
    """The sampler no longer finds low energy: the replay buffer's mean energy more than --buffer-margin above
    fresh U(-1, 1) noise's, under the current parameters, is unhealthy (with the flag clear); within the margin it
    is healthy. The margin is set either side of the measured difference, so the comparison's direction counts."""
    from fastjem.sampler import eval_mode

    t = Trainer(guarded, out_dir=tmp_path, progress=False)
    with torch.no_grad():
        # a sharper classifier head and a buffer of one flat image: energies unlike the noise's
        [m for m in t.model.modules() if isinstance(m, torch.nn.Linear)][-1].weight.mul_(100)
        t.buffer.data.fill_(1.0)
        with eval_mode(t.model):
            e_buf = float(-t.model(t.buffer.data[: len(t.guard.probe)]).logsumexp(1).mean())
            e_uni = float(-t.model(t.guard.probe).logsumexp(1).mean())
    diff = e_buf - e_uni
    assert abs(diff) > 1e-2, "the check needs the buffer's energy to differ from the noise's"
    t.guard.buffer_margin = diff - 1e-3
    assert not bool(t.guard.flag) and not t.guard.healthy()
    assert len(t.guard.reasons) == 1 and "replay-buffer energy" in t.guard.reasons[0]
    assert "far above fresh noise" in t.guard.reasons[0]
    t.guard.buffer_margin = diff + 1e-3
    assert t.guard.healthy() and t.guard.reasons == []
    t.guard.buffer_margin = diff  # exactly the margin above is not "more than" it
    assert t.guard.healthy() and t.guard.reasons == []
    # the noise is U(-1, 1): centred, filling the range
    probe = t.guard.probe
    assert probe.min() >= -1 and probe.max() <= 1 and abs(probe.mean().item()) < 0.05
    assert abs(probe.std().item() - 3 ** -0.5) < 0.02
    # a NaN buffer energy beside a finite noise energy is out of bounds too (no margin can make it healthy)
    t.buffer.data[0] = float("nan")
    assert not t.guard.healthy() and "out-of-bound energies" in t.guard.reasons[0]


def test_the_current_noise_energy_alone_out_of_bound_is_unhealthy(guarded, tmp_path):
    """The check of the current parameters bounds both of its energies: the fresh noise's alone beyond --energy-bound
    (the replay buffer's within it, both finite, the flag clear) is unhealthy, and named."""
    from fastjem.sampler import eval_mode

    t = Trainer(guarded, out_dir=tmp_path, progress=False)
    with torch.no_grad():
        t.guard.probe.mul_(1000)  # inputs far outside [-1, 1]: energies of a much larger magnitude
        with eval_mode(t.model):
            e_buf = float(-t.model(t.buffer.data[: len(t.guard.probe)]).logsumexp(1).mean())
            e_uni = float(-t.model(t.guard.probe).logsumexp(1).mean())
    assert math.isfinite(e_uni) and abs(e_uni) > 2 * abs(e_buf) + 1, (e_buf, e_uni)
    t.guard.energy_bound = (abs(e_uni) + abs(e_buf)) / 2
    t.guard.buffer_margin = math.inf
    assert not bool(t.guard.flag) and not t.guard.healthy()
    assert len(t.guard.reasons) == 1 and "out-of-bound energies" in t.guard.reasons[0]
    t.guard.energy_bound = abs(e_uni) + 1
    assert t.guard.healthy()


def test_the_remedy_ladder_climbs_and_its_last_rung_repeats(guarded, tmp_path):
    """Five recoveries: SGLD steps x2, then the learning rate x0.5, then an energy penalty of 0.1, doubled at each
    recovery after (the last rung repeats); each remedy keeps the ones before it, and training runs with them (the
    sampler's steps, the optimiser's rate, the logged rate)."""
    t = Trainer(guarded.replace(iters=36, max_recoveries=5), out_dir=tmp_path, progress=False,
                log=lambda *a: None)
    for it in (5, 11, 17, 23, 29):
        t.inject_fault(it, "nan")
    summary = t.fit()
    assert summary["recoveries"] == 5
    div, train = events(tmp_path)
    steps = guarded.sgld_steps
    assert [(d["remedy"], d["sgld_steps"], d["lr_scale"], d["energy_l2"]) for d in div] == [
        ("sgld_steps", 2 * steps, 1.0, 0.0), ("lr", 2 * steps, 0.5, 0.0), ("energy_l2", 2 * steps, 0.5, 0.1),
        ("energy_l2", 2 * steps, 0.5, 0.2), ("energy_l2", 2 * steps, 0.5, 0.4)]
    assert t.sampler.n_steps == 2 * steps and t.recovery.energy_l2 == 0.4 and t.recovery.lr_scale == 0.5
    from fastjem.train import learning_rate

    assert float(t.lr_t) == pytest.approx(0.5 * learning_rate(t.cfg, 35, t.iters_per_epoch), rel=1e-6)
    assert train[-1]["lr"] == pytest.approx(0.5 * learning_rate(t.cfg, 35, t.iters_per_epoch), rel=1e-12)
    assert load_checkpoint(tmp_path / "checkpoint.pt")["recovery"]["energy_l2"] == 0.4


def test_the_guards_probe_leaves_batch_norm_statistics_alone(guarded, tmp_path):
    """healthy() runs the network on the buffer and on noise in eval mode: in train mode those forwards would move
    batch norm's running statistics, and a guarded run would no longer equal an unguarded one."""
    cfg = guarded.replace(arch="wrn", depth=10, width=1, norm="batch", iters=2)
    t = Trainer(cfg, out_dir=tmp_path, progress=False)
    t.model.train()
    before = {k: v.clone() for k, v in t.model.state_dict().items()}
    assert t.guard.healthy()
    after = t.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before) and t.model.training


@pytest.mark.parametrize("overlap", [False, True])
def test_each_iteration_reports_its_loss_to_the_flag(guarded, tmp_path, overlap):
    """The iteration itself ORs its badness into the flag (before any check looks at the parameters): a NaN loss,
    with the data's and the samples' energies still finite, raises it, and the step returns that NaN loss; a healthy
    step leaves it clear. Alike with the data half's backward overlapped."""
    t = Trainer(guarded.replace(overlap_data=overlap), out_dir=tmp_path, progress=False)
    assert t.engine.overlap_data is overlap
    t.train_step()
    assert not bool(t.guard.flag)
    t.inject_fault(t.iteration, "nan")
    parts = t.train_step()
    assert math.isnan(parts["loss"].item()) and math.isfinite(parts["e_data"].item())
    assert math.isfinite(parts["e_sample"].item()) and bool(t.guard.flag)


def test_a_non_finite_loss_alone_raises_the_flag(guarded, tmp_path):
    """A classifier-only run logs no energies: its non-finite loss is what the guard sees."""
    t = Trainer(guarded, out_dir=tmp_path, progress=False)
    t.guard.observe({"loss": torch.tensor(float("nan"))})
    assert bool(t.guard.flag) and not t.guard.healthy()


def test_a_non_finite_loss_logged_between_checks_is_rolled_back_not_the_end_of_the_run(guarded, tmp_path):
    """A log line off the check grid (--log-every 2, --check-every 4) whose window holds a NaN loss: the guard's
    flag holds it and the next check would roll it back, so the run rolls back there (it raised DivergedError and
    logged the NaN, with the guard on), to the same snapshot and with the same remedy as a run whose log lines fall
    on checks: the two end alike."""
    runs = {}
    for log_every in (2, 4):
        cfg = guarded.replace(iters=16, check_every=4, snapshot_every=4, log_every=log_every)
        t = Trainer(cfg, out_dir=tmp_path / str(log_every), progress=False, log=lambda *a: None)
        t.inject_fault(5, "nan")
        assert t.fit()["recoveries"] == 1
        div, train = events(tmp_path / str(log_every))
        assert [d["rolled_back_to"] for d in div] == [4]
        # found by the log line of 6 (not left to the check of 8, which would train two iterations more for nothing)
        assert [d["iter"] for d in div] == [6 if log_every == 2 else 8]
        assert all(math.isfinite(r["loss"]) for r in train)
        runs[log_every] = t
    assert torch.equal(params(runs[2].model), params(runs[4].model))
    assert torch.equal(runs[2].buffer.data, runs[4].buffer.data)


def test_a_run_continued_in_another_folder_rolls_back_where_the_uninterrupted_one_does(guarded, tmp_path):
    """checkpoint.pt of iteration 12 names the rollback point of 8 (a file beside it). Continued from it (or from
    its kept copy) in another --out-dir, the run used to take its own rollback point at 12, and the divergence of
    15 rolled back there: the run was not the uninterrupted one. The rollback file is read from the run the
    checkpoint belongs to, and written into the new folder with its first checkpoint that needs it."""
    cfg = guarded.replace(iters=20, ckpt_every=4, snapshot_every=8, ckpt_keep_every=4)
    quiet = {"progress": False, "log": lambda *a: None}
    ref = Trainer(cfg, out_dir=tmp_path / "ref", **quiet)
    ref.inject_fault(15, "nan")
    assert ref.fit()["recoveries"] == 1 and [r["rolled_back_to"] for r in events(tmp_path / "ref")[0]] == [8]
    _kill_after(Trainer(cfg, out_dir=tmp_path / "run", **quiet), 13)
    assert saved_name(tmp_path / "run") == "rollback-0000008-r0.pt"
    for src, new in (("checkpoint.pt", "new"), ("checkpoints/iter_0000012.pt", "kept")):
        branch = Trainer(cfg, resume=tmp_path / "run" / src, out_dir=tmp_path / new, **quiet)
        branch.inject_fault(15, "nan")
        branch.fit()
        _assert_same_run(tmp_path / "ref", tmp_path / new)
    # continued elsewhere and killed after a checkpoint (of 14) that names the rollback point of 8: the file is there
    _kill_after(Trainer(cfg.replace(ckpt_every=2), resume=tmp_path / "run" / "checkpoint.pt",
                        out_dir=tmp_path / "twice", **quiet), 15)
    assert (tmp_path / "twice" / saved_name(tmp_path / "twice")).is_file()
    again = Trainer(cfg, resume=tmp_path / "twice" / "checkpoint.pt", **quiet)
    again.inject_fault(15, "nan")
    again.fit()
    _assert_same_run(tmp_path / "ref", tmp_path / "twice")


def test_a_recovery_draws_new_batches_so_a_classifier_only_run_does_not_replay_the_divergence(guarded, tmp_path):
    """A classifier-only run samples nothing and has no energies: a ladder without the learning-rate rung leaves its
    computation alone, and with the data generator restored and not reseeded the retry after a rollback was the
    abandoned attempt again, bit for bit (the same divergence, a recovery spent for nothing). The rollback reseeds
    the batches too."""
    lines = []
    t = Trainer(guarded.replace(iters=8, px_weight=0.0, remedies=("sgld_steps", "energy_l2")),
                out_dir=tmp_path / "run", progress=False, log=lines.append)
    t.out_dir.mkdir()
    t.guard.take_snapshot()
    for _ in range(3):
        t.train_step()
    abandoned = params(t.model).clone()
    t.guard.reasons = ["test"]
    t.recover()
    assert (t.recovery.sgld_steps, t.recovery.lr_scale, t.recovery.energy_l2) == (guarded.sgld_steps, 1.0, 0.0)
    assert "remedy 'reseed' (lr x1; a classifier-only run: no SGLD, no energy term)" in lines[-1]
    for _ in range(3):
        t.train_step()
    assert not torch.equal(params(t.model), abandoned)


def test_a_classifier_only_run_climbs_only_the_learning_rate_rung(guarded, tmp_path):
    """SGLD steps and the energy penalty do nothing to a classifier-only run: the default ladder (SGLD steps, lr,
    energy L2) halves its learning rate at every recovery, where it reseeded only at the first and third."""
    t = Trainer(guarded.replace(iters=8, px_weight=0.0, max_recoveries=3), out_dir=tmp_path / "run",
                progress=False, log=lambda *a: None)
    t.out_dir.mkdir()
    t.guard.take_snapshot()
    t.guard.reasons = ["test"]
    for _ in range(3):
        t.recover()
    assert (t.recovery.lr_scale, t.recovery.sgld_steps, t.recovery.energy_l2) == (0.125, guarded.sgld_steps, 0.0)
    remedies = [e["remedy"] for e in events(t.out_dir)[0]]
    assert remedies == ["lr", "lr", "lr"]


@pytest.fixture
def host_reads(monkeypatch) -> list:
    """The names of the tensor-to-host reads made while the fixture is live (item, bool, float, int, tolist, numpy)."""
    reads = []
    for name in ("item", "tolist", "numpy", "__bool__", "__float__", "__int__", "__index__"):
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _name=name, _original=original, **kwargs):
            reads.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    return reads


@pytest.mark.parametrize("state", ["healthy", "flag", "nan-parameter", "buffer-far-above-noise"])
def test_a_guard_check_is_one_host_read(guarded, tmp_path, state, request):
    """A check reads the flag, the parameters' finiteness and the buffer diagnosis's two energies from the device
    together, in one host read (each a sync of its own on a GPU), whatever it finds; its findings are those each
    check makes on its own."""
    t = Trainer(guarded, out_dir=tmp_path, progress=False)
    expected = {"healthy": [], "flag": ["non-finite or out-of-bound"], "nan-parameter": ["non-finite parameters"],
                "buffer-far-above-noise": ["replay-buffer energy"]}[state]
    if state == "flag":
        t.guard.observe({"loss": torch.tensor(float("nan"))})
    elif state == "nan-parameter":
        with torch.no_grad():
            list(t.model.parameters())[-1].view(-1)[0] = float("nan")
    elif state == "buffer-far-above-noise":
        t.guard.buffer_margin = -1e6
    reads = request.getfixturevalue("host_reads")
    assert t.guard.healthy() is (not expected)
    assert len(reads) == 1, reads
    assert [r[: len(e)] for r, e in zip(t.guard.reasons, expected)] == expected
    assert len(t.guard.reasons) == len(expected)


# ------------------------------------------------------------------ a stop after the final checkpoint
class _Terminated(Exception):
    """SIGTERM reached the handler installed before fit (fit had not handled it)."""


@pytest.fixture
def sigterm_raises():
    """SIGTERM raises _Terminated outside fit (not the default, which would end pytest itself); fit installs its
    own handler while it runs and puts this one back."""

    def raise_terminated(signum, frame):
        raise _Terminated

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    yield raise_terminated
    signal.signal(signal.SIGTERM, previous)


def test_a_second_ctrl_c_while_the_ends_record_is_written_waits_for_it(guarded, tmp_path):
    """Two Ctrl-Cs while the end's test record is written (the second normally stops at once, with a
    KeyboardInterrupt): the record is finished first and the run stops as after one signal, every line whole."""
    t = Trainer(guarded.replace(iters=8), out_dir=tmp_path / "run", progress=False, log=lambda *a: None)
    log_jsonl = t._log_jsonl

    def two_ctrl_c_while_writing(record):
        if "test_acc" in record:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
        log_jsonl(record)

    t._log_jsonl = two_ctrl_c_while_writing
    try:
        summary = t.fit()
    except KeyboardInterrupt:  # (left to pytest, it would end the session, not fail the test)
        pytest.fail("the second Ctrl-C cut the end's record short")
    assert summary["interrupted"] and summary["stopped_by"] == "SIGINT"
    records = [json.loads(s) for s in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert "test_acc" in records[-1]


@pytest.mark.parametrize("during", ["the-start", "test-evaluation", "test-record", "curves"])
def test_a_signal_after_the_final_checkpoint_stops_the_ends_outputs_and_says_what_is_left(guarded, tmp_path,
                                                                                             monkeypatch, during,
                                                                                             sigterm_raises):
    """SIGTERM during what follows the final checkpoint (the test evaluation, the end's record, the curves, or just
    before them) stops the run there as a stop in the loop does (no traceback, the process is not killed
    mid-write): the checkpoint is kept, what was written is whole (an output being written when the signal came, the
    end's record, the curves, is finished first), the log names the outputs not written and the command that
    writes them; that command finishes the run as the uninterrupted one did."""
    import fastjem.train as train_mod

    cfg = guarded.replace(iters=8)
    Trainer(cfg, out_dir=tmp_path / "ref", progress=False, log=lambda *a: None).fit()
    lines = []
    t = Trainer(cfg, out_dir=tmp_path / "run", progress=False, log=lambda *a: lines.append(" ".join(map(str, a))))

    def term():
        os.kill(os.getpid(), signal.SIGTERM)

    if during == "the-start":  # after the checkpoint, before the handler stops the end's outputs at once
        outputs = t._end_outputs

        def term_then_list():
            term()
            return outputs()

        t._end_outputs = term_then_list
    elif during == "test-evaluation":
        evaluate = train_mod.evaluate

        def evaluate_then_term(model, x, *args, **kwargs):
            if x is t.data.test_x:
                term()
            return evaluate(model, x, *args, **kwargs)

        monkeypatch.setattr(train_mod, "evaluate", evaluate_then_term)
    elif during == "test-record":
        log_jsonl = t._log_jsonl

        def term_while_writing(record):
            if "test_acc" in record:
                term()
            log_jsonl(record)

        t._log_jsonl = term_while_writing
    else:
        plot = t._plot_curves

        def term_then_plot():
            term()
            return plot()

        t._plot_curves = term_then_plot
    summary = t.fit()
    run = tmp_path / "run"
    assert summary["interrupted"] and summary["stopped_by"] == "SIGTERM" and summary["iteration"] == 8
    not_written = ["samples.png (the sample grid)", "the test-set evaluation (the last record of metrics.jsonl)",
                   "curves.png", "summary.json"]
    early = during in ("the-start", "test-evaluation")
    if not early:
        # the curves: drawn and written whole before the signal that came during them stops the run
        not_written = not_written[3 if during == "curves" else 2:]
    assert summary["not_written"] == not_written
    assert load_checkpoint(run / "checkpoint.pt")["iteration"] == 8
    assert not (run / "summary.json").exists() and (run / "curves.png").exists() is (during == "curves")
    assert (run / "samples.png").exists() is not early
    records = [json.loads(s) for s in (run / "metrics.jsonl").read_text().splitlines()]  # every line whole
    assert ("test_acc" in records[-1]) is not early
    assert not list(run.glob(".*.tmp"))
    said = "\n".join(lines)
    assert f"SIGTERM received after the final checkpoint: {run / 'checkpoint.pt'} holds iteration 8, saved" in said
    assert "not written: " + ", ".join(not_written) in said
    assert f"write them with: fastjem train --resume {run / 'checkpoint.pt'}" in said
    # the command said finishes the run as the uninterrupted one did
    assert signal.getsignal(signal.SIGTERM) is sigterm_raises
    resumed = Trainer(cfg, resume=run / "checkpoint.pt", progress=False, log=lambda *a: None).fit()
    assert not resumed.get("interrupted") and (run / "summary.json").exists() and (run / "curves.png").exists()
    _assert_same_run(tmp_path / "ref", run)
    assert (tmp_path / "ref" / "samples.png").read_bytes() == (run / "samples.png").read_bytes()


def test_fastjem_train_stopped_after_its_final_checkpoint_exits_as_a_stopped_run(tmp_path, monkeypatch, capsys,
                                                                                 sigterm_raises):
    """The CLI: 128 + the signal's number (so that `fastjem train ... && fastjem eval ...` stops there), no
    traceback, and the outputs not written with the command that writes them."""
    from fastjem.cli import main

    plot = Trainer._plot_curves

    def term_then_plot(self):
        os.kill(os.getpid(), signal.SIGTERM)
        return plot(self)

    monkeypatch.setattr(Trainer, "_plot_curves", term_then_plot)
    assert main(_train_cmd(tmp_path / "run", 6)[3:]) == 128 + signal.SIGTERM
    out = capsys.readouterr().out
    assert "not written: summary.json" in out and (tmp_path / "run" / "curves.png").exists()
    assert f"write them with: fastjem train --resume {tmp_path / 'run' / 'checkpoint.pt'}" in out

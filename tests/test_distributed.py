
"""Data-parallel training with torchrun (gloo on CPU)."""

import json
import subprocess
import sys

import pytest
import torch

from fastjem.checkpoint import load_checkpoint

COMMON = ["--width", "8", "--batch-size", "16", "--sgld-steps", "2", "--buffer-size", "100", "--device", "cpu",
          "--no-compile", "--no-progress", "--iters", "6", "--log-every", "3", "--check-every", "3", "--seed", "2",
          "--warmup-iters", "2", "--lr", "3e-3"]


def run(cmd, timeout=400):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out


def torchrun(*args):
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "fastjem",
            "train", *args]


def test_two_processes_match_one_process_with_the_same_global_batch(tmp_path):
    """Classifier term: each rank takes its half of the same global batch and gradients are averaged, so
    two processes compute what one does, up to float summation order (not bitwise): the gradients agree
    to ~1e-7. With SGD the parameters then agree to about lr times that; Adam, which divides by sqrt(v), turns
    a last-bit difference in a near-zero gradient coordinate into up to a whole step (it failed atol 1e-5 with
    one thread per process), so the comparison runs SGD, where 1e-5 is a real bound. Both in fp32: precision auto
    follows a CPU probe per thread count (one process has two threads here, a rank one), and bf16 in one run beside
    fp32 in the other differed by 3e-5 on a CPU with AVX512-BF16 (fp32 in both: 2e-9); the test failed at 1.1e-5."""
    sgd = ["--optimizer", "sgd", "--precision", "fp32"]
    run(torchrun("--classifier-only", "--out-dir", str(tmp_path / "ddp"), *COMMON, *sgd))
    run([sys.executable, "-m", "fastjem", "train", "--classifier-only", "--out-dir", str(tmp_path / "one"), *COMMON,
         *sgd])
    a = load_checkpoint(tmp_path / "ddp" / "checkpoint.pt")
    b = load_checkpoint(tmp_path / "one" / "checkpoint.pt")
    assert a["world_size"] == 2 and len(a["ranks"]) == 2 and a["iteration"] == 6
    for k in b["model"]:
        torch.testing.assert_close(a["model"][k], b["model"][k], rtol=1e-5, atol=1e-5)
    # the logged metrics are the ranks' mean, so the same as one process's over the whole batch
    logged = [[r for r in map(json.loads, (tmp_path / d / "metrics.jsonl").read_text().splitlines()) if "ce" in r]
              for d in ("ddp", "one")]
    assert [r["iter"] for r in logged[0]] == [r["iter"] for r in logged[1]] and logged[0]
    for ddp, one in zip(*logged, strict=True):
        assert ddp["ce"] == pytest.approx(one["ce"], rel=1e-4)
        assert ddp["acc"] == pytest.approx(one["acc"], abs=1e-6)


def test_jem_with_per_rank_buffers_keeps_replicas_identical_and_resumes(tmp_path):
    """With the p(x) term each rank runs its own chains from its own buffer shard (N / world), so the
    samples, hence the parameters, differ from a one-process run; replicas must still agree exactly."""
    out = run(torchrun("--out-dir", str(tmp_path / "ddp"), "--ckpt-every", "3", "--eval-every", "3", *COMMON))
    assert "2 data-parallel processes" in out.stdout
    assert out.stdout.count("\ndone: 6 iterations in") == 1  # rank 0 alone sums the run up
    assert out.stdout.count("iter 3: val acc") == 1  # and alone reports a validation
    ckpt = load_checkpoint(tmp_path / "ddp" / "checkpoint.pt")
    assert len(set(ckpt["replica_checksums"])) == 1
    assert "replicas differ" not in out.stdout + out.stderr  # the warning is for replicas that part
    shards = [r["buffer"]["data"] for r in ckpt["ranks"]]
    assert shards[0].shape[0] == 50 and not torch.equal(shards[0], shards[1])
    run(torchrun("--resume", str(tmp_path / "ddp" / "checkpoint.pt"), "--iters", "9", "--no-progress"))
    assert load_checkpoint(tmp_path / "ddp" / "checkpoint.pt")["iteration"] == 9
    # a different world size is refused
    single = subprocess.run([sys.executable, "-m", "fastjem", "train", "--resume",
                             str(tmp_path / "ddp" / "checkpoint.pt"), "--iters", "12", "--no-progress"],
                            capture_output=True, text=True, timeout=200)
    assert single.returncode == 1 and "nproc-per-node 2" in single.stderr


# Run under torchrun: each rank's bf16 probe answers as argv[1] says ("10": rank 0 found bf16 fast, rank 1 did not)
RANK_PROBES = '''
import json, os, sys
import torch
import fastjem.engine as engine
from fastjem.config import TrainConfig
from fastjem.distributed import init_from_env

rank = int(os.environ["RANK"])
fast = sys.argv[1][rank] == "1"
engine.fast_bf16 = lambda device: (fast, f"rank {rank}'s probe")
init_from_env("cpu")
eng = engine.resolve_engine(TrainConfig(), torch.device("cpu"), has_batch_norm=False, distributed=True)
with open(f"{sys.argv[2]}/rank{rank}.json", "w") as f:
    json.dump({"precision": eng.precision, "note": eng.notes[0]}, f)
'''


def test_the_ranks_agree_on_the_precision_their_probes_chose(tmp_path):
    """Precision auto on CPUs: each rank times (or reads) its own bf16 probe; a rank in bf16 beside one in fp32
    computed another iteration. bf16 where every rank found it fast, else fp32 on every rank, the note saying why."""
    script = tmp_path / "probes.py"
    script.write_text(RANK_PROBES)
    for probes, expected in (("01", "fp32"), ("11", "bf16")):
        run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script),
             probes, str(tmp_path)])
        ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
        assert [r["precision"] for r in ranks] == [expected] * 2, (probes, ranks)
        if probes == "01":  # rank 1's own probe said bf16: its note says why it is fp32
            assert "another rank's probe found bf16 no faster; this rank's: rank 1's probe" in ranks[1]["note"]


# Run under torchrun: a fault on rank 1 only. "lr": its learning rate x1e6 for one iteration, so its replica
# alone blows up and its guard alone sees it; "stop": a SIGINT to rank 1 alone after its third iteration; "final": a
# SIGTERM to rank 1 alone as its final validation starts; "time": rank 1's clock alone passes the --max-minutes
# deadline after its third iteration.
ONE_RANK_FAULT = '''
import atexit, json, os, signal, sys, time
from pathlib import Path
import torch
import torch.distributed as dist
from fastjem.config import TrainConfig
from fastjem.train import Trainer

kind, out = sys.argv[1], Path(sys.argv[2])
rank = int(os.environ["RANK"])
out.mkdir(parents=True, exist_ok=True)
(out / f"pid{rank}").write_text(str(os.getpid()))  # torchrun starts each worker in a session of its own
def gloo_threads():
    names = []
    for task in Path("/proc/self/task").iterdir():
        try:
            names.append((task / "comm").read_text().strip())
        except FileNotFoundError:  # a thread that ended meanwhile
            pass
    return sum(name in ("gloo_tcp_loop", "pt_gloo_runloop") for name in names)
def gloo_threads_at_exit():
    # a joined thread may take a moment to leave /proc on a loaded machine; one never joined stays
    for _ in range(50):
        if gloo_threads() == 0:
            return 0
        time.sleep(0.1)
    return gloo_threads()
# registered before the Trainer joins the group, so it runs after fastjem's own exit handler (last in, first out)
atexit.register(lambda: (out / f"exit{rank}").write_text(json.dumps({"group_left": dist.is_initialized(),
                                                                     "gloo_threads": gloo_threads_at_exit()})))
cfg = TrainConfig(dataset="digits", arch="convnet", width=8, batch_size=16, sgld_steps=3, buffer_size=200, device="cpu",
                  compile="off", iters=12, log_every=2, check_every=2, snapshot_every=2, seed=3, warmup_iters=5,
                  lr=1e-3, ckpt_every=0, max_minutes=1000.0 if kind == "time" else 0.0,
                  eval_every=3 if kind == "health" else 0)
if rank == 1 and kind == "health":
    # and its network starts from other weights (another seed, say): rank 0's are given to every rank
    import fastjem.train
    build = fastjem.train.build_model
    def build_other(*args, **kwargs):
        torch.manual_seed(1234)
        return build(*args, **kwargs)
    fastjem.train.build_model = build_other
t = Trainer(cfg, out_dir=out, progress=False)
joined_threads = gloo_threads()  # what the exit check counts exists
kept, restored = [], []
if kind == "health":
    keep, restore = t.keep_if_best, t.guard.restore_snapshot
    t.keep_if_best = lambda it, *a, **k: kept.append((it, keep(it, *a, **k))) or kept[-1][1]
    t.guard.restore_snapshot = lambda: restored.append(t.iteration) or restore()
if rank == 1 and kind == "health":
    # rank 1's guard alone finds its state unhealthy at the validation of iteration 3 (between checks) and at the
    # check after the loop, its shard of the buffer, say: the ranks must decide together both times
    healthy, calls = t.guard.healthy, []
    def rank_healthy():
        calls.append(t.iteration)
        return healthy() and t.iteration != 3 and calls.count(12) != 2
    t.guard.healthy = rank_healthy
if rank == 1 and kind == "lr":
    t.inject_fault(5, "lr")
if rank == 1 and kind == "stop":
    step = t.train_step
    def train_step():
        parts = step()
        if t.iteration == 3:
            os.kill(os.getpid(), signal.SIGINT)
        return parts
    t.train_step = train_step
if rank == 1 and kind == "final":
    validate = t._final_validation
    def final_validation():
        os.kill(os.getpid(), signal.SIGTERM)
        return validate()
    t._final_validation = final_validation
if rank == 1 and kind == "time":
    import time
    step, clock = t.train_step, time.monotonic
    def train_step():
        parts = step()
        if t.iteration == 3:
            time.monotonic = lambda: clock() + 1e6
        return parts
    t.train_step = train_step
summary = t.fit()
params = torch.cat([p.detach().flatten() for p in t.model.parameters()])
(out / f"rank{rank}.json").write_text(json.dumps({
    "iteration": t.iteration, "recoveries": t.recovery.recoveries, "interrupted": bool(summary.get("interrupted")),
    "stopped_by": summary.get("stopped_by"),
    "finite": bool(params.isfinite().all()), "params": params.double().sum().item(),
    "gloo_threads": joined_threads, "kept": kept, "restored": restored}))
'''


def run_one_rank_fault(tmp_path, kind, timeout=120):
    """Both ranks' reports; fails (rather than waiting out gloo's 30-minute timeout) when a rank hangs in a
    collective that the other never reaches."""
    import os
    import signal

    script = tmp_path / "fault.py"
    script.write_text(ONE_RANK_FAULT)
    out = tmp_path / kind
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script),
           kind, str(out)]
    log_path = tmp_path / f"{kind}.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            for pid_file in out.glob("pid*"):  # the workers, each in its own session
                try:
                    os.kill(int(pid_file.read_text()), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            proc.wait()
            pytest.fail(f"the ranks did not finish in {timeout} s (one waits in a collective the other skipped):\n"
                        + log_path.read_text()[-3000:])
    assert proc.returncode == 0, log_path.read_text()[-3000:]
    # the script never destroys the process group: fastjem must, before Python's shutdown, or gloo's threads
    # can abort the process there; and destroyed for real, its threads joined, not just forgotten by
    # torch.distributed while something else still holds it
    assert [json.loads((out / f"exit{r}").read_text()) for r in (0, 1)] == [{"group_left": False,
                                                                          "gloo_threads": 0}] * 2
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert all(r["gloo_threads"] > 0 for r in ranks)  # while in the group
    return ranks


def test_a_divergence_on_one_rank_rolls_every_rank_back(tmp_path):
    """Only rank 1's replica diverges (its learning rate x1e6 once), so only its guard sees it; every rank
    must roll back together, or the replicas part and the ranks' collectives fall out of step."""
    ranks = run_one_rank_fault(tmp_path, "lr")
    assert [r["recoveries"] for r in ranks] == [1, 1]
    assert [r["iteration"] for r in ranks] == [12, 12]
    assert all(r["finite"] for r in ranks) and ranks[0]["params"] == ranks[1]["params"]
    ckpt = load_checkpoint(tmp_path / "lr" / "checkpoint.pt")
    assert len(set(ckpt["replica_checksums"])) == 1 and ckpt["recovery"]["recoveries"] == 1


def test_a_stop_signal_on_one_rank_stops_every_rank_at_the_same_check(tmp_path):
    """SIGINT reaches rank 1 alone after iteration 3: both ranks stop at the next check (iteration 4) and
    write one checkpoint there."""
    ranks = run_one_rank_fault(tmp_path, "stop")
    assert [(r["interrupted"], r["iteration"]) for r in ranks] == [(True, 4), (True, 4)]
    # and for the same reason, so that every rank exits with the same status (rank 0 saw no signal itself)
    assert [r["stopped_by"] for r in ranks] == ["SIGINT", "SIGINT"]
    assert ranks[0]["params"] == ranks[1]["params"]
    assert load_checkpoint(tmp_path / "stop" / "checkpoint.pt")["iteration"] == 4


def test_a_stop_signal_during_the_final_validation_still_writes_the_last_checkpoint(tmp_path):
    """SIGTERM reaches rank 1 alone during the finished loop's final validation: every rank finishes the validation
    and the checkpoint of the last iteration (rank 0 writes it), then all stop as one stopped in the loop does
    (interrupted, by SIGTERM), where rank 1 died there and torchrun took rank 0 down with it, the last iterations
    unsaved."""
    ranks = run_one_rank_fault(tmp_path, "final")
    assert [(r["interrupted"], r["iteration"], r["stopped_by"]) for r in ranks] == [(True, 12, "SIGTERM")] * 2
    assert ranks[0]["params"] == ranks[1]["params"]
    ckpt = load_checkpoint(tmp_path / "final" / "checkpoint.pt")
    assert ckpt["iteration"] == 12 and len(ckpt["ranks"]) == 2
    assert not (tmp_path / "final" / "summary.json").exists()  # the run did not finish: a resume finishes it


def test_a_time_limit_reached_on_one_rank_stops_every_rank_at_the_same_check(tmp_path):
    """--max-minutes passed on rank 1 alone after iteration 3: both ranks stop at the next check (iteration 4),
    both for the time limit, with one checkpoint there."""
    ranks = run_one_rank_fault(tmp_path, "time")
    assert [(r["interrupted"], r["iteration"], r["stopped_by"]) for r in ranks] == [(True, 4, "time limit")] * 2
    assert ranks[0]["params"] == ranks[1]["params"]
    assert load_checkpoint(tmp_path / "time" / "checkpoint.pt")["iteration"] == 4


def test_a_health_verdict_of_one_rank_is_every_ranks(tmp_path):
    """Rank 1's guard alone finds its state unhealthy at a validation between checks (iteration 3) and at the check
    after the loop (iteration 12): no rank keeps best.pt at 3 (rank 0 would have written it alone), and every rank
    goes back to the snapshot at the end, so the replicas stay one. (Rank 1's network is also built from other
    weights: rank 0's replace them at the start.)"""
    ranks = run_one_rank_fault(tmp_path, "health")
    assert ranks[0]["kept"] == ranks[1]["kept"] and ranks[0]["kept"][:2] == [[3, False], [6, True]]
    assert [r["restored"] for r in ranks] == [[12], [12]]
    assert ranks[0]["params"] == ranks[1]["params"] and [r["iteration"] for r in ranks] == [12, 12]
    best = max(it for it, written in ranks[0]["kept"] if written)
    assert load_checkpoint(tmp_path / "health" / "best.pt")["iteration"] == best


# Run under torchrun: "ref" trains 24 iterations with a NaN loss injected at iteration 23 (the guard rolls back to
# its snapshot of iteration 16; checkpoints every 4); "die" is the same run killed after iteration 22 (its last
# checkpoint, 20, names the rollback point 16); "resume" continues "die" with the same fault.
ROLLBACK_RESUME = '''
import os, sys
from pathlib import Path
from fastjem.config import TrainConfig
from fastjem.train import Trainer

mode, out = sys.argv[1], Path(sys.argv[2])
cfg = TrainConfig(dataset="digits", arch="convnet", width=8, batch_size=16, sgld_steps=2, buffer_size=100, device="cpu",
                  compile="off", iters=24, log_every=2, check_every=2, snapshot_every=8, ckpt_every=4, seed=3,
                  warmup_iters=5, lr=1e-3)
quiet = dict(progress=False, log=lambda *a: None)
t = Trainer(cfg, resume=out / "checkpoint.pt", **quiet) if mode == "resume" else Trainer(cfg, out_dir=out, **quiet)
if mode == "resume":  # each rank holds its own part of the rollback point, not every rank's (memory)
    assert "ranks" not in t.guard.snapshot and t.guard.snapshot["buffer"]["data"].shape[0] == 50
t.inject_fault(23, "nan")
if mode == "die":
    step = t.train_step
    def train_step():
        parts = step()
        if t.iteration == 22:
            os._exit(0)  # every rank, after the same step: a kill between checkpoints
        return parts
    t.train_step = train_step
t.fit()
'''


def test_a_resumed_data_parallel_run_rolls_back_where_the_uninterrupted_one_does(tmp_path):
    """The guard's rollback point (iteration 16) lies before the last checkpoint (20). Data-parallel ranks kept it
    in memory only, so a resumed run rolled back to where it resumed; rank 0 now writes every rank's part of it
    beside the checkpoint, and the resumed run is the uninterrupted one, rank by rank."""
    script = tmp_path / "rollback.py"
    script.write_text(ROLLBACK_RESUME)

    def launch(mode, folder):
        run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script),
             mode, str(tmp_path / folder)])

    launch("ref", "ref")
    launch("die", "run")
    saved = load_checkpoint(tmp_path / "run" / "checkpoint.pt")
    assert saved["iteration"] == 20 and saved["snapshot_file"] == "rollback-0000016-r0.pt"
    assert len(load_checkpoint(tmp_path / "run" / "rollback-0000016-r0.pt")["ranks"]) == 2
    launch("resume", "run")
    a, b = (load_checkpoint(tmp_path / d / "checkpoint.pt") for d in ("ref", "run"))
    events = [[r for r in map(json.loads, (tmp_path / d / "metrics.jsonl").read_text().splitlines())
               if r.get("event") == "divergence"] for d in ("ref", "run")]
    assert [e["rolled_back_to"] for e in events[0]] == [e["rolled_back_to"] for e in events[1]] == [16]
    assert a["iteration"] == b["iteration"] == 24 and a["recovery"] == b["recovery"]
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    for ra, rb in zip(a["ranks"], b["ranks"], strict=True):
        assert torch.equal(ra["buffer"]["data"], rb["buffer"]["data"])
        assert torch.equal(ra["sampler"]["rng_state"], rb["sampler"]["rng_state"])
        assert torch.equal(ra["rng"]["torch"], rb["rng"]["torch"])
    logs = [[{k: v for k, v in json.loads(line).items() if k not in ("it_per_s", "time")}
             for line in (tmp_path / d / "metrics.jsonl").read_text().splitlines()] for d in ("ref", "run")]
    assert logs[0] == logs[1]


@pytest.mark.parametrize("device, cuda, backend", [("cpu", True, "gloo"), ("auto", True, "nccl"),
                                                   ("cuda", True, "nccl"), ("auto", False, "gloo")])
def test_joining_the_group_picks_the_backend_and_the_local_gpu(monkeypatch, device, cuda, backend):
    """torchrun's environment: NCCL on the process's own GPU (LOCAL_RANK) when the run uses CUDA, gloo on a CPU run
    even where a GPU is present; the group this call made is destroyed at exit. One process: no group at all."""
    import torch._dynamo  # noqa: F401  (imported here, its own exit handler is registered before the count)

    import fastjem.distributed as d

    made, exits = [], []
    monkeypatch.setattr(d.dist, "is_initialized", lambda: False)
    monkeypatch.setattr(d.dist, "init_process_group", lambda name: made.append(name))
    monkeypatch.setattr(d.torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(d.torch.cuda, "set_device", lambda i: made.append(("gpu", i)))
    monkeypatch.setattr(d.atexit, "register", exits.append)
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert d.init_from_env(device) == d.DistInfo(0, 1, 0) and not made and not exits
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("MASTER_ADDR", "localhost")
    monkeypatch.setenv("MASTER_PORT", "29500")
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert d.init_from_env(device) == d.DistInfo(3, 4, 0)
    monkeypatch.setenv("LOCAL_RANK", "1")
    info = d.init_from_env(device)
    assert (info.rank, info.world, info.local_rank, info.enabled, info.is_main) == (3, 4, 1, True, False)
    gpu = [("gpu", 0)] if backend == "nccl" else []
    assert made == gpu + [backend] + [("gpu", 1)] * bool(gpu) + [backend]
    assert exits == [d._destroy_if_initialized] * 2


def test_a_group_the_caller_made_is_used_as_it_is(monkeypatch):
    """A process group made before (by a launcher of its own, from a file or TCP store: no MASTER_ADDR needed) is
    not joined a second time, and its destruction is left to the caller: no exit handler is registered."""
    import fastjem.distributed as d

    calls = []
    monkeypatch.setattr(d.dist, "is_initialized", lambda: True)
    monkeypatch.setattr(d.dist, "init_process_group", lambda name: calls.append(name))
    monkeypatch.setattr(d.torch.cuda, "set_device", lambda i: calls.append(("gpu", i)))
    monkeypatch.setattr(d.atexit, "register", calls.append)
    for var in ("MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert d.init_from_env("auto") == d.DistInfo(1, 2, 1) and calls == []


def test_rank_0_warns_when_the_replicas_differ_at_a_save(tiny_config, tmp_path, monkeypatch):
    """Each rank's parameter checksum reaches rank 0 with its local state: differing ones (a replica that drifted)
    are said in the log and kept in the checkpoint; equal ones say nothing. One process, the gather stood in for."""
    import fastjem.train as train_mod
    from fastjem.distributed import DistInfo

    lines = []
    t = train_mod.Trainer(tiny_config, out_dir=tmp_path, progress=False, log=lines.append)
    t.dist = DistInfo(rank=0, world=2)
    monkeypatch.setattr(train_mod, "gather_to_main", lambda obj, info: [obj, obj])
    t.save_checkpoint()
    assert not any("replicas differ" in s for s in lines)
    monkeypatch.setattr(train_mod, "gather_to_main", lambda obj, info: [obj, (obj[0], obj[1] + 1.0)])
    ckpt = load_checkpoint(t.save_checkpoint())
    sums = ckpt["replica_checksums"]
    assert len(ckpt["ranks"]) == 2 and sums[1] == sums[0] + 1.0
    assert [s for s in lines if "replicas differ" in s] == [f"warning: replicas differ across ranks: {sums}"]


def test_world_size_without_torchrun_is_a_clear_error(monkeypatch, capsys, tmp_path):
    """WORLD_SIZE set by hand (or left by another tool) without torchrun's RANK and rendezvous address: a one-line
    error naming torchrun, not a KeyError or torch's rendezvous ValueError, and nothing joined or written."""
    import fastjem.distributed as d
    from fastjem.cli import main
    from fastjem.errors import ConfigError

    monkeypatch.setattr(d.dist, "is_initialized", lambda: False)
    monkeypatch.setattr(d.dist, "init_process_group", lambda name: pytest.fail("joined a group"))
    for var in ("RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ConfigError, match=r"RANK, MASTER_ADDR, MASTER_PORT are not: .*torchrun --standalone "
                                          r"--nproc-per-node 2 -m fastjem train"):
        d.init_from_env("cpu")
    monkeypatch.setenv("RANK", "0")  # torchrun's rank, but no rendezvous address
    with pytest.raises(ConfigError, match=r"MASTER_ADDR, MASTER_PORT are not"):
        d.init_from_env("cpu")
    assert main(["train", "--iters", "1", "--out-dir", str(tmp_path / "run"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "fastjem: error: WORLD_SIZE=2 is set" in err and "Traceback" not in err and not (tmp_path / "run").exists()
    # WORLD_SIZE alone starts one process: its batch is checked for one process (a --batch-size of 3 is no error of
    # two processes that do not exist), and the error is the one that says to use torchrun
    monkeypatch.delenv("RANK")
    assert main(["train", "--iters", "1", "--batch-size", "3", "--out-dir", str(tmp_path / "run"),
                 "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "fastjem: error: WORLD_SIZE=2 is set but RANK" in err and "divisible" not in err, err

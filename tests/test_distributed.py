
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
    to ~1e-7, and Adam, which divides by sqrt(v), can enlarge that for a coordinate whose gradient is near
    zero, so parameters are compared to atol 1e-5, i.e. under 0.4% of one step at lr 3e-3."""
    run(torchrun("--classifier-only", "--out-dir", str(tmp_path / "ddp"), *COMMON))
    run([sys.executable, "-m", "fastjem", "train", "--classifier-only", "--out-dir", str(tmp_path / "one"), *COMMON])
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
    out = run(torchrun("--out-dir", str(tmp_path / "ddp"), "--ckpt-every", "3", *COMMON))
    assert "2 data-parallel processes" in out.stdout
    ckpt = load_checkpoint(tmp_path / "ddp" / "checkpoint.pt")
    assert len(set(ckpt["replica_checksums"])) == 1
    shards = [r["buffer"]["data"] for r in ckpt["ranks"]]
    assert shards[0].shape[0] == 50 and not torch.equal(shards[0], shards[1])
    run(torchrun("--resume", str(tmp_path / "ddp" / "checkpoint.pt"), "--iters", "9", "--no-progress"))
    assert load_checkpoint(tmp_path / "ddp" / "checkpoint.pt")["iteration"] == 9
    # a different world size is refused
    single = subprocess.run([sys.executable, "-m", "fastjem", "train", "--resume",
                             str(tmp_path / "ddp" / "checkpoint.pt"), "--iters", "12", "--no-progress"],
                            capture_output=True, text=True, timeout=200)
    assert single.returncode == 1 and "nproc-per-node 2" in single.stderr

"""--ckpt-keep-every: a history of checkpoints, each a full state that evaluates and resumes exactly."""

import os

import torch

from fastjem.checkpoint import load_checkpoint
from fastjem.train import Trainer, resume_config


def params(state):
    return torch.cat([v.flatten().float() for v in state["model"].values()])


def test_every_nth_checkpoint_is_kept_and_resumes_exactly(tiny_config, tmp_path):
    run = tmp_path / "run"
    Trainer(tiny_config.replace(iters=12, ckpt_every=0, ckpt_keep_every=4), out_dir=run, progress=False).fit()
    kept = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert kept == ["iter_0000004.pt", "iter_0000008.pt", "iter_0000012.pt"]
    states = {n: load_checkpoint(run / "checkpoints" / f"iter_{n:07d}.pt") for n in (4, 8, 12)}
    assert [s["iteration"] for s in states.values()] == [4, 8, 12]
    assert not torch.equal(params(states[4]), params(states[8]))
    # the last one is the latest checkpoint itself (a hard link: no second copy on disk)
    assert os.path.samefile(run / "checkpoints" / "iter_0000012.pt", run / "checkpoint.pt")
    assert torch.equal(params(states[12]), params(load_checkpoint(run)))
    # an old state resumes exactly: from iteration 4 to 8 it reaches the kept iteration 8 bitwise
    old = run / "checkpoints" / "iter_0000004.pt"
    branch = Trainer(resume_config(old, {"iters": 8}), out_dir=tmp_path / "branch", resume=old, progress=False)
    branch.fit()
    assert torch.equal(params(load_checkpoint(tmp_path / "branch")), params(states[8]))


def test_without_hard_links_a_copy_is_kept(tiny_config, tmp_path, monkeypatch):
    def no_link(src, dst):
        raise OSError("hard links not supported here")

    monkeypatch.setattr(os, "link", no_link)
    run = tmp_path / "run"
    Trainer(tiny_config.replace(iters=4, ckpt_keep_every=2), out_dir=run, progress=False).fit()
    kept = run / "checkpoints" / "iter_0000004.pt"
    assert not os.path.samefile(kept, run / "checkpoint.pt")
    assert kept.read_bytes() == (run / "checkpoint.pt").read_bytes()
    assert load_checkpoint(run / "checkpoints" / "iter_0000002.pt")["iteration"] == 2
    assert not list((run / "checkpoints").glob(".*"))  # no temporary files left

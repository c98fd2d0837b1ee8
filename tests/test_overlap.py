"""The overlapped backward (engine option overlap_data): the loss's gradient in a data half and a samples' half.

On CUDA the data half runs on a second stream while SGLD samples; on CPU the same code runs in the same order
on one stream, so these tests exercise what the GPU runs. It must compute what the one backward of the
concatenated loss computes (the two halves summed in another order: within fp32 rounding), draw its random
numbers in the same order, and keep working with the divergence guard and the iteration graph's check.
"""

import dataclasses

import pytest
import torch
from test_iteration_graph import EagerReplay, _assert_same_run, _run

from fastjem.config import TrainConfig
from fastjem.engine import resolve_engine
from fastjem.train import Trainer


def _train(cfg, tmp_path, name, iters=3):
    t = Trainer(cfg, out_dir=tmp_path / name, progress=False)
    sizes = []
    forward = t.forward

    def recording_forward(*xs):
        sizes.append(tuple(x.shape[0] for x in xs))
        return forward(*xs)

    t.forward = recording_forward
    torch.manual_seed(7)  # chain indices come from torch's generator: the same start for both runs
    parts = [{k: float(v) for k, v in t.train_step().items()} for _ in range(iters)]
    return t, parts, sizes


# the last case weighs the terms as no default does: each half must carry its own weights (--px-weight on E(x_p) and
# on E(x_q), --pyx-weight on the cross-entropy), which at 1 and 1 a half that dropped one computed all the same
@pytest.mark.parametrize("extra", [{}, {"class_cond_px": True},
                                   {"fused_forward": False, "px_weight": 0.7, "pyx_weight": 1.4}],
                         ids=["default", "class-cond", "three-forwards-weighted"])
def test_overlapped_backward_computes_the_one_backward(tiny_config, tmp_path, extra):
    cfg = tiny_config.replace(**extra)
    one, p_one, s_one = _train(cfg, tmp_path, "one")
    two, p_two, s_two = _train(cfg.replace(overlap_data=True), tmp_path, "two")
    b = cfg.batch_size
    # the structure: the loss's forward of [x_p, x_q, x_lab], against [x_p, x_lab] and then x_q
    assert s_one == [(b, b, b)] * 3
    assert s_two == [(b, b), (b,)] * 3
    assert two.engine.overlap_data and not one.engine.overlap_data
    # what is computed: the same first iteration's metrics, the same parameters and chains within fp32 rounding
    for k in p_one[0]:
        assert p_two[0][k] == pytest.approx(p_one[0][k], rel=1e-6, abs=1e-6), k
    for a, c in zip(one.model.parameters(), two.model.parameters()):
        torch.testing.assert_close(c, a, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(two.buffer.data, one.buffer.data, rtol=0, atol=1e-5)
    torch.testing.assert_close(two.last_samples, one.last_samples, rtol=0, atol=1e-5)  # what samples.png shows
    assert torch.equal(two.sampler.rng_state, one.sampler.rng_state)
    assert torch.equal(two.buffer.rng_state, one.buffer.rng_state)
    assert torch.equal(two.data_gen.get_state(), one.data_gen.get_state())


def test_overlapped_backward_with_the_energy_penalty_and_a_fault(tiny_config, tmp_path):
    """The guard's energy penalty splits with its halves; an injected NaN is caught and recovered from."""
    cfg = tiny_config.replace(iters=24, check_every=2, snapshot_every=4, log_every=2, lr=5e-3)
    one, _, _ = _train(cfg, tmp_path, "one", iters=0)
    two, _, _ = _train(cfg.replace(overlap_data=True), tmp_path, "two", iters=0)
    for t in (one, two):
        t.recovery.energy_l2 = 0.1
    torch.manual_seed(7)
    a = [{k: float(v) for k, v in one.train_step().items()}]
    torch.manual_seed(7)
    b = [{k: float(v) for k, v in two.train_step().items()}]
    assert b[0]["loss"] == pytest.approx(a[0]["loss"], rel=1e-6)
    fresh = Trainer(cfg.replace(overlap_data=True), out_dir=tmp_path / "fault", progress=False)
    fresh.inject_fault(9, "nan")
    summary = fresh.fit()
    assert summary["recoveries"] == 1
    assert all(torch.isfinite(p).all() for p in fresh.model.parameters())


def test_overlap_is_refused_where_it_would_change_the_result():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    base = TrainConfig(overlap_data=True, precision="fp32", compile="off", kernels="reference")
    assert resolve_engine(base, cuda, has_batch_norm=False).overlap_data
    on_cpu = resolve_engine(base, cpu, has_batch_norm=False)
    assert on_cpu.overlap_data and any("on one stream" in n for n in on_cpu.notes)
    assert "data gradient overlapped" in on_cpu.describe()
    for cfg, bn, why in ((base, True, "batch norm"), (base.replace(dropout=0.1), False, "dropout"),
                         (base.replace(pxy_weight=1.0), False, "p(x, y)"),
                         # the p(x, y) term alone is a generative term: its reason, not "no generative term"
                         (base.replace(px_weight=0.0, pxy_weight=1.0), False, "p(x, y)"),
                         (base.replace(px_weight=0.0), False, "no generative term")):
        eng = resolve_engine(cfg, cuda, has_batch_norm=bn)
        assert not eng.overlap_data
        assert any(n.startswith("overlap off") and why in n for n in eng.notes), eng.notes
    # a network given in Python with dropout of its own (the config's dropout 0)
    eng = resolve_engine(base, cuda, has_batch_norm=False, has_dropout=True)
    assert not eng.overlap_data and any(n.startswith("overlap off: dropout") for n in eng.notes)
    assert not TrainConfig().overlap_data  # off by default, until measured on a GPU


def test_iteration_graph_with_overlap_leaves_no_trace(tiny_config, tmp_path, monkeypatch):
    """The capture's warm-up, check and first replay (EagerReplay on CPU) with the overlapped backward: the run
    is bitwise the plain eager run with it, and the check compares the gradients it accumulated."""
    cfg = tiny_config.replace(overlap_data=True, reinit_prob=0.5, lr=0.05)
    eager = _run(cfg, tmp_path, "eager")
    graphed = _run(cfg, tmp_path, "graphed", EagerReplay, monkeypatch)
    assert "iteration" in graphed[0]._graphs
    line = next(m for m in graphed[2] if "iteration graph captured" in m)
    assert "gradient cosine 1.00000 (norm ratio 1.00000)" in line
    _assert_same_run(eager, graphed)


def test_overlapped_grads_stay_allocated_and_are_zeroed_in_place(tiny_config, tmp_path):
    t = Trainer(tiny_config.replace(overlap_data=True), out_dir=tmp_path, progress=False)
    t.train_step()
    ptrs = [p.grad.data_ptr() for p in t.model.parameters()]
    t.train_step()
    assert [p.grad.data_ptr() for p in t.model.parameters()] == ptrs
    t.engine = dataclasses.replace(t.engine, overlap_data=False)
    t.train_step()  # the plain path sets them to None and lets backward allocate: both paths coexist
    assert all(p.grad is not None for p in t.model.parameters())

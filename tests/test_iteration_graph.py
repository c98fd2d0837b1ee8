"""The whole-iteration graph (issue: the fast path): what makes a replay the next eager iteration.

A CUDA graph cannot be captured on CPU, but everything around the capture can be exercised here:
the warm-up must leave no trace (every tensor and generator the iteration touches is restored),
the device learning rate must follow the schedule in place, the replay-vs-eager check must refuse a
wrong graph, and a refused or failed capture must fall back to the eager iteration with the state
intact. ``EagerReplay`` stands in for ``GraphedIteration``: the same warm-up and restore, and a
"replay" that runs the recorded step again. The real capture is compared with eager execution in
the gpu-marked tests of tests/test_engine.py.
"""

import dataclasses

import pytest
import torch

import fastjem.graphs
from fastjem.checkpoint import load_checkpoint
from fastjem.config import TrainConfig
from fastjem.engine import resolve_engine
from fastjem.graphs import StateSnapshot
from fastjem.train import Trainer, learning_rate


class EagerReplay:
    """GraphedIteration's contract on CPU: warm up (mutating the state), restore, then replay = run the step."""

    def __init__(self, step, snapshot, device, warmup=2):
        for _ in range(warmup):
            step()
        snapshot.restore()
        self.step = step
        self.outputs = None

    def replay(self):
        self.outputs = self.step()
        return self.outputs


class StaleLearningRate(EagerReplay):
    """A broken graph: the learning rate baked in at capture (here: zero) instead of read from the device."""

    lr_t: torch.Tensor

    def replay(self):
        lr_t = StaleLearningRate.lr_t
        saved = lr_t.clone()
        lr_t.zero_()
        try:
            return super().replay()
        finally:
            lr_t.copy_(saved)


def _state(t: Trainer):
    return (torch.cat([p.detach().flatten() for p in t.model.parameters()]).clone(), t.buffer.data.clone(),
            t.sampler.rng_state.clone(), t.buffer.rng_state.clone(), t.data_gen.get_state())


def _run(cfg, tmp_path, name, graph_cls=None, monkeypatch=None, iters=4):
    logs = []
    t = Trainer(cfg, out_dir=tmp_path / name, progress=False, log=logs.append)
    if graph_cls is not None:
        monkeypatch.setattr(fastjem.graphs, "GraphedIteration", graph_cls)
        t.engine = dataclasses.replace(t.engine, iteration_graph=True)
        StaleLearningRate.lr_t = t.lr_t
    torch.manual_seed(123)  # both runs draw chain indices from torch's generator: same start
    parts = [t.train_step() for _ in range(iters)]
    return t, parts, logs


def _assert_same_run(a, b):
    (ta, pa, _), (tb, pb, _) = a, b
    for x, y in zip(_state(ta), _state(tb)):
        assert torch.equal(x, y)
    for qa, qb in zip(pa, pb):
        assert {k: float(v) for k, v in qa.items()} == {k: float(v) for k, v in qb.items()}
    assert torch.equal(ta._acc, tb._acc)


@pytest.mark.parametrize("buffer_init,optimizer", [("uniform", "adam"), ("informative", "adam"),
                                                    ("uniform", "sgd")])
def test_warm_up_and_check_leave_no_trace(tiny_config, tmp_path, monkeypatch, buffer_init, optimizer):
    """Two warm-up iterations, a check iteration and its replay all run before the first real replay; the run
    must still be bitwise the plain eager run (params, buffer, device RNG states, data generator, metrics)."""
    tiny_config = tiny_config.replace(buffer_init=buffer_init, reinit_prob=0.5, optimizer=optimizer, lr=0.05)
    eager = _run(tiny_config, tmp_path, "eager")
    graphed = _run(tiny_config, tmp_path, "graphed", EagerReplay, monkeypatch)
    assert "iteration" in graphed[0]._graphs
    assert any("iteration graph captured" in line and "update cosine 1.00000" in line for line in graphed[2])
    _assert_same_run(eager, graphed)
    assert graphed[0].last_samples is graphed[0]._graphs["iteration"].outputs["samples"]


def test_a_wrong_graph_is_refused_and_the_run_continues_eagerly(tiny_config, tmp_path, monkeypatch):
    eager = _run(tiny_config, tmp_path, "eager")
    broken = _run(tiny_config, tmp_path, "broken", StaleLearningRate, monkeypatch)
    assert "iteration" not in broken[0]._graphs and broken[0]._iteration_graph_failed
    line = next(m for m in broken[2] if "iteration graph off" in m)
    assert "parameter update differs" in line and "eager" in line
    _assert_same_run(eager, broken)


class GradientReplay(EagerReplay):
    """A replay whose gradients are changed on their way to the optimiser by ``change(grad, generator)``."""

    params: list
    change = None

    def replay(self):
        gen = torch.Generator().manual_seed(len(self.params))
        hooks = [p.register_hook(lambda g: type(self).change(g, gen)) for p in self.params]
        try:
            return super().replay()
        finally:
            for h in hooks:
                h.remove()


def _graphed_run(cfg, tmp_path, name, replay_cls, monkeypatch, change):
    logs = []
    t = Trainer(cfg, out_dir=tmp_path / name, progress=False, log=logs.append)
    monkeypatch.setattr(fastjem.graphs, "GraphedIteration", replay_cls)
    t.engine = dataclasses.replace(t.engine, iteration_graph=True)
    replay_cls.params, replay_cls.change = list(t.model.parameters()), staticmethod(change)
    t.train_step()
    return t, "\n".join(logs)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_graph_that_differs_from_eager_only_by_rounding_is_kept(tiny_config, tmp_path, monkeypatch, optimizer):
    """Seen on an H100 (bf16, informative restarts, SGD): an honest graph was refused, "parameter update differs
    (cosine 0.9672, norm ratio 1.0000)". Early in warm-up (lr ~ 1e-7) the weights' fp32 change is mostly
    rounding (an SGD update under an ulp of its weight) or a sign (Adam's first step, lr * g / |g|), so gradients
    that differ by rounding (e.g. cuDNN summing in another order under capture) flip elements of it. Gradients changed
    by 3% of their mean magnitude reproduce that signature with Adam (update cosine ~0.96, norm ratio 1.0000)
    and must pass: the check compares the gradients, the optimiser state and the update's size."""
    cfg = tiny_config.replace(optimizer=optimizer, lr=1e-4, warmup_iters=1000)

    def rounding(g, gen):
        return g + 3e-2 * g.abs().mean() * torch.randn(g.shape, generator=gen)

    t, log = _graphed_run(cfg, tmp_path, "rounding", GradientReplay, monkeypatch, rounding)
    assert "iteration" in t._graphs, log
    assert "iteration graph captured" in log and "gradient cosine 0.999" in log
    cosine = float(log.split("update cosine ")[1].split(",")[0])
    if optimizer == "adam":
        assert cosine < 0.98  # what the former check refused


@pytest.mark.parametrize("change,expected", [
    (lambda g, gen: -g, "gradients differ"),
    (lambda g, gen: g + g.abs().mean() * torch.randn(g.shape, generator=gen), "gradients differ"),
])
def test_a_graph_whose_optimiser_gets_other_gradients_is_refused(tiny_config, tmp_path, monkeypatch, change,
                                                                  expected):
    t, log = _graphed_run(tiny_config.replace(optimizer="sgd"), tmp_path, "wrong", GradientReplay, monkeypatch,
                          change)
    assert "iteration" not in t._graphs and t._iteration_graph_failed
    assert "iteration graph off" in log and expected in log


def test_a_graph_that_doubles_the_update_is_refused(tiny_config, tmp_path, monkeypatch):
    class DoubledLearningRate(StaleLearningRate):
        def replay(self):
            lr_t = StaleLearningRate.lr_t
            saved = lr_t.clone()
            lr_t.mul_(2)
            try:
                return EagerReplay.replay(self)
            finally:
                lr_t.copy_(saved)

    logs = []
    t = Trainer(tiny_config, out_dir=tmp_path, progress=False, log=logs.append)
    monkeypatch.setattr(fastjem.graphs, "GraphedIteration", DoubledLearningRate)
    t.engine = dataclasses.replace(t.engine, iteration_graph=True)
    StaleLearningRate.lr_t = t.lr_t
    t.train_step()
    assert t._iteration_graph_failed
    assert any("parameter update differs in size (norm ratio 2.0" in m for m in logs), logs


class OneThingWrong(EagerReplay):
    """A replay that runs the step, then gets one thing wrong that no other check sees: ``wrong(trainer, outputs,
    buffer_before)`` returns the outputs the replay reports."""

    trainer: Trainer
    wrong = None

    def replay(self):
        before = self.trainer.buffer.data.clone()
        outputs = super().replay()
        return type(self).wrong(self.trainer, outputs, before)


def _metric_off(t, outputs, before):
    """The replay reports a loss the iteration did not compute (a metric read from a stale buffer)."""
    parts = dict(outputs["parts"])
    parts["e_sample"] = parts["e_sample"] * 1.5 + parts["e_sample"].abs() + 1.0
    return {**outputs, "parts": parts}


def _optimizer_state_off(t, outputs, before):
    """Adam's moments lost their update (an optimiser step whose state writes were not captured)."""
    for state in t.optimizer.state.values():
        state["exp_avg"].mul_(-1)
    return outputs


def _buffer_not_written(t, outputs, before):
    """The final samples never written back to the replay buffer."""
    t.buffer.data.copy_(before)
    return outputs


def _rng_off(t, outputs, before):
    """The sampler's noise state advanced once too often (an advance baked into the graph twice)."""
    t.sampler.rng_state[1:].add_(1)
    return outputs


@pytest.mark.parametrize("wrong,expected", [
    (_metric_off, "e_sample"),
    (_optimizer_state_off, "optimiser state exp_avg differs"),
    (_buffer_not_written, "replay buffer differs (1 of its change)"),
    (_rng_off, "device RNG states advanced differently"),
])
def test_a_graph_wrong_in_one_thing_alone_is_refused_for_it(tiny_config, tmp_path, monkeypatch, wrong, expected):
    """Each of the check's comparisons refuses a replay on its own: the gradients and the update are right in each
    of these, so only the metrics, the optimiser's state, the replay buffer or the device RNG state can tell."""
    logs = []
    t = Trainer(tiny_config, out_dir=tmp_path, progress=False, log=logs.append)
    monkeypatch.setattr(fastjem.graphs, "GraphedIteration", OneThingWrong)
    t.engine = dataclasses.replace(t.engine, iteration_graph=True)
    OneThingWrong.trainer, OneThingWrong.wrong = t, staticmethod(wrong)
    t.train_step()
    line = next(m for m in logs if "iteration graph off" in m)
    assert "iteration" not in t._graphs and t._iteration_graph_failed
    # the one reason, alone
    assert expected in line and line.count(";") == 0, line


def test_a_capture_that_fails_midway_restores_the_state(tiny_config, tmp_path, monkeypatch):
    class FailsAfterWarmUp(EagerReplay):
        def __init__(self, step, snapshot, device, warmup=2):
            for _ in range(warmup):
                step()
            raise RuntimeError("operation not permitted when stream is capturing")

    eager = _run(tiny_config, tmp_path, "eager")
    failed = _run(tiny_config, tmp_path, "failed", FailsAfterWarmUp, monkeypatch)
    assert any("iteration graph off: RuntimeError: operation not permitted" in m for m in failed[2])
    _assert_same_run(eager, failed)


def test_a_guard_flag_raised_in_the_warm_up_is_lowered_by_the_restore(tiny_config, tmp_path, monkeypatch):
    """The divergence guard's flag is state an iteration changes: one raised by a warm-up iteration (a capture's
    warm-up runs on the real state) must be restored with the rest, or the guard's next check stops a healthy run."""
    t = Trainer(tiny_config.replace(guard=True), out_dir=tmp_path / "run", progress=False, log=lambda *a: None)

    class FlagsInWarmUp(EagerReplay):
        def __init__(self, step, snapshot, device, warmup=2):
            step()
            t.guard.flag.fill_(True)
            super().__init__(step, snapshot, device, warmup=1)

    monkeypatch.setattr(fastjem.graphs, "GraphedIteration", FlagsInWarmUp)
    t.engine = dataclasses.replace(t.engine, iteration_graph=True)
    t.train_step()
    assert "iteration" in t._graphs and not t.guard.flag.item()


def test_state_snapshot_restores_in_place():
    a = torch.arange(4.0)
    g = torch.Generator().manual_seed(0)
    snap = StateSnapshot([a], [g])
    ptr = a.data_ptr()
    first = torch.rand(3, generator=g)
    a.mul_(5)
    snap.restore()
    assert torch.equal(a, torch.arange(4.0)) and a.data_ptr() == ptr
    assert torch.equal(torch.rand(3, generator=g), first)


def test_graphs_of_cpu_tensors_are_refused_with_the_eager_call_to_use():
    """A CUDA graph captures CUDA work only: built on CPU tensors, the sampler's and the iteration's graphs say to
    call the eager loop, before any stream or capture is made."""
    from fastjem.sampler import SGLD

    net = torch.nn.Linear(4, 3)
    with pytest.raises(RuntimeError, match="GraphedSGLD needs CUDA tensors; use SGLD.sample"):
        fastjem.graphs.GraphedSGLD(SGLD(2, 1.0, 0.01), net, net, torch.zeros(2, 4))
    with pytest.raises(RuntimeError, match="GraphedIteration needs a CUDA device; call the iteration eagerly"):
        fastjem.graphs.GraphedIteration(dict, StateSnapshot([], []), torch.device("cpu"))
    # a device named by a string ("cuda" on a GPU) failed with "'str' object has no attribute 'type'", and a start
    # that is not a tensor with "'list' object has no attribute 'is_cuda'"
    with pytest.raises(RuntimeError, match="GraphedIteration needs a CUDA device; call the iteration eagerly"):
        fastjem.graphs.GraphedIteration(dict, StateSnapshot([], []), "cpu")
    with pytest.raises(TypeError, match=r"SGLD: x0 must be a tensor of starting samples \[B, ...\], got a list"):
        fastjem.graphs.GraphedSGLD(SGLD(2, 1.0, 0.01), net, net, [[0.0] * 4])


def test_learning_rate_is_one_device_tensor_updated_in_place(tiny_config, tmp_path):
    t = Trainer(tiny_config.replace(ckpt_every=0), out_dir=tmp_path / "a", progress=False)
    lr_t = t.lr_t
    assert t.optimizer.param_groups[0]["lr"] is lr_t
    seen = []
    for i in range(6):
        t.train_step()
        seen.append(float(lr_t))
        assert float(lr_t) == pytest.approx(learning_rate(t.cfg, i, t.iters_per_epoch), rel=1e-12)
    assert len(set(seen)) > 1  # warm-up moved it
    path = t.save_checkpoint()
    # an older checkpoint kept the learning rate as a number: loading it must not replace the device tensor
    ckpt = load_checkpoint(path)
    ckpt["optimizer"]["param_groups"][0]["lr"] = 0.5
    r = Trainer(tiny_config, out_dir=tmp_path / "b", progress=False)
    r.load_state(ckpt)
    assert r.optimizer.param_groups[0]["lr"] is r.lr_t
    r.train_step()
    assert float(r.lr_t) == pytest.approx(learning_rate(r.cfg, 6, r.iters_per_epoch), rel=1e-12)


def test_adam_with_a_device_learning_rate_matches_a_float_one(tiny_config, tmp_path):
    """On CPU the tensor learning rate must give bitwise the updates of torch's plain Adam with a float lr."""
    t = Trainer(tiny_config, out_dir=tmp_path, progress=False)
    ref_params = [p.detach().clone().requires_grad_(True) for p in t.model.parameters()]
    ref = torch.optim.Adam(ref_params, lr=t.cfg.lr)
    for i in range(4):
        lr = learning_rate(t.cfg, i, t.iters_per_epoch)
        t._set_lr(lr)
        for group in ref.param_groups:
            group["lr"] = lr
        grads = [torch.randn_like(p) for p in ref_params]
        for p, q, g in zip(t.model.parameters(), ref_params, grads):
            p.grad, q.grad = g.clone(), g.clone()
        t.optimizer.step()
        ref.step()
    for p, q in zip(t.model.parameters(), ref_params):
        assert torch.equal(p.detach(), q.detach())


def test_iteration_graph_resolution_names_what_it_turned_off():
    cpu = resolve_engine(TrainConfig(), torch.device("cpu"), has_batch_norm=False)
    assert not cpu.iteration_graph
    assert any("iteration graph off: not on a CUDA device" in n for n in cpu.notes)
    cuda = torch.device("cuda")
    base = TrainConfig(precision="fp32", compile="off", kernels="reference")
    assert resolve_engine(base, cuda, False).iteration_graph
    assert resolve_engine(base.replace(optimizer="sgd"), cuda, False).iteration_graph  # DeviceSGD is captured too
    assert "CUDA graph iteration" in resolve_engine(base, cuda, False).describe()
    for cfg, dist, why in ((base, True, "data parallel"),
                           (base.replace(cuda_graph=False), False, "--no-cuda-graph"),
                           (base.replace(iteration_graph=False), False, None)):
        eng = resolve_engine(cfg, cuda, False, distributed=dist)
        assert not eng.iteration_graph
        if why:
            assert any(why in n for n in eng.notes), eng.notes


SYNCING_OPS = ("aten._local_scalar_dense", "aten.nonzero", "aten.is_nonzero", "aten.equal", "aten.unique",
               "aten.masked_select", "aten.repeat_interleave")


class SyncRecorder(torch.utils._python_dispatch.TorchDispatchMode):
    """Records ops that read a value back to the host (on CUDA: a sync, which a graph capture refuses)."""

    def __init__(self):
        super().__init__()
        self.found = []
        self.paused = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func)
        if not self.paused and name.startswith(SYNCING_OPS):
            self.found.append(name)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("buffer_init", ["uniform", "informative"])
@pytest.mark.parametrize("conditional", [False, True])
@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_the_iteration_never_reads_a_device_value_on_the_host(tiny_config, tmp_path, conditional, buffer_init,
                                                              optimizer):
    """What a CUDA graph records must not sync: no .item(), no data-dependent shapes, in the whole iteration
    (data draw, augmentation, buffer draw, SGLD, loss, backward, guard flag, metric sums, and DeviceSGD's step).
    Adam's step is left out here only because on CPU Adam reads the device learning rate as a number; on CUDA it
    runs with capturable=True."""
    cfg = tiny_config.replace(class_cond_px=conditional, pxy_weight=1.0 if conditional else 0.0,
                              buffer_init=buffer_init, optimizer=optimizer)
    t = Trainer(cfg, out_dir=tmp_path, progress=False)
    t.train_step()
    rec = SyncRecorder()
    real_step = t.optimizer.step

    def unrecorded_step():
        rec.paused = True
        try:
            real_step()
        finally:
            rec.paused = False

    if optimizer == "adam":
        t.optimizer.step = unrecorded_step
    with rec:
        t._iteration()
    assert rec.found == [], rec.found
    # the recorder does see a host read when there is one
    with rec:
        float(t._acc.sum())
    assert rec.found == ["aten._local_scalar_dense.default"]

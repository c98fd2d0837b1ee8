"""The sampler's cast copy (engine option cast_weights_once, fastjem.weights).

Under bf16 autocast SGLD runs a copy of the network whose convolution and linear weights are cast to bf16 once
per sampling call instead of at each forward. It must compute exactly what autocast computes (the same
round-to-nearest casts: bitwise equal on CPU), really remove the per-forward casts (counted at the dispatcher),
follow the trained weights from one call to the next, and leave alone what autocast does not cast.
"""

import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from fastjem.config import TrainConfig
from fastjem.engine import engine_networks, resolve_engine
from fastjem.models import build_model
from fastjem.train import Trainer
from fastjem.weights import CastCopy, cast_copy_unsupported, sampling_network

BF16 = torch.bfloat16


class CastCounter(TorchDispatchMode):
    """Counts the dispatcher's casts to bf16 (autocast's casts of weights and inputs arrive as aten._to_copy)."""

    def __init__(self):
        super().__init__()
        self.casts = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.aten._to_copy.default and kwargs.get("dtype") == BF16:
            self.casts += 1
        return func(*args, **kwargs)


def _wrn(norm="none"):
    torch.manual_seed(0)
    return build_model("wrn", 10, 3, depth=10, width=2, norm=norm).to(memory_format=torch.channels_last)


@pytest.mark.parametrize("norm", ["none", "layer", "batch"])
def test_cast_copy_holds_autocasts_casts_and_keeps_the_rest(norm):
    model = _wrn(norm)
    cc = CastCopy(model)
    assert cc.source is model and cc.module is not model and cc.dtype == BF16
    for (name, p), (_, q) in zip(model.named_parameters(), cc.module.named_parameters()):
        owner = cc.module.get_submodule(name.rsplit(".", 1)[0])
        if isinstance(owner, (nn.Conv2d, nn.Linear)):
            assert q.dtype == BF16 and torch.equal(q, p.detach().to(BF16)), name
        else:  # norm layers: autocast runs them in fp32 with fp32 parameters
            assert q.dtype == torch.float32 and torch.equal(q, p), name
        assert not q.requires_grad and p.requires_grad
        assert q.is_contiguous(memory_format=torch.channels_last) == p.is_contiguous(memory_format=torch.channels_last)
    for a, b in zip(model.buffers(), cc.module.buffers()):
        assert torch.equal(a, b)
    assert cc.cast_parameters() == sum(p.numel() for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))
                                       for p in m.parameters(recurse=False))


def test_refresh_follows_the_source_in_place():
    model = _wrn("batch")
    cc = CastCopy(model)
    addresses = [t.data_ptr() for t in cc.module.parameters()] + [t.data_ptr() for t in cc.module.buffers()]
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p))
        for b in model.buffers():
            if b.is_floating_point():
                b.add_(0.5)
    assert not all(torch.equal(p.detach().to(q.dtype), q) for p, q in zip(model.parameters(), cc.module.parameters()))
    cc.refresh_()
    for p, q in zip(model.parameters(), cc.module.parameters()):
        assert torch.equal(p.detach().to(q.dtype), q)
    for a, b in zip(model.buffers(), cc.module.buffers()):
        assert torch.equal(a, b)
    # the same storage: a graph or compiled function that captured the copy's tensors stays valid
    assert addresses == [t.data_ptr() for t in cc.module.parameters()] + [t.data_ptr() for t in cc.module.buffers()]


def test_the_copy_computes_what_autocast_computes_bitwise():
    """Energy and input gradient under CPU bf16 autocast: the copy against the fp32 network autocast casts."""
    model = _wrn().eval()
    cc = CastCopy(model)
    x = torch.rand(4, 3, 32, 32) * 2 - 1
    out = {}
    for name, net in (("autocast", model), ("copy", cc.module)):
        xr = x.clone().requires_grad_(True)
        with torch.autocast("cpu", dtype=BF16):
            logits = net(xr)
        e = -logits.float().logsumexp(1)
        (g,) = torch.autograd.grad(e.sum(), xr)
        out[name] = (logits, g)
    assert out["copy"][0].dtype == BF16
    assert torch.equal(out["copy"][0], out["autocast"][0])
    assert torch.equal(out["copy"][1], out["autocast"][1])


def test_unsupported_models_keep_autocast_and_say_why():
    # a function failed with "'function' object has no attribute 'named_modules'"
    with pytest.raises(TypeError, match=r"CastCopy: source must be the network \(a torch.nn.Module\) to copy, got a "
                                        "function"):
        CastCopy(lambda x: x)
    model = _wrn()
    torch.nn.utils.parametrizations.weight_norm(model.conv1)
    assert "parametrized" in cast_copy_unsupported(model)
    with pytest.raises(ValueError, match="parametrized"):
        CastCopy(model)
    sgld_model, sgld_net, cc, why = sampling_network(model, model, cast=True, compiled=False)
    assert sgld_model is model and sgld_net is model and cc is None and "cast at every forward" in why
    # the engine that asked for the copy turns it off, and says why, where training and the benchmark read it
    cfg = TrainConfig(precision="bf16", compile="off", batch_size=2)
    engine = resolve_engine(cfg, torch.device("cpu"), has_batch_norm=False)
    assert engine.cast_weights_once
    nets = engine_networks(engine, model, (3, 32, 32), cfg)
    assert not nets.engine.cast_weights_once and nets.cast_copy is None and nets.sgld_model is model
    assert nets.engine.notes[:len(engine.notes)] == engine.notes
    assert any("cast at every forward" in note and "parametrized" in note for note in nets.engine.notes)
    hooked = _wrn()
    hooked.fc.register_forward_hook(lambda m, i, o: o)
    assert "hooks" in cast_copy_unsupported(hooked)
    assert cast_copy_unsupported(nn.Sequential(nn.Flatten(), nn.GELU())) == "no convolution or linear layer to cast"
    # off: the trained network itself, nothing copied
    assert sampling_network(model, model, cast=False, compiled=False) == (model, model, None, None)


def test_the_cast_copy_is_compiled_where_the_engine_compiles_the_network():
    """With compile on, SGLD calls a compiled cast copy (on CUDA the graph replays it), not the eager copy or the
    trained network's compiled wrapper; with compile off, the copy itself."""
    model = _wrn()
    sgld_model, sgld_net, cc, why = sampling_network(model, model, cast=True, compiled=True)
    assert why is None and sgld_model is cc.module
    assert isinstance(sgld_net, torch._dynamo.eval_frame.OptimizedModule) and sgld_net._orig_mod is cc.module
    sgld_model, sgld_net, cc, why = sampling_network(model, model, cast=True, compiled=False)
    assert sgld_net is cc.module is sgld_model


def test_engine_casts_once_only_under_bf16():
    cpu = torch.device("cpu")
    assert resolve_engine(TrainConfig(precision="bf16"), cpu, False).cast_weights_once
    assert "SGLD weights cast once" in resolve_engine(TrainConfig(precision="bf16"), cpu, False).describe()
    assert not resolve_engine(TrainConfig(precision="bf16", cast_weights_once=False), cpu, False).cast_weights_once
    assert not resolve_engine(TrainConfig(precision="fp32"), cpu, False).cast_weights_once


def _bf16_config(tiny_config):
    return tiny_config.replace(arch="wrn", depth=10, width=2, precision="bf16", sgld_steps=4, iters=3)


def test_training_with_the_cast_copy_is_bitwise_the_autocast_run(tiny_config, tmp_path):
    """Three bf16 iterations: the same losses, samples, parameters and buffer with and without the copy, and the
    copy's SGLD casts only its input (once per forward), where autocast also casts every weight and bias."""
    cfg = _bf16_config(tiny_config)
    runs, casts = {}, {}
    for cast in (True, False):
        t = Trainer(cfg.replace(cast_weights_once=cast), out_dir=tmp_path / str(cast), progress=False)
        assert t.engine.cast_weights_once == cast and (t.cast_copy is not None) == cast
        torch.manual_seed(7)
        runs[cast] = []
        for _ in range(3):
            parts = t.train_step()
            runs[cast].append((parts["loss"].clone(), t.last_samples.clone(),
                               [p.detach().clone() for p in t.model.parameters()]))
        x0, _ = t.buffer.sample(cfg.batch_size)
        with CastCounter() as counter:
            t.run_sgld(x0)
        casts[cast] = counter.casts
        runs[cast].append(t.buffer.data.clone())
    for a, b in zip(runs[True][:3], runs[False][:3]):
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
        assert all(torch.equal(p, q) for p, q in zip(a[2], b[2]))
    assert torch.equal(runs[True][3], runs[False][3])
    layers = sum(isinstance(m, (nn.Conv2d, nn.Linear)) for m in t.model.modules())
    # WRN-10-2: 13 layers with a weight and a bias each; the input x is cast at each of the 4 forwards
    assert casts[True] == 4
    assert casts[False] == 4 * (1 + 2 * layers)


def test_the_copy_follows_training_and_stays_frozen(tiny_config, tmp_path):
    """After each optimiser step the next sampling call reads the new weights; no weight gradient is computed."""
    t = Trainer(_bf16_config(tiny_config), out_dir=tmp_path, progress=False)
    for _ in range(2):
        t.train_step()
        x0, _ = t.buffer.sample(4)
        t.run_sgld(x0)
        for p, q in zip(t.model.parameters(), t.cast_copy.module.parameters()):
            assert torch.equal(p.detach().to(q.dtype), q)
            assert q.grad is None and not q.requires_grad
    assert all(p.requires_grad for p in t.model.parameters())


@pytest.mark.gpu
def test_cast_copy_in_the_cuda_graphs_matches_autocast(tmp_path):
    """CUDA, bf16, compiled, whole-iteration graph: the copy's run and autocast's run give the same samples and
    parameters within bf16 rounding (two compiled modules: cuDNN may pick another algorithm for each)."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    cfg = TrainConfig(dataset="digits", arch="wrn", depth=10, width=2, batch_size=32, sgld_steps=5, buffer_size=10000,
                      iters=10, warmup_iters=3, lr=1e-3, device="cuda", seed=0, precision="bf16", ckpt_every=0)
    runs = {}
    for cast in (True, False):
        logs = []
        t = Trainer(cfg.replace(cast_weights_once=cast), out_dir=tmp_path / str(cast), progress=False,
                    log=logs.append)
        assert t.engine.cast_weights_once == cast
        torch.manual_seed(7)
        runs[cast] = [(t.train_step()["loss"].clone(), t.last_samples.clone()) for _ in range(4)]
        assert "iteration" in t._graphs, logs
    for (la, xa), (lb, xb) in zip(runs[True], runs[False]):
        torch.testing.assert_close(la, lb, rtol=2e-2, atol=2e-2)
        torch.testing.assert_close(xa, xb, rtol=2e-2, atol=2e-2)


def test_a_forward_pre_hook_rules_out_the_cast_copy():
    """Old-style spectral norm (common in EBMs) recomputes the weight in a forward pre-hook: a cast copy of the
    stored weight would not compute what autocast does, so the engine must see it and keep autocast."""
    from fastjem.weights import cast_copy_unsupported

    model = build_model("wrn", 10, 3, depth=10, width=1)
    assert cast_copy_unsupported(model) is None
    torch.nn.utils.spectral_norm(model.conv1)
    assert "hooks" in cast_copy_unsupported(model)


def test_a_copy_whose_tensors_do_not_pair_with_the_sources_is_refused(monkeypatch):
    """The refresh copies the source's tensors onto the copy's in order: a copy holding one tensor more (sharing
    deduplicated otherwise than in the source) is refused by name, not paired off by one."""
    import copy
    from types import SimpleNamespace

    from fastjem import weights

    def copy_with_one_more(module):
        out = copy.deepcopy(module)
        out.extra = nn.Parameter(torch.zeros(1))
        return out

    monkeypatch.setattr(weights, "copy", SimpleNamespace(deepcopy=copy_with_one_more))
    with pytest.raises(ValueError, match="CastCopy: the copy's parameters and buffers do not pair with the source's"):
        CastCopy(_wrn())

"""Checkpointing the parts in one's own training loop: SGLD and ReplayBuffer state dicts saved with torch.save, loaded
with weights_only=True into fresh objects, continue the chains bit for bit; a state that does not fit is refused."""

import io

import pytest
import torch
from kernel_utils import skip_unless_runnable
from torch import nn

from fastjem import SGLD, ReplayBuffer, model_energy
from fastjem.buffer import ClassGaussians
from fastjem.errors import ConfigError


def _parts(backend, informative, seed=0):
    # the same data every time; torch's own seed differs between the runs compared (the loaded state must count)
    images, labels = torch.rand(30, 2, 2, 2, generator=torch.Generator().manual_seed(0)) * 2 - 1, torch.arange(30) % 3
    torch.manual_seed(seed)
    init = ClassGaussians(images, labels, 3) if informative else None
    buffer = ReplayBuffer(12, (2, 2, 2), reinit_prob=0.3, num_classes=3, seed=1, backend=backend, init=init)
    return buffer, SGLD(3, 0.1, 0.05, seed=2, backend=backend)


def _iteration(net, buffer, sampler):
    y = torch.randint(0, 3, (4,))
    x0, idx = buffer.sample(4, y)
    x = sampler.sample(model_energy(net, y), x0, model=net)
    buffer.write_(idx, x)
    return x


@pytest.mark.parametrize("informative", [False, True], ids=["uniform", "informative"])
@pytest.mark.parametrize("backend", ["reference", "triton"])
def test_saved_and_loaded_parts_continue_the_uninterrupted_chains(backend, informative):
    skip_unless_runnable("cpu", backend)
    net = nn.Sequential(nn.Flatten(), nn.Linear(8, 3))
    buffer, sampler = _parts(backend, informative)
    torch.manual_seed(5)
    whole = [_iteration(net, buffer, sampler) for _ in range(4)]
    buffer, sampler = _parts(backend, informative)
    torch.manual_seed(5)
    for _ in range(2):
        _iteration(net, buffer, sampler)
    file = io.BytesIO()
    torch.save({"buffer": buffer.state_dict(), "sampler": sampler.state_dict(), "torch": torch.get_rng_state()}, file)
    file.seek(0)
    saved = torch.load(file, weights_only=True)
    buffer, sampler = _parts(backend, informative, seed=123)
    buffer.load_state_dict(saved["buffer"])
    sampler.load_state_dict(saved["sampler"])
    torch.set_rng_state(saved["torch"])
    rest = [_iteration(net, buffer, sampler) for _ in range(2)]
    assert all(torch.equal(a, b) for a, b in zip(whole[2:], rest))


def test_a_sampler_loads_into_its_own_state_tensor():
    """A GraphedSGLD captured the sampler's state tensor: a load that replaced the tensor left the graph drawing from
    the old state (and the new one never advanced)."""
    src = SGLD(2, 0.1, 0.01, seed=3)
    src.sample(lambda x: (x**2).sum(1), torch.randn(4, 2))
    dst = SGLD(2, 0.1, 0.01, seed=0)
    held = dst.rng_for(torch.device("cpu"))  # what a captured graph reads
    dst.load_state_dict(src.state_dict())
    assert dst.rng_state is held and torch.equal(held, src.rng_state)


def test_a_state_saved_before_the_first_draw_starts_the_sampler_afresh():
    fresh = SGLD(2, 0.1, 0.01, seed=3)
    used = SGLD(2, 0.1, 0.01, seed=3)
    used.sample(lambda x: (x**2).sum(1), torch.randn(4, 2))
    used.load_state_dict(fresh.state_dict())
    x0 = torch.randn(4, 2)
    assert torch.equal(used.sample(lambda x: (x**2).sum(1), x0), fresh.sample(lambda x: (x**2).sum(1), x0))


def _buffer_state(**change):
    state = ReplayBuffer(8, (2,), seed=1).state_dict()
    drop = [k for k, v in change.items() if v is None and k in ("rng_state", "data")]
    state = {**state, **{k: v for k, v in change.items() if k not in drop}}
    for k in drop:
        del state[k]
    return state


@pytest.mark.parametrize(("state", "match"), [
    (_buffer_state(), "shape \\(8, 2\\) does not match \\(9, 2\\): build the ReplayBuffer with size 8 and "
                      "sample_shape \\(2,\\)"),
    (SGLD(seed=2).state_dict(), "missing \\['data'\\].*looks like an SGLD sampler's state"),
    ({"format": "fastjem-checkpoint", "model": {}, "buffer": {}}, "whole fastjem checkpoint"),
    (_buffer_state(extra=1), "unexpected \\['extra'\\]"),
    (_buffer_state(data=None), "missing \\['data'\\]"),
    (_buffer_state(rng_state=torch.zeros(3, dtype=torch.int64)), "rng_state must be the int64 \\[2\\]"),
    (_buffer_state(data=[1.0, 2.0]), "data must be the floating-point tensor"),
    (torch.zeros(8, 2), "takes the dict its state_dict\\(\\) returned, got Tensor"),
    (nn.Linear(2, 2).state_dict(), "unexpected \\['bias', 'weight'\\]"),
], ids=["size", "sampler", "checkpoint", "extra", "no-data", "rng-shape", "data-list", "tensor", "module"])
def test_a_state_that_is_not_this_buffers_is_refused_before_anything_is_written(state, match):
    buffer = ReplayBuffer(9 if match.startswith("shape") else 8, (2,), seed=7)
    before = buffer.data.clone(), buffer.rng_state.clone()
    with pytest.raises(ConfigError, match=match):
        buffer.load_state_dict(state)
    assert torch.equal(buffer.data, before[0]) and torch.equal(buffer.rng_state, before[1])


def test_a_buffer_state_without_rng_keeps_the_buffers_own():
    """An authors' buffer imported by fastjem convert has chains and no RNG state: the chains load."""
    buffer = ReplayBuffer(8, (2,), seed=7)
    rng = buffer.rng_state.clone()
    state = _buffer_state(rng_state=None)
    buffer.load_state_dict(state)
    assert torch.equal(buffer.data, state["data"]) and torch.equal(buffer.rng_state, rng)


@pytest.mark.parametrize(("state", "match"), [
    (ReplayBuffer(8, (2,)).state_dict(), "unexpected \\['data', .*looks like a ReplayBuffer's state"),
    ({}, "missing \\['rng_state'\\]"),
    ({"rng_state": torch.zeros(2)}, "int64 \\[2\\].*got torch.float32 \\(2,\\)"),
    ({"rng_state": torch.zeros(3, dtype=torch.int64)}, "int64 \\[2\\].*got torch.int64 \\(3,\\)"),
    (nn.Linear(2, 2).state_dict(), "unexpected \\['bias', 'weight'\\]"),
], ids=["buffer", "empty", "float", "shape", "module"])
def test_a_state_that_is_not_a_samplers_is_refused(state, match):
    sampler = SGLD(seed=2)
    kept = sampler.rng_for(torch.device("cpu")).clone()
    with pytest.raises(ConfigError, match=match):
        sampler.load_state_dict(state)
    assert torch.equal(sampler.rng_state, kept)


def test_a_buffer_moves_with_to_and_samples_there():
    images, labels = torch.rand(30, 2, 2, 2) * 2 - 1, torch.arange(30) % 3
    buffer = ReplayBuffer(12, (2, 2, 2), num_classes=3, seed=1, init=ClassGaussians(images, labels, 3))
    data, rng = buffer.data.clone(), buffer.rng_state.clone()
    assert buffer.to("cpu") is buffer and buffer.device == torch.device("cpu")
    assert torch.equal(buffer.data, data) and torch.equal(buffer.rng_state, rng)
    moved = []
    buffer.init = type("Init", (), {"to": lambda self, d: moved.append(d) or self, "draw": buffer.init.draw})()
    buffer.to(torch.device("meta"))
    assert buffer.data.is_meta and buffer.rng_state.is_meta and moved == [torch.device("meta")]
    assert buffer.device == torch.device("meta")

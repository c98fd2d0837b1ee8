"""The PyTorch Philox4x32-10 that the references share with the kernels."""

import numpy as np
import pytest
import torch
from fastjem.kernels import new_rng_state, rng
from fastjem.kernels._dispatch import tl, triton
from kernel_utils import DEVICES, ks_bound, ks_statistic, skip_unless_runnable, uniform_cdf
from torch.utils._python_dispatch import TorchDispatchMode


def _words(*values):
    return [torch.tensor([v], dtype=torch.int64) for v in values]


@pytest.mark.parametrize("wraps", [True, False], ids=["wrapping-multiply", "split-multiply"])
def test_philox_known_answers(monkeypatch, wraps):
    # both ways of taking the 64-bit product: one wrapping int64 multiply, or 16-bit halves
    monkeypatch.setattr(rng, "_WRAPS", wraps)
    # Random123 known-answer vectors for philox4x32_10: (counter words, key words) -> output words
    cases = [
        ((0, 0, 0, 0, 0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((0xFFFFFFFF,) * 6, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        (
            (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344, 0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
        ),
    ]
    for inputs, expected in cases:
        out = rng.philox4x32_10(*_words(*inputs))
        assert [int(o) for o in out] == list(expected), f"philox({inputs})"


def test_counters_are_four_values_each_and_cpu_multiplies_wrap():
    """A stream of n values takes ceil(n / 4) counters (an op advances the state's offset by that); int64
    multiplication wraps on CPU, so the one-multiply path is taken there (its probe checks true 64-bit products)."""
    assert [rng.counters_for(n) for n in (0, 1, 3, 4, 5, 8, 3072)] == [0, 1, 1, 1, 2, 2, 768]
    assert rng._WRAPS
    hi, lo = rng._mul32_wrap(rng._ROUND_A, torch.tensor([0xFFFFFFFF], dtype=torch.int64))
    assert (hi.item() << 32) + lo.item() == rng._ROUND_A * 0xFFFFFFFF


def test_counter_and_seed_split_into_32_bit_words():
    # a 64-bit counter feeds (lo, hi) and a 64-bit seed feeds the key (lo, hi), as tl.randint4x does
    counter, seed = (7 << 32) | 5, (3 << 32) | 11
    got = rng.philox_words(torch.tensor(seed), torch.tensor([counter]))
    want = rng.philox4x32_10(*_words(5, 7, 0, 0, 11, 3))
    assert [int(g) for g in got] == [int(w) for w in want]


def test_philox_words_of_different_shapes_broadcast():
    """As tensor ops do: 0-d words against a vector of counters give what full-size zeros give."""
    c0, zero = torch.arange(5, dtype=torch.int64), torch.zeros((), dtype=torch.int64)
    k0, k1 = torch.tensor(11), torch.tensor(3)
    got = rng.philox4x32_10(c0, zero, zero, zero, k0, k1)
    want = rng.philox4x32_10(c0, *(torch.zeros(5, dtype=torch.int64) for _ in range(3)), k0, k1)
    assert all(g.shape == (5,) and torch.equal(g, w) for g, w in zip(got, want, strict=True))


def test_philox_words_of_a_counter_grid_equal_those_of_the_flat_counters():
    seed = torch.tensor((5 << 32) | 0x89ABCDEF)
    counters = torch.arange(24, dtype=torch.int64) + (3 << 32)
    flat = rng.philox_words(seed, counters)
    grid = rng.philox_words(seed, counters.reshape(4, 6))
    for f, g in zip(flat, grid):
        assert g.shape == (4, 6)
        assert torch.equal(g.reshape(-1), f)


@pytest.mark.parametrize("n", [0, 1, 3, 4, 7, 64, 1001])
def test_streams_are_the_counter_words_in_order(n):
    # element j of a stream: counter offset + base + j // 4, word j % 4; normals pair words (0, 1) and (2, 3)
    state = new_rng_state(99)
    state[1] = 12
    words = rng.philox_words(state[0], 12 + 5 + torch.arange(rng.counters_for(n)))
    u = [rng.uniform_from_bits(w) for w in words]
    want_u = torch.stack(u, dim=-1).reshape(-1)[:n]
    assert torch.equal(rng.uniform_stream(state, 5, n), want_u)
    n0, n1 = rng.normal_pair(u[0], u[1])
    n2, n3 = rng.normal_pair(u[2], u[3])
    want_n = torch.stack([n0, n1, n2, n3], dim=-1).reshape(-1)[:n]
    assert torch.equal(rng.normal_stream(state, 5, n), want_n)


def test_uniform_from_bits_is_open_unit_interval():
    bits = torch.tensor([0, 1 << 9, 0xFFFFFFFF], dtype=torch.int64)
    u = rng.uniform_from_bits(bits)
    assert u.dtype == torch.float32
    assert u.tolist() == [2.0**-24, 3 * 2.0**-24, 1 - 2.0**-24]


def test_uniform_stream_is_uniform_and_layout_matches_counters():
    state = new_rng_state(2024, "cpu")
    u = rng.uniform_stream(state, 0, 40000)
    assert ks_statistic(u, uniform_cdf(0.0, 1.0)) < ks_bound(u.numel())
    # element j is word j % 4 of counter offset + j // 4; base shifts whole counters
    assert torch.equal(rng.uniform_stream(state, 3, 8), u[12:20])
    assert state.tolist() == [2024, 0]  # streams do not advance the state; ops do


def test_new_rng_state():
    state = new_rng_state(-5, "cpu")
    assert state.dtype == torch.int64 and state.tolist() == [-5, 0]
    # a negative seed is its 64-bit two's complement, split in words like any other
    assert (
        rng.philox_words(state[0], torch.zeros(1, dtype=torch.int64))[0].item()
        != rng.philox_words(torch.tensor(5), torch.zeros(1, dtype=torch.int64))[0].item()
    )


def _torch_words(seed: torch.Tensor, counters: torch.Tensor):
    """philox_words through the PyTorch ops (what CUDA, graph capture and torch.compile run)."""
    k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    zero = torch.zeros_like(counters)
    return rng.philox4x32_10(counters & 0xFFFFFFFF, (counters >> 32) & 0xFFFFFFFF, zero, zero, k0, k1)


@pytest.mark.parametrize("seed", [0, 7, -5, (1 << 63) - 1, 0x1234_5678_9ABC_DEF0])
def test_numpy_philox_equals_the_torch_ops_bitwise(seed):
    gen = torch.Generator().manual_seed(seed % 1000)
    counters = torch.randint(0, 1 << 62, (3, 257), generator=gen)
    counters[0, :4] = torch.tensor([0, 1, 0xFFFFFFFF, 1 << 32])
    want = _torch_words(torch.tensor(seed), counters)
    got = rng.philox_words_numpy(seed, counters)
    for g, w in zip(got, want):
        assert g.dtype == torch.int64 and g.shape == counters.shape
        assert torch.equal(g, w)


def test_eager_cpu_calls_take_the_numpy_rounds_and_others_the_torch_ops(monkeypatch):
    # the streams the references draw (sgld_step_ref, buffer_sample_ref) go through philox_words' dispatch
    calls = []
    real = rng._philox_numpy
    monkeypatch.setattr(rng, "_philox_numpy", lambda *a: calls.append(1) or real(*a))
    seed, counters = torch.tensor(11), torch.arange(8)
    eager = rng.philox_words(seed, counters)
    assert calls == [1]
    compiled = torch.compile(rng.philox_words, backend="eager", fullgraph=True)(seed, counters)
    assert calls == [1]  # traced: the PyTorch ops
    for a, b in zip(eager, compiled):
        assert torch.equal(a, b)
    state = new_rng_state(3)
    noise = rng.normal_stream(state, 0, 10)
    assert calls == [1, 1] and noise.shape == (10,)


def test_streams_through_the_torch_ops_equal_the_numpy_path():
    # a dispatch mode (as torch.compile, export and CUDA would) sends the words through the PyTorch ops
    from torch.utils._python_dispatch import TorchDispatchMode

    class PassThrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    state = new_rng_state(2024)
    state[1] = 5
    eager = rng.normal_stream(state, 3, 4099), rng.uniform_stream(state, 3, 4099)
    with PassThrough():
        via_torch = rng.normal_stream(state, 3, 4099), rng.uniform_stream(state, 3, 4099)
    for a, b in zip(eager, via_torch):
        assert torch.equal(a, b)


class _PassThrough(TorchDispatchMode):
    """A dispatch mode that runs every op as it is: under it the RNG takes its PyTorch-ops path."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("seed,offset", [(3, (5 << 32) + 11), ((7 << 32) | 3, 11)], ids=["high-counter", "high-seed"])
def test_the_torch_path_uses_the_high_words_of_counter_and_seed(seed, offset):
    """The PyTorch-ops Philox path (CUDA, torch.compile, dispatch modes) draws the NumPy path's numbers with a
    counter past 2^32 (a run passes it after a few thousand iterations: the noise would repeat) and a seed past
    2^32."""
    state = new_rng_state(seed)
    state[1] = offset
    eager = rng.normal_stream(state, 0, 64)
    with _PassThrough():
        via_ops = rng.normal_stream(state, 0, 64)
    assert torch.equal(eager, via_ops)


if triton is not None:

    @triton.jit
    def _box_muller_parts(p_u, p_log, p_sin, p_cos, BLOCK: tl.constexpr):
        o_u = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        b_u = tl.load(p_u + o_u)
        tl.store(p_log + o_u, rng._minus_two_log(b_u))
        b_sin, b_cos = rng._sincospi(b_u * 2.0 - 1.0)
        tl.store(p_sin + o_u, b_sin)
        tl.store(p_cos + o_u, b_cos)


@pytest.mark.parametrize("device", DEVICES)
def test_box_muller_log_and_sincos_within_two_ulps_for_every_uniform(device):
    """The kernels' Box-Muller computes -2 log(u_a) and the sine and cosine of pi (2 u_b - 1) with polynomials of
    their own (one shared quadrant reduction; no special cases, since every u is a normal float in (0, 1)): for
    every one of the 2**23 uniforms a Philox word can give, each is within 2 ulps of float64's value (the
    interpreter rounds a * b + c twice where the GPU fuses it; both stay within the bound)."""
    skip_unless_runnable(device, "triton")
    k = torch.arange(2**23, dtype=torch.int64)
    u = rng.uniform_from_bits(k << 9)  # every odd multiple of 2**-24 in (0, 1)
    assert torch.equal(u, (2 * k + 1).to(torch.float32) * 2.0**-24)
    u = u.to(device)
    log, sin, cos = (torch.full_like(u, float("nan")) for _ in range(3))
    block = 2**20 if device == "cpu" else 1024  # the interpreter's cost is per program; a GPU's, per element
    _box_muller_parts[(u.numel() // block,)](u, log, sin, cos, BLOCK=block)
    ud = u.double().cpu()
    t = 2 * ud - 1
    for name, got, want in (("-2 log u", log, -2 * torch.log(ud)), ("sin(pi t)", sin, torch.sin(torch.pi * t)),
                            ("cos(pi t)", cos, torch.cos(torch.pi * t))):
        ulp = torch.from_numpy(np.spacing(want.abs().float().numpy())).double()
        err = (got.double().cpu() - want).abs() / ulp
        assert err.max().item() <= 2.0, f"{name}: {err.max().item():.2f} ulps at u = {u[err.argmax()].item()!r}"


def test_a_seed_beyond_int64_is_refused_with_what_to_pass():
    assert new_rng_state(2**63 - 1).tolist() == [2**63 - 1, 0] and new_rng_state(-(2**63)).tolist() == [-(2**63), 0]
    for seed in (2**63, 2**64 - 1, -(2**63) - 1):
        with pytest.raises(ValueError, match=r"seed must fit int64, in \[-2\*\*63, 2\*\*63\), got .*modulo 2\*\*63"):
            new_rng_state(seed)


def test_a_seed_that_is_no_integer_is_refused_not_truncated():
    """new_rng_state(1.7) was seed 1 without a word (int() truncates); integers of every kind are taken."""
    import numpy as np

    assert new_rng_state(np.int64(5)).tolist() == new_rng_state(torch.tensor(5)).tolist() == [5, 0]
    for seed in (1.7, 2.0, "3", torch.tensor(1.5)):
        with pytest.raises(TypeError, match=r"seed must be an integer, got .*pass int\(seed\) if truncating"):
            new_rng_state(seed)


def test_a_bool_seed_is_refused():
    """True is an int in Python: new_rng_state(True) was seed 1, a flag passed where the seed goes."""
    for seed in (True, False):
        with pytest.raises(TypeError, match=rf"new_rng_state: seed must be an integer, got {seed} \(bool\)"):
            new_rng_state(seed)

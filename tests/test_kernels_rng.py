"""The PyTorch Philox4x32-10 that the references share with the kernels."""

import pytest
import torch
from fastjem.kernels import new_rng_state, rng
from kernel_utils import ks_bound, ks_statistic, uniform_cdf


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


def test_counter_and_seed_split_into_32_bit_words():
    # a 64-bit counter feeds (lo, hi) and a 64-bit seed feeds the key (lo, hi), as tl.randint4x does
    counter, seed = (7 << 32) | 5, (3 << 32) | 11
    got = rng.philox_words(torch.tensor(seed), torch.tensor([counter]))
    want = rng.philox4x32_10(*_words(5, 7, 0, 0, 11, 3))
    assert [int(g) for g in got] == [int(w) for w in want]


def test_philox_words_of_a_counter_grid_equal_those_of_the_flat_counters():
    seed = torch.tensor((5 << 32) | 0x89ABCDEF)
    counters = torch.arange(24, dtype=torch.int64) + (3 << 32)
    flat = rng.philox_words(seed, counters)
    grid = rng.philox_words(seed, counters.reshape(4, 6))
    for f, g in zip(flat, grid):
        assert g.shape == (4, 6)
        assert torch.equal(g.reshape(-1), f)


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

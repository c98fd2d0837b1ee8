import math

import pytest
import torch

from fastjem.buffer import ReplayBuffer
from fastjem.errors import ConfigError


def binomial_bound(n, p, z=5.0):
    return z * math.sqrt(n * p * (1 - p))


def test_initial_buffer_is_uniform_on_the_cube():
    buf = ReplayBuffer(5000, (3, 4, 4))
    d = buf.data
    assert d.dtype == torch.float32 and d.shape == (5000, 3, 4, 4)
    assert d.min() >= -1 and d.max() <= 1
    assert abs(d.mean().item()) < 0.01 and abs(d.var().item() - 1 / 3) < 0.01


def test_reset_rate_matches_rho_and_kept_rows_are_exact():
    torch.manual_seed(0)
    rho = 0.05
    buf = ReplayBuffer(1000, (2, 3), reinit_prob=rho)
    buf.data.copy_(torch.arange(1000.0).view(-1, 1, 1).expand(-1, 2, 3) + 5.0)  # outside [-1, 1]
    n = 20000
    x0, idx = buf.sample(n)
    reset = (x0.abs() <= 1).all(dim=(1, 2))
    kept = (x0 >= 5).all(dim=(1, 2))
    assert bool((reset | kept).all())
    assert abs(reset.sum().item() - n * rho) < binomial_bound(n, rho)
    assert torch.equal(x0[kept], buf.data[idx[kept]])
    fresh = x0[reset].flatten()
    assert abs(fresh.mean().item()) < 5 * math.sqrt(1 / 3 / fresh.numel())
    assert abs(fresh.var().item() - 1 / 3) < 0.02


def test_indices_are_uniform():
    torch.manual_seed(1)
    buf = ReplayBuffer(10, (1,))
    idx = buf.draw_indices(50000)
    counts = torch.bincount(idx, minlength=10).double()
    chi2 = ((counts - 5000) ** 2 / 5000).sum().item()
    assert chi2 < 27.9  # chi-square, 9 dof, p = 0.001


def test_conditional_indices_stay_in_their_class_block():
    buf = ReplayBuffer(100, (1,), num_classes=4)
    y = torch.randint(0, 4, (5000,))
    idx = buf.draw_indices(5000, y)
    assert torch.equal(idx // 25, y)
    assert set(idx[y == 3].tolist()) == set(range(75, 100))


def test_conditional_buffer_must_divide_by_classes():
    with pytest.raises(ConfigError, match="not divisible by 3"):
        ReplayBuffer(100, (1,), num_classes=3)


def test_write_back_puts_samples_at_their_indices():
    buf = ReplayBuffer(8, (2,), reinit_prob=0.0)
    before = buf.data.clone()
    idx = torch.tensor([1, 6])
    buf.write_(idx, torch.full((2, 2), 7.0))
    assert (buf.data[idx] == 7).all()
    untouched = torch.tensor([0, 2, 3, 4, 5, 7])
    assert torch.equal(buf.data[untouched], before[untouched])


def test_state_dict_round_trip_and_shape_check():
    a, b = ReplayBuffer(8, (2,)), ReplayBuffer(8, (2,))
    b.load_state_dict(a.state_dict())
    assert torch.equal(a.data, b.data)
    with pytest.raises(ConfigError):
        ReplayBuffer(9, (2,)).load_state_dict(a.state_dict())

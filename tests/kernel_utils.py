"""Shared helpers for the fastjem.kernels tests."""

import math
import types

import pytest
import torch
from fastjem.kernels._dispatch import interpreter_on

CUDA = torch.cuda.is_available()

# cpu in the default tier (kernels under TRITON_INTERPRET=1); cuda only with -m gpu on a GPU machine
DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not CUDA, reason="needs CUDA")]),
]

BACKENDS = [pytest.param("triton", id="triton"), pytest.param("reference", id="reference")]


def skip_unless_runnable(device: str, backend: str) -> None:
    """Skip a test whose Triton path cannot run here (CPU without the interpreter)."""
    if backend == "triton" and device == "cpu" and not interpreter_on():
        pytest.skip("Triton on CPU needs TRITON_INTERPRET=1 set before Python starts")


def assert_close(actual: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float, name: str = "tensor") -> None:
    """torch.testing-style closeness that reports where and by how much two tensors differ."""
    assert actual.shape == expected.shape, f"{name}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    a, e = actual.detach().double().cpu(), expected.detach().double().cpu()
    bad = ~((a - e).abs() <= atol + rtol * e.abs())
    # NaN in actual is a mismatch even where expected is NaN: outputs here are never NaN
    bad |= a.isnan()
    if bad.any():
        where = bad.nonzero()
        diff = (a - e).abs().nan_to_num(nan=float("inf"))
        worst = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape)) if diff.dim() else ()
        lines = [
            f"{name}: {int(bad.sum())} / {bad.numel()} elements differ (atol={atol}, rtol={rtol})",
            f"  max |diff| = {diff.max().item():.3e} at {worst}:"
            f" actual {a[worst].item()!r} expected {e[worst].item()!r}",
            f"  first mismatches at {[tuple(int(i) for i in w) for w in where[:5]]}",
        ]
        raise AssertionError("\n".join(lines))


def nan_filled_empty_torch() -> types.ModuleType:
    """A stand-in for the ``torch`` module whose empty / empty_like fill floating tensors with NaN."""

    class _Torch(types.ModuleType):
        def __getattr__(self, name):
            return getattr(torch, name)

    def empty(*args, **kwargs):
        out = torch.empty(*args, **kwargs)
        return out.fill_(float("nan")) if out.is_floating_point() else out

    def empty_like(*args, **kwargs):
        out = torch.empty_like(*args, **kwargs)
        return out.fill_(float("nan")) if out.is_floating_point() else out

    proxy = _Torch("torch_nan_empty")
    proxy.empty = empty
    proxy.empty_like = empty_like
    return proxy


def patch_empty_with_nan(monkeypatch, module) -> None:
    """Make every torch.empty / empty_like inside ``module`` (a launcher module) NaN-filled."""
    monkeypatch.setattr(module, "torch", nan_filled_empty_torch())


def ks_statistic(samples: torch.Tensor, cdf) -> float:
    """Kolmogorov-Smirnov distance between the empirical CDF of ``samples`` and ``cdf``."""
    x, _ = samples.detach().double().flatten().sort()
    n = x.numel()
    f = cdf(x)
    i = torch.arange(1, n + 1, dtype=torch.float64, device=x.device)
    return max((i / n - f).max().item(), (f - (i - 1) / n).max().item())


def ks_bound(n: int, alpha: float = 1e-4) -> float:
    """Asymptotic KS critical value: P(D > bound) ~ alpha for a correct distribution."""
    return math.sqrt(-0.5 * math.log(alpha / 2) / n)


def normal_cdf(x: torch.Tensor) -> torch.Tensor:
    return torch.special.ndtr(x)


def uniform_cdf(low: float, high: float):
    return lambda x: ((x - low) / (high - low)).clamp(0, 1)


def correlation(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double().flatten(), b.double().flatten()
    a, b = a - a.mean(), b - b.mean()
    return (a @ b / (a.norm() * b.norm())).item()


def assert_gaussian_moments(x: torch.Tensor, std: float, sigmas: float = 5.0) -> None:
    """x's elements look like iid N(0, std^2): the sample mean within ``sigmas`` standard errors of 0 (std / sqrt(n)),
    and the sample std within ``sigmas`` relative standard errors of ``std`` (1 / sqrt(2 n))."""
    n = x.numel()
    got_std, got_mean = x.double().std().item(), x.double().mean().item()
    assert abs(got_std / std - 1) < sigmas / (2 * n) ** 0.5, f"std {got_std:.5g}, expected {std:g} (n = {n})"
    assert abs(got_mean) < sigmas * std / n ** 0.5, f"mean {got_mean:.3g}, expected 0 (std {std:g}, n = {n})"


class OpRecorder(torch.utils._python_dispatch.TorchDispatchMode):
    """Records the names of the ops dispatched while active."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(str(func))
        return func(*args, **(kwargs or {}))


def recorded_launches(monkeypatch, module, kernel: str, constexpr: str) -> list:
    """Replace ``module.<kernel>`` with a stand-in that launches nothing and records the value of one keyword
    (a constexpr) of each launch; returns that list."""
    launched = []

    class Kernel:
        def __getitem__(self, grid):
            return lambda *args, **kwargs: launched.append(kwargs[constexpr])

    monkeypatch.setattr(module, kernel, Kernel())
    return launched

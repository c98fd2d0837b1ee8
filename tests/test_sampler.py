import math

import numpy as np
import pytest
import torch
from fastjem.kernels import new_rng_state
from fastjem.kernels.rng import normal_stream
from torch import nn

from fastjem.sampler import SGLD, model_energy, sampling_mode


def quadratic(a):
    return lambda x: 0.5 * a * (x**2).flatten(1).sum(1)


def test_sgld_step_matches_hand_computation_on_a_quadratic():
    a, alpha, sigma = 3.0, 0.1, 0.05
    x0 = torch.randn(4, 2)
    x1 = SGLD(1, alpha, sigma, seed=11).sample(quadratic(a), x0)
    z = normal_stream(new_rng_state(11), 0, x0.numel()).view_as(x0)
    # dE/dx = a x, so x1 = x0 - alpha a x0 + sigma z
    torch.testing.assert_close(x1, x0 - alpha * a * x0 + sigma * z, rtol=0, atol=1e-6)


def test_sgld_takes_an_energys_own_input_gradient():
    """An energy carrying ``input_grad`` (model_energy's, from compiled_input_grad) gives dE/dx itself: SGLD steps
    with it and never differentiates the energy."""
    net = nn.Linear(2, 3)
    seen = []

    def input_grad(x, y):
        seen.append((x.requires_grad, y))
        return torch.ones_like(x)

    energy = model_energy(net, input_grad=input_grad)
    x0 = torch.randn(4, 2)
    x1 = SGLD(2, 0.5, 0.0).sample(energy, x0, model=net)
    torch.testing.assert_close(x1, x0 - 2 * 0.5)  # two steps down a gradient of ones
    assert seen == [(False, None)] * 2
    y = torch.tensor([0, 1, 2, 0])
    SGLD(1, 0.5, 0.0).sample(model_energy(net, y, input_grad=input_grad), x0)
    assert seen[-1][1] is y


def test_sgld_with_a_compiled_update_runs_the_compiled_op(monkeypatch):
    """compiled_update (a CPU engine that compiles its SGLD step): every step's update is sgld_step_compiled_, with
    the sampler's step size, noise and state; the chain stays the reference's to the noise's last ulps."""
    import fastjem.kernels as kernels_mod

    real, seen = kernels_mod.sgld_step_compiled_, []

    def spy(x, grad, alpha, sigma, rng, **kw):
        seen.append((alpha, sigma, rng.data_ptr()))
        return real(x, grad, alpha, sigma, rng, **kw)

    monkeypatch.setattr(kernels_mod, "sgld_step_compiled_", spy)
    x0 = torch.randn(4, 8)
    compiled = SGLD(3, 0.1, 0.05, seed=4, compiled_update=True)
    x = compiled.sample(quadratic(2.0), x0)
    assert seen == [(-0.1, 0.05, compiled.rng_state.data_ptr())] * 3
    torch.testing.assert_close(x, SGLD(3, 0.1, 0.05, seed=4).sample(quadratic(2.0), x0), rtol=0, atol=1e-6)


def test_compiled_input_gradient_equals_autograds():
    """compiled_input_grad: dE/dx of E(x) and E(x, y) as one compiled graph, autograd's gradient to fp32 rounding."""
    from fastjem.sampler import compiled_input_grad

    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(4 * 8 * 8, 5))
    net.requires_grad_(False)
    x = torch.randn(6, 3, 8, 8)
    grad = compiled_input_grad(net)
    for y in (None, torch.tensor([0, 1, 2, 3, 4, 0])):
        xr = x.clone().requires_grad_(True)
        (expected,) = torch.autograd.grad(model_energy(net, y)(xr).sum(), xr)
        got = grad(x, y)
        assert got.dtype == torch.float32 and not torch.equal(got, torch.zeros_like(got))
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-7)


def test_compiled_input_gradient_runs_from_the_cpp_wrapper(monkeypatch):
    """compiled_input_grad asks inductor for its C++ wrapper unless told not to (bench/sgld_study.py's py-wrapper
    variant times the difference); both wrappers call the same kernels: the same gradient, bit for bit."""
    import fastjem.sampler as sampler_mod

    seen = []
    real = torch.compile

    def spy(fn, **kw):
        seen.append(kw.get("options"))
        return real(fn, **kw)

    monkeypatch.setattr(sampler_mod.torch, "compile", spy)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(4 * 8 * 8, 5))
    net.requires_grad_(False)
    x = torch.randn(6, 3, 8, 8)
    cpp = sampler_mod.compiled_input_grad(net)(x, None)
    py = sampler_mod.compiled_input_grad(net, cpp_wrapper=False)(x, None)
    assert seen == [{"cpp_wrapper": True}, {"cpp_wrapper": False}]
    assert torch.equal(cpp, py) and not torch.equal(cpp, torch.zeros_like(cpp))


def test_sgld_without_noise_is_gradient_descent_on_energy():
    x0 = torch.full((1, 3), 2.0)
    x = SGLD(3, 0.25, 0.0).sample(quadratic(1.0), x0)
    torch.testing.assert_close(x, x0 * 0.75**3)


def test_sgld_with_proper_noise_samples_a_known_gaussian():
    """sigma^2 = 2 alpha: the chain's stationary law is exp(-E). E = 0.5 sum (x - mu)^2 / var."""
    torch.manual_seed(0)
    mu = torch.tensor([1.0, -2.0])
    var = torch.tensor([0.5, 2.0])
    energy = lambda x: (0.5 * (x - mu) ** 2 / var).sum(1)
    alpha = 0.01
    n = 4000
    # the reference noise op: the Triton kernel's noise statistics are tested in test_kernels_sgld
    x = SGLD(1500, alpha, math.sqrt(2 * alpha), backend="reference").sample(energy, torch.zeros(n, 2))
    # Unadjusted Langevin on a Gaussian has stationary variance var / (1 - alpha / (2 var)).
    var_ula = var / (1 - alpha / (2 * var))
    mean_tol = 5 * torch.sqrt(var_ula / n)
    assert ((x.mean(0) - mu).abs() < mean_tol).all(), (x.mean(0), mu)
    var_tol = 5 * var_ula * math.sqrt(2 / n)
    assert ((x.var(0) - var_ula).abs() < var_tol).all(), (x.var(0), var_ula)


class Recorder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.drop = nn.Dropout(0.5)
        self.modes = []

    def forward(self, x):
        self.modes.append((self.training, any(p.requires_grad for p in self.parameters())))
        return self.lin(self.drop(x))


def test_sampling_uses_eval_mode_and_frozen_parameters_then_restores():
    m = Recorder().train()
    m.lin.bias.requires_grad_(False)  # a user's frozen parameter stays frozen afterwards
    x = SGLD(4, 0.1, 0.01).sample(model_energy(m), torch.randn(5, 4), model=m)
    assert x.shape == (5, 4) and x.dtype == torch.float32 and not x.requires_grad
    assert m.modes == [(False, False)] * 4
    assert m.training
    assert m.lin.weight.requires_grad and not m.lin.bias.requires_grad
    assert m.lin.weight.grad is None


def test_conditional_energy_moves_toward_the_class():
    torch.manual_seed(0)
    m = nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        m.weight.copy_(torch.eye(2))
    y = torch.ones(8, dtype=torch.long)
    x = SGLD(10, 0.1, 0.0).sample(model_energy(m, y), torch.zeros(8, 2), model=m)
    # E(x, 1) = -x_1: descending it increases x_1 only.
    torch.testing.assert_close(x[:, 1], torch.full((8,), 1.0))
    torch.testing.assert_close(x[:, 0], torch.zeros(8))


def test_sampling_mode_restores_on_error():
    m = nn.Linear(2, 2).train()
    with pytest.raises(RuntimeError), sampling_mode(m):
        raise RuntimeError("boom")
    assert m.training and m.weight.requires_grad


def test_grad_clip_bounds_each_coordinates_drift():
    # E = 100 x0 - 0.001 x1: dE/dx = (100, -0.001); clipped at 0.5 the first coordinate moves by step 0.5 only
    energy = lambda x: 100 * x[:, 0] - 0.001 * x[:, 1]
    x0 = torch.zeros(3, 2)
    x = SGLD(4, 0.1, 0.0, grad_clip=0.5).sample(energy, x0)
    torch.testing.assert_close(x, torch.tensor([[-0.2, 0.0004]]).expand(3, 2), rtol=0, atol=1e-7)
    # without the clip the same chain runs with the full gradient
    torch.testing.assert_close(SGLD(4, 0.1, 0.0).sample(energy, x0)[:, 0], torch.full((3,), -40.0))


def test_clamp_keeps_chains_in_range_and_samples_the_truncated_law():
    """Proper Langevin on E = 0 clamped to [-1, 1]: every sample in range and the law close to U(-1, 1) (the
    projection leaves atoms at the walls, of mass O(sqrt(alpha)); under 5% in all is asserted), while the unclamped
    chain diffuses far out."""
    flat = lambda x: 0.0 * x.sum(1)
    alpha = 0.001
    x = SGLD(3000, alpha, math.sqrt(2 * alpha), seed=3, backend="reference", clamp=(-1, 1)).sample(
        flat, torch.zeros(4000, 1))
    assert x.min() >= -1 and x.max() <= 1
    assert (x.abs() == 1).float().mean() < 0.05
    # uniform on [-1, 1]: mean 0, variance 1/3; Kolmogorov-Smirnov distance to U(-1, 1) small
    assert abs(x.mean().item()) < 0.05 and abs(x.var().item() - 1 / 3) < 0.025
    u = (x.flatten().sort().values + 1) / 2
    ks = (u - torch.arange(1, len(u) + 1) / len(u)).abs().max().item()
    assert ks < 0.04, ks
    free = SGLD(3000, alpha, math.sqrt(2 * alpha), seed=3, backend="reference").sample(flat, torch.zeros(4000, 1))
    assert free.abs().max() > 2


def test_bad_clip_and_clamp_settings_are_refused():
    with pytest.raises(ValueError, match="grad_clip"):
        SGLD(grad_clip=0.0)
    with pytest.raises(ValueError, match="low < high"):
        SGLD(clamp=(1, -1))
    with pytest.raises(ValueError, match="low < high"):
        SGLD(clamp=(0.5, 0.5))  # a point is no range to sample in


def test_the_rng_state_follows_the_chains_to_their_device():
    """One sampler used on one device and then another (a run resumed elsewhere): its RNG state moves with the
    chains (once; on the same device it is the same tensor, advanced in place)."""
    s = SGLD(seed=11)
    cpu = s.rng_for("cpu")
    assert cpu.tolist() == [11, 0] and s.rng_for(torch.device("cpu")) is cpu
    moved = s.rng_for("meta")
    assert moved.device.type == "meta" and moved.dtype == torch.int64 and tuple(moved.shape) == (2,)
    assert s.rng_state is moved and s.rng_for("meta") is moved


def test_sampling_restores_each_submodules_own_mode():
    """A batch norm frozen with .eval() inside a training network stays frozen after sampling."""
    m = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Linear(4, 3)).train()
    m[1].eval()
    SGLD(2, 0.1, 0.01, seed=0).sample(model_energy(m), torch.randn(5, 4), model=m)
    assert m.training and m[0].training and not m[1].training and m[2].training
    SGLD(2, 0.1, 0.01, seed=0).sample_parts(lambda s, e: model_energy(m), torch.randn(6, 4), 2, model=m)
    assert m.training and not m[1].training


def test_sampling_works_under_inference_mode():
    """enable_grad cannot undo inference_mode: the sampler leaves it for its own block, with the same result."""
    m = nn.Linear(4, 3)
    x0 = torch.randn(6, 4)
    expected = SGLD(3, 0.1, 0.01, seed=1).sample(model_energy(m), x0, model=m)
    parts = SGLD(3, 0.1, 0.01, seed=1).sample_parts(lambda s, e: model_energy(m), x0, 2, model=m)
    with torch.inference_mode():
        x = SGLD(3, 0.1, 0.01, seed=1).sample(model_energy(m), x0.clone(), model=m)
        x_parts = SGLD(3, 0.1, 0.01, seed=1).sample_parts(lambda s, e: model_energy(m), x0.clone(), 2, model=m)
    torch.testing.assert_close(x, expected, rtol=0, atol=0)
    torch.testing.assert_close(x_parts, parts, rtol=0, atol=0)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_step_size_or_noise_is_refused(bad):
    with pytest.raises(ValueError, match="finite"):
        SGLD(5, bad)
    with pytest.raises(ValueError, match="finite"):
        SGLD(5, 1.0, bad)


def test_a_negative_step_size_noise_or_step_count_is_refused():
    for args in ((5, -1.0), (5, 1.0, -0.01), (-1,)):
        with pytest.raises(ValueError):
            SGLD(*args)
    # zero is a setting, not an error: no steps return the start (as a new fp32 tensor); no step size or noise stand
    x0 = torch.randn(3, 4)
    out = SGLD(0).sample(lambda x: (x ** 2).sum(1), x0)
    assert torch.equal(out, x0) and out is not x0
    SGLD(5, 0.0, 0.0)


def test_the_clip_bounds_negative_gradients_too():
    energy = lambda x: 100 * x[:, 0] - 100 * x[:, 1]  # noqa: E731
    x = SGLD(4, 0.1, 0.0, grad_clip=0.5).sample(energy, torch.zeros(3, 2))
    torch.testing.assert_close(x, torch.tensor([[-0.2, 0.2]]).expand(3, 2), rtol=0, atol=1e-7)


def test_samples_are_fp32_whatever_the_start_and_blocks_sample_frozen_in_eval_mode():
    energy = lambda x: (x**2).sum(1)  # noqa: E731
    x0 = torch.randn(6, 4)
    ref = SGLD(2, 0.1, 0.01, seed=0).sample(energy, x0)
    for start in (x0.double(), x0.to(torch.bfloat16).float().double()):
        x = SGLD(2, 0.1, 0.01, seed=0).sample(energy, start)
        assert x.dtype == torch.float32
    torch.testing.assert_close(SGLD(2, 0.1, 0.01, seed=0).sample(energy, x0.double()), ref, rtol=0, atol=0)
    parts = SGLD(2, 0.1, 0.01, seed=0).sample_parts(lambda s, e: energy, x0.double(), 2)
    assert parts.dtype == torch.float32
    m = Recorder().train()
    SGLD(3, 0.1, 0.01).sample_parts(lambda s, e: model_energy(m), torch.randn(6, 4), 2, model=m)
    assert m.modes and set(m.modes) == {(False, False)} and m.training


def test_a_loaded_rng_state_is_the_samplers_own_copy():
    s = SGLD(2, 0.1, 0.01, seed=3)
    s.rng_for("cpu")
    state = s.state_dict()
    kept = state["rng_state"].clone()
    t = SGLD(2, 0.1, 0.01, seed=0)
    t.load_state_dict(state)
    t.sample(lambda x: (x**2).sum(1), torch.randn(4, 2))
    assert torch.equal(state["rng_state"], kept)


@pytest.mark.parametrize("how", ["sample", "parts", "compiled_update", "triton"])
def test_a_chain_is_the_op_stepped_and_the_state_moves_once(monkeypatch, how):
    """sample / sample_parts: bitwise the chain of sgld_step_ calls that each advance the state, ending in the same
    state; yet every step is one kernel (advance=0, its counters at base t * per step) and the state moves once."""
    import fastjem.kernels as kernels_mod
    from fastjem.kernels.rng import counters_for
    from kernel_utils import skip_unless_runnable

    backend = "triton" if how == "triton" else "reference"
    skip_unless_runnable("cpu", backend)
    energy = lambda x: (0.5 * x**2 + x.sin()).flatten(1).sum(1)  # noqa: E731
    x0 = torch.randn(6, 2, 4, 4)
    expected, state = x0.clone(), new_rng_state(17)
    for _ in range(3):
        grad = torch.func.grad(lambda x: energy(x).sum())(expected)
        kernels_mod.sgld_step_(expected, grad, -0.1, 0.05, state, backend=backend)
    compiled = how == "compiled_update"
    name = "sgld_step_compiled_" if compiled else "sgld_step_"
    real, calls = getattr(kernels_mod, name), []

    def spy(x, grad, alpha, sigma, rng, **kw):
        calls.append((kw["base"], kw["advance"]))
        return real(x, grad, alpha, sigma, rng, **kw)

    monkeypatch.setattr(kernels_mod, name, spy)
    sampler = SGLD(3, 0.1, 0.05, seed=17, backend=backend, compiled_update=compiled)
    if how == "parts":
        x = sampler.sample_parts(lambda s, e: energy, x0, 2)
    else:
        x = sampler.sample(energy, x0)
    torch.testing.assert_close(x, expected, rtol=0, atol=1e-6 if compiled else 0)
    assert sampler.rng_state.tolist() == state.tolist()
    per_step, half = counters_for(x0.numel()), counters_for(x0[:3].numel())
    bases = [t * per_step for t in range(3)]
    if how == "parts":
        bases += [half + b for b in bases]
    assert calls == [(b, 0) for b in bases]


def test_a_chain_compiles_its_update_once():
    """compiled_update: every step of a chain runs the one compiled graph, though each passes its own base (t *
    counters); a longer chain compiles nothing more (an int base would be recompiled per step, then run eagerly)."""
    from torch._dynamo.utils import counters

    energy = lambda x: (x**2).sum(1)  # noqa: E731
    x0 = torch.randn(3, 12)
    SGLD(2, 0.1, 0.05, seed=1, compiled_update=True).sample(energy, x0)  # compiled here, or by an earlier test
    before = counters["frames"]["ok"]
    SGLD(12, 0.1, 0.05, seed=1, compiled_update=True).sample(energy, x0)
    assert counters["frames"]["ok"] == before


def test_step_alone_draws_the_noise_sample_draws():
    """`step_` called on its own (no state given) uses the sampler's state and moves it on: n calls are
    `sample` with n steps, number for number, and leave the state where `sample` leaves it."""
    energy = lambda x: 0.5 * (x**2).sum(dim=1)  # noqa: E731
    x0 = torch.randn(64, 5, generator=torch.Generator().manual_seed(0))
    whole = SGLD(3, 0.1, 0.3, seed=7)
    expected = whole.sample(energy, x0)
    stepped, x = SGLD(3, 0.1, 0.3, seed=7), x0.clone()
    for _ in range(3):
        x = stepped.step_(energy, x)
    assert torch.equal(x, expected) and torch.equal(stepped.rng_state, whole.rng_state)
    assert not torch.equal(expected, SGLD(3, 0.1, 0.3, seed=8).sample(energy, x0))  # the noise is in it


def test_step_updates_the_callers_tensor_in_place_leaves_its_flag_and_runs_under_no_grad():
    """`step_` writes the caller's tensor (the returned one shares its storage), never turns on its requires_grad (a
    later in-place op on it would then fail as on a leaf that requires grad), and works where gradients are off."""
    energy = lambda x: 0.5 * (x**2).sum(dim=1)  # noqa: E731
    x = torch.ones(2, 3)
    out = SGLD(1, 0.1, 0.0).step_(energy, x)
    assert out.data_ptr() == x.data_ptr() and torch.allclose(x, torch.full((2, 3), 0.9))
    assert not x.requires_grad
    x.mul_(2)  # still an ordinary tensor
    with torch.no_grad():
        SGLD(1, 0.1, 0.0).step_(energy, x)
    assert torch.allclose(x, torch.full((2, 3), 1.62)) and not x.requires_grad


def test_an_energy_that_is_not_one_value_per_sample_or_not_differentiable_is_refused():
    """E [B], [B, 1] (a one-output network) and their sum are energies; a classifier passed as its own energy
    (logits [B, K]) was summed silently and the chain descended -sum f(x), and an energy without a gradient path
    to x raised autograd's message (advising allow_unused=True, which the caller cannot set)."""
    net = nn.Linear(2, 5)
    x0 = torch.randn(4, 2)
    for energy in (lambda x: (x**2).sum(1), lambda x: (x**2).sum(1, keepdim=True), lambda x: (x**2).sum()):
        torch.testing.assert_close(SGLD(1, 0.25, 0.0).sample(energy, x0), 0.5 * x0)
    with pytest.raises(ValueError, match=r"one energy per sample, E \[4\] .* got shape \(4, 5\); a classifier's "
                                         r"logits \[B, K\] are not an energy: sample fastjem.model_energy\(net\)"):
        SGLD(1, 0.1, 0.01).sample(net, x0, model=net)
    with pytest.raises(ValueError, match=r"got shape \(2,\)"):
        SGLD(1, 0.1, 0.01).sample(lambda x: (x**2).sum(0), x0)
    with pytest.raises(TypeError, match="must return a tensor of energies"):
        SGLD(1, 0.1, 0.01).sample(lambda x: [0.0] * x.shape[0], x0)
    for detached in (lambda x: (x.detach() ** 2).sum(1) + net.weight.sum(), lambda x: torch.zeros(x.shape[0]),
                     lambda x: (x**2).sum(1).long()):
        with pytest.raises(ValueError, match="must be differentiable in x"):
            SGLD(1, 0.1, 0.01).sample(detached, x0)
    torch.testing.assert_close(SGLD(1, 0.25, 0.0).sample(lambda x: x**2, torch.ones(())), torch.tensor(0.5))


@pytest.mark.parametrize("backend", ["reference", "triton"])
def test_the_chain_on_a_gaussian_has_the_discretised_chains_law_for_any_noise(backend):
    """E = sum_i x_i^2 / (2 s_i^2), step a, noise sigma set apart (JEM's choice, sigma^2 != 2a): one step is
    x' = c x + sigma z with c = 1 - a / s^2, so from x0 = 3 the mean is 3 c^T, the stationary variance
    sigma^2 / (1 - c^2) and the lag-1 correlation c. A chain that climbs the energy (c > 1) diverges; noise of
    another scale, or drawn again at each step, changes the variance; noise correlated across steps the lag."""
    from kernel_utils import skip_unless_runnable

    skip_unless_runnable("cpu", backend)
    s2, a, sigma, n, steps = torch.tensor([1.0, 0.5]), 0.1, 0.05, 4000, 200
    c = 1 - a / s2  # [0.9, 0.8]
    var = sigma**2 / (1 - c**2)
    energy = lambda x: (x**2 / (2 * s2)).sum(1)  # noqa: E731
    sampler = SGLD(steps, a, sigma, seed=3, backend=backend)
    x = sampler.sample(energy, torch.full((n, 2), 3.0)).double()
    assert (x.mean(0).abs() < 5 * (var / n).sqrt()).all(), (x.mean(0), var)
    # the sample variance of n Gaussians has standard deviation var * sqrt(2 / (n - 1))
    assert ((x.var(0) - var).abs() < 5 * var * math.sqrt(2 / (n - 1))).all(), (x.var(0), var)
    nxt = SGLD(1, a, sigma, seed=4, backend=backend).sample(energy, x.float()).double()
    lag1 = torch.stack([torch.corrcoef(torch.stack([x[:, i], nxt[:, i]]))[0, 1] for i in range(2)])
    # the correlation estimate's standard deviation is about (1 - c^2) / sqrt(n)
    assert ((lag1 - c).abs() < 5 * (1 - c**2) / math.sqrt(n)).all(), (lag1, c)


@pytest.mark.parametrize("kwargs, match", [
    ({"n_steps": 2.5}, r"SGLD n_steps \(the number of steps, e.g. 20\) must be an integer, got 2.5 \(float\)"),
    ({"n_steps": "3"}, r"SGLD n_steps .* must be an integer, got '3' \(str\)"),
    ({"n_steps": True}, r"SGLD n_steps .* must be an integer, got True \(bool\)"),
    ({"step_size": "a"}, r"SGLD step_size \(e.g. 1.0\) must be a number, got 'a' \(str\)"),
    ({"step_size": True}, r"SGLD step_size .* must be a number, got True \(bool\)"),
    ({"noise": None}, r"SGLD noise .* must be a number, got None"),
    ({"grad_clip": "a"}, r"SGLD grad_clip \(or None\) must be a number, got 'a'"),
    ({"clamp": (1,)}, r"SGLD clamp must be a pair \(low, high\) of numbers"),
    ({"clamp": 1.0}, r"SGLD clamp must be a pair \(low, high\) of numbers"),
    ({"clamp": (0, "a")}, r"SGLD clamp's high must be a number, got 'a'"),
    ({"compiled_update": "yes"}, r"SGLD compiled_update must be True or False, got 'yes'"),
    ({"seed": 1.5}, r"SGLD: seed must be an integer, got 1.5 \(float\)"),
    ({"seed": True}, r"SGLD: seed must be an integer, got True \(bool\)"),
])
def test_settings_of_the_wrong_type_are_refused_naming_the_argument(kwargs, match):
    """A string failed a comparison with a bare TypeError, 2.5 steps or a float seed failed only at the first sample,
    a bool was taken for 1, a clamp of one number an IndexError: now a TypeError naming the argument, at once."""
    with pytest.raises(TypeError, match=match):
        SGLD(**kwargs)


def test_a_start_that_is_not_a_tensor_is_refused():
    """A list of starting points failed with "'list' object has no attribute 'detach'"."""
    for run in (lambda s: s.sample(lambda x: (x ** 2).sum(1), [[0.0, 1.0]]),
                lambda s: s.sample_parts(lambda a, b: (lambda x: (x ** 2).sum(1)), [[0.0, 1.0]], 1)):
        with pytest.raises(TypeError, match=r"SGLD: x0 must be a tensor of starting samples \[B, ...\], got a list"):
            run(SGLD(2, seed=0))


def test_an_unknown_backend_is_refused_when_the_sampler_is_built():
    with pytest.raises(ValueError, match=r"SGLD backend must be one of \('auto', 'triton', 'reference'\)"):
        SGLD(backend="cuda")
    # numbers of other kinds are still numbers
    s = SGLD(torch.tensor(3), np.float32(0.5), torch.tensor(0.01), seed=np.int64(4), grad_clip=2, clamp=(-1, 1))
    assert (s.n_steps, s.step_size, s.seed, s.grad_clip, s.clamp) == (3, 0.5, 4, 2.0, (-1.0, 1.0))
    assert type(s.n_steps) is int and type(s.seed) is int


def test_a_model_or_energy_in_the_wrong_place_is_refused_naming_it():
    """Labels passed as sample's third argument failed with "'Tensor' object has no attribute 'parameters'", an
    energy already computed (a tensor) with "'Tensor' object is not callable", and an energy of x given to
    sample_parts (model_energy for row_energies) with "energy() takes 1 positional argument but 2 were given"."""
    from fastjem.sampler import row_energies

    net = nn.Linear(4, 3)
    x0 = torch.randn(4, 4)
    with pytest.raises(TypeError, match=r"SGLD: model must be the network \(a torch.nn.Module\) .* got a Tensor: "
                                        r"labels for E\(x, y\) go to the energy: fastjem.model_energy\(net, y\)"):
        SGLD(1, seed=0).sample(model_energy(net), x0, torch.zeros(4, dtype=torch.long))
    with pytest.raises(TypeError, match=r"model must be .* got a function: the energy function goes first"):
        SGLD(1, seed=0).sample(net, x0, model=model_energy(net))
    with pytest.raises(TypeError, match=r"SGLD: energy_fn must be a function x -> E \[B\] .* got a Tensor: pass e.g. "
                                        r"fastjem.model_energy\(net\)"):
        SGLD(1, seed=0).sample(model_energy(net)(x0), x0)
    with pytest.raises(TypeError, match=r"SGLD.sample_parts: energy_for must take \(start, stop\), .* pass "
                                        r"fastjem.sampler.row_energies\(net, y\), not model_energy\(net, y\)"):
        SGLD(1, seed=0).sample_parts(model_energy(net), x0, 2)
    with pytest.raises(TypeError, match="SGLD: energy_fn must be a function"):
        SGLD(1, seed=0).sample_parts(lambda start, stop: None, x0, 2)
    # what they should have been runs
    assert SGLD(1, seed=0).sample_parts(row_energies(net), x0, 2, model=net).shape == (4, 4)


@pytest.mark.parametrize("start", [torch.float32, torch.float64])
def test_a_float64_network_is_told_the_samples_are_fp32(start):
    """Samples are fp32: a float64 network failed with torch's "mat1 and mat2 must have the same dtype, but got Float
    and Double", from x0 of float64 too (the sampler casts it), naming neither the cast nor the fix."""
    net = nn.Linear(4, 3).double()
    x0 = torch.randn(4, 4, dtype=start)
    for run in (lambda: SGLD(2, seed=0).sample(model_energy(net), x0, model=net),
                lambda: SGLD(2, seed=0).sample_parts(lambda a, b: model_energy(net), x0, 2, model=net)):
        with pytest.raises(TypeError, match=r"SGLD: the energy failed on the fp32 samples \(.*Double.*\): samples are "
                                            r"always fp32 .* cast a float64 network with net.float\(\)"):
            run()
    assert net.weight.requires_grad  # unfrozen after the failure
    # other failures are the energy's own, as they were
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        SGLD(2, seed=0).sample(model_energy(net.float()), torch.randn(4, 5))

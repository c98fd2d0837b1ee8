"""sgld_step_: x += alpha * grad + sigma * N(0, 1) with in-kernel Philox noise."""

import pytest
import torch
from fastjem.kernels import new_rng_state, sgld_step_, sgld_step_ref
from fastjem.kernels.rng import counters_for
from kernel_utils import (
    BACKENDS,
    DEVICES,
    assert_close,
    correlation,
    ks_bound,
    ks_statistic,
    normal_cdf,
    skip_unless_runnable,
)

SHAPES = [pytest.param(s, id="x".join(map(str, s))) for s in [(1,), (7,), (2, 3, 8, 8), (65536 + 5,)]]
GRAD_DTYPES = [pytest.param(torch.float32, id="grad_fp32"), pytest.param(torch.bfloat16, id="grad_bf16")]
# Z-score bound for the moment and correlation checks: a false alarm is a ~1e-7 event
Z = 5.5


def _noise(device, backend, shape, state, calls=1):
    """Pure noise: x = 0, grad = 0, alpha = 0, sigma = 1; one draw per call."""
    draws = []
    for _ in range(calls):
        x = torch.zeros(shape, device=device)
        sgld_step_(x, torch.zeros_like(x), 0.0, 1.0, state, backend=backend)
        draws.append(x)
    return draws


@pytest.mark.parametrize("grad_dtype", GRAD_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("device", DEVICES)
def test_kernel_matches_reference(device, shape, grad_dtype):
    skip_unless_runnable(device, "triton")
    gen = torch.Generator().manual_seed(len(shape))
    x = torch.randn(shape, generator=gen).to(device)
    grad = torch.randn(shape, generator=gen).to(device=device, dtype=grad_dtype)
    state = torch.tensor([1234, 77], device=device)
    x_ref, state_ref = x.clone(), state.clone()
    sgld_step_(x, grad, 0.7, 0.3, state, backend="triton")
    sgld_step_ref(x_ref, grad, 0.7, 0.3, state_ref)
    assert_close(x, x_ref, 1e-5, 1e-5, "x")
    assert state.tolist() == state_ref.tolist() == [1234, 77 + counters_for(x.numel())]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("device", DEVICES)
def test_parts_of_a_batch_draw_the_whole_batch_noise(device, backend):
    """Rows [0, 2) and [2, 5) stepped separately, each with its own copy of the state (base = the part's first
    flat element / 4, advance = the whole batch's counters): bitwise the whole batch's step, and every copy
    ends where the one state ends, over several steps."""
    skip_unless_runnable(device, backend)
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(5, 3, 4, 4, generator=gen).to(device)
    grads = [torch.randn(5, 3, 4, 4, generator=gen).to(device) for _ in range(3)]
    whole, state = x.clone(), new_rng_state(21, device)
    copies = [state.clone(), state.clone()]
    parts = [x[:2].clone(), x[2:].clone()]
    row = x[0].numel()
    for g in grads:
        sgld_step_(whole, g, 0.3, 0.1, state, backend=backend)
        for part, copy, start, stop in zip(parts, copies, (0, 2), (2, 5)):
            sgld_step_(part, g[start:stop], 0.3, 0.1, copy, backend=backend, base=start * row // 4,
                       advance=counters_for(x.numel()))
    assert torch.equal(torch.cat(parts), whole)
    assert copies[0].tolist() == copies[1].tolist() == state.tolist()
    with pytest.raises(ValueError, match="must cover"):
        sgld_step_(parts[1], grads[0][2:], 0.3, 0.1, copies[1], backend=backend, base=1, advance=2)


@pytest.mark.parametrize("compiled", [False, True], ids=["op", "compiled"])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("device", DEVICES)
def test_advance_0_leaves_the_state_and_draws_at_base(device, backend, compiled):
    """advance=0 (a loop that moves the state once, SGLD.sample): the state is not touched, and step t with
    base = t * counters draws bitwise what the op draws from a state advanced t times."""
    skip_unless_runnable(device, backend)
    if compiled and device != "cpu":
        pytest.skip("sgld_step_compiled_ is the CPU engine's update")
    from fastjem.kernels import sgld_step_compiled_

    def step(*args, **kw):
        if compiled:
            return sgld_step_compiled_(*args, **kw)
        return sgld_step_(*args, backend=backend, **kw)

    gen = torch.Generator().manual_seed(8)
    x = torch.randn(3, 2, 4, 4, generator=gen).to(device)
    grads = [torch.randn(3, 2, 4, 4, generator=gen).to(device) for _ in range(3)]
    stepped, moving = x.clone(), new_rng_state(40, device)
    deferred, fixed = x.clone(), new_rng_state(40, device)
    per_step = counters_for(x.numel())
    for t, g in enumerate(grads):
        step(stepped, g, 0.3, 0.2, moving)
        step(deferred, g, 0.3, 0.2, fixed, base=t * per_step, advance=0)
        assert fixed.tolist() == [40, 0]
    assert torch.equal(deferred, stepped)
    assert moving.tolist() == [40, 3 * per_step]
    with pytest.raises(ValueError, match="must cover"):
        step(deferred, grads[0], 0.3, 0.2, fixed, base=0, advance=per_step - 1)


@pytest.mark.parametrize("device", DEVICES)
def test_noise_matches_reference_stream(device):
    """The kernel's Gaussians are the reference's Philox + Box-Muller numbers, element by element."""
    skip_unless_runnable(device, "triton")
    state = new_rng_state(99, device)
    (x,) = _noise(device, "triton", (3, 1001), state)
    (x_ref,) = _noise(device, "reference", (3, 1001), new_rng_state(99, device))
    assert_close(x, x_ref, 1e-5, 1e-5, "noise")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("device", DEVICES)
def test_noise_statistics(device, backend):
    skip_unless_runnable(device, backend)
    rows, cols = 64, 3072  # a WRN batch: [64, 3, 32, 32]
    state = new_rng_state(7, device)
    first, second = (d.cpu().view(rows, cols).double() for d in _noise(device, backend, (rows, 3, 32, 32), state, 2))
    n = first.numel()
    assert abs(first.mean().item()) < Z / n**0.5
    assert abs(first.var().item() - 1) < Z * (2 / n) ** 0.5
    assert ks_statistic(first, normal_cdf) < ks_bound(n)
    flat = first.flatten()
    # neighbours share a Philox counter (and a Box-Muller pair): they must still be uncorrelated
    for lag in (1, 2, 4):
        assert abs(correlation(flat[:-lag], flat[lag:])) < Z / n**0.5, f"lag {lag}"
    assert abs(correlation(flat[0::2] ** 2, flat[1::2] ** 2)) < Z / (n / 2) ** 0.5  # Box-Muller pairs independent
    # rows of one call, and two calls from the advanced state
    row_corr = torch.corrcoef(first)
    off_diag = row_corr[~torch.eye(rows, dtype=torch.bool)]
    assert off_diag.abs().max().item() < 6.5 / cols**0.5
    assert abs(correlation(first, second)) < Z / n**0.5
    assert (first != second).float().mean().item() > 0.999


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("device", DEVICES)
def test_same_state_reproduces_and_offset_advances(device, backend):
    skip_unless_runnable(device, backend)
    shape = (5, 999)
    state = new_rng_state(31, device)
    a, b = _noise(device, backend, shape, state, 2)
    assert state.tolist() == [31, 2 * counters_for(5 * 999)]
    (a_again,) = _noise(device, backend, shape, new_rng_state(31, device))
    assert torch.equal(a, a_again)
    # the kernel reads the state from the tensor: rewinding it in place replays the second draw
    state[1] = counters_for(5 * 999)
    (b_again,) = _noise(device, backend, shape, state)
    assert torch.equal(b, b_again)
    (other_seed,) = _noise(device, backend, shape, new_rng_state(32, device))
    assert abs(correlation(a, other_seed)) < Z / a.numel() ** 0.5


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("device", DEVICES)
def test_an_empty_part_moves_the_state_as_the_reference(device, backend):
    """A tensor of no elements launches nothing, yet its state moves as the reference's: by its (zero) counters,
    or by the ``advance`` a part of a larger batch passes (the kernel path returned before advancing)."""
    skip_unless_runnable(device, backend)
    for advance, moved in ((None, 0), (0, 0), (8, 8)):
        x = torch.zeros(0, 3, device=device)
        state, state_ref = new_rng_state(2, device), new_rng_state(2, device)
        sgld_step_(x, torch.zeros_like(x), 1.0, 0.1, state, backend=backend, advance=advance)
        sgld_step_ref(x, torch.zeros_like(x), 1.0, 0.1, state_ref, advance=advance)
        assert state.tolist() == state_ref.tolist() == [2, moved]


@pytest.mark.parametrize("backend", BACKENDS)
def test_update_scales_grad_and_noise(backend):
    skip_unless_runnable("cpu", backend)
    x0, grad = torch.randn(4000), torch.randn(4000)
    (noise,) = _noise("cpu", backend, (4000,), new_rng_state(3))
    x = x0.clone()
    sgld_step_(x, grad, 0.25, 0.01, new_rng_state(3), backend=backend)
    assert_close(x, x0 + 0.25 * grad + 0.01 * noise, 1e-6, 1e-6, "x")


@pytest.mark.parametrize("backend", BACKENDS)
def test_opcheck(backend):
    skip_unless_runnable("cpu", backend)
    args = (torch.randn(3, 17), torch.randn(3, 17), 0.5, 0.1, new_rng_state(0), backend)
    torch.library.opcheck(torch.ops.fastjem.sgld_step_.default, args)
    # a part of a larger batch: counters from 20 on, the state moved by 40
    torch.library.opcheck(torch.ops.fastjem.sgld_step_.default, (*args, 20, 40))


@pytest.mark.parametrize("backend", BACKENDS)
def test_compile_fullgraph(backend):
    skip_unless_runnable("cpu", backend)
    torch._dynamo.reset()

    def two_steps(x, grad, state):
        sgld_step_(x, grad, 1.0, 0.01, state, backend=backend)
        sgld_step_(x, grad * 2, 1.0, 0.01, state, backend=backend)
        return x.sum()

    compiled = torch.compile(two_steps, fullgraph=True, backend="aot_eager")
    x, grad, state = torch.randn(2, 50), torch.randn(2, 50), new_rng_state(5)
    x_e, state_e = x.clone(), state.clone()
    compiled(x, grad, state)
    two_steps(x_e, grad, state_e)
    assert_close(x, x_e, 0, 0, "x")
    assert state.tolist() == state_e.tolist() == [5, 2 * counters_for(100)]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_graph_replays_draw_fresh_noise():
    x = torch.zeros(64, 3, 32, 32, device="cuda")
    grad = torch.randn_like(x)
    state = new_rng_state(11, "cuda")
    x_eager, state_eager = x.clone(), state.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up compiles the kernel outside the capture
        sgld_step_(x.clone(), grad, 0.1, 1.0, state.clone())
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        sgld_step_(x, grad, 0.1, 1.0, state)
    # capture does not execute: replay 4 times and compare with 4 eager steps from the same state
    snapshots = []
    for _ in range(4):
        graph.replay()
        snapshots.append(x.clone())
        sgld_step_(x_eager, grad, 0.1, 1.0, state_eager)
        assert_close(x, x_eager, 0, 0, "graph vs eager")
    torch.cuda.synchronize()
    assert state.tolist() == state_eager.tolist() == [11, 4 * counters_for(x.numel())]
    steps = [snapshots[0]] + [b - a for a, b in zip(snapshots[:-1], snapshots[1:], strict=True)]
    noises = [s - 0.1 * grad for s in steps]
    for a, b in zip(noises[:-1], noises[1:], strict=True):
        assert abs(correlation(a, b)) < Z / a.numel() ** 0.5


@pytest.mark.parametrize("device", DEVICES)
def test_every_launch_configuration_draws_the_same_numbers(device):
    """The benchmark sweeps block sizes and warps: a configuration changes the speed, never the result."""
    skip_unless_runnable(device, "triton")
    from fastjem.kernels.sgld import sgld_step_fwd

    gen = torch.Generator().manual_seed(3)
    x0 = torch.randn(2, 3, 8, 8 + 1, generator=gen).to(device)  # 432 elements: the last block is partial
    grad = torch.randn(x0.shape, generator=gen).to(device)
    outs = []
    for block, warps in ((None, None), (4, 1), (64, 2), (256, 4), (1024, 8)):
        x, state = x0.clone(), new_rng_state(11, device)
        state[1] = 7  # an offset and a base: both reach the counters
        sgld_step_fwd(x, grad, 0.5, 0.1, state, block=block, num_warps=warps, base=3)
        outs.append((x, state))
    x_ref, state_ref = x0.clone(), new_rng_state(11, device)
    state_ref[1] = 7
    sgld_step_ref(x_ref, grad, 0.5, 0.1, state_ref, base=3)
    assert_close(outs[0][0], x_ref, atol=1e-5, rtol=1e-5)
    assert torch.equal(outs[0][1], state_ref)
    for x, state in outs[1:]:
        assert torch.equal(x, outs[0][0]) and torch.equal(state, outs[0][1])
    # a block of 2 or 1 holds no whole counter of 4 values (QUARTER 0): refused, as a block of no power of two
    for block in (96, 2, 1):
        with pytest.raises(ValueError, match="block must be a power of two >= 4"):
            sgld_step_fwd(x0.clone(), grad, 0.5, 0.1, new_rng_state(0, device), block=block)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_samples_and_gradients_are_refused_with_what_to_pass(backend):
    """A non-contiguous x is named as such (not as a dtype problem); an x that requires grad would be changed in
    place behind autograd's back; a gradient on another device: each a ValueError saying what to pass."""
    skip_unless_runnable("cpu", backend)
    state = new_rng_state(0, "cpu")
    x = torch.zeros(4, 8)
    with pytest.raises(ValueError, match="must be contiguous .*x.contiguous"):
        sgld_step_(x.t(), torch.zeros(8, 4), 1.0, 0.01, state, backend=backend)
    with pytest.raises(ValueError, match="must be fp32"):
        sgld_step_(x.double(), torch.zeros(4, 8), 1.0, 0.01, state, backend=backend)
    with pytest.raises(ValueError, match="x.detach"):
        sgld_step_(x.clone().requires_grad_(True), torch.zeros(4, 8), 1.0, 0.01, state, backend=backend)
    with pytest.raises(ValueError, match="on x's device"):
        sgld_step_(x, torch.zeros(4, 8, device="meta"), 1.0, 0.01, state, backend=backend)
    assert state.tolist() == new_rng_state(0, "cpu").tolist() and not x.any()
    with torch.no_grad():  # outside autograd an x that requires grad is just storage
        sgld_step_(x.requires_grad_(True), torch.ones(4, 8), 1.0, 0.0, state, backend=backend)
    assert torch.equal(x.detach(), torch.ones(4, 8))


@pytest.mark.parametrize("device", DEVICES)
def test_the_kernel_writes_only_its_own_elements(device):
    """x a view into a larger buffer, with a length that is no multiple of the block: the last block's lanes past
    x's end are masked, so the buffer's elements after x keep their values (and the update is the reference's)."""
    from fastjem.kernels import sgld

    skip_unless_runnable(device, "triton")
    big = torch.full((37 + 11,), 7.0, device=device)
    x = big[:37]
    grad = torch.ones(37 + 11, device=device)[:37]
    ref = x.clone()
    sgld.sgld_step_fwd(x, grad, 0.5, 0.1, new_rng_state(3, device), block=16)
    sgld_step_ref(ref, grad, 0.5, 0.1, new_rng_state(3, device))
    assert torch.equal(big[37:], torch.full((11,), 7.0, device=device))
    assert_close(x, ref, 1e-5, 1e-6, "x")


def test_a_strided_gradient_is_read_as_its_values():
    """The autograd gradient of a channels_last network can come back strided: the Triton update reads it by its
    values, not its storage (the reference's numbers, the same noise)."""
    skip_unless_runnable("cpu", "triton")
    x = torch.randn(4, 3, 5, 6)
    g = torch.randn(4, 5, 6, 3).permute(0, 3, 1, 2)
    assert not g.is_contiguous()
    xa, xb = x.clone(), x.clone()
    sgld_step_(xa, g, 0.5, 0.1, new_rng_state(1), backend="triton")
    sgld_step_(xb, g, 0.5, 0.1, new_rng_state(1), backend="reference")
    torch.testing.assert_close(xa, xb, rtol=0, atol=1e-5)


@pytest.mark.parametrize("backend", ["triton", "reference"])
def test_sgld_refuses_a_float_state_and_a_gradient_of_another_shape(backend):
    """A float RNG state stops advancing past 2^24 (the noise would repeat); a gradient of another shape would
    broadcast silently."""
    skip_unless_runnable("cpu", backend)
    with pytest.raises(ValueError, match="int64"):
        sgld_step_(torch.zeros(8), torch.zeros(8), 1.0, 1.0, new_rng_state(0).float(), backend=backend)
    with pytest.raises(ValueError, match="grad must be"):
        sgld_step_(torch.zeros(2, 8), torch.zeros(8), 1.0, 1.0, new_rng_state(0), backend=backend)


def test_compiled_step_is_the_reference_to_the_last_ulps():
    """sgld_step_compiled_ (a CPU engine's compiled SGLD step): the reference's update and counters, the noise to
    the last ulps of the transcendentals; the same state gives the same numbers; a part of a batch draws the whole
    batch's noise for its rows."""
    from fastjem.kernels import sgld_step_compiled_

    gen = torch.Generator().manual_seed(9)
    x = torch.randn(5, 3, 4, 4, generator=gen)
    grad = torch.randn(5, 3, 4, 4, generator=gen)
    state = new_rng_state(33)
    state[1] = 1000
    ref, s_ref = x.clone(), state.clone()
    got, s_got = x.clone(), state.clone()
    for _ in range(3):
        sgld_step_ref(ref, grad, 0.3, 0.5, s_ref)
        sgld_step_compiled_(got, grad, 0.3, 0.5, s_got)
    assert s_got.tolist() == s_ref.tolist() == [33, 1000 + 3 * counters_for(x.numel())]
    torch.testing.assert_close(got, ref, rtol=0, atol=1e-5)
    assert not torch.equal(got, x + 3 * 0.3 * grad)  # the noise is there (sigma 0.5)
    again, s_again = x.clone(), state.clone()
    for _ in range(3):
        sgld_step_compiled_(again, grad, 0.3, 0.5, s_again)
    assert torch.equal(again, got)
    part, s_part = x[2:].clone(), state.clone()
    sgld_step_compiled_(part, grad[2:], 0.3, 0.5, s_part, base=2 * 48 // 4, advance=counters_for(x.numel()))
    one, s_one = x.clone(), state.clone()
    sgld_step_compiled_(one, grad, 0.3, 0.5, s_one)
    assert torch.equal(part, one[2:]) and s_part.tolist() == s_one.tolist()
    with pytest.raises(ValueError, match="contiguous"):
        sgld_step_compiled_(x.transpose(2, 3), grad, 0.3, 0.5, state)
    with pytest.raises(ValueError, match="x requires grad .*x.detach"):
        sgld_step_compiled_(x.clone().requires_grad_(True), grad, 0.3, 0.5, state)


def test_an_x_that_requires_grad_is_refused_with_the_same_error_when_compiled():
    """Under torch.compile(fullgraph=True) an x that requires grad raises sgld_step_'s eager ValueError, word for
    word, when the compiled code runs (not dynamo's 'Observed exception'), before x or the state is changed."""
    torch._dynamo.reset()

    def step(x, grad, state):
        sgld_step_(x, grad, 0.3, 0.5, state, backend="reference")
        return grad * 2

    x, grad, state = torch.rand(2, 4, requires_grad=True), torch.randn(2, 4), new_rng_state(0)
    with pytest.raises(ValueError) as eager:
        step(x, grad, state)
    before = x.detach().clone()
    with pytest.raises(ValueError) as compiled:
        torch.compile(step, fullgraph=True, backend="aot_eager")(x, grad, state)
    assert str(compiled.value) == str(eager.value) and "pass x.detach()" in str(eager.value)
    assert torch.equal(x.detach(), before) and state.tolist() == new_rng_state(0).tolist()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_strided_state_draws_its_own_numbers_and_moves(backend):
    """An RNG state given as a strided [2] view (a column of a tensor holding several samplers' states): the noise of
    a dense state with the same (seed, offset) at every call, and the view itself advanced. The kernel read the
    storage's next word as the offset (here the other state's seed, never advanced): the same noise every call."""
    skip_unless_runnable("cpu", backend)
    states = torch.tensor([[5, 9], [0, 0]])  # column k: (seed, offset) of sampler k
    strided, dense = states[:, 0], new_rng_state(5)
    assert not strided.is_contiguous()
    draws = _noise("cpu", backend, (3, 8), strided, 2)
    expected = _noise("cpu", backend, (3, 8), dense, 2)
    for got, want in zip(draws, expected):
        assert_close(got, want, 0, 0, "noise")
    assert states.tolist() == [[5, 9], [2 * counters_for(24), 0]]


@pytest.mark.parametrize("backend", ["triton", "reference"])
def test_refused_states_samples_and_step_sizes_are_told_what_to_pass(backend):
    """Each refusal names what it got and what to pass: a state of the wrong kind, fp64 samples, and an alpha or sigma
    that is no number (a tensor of several elements: not torch's 'only one element tensors can be converted')."""
    skip_unless_runnable("cpu", backend)
    x, g = torch.zeros(8), torch.zeros(8)
    with pytest.raises(ValueError, match=r"new_rng_state makes one\), got torch.int32 \(2,\) on cpu"):
        sgld_step_(x, g, 1.0, 1.0, new_rng_state(0).int(), backend=backend)
    with pytest.raises(ValueError, match=r"got torch.float64: keep the chains in fp32"):
        sgld_step_(x.double(), g, 1.0, 1.0, new_rng_state(0), backend=backend)
    # a bool (an int in Python) was a step of 1.0
    for alpha, sigma, name in ((torch.ones(2), 0.1, "alpha"), (1.0, None, "sigma"), (True, 0.1, "alpha")):
        with pytest.raises(ValueError, match=f"sgld_step_: {name} must be a number"):
            sgld_step_(x, g, alpha, sigma, new_rng_state(0), backend=backend)
    sgld_step_(x, torch.ones(8), torch.tensor(0.5), torch.tensor([0.0]), new_rng_state(0), backend=backend)
    assert torch.equal(x, torch.full((8,), 0.5))
    # the CPU engine's compiled step says the same (before anything is compiled)
    from fastjem.kernels import sgld_step_compiled_

    for alpha, sigma, name in ((torch.ones(2), 0.1, "alpha"), (1.0, "0.1x", "sigma")):
        with pytest.raises(ValueError, match=f"sgld_step_compiled_: {name} must be a number"):
            sgld_step_compiled_(x, g, alpha, sigma, new_rng_state(0))


def test_a_gradient_overlapping_x_is_read_before_x_is_updated():
    """grad a shifted view of x's storage: the kernel's later blocks would read gradient elements that earlier blocks
    had already updated; the reference (x.copy_ of the whole right-hand side) reads them first. grad that is x itself
    is read element by element, as the reference."""
    from fastjem.kernels import sgld

    skip_unless_runnable("cpu", "triton")
    for x_at, g_at in ((1, 0), (0, 1)):
        got, want = torch.arange(12.0), torch.arange(12.0)
        sgld.sgld_step_fwd(got[x_at:x_at + 8], got[g_at:g_at + 8], 1.0, 0.0, new_rng_state(0), block=4)
        sgld_step_ref(want[x_at:x_at + 8], want[g_at:g_at + 8], 1.0, 0.0, new_rng_state(0))
        assert torch.equal(got, want)
    x = torch.arange(8.0)
    sgld.sgld_step_fwd(x, x, 1.0, 0.0, new_rng_state(0), block=4)
    assert torch.equal(x, 2 * torch.arange(8.0))


def test_a_base_or_advance_that_is_no_integer_is_refused_not_truncated():
    """int() took base 1.5 for 1 and True for 1 (noise from counters the caller did not mean), and a str for its
    number; x, grad and the state stay as they were."""
    from fastjem.kernels import sgld_step_compiled_

    x, g, state = torch.zeros(8), torch.ones(8), new_rng_state(0)
    for kwargs, got in (({"base": 1.5}, r"1.5 \(float\)"), ({"base": True}, r"True \(bool\)"),
                        ({"base": "1"}, r"'1' \(str\)"), ({"advance": 2.5}, r"2.5 \(float\)")):
        name = next(iter(kwargs))
        for op, what in ((sgld_step_, "sgld_step_"), (sgld_step_compiled_, "sgld_step_compiled_")):
            with pytest.raises(TypeError, match=rf"{what}: {name} must be an integer, got {got}"):
                op(x, g, 0.1, 0.1, state, **kwargs)
    assert torch.equal(x, torch.zeros(8)) and state.tolist() == [0, 0]
    # integers of other kinds are taken
    sgld_step_(x, g, 0.5, 0.0, state, base=torch.tensor(2), advance=torch.tensor(0), backend="reference")
    assert torch.equal(x, torch.full((8,), 0.5)) and state.tolist() == [0, 0]


def test_samples_gradients_and_states_that_are_no_tensors_are_refused_naming_them():
    x, state = torch.zeros(4), new_rng_state(0)
    with pytest.raises(TypeError, match=r"sgld_step_: grad must be a torch.Tensor, got a list: pass torch.as_tensor"):
        sgld_step_(x, [0.0] * 4, 0.1, 0.1, state)
    with pytest.raises(TypeError, match="sgld_step_: rng_state must be a torch.Tensor, got a tuple"):
        sgld_step_(x, x, 0.1, 0.1, (0, 0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_negative_base_or_an_advance_short_of_the_part_is_refused(backend):
    """base -1 would draw the counter before the part's own (another part's noise, or the previous call's), and an
    advance that stops inside the part's counters would leave the next call drawing them again: refused, nothing
    drawn; base 0 and an advance of exactly the part's counters are the bounds that work."""
    skip_unless_runnable("cpu", backend)
    x, g, state = torch.zeros(9), torch.ones(9), new_rng_state(0)  # 9 elements: 3 counters
    for base, advance in ((-1, None), (-1, 0), (-1, 8), (1, 3), (0, 2)):
        with pytest.raises(ValueError, match=rf"base {base} and advance {advance} must cover this part's 3 counters"):
            sgld_step_(x, g, 0.1, 0.1, state, base=base, advance=advance, backend=backend)
    assert not x.any() and state.tolist() == [0, 0]
    sgld_step_(x, g, 0.5, 0.0, state, base=0, advance=3, backend=backend)
    sgld_step_(x, g, 0.5, 0.0, state, base=2, advance=5, backend=backend)
    assert torch.equal(x, torch.ones(9)) and state.tolist() == [0, 8]

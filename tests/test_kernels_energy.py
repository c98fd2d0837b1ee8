"""lse_energy: Triton kernel and reference backend against the autograd spec ``lse_energy_ref``."""

import math
import types
import warnings

import fastjem.kernels as kernels
import pytest
import torch
from fastjem.kernels import energy, lse_energy, lse_energy_ref
from kernel_utils import BACKENDS, DEVICES, assert_close, patch_empty_with_nan, skip_unless_runnable

# (dtype, atol, rtol) for gradients in the logits' dtype; bf16 allows one ulp (the interpreter truncates)
DTYPES = [
    pytest.param(torch.float32, 1e-5, 1e-5, id="fp32"),
    pytest.param(torch.bfloat16, 1e-2, 1.6e-2, id="bf16"),
    pytest.param(torch.float16, 1e-3, 2e-3, id="fp16"),
]
# E is fp32 from identical inputs in every dtype
E_ATOL, E_RTOL = 1e-4, 1e-5
SHAPES = [pytest.param(b, k, id=f"B{b}-K{k}") for b in (1, 7, 64, 129) for k in (1, 10, 100, 1000)]


@pytest.fixture(autouse=True)
def nan_empty(monkeypatch):
    """Outputs start as NaN, so an element the kernel forgets to write fails the comparison."""
    patch_empty_with_nan(monkeypatch, energy)


def _run(fn, logits, upstream, labels=None, **kwargs):
    x = logits.detach().clone().requires_grad_(True)
    e = fn(x, labels, **kwargs)
    (grad,) = torch.autograd.grad(e, x, upstream)
    return e, grad


def _compare(device, backend, dtype, atol, rtol, B, K, labels_given, scale=3.0):
    skip_unless_runnable(device, backend)
    gen = torch.Generator().manual_seed(B * 1000 + K)
    logits = (scale * torch.randn(B, K, generator=gen)).to(device=device, dtype=dtype)
    # one shared upstream gradient for kernel and spec
    upstream = torch.randn(B, generator=gen).to(device)
    labels = torch.randint(0, K, (B,), generator=gen).to(device) if labels_given else None
    e, grad = _run(lse_energy, logits, upstream, labels, backend=backend)
    e_ref, grad_ref = _run(lse_energy_ref, logits, upstream, labels)
    assert e.dtype == torch.float32 and grad.dtype == dtype
    assert_close(e, e_ref, E_ATOL, E_RTOL, "E")
    assert_close(grad, grad_ref, atol, rtol, "dE/dlogits")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("B, K", SHAPES)
@pytest.mark.parametrize("dtype, atol, rtol", DTYPES)
@pytest.mark.parametrize("device", DEVICES)
def test_marginal_matches_reference(device, backend, dtype, atol, rtol, B, K):
    _compare(device, backend, dtype, atol, rtol, B, K, labels_given=False)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("B, K", [pytest.param(b, k, id=f"B{b}-K{k}") for b, k in [(1, 1), (7, 10), (129, 1000)]])
@pytest.mark.parametrize("dtype, atol, rtol", DTYPES)
@pytest.mark.parametrize("device", DEVICES)
def test_joint_matches_reference(device, backend, dtype, atol, rtol, B, K):
    _compare(device, backend, dtype, atol, rtol, B, K, labels_given=True)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype, atol, rtol", DTYPES)
@pytest.mark.parametrize("device", DEVICES)
def test_extreme_logits_are_stable(device, backend, dtype, atol, rtol):
    # |logits| ~ 1e4: a naive exp overflows; the softmax is nearly one-hot
    _compare(device, backend, dtype, atol, rtol, 33, 100, labels_given=False, scale=1e4)
    skip_unless_runnable(device, backend)
    logits = torch.full((4, 5), -1e4, device=device, dtype=dtype)
    logits[:, 2] = 1e4
    e = lse_energy(logits, backend=backend)
    assert_close(e, -logits[:, 2].float(), 0, 1e-6, "E")  # the other terms vanish in fp32


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("K", [5000, 9000])
@pytest.mark.parametrize("dtype, atol, rtol", DTYPES)
@pytest.mark.parametrize("device", DEVICES)
def test_rows_longer_than_a_tile_are_read_in_chunks(device, backend, dtype, atol, rtol, K):
    """More classes than the kernel's tile holds (4096 columns under the interpreter, 1024 on a GPU): each row is
    read in chunks with a running max and sum. The largest logit sits in the last chunk, so the earlier chunks'
    sums must be rescaled to it."""
    skip_unless_runnable(device, backend)
    assert energy._tiles(3, K)[1] < K
    gen = torch.Generator().manual_seed(K)
    logits = 3.0 * torch.randn(3, K, generator=gen)
    logits[:, 7] += 12.0  # a large logit in the first chunk, then a larger one in the last
    logits[:, K - 5] += 20.0
    logits = logits.to(device=device, dtype=dtype)
    upstream = torch.randn(3, generator=gen).to(device)
    e, grad = _run(lse_energy, logits, upstream, backend=backend)
    e_ref, grad_ref = _run(lse_energy_ref, logits, upstream)
    assert_close(e, e_ref, E_ATOL, E_RTOL, "E")
    assert_close(grad, grad_ref, atol, rtol, "dE/dlogits")


@pytest.mark.parametrize("device", DEVICES)
def test_saves_row_max_and_sumexp(device):
    skip_unless_runnable(device, "triton")
    logits = torch.randn(9, 37, device=device) * 5
    e, row_max, row_sumexp = torch.ops.fastjem.lse_energy(logits, None, "triton")
    assert_close(row_max, logits.amax(1), 0, 0, "row_max")
    assert_close(row_sumexp, torch.exp(logits - logits.amax(1, keepdim=True)).sum(1), 1e-5, 1e-5, "row_sumexp")
    assert_close(e, -(row_max + row_sumexp.log()), 1e-6, 1e-6, "E")


@pytest.mark.parametrize("backend", BACKENDS)
def test_noncontiguous_and_expanded_upstream(backend):
    skip_unless_runnable("cpu", backend)
    logits = torch.randn(13, 40)[:, ::2].requires_grad_(True)  # column stride 2
    e = lse_energy(logits, backend=backend)
    (grad,) = torch.autograd.grad(e.sum(), logits)  # upstream is an expanded (stride 0) tensor
    ref = -torch.softmax(logits.detach(), 1)
    assert_close(grad, ref, 1e-6, 1e-5, "dE/dlogits")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("labels_given", [False, True], ids=["marginal", "joint"])
def test_opcheck(backend, labels_given):
    skip_unless_runnable("cpu", backend)
    logits = torch.randn(6, 11, requires_grad=True)
    labels = torch.randint(0, 11, (6,)) if labels_given else None
    torch.library.opcheck(torch.ops.fastjem.lse_energy.default, (logits, labels, backend))
    _, row_max, row_sumexp = torch.ops.fastjem.lse_energy(logits.detach(), labels, backend)
    args = (torch.randn(6), logits.detach(), labels, row_max, row_sumexp, backend)
    torch.library.opcheck(torch.ops.fastjem.lse_energy_backward.default, args)


@pytest.mark.parametrize("backend", BACKENDS)
def test_compile_fullgraph(backend):
    skip_unless_runnable("cpu", backend)
    torch._dynamo.reset()
    logits = torch.randn(8, 10, dtype=torch.bfloat16)
    labels = torch.randint(0, 10, (8,))

    def loss(x):
        return lse_energy(x, backend=backend).mean() - lse_energy(x, labels, backend=backend).mean()

    compiled = torch.compile(loss, fullgraph=True, backend="aot_eager")
    x_c, x_e = logits.clone().requires_grad_(True), logits.clone().requires_grad_(True)
    (g_c,) = torch.autograd.grad(compiled(x_c), x_c)
    (g_e,) = torch.autograd.grad(loss(x_e), x_e)
    assert_close(g_c, g_e, 0, 0, "compiled grad")
    assert_close(compiled(logits), loss(logits), 0, 0, "compiled value")


def test_backend_selection_reaches_the_kernel(monkeypatch):
    """The per-call argument and the context manager pick the launcher, auto follows the dispatch rule."""
    calls = []
    real = energy.lse_energy_fwd
    monkeypatch.setattr(energy, "lse_energy_fwd", lambda *a: calls.append(1) or real(*a))
    logits = torch.randn(3, 4)
    skip_unless_runnable("cpu", "triton")
    lse_energy(logits, backend="reference")
    assert calls == []
    with kernels.backend("reference"):
        lse_energy(logits)
    assert calls == []
    lse_energy(logits, backend="triton")
    assert calls == [1]
    lse_energy(logits)  # auto: the interpreter is on
    assert calls == [1, 1]


@pytest.mark.parametrize("path", ["eager", "registered-op"])
def test_the_backward_runs_the_backward_kernel_on_the_triton_backend(monkeypatch, path):
    """The fused backward launches on the triton backend, eagerly and through the registered op (the reference
    backward gives the same numbers, so only the launch tells them apart); the reference backend never launches."""
    skip_unless_runnable("cpu", "triton")
    calls = []
    real = energy.lse_energy_bwd
    monkeypatch.setattr(energy, "lse_energy_bwd", lambda *a: calls.append(1) or real(*a))
    if path == "registered-op":
        monkeypatch.setattr(energy, "direct_call", lambda *a, **k: False)
    for backend, launched in (("reference", []), ("triton", [1])):
        calls.clear()
        logits = torch.randn(3, 4, requires_grad=True)
        lse_energy(logits, backend=backend).sum().backward()
        assert calls == launched, backend


@pytest.mark.parametrize("backend", BACKENDS)
def test_strided_labels_pick_their_own_rows(backend):
    """A column of a label matrix (stride 2): the kernels must read label b of row b, not element b of storage."""
    skip_unless_runnable("cpu", backend)
    gen = torch.Generator().manual_seed(5)
    logits = torch.randn(6, 10, generator=gen)
    labels = torch.randint(0, 10, (6, 2), generator=gen)[:, 0]
    assert not labels.is_contiguous()
    e, grad = _run(lse_energy, logits, torch.ones(6), labels, backend=backend)
    e_ref, grad_ref = _run(lse_energy_ref, logits, torch.ones(6), labels.contiguous())
    assert_close(e, e_ref, 0, 0, "E(x, y)")
    assert_close(grad, grad_ref, 0, 0, "dE/dlogits")


@pytest.mark.parametrize("backend", BACKENDS)
def test_labels_outside_the_classes_are_refused_on_the_cpu(backend):
    """CPU labels are checked (no host sync to pay): a label outside [0, K) is a ValueError on either backend; the
    Triton backend gave E = NaN and the reference an index error from inside gather."""
    skip_unless_runnable("cpu", backend)
    logits = torch.randn(3, 10)
    for labels in (torch.tensor([3, 10, 0]), torch.tensor([3, -1, 0])):
        with pytest.raises(ValueError, match=r"labels must be class indices in \[0, K=10\)"):
            lse_energy(logits, labels, backend=backend)
    # the bounds themselves are classes
    e = lse_energy(logits, torch.tensor([0, 9, 9]), backend=backend)
    assert e.tolist() == (-logits[[0, 1, 2], [0, 9, 9]]).tolist()


def test_the_kernel_reads_no_label_outside_the_classes():
    """On a GPU labels are not checked (a host sync at every call): the kernel gives E = NaN there, not a stray
    read; its launcher, called here directly, takes such labels as a GPU call does."""
    skip_unless_runnable("cpu", "triton")
    logits = torch.randn(3, 10)
    e, _, _ = energy.lse_energy_fwd(logits, torch.tensor([3, 10, -1]))
    assert e[0] == -logits[0, 3] and e[1:].isnan().all()


def test_labels_that_are_not_a_tensor_are_refused():
    """A list of labels failed inside the dispatch with a TypeError about is_functorch_wrapped_tensor."""
    for fn in (lse_energy, lse_energy_ref):
        with pytest.raises(TypeError, match="labels must be an int64 tensor"):
            fn(torch.randn(2, 3), [0, 1])


def test_the_spec_refuses_what_the_op_refuses():
    """lse_energy_ref, imported on its own, took [B, 0] logits (E = +inf) and gave gather's error for float labels."""
    with pytest.raises(ValueError, match="K >= 1 classes"):
        lse_energy_ref(torch.randn(2, 0))
    with pytest.raises(ValueError, match=r"labels must be int64 \[B=2\]"):
        lse_energy_ref(torch.randn(2, 3), torch.zeros(2))


def test_labels_on_another_device_are_refused():
    with pytest.raises(ValueError, match="move the labels"):
        lse_energy(torch.randn(2, 10), torch.zeros(2, dtype=torch.int64, device="meta"), backend="reference")


@pytest.mark.parametrize("backend", BACKENDS)
def test_logits_of_an_integer_dtype_and_labels_not_int64_of_the_batch_are_refused(backend):
    """Integer logits have no logsumexp gradient: a TypeError naming the dtypes taken. Labels must be int64 with one
    per row: float or int32 labels, or a count other than the batch's, are a ValueError naming the shape wanted."""
    skip_unless_runnable("cpu", backend)
    with pytest.raises(TypeError, match="logits dtype must be one of"):
        lse_energy(torch.zeros(3, 4, dtype=torch.int64), backend=backend)
    logits = torch.randn(3, 4)
    for labels in (torch.zeros(3), torch.zeros(3, dtype=torch.int32), torch.zeros(2, dtype=torch.int64),
                   torch.zeros(3, 1, dtype=torch.int64)):
        with pytest.raises(ValueError, match=r"labels must be int64 \[B=3\]"):
            lse_energy(logits, labels, backend=backend)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_row_of_minus_inf_logits_has_infinite_energy(backend):
    """exp(-inf) sums to 0: E = +inf in the kernel, the reference backend and the spec alike (not NaN)."""
    skip_unless_runnable("cpu", backend)
    logits = torch.tensor([[float("-inf")] * 4, [0.0, 1.0, 2.0, 3.0]])
    e = lse_energy(logits, backend=backend)
    assert e[0] == float("inf") and lse_energy_ref(logits)[0] == float("inf")
    assert_close(e[1:], lse_energy_ref(logits)[1:], 1e-6, 1e-6, "finite row")


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_a_row_with_a_plus_inf_logit_has_minus_infinite_energy(backend, dtype):
    """logsumexp of a row holding +inf is +inf: E = -inf in the kernel, the reference backend and the spec alike,
    not inf - inf = NaN (fp16 logits that overflow give such rows), also when the inf comes after the first block
    of a long row, and the other rows keep their values."""
    skip_unless_runnable("cpu", backend)
    for k, at in ((4, 0), (5000, 4500)):
        logits = torch.randn(3, k).to(dtype)
        logits[0, at] = float("inf")
        logits[2, -1] = float("inf")
        logits[2, 0] = float("-inf")
        e = lse_energy(logits, backend=backend)
        spec = lse_energy_ref(logits)
        assert e[0] == float("-inf") and e[2] == float("-inf") and spec[0] == float("-inf"), (k, e, spec)
        assert_close(e[1:2], spec[1:2], 1e-5, 1e-5, f"finite row, K={k}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("labels_given", [False, True], ids=["marginal", "joint"])
def test_torch_func_transforms_and_input_gradients_of_a_network(backend, labels_given):
    """Every torch.func transform through lse_energy gives the spec's values (the registered op's autograd wrapper
    fails under them, pytorch/pytorch#170834, and a kernel cannot take their wrapped tensors): grad,
    grad_and_value, vjp, jvp, vmap, jacrev, and the Hessian by jacfwd(jacrev); and dE/dx of a network by
    torch.func.grad, as an EBM's sampler may compute it, equals autograd's."""
    skip_unless_runnable("cpu", backend)
    gen = torch.Generator().manual_seed(3)
    logits = 3 * torch.randn(6, 10, generator=gen)
    labels = torch.randint(0, 10, (6,), generator=gen) if labels_given else None
    upstream = torch.randn(6, generator=gen)
    e_ref, g_ref = _run(lse_energy_ref, logits, upstream, labels)

    def energy_of(z):
        return lse_energy(z, labels, backend=backend)

    grad = torch.func.grad(lambda z: (energy_of(z) * upstream).sum())(logits)
    assert_close(grad, g_ref, 1e-5, 1e-5, "torch.func.grad")
    g2, value = torch.func.grad_and_value(lambda z: energy_of(z).sum())(logits)
    assert_close(value, e_ref.sum(), 1e-4, 1e-5, "value")
    e, vjp = torch.func.vjp(energy_of, logits)
    assert_close(e, e_ref, E_ATOL, E_RTOL, "E")
    assert_close(vjp(upstream)[0], g_ref, 1e-5, 1e-5, "vjp")
    tangent = torch.randn(6, 10, generator=gen)
    _, jvp = torch.func.jvp(energy_of, (logits,), (tangent,))
    assert_close(jvp, (g_ref / upstream[:, None] * tangent).sum(1), 1e-5, 1e-5, "jvp")  # dE_b/dlogits_b . t_b
    per_row = torch.func.vmap(lambda row, y: lse_energy(row[None], None if y is None else y[None], backend=backend)[0],
                              in_dims=(0, None if labels is None else 0))(logits, labels)
    assert_close(per_row, e_ref, E_ATOL, E_RTOL, "vmap")
    assert_close(torch.func.jacrev(energy_of)(logits).sum(0), g_ref / upstream[:, None], 1e-5, 1e-5, "jacrev")
    first, first_label = logits[:1], None if labels is None else labels[:1]
    hessian = torch.func.jacfwd(torch.func.jacrev(lambda z: lse_energy(z, first_label, backend=backend).sum()))(first)
    hessian = hessian[0, :, 0]  # [K, K]
    p = torch.softmax(first[0], 0)
    expected = torch.zeros(10, 10) if labels_given else -(torch.diag(p) - torch.outer(p, p))
    assert_close(hessian, expected, 1e-6, 1e-5, "Hessian")

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 16), torch.nn.SiLU(), torch.nn.Linear(16, 10))
    x = torch.randn(6, 3, 2, 2, generator=gen)
    dx = torch.func.grad(lambda z: lse_energy(net(z), labels, backend=backend).sum())(x)
    _, dx_ref = _run(lambda z, y: lse_energy_ref(net(z), y).sum(), x, torch.tensor(1.0), labels)
    assert_close(dx, dx_ref, 1e-6, 1e-5, "dE/dx")


def test_an_eager_call_binds_no_signature(monkeypatch):
    """A plain eager call (what SGLD makes at every step) runs the autograd.Function whose forward takes ctx: torch
    binds a setup_context Function's arguments with inspect.signature at every apply, which took as long as the
    reference forward itself on a CPU."""
    import inspect

    calls = []
    real = inspect.signature
    monkeypatch.setattr(inspect, "signature", lambda *a, **k: calls.append(a) or real(*a, **k))
    logits = torch.randn(4, 10, requires_grad=True)
    labels = torch.randint(0, 10, (4,))
    for y in (None, labels):
        e = lse_energy(logits, y, backend="reference")
        (grad,) = torch.autograd.grad(e.sum(), logits)
        assert_close(e, lse_energy_ref(logits, y), E_ATOL, E_RTOL, "E")
    assert calls == []


@pytest.mark.parametrize("labels_given", [False, True], ids=["marginal", "joint"])
def test_a_plain_tensor_inside_a_transform_is_taken(labels_given):
    """A transformed function that closes over plain logits (not the transform's input) calls the eager path with
    unwrapped tensors while the transform is active, where torch takes only a setup_context Function."""
    gen = torch.Generator().manual_seed(8)
    logits = torch.randn(5, 10, generator=gen, requires_grad=True)
    labels = torch.randint(0, 10, (5,), generator=gen) if labels_given else None
    scale = torch.randn(5, generator=gen)
    e = lse_energy_ref(logits, labels).detach()
    for constant in (logits, logits.detach()):
        grad = torch.func.grad(lambda s, c=constant: (s * lse_energy(c, labels, backend="reference")).sum())(scale)
        assert_close(grad, e, E_ATOL, E_RTOL, "d/dscale")


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_inputs_under_a_transform_get_the_same_errors(backend):
    """Under torch.func the energy is the reference formula, which would take [B, K, ...] logits silently (a
    logsumexp over dim 1 of each position) and fail on int32 labels with gather's message: the inputs are checked
    first, as on every other path."""
    skip_unless_runnable("cpu", backend)
    with pytest.raises(ValueError, match=r"logits must be \[B, K\]"):
        torch.func.grad(lambda z: lse_energy(z, backend=backend).sum())(torch.randn(2, 3, 4))
    with pytest.raises(ValueError, match="labels must be int64"):
        torch.func.grad(lambda z: lse_energy(z, torch.tensor([0, 1], dtype=torch.int32), backend=backend).sum())(
            torch.randn(2, 3))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("labels_given", [False, True], ids=["marginal", "joint"])
def test_an_empty_batch_has_empty_energies_and_gradients(backend, labels_given):
    skip_unless_runnable("cpu", backend)
    logits = torch.zeros(0, 10, requires_grad=True)
    labels = torch.zeros(0, dtype=torch.int64) if labels_given else None
    energy = lse_energy(logits, labels, backend=backend)
    energy.sum().backward()
    assert energy.shape == (0,) and logits.grad.shape == (0, 10)


@pytest.mark.parametrize("path", ["eager", "registered-op"])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("labels_given", [False, True], ids=["marginal", "joint"])
def test_second_derivatives_equal_the_specs(path, backend, labels_given):
    """backward(create_graph=True) through lse_energy, then differentiated again, as a gradient-norm penalty or a
    Hessian-vector product does: the same as the spec's, in the eager path and through the registered op (which
    torch.compile sees). The fused backward's saved row max and sum are constants to autograd, so reusing it there
    would drop softmax's -p p^T term; the kernel's backward has no graph at all."""
    skip_unless_runnable("cpu", backend)
    gen = torch.Generator().manual_seed(5)
    logits = 2 * torch.randn(5, 7, generator=gen, dtype=torch.float64).float()
    labels = torch.randint(0, 7, (5,), generator=gen) if labels_given else None
    upstream = torch.randn(5, generator=gen)
    v = torch.randn(5, 7, generator=gen)

    def energy_of(z, u):
        if path == "registered-op":
            return energy._lse_energy_op(z, labels, backend)[0] * u
        return lse_energy(z, labels, backend=backend) * u

    results = []
    for fn in (energy_of, lambda z, u: lse_energy_ref(z, labels) * u):
        z = logits.clone().requires_grad_(True)
        u = upstream.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(fn(z, u).sum(), z, create_graph=True)
        assert g.requires_grad, "the gradient has no graph: its derivatives would be taken as zero"
        results.append(torch.autograd.grad((g * v).sum(), (z, u), allow_unused=True, materialize_grads=True))
    (hv, du), (hv_ref, du_ref) = results
    assert_close(hv, hv_ref, 1e-6, 1e-5, "Hessian-vector product")
    assert_close(du, du_ref, 1e-6, 1e-5, "d/d upstream")
    if not labels_given:
        assert hv.abs().max() > 1e-3  # the softmax term is there to be dropped

    # a gradient-norm penalty's weight gradient through a network
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 7))
    x = torch.randn(5, 4, generator=gen, requires_grad=True)
    weights = []
    for fn in (energy_of, lambda z, u: lse_energy_ref(z, labels) * u):
        (dx,) = torch.autograd.grad(fn(net(x), torch.ones(5)).sum(), x, create_graph=True)
        weights.append(torch.autograd.grad(dx.square().sum(), list(net.parameters()), allow_unused=True,
                                           materialize_grads=True))
    for w, w_ref in zip(*weights, strict=True):
        assert_close(w, w_ref, 1e-6, 1e-5, "penalty's weight gradient")


@pytest.mark.parametrize("backend", BACKENDS)
def test_logits_without_classes_are_refused(backend):
    """K = 0 has no logsumexp: a ValueError on both backends (the kernel would return +inf, the reference an
    IndexError from amax)."""
    skip_unless_runnable("cpu", backend)
    for shape in ((3, 0), (3,), (2, 3, 4)):
        with pytest.raises(ValueError, match="K >= 1 classes"):
            lse_energy(torch.zeros(shape), backend=backend)


def test_row_strided_logits_are_read_row_by_row():
    """Logits whose rows are further apart than K (a column slice of a wider tensor): forward and backward read
    each row where it is."""
    skip_unless_runnable("cpu", "triton")
    big = torch.randn(6, 20)
    logits = big[:, :10].requires_grad_(True)
    e = lse_energy(logits, backend="triton")
    (grad,) = torch.autograd.grad(e.sum(), logits)
    torch.testing.assert_close(e, -torch.logsumexp(big[:, :10], 1), rtol=0, atol=1e-6)
    torch.testing.assert_close(grad, -torch.softmax(big[:, :10], 1), rtol=0, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_gradient_of_transposed_logits_has_the_strides_the_fake_promises(backend):
    skip_unless_runnable("cpu", backend)
    logits = torch.randn(11, 6).t()  # [6, 11] with strides (1, 6): e.g. (W @ h.T).T
    _, row_max, row_sumexp = torch.ops.fastjem.lse_energy(logits, None, backend)
    args = (torch.randn(6), logits, None, row_max, row_sumexp, backend)
    torch.library.opcheck(torch.ops.fastjem.lse_energy_backward.default, args)
    grad = torch.ops.fastjem.lse_energy_backward(*args)
    assert grad.is_contiguous()
    assert_close(grad, -args[0][:, None] * torch.softmax(logits, 1), 1e-6, 1e-5, "dE/dlogits")


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_backward_op_refuses_arguments_not_of_the_batch(backend):
    # a direct call of the registered backward: the kernel would read past the end of a shorter tensor (garbage), and
    # the reference broadcast a [1] gradient or scattered only the rows of a shorter labels tensor
    skip_unless_runnable("cpu", backend)
    logits = torch.randn(4, 5)
    _, row_max, row_sumexp = torch.ops.fastjem.lse_energy(logits, None, backend)
    op = torch.ops.fastjem.lse_energy_backward
    for bad in (torch.ones(1), torch.ones(2), torch.ones(4, 1), torch.ones(4, dtype=torch.int64)):
        with pytest.raises(ValueError, match="grad_energy must be a float"):
            op(bad, logits, None, row_max, row_sumexp, backend)
    with pytest.raises(ValueError, match="row_max must be the forward's"):
        op(torch.ones(4), logits, None, row_max[:2], row_sumexp[:2], backend)
    with pytest.raises(ValueError, match="labels must be int64"):
        op(torch.ones(4), logits, torch.tensor([0, 1]), row_max[:0], row_sumexp[:0], backend)
    assert_close(op(torch.ones(4), logits, None, row_max, row_sumexp, backend), -torch.softmax(logits, 1), 1e-6, 1e-5,
                 "dE/dlogits")
    # the registered fake checks them too (torch.compile and export trace through it, not through the kernel)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fake = [mode.from_tensor(t) for t in (logits, row_max, row_sumexp)]
        assert op(torch.ones(4), fake[0], None, fake[1], fake[2], backend).shape == (4, 5)
        with pytest.raises(ValueError, match="row_max must be the forward's"):
            op(torch.ones(4), fake[0], None, fake[1][:2], fake[2][:2], backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_refused_logits_and_labels_are_told_what_to_pass(backend):
    skip_unless_runnable("cpu", backend)
    with pytest.raises(TypeError, match=r"got torch.float64: pass logits.float\(\)"):
        lse_energy(torch.randn(3, 4, dtype=torch.float64), backend=backend)
    with pytest.raises(ValueError, match=r"got torch.int32 \(3,\): pass one class index per row .*labels.long\(\)"):
        lse_energy(torch.randn(3, 4), torch.zeros(3, dtype=torch.int32), backend=backend)
    # a network that outputs its energy, given to model_energy, was told only the shape it should have had
    with pytest.raises(ValueError, match=r"got shape \(3,\): a network that outputs its energy E \[B\] is the energy "
                                         r"itself: sample it as it is \(SGLD.sample\(net, x0, model=net\)\)"):
        lse_energy(torch.randn(3), backend=backend)
    with pytest.raises(ValueError, match=r"got shape \(3, 0\)$"):
        lse_energy(torch.randn(3, 0), backend=backend)


def test_the_kernels_write_nothing_past_their_outputs(monkeypatch):
    """Every output is a view at the start of a longer buffer whose tail holds a sentinel: a row or column mask one
    element too wide (o_b <= B, a column mask lost) stores past the end of an output, where no comparison of the
    values looks (the interpreter copies whole storages back, so the tail shows what the kernel wrote)."""
    skip_unless_runnable("cpu", "triton")
    tails = []

    class _Torch(types.ModuleType):
        def __getattr__(self, name):
            return getattr(torch, name)

    def empty(*size, dtype=None, device=None, **kwargs):
        size = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
        n = math.prod(size)
        whole = torch.full((n + 64,), 7.0, dtype=dtype, device=device)
        tails.append(whole[n:])
        return whole[:n].view(size).fill_(float("nan"))

    proxy = _Torch("torch_guarded_empty")
    proxy.empty = empty
    monkeypatch.setattr(energy, "torch", proxy)
    B, K = 5, 3  # one program of 8 rows and 4 columns: 3 rows and 1 column masked off
    gen = torch.Generator().manual_seed(4)
    logits = torch.randn(B, K, generator=gen)
    for labels in (None, torch.randint(0, K, (B,), generator=gen)):
        e, row_max, row_sumexp = energy.lse_energy_fwd(logits, labels)
        grad = energy.lse_energy_bwd(torch.ones(B), logits, labels, row_max, row_sumexp)
        assert_close(e, lse_energy_ref(logits, labels), E_ATOL, E_RTOL, "E")
        assert grad.shape == (B, K) and not grad.isnan().any()
    assert len(tails) == 8 and all(bool((t == 7.0).all()) for t in tails), [t[:4].tolist() for t in tails]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_fake_gives_fp32_outputs_for_low_precision_logits(backend):
    """The registered fake (what torch.compile and export trace) promises the real op's outputs: E and the row
    statistics in fp32 whatever the logits' dtype (an fp16 energy told to a compiled graph that gets fp32)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    skip_unless_runnable("cpu", backend)
    for dtype in (torch.bfloat16, torch.float16):
        logits = torch.randn(4, 6).to(dtype)
        for labels in (None, torch.tensor([0, 5, 2, 1])):
            real = torch.ops.fastjem.lse_energy(logits, labels, backend)
            with FakeTensorMode() as mode:
                fake = torch.ops.fastjem.lse_energy(mode.from_tensor(logits),
                                                    None if labels is None else mode.from_tensor(labels), backend)
            assert [(t.dtype, t.shape) for t in fake] == [(t.dtype, t.shape) for t in real], (dtype, labels)


@pytest.mark.parametrize("path", ["eager", "registered-op"])
def test_the_backward_runs_on_the_backend_of_its_forward(monkeypatch, path):
    """The backend is resolved when the forward runs: a loss computed inside `with kernels.backend(...)` and
    backpropagated after the block (as a training step does) takes its backward on the forward's backend, not the
    default in force at backward time (resolved then, a reference forward got the Triton backward)."""
    skip_unless_runnable("cpu", "triton")
    calls = []
    real = energy.lse_energy_bwd
    monkeypatch.setattr(energy, "lse_energy_bwd", lambda *a: calls.append(1) or real(*a))
    if path == "registered-op":
        monkeypatch.setattr(energy, "direct_call", lambda *a, **k: False)
    for inside, launched in (("reference", []), ("triton", [1])):
        calls.clear()
        logits = torch.randn(3, 4, requires_grad=True)
        with kernels.backend(inside):
            loss = lse_energy(logits).sum()
        with kernels.backend("triton" if inside == "reference" else "reference"):
            loss.backward()
        assert calls == launched, inside


@pytest.mark.parametrize("backend", BACKENDS)
def test_vmap_over_the_labels_alone_gives_the_specs_values(backend):
    """Labels batched by vmap beside plain logits (the joint energy of one batch under several labellings): only the
    labels are a transform's tensor, and the energy is still the spec's formula, batched, not the registered op run
    once per labelling by vmap's fallback (which warns of the performance drop)."""
    skip_unless_runnable("cpu", backend)
    gen = torch.Generator().manual_seed(6)
    logits = torch.randn(4, 6, generator=gen)
    labellings = torch.randint(0, 6, (3, 4), generator=gen)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = torch.func.vmap(lambda y: lse_energy(logits, y, backend=backend))(labellings)
    assert_close(got, torch.stack([lse_energy_ref(logits, y) for y in labellings]), 0, 0, "E(x, y) per labelling")

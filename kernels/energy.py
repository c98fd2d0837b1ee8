"""LSE energy: ``E(x) = -logsumexp_k logits[b, k]`` (marginal) or ``E(x, y) = -logits[b, y_b]`` (joint).

Forward and backward are one fused kernel each. The marginal forward streams each row once with
an online max / rescaled sum (Milakov & Gimelshein 2018) and saves the row max ``m`` and the row
sum ``s = sum_k exp(logits - m)`` (fp32, [B] each); the backward is then a single pass:

    dE/dlogits[b, k] = -softmax[b, k] * g_b = -exp(logits[b, k] - m_b) / s_b * g_b

and for the joint form ``dE/dlogits = -onehot(y) * g`` (the logits are not even read).
Inputs fp32 / bf16 / fp16, math in fp32, ``E`` in fp32, gradient in the logits' dtype.
Stable for any logit magnitude, since every exponent is ``<= 0``; infinite logits give what ``logsumexp`` gives
(E = -inf for a row with a +inf logit, +inf for a row of -inf).
"""

import torch

from ._dispatch import (
    device_of,
    direct_call,
    interpreter_on,
    next_power_of_2,
    resolve_backend,
    tl,
    triton,
    use_triton,
)

__all__ = ["lse_energy", "lse_energy_ref", "lse_energy_fwd", "lse_energy_bwd"]

_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


# --------------------------------------------------------------------------------------------
# Triton kernels
# --------------------------------------------------------------------------------------------

if triton is not None:

    @triton.jit
    def _lse_energy_fwd_kernel(
        p_logits,  # [B, K] row stride stride_b, unit column stride
        p_labels,  # [B] int64 (unused unless HAS_LABELS)
        p_energy,  # [B] fp32
        p_max,  # [B] fp32 (unused if HAS_LABELS)
        p_sumexp,  # [B] fp32 (unused if HAS_LABELS)
        B,
        K,
        stride_b,
        HAS_LABELS: tl.constexpr,
        BLOCK_B: tl.constexpr,
        BLOCK_K: tl.constexpr,
    ):
        o_b = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B).to(tl.int64)
        m_b = o_b < B
        if HAS_LABELS:
            b_label = tl.load(p_labels + o_b, mask=m_b, other=0)
            # a label outside [0, K) reads nothing and gives E = NaN (CPU labels are refused before launch)
            m_label = m_b & (b_label >= 0) & (b_label < K)
            b_x = tl.load(p_logits + o_b * stride_b + b_label, mask=m_label, other=float("nan")).to(tl.float32)
            tl.store(p_energy + o_b, -b_x, mask=m_b)
        else:
            # finite start: rows past B never see a real logit, and exp(-1e38 - -1e38) stays finite
            b_m = tl.full([BLOCK_B], -1.0e38, dtype=tl.float32)
            b_s = tl.zeros([BLOCK_B], dtype=tl.float32)
            for k_start in range(0, K, BLOCK_K):
                o_k = (k_start + tl.arange(0, BLOCK_K)).to(tl.int64)
                m_bk = m_b[:, None] & (o_k < K)[None, :]
                p_x = p_logits + o_b[:, None] * stride_b + o_k[None, :]
                b_x = tl.load(p_x, mask=m_bk, other=float("-inf")).to(tl.float32)  # [BLOCK_B, BLOCK_K]
                # capped at the largest float: a row with a +inf logit then sums exp(inf) = inf and gets E = -inf, as
                # logsumexp does, not inf - inf = NaN; no finite logit is above the cap
                b_m_new = tl.minimum(tl.maximum(b_m, tl.max(b_x, axis=1)), 3.4028234663852886e38)
                b_s = b_s * tl.exp(b_m - b_m_new) + tl.sum(tl.exp(b_x - b_m_new[:, None]), axis=1)
                b_m = b_m_new
            # rows past B have b_s == 0: keep their (unstored) log finite
            tl.store(p_energy + o_b, -(b_m + tl.log(tl.where(m_b, b_s, 1.0))), mask=m_b)
            tl.store(p_max + o_b, b_m, mask=m_b)
            tl.store(p_sumexp + o_b, b_s, mask=m_b)

    @triton.jit
    def _lse_energy_bwd_kernel(
        p_grad_energy,  # [B] fp32
        p_logits,  # [B, K]
        p_labels,  # [B] int64 (unused unless HAS_LABELS)
        p_max,  # [B] fp32 (unused if HAS_LABELS)
        p_sumexp,  # [B] fp32 (unused if HAS_LABELS)
        p_grad_logits,  # [B, K] contiguous, logits' dtype
        B,
        K,
        stride_b,
        HAS_LABELS: tl.constexpr,
        BLOCK_B: tl.constexpr,
        BLOCK_K: tl.constexpr,
    ):
        o_b = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B).to(tl.int64)
        m_b = o_b < B
        b_g = tl.load(p_grad_energy + o_b, mask=m_b, other=0.0)
        if HAS_LABELS:
            b_label = tl.load(p_labels + o_b, mask=m_b, other=-1)
        else:
            b_m = tl.load(p_max + o_b, mask=m_b, other=0.0)
            # -g / s, once per row
            b_scale = -b_g / tl.load(p_sumexp + o_b, mask=m_b, other=1.0)
        for k_start in range(0, K, BLOCK_K):
            o_k = (k_start + tl.arange(0, BLOCK_K)).to(tl.int64)
            m_bk = m_b[:, None] & (o_k < K)[None, :]
            if HAS_LABELS:
                b_d = tl.where(o_k[None, :] == b_label[:, None], -b_g[:, None], 0.0)
            else:
                p_x = p_logits + o_b[:, None] * stride_b + o_k[None, :]
                b_x = tl.load(p_x, mask=m_bk, other=0.0).to(tl.float32)
                b_d = tl.exp(b_x - b_m[:, None]) * b_scale[:, None]
            p_d = p_grad_logits + o_b[:, None] * K + o_k[None, :]
            tl.store(p_d, b_d.to(p_grad_logits.dtype.element_ty), mask=m_bk)


def _tiles(B: int, K: int) -> tuple[int, int]:
    """(BLOCK_B, BLOCK_K): whole rows per program when K is small; the interpreter wants few, large programs."""
    max_k, max_tile = (4096, 16384) if interpreter_on() else (1024, 2048)
    block_k = min(next_power_of_2(K), max_k)
    block_b = max(1, min(next_power_of_2(B), max_tile // block_k))
    return block_b, block_k


def _check_tensor(op: str, logits, labels=None) -> None:
    """A network that returns several outputs (a tuple, a dict) failed deep inside the dispatch with a TypeError
    about functorch; name what it returned and how to pass its logits."""
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"{op}: logits must be a tensor [B, K], got a {type(logits).__name__}: for a network that "
                        "returns several outputs, pass its logits (net(x)[0], or a module whose forward returns them)")
    if labels is not None and not isinstance(labels, torch.Tensor):
        raise TypeError(f"{op}: labels must be an int64 tensor [B] of class indices (or None), got a "
                        f"{type(labels).__name__}: pass torch.as_tensor(labels, dtype=torch.long)")


def _check_inputs(logits: torch.Tensor, labels: torch.Tensor | None) -> None:
    if logits.dim() != 2 or logits.shape[1] == 0:
        # a network that outputs its energy, given to model_energy, was told only the shape it should have had
        advice = (": a network that outputs its energy E [B] is the energy itself: sample it as it is "
                  "(SGLD.sample(net, x0, model=net)), not through model_energy") if logits.dim() == 1 else ""
        raise ValueError(f"lse_energy: logits must be [B, K] with K >= 1 classes, got shape {tuple(logits.shape)}"
                         f"{advice}")
    if logits.dtype not in _DTYPES:
        raise TypeError(f"lse_energy: logits dtype must be one of {_DTYPES}, got {logits.dtype}: pass logits.float() "
                        "(the energy is computed in fp32 whatever the logits' dtype)")
    if labels is not None and (labels.shape != logits.shape[:1] or labels.dtype != torch.int64):
        got = f"{labels.dtype} {tuple(labels.shape)}"
        raise ValueError(f"lse_energy: labels must be int64 [B={logits.shape[0]}], got {got}: pass one class index "
                         "per row of the logits, as labels.long()")
    if labels is not None and labels.device != logits.device:
        raise ValueError(f"lse_energy: labels are on {labels.device} and logits on {logits.device}; move the labels "
                         f"to {logits.device}")


def _check_label_range(labels: torch.Tensor | None, K: int) -> None:
    """Labels in [0, K), checked on CPU tensors only: on a GPU it would cost a host sync at every call (a label outside
    gives E = NaN on the Triton backend, a device-side assert on the reference)."""
    if labels is None or labels.device.type != "cpu" or labels.numel() == 0:
        return
    low, high = torch.aminmax(labels)
    if low < 0 or high >= K:
        raise ValueError(f"lse_energy: labels must be class indices in [0, K={K}), got values from {int(low)} to "
                         f"{int(high)}: pass labels that index the logits' columns")


# --------------------------------------------------------------------------------------------
# Host launchers
# --------------------------------------------------------------------------------------------


def lse_energy_fwd(
    logits: torch.Tensor, labels: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Launch the forward kernel: (E [B], row_max [B], row_sumexp [B]) in fp32; the last two are [0] if joint."""
    _check_inputs(logits, labels)
    if logits.stride(1) != 1:
        logits = logits.contiguous()
    # the kernels index labels as a dense [B] array
    labels = labels.contiguous() if labels is not None else None
    B, K = logits.shape
    n_aux = B if labels is None else 0
    energy = torch.empty(B, dtype=torch.float32, device=logits.device)  # [B]
    row_max = torch.empty(n_aux, dtype=torch.float32, device=logits.device)  # [B] or [0]
    row_sumexp = torch.empty(n_aux, dtype=torch.float32, device=logits.device)  # [B] or [0]
    if B == 0:
        return energy, row_max, row_sumexp
    block_b, block_k = _tiles(B, K)
    # dummy pointers for the unused arguments: the constexpr branch never touches them
    p_labels = labels if labels is not None else energy
    p_max = row_max if labels is None else energy
    p_sumexp = row_sumexp if labels is None else energy
    with device_of(logits):
        _lse_energy_fwd_kernel[(triton.cdiv(B, block_b),)](
            logits, p_labels, energy, p_max, p_sumexp, B, K, logits.stride(0),
            HAS_LABELS=labels is not None, BLOCK_B=block_b, BLOCK_K=block_k,
        )  # fmt: skip
    return energy, row_max, row_sumexp


def lse_energy_bwd(
    grad_energy: torch.Tensor,
    logits: torch.Tensor,
    labels: torch.Tensor | None,
    row_max: torch.Tensor,
    row_sumexp: torch.Tensor,
) -> torch.Tensor:
    """Launch the backward kernel: dlogits [B, K] in the logits' dtype from upstream dE [B]."""
    if logits.stride(1) != 1:
        logits = logits.contiguous()
    labels = labels.contiguous() if labels is not None else None
    B, K = logits.shape
    grad_energy = grad_energy.to(torch.float32).contiguous()
    grad_logits = torch.empty((B, K), dtype=logits.dtype, device=logits.device)  # [B, K]
    if B == 0:
        return grad_logits
    block_b, block_k = _tiles(B, K)
    p_labels = labels if labels is not None else grad_energy
    p_max = row_max if labels is None else grad_energy
    p_sumexp = row_sumexp if labels is None else grad_energy
    with device_of(logits):
        _lse_energy_bwd_kernel[(triton.cdiv(B, block_b),)](
            grad_energy, logits, p_labels, p_max, p_sumexp, grad_logits, B, K, logits.stride(0),
            HAS_LABELS=labels is not None, BLOCK_B=block_b, BLOCK_K=block_k,
        )  # fmt: skip
    return grad_logits


# --------------------------------------------------------------------------------------------
# Reference (the spec)
# --------------------------------------------------------------------------------------------


def lse_energy_ref(logits: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
    """E [B] fp32: ``-logsumexp(logits, 1)``, or ``-logits[b, labels[b]]`` when labels are given. Autograd-able."""
    _check_tensor("lse_energy_ref", logits, labels)
    # shapes and dtypes only (no data read): the spec also runs inside torch.func transforms and torch.compile
    _check_inputs(logits, labels)
    x = logits.float()
    if labels is None:
        return -torch.logsumexp(x, dim=1)
    return -x.gather(1, labels[:, None]).squeeze(1)


def _fwd_torch(logits: torch.Tensor, labels: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The reference backend of the fused op: same outputs as ``lse_energy_fwd`` in plain PyTorch."""
    x = logits.float()
    if labels is not None:
        empty = x.new_zeros(0)
        return -x.gather(1, labels[:, None]).squeeze(1), empty, empty.clone()
    # floored and capped as in the kernel: a row of -inf logits gives E = inf, one with a +inf logit E = -inf, not NaN
    row_max = x.amax(dim=1).clamp(-1.0e38, torch.finfo(torch.float32).max)
    row_sumexp = torch.exp(x - row_max[:, None]).sum(dim=1)
    return -(row_max + torch.log(row_sumexp)), row_max, row_sumexp


def _bwd_torch(
    grad_energy: torch.Tensor,
    logits: torch.Tensor,
    labels: torch.Tensor | None,
    row_max: torch.Tensor,
    row_sumexp: torch.Tensor,
) -> torch.Tensor:
    g = grad_energy.float()[:, None]
    if labels is not None:
        onehot = torch.zeros(logits.shape, dtype=torch.float32, device=logits.device)
        onehot.scatter_(1, labels[:, None], 1.0)
        return (-g * onehot).to(logits.dtype)
    softmax = torch.exp(logits.float() - row_max[:, None]) / row_sumexp[:, None]
    # contiguous, as the kernel's and the registered fake's: elementwise ops on transposed logits give a transposed
    # gradient, and a compiled graph that was told (4, 1) strides fails its stride assertion on (1, 6)
    return (-g * softmax).to(logits.dtype).contiguous()


def _bwd_differentiable(grad_energy: torch.Tensor, logits: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
    """dE/dlogits in PyTorch ops that autograd can differentiate again (backward with create_graph=True: a gradient
    penalty, a Hessian). The kernel's formula takes the saved row max and sum for constants, which is right for
    the first derivative only: differentiated, it would miss softmax's -p p^T term."""
    g = grad_energy.float()[:, None]
    if labels is not None:
        onehot = torch.zeros(logits.shape, dtype=torch.float32, device=logits.device)
        return (-g * onehot.scatter_(1, labels[:, None], 1.0)).to(logits.dtype)
    return (-g * torch.softmax(logits.float(), dim=1)).to(logits.dtype)


# --------------------------------------------------------------------------------------------
# Public op
# --------------------------------------------------------------------------------------------


def _check_backward_inputs(grad_energy, logits, labels, row_max, row_sumexp) -> None:
    """The backward op's own arguments, for direct calls of ``torch.ops.fastjem.lse_energy_backward`` (autograd
    always passes the forward's): the kernel reads ``[B]`` of each, so a shorter one is a read past its end."""
    _check_inputs(logits, labels)
    B = logits.shape[0]
    n_aux = B if labels is None else 0
    if grad_energy.shape != (B,) or not grad_energy.is_floating_point() or grad_energy.device != logits.device:
        raise ValueError(f"lse_energy_backward: grad_energy must be a float [B={B}] tensor on the logits' device "
                         f"{logits.device}, got {grad_energy.dtype} {tuple(grad_energy.shape)} on {grad_energy.device}")
    for name, t in (("row_max", row_max), ("row_sumexp", row_sumexp)):
        if t.shape != (n_aux,) or t.dtype != torch.float32 or t.device != logits.device:
            raise ValueError(f"lse_energy_backward: {name} must be the forward's fp32 [{n_aux}] on {logits.device} "
                             f"(torch.ops.fastjem.lse_energy returns it), got {t.dtype} {tuple(t.shape)} on {t.device}")


def _fwd_impl(
    logits: torch.Tensor, labels: torch.Tensor | None, backend: str | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    _check_inputs(logits, labels)
    _check_label_range(labels, logits.shape[1])
    if use_triton(logits, backend):
        return lse_energy_fwd(logits, labels)
    return _fwd_torch(logits, labels)


def _bwd_impl(grad_energy, logits, labels, row_max, row_sumexp, backend: str | None) -> torch.Tensor:
    if use_triton(logits, backend):
        return lse_energy_bwd(grad_energy, logits, labels, row_max, row_sumexp)
    return _bwd_torch(grad_energy, logits, labels, row_max, row_sumexp)


@torch.library.custom_op("fastjem::lse_energy", mutates_args=())
def _lse_energy_op(
    logits: torch.Tensor, labels: torch.Tensor | None, backend: str | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _fwd_impl(logits, labels, backend)


@_lse_energy_op.register_fake
def _(logits, labels, backend):
    # the eager op's checks: meta tensors (meta labels beside CPU logits dispatch here), compile and export
    _check_inputs(logits, labels)
    B = logits.shape[0]
    n_aux = B if labels is None else 0
    f32 = torch.float32
    return logits.new_empty(B, dtype=f32), logits.new_empty(n_aux, dtype=f32), logits.new_empty(n_aux, dtype=f32)


@torch.library.custom_op("fastjem::lse_energy_backward", mutates_args=())
def _lse_energy_backward_op(
    grad_energy: torch.Tensor,
    logits: torch.Tensor,
    labels: torch.Tensor | None,
    row_max: torch.Tensor,
    row_sumexp: torch.Tensor,
    backend: str | None,
) -> torch.Tensor:
    _check_backward_inputs(grad_energy, logits, labels, row_max, row_sumexp)
    return _bwd_impl(grad_energy, logits, labels, row_max, row_sumexp, backend)


@_lse_energy_backward_op.register_fake
def _(grad_energy, logits, labels, row_max, row_sumexp, backend):
    _check_backward_inputs(grad_energy, logits, labels, row_max, row_sumexp)
    return torch.empty_like(logits, memory_format=torch.contiguous_format)


def _setup_double_backward(ctx, inputs, output):
    grad_energy, logits, labels, _, _, _ = inputs
    ctx.save_for_backward(grad_energy, logits, labels)


def _double_backward(ctx, grad_grad_logits):
    """The backward op's own derivatives, for create_graph=True. With p = softmax(logits) and v the upstream
    gradient of dlogits = -g p: d/dg = -<p, v> and d/dlogits = -g p (v - <p, v>); the joint form -g onehot(y)
    has d/dg = -v[y] and nothing for the logits."""
    grad_energy, logits, labels = ctx.saved_tensors
    v = grad_grad_logits.float()
    if labels is not None:
        d_energy = -v.gather(1, labels[:, None]).squeeze(1)
        d_logits = torch.zeros_like(logits) if ctx.needs_input_grad[1] else None
    else:
        p = torch.softmax(logits.float(), dim=1)
        pv = (p * v).sum(dim=1)
        d_energy = -pv
        d_logits = (-grad_energy.float()[:, None] * p * (v - pv[:, None])).to(logits.dtype)
    return d_energy.to(grad_energy.dtype), d_logits, None, None, None, None


_lse_energy_backward_op.register_autograd(_double_backward, setup_context=_setup_double_backward)


def _setup_context(ctx, inputs, output):
    logits, labels, backend = inputs
    _, row_max, row_sumexp = output
    ctx.save_for_backward(logits, labels, row_max, row_sumexp)
    # resolved now: a CUDA backward runs on an autograd worker thread, outside any `with backend(...)`
    ctx.backend = resolve_backend(backend)
    ctx.mark_non_differentiable(row_max, row_sumexp)
    # their gradients stay None rather than zero tensors autograd would fill at every backward
    ctx.set_materialize_grads(False)


def _backward(ctx, grad_energy, grad_row_max, grad_row_sumexp):
    logits, labels, row_max, row_sumexp = ctx.saved_tensors
    # called only when the logits need a gradient: the labels (int64) and the backend name cannot
    return _lse_energy_backward_op(grad_energy, logits, labels, row_max, row_sumexp, ctx.backend), None, None


_lse_energy_op.register_autograd(_backward, setup_context=_setup_context)


def _transformed(*tensors: torch.Tensor | None) -> bool:
    """Whether a torch.func transform (grad, vjp, jvp, vmap, jacfwd, hessian, ...) wraps one of the tensors."""
    return any(t is not None and torch._C._functorch.is_functorch_wrapped_tensor(t) for t in tensors)


def _eager_backward(ctx, grad_energy, grad_row_max, grad_row_sumexp):
    logits, labels, row_max, row_sumexp = ctx.saved_tensors
    if torch.is_grad_enabled():
        # create_graph=True: the gradient itself will be differentiated
        return _bwd_differentiable(grad_energy, logits, labels), None, None
    return _bwd_impl(grad_energy, logits, labels, row_max, row_sumexp, ctx.backend), None, None


class _LseEnergyEager(torch.autograd.Function):
    """The registered op's forward and backward implementations without its dispatch, for plain eager calls (see
    ``direct_call``) while no torch.func transform is active.

    ``forward`` takes ``ctx`` and fills it itself rather than naming a ``setup_context``: torch binds a setup_context
    Function's arguments to its forward's signature (``inspect.signature``) at every ``apply``, which on a CPU took
    about as long as this small op's forward itself (SGLD calls it at every step). Under a transform torch takes
    only the setup_context form: ``_LseEnergyTransformable``."""

    @staticmethod
    def forward(ctx, logits, labels, backend):
        output = _fwd_impl(logits, labels, backend)
        _setup_context(ctx, (logits, labels, backend), output)
        return output

    backward = staticmethod(_eager_backward)


class _LseEnergyTransformable(torch.autograd.Function):
    """``_LseEnergyEager`` in the setup_context form, for plain tensors met while a torch.func transform is active
    (a constant the transformed function closes over)."""

    @staticmethod
    def forward(logits, labels, backend):
        return _fwd_impl(logits, labels, backend)

    setup_context = staticmethod(_setup_context)
    backward = staticmethod(_eager_backward)


def lse_energy(logits: torch.Tensor, labels: torch.Tensor | None = None, *, backend: str | None = None):
    """E [B] fp32 from logits [B, K]: ``-logsumexp`` (labels None) or ``-logits[b, labels[b]]``; differentiable
    to any order (a first derivative from the fused backward, higher ones from PyTorch ops).

    ``backend``: ``"auto" | "triton" | "reference"``; None uses the current default (see ``fastjem.kernels``).
    Labels outside [0, K) are refused (ValueError) when they are CPU tensors; on a GPU they are not checked (that
    would need a host sync at every call): such a label gives E = NaN on the Triton backend and a device-side
    assert on the reference.
    Plain eager calls run the registered op's implementations through a torch.autograd.Function (the same
    numbers without the custom-op dispatch, which costs tens of microseconds a call). Under torch.func's
    transforms (grad, vjp, jvp, vmap, jacrev, jacfwd, hessian) the energy is ``lse_energy_ref``, the same
    formula in PyTorch ops: a kernel cannot take a transform's wrapped tensors, and the op's generated autograd
    wrapper fails there (pytorch/pytorch#170834). torch.compile, fake tensors and dispatch modes see the
    registered op (so a torch.func transform inside torch.compile still meets that failure: call
    ``lse_energy_ref`` there).
    """
    _check_tensor("lse_energy", logits, labels)
    if direct_call(logits, labels, differentiable=True):
        eager = _LseEnergyTransformable if torch._C._are_functorch_transforms_active() else _LseEnergyEager
        return eager.apply(logits, labels, backend)[0]
    if not torch.compiler.is_compiling() and _transformed(logits, labels):
        # the spec checks the inputs itself, as the op would
        return lse_energy_ref(logits, labels)
    return _lse_energy_op(logits, labels, backend)[0]

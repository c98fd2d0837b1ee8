"""SGLD update with in-kernel noise: ``x += alpha * grad + sigma * N(0, 1)`` in place.

One read of x and grad, one write of x, no noise tensor in memory. The Gaussian of flat element
``i`` is element ``i`` of the normal stream at the state's offset (``fastjem.kernels.rng``:
counter ``offset + i // 4``, word ``i % 4``); the op then advances the offset by ``ceil(n / 4)``
on the device, so the next call (or the next CUDA-graph replay) draws fresh noise.

A batch sampled in parts (independent chains over row blocks, each with its own copy of the state) draws the
whole batch's noise: the part that starts at flat element ``4 * base`` passes ``base`` (its counters start
there) and ``advance`` = the whole batch's ``ceil(n / 4)``, so every copy moves as the one state would.

``advance=0`` leaves the state as it is, for a caller that advances it once for many calls: step t of a chain
passes ``base = t * ceil(n / 4)`` and the loop adds ``steps * ceil(n / 4)`` at its end. The numbers are those of
advancing at every step, and each step is one kernel instead of the kernel and the offset's add. At WRN batch
sizes launches, not bytes, set the time: replayed from a CUDA graph on an H100, the op (two kernels) took 3.3 us at
64x3x32x32 and the one-kernel ``buffer_write_`` of two thirds of its bytes 1.7 us
(bench/results/kernels-2026-11-27T192534-NVIDIA-H100-80GB-HBM3.json).
"""

import torch

from ._dispatch import (
    as_integer,
    as_number,
    check_tensors,
    device_of,
    direct_call,
    interpreter_on,
    refuse,
    tl,
    triton,
    use_triton,
)
from .rng import counters_for, normal_stream

__all__ = ["sgld_step_", "sgld_step_ref", "sgld_step_fwd", "sgld_step_compiled_"]

if triton is not None:
    from .rng import normal_block

    @triton.jit
    def _sgld_step_kernel(
        p_x,  # [n] fp32, updated in place
        p_grad,  # [n] fp32 / bf16 / fp16
        p_rng,  # [2] int64 (seed, offset)
        n,
        base,  # counters skipped before this tensor's first element (a part of a larger batch)
        alpha,
        sigma,
        BLOCK: tl.constexpr,
    ):
        QUARTER: tl.constexpr = BLOCK // 4
        pid = tl.program_id(0).to(tl.int64)
        o_x = pid * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
        m_x = o_x < n
        o_ctr = pid * QUARTER + tl.arange(0, QUARTER).to(tl.int64) + base
        # x and grad requested first: a warp computes its noise while they arrive
        b_x = tl.load(p_x + o_x, mask=m_x, other=0.0)
        b_g = tl.load(p_grad + o_x, mask=m_x, other=0.0).to(tl.float32)
        b_noise = normal_block(tl.load(p_rng), o_ctr + tl.load(p_rng + 1), QUARTER)  # [BLOCK]
        b_x = b_x + alpha * b_g + sigma * b_noise
        tl.store(p_x + o_x, b_x, mask=m_x)


def _check_inputs(x: torch.Tensor, grad: torch.Tensor, rng_state: torch.Tensor, base: int = 0,
                  advance: int | None = None) -> None:
    if x.dtype != torch.float32:
        raise ValueError(f"sgld_step_: x must be fp32 (never store samples in bf16), got {x.dtype}: keep the chains "
                         "in fp32 (x = x.float() once, then update that tensor in place)")
    if not x.is_contiguous():
        raise ValueError(f"sgld_step_: x must be contiguous (the update runs over its flat storage), got strides "
                         f"{x.stride()} for shape {tuple(x.shape)}: pass x.contiguous() and use what it returns")
    if grad.shape != x.shape or not grad.is_floating_point() or grad.device != x.device:
        raise ValueError(f"sgld_step_: grad must be a float tensor of x's shape {tuple(x.shape)} on x's device "
                         f"{x.device}, got {grad.dtype} {tuple(grad.shape)} on {grad.device}")
    if rng_state.shape != (2,) or rng_state.dtype != torch.int64 or rng_state.device != x.device:
        raise ValueError(f"sgld_step_: rng_state must be an int64 [2] (seed, offset) tensor on x's device {x.device} "
                         f"(fastjem.kernels.new_rng_state makes one), got {rng_state.dtype} {tuple(rng_state.shape)} "
                         f"on {rng_state.device}")
    if base < 0 or (advance not in (None, 0) and advance < base + counters_for(x.numel())):
        raise ValueError(f"sgld_step_: base {base} and advance {advance} must cover this part's "
                         f"{counters_for(x.numel())} counters (0 <= base, base + counters <= advance; advance 0: "
                         f"the caller advances the state)")


def sgld_step_fwd(x: torch.Tensor, grad: torch.Tensor, alpha: float, sigma: float, rng_state: torch.Tensor,
                  block: int | None = None, num_warps: int | None = None, base: int = 0,
                  advance: int | None = None) -> None:
    """Launch the kernel on flat x, then advance ``rng_state[1]`` by the counters used, or by ``advance``
    (device op; ``advance`` 0: not advanced, nothing more launched); ``base``: counters skipped before x's first
    element.

    ``block`` (a power of two >= 4) and ``num_warps`` override the launch configuration (the kernel
    benchmark sweeps them); every configuration draws the same numbers: element i always takes word
    i % 4 of counter offset + i // 4.
    """
    _check_inputs(x, grad, rng_state, base, advance)
    n = x.numel()
    if n == 0:  # nothing to launch; the state still moves by ``advance``, as the reference's does
        _advance_(rng_state, n, advance)
        return
    grad = grad.contiguous()
    # x and grad are dense, of one shape, on one device: a grad that starts elsewhere in x's bytes (a shifted view of
    # the same storage) would be read after other programs updated it; the very same tensor is read element by element
    x_at, g_at, nbytes = x.data_ptr(), grad.data_ptr(), n * x.element_size()
    if g_at != x_at and x_at < g_at + n * grad.element_size() and g_at < x_at + nbytes:
        grad = grad.clone()
    if block is None:
        # 512 with 4 warps: the fastest or within 3% of it at 64 and 4096 rows of 3x32x32 on an H100
        # (bench/results/kernel-configs-2026-11-26-NVIDIA-H100-80GB-HBM3.json: 3.35 us and 53.4 us, 2048: 4.02, 54.8)
        block = 65536 if interpreter_on() else 512
    if block < 4 or block & (block - 1):
        raise ValueError(f"sgld_step_fwd: block must be a power of two >= 4, got {block}")
    extra = {} if num_warps is None else {"num_warps": num_warps}
    with device_of(x):
        # the kernel reads the state's two words as a dense [2] (a strided view, e.g. a column of a larger tensor,
        # is read from a copy; the advance below moves the caller's tensor)
        _sgld_step_kernel[(triton.cdiv(n, block),)](x, grad, rng_state.contiguous(), n, base, float(alpha),
                                                    float(sigma), BLOCK=block, **extra)
    # after the launch, on the same stream: the kernel has read the old offset
    _advance_(rng_state, n, advance)


def sgld_step_ref(x: torch.Tensor, grad: torch.Tensor, alpha: float, sigma: float, rng_state: torch.Tensor,
                  base: int = 0, advance: int | None = None) -> None:
    """Spec: ``x += alpha * grad + sigma * normal_stream(rng_state, base)`` in place; advances the offset by the
    counters used, or by ``advance`` (0: not at all)."""
    noise = normal_stream(rng_state, base, x.numel()).view(x.shape)
    x.copy_(x + alpha * grad.float() + sigma * noise)
    _advance_(rng_state, x.numel(), advance)


def _advance_(rng_state: torch.Tensor, n: int, advance: int | None) -> None:
    """The offset moved past an n-element call's counters (``advance`` None), by ``advance``, or not (0)."""
    if advance != 0:
        rng_state[1:].add_(counters_for(n) if advance is None else advance)


# sgld_step_ref compiled, made at the first call: traced, its Philox rounds take the PyTorch path, not NumPy's
_compiled_step = None


def sgld_step_compiled_(x: torch.Tensor, grad: torch.Tensor, alpha: float, sigma: float,
                        rng_state: torch.Tensor, *, base: int = 0, advance: int | None = None) -> None:
    """``sgld_step_`` as one graph compiled by inductor, for a CPU engine that compiles its SGLD step: the reference's
    formula and noise counters, with the Philox rounds, Box-Muller and the update fused in compiled loops where the
    reference runs NumPy and a chain of PyTorch ops (times: bench/bench_kernels.py on a CPU). The same state gives
    the same numbers at every call; they agree with the reference's to the last ulps of its transcendentals, as the
    Triton kernel's do."""
    check_tensors("sgld_step_compiled_", x=x, grad=grad, rng_state=rng_state)
    base = as_integer("sgld_step_compiled_: base", base)
    advance = None if advance is None else as_integer("sgld_step_compiled_: advance", advance)
    if x.requires_grad and torch.is_grad_enabled():
        raise ValueError("sgld_step_compiled_: x requires grad and is updated in place: pass x.detach()")
    _check_inputs(x, grad, rng_state, base, advance)
    global _compiled_step
    if _compiled_step is None:
        _compiled_step = torch.compile(sgld_step_ref, dynamic=False)
    alpha, sigma = as_number("sgld_step_compiled_", "alpha", alpha), as_number("sgld_step_compiled_", "sigma", sigma)
    # base as a tensor: one graph for every step of a chain (SGLD.sample's step t passes base t * counters; an int
    # would be a constant, compiled again for each step until dynamo's recompile limit, then run eagerly)
    _compiled_step(x, grad, alpha, sigma, rng_state, torch.tensor(int(base), dtype=torch.int64),
                   None if advance is None else int(advance))


def _sgld_step_impl(
    x: torch.Tensor, grad: torch.Tensor, alpha: float, sigma: float, rng_state: torch.Tensor, backend: str | None,
    base: int = 0, advance: int | None = None,
) -> None:
    if use_triton(x, backend):
        sgld_step_fwd(x, grad, alpha, sigma, rng_state, base=base, advance=advance)
    else:
        _check_inputs(x, grad, rng_state, base, advance)
        sgld_step_ref(x, grad, alpha, sigma, rng_state, base, advance)


@torch.library.custom_op("fastjem::sgld_step_", mutates_args=("x", "rng_state"))
def _sgld_step_op(
    x: torch.Tensor, grad: torch.Tensor, alpha: float, sigma: float, rng_state: torch.Tensor, backend: str | None,
    base: int = 0, advance: int | None = None,
) -> None:
    _sgld_step_impl(x, grad, alpha, sigma, rng_state, backend, base, advance)


@_sgld_step_op.register_fake
def _(x, grad, alpha, sigma, rng_state, backend, base=0, advance=None):
    # the eager op's checks: meta tensors (a meta grad beside a CPU x dispatches here), compile and export
    _check_inputs(x, grad, rng_state, base, advance)
    return None


def sgld_step_(
    x: torch.Tensor,
    grad: torch.Tensor,
    alpha: float,
    sigma: float,
    rng_state: torch.Tensor,
    *,
    backend: str | None = None,
    base: int = 0,
    advance: int | None = None,
) -> None:
    """In place ``x += alpha * grad + sigma * N(0, 1)``; x contiguous fp32, grad fp32/bf16 of x's shape.

    ``rng_state`` (int64 [2] on x's device) is read on the device and advanced by ``ceil(x.numel() / 4)``.
    A part of a larger batch passes ``base`` (counters before its first element: that element's flat index / 4)
    and ``advance`` (the whole batch's counters), and draws the whole batch's noise for its elements.
    ``advance=0`` leaves the state to the caller (a loop that advances it once: ``SGLD.sample``).
    """
    check_tensors("sgld_step_", x=x, grad=grad, rng_state=rng_state)
    base = as_integer("sgld_step_: base", base)
    advance = None if advance is None else as_integer("sgld_step_: advance", advance)
    if x.requires_grad and torch.is_grad_enabled():
        refuse("sgld_step_: x requires grad and is updated in place: pass x.detach() (SGLD.step_ does)", x)
        return  # compiling: the graph raises here when it runs
    # plain eager calls skip the registered op's dispatch; compile, export and dispatch modes go through it
    op = _sgld_step_impl if direct_call(x, grad, rng_state) else _sgld_step_op
    alpha, sigma = as_number("sgld_step_", "alpha", alpha), as_number("sgld_step_", "sigma", sigma)
    op(x, grad, alpha, sigma, rng_state, backend, base, advance)

"""Replay-buffer gather with random re-initialisation, and the scatter back.

``buffer_sample``: ``x0[b] = U(-1, 1)^S`` (or ``fresh[b]`` when given) with probability ``reset_prob``, else
``buffer[idx[b]]``.
Random numbers (``fastjem.kernels.rng`` streams, for B rows of D = prod(S) elements):

- row ``b`` resets iff ``uniform(word 0 of counter offset + b) < reset_prob`` (compared in fp32);
- reset value ``j`` of row ``b`` is ``2 u - 1`` with ``u`` element ``j`` of the uniform stream at
  counter ``offset + B + b * ceil(D / 4)`` (exact in fp32, so the reference is bit-identical);
- the op advances the offset by ``B + B * ceil(D / 4)``.

Reset rows never read the buffer (the load is masked; the benchmark's ``rows_first`` launch reads them), and the
reset values are drawn only in the tiles that have a reset row.
``buffer_write_`` is ``buffer[idx] = x``; with repeated indices the last of their rows wins, whole, on every
backend and device (``index_copy_`` on a GPU leaves such a row unspecified, and may mix the rows element by
element: a kernel that splits rows over programs did so on an H200 at 8192 rows of a 10000-row buffer).
An index outside [0, N) is refused (IndexError) when idx is a CPU tensor; on a GPU that would cost a host sync:
the kernels mask it, so a kept row with such an index reads NaN and its write is dropped.
"""

import torch

from ._dispatch import (
    as_number,
    check_tensors,
    device_of,
    direct_call,
    interpreter_on,
    next_power_of_2,
    refuse,
    tl,
    triton,
    use_triton,
)
from .rng import counters_for, uniform_stream

__all__ = [
    "buffer_sample",
    "buffer_sample_ref",
    "buffer_sample_fwd",
    "buffer_write_",
    "buffer_write_ref",
    "buffer_write_fwd",
]

if triton is not None:
    from .rng import uniform_rows, uniform_scalar

    @triton.jit
    def _buffer_sample_kernel(
        p_buffer,  # [N, D] fp32
        p_idx,  # [B] int64
        p_out,  # [B, D] fp32
        p_rng,  # [2] int64 (seed, offset)
        p_fresh,  # [B, D] fp32: the values of reset rows (read only when HAS_FRESH)
        N,
        B,
        D,
        reset_prob,
        HAS_FRESH: tl.constexpr,
        BLOCK_B: tl.constexpr,
        BLOCK_D: tl.constexpr,
        ROWS_FIRST: tl.constexpr,  # every drawn row requested before the reset decisions (a benchmark variant)
    ):
        QUARTER: tl.constexpr = BLOCK_D // 4
        o_b = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B).to(tl.int64)
        pid_d = tl.program_id(1).to(tl.int64)
        m_b = o_b < B
        b_seed = tl.load(p_rng)
        b_offset = tl.load(p_rng + 1)
        o_d = pid_d * BLOCK_D + tl.arange(0, BLOCK_D).to(tl.int64)
        m_bd = m_b[:, None] & (o_d < D)[None, :]
        if ROWS_FIRST:
            # the rows wait on the indices' load only, not on the decisions' Philox rounds too; a reset row's bytes
            # are read for nothing
            b_row = tl.load(p_idx + o_b, mask=m_b, other=0)
            b_x = tl.load(p_buffer + b_row[:, None] * D + o_d[None, :],
                          mask=m_bd & ((b_row >= 0) & (b_row < N))[:, None], other=float("nan"))
            b_reset = (uniform_scalar(b_seed, b_offset + o_b) < reset_prob) & m_b
        else:
            b_reset = (uniform_scalar(b_seed, b_offset + o_b) < reset_prob) & m_b  # [BLOCK_B]
            b_row = tl.load(p_idx + o_b, mask=m_b, other=0)
            # reset rows never read the buffer
            m_keep = m_bd & (b_reset == 0)[:, None] & ((b_row >= 0) & (b_row < N))[:, None]
            b_x = tl.load(p_buffer + b_row[:, None] * D + o_d[None, :], mask=m_keep, other=float("nan"))
        # the reset values are drawn only in a tile with a row that restarts: at reset_prob 0.05 and one row a tile,
        # 19 tiles in 20 draw nothing (the same numbers: every value keeps its counter)
        if tl.max(b_reset.to(tl.int32), axis=0) != 0:
            if HAS_FRESH:
                b_fresh = tl.load(p_fresh + o_b[:, None] * D + o_d[None, :], mask=m_bd & b_reset[:, None], other=0.0)
            else:
                # ceil(D / 4) counters per row, after the B decision counters
                o_ctr = b_offset + B + o_b[:, None] * ((D + 3) // 4) + pid_d * QUARTER + tl.arange(0, QUARTER)[None, :]
                b_fresh = uniform_rows(b_seed, o_ctr, BLOCK_B, QUARTER) * 2.0 - 1.0  # [BLOCK_B, BLOCK_D]
            b_x = tl.where(b_reset[:, None], b_fresh, b_x)
        tl.store(p_out + o_b[:, None] * D + o_d[None, :], b_x, mask=m_bd)

    @triton.jit
    def _last_position_kernel(
        p_idx,  # [B] int64
        p_last,  # [N] int64, -1 where no position writes the row; each row's last position after
        N,
        B,
        BLOCK: tl.constexpr,
    ):
        o_b = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
        b_row = tl.load(p_idx + o_b, mask=o_b < B, other=-1)
        tl.atomic_max(p_last + b_row, o_b, mask=(o_b < B) & (b_row >= 0) & (b_row < N))

    @triton.jit
    def _buffer_write_kernel(
        p_buffer,  # [N, D] fp32, updated in place
        p_idx,  # [B] int64
        p_x,  # [B, D]
        p_last,  # [N] int64: the position whose row each buffer row takes (_last_position_kernel); 8-byte, as idx
        N,
        B,
        D,
        BLOCK_B: tl.constexpr,
        BLOCK_D: tl.constexpr,
    ):
        o_b = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B).to(tl.int64)
        o_d = tl.program_id(1).to(tl.int64) * BLOCK_D + tl.arange(0, BLOCK_D).to(tl.int64)
        m_b = o_b < B
        b_row = tl.load(p_idx + o_b, mask=m_b, other=0)
        # rows outside the buffer are dropped, and so is a position that a later one with the same row overrides:
        # programs that split a row between them would otherwise leave it a mix of the rows written to it
        m_b = m_b & (b_row >= 0) & (b_row < N)
        m_b = m_b & (tl.load(p_last + b_row, mask=m_b, other=-1) == o_b)
        m_bd = m_b[:, None] & (o_d < D)[None, :]
        b_x = tl.load(p_x + o_b[:, None] * D + o_d[None, :], mask=m_bd)
        tl.store(p_buffer + b_row[:, None] * D + o_d[None, :], b_x.to(p_buffer.dtype.element_ty), mask=m_bd)


def _tiles(B: int, D: int) -> tuple[int, int]:
    """(BLOCK_B, BLOCK_D): several rows per program when rows are short; the interpreter wants few programs."""
    # GPU: tiles of at most 1024 (one row of a 3x32x32 buffer in three programs): the fastest at 64 and 8192
    # rows on an H100, by 3-5% over 2048 (bench/results/kernel-configs-2026-11-26-NVIDIA-H100-80GB-HBM3.json)
    max_d, max_tile = (16384, 16384) if interpreter_on() else (1024, 1024)
    # BLOCK_D >= 4 keeps every block on a counter boundary of its row's stream
    block_d = max(4, min(next_power_of_2(D), max_d))
    block_b = max(1, min(next_power_of_2(B), max_tile // block_d))
    return block_b, block_d


def _memory_overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether the byte ranges two tensors span in one storage meet (metadata only: no read of either)."""
    # the storage itself, not its address: every meta storage is at address 0, and a fake one has none to read
    if a.numel() == 0 or b.numel() == 0 or not torch._C._is_alias_of(a, b):
        return False

    def span(t: torch.Tensor) -> tuple[int, int]:
        # torch strides are never negative: the first element is the lowest address
        last = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
        start = t.storage_offset() * t.element_size()
        return start, start + (last + 1) * t.element_size()

    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1


def _check_inputs(buffer: torch.Tensor, idx: torch.Tensor, rows: torch.Tensor | None = None, *,
                  fresh: torch.Tensor | None = None, reset_prob: float | None = None,
                  rng_state: torch.Tensor | None = None) -> None:
    if buffer.dtype != torch.float32 or not buffer.is_contiguous() or buffer.dim() < 1:
        shape = f"{tuple(buffer.shape)} with strides {buffer.stride()}"
        raise ValueError(f"buffer ops: buffer must be contiguous fp32 [N, *S], got {buffer.dtype} {shape}: keep the "
                         "buffer a tensor of its own (a strided view cannot be written in place: .contiguous() "
                         "would write a copy) and cast it once with .float()")
    if idx.dim() != 1 or idx.dtype != torch.int64 or idx.device != buffer.device:
        raise ValueError(f"buffer ops: idx must be an int64 [B] tensor on the buffer's device {buffer.device}, got "
                         f"{idx.dtype} {tuple(idx.shape)} on {idx.device}: pass idx.long().to(buffer.device)")
    if rows is not None and rows.shape != (idx.shape[0], *buffer.shape[1:]):
        raise ValueError(f"buffer_write_: x must be [B, *S] = {(idx.shape[0], *buffer.shape[1:])}, got {rows.shape}")
    if rows is not None and (rows.device != buffer.device or not rows.is_floating_point()):
        raise ValueError(f"buffer_write_: x must be a float tensor on the buffer's device {buffer.device}, got "
                         f"{rows.dtype} on {rows.device}")
    if rows is not None and _memory_overlaps(rows, buffer):
        # the kernel's programs would read rows that others have already overwritten (the reference's index_copy_
        # refuses it too)
        raise ValueError("buffer_write_: x shares memory with the buffer (a view of its rows), so rows would be read "
                         "after they were overwritten: pass x.clone()")
    if reset_prob is not None and not 0.0 <= reset_prob <= 1.0:
        raise ValueError(f"buffer_sample: reset_prob is a probability, in [0, 1]; got {reset_prob}")
    if rng_state is not None and (rng_state.shape != (2,) or rng_state.dtype != torch.int64
                                  or rng_state.device != buffer.device):
        raise ValueError(f"buffer_sample: rng_state must be an int64 [2] (seed, offset) tensor on the buffer's "
                         f"device {buffer.device} (fastjem.kernels.new_rng_state makes one), got {rng_state.dtype} "
                         f"{tuple(rng_state.shape)} on {rng_state.device}")
    if fresh is not None and (fresh.shape != (idx.shape[0], *buffer.shape[1:]) or fresh.dtype != torch.float32
                              or fresh.device != buffer.device):
        raise ValueError(f"buffer_sample: fresh must be fp32 [B, *S] = {(idx.shape[0], *buffer.shape[1:])} on the "
                         f"buffer's device {buffer.device}, got {fresh.dtype} {tuple(fresh.shape)} on {fresh.device}")


def _row_size(buffer: torch.Tensor) -> int:
    d = 1
    for s in buffer.shape[1:]:
        d *= s
    return d


def _launch_tiles(B: int, D: int, tiles: tuple[int, int] | None) -> tuple[int, int]:
    if tiles is None:
        return _tiles(B, D)
    block_b, block_d = tiles
    if block_b < 1 or block_b & (block_b - 1) or block_d < 4 or block_d & (block_d - 1):
        raise ValueError(f"buffer ops: tiles must be powers of two (BLOCK_B >= 1, BLOCK_D >= 4), got {tiles}")
    return block_b, block_d


def buffer_sample_fwd(buffer: torch.Tensor, idx: torch.Tensor, reset_prob: float, rng_state: torch.Tensor,
                      tiles: tuple[int, int] | None = None, num_warps: int | None = None, *,
                      fresh: torch.Tensor | None = None, rows_first: bool = False, advance: bool = True):
    """Launch the gather + reset kernel: x0 [B, *S] fp32; advances ``rng_state[1]`` (a second kernel, an add on the
    device; ``advance=False`` leaves the state as it is, for the benchmark to time the gather alone).

    ``fresh`` [B, *S] fp32: reset rows take their values from it instead of U(-1, 1) (same reset decisions).
    ``tiles`` = (BLOCK_B, BLOCK_D) and ``num_warps`` override the launch configuration (the kernel
    benchmark sweeps them); the random numbers do not depend on it. ``rows_first`` requests every drawn row,
    reset rows included, before the reset decisions, so that the gather waits on one load (the indices') and not
    on the decisions' Philox rounds as well, for reset_prob more bytes read. The same numbers either way; whether
    it pays is the benchmark's to say on a GPU.
    """
    _check_inputs(buffer, idx, fresh=fresh, reset_prob=reset_prob, rng_state=rng_state)
    B, D = idx.shape[0], _row_size(buffer)
    out = torch.empty((B, *buffer.shape[1:]), dtype=buffer.dtype, device=buffer.device)  # [B, *S]
    if B > 0 and D > 0:
        block_b, block_d = _launch_tiles(B, D, tiles)
        grid = (triton.cdiv(B, block_b), triton.cdiv(D, block_d))
        extra = {} if num_warps is None else {"num_warps": num_warps}
        with device_of(buffer):
            _buffer_sample_kernel[grid](
                # the state's two words as a dense [2]: a strided view is read from a copy (advanced below in place)
                buffer, idx.contiguous(), out, rng_state.contiguous(), out if fresh is None else fresh.contiguous(),
                buffer.shape[0], B, D, float(reset_prob), HAS_FRESH=fresh is not None, BLOCK_B=block_b,
                BLOCK_D=block_d, ROWS_FIRST=bool(rows_first), **extra,
            )
    if advance:
        # rows of no elements still take their reset draws (counters offset + b), as the reference's do
        rng_state[1:].add_(B + B * counters_for(D))
    return out


def buffer_write_fwd(buffer: torch.Tensor, idx: torch.Tensor, x: torch.Tensor, tiles: tuple[int, int] | None = None,
                     num_warps: int | None = None) -> None:
    """Launch the scatter kernel: ``buffer[idx] = x`` in place (``tiles``, ``num_warps``: as for the gather)."""
    _check_inputs(buffer, idx, x)
    B, D = idx.shape[0], _row_size(buffer)
    if B == 0 or D == 0:
        return
    block_b, block_d = _launch_tiles(B, D, tiles)
    grid = (triton.cdiv(B, block_b), triton.cdiv(D, block_d))
    extra = {} if num_warps is None else {"num_warps": num_warps}
    N = buffer.shape[0]
    idx = idx.contiguous()
    last = torch.full((N,), -1, dtype=torch.int64, device=buffer.device)
    block = min(next_power_of_2(B), 1024)
    with device_of(buffer):
        _last_position_kernel[(triton.cdiv(B, block),)](idx, last, N, B, BLOCK=block)
        _buffer_write_kernel[grid](buffer, idx, x.contiguous(), last, N, B, D, BLOCK_B=block_b, BLOCK_D=block_d,
                                   **extra)


def buffer_sample_ref(
    buffer: torch.Tensor, idx: torch.Tensor, reset_prob: float, rng_state: torch.Tensor, *,
    fresh: torch.Tensor | None = None,
) -> torch.Tensor:
    """Spec: ``where(u_b < reset_prob, U(-1, 1), buffer[idx[b]])`` per row, streams as in the module doc;
    with ``fresh`` [B, *S], ``where(u_b < reset_prob, fresh[b], buffer[idx[b]])`` (the same decisions)."""
    B, D = idx.shape[0], _row_size(buffer)
    d4 = counters_for(D)
    u_row = uniform_stream(rng_state, 0, 4 * B).view(B, 4)[:, 0]  # word 0 of counters offset + b
    if fresh is None:
        fresh = uniform_stream(rng_state, B, 4 * d4 * B).view(B, 4 * d4)[:, :D] * 2.0 - 1.0
    else:
        fresh = fresh.reshape(B, D)
    kept = buffer.index_select(0, idx).reshape(B, D)
    out = torch.where((u_row < reset_prob)[:, None], fresh, kept)
    rng_state[1:].add_(B + B * d4)
    return out.reshape(B, *buffer.shape[1:])


def buffer_write_ref(buffer: torch.Tensor, idx: torch.Tensor, x: torch.Tensor) -> None:
    """Spec: ``buffer[idx] = x`` in place, the last of a repeated index's rows written whole."""
    # every position writes the row of the last position with its index: repeats then write equal rows, which
    # index_copy_ (its order unspecified on a GPU) cannot mix
    last = torch.full((buffer.shape[0],), -1, dtype=torch.int64, device=buffer.device)
    last.scatter_reduce_(0, idx, torch.arange(idx.shape[0], device=idx.device), "amax")
    buffer.index_copy_(0, idx, x.to(buffer.dtype).index_select(0, last[idx]))


def _check_rows_in_buffer(op: str, buffer: torch.Tensor, idx: torch.Tensor) -> None:
    """Indices in [0, N), checked on CPU tensors only: on a GPU it would cost a host sync at every call (the kernels
    read a row outside as NaN and drop its write there). On the CPU the Triton backend did so without a word, and the
    reference said index_select's "index out of range in self", naming neither the op nor the buffer's size."""
    if idx.device.type != "cpu" or idx.numel() == 0:
        return
    low, high = torch.aminmax(idx)
    if low < 0 or high >= buffer.shape[0]:
        raise IndexError(f"{op}: idx holds rows outside the buffer's [0, N={buffer.shape[0]}) (from {int(low)} to "
                         f"{int(high)}): draw them with torch.randint(0, N, (B,))")


def _buffer_sample_impl(
    buffer: torch.Tensor, idx: torch.Tensor, reset_prob: float, rng_state: torch.Tensor, fresh: torch.Tensor | None,
    backend: str | None
) -> torch.Tensor:
    _check_inputs(buffer, idx, fresh=fresh, reset_prob=reset_prob, rng_state=rng_state)
    _check_rows_in_buffer("buffer_sample", buffer, idx)
    if use_triton(buffer, backend):
        return buffer_sample_fwd(buffer, idx, reset_prob, rng_state, fresh=fresh)
    # contiguous, as the kernel's output and the registered fake: a transposed ``fresh`` makes torch.where's result
    # transposed, which a compiled graph (told contiguous strides) refuses at run time
    return buffer_sample_ref(buffer, idx, reset_prob, rng_state, fresh=fresh).contiguous()


@torch.library.custom_op("fastjem::buffer_sample", mutates_args=("rng_state",))
def _buffer_sample_op(
    buffer: torch.Tensor, idx: torch.Tensor, reset_prob: float, rng_state: torch.Tensor, fresh: torch.Tensor | None,
    backend: str | None
) -> torch.Tensor:
    return _buffer_sample_impl(buffer, idx, reset_prob, rng_state, fresh, backend)


@_buffer_sample_op.register_fake
def _(buffer, idx, reset_prob, rng_state, fresh, backend):
    # the eager op's checks, so that meta tensors, torch.compile and export refuse what it refuses
    _check_inputs(buffer, idx, fresh=fresh, reset_prob=reset_prob, rng_state=rng_state)
    return buffer.new_empty((idx.shape[0], *buffer.shape[1:]))


def _buffer_write_impl(buffer: torch.Tensor, idx: torch.Tensor, x: torch.Tensor, backend: str | None) -> None:
    _check_inputs(buffer, idx, x)
    _check_rows_in_buffer("buffer_write_", buffer, idx)
    if use_triton(buffer, backend):
        buffer_write_fwd(buffer, idx, x)
    else:
        buffer_write_ref(buffer, idx, x)


@torch.library.custom_op("fastjem::buffer_write_", mutates_args=("buffer",))
def _buffer_write_op(buffer: torch.Tensor, idx: torch.Tensor, x: torch.Tensor, backend: str | None) -> None:
    _buffer_write_impl(buffer, idx, x, backend)


@_buffer_write_op.register_fake
def _(buffer, idx, x, backend):
    _check_inputs(buffer, idx, x)
    return None


def buffer_sample(
    buffer: torch.Tensor,
    idx: torch.Tensor,
    reset_prob: float,
    rng_state: torch.Tensor,
    *,
    fresh: torch.Tensor | None = None,
    backend: str | None = None,
) -> torch.Tensor:
    """x0 [B, *S] fp32 (new tensor): rows ``buffer[idx]``, each reset to U(-1, 1) with probability ``reset_prob``,
    or to its row of ``fresh`` [B, *S] fp32 when given (another restart law, e.g. informative initialisation;
    the reset decisions and the state's advance are the same either way).

    ``rng_state`` (int64 [2] on the buffer's device) is read on the device and advanced in place.
    Not differentiable (chain states are read by value): a buffer or ``fresh`` that requires grad is refused.
    An index outside [0, N) raises on a CPU and gives a NaN row on the Triton backend on a GPU (see the module).
    """
    check_tensors("buffer_sample", buffer=buffer, idx=idx, rng_state=rng_state)
    if fresh is not None:
        check_tensors("buffer_sample", fresh=fresh)
    if torch.is_grad_enabled() and (buffer.requires_grad or (fresh is not None and fresh.requires_grad)):
        refuse("buffer_sample is not differentiable (it reads chain states by value), yet the buffer or fresh "
               "requires grad: pass buffer.detach() and fresh.detach()", rng_state)
        return buffer.new_empty((idx.shape[0], *buffer.shape[1:]))  # compiling: the graph raises before it is read
    # plain eager calls skip the registered op's dispatch; compile, export and dispatch modes go through it
    op = _buffer_sample_impl if direct_call(buffer, idx, rng_state, fresh) else _buffer_sample_op
    return op(buffer, idx, as_number("buffer_sample", "reset_prob", reset_prob), rng_state, fresh, backend)


def buffer_write_(buffer: torch.Tensor, idx: torch.Tensor, x: torch.Tensor, *, backend: str | None = None) -> None:
    """``buffer[idx] = x`` in place (buffer fp32 [N, *S], idx int64 [B], x [B, *S]). x is written by value: no
    gradient flows into the buffer, and a buffer that requires grad is refused (autograd cannot follow the write), as
    are rows that share memory with the buffer (a view of its rows: pass a clone).
    An index outside [0, N) raises on a CPU and is dropped on the Triton backend on a GPU (see the module)."""
    check_tensors("buffer_write_", buffer=buffer, idx=idx, x=x)
    if buffer.requires_grad and torch.is_grad_enabled():
        refuse("buffer_write_: the buffer requires grad and is updated in place: pass buffer.detach() (the replay "
               "buffer's chains need no gradient)", buffer)
        return  # compiling: the graph raises here when it runs
    op = _buffer_write_impl if direct_call(buffer, idx, x) else _buffer_write_op
    op(buffer, idx, x, backend)

"""Counter-based random numbers shared by the Triton kernels and their PyTorch references.

State. A generator state is an int64 tensor ``[2] = (seed, offset)`` living on the device of the
tensors it feeds. Kernels ``tl.load`` both words, so a CUDA graph that replays a kernel draws fresh
numbers as long as the offset is advanced on the device between replays; every random op advances
``offset`` in place by the number of Philox counters it consumed (a tiny device op, no host sync).

Stream. Counter ``c`` (int64) under seed ``s`` is the Philox4x32-10 block
``philox(c0=c & 0xffffffff, c1=c >> 32, c2=0, c3=0; k0=s & 0xffffffff, k1=s >> 32)``: exactly what
``tl.randint4x(seed, c)`` computes for an int64 offset ``c``. Each counter yields four 32-bit words
``r0..r3``. The conversions below are ours (not ``tl.rand``/``tl.randn``), written twice, once in
Triton and once in PyTorch, so kernel and reference agree by construction:

- uniform: ``u = (2 * (r >> 9) + 1) * 2**-24``, an odd multiple of 2**-24 in (0, 1). Every step
  is exact in fp32, so kernel and reference uniforms are bit-identical.
- normal (Box-Muller): ``rad = sqrt(-2 log u_a)``, ``theta = 2 pi u_b - pi``,
  ``(n_a, n_b) = (rad cos theta, rad sin theta)``; one counter gives
  ``(n0, n1) = bm(r0, r1)`` and ``(n2, n3) = bm(r2, r3)``. These agree to a few fp32 ulps,
  i.e. about 1e-6 absolute: the references call libm, the kernels polynomials of their own
  (``_minus_two_log``, and ``_sincospi`` of ``t = 2 u_b - 1``, theta = pi t), each within 2 ulps
  of float64 for every uniform.

Element ``j`` of a stream of ``n`` values that starts at counter ``base`` uses counter
``base + j // 4``, word ``j % 4``; such a stream consumes ``ceil(n / 4)`` counters.
"""

from __future__ import annotations

import numpy as np
import torch

from ._dispatch import as_integer, direct_call, tl, triton

__all__ = [
    "new_rng_state",
    "check_seed",
    "philox4x32_10",
    "philox_words",
    "philox_words_numpy",
    "uniform_from_bits",
    "normal_pair",
    "uniform_stream",
    "normal_stream",
    "counters_for",
]

_MASK32 = 0xFFFFFFFF
_ROUND_A = 0xD2511F53
_ROUND_B = 0xCD9E8D57
_KEY_A = 0x9E3779B9
_KEY_B = 0xBB67AE85
_TWO_POW_M24 = 5.9604644775390625e-08  # 2**-24, exact in fp32
_TWO_PI = 6.283185307179586
_PI = 3.141592653589793


def check_seed(owner: str, seed) -> int:
    """``seed`` as a Python int in [-2**63, 2**63), else an error naming ``owner``."""
    # an integer of any kind (NumPy's, a one-element integer tensor); a float would be truncated (1.7 as seed 1) and a
    # bool is a flag passed in the wrong place, not seed 0 or 1
    seed = as_integer(f"{owner}: seed", seed, advice=": pass int(seed) if truncating it is meant")
    if not -(2**63) <= seed < 2**63:
        # torch's own words would be "Overflow when unpacking long long"
        raise ValueError(f"{owner}: seed must fit int64, in [-2**63, 2**63), got {seed}: take it modulo "
                         "2**63 (e.g. random.getrandbits(63))")
    return seed


def new_rng_state(seed: int, device: torch.device | str | None = None) -> torch.Tensor:
    """A fresh generator state ``int64 [2] = (seed, 0)`` on ``device``; ``seed`` an integer in [-2**63, 2**63)."""
    return torch.tensor([check_seed("new_rng_state", seed), 0], dtype=torch.int64, device=device)


def counters_for(n: int) -> int:
    """Philox counters consumed by a stream of ``n`` values (four values per counter)."""
    return (n + 3) // 4


def _mul32_split(a, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(high, low) 32-bit halves of ``a * x`` for 32-bit ``a`` and int64 ``x`` in [0, 2**32).

    The 64-bit product does not fit int64, so ``x`` is split in 16-bit halves: both partial
    products stay below 2**48.
    """
    p_lo = (x & 0xFFFF) * a  # < 2**48
    p_hi = (x >> 16) * a  # < 2**48
    mid = ((p_hi & 0xFFFF) << 16) + p_lo  # < 2**49
    return (p_hi >> 16) + (mid >> 32), mid & _MASK32


def _mul32_wrap(a, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The same with one int64 multiply: the product wraps modulo 2**64, and an arithmetic shift of the
    wrapped value still has the true high word in its low 32 bits (floor((p - k 2**64) / 2**32) = hi - k 2**32)."""
    p = x * a
    return (p >> 32) & _MASK32, p & _MASK32


def _wraps() -> bool:
    """Whether int64 multiplication wraps here (it does on CPU and CUDA); checked once, else split."""
    x = torch.tensor([0xFFFFFFFF, 0x89ABCDEF, 1], dtype=torch.int64)
    hi, lo = _mul32_wrap(_ROUND_A, x)
    return all(h == (_ROUND_A * v) >> 32 and l_ == (_ROUND_A * v) & _MASK32
               for h, l_, v in zip(hi.tolist(), lo.tolist(), x.tolist()))


_WRAPS = _wraps()


def philox4x32_10(
    c0: torch.Tensor, c1: torch.Tensor, c2: torch.Tensor, c3: torch.Tensor, k0: torch.Tensor, k1: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Philox4x32-10 (Salmon et al., SC'11) on int64 tensors holding 32-bit unsigned words.

    Same round function and key schedule as Random123 and ``triton.language.philox``.
    """
    # The reference is many small ops, so op count, not arithmetic, is its cost: the words travel as two
    # [2, n] stacks, x = (c2, c0) (multiplied) and y = (c1, c3) (xor-ed in), and a round is
    #   x * (B, A) = (hi, lo) per row;  (c0', c2') = hi ^ y ^ (k0, k1);  (c1', c3') = lo;  x' = (c2', c0').
    # Constants are filled on the device (no host-to-device copy, which a CUDA-graph capture forbids).
    c0, c1, c2, c3 = torch.broadcast_tensors(c0, c1, c2, c3)
    x = torch.stack([c2, c0])
    y = torch.stack([c1, c3])
    column = (2,) + (1,) * c0.dim()  # per-row constants broadcast over the words
    rounds = x.new_empty(column)
    rounds[0] = _ROUND_B
    rounds[1] = _ROUND_A
    step = x.new_empty(column)
    step[0] = _KEY_A
    step[1] = _KEY_B
    key = torch.stack([k0.reshape(()), k1.reshape(())]).to(torch.int64).reshape(column)
    for _ in range(10):
        if _WRAPS:
            p = x * rounds
            # the arithmetic shift leaves the true high word in bits 0-31 (see _mul32_wrap); the mask after
            # the xors clears what lies above
            z = p >> 32
            z ^= y
            z ^= key
            z &= _MASK32
            y = p.bitwise_and_(_MASK32)
        else:
            hi, lo = _mul32_split(rounds, x)
            z = hi ^ y ^ key
            y = lo
        x = z.flip(0)
        key = (key + step) & _MASK32
    return x[1], y[0], x[0], y[1]


def philox_words(
    seed: torch.Tensor, counters: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The four 32-bit words (as int64 in [0, 2**32)) of each int64 counter, as ``tl.randint4x``."""
    return tuple(_stacked_words(seed, counters).unbind(0))


def _stacked_words(seed: torch.Tensor, counters: torch.Tensor) -> torch.Tensor:
    """``philox_words`` as one [4, *counters.shape] tensor (rows r0..r3).

    Plain eager calls on CPU tensors take the same rounds in NumPy (same bits): each of the ~70 small ops
    then costs about a microsecond instead of several, which is most of the time of the CPU engine's noise
    for small models. Everything else (CUDA, graph capture, torch.compile, fake tensors) runs PyTorch ops.
    """
    if counters.device.type == "cpu" and seed.device.type == "cpu" and direct_call(seed, counters):
        return torch.from_numpy(_philox_numpy(int(seed), counters))
    seed = seed.to(torch.int64)
    # 0-d keys broadcast: the key schedule costs two scalar ops a round, not two full-size ones
    k0 = seed & _MASK32
    k1 = (seed >> 32) & _MASK32
    zero = torch.zeros_like(counters)
    return torch.stack(philox4x32_10(counters & _MASK32, (counters >> 32) & _MASK32, zero, zero, k0, k1))


def philox_words_numpy(seed: int, counters: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                                     torch.Tensor]:
    """``philox_words`` for CPU counters, computed with NumPy's uint64 arithmetic (the product of two 32-bit
    words fits; its high word is a logical shift), whatever the calling context."""
    return tuple(torch.from_numpy(_philox_numpy(seed, counters)).unbind(0))


def _philox_numpy(seed: int, counters: torch.Tensor) -> np.ndarray:
    """int64 [4, *counters.shape]: the same [2, n] round as ``philox4x32_10``, in NumPy."""
    mask = np.uint64(_MASK32)
    c = counters.detach().reshape(-1).numpy().astype(np.uint64)
    x = np.empty((2, c.size), np.uint64)  # (c2, c0), the words multiplied
    y = np.empty((2, c.size), np.uint64)  # (c1, c3), the words xor-ed in
    x[0] = 0
    np.bitwise_and(c, mask, out=x[1])
    np.right_shift(c, np.uint64(32), out=y[0])
    y[1] = 0
    rounds = np.array([[_ROUND_B], [_ROUND_A]], np.uint64)
    # the key schedule, all ten rounds at once (Python ints: no per-round array ops)
    k0, k1 = seed & _MASK32, (seed >> 32) & _MASK32
    keys = np.array([[[(k0 + i * _KEY_A) & _MASK32], [(k1 + i * _KEY_B) & _MASK32]] for i in range(10)], np.uint64)
    p = np.empty_like(x)
    z = np.empty_like(x)
    for key in keys:
        np.multiply(x, rounds, out=p)
        np.right_shift(p, np.uint64(32), out=z)  # x (a view of z after the first round) is read by now
        z ^= y
        z ^= key  # (c0', c2')
        np.bitwise_and(p, mask, out=y)  # (c1', c3')
        x = z[::-1]  # (c2', c0'): a reversed view, no copy
    return np.stack([x[1], y[0], x[0], y[1]]).view(np.int64).reshape(4, *counters.shape)


def uniform_from_bits(bits: torch.Tensor) -> torch.Tensor:
    """fp32 uniform in (0, 1) from 32-bit words; bit-exact with the Triton ``_uniform``."""
    # in place on the shifted words and on the floats: two temporaries of the words' size, not four (a buffer of
    # 8192 reset rows of 3x32x32 draws 25M words: 0.9 s on one core, 0.45 s so)
    return (bits >> 9).mul_(2).add_(1).to(torch.float32).mul_(_TWO_POW_M24)


def normal_pair(u_a: torch.Tensor, u_b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Box-Muller in fp32: two independent N(0, 1) from two uniforms in (0, 1)."""
    rad = torch.sqrt(-2.0 * torch.log(u_a))
    theta = u_b * _TWO_PI - _PI
    return rad * torch.cos(theta), rad * torch.sin(theta)


def _stream_counters(rng_state: torch.Tensor, base: int, n: int) -> torch.Tensor:
    # offset read as a tensor: no host sync, graph-safe
    return rng_state[1] + base + torch.arange(counters_for(n), dtype=torch.int64, device=rng_state.device)


def uniform_stream(rng_state: torch.Tensor, base: int, n: int) -> torch.Tensor:
    """``n`` fp32 uniforms in (0, 1) from counters ``offset + base + j // 4`` (state not advanced)."""
    words = _stacked_words(rng_state[0], _stream_counters(rng_state, base, n))  # [4, m]
    # the words made uniforms first: the interleaving copy then moves fp32, not int64
    return uniform_from_bits(words).t().reshape(-1)[:n]


def normal_stream(rng_state: torch.Tensor, base: int, n: int) -> torch.Tensor:
    """``n`` fp32 N(0, 1) from counters ``offset + base + j // 4`` (state not advanced).

    Box-Muller on (r0, r1) and (r2, r3) of every counter at once: the uniforms as a [2 pairs, 2, m] view, so
    that the op count (the reference's cost) does not grow with the number of pairs.
    """
    words = _stacked_words(rng_state[0], _stream_counters(rng_state, base, n))  # [4, m]
    u = uniform_from_bits(words).view(2, 2, words.shape[1])  # [pair, (a, b), m]
    n_cos, n_sin = normal_pair(u[:, 0], u[:, 1])  # [pair, m]: (n0, n2) and (n1, n3)
    # element 4 j + 2 pair + k is word 2 pair + k of counter j
    return torch.stack([n_cos, n_sin], dim=-1).transpose(0, 1).reshape(-1)[:n]


if triton is not None:

    @triton.jit
    def _uniform(b_bits):
        """uint32 words -> fp32 uniforms in (0, 1); mirrors ``uniform_from_bits``."""
        return ((b_bits >> 9) * 2 + 1).to(tl.float32) * 5.9604644775390625e-08

    @triton.jit
    def _sincospi(b_t):
        """(sin(pi t), cos(pi t)) for fp32 t in [-1, 1], within 2 ulps (under 0.9e-7 absolute: every t that
        ``_normal_pair`` passes was checked against float64): one quadrant reduction for both, then two short
        polynomials, where ``tl.sin`` and ``tl.cos`` each reduce their argument again, with a branch to a
        large-argument path that never runs here (local memory and float64 in the machine code)."""
        # 1.5 * 2**23 pins the exponent: the sum holds q = round(2t) in its low bits, and t - q / 2 is exact
        b_s = b_t * 2.0 + 12582912.0
        b_q = b_s.to(tl.int32, bitcast=True)
        b_r = b_t - (b_s - 12582912.0) * 0.5  # in [-1/4, 1/4]: sin(pi t) = sin(pi r + q pi / 2)
        b_z = b_r * b_r
        b_sin = b_r * (3.1415927410125732 + b_z * (-5.167707920074463 + b_z * (2.5497610569000244
                                                                               + b_z * -0.5890125036239624)))
        b_cos = 1.0 + b_z * (-4.934802055358887 + b_z * (4.058706760406494 + b_z * (-1.3350359201431274
                                                                                   + b_z * 0.2312610149383545)))
        b_odd = (b_q & 1) != 0  # q = 1 or 3 (mod 4): sine and cosine trade places
        b_sin, b_cos = tl.where(b_odd, b_cos, b_sin), tl.where(b_odd, b_sin, b_cos)
        # the sine is negative in quadrants 2 and 3, the cosine in 1 and 2
        return tl.where((b_q & 2) != 0, -b_sin, b_sin), tl.where(((b_q + 1) & 2) != 0, -b_cos, b_cos)

    @triton.jit
    def _minus_two_log(b_u):
        """-2 log(u) for the fp32 uniforms of ``_uniform`` (u in [2**-24, 1)), within 2 ulps (each of the 2**23
        checked against float64), with none of ``tl.log``'s cases for zero, infinity and subnormals."""
        b_i = b_u.to(tl.int32, bitcast=True)
        b_e = (b_i - 0x3F2AAAAB) & -8388608  # u = 2**(b_e >> 23) m with m in [2/3, 4/3)
        b_f = (b_i - b_e).to(tl.float32, bitcast=True) - 1.0  # m - 1, exact
        # -2 log(1 + f) = -2 f + f**2 p(f) on [-1/3, 1/3]
        b_p = 0.5001566410064697 + b_f * (-0.40023159980773926 + b_f * (0.32831451296806335 + b_f * (
            -0.279788613319397 + b_f * (0.3077947497367859 + b_f * -0.2811245322227478))))
        b_p = 0.9999986886978149 + b_f * (-0.6666638255119324 + b_f * b_p)
        return b_f * (b_f * b_p - 2.0) + b_e.to(tl.float32) * -1.6525916635146132e-07  # -2 log(2) 2**-23

    @triton.jit
    def _normal_pair(b_ua, b_ub):
        """Box-Muller; ``normal_pair``'s numbers, with theta = pi t, t = 2 u_b - 1 exact."""
        b_rad = tl.sqrt(_minus_two_log(b_ua))
        b_sin, b_cos = _sincospi(b_ub * 2.0 - 1.0)
        return b_rad * b_cos, b_rad * b_sin

    @triton.jit
    def _interleave4(b_0, b_1, b_2, b_3, QUARTER: tl.constexpr):
        """Four [QUARTER] blocks -> one [4 * QUARTER] block ordered b_0[0], b_1[0], b_2[0], b_3[0], b_0[1], ..."""
        # join(a, c) is [Q, 2]; join of two of those is [Q, 2, 2] indexed [q, i, k] -> flat 4q + 2i + k
        return tl.reshape(tl.join(tl.join(b_0, b_2), tl.join(b_1, b_3)), [4 * QUARTER])

    @triton.jit
    def uniform_rows(b_seed, b_ctr, ROWS: tl.constexpr, QUARTER: tl.constexpr):
        """[ROWS, 4 * QUARTER] uniforms from [ROWS, QUARTER] int64 counters, each row ordered as ``_interleave4``."""
        b_r0, b_r1, b_r2, b_r3 = tl.randint4x(b_seed, b_ctr)
        b_u = tl.join(tl.join(_uniform(b_r0), _uniform(b_r2)), tl.join(_uniform(b_r1), _uniform(b_r3)))
        return tl.reshape(b_u, [ROWS, 4 * QUARTER])

    @triton.jit
    def normal_block(b_seed, b_ctr, QUARTER: tl.constexpr):
        """N(0, 1) for 4 * QUARTER consecutive stream elements from the QUARTER counters ``b_ctr`` (int64)."""
        b_r0, b_r1, b_r2, b_r3 = tl.randint4x(b_seed, b_ctr)
        b_n0, b_n1 = _normal_pair(_uniform(b_r0), _uniform(b_r1))
        b_n2, b_n3 = _normal_pair(_uniform(b_r2), _uniform(b_r3))
        return _interleave4(b_n0, b_n1, b_n2, b_n3, QUARTER)

    @triton.jit
    def uniform_scalar(b_seed, b_ctr):
        """One uniform from word 0 of a single int64 counter."""
        b_r0, _, _, _ = tl.randint4x(b_seed, b_ctr)
        return _uniform(b_r0)

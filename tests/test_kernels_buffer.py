"""buffer_sample (gather + reset to U(-1, 1)) and buffer_write_ (scatter)."""

import math
import types

import pytest
import torch
from fastjem.kernels import buffer, buffer_sample, buffer_sample_ref, buffer_write_, buffer_write_ref, new_rng_state
from fastjem.kernels.rng import counters_for
from kernel_utils import (
    BACKENDS,
    DEVICES,
    assert_close,
    ks_bound,
    ks_statistic,
    patch_empty_with_nan,
    recorded_launches,
    skip_unless_runnable,
    uniform_cdf,
)

# row shapes S: one element, non-multiple of 4, an image, and one that spans two interpreter blocks
ROW_SHAPES = [pytest.param(s, id="x".join(map(str, s))) for s in [(1,), (5,), (3, 8, 8), (3, 80, 80)]]
PROBS = [pytest.param(p, id=f"p{p}") for p in (0.0, 0.3, 1.0)]
Z = 5.5


@pytest.fixture(autouse=True)
def nan_empty(monkeypatch):
    """Outputs start as NaN, so an element the kernel forgets to write fails the comparison."""
    patch_empty_with_nan(monkeypatch, buffer)


def _buffer(n, row_shape, device, seed=0):
    # values outside [-1, 1]: a kept row can never be mistaken for a reset one
    gen = torch.Generator().manual_seed(seed)
    return (2.0 + torch.rand(n, *row_shape, generator=gen)).to(device)


@pytest.mark.parametrize("reset_prob", PROBS)
@pytest.mark.parametrize("row_shape", ROW_SHAPES)
@pytest.mark.parametrize("device", DEVICES)
def test_sample_kernel_matches_reference_bit_exactly(device, row_shape, reset_prob):
    skip_unless_runnable(device, "triton")
    B = 3 if row_shape == (3, 80, 80) else 37
    buf = _buffer(50, row_shape, device)
    idx = torch.randint(0, 50, (B,), generator=torch.Generator().manual_seed(1)).to(device)
    state = torch.tensor([42, 1000], device=device)
    state_ref = state.clone()
    x0 = buffer_sample(buf, idx, reset_prob, state, backend="triton")
    x0_ref = buffer_sample_ref(buf, idx, reset_prob, state_ref)
    assert x0.shape == (B, *row_shape) and x0.dtype == torch.float32
    assert_close(x0, x0_ref, 0, 0, "x0")
    d = x0[0].numel()
    assert state.tolist() == state_ref.tolist() == [42, 1000 + B + B * counters_for(d)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("device", DEVICES)
def test_reset_fraction_and_uniformity(device, backend):
    skip_unless_runnable(device, backend)
    B, row_shape, p = 600, (16,), 0.3
    buf = _buffer(1000, row_shape, device)
    idx = torch.randint(0, 1000, (B,), generator=torch.Generator().manual_seed(2)).to(device)
    state = new_rng_state(8, device)
    x0 = buffer_sample(buf, idx, p, state, backend=backend).cpu()
    kept_rows = buf[idx].cpu()
    is_kept = (x0 == kept_rows).all(1)
    is_reset = (x0.abs() <= 1).all(1)
    assert bool((is_kept ^ is_reset).all()), "every row is either the buffer row or a fresh U(-1, 1) row"
    frac = is_reset.double().mean().item()
    assert abs(frac - p) < Z * (p * (1 - p) / B) ** 0.5
    fresh = x0[is_reset]
    assert ks_statistic(fresh, uniform_cdf(-1.0, 1.0)) < ks_bound(fresh.numel())
    assert abs(fresh.mean().item()) < Z * (1 / 3 / fresh.numel()) ** 0.5
    # reset rows are independent draws, not one row repeated
    assert torch.unique(fresh, dim=0).shape[0] == fresh.shape[0]
    # a second call from the advanced state resets other rows
    again = buffer_sample(buf, idx, p, state, backend=backend).cpu()
    assert not torch.equal((again.abs() <= 1).all(1), is_reset)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("device", DEVICES)
def test_reset_prob_extremes(device, backend):
    skip_unless_runnable(device, backend)
    buf = _buffer(20, (3, 4), device)
    idx = torch.arange(19, -1, -1, device=device)
    state = new_rng_state(1, device)
    assert torch.equal(buffer_sample(buf, idx, 0.0, state, backend=backend), buf.flip(0))
    all_reset = buffer_sample(buf, idx, 1.0, state, backend=backend)
    assert bool((all_reset.abs() < 1).all())


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("device", DEVICES)
def test_write_round_trip(device, backend):
    skip_unless_runnable(device, backend)
    buf = _buffer(40, (3, 5, 5), device)
    before = buf.clone()
    idx = torch.randperm(40, generator=torch.Generator().manual_seed(3))[:9].to(device)
    rows = torch.randn(9, 3, 5, 5, device=device)
    buffer_write_(buf, idx, rows, backend=backend)
    assert torch.equal(buf[idx], rows)
    untouched = torch.ones(40, dtype=torch.bool, device=device)
    untouched[idx] = False
    assert torch.equal(buf[untouched], before[untouched])
    expected = before.clone()
    buffer_write_ref(expected, idx, rows)
    assert torch.equal(buf, expected)
    # sample with no resets reads back exactly what was written
    assert torch.equal(buffer_sample(buf, idx, 0.0, new_rng_state(0, device), backend=backend), rows)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("device", DEVICES)
def test_a_row_written_by_several_positions_holds_the_last_of_their_rows_whole(device, backend):
    """Repeated indices (a replay buffer's draws repeat): each repeated row holds the last position's row, every
    element of it. On an H200, 8192 rows written to a 10000-row buffer by programs that split each row in three left
    some rows a mix of the rows written to them (bench/bench_kernels.py's check); the interpreter runs programs one
    after another, so only the GPU case can show a mix."""
    skip_unless_runnable(device, backend)
    n, b, shape = (100, 8192, (3, 32, 32)) if device == "cuda" else (6, 40, (3, 8, 8))
    gen = torch.Generator().manual_seed(5)
    for trial in range(3):
        buf = _buffer(n, shape, device, seed=trial)
        idx = torch.randint(0, n - 1, (b,), generator=gen)  # row n - 1 is never written
        rows = torch.randn(b, *shape, generator=gen)
        expected = buf.cpu().clone()  # a copy on the CPU too
        for position, row in enumerate(idx.tolist()):
            expected[row] = rows[position]
        buffer_write_(buf, idx.to(device), rows.to(device), backend=backend)
        mixed = (buf.cpu() != expected).flatten(1).any(1)
        assert not bool(mixed.any()), f"trial {trial}: rows {mixed.nonzero().flatten().tolist()} not the last written"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("device", DEVICES)
def test_a_batch_of_one_row_is_drawn_and_written_like_any_other(device, backend):
    """B = 1, a single chain: the gather is the reference's, restarted or not, and the write lands."""
    skip_unless_runnable(device, backend)
    buf = _buffer(20, (3, 4, 4), device)
    idx = torch.tensor([13], device=device)
    for reset_prob in (0.0, 1.0):
        state, state_ref = new_rng_state(4, device), new_rng_state(4, device)
        x0 = buffer_sample(buf, idx, reset_prob, state, backend=backend)
        assert_close(x0, buffer_sample_ref(buf, idx, reset_prob, state_ref), 0, 0, "x0")
        assert state.tolist() == state_ref.tolist() == [4, 1 + counters_for(48)]
    assert torch.equal(buffer_sample(buf, idx, 0.0, new_rng_state(0, device), backend=backend), buf[13:14])
    row = torch.randn(1, 3, 4, 4, device=device)
    buffer_write_(buf, idx, row, backend=backend)
    assert torch.equal(buf[13:14], row)



@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("device", DEVICES)
def test_empty_batches_and_empty_rows_advance_the_state_as_the_reference(device, backend):
    """No rows: nothing drawn, the state unmoved. Rows of no elements still take their B reset draws: the kernel
    path returned early and left the state where the reference moves it by B, so the two drew different noise."""
    skip_unless_runnable(device, backend)
    for buf, idx in ((_buffer(10, (3, 4), device), torch.zeros(0, dtype=torch.int64, device=device)),
                     (torch.ones(10, 0, device=device), torch.tensor([1, 2, 7], device=device))):
        state, state_ref = new_rng_state(4, device), new_rng_state(4, device)
        x0 = buffer_sample(buf, idx, 0.5, state, backend=backend)
        assert x0.shape == buffer_sample_ref(buf, idx, 0.5, state_ref).shape == (len(idx), *buf.shape[1:])
        assert state.tolist() == state_ref.tolist() == [4, len(idx)]
        before = buf.clone()
        buffer_write_(buf, idx, torch.zeros(len(idx), *buf.shape[1:], device=device), backend=backend)
        assert torch.equal(buf, before)

@pytest.mark.parametrize("backend", BACKENDS)
def test_opcheck(backend):
    skip_unless_runnable("cpu", backend)
    buf, idx = _buffer(10, (2, 3), "cpu"), torch.tensor([3, 0, 3, 9])
    torch.library.opcheck(torch.ops.fastjem.buffer_sample.default, (buf, idx, 0.5, new_rng_state(4), None, backend))
    fresh = torch.rand(4, 2, 3) * 2 - 1
    torch.library.opcheck(torch.ops.fastjem.buffer_sample.default, (buf, idx, 0.5, new_rng_state(4), fresh, backend))
    rows = torch.randn(3, 2, 3)
    torch.library.opcheck(torch.ops.fastjem.buffer_write_.default, (buf, torch.tensor([1, 5, 2]), rows, backend))
    # a transposed fresh: the rows come back contiguous, as the registered fake says
    fresh = torch.rand(6, 4).t() * 2 - 1
    args = (_buffer(10, (6,), "cpu"), idx, 0.5, new_rng_state(4), fresh, backend)
    torch.library.opcheck(torch.ops.fastjem.buffer_sample.default, args)
    assert torch.ops.fastjem.buffer_sample(*args).is_contiguous()


@pytest.mark.parametrize("backend", BACKENDS)
def test_compile_fullgraph(backend):
    skip_unless_runnable("cpu", backend)
    torch._dynamo.reset()

    def refresh(buf, idx, state, fresh=None):
        x = buffer_sample(buf, idx, 0.5, state, fresh=fresh, backend=backend)
        buffer_write_(buf, idx, x * 0.5, backend=backend)
        return x

    compiled = torch.compile(refresh, fullgraph=True, backend="aot_eager")
    buf, idx, state = _buffer(30, (4, 3), "cpu"), torch.randperm(30)[:12], new_rng_state(6)
    buf_e, state_e = buf.clone(), state.clone()
    assert torch.equal(compiled(buf, idx, state), refresh(buf_e, idx, state_e))
    assert torch.equal(buf, buf_e) and torch.equal(state, state_e)
    fresh = torch.rand(12, 4, 3) - 3.0
    assert torch.equal(compiled(buf, idx, state, fresh), refresh(buf_e, idx, state_e, fresh))
    assert torch.equal(buf, buf_e) and torch.equal(state, state_e) and bool((buf < -1).any())


def test_the_registered_ops_refuse_on_meta_tensors_what_the_eager_ops_refuse():
    """The registered fakes (meta tensors, torch.compile, export) make the eager ops' checks with their words: a
    wrong-shaped, wrong-typed or wrong-device write, index, state or fresh is refused, not taken for a good one; meta
    tensors of their own are not taken for views of one storage (every meta storage is at address 0)."""
    buf, idx, state = torch.empty(10, 4, device="meta"), torch.arange(3, device="meta"), new_rng_state(0, "meta")
    write, sample = torch.ops.fastjem.buffer_write_, torch.ops.fastjem.buffer_sample
    write(buf, idx, torch.empty(3, 4, device="meta"), None)
    assert sample(buf, idx, 0.5, state, torch.empty(3, 4, device="meta"), None).shape == (3, 4)
    buffer_write_(buf, idx, torch.empty(3, 4, device="meta"))  # the eager wrapper on meta tensors too
    with pytest.raises(ValueError, match=r"x must be \[B, \*S\] = \(3, 4\)"):
        write(buf, idx, torch.empty(3, 5, device="meta"), None)
    with pytest.raises(ValueError, match="x must be a float tensor on the buffer's device"):
        write(buf, idx, torch.empty(3, 4, dtype=torch.int64, device="meta"), None)
    with pytest.raises(ValueError, match="x shares memory with the buffer"):
        write(buf, idx, buf[:3], None)
    with pytest.raises(ValueError, match=r"buffer must be contiguous fp32 \[N, \*S\]"):
        write(buf.double(), idx, torch.empty(3, 4, device="meta"), None)
    with pytest.raises(ValueError, match=r"idx must be an int64 \[B\] tensor on the buffer's device"):
        sample(buf, idx.view(3, 1), 0.5, state, None, None)
    with pytest.raises(ValueError, match=r"rng_state must be an int64 \[2\]"):
        sample(buf, idx, 0.5, state.float(), None, None)
    with pytest.raises(ValueError, match="reset_prob is a probability"):
        sample(buf, idx, 1.5, state, None, None)
    with pytest.raises(ValueError, match=r"fresh must be fp32 \[B, \*S\] = \(3, 4\)"):
        sample(buf, idx, 0.5, state, torch.empty(3, 5, device="meta"), None)


def test_a_compiled_wrong_shaped_write_is_refused_before_anything_runs():
    """Under torch.compile(fullgraph=True) a write of the wrong shape is refused while the graph is traced, naming
    what to pass, before the gather before it advances the RNG state (it was refused only when the write ran)."""
    torch._dynamo.reset()

    def refresh(buf, idx, state):
        x = buffer_sample(buf, idx, 0.5, state, backend="reference")
        buffer_write_(buf, idx, x[:, :3], backend="reference")

    buf, idx, state = _buffer(10, (4,), "cpu"), torch.arange(3), new_rng_state(0, "cpu")
    before = buf.clone()
    with pytest.raises(Exception, match=r"x must be \[B, \*S\] = \(3, 4\)"):
        torch.compile(refresh, fullgraph=True, backend="aot_eager")(buf, idx, state)
    assert torch.equal(buf, before) and state.tolist() == new_rng_state(0, "cpu").tolist()


@pytest.mark.parametrize("row_shape", ROW_SHAPES)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("device", DEVICES)
def test_fresh_rows_replace_the_uniform_restarts_with_the_same_decisions(device, backend, row_shape):
    """With ``fresh`` the reset rows are its rows; which rows reset, the kept rows and the state's advance are
    what they are without it; the kernel and the reference agree bit for bit."""
    skip_unless_runnable(device, backend)
    B = 3 if row_shape == (3, 80, 80) else 64
    buf = _buffer(80, row_shape, device)
    idx = torch.randint(0, 80, (B,), generator=torch.Generator().manual_seed(3)).to(device)
    fresh = (-5.0 - torch.rand(B, *row_shape, generator=torch.Generator().manual_seed(4))).to(device)
    s_plain, s_fresh, s_ref = (torch.tensor([7, 300], device=device) for _ in range(3))
    plain = buffer_sample(buf, idx, 0.4, s_plain, backend=backend)
    x0 = buffer_sample(buf, idx, 0.4, s_fresh, fresh=fresh, backend=backend)
    ref = buffer_sample_ref(buf, idx, 0.4, s_ref, fresh=fresh)
    assert_close(x0, ref, 0, 0, "x0 with fresh rows")
    reset = (plain.flatten(1) <= 1.0).all(1)  # uniform restarts lie in [-1, 1], kept rows above 2
    assert 0 < int(reset.sum()) < B or B == 3
    assert torch.equal(x0[reset], fresh[reset]) and torch.equal(x0[~reset], buf[idx][~reset])
    assert torch.equal(s_fresh, s_plain) and torch.equal(s_fresh, s_ref)
    for bad in (fresh[:1], fresh.double()):
        with pytest.raises(ValueError, match="fresh must be fp32"):
            buffer_sample(buf, idx, 0.4, s_fresh, fresh=bad, backend=backend)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_graph_replays_draw_fresh_resets():
    buf = _buffer(10000, (3, 32, 32), "cuda")
    idx = torch.randint(0, 10000, (64,), device="cuda")
    state = new_rng_state(12, "cuda")
    state_eager = state.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        buffer_sample(buf, idx, 0.5, state.clone())
        buffer_write_(buf.clone(), idx, buf[idx])
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        x0 = buffer_sample(buf, idx, 0.5, state)
    masks = []
    for _ in range(4):
        graph.replay()
        expected = buffer_sample(buf, idx, 0.5, state_eager)
        assert_close(x0, expected, 0, 0, "graph vs eager")
        masks.append((x0.abs() <= 1).flatten(1).all(1))
    assert state.tolist() == state_eager.tolist()
    assert len({tuple(m.tolist()) for m in masks}) == 4


@pytest.mark.parametrize("device", DEVICES)
def test_every_launch_configuration_gives_the_same_rows(device):
    """Tiles, warps and the order of the loads swept by the benchmark change the speed, never the rows, resets or
    random values (drawn, or taken from ``fresh``); a launch that leaves the state alone draws the same rows."""
    skip_unless_runnable(device, "triton")
    from fastjem.kernels.buffer import buffer_sample_fwd, buffer_write_fwd

    gen = torch.Generator().manual_seed(5)
    # D = 18: partial blocks of 4 and 16 and a partial last counter (D = 75 gave the same, in four times the programs:
    # the interpreter runs them one at a time)
    buf = (torch.rand(40, 3, 2, 3, generator=gen) * 2 - 1).to(device)
    idx = torch.randint(0, 40, (13,), generator=gen).to(device)
    rows = torch.randn(13, 3, 2, 3, generator=gen).to(device)
    fresh = torch.randn(13, 3, 2, 3, generator=gen).to(device)
    ref = None
    for tiles, warps, order in ((None, None, {}), ((1, 4), 1, {}), ((4, 16), 2, {}), ((16, 128), 4, {}),
                                (None, None, {"rows_first": True}), ((1, 4), 1, {"rows_first": True}),
                                ((4, 16), 2, {"rows_first": True})):
        state = new_rng_state(2, device)
        state[1] = 9
        out = buffer_sample_fwd(buf, idx, 0.4, state, tiles=tiles, num_warps=warps, **order)
        given = buffer_sample_fwd(buf, idx, 0.4, new_rng_state(2, device), tiles=tiles, num_warps=warps,
                                  fresh=fresh, **order)
        written = buf.clone()
        buffer_write_fwd(written, idx.unique(), rows[: idx.unique().numel()], tiles=tiles, num_warps=warps)
        if ref is None:
            ref = (out, state, written, given)
            expected_state = new_rng_state(2, device)
            expected_state[1] = 9
            assert torch.equal(out, buffer_sample_ref(buf, idx, 0.4, expected_state))
            assert torch.equal(given, buffer_sample_ref(buf, idx, 0.4, new_rng_state(2, device), fresh=fresh))
            reset = ~(out == buf[idx]).flatten(1).all(1)
            assert 0 < int(reset.sum()) < 13  # some rows of each kind
        assert torch.equal(out, ref[0]) and torch.equal(state, ref[1]) and torch.equal(written, ref[2])
        assert torch.equal(given, ref[3]), (tiles, warps, order)
    # advance=False, the benchmark's gather alone: the same rows, and the state left as it was
    state = new_rng_state(2, device)
    state[1] = 9
    before = state.clone()
    assert torch.equal(buffer_sample_fwd(buf, idx, 0.4, state, advance=False), ref[0])
    assert torch.equal(state, before) and not torch.equal(state, ref[1])
    with pytest.raises(ValueError, match="powers of two"):
        buffer_sample_fwd(buf, idx, 0.4, new_rng_state(0, device), tiles=(3, 16))


def test_indices_outside_the_buffer_read_nan_and_write_nothing():
    """On a GPU there is no host sync to refuse them: the kernels mask rows outside [0, N). Their launchers, called
    here directly, take such indices as a GPU call does (the ops refuse CPU indices before launching)."""
    skip_unless_runnable("cpu", "triton")
    from fastjem.kernels.buffer import buffer_sample_fwd, buffer_write_fwd

    # the buffer is rows 64-103 of a larger tensor: a write past its ends would land in the guard rows around it
    # (found there, not as memory corrupted outside any tensor)
    storage = _buffer(168, (3,), "cpu")
    buf = storage[64:104]
    before = storage.clone()
    idx = torch.tensor([0, 1, 40, -1, 97])
    x0 = buffer_sample_fwd(buf, idx, 0.0, new_rng_state(0, "cpu"))
    assert torch.equal(x0[:2], buf[:2]) and x0[2:].isnan().all()
    got = buffer_sample_fwd(buf, idx, 0.0, new_rng_state(0, "cpu"), rows_first=True)  # the benchmark's order
    assert torch.equal(got[:2], buf[:2]) and got[2:].isnan().all()

    # the write's table of each row's last position, put among entries that name the positions of the rows outside:
    # a kernel that looked those rows up, unmasked, would take them for rows to write
    class _Torch(types.ModuleType):
        def __getattr__(self, name):
            return getattr(torch, name)

    def full(size, value, dtype=None, device=None):
        whole = torch.full((168,), value, dtype=dtype, device=device)
        whole[64 + 40], whole[64 - 1], whole[64 + 97] = 2, 3, 4
        return whole[64:64 + size[0]]

    proxy = _Torch("torch_guarded_full")
    proxy.full = full
    with pytest.MonkeyPatch.context() as m:
        m.setattr(buffer, "torch", proxy)
        buffer_write_fwd(buf, idx, torch.zeros(5, 3))
    assert (buf[:2] == 0).all() and torch.equal(buf[2:], before[66:104])
    assert torch.equal(storage[:64], before[:64]) and torch.equal(storage[104:], before[104:])
    with pytest.raises(IndexError):
        buffer_sample(buf, idx, 0.0, new_rng_state(0, "cpu"), backend="triton")


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_reset_probabilities_states_and_rows_are_refused_up_front(backend):
    """A reset probability outside [0, 1] (or NaN), an RNG state that is not int64 [2] (a float offset would stop
    advancing past 2^24 counters and repeat the noise), rows of another dtype, device or shape, a buffer that is not
    contiguous fp32 and indices that are not int64 [B] on its device: a ValueError that says what to pass, on both
    backends, before anything is read or written."""
    skip_unless_runnable("cpu", backend)
    buf = torch.rand(10, 4)
    idx = torch.arange(3)
    state = new_rng_state(0, "cpu")
    for p in (1.5, -0.5, float("nan")):
        with pytest.raises(ValueError, match="reset_prob is a probability"):
            buffer_sample(buf, idx, p, state, backend=backend)
    for bad in (state.float(), torch.zeros(3, dtype=torch.int64), state.to("meta")):
        with pytest.raises(ValueError, match="rng_state must be an int64 \\[2\\]"):
            buffer_sample(buf, idx, 0.05, bad, backend=backend)
    assert state.tolist() == new_rng_state(0, "cpu").tolist()  # nothing advanced
    before = buf.clone()
    with pytest.raises(ValueError, match="float tensor on the buffer's device"):
        buffer_write_(buf, idx, torch.zeros(3, 4, device="meta"), backend=backend)
    with pytest.raises(ValueError, match="float tensor on the buffer's device"):
        buffer_write_(buf, idx, torch.zeros(3, 4, dtype=torch.int64), backend=backend)
    assert torch.equal(buf, before)
    for bad_buf in (buf.double(), buf.t(), torch.tensor(1.0)):
        with pytest.raises(ValueError, match=r"buffer must be contiguous fp32 \[N, \*S\]"):
            buffer_write_(bad_buf, idx, torch.zeros(3, 4), backend=backend)
    # a strided view says so (its dtype and shape alone read as those asked for) and what to keep instead
    with pytest.raises(ValueError, match=r"got torch.float32 \(10, 2\) with strides \(4, 1\): keep the buffer a "
                                         r"tensor of its own"):
        buffer_sample(buf[:, :2], idx, 0.05, state, backend=backend)
    for bad_idx in (idx.int(), idx.view(3, 1), idx.to("meta")):
        with pytest.raises(ValueError, match="idx must be an int64 \\[B\\] tensor on the buffer's device"):
            buffer_sample(buf, bad_idx, 0.05, state, backend=backend)
    for rows in (torch.zeros(2, 4), torch.zeros(3, 5), torch.zeros(3, 4, 1)):
        with pytest.raises(ValueError, match=r"x must be \[B, \*S\] = \(3, 4\)"):
            buffer_write_(buf, idx, rows, backend=backend)
    assert torch.equal(buf, before) and state.tolist() == new_rng_state(0, "cpu").tolist()
    x0 = buffer_sample(buf, idx, 1.0, state, backend=backend)  # the bounds themselves are probabilities
    assert x0.shape == (3, 4) and buffer_sample(buf, idx, 0.0, state, backend=backend).equal(buf[idx])


def test_strided_rows_fresh_and_indices_are_read_as_their_values():
    """Rows to write, fresh restarts and indices given as strided views: the Triton ops read them by value (the
    reference's result), not by their storage order."""
    skip_unless_runnable("cpu", "triton")
    buf = torch.rand(10, 3, 4, 5)
    idx = torch.tensor([1, 4, 7])
    rows = torch.randn(3, 4, 5, 3).permute(0, 3, 1, 2)
    b1, b2 = buf.clone(), buf.clone()
    buffer_write_(b1, idx, rows, backend="triton")
    buffer_write_(b2, idx, rows, backend="reference")
    assert torch.equal(b1, b2) and torch.equal(b1[idx], rows)
    fresh = (torch.rand(3, 4, 5, 3) - 5).permute(0, 3, 1, 2)
    o1 = buffer_sample(buf, idx, 1.0, new_rng_state(0), fresh=fresh, backend="triton")
    o2 = buffer_sample(buf, idx, 1.0, new_rng_state(0), fresh=fresh, backend="reference")
    assert torch.equal(o1, o2) and torch.equal(o1, fresh)
    strided_idx = torch.tensor([[1, 0], [4, 0], [7, 0]])[:, 0]
    assert not strided_idx.is_contiguous()
    assert torch.equal(buffer_sample(buf, strided_idx, 0.0, new_rng_state(0), backend="triton"), buf[idx])


def test_the_gathers_launcher_passes_the_order_of_the_loads_on(monkeypatch):
    """buffer_sample_fwd(rows_first=...) reaches the kernel (whose two orders compile to different machine code:
    test_kernels_compile), with the default order unless asked."""
    skip_unless_runnable("cpu", "triton")
    launched = recorded_launches(monkeypatch, buffer, "_buffer_sample_kernel", "ROWS_FIRST")
    buf, idx = torch.zeros(6, 8), torch.tensor([0, 3])
    for kwargs in ({}, {"rows_first": True}, {"rows_first": False, "tiles": (1, 8)}):
        buffer.buffer_sample_fwd(buf, idx, 0.5, new_rng_state(0, "cpu"), **kwargs)
    assert launched == [False, True, False]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_strided_state_draws_its_own_resets_and_moves(backend):
    """An RNG state given as a strided [2] view (a column of a larger tensor): the resets of a dense state with the
    same (seed, offset), and the view advanced (the kernel read the storage's next word as the offset: the same
    resets at every call)."""
    skip_unless_runnable("cpu", backend)
    buf, idx = _buffer(30, (5,), "cpu"), torch.arange(30)
    states = torch.tensor([[5, 9], [0, 0]])
    strided, dense = states[:, 0], new_rng_state(5)
    for _ in range(2):
        assert_close(buffer_sample(buf, idx, 0.5, strided, backend=backend),
                     buffer_sample(buf, idx, 0.5, dense, backend=backend), 0, 0, "x0")
    assert states[:, 0].tolist() == dense.tolist() and states[:, 1].tolist() == [9, 0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_buffers_and_restarts_that_require_grad_are_refused_and_rows_are_written_by_value(backend):
    """The ops are not differentiable: a buffer or fresh rows that require grad are refused with what to pass (the
    gather handed out rows requiring grad whose backward failed inside torch, 'no autograd formula'; the scatter
    changed a leaf requiring grad in place, whose gradient then still counted the overwritten rows). Rows that
    require grad are written by value; under no_grad a buffer that requires grad is written as any other."""
    skip_unless_runnable("cpu", backend)
    idx = torch.tensor([1, 4])
    leaf = torch.rand(6, 3, requires_grad=True)
    with pytest.raises(ValueError, match=r"pass buffer.detach\(\) and fresh.detach\(\)"):
        buffer_sample(leaf, idx, 0.5, new_rng_state(0), backend=backend)
    with pytest.raises(ValueError, match=r"pass buffer.detach\(\) and fresh.detach\(\)"):
        buffer_sample(leaf.detach(), idx, 0.5, new_rng_state(0), fresh=torch.zeros(2, 3, requires_grad=True),
                      backend=backend)
    before = leaf.detach().clone()
    with pytest.raises(ValueError, match=r"requires grad and is updated in place: pass buffer.detach\(\)"):
        buffer_write_(leaf, idx, torch.zeros(2, 3), backend=backend)
    assert torch.equal(leaf.detach(), before)
    buf, rows = torch.rand(6, 3), torch.randn(2, 3, requires_grad=True)
    buffer_write_(buf, idx, rows, backend=backend)
    assert torch.equal(buf[idx], rows.detach()) and not buf.requires_grad
    with torch.no_grad():
        buffer_write_(leaf, idx, torch.zeros(2, 3), backend=backend)
        assert (leaf[idx] == 0).all()
        assert buffer_sample(leaf, idx, 0.0, new_rng_state(0), backend=backend).equal(leaf[idx])


def test_a_buffer_that_requires_grad_is_refused_with_the_same_error_when_compiled():
    """Under torch.compile(fullgraph=True) a buffer or fresh rows that require grad raise the eager ops' ValueError,
    word for word, when the compiled code runs (raised while dynamo traced, it was dynamo's 'Observed exception', the
    message in its debug context); nothing is written or advanced, and the same function compiled for a detached
    buffer works (the refusing graph runs only for inputs that require grad)."""
    idx = torch.tensor([1, 4])

    def write(buf, rows):
        buffer_write_(buf, idx, rows, backend="reference")
        return rows * 2

    def gather(buf, state, fresh=None):
        return buffer_sample(buf, idx, 0.5, state, fresh=fresh, backend="reference") + 1

    for fn, args in ((write, (torch.zeros(2, 3),)), (gather, (new_rng_state(0),)),
                     (gather, (new_rng_state(0), torch.zeros(2, 3, requires_grad=True)))):
        torch._dynamo.reset()
        leaf = torch.rand(6, 3, requires_grad=fn is write or len(args) == 1)
        with pytest.raises(ValueError) as eager:
            fn(leaf, *args)
        before, state = leaf.detach().clone(), args[0].clone()
        with pytest.raises(ValueError) as compiled:
            torch.compile(fn, fullgraph=True, backend="aot_eager")(leaf, *args)
        assert str(compiled.value) == str(eager.value) and "detach()" in str(eager.value)
        assert torch.equal(leaf.detach(), before) and torch.equal(args[0], state)
        if fn is write:
            buf = leaf.detach().clone()
            torch.compile(fn, fullgraph=True, backend="aot_eager")(buf, *args)
            assert torch.equal(buf[idx], args[0])


def test_refused_indices_and_probabilities_are_told_what_to_pass():
    """An idx of another dtype names what it got and what to pass; an index outside the buffer on the reference backend
    names the op and the buffer's size (not index_select's 'index out of range in self'); a reset_prob of several
    elements is named as such."""
    buf = _buffer(10, (3,), "cpu")
    with pytest.raises(ValueError, match=r"got torch.int32 \(2,\) on cpu: pass idx.long\(\)"):
        buffer_sample(buf, torch.tensor([0, 1], dtype=torch.int32), 0.5, new_rng_state(0), backend="reference")
    state = new_rng_state(0)
    with pytest.raises(IndexError, match=r"buffer_sample: idx holds rows outside the buffer's \[0, N=10\) \(from -1 to "
                                         r"10\): draw them with torch.randint"):
        buffer_sample(buf, torch.tensor([3, 10, -1]), 0.5, state, backend="reference")
    assert state.tolist() == [0, 0]
    with pytest.raises(ValueError, match="buffer_sample: reset_prob must be a number"):
        buffer_sample(buf, torch.tensor([3]), torch.tensor([0.5, 0.5]), state, backend="reference")
    assert torch.equal(buffer_sample(buf, torch.tensor([3]), torch.tensor(0.0), state, backend="reference"), buf[3:4])


@pytest.mark.parametrize("backend", BACKENDS)
def test_indices_outside_the_buffer_are_refused_on_the_cpu(backend):
    """CPU indices are checked on either backend (no host sync to pay): the Triton kernels gave NaN rows and dropped
    writes without a word, the reference's write said index_copy_'s words. Nothing is written or drawn."""
    skip_unless_runnable("cpu", backend)
    buf = _buffer(10, (3,), "cpu")
    before, state = buf.clone(), new_rng_state(0)
    for idx in (torch.tensor([3, 10]), torch.tensor([-1, 3])):
        low, high = int(idx.min()), int(idx.max())
        with pytest.raises(IndexError, match=rf"buffer_sample: idx holds rows outside the buffer's \[0, N=10\) "
                                             rf"\(from {low} to {high}\)"):
            buffer_sample(buf, idx, 0.5, state, backend=backend)
        with pytest.raises(IndexError, match=rf"buffer_write_: idx holds rows outside .* \(from {low} to {high}\)"):
            buffer_write_(buf, idx, torch.zeros(2, 3), backend=backend)
    assert torch.equal(buf, before) and state.tolist() == [0, 0]
    # the ends are rows
    buffer_write_(buf, torch.tensor([0, 9]), torch.ones(2, 3), backend=backend)
    assert buffer_sample(buf, torch.tensor([9, 0]), 0.0, state, backend=backend).eq(1).all()
    with pytest.raises(ValueError, match="buffer_sample: reset_prob must be a number"):
        buffer_sample(buf, torch.tensor([0]), True, state, backend=backend)  # a flag, not a probability of 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_rows_that_are_a_view_of_the_buffer_are_refused(backend):
    """buffer_write_(buf, idx, buf[:2]): the kernel's programs (one row each on a GPU) would read rows that others had
    already overwritten and write them again (rows 1 and 2 both became row 0); the reference's index_copy_ refuses it
    in torch's words. Both say to pass a copy; rows elsewhere in the same storage are written as any."""
    skip_unless_runnable("cpu", backend)
    storage = torch.arange(18.0).view(6, 3)
    buf = storage[:4]
    before = buf.clone()
    with pytest.raises(ValueError, match=r"x shares memory with the buffer .*pass x.clone\(\)"):
        buffer_write_(buf, torch.tensor([1, 2]), buf[:2], backend=backend)
    with pytest.raises(ValueError, match="x shares memory with the buffer"):
        # strided: elements 9 to 13 of the storage, the buffer's last row and the row after it
        buffer_write_(buf, torch.tensor([0, 2]), storage.as_strided((2, 3), (1, 2), 9), backend=backend)
    assert torch.equal(buf, before)
    buffer_write_(buf, torch.tensor([1, 2]), buf[:2].clone(), backend=backend)
    assert torch.equal(buf[1:3], before[:2])
    buffer_write_(buf, torch.tensor([0, 3]), storage[4:], backend=backend)  # the same storage, past the buffer's end
    assert torch.equal(buf[[0, 3]], storage[4:])


def test_indices_that_are_no_tensor_are_refused_with_what_to_pass():
    """A list of indices reached the registered op, whose schema error ("Expected a value of type 'Tensor' for
    argument 'idx'") said nothing of what to pass; None failed on a missing attribute."""
    buf, state = _buffer(10, (3,), "cpu"), new_rng_state(0)
    for idx, got in (([0, 1], "a list"), (None, "None")):
        with pytest.raises(TypeError, match=rf"buffer_sample: idx must be a torch.Tensor, got {got}: pass "
                                            r"torch.as_tensor\(idx, dtype=torch.int64"):
            buffer_sample(buf, idx, 0.5, state)
        with pytest.raises(TypeError, match=rf"buffer_write_: idx must be a torch.Tensor, got {got}"):
            buffer_write_(buf, idx, torch.ones(2, 3))
    with pytest.raises(TypeError, match="buffer_sample: fresh must be a torch.Tensor, got a list"):
        buffer_sample(buf, torch.tensor([0]), 0.5, state, fresh=[[0.0] * 3])
    assert state.tolist() == [0, 0]


def test_the_kernels_write_nothing_past_their_outputs(monkeypatch):
    """The gather's output is a view at the start of a longer storage whose tail holds a sentinel, and so is the
    buffer the scatter writes: a row or column mask one element too wide (o_b <= B, m_b for m_bd) stores past the end,
    where no comparison of the values looks (past the storage itself the interpreter aborted pytest: no test failed)."""
    skip_unless_runnable("cpu", "triton")
    from fastjem.kernels.buffer import buffer_sample_fwd, buffer_write_fwd

    tails = []

    def guarded(n, dtype=torch.float32):
        whole = torch.full((n + 64,), 7.0, dtype=dtype)
        tails.append(whole[n:])
        return whole[:n]

    class _Torch(types.ModuleType):
        def __getattr__(self, name):
            return getattr(torch, name)

    def empty(*size, dtype=None, device=None, **kwargs):
        size = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
        return guarded(math.prod(size), dtype).view(size).fill_(float("nan"))

    proxy = _Torch("torch_guarded_empty")
    proxy.empty = empty
    monkeypatch.setattr(buffer, "torch", proxy)
    B, N = 5, 7  # rows of 3: one program of 8 rows and 4 columns, 3 rows and 1 column masked off
    buf = guarded(N * 3).view(N, 3).copy_(_buffer(N, (3,), "cpu"))
    idx = torch.tensor([6, 0, 3, 6, 2])
    fresh = torch.rand(B, 3) - 5
    for reset_prob, rows_first, kwargs in ((0.0, False, {}), (1.0, False, {}), (0.5, True, {}),
                                           (1.0, False, {"fresh": fresh})):
        state, state_ref = new_rng_state(3), new_rng_state(3)
        x0 = buffer_sample_fwd(buf, idx, reset_prob, state, rows_first=rows_first, **kwargs)
        assert_close(x0, buffer_sample_ref(buf, idx, reset_prob, state_ref, **kwargs), 0, 0, "x0")
    # the indices are followed by a row of the buffer: taken as a sixth position, it would claim row 6 as its own
    buffer_write_fwd(buf, torch.tensor([6, 5, 4, 1, 0, 6])[:B], torch.zeros(B, 3))
    assert buf[[0, 1, 4, 5, 6]].eq(0).all()
    assert len(tails) == 5 and all(bool((t == 7.0).all()) for t in tails), [t[:4].tolist() for t in tails]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_row_whose_draw_equals_the_reset_probability_is_kept(backend):
    """A row resets iff its uniform is strictly below reset_prob (the module's spec, and what makes the reset fraction
    reset_prob): with reset_prob equal to one row's draw, that row is kept and exactly the rows of lower draws restart,
    in both orders of the gather's loads."""
    skip_unless_runnable("cpu", backend)
    from fastjem.kernels.buffer import buffer_sample_fwd
    from fastjem.kernels.rng import uniform_stream

    B = 9
    buf, idx = _buffer(B, (5,), "cpu"), torch.arange(B)
    u = uniform_stream(new_rng_state(6), 0, 4 * B).view(B, 4)[:, 0]  # the rows' reset draws
    row = int(u.argsort()[B // 2])  # the median draw: rows below it restart, rows above it are kept
    p = float(u[row])
    restart = (u < u[row]).tolist()
    runs = [lambda rows_first: buffer_sample(buf, idx, p, new_rng_state(6), backend=backend)]
    if backend == "triton":
        runs.append(lambda rows_first: buffer_sample_fwd(buf, idx, p, new_rng_state(6), rows_first=rows_first))
    for run in runs:
        for rows_first in (False, True):
            x0 = run(rows_first)
            assert x0.abs().le(1).all(1).tolist() == restart and torch.equal(x0[row], buf[row])


def test_launch_tiles_below_4_columns_or_not_powers_of_two_are_refused():
    """BLOCK_D < 4 would split a row's counters across blocks (a block draws whole counters of 4 values), and a tile
    that is no power of two no block shape: the benchmark's override is refused before anything is launched."""
    skip_unless_runnable("cpu", "triton")
    from fastjem.kernels.buffer import buffer_sample_fwd, buffer_write_fwd

    buf, idx = torch.zeros(6, 8), torch.tensor([0, 3])
    for tiles in ((1, 2), (1, 1), (0, 4), (3, 8), (2, 12)):
        state = new_rng_state(0)
        with pytest.raises(ValueError, match=r"tiles must be powers of two \(BLOCK_B >= 1, BLOCK_D >= 4\)"):
            buffer_sample_fwd(buf, idx, 0.5, state, tiles=tiles)
        with pytest.raises(ValueError, match="tiles must be powers of two"):
            buffer_write_fwd(buf, idx, torch.ones(2, 8), tiles=tiles)
        assert state.tolist() == [0, 0] and not buf.any()

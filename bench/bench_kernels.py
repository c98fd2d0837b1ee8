"""Benchmarks of fastjem.kernels against the eager PyTorch sequences they replace.

Run explicitly: ``pytest bench/bench_kernels.py`` or ``python bench/bench_kernels.py`` (not collected by the
default test run; pytest's options follow either); the report files go to
bench/results/, or to the folder FASTJEM_BENCH_OUT names (a trial run that should not enter the README's tables).

- CPU: pytest-benchmark times the reference backend (what the library runs on CPU) against the
  eager sequence, at reduced sizes and few rounds (GB/s in each benchmark's extra_info), and
  ``test_bench_cpu_report`` writes the same comparison, with achieved GB/s, to
  ``bench/results/kernels-<date and time>-<cpu>.json``.
- CUDA: at WRN batch sizes (x [64, 3, 32, 32], buffer [10000, 3, 32, 32], logits [192, 10] and
  [64, 1000]; at batch 64 also ``sgld_step_`` and ``buffer_sample``'s kernel without the add that advances
  the RNG state's offset, the ``advance=0`` rows) and at sizes beyond the L2 cache (x [4096, 3, 32, 32], 8192
  buffer rows), each op and the eager sequence it replaces is timed two ways: called from Python
  (``triton.testing.do_bench``, L2 flushed: launch and dispatch cost included) and replayed from a CUDA graph
  (``do_bench_cudagraph``: device time per call, as the ops run inside fastjem's SGLD and iteration
  graphs). Reports achieved GB/s (bytes the op must move / time) and the fraction of the GPU's HBM
  bandwidth, beside the floor: a plain copy of the same bytes, replayed alike (on a CPU, called alike), which
  small ops meet long before the bandwidth; the host cost of one call with and without the torch.library
  dispatch, and writes ``bench/results/kernels-<date and time>-<device>.json``.

Every op is checked against its reference first; a benchmark whose check fails reports nothing.
"""

import functools
import json
import os
import pathlib
import sys
from collections.abc import Callable
from dataclasses import dataclass

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from interrupted import quiet_while_importing  # noqa: E402

quiet_while_importing(__name__)  # Ctrl-C while torch imports: run_script's line, not a traceback

import fastjem.kernels as kernels  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from env_info import RESULTS, claim_result, git_state, now_utc, result_name, run_script  # noqa: E402
from fastjem.kernels import energy  # noqa: E402
from fastjem.kernels.buffer import buffer_sample_fwd, buffer_write_fwd  # noqa: E402
from fastjem.kernels.rng import new_rng_state  # noqa: E402

CUDA = torch.cuda.is_available()
# Where and at what sizes the CUDA benchmarks run: tests/test_bench.py dry-runs them on a CPU (the kernels under the
# interpreter, small sizes, fake timers) so that a mistake in them does not cost a GPU session its kernels stage.
GPU = "cuda"
REPORT_FULL = True  # the report's cases: WRN batch sizes and beyond the L2 cache
SWEEP_SGLD_ROWS = (64, 4096)  # rows of 3x32x32 for sgld_step_'s launch sweep
SWEEP_BUFFER = (10000, (64, 8192))  # buffer rows, and batches gathered and scattered, for the buffer ops' sweep
# HBM bandwidth in bytes/s, matched against the device name (first match wins)
PEAK_BANDWIDTH = {"H200": 4.8e12, "H100 PCIe": 2.0e12, "H100": 3.35e12}
ALPHA, SIGMA, RESET_PROB = 1.0, 0.01, 0.05


@dataclass
class Case:
    name: str
    fused: Callable[[], object]  # the op on the chosen backend
    eager: Callable[[], object]  # the eager PyTorch sequence it replaces
    bytes_moved: int  # minimal bytes the fused op reads + writes
    check: Callable[[], None]  # raises AssertionError unless fused (and eager) compute what the reference does


def _lse_case(B: int, K: int, dtype: torch.dtype, device: str, backend: str) -> Case:
    logits = torch.randn(B, K, device=device).to(dtype) * 3
    upstream = torch.randn(B, device=device)

    def fused():
        if backend == "triton":
            e, row_max, row_sumexp = energy.lse_energy_fwd(logits)
            return e, energy.lse_energy_bwd(upstream, logits, None, row_max, row_sumexp)
        e, row_max, row_sumexp = energy._fwd_torch(logits, None)
        return e, energy._bwd_torch(upstream, logits, None, row_max, row_sumexp)

    def eager():
        # logsumexp forward, then the separate softmax backward that autograd would run
        x = logits.float()
        e = -torch.logsumexp(x, dim=1)
        return e, (-torch.softmax(x, dim=1) * upstream[:, None]).to(dtype)

    def check():
        x = logits.detach().clone().requires_grad_(True)
        e_ref = kernels.lse_energy_ref(x)
        (g_ref,) = torch.autograd.grad(e_ref, x, upstream)
        tol = 1e-5 if dtype == torch.float32 else 2e-2
        for e, g in (fused(), eager()):
            torch.testing.assert_close(e, e_ref.detach(), atol=1e-4, rtol=1e-5)
            torch.testing.assert_close(g.float(), g_ref.float(), atol=tol, rtol=tol)

    es = logits.element_size()
    # forward reads logits, writes E, max, sum; backward reads logits, upstream, max, sum, writes the gradient
    moved = 2 * B * K * es + 3 * B * 4 + B * K * es + 3 * B * 4
    return Case(f"lse_energy_fwd_bwd[{B}x{K},{str(dtype)[6:]}]", fused, eager, moved, check)


def _sgld_case(shape: tuple[int, ...], device: str, backend: str, compiled: bool = False,
               in_loop: bool = False) -> Case:
    """``compiled``: ``sgld_step_compiled_``, the reference compiled by inductor (what a CPU engine that compiles its
    SGLD step runs). ``in_loop``: the op as ``SGLD.sample`` calls it, ``advance=0`` (one kernel; the loop moves the
    state once per chain)."""
    x = torch.randn(shape, device=device)
    grad = torch.randn(shape, device=device)
    state = new_rng_state(0, device)
    step = kernels.sgld_step_compiled_ if compiled else functools.partial(kernels.sgld_step_, backend=backend)
    if in_loop:
        step = functools.partial(step, advance=0)

    def fused():
        step(x, grad, ALPHA, SIGMA, state)

    def eager():
        x.add_(ALPHA * grad).add_(SIGMA * torch.randn_like(x))

    def check():  # on the tensors timed, put back after
        x0, s0 = x.clone(), state.clone()
        x_ref, s_ref = x.clone(), state.clone()
        kernels.sgld_step_ref(x_ref, grad, ALPHA, SIGMA, s_ref, advance=0 if in_loop else None)
        fused()
        torch.testing.assert_close(x, x_ref, atol=1e-4, rtol=1e-5)
        assert torch.equal(state, s_ref)
        # the eager sequence: the same drift, and noise of scale SIGMA
        x.copy_(x0)
        eager()
        z = (x - x0 - ALPHA * grad) / SIGMA
        assert abs(float(z.mean())) < 0.1 and abs(float(z.std()) - 1) < 0.1, (float(z.mean()), float(z.std()))
        x.copy_(x0)
        state.copy_(s0)

    name = "sgld_step_compiled_" if compiled else "sgld_step_"
    return Case(f"{name}[{'x'.join(map(str, shape))}{',advance=0' if in_loop else ''}]", fused, eager,
                3 * x.numel() * 4, check)


def _scatter_eager(buf: torch.Tensor, idx: torch.Tensor, rows: torch.Tensor) -> None:
    """The eager sequence ``buffer_write_`` replaces (the reference engine's write)."""
    buf[idx] = rows


def _buffer_cases(n: int, B: int, device: str, backend: str, gather_alone: bool = False) -> list[Case]:
    """``gather_alone``: also ``buffer_sample``'s kernel alone (``buffer_sample_fwd(advance=False)``, Triton only):
    the op then adds its counters to the state's offset, a second kernel, where the copy it is set beside is one
    (as ``sgld_step_``'s advance=0 row)."""
    buf = torch.rand(n, 3, 32, 32, device=device) * 2 - 1
    idx = torch.randint(0, n, (B,), device=device)
    rows = torch.randn(B, 3, 32, 32, device=device)
    state = new_rng_state(0, device)
    row_bytes = 3 * 32 * 32 * 4

    def sample():
        return kernels.buffer_sample(buf, idx, RESET_PROB, state, backend=backend)

    def sample_eager():
        x = buf[idx]
        reset = torch.rand(B, device=device) < RESET_PROB
        return torch.where(reset[:, None, None, None], torch.rand_like(x) * 2 - 1, x)

    def sample_check():
        s0, s_ref = state.clone(), state.clone()
        out = kernels.buffer_sample(buf, idx, 0.5, s0, backend=backend)  # half the rows reset
        assert torch.equal(out, kernels.buffer_sample_ref(buf, idx, 0.5, s_ref)) and torch.equal(s0, s_ref)
        s_ref = state.clone()
        assert torch.equal(sample(), kernels.buffer_sample_ref(buf, idx, RESET_PROB, s_ref))  # what is timed
        assert torch.equal(state, s_ref)
        # the eager sequence: buffer rows, a few reset (of 16 rows, half or more reset: p < 1e-9 at 5%)
        kept = (sample_eager() == buf[idx]).flatten(1).all(1)
        assert 2 * int(kept.sum()) > B, int(kept.sum())

    def write():
        kernels.buffer_write_(buf, idx, rows, backend=backend)

    def write_eager():
        _scatter_eager(buf, idx, rows)

    def write_check():  # fused and eager, each on the buffer timed from the same start, put back after
        before = buf.clone()
        b_ref = buf.clone()
        kernels.buffer_write_ref(b_ref, idx, rows)
        # the op is the reference's to the bit: a row written more than once (indices repeat at large B) holds the
        # last of its rows, whole
        write()
        assert torch.equal(buf, b_ref)
        # the eager index_put_ leaves such a row unspecified, and on a GPU may mix its rows element by element
        # (2026-12-04, H200, B = 8192): only the rows untouched or written once are the reference's
        once = torch.bincount(idx, minlength=n) <= 1
        buf.copy_(before)
        write_eager()
        assert torch.equal(buf[once], b_ref[once])
        buf.copy_(before)

    def gather():
        return buffer_sample_fwd(buf, idx, RESET_PROB, state, advance=False)

    def gather_check():
        before = state.clone()
        half = buffer_sample_fwd(buf, idx, 0.5, state, advance=False)  # half the rows reset
        assert torch.equal(half, kernels.buffer_sample_ref(buf, idx, 0.5, state.clone()))
        assert torch.equal(gather(), kernels.buffer_sample_ref(buf, idx, RESET_PROB, state.clone()))  # what is timed
        assert torch.equal(state, before)

    # gather: read B rows (fewer with resets; counted in full) + write B rows; scatter: read + write B rows
    moved = 2 * B * row_bytes + B * 8
    cases = [
        Case(f"buffer_sample[{n}x3x32x32,B={B}]", sample, sample_eager, moved, sample_check),
        Case(f"buffer_write_[{n}x3x32x32,B={B}]", write, write_eager, moved, write_check),
    ]
    if gather_alone:
        cases.append(Case(f"buffer_sample[{n}x3x32x32,B={B},advance=0]", gather, sample_eager, moved, gather_check))
    return cases


def _cases(device: str, backend: str, full: bool) -> list[Case]:
    lse_dtype = torch.bfloat16 if device == "cuda" else torch.float32
    cases = [
        _lse_case(64 * 3, 10, lse_dtype, device, backend),
        _lse_case(64, 1000, lse_dtype, device, backend),
        _sgld_case((64, 3, 32, 32) if full else (16, 3, 32, 32), device, backend),
        # at batch 64 on the GPU, also buffer_sample's kernel alone (the reference has no kernel)
        *_buffer_cases(10000 if full else 1000, 64 if full else 16, device, backend,
                       gather_alone=full and backend == "triton"),
    ]
    if device == "cpu":
        cases.append(_sgld_case((16, 3, 32, 32), device, backend, compiled=True))
    if full:
        # a step of SGLD.sample's loop: one kernel, where the op alone also adds to the state's offset
        cases.append(_sgld_case((64, 3, 32, 32), device, backend, in_loop=True))
        # beyond the L2 cache (50-60 MB on Hopper): what the kernels do with HBM when the size allows
        cases += [_sgld_case((4096, 3, 32, 32), device, backend), *_buffer_cases(10000, 8192, device, backend)]
    return cases


# --------------------------------------------------------------------------------------------
# CPU: pytest-benchmark, reference backend vs eager
# --------------------------------------------------------------------------------------------

CPU_CASES = [c.name for c in _cases("cpu", "reference", full=False)]


@pytest.mark.parametrize("impl", ["fused_reference", "eager"])
@pytest.mark.parametrize("case_name", CPU_CASES)
def test_bench_cpu(benchmark, case_name, impl):
    case = {c.name: c for c in _cases("cpu", "reference", full=False)}[case_name]
    # correctness gate: no number is reported for an op that disagrees with its reference
    case.check()
    fn = case.fused if impl == "fused_reference" else case.eager
    benchmark.group = case_name
    benchmark.extra_info["bytes_moved"] = case.bytes_moved
    benchmark.pedantic(fn, rounds=5, iterations=1, warmup_rounds=1)
    if benchmark.stats is not None:  # None under --benchmark-disable (each function runs once, untimed)
        benchmark.extra_info["GBps"] = case.bytes_moved / benchmark.stats.stats.median / 1e9


def _write_report(kind: str, device_name: str, report: dict) -> pathlib.Path:
    """``bench/results/<kind>-<YYYY-mm-ddTHHMMSS>-<device>.json`` (UTC; two runs on one day keep both files)."""
    # FASTJEM_BENCH_OUT: another folder (a check of the benchmark that should not enter the README's tables)
    folder = pathlib.Path(os.environ.get("FASTJEM_BENCH_OUT", RESULTS))
    folder.mkdir(parents=True, exist_ok=True)
    # a file of its own: a run in the same second keeps its file
    return claim_result(json.dumps(report, indent=2, default=str) + "\n", folder, result_name(kind, device_name,
                                                                                              now_utc()))


def _copy_of(bytes_moved: int, device: str) -> Callable[[], object]:
    """A plain copy moving ``bytes_moved`` (half read, half written): the time any op moving those bytes needs at
    least on this device, launch and all, which small ops meet long before the memory's bandwidth."""
    src = torch.zeros(max(1, bytes_moved // 8), device=device)
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def _cpu_median_s(fn: Callable[[], object], reps: int = 30) -> float:
    """Median seconds of one call, after three warm-up calls."""
    import statistics

    from env_info import timed

    cpu = torch.device("cpu")
    timed(fn, 3, cpu)
    return statistics.median(timed(fn, 1, cpu) for _ in range(reps))


@pytest.mark.skipif(CUDA, reason="the CUDA report covers a GPU machine")
def test_bench_cpu_report():
    """What the library runs on a CPU (the reference backend) against the eager sequence: time and GB/s."""
    from fastjem.engine import cpu_model

    name = cpu_model()
    results = []
    for case in _cases("cpu", "reference", full=False):
        case.check()  # refuses to time an op that disagrees with its reference
        # alternated so that drift of the machine's speed does not favour one
        fused, eager, copy = [], [], []
        floor = _copy_of(case.bytes_moved, "cpu")
        for _ in range(3):
            fused.append(_cpu_median_s(case.fused, 10))
            eager.append(_cpu_median_s(case.eager, 10))
            copy.append(_cpu_median_s(floor, 10))
        s_fused, s_eager, s_copy = sorted(fused)[1], sorted(eager)[1], sorted(copy)[1]
        results.append({"op": case.name, "bytes_moved": case.bytes_moved, "fused_ms": s_fused * 1e3,
                        "eager_ms": s_eager * 1e3, "speedup_vs_eager": s_eager / s_fused,
                        "fused_GBps": case.bytes_moved / s_fused / 1e9, "fraction_of_peak_bandwidth": None,
                        "copy_ms": s_copy * 1e3})
    report = {
        "device": name, "backend": "reference (the PyTorch ops the library runs on a CPU)",
        "threads": torch.get_num_threads(), "peak_bandwidth_Bps": None, "torch": torch.__version__,
        "git_sha": git_state()["sha"], "date": now_utc().isoformat(timespec="seconds"),
        "timing": "time.perf_counter, median of 10 calls after 3 warm-up calls, fused and eager alternated three "
                  "times, the middle of the three medians",
        "results": results,
    }
    path = _write_report("kernels", name, report)
    print(f"\n{name} ({torch.get_num_threads()} threads, reference backend) -> {path}")
    for r in results:
        print(f"{r['op']:<40} fused {r['fused_ms'] * 1e3:8.1f} us  eager {r['eager_ms'] * 1e3:8.1f} us"
              f"  x{r['speedup_vs_eager']:.2f}  {r['fused_GBps']:6.2f} GB/s  copy {r['copy_ms'] * 1e3:8.1f} us")


# --------------------------------------------------------------------------------------------
# CUDA: do_bench, GB/s, JSON report
# --------------------------------------------------------------------------------------------


def _peak_bandwidth(device_name: str) -> float | None:
    for key, peak in PEAK_BANDWIDTH.items():
        if key in device_name:
            return peak
    return None


def _host_us(fn: Callable[[], object], n: int = 2000, warmup: int = 50) -> float:
    """Host microseconds per call over ``n`` calls, after ``warmup`` untimed ones (the GPU runs behind: launches are
    asynchronous)."""
    import time

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    us = (time.perf_counter() - t0) / n * 1e6
    torch.cuda.synchronize()
    return us


def _dispatch_cost() -> dict:
    """Host cost of one small sgld_step_ call: the public op (direct in eager) vs the registered torch.library op."""
    x, g = torch.zeros(64, 3, 32, 32, device=GPU), torch.zeros(64, 3, 32, 32, device=GPU)
    state = new_rng_state(0, GPU)
    direct = _host_us(lambda: kernels.sgld_step_(x, g, ALPHA, SIGMA, state, backend="triton"))
    registered = _host_us(lambda: torch.ops.fastjem.sgld_step_(x, g, ALPHA, SIGMA, state, "triton"))
    return {"op": "sgld_step_[64x3x32x32]", "host_us_public_op": direct, "host_us_registered_op": registered}


@pytest.mark.skipif(not CUDA, reason="needs CUDA")
def test_bench_cuda_report():
    import triton
    from triton.testing import do_bench, do_bench_cudagraph

    name = torch.cuda.get_device_name()
    peak = _peak_bandwidth(name)
    results = []
    for case in _cases(GPU, "triton", full=REPORT_FULL):
        case.check()  # refuses to time an op that disagrees with its reference
        # fused and eager alternate in one process; do_bench warms up (and compiles) before timing
        ms_fused = do_bench(case.fused, warmup=25, rep=100, return_mode="median")
        ms_eager = do_bench(case.eager, warmup=25, rep=100, return_mode="median")
        # replayed from a CUDA graph (no Python, no launch gaps; L2 not flushed between calls)
        ms_fused_graph = do_bench_cudagraph(case.fused, rep=50, return_mode="median")
        ms_eager_graph = do_bench_cudagraph(case.eager, rep=50, return_mode="median")
        # the floor: a plain copy of the same bytes, replayed alike
        ms_copy_graph = do_bench_cudagraph(_copy_of(case.bytes_moved, GPU), rep=50, return_mode="median")
        gbps = case.bytes_moved / (ms_fused * 1e-3) / 1e9
        gbps_graph = case.bytes_moved / (ms_fused_graph * 1e-3) / 1e9
        gbps_copy = case.bytes_moved / (ms_copy_graph * 1e-3) / 1e9
        results.append(
            {
                "op": case.name,
                "bytes_moved": case.bytes_moved,
                "fused_ms": ms_fused,
                "eager_ms": ms_eager,
                "speedup_vs_eager": ms_eager / ms_fused,
                "fused_GBps": gbps,
                "fraction_of_peak_bandwidth": gbps * 1e9 / peak if peak else None,
                "fused_graph_ms": ms_fused_graph,
                "eager_graph_ms": ms_eager_graph,
                "graph_speedup_vs_eager": ms_eager_graph / ms_fused_graph,
                "fused_graph_GBps": gbps_graph,
                "graph_fraction_of_peak_bandwidth": gbps_graph * 1e9 / peak if peak else None,
                "copy_graph_ms": ms_copy_graph,
                "copy_graph_fraction_of_peak_bandwidth": gbps_copy * 1e9 / peak if peak else None,
            }
        )
    report = {
        "device": name,
        "peak_bandwidth_Bps": peak,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "git_sha": git_state()["sha"],
        "date": now_utc().isoformat(timespec="seconds"),
        "timing": "fused_ms/eager_ms: triton.testing.do_bench median (called from Python, L2 flushed), warm-up "
                  "excluded; *_graph_ms: do_bench_cudagraph median (calls replayed from one CUDA graph, L2 not "
                  "flushed: below ~50 MB the data is L2-resident, as in SGLD where x and its gradient were just "
                  "written); copy_graph_ms: the floor, a plain device copy moving the op's bytes (half read, half "
                  "written), replayed alike",
        "dispatch": _dispatch_cost(),
        "results": results,
    }
    path = _write_report("kernels", name, report)
    print(f"\n{name}  (peak {peak / 1e12 if peak else float('nan'):.2f} TB/s)  -> {path}")
    for r in results:
        frac, gfrac = r["fraction_of_peak_bandwidth"], r["graph_fraction_of_peak_bandwidth"]
        print(
            f"{r['op']:<40} fused {r['fused_ms'] * 1e3:8.1f} us  eager {r['eager_ms'] * 1e3:8.1f} us"
            f"  x{r['speedup_vs_eager']:.2f}  {r['fused_GBps']:8.1f} GB/s  {'' if frac is None else f'{frac:.1%}'}"
            f"  | graph: fused {r['fused_graph_ms'] * 1e3:8.2f} us  eager {r['eager_graph_ms'] * 1e3:8.2f} us"
            f"  {r['fused_graph_GBps']:8.1f} GB/s  {'' if gfrac is None else f'{gfrac:.1%}'}"
            f"  copy {r['copy_graph_ms'] * 1e3:8.2f} us"
        )
    d = report["dispatch"]
    print(f"host cost of one {d['op']} call: public op {d['host_us_public_op']:.1f} us, registered torch.library op "
          f"{d['host_us_registered_op']:.1f} us")


# --------------------------------------------------------------------------------------------
# CUDA: launch-configuration sweep (block sizes, tiles, warps) for the memory-bound ops
# --------------------------------------------------------------------------------------------


def _sweep_rows(op: str, size: str, bytes_moved: int, configs: list, run, check, peak: float | None) -> list[dict]:
    from triton.testing import do_bench_cudagraph

    rows = []
    for cfg in configs:
        check(cfg)  # every configuration must give the default's numbers before it is timed
        ms = do_bench_cudagraph(lambda cfg=cfg: run(cfg), rep=20, return_mode="median")
        gbps = bytes_moved / (ms * 1e-3) / 1e9
        rows.append({"op": op, "size": size, "config": cfg, "graph_us": ms * 1e3, "GBps": gbps,
                     "fraction_of_peak_bandwidth": gbps * 1e9 / peak if peak else None})
    default = next(r for r in rows if r["config"] == "default")
    for r in rows:
        r["speedup_vs_default"] = default["graph_us"] / r["graph_us"]
    return rows


# sgld_step_'s swept launches: (BLOCK, num_warps)
SGLD_CONFIGS = ["default"] + [(blk, w) for blk in (256, 512, 1024, 2048, 4096) for w in (2, 4, 8)]


def _sgld_launch(cfg) -> dict:
    """sgld_step_fwd's launch options for a swept configuration: "default" (the launcher's own) or (BLOCK,
    num_warps)."""
    return {} if cfg == "default" else {"block": cfg[0], "num_warps": cfg[1]}


# the buffer ops' swept launches: ((BLOCK_B, BLOCK_D), num_warps); buffer_sample's also with every drawn row
# requested before the reset decisions (rows-first)
WRITE_CONFIGS = ["default"] + [((bb, bd), w) for bd in (512, 1024, 2048, 4096) for bb in (1, 2, 4) for w in (4, 8)]
SAMPLE_CONFIGS = WRITE_CONFIGS + ["rows-first"] + \
    [(tiles, w, "rows-first") for tiles in ((1, 1024), (2, 1024), (1, 2048)) for w in (4, 8)]
# buffer_sample_fwd's option for each order of the gather's loads, and how the summary names it
ORDERS = {"rows-first": ("rows_first", "every drawn row requested first")}


def _buffer_launch(cfg) -> dict:
    """buffer_sample_fwd's (buffer_write_fwd's) launch options for a swept configuration: "default" (the launcher's
    own), an order alone ("rows-first": the launcher's own tiles and warps), (tiles, num_warps) or
    (tiles, num_warps, order)."""
    if cfg == "default":
        return {}
    if cfg in ORDERS:
        return {ORDERS[cfg][0]: True}
    return {"tiles": cfg[0], "num_warps": cfg[1], **{ORDERS[order][0]: True for order in cfg[2:]}}


@pytest.mark.skipif(not CUDA, reason="needs CUDA")
def test_bench_cuda_launch_configs():
    """Replayed from a CUDA graph (as the ops run in training), each launch configuration, checked first."""
    import triton
    from fastjem.kernels.sgld import sgld_step_fwd

    name = torch.cuda.get_device_name()
    peak = _peak_bandwidth(name)
    rows = []
    for b in SWEEP_SGLD_ROWS:
        x0 = torch.randn(b, 3, 32, 32, device=GPU)
        grad = torch.randn_like(x0)
        x, state = x0.clone(), new_rng_state(0, GPU)

        def run(cfg, x=x, grad=grad, state=state):
            sgld_step_fwd(x, grad, ALPHA, SIGMA, state, **_sgld_launch(cfg))

        def check(cfg, x0=x0, grad=grad):
            xa, sa, xb, sb = x0.clone(), new_rng_state(1, GPU), x0.clone(), new_rng_state(1, GPU)
            sgld_step_fwd(xa, grad, ALPHA, SIGMA, sa)
            sgld_step_fwd(xb, grad, ALPHA, SIGMA, sb, **_sgld_launch(cfg))
            assert torch.equal(xa, xb) and torch.equal(sa, sb), cfg

        rows += _sweep_rows("sgld_step_", f"{b}x3x32x32", 3 * x0.numel() * 4, SGLD_CONFIGS, run, check, peak)
    (n, batches), row_bytes = SWEEP_BUFFER, 3 * 32 * 32 * 4
    buf = torch.rand(n, 3, 32, 32, device=GPU) * 2 - 1
    for b in batches:
        idx = torch.randint(0, n, (b,), device=GPU)
        uniq = idx.unique()
        rows_in = torch.randn(b, 3, 32, 32, device=GPU)
        state = new_rng_state(0, GPU)

        def run_sample(cfg, idx=idx, state=state):
            buffer_sample_fwd(buf, idx, RESET_PROB, state, **_buffer_launch(cfg))

        def check_sample(cfg, idx=idx):
            sa, sb = new_rng_state(1, GPU), new_rng_state(1, GPU)
            a = buffer_sample_fwd(buf, idx, 0.5, sa)
            b_ = buffer_sample_fwd(buf, idx, 0.5, sb, **_buffer_launch(cfg))
            assert torch.equal(a, b_) and torch.equal(sa, sb), cfg

        def run_write(cfg, idx=idx, rows_in=rows_in):
            buffer_write_fwd(buf, idx, rows_in, **_buffer_launch(cfg))

        def check_write(cfg, uniq=uniq, rows_in=rows_in):
            a, b_ = buf.clone(), buf.clone()
            buffer_write_fwd(a, uniq, rows_in[: uniq.numel()])
            buffer_write_fwd(b_, uniq, rows_in[: uniq.numel()], **_buffer_launch(cfg))
            assert torch.equal(a, b_), cfg

        moved = 2 * b * row_bytes + b * 8
        rows += _sweep_rows("buffer_sample", f"{n}x3x32x32,B={b}", moved, SAMPLE_CONFIGS, run_sample, check_sample,
                            peak)
        rows += _sweep_rows("buffer_write_", f"{n}x3x32x32,B={b}", moved, WRITE_CONFIGS, run_write, check_write, peak)
    best = {}
    for r in rows:
        key = (r["op"], r["size"])
        if key not in best or r["graph_us"] < best[key]["graph_us"]:
            best[key] = r
    report = {
        "device": name, "peak_bandwidth_Bps": peak, "torch": torch.__version__, "triton": triton.__version__,
        "git_sha": git_state()["sha"], "date": now_utc().isoformat(timespec="seconds"),
        "timing": "do_bench_cudagraph median: calls replayed from one CUDA graph (L2 not flushed)",
        "configs": "sgld_step_: (BLOCK, num_warps); buffer ops: ((BLOCK_B, BLOCK_D), num_warps[, rows-first: "
                   "buffer_sample's every drawn row requested before the reset decisions]); default = the "
                   "launcher's own choice",
        "results": rows, "best": list(best.values()),
    }
    path = _write_report("kernel-configs", name, report)
    print(f"\nlaunch configurations on {name} -> {path}")
    for r in best.values():
        default = next(x for x in rows if (x["op"], x["size"], x["config"]) == (r["op"], r["size"], "default"))
        frac = r["fraction_of_peak_bandwidth"]
        print(f"{r['op']:<14} {r['size']:<22} default {default['graph_us']:8.2f} us | best {r['config']} "
              f"{r['graph_us']:8.2f} us  {r['GBps']:7.0f} GB/s  {'' if frac is None else f'{frac:.0%}'}")
        for order, (_, what) in ORDERS.items():
            first = next((x for x in rows if (x["op"], x["size"], x["config"]) == (r["op"], r["size"], order)), None)
            if first is not None:
                print(f"{'':<14} {'':<22} the default's launch with {what}: "
                      f"{first['graph_us']:8.2f} us (x{first['speedup_vs_default']:.3f})")


def main(argv=None) -> int:
    """``python bench/bench_kernels.py [pytest's options]``: pytest runs the benchmarks. pytest ends a Ctrl-C with its
    own summary and status 2, as it ends a collection error: this plugin tells them apart, so that a Ctrl-C ends as
    every bench script's does (``run_script``)."""
    interrupted = []

    class CtrlC:
        def pytest_keyboard_interrupt(self, excinfo):
            interrupted.append(excinfo.errisinstance(KeyboardInterrupt))  # not pytest.exit()'s

    status = pytest.main([__file__, *(sys.argv[1:] if argv is None else argv)], plugins=[CtrlC()])
    if any(interrupted):
        raise KeyboardInterrupt
    return status


if __name__ == "__main__":
    # ``python bench/bench_kernels.py`` imported the module and ran nothing, silently: pytest runs the benchmarks
    sys.exit(run_script(main))

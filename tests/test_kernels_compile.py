"""Every Triton kernel compiles for a Hopper GPU (sm_90, to a cubin by the ptxas that ships with triton), here on a
machine without one. The default tier runs the kernels under the interpreter, which takes code the compiler
refuses (a Python builtin on a tensor, a value that is a Python int only there); a GPU session is too short to
find that out."""

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")

# (kernel, the launch's constexprs): each variant the launchers can compile on a GPU, at WRN sizes
# lse fwd/bwd x dtypes x K x labels; sgld grads, gather fresh x orders, scatter x dtypes
VARIANTS = 2 * 3 * 2 * 2 + 2 + 2 * 2 + 2
# the integer arguments of a launch at WRN sizes (batch 64 of 3x32x32, a buffer of 10000; the energy's K, 10 or 1000,
# and its row stride are not multiples of 16)
WRN_INTS = {"n": 64 * 3 * 32 * 32, "base": 0, "N": 10000, "B": 64, "D": 3 * 32 * 32}


def compile_all(out_dir: str) -> list[dict]:
    """Compiles each kernel variant for sm_90 (run with TRITON_INTERPRET unset: the interpreter's kernels are not
    compilable objects) into ``out_dir``/<n>.cubin; returns one row per variant."""
    from fastjem.kernels import buffer, energy, sgld
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    rows = []

    def build(fn, signature: dict, constexprs: dict) -> None:
        # specialised as a launch at WRN sizes specialises it: triton's JIT marks every pointer (torch's allocations
        # are aligned) and every integer argument that is a multiple of 16 as divisible by 16, which lets it vectorise
        attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(signature)
                 if signature[name].startswith("*") or WRN_INTS.get(name, 1) % 16 == 0}
        signature = {**signature, **{name: "constexpr" for name in constexprs}}
        kernel = triton.compile(ASTSource(fn, signature, constexprs=constexprs, attrs=attrs),
                                target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
        path = Path(out_dir) / f"{len(rows)}.cubin"
        path.write_bytes(kernel.asm["cubin"])
        rows.append({"kernel": fn.__name__, "signature": signature, "constexprs": constexprs, "cubin": str(path)})

    for dtype in ("fp32", "bf16", "fp16"):
        for k in (10, 1000):
            block_b, block_k = energy._tiles(64, k)  # the GPU's tiles: the interpreter is off here
            for labels in (False, True):
                tiles = {"HAS_LABELS": labels, "BLOCK_B": block_b, "BLOCK_K": block_k}
                build(energy._lse_energy_fwd_kernel,
                      {"p_logits": f"*{dtype}", "p_labels": "*i64", "p_energy": "*fp32", "p_max": "*fp32",
                       "p_sumexp": "*fp32", "B": "i32", "K": "i32", "stride_b": "i32"}, tiles)
                build(energy._lse_energy_bwd_kernel,
                      {"p_grad_energy": "*fp32", "p_logits": f"*{dtype}", "p_labels": "*i64", "p_max": "*fp32",
                       "p_sumexp": "*fp32", "p_grad_logits": f"*{dtype}", "B": "i32", "K": "i32", "stride_b": "i32"},
                      tiles)
    for grad in ("fp32", "bf16"):
        build(sgld._sgld_step_kernel,
              {"p_x": "*fp32", "p_grad": f"*{grad}", "p_rng": "*i64", "n": "i32", "base": "i64", "alpha": "fp32",
               "sigma": "fp32"}, {"BLOCK": 512})
    block_b, block_d = buffer._tiles(64, 3 * 32 * 32)
    for fresh in (False, True):
        for rows_first in (False, True):
            build(buffer._buffer_sample_kernel,
                  {"p_buffer": "*fp32", "p_idx": "*i64", "p_out": "*fp32", "p_rng": "*i64", "p_fresh": "*fp32",
                   "N": "i32", "B": "i32", "D": "i32", "reset_prob": "fp32"},
                  {"HAS_FRESH": fresh, "BLOCK_B": block_b, "BLOCK_D": block_d, "ROWS_FIRST": rows_first})
    for x in ("fp32", "bf16"):
        build(buffer._buffer_write_kernel,
              {"p_buffer": "*fp32", "p_idx": "*i64", "p_x": f"*{x}", "N": "i32", "B": "i32", "D": "i32"},
              {"BLOCK_B": block_b, "BLOCK_D": block_d})
    return rows


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> list[dict]:
    try:
        from triton.backends.compiler import GPUTarget  # noqa: F401
        from triton.compiler import ASTSource  # noqa: F401
    except ImportError as err:
        pytest.skip(f"triton {triton.__version__} has no ahead-of-time compile API: {err}")
    out = tmp_path_factory.mktemp("sm90")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(out / "triton-cache")  # compiled now, not taken from an earlier run's cache
    here = Path(__file__).resolve().parent
    code = (f"import json, sys; sys.path.insert(0, {str(here)!r}); import test_kernels_compile as t; "
            f"print(json.dumps(t.compile_all({str(out)!r})))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_kernel_compiles_for_hopper(compiled):
    rows = compiled
    assert len(rows) == VARIANTS
    assert all(Path(r["cubin"]).stat().st_size > 0 for r in rows)
    kernels = {r["kernel"] for r in rows}
    assert kernels == {"_lse_energy_fwd_kernel", "_lse_energy_bwd_kernel", "_sgld_step_kernel",
                       "_buffer_sample_kernel", "_buffer_write_kernel"}
    # the GPU's tiles, not the interpreter's: a logits row of 1000 in one 1024-wide block, a buffer row in three
    assert {(r["constexprs"].get("BLOCK_K"), r["constexprs"].get("BLOCK_D")) for r in rows} >= {(1024, None),
                                                                                               (None, 1024)}


# Philox's two round multipliers (0xD2511F53, 0xCD9E8D57), as the disassembly writes the 32-bit immediates
PHILOX = ("-0x2daee0ad", "-0x326172a9", "0xd2511f53", "0xcd9e8d57")


def disassembled(row: dict) -> str:
    """A compiled variant's machine code (SASS), lower case, by the nvdisasm that ships with triton."""
    nvdisasm = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "nvdisasm"
    if not nvdisasm.exists():
        pytest.skip(f"no nvdisasm in triton {triton.__version__}")
    return _nvdisasm(str(nvdisasm), row["cubin"])


@functools.cache
def _nvdisasm(nvdisasm: str, cubin: str) -> str:
    # several tests read the same variants
    return subprocess.run([nvdisasm, "-c", cubin], capture_output=True, text=True, check=True).stdout.lower()


def test_sgld_step_issues_its_loads_before_the_draws(compiled):
    """In the machine code of a launch at WRN sizes, sgld_step_ requests x and grad before every Philox round of its
    noise: a warp computes while they arrive (ptxas schedules it so whatever the source's order)."""
    rows = [r for r in compiled if r["kernel"] == "_sgld_step_kernel"]
    assert len(rows) == 2
    for r in rows:
        sass = disassembled(r).splitlines()
        philox = [i for i, line in enumerate(sass) if any(c in line for c in PHILOX)]
        # the data: 16-byte global loads (8 bytes for a bf16 grad; ldg.e.64 also loads the state's seed and offset)
        loads = [i for i, line in enumerate(sass) if "ldg.e.128 " in line]
        assert philox and loads and max(loads) < min(philox), (r["signature"]["p_grad"], loads[:2], philox[:2])


def test_buffer_sample_draws_reset_values_only_in_tiles_that_reset_a_row(compiled):
    """buffer_sample decides each row's reset (one Philox draw a row), requests the kept rows, and branches over the
    reset values' draws (a Philox draw for every 4 values) when no row of its tile restarts: at reset_prob 0.05 and
    one row a tile (WRN sizes), 19 tiles in 20 compute no reset value. rows-first requests every drawn row before
    the reset decision is known (the gather waits on the indices' load only). The same numbers either way
    (test_kernels_buffer); which order is faster is the GPU benchmark's to say."""
    orders = {}
    for r in compiled:
        if r["kernel"] != "_buffer_sample_kernel" or r["constexprs"]["HAS_FRESH"]:
            continue
        sass = disassembled(r).splitlines()
        philox = [i for i, line in enumerate(sass) if any(c in line for c in PHILOX)]
        loads = [i for i, line in enumerate(sass) if "ldg.e.128 " in line]
        decision = [i for i, line in enumerate(sass) if "fsetp" in line][0]  # the one float comparison: u < reset_prob
        branch = next(i for i, line in enumerate(sass) if i > max(loads) and " bra " in line)
        target = sass[branch].split("`(")[1].split(")")[0]
        end = next(i for i, line in enumerate(sass) if line.startswith(target + ":"))
        draws = [i for i in philox if i > branch]
        what = (r["constexprs"], decision, loads, branch, end)
        # the reset values' rounds (most of the kernel's) lie in the block the branch skips; the decision's before
        assert len(draws) > len(philox) / 2 and all(i < end for i in draws), what
        assert all(i < decision for i in set(philox) - set(draws)), what
        orders["rows-first" if r["constexprs"]["ROWS_FIRST"] else "default"] = decision < min(loads)
    assert orders == {"default": True, "rows-first": False}, orders


def test_the_sample_data_moves_16_bytes_at_a_time_in_registers(compiled):
    """At WRN sizes (what a launch there specialises: aligned pointers, sizes that are multiples of 16) sgld_step_,
    buffer_sample and buffer_write_ read and write x, grad and buffer rows with 16-byte accesses (8 bytes for a
    bf16 grad), and the noise reaches its elements without a trip through shared memory (no STS/LDS, no barrier):
    element-wise ops whose bytes the HBM target counts. Compiled without the alignment, the same kernels fall back
    to 4-byte accesses and sgld_step_ shuffles its four normals per counter through shared memory."""
    checked = 0
    for r in compiled:
        # buffer_write_ of a bf16 x is not the hot path (ReplayBuffer.write_ passes fp32)
        if r["kernel"] not in ("_sgld_step_kernel", "_buffer_sample_kernel", "_buffer_write_kernel") or \
                r["signature"].get("p_x") == "*bf16":
            continue
        sass = disassembled(r)
        what = (r["kernel"], r["signature"].get("p_grad"), r["constexprs"])
        assert "ldg.e.128 " in sass and "stg.e.128 " in sass, what
        assert "ldg.e " not in sass and "stg.e " not in sass, what  # no 4-byte access
        assert not any(f" {op} " in sass or f" {op}." in sass for op in ("sts", "lds", "bar")), what
        checked += 1
    assert checked == 2 + 4 + 1


def test_the_noise_is_a_straight_line_of_under_230_instructions(compiled):
    """sgld_step_'s Box-Muller takes its logarithm, sine and cosine from short polynomials of its own (fastjem.kernels.
    rng): no branch, no float64, no local memory, where tl.sin and tl.cos each carried a large-argument reduction
    (a loop over a table in local memory, a float64 multiply) behind a branch, and tl.log its cases for zero,
    infinity and subnormals. As compiled at WRN sizes, a thread's whole update of 4 elements (one Philox counter)
    is 220 instructions with an fp32 grad and 223 with a bf16 one (triton 3.6 and 3.8 alike); with the library's
    tl.log, sin and cos it ran 300-304 (the large-argument paths skipped), and tl.log alone adds 23."""
    for r in compiled:
        if r["kernel"] != "_sgld_step_kernel":
            continue
        sass = disassembled(r)
        code = [line for line in sass.splitlines() if line.strip().startswith("/*") and " nop" not in line]
        what = (r["signature"]["p_grad"], len(code))
        assert not any(op in sass for op in (" dmul", " ldl", " stl", "ldg.e.constant")), what
        assert sum(" bra " in line for line in code) == 1, what  # the self-loop after exit that ptxas appends
        assert len(code) <= 230, what

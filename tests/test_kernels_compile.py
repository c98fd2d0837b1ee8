"""Every Triton kernel compiles for a Hopper GPU (sm_90, to a cubin by the ptxas that ships with triton), here on a
machine without one. The default tier runs the kernels under the interpreter, which takes code the compiler
refuses (a Python builtin on a tensor, a value that is a Python int only there); a GPU session is too short to
find that out."""

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

triton = pytest.importorskip("triton")

# (kernel, the launch's constexprs): each variant the launchers can compile on a GPU, at WRN sizes
# lse fwd/bwd x dtypes x K x labels; sgld grads, gather fresh x orders, scatter x dtypes
VARIANTS = 2 * 3 * 2 * 2 + 2 + 2 * 2 + 2 + 1
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
              {"p_buffer": "*fp32", "p_idx": "*i64", "p_x": f"*{x}", "p_last": "*i64", "N": "i32", "B": "i32",
               "D": "i32"},
              {"BLOCK_B": block_b, "BLOCK_D": block_d})
    build(buffer._last_position_kernel, {"p_idx": "*i64", "p_last": "*i64", "N": "i32", "B": "i32"}, {"BLOCK": 64})
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
                       "_buffer_sample_kernel", "_buffer_write_kernel", "_last_position_kernel"}
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


# --- the GPU's arithmetic of the Box-Muller polynomials, on a CPU: the compiled kernel's PTX evaluated element-wise
# (a GPU fuses a * b + c into one rounding where the interpreter rounds twice; ptxas keeps the PTX's IEEE rounding)


def _fma32(a, b, c):
    """fp32 fused multiply-add, correctly rounded: the product is exact in float64, the sum's rounding error exact
    (TwoSum), then rounded to odd in float64 (53 >= 2 * 24 + 2 bits) so that the rounding to fp32 is the fma's."""
    a, b, c = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b, c))
    p = a * b
    s = p + c
    bp = s - c
    e = (p - bp) + (c - (s - bp))
    s = np.where((e != 0) & ((s.view(np.int64) & 1) == 0), np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
    return s.astype(np.float32)


def evaluate_ptx(ptx: str, inputs: dict[int, np.ndarray], block: int) -> dict[int, np.ndarray]:
    """The fp32 results a straight-line Triton kernel of one 4-byte element per thread stores, its PTX evaluated for
    every element at once: ``inputs`` {parameter index: fp32 array} (all of one length n, a multiple of ``block``,
    the threads of a program); returns {parameter index: fp32 array} of what it stores. Knows the instructions such
    element-wise kernels compile to; any other fails the test, naming it."""
    n = len(next(iter(inputs.values())))
    element = np.arange(n, dtype=np.int64)
    regs: dict[str, object] = {}
    out: dict[int, np.ndarray] = {}

    def value(op: str):
        if op.startswith("%"):
            if op == "%tid.x":
                return (element % block).astype(np.uint32)
            if op == "%ctaid.x":
                return (element // block).astype(np.uint32)
            return regs[op]
        if op.startswith("0f"):
            return np.uint32(int(op[2:], 16))
        return np.uint32(int(op, 0) & 0xFFFFFFFF)

    def f32(op: str):
        return np.asarray(value(op), np.uint32).view(np.float32)

    def i32(op: str):
        return np.asarray(value(op), np.uint32).view(np.int32).astype(np.int64)

    def bits(x):
        x = np.asarray(x)
        return x.astype(np.float32).view(np.uint32) if x.dtype.kind == "f" else (x & 0xFFFFFFFF).astype(np.uint32)

    entry = ptx[ptx.index(".entry"):]
    body = entry[entry.index("\n{") + 2:]  # past the parameter list
    for line in body.splitlines():
        line = line.split("//")[0].strip()
        if not line or line[0] in ".${}" or line.endswith(":") or line == "ret;":
            continue
        op, _, rest = line.rstrip(";").partition(" ")
        args = [a for a in re.split(r"[\s,{}\[\]+]+", rest.strip()) if a]
        if op.startswith("@"):
            raise AssertionError(f"predicated PTX instruction not emulated: {line}")
        kind = op.split(".")[0]
        if op == "ld.param.b64":
            regs[args[0]] = ("param", int(args[1].rsplit("_", 1)[1]), np.zeros(n, np.int64))
        elif op in ("mov.u32", "mov.b32"):
            regs[args[0]] = np.broadcast_to(value(args[1]), (n,)).astype(np.uint32)
        elif op == "mul.wide.s32":
            regs[args[0]] = i32(args[1]) * i32(args[2])
        elif op == "add.s64":
            (_, k, base), offsets = (regs[args[1]], regs[args[2]]) if isinstance(regs[args[1]], tuple) else \
                (regs[args[2]], regs[args[1]])
            regs[args[0]] = ("param", k, base + offsets)
        elif op == "ld.global.b32":
            _, k, offsets = regs[args[1]]
            assert args[2] == "0" and np.array_equal(offsets, 4 * element), line
            regs[args[0]] = inputs[k].astype(np.float32).view(np.uint32)
        elif op == "st.global.b32":
            _, k, offsets = regs[args[0]]
            assert args[1] == "0" and np.array_equal(offsets, 4 * element), line
            out[k] = f32(args[2]).copy()
        elif op in ("add.s32", "sub.s32", "and.b32", "or.b32", "shl.b32"):
            a, b = i32(args[1]), i32(args[2])
            regs[args[0]] = bits({"add.s32": a + b, "sub.s32": a - b, "and.b32": a & b, "or.b32": a | b,
                                  "shl.b32": a << b}[op])
        elif op in ("add.f32", "sub.f32", "mul.f32", "add.rn.f32", "sub.rn.f32", "mul.rn.f32"):
            a, b = f32(args[1]), f32(args[2])
            regs[args[0]] = bits({"add": a + b, "sub": a - b, "mul": a * b}[kind])
        elif op == "neg.f32":
            regs[args[0]] = bits(-f32(args[1]))
        elif op == "fma.rn.f32":
            regs[args[0]] = bits(_fma32(f32(args[1]), f32(args[2]), f32(args[3])))
        elif op == "cvt.rn.f32.s32":
            regs[args[0]] = bits(i32(args[1]).astype(np.float32))
        elif op in ("setp.ne.b32", "setp.eq.b32", "setp.ne.s32", "setp.eq.s32"):
            equal = np.asarray(value(args[1])) == np.asarray(value(args[2]))
            regs[args[0]] = np.broadcast_to(equal if op.startswith("setp.eq") else ~equal, (n,))
        elif op in ("selp.f32", "selp.b32"):
            regs[args[0]] = np.where(regs[args[3]], value(args[1]), value(args[2])).astype(np.uint32)
        else:
            raise AssertionError(f"PTX instruction not emulated: {line} (teach evaluate_ptx its arithmetic)")
    return out


def _box_muller_ptx(block: int) -> str:
    """PTX (sm_90) of test_kernels_rng's kernel of the Box-Muller polynomials, compiled in a process without the
    interpreter, one element per thread (``block`` elements, 4 warps)."""
    here = Path(__file__).resolve().parent
    code = (f"import sys; sys.path.insert(0, {str(here)!r}); import triton, test_kernels_rng as t\n"
            "from triton.backends.compiler import GPUTarget\nfrom triton.compiler import ASTSource\n"
            "sig = {'p_u': '*fp32', 'p_log': '*fp32', 'p_sin': '*fp32', 'p_cos': '*fp32', 'BLOCK': 'constexpr'}\n"
            f"k = triton.compile(ASTSource(t._box_muller_parts, sig, constexprs={{'BLOCK': {block}}}),\n"
            "                    target=GPUTarget('cuda', 90, 32), options={'num_warps': 4})\n"
            "sys.stdout.write(k.asm['ptx'])\n")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_the_gpus_fused_box_muller_polynomials_are_within_two_ulps_for_every_uniform():
    """The GPU test of the Box-Muller polynomials (test_kernels_rng, 2 ulps for every one of the 2**23 uniforms a
    Philox word gives), run here on the GPU's own arithmetic: the kernel compiled for sm_90, its PTX evaluated for
    every uniform, each multiply-add fused where the compiler fused it. The interpreter's run (two roundings) is the
    same test's CPU case; a polynomial that holds there can exceed the bound fused, and a GPU session would be the
    first to see it."""
    pytest.importorskip("triton.backends.compiler")
    ptx = _box_muller_ptx(128)
    assert "fma.rn.f32" in ptx  # fused: what this test is for
    k = np.arange(2**23, dtype=np.int64)
    u = ((2 * k + 1).astype(np.float32) * np.float32(2.0**-24)).astype(np.float32)
    got = evaluate_ptx(ptx, {0: u}, 128)
    ud = u.astype(np.float64)
    t = 2 * ud - 1
    assert sorted(got) == [1, 2, 3]
    for name, index, want in (("-2 log u", 1, -2 * np.log(ud)), ("sin(pi t)", 2, np.sin(np.pi * t)),
                              ("cos(pi t)", 3, np.cos(np.pi * t))):
        ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
        err = np.abs(got[index].astype(np.float64) - want) / ulp
        assert err.max() <= 2.0, f"{name}: {err.max():.2f} ulps at u = {u[err.argmax()]!r} (fused on the GPU)"

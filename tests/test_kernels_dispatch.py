"""The one dispatch rule of fastjem.kernels, and the public surface."""

import os
import subprocess
import sys

import fastjem.kernels as kernels
import pytest
import torch
from fastjem.kernels import _dispatch, sgld
from kernel_utils import OpRecorder, skip_unless_runnable


def test_public_api():
    for name in (
        "lse_energy",
        "lse_energy_ref",
        "sgld_step_",
        "sgld_step_ref",
        "buffer_sample",
        "buffer_sample_ref",
        "buffer_write_",
        "buffer_write_ref",
        "new_rng_state",
        "backend",
        "set_backend",
        "get_backend",
    ):
        assert callable(getattr(kernels, name)), name
    for op in ("lse_energy", "lse_energy_backward", "sgld_step_", "buffer_sample", "buffer_write_"):
        assert hasattr(torch.ops.fastjem, op), op


def test_rule(monkeypatch):
    cpu = torch.zeros(1)
    monkeypatch.setattr(_dispatch, "KERNELS_INTERPRETED", True)  # as when the variable was set before the import
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert _dispatch.use_triton(cpu) is (_dispatch.triton is not None)
    assert _dispatch.use_triton(cpu, "reference") is False
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert _dispatch.use_triton(cpu) is False
    assert _dispatch.use_triton(cpu, "reference") is False
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET"):
        _dispatch.use_triton(cpu, "triton")
    with pytest.raises(ValueError, match="backend must be one of"):
        _dispatch.use_triton(cpu, "cuda")


@pytest.mark.skipif(_dispatch.triton is None, reason="needs triton")
def test_the_interpreter_switched_on_after_the_import_is_a_clear_error():
    """Triton makes its kernels, compiled or interpreted, when fastjem.kernels is imported: TRITON_INTERPRET set
    afterwards (a test's monkeypatch, os.environ in a notebook) cannot send CPU tensors to them, and says so instead
    of Triton's "0 active drivers"; the references still run."""
    code = (
        "import os, torch\n"
        "from fastjem import kernels as K\n"
        "from fastjem.kernels import _dispatch\n"
        "assert _dispatch.KERNELS_INTERPRETED is False\n"
        "os.environ['TRITON_INTERPRET'] = '1'\n"
        "assert K.lse_energy(torch.zeros(2, 3), backend='reference').shape == (2,)\n"
        "try:\n"
        "    K.lse_energy(torch.zeros(2, 3))\n"
        "except RuntimeError as e:\n"
        "    print(e)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "TRITON_INTERPRET=1 was set after fastjem.kernels was imported" in out.stdout
    assert "before Python starts" in out.stdout


def test_forced_triton_without_triton_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(_dispatch, "triton", None)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    cpu = torch.zeros(1)
    assert _dispatch.use_triton(cpu) is False  # auto falls back to the reference
    with pytest.raises(RuntimeError, match="triton is not installed"):
        _dispatch.use_triton(cpu, "triton")
    with pytest.raises(RuntimeError, match="triton is not installed"):
        kernels.lse_energy(torch.randn(2, 3), backend="triton")
    # the reference path never needs triton
    assert kernels.lse_energy(torch.zeros(2, 3), backend="reference").shape == (2,)


def test_context_manager_and_default_nest_and_restore():
    assert kernels.get_backend() == "auto"
    with kernels.backend("reference"):
        assert kernels.get_backend() == "reference"
        with kernels.backend("triton"):
            assert kernels.get_backend() == "triton"
        assert kernels.get_backend() == "reference"
    assert kernels.get_backend() == "auto"
    with pytest.raises(ValueError):
        with kernels.backend("fast"):
            pass
    try:
        kernels.set_backend("reference")
        assert kernels.get_backend() == "reference"
        assert _dispatch.use_triton(torch.zeros(1)) is False
    finally:
        kernels.set_backend("auto")


def test_context_manager_selects_the_launcher(monkeypatch):
    skip_unless_runnable("cpu", "triton")
    calls = []
    real = sgld.sgld_step_fwd
    monkeypatch.setattr(sgld, "sgld_step_fwd", lambda *a, **k: calls.append(1) or real(*a, **k))
    x, g, state = torch.zeros(8), torch.zeros(8), kernels.new_rng_state(0)
    with kernels.backend("reference"):
        kernels.sgld_step_(x, g, 1.0, 1.0, state)
    assert calls == []
    with kernels.backend("triton"):
        kernels.sgld_step_(x, g, 1.0, 1.0, state)
    assert calls == [1]
    kernels.sgld_step_(x, g, 1.0, 1.0, state, backend="reference")  # the argument beats the default
    assert calls == [1]


def test_inductor_smoke():
    """The ops stay opaque custom ops under the default inductor backend (reference path: no C++ kernels)."""
    torch._dynamo.reset()

    def step(x, grad, state, logits):
        kernels.sgld_step_(x, grad, 1.0, 0.01, state, backend="reference")
        return kernels.lse_energy(logits, backend="reference")

    compiled = torch.compile(step, fullgraph=True)
    x, grad, state, logits = torch.zeros(4, 6), torch.ones(4, 6), kernels.new_rng_state(1), torch.randn(3, 5)
    x_e, state_e = x.clone(), state.clone()
    e = compiled(x, grad, state, logits)
    assert torch.equal(e, step(x_e, grad, state_e, logits))
    assert torch.equal(x, x_e) and torch.equal(state, state_e)


def _raise(*args, **kwargs):
    raise AssertionError("the registered op was dispatched")


def test_plain_eager_calls_skip_the_registered_op(monkeypatch):
    """The torch.library wrapper costs tens of microseconds a call; plain eager calls run the implementation."""
    from fastjem.kernels import buffer as kbuffer

    monkeypatch.setattr(sgld, "_sgld_step_op", _raise)
    monkeypatch.setattr(kbuffer, "_buffer_sample_op", _raise)
    monkeypatch.setattr(kbuffer, "_buffer_write_op", _raise)
    x, g, state = torch.zeros(8), torch.ones(8), kernels.new_rng_state(0)
    kernels.sgld_step_(x, g, 1.0, 0.0, state, backend="reference")
    assert torch.equal(x, torch.ones(8))
    buf, idx = torch.zeros(5, 3), torch.tensor([0, 2])
    kernels.buffer_write_(buf, idx, torch.ones(2, 3), backend="reference")
    assert torch.equal(kernels.buffer_sample(buf, idx, 0.0, state, backend="reference"), torch.ones(2, 3))
    # a tensor that needs autograd goes through the registered op (which states what it supports)
    with pytest.raises(AssertionError, match="registered op"):
        kernels.sgld_step_(torch.zeros(8), g.clone().requires_grad_(True), 1.0, 0.0, state, backend="reference")


def test_plain_eager_lse_energy_runs_the_op_implementations_under_autograd(monkeypatch):
    """Differentiable, so the eager path is a torch.autograd.Function over the same forward/backward code."""
    from fastjem.kernels import energy

    logits = (torch.randn(7, 10) * 3).requires_grad_(True)
    for labels in (None, torch.randint(0, 10, (7,))):
        want = energy._lse_energy_op(logits, labels, "reference")[0]
        (want_grad,) = torch.autograd.grad(want.sum() * 2, logits)
        monkeypatch.setattr(energy, "_lse_energy_op", _raise)
        monkeypatch.setattr(energy, "_lse_energy_backward_op", _raise)
        got = kernels.lse_energy(logits, labels, backend="reference")
        (got_grad,) = torch.autograd.grad(got.sum() * 2, logits)
        monkeypatch.undo()
        assert torch.equal(got, want) and torch.equal(got_grad, want_grad)
    # under a dispatch mode (as under torch.compile or export) the registered op is what runs
    with OpRecorder() as rec:
        kernels.lse_energy(logits, backend="reference")
    assert any(n.startswith("fastjem.lse_energy") for n in rec.names), rec.names


def test_dispatch_modes_and_fake_tensors_see_the_registered_op():
    from torch._subclasses.fake_tensor import FakeTensorMode

    x, g, state = torch.zeros(8), torch.ones(8), kernels.new_rng_state(0)
    buf, idx = torch.zeros(5, 3), torch.tensor([0, 2])
    with OpRecorder() as rec:
        kernels.sgld_step_(x, g, 1.0, 0.0, state, backend="reference")
        kernels.buffer_sample(buf, idx, 0.0, state, backend="reference")
        kernels.buffer_write_(buf, idx, torch.ones(2, 3), backend="reference")
    for name in ("fastjem.sgld_step_", "fastjem.buffer_sample", "fastjem.buffer_write_"):
        assert any(n.startswith(name) for n in rec.names), (name, rec.names)
    with FakeTensorMode():
        fx, fg, fs = torch.empty(8), torch.empty(8), torch.empty(2, dtype=torch.int64)
        kernels.sgld_step_(fx, fg, 1.0, 0.0, fs, backend="triton")  # the fake kernel: no launch on a fake tensor
        out = kernels.buffer_sample(torch.empty(5, 3), torch.empty(2, dtype=torch.int64), 0.1, fs, backend="triton")
        assert out.shape == (2, 3)


@pytest.mark.parametrize("backend", [None, "reference", "triton"])
def test_meta_tensors_take_the_registered_fakes(backend):
    """A model built on the meta device (shape inference): under the interpreter the ops ran their kernels on meta
    tensors ("Cannot copy out of meta tensor"); the registered fakes give the shapes, and the same checks."""
    meta = torch.device("meta")
    logits = torch.randn(4, 3, device=meta, requires_grad=True)
    labels = torch.zeros(4, dtype=torch.int64, device=meta)
    e = kernels.lse_energy(logits, backend=backend)
    assert e.device == meta and e.shape == (4,) and e.dtype == torch.float32
    (grad,) = torch.autograd.grad(e.sum(), logits)
    assert grad.device == meta and grad.shape == (4, 3)
    assert kernels.lse_energy(logits, labels, backend=backend).shape == (4,)
    with pytest.raises(ValueError, match=r"labels must be int64 \[B=4\]"):
        kernels.lse_energy(logits, labels[:2], backend=backend)
    state = kernels.new_rng_state(0, meta)
    x, g = torch.empty(4, 8, device=meta), torch.empty(4, 8, device=meta)
    kernels.sgld_step_(x, g, 1.0, 0.01, state, backend=backend)
    buf, idx = torch.empty(10, 8, device=meta), torch.zeros(4, dtype=torch.int64, device=meta)
    out = kernels.buffer_sample(buf, idx, 0.05, state, backend=backend)
    assert out.device == meta and out.shape == (4, 8)
    kernels.buffer_write_(buf, idx, x, backend=backend)


def test_interpreter_with_numpy_it_cannot_run_is_a_clear_error(monkeypatch):
    # Triton < 3.7's interpreter fails deep inside a kernel under NumPy >= 2.4 (seen with triton 3.6.0,
    # NumPy 2.4.6: "only 0-dimensional arrays can be converted to Python scalars"); say so at dispatch.
    assert _dispatch.interpreter_problem("3.6.0", "2.3.5") is None
    assert _dispatch.interpreter_problem("3.7.1", "2.4.6") is None
    assert _dispatch.interpreter_problem("3.8.0", "2.4.6") is None
    assert "numpy<2.4" in _dispatch.interpreter_problem("3.6.0", "2.4.6")
    assert _dispatch.interpreter_problem("3.5.1", "2.4.0rc1") is not None
    if _dispatch.triton is None:
        pytest.skip("triton is not installed")
    import numpy

    monkeypatch.setattr(_dispatch.triton, "__version__", "3.6.0")
    monkeypatch.setattr(numpy, "__version__", "2.4.6")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with pytest.raises(RuntimeError, match="numpy<2.4"):
        _dispatch.use_triton(torch.zeros(1))
    with pytest.raises(RuntimeError, match="numpy<2.4"):
        kernels.lse_energy(torch.randn(2, 3))
    assert _dispatch.use_triton(torch.zeros(1), "reference") is False  # the references still run
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert _dispatch.use_triton(torch.zeros(1)) is False  # no interpreter, no problem


def test_the_backend_block_is_restored_after_an_error_and_names_are_checked(monkeypatch):
    """An exception inside `with kernels.backend(...)` leaves the process's backend as it was; set_backend refuses
    an unknown name; TRITON_INTERPRET=true (which Triton accepts) counts as the interpreter."""
    with pytest.raises(KeyError):
        with kernels.backend("reference"):
            raise KeyError
    assert kernels.get_backend() == "auto"
    try:
        with pytest.raises(ValueError):
            kernels.set_backend("fast")
    finally:
        kernels.set_backend("auto")
    assert kernels.get_backend() == "auto"
    monkeypatch.setenv("TRITON_INTERPRET", "true")
    assert _dispatch.interpreter_on()


@pytest.mark.skipif(_dispatch.triton is None, reason="needs triton")
@pytest.mark.parametrize("value", ["1", "0", "y", "YES", "1 ", " 1", "2"])
def test_the_interpreter_is_on_where_triton_makes_interpreted_kernels(monkeypatch, value):
    """The dispatch reads TRITON_INTERPRET as Triton does when it makes a kernel: with "1 " (a stray space in an env
    file) our reading said on where Triton compiled for a GPU, and every CPU op under "auto" raised the "set after
    fastjem.kernels was imported" error; with "y" it said off where Triton interpreted."""
    monkeypatch.setenv("TRITON_INTERPRET", value)
    assert _dispatch.interpreter_on() is _dispatch._kernels_built_interpreted()


def test_version_release_and_power_of_2_helpers():
    """(major, minor) of any version string, a missing part 0 (the interpreter check compares them); the block
    size helper gives the smallest power of 2 at or above n (1 for n <= 1)."""
    release = _dispatch._release
    assert [release(v) for v in ("3.6.0", "2.4.0rc1", "3.10.1", "3", "", "2.11.0+cu130")] == [
        (3, 6), (2, 4), (3, 10), (3, 0), (0, 0), (2, 11)]
    assert _dispatch.interpreter_problem("3", "2.4") is not None and _dispatch.interpreter_problem("3.7", "2.4") is None
    assert [_dispatch.next_power_of_2(n) for n in (0, 1, 2, 3, 4, 5, 64, 65, 1000)] == [1, 1, 2, 4, 4, 8, 64, 128,
                                                                                          1024]


def test_without_triton_the_package_imports_and_runs_the_references():
    """A CPU-only install without triton: fastjem.kernels imports (triton and tl are None), auto picks the
    references, and the ops compute, in a fresh interpreter where `import triton` fails."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['triton'] = None\n"
        "import torch\n"
        "import fastjem.kernels as k\n"
        "from fastjem.kernels import _dispatch\n"
        "assert _dispatch.triton is None and _dispatch.tl is None\n"
        "assert not _dispatch.use_triton(torch.zeros(1))\n"
        "x = torch.zeros(8)\n"
        "k.sgld_step_(x, torch.ones(8), 1.0, 0.0, k.new_rng_state(0))\n"
        "assert torch.equal(x, torch.ones(8)) and k.lse_energy(torch.zeros(2, 3)).shape == (2,)\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr[-2000:]


BAD_INPUTS = {
    "sgld_step_": lambda state: kernels.sgld_step_(torch.zeros(8), torch.zeros(7), 0.1, 0.1, state,
                                                   backend="reference"),
    "buffer_sample": lambda state: kernels.buffer_sample(torch.zeros(10, 3), torch.tensor([0, 1], dtype=torch.int32),
                                                         0.5, state, backend="reference"),
    "buffer_write_": lambda state: kernels.buffer_write_(torch.zeros(10, 3), torch.tensor([0, 1]), torch.ones(2, 4),
                                                         backend="reference"),
    "lse_energy": lambda state: kernels.lse_energy(torch.zeros(4, 3, dtype=torch.int64), backend="reference"),
}


@pytest.mark.parametrize("op", list(BAD_INPUTS))
def test_a_compiled_op_given_bad_inputs_is_refused_while_traced_with_its_eager_message(op):
    """Under torch.compile(fullgraph=True) an input of the wrong shape, dtype or device is refused while the graph is
    traced (the op's registered fake makes the eager checks), before a step before it advances the RNG state; torch
    wraps the error (TorchRuntimeError, whose first line is its own), its text holding the eager message word for
    word. (Raising the plain error through ``refuse`` works for static shapes only: with dynamic ones dynamo cannot
    format the message's sizes and fails without it.)"""
    torch._dynamo.reset()
    with pytest.raises((ValueError, TypeError)) as eager:
        BAD_INPUTS[op](kernels.new_rng_state(0))

    def step(x, state):
        kernels.sgld_step_(x, torch.ones_like(x), 0.1, 0.1, state, backend="reference")  # advances the state
        return BAD_INPUTS[op](state)

    x, state = torch.zeros(4), kernels.new_rng_state(0)
    with pytest.raises(torch._dynamo.exc.TorchRuntimeError) as compiled:
        torch.compile(step, fullgraph=True, backend="aot_eager")(x, state)
    assert str(eager.value) in str(compiled.value)
    assert torch.equal(x, torch.zeros(4)) and state.tolist() == [0, 0]


class _Wrapped(torch.Tensor):
    """A tensor subclass that sees the ops run on it at the dispatch level (as DTensor and FSDP's parameters do), and
    unwraps its tensor for each."""

    seen: list = []

    @staticmethod
    def __new__(cls, elem):
        return torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype, device=elem.device,
                                                   requires_grad=elem.requires_grad)

    def __init__(self, elem):
        self.elem = elem

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        cls.seen.append(str(func))
        unwrap = lambda t: t.elem if isinstance(t, _Wrapped) else t  # noqa: E731
        return func(*torch.utils._pytree.tree_map(unwrap, args), **torch.utils._pytree.tree_map(unwrap, kwargs or {}))


@pytest.mark.parametrize("backend", ["reference", "triton"])
def test_tensor_subclasses_see_the_registered_op(backend):
    """Only plain tensors skip the registered op: a subclass that handles ops at the dispatch level must be handed
    fastjem's op, not the aten ops of its implementation or a kernel launched on a tensor that holds no storage."""
    skip_unless_runnable("cpu", backend)
    _Wrapped.seen = []
    logits = torch.randn(3, 5)
    e = kernels.lse_energy(_Wrapped(logits), backend=backend)
    assert any(n.startswith("fastjem.lse_energy") for n in _Wrapped.seen), _Wrapped.seen
    assert torch.allclose(e, -torch.logsumexp(logits, 1))
    _Wrapped.seen = []
    x, state = torch.zeros(6), kernels.new_rng_state(0)
    kernels.sgld_step_(_Wrapped(x), torch.ones(6), 1.0, 0.0, state, backend=backend)
    assert any(n.startswith("fastjem.sgld_step_") for n in _Wrapped.seen), _Wrapped.seen
    assert torch.equal(x, torch.ones(6))


def test_forced_triton_without_triton_or_interpreter_names_the_missing_install(monkeypatch):
    """Without triton installed, a forced 'triton' on a CPU tensor names the install first: told only that CPU
    tensors need TRITON_INTERPRET=1, a user set it and met the missing install on the next try."""
    monkeypatch.setattr(_dispatch, "triton", None)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(RuntimeError, match="triton is not installed"):
        _dispatch.use_triton(torch.zeros(1), "triton")


def test_a_scalar_argument_torch_cannot_make_a_float_is_named():
    """float() of a complex or a meta tensor raises RuntimeError, not ValueError: it is still the op's own error,
    naming the argument, not torch's "cannot be converted to type double"."""
    for value in (torch.tensor(1 + 2j), torch.tensor(0.5, device="meta")):
        with pytest.raises(ValueError, match=r"sgld_step_: alpha must be a number .*got a tensor of shape \(\)"):
            _dispatch.as_number("sgld_step_", "alpha", value)

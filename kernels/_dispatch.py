"""The one place that decides between a Triton kernel and its PyTorch reference.

Rule: backend ``"auto"`` (the default) runs Triton when the tensor is on CUDA or the Triton
interpreter is on (``TRITON_INTERPRET=1`` set before Python starts), and the reference otherwise.
``"triton"`` forces the kernel and raises a clear error where it cannot run; ``"reference"``
forces the PyTorch reference. The choice comes, in order, from the op's ``backend=`` argument,
the innermost ``with backend(...)`` block, or ``set_backend`` (process-wide default ``"auto"``).

Triton is optional: it is imported once, guarded, and never needed by the reference path
(CPU-only installs without triton import this package fine).
"""

from __future__ import annotations

import contextlib
import functools
import operator
import os
import re
import threading
from collections.abc import Iterator

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only installs: reference path only
    triton = None
    tl = None

__all__ = [
    "BACKENDS",
    "backend",
    "get_backend",
    "set_backend",
    "resolve_backend",
    "use_triton",
    "interpreter_on",
    "KERNELS_INTERPRETED",
    "device_of",
    "direct_call",
    "next_power_of_2",
    "as_number",
    "as_integer",
    "check_tensors",
    "refuse",
]

BACKENDS = ("auto", "triton", "reference")

# A plain global, not a ContextVar: the autograd engine runs CUDA backwards on its own threads,
# which must see the same choice as the forward.
_lock = threading.Lock()
_default = ["auto"]


def _check(name: str) -> str:
    if name not in BACKENDS:
        raise ValueError(f"fastjem.kernels backend must be one of {BACKENDS}, got {name!r}")
    return name


def get_backend() -> str:
    """The backend in force when an op is called without ``backend=``."""
    return _default[0]


def set_backend(name: str) -> None:
    """Set the process-wide backend (``"auto" | "triton" | "reference"``)."""
    with _lock:
        _default[0] = _check(name)


@contextlib.contextmanager
def backend(name: str) -> Iterator[None]:
    """``with fastjem.kernels.backend("reference"): ...`` selects the backend inside the block."""
    _check(name)
    with _lock:
        previous, _default[0] = _default[0], name
    try:
        yield
    finally:
        with _lock:
            _default[0] = previous


def interpreter_on() -> bool:
    """True when the Triton interpreter is enabled (kernels run on CPU tensors), as Triton itself reads
    TRITON_INTERPRET: our own reading disagreed with it on some values ("y" interprets, "1 " does not), and then a
    CPU op under backend "auto" raised the "set after fastjem.kernels was imported" error, or skipped kernels made
    for the interpreter."""
    knobs = getattr(triton, "knobs", None)
    if knobs is not None:
        return bool(knobs.runtime.interpret)
    # no triton (nothing to interpret), or one without knobs: Triton 3.8's reading
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes", "y")


def _kernels_built_interpreted() -> bool:
    """Whether ``@triton.jit`` made interpreted kernels in this process: Triton decides when the decorator runs, i.e.
    when fastjem.kernels is imported, from TRITON_INTERPRET as it was then; one probe kernel says what it chose."""
    if triton is None:
        return False

    @triton.jit
    def _probe():
        pass

    return type(_probe).__name__ == "InterpretedFunction"


KERNELS_INTERPRETED = _kernels_built_interpreted()


def _release(version: str) -> tuple[int, int]:
    """(major, minor) of a version string such as '3.6.0' or '2.4.0rc1'."""
    numbers = [int(n) for n in re.findall(r"\d+", version)[:2]]
    return (numbers + [0, 0])[0], (numbers + [0, 0])[1]


@functools.cache
def interpreter_problem(triton_version: str, numpy_version: str) -> str | None:
    """Why the Triton interpreter cannot run kernels with these versions installed, or None.

    Triton before 3.7 reads a scalar kernel argument inside the interpreter with ``int()`` of a
    one-element array, which NumPy 2.4 refuses (a kernel looping ``range(0, K, BLOCK)`` then fails
    with "only 0-dimensional arrays can be converted to Python scalars"); Triton 3.7 fixed it.
    """
    if _release(triton_version) < (3, 7) and _release(numpy_version) >= (2, 4):
        return (f"the Triton interpreter (TRITON_INTERPRET=1) of triton {triton_version} cannot run with NumPy "
                f"{numpy_version}: it converts one-element arrays with int(), which NumPy 2.4 refuses. Install "
                "'numpy<2.4', or triton >= 3.7 (with the torch release that requires it), or unset "
                "TRITON_INTERPRET to run the PyTorch references on the CPU")
    return None


def resolve_backend(name: str | None) -> str:
    """The explicit ``name`` if given, else the current default."""
    return _check(name) if name is not None else get_backend()


def use_triton(tensor: torch.Tensor, name: str | None = None) -> bool:
    """Whether an op on ``tensor`` runs its Triton kernel under backend ``name`` (None: current default)."""
    name = resolve_backend(name)
    if name == "reference":
        return False
    runnable = tensor.is_cuda or interpreter_on()
    if runnable and not tensor.is_cuda and triton is not None:
        import numpy

        if (problem := interpreter_problem(triton.__version__, numpy.__version__)) is not None:
            raise RuntimeError(f"fastjem.kernels: {problem}")
        if not KERNELS_INTERPRETED:
            raise RuntimeError("fastjem.kernels: TRITON_INTERPRET=1 was set after fastjem.kernels was imported, when "
                               "Triton had already made its kernels for a GPU; they cannot run on CPU tensors. Set it "
                               "before Python starts (export TRITON_INTERPRET=1), or unset it to run the PyTorch "
                               "references (or use backend 'reference')")
    if name == "auto":
        return runnable and triton is not None
    if triton is None:
        raise RuntimeError(
            "fastjem.kernels: backend 'triton' was requested but triton is not installed; "
            "install triton or use backend 'reference' (or 'auto')"
        )
    if not runnable:
        raise RuntimeError(
            f"fastjem.kernels: backend 'triton' was requested for a tensor on {tensor.device}; Triton kernels run "
            "on CUDA tensors, or on CPU only under the interpreter (TRITON_INTERPRET=1 set before Python starts)"
        )
    return True


def device_of(tensor: torch.Tensor) -> contextlib.AbstractContextManager:
    """Make ``tensor``'s CUDA device current for a launch (Triton launches on the current device)."""
    if tensor.is_cuda and tensor.device.index != torch.cuda.current_device():
        return torch.cuda.device(tensor.device)
    return contextlib.nullcontext()


def _dispatch_modes_active() -> bool:
    stack_len = getattr(torch._C, "_len_torch_dispatch_stack", None)
    return stack_len is None or stack_len() > 0


def direct_call(*tensors: torch.Tensor | None, differentiable: bool = False) -> bool:
    """Whether an op may run its implementation directly, not through its torch.library op.

    The registered op is what torch.compile, export, fake and functional tensors, functorch transforms and
    dispatch modes need to see; in plain eager execution it only adds dispatch cost (tens of microseconds a
    call, measured by bench/bench_kernels.py), which is most of the time of a small fused kernel. A
    non-differentiable op (the default) also needs inputs that do not require grad; a differentiable one
    runs its implementation inside a torch.autograd.Function and takes them as they are.
    """
    if torch.compiler.is_compiling() or _dispatch_modes_active():
        return False
    is_wrapped = torch._C._functorch.is_functorch_wrapped_tensor
    # meta tensors take the registered fake (their shapes only, with the eager op's checks): the interpreter cannot
    # read them
    return all(t is None or (type(t) is torch.Tensor and (differentiable or not t.requires_grad) and not is_wrapped(t)
                             and not t.is_meta)
               for t in tensors)


def as_number(op: str, name: str, value) -> float:
    """``float(value)`` for an op's scalar argument (a number or a one-element tensor), else an error naming it."""
    try:
        # a bool is an int in Python: a flag passed where a step size or probability goes, not 1.0
        if isinstance(value, bool):
            raise TypeError
        return float(value)
    except (TypeError, ValueError, RuntimeError):
        got = f"a tensor of shape {tuple(value.shape)}" if isinstance(value, torch.Tensor) else repr(value)
        raise ValueError(f"{op}: {name} must be a number (a float, or a tensor of one element), got {got}") from None


def as_integer(what: str, value, error: type[Exception] = TypeError, advice: str = "") -> int:
    """``value`` as an int (Python's, NumPy's, a one-element integer tensor), else ``error`` naming ``what`` (then
    ``advice``): ``int()`` took 1.5 for 1 (a count of steps, counters or a seed truncated) and True for 1 (a flag
    passed in the wrong place). The one integer check of fastjem and its kernels."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise error(f"{what} must be an integer, got {value!r} ({type(value).__name__}){advice}")


def check_tensors(op: str, **tensors) -> None:
    """Each of ``tensors`` (name=value) is a torch.Tensor, else a TypeError naming it: a list reached the registered
    op, whose schema error named no fix, or failed on a missing attribute."""
    for name, value in tensors.items():
        if not isinstance(value, torch.Tensor):
            got = "None" if value is None else f"a {type(value).__name__}"
            raise TypeError(f"{op}: {name} must be a torch.Tensor, got {got}: pass "
                            f"torch.as_tensor({name}" + (", dtype=torch.int64" if name == "idx" else "")
                            + ", device=...)")


@torch.library.custom_op("fastjem::refuse_", mutates_args=("anchor",))
def _refuse_op(anchor: torch.Tensor, message: str) -> None:
    raise ValueError(message)


@_refuse_op.register_fake
def _(anchor, message):
    return None


def refuse(message: str, anchor: torch.Tensor) -> None:
    """``ValueError(message)``: at once in eager code; under torch.compile when the compiled code runs, where eager
    code would have raised it, so that both say the same (raised while dynamo traces, it ends a fullgraph compile
    with dynamo's own error, the message in its debug context). Dynamo guards on what the refusal was decided from
    (requires_grad, grad mode), so the graph that raises runs only for such inputs. ``anchor``: the tensor the
    refused op would have written, which keeps the refusal in the graph (an op that writes nothing is dropped)."""
    if not torch.compiler.is_compiling():
        raise ValueError(message)
    _refuse_op(anchor, message)


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()

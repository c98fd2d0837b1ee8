"""fastjem.kernels: fused Triton kernels for JEM, each beside its pure-PyTorch reference.

Ops (each a ``torch.library.custom_op`` in the ``fastjem`` namespace; safe under
``torch.compile(fullgraph=True)`` and CUDA-graph capture, no host syncs):

- ``lse_energy(logits, labels=None, *, backend=None) -> E``  E [B] fp32; ``-logsumexp`` or
  ``-logits[b, labels[b]]``; fused forward and backward.
- ``sgld_step_(x, grad, alpha, sigma, rng_state, *, backend=None)``  in place
  ``x += alpha * grad + sigma * N(0, 1)`` with in-kernel Philox noise (``sgld_step_compiled_``: the same
  reference compiled by inductor, what a CPU engine that compiles its SGLD step runs).
- ``buffer_sample(buffer, idx, reset_prob, rng_state, *, fresh=None, backend=None) -> x0``  gather rows
  ``buffer[idx]``, each reset to U(-1, 1) (or to its row of ``fresh``) with probability ``reset_prob``.
- ``buffer_write_(buffer, idx, x, *, backend=None)``  ``buffer[idx] = x`` in place.
- ``new_rng_state(seed, device) -> int64 [2]``  the ``(seed, offset)`` state the random ops read on
  the device and advance in place (see ``fastjem.kernels.rng``).

Each ``<op>_ref`` is the plain-PyTorch spec; the random references reproduce the kernels' numbers
from the same state (uniforms bit-exact, normals to ~1e-6).

Backend selection (one rule, in ``_dispatch``): ``"auto"`` (default) runs Triton when the tensor is
on CUDA or ``TRITON_INTERPRET=1`` is set, the reference otherwise; ``"triton"`` forces the kernels
(RuntimeError if triton is missing or the tensor cannot run them); ``"reference"`` forces PyTorch.
Per call::

    E = kernels.lse_energy(logits, backend="reference")

for a block (a config switch ``kernels: triton | reference`` maps onto this)::

    with kernels.backend(cfg.kernels):
        ...

or process-wide with ``kernels.set_backend("reference")``; ``kernels.get_backend()`` reads it.
"""

from ._dispatch import BACKENDS, backend, get_backend, set_backend
from .buffer import buffer_sample, buffer_sample_ref, buffer_write_, buffer_write_ref
from .energy import lse_energy, lse_energy_ref
from .rng import new_rng_state
from .sgld import sgld_step_, sgld_step_compiled_, sgld_step_ref

__all__ = [
    "BACKENDS",
    "backend",
    "get_backend",
    "set_backend",
    "lse_energy",
    "lse_energy_ref",
    "sgld_step_",
    "sgld_step_ref",
    "sgld_step_compiled_",
    "buffer_sample",
    "buffer_sample_ref",
    "buffer_write_",
    "buffer_write_ref",
    "new_rng_state",
]

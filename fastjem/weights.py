"""The sampler's copy of a network, with the weights autocast casts already in its dtype.

Under bf16 autocast every convolution and linear layer casts its fp32 weight and bias to bf16 at every
forward. Inside a training step that cast runs once; the SGLD loop runs the network 20 times on the same
weights, so it casts them 20 times (on WRN-28-10 that is 36.5M parameters read and written per step, and one
cast kernel per layer). ``CastCopy`` keeps a copy of the network whose autocast-cast weights are stored in
the autocast dtype and refreshes it from the trained network once per sampling call (one foreach copy). The
refreshed values are the casts autocast would make (round to nearest even), so the sampler computes the same
numbers with fewer kernels; everything else (norm layers, buffers) is copied unchanged in its own dtype.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

# the modules whose weight and bias autocast casts to its lower precision (torch's autocast op lists)
CAST_MODULES = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d,
                nn.Linear)


def cast_copy_unsupported(model: nn.Module) -> str | None:
    """Why a cast copy would not compute what autocast computes for ``model`` (None when it would)."""
    from torch.nn.utils import parametrize

    for name, m in model.named_modules():
        if parametrize.is_parametrized(m):
            return f"module {name or type(m).__name__} has parametrized weights (computed from others each forward)"
        if m._forward_hooks or m._forward_pre_hooks:
            return f"module {name or type(m).__name__} has forward hooks"
    if not any(isinstance(m, CAST_MODULES) for m in model.modules()):
        return "no convolution or linear layer to cast"
    return None


class CastCopy:
    """A frozen copy of ``source`` for sampling under autocast to ``dtype``; ``refresh_()`` syncs it in place.

    ``module`` is the copy: eval/train mode is the caller's (``sampling_mode`` sets it), its parameters never
    require grad, and it keeps its tensors' storage across refreshes, so a CUDA graph or a compiled
    function that captured them stays valid.
    """

    def __init__(self, source: nn.Module, dtype: torch.dtype = torch.bfloat16):
        if not isinstance(source, nn.Module):
            # a function failed with "'function' object has no attribute 'named_modules'"
            raise TypeError(f"CastCopy: source must be the network (a torch.nn.Module) to copy, got a "
                            f"{type(source).__name__}")
        why = cast_copy_unsupported(source)
        if why:
            raise ValueError(f"CastCopy: {why}")
        self.source = source
        self.dtype = dtype
        self.module = copy.deepcopy(source)
        self.module.requires_grad_(False)
        for m in self.module.modules():
            if isinstance(m, CAST_MODULES):
                for p in m.parameters(recurse=False):
                    if p.is_floating_point():
                        p.data = p.data.to(dtype)
        self._dst = list(self.module.parameters()) + list(self.module.buffers())
        self._src = list(source.parameters()) + list(source.buffers())
        if len(self._dst) != len(self._src):  # shared tensors deduplicated differently: refuse, do not guess
            raise ValueError("CastCopy: the copy's parameters and buffers do not pair with the source's")
        self.refresh_()

    @torch.no_grad()
    def refresh_(self) -> None:
        """Copy the source's current parameters and buffers in (casting the autocast-cast ones)."""
        torch._foreach_copy_(self._dst, self._src)

    def cast_parameters(self) -> int:
        """How many parameters the copy holds in ``dtype``."""
        return sum(p.numel() for p in self.module.parameters() if p.dtype == self.dtype)


def sampling_network(model: nn.Module, net: nn.Module, cast: bool, compiled: bool,
                     dtype: torch.dtype = torch.bfloat16) -> tuple[nn.Module, nn.Module, CastCopy | None, str | None]:
    """What the SGLD loop runs: (module to freeze, network to call, its CastCopy or None, why not, or None).

    ``model`` is the trained module and ``net`` what training calls (``model`` or its compiled wrapper). With
    ``cast`` the sampler gets a CastCopy of ``model`` (compiled on its own when ``compiled``); a model the copy
    cannot stand in for keeps ``(model, net)`` and says why.
    """
    if not cast:
        return model, net, None, None
    why = cast_copy_unsupported(model)
    if why:
        return model, net, None, f"SGLD weights cast at every forward: {why}"
    cast_copy = CastCopy(model, dtype)
    sgld_net = torch.compile(cast_copy.module, dynamic=False) if compiled else cast_copy.module
    return cast_copy.module, sgld_net, cast_copy, None

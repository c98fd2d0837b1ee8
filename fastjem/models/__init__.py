"""Networks whose logits define a JEM."""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

from fastjem.models.convnet import ConvNet
from fastjem.models.wrn import WideResNet

__all__ = ["ConvNet", "WideResNet", "build_model", "has_batch_norm", "has_dropout", "plain_module", "plain_state_dict"]

# what torch.compile's wrapper (OptimizedModule) puts before every name of its module's state_dict
COMPILED_PREFIX = "_orig_mod."


def build_model(arch: str, num_classes: int, in_channels: int, depth: int = 28, width: int = 10,
                norm: str = "none", dropout: float = 0.0) -> nn.Module:
    """Build the network named by ``arch`` ('wrn' or 'convnet')."""
    if arch == "wrn":
        return WideResNet(depth, width, num_classes, in_channels, norm, dropout)
    if arch == "convnet":
        return ConvNet(num_classes, in_channels, width, norm, dropout)
    raise ValueError(f"unknown arch {arch!r}; expected wrn or convnet")


def has_dropout(model: nn.Module) -> bool:
    """Dropout (of any rate above 0) draws its masks per forward: one forward of a joined batch draws other masks
    than three forwards of its parts."""
    return any(isinstance(m, nn.modules.dropout._DropoutNd) and m.p > 0 for m in model.modules())


def has_batch_norm(model: nn.Module) -> bool:
    """Batch norm makes a sample's output depend on its batch: concatenated forwards are then not equivalent."""
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())


def plain_module(model: nn.Module) -> nn.Module:
    """The module inside a ``torch.compile`` wrapper (``model`` itself when it is none): the wrapper's state_dict
    names carry its ``_orig_mod.`` prefix, which a checkpoint must not (the network built again, uncompiled, or
    compiled by the engine, could not load it)."""
    while isinstance(model, torch._dynamo.eval_frame.OptimizedModule):
        model = model._orig_mod
    return model


def plain_state_dict(state: dict) -> dict:
    """``state`` with the ``_orig_mod.`` prefix of a compiled module's state_dict removed from its names, when every
    name has it (a checkpoint a compiled network wrote); otherwise ``state`` as it is."""
    if not (state and all(isinstance(k, str) and k.startswith(COMPILED_PREFIX) for k in state)):
        return state
    plain = OrderedDict(state)
    if hasattr(state, "_metadata"):  # per-module versions (batch norm reads its own): renamed with the names
        plain._metadata = OrderedDict(state._metadata)
    consume_prefix_in_state_dict_if_present(plain, COMPILED_PREFIX)
    return plain

"""Networks whose logits define a JEM."""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

from fastjem.errors import ConfigError
from fastjem.models.convnet import ConvNet
from fastjem.models.wrn import WideResNet

__all__ = ["ConvNet", "WideResNet", "build_model", "check_batch_norm_batch", "check_image_size", "has_batch_norm",
           "has_dropout", "min_image_size", "plain_module", "plain_state_dict", "smallest_norm_size"]

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


def smallest_norm_size(arch: str, image_size: int) -> int:
    """The side of the smallest maps a norm layer of ``arch`` sees, for ``image_size`` x ``image_size`` inputs: each
    stride-2 3x3 conv (padding 1) takes n pixels to ceil(n / 2); the Wide-ResNet's last norm follows two of them,
    the conv net's last norm one."""
    side = image_size
    for _ in range(2 if arch == "wrn" else 1):
        side = -(-side // 2)
    return side


def min_image_size(arch: str, norm: str, width: int | None = None) -> int:
    """The smallest image side ``arch`` with ``norm`` can train on: instance norm needs maps of 2x2 or more at every
    norm layer (the statistics of one pixel are undefined, and torch refuses them); layer norm more than one value
    per image (it normalises one to 0), which only the conv net of ``width`` 1 lacks on 1x1 images (its first norm
    sees one channel of the full image; None: a width above 1); the other norms take any."""
    if norm == "instance":
        return _least_side_for_two(arch)
    return 2 if norm == "layer" and arch == "convnet" and width == 1 else 1


def _least_side_for_two(arch: str) -> int:
    """The smallest image side whose maps are 2x2 or more at every norm layer of ``arch``."""
    side = 1
    while smallest_norm_size(arch, side) < 2:
        side += 1
    return side


def check_image_size(arch: str, norm: str, image_size: int, given: str = "--image-size", *, width: int) -> None:
    """ConfigError, before a network is built, where ``image_size`` x ``image_size`` images are too small for
    ``norm`` in ``arch`` of ``width`` (torch fails only at the first forward, naming no option). ``given``: what set
    the size (the option, or the data's own size), named in the advice."""
    least = min_image_size(arch, norm, width)
    if norm == "layer" and image_size < least:
        raise ConfigError(f"--norm layer with --arch {arch} --width {width} needs images of at least {least}x{least}: "
                          f"its first norm layer sees one channel of {image_size}x{image_size} images ({given}), one "
                          "value, which it normalises to 0 (the network would never see its input; torch refuses one "
                          f"image a forward); give --width 2 or more, --image-size {least} or more, or another --norm "
                          "(batch or none)")
    if image_size < least:
        side = smallest_norm_size(arch, image_size)
        raise ConfigError(f"--norm {norm} with --arch {arch} needs images of at least {least}x{least}: the last norm "
                          f"layer of {image_size}x{image_size} images ({given}) sees {side}x{side} maps, and instance "
                          f"statistics of one pixel are undefined; give --image-size {least} or more, or another "
                          "--norm (layer, batch or none)")


def check_batch_norm_batch(arch: str, norm: str, image_size: int, batch: int, world: int = 1,
                           given: str = "--image-size") -> None:
    """ConfigError, before a network is built, where batch norm would train on one value per channel: one image per
    training forward (``batch``: a process's share of --batch-size over ``world`` processes) and 1x1 maps at a norm
    layer of ``arch`` (torch fails only at the first forward: "Expected more than 1 value per channel when
    training"). ``given``: what set the image size, named in the advice."""
    if norm != "batch" or batch > 1 or smallest_norm_size(arch, image_size) > 1:
        return
    least = _least_side_for_two(arch)
    per = f"--batch-size {batch * world} over {world} processes" if world > 1 else f"--batch-size {batch}"
    raise ConfigError(f"--norm batch with --arch {arch} trains on one image per forward ({per}), and the last norm "
                      f"layer of {image_size}x{image_size} images ({given}) sees 1x1 maps: batch statistics of one "
                      f"value per channel are undefined; give --batch-size {2 * world} or more, --image-size {least} "
                      "or more, or another --norm (layer or none)")


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

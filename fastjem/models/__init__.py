"""Networks whose logits define a JEM."""

from __future__ import annotations

from torch import nn

from fastjem.models.convnet import ConvNet
from fastjem.models.wrn import WideResNet

__all__ = ["ConvNet", "WideResNet", "build_model", "has_batch_norm", "has_dropout"]


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

"""Wide-ResNet as JEM uses it (Zagoruyko & Komodakis 2016; Grathwohl et al. 2020).

Depth d = 6n + 4, widths [16, 16k, 32k, 64k]; pre-activation blocks
norm -> LeakyReLU(0.2) -> conv3x3 -> dropout -> norm -> LeakyReLU -> conv3x3 (stride here),
a 1x1 shortcut conv when the shape changes, biased convs; then norm -> LeakyReLU -> global
average pool -> Linear(64k, K). Works for any input size and channel count (with norm "instance", training needs
the last stage's maps larger than 1x1, i.e. inputs of at least 5x5: instance statistics of one pixel are undefined).
"""

from __future__ import annotations

import operator

import torch
from torch import nn

LEAK = 0.2


def global_avg_pool(h: torch.Tensor) -> torch.Tensor:
    """[B, C, H, W] -> [B, C]: the mean over H and W, written as a sum divided by H * W.

    Same numbers as ``h.mean(dim=(2, 3))`` on CPU (ATen's CPU mean is that sum and division), but its
    backward hands on an expanded (stride-0) gradient where mean's materialises a contiguous NCHW one;
    meeting a channels_last activation, that puts LeakyReLU's backward on a slow mixed-layout path (several
    times slower than with matching layouts on the CPUs measured).
    """
    return h.sum(dim=(2, 3)) / (h.shape[2] * h.shape[3])


def check_net_args(net: str, dropout: float, **sizes) -> None:
    """Refuse sizes that are not positive integers and a dropout outside [0, 1), naming the argument, before a
    layer is built (they would otherwise fail later, at the first forward or deep inside torch)."""
    for name, value in sizes.items():
        if isinstance(value, bool) or not hasattr(value, "__index__") or operator.index(value) < 1:
            raise ValueError(f"{net}: {name} must be a positive integer, got {value!r}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"{net}: dropout is a probability in [0, 1), got {dropout!r}")


def make_norm(kind: str, channels: int) -> nn.Module:
    if kind == "none":
        return nn.Identity()
    if kind == "batch":
        # the authors' momentum: running statistics are 0.9 the last batch's, which in a JEM iteration is the
        # real x_lab forward (after x_p and x_q), so eval-mode sampling does not normalise by sample statistics
        # (with a p(x, y) term the last forward is its samples', as in the authors' code)
        return nn.BatchNorm2d(channels, momentum=0.9)
    if kind == "instance":
        return nn.InstanceNorm2d(channels, affine=True)
    if kind == "layer":
        # Layer norm over (C, H, W) with a per-channel affine.
        return nn.GroupNorm(1, channels)
    raise ValueError(f"unknown norm {kind!r}; expected none, batch, instance or layer")


class WideBlock(nn.Module):
    def __init__(self, in_ch: int, out_ch: int, stride: int, norm: str, dropout: float):
        super().__init__()
        self.norm1 = make_norm(norm, in_ch)
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, padding=1, bias=True)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.norm2 = make_norm(norm, out_ch)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, stride=stride, padding=1, bias=True)
        self.act = nn.LeakyReLU(LEAK)
        self.shortcut = None
        if stride != 1 or in_ch != out_ch:
            self.shortcut = nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv1(self.act(self.norm1(x)))
        h = self.conv2(self.act(self.norm2(self.dropout(h))))
        return h + (x if self.shortcut is None else self.shortcut(x))


class WideResNet(nn.Module):
    def __init__(self, depth: int = 28, widen_factor: int = 10, num_classes: int = 10, in_channels: int = 3,
                 norm: str = "none", dropout: float = 0.0):
        super().__init__()
        check_net_args("Wide-ResNet", dropout, depth=depth, widen_factor=widen_factor, num_classes=num_classes,
                       in_channels=in_channels)
        if (depth - 4) % 6 != 0 or depth < 10:
            raise ValueError(f"Wide-ResNet depth must be 6n+4 with n >= 1, got {depth}")
        n = (depth - 4) // 6
        widths = [16, 16 * widen_factor, 32 * widen_factor, 64 * widen_factor]
        self.conv1 = nn.Conv2d(in_channels, widths[0], 3, padding=1, bias=True)
        blocks = []
        in_ch = widths[0]
        for group, stride in zip(range(3), (1, 2, 2)):
            for i in range(n):
                blocks.append(WideBlock(in_ch, widths[group + 1], stride if i == 0 else 1, norm, dropout))
                in_ch = widths[group + 1]
        self.blocks = nn.Sequential(*blocks)
        self.norm = make_norm(norm, in_ch)
        self.act = nn.LeakyReLU(LEAK)
        self.fc = nn.Linear(in_ch, num_classes)
        self.feature_dim = in_ch

    def features(self, x: torch.Tensor) -> torch.Tensor:
        h = self.blocks(self.conv1(x))
        h = self.act(self.norm(h))
        return global_avg_pool(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x))

"""A small conv net for 8x8 and 28x28 inputs (digits, MNIST-sized data): quick runs on a CPU."""

from __future__ import annotations

import torch
from torch import nn

from fastjem.models.wrn import LEAK, check_net_args, global_avg_pool, make_norm


class ConvNet(nn.Module):
    """conv(c) -> conv(2c, stride 2) -> conv(4c, stride 2) -> pool -> Linear, LeakyReLU(0.2) throughout.

    Each conv is 3x3 and biased, preceded (after the first) by the chosen norm; global average
    pooling makes it independent of input size.
    """

    def __init__(self, num_classes: int = 10, in_channels: int = 1, width: int = 32, norm: str = "none",
                 dropout: float = 0.0):
        super().__init__()
        check_net_args("ConvNet", dropout, num_classes=num_classes, in_channels=in_channels, width=width)
        c = width
        self.body = nn.Sequential(
            nn.Conv2d(in_channels, c, 3, padding=1), nn.LeakyReLU(LEAK),
            make_norm(norm, c), nn.Conv2d(c, 2 * c, 3, stride=2, padding=1), nn.LeakyReLU(LEAK),
            nn.Dropout(dropout) if dropout > 0 else nn.Identity(),
            make_norm(norm, 2 * c), nn.Conv2d(2 * c, 4 * c, 3, stride=2, padding=1), nn.LeakyReLU(LEAK),
        )
        self.fc = nn.Linear(4 * c, num_classes)
        self.feature_dim = 4 * c

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return global_avg_pool(self.body(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x))

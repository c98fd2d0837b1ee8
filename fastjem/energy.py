"""Logits -> the three models of a JEM.

A classifier f(x) -> logits [B, K] defines p(y|x) = softmax(f(x))[y], the joint energy
E(x, y) = -f(x)[y] and the marginal energy E(x) = -logsumexp_y f(x)[y].
"""

from __future__ import annotations

import torch


def marginal_energy(logits: torch.Tensor) -> torch.Tensor:
    """E(x) = -logsumexp_y f(x)[y], reduced in fp32. logits [B, K] -> [B]."""
    return -torch.logsumexp(logits.float(), dim=1)


def joint_energy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """E(x, y) = -f(x)[y]. logits [B, K], y [B] -> [B] fp32."""
    return -logits.float().gather(1, y.view(-1, 1)).squeeze(1)


def log_py_given_x(logits: torch.Tensor) -> torch.Tensor:
    """log p(y|x) = log_softmax(f(x)). [B, K] -> [B, K] fp32."""
    return torch.log_softmax(logits.float(), dim=1)

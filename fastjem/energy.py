"""Logits -> the three models of a JEM.

A classifier f(x) -> logits [B, K] defines p(y|x) = softmax(f(x))[y], the joint energy
E(x, y) = -f(x)[y] and the marginal energy E(x) = -logsumexp_y f(x)[y].
"""

from __future__ import annotations

import torch


def _check_logits(name: str, logits: torch.Tensor) -> None:
    """Logits are [B, K]: a [B] energy or a [B, T, K] sequence would be reduced over the wrong dimension."""
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"{name}: logits must be a tensor [B, K], got a {type(logits).__name__}: for a network that "
                        "returns several outputs, pass its logits (net(x)[0])")
    if logits.dim() != 2:
        raise ValueError(f"{name}: logits must be [B, K] (one row of class scores per sample), got shape "
                         f"{tuple(logits.shape)}; a network that outputs its energy E [B] is the energy itself")


def marginal_energy(logits: torch.Tensor) -> torch.Tensor:
    """E(x) = -logsumexp_y f(x)[y], reduced in fp32. logits [B, K] -> [B]."""
    _check_logits("marginal_energy", logits)
    return -torch.logsumexp(logits.float(), dim=1)


def joint_energy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """E(x, y) = -f(x)[y]. logits [B, K], y [B] -> [B] fp32."""
    _check_logits("joint_energy", logits)
    return -logits.float().gather(1, y.view(-1, 1)).squeeze(1)


def log_py_given_x(logits: torch.Tensor) -> torch.Tensor:
    """log p(y|x) = log_softmax(f(x)). [B, K] -> [B, K] fp32."""
    _check_logits("log_py_given_x", logits)
    return torch.log_softmax(logits.float(), dim=1)

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
    if logits.shape[1] == 0:
        # logsumexp over no classes is -inf: every energy would be +inf without a word
        raise ValueError(f"{name}: logits must have K >= 1 classes, got shape {tuple(logits.shape)}")


def _check_labels(name: str, logits: torch.Tensor, y) -> None:
    """y is one class index per row of the logits: a float y failed inside gather, a y of another length gave that
    many energies (or an error about gather's sizes), and a [B, 1] y was flattened."""
    if not isinstance(y, torch.Tensor):
        raise TypeError(f"{name}: y must be an int64 tensor [B] of class indices, got a {type(y).__name__}: pass "
                        "torch.as_tensor(y, dtype=torch.long)")
    B, K = logits.shape
    if y.dtype not in (torch.int64, torch.int32) or tuple(y.shape) != (B,):
        raise ValueError(f"{name}: y must be int64 (or int32) [B={B}], one class index per row of the logits, got "
                         f"{y.dtype} {tuple(y.shape)}: pass y.long(), y.view(-1) for a column of labels")
    # checked on CPU tensors only: on a GPU it would cost a host sync (an index outside asserts in gather there)
    if y.device.type == "cpu" and y.numel():
        low, high = torch.aminmax(y)
        if low < 0 or high >= K:
            raise ValueError(f"{name}: y must be class indices in [0, K={K}), got values from {int(low)} to "
                             f"{int(high)}")


def marginal_energy(logits: torch.Tensor) -> torch.Tensor:
    """E(x) = -logsumexp_y f(x)[y], reduced in fp32. logits [B, K] -> [B]."""
    _check_logits("marginal_energy", logits)
    return -torch.logsumexp(logits.float(), dim=1)


def joint_energy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """E(x, y) = -f(x)[y]. logits [B, K], y [B] -> [B] fp32."""
    _check_logits("joint_energy", logits)
    _check_labels("joint_energy", logits, y)
    return -logits.float().gather(1, y.view(-1, 1)).squeeze(1)


def log_py_given_x(logits: torch.Tensor) -> torch.Tensor:
    """log p(y|x) = log_softmax(f(x)). [B, K] -> [B, K] fp32."""
    _check_logits("log_py_given_x", logits)
    return torch.log_softmax(logits.float(), dim=1)

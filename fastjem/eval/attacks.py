"""Projected gradient descent (Madry et al. 2018) under L-infinity and L2, on any differentiable classifier.

The attacked function is whatever maps images to logits: for a JEM that is ``RefineThenClassify``, so
the attack's gradients go through the SGLD refinement too. Images live in [-1, 1]; epsilons here are in
that space (the [0, 1] pixel scale times 2). Each attack step maximises the cross-entropy of the true
label, then projects back onto the epsilon ball and onto the valid image range.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

NORMS = ("linf", "l2")


def _flat_norm(t: torch.Tensor) -> torch.Tensor:
    return t.flatten(1).norm(dim=1).view(-1, *([1] * (t.dim() - 1)))


def project(delta: torch.Tensor, eps: float, norm: str) -> torch.Tensor:
    """Project perturbations [B, ...] onto the eps ball of ``norm``."""
    if norm == "linf":
        return delta.clamp(-eps, eps)
    scale = (eps / _flat_norm(delta).clamp_min(1e-12)).clamp(max=1.0)
    return delta * scale


def pgd_attack(classifier: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, y: torch.Tensor, eps: float,
               norm: str = "linf", steps: int = 10, step_size: float | None = None, random_start: bool = True,
               lo: float = -1.0, hi: float = 1.0, generator: torch.Generator | None = None) -> torch.Tensor:
    """Adversarial images x + delta with ||delta|| <= eps (``norm`` linf or l2) and lo <= x + delta <= hi.

    step_size defaults to 2.5 eps / steps. L-inf steps follow the gradient's sign; L2 steps its direction.
    The classifier runs with gradients enabled; its parameters are not touched.
    """
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    x = x.detach()
    if eps <= 0 or steps <= 0:
        return x.clone()
    alpha = 2.5 * eps / steps if step_size is None else step_size
    if random_start:
        noise = torch.rand(x.shape, generator=generator).to(x.device) * 2 - 1  # U(-1, 1)
        if norm == "l2":
            # A random direction with a radius uniform in [0, eps].
            noise = noise / _flat_norm(noise).clamp_min(1e-12) * torch.rand(len(x), generator=generator).to(
                x.device).view(-1, *([1] * (x.dim() - 1)))
        delta = project(noise * eps, eps, norm)
    else:
        delta = torch.zeros_like(x)
    # The valid range, widened to hold x itself (noisy inputs may lie outside [lo, hi]): clamping into it never
    # moves a pixel further from x, so the eps ball still holds.
    lo_t, hi_t = x.clamp(max=lo), x.clamp(min=hi)
    delta = (torch.max(torch.min(x + delta, hi_t), lo_t) - x).detach()
    for _ in range(steps):
        delta.requires_grad_(True)
        with torch.enable_grad():
            loss = F.cross_entropy(classifier(x + delta).float(), y)
            (grad,) = torch.autograd.grad(loss, delta)
        with torch.no_grad():
            if norm == "linf":
                step = alpha * grad.sign()
            else:
                step = alpha * grad / _flat_norm(grad).clamp_min(1e-12)
            delta = project(delta + step, eps, norm)
            # Stay a valid image: clamping keeps |delta| per pixel no larger, so the ball still holds.
            delta = (torch.max(torch.min(x + delta, hi_t), lo_t) - x).detach()
    return (x + delta).detach()

"""SGLD over any energy function.

The sampler knows nothing of JEM: give it ``energy_fn(x) -> E [B]`` and a starting batch.
One step is x <- x - alpha * dE/dx + sigma * N(0, I), the code form of Langevin dynamics;
proper Langevin (the stationary law is p(x) ~ exp(-E(x))) has sigma^2 = 2 alpha. JEM
deliberately uses alpha = 1, sigma = 0.01.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import torch
from torch import nn

from fastjem.energy import joint_energy, marginal_energy

EnergyFn = Callable[[torch.Tensor], torch.Tensor]


@contextlib.contextmanager
def sampling_mode(model: nn.Module | None) -> Iterator[None]:
    """Eval mode and frozen parameters while sampling: only input gradients are computed."""
    if model is None:
        yield
        return
    was_training = model.training
    flags = [(p, p.requires_grad) for p in model.parameters()]
    model.eval()
    for p, _ in flags:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p, flag in flags:
            p.requires_grad_(flag)
        model.train(was_training)


def model_energy(model: nn.Module, y: torch.Tensor | None = None) -> EnergyFn:
    """The JEM energies of a classifier: E(x) = -LSE f(x), or E(x, y) = -f(x)[y] when y is given."""
    if y is None:
        return lambda x: marginal_energy(model(x))
    return lambda x: joint_energy(model(x), y)


class SGLD:
    """Stochastic gradient Langevin dynamics: ``n_steps`` of x <- x - step_size dE/dx + noise N(0, I)."""

    def __init__(self, n_steps: int = 20, step_size: float = 1.0, noise: float = 0.01):
        if n_steps < 0 or step_size < 0 or noise < 0:
            raise ValueError("SGLD n_steps, step_size and noise must be >= 0")
        self.n_steps = n_steps
        self.step_size = float(step_size)
        self.noise = float(noise)

    def step(self, energy_fn: EnergyFn, x: torch.Tensor) -> torch.Tensor:
        """One SGLD step from x (fp32, detached); returns the new x."""
        x = x.detach().requires_grad_(True)
        (grad,) = torch.autograd.grad(energy_fn(x).sum(), x)
        with torch.no_grad():
            return x.detach() - self.step_size * grad.float() + self.noise * torch.randn_like(x)

    def sample(self, energy_fn: EnergyFn, x0: torch.Tensor, model: nn.Module | None = None) -> torch.Tensor:
        """Run the chain from x0 and return the final samples (fp32, detached).

        Pass the network as ``model`` to sample with it in eval mode and its parameters frozen
        (no weight gradients are computed); its train/requires_grad state is restored afterwards.
        """
        x = x0.detach().to(torch.float32)
        with sampling_mode(model), torch.enable_grad():
            for _ in range(self.n_steps):
                x = self.step(energy_fn, x)
        return x.detach()

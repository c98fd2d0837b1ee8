"""SGD with momentum whose learning rate is a device tensor, so that a CUDA graph can capture its step.

``torch.optim.SGD`` applies the learning rate as a number (``add_(buf, alpha=-lr)``): with a tensor learning rate
that reads the value on the host, a sync that a graph cannot hold. Here the step is the same arithmetic with the
learning rate as a tensor factor, and the momentum buffers exist (as zeros) from the start, so the first step is
not a special case:

    g = grad + weight_decay * p
    buf = momentum * buf + g          (the first step: buf = g, as 0 * momentum + g)
    p = p - lr * buf                  (nesterov: p = p - lr * (g + momentum * buf))

which is ``torch.optim.SGD`` with dampening 0 up to rounding: ``lr * buf`` is rounded before it is subtracted,
where torch's ``add_(buf, alpha=-lr)`` may fuse the two (an FMA), so single elements differ by an ulp (tested
against it). The state dict has its layout (a ``momentum_buffer`` per parameter), so checkpoints of either load
into the other.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class DeviceSGD(torch.optim.Optimizer):
    """SGD (momentum, weight decay, optional Nesterov) with ``lr`` a 0-dim tensor read on the device."""

    def __init__(self, params: Iterable[torch.Tensor], lr: torch.Tensor, momentum: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False):
        if not isinstance(lr, torch.Tensor) or lr.dim() != 0:
            raise ValueError("DeviceSGD: lr must be a 0-dim tensor (on the parameters' device)")
        if momentum < 0 or weight_decay < 0:
            raise ValueError(f"DeviceSGD: momentum and weight_decay must be >= 0, got {momentum}, {weight_decay}")
        if nesterov and momentum <= 0:
            raise ValueError("DeviceSGD: Nesterov momentum needs momentum > 0")
        super().__init__(params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay, "nesterov": nesterov})
        self.ensure_state()

    def ensure_state(self) -> None:
        """Momentum buffers as zeros for every parameter that has none (after construction or a state load)."""
        for group in self.param_groups:
            if group["momentum"] == 0:
                continue
            for p in group["params"]:
                state = self.state[p]
                if state.get("momentum_buffer") is None:
                    state["momentum_buffer"] = torch.zeros_like(p, memory_format=torch.preserve_format)

    def load_state_dict(self, state_dict: dict) -> None:
        """torch's load, then: each group's learning rate is the saved one held in this optimiser's own lr tensor
        (the one a captured graph reads; torch would put the saved float or a copy in its place), and momentum
        buffers a state saved before its first step lacks are made (as zeros)."""
        own = [group["lr"] for group in self.param_groups]
        super().load_state_dict(state_dict)
        for group, lr in zip(self.param_groups, own):
            saved = group["lr"]
            if saved is not lr:
                with torch.no_grad():
                    lr.copy_(torch.as_tensor(saved, dtype=lr.dtype))
                group["lr"] = lr
        self.ensure_state()

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            grads = [p.grad for p in params]
            if group["weight_decay"]:
                grads = torch._foreach_add(grads, params, alpha=group["weight_decay"])
            direction = grads
            if group["momentum"]:
                bufs = [self.state[p]["momentum_buffer"] for p in params]
                torch._foreach_mul_(bufs, group["momentum"])
                torch._foreach_add_(bufs, grads)
                direction = torch._foreach_add(grads, bufs, alpha=group["momentum"]) if group["nesterov"] else bufs
            # the learning rate as a tensor factor: no host read
            torch._foreach_sub_(params, torch._foreach_mul(direction, group["lr"]))
        return loss

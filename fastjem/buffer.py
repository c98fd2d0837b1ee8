"""The persistent replay buffer of SGLD chains (PCD), held as one device tensor."""

from __future__ import annotations

import torch

from fastjem import kernels
from fastjem.errors import ConfigError


class ReplayBuffer:
    """N samples of shape ``sample_shape`` in fp32 on ``device``, initialised U(-1, 1).

    ``sample`` draws B chain indices uniformly (or, when ``num_classes`` is given, from the block of
    the requested class: the buffer is K contiguous blocks of N/K) and restarts each drawn chain from
    U(-1, 1) with probability ``reinit_prob``; ``write_`` puts the advanced chains back. Everything
    happens on the device: no host round-trip, no data-dependent Python branch.

    The gather + reset and the write-back are the fused ops of ``fastjem.kernels`` (Triton on CUDA,
    their PyTorch references elsewhere; ``backend`` forces one). The reset decisions and fresh
    values come from the buffer's own device RNG state ``rng_state`` (seeded by ``seed``, or from
    torch's generator when None); the chain indices from torch's generator.
    """

    def __init__(self, size: int, sample_shape: tuple[int, ...], reinit_prob: float = 0.05,
                 num_classes: int | None = None, device: torch.device | str = "cpu", seed: int | None = None,
                 backend: str | None = None):
        if size <= 0:
            raise ConfigError(f"buffer size must be > 0, got {size}")
        if not 0.0 <= reinit_prob <= 1.0:
            raise ConfigError(f"reinit_prob must be in [0, 1], got {reinit_prob}")
        if num_classes is not None and size % num_classes != 0:
            raise ConfigError(f"class-conditional sampling splits the buffer into {num_classes} equal blocks: "
                              f"--buffer-size {size} is not divisible by {num_classes}; use e.g. "
                              f"{(size // num_classes + 1) * num_classes}")
        self.size = size
        self.sample_shape = tuple(sample_shape)
        self.reinit_prob = float(reinit_prob)
        self.num_classes = num_classes
        self.device = torch.device(device)
        # Never bf16: its spacing near 1 (0.004) is the size of the SGLD noise.
        self.data = torch.empty((size, *self.sample_shape), device=self.device, dtype=torch.float32).uniform_(-1, 1)
        if seed is None:
            seed = int(torch.randint(0, 2**62, ()).item())
        self.rng_state = kernels.new_rng_state(seed, self.device)
        self.backend = backend

    @property
    def class_block(self) -> int:
        return self.size // (self.num_classes or 1)

    def draw_indices(self, batch_size: int, y: torch.Tensor | None = None) -> torch.Tensor:
        """Uniform chain indices [B] (int64, on the device); within class blocks when y is given."""
        if y is None:
            return torch.randint(0, self.size, (batch_size,), device=self.device)
        if self.num_classes is None:
            raise ConfigError("class-conditional draws need a buffer built with num_classes")
        offset = torch.randint(0, self.class_block, (y.shape[0],), device=self.device)
        return y.to(self.device) * self.class_block + offset

    def sample(self, batch_size: int, y: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Draw chains: returns (x0 [B, *S] fp32, idx [B]); each drawn chain restarts with prob. reinit_prob."""
        idx = self.draw_indices(batch_size, y)
        x0 = self.gather_and_reset(idx)
        return x0, idx

    def gather_and_reset(self, idx: torch.Tensor) -> torch.Tensor:
        """buffer[idx] [B, *S], each row replaced by U(-1, 1) with probability reinit_prob (one fused op)."""
        return kernels.buffer_sample(self.data, idx, self.reinit_prob, self.rng_state, backend=self.backend)

    def write_(self, idx: torch.Tensor, x: torch.Tensor) -> None:
        """Write the advanced chains back at the indices they were drawn from."""
        kernels.buffer_write_(self.data, idx, x.detach().to(torch.float32).contiguous(), backend=self.backend)

    def state_dict(self) -> dict:
        return {"data": self.data, "size": self.size, "num_classes": self.num_classes,
                "reinit_prob": self.reinit_prob, "rng_state": self.rng_state}

    def load_state_dict(self, state: dict) -> None:
        data = state["data"]
        if tuple(data.shape) != tuple(self.data.shape):
            raise ConfigError(f"replay buffer shape {tuple(data.shape)} does not match {tuple(self.data.shape)}")
        self.data.copy_(data)
        if "rng_state" in state:
            self.rng_state.copy_(state["rng_state"])

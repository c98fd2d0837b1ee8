"""The reference: JEM's per-iteration work done the way the authors' eager code does it.

Written from DESIGN.md section 2 (Algorithm 1, the paper's Table 4 defaults) and its last
paragraph. It is the baseline fastjem is measured against, so it keeps every cost the fast path
removes and shares nothing with fastjem's hot path except the network definition:

- the replay buffer is a CPU tensor; chain indices, resets and the write-back happen on the host,
  and the drawn chains are copied to the device (and the advanced ones copied back);
- real batches are drawn and augmented on the host and copied to the device;
- SGLD is a Python loop of ``torch.autograd.grad`` calls on the full-precision network, whose
  parameters still require grad (autograd prunes weight gradients it is not asked for, but the
  graph is built for them);
- the loss takes three separate forwards (x_p, x_q, x_lab);
- the loss is read with ``.item()`` every iteration (the authors' divergence check: a host sync);
- fp32 everywhere. ``precision="ieee"`` turns TF32 off for convolutions and matmuls (a true fp32
  baseline); ``precision="default"`` leaves PyTorch's defaults, under which cuDNN convolutions on
  Ampere and later GPUs run in TF32. On CPU the two are the same.

The objective is the default JEM one: L = CE(f(x_lab), y_lab) + mean LSE f(x_q) - mean LSE f(x_p),
with Adam and a linear learning-rate warm-up.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

PRECISIONS = ("ieee", "default")


@dataclass(frozen=True)
class ReferenceConfig:
    batch_size: int = 64
    sgld_steps: int = 20
    sgld_step_size: float = 1.0
    sgld_noise: float = 0.01
    buffer_size: int = 10000
    reinit_prob: float = 0.05
    lr: float = 1e-4
    warmup_iters: int = 1000
    pad: int = 4  # reflect-pad before the random crop
    flip: bool = True
    data_noise: float = 0.03
    precision: str = "ieee"  # ieee | default


@contextlib.contextmanager
def fp32_mode(precision: str) -> Iterator[None]:
    """TF32 off ("ieee") or PyTorch's defaults ("default": cuDNN convs TF32, matmuls fp32); cuDNN autotuning at
    PyTorch's default (off) either way, whatever another engine in the process set; restored after."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    saved = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.benchmark)
    torch.backends.cudnn.benchmark = False
    if precision == "ieee":
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    else:
        torch.backends.cudnn.allow_tf32 = True
        torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.benchmark = saved


def lse(logits: torch.Tensor) -> torch.Tensor:
    """log p~(x) = logsumexp_y f(x)[y]. [B, K] -> [B]."""
    return torch.logsumexp(logits, dim=1)


def jem_loss(model: nn.Module, x_p: torch.Tensor, x_lab: torch.Tensor, y_lab: torch.Tensor,
             x_q: torch.Tensor) -> torch.Tensor:
    """L = CE(f(x_lab), y_lab) + [mean LSE f(x_q) - mean LSE f(x_p)], with three separate forwards."""
    lse_data = lse(model(x_p)).mean()
    lse_sample = lse(model(x_q)).mean()
    l_px = lse_sample - lse_data
    l_pyx = F.cross_entropy(model(x_lab), y_lab)
    return l_pyx + l_px


def sgld(model: nn.Module, x0: torch.Tensor, n_steps: int, step_size: float, noise: float) -> torch.Tensor:
    """x <- x + step_size * d LSE f(x) / dx + noise * N(0, I), the network in eval mode.

    A Python loop of autograd calls; the parameters keep requires_grad (as in the authors' code).
    """
    was_training = model.training
    model.eval()
    x = x0.clone().requires_grad_(True)
    for _ in range(n_steps):
        (grad,) = torch.autograd.grad(lse(model(x)).sum(), [x])
        x.data += step_size * grad + noise * torch.randn_like(x)
    model.train(was_training)
    return x.detach()


class ReferenceJEM:
    """The eager baseline: a network, a CPU replay buffer, host-side data, Adam.

    ``train_x`` uint8 [N, C, H, W] and ``train_y`` int64 [N] stay on the CPU, as a DataLoader's
    dataset does. ``step()`` is one training iteration; ``sample(B)`` the buffer draw + SGLD +
    write-back; ``draw(B)`` the two real batches.
    """

    def __init__(self, model: nn.Module, train_x: torch.Tensor, train_y: torch.Tensor, cfg: ReferenceConfig,
                 device: torch.device | str, seed: int = 0):
        self.cfg = cfg
        self.device = torch.device(device)
        self.model = model.to(self.device)
        self.train_x = train_x.cpu()
        self.train_y = train_y.cpu()
        self.gen = torch.Generator().manual_seed(seed)  # host randomness: indices, resets, augmentation
        self.buffer = torch.rand((cfg.buffer_size, *self.train_x.shape[1:]), generator=self.gen) * 2 - 1
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        self.iteration = 0
        self.last_loss = float("nan")

    # ------------------------------------------------------------------------------- host side
    def _augment(self, x_u8: torch.Tensor) -> torch.Tensor:
        """On the host: [0, 255] -> [-1, 1], reflect-pad + random crop, flip, + N(0, noise^2)."""
        x = x_u8.float() / 127.5 - 1.0
        b, _, h, w = x.shape
        p = self.cfg.pad
        if p > 0:
            padded = F.pad(x, (p, p, p, p), mode="reflect")
            offsets = torch.randint(0, 2 * p + 1, (b, 2), generator=self.gen).tolist()
            x = torch.stack([padded[i, :, dy:dy + h, dx:dx + w] for i, (dy, dx) in enumerate(offsets)])
        if self.cfg.flip:
            flip = torch.rand(b, generator=self.gen) < 0.5
            x = torch.where(flip[:, None, None, None], x.flip(3), x)
        if self.cfg.data_noise > 0:
            x = x + self.cfg.data_noise * torch.randn(x.shape, generator=self.gen)
        return x

    def draw(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(x_p, x_lab, y_lab): drawn and augmented on the host, then copied to the device."""
        n = len(self.train_y)
        ip = torch.randint(0, n, (batch_size,), generator=self.gen)
        il = torch.randint(0, n, (batch_size,), generator=self.gen)
        x_p = self._augment(self.train_x[ip]).to(self.device)
        x_lab = self._augment(self.train_x[il]).to(self.device)
        return x_p, x_lab, self.train_y[il].to(self.device)

    def buffer_draw(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Host indices and resets on the CPU buffer; the chains are copied to the device. -> (x0, idx)."""
        cfg = self.cfg
        idx = torch.randint(0, cfg.buffer_size, (batch_size,), generator=self.gen)
        kept = self.buffer[idx]
        fresh = torch.rand(kept.shape, generator=self.gen) * 2 - 1
        reset = (torch.rand(batch_size, generator=self.gen) < cfg.reinit_prob).float()[:, None, None, None]
        return (reset * fresh + (1 - reset) * kept).to(self.device), idx

    def buffer_write(self, idx: torch.Tensor, x: torch.Tensor) -> None:
        """Copy the advanced chains back into the CPU buffer."""
        self.buffer[idx] = x.cpu()

    def sample(self, batch_size: int) -> torch.Tensor:
        """Buffer draw, SGLD on the device, write-back."""
        cfg = self.cfg
        x0, idx = self.buffer_draw(batch_size)
        x = sgld(self.model, x0, cfg.sgld_steps, cfg.sgld_step_size, cfg.sgld_noise)
        self.buffer_write(idx, x)
        return x

    # ------------------------------------------------------------------------------- iteration
    def learning_rate(self) -> float:
        warm = min(1.0, (self.iteration + 1) / self.cfg.warmup_iters) if self.cfg.warmup_iters > 0 else 1.0
        return self.cfg.lr * warm

    def step(self) -> float:
        """One JEM iteration; returns the loss (read on the host every iteration, as the authors do)."""
        with fp32_mode(self.cfg.precision):
            for group in self.optimizer.param_groups:
                group["lr"] = self.learning_rate()
            self.model.train()
            x_p, x_lab, y_lab = self.draw(self.cfg.batch_size)
            x_q = self.sample(self.cfg.batch_size)
            loss = jem_loss(self.model, x_p, x_lab, y_lab, x_q)
            value = loss.item()
            if not math.isfinite(value) or abs(value) > 1e8:
                raise FloatingPointError(f"reference JEM diverged at iteration {self.iteration}: loss {value}")
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.iteration += 1
            self.last_loss = value
            return value

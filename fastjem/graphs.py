"""CUDA-graph capture of the SGLD loop.

The whole loop — eta forwards, eta input-gradient backwards and eta fused update kernels — is
recorded once and replayed as one launch per iteration. What keeps a replay correct:

- static input/output buffers: ``x0`` (and ``y``) are copied into the captured input tensors and
  the result is copied out of the captured output;
- parameters are updated in place by the optimiser, so the recorded kernels read the new weights;
- the noise kernels read their (seed, offset) from a device tensor that each step advances on the
  device, so every replay draws fresh noise (no host value is baked into the graph);
- the network is captured in eval mode with frozen parameters: no dropout and no weight-gradient
  kernels are recorded;
- warm-up runs (compilation, cuDNN autotuning, allocator growth) happen on a side stream first.
"""

from __future__ import annotations

import torch
from torch import nn

from fastjem.sampler import SGLD, model_energy, sampling_mode


class GraphedSGLD:
    """``sampler.sample`` for fixed shapes, captured in a CUDA graph; call it like the eager loop."""

    def __init__(self, sampler: SGLD, net: nn.Module, model: nn.Module, x0: torch.Tensor,
                 y: torch.Tensor | None = None, *, autocast=None, backend: str | None = None, warmup: int = 2):
        if not x0.is_cuda:
            raise RuntimeError("GraphedSGLD needs CUDA tensors; use SGLD.sample on other devices")
        self.sampler = sampler
        self.model = model
        self.static_x0 = x0.detach().to(torch.float32).clone()
        self.static_y = None if y is None else y.detach().clone()
        kwargs = {"backend": backend}
        if autocast is not None:
            kwargs["autocast"] = autocast
        energy = model_energy(net, self.static_y, **kwargs)
        sampler.rng_for(x0.device)
        side = torch.cuda.Stream(x0.device)
        side.wait_stream(torch.cuda.current_stream(x0.device))
        with sampling_mode(model):
            with torch.cuda.stream(side):
                for _ in range(warmup):
                    sampler.sample(energy, self.static_x0)
            torch.cuda.current_stream(x0.device).wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.static_out = sampler.sample(energy, self.static_x0)

    def __call__(self, x0: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
        self.static_x0.copy_(x0)
        if self.static_y is not None:
            self.static_y.copy_(y)
        self.graph.replay()
        return self.static_out.clone()

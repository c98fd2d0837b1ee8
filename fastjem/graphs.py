"""CUDA-graph capture of the SGLD loop, and of the whole training iteration.

The whole loop — eta forwards, eta input-gradient backwards and eta fused update kernels — is
recorded once and replayed as one launch per iteration. What keeps a replay correct:

- static input/output buffers: ``x0`` (and ``y``) are copied into the captured input tensors and
  the result is copied out of the captured output;
- parameters are updated in place by the optimiser, so the recorded kernels read the new weights;
- the noise kernels read their (seed, offset) from a device tensor that the loop advances on the
  device, so every replay draws fresh noise (no host value is baked into the graph);
- the network is captured in eval mode with frozen parameters: no dropout and no weight-gradient
  kernels are recorded;
- warm-up runs (compilation, cuDNN autotuning, allocator growth) happen on a side stream first.

``GraphedIteration`` captures one whole training iteration the same way (data draw, augmentation,
buffer draw, SGLD, loss, backward, Adam with capturable=True and a device learning rate, buffer
write-back, metric accumulation): one replay per iteration. Its warm-up changes the state it
warms up on, so every tensor and generator the iteration touches is put back before capture.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

from fastjem.sampler import SGLD, check_start, row_energies, sampling_mode


class GraphedSGLD:
    """``sampler.sample`` for fixed shapes, captured in a CUDA graph; call it like the eager loop.

    The energy is a classifier's, ``model_energy(net, y)``: E(x) = -LSE net(x), or E(x, y) = -net(x)[y] with y."""

    def __init__(self, sampler: SGLD, net: nn.Module, model: nn.Module, x0: torch.Tensor,
                 y: torch.Tensor | None = None, *, autocast=None, backend: str | None = None, warmup: int = 2,
                 parts: int = 1):
        check_start(x0)
        if not x0.is_cuda:
            raise RuntimeError("GraphedSGLD needs CUDA tensors; use SGLD.sample on other devices")
        self.sampler = sampler
        self.model = model
        self.static_x0 = x0.detach().to(torch.float32).clone()
        self.static_y = None if y is None else y.detach().clone()
        kwargs = {"backend": backend}
        if autocast is not None:
            kwargs["autocast"] = autocast
        # parts > 1: the batch's row blocks as chains on their own streams (SGLD.sample_parts)
        energy_for = row_energies(net, self.static_y, **kwargs)

        def run(x: torch.Tensor) -> torch.Tensor:
            return sampler.sample_parts(energy_for, x, parts)

        rng = sampler.rng_for(x0.device)
        # warm-up draws noise; put the state back so a graphed run draws what the eager loop would draw
        # (and a resumed run what the uninterrupted one drew)
        rng_start = rng.clone()
        side = torch.cuda.Stream(x0.device)
        side.wait_stream(torch.cuda.current_stream(x0.device))
        with sampling_mode(model):
            with torch.cuda.stream(side):
                for _ in range(warmup):
                    run(self.static_x0)
            torch.cuda.current_stream(x0.device).wait_stream(side)
            rng.copy_(rng_start)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.static_out = run(self.static_x0)

    def __call__(self, x0: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
        self.static_x0.copy_(x0)
        if self.static_y is not None:
            self.static_y.copy_(y)
        self.graph.replay()
        return self.static_out.clone()


class StateSnapshot:
    """Copies of tensors and generator states, put back in place: the tensors keep their storage, so a
    graph that recorded their addresses stays valid."""

    def __init__(self, tensors: Iterable[torch.Tensor], generators: Iterable[torch.Generator] = ()):
        self.tensors = list(tensors)
        self.saved = [t.detach().clone() for t in self.tensors]
        self.generators = list(generators)
        self.generator_states = [g.get_state() for g in self.generators]

    @torch.no_grad()
    def restore(self) -> None:
        for t, saved in zip(self.tensors, self.saved):
            t.copy_(saved)
        for g, state in zip(self.generators, self.generator_states):
            g.set_state(state)


def default_generator(device: torch.device) -> torch.Generator:
    """torch's default generator for ``device`` (what torch.randint(..., device=device) draws from)."""
    if device.type == "cuda":
        torch.cuda.init()  # default_generators is empty until CUDA is initialised
        return torch.cuda.default_generators[device.index if device.index is not None else torch.cuda.current_device()]
    return torch.default_generator


class GraphedIteration:
    """A whole training iteration ``step() -> dict of device tensors``, captured as one CUDA graph.

    ``snapshot`` holds every tensor the iteration changes in place (parameters, optimiser moments and
    step counters, learning rate, replay buffer, device RNG states, metric accumulators) and every
    generator it draws from, the device's default one included. Warm-up runs on a side stream, then
    the snapshot is restored before capture (capture records, it does not execute), so the first
    ``replay()`` computes the iteration the eager ``step()`` would have computed next. ``replay``
    returns the outputs captured from ``step`` (static tensors, overwritten by the next replay).
    """

    def __init__(self, step: Callable[[], dict], snapshot: StateSnapshot, device: torch.device | str,
                 warmup: int = 2):
        # "cuda" as a string failed with "'str' object has no attribute 'type'"
        device = torch.device(device)
        if device.type != "cuda":
            raise RuntimeError("GraphedIteration needs a CUDA device; call the iteration eagerly elsewhere")
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            for _ in range(warmup):
                step()
        torch.cuda.current_stream(device).wait_stream(side)
        snapshot.restore()
        self.graph = torch.cuda.CUDAGraph()
        default = default_generator(device)
        for g in snapshot.generators:
            # the default generator is registered by the capture itself; others must be named
            if g is not default and g.device.type == "cuda":
                self.graph.register_generator_state(g)
        with torch.cuda.graph(self.graph):
            self.outputs = step()

    def replay(self) -> dict:
        self.graph.replay()
        return self.outputs

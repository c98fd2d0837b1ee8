"""SGLD over any energy function.

The sampler knows nothing of JEM: give it ``energy_fn(x) -> E [B]`` and a starting batch.
One step is x <- x - alpha * dE/dx + sigma * N(0, I), the code form of Langevin dynamics;
proper Langevin (the stationary law is p(x) ~ exp(-E(x))) has sigma^2 = 2 alpha. JEM
deliberately uses alpha = 1, sigma = 0.01.
"""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Callable, Iterator

import torch
from torch import nn

from fastjem import kernels
from fastjem.checkpoint import check_part_state, check_rng_state
from fastjem.errors import as_integer, as_real
from fastjem.kernels.rng import check_seed, counters_for

EnergyFn = Callable[[torch.Tensor], torch.Tensor]
InputGrad = Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]


def part_bounds(rows: int, parts: int) -> list[tuple[int, int]]:
    """[start, stop) of ``parts`` blocks of ``rows`` rows, as torch.tensor_split cuts them (larger blocks first)."""
    size, extra = divmod(rows, parts)
    bounds, start = [], 0
    for k in range(parts):
        stop = start + size + (k < extra)
        bounds.append((start, stop))
        start = stop
    return bounds


@contextlib.contextmanager
def eval_mode(model: nn.Module) -> Iterator[None]:
    """``model.eval()`` for the block, then every submodule back in its own mode (a batch norm the caller froze
    with ``.eval()`` inside a training network stays frozen; ``model.train(was_training)`` would unfreeze it)."""
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for m, training in modes:
            m.training = training


def check_model(model) -> None:
    """``model`` is the network to freeze: a tensor of labels passed third (sample's third argument) or an energy
    function failed with "'Tensor' object has no attribute 'parameters'"."""
    if isinstance(model, nn.Module):
        return
    hint = ("labels for E(x, y) go to the energy: fastjem.model_energy(net, y)" if isinstance(model, torch.Tensor)
            else "the energy function goes first: sample(energy_fn, x0, model=net)")
    raise TypeError(f"SGLD: model must be the network (a torch.nn.Module) to sample in eval mode with frozen "
                    f"parameters, or None; got a {type(model).__name__}: {hint}")


@contextlib.contextmanager
def sampling_mode(model: nn.Module | None) -> Iterator[None]:
    """Eval mode and frozen parameters while sampling: only input gradients are computed."""
    if model is None:
        yield
        return
    check_model(model)
    flags = [(p, p.requires_grad) for p in model.parameters()]
    for p, _ in flags:
        p.requires_grad_(False)
    try:
        with eval_mode(model):
            yield
    finally:
        for p, flag in flags:
            p.requires_grad_(flag)


def model_energy(model: nn.Module, y: torch.Tensor | None = None, *,
                 autocast: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
                 backend: str | None = None, input_grad: InputGrad | None = None) -> EnergyFn:
    """The JEM energies of a classifier: E(x) = -LSE f(x), or E(x, y) = -f(x)[y] when y is given.

    ``autocast`` wraps the network's forward (e.g. bf16 autocast); the energy is reduced in fp32 by
    the fused ``lse_energy`` op (``backend`` selects Triton or the reference). ``input_grad(x, y)``: dE/dx
    computed another way (``compiled_input_grad``), which ``SGLD`` then takes in place of autograd's.
    """

    def energy(x: torch.Tensor) -> torch.Tensor:
        with autocast():
            logits = model(x)
        return kernels.lse_energy(logits, y, backend=backend)

    if input_grad is not None:
        energy.input_grad = lambda x: input_grad(x, y)
    return energy


def row_energies(model: nn.Module, y: torch.Tensor | None = None, *,
                 autocast: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
                 backend: str | None = None, input_grad: InputGrad | None = None) -> Callable[[int, int], EnergyFn]:
    """``energy_for(start, stop)``: ``model_energy`` of rows [start, stop), with their labels when y is given
    (what ``SGLD.sample_parts`` takes)."""

    def energy_for(start: int, stop: int) -> EnergyFn:
        return model_energy(model, None if y is None else y[start:stop], autocast=autocast, backend=backend,
                            input_grad=input_grad)

    return energy_for


def compiled_input_grad(model: nn.Module, *,
                        autocast: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
                        cpp_wrapper: bool = True) -> InputGrad:
    """``grad(x, y)``: dE/dx of ``model_energy``'s energies as one compiled graph, ``torch.compile`` of
    ``torch.func.grad``: forward and input gradient together, nothing saved between graphs, no weight gradient.
    What a CPU engine samples with (``Engine.compile_sgld``). The energy is ``lse_energy_ref``, the same formula in
    PyTorch ops (a ``torch.func`` transform of the registered op fails inside ``torch.compile``:
    pytorch/pytorch#170834); the gradient agrees with autograd's to fp32 rounding.

    ``cpp_wrapper``: inductor's C++ wrapper, the graph's convolution calls and loops run from C++ rather than from
    generated Python: the same kernels and numbers, 6-8% of a bf16 WRN-10-2 step less on an Intel Xeon with AMX
    (``bench/sgld_study.py``'s ``py-wrapper`` variant), for a longer first compile (the wrapper is C++ too)."""

    def energy_sum(x: torch.Tensor, y: torch.Tensor | None) -> torch.Tensor:
        with autocast():
            logits = model(x)
        return kernels.lse_energy_ref(logits, y).sum()

    return torch.compile(torch.func.grad(energy_sum), dynamic=False, options={"cpp_wrapper": cpp_wrapper})


NOT_DIFFERENTIABLE = ("SGLD: energy_fn(x) must be differentiable in x, computed from x by torch operations; its "
                      "result has no gradient path to x (computed under torch.no_grad(), from x.detach(), through "
                      ".item(), .numpy() or an integer cast, or not from x at all)")


def check_start(x0) -> None:
    """x0 is a tensor: a list of starting points failed with "'list' object has no attribute 'detach'"."""
    if not isinstance(x0, torch.Tensor):
        raise TypeError(f"SGLD: x0 must be a tensor of starting samples [B, ...], got a {type(x0).__name__}: pass "
                        "torch.as_tensor(x0, dtype=torch.float32)")


def check_energy_fn(energy_fn) -> None:
    """energy_fn is a function of x: an energy already computed (a tensor) failed with "'Tensor' object is not
    callable" at the first step."""
    if not callable(energy_fn):
        raise TypeError(f"SGLD: energy_fn must be a function x -> E [B] that the sampler calls at every step, got a "
                        f"{type(energy_fn).__name__}: pass e.g. fastjem.model_energy(net), or "
                        "lambda x: fastjem.marginal_energy(net(x)), not its value")


def check_energy_for(energy_for, rows: int) -> None:
    """``sample_parts``' ``energy_for`` takes (start, stop): an energy of x given there (``model_energy(net)`` for
    ``row_energies(net)``) failed with "energy() takes 1 positional argument but 2 were given"."""
    if not callable(energy_for):
        raise TypeError(f"SGLD.sample_parts: energy_for must be a function (start, stop) -> the energy of rows "
                        f"[start, stop), got a {type(energy_for).__name__}")
    try:
        signature = inspect.signature(energy_for)
    except (TypeError, ValueError):  # a callable without a signature to read: called as it is
        return
    try:
        signature.bind(0, rows)
    except TypeError:
        raise TypeError(f"SGLD.sample_parts: energy_for must take (start, stop), a part's rows, and return their "
                        f"energy function; got a function of {signature}: for a classifier pass "
                        "fastjem.sampler.row_energies(net, y), not model_energy(net, y)") from None


def raise_if_float64(err: RuntimeError) -> None:
    """A float64 network (or energy) met the fp32 samples: torch named the two dtypes and not where the fp32 came
    from (x0 may have been float64 too: the sampler casts it). Raises a TypeError from ``err`` where it says so."""
    if "double" in str(err).lower():
        first = str(err).splitlines()[0] if str(err) else ""
        raise TypeError(f"SGLD: the energy failed on the fp32 samples ({first}): samples are always fp32 (x0 is "
                        "cast to it), so cast a float64 network with net.float() before sampling") from err


def check_energy(energy: torch.Tensor, x: torch.Tensor) -> None:
    """Refuse an energy that is not one value per sample of x ([B], [B, 1], or its sum as a scalar), or that has no
    gradient path to x, before autograd differentiates it: summed, a classifier's logits [B, K] would pass for an
    energy and the chain would descend the negated sum of the logits."""
    if not isinstance(energy, torch.Tensor):
        raise TypeError(f"SGLD: energy_fn(x) must return a tensor of energies E [B], got {type(energy).__name__}")
    rows = x.shape[0] if x.dim() else 1
    if energy.dim() and tuple(energy.shape) not in ((rows,), (rows, 1)):
        raise ValueError(f"SGLD: energy_fn(x) must return one energy per sample, E [{rows}] (or [{rows}, 1], or "
                         f"their sum), got shape {tuple(energy.shape)}; a classifier's logits [B, K] are not an "
                         "energy: sample fastjem.model_energy(net) (E(x) = -logsumexp f(x)), or "
                         "lambda x: fastjem.marginal_energy(net(x))")
    if not energy.requires_grad:
        raise ValueError(NOT_DIFFERENTIABLE)


class SGLD:
    """Stochastic gradient Langevin dynamics: ``n_steps`` of x <- x - step_size dE/dx + noise N(0, I).

    The update is the fused ``sgld_step_`` op: one pass over x and the gradient, the Gaussian drawn
    in the kernel from the sampler's device RNG state ``rng_state`` (int64 (seed, offset), advanced
    on the device past every step's counters, once per chain, so a CUDA-graph replay draws fresh noise).
    ``seed`` None seeds it from torch's generator; a ``ReplayBuffer`` given the same seed draws the same Philox
    numbers (its restart decisions would set the size of some of the first step's noise): give them different
    seeds. Samples are always fp32.

    Two options common in other EBM samplers (off by default, as in JEM): ``grad_clip`` c clips dE/dx
    element-wise to [-c, c] before the step (Du & Mordatch's IGEBM), so no coordinate's drift exceeds
    step_size * c; ``clamp`` (lo, hi) projects x onto [lo, hi] after every step (e.g. the data range).

    ``compiled_update``: on a CPU, the update as ``sgld_step_compiled_`` (the reference compiled by inductor, what
    a CPU engine that compiles its SGLD step runs; the same counters, the noise to the last ulps); else the op.
    """

    def __init__(self, n_steps: int = 20, step_size: float = 1.0, noise: float = 0.01, seed: int | None = None,
                 backend: str | None = None, *, grad_clip: float | None = None,
                 clamp: tuple[float, float] | None = None, compiled_update: bool = False):
        # types first: a string failed the comparisons below with a bare TypeError, 2.5 steps failed at the first
        # sample, a bool was taken for 0 or 1
        n_steps = as_integer("SGLD n_steps (the number of steps, e.g. 20)", n_steps)
        step_size = as_real("SGLD step_size (e.g. 1.0)", step_size)
        noise = as_real("SGLD noise (the standard deviation of the noise, e.g. 0.01)", noise)
        if n_steps < 0 or not (0 <= step_size < math.inf and 0 <= noise < math.inf):
            raise ValueError(f"SGLD n_steps, step_size and noise must be finite and >= 0, got n_steps={n_steps}, "
                             f"step_size={step_size}, noise={noise}")
        if grad_clip is not None and not as_real("SGLD grad_clip (or None)", grad_clip) > 0:
            raise ValueError(f"SGLD grad_clip must be > 0 (or None), got {grad_clip}")
        if clamp is not None:
            if isinstance(clamp, (str, bytes)) or not hasattr(clamp, "__len__") or len(clamp) != 2:
                raise TypeError(f"SGLD clamp must be a pair (low, high) of numbers (or None), got {clamp!r}")
            clamp = (as_real("SGLD clamp's low", clamp[0]), as_real("SGLD clamp's high", clamp[1]))
            if not clamp[0] < clamp[1]:
                raise ValueError(f"SGLD clamp must be (low, high) with low < high, got {clamp}")
        if not isinstance(compiled_update, bool):
            raise TypeError(f"SGLD compiled_update must be True or False, got {compiled_update!r}")
        if seed is not None:
            # checked now, not at the first sample: the same words new_rng_state would say then
            seed = check_seed("SGLD", seed)
        if backend is not None and backend not in kernels.BACKENDS:
            raise ValueError(f"SGLD backend must be one of {kernels.BACKENDS} (or None for the current default), got "
                             f"{backend!r}")
        self.compiled_update = compiled_update
        self.grad_clip = None if grad_clip is None else float(grad_clip)
        self.clamp = clamp
        self.n_steps = n_steps
        self.step_size = float(step_size)
        self.noise = float(noise)
        self.seed = seed
        self.backend = backend
        self.rng_state: torch.Tensor | None = None
        self._streams: dict = {}  # (device, parts) -> one CUDA stream per part, for sample_parts

    def __repr__(self) -> str:
        # the constructor's settings (the options off by default only where set), not the RNG state
        extra = "".join(f", {name}={value!r}" for name, value in (
            ("seed", self.seed), ("backend", self.backend), ("grad_clip", self.grad_clip), ("clamp", self.clamp))
            if value is not None)
        extra += ", compiled_update=True" if self.compiled_update else ""
        return f"SGLD(n_steps={self.n_steps}, step_size={self.step_size!r}, noise={self.noise!r}{extra})"

    def rng_for(self, device: torch.device) -> torch.Tensor:
        """The device RNG state, created on first use on ``device``."""
        if self.rng_state is None:
            seed = self.seed if self.seed is not None else int(torch.randint(0, 2**62, ()).item())
            self.rng_state = kernels.new_rng_state(seed, device)
        elif self.rng_state.device != torch.device(device):
            self.rng_state = self.rng_state.to(device)
        return self.rng_state

    def step_(self, energy_fn: EnergyFn, x: torch.Tensor, rng: torch.Tensor | None = None, base: int = 0,
              advance: int | None = None) -> torch.Tensor:
        """One SGLD step on x (contiguous fp32), in place; returns x detached (the same storage). x's own
        requires_grad is left as it is, and the step works under ``torch.no_grad()`` too. ``rng``, ``base``,
        ``advance``: for a part of a larger batch (``sample_parts``), its copy of the state and where its noise
        lies."""
        rng = self.rng_for(x.device) if rng is None else rng
        input_grad = getattr(energy_fn, "input_grad", None)
        x = x.detach()  # an alias: the update below writes the caller's tensor
        if input_grad is not None:  # dE/dx computed another way (a compiled graph: compiled_input_grad)
            grad = input_grad(x)
        else:
            with torch.enable_grad():
                leaf = x.detach().requires_grad_(True)
                energy = energy_fn(leaf)
                check_energy(energy, leaf)
                (grad,) = torch.autograd.grad(energy.sum(), leaf, allow_unused=True)
            if grad is None:
                raise ValueError(NOT_DIFFERENTIABLE)
        if self.grad_clip is not None:
            grad = grad.clamp(-self.grad_clip, self.grad_clip)
        # x += (-step_size) * dE/dx + noise * N(0, I)
        if self.compiled_update and x.device.type == "cpu":
            kernels.sgld_step_compiled_(x, grad, -self.step_size, self.noise, rng, base=base, advance=advance)
        else:
            kernels.sgld_step_(x, grad, -self.step_size, self.noise, rng, backend=self.backend, base=base,
                               advance=advance)
        if self.clamp is not None:
            x.clamp_(*self.clamp)
        return x

    def sample(self, energy_fn: EnergyFn, x0: torch.Tensor, model: nn.Module | None = None) -> torch.Tensor:
        """Run the chain from x0 and return the final samples (fp32, detached; x0 is not modified).

        ``energy_fn(x)``: one energy per sample, E [B] (or [B, 1], or their sum), differentiable in x; anything
        else (a classifier's logits [B, K], a result without a gradient path to x) is refused at the first step.

        Pass the network as ``model`` to sample with it in eval mode and its parameters frozen
        (no weight gradients are computed); its train/requires_grad state is restored afterwards.
        """
        check_energy_fn(energy_fn)
        check_start(x0)
        # inference_mode(False): called under torch.inference_mode() too (enable_grad alone cannot undo it)
        with torch.inference_mode(False), sampling_mode(model), torch.enable_grad():
            x = x0.detach().to(torch.float32).clone(memory_format=torch.contiguous_format)
            rng = self.rng_for(x.device)
            per_step = counters_for(x.numel())
            try:
                x = self._chain(energy_fn, x, rng, 0, per_step)
            except RuntimeError as err:
                raise_if_float64(err)
                raise
            self._advance_(rng, per_step)
        return x.detach()

    def _chain(self, energy_fn: EnergyFn, x: torch.Tensor, rng: torch.Tensor, base: int, per_step: int
               ) -> torch.Tensor:
        """``n_steps`` steps on x, step t drawing the counters at ``base + t * per_step`` with the state left as it
        is: the numbers of a state advanced by ``per_step`` at every step, one kernel a step (``sgld_step_``'s
        ``advance=0``). The caller advances the state once (``_advance_``)."""
        for t in range(self.n_steps):
            x = self.step_(energy_fn, x, rng, base + t * per_step, 0)
        return x

    def _advance_(self, rng: torch.Tensor, per_step: int) -> None:
        """The state moved past a chain's ``n_steps`` steps of ``per_step`` counters each."""
        if self.n_steps:
            rng[1:].add_(self.n_steps * per_step)

    def sample_parts(self, energy_for: Callable[[int, int], EnergyFn], x0: torch.Tensor, parts: int,
                     model: nn.Module | None = None) -> torch.Tensor:
        """``sample`` with the batch cut into ``parts`` blocks of rows, each its own chain: ``energy_for(start,
        stop)`` is the energy of rows [start, stop) (``row_energies``). Each block draws the noise the whole
        batch draws for its rows (the one RNG state, read by every block and moved once after them), so where a row's
        energy does not depend on the other rows (the network in eval mode, no batch statistics) this computes the
        chains ``sample`` computes: the same noise, the network's arithmetic on fewer rows. On CUDA each block
        runs on its own stream, joined before the result, so one block's kernels may fill the SMs another's leave
        idle; elsewhere the blocks run one after another. ``parts`` 1 is ``sample`` itself."""
        check_start(x0)
        rows = x0.shape[0]
        parts = as_integer("SGLD parts (a number of blocks of rows)", parts)
        if not 1 <= parts <= rows:
            raise ValueError(f"SGLD parts must be in [1, batch size {rows}], got {parts}")
        check_energy_for(energy_for, rows)
        if parts == 1:
            return self.sample(energy_for(0, rows), x0, model=model)
        with torch.inference_mode(False):
            return self._sample_parts(energy_for, x0, parts, model)

    def _sample_parts(self, energy_for: Callable[[int, int], EnergyFn], x0: torch.Tensor, parts: int,
                      model: nn.Module | None) -> torch.Tensor:
        rows = x0.shape[0]
        # each part copies its own rows (below): x0 is read, never written, and copied once (an inference tensor
        # becomes a normal one there)
        x = x0.detach().to(torch.float32)
        n = x.numel()
        per_row = n // rows
        if per_row % 4:
            raise ValueError(f"SGLD parts need samples of a multiple of 4 elements (the noise counters' width), "
                             f"got {per_row}; sample the batch whole (parts 1)")
        streams = None
        if x.is_cuda:
            if (x.device, parts) not in self._streams:
                self._streams[x.device, parts] = [torch.cuda.Stream(x.device) for _ in range(parts)]
            streams = self._streams[x.device, parts]
        # every part reads the one state (none writes it); it moves once, after the join
        rng = self.rng_for(x.device)
        bounds = part_bounds(rows, parts)
        per_step = counters_for(n)
        main = torch.cuda.current_stream(x.device) if streams is not None else None
        outs = []
        with sampling_mode(model), torch.enable_grad():
            for k, (start, stop) in enumerate(bounds):
                if main is not None:
                    streams[k].wait_stream(main)
                with torch.cuda.stream(streams[k]) if main is not None else contextlib.nullcontext():
                    energy = energy_for(start, stop)
                    check_energy_fn(energy)
                    xk = x[start:stop].clone(memory_format=torch.contiguous_format)
                    try:
                        outs.append(self._chain(energy, xk, rng, start * per_row // 4, per_step))
                    except RuntimeError as err:
                        raise_if_float64(err)
                        raise
            if main is not None:
                for stream in streams:
                    main.wait_stream(stream)
        self._advance_(rng, per_step)
        return torch.cat(outs).detach()

    def state_dict(self) -> dict:
        """The device RNG state ``rng_state`` (None before the first draw), the sampler's own tensor (as
        ``nn.Module.state_dict``'s are): ``torch.save`` it, or clone it to keep it in memory. The settings
        (n_steps, step_size, noise, ...) are the constructor's, not state."""
        return {"rng_state": self.rng_state}

    def load_state_dict(self, state: dict) -> None:
        """The RNG state from ``state_dict()``, copied into this sampler's own state tensor where it has one (on its
        device; a ``GraphedSGLD`` built on this sampler keeps reading that tensor, so it continues from the loaded
        state), else a copy of the saved one. A saved None (a sampler that had not drawn yet) makes this one start
        as it would before its first draw: from its ``seed`` (a seed drawn from torch's generator when None)."""
        check_part_state("SGLD", state, ("rng_state",))
        saved = state["rng_state"]
        if saved is None:
            if self.rng_state is not None:
                seed = self.seed if self.seed is not None else int(torch.randint(0, 2**62, ()).item())
                self.rng_state.copy_(kernels.new_rng_state(seed, self.rng_state.device))
            return
        check_rng_state("SGLD", saved)
        if self.rng_state is None:
            self.rng_state = saved.clone()
        else:
            self.rng_state.copy_(saved)

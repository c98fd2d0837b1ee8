"""Divergence detection and automatic recovery.

The paper's own limitation: JEM "regularly diverged throughout training, requiring [models] to be
restarted with lower learning rates or with increased regularization"; the authors restarted from
checkpoints by hand with a new seed or raised SGLD steps from 20 to 40. The guard does that itself:

- detection on the device, no host sync per iteration: each iteration ORs into a device flag
  whether the loss or an energy is non-finite, an energy's magnitude exceeds ``energy_bound``, or
  the data/sample energy gap exceeds ``gap_bound``. The flag is read every ``check_every``
  iterations, together with two checks of the current parameters (which no loss has seen yet: the
  flag's last loss was computed before the last update), all in one host read: their energies on
  replay-buffer samples and on fresh U(-1, 1) noise must be finite and within ``energy_bound``, and, the paper's
  diagnosis, the buffer's must not be far (``buffer_margin``) above the noise's, i.e. the sampler
  still finds low energy;
- recovery: roll back model, optimiser, buffer, sampler and RNG states to the last good snapshot
  (kept in memory, taken after a healthy check at most every ``snapshot_every`` iterations; the
  on-disk checkpoint is only ever written from a healthy state), reseed, and climb the remedy
  ladder (``remedies``): more SGLD steps (x2), a lower learning rate (x0.5), an L2 penalty on the
  energies (0.1, then doubled); a classifier-only run, which samples nothing, climbs only the lr rungs.
  After ``max_recoveries`` the run stops with a report; the last good checkpoint is intact.

The guard consumes no random numbers and changes no computation, so a healthy run is bit-identical
with the guard on or off.
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass

import torch

from fastjem.sampler import eval_mode


@dataclass
class RecoveryState:
    """What recoveries changed; saved in checkpoints so a resumed run keeps its remedies."""

    lr_scale: float = 1.0
    sgld_steps: int = 20
    energy_l2: float = 0.0
    recoveries: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def _clone(obj):
    """Deep copy with tensors cloned (states of model, optimiser, buffer, RNGs)."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, dict):
        return {k: _clone(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_clone(v) for v in obj)
    return copy.deepcopy(obj)


class DivergenceGuard:
    def __init__(self, trainer, energy_bound: float, gap_bound: float, buffer_margin: float):
        self.trainer = trainer
        self.energy_bound = energy_bound
        self.gap_bound = gap_bound
        self.buffer_margin = buffer_margin
        self.flag = torch.zeros((), dtype=torch.bool, device=trainer.device)
        gen = torch.Generator().manual_seed(20200101)
        shape = (min(64, trainer.buffer.size), *trainer.buffer.sample_shape)
        # A fixed batch of fresh uniform noise: the reference energy for the buffer diagnosis.
        self.probe = (torch.rand(shape, generator=gen) * 2 - 1).to(trainer.device)
        self.snapshot: dict | None = None
        self.reasons: list[str] = []

    def observe(self, parts: dict) -> None:
        """OR this iteration's badness into the device flag (no sync)."""
        bad = ~torch.isfinite(parts["loss"])
        if "e_data" in parts:
            e_d, e_s = parts["e_data"], parts["e_sample"]
            bad = bad | ~torch.isfinite(e_d) | ~torch.isfinite(e_s)
            bad = bad | (e_d.abs() > self.energy_bound) | (e_s.abs() > self.energy_bound)
            bad = bad | ((e_s - e_d).abs() > self.gap_bound)
        self.flag |= bad

    @torch.no_grad()
    def healthy(self) -> bool:
        """Read the flag, the parameters' finiteness and the buffer diagnosis's two energies in one host sync (they
        are stacked on the device and read together); record why when unhealthy."""
        t = self.trainer
        self.reasons = []
        # one finiteness value for all parameter tensors (not one each: 58 on a WRN-28-10)
        values = [self.flag.float(), torch.stack([torch.isfinite(p).all() for p in t.model.parameters()]).all().float()]
        if t.cfg.generative:
            # computed whatever the parameters hold (their energies are only looked at when they are finite): a
            # branch on their finiteness would be a host sync of its own
            with eval_mode(t.model), t.engine.autocast():
                values.append(-t.model(t.buffer.data[: len(self.probe)]).float().logsumexp(1).mean())
                values.append(-t.model(self.probe).float().logsumexp(1).mean())
        flag, params_finite, *energies = torch.stack(values).tolist()  # the one host sync
        if flag:
            self.reasons.append(f"non-finite or out-of-bound loss/energy (|E| > {self.energy_bound:g} or "
                                f"|gap| > {self.gap_bound:g})")
        if not params_finite:
            self.reasons.append("non-finite parameters")
        if energies and params_finite:
            e_buf, e_uni = energies
            # The flag only saw losses computed before the last update; these energies come from the current
            # parameters, so an update that blew them up is caught here, before it can become the snapshot.
            if not (math.isfinite(e_buf) and math.isfinite(e_uni)) or max(abs(e_buf), abs(e_uni)) > self.energy_bound:
                self.reasons.append(f"the current parameters give out-of-bound energies (replay buffer {e_buf:.3g}, "
                                    f"fresh noise {e_uni:.3g}; |E| > {self.energy_bound:g})")
            elif e_buf - e_uni > self.buffer_margin:
                self.reasons.append(f"replay-buffer energy {e_buf:.3g} is far above fresh noise's "
                                    f"{e_uni:.3g} (margin {self.buffer_margin:g})")
        return not self.reasons

    def take_snapshot(self) -> None:
        self.snapshot = _clone(self.trainer.state_dict())
        self.flag.zero_()

    def restore_snapshot(self) -> int:
        """Roll back to the last good snapshot; returns its iteration."""
        self.trainer.load_state(_clone(self.snapshot))
        self.flag.zero_()
        return self.trainer.iteration

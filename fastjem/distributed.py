"""Data-parallel training across processes (``torchrun --nproc-per-node N -m fastjem train ...``).

Each rank holds a full replica of the network, its own shard of the replay buffer (N / world chains,
its own RNG streams) and its shard of every global batch; gradients are averaged with one
coalesced all-reduce per iteration, so the replicas stay identical. NCCL on CUDA, gloo on CPU.
Logging and checkpoints come from rank 0; a checkpoint holds every rank's buffer shard and RNG
states, so a run resumes exactly on the same world size.
"""

from __future__ import annotations

import atexit
import importlib
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from fastjem.errors import ConfigError


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def world_from_env() -> int:
    """The number of processes torchrun started this one among (1 outside torchrun, or where its variables are
    incomplete: init_from_env says what is missing), read before any process group exists, so that a config the
    per-process batch cannot train is refused before the group is joined and the data read."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    return world if world > 1 and "RANK" in os.environ else 1


def init_from_env(device_name: str) -> DistInfo:
    """Join the process group that torchrun describes in the environment (no-op for one process). A group the
    caller made before is used as it is, and left to the caller to destroy (import torch._dynamo before making it,
    as this function does, or destroy_process_group cannot free it: see below)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    # torchrun sets them all; WORLD_SIZE alone (set by hand, or left from another tool) starts no other process
    missing = [v for v in ("RANK", *(() if dist.is_initialized() else ("MASTER_ADDR", "MASTER_PORT")))
               if v not in os.environ]
    if missing:
        raise ConfigError(f"WORLD_SIZE={world} is set but {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
                          "not: start data-parallel training with torchrun (torchrun --standalone --nproc-per-node "
                          f"{world} -m fastjem train ...), or unset WORLD_SIZE for one process")
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = device_name != "cpu" and torch.cuda.is_available()
    if not dist.is_initialized():
        if use_cuda:
            torch.cuda.set_device(local_rank)
        # torch._dynamo, imported after the group exists (torch.optim imports it with the first optimiser), keeps
        # references to the default group out of destroy_process_group's reach: the group, and gloo's threads,
        # would then live on to interpreter shutdown whatever the exit handler below does. Imported first, it
        # never sees a group.
        importlib.import_module("torch._dynamo")

        dist.init_process_group("nccl" if use_cuda else "gloo")
        # A group left to interpreter shutdown can abort the process (gloo's worker threads still hold
        # tensors when Python is torn down: "terminate called without an active exception", SIGABRT),
        # so the group this call made is destroyed while Python is still whole, unless the caller did.
        atexit.register(_destroy_if_initialized)
    return DistInfo(rank, world, local_rank)


def _destroy_if_initialized() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def all_reduce_grads_(params: list[torch.Tensor], world: int) -> None:
    """Average gradients over ranks in place: one flat buffer, one all-reduce."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat.div_(world)
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def all_reduce_mean_(t: torch.Tensor, world: int) -> torch.Tensor:
    dist.all_reduce(t)
    return t.div_(world)


def any_rank(flag: bool, device: torch.device) -> bool:
    """True when ``flag`` is true on any rank (every rank gets the same answer)."""
    t = torch.tensor([1.0 if flag else 0.0], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item() > 0)


def max_over_ranks(value: int, device: torch.device) -> int:
    """The largest of the ranks' ``value`` (every rank gets the same answer)."""
    t = torch.tensor([float(value)], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


def gather_to_main(obj, info: DistInfo) -> list | None:
    """Every rank's ``obj`` on rank 0 (a list in rank order), None elsewhere."""
    out = [None] * info.world if info.is_main else None
    dist.gather_object(obj, out, dst=0)
    return out


def broadcast_parameters_(module: torch.nn.Module) -> None:
    for t in list(module.parameters()) + list(module.buffers()):
        dist.broadcast(t.data, src=0)

"""Memory that can still be allocated on a device, for the up-front checks of the tensors whose size is known before
they are made (the dataset on the device, the replay buffer, the informative initialisation's factors).

A tensor that cannot fit is refused with a message naming the option that sets its size, before anything is
allocated: past the machine's memory a CPU allocation may succeed (Linux overcommits) and the process is then
killed without a word as the pages are filled, and a GPU's out-of-memory error names no option. On the CPU the
process's cgroup (a container's, a batch job's) may allow less than the machine has free: its limit is read too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from fastjem.errors import ConfigError


def _meminfo() -> dict[str, int]:
    """/proc/meminfo's fields in bytes (Linux); empty elsewhere."""
    out = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    out[key] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    except OSError:
        return {}
    return out


# the process's own cgroups, and where the cgroup file systems are mounted (v2 there, v1's memory controller in
# memory/ below it)
PROC_CGROUP = Path("/proc/self/cgroup")
CGROUP_ROOT = Path("/sys/fs/cgroup")
# v1 writes "no limit" as the largest page count in bytes (9223372036854771712 with 4 KiB pages): a limit this large
# is none
NO_LIMIT = 1 << 60


def _read_number(path: Path) -> int | None:
    """The number a cgroup file holds; None for "max" (v2's no limit), a v1 no-limit value, or a file not there."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdecimal() and int(text) < NO_LIMIT else None


def _stat(path: Path) -> dict[str, int]:
    """A memory.stat file's fields (empty where it is not there)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    return {k: int(v) for k, v in (line.split()[:2] for line in lines if len(line.split()) >= 2) if v.isdecimal()}


def _own_cgroups() -> dict[str, str]:
    """The process's cgroup paths from /proc/self/cgroup: "v2" (the unified hierarchy's "0::/path") and "v1" (the
    memory controller's "N:memory:/path")."""
    out = {}
    try:
        lines = PROC_CGROUP.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        hid, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hid == "0" and controllers == "":
            out["v2"] = path
        elif "memory" in controllers.split(","):
            out["v1"] = path
    return out


def _levels(root: Path, path: str) -> list[Path]:
    """The cgroup folder of ``path`` under ``root`` and every folder above it up to ``root``: a parent's limit binds
    its children. Where ``path`` is not there (a container without its own cgroup namespace lists the host's path,
    and has its own cgroup mounted at ``root``), ``root`` alone."""
    folder = root / path.strip("/")
    if ".." in Path(path).parts or not folder.is_dir():
        return [root]
    return [folder, *[p for p in folder.parents if p == root or root in p.parents]]


def _cgroup_free(swap_free: int) -> int | None:
    """Bytes the process's cgroups let it take still (the tightest of its cgroup and those above it): the limit less
    the usage, plus the page cache it holds (reclaimed before the limit kills), plus ``swap_free`` (the machine's
    free swap) or less where the cgroup limits swap too. None where no cgroup limits memory (or none is found)."""
    own = _own_cgroups()
    best = None

    def take(free: int) -> None:
        nonlocal best
        best = max(0, free) if best is None else min(best, max(0, free))

    if "v2" in own:
        for d in _levels(CGROUP_ROOT, own["v2"]):
            limit, used = _read_number(d / "memory.max"), _read_number(d / "memory.current")
            if limit is None or used is None:
                continue
            stat = _stat(d / "memory.stat")
            swap = swap_free
            swap_limit, swap_used = _read_number(d / "memory.swap.max"), _read_number(d / "memory.swap.current")
            if swap_limit is not None and swap_used is not None:
                swap = min(swap, max(0, swap_limit - swap_used))
            take(limit - used + stat.get("active_file", 0) + stat.get("inactive_file", 0) + swap)
    if "v1" in own:
        memory = CGROUP_ROOT / "memory"
        for d in _levels(memory, own["v1"]):
            limit, used = _read_number(d / "memory.limit_in_bytes"), _read_number(d / "memory.usage_in_bytes")
            if limit is None or used is None:
                continue
            stat = _stat(d / "memory.stat")
            cache = stat.get("total_active_file", 0) + stat.get("total_inactive_file", 0)
            free = limit - used + cache + swap_free
            # memory and swap together, where swap is accounted
            both, both_used = _read_number(d / "memory.memsw.limit_in_bytes"), _read_number(
                d / "memory.memsw.usage_in_bytes")
            if both is not None and both_used is not None:
                free = min(free, both - both_used + cache)
            take(free)
    return best


def free_bytes(device: torch.device | str) -> int | None:
    """Bytes that can still be allocated on ``device``: on a GPU its free memory plus what torch's caching allocator
    holds unused; on the CPU the memory Linux says is available (page cache it can drop included) plus free swap, so
    that what could fit is never refused, or what the process's cgroup allows still where that is less (a container
    limited below the machine's free memory is killed at its limit). None where it cannot be told (another OS,
    another device type)."""
    device = torch.device(device)
    if device.type == "cuda":
        try:
            index = device.index if device.index is not None else torch.cuda.current_device()
            free, _ = torch.cuda.mem_get_info(index)
            return int(free + torch.cuda.memory_reserved(index) - torch.cuda.memory_allocated(index))
        except (RuntimeError, AssertionError):
            return None
    if device.type == "cpu":
        info = _meminfo()
        swap = info.get("SwapFree", 0)
        host = info["MemAvailable"] + swap if "MemAvailable" in info else None
        cgroup = _cgroup_free(swap)
        return host if cgroup is None else cgroup if host is None else min(host, cgroup)
    return None


def size_text(nbytes: float) -> str:
    """Bytes as a short size: '1.5 GiB', '12.0 MiB', '0.3 KiB' (binary units)."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes / 2**10:.1f} KiB"


def check_fits(nbytes: int, device: torch.device | str, what: str, advice: str | Callable[[int], str]) -> None:
    """ConfigError before allocating ``nbytes`` on ``device`` where they cannot fit: ``what`` (the tensor, said as
    "the replay buffer (10000000 chains of 3x32x32, fp32)") takes so much, the device has so much free, and
    ``advice`` (the option to change; a function of the free bytes where it says how much would fit)."""
    free = free_bytes(device)
    if free is not None and nbytes > free:
        said = advice(free) if callable(advice) else advice
        raise ConfigError(f"{what} takes {size_text(nbytes)} on {torch.device(device)}, which has {size_text(free)} "
                          f"free: {said}")

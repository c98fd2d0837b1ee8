"""Memory that can still be allocated on a device, for the up-front checks of the tensors whose size is known before
they are made (the dataset on the device, the replay buffer, the informative initialisation's factors).

A tensor that cannot fit is refused with a message naming the option that sets its size, before anything is
allocated: past the machine's memory a CPU allocation may succeed (Linux overcommits) and the process is then
killed without a word as the pages are filled, and a GPU's out-of-memory error names no option.
"""

from __future__ import annotations

from collections.abc import Callable

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


def free_bytes(device: torch.device | str) -> int | None:
    """Bytes that can still be allocated on ``device``: on a GPU its free memory plus what torch's caching allocator
    holds unused; on the CPU the memory Linux says is available (page cache it can drop included) plus free swap, so
    that what could fit is never refused. None where it cannot be told (another OS, another device type)."""
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
        if "MemAvailable" not in info:
            return None
        return info["MemAvailable"] + info.get("SwapFree", 0)
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

"""The CPU topology the CPU benchmarks pin their threads by (Linux sysfs), apart from env_info so that the shell
scripts read it without importing torch (bench/cpu_bars.sh and bench/gpu_suite.sh call it as a script; env_info
re-exports it)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

SYS_CPU = "/sys/devices/system/cpu"


def physical_cores(sys_cpu: str | Path = SYS_CPU) -> dict[tuple[int, int], list[int]]:
    """The physical cores (package, core) of the CPUs this process may run on, each with its CPUs in order (Linux
    sysfs topology). Raises OSError or ValueError where the topology cannot be read."""
    cores: dict[tuple[int, int], list[int]] = {}
    for n in sorted(os.sched_getaffinity(0)):
        core = tuple(int((Path(sys_cpu) / f"cpu{n}" / "topology" / name).read_text())
                     for name in ("physical_package_id", "core_id"))
        cores.setdefault(core, []).append(n)
    return cores


def cpu_cores(sys_cpu: str | Path = SYS_CPU) -> dict:
    """The CPUs this process may run on and the physical cores they are: two hardware threads of one core share its
    vector and AMX units, so 2 threads on 1 core are not 2 cores' speed. {} where the topology cannot be read."""
    try:
        cores = physical_cores(sys_cpu)
    except (AttributeError, OSError, ValueError):
        return {}
    return {"affinity_cpus": sorted(n for cpus in cores.values() for n in cpus), "physical_cores": len(cores)}


def one_cpu_per_core(count: int, sys_cpu: str | Path = SYS_CPU) -> list[int]:
    """``count`` CPUs to pin ``count`` threads to, one per physical core (each core's first CPU, in CPU order), so
    that no two threads share a core's units (what bench/cpu_bars.sh pins to). Raises ValueError where this process
    may not run on that many cores, or the topology cannot be read."""
    try:
        cores = physical_cores(sys_cpu)
    except (AttributeError, OSError, ValueError) as err:
        raise ValueError(f"cannot read the CPU topology under {sys_cpu}: {err}") from err
    firsts = sorted(cpus[0] for cpus in cores.values())
    if len(firsts) < count:
        raise ValueError(f"this machine has fewer than {count} physical cores (CPUs {','.join(map(str, firsts))}, "
                         "one per core)")
    return firsts[:count]


def cpus_beside(count: int, sys_cpu: str | Path = SYS_CPU) -> list[int]:
    """The CPUs of this process's other cores: every hardware thread of the cores after the ``count`` that
    ``one_cpu_per_core`` pins to (what runs beside a pinned benchmark without sharing its cores). Raises ValueError
    as ``one_cpu_per_core`` does."""
    pinned = set(one_cpu_per_core(count, sys_cpu))
    return sorted(n for cpus in physical_cores(sys_cpu).values() if not pinned & set(cpus) for n in cpus)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The CPU topology the CPU benchmarks pin their threads by.")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--one-cpu-per-core", type=int, metavar="N",
                       help="print N CPUs, one per physical core, comma-separated (for taskset -c)")
    which.add_argument("--cpus-beside", type=int, metavar="N",
                       help="print the CPUs of the cores the first N are not on, comma-separated (empty if none)")
    parser.add_argument("--sys-cpu", default=SYS_CPU, help=f"the sysfs CPU folder (default {SYS_CPU})")
    args = parser.parse_args(argv)
    try:
        if args.cpus_beside is not None:
            print(",".join(map(str, cpus_beside(args.cpus_beside, args.sys_cpu))))
        else:
            print(",".join(map(str, one_cpu_per_core(args.one_cpu_per_core, args.sys_cpu))))
    except ValueError as err:
        print(f"cpu_topology: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

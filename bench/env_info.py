"""What every benchmark JSON records: device, versions, git sha, date; the timing and synthetic-data helpers."""

from __future__ import annotations

import argparse
import datetime
import errno
import itertools
import os
import platform
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from interrupted import interrupted_line, python_handler_back, quiet_while_importing

quiet_while_importing(__name__)  # Ctrl-C while torch imports: run_script's line, not a traceback

import torch  # noqa: E402

# the topology (and its command line): in a module of its own, read by the shell scripts without torch
from cpu_topology import (  # noqa: F401, E402  (re-exported)
    SYS_CPU,
    cpu_cores,
    cpus_beside,
    main,
    one_cpu_per_core,
    physical_cores,
)

from fastjem.checkpoint import atomic_write_text  # noqa: E402
from fastjem.engine import (  # noqa: E402
    cpu_bf16_flags,
    device_name,  # noqa: F401  (re-exported: the bench scripts name devices with it)
)

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"

# Dense (no sparsity) datasheet peaks in FLOP/s per precision, matched against the CUDA device name:
# the first key contained in the name wins, so the specific variants come first.
PEAK_FLOPS: dict[str, dict[str, float]] = {
    "H100 PCIe": {"bf16": 756e12, "tf32": 378e12, "fp32": 51e12},
    "H100 NVL": {"bf16": 835e12, "tf32": 418e12, "fp32": 60e12},
    "H100": {"bf16": 989e12, "tf32": 495e12, "fp32": 67e12},  # SXM
    "H200": {"bf16": 989e12, "tf32": 495e12, "fp32": 67e12},
    "A100": {"bf16": 312e12, "tf32": 156e12, "fp32": 19.5e12},
    "L40S": {"bf16": 362e12, "tf32": 183e12, "fp32": 91.6e12},
    "V100": {"fp32": 15.7e12},
}


def peak_flops(device_name: str, precision: str) -> float | None:
    """The table's peak for this device and precision (fp32 | tf32 | bf16); None when unknown (e.g. CPUs)."""
    for key, peaks in PEAK_FLOPS.items():
        if key in device_name:
            return peaks.get(precision)
    return None


def exit_on_sigterm() -> None:
    """SIGTERM (``timeout``, a job scheduler) exits through Python, so that ``with`` blocks run their cleanup: a
    script's temporary run folders and compiled files are removed (the default handler left them in /tmp)."""
    def handler(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


# every file this process saved (results, plots, a README): what a run cut short had kept by then
SAVED: list[Path] = []


def saved(path: str | Path) -> Path:
    """Note ``path`` as written whole (``run_script`` names it where Ctrl-C stops the script later)."""
    path = Path(path)
    if path not in SAVED:
        SAVED.append(path)
    return path


def run_script(main: Callable[[], int]) -> int:
    """A bench script's ``main()`` run from its command line. Ctrl-C ends it with one line on stderr naming the files
    it had saved by then (each written whole; most scripts write their results after every run) and status 130
    (128 + SIGINT, as a shell reports it), where it printed a KeyboardInterrupt traceback. (A Ctrl-C before, while
    the script imported torch, ended it the same way: ``quiet_while_importing``.)"""
    first = len(SAVED)
    try:
        python_handler_back()
        return main()
    except KeyboardInterrupt:
        print(interrupted_line(SAVED[first:]), file=sys.stderr, flush=True)
        return 130


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], object], n: int, device: torch.device) -> float:
    """Seconds for n calls of fn, with the device synchronised before both clock reads."""
    sync(device)
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    sync(device)
    return time.perf_counter() - t0


def matmul_flops(device: torch.device, precision: str, n: int = 2048, reps: int = 5, windows: int = 3) -> float:
    """FLOP/s of a dense n^3 matmul on ``device`` at this process's threads, fp32 or bf16 operands (as autocast
    hands them to the convolutions): the device's compute ceiling at that precision as measured, where no
    datasheet peak is known (CPUs). The median over ``windows`` of ``reps`` products, after one untimed."""
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[precision]
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, dtype=dtype, generator=gen)
    b = torch.randn(n, n, device=device, dtype=dtype, generator=gen)
    a @ b
    seconds = sorted(timed(lambda: a @ b, reps, device) for _ in range(windows))
    return 2 * n**3 * reps / seconds[len(seconds) // 2]


def device_info(device: torch.device) -> dict:
    info = {"type": device.type, "name": device_name(device)}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update(capability=".".join(map(str, torch.cuda.get_device_capability(device))),
                    memory_gib=round(props.total_memory / 2**30, 1), sm_count=props.multi_processor_count)
    else:
        # the bf16 extensions set what the default precision buys (two CPUs of one name may differ in them)
        info.update(threads=torch.get_num_threads(), machine=platform.machine(), bf16_flags=cpu_bf16_flags(),
                    **cpu_cores())
    return info


def versions() -> dict:
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    return {"python": platform.python_version(), "torch": torch.__version__, "triton": triton_version,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version() if torch.cuda.is_available() else None}


def git_state() -> dict:
    def run(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10, check=True)
            return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    status = run("status", "--porcelain", "--untracked-files=no")
    return {"sha": run("rev-parse", "HEAD"), "dirty": None if status is None else bool(status)}


def now_utc() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:60]


def result_name(kind: str, device: torch.device | str, when: datetime.datetime) -> str:
    """<kind>-<YYYY-mm-ddTHHMMSS>-<device>.json: named by date and device (a torch.device, or its name)."""
    name = device if isinstance(device, str) else device_name(device)
    return f"{kind}-{when.strftime('%Y-%m-%dT%H%M%S')}-{slug(name)}.json"


def pick_device(parser, choice: str) -> torch.device:
    """--device auto | cpu | cuda as a device; cuda where there is none is the parser's error, not a traceback."""
    if choice == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device here (--device cpu, or auto)")
    return torch.device("cuda" if choice in ("auto", "cuda") and torch.cuda.is_available() else "cpu")


def check_sizes(parser, depth: int | None = None, width: int | None = None, **positive: int) -> None:
    """A Wide-ResNet's depth (6n+4) and width, and options that must be >= 1, checked before any work."""
    if depth is not None and (depth < 10 or (depth - 4) % 6):
        parser.error(f"--depth must be 6n+4 with n >= 1 (10, 16, 22, 28, ...), got {depth}")
    if width is not None and width < 1:
        parser.error(f"--width must be >= 1, got {width}")
    for name, value in positive.items():
        if value < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {value}")


def smoke_sizes(parser, args, sizes: dict) -> None:
    """--smoke: each of ``sizes`` set on ``args`` where that option was left at its default, so that what is given
    is what runs (and is recorded)."""
    for name, value in sizes.items():
        if getattr(args, name) == parser.get_default(name):
            setattr(args, name, value)


def refuse_repeats(parser, option: str, names: list[str], each: str) -> None:
    """``names`` as ``option`` lists them, one listed twice the parser's error, before any work (a repeat ran twice:
    a row repeated in the results, a profile replaced)."""
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        parser.error(f"{option} lists {', '.join(repeated)} twice: {each}")


def results_folder(text: str) -> str:
    """argparse type of a script's --out: the results folder, made now. A file there, or a folder that cannot be
    made, failed when the result was written, after all the work."""
    path = Path(text)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        why = "a file, not a folder" if path.is_file() or err.errno == errno.EEXIST else err.strerror or str(err)
        raise argparse.ArgumentTypeError(f"{text}: {why}") from err
    return text


def claim_result(text: str, folder: str | Path, name: str) -> Path:
    """Write ``text`` to a new file ``folder``/``name``, or <name>-2.json, -3, ... where another run holds the name
    (two runs started in the same second on one device: the later replaced the earlier's results). The file
    appears whole (written beside it, then linked to its name, which fails where the name exists; without hard links,
    the name is created empty and exclusively, then filled, and removed where the filling fails)."""
    folder = Path(folder)
    stem = name.removesuffix(".json")
    for k in itertools.count(1):
        path = folder / (name if k == 1 else f"{stem}-{k}.json")
        if path.exists():
            continue
        tmp = folder / f".{path.name}.{os.getpid()}.claim"
        atomic_write_text(text, tmp)  # the folder made
        try:
            os.link(tmp, path)
            return saved(path)
        except FileExistsError:
            continue
        except OSError:  # a file system without hard links: created exclusively, then filled
            try:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                continue
            try:
                atomic_write_text(text, path)
            except BaseException:
                # (Ctrl-C, a full disk) the name given back: it was left an empty results file
                path.unlink(missing_ok=True)
                raise
            return saved(path)
        finally:
            tmp.unlink(missing_ok=True)
    raise AssertionError("unreachable")


def write_result(report: dict, kind: str, device: torch.device, when: datetime.datetime, out_dir: str | Path,
                 path: Path | None = None) -> Path:
    """Write ``report`` as JSON to a new file ``out_dir``/<kind>-<date>-<device>.json (``claim_result``: the folder
    made if needed, another run's file of that name left alone), or over ``path``, the file an earlier write of the
    same run returned. A report marked ``"smoke": true`` (a shortened check of a script, not a measurement) goes to
    smoke-<kind>-..., which report.py leaves out of the README. A value JSON has no type for is written as its str()."""
    import json

    text = json.dumps(report, indent=2, default=str) + "\n"
    if path is not None:
        atomic_write_text(text, path)
        return path
    return claim_result(text, out_dir, ("smoke-" if report.get("smoke") else "") + result_name(kind, device, when))


def write_synthetic_imagefolder(root: Path, num_classes: int = 10, per_class: int = 12, size: int = 32,
                                seed: int = 0) -> Path:
    """A small folder of random RGB PNGs in class subfolders: CIFAR-shaped data for speed measurements."""
    from PIL import Image

    gen = torch.Generator().manual_seed(seed)
    for k in range(num_classes):
        folder = root / f"class{k:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        images = torch.randint(0, 256, (per_class, size, size, 3), generator=gen, dtype=torch.uint8).numpy()
        for i, image in enumerate(images):
            Image.fromarray(image).save(folder / f"{i:04d}.png")
    return root


if __name__ == "__main__":
    raise SystemExit(run_script(main))

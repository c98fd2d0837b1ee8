"""Crash-safe checkpoints: written to a temporary file in the same folder, fsynced, then renamed over.

A reader therefore sees either the old file or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import math
import os
import pickle
import shutil
import tempfile
import zipfile
from dataclasses import fields
from pathlib import Path

import torch

from fastjem.config import TrainConfig
from fastjem.errors import CheckpointError, ConfigError, error_line

FORMAT = "fastjem-checkpoint"
VERSION = 1


@contextlib.contextmanager
def naming(path: str | os.PathLike):
    """An OSError inside the block that names no file (a write or flush on a full disk) is raised naming ``path``,
    so that the one-line error says which file."""
    try:
        yield
    except OSError as err:
        if err.filename is not None:
            raise
        raise OSError(err.errno, err.strerror, str(path)) from err


def make_folder(folder: Path) -> None:
    """``mkdir -p folder``. A folder the file system will not make there (below /proc) or that a dangling link stands
    for is a ConfigError that names it; other failures (a file in the way, no permission) stay OSErrors."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileNotFoundError as err:
        raise ConfigError(f"cannot make the folder {folder} ({err.strerror}: the file system refuses a folder there): "
                          "choose another --out-dir / --out") from err
    except FileExistsError:
        for link in (folder, *folder.parents):
            if link.is_symlink() and not link.exists():
                raise ConfigError(f"{link} is a link to {os.readlink(link)}, which does not exist: make that folder, "
                                  "or choose another --out-dir / --out") from None
        raise


@contextlib.contextmanager
def atomic_file(path: Path, mode: str):
    """Yield a temp file beside ``path``; on success fsync it, rename it over ``path`` and fsync the folder. A write
    that fails (a full disk) leaves the file at ``path`` as it was and no temporary file."""
    try:
        make_folder(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise OSError(err.errno, err.strerror, str(path)) from err
    try:
        with os.fdopen(fd, mode) as f:
            with contextlib.suppress(OSError):  # some mounts refuse modes: the file is written all the same
                # mkstemp makes the file private (0600); the file it becomes gets the mode an ordinary write gives
                os.fchmod(f.fileno(), 0o666 & ~_umask())
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        with naming(path):  # a failed write (a full disk) names no file: name the one being written
            raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (os.umask can only set it)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def atomic_save(obj, path: str | os.PathLike) -> None:
    """torch.save to ``path`` atomically: temp file + fsync + rename + fsync of the folder."""
    # serialised in memory first: torch.save's zip writer reports a failed write (a full disk) as a RuntimeError
    # about stream positions, a plain write as the OSError it is
    data = io.BytesIO()
    torch.save(obj, data)
    with atomic_file(Path(path), "wb") as f:
        f.write(data.getbuffer())


# what a write fails with when the place is not writable or the disk is full: said in one line, no traceback
WRITE_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT}


def finite_json(obj):
    """What JSON can hold, recursively: NaN / +-inf -> None (JSON has no such numbers), tensors -> their values,
    paths -> text; anything else JSON cannot hold stays, for json.dumps to refuse."""
    if isinstance(obj, torch.Tensor):
        return finite_json(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj


def strict_json(obj, indent: int | None = None) -> str:
    """``obj`` as strict JSON (``finite_json``): a NaN or infinite float becomes null, where Python's ``json`` would
    write the bare tokens NaN / Infinity, which jq, JavaScript, Go and Rust readers refuse."""
    return json.dumps(finite_json(obj), indent=indent, allow_nan=False)


def atomic_write_text(text: str, path: str | os.PathLike) -> None:
    with atomic_file(Path(path), "w") as f:
        f.write(text)


def atomic_write_bytes(data: bytes, path: str | os.PathLike) -> None:
    with atomic_file(Path(path), "wb") as f:
        f.write(data)


def atomic_copy(src: str | os.PathLike, dest: str | os.PathLike) -> None:
    """A copy of the file ``src`` at ``dest``, written atomically (a file of its own, not a link: what is later
    written into one never changes the other)."""
    with open(src, "rb") as f, atomic_file(Path(dest), "wb") as out:
        shutil.copyfileobj(f, out, 16 << 20)


# held by the process that trains in a run folder (fastjem runs tells a running run from a stopped one by it)
RUN_LOCK = ".lock"


@contextlib.contextmanager
def folder_lock(lock_file: Path, busy: str):
    """Hold an exclusive lock on ``lock_file`` (an flock, released when the process ends, however it ends) while
    the block runs; where another process holds it, a ConfigError: ``busy`` with the holder's pid filled in for
    ``{holder}``. Where flock does not exist the block runs unguarded."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(lock_file, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            raise ConfigError(busy.format(holder=f.read().strip() or "another process")) from None
        with naming(lock_file):
            f.seek(0)
            f.truncate()
            f.write(f"pid {os.getpid()}")
            f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def lock_holder(lock_file: Path) -> str | None:
    """Who holds ``lock_file`` now ("pid N"), or None where no process does (or it does not exist)."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        with open(lock_file) as f:
            try:
                fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                return f.read().strip() or "another process"
            fcntl.flock(f, fcntl.LOCK_UN)
            return None
    except OSError:
        return None


def is_training_checkpoint(path: Path) -> bool:
    """Whether ``path`` is a checkpoint fastjem training wrote (not one converted from the authors' code, which
    can be converted again): its pickled record (small beside the tensors, which are stored apart) names the
    format. Read without loading the tensors."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            name = next((n for n in z.namelist() if n.endswith("/data.pkl") or n == "data.pkl"), None)
            record = z.read(name) if name is not None else b""
            return FORMAT.encode() in record and b"imported" not in record
    except (OSError, zipfile.BadZipFile):
        return False


def output_path(path: str | os.PathLike, suffixes: tuple[str, ...], what: str, overwrite: bool = False,
                flag: str = "--out", form: str = "") -> Path:
    """``path`` as a Path if ``what`` may be written there: one of ``suffixes`` (``form`` names their format in the
    error), and no existing file to lose unless ``overwrite`` (--force), never a training checkpoint (a run's state);
    ConfigError otherwise, naming ``flag`` (the option that gave the path) as the one to change."""
    path = Path(path)
    if path.is_dir():  # a folder (a run's, say) given for the file: said as such, whatever its name ends in
        raise ConfigError(f"{path} is a folder: give {what} a file's name (in it, or elsewhere)")
    if path.suffix.lower() not in suffixes:
        example = path.with_suffix(suffixes[0]) if path.suffix else path.with_name(path.name + suffixes[0])
        needed = f"{' or '.join(suffixes)} is needed" + ("" if what == flag else f" for {what}")
        raise ConfigError(f"{flag} {path}: a name ending in {needed}{form}; give e.g. {flag} {example}")
    # before "pass --force": --force would only meet this refusal next
    if path.exists() and is_training_checkpoint(path):
        raise ConfigError(f"{path} is a training checkpoint, which --force does not replace with {what}: give "
                          f"{flag} another file")
    if path.exists() and not overwrite:
        raise ConfigError(f"{path} exists: pass --force to replace it, or give {flag} another file")
    return path


def beyond_tensors(path: str | os.PathLike) -> str:
    """What the torch file at ``path`` holds beyond what a tensors-only read (``weights_only=True``) takes, named
    without unpickling it (the classes and functions unpickling would import and call); '' where it reads as tensors
    only, or is no torch file at all (its reader says so)."""
    with open(path, "rb") as f:
        head = f.read(2)
    # torch's zip format, or its legacy one (a pickle: protocol 2's opcode first); a tensors-only read of anything
    # else (a JSON file, ...) fails with the same "weights only" error as a file holding objects
    if not (zipfile.is_zipfile(path) or head.startswith(b"\x80")):
        return ""
    for mmap in (True, False):  # memory-mapped where the format allows (not the legacy one): not read all again
        try:
            torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
            return ""
        except pickle.UnpicklingError as err:
            if "weights only" not in str(err).lower():
                continue
            try:  # torch's zip format lists them; the legacy format cannot
                return ", ".join(torch.serialization.get_unsafe_globals_in_checkpoint(path)) or "objects"
            except Exception:  # noqa: BLE001 - the refusal stands; only its detail is missing
                return "objects"
        except Exception:  # noqa: BLE001 - not a torch file (said by the reader that expects one), or legacy
            continue
    return ""


def check_part_state(part: str, state, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
    """Refuse a state dict that is not ``part``'s (``"ReplayBuffer"``, ``"SGLD"``): not a dict, a key missing, or a key
    it does not have (another part's state, a whole checkpoint), before anything is loaded (never a partial load)."""
    if not isinstance(state, dict):
        raise ConfigError(f"{part}.load_state_dict takes the dict its state_dict() returned, "
                          f"got {type(state).__name__}")
    missing = [k for k in required if k not in state]
    unknown = sorted(str(k) for k in state if k not in required and k not in optional)
    if not missing and not unknown:
        return
    hint = ""
    if "format" in state and "model" in state:
        hint = "; this is a whole fastjem checkpoint: load its 'buffer' and 'sampler' entries into the parts"
    elif part != "ReplayBuffer" and "data" in state:
        hint = "; this looks like a ReplayBuffer's state: load it with ReplayBuffer.load_state_dict"
    elif part != "SGLD" and set(state) == {"rng_state"}:
        hint = "; this looks like an SGLD sampler's state: load it with SGLD.load_state_dict"
    said = ", ".join(f"{what} {keys}" for what, keys in (("missing", missing), ("unexpected", unknown)) if keys)
    raise ConfigError(f"{part}.load_state_dict: not the state of a {part} ({said}; {part}.state_dict() has the keys "
                      f"{sorted((*required, *optional))}){hint}")


def check_rng_state(part: str, rng) -> None:
    """A device RNG state is int64 [2] (seed, offset), as ``fastjem.kernels.new_rng_state`` makes it."""
    if not isinstance(rng, torch.Tensor) or rng.dtype != torch.int64 or tuple(rng.shape) != (2,):
        what = f"{rng.dtype} {tuple(rng.shape)}" if isinstance(rng, torch.Tensor) else type(rng).__name__
        raise ConfigError(f"{part}.load_state_dict: rng_state must be the int64 [2] (seed, offset) tensor its "
                          f"state_dict() saved, got {what}")


def _folder_hint(folder: Path) -> str:
    """What to give instead of a folder without checkpoint.pt: a run's checkpoints/ (from --ckpt-keep-every) holds
    checkpoint files, a folder of runs holds runs; the usual mix-ups of a folder for a checkpoint."""
    # (a hidden .pt is a partial write, none to give)
    files = sorted(p.name for p in folder.glob("*.pt") if p.is_file() and not p.name.startswith("."))
    if files:
        return f"give one of its checkpoint files, e.g. {folder / files[-1]}"
    runs = sorted(p.name for p in folder.iterdir() if (p / "checkpoint.pt").is_file())
    if runs:
        named = ", ".join(runs[:3]) + (", ..." if len(runs) > 3 else "")
        return f"it holds runs ({named}): give one, e.g. {folder / runs[0]}"
    return ""


def load_checkpoint(path: str | os.PathLike, map_location="cpu") -> dict:
    """Load and sanity-check a fastjem checkpoint; CheckpointError with the reason otherwise."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"checkpoint {path} does not exist")
    if path.is_dir():
        if (path / "checkpoint.pt").exists():
            path = path / "checkpoint.pt"
        else:
            holder = lock_holder(path / RUN_LOCK)
            if holder is not None:
                # a run training there now: its first checkpoint is yet to come, not missing
                raise CheckpointError(f"{path} is a folder without checkpoint.pt in it yet: its run is still "
                                      f"training ({holder}) and writes its first after --ckpt-every iterations: "
                                      "try again then")
            hint = _folder_hint(path)
            if hint:
                raise CheckpointError(f"{path} is a folder without checkpoint.pt in it: {hint}")
            raise CheckpointError(f"{path} is a folder without checkpoint.pt in it")
    try:
        # tensors and plain values only, as fastjem writes them: a file holding other objects is refused, never
        # unpickled (unpickling runs the code a file names: a checkpoint from elsewhere must not)
        ckpt = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as err:
        refused = "weights only" in str(err).lower()
        extra = beyond_tensors(path) if refused else ""
        if not extra:
            # (torch's message for a refused read advises weights_only=False: not for a file fastjem cannot place)
            raise CheckpointError(f"cannot read checkpoint {path}: it is truncated, corrupted or not a torch file"
                                  + ("" if refused else f" ({error_line(err)})")) from err
        raise CheckpointError(f"{path} holds more than tensors and plain values ({extra}):"
                              " not a checkpoint fastjem writes; fastjem does not unpickle it (that would run the code "
                              "it names)") from err
    except OSError as err:
        if err.errno == errno.EINVAL and _cut_short(path):
            # torch's zip reader seeking past the end of a file cut short (a copy or transfer that stopped): the
            # file's fault, which "check the permissions" sent the user looking for elsewhere
            raise CheckpointError(f"checkpoint {path} is truncated: it is {path.stat().st_size} bytes, not a whole "
                                  "torch file (a copy or transfer cut short?). Copy it again, or use an earlier one: "
                                  "the run's checkpoints/ (--ckpt-keep-every) or best.pt") from err
        # not the file's fault (a good checkpoint must not be taken for a damaged one and deleted)
        raise CheckpointError(f"cannot read checkpoint {path}: {err.strerror or err} (check the file's "
                              "permissions and its disk)") from err
    except Exception as err:
        other = _other_output(path)
        if other:
            raise CheckpointError(f"{path} is {other}") from err
        raise CheckpointError(f"cannot read checkpoint {path}: it is truncated, corrupted or not a torch file "
                              f"({error_line(err)})") from err
    if isinstance(ckpt, dict) and "model_state_dict" in ckpt and "format" not in ckpt:
        raise CheckpointError(f"{path} is a checkpoint of the authors' JEM code (model_state_dict + replay_buffer): "
                              f"convert it first with `fastjem convert {path}`")
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        keys = sorted(map(str, ckpt))[:6] if isinstance(ckpt, dict) else []
        holds = (f"a dict of {', '.join(keys)}{', ...' if len(ckpt) > len(keys) else ''}" if keys
                 else f"a {type(ckpt).__name__}")
        raise CheckpointError(f"{path} is not a fastjem checkpoint: it holds {holds}, where fastjem train writes a "
                              f"dict with format {FORMAT!r} and the authors' JEM code one with model_state_dict "
                              "(`fastjem convert` imports those)")
    if ckpt.get("version", 0) > VERSION:
        raise CheckpointError(f"{path} was written by a newer fastjem (format {ckpt['version']} > {VERSION})")
    for key in ("config", "model", "iteration"):
        if key not in ckpt:
            raise CheckpointError(f"checkpoint {path} lacks '{key}': it is incomplete")
    # a newer fastjem's option (its format unchanged): said of this file, not as a bare "unknown config keys"
    unknown = sorted(set(ckpt["config"]) - {f.name for f in fields(TrainConfig)})
    if unknown:
        raise CheckpointError(f"checkpoint {path} was written by a newer fastjem: its config has options this one "
                              f"does not know ({', '.join(unknown)}); update fastjem to use it")
    damaged = damaged_member(path)
    if damaged:
        raise CheckpointError(f"checkpoint {path} is damaged: its part {damaged} fails its checksum (the bytes on "
                              "disk changed after it was written). Use an earlier one: the run's checkpoints/ "
                              "(--ckpt-keep-every) or best.pt")
    ckpt["path"] = str(path)
    return ckpt


def _other_output(path: Path) -> str:
    """What ``path`` is where it is a file fastjem writes that is no checkpoint (an exported program, samples saved
    as .npz), said with the checkpoint to give; '' otherwise. torch's reader took either for a damaged checkpoint."""
    from fastjem.export import META  # the export's own record of its source, in the archive's extra/

    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            meta = next((n for n in names if n.endswith(f"/extra/{META}")), None)
            if meta is not None:
                source = json.loads(z.read(meta)).get("checkpoint")
                return ("a program written by fastjem export (torch.export's format), not a checkpoint: give the "
                        f"checkpoint it was exported from{f', {source}' if source else ''}")
            if names and all(n.endswith(".npy") for n in names):
                return ("NumPy's .npz (fastjem sample writes its samples so), not a checkpoint: give a checkpoint "
                        "file or a run folder")
    except (OSError, zipfile.BadZipFile, ValueError, AttributeError):  # no zip, or an unreadable part: not said
        pass
    return ""


def _cut_short(path: Path) -> bool:
    """Whether ``path`` reads here but is no whole zip archive (torch.save's format): its end, the archive's
    directory, is missing. False where it cannot be read (then the read, not the file, is at fault)."""
    try:
        with open(path, "rb") as f:
            f.read(1)
        return not zipfile.is_zipfile(path)
    except OSError:
        return False


def damaged_member(path: Path) -> str | None:
    """The first member of a torch zip file whose CRC-32 does not match its bytes (torch.load does not check them),
    None if all match; members stored without a CRC (0) are not checked."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                if info.CRC == 0:
                    continue
                try:
                    with z.open(info) as f:
                        while f.read(1 << 24):  # read to the end: zipfile compares the CRC there
                            pass
                except zipfile.BadZipFile:
                    return info.filename
    except zipfile.BadZipFile:
        return None  # not a zip (a legacy torch file): nothing to check against
    return None

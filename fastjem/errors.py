"""Errors that the CLI turns into one clear message and a non-zero exit."""

import torch


def error_line(err: BaseException) -> str:
    """An exception as one line for a message: its type and the first line of its text ('OSError: ...')."""
    text = str(err)
    return f"{type(err).__name__}: {text.splitlines()[0] if text else ''}"


class FastJEMError(Exception):
    """Base class: a user-facing problem with a message that says what to do."""


class ConfigError(FastJEMError):
    """An option is out of range, inconsistent or unknown."""


class DataNotFoundError(FastJEMError):
    """A dataset is not where it was looked for and cannot be downloaded."""


class CheckpointError(FastJEMError):
    """A checkpoint is unreadable, truncated, or does not fit the model."""


class FastJEMWarning(UserWarning):
    """Something the user should know that does not stop the work; the CLI prints it as one line."""


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

"""Errors that the CLI turns into one clear message and a non-zero exit."""


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


def as_real(what: str, value, error: type[Exception] = TypeError) -> float:
    """``value`` as a float (an int, a float, a NumPy number, a one-element tensor), else ``error`` naming ``what``:
    a string or None failed a comparison with a bare TypeError, a bool was taken for 0 or 1."""
    if not isinstance(value, (bool, str, bytes)) and value is not None:
        try:
            return float(value)
        except (TypeError, ValueError, RuntimeError):
            pass
    raise error(f"{what} must be a number, got {value!r} ({type(value).__name__})")


def __getattr__(name: str):
    # as_integer is the one integer check, shared with the kernels; imported at first use, as the kernels import
    # torch and the CLI's parser does not need it
    if name == "as_integer":
        from fastjem.kernels._dispatch import as_integer

        return as_integer
    raise AttributeError(f"module 'fastjem.errors' has no attribute {name!r}")


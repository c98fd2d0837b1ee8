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

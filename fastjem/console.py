"""What a command shows while it works: its log lines and its progress bars."""

from __future__ import annotations

import os
import sys


def console(*parts) -> None:
    """The default log of a run: a line to stdout, a warning (a line starting "warning:") to stderr with the errors,
    so that `fastjem train > log` keeps its warnings on the terminal and a results file holds no warning."""
    line = " ".join(map(str, parts))
    print(line, file=sys.stderr if line.startswith("warning:") else sys.stdout)


def live(out) -> bool:
    """Whether ``out`` shows a bar redrawn in place: a terminal, or a notebook cell's output (Jupyter's, VS Code's,
    Colab's: an ipykernel stream, not a TTY, whose front end redraws a line on a carriage return)."""
    return out.isatty() or type(out).__module__.partition(".")[0] == "ipykernel"


def progress_bar(*, tty_interval: float = 0.1, **kwargs):
    """A tqdm bar on stderr. A terminal or a notebook gets a live bar (redrawn at most every ``tty_interval`` s); a
    log file (stderr not a TTY) an update every 30 s instead (each a copy of the bar in the file). A terminal that
    reports no size (a pseudo-terminal opened without one: `script`, a container's exec) gets 80 columns, where
    tqdm would draw nothing at all."""
    from tqdm import tqdm

    out = kwargs.setdefault("file", sys.stderr)
    # (a notebook's bar was taken for a log file's: redrawn every 30 s, a run of a minute showed no progress)
    tty = live(out)
    kwargs["mininterval"] = tty_interval if tty else 30.0
    if not tty:
        # tqdm's monitor thread redraws a bar whose last draw is maxinterval old (10 s by default): a slow run's log
        # would get a copy every 10-20 s
        kwargs["maxinterval"] = 30.0
    try:
        size = os.get_terminal_size(out.fileno()) if out.isatty() else None
    except (OSError, ValueError, AttributeError):
        size = None
    if size is not None and size.columns == 0:
        kwargs.update(ncols=80, nrows=24, dynamic_ncols=False)
    return tqdm(**kwargs)

"""How a bench script stopped by Ctrl-C ends: one line on stderr naming the files it saved, and status 130 (128 +
SIGINT, as a shell reports it). A module without torch, imported before it: Ctrl-C while a script was still importing
torch (seconds) printed a KeyboardInterrupt traceback from within that import."""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from pathlib import Path


def interrupted_line(kept: Sequence[Path]) -> str:
    """The line a script stopped by Ctrl-C ends with: the files it had saved by then (each written whole), or none."""
    saved = f"saved so far: {', '.join(map(str, kept))}" if kept else "nothing saved"
    return f"{Path(sys.argv[0]).name}: interrupted; {saved}"


def _end_while_importing(signum, frame) -> None:
    print(interrupted_line([]), file=sys.stderr, flush=True)
    raise SystemExit(130)


def quiet_while_importing(module_name: str) -> None:
    """Until ``run_script`` starts the script's ``main``, Ctrl-C ends a script run from its command line
    (``module_name`` is its ``__name__``: "__main__") as run_script does. A module imported (by a test, by another
    script, in a spawned worker) changes nothing, nor does a process that ignores SIGINT (a background job)."""
    if module_name == "__main__" and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _end_while_importing)


def python_handler_back() -> None:
    """Python's own Ctrl-C (a KeyboardInterrupt) back where ``quiet_while_importing`` replaced it: ``main`` and the
    training within it catch that, to stop at the end of an iteration and to say what was saved."""
    if signal.getsignal(signal.SIGINT) is _end_while_importing:
        signal.signal(signal.SIGINT, signal.default_int_handler)

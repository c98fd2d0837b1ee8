"""What a command shows while it works: progress bars in a terminal and in a log file, warnings apart."""

import os
import re
import select
import sys
import time

import pytest
import torch
from torch import nn

from fastjem.console import progress_bar


class Slow(nn.Module):
    """A classifier of 2-D points whose forward takes a few milliseconds, so that a chain takes a while."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 3)

    def forward(self, x):
        time.sleep(0.005)
        return self.lin(x)


def test_a_bar_into_a_log_file_is_not_redrawn_every_tenth_of_a_second(capsys):
    """stderr not a terminal (`fastjem sample ... 2> log`, a job's log): the SGLD bar of `fastjem sample` /
    `fastjem eval` is drawn at its start and end (and every 30 s), as training's is, not ten times a second, each a
    copy of the bar in the file."""
    from fastjem.eval.core import run_chains

    start = time.perf_counter()
    run_chains(Slow(), torch.zeros(4, 2), n_steps=120, step_size=0.1, noise=0.0, progress=True, desc="SGLD")
    took = time.perf_counter() - start
    err = capsys.readouterr().err
    drawn = [part for part in err.split("\r") if "step" in part]
    assert took > 0.5 and 1 <= len(drawn) <= 3, (took, drawn)


def test_a_bar_into_a_log_file_waits_30_s_between_draws_however_slow_the_run(monkeypatch):
    """A run of one iteration a second, its bar into a log file: tqdm's monitor thread also redraws a bar whose last
    draw is ``maxinterval`` old (10 s by default), so the file got a copy every 10-20 s, not every 30 s. Here the
    monitor runs in this thread on a clock that one iteration advances by a second, for two minutes."""
    import io

    from tqdm._monitor import TMonitor

    now = [0.0]
    out = io.StringIO()
    bar = progress_bar(total=1000, file=out, unit="it")
    bar._time = lambda: now[0]
    bar.start_t = bar.last_print_t = 0.0

    class OneIterationPerWait:  # the monitor's sleep between checks: one iteration of the run, one second
        def __init__(self):
            self.done = False

        def set(self):
            self.done = True

        def is_set(self):
            return self.done

        def wait(self, timeout=None):
            now[0] += 1.0
            bar.update(1)
            self.done = now[0] >= 120
            return self.done

    class Monitor(TMonitor):
        def start(self):  # run below, in this thread
            pass

        def get_instances(self):
            return [bar]

    # tqdm's own monitor thread (real clock) leaves this bar alone meanwhile
    monkeypatch.setattr(TMonitor, "get_instances", lambda self: [])
    monkeypatch.setattr(TMonitor, "_test", {"time": lambda: now[0], "Event": OneIterationPerWait})
    Monitor(type(bar), 1.0).run()
    bar.close()
    drawn = [int(n) for n in re.findall(r"(\d+)/1000", out.getvalue())]
    assert drawn[0] == 0 and drawn[-1] == 120, drawn
    assert all(b - a >= 30 for a, b in zip(drawn[:-1], drawn[1:-1])), drawn


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a pseudo-terminal")
def test_a_terminal_that_reports_no_size_still_gets_the_bar():
    """A pseudo-terminal opened without a size (0 x 0: `script`, a container's exec): tqdm alone draws nothing
    there (its rows come out -1), so a run showed no progress at all; the bar takes 80 columns instead."""
    import pty

    master, slave = pty.openpty()
    try:
        assert os.get_terminal_size(slave).columns == 0
        with open(slave, "w", closefd=False) as out:
            bar = progress_bar(total=3, file=out, unit="it", dynamic_ncols=True)
            for _ in range(3):
                bar.update(1)
            bar.close()
            out.flush()
        # the terminal hands written bytes to the reader when it gets to them: read until the end shows, or 10 s
        shown, deadline = "", time.monotonic() + 10
        while "3/3" not in shown and time.monotonic() < deadline:
            if select.select([master], [], [], 0.1)[0]:
                shown += os.read(master, 65536).decode(errors="replace")
    finally:
        os.close(master)
        os.close(slave)
    assert "3/3" in shown, repr(shown)


def test_a_live_bar_is_redrawn_at_most_as_often_as_asked():
    """A terminal's bar is redrawn at most every ``tty_interval`` s (0.1 s by default; reading an archive asks for 1 s,
    its bar drawing more than its work otherwise); a log file's every 30 s, whatever was asked."""
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for out, kwargs, interval in ((Terminal(), {"tty_interval": 1.0}, 1.0), (Terminal(), {}, 0.1),
                                  (io.StringIO(), {"tty_interval": 1.0}, 30.0)):
        bar = progress_bar(total=3, file=out, **kwargs)
        assert bar.mininterval == interval, (type(out).__name__, kwargs)
        bar.close()

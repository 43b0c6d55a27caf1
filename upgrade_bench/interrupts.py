"""Ctrl-C and SIGTERM (scancel, kill): how every script stops cleanly, keeping what was done.

While `Signals` is installed both raise Interrupted, a KeyboardInterrupt that knows its
signal, except inside `hold()`, where they wait for the block's end (a record being written
and counted is never cut in two). `ignored()` makes them wait until work that must finish
is done: a process group's teardown, the summary of an interrupted run.
"""
import signal
from contextlib import contextmanager

from . import faults

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class Signals:
    """SIGINT and SIGTERM as Interrupted; `received`: the last one that came."""

    def __init__(self):
        self.holding = False
        self.pending = None
        self.received = None
        self.previous = {}

    def install(self) -> None:
        for signum in STOP_SIGNALS:
            self.previous[signum] = signal.signal(signum, self._handle)

    def restore(self) -> None:
        """The handlers from before install() (main() may run inside another program)."""
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)

    def exit_code(self) -> int:
        """128 + the signal, as a shell reports it; Ctrl-C (130) if none came through us."""
        return faults.exit_for_signal(self.received or signal.SIGINT)

    def _handle(self, signum, frame):
        self.received = signum
        if self.holding:
            self.pending = signum
        else:
            raise Interrupted(signum)

    @contextmanager
    def hold(self):
        self.holding = True
        try:
            yield
        finally:
            self.holding = False
        if self.pending:
            signum, self.pending = self.pending, None
            raise Interrupted(signum)


@contextmanager
def ignored():
    """Ctrl-C and SIGTERM are dropped until the block is done (work that must not be cut short)."""
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

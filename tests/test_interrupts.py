"""Ctrl-C and SIGTERM (upgrade_bench.interrupts), in this process: raised, held, dropped."""
import signal

import pytest

from upgrade_bench.interrupts import Interrupted, Signals, ignored


def test_a_signal_waits_for_a_held_block_is_raised_otherwise_and_dropped_while_ignored():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    signals = Signals()
    signals.install()
    try:
        written = []
        with pytest.raises(Interrupted) as stop:
            with signals.hold():
                signal.raise_signal(signal.SIGTERM)
                written.append("the whole record")  # not cut in two
        assert written == ["the whole record"] and stop.value.signum == signal.SIGTERM
        with signals.hold():
            pass  # the stop was delivered once, not again
        with pytest.raises(Interrupted) as stop:
            signal.raise_signal(signal.SIGINT)
        assert isinstance(stop.value, KeyboardInterrupt)  # what code that knows only Ctrl-C catches
        with ignored():
            signal.raise_signal(signal.SIGTERM)  # the teardown goes on
        assert signals.exit_code() == 128 + signal.SIGINT  # the last signal that came through
    finally:
        signals.restore()
    assert {s: signal.getsignal(s) for s in before} == before
    assert Signals().exit_code() == 130  # none came: Ctrl-C, as a shell reports it

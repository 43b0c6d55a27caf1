"""How a failure becomes a record, a line and an exit code, for every script.

The exit codes are the contract with run_sweep.sh: 3 = out of memory (the point is
recorded as `oom` and the sweep goes on), 2 = bad input (nothing ran), 4 = a record could
not be written (a full disk: the sweep stops, as no later point could be kept either),
5 = the machine's environment stops every run alike (a stale build lock: nothing ran, and the
input is not at fault), 128 + the signal = stopped by Ctrl-C (130) or SIGTERM (143),
1 = anything else.

Bad input is found in many places (a setting, a flag, a model config, an attention
backend, a log to read) and is always raised as BadInput; every script's `__main__` runs
its main through run_main, the one place that turns it, a WriteFailed or an
EnvironmentFault into one line on stderr and the exit code. A script with flags parses them
with Parser, whose usage errors are BadInput too. Under torch's elastic launcher the line goes
into the process's error file as well (say): torchrun quotes it, bench_comm.py's RANKS says it.
"""
import argparse
import importlib.util
import json
import os
import signal
import sys
import time

EXIT_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_OOM = 3
EXIT_WRITE_FAILED = 4
EXIT_ENVIRONMENT = 5


def exit_for_signal(signum: int = signal.SIGINT) -> int:
    """128 + the signal, as a shell reports a process the signal stopped (Ctrl-C: 130)."""
    return 128 + signum


def killed_by(code: int, signum: int) -> bool:
    """Whether a child's exit code says `signum` ended it: -signum from subprocess, 128 + signum
    from a shell, 256 - signum from the DeepSpeed launcher (its -signum as an unsigned byte)."""
    return code in (-signum, exit_for_signal(signum), 256 - signum)


def exit_meaning(code: int) -> tuple[str, str]:
    """(error kind, message) of a benchmark process that ended with `code` and no error record."""
    if code == EXIT_OOM:
        return "oom", f"exit code {code} (out of memory) without an error record (another rank failed?)"
    if code == EXIT_BAD_INPUT:
        return "bad_input", f"exit code {code}: the benchmark rejected its configuration"
    if code == EXIT_WRITE_FAILED:
        return "write_failed", f"exit code {code}: the benchmark could not write its records (disk full?)"
    if code == EXIT_ENVIRONMENT:
        return "environment", (f"exit code {code}: the machine's environment stopped the benchmark (its error line "
                               f"says what)")
    if killed_by(code, signal.SIGKILL):
        return "exception", f"killed by SIGKILL (exit {code}): the host's OOM killer?"
    return "exception", f"exit code {code} without an error record"


class BadInput(ValueError):
    """Input that cannot run: a setting, a flag, a config, a file; str() is the one line the
    user sees (what was given, and what is allowed). Raised before any work starts."""


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors (an unknown flag, a bad value, parser.error) raise
    BadInput: one line and exit 2 through run_main, not argparse's usage text and exit."""

    def error(self, message):
        raise BadInput(f"{message} (see --help)")


class EnvironmentFault(RuntimeError):
    """The machine, not the input, stops every run alike (a stale build lock another run left);
    str() is the one line, saying what to fix. Raised before any work starts."""


class WriteFailed(RuntimeError):
    """A record could not be appended to its file (a full disk, say); str() is the one line."""


class NonFiniteLoss(RuntimeError):
    """A NaN/inf loss: the step ran but its numbers mean nothing."""


STOPS = {BadInput: EXIT_BAD_INPUT, WriteFailed: EXIT_WRITE_FAILED, EnvironmentFault: EXIT_ENVIRONMENT}


# Set by a launcher that says its ranks' one line itself (kernels/ranks.py: bench_comm.py's RANKS):
# a rank then leaves its line in its error file only.
SAYS_ENV = "UPGRADE_BENCH_LAUNCHER_SAYS"
# Where torch's elastic launcher (torchrun, and RANKS through it) asks each rank for the error that
# ended it: torchrun quotes it in its failure summary, RANKS says it alone.
ERROR_FILE_ENV = "TORCHELASTIC_ERROR_FILE"


def say(line: str, speak: bool = True, code: int | None = None) -> None:
    """The one line a script ends with (and `code`, the exit code it ends with): on stderr (where
    `speak`, and no launcher says it for this process), and in the error file a torch elastic
    launcher gave this process, if any."""
    if speak and not os.environ.get(SAYS_ENV):
        sys.stderr.write(line + "\n")
    path = os.environ.get(ERROR_FILE_ENV)
    if path:
        try:
            with open(path, "w") as f:  # the form torch's ProcessFailure reads: a message and a timestamp (whole
                now = time.time()  # seconds); said_at orders lines said within one second, exit_code outlives a
                json.dump({"message": line, "timestamp": int(now), "said_at": now,  # signal in the teardown
                           "exit_code": code}, f)
        except OSError:  # a full disk, say: the line is what matters, and it was said above where it is to be
            pass


def stop(err: BadInput | WriteFailed | EnvironmentFault, speak: bool = True) -> int:
    """Say `err` in one line (say); the exit code it ends a script with."""
    code = next(code for kind, code in STOPS.items() if isinstance(err, kind))
    say(f"error: {err}", speak, code)
    return code


def run_main(main, *args) -> int:
    """A script's main(*args). Bad input (or an environment fault) ends it before any work; a
    record that cannot be written ends it too, as measuring on is pointless when the results cannot be kept; Ctrl-C
    (or a SIGTERM a script turned into interrupts.Interrupted) ends it with one line, not a
    KeyboardInterrupt traceback: every record is written whole, so what was written is kept."""
    for stream in (sys.stdout, sys.stderr):  # PYTHONIOENCODING=ascii and a note in Greek: no traceback
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        return main(*args)
    except tuple(STOPS) as err:
        return stop(err)
    except KeyboardInterrupt as err:
        return interrupted(getattr(err, "signum", signal.SIGINT))


def interrupted(signum: int, speak: bool = True) -> int:
    """Say in one line (say) that `signum` stopped the script; the exit code a shell would report."""
    say(f"stopped by {signal_name(signum)}: what was written is kept", speak, exit_for_signal(signum))
    return exit_for_signal(signum)


def signal_name(signum: int | None) -> str:
    """'Ctrl-C' for SIGINT (and for none: what a KeyboardInterrupt without a handler was), else its
    name ('SIGTERM'), or its number where it has none."""
    if signum in (None, signal.SIGINT):
        return "Ctrl-C"
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


# The import names of the packages of the project's environment (install.sh's .venv) that a
# script needs before its work: torch for every measurement, deepspeed and transformers for a
# training step, matplotlib for the report's figures.
TRAINING_STACK = ("torch", "deepspeed", "transformers")


def require(script: str, *modules: str) -> None:
    """Exit 2 with one line when this interpreter lacks one of `modules`: `python3 script`
    without the project's environment, told how to get it before any work, not a
    ModuleNotFoundError traceback once the work reaches the import (find_spec imports nothing)."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if not missing:
        return
    then = (f"./{script} again: it picks .venv/bin/python (or $PYTHON)" if script.endswith(".sh")
            else f".venv/bin/python {script}")
    sys.exit(stop(BadInput(f"{sys.executable} has no {' or '.join(missing)}: not the project's Python. "
                           f"Run ./install.sh once (it makes .venv), then {then}")))


def is_oom(err: BaseException) -> bool:
    import torch

    if isinstance(err, torch.OutOfMemoryError):
        return True
    text = str(err)
    # CPU allocations fail with a plain RuntimeError; NCCL/cuBLAS report OOM in text.
    return isinstance(err, RuntimeError) and ("out of memory" in text.lower()
                                              or "can't allocate memory" in text)


# The error of a training point whose loss was NaN or Infinity: the run diverged, whatever shows
# it (the sweep's table, the node's summary, the report). Logs before this name said `nonfinite_loss`.
DIVERGED = "diverged"


def error_fields(err: BaseException) -> dict:
    """An `error` record's fields: kind (oom / diverged / exception), message, traceback tail."""
    import traceback

    tail = "".join(traceback.format_exception(type(err), err, err.__traceback__))[-2000:]
    kind = "oom" if is_oom(err) else DIVERGED if isinstance(err, NonFiniteLoss) else "exception"
    return {"error": kind, "exception": type(err).__name__,
            "message": str(err)[:500], "traceback_tail": tail}


def point_status(err: BaseException) -> dict:
    """The status and reason of a kernel benchmark's point that raised `err` (bench_flash_attn,
    bench_hbm): `oom` (a result: the next point runs) or `error`, in a record, never a crash."""
    fields = error_fields(err)
    status = "oom" if fields["error"] == "oom" else "error"
    return {"status": status, "reason": f"{fields['exception']}: {fields['message']}"}


def exit_code_for(err: BaseException) -> int:
    return EXIT_OOM if is_oom(err) else EXIT_ERROR

"""Local ranks for a script that runs one process per GPU (bench_comm.py's RANKS=N): N copies of
the script on this host, each with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT
as torchrun sets them, and their exit code. A rank's failure is its own one line (rank 0 says
what every rank finds); torchrun adds its ChildFailedError traceback after it, this nothing.

The ranks share the launcher's process group, so a Ctrl-C at the terminal reaches each of
them, and each stops itself with its one line; a SIGTERM sent to the launcher alone (kill,
scancel) is passed on to them. When one rank fails the others are given GRACE_S to end on
their own (the ranks that wait on it in a collective time out, or fail with it) and then
stopped: no rank is left waiting on one that is gone.
"""
import os
import signal
import socket
import subprocess
import time

from .. import faults
from ..interrupts import STOP_SIGNALS

# How long the other ranks get to end by themselves after one failed, before SIGTERM, then SIGKILL.
GRACE_S = 10.0
POLL_S = 0.1


def free_port() -> int:
    """A TCP port free on this host now, for a rendezvous (MASTER_PORT)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rank_env(environ, rank: int, ranks: int, port: int, unset=()) -> dict:
    """What rank `rank` of `ranks` on this host sees: `environ` less `unset` (the setting
    that asked for the launch), and the launcher's variables."""
    env = {k: v for k, v in environ.items() if k not in unset}
    env.update(RANK=str(rank), WORLD_SIZE=str(ranks), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(ranks),
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    return env


def launch(argv: list, ranks: int, environ=None, unset=(), grace_s: float = GRACE_S) -> int:
    """Run `argv` as `ranks` local ranks and wait for them all; the exit code of the first that
    failed (rank 0's where several did at once: it says what every rank finds), else 0. A stop
    signal to this process goes on to each rank still running; what they print goes where ours
    does."""
    environ = os.environ if environ is None else environ
    port = free_port()
    procs = [subprocess.Popen(argv, env=rank_env(environ, rank, ranks, port, unset)) for rank in range(ranks)]
    previous = {signum: signal.signal(signum, lambda signum, frame: forward(procs, signum)) for signum in STOP_SIGNALS}
    first, failed_at = 0, None
    try:
        while [p.poll() for p in procs].count(None):  # every rank polled: any() would stop at the first
            if not first:
                first = next((p.returncode for p in procs if p.returncode), 0)
                failed_at = time.monotonic() if first else None
            elif time.monotonic() - failed_at > grace_s:
                stop(procs, grace_s)
            time.sleep(POLL_S)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    first = first or next((p.returncode for p in procs if p.returncode), 0)
    return faults.exit_for_signal(-first) if first < 0 else first  # a signal's end as a shell reports it


def forward(procs: list, signum: int) -> None:
    """A stop signal this process got, to each rank still running (Ctrl-C at a terminal reached
    them already: they are in our process group, and a second one is harmless)."""
    if signum == signal.SIGINT:
        return
    for p in procs:
        if p.poll() is None:
            p.send_signal(signum)


def stop(procs: list, grace_s: float) -> None:
    """SIGTERM each rank still running, then SIGKILL what is left after `grace_s`."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in procs:
            if p.poll() is None:
                p.send_signal(sig)
        deadline = time.monotonic() + grace_s
        while [p.poll() for p in procs].count(None) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        if None not in [p.poll() for p in procs]:
            return

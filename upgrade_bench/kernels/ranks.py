"""The ranks of a script that runs one process per GPU (bench_comm.py's RANKS=N), started by torch's
elastic launcher, torchrun's own engine, called as a library: on one host (its rendezvous on a
port the OS picks, as `torchrun --standalone`), or on each of `nodes` hosts (the same command
on each, node 0 hosting the rendezvous at MASTER_ADDR:MASTER_PORT, as torchrun's
--nnodes/--node-rank/--master-addr). Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR
and MASTER_PORT as under torchrun, and the exit code the launch ends with is the failing rank's.

What torchrun adds is left out: its agent's log lines, and the ChildFailedError traceback a
failed rank ends in. Each rank writes the one line it ends with into its error file
(TORCHELASTIC_ERROR_FILE, faults.say) and, told by SAYS_ENV that the launcher speaks for it,
prints nothing; the launcher says the line of the rank that failed first (a rank the launcher
stopped after it comes after it), or, where that rank said none (a segfault, the OOM killer),
how it ended. A Ctrl-C or SIGTERM to the launcher goes on to every rank, which stops itself
(each within GRACE_S, or is killed), and the launcher says it in one line; one that comes while
the hosts still meet (torch's rendezvous waits inside C++, where no Python handler runs) ends the
launch at once, in one line too (StopWhileMeeting).
"""
import logging
import os
import signal
import socket
import sys
import tempfile
import uuid
from contextlib import contextmanager
from dataclasses import dataclass

from .. import faults
from ..interrupts import Interrupted, STOP_SIGNALS

# How long the other ranks get to end by themselves after one failed (or after a Ctrl-C), before SIGKILL.
GRACE_S = 10
# The rendezvous of several hosts: its name, the same on every host (the store's key prefix).
RUN_ID = "upgrade-bench"


@dataclass(frozen=True)
class Hosts:
    """Where the ranks meet: one host (`nodes` 1), or node `node_rank` of `nodes`, node 0 at
    `master_addr`:`master_port`."""
    nodes: int = 1
    node_rank: int = 0
    master_addr: str = ""
    master_port: int = 0


def free_port() -> int:
    """A TCP port free on this host now, for a rendezvous (MASTER_PORT)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def config(ranks: int, hosts: Hosts, wait_s: float, log_dir: str):
    """torchrun's LaunchConfig for `ranks` per host on `hosts`; no restarts (a benchmark is not
    retried); nothing is redirected: the ranks print where this process does."""
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs
    from torch.distributed.launcher.api import LaunchConfig

    if hosts.nodes == 1:
        rendezvous = {"rdzv_backend": "c10d", "rdzv_endpoint": "localhost:0", "run_id": str(uuid.uuid4()),
                      "rdzv_configs": {"timeout": int(wait_s)}}
    else:
        rendezvous = {"rdzv_backend": "static", "rdzv_endpoint": f"{hosts.master_addr}:{hosts.master_port}",
                      "run_id": RUN_ID, "rdzv_configs": {"rank": hosts.node_rank, "timeout": int(wait_s)}}
    return LaunchConfig(min_nodes=hosts.nodes, max_nodes=hosts.nodes, nproc_per_node=ranks, max_restarts=0,
                        logs_specs=DefaultLogsSpecs(log_dir=log_dir), shutdown_timeout=GRACE_S, **rendezvous)


def launch(argv: list, ranks: int, hosts: Hosts, wait_s: float, unset=()) -> int:
    """Run `argv` (an interpreter and a script) as `ranks` ranks on this host, one of `hosts`,
    and wait for them all; 0, or the failing rank's exit code after its one line. The ranks see
    this process's environment less `unset` (the settings that asked for the launch). BadInput
    when the hosts do not meet within `wait_s`; Interrupted for a Ctrl-C or SIGTERM."""
    # The agent's TCPStore client (C++) warns when the store's host, node 0, has ended before it:
    # on another host the normal end of a run. Its C++ log level is read once, as torch loads
    # (not yet, in this process): errors only, for the agent; the ranks get the user's setting.
    cpp_level_set_here = "TORCH_CPP_LOG_LEVEL" not in os.environ and "torch" not in sys.modules
    if cpp_level_set_here:
        os.environ["TORCH_CPP_LOG_LEVEL"] = "ERROR"
        unset = (*unset, "TORCH_CPP_LOG_LEVEL")
    from torch.distributed import DistError
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.elastic.rendezvous import RendezvousError
    from torch.distributed.launcher.api import elastic_launch

    quiet_agent()
    with tempfile.TemporaryDirectory(prefix="ranks-") as log_dir:
        try:
            with rank_environ(unset), StopWhileMeeting(log_dir):
                elastic_launch(config(ranks, hosts, wait_s, log_dir), argv[0])(*argv[1:])
            return 0
        except ChildFailedError as err:
            rank, failure = root_cause(err.failures)
            faults.say(said(failure) or ended(rank, failure))
            return code(failure)
        except SignalException as err:  # the agent's handler: the ranks were sent it and have ended
            raise Interrupted(err.sigval) from None
        except (DistError, RendezvousError) as err:
            where = (f"MASTER_ADDR={hosts.master_addr} MASTER_PORT={hosts.master_port}" if hosts.nodes > 1
                     else "this host")
            raise faults.BadInput(f"node {hosts.node_rank} of NNODES={hosts.nodes}: no rendezvous at {where} (where "
                                  f"the hosts meet within {wait_s:g} s): {first_line(err)}") from None


class StopWhileMeeting:
    """Ctrl-C and SIGTERM while the hosts meet: torch's static rendezvous waits for the other hosts
    inside a C++ call (node 0's TCPStore, up to the wait), where Python runs no signal handler, so
    the launch would sit out the wait. Its handlers here only note the signal; the C side also
    writes it to a wakeup pipe, which a thread watches: while these handlers are still the
    process's (the agent installs its own as it starts the ranks, and then stops them itself), it
    says the line and ends the process with the signal's exit code. No rank has started then; the
    launch's log folder `log_dir` goes with it."""

    DONE = b"\0"  # no signal's number: the watcher's stop

    def __init__(self, log_dir: str):
        self.log_dir = log_dir

    def __enter__(self):
        import threading

        self.read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        self.saved = {s: signal.signal(s, self._note) for s in STOP_SIGNALS}
        self.saved_fd = signal.set_wakeup_fd(write_fd)
        self.write_fd = write_fd
        threading.Thread(target=self._watch, daemon=True).start()
        return self

    def _note(self, signum, frame):  # the agent's own handlers replace this one as the ranks start
        pass

    def _watch(self):
        import shutil

        while (data := os.read(self.read_fd, 1)) not in (b"", self.DONE):
            if data[0] in STOP_SIGNALS and signal.getsignal(data[0]) == self._note:
                shutil.rmtree(self.log_dir, ignore_errors=True)
                os.environ.pop(faults.SAYS_ENV, None)  # set for the ranks (rank_environ): this is the launcher
                os._exit(faults.interrupted(data[0]))
        os.close(self.read_fd)  # here, not by the launch: no read of an fd number reused meanwhile

    def __exit__(self, *exc):
        signal.set_wakeup_fd(self.saved_fd)
        for s, handler in self.saved.items():
            if signal.getsignal(s) == self._note:
                signal.signal(s, handler)
        os.write(self.write_fd, self.DONE)
        os.close(self.write_fd)
        return False


def quiet_agent() -> None:
    """The agent's log lines (its ranks' start, a SIGTERM sent, a failure) kept off stderr: the
    launch ends in one line of its own."""
    for name in ("torch.distributed.elastic", "torch.distributed.launcher"):
        logger = logging.getLogger(name)
        logger.propagate = False
        logger.addHandler(logging.NullHandler())


@contextmanager
def rank_environ(unset=()):
    """This process's environment as the ranks get it (the agent copies os.environ): less
    `unset`, with SAYS_ENV set; put back after."""
    saved = dict(os.environ)
    for name in unset:
        os.environ.pop(name, None)
    os.environ[faults.SAYS_ENV] = "1"
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def said(failure) -> str | None:
    """The one line a failed rank wrote into its error file (faults.say), if it wrote one."""
    message = failure.error_file_data.get("message") if os.path.isfile(failure.error_file) else None
    return message if isinstance(message, str) and message else None


def code(failure) -> int:
    """The exit code a failed rank ends the launch with: the one its line said (a signal that ended
    its teardown after it is the launcher's), else its own as a shell reports it."""
    said_code = failure.error_file_data.get("exit_code") if said(failure) else None
    return said_code if isinstance(said_code, int) else exit_code(failure.exitcode)


def stopped(failure) -> bool:
    """Whether a stop signal ended a rank, by its line's code (a rank that said an error was not
    stopped, whatever ended its teardown) or, where it said none, by how it ended: what the
    launcher does to the ranks left once one failed."""
    return any(faults.killed_by(code(failure), signum) for signum in STOP_SIGNALS)


def crashed(failure) -> bool:
    """Whether a signal other than a stop signal ended a rank that said nothing (SIGSEGV, SIGABRT,
    a SIGKILL: the OOM killer's, or the launcher's to a rank that outlived its SIGTERM)."""
    return said(failure) is None and failure.exitcode < 0 and not stopped(failure)


def root_cause(failures: dict) -> tuple:
    """(rank, failure) of the rank that failed first: one that said nothing and was stopped (a stop
    signal, or the launcher's SIGKILL at least GRACE_S after the first failure) last; one that
    crashed without a line (SIGSEGV, the OOM killer) first, as its peers' failed collectives
    follow from it; then one that said why before one that did not, then the earliest (said_at:
    a rank stopped from outside says so before its peers fail; one the launcher stopped, after the
    rank it stopped for), a stop before an error said at once, then the lowest rank."""
    first_s = min(f.timestamp for f in failures.values())

    def quiet_stop(f) -> bool:
        late_kill = f.exitcode == -signal.SIGKILL and f.timestamp >= first_s + GRACE_S
        return said(f) is None and (stopped(f) or late_kill)

    return min(failures.items(), key=lambda item: (
        quiet_stop(item[1]), not crashed(item[1]) or quiet_stop(item[1]), said(item[1]) is None,
        item[1].error_file_data.get("said_at") or item[1].timestamp, stopped(item[1]), item[0]))


def ended(rank: int, failure) -> str:
    """The line of a rank that failed without saying why."""
    code = failure.exitcode
    how = f"was ended by {faults.signal_name(-code)}" if code < 0 else f"exited with code {code}"
    return f"error: rank {rank} {how} without a line of its own (pid {failure.pid} on {socket.gethostname()})"


def exit_code(code: int) -> int:
    """A rank's exit code as a shell reports it (a signal's end: 128 + the signal)."""
    return faults.exit_for_signal(-code) if code < 0 else code


def first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


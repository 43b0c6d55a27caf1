"""Running a benchmark process: its JSON lines live, timeouts, killing its whole process group,
and a child that dies with its parent."""
import ctypes
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from ..interrupts import ignored
from ..paths import REPO
from ..log.records import append_line, read_lines

KILL_GRACE_S = 10  # SIGTERM -> SIGKILL; enough for a rank to exit, short enough for a night
PDSH_GRACE_S = 30  # DeepSpeed's pdsh runner needs a moment to pkill the ranks on other nodes
STDERR_TAIL_LINES = 40
# After its error record or its last summary a process should just exit; one that does not
# (a rank stuck in a collective at teardown) is stopped after this long, not POINT_TIMEOUT.
EXIT_GRACE_S = 120


@dataclass
class ProcessResult:
    seq_lens: list[int]
    summaries: list[dict] = field(default_factory=list)
    error: dict | None = None  # the benchmark's own error record
    header: dict | None = None
    exit_code: int | None = None
    status: str = "running"  # ok | failed | timeout | interrupted
    stderr_tail: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    steps_s: float = 0.0  # every step, warm-up included
    timed_s: float = 0.0  # non-warm-up steps

    def add(self, record: dict) -> None:
        """Account for one record of the process."""
        kind = record["kind"]
        if kind == "header" and self.header is None:
            self.header = record
        elif kind == "step" and record.get("step_ms") is not None:
            self.steps_s += record["step_ms"] / 1e3
            if not record.get("warmup"):
                self.timed_s += record["step_ms"] / 1e3
        elif kind == "summary":
            self.summaries.append(record)
        elif kind == "error":
            self.error = record

    def complete(self) -> bool:
        """Every point of the process has its summary."""
        return len(self.summaries) == len(self.seq_lens)

    def settled(self) -> bool:
        """Nothing left to measure: the process should be exiting."""
        return self.error is not None or self.complete()

    def timing(self) -> dict:
        return {"seq_lens": self.seq_lens, "finished": [s["seq_len"] for s in self.summaries],
                "status": self.status, "exit_code": self.exit_code, "wall_s": self.wall_s,
                "steps_s": self.steps_s, "timed_steps_s": self.timed_s,
                "warmup_s": self.steps_s - self.timed_s,
                # launch, imports, model and DeepSpeed init, JIT builds, batches, teardown
                "startup_s": self.wall_s - self.steps_s}


class Log:
    """The benchmark's own output (stderr, and stdout lines that are not records), appended
    to one file by every process of a sweep, from two reader threads; its `error:` and
    `warning:` lines also go to the terminal, each warning once per sweep (every process of a
    sweep repeats its start-up warnings).

    Each line goes in whole (records.append_line). A line that cannot be written (a full
    disk) ends the logging, not the sweep: `error` keeps why, for the sweep to say.
    """

    def __init__(self, path: str):
        self.path = path
        self.error: OSError | None = None
        self._lock = threading.Lock()
        self._warned = set()

    def show(self, line: str) -> None:
        """Echo a benchmark's own message to the terminal, a warning seen before excepted."""
        if not line.startswith(("error:", "warning:")):
            return
        if line.startswith("warning:"):
            with self._lock:
                if line in self._warned:
                    return
                self._warned.add(line)
        sys.stderr.write(line)

    def write(self, text: str) -> None:
        with self._lock:
            if self.error is None:
                try:
                    append_line(self.path, text)
                except OSError as err:
                    self.error = err


# How torch's TCPStore says a rendezvous port was taken (by another run) before it bound it,
# and how many ports to try: a new one is as likely to be free as the first.
PORT_TAKEN = "EADDRINUSE"
PORT_ATTEMPTS = 3


# <linux/prctl.h>: the signal a process gets when the thread that started it ends
PR_SET_PDEATHSIG = 1


def dies_with_parent(signum: int = signal.SIGTERM):
    """A preexec_fn for Popen: the child gets `signum` when this process ends, however it ends
    (kill -9 too), so it stops its own processes as on a SIGTERM; the child is in a session of
    its own and nothing else would reach it. Linux's parent-death signal (prctl(2)); None
    elsewhere, where a run_node.sh step's hold on its folder's lock is the fallback. Call Popen
    from the main thread: the signal comes when the starting thread ends."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child only calls it
    parent = os.getpid()

    def arm():
        prctl(PR_SET_PDEATHSIG, int(signum))
        if os.getppid() != parent:  # the parent ended before the signal was armed
            os.kill(os.getpid(), signum)
    return arm


def parse_record(line: str) -> dict | None:
    """A JSON record in a child's stdout line (pdsh prefixes lines with 'host: ')."""
    start = line.find("{")
    if start < 0:
        return None
    records, _ = read_lines([line[start:]])
    return records[0] if records else None


def _group_gone(proc) -> bool:
    proc.poll()  # reap the leader: a zombie would keep the group alive
    try:
        os.killpg(proc.pid, 0)
        return False
    except ProcessLookupError:
        return True


def _wait_until(done, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def stop_group(proc, multi_node: bool, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM the process group of `proc` (launcher, ranks and anything they started),
    then SIGKILL what is left after `grace_s`: no orphan keeps holding GPU memory."""
    # A second Ctrl-C (or scancel's SIGTERM) must not cut this short and leave ranks behind.
    with ignored():
        if multi_node and proc.poll() is None:  # its handler pkills the ranks on other nodes
            proc.send_signal(signal.SIGTERM)
            _wait_until(lambda: proc.poll() is not None, PDSH_GRACE_S)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            if _wait_until(lambda: _group_gone(proc), grace_s):
                break
        proc.wait()


def _read_in_background(proc, log, tail: deque):
    """(queue of the child's stdout lines, None at its end; the reader threads): stdout is
    read into the queue, stderr into `tail` and the log as it comes."""
    lines = queue.Queue()

    def read_stdout():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def read_stderr():
        for line in proc.stderr:
            tail.append(line.rstrip("\n"))
            log.write(line)
            log.show(line)

    readers = [threading.Thread(target=read_stdout, daemon=True),
               threading.Thread(target=read_stderr, daemon=True)]
    for t in readers:
        t.start()
    return lines, readers


def _take(line: str, result: "ProcessResult", log, echo, on_summary) -> bool:
    """One stdout line: a record is echoed and added to `result` (on_summary for a summary),
    anything else goes to the log; True when it was a summary."""
    record = parse_record(line)
    if record is None:
        log.write(line)
        return False
    # As the benchmark wrote it: without the log_file that read_lines adds.
    echo.write(json.dumps({k: v for k, v in record.items() if k != "log_file"}) + "\n")
    echo.flush()
    result.add(record)
    if record["kind"] != "summary":
        return False
    on_summary(record)
    return True


def _follow(proc, lines, result, started: float, timeout_s, multi_node, take) -> None:
    """Read `lines` with take(line) until stdout ends; stop the process group once every
    point is in and EXIT_GRACE_S has passed, or when no summary came for `timeout_s`."""
    last_point, settle_by = started, None
    while True:
        deadlines = [d for d in (timeout_s and last_point + timeout_s, settle_by) if d]
        wait = max(0.0, min([1.0] + [d - time.monotonic() for d in deadlines]))
        try:
            line = lines.get(timeout=wait)
        except queue.Empty:
            line = ""
        if line is None:
            return
        if line and take(line):
            last_point = time.monotonic()
        if line and settle_by is None and result.settled():
            settle_by = time.monotonic() + EXIT_GRACE_S
        if settle_by is not None and time.monotonic() > settle_by:
            stop_group(proc, multi_node)
            return
        if settle_by is None and timeout_s and time.monotonic() > last_point + timeout_s:
            result.status = "timeout"
            stop_group(proc, multi_node)
            return


def run_process(argv, env, seq_lens, timeout_s, log, on_summary, multi_node, echo) -> ProcessResult:
    """Run one benchmark process; echo its records to the `echo` stream; kill its group on
    timeout or interrupt. on_summary(summary) is called as each point finishes."""
    result = ProcessResult(list(seq_lens))
    tail = deque(maxlen=STDERR_TAIL_LINES)
    started = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, encoding="utf-8", errors="replace", bufsize=1,
                            start_new_session=True, preexec_fn=dies_with_parent())
    lines, readers = _read_in_background(proc, log, tail)
    try:
        _follow(proc, lines, result, started, timeout_s, multi_node,
                lambda line: _take(line, result, log, echo, on_summary))
        if result.status == "running" and not _wait_until(lambda: proc.poll() is not None, KILL_GRACE_S):
            stop_group(proc, multi_node)  # stdout closed but the launcher lingers
    except KeyboardInterrupt:
        stop_group(proc, multi_node)
        if not result.complete():  # Ctrl-C while a finished process tears down loses nothing
            result.status = "interrupted"
    except BaseException:
        stop_group(proc, multi_node)  # whatever else stops the sweep here leaves no orphan
        raise
    with ignored():  # the process has ended: only its bookkeeping is left
        for t in readers:
            t.join(timeout=5)
        result.exit_code = proc.wait()
    result.wall_s = time.monotonic() - started
    result.stderr_tail = list(tail)
    if result.status == "running":  # every point done is a success, whatever teardown returned
        result.status = "ok" if result.complete() else "failed"
    return result

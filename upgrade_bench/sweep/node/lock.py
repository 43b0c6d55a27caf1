"""One run at a time on a results folder: run_node.sh's NODE_OUT is one configuration, and two
runs started on it together would each plan from the same records, then both write (two
configurations in one sweep.jsonl, or every step run twice).

The run holds an exclusive flock(2) on a file in the folder from before its plan reads the
folder to its exit; the file holds the holder's pid (and its running step's), for the one line
a second run gets. The kernel releases the lock when its last holder exits however it ends (a
kill -9 too), so a stale lock cannot outlive its run. The holder removes the file as it ends,
so the folder holds only logs; a run that locked the file just before it was removed sees that
the name no longer leads to the file it locked, and takes the lock again on the new one (else it
and a third run could each lock a file of their own). Each step
inherits the locked descriptor (sweep/node/main.run_step): a step that outlives its node keeps
the folder in use until it ends too.

The lock is a regular file of one name that the run creates or opens without following a link:
a link there (to the folder's own sweep.jsonl, to a path outside, to /dev/null), a second name
of another file, a folder or a FIFO is refused in one line, and nothing is written through it.
"""
import fcntl
import os
import stat
import sys
from contextlib import contextmanager
from pathlib import Path

from ...faults import BadInput, WriteFailed
from ...paths import file_kind

LOCK_NAME = ".run_node.lock"


def _open(path: Path, label: str) -> int:
    """The lock file's descriptor: created, or opened without following a link (O_NOFOLLOW) nor
    waiting on a FIFO (O_NONBLOCK); BadInput unless it is a regular file of one name."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as err:  # ELOOP: a link; EISDIR: a folder; ENXIO: a socket
        try:
            what = file_kind(os.lstat(path).st_mode)
        except OSError:
            raise BadInput(f"{label}: cannot open its lock file {path} ({err.strerror or err})") from None
        raise BadInput(_not_a_lock(label, path, what)) from None
    info = os.fstat(fd)
    what = file_kind(info.st_mode)
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        what = f"a file with {info.st_nlink} names (a hard link)"
    if what != "a regular file":
        os.close(fd)
        raise BadInput(_not_a_lock(label, path, what))
    return fd


def _not_a_lock(label: str, path: Path, what: str) -> str:
    return f"{label}: its lock file {path} is {what}, not the regular file run_node.sh makes there: remove it and run again"


def take(folder: Path, label: str) -> int:
    """The open lock file's descriptor, locked for this process; BadInput naming the holder's
    pid when another process holds it, or when the lock file is no regular file of its own;
    WriteFailed when the pid cannot be written (a full disk). (The descriptor is not inherited
    by child processes unless passed on: Python opens files non-inheritable.)"""
    path = folder / LOCK_NAME
    fd = _open(path, label)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = holders(os.read(fd, 64))
        os.close(fd)
        raise BadInput(f"{label} is in use by another run_node.sh ({holder}): one run at a time on a "
                       f"folder; wait for it to end, or give this run a folder of its own") from None
    except OSError as err:  # a filesystem without locks (ENOLCK): the run goes on, said
        sys.stderr.write(f"warning: {label}: cannot lock it here ({err.strerror or err}): nothing stops a second "
                         f"run_node.sh on it while this one runs\n")
    try:
        current = os.lstat(path).st_ino
    except FileNotFoundError:
        current = None
    if current != os.fstat(fd).st_ino:  # removed by the run that ended as this one locked it
        os.close(fd)
        return take(folder, label)
    try:
        note(fd, os.getpid())
    except OSError as err:
        os.close(fd)
        raise WriteFailed(f"{label}: cannot write its lock file {path} ({err.strerror or err})") from None
    return fd


def note(fd: int, *pids: int) -> None:
    """Write the holders' pids into the lock file: the node's, then its running step's."""
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, " ".join(map(str, pids)).encode())


def holders(content: bytes) -> str:
    """The lock file's pids in words: 'pid N' (the node), then its step's."""
    pids = content.decode("ascii", "replace").split()
    if not pids:
        return "pid unknown"
    return f"pid {pids[0]}" + (f"; its step's process: pid {pids[1]}" if len(pids) > 1 else "")


def step_noted(fd: int | None, step_pid: int | None) -> None:
    """The lock file names the node's running step (None: no step runs). A write that fails (a
    full disk) loses only that word of a second run's refusal, not the lock: the run goes on."""
    if fd is None:
        return
    try:
        note(fd, os.getpid(), *([step_pid] if step_pid else []))
    except OSError:
        pass


@contextmanager
def held(folder: Path, label: str):
    """The folder (made if missing) locked for the block, which gets the locked descriptor
    (`label`: how the user named the folder); a folder this made is removed again when the block
    ends in BadInput with nothing but the lock in it (a refused plan leaves no empty folder)."""
    made = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BadInput(f"{label}: cannot make it ({err.strerror or err})") from None
    fd = take(folder, label)
    try:
        yield fd
    except BadInput:
        if made and os.listdir(folder) == [LOCK_NAME]:
            (folder / LOCK_NAME).unlink()
            folder.rmdir()
        raise
    finally:
        if (folder / LOCK_NAME).exists():  # while still held: the folder ends with logs only
            (folder / LOCK_NAME).unlink()
        os.close(fd)

"""One run at a time on a results folder: run_node.sh's NODE_OUT is one configuration, and two
runs started on it together would each plan from the same records, then both write (two
configurations in one sweep.jsonl, or every step run twice).

The run holds an exclusive flock(2) on a file in the folder from before its plan reads the
folder to its exit; the file holds the holder's pid, for the one line a second run gets. The
kernel releases the lock when the holder exits however it ends (a kill -9 too), so a stale
lock cannot outlive its run. The holder removes the file as it ends, so the folder holds only
logs; a run that locked the file just before it was removed sees that the name no longer leads
to the file it locked, and takes the lock again on the new one (else it and a third run could
each lock a file of their own).
"""
import fcntl
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from ...faults import BadInput

LOCK_NAME = ".run_node.lock"


def take(folder: Path, label: str) -> int:
    """The open lock file's descriptor, locked for this process; BadInput naming the holder's
    pid when another process holds it. (The descriptor is not inherited by child processes:
    Python opens files non-inheritable, so a step's process never holds the lock on.)"""
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        raise BadInput(f"{label} is in use by another run_node.sh (pid {holder}): one run at a time on a "
                       f"folder; wait for it to end, or give this run a folder of its own") from None
    except OSError as err:  # a filesystem without locks (ENOLCK): the run goes on, said
        sys.stderr.write(f"warning: {label}: cannot lock it here ({err.strerror or err}): nothing stops a second "
                         f"run_node.sh on it while this one runs\n")
    try:
        current = os.stat(folder / LOCK_NAME).st_ino
    except FileNotFoundError:
        current = None
    if current != os.fstat(fd).st_ino:  # removed by the run that ended as this one locked it
        os.close(fd)
        return take(folder, label)
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


@contextmanager
def held(folder: Path, label: str):
    """The folder (made if missing) locked for the block (`label`: how the user named it); a
    folder this made is removed again when the block ends in BadInput with nothing but the lock
    in it (a refused plan leaves no empty folder behind)."""
    made = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BadInput(f"{label}: cannot make it ({err.strerror or err})") from None
    fd = take(folder, label)
    try:
        yield
    except BadInput:
        if made and os.listdir(folder) == [LOCK_NAME]:
            (folder / LOCK_NAME).unlink()
            folder.rmdir()
        raise
    finally:
        if (folder / LOCK_NAME).exists():  # while still held: the folder ends with logs only
            (folder / LOCK_NAME).unlink()
        os.close(fd)

"""DeepSpeed's JIT-built ops and the lock a killed build leaves behind.

torch builds a C++/CUDA extension (DeepSpeed's CPU Adam, its shared-memory comm op) under
TORCH_EXTENSIONS_DIR, holding a `lock` file in the op's folder while it builds; every other
process that needs the op waits for the file to go, without a word and without a limit. A
build killed mid-way (SIGKILL, a timeout) leaves the file forever: every later run, and a
sweep at every point, waits out its POINT_TIMEOUT. A lock is stale when it is older than a
build takes here and no compiler runs on this machine; the run then stops with the path.
"""
import os
import time
from pathlib import Path

# No op of DeepSpeed's takes this long to build on a 2-core machine (CPU Adam: about a minute).
STALE_AFTER_S = 600
COMPILERS = ("ninja", "cc1plus", "cc1", "nvcc", "cicc", "ptxas", "c++", "g++", "gcc", "clang", "clang++", "ld")


def build_root() -> Path:
    """Where torch builds extensions: TORCH_EXTENSIONS_DIR, else its default cache (torch's
    get_default_build_root is the cache alone: the variable is read at build time)."""
    from torch.utils.cpp_extension import get_default_build_root

    return Path(os.environ.get("TORCH_EXTENSIONS_DIR") or get_default_build_root())


def compiler_running() -> bool:
    """Whether any compiler or build tool runs on this machine now (from /proc)."""
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() in COMPILERS:
                return True
        except OSError:  # the process ended while we looked
            continue
    return False


def build_locks(root: Path) -> list:
    """The lock files of the ops under `root` (<root>/<op>/lock or <root>/<python_device>/<op>/lock)."""
    return sorted(set(root.glob("*/lock")) | set(root.glob("*/*/lock")))


def stale_locks(root: Path, now: float, building: bool, stale_after_s: float = STALE_AFTER_S) -> list:
    """[(lock path, age in s)] of build locks under `root` no live build holds: none while a
    compiler runs (`building`), else those older than `stale_after_s`."""
    if building or not root.is_dir():
        return []
    found = []
    for lock in build_locks(root):
        try:
            age = now - lock.stat().st_mtime
        except OSError:
            continue
        if age > stale_after_s:
            found.append((lock, age))
    return found


def stale_lock_problem() -> str | None:
    """The one line a run stops with when a killed build's lock would make it wait forever."""
    root = build_root()
    found = stale_locks(root, time.time(), compiler_running())
    if not found:
        return None
    lock, age = found[0]
    return (f"a stale build lock at {lock} ({age / 60:.0f} min old, and no compiler runs here: a build "
            f"of this op was killed); every run that needs the op would wait on it forever. Remove it "
            f"(rm {lock}) and run again, or set TORCH_EXTENSIONS_DIR to a folder of this run's own")


def waiting_notice() -> str | None:
    """A line for the terminal when a live build holds a lock this run will wait on."""
    root = build_root()
    if not root.is_dir() or not compiler_running():
        return None
    locks = build_locks(root)
    if not locks:
        return None
    return (f"waiting for another process's build of {locks[0].parent.name} ({locks[0]}): "
            f"the first build of a DeepSpeed op takes about a minute")

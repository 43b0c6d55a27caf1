"""DeepSpeed's JIT-built ops and the lock a killed build leaves behind.

torch builds a C++/CUDA extension (DeepSpeed's CPU Adam, its shared-memory comm op) under
TORCH_EXTENSIONS_DIR, holding a `lock` file in the op's folder while it builds; every other
process that needs the op waits for the file to go, without a word and without a limit. A
build killed mid-way (SIGKILL, a timeout, Ctrl-C on a sweep) leaves the file forever: every
later run, and a sweep at every point, waits out its POINT_TIMEOUT.

The builder (torch's FileBaton) keeps the lock open for the whole build, so on a local disk a
lock no process holds open is stale at any age: the run stops at once, with the path. (An
age rule alone trusted a lock killed minutes ago, and "no compiler runs here" was false
whenever anything compiled, Triton's launcher stubs included: the run then waited for good.)
On a network filesystem the builder may be another node's, which this machine cannot see:
there a lock is stale only past the time a build takes.
"""
import os
import time
from pathlib import Path

# No op of DeepSpeed's takes this long to build on a 2-core machine (CPU Adam: about a minute).
STALE_AFTER_S = 600
# Filesystems another machine may be building on (a shared home or cluster scratch).
NETWORK_FS = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "ceph",
                        "fuse.sshfs", "fuse.glusterfs", "glusterfs", "afs", "pvfs2", "orangefs", "wekafs"})
# A builder closes its lock just before removing it: a lock seen unheld is looked at again after this.
RECHECK_S = 0.5
# DeepSpeed's Adam by where the optimizer lives, as torch names the op's build folder (engine.py
# asks for fused Adam, a CUDA op, on the GPU and CPU Adam where the optimizer is offloaded).
ADAM_OP = {False: "fused_adam", True: "cpu_adam"}


def build_root() -> Path:
    """Where torch builds extensions: TORCH_EXTENSIONS_DIR, else its default cache (torch's
    get_default_build_root is the cache alone: the variable is read at build time)."""
    from torch.utils.cpp_extension import get_default_build_root

    return Path(os.environ.get("TORCH_EXTENSIONS_DIR") or get_default_build_root())


def cache_root(environ) -> Path:
    """build_root() without importing torch: TORCH_EXTENSIONS_DIR, else torch's default cache,
    ~/.cache/torch_extensions (under XDG_CACHE_HOME where set), which then holds one folder per
    Python and CUDA version (py312_cu130/) with the ops in it."""
    if environ.get("TORCH_EXTENSIONS_DIR"):
        return Path(environ["TORCH_EXTENSIONS_DIR"])
    cache = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "torch_extensions"


def is_built(op: str, root: Path) -> bool:
    """Whether a finished build of `op` lies under `root`: its library, <op>/<op>.so, there or one
    folder down (the per-version folder of torch's default cache)."""
    return any(root.glob(f"{op}/{op}.so")) or any(root.glob(f"*/{op}/{op}.so"))


def build_locks(root: Path) -> list:
    """The lock files of the ops under `root` (<root>/<op>/lock or <root>/<python_device>/<op>/lock)."""
    if not root.is_dir():
        return []
    return sorted(set(root.glob("*/lock")) | set(root.glob("*/*/lock")))


def open_here() -> set:
    """The real paths of every file a process of this machine holds open (from /proc; the
    processes whose descriptors this user may not read are left out)."""
    held = set()
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            held.add(os.readlink(fd))
        except OSError:  # another user's process, or one that ended while we looked
            continue
    return held


def filesystem_type(path: Path) -> str:
    """The type of the filesystem `path` lies on (the longest mount point of /proc/mounts above it)."""
    real, best, kind = os.path.realpath(path), "", ""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return ""
    for line in mounts:
        parts = line.split()
        if len(parts) < 3:
            continue
        point = parts[1].replace("\\040", " ")
        if (real == point or real.startswith(point.rstrip("/") + "/")) and len(point) > len(best):
            best, kind = point, parts[2]
    return kind


def is_stale(held: bool, network: bool, age_s: float, stale_after_s: float = STALE_AFTER_S) -> bool:
    """Whether no build holds a lock: a process here holds it open while it builds; on a network
    filesystem a builder elsewhere is trusted for as long as a build takes."""
    if held:
        return False
    return age_s > stale_after_s if network else True


def stale_locks(root: Path, now: float, held: set, network=lambda lock: False) -> list:
    """[(lock path, age in s)] of the build locks under `root` no build holds (`held`: open_here())."""
    found = []
    for lock in build_locks(root):
        try:
            age = now - lock.stat().st_mtime
        except OSError:  # removed by its builder meanwhile
            continue
        if is_stale(os.path.realpath(lock) in held, network(lock), age):
            found.append((lock, age))
    return found


def stale_lock_problem() -> str | None:
    """The one line a run stops with when a killed build's lock would make it wait forever."""
    root = build_root()
    network = lambda lock: filesystem_type(lock) in NETWORK_FS  # noqa: E731
    found = stale_locks(root, time.time(), open_here(), network)
    if found:  # not a build that was just ending: still there, still unheld, a moment later
        time.sleep(RECHECK_S)
        found = stale_locks(root, time.time(), open_here(), network)
    if not found:
        return None
    lock, age = found[0]
    return (f"a stale build lock at {lock} ({age / 60:.0f} min old, and no process holds it: a build of "
            f"this op was killed); every run that needs the op would wait on it forever. Remove it "
            f"(rm {lock}) and run again, or set TORCH_EXTENSIONS_DIR to a folder of this run's own")


def waiting_notice() -> str | None:
    """A line for the terminal when a live build holds a lock this run will wait on."""
    held = open_here()
    live = [lock for lock in build_locks(build_root()) if os.path.realpath(lock) in held]
    if not live:
        return None
    return (f"waiting for another process's build of {live[0].parent.name} ({live[0]}): "
            f"the first build of a DeepSpeed op takes about a minute")

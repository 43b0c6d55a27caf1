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

The suite's processes build in a cache of their own checkout (`.cache/torch_extensions/`, one
folder per Python and torch build) unless TORCH_EXTENSIONS_DIR names another: two clones never
build over each other, and a lock another checkout's killed build left is never this one's.
"""
import ast
import os
import sys
import time
from pathlib import Path

from ..hardware import fingerprint
from ..paths import REPO

# No op of DeepSpeed's takes this long to build on a 2-core machine (CPU Adam: about a minute).
STALE_AFTER_S = 600
# Filesystems another machine may be building on (a shared home or cluster scratch).
NETWORK_FS = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "ceph",
                        "fuse.sshfs", "fuse.glusterfs", "glusterfs", "afs", "pvfs2", "orangefs", "wekafs"})
# A builder closes its lock just before removing it: a lock seen unheld is looked at again after this.
RECHECK_S = 0.5


def build_root() -> Path:
    """Where this process's op builds go (cache_root of its environment)."""
    return cache_root(os.environ)


def use_checkout_cache(environ=os.environ) -> None:
    """Point torch's builds at the checkout's cache where TORCH_EXTENSIONS_DIR is unset (torch
    reads the variable when it builds: before DeepSpeed's first op is enough)."""
    if not environ.get("TORCH_EXTENSIONS_DIR"):  # torch would build an empty one's ops in the working folder
        environ["TORCH_EXTENSIONS_DIR"] = str(cache_root(environ))


def adam_op(offload: bool) -> str:
    """DeepSpeed's Adam op as torch names its build folder: engine.py asks for CPU Adam where the
    optimizer is offloaded, fused Adam (a CUDA op) where it stays on the GPU."""
    return "cpu_adam" if offload else "fused_adam"


def version_folder(torch_version_source: str, python=sys.version_info, abiflags=None) -> str:
    """The per-version folder torch's default cache puts builds in ('py312_cu130'), from the text
    of torch/version.py (its `hip` and `cuda` strings) and this Python, as torch names it."""
    found = {}
    for node in ast.parse(torch_version_source).body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        for target in targets:
            if isinstance(target, ast.Name) and isinstance(getattr(node, "value", None), ast.Constant):
                found[target.id] = node.value.value
    hip, cuda = found.get("hip"), found.get("cuda")
    accelerator = (f"rocm{hip.replace('.', '')}" if isinstance(hip, str) else
                   f"cu{cuda.replace('.', '')}" if isinstance(cuda, str) else "cpu")
    flags = getattr(sys, "abiflags", "") if abiflags is None else abiflags
    return f"py{python[0]}{python[1]}{flags}_{accelerator}"


def checkout_cache() -> Path:
    """The checkout's own build cache: a folder per Python and torch's CUDA or ROCm version, as
    torch's default cache has, so a build for another version does not count."""
    return REPO / ".cache" / "torch_extensions" / version_folder(fingerprint.installed_file("torch", "version.py") or "")


def cache_root(environ) -> Path:
    """Where torch builds an op's folder, without importing torch: TORCH_EXTENSIONS_DIR where
    set, else the checkout's cache."""
    if environ.get("TORCH_EXTENSIONS_DIR"):
        return Path(environ["TORCH_EXTENSIONS_DIR"])
    return checkout_cache()


def is_built(op: str, root: Path) -> bool:
    """Whether a finished build of `op` lies in `root` (cache_root): its library, <op>/<op>.so."""
    return (root / op / f"{op}.so").is_file()


def build_locks(root: Path) -> list:
    """The lock files of the ops under `root` (<root>/<op>/lock or <root>/<python_device>/<op>/lock)."""
    if not root.is_dir():
        return []
    return sorted(set(root.glob("*/lock")) | set(root.glob("*/*/lock")))


def open_here() -> set:
    """The real paths of every file a process of this machine holds open (from /proc; the
    processes whose descriptors this user may not read are left out). Processes come and go
    while it looks: a process, a descriptor or the folder of either that is gone (or denied) by
    the time it is read is passed over, whatever the error (pathlib's glob let a vanished
    fd folder's FileNotFoundError through)."""
    held = set()
    for pid in _names("/proc"):
        if not pid.isdigit():
            continue
        fds = f"/proc/{pid}/fd"
        for fd in _names(fds):
            try:
                held.add(os.readlink(f"{fds}/{fd}"))
            except OSError:  # another user's process, or one that ended while we looked
                continue
    return held


def _names(folder: str) -> list:
    """The names in `folder`, or none where it cannot be listed (gone, or not ours to read)."""
    try:
        with os.scandir(folder) as entries:
            return [entry.name for entry in entries]
    except OSError:
        return []


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

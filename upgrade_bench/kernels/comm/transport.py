"""Which transport NCCL's connections took (bench_comm.py's header `nccl_transports`): P2P over
NVLink or PCIe, SHM through host memory, or the network (NET/IB, or NET/Socket: TCP). A node
whose collectives silently fell back to sockets looks, on the page, like a slow interconnect;
the report's node check names it (report/node_health.transport_fault).

NCCL says it only in its debug output: a line per channel and peer as it connects, e.g.
"Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read" or "... [send] via NET/Socket/0" (NCCL's
transport/p2p.cc, shm.cc, net.cc, logged under NCCL_INIT). Where the user has not set
NCCL_DEBUG, the process asks for INFO of the INIT subsystem into a file of its own
(NCCL_DEBUG_FILE, read by NCCL when it starts), reads it after the first collective has
connected the ranks, and removes it; a user's own NCCL_DEBUG is left alone (no transports
recorded then).
"""
import os
import re
import shutil
import tempfile

_VIA = re.compile(r"\bvia ((?:P2P|SHM|NET|COLLNET|NVLS)(?:/[A-Za-z0-9_]+)?)")


def transports(lines) -> list:
    """The transports named in NCCL debug lines, in order of first appearance ('P2P/CUMEM',
    'SHM/direct', 'NET/IB', 'NET/Socket')."""
    found = {}
    for line in lines:
        for match in _VIA.finditer(line):
            found[match.group(1)] = None
    return list(found)


def ask(environ) -> str | None:
    """Set NCCL's debug output into a fresh folder's file in `environ`, before the process group
    starts, unless the user set NCCL_DEBUG; the folder, or None."""
    if environ.get("NCCL_DEBUG"):
        return None
    folder = tempfile.mkdtemp(prefix="nccl-transport-")
    environ.update(NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT", NCCL_DEBUG_FILE=os.path.join(folder, "nccl.%p.log"))
    return folder


def read(folder: str | None) -> list | None:
    """The transports this process's NCCL logged in `folder` (None: not asked, or nothing read)."""
    if folder is None:
        return None
    lines = []
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        try:
            with open(os.path.join(folder, name), errors="replace") as f:
                lines += f.readlines()
        except OSError:
            pass
    return transports(lines) or None


def forget(folder: str | None) -> None:
    if folder:
        shutil.rmtree(folder, ignore_errors=True)

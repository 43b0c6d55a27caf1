"""bench_comm.py: the node's interconnect, measured under the collectives ZeRO and MoE run.

The guide weighs interconnect next to memory and bandwidth, and the forecast scales exposed
communication by the GPU table's link ratio; this measures what a node's fabric delivers (a
degraded link or a PCIe-only node shows here): all_reduce (ZeRO-1/2's gradients), all_gather
(ZeRO-3's parameters), reduce_scatter (ZeRO-2/3's gradient shards) and all_to_all (MoE's
tokens) over torch.distributed, NCCL on GPUs, gloo on CPU ranks. Per op and size, the
algorithm and bus bandwidth as nccl-tests counts them (doc/PERFORMANCE.md: busbw = algbw x
2(n-1)/n for all_reduce, (n-1)/n for the others), decimal GB/s at the median call (each call
the mean over ranks), and busbw's share of the GPU table's link figure in one direction (half
the datasheet's duplex figure; null for a GPU without one, or ranks on several hosts).
Timing is sustained, as training sees it: a first call, then WARMUP and ITERS calls (at least
WARMUP_MS and TIME_MS of them) back to back, a CUDA event pair around each, no idle gap
(upgrade_bench/kernels/timing.py). A line per size on stderr says what it gave and the time
left; the headline (each op's best) and a table end the run. Rank 0 writes.

Two ranks or more, one per GPU (one rank has no link to measure: refused). RANKS=N starts N on
this host through torch's elastic launcher, torchrun's own engine, as a library
(kernels/ranks.py); across hosts the same command runs on each, with NNODES, its NODE_RANK, and
node 0's MASTER_ADDR and MASTER_PORT. Every setting is checked and MASTER_ADDR looked up before
any rank starts (a host no name lookup knows: one line, at once), and the run ends in one line
wherever it fails: a rank's own (the first to fail; the ranks stopped after it say nothing), or
a Ctrl-C or SIGTERM, passed on to every rank. Hosts that do not meet within 5 minutes (node 0 not
started, a port taken or blocked) are said in one line too.
Started by another launcher instead (torchrun, deepspeed: they set RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR and MASTER_PORT), it runs as one rank: a refusal or a Ctrl-C is one
line from local rank 0 of each host (a rank's own, from that rank) and a non-zero exit, and a
rank waits at most 5 minutes for something to answer at MASTER_ADDR:MASTER_PORT; what the
launcher adds is its own: torchrun prints its ChildFailedError summary after the line (quoting
it), a SignalException on Ctrl-C, and waits in its own rendezvous for a --master_addr no name
lookup knows before any rank starts. RANKS is the way to a failure in one line.
NVLink multicast stays off: NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
NVSHMEM_DISABLE_NVLS=1 are set in the process before the process group starts, where unset
(on a shared host a multicast object can break other GPUs); the header's comm_env records
every NCCL_ variable as the run saw it, and `nccl_transports` the transports NCCL's connections
took (P2P, SHM, NET/IB, NET/Socket: TCP), from its INFO lines, asked into a file and removed
where NCCL_DEBUG is unset (kernels/comm/transport.py).

Writes JSON lines: a `header`, then one `comm` record per size x op (status ok | oom | error:
a size that does not fit is an oom record). Exit 1 if a point errored (a failed collective is
the last point: the ranks may be out of step; the line names it), 2 on bad input (one rank;
no rendezvous address, or none answering within 5 minutes; the smallest size not fitting the
device; a rank without a GPU, or a RANK not below WORLD_SIZE), 4 when a record cannot be
written, 130 on Ctrl-C (143 on SIGTERM) with every record so far written; under RANKS, the
failing rank's code (128 + the signal where one ended it).

    RANKS=8 .venv/bin/python bench_comm.py                                 # every op, 1 MiB .. 4 GiB
    OPS=all_gather,reduce_scatter SIZES_MIB="64 1024" RANKS=2 .venv/bin/python bench_comm.py
    SIZES_MIB="1 2" RANKS=2 .venv/bin/python bench_comm.py                 # CPU: gloo, seconds
    NNODES=2 NODE_RANK=0 MASTER_ADDR=gpu01 MASTER_PORT=29500 RANKS=8 .venv/bin/python bench_comm.py  # on gpu01,
    NNODES=2 NODE_RANK=1 MASTER_ADDR=gpu01 MASTER_PORT=29500 RANKS=8 .venv/bin/python bench_comm.py  # and gpu02
"""
import datetime
import os
import socket
import sys
import time

from ... import faults, settings
from ...hardware import collectives, fingerprint, telemetry
from . import bench as comm, transport as nccl_transport
from ...interrupts import Interrupted, Signals, ignored
from ..attention import bench as attn_bench
from .. import ranks as local_ranks, timing
from ...paths import REPO
from ...log import header, records
from ...faults import BadInput
from ...settings import Settings

SCRIPT = "bench_comm.py"
# A rank that never joins, or a collective that never ends, is an error after this long, not
# after torch's default (10 min for NCCL, 30 for gloo): the longest default call takes 20 ms.
# A rank that connects to the rendezvous waits as long for something to answer there.
TIMEOUT_S = 300
# More ranks than any cluster has GPUs (the largest hold some 10^5): a WORLD_SIZE past it is a typo.
MAX_RANKS = 2**20
# Local ranks RANKS starts: as many as a host has GPUs (the sweep's GPUS takes as many).
MAX_LOCAL_RANKS = 1024
# Hosts NNODES spans: MAX_RANKS of them, one GPU each.
MAX_NODES = MAX_RANKS
VARS = [
    settings.Var("OPS", "str_list", list(collectives.OPS), "collectives to time: all_reduce, all_gather, "
                 "reduce_scatter, all_to_all"),
    settings.Var("SIZES_MIB", "int_list", comm.DEFAULT_SIZES_MIB, "MiB of each call as nccl-tests counts it "
                 "(all_gather's output, reduce_scatter's input); a size that does not fit becomes an oom record",
                 min=1, max=2**20),
    *timing.window_vars(comm.TIMING_DEFAULTS, "the first call"),
    settings.OUTPUT,
    settings.Var("NOTES", "str", "", "free text copied into the header"),
    settings.Var("RANKS", "int", 0, "start this many ranks on this host, one per GPU, through torch's elastic "
                 "launcher (torchrun's engine) in place of a launcher (0: run as a rank a launcher started)",
                 min=1, max=MAX_LOCAL_RANKS, zero_means_unset=True),
    settings.Var("NNODES", "int", 1, "hosts the RANKS of each span: the same command on each, with its NODE_RANK, "
                 "node 0's host as MASTER_ADDR and a port free there as MASTER_PORT", min=1, max=MAX_NODES),
    settings.Var("NODE_RANK", "int", 0, "this host's place among NNODES (0: the one at MASTER_ADDR, which hosts "
                 "the rendezvous)", min=0, max=MAX_NODES - 1),
]


class RankOwn(BadInput):
    """Bad input one rank finds of itself (its RANK, its GPU): said by that rank, whichever it is."""


def validate(s: Settings) -> None:
    """Cross-variable rules settings.Var cannot express; raises BadInput."""
    if not s.OPS or any(op not in collectives.OPS for op in s.OPS):
        raise BadInput(f"OPS={' '.join(s.OPS)!r}: expected a list of {'|'.join(collectives.OPS)}")
    if s.RANKS and s.RANKS * s.NNODES < 2:
        raise BadInput(f"RANKS={s.RANKS}: a collective needs two ranks or more, one per GPU; expected 2 or more "
                       f"(1 with NNODES of 2 or more: a GPU per host)")
    if s.NNODES > 1 and not s.RANKS:
        raise BadInput(f"NNODES={s.NNODES} without RANKS: set RANKS (the ranks on each host) too, or unset NNODES "
                       f"under a launcher")
    if s.NODE_RANK >= s.NNODES:
        raise BadInput(f"NODE_RANK={s.NODE_RANK}: expected below NNODES={s.NNODES} (0 is the host at MASTER_ADDR)")


def master_address(environ) -> tuple[str, int]:
    """(MASTER_ADDR, MASTER_PORT) as a launcher (or the user, for NNODES) set them; BadInput if
    either is missing or no port."""
    port = environ.get("MASTER_PORT", "")
    if not environ.get("MASTER_ADDR") or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadInput(f"MASTER_ADDR={environ.get('MASTER_ADDR', '')!r}, MASTER_PORT={port!r}: expected rank 0's "
                       f"host and a port from 1 to 65535 (set by the launcher, or by you on each host with NNODES)")
    return environ["MASTER_ADDR"], int(port)


def launched(environ) -> tuple[int, int, int]:
    """(rank, ranks, local rank) as a launcher set them; BadInput for one rank, a value that
    is no rank, or no rendezvous address."""
    got = {}
    for name, default in (("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0")):
        raw = environ.get(name) or default
        if not raw.isdigit():
            raise BadInput(f"{name}={raw!r}: expected a whole number >= 0, as a launcher sets it")
        got[name] = int(raw)
    if got["WORLD_SIZE"] < 2:
        raise BadInput(f"WORLD_SIZE={got['WORLD_SIZE']}: a collective needs two ranks or more, one per GPU: "
                       f"RANKS=N .venv/bin/python {SCRIPT} starts them (or a launcher, across hosts)")
    if got["WORLD_SIZE"] > MAX_RANKS:
        raise BadInput(f"WORLD_SIZE={got['WORLD_SIZE']}: more ranks than any cluster has GPUs; expected at most "
                       f"{MAX_RANKS}, one rank per GPU, as a launcher sets it")
    master_address(environ)
    return got["RANK"], got["WORLD_SIZE"], got["LOCAL_RANK"]


def check_fits(sizes_mib: list, ops: list, ranks: int, capacity_bytes: int, shared: bool = False) -> None:
    """BadInput unless the smallest size fits in `capacity_bytes` for every op asked (a
    larger size that does not is an `oom` record); `shared`: CPU ranks, whose capacity is
    their share of the host's."""
    smallest = min(sizes_mib)
    need = max(collectives.allocated_bytes(op, smallest * comm.MIB, ranks) for op in ops)
    problem = attn_bench.too_big(need, capacity_bytes)
    if problem:
        share = f" (this host's free memory shared by WORLD_SIZE={ranks} CPU ranks)" if shared else ""
        raise BadInput(f"SIZES_MIB={smallest}: {problem}{share}")


def rank_device(rank: int, local_rank: int, ranks: int) -> tuple:
    """(this rank's device, what one rank's buffers must fit in); BadInput, naming the rank,
    where the host has no GPU for it: only the ranks past the GPUs find that."""
    import torch

    if not torch.cuda.is_available():  # CPU ranks share the host's RAM
        return torch.device("cpu"), attn_bench.memory_bytes(torch.device("cpu")) // ranks
    if local_rank >= torch.cuda.device_count():
        raise RankOwn(f"rank {rank}: LOCAL_RANK={local_rank}: this host has {torch.cuda.device_count()} GPU(s) "
                       f"visible; one rank per GPU")
    device = torch.device("cuda", local_rank)
    return device, attn_bench.memory_bytes(device)


def measure_all() -> int:
    """The run, as the launcher of its ranks (RANKS) or as one rank; raises BadInput (RankOwn for
    a rank's own) and Interrupted, which main says."""
    s = settings.load(VARS, __doc__)
    validate(s)
    if s.RANKS:
        return start_ranks(s, os.environ)
    rank, ranks, local_rank = launched(os.environ)
    if rank >= ranks:  # this rank's own: said by it (there may be no rank 0)
        raise RankOwn(f"RANK={rank}: expected below WORLD_SIZE={ranks}, as a launcher sets it")
    device, capacity = rank_device(rank, local_rank, ranks)
    check_fits(s.SIZES_MIB, s.OPS, ranks, capacity, shared=device.type == "cpu")
    problem = rendezvous_problem(os.environ, rank, TIMEOUT_S)
    if problem:
        raise BadInput(f"rank {rank}: {problem}")
    transport_log = nccl_transport.ask(os.environ) if device.type == "cuda" else None  # NCCL reads it at start
    comm_env, warnings = comm.multicast_env(os.environ)  # before the process group starts
    import torch.distributed as dist

    stdout = records.claim_stdout()  # NCCL_DEBUG and the launcher print to stdout too
    on_gpu = device.type == "cuda"
    if on_gpu:  # the events, the spin and all_gather_object's tensors go to the current device
        import torch

        torch.cuda.set_device(device)
    try:
        dist.init_process_group("nccl" if on_gpu else "gloo", device_id=device if on_gpu else None,
                                timeout=datetime.timedelta(seconds=TIMEOUT_S))
    except dist.DistError as err:  # the rendezvous: no rank 0 at that address, a port taken, a rank that never came
        nccl_transport.forget(transport_log)
        raise BadInput(f"rank {rank}: the process group did not start at MASTER_ADDR={os.environ['MASTER_ADDR']} "
                       f"MASTER_PORT={os.environ['MASTER_PORT']}: {str(err).splitlines()[0]}") from None
    hosts = [None] * dist.get_world_size()
    dist.all_gather_object(hosts, socket.gethostname())
    transports = nccl_transport.read(transport_log)  # the first collective connected every peer
    nccl_transport.forget(transport_log)  # NCCL writes on into the removed file: nothing is left behind
    gpu_name = fingerprint.gpu_name()
    link, row = collectives.link_gbps(gpu_name)
    if not on_gpu:
        warnings.append("no GPU: gloo on CPU ranks, host-clock timings, for testing the script only")
    if len(set(hosts)) > 1:
        warnings.append(f"ranks on {len(set(hosts))} hosts: the network between them bounds these figures, "
                        f"not one node's links; share_of_link is null")
        link = None
    elif link is None:
        what = f"{gpu_name!r}" if gpu_name else "this device (no GPU)"
        warnings.append(f"no link bandwidth in the GPU table for {what}: share_of_link is null")
    writer = records.RecordWriter(SCRIPT, s.OUTPUT, enabled=rank == 0, stream=stdout)
    writer.write("header", **header.fields(settings.as_dict(s), s.NOTES, warnings, comm_env=comm_env,
                                           nccl_transports=transports))
    say = sys.stderr if rank == 0 else open(os.devnull, "w")
    for warning in warnings:
        say.write(f"warning: {warning}\n")
    bench = comm.CommBench(s, device, dist.get_world_size(), capacity, link, telemetry.RunSampler(local_rank))
    done = comm.run_all(bench, writer.write, say)
    say.write(comm.format_table(done) + "\n" + comm.headline(done, link, f"table:{row}" if row else None) + "\n")
    failed = [r for r in done if r["status"] == "error"]
    if not failed:  # after a failed collective another rank may never arrive
        dist.barrier()  # rank 0 hosts the store: no rank's exit pulls it from under another
    dist.destroy_process_group()
    if failed:
        faults.say(f"error: {failed[0]['op']} at {failed[0]['size_mib']} MiB failed ({failed[0]['reason']}): the "
                   f"ranks may be out of step, so the run ends there; every record so far is written",
                   speaks(os.environ), faults.EXIT_ERROR)
        return faults.EXIT_ERROR
    return 0


def start_ranks(s: Settings, environ) -> int:
    """RANKS (on NNODES hosts): the ranks of this script started on this host (kernels/ranks.py),
    after every setting and MASTER_ADDR are checked; their exit code."""
    if environ.get("RANK") or environ.get("WORLD_SIZE"):
        raise BadInput(f"RANKS={s.RANKS} with RANK/WORLD_SIZE set: a launcher started this process already; unset "
                       f"RANKS under a launcher, or start it alone with RANKS")
    if s.RANKS * s.NNODES > MAX_RANKS:
        raise BadInput(f"RANKS={s.RANKS} x NNODES={s.NNODES}: more ranks than any cluster has GPUs; expected at most "
                       f"{MAX_RANKS} in all")
    hosts = local_ranks.Hosts()
    if s.NNODES > 1:  # an unknown host at once (torchrun waits past 360 s); node 0 reached in Python (the
        addr, port = master_address(environ)  # store's client prints C++ frames while it retries)
        problem = rendezvous_problem(environ, s.NODE_RANK, TIMEOUT_S)
        if problem:
            raise BadInput(f"node {s.NODE_RANK} of NNODES={s.NNODES}: {problem}")
        hosts = local_ranks.Hosts(s.NNODES, s.NODE_RANK, addr, port)
    return local_ranks.launch([sys.executable, str(REPO / SCRIPT)], s.RANKS, hosts, TIMEOUT_S,
                              unset=("RANKS", "NNODES", "NODE_RANK"))


def rendezvous_problem(environ, rank: int, wait_s: float, connect=socket.create_connection) -> str | None:
    """Why nothing answers at MASTER_ADDR:MASTER_PORT within `wait_s` for a rank that connects
    there (all but a rank 0 that hosts the store itself; under torchrun, whose agent hosts it,
    every rank; as `rank`, a NODE_RANK, for the hosts RANKS joins), or None: a Python connection first, so a wrong address is one line after a
    stated time, not torch's retries (63 lines of C++ frames, 631 s). A host no name lookup
    knows is said at once by every rank, rank 0 too: it would wait for ranks that never come."""
    addr, port = environ["MASTER_ADDR"], int(environ["MASTER_PORT"])
    where = f"MASTER_ADDR={addr} MASTER_PORT={port}"
    deadline = time.monotonic() + wait_s
    while True:
        try:
            socket.getaddrinfo(addr, port)
        except (socket.gaierror, UnicodeError) as err:
            return f"{where}: no such host ({err}); expected rank 0's host"
        if rank == 0 and environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
            return None
        try:
            connect((addr, port), timeout=max(0.1, min(5.0, deadline - time.monotonic()))).close()
            return None
        except OSError as err:
            if time.monotonic() >= deadline:
                return (f"nothing answered at {where} within {wait_s:g} s ({err.strerror or err}): is rank 0 "
                        f"running there, on that port?")
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))


def speaks(environ) -> bool:
    """Whether this process says what every rank of its host finds alike (a setting, the sizes, a
    Ctrl-C): the launcher, or a launcher's local rank 0 (by RANK, where no LOCAL_RANK is set);
    each host's console gets one line."""
    raw = environ.get("LOCAL_RANK") or environ.get("RANK") or "0"
    return not (raw.isdigit() and int(raw) > 0)


def close_group() -> None:
    """The process group ended, where one started: a rank that leaves with gloo's still open
    (a record it could not write, a Ctrl-C) can abort in its C++ teardown (SIGABRT, 'terminate
    called without an active exception') in place of its exit code."""
    dist = sys.modules.get("torch.distributed")  # not imported yet: no process group either
    if dist and dist.is_initialized():
        dist.destroy_process_group()


def main() -> int:
    """measure_all, its bad input in one line (faults.stop: this host's speaker's, or the rank's
    own), and Ctrl-C or SIGTERM at any point as one line and 128 + the signal."""
    signals = Signals()
    signals.install()
    try:
        return measure_all()
    except tuple(faults.STOPS) as err:
        with ignored():  # said before the group ends: a peer's failed collective comes after this line
            code = faults.stop(err, speak=isinstance(err, RankOwn) or speaks(os.environ))
            close_group()
            return code
    except Interrupted as sig:
        with ignored():
            close_group()
            return faults.interrupted(sig.signum, speak=speaks(os.environ))
    finally:
        signals.restore()


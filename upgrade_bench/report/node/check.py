"""The node check: each figure a node measured against a healthy reference of its GPU kind, the
ratio, the verdict (node_health.py's thresholds) and the likely cause of a shortfall.

A node is a folder of logs (run_node.sh writes one per node) and a GPU kind: its MAMF per
dtype, its best HBM copy, isolated attention fwd+bwd per backend, shape and length, the
training step per configuration and length, each collective's best bus bandwidth. References,
first found wins, never another GPU kind's figure:

  1. the user's own healthy node (`plot_results.py --reference DIR`), the same figure;
  2. MAMF: the published figure of the GPU table (hardware/gpus.py, MAMF_SOURCE);
     HBM, attention, the step: the suite's shipped node runs (SHIPPED_NODES) of the same
     figure, their median, leaving out the node's own runs (by run id);
     the interconnect: the datasheet link rate, a ratio without a verdict (no healthy node's
     share of it is shipped).

Each reference names its source and stack; a node on another stack says so beside the verdict.
"""
import functools
import os
import statistics
from dataclasses import dataclass, field

from ...hardware import bandwidth, collectives, gpus
from ...log import runs
from ...paths import REPO
from ..read import inputs
from . import health
from ..compare.isolated_attention import ATTENTION_SHAPE
from ..read.series import gpu_identity, normalise_dtype, seq_label
from ..read.stacks import stack_of

# The suite's own node runs on lent H200s (torch 2.11.0, FA4 4.0.0b36): results/README.md.
SHIPPED_NODES = ("results/h200-moe-8/node", "results/h200-precision-7/node", "results/h200-families-3/node")
PUBLISHED_MAMF = "published (the Open Book's MAMF table, hardware/gpus.py)"
KIND_ORDER = ("mamf", "hbm", "attention", "step", "comm")


@dataclass(frozen=True)
class Figure:
    label: str
    value: float
    unit: str
    record: dict
    header: dict


@dataclass
class Node:
    folder: str
    gpu: str
    figures: dict = field(default_factory=dict)       # key -> Figure
    headers: list = field(default_factory=list)
    capabilities: dict = field(default_factory=dict)  # item -> record
    run_ids: set = field(default_factory=set)

    @property
    def name(self) -> str:
        return f"{self.gpu} in {self.folder or '.'}"


@dataclass(frozen=True)
class Reference:
    value: float
    source: str
    stack: dict | None = None        # None: the source names none
    clock_mhz: float | None = None   # the SM clock it ran at, where recorded
    judged: bool = True              # False: a ceiling (a datasheet figure), ratio without verdict


@dataclass(frozen=True)
class Row:
    figure: Figure
    reference: Reference | None
    share: float | None
    verdict: str
    causes: tuple
    stack_note: str | None = None   # the packages that differ from the reference's stack


@dataclass
class NodeCheck:
    node: Node
    rows: list
    faults: list                    # what the node's probes found wrong, whatever the figures

    @property
    def short(self) -> list:
        return [r for r in self.rows if r.verdict in health.SHORT]

    @property
    def status(self) -> str:
        if self.short or self.faults:
            return "falls short"
        return "healthy" if any(r.verdict == health.HEALTHY for r in self.rows) else health.NO_VERDICT


# ---- records to nodes ----------------------------------------------------------------------

def nodes(records) -> list:
    """The measured nodes of a stream of records (published figures and CPU runs are none)."""
    found = {}
    for record, header in runs.with_headers(list(records)):
        if record.get("reference") or (header or {}).get("reference") or header is None:
            continue
        gpu = gpu_identity(header)[0]
        if gpu == "no GPU":
            continue
        source = str(record.get("log_file") or "")
        folder = source if source == "<stdin>" else os.path.dirname(source)
        node = found.setdefault((folder, gpu), Node(folder, gpu))
        if header not in node.headers:
            node.headers.append(header)
        node.run_ids.add(record.get("run_id"))
        _add(node, record, header)
    for node in found.values():
        _keep_best(node)
    return [n for n in found.values() if n.figures or n.capabilities]


def _add(node: Node, r: dict, header: dict) -> None:
    kind, ok = r["kind"], r.get("status", "ok") == "ok"
    if kind == "capability":
        node.capabilities[r["item"]] = r
    elif kind == "mamf" and r.get("tflops_mean"):
        dtype = normalise_dtype(r.get("dtype"))
        scaling = f" ({r['scaling']})" if r.get("scaling") else ""
        _put(node, ("mamf", dtype, r.get("scaling")), Figure(f"MAMF {dtype}{scaling}", r["tflops_mean"], "TFLOPS", r, header))
    elif kind == "hbm" and ok and r.get("op") == "copy" and r.get("gb_per_s"):
        _put(node, ("hbm", "copy"), Figure("HBM copy (best buffer)", r["gb_per_s"], "GB/s", r, header))
    elif kind == "comm" and ok and r.get("busbw_gbps"):
        _put(node, ("comm", r.get("op"), r.get("ranks")),
             Figure(f"{r.get('op')} bus bandwidth, {r.get('ranks')} GPUs", r["busbw_gbps"], "GB/s", r, header))
    elif kind == "attention" and ok and r.get("tflops") and r.get("pass") == "fwd_bwd":
        shape = attention_shape(r)
        label = (f"attention {r.get('backend')} fwd+bwd {seq_label(r.get('seq_len'))} ({shape[0]}, "
                 f"{r.get('heads')}/{r.get('kv_heads')} heads x {r.get('head_dim')})")
        spun = bool(r.get("spin_ms"))  # an idle gap between calls refills the power budget: another figure
        _put(node, ("attention", r.get("backend"), shape, spun, r.get("seq_len")),
             Figure(label + (", spin between calls" if spun else ""), r["tflops"], "TFLOPS", r, header))
    elif kind == "summary" and r.get("tflops_per_gpu"):
        config = runs.config_as_run((header or {}).get("config") or {}, header or {})
        identity = runs.run_identity(config)[1]
        backend = header.get("attn_backend") or r.get("attn_backend")
        label = (f"training step {seq_label(r.get('seq_len'))} ({backend}, {config.get('MODEL')}, "
                 f"{config.get('NUM_LAYERS') or 'all'} layers, ZeRO-{config.get('ZERO_STAGE')}, "
                 f"{config.get('world_size')} GPU(s), {header.get('precision') or 'bf16'})")
        _put(node, ("step", backend, identity, r.get("seq_len")), Figure(label, r["tflops_per_gpu"], "TFLOPS/GPU", r, header))


# What an attention record of a log from before these fields measured: bench_flash_attn.py timed
# full attention alone, V's head as Q's, no window, no sinks, unpacked.
ATTENTION_BEFORE_FIELDS = {"layer": "full_attention", "window": 0, "sinks": False, "packed_doc_len": 0}


def attention_shape(r: dict) -> tuple:
    """The kernel call's inputs (isolated_attention.ATTENTION_SHAPE), a legacy log's as it ran."""
    known = {**ATTENTION_BEFORE_FIELDS, "v_head_dim": r.get("head_dim"),
             **{k: v for k, v in r.items() if v is not None}}
    return tuple(known.get(k) for k in ATTENTION_SHAPE)


def _put(node: Node, key, figure: Figure) -> None:
    node.figures.setdefault(key, []).append(figure)


def _keep_best(node: Node) -> None:
    """One figure per key: the best (MAMF, HBM, comm: a ceiling is the best measured) or the
    median of repeats (attention, the step)."""
    for key, found in node.figures.items():
        ranked = sorted(found, key=lambda f: f.value)
        node.figures[key] = ranked[-1] if key[0] in ("mamf", "hbm", "comm") else ranked[(len(ranked) - 1) // 2]


def read_logs(arg: str) -> list:
    """The usable records of a folder, file or glob (report/inputs: checked as the page's)."""
    return list(inputs.read(inputs.expand([arg]), inputs.Tally()))


def checks_of(records, references=()) -> list:
    """Each measured node's check in `records`: against the nodes of `references` (folders,
    files or globs: BadInput where one cannot be read), else the shipped ones of this checkout."""
    mine = read_folders(references, read_logs)
    return [check(n, mine, shipped_nodes()) for n in nodes(records)]


@functools.cache
def shipped_nodes() -> list:
    """read_shipped of this checkout, once per process (committed logs: they do not change)."""
    return read_shipped(REPO, read_logs)


def read_folders(folders, read) -> list:
    """The nodes of reference folders; `read(folder)` gives their records (report/inputs)."""
    return [n for folder in folders for n in nodes(read(folder))]


def read_shipped(repo, read) -> list:
    """The nodes of SHIPPED_NODES under the checkout `repo`, named as in the repository."""
    found = []
    for folder in SHIPPED_NODES:
        if (repo / folder).is_dir():
            for n in nodes(read(str(repo / folder))):
                n.folder = folder
                found.append(n)
    return found


# ---- references ----------------------------------------------------------------------------

def _median_reference(found: list, source_kind: str) -> Reference:
    clocks = [f.record.get("sm_clock_mhz_median") for f, _ in found if f.record.get("sm_clock_mhz_median")]
    stacks = [stack_of(f.header) for f, _ in found]
    folders = ", ".join(dict.fromkeys(n.folder for _, n in found))
    shared = {k: v for k, v in stacks[0].items() if all(s.get(k) == v for s in stacks)}  # what they all ran
    return Reference(statistics.median(f.value for f, _ in found), f"{source_kind}: {folders}", shared,
                     statistics.median(clocks) if clocks else None)


def reference_for(key, node: Node, mine: list, shipped: list) -> Reference | None:
    """The healthy reference of one figure of `node` (see the module's order), or None."""
    def found_in(candidates):
        return [(n.figures[key], n) for n in candidates
                if n.gpu == node.gpu and key in n.figures and n.figures[key].record.get("run_id") not in node.run_ids]
    own = found_in(mine)
    if own:
        return _median_reference(own, "your reference node")
    spec = gpus.lookup(node.gpu)
    if key[0] == "mamf":
        published = spec.mamf_tflops(key[1]) if spec and key[2] in (None, "tensorwise") else None
        return Reference(published, PUBLISHED_MAMF) if published else None
    if key[0] == "comm":
        link = collectives.link_gbps(node.gpu)[0]
        return Reference(link, f"the {spec.name}'s datasheet link, one direction", judged=False) if link else None
    others = found_in(shipped)
    return _median_reference(others, "the suite's shipped node runs") if others else None


# The packages a kernel figure depends on (a step depends on the whole stack): the HBM copy
# does not run DeepSpeed, and a log of a leaner install is no other stack for it.
KERNEL_STACK = {"mamf": ("torch", "cuda"), "hbm": ("torch", "cuda"), "comm": ("torch", "cuda"),
                "attention": ("torch", "cuda", "flash-attn-3", "flash-attn-4", "flash-attn")}


def _relevant(kind: str, stack: dict | None) -> dict | None:
    if stack is None or kind not in KERNEL_STACK:
        return stack
    return {k: v for k, v in stack.items() if k in KERNEL_STACK[kind]}


def check(node: Node, mine: list, shipped: list) -> NodeCheck:
    rows = []
    for key, figure in sorted(node.figures.items(), key=lambda kv: KIND_ORDER.index(kv[0][0])):
        ref = reference_for(key, node, mine, shipped)
        share = figure.value / ref.value if ref and ref.value else None
        verdict = health.verdict(share) if ref and ref.judged else health.NO_VERDICT
        stack = health.stack_cause(_relevant(key[0], stack_of(figure.header)), ref and _relevant(key[0], ref.stack))
        causes = [health.clock_cause(figure.record, figure.header, ref and ref.clock_mhz), stack]
        rows.append(Row(figure, ref, share, verdict, tuple(c for c in causes if c), stack))
    # check_capabilities' power-limit probe read every GPU of the node: where it ran, the headers'
    # GPU 0 would only say its finding again
    probed = (node.capabilities.get("health:power_limit") or {}).get("status") == "ok"
    faults = [] if probed else list(dict.fromkeys(filter(None, [health.power_limit_fault(h) for h in node.headers])))
    faults += health.capability_faults(node.capabilities)
    faults += list(dict.fromkeys(filter(None, [health.transport_fault(h, node.gpu) for h in node.headers
                                               if h.get("script") == "bench_comm.py"])))
    return NodeCheck(node, rows, faults)


def hbm_share(row: Row) -> str:
    """An HBM row's reference as a share of the datasheet, the way a healthy node reads."""
    datasheet = bandwidth.datasheet_gb_per_s(row.figure.header.get("hardware", {}).get("gpu_name"))[0]
    return f" ({row.reference.value / datasheet:.1%} of the {datasheet / 1e3:g} TB/s datasheet)" if datasheet else ""

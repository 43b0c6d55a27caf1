"""The node check: each figure a node measured against a healthy reference of its GPU kind, the
ratio, the verdict (health.py's thresholds), the likely cause of a shortfall, and what the
check could not judge.

A node is a folder of logs (run_node.sh writes one per node), a GPU kind and a host (the
headers' hostname; a log without one reads as the folder's one host): its MAMF per dtype, its
best HBM copy, isolated attention fwd+bwd per backend, shape and length, the training step per
configuration and length, each collective's best bus bandwidth; and the figures its GPU cannot
give, refused as they were read (read/claims.py) and named here, never judged. Where each
reference comes from is references.py's; a node on another stack than its reference says so
beside the verdict. The node's role (the baseline or the candidate of the page's comparison)
is set by the page.
"""
import functools
import os
import statistics
from dataclasses import dataclass, field

from ...hardware import bandwidth
from ...log import runs
from ...paths import REPO
from ..read import inputs
from . import health, references
from .references import Reference
from ..compare.isolated_attention import ATTENTION_SHAPE
from ..read.series import gpu_identity, normalise_dtype, seq_label
from ..read.stacks import stack_of

KIND_ORDER = references.COMPONENTS
IMPOSSIBLE = "impossible figures refused"
FALLS_SHORT = "falls short"
SEVERITY = (IMPOSSIBLE, FALLS_SHORT, health.HEALTHY, health.NO_VERDICT)


@dataclass(frozen=True)
class Figure:
    label: str
    value: float
    unit: str
    record: dict
    header: dict

    @property
    def component(self) -> str:
        return "step" if self.record["kind"] == "summary" else self.record["kind"]


@dataclass
class Node:
    folder: str
    gpu: str
    host: str | None = None
    figures: dict = field(default_factory=dict)       # key -> Figure
    headers: list = field(default_factory=list)
    capabilities: dict = field(default_factory=dict)  # item -> record
    run_ids: set = field(default_factory=set)
    impossible: list = field(default_factory=list)    # why each refused figure cannot be
    named_host: bool = False                          # several hosts share the folder: name it

    @property
    def name(self) -> str:
        on = f" on {self.host}" if self.named_host and self.host else ""
        return f"{self.gpu}{on} in {self.folder or '.'}"


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
    missing: list = field(default_factory=list)  # one line per component measured with no reference
    notes: list = field(default_factory=list)    # one line per --reference not used, or used in part
    role: str | None = None         # "baseline" or "candidate" of the page's comparison

    @property
    def short(self) -> list:
        """The shortfalls, the training step's first: it is what an upgrade is priced on."""
        found = [r for r in self.rows if r.verdict in health.SHORT]
        return sorted(found, key=lambda r: (r.figure.component != "step", r.share))

    @property
    def steps_healthy(self) -> bool:
        """Every training step judged, and at least one, at its reference or above."""
        steps = [r for r in self.rows if r.figure.component == "step" and r.verdict != health.NO_VERDICT]
        return bool(steps) and all(r.verdict == health.HEALTHY for r in steps)

    @property
    def minor(self) -> list:
        """Kernel figures merely below the bar while every training step is healthy: a note, not
        a shortfall (the step is what the node trains at)."""
        if not self.steps_healthy:
            return []
        return [r for r in self.short if r.verdict == health.BELOW and r.figure.component != "step"]

    @property
    def status(self) -> str:
        if self.node.impossible:
            return IMPOSSIBLE
        if self.faults or [r for r in self.short if r not in self.minor]:
            return FALLS_SHORT
        return health.HEALTHY if any(r.verdict == health.HEALTHY for r in self.rows) else health.NO_VERDICT

    @property
    def components(self) -> tuple:
        """(components with a judged reference, components measured)."""
        measured = dict.fromkeys(r.figure.component for r in self.rows)
        judged = {r.figure.component for r in self.rows if r.reference is not None and r.reference.judged}
        return len([c for c in measured if c in judged]), len(measured)

    def worst_share(self) -> float:
        return min([r.share for r in self.rows if r.verdict != health.NO_VERDICT and r.share] or [float("inf")])


# ---- records to nodes ----------------------------------------------------------------------

def _folder(record: dict) -> str:
    source = str(record.get("log_file") or "")
    return source if source == "<stdin>" else os.path.dirname(source)


def _host(header: dict) -> str | None:
    host = ((header or {}).get("hardware") or {}).get("hostname")
    return host if isinstance(host, str) and host else None


def nodes(records, refused=()) -> list:
    """The measured nodes of a stream of records (published figures and CPU runs are none), one
    per folder, GPU kind and host; `refused`: inputs.Tally.impossible, named on their node."""
    found = {}

    def node_of(record, header):
        if record.get("reference") or (header or {}).get("reference") or header is None:
            return None
        gpu = gpu_identity(header)[0]
        if gpu == "no GPU":
            return None
        folder, host = _folder(record), _host(header)
        return found.setdefault((folder, gpu, host), Node(folder, gpu, host))

    for record, header in runs.with_headers(list(records)):
        node = node_of(record, header)
        if node is None:
            continue
        if header not in node.headers:
            node.headers.append(header)
        node.run_ids.add(record.get("run_id"))
        _add(node, record, header)
    for record, header, why in refused:
        node = node_of(record, header)
        if node is not None and why not in node.impossible:
            node.impossible.append(why)
    for node in found.values():
        _keep_best(node)
        node.named_host = len({h for (f, g, h) in found if (f, g) == (node.folder, node.gpu)}) > 1
    return [n for n in found.values() if n.figures or n.capabilities or n.impossible]


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


def read_logs(arg: str, tally: inputs.Tally | None = None) -> list:
    """The usable records of a folder, file or glob (report/inputs: checked as the page's)."""
    return list(inputs.read(inputs.expand([arg]), tally if tally is not None else inputs.Tally()))


def check_folder(arg: str, references=()) -> list:
    """run_node.sh's check of its folder: its records read once, the impossible named."""
    tally = inputs.Tally()
    return checks_of(read_logs(arg, tally), references, tally.impossible)


def checks_of(records, references=(), refused=()) -> list:
    """Each measured node's check in `records` (`refused`: the figures reading refused as
    impossible), the worst first (by status; among those falling short, by their worst ratio): against the nodes of `references` (folders, files or globs:
    BadInput where one cannot be read; each checked, check.py's notes), else the measured
    folders of this checkout and the published figures."""
    mine = [(str(arg), read_logs(str(arg))) for arg in references]
    checks = [check(n, mine, measured_nodes()) for n in nodes(records, refused)]
    return sorted(checks, key=lambda c: (SEVERITY.index(c.status), c.worst_share() if c.status == FALLS_SHORT else 0))


def set_roles(checks: list, baseline: str, gpus_compared: list) -> None:
    """Each node's role in the page's comparison: the baseline's GPU or a candidate's; none
    where the page compares no two GPUs."""
    for c in checks:
        c.role = None if len(gpus_compared) < 2 else "baseline" if c.node.gpu == baseline else "candidate"


@functools.cache
def measured_nodes() -> list:
    """read_measured of this checkout, once per process (committed logs: they do not change)."""
    return read_measured(REPO, read_logs)


def read_measured(repo, read) -> list:
    """The nodes of references.MEASURED_NODES under the checkout `repo`, named as in the repository."""
    found = []
    for folder in references.MEASURED_NODES:
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


def reference_for(key, node: Node, mine: list, measured: list) -> Reference | None:
    """The healthy reference of one figure of `node` (references.py's order), or None.
    `mine`: the --reference nodes still usable for this figure."""
    def found_in(candidates):
        return [(n.figures[key], n) for n in candidates
                if n.gpu == node.gpu and key in n.figures and n.figures[key].record.get("run_id") not in node.run_ids]
    own = found_in(mine)
    if own:
        return _median_reference(own, "your reference node")
    others = found_in(measured) if key[0] not in ("mamf", "comm") else []
    if others:
        return _median_reference(others, references.MEASURED)
    if key[0] == "mamf" and key[2] not in (None, "tensorwise"):
        return None
    return references.published(node.gpu, key[0], key[1] if key[0] == "mamf" else "bf16").reference


def _missing_line(component: str, node: Node, measured: list) -> str:
    """The one line for a component the node measured with no reference of its kind."""
    said = references.published(node.gpu, component).missing or f"{references.WORDS[component]}: no reference"
    mine = [n for n in measured if n.gpu == node.gpu]
    own = [n for n in mine if n.run_ids & node.run_ids]
    if own and len(own) == len(mine):
        return f"{said}; of the suite's measured nodes only its own run ({own[0].folder}): no verdict"
    return f"{said}; no measured node of this kind and configuration: no verdict"


# The packages a kernel figure depends on (a step depends on the whole stack): the HBM copy
# does not run DeepSpeed, and a log of a leaner install is no other stack for it.
KERNEL_STACK = {"mamf": ("torch", "cuda"), "hbm": ("torch", "cuda"), "comm": ("torch", "cuda"),
                "attention": ("torch", "cuda", "flash-attn-3", "flash-attn-4", "flash-attn")}


def _relevant(kind: str, stack: dict | None) -> dict | None:
    if stack is None or kind not in KERNEL_STACK:
        return stack
    return {k: v for k, v in stack.items() if k in KERNEL_STACK[kind]}


def _an(gpu: str) -> str:
    return ("an " if gpu[:1] in "AEFHILMNORSX" else "a ") + gpu


def _usable(node: Node, mine: list, measured: list) -> tuple:
    """(the --reference nodes usable for `node`, minus their figures below their own references;
    one line per --reference not used or used in part)."""
    usable, notes = [], []
    for arg, records in mine:
        found = nodes(records)
        where = f"--reference {arg}"
        if not found:
            published = records and all(r.get("reference") for r in records if r.get("kind") != "header")
            notes.append(f"{where}: published figures only, no measured node: not used" if published else
                         f"{where}: no measured node in it: not used")
            continue
        if any(os.path.realpath(n.folder) == os.path.realpath(node.folder) or n.run_ids & node.run_ids for n in found):
            notes.append(f"{where}: this node's own folder, not another node: not used")
            continue
        same = [n for n in found if n.gpu == node.gpu]
        if not same:
            kinds = " and ".join(dict.fromkeys(n.gpu for n in found))
            notes.append(f"{where}: {_an(kinds)} node, not {_an(node.gpu)}: not used for this node")
            continue
        for ref in same:
            short = [r for r in check(ref, [], measured).rows if r.verdict in health.SHORT]
            for r in short:
                del ref.figures[next(k for k, f in ref.figures.items() if f is r.figure)]
            if short:
                said = "; ".join(f"{r.figure.label} {r.figure.value:.1f} {r.figure.unit}, {r.share:.1%} of "
                                 f"{r.reference.value:g}" for r in short)
                notes.append(f"{where}: itself below its references ({said}): those figures not used")
            usable.append(ref)
    return usable, notes


def check(node: Node, mine: list, measured: list) -> NodeCheck:
    """`mine`: [(--reference argument, its records)]; `measured`: the suite's measured nodes."""
    usable, notes = _usable(node, mine, measured) if mine else ([], [])
    rows, missing = [], {}
    for key, figure in sorted(node.figures.items(), key=lambda kv: KIND_ORDER.index(kv[0][0])):
        ref = reference_for(key, node, usable, measured)
        share = figure.value / ref.value if ref and ref.value else None
        verdict = health.verdict(share) if ref and ref.judged else health.NO_VERDICT
        stack = health.stack_cause(_relevant(key[0], stack_of(figure.header)), ref and _relevant(key[0], ref.stack))
        causes = [health.clock_cause(figure.record, figure.header, ref and ref.clock_mhz), stack]
        rows.append(Row(figure, ref, share, verdict, tuple(c for c in causes if c), stack))
    for component in dict.fromkeys(r.figure.component for r in rows):
        if all(r.reference is None for r in rows if r.figure.component == component):
            missing[component] = _missing_line(component, node, measured)
    # check_capabilities' power-limit probe read every GPU of the node: where it ran, the headers'
    # GPU 0 would only say its finding again
    probed = (node.capabilities.get("health:power_limit") or {}).get("status") == "ok"
    faults = [] if probed else list(dict.fromkeys(filter(None, [health.power_limit_fault(h) for h in node.headers])))
    faults += health.capability_faults(node.capabilities)
    faults += list(dict.fromkeys(filter(None, [health.transport_fault(h, node.gpu) for h in node.headers
                                               if h.get("script") == "bench_comm.py"])))
    return NodeCheck(node, rows, faults, list(missing.values()), notes)


def hbm_share(row: Row) -> str:
    """An HBM row's reference as a share of the datasheet, the way a healthy node reads."""
    datasheet = bandwidth.datasheet_gb_per_s(row.figure.header.get("hardware", {}).get("gpu_name"))[0]
    return f" ({row.reference.value / datasheet:.1%} of the {datasheet / 1e3:g} TB/s datasheet)" if datasheet else ""

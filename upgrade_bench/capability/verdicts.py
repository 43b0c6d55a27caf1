"""The guide's first question: can this GPU *and* this software stack do X?

Each capability item ends in one of five answers, kept apart because they mean different
things for a purchase decision:

  ok                    the operation ran here and gave the right result
  unsupported_hardware  the silicon lacks the feature (decided from the compute capability,
                        the probe is not run): no software update will change it
  unsupported_stack     the silicon has it (or we cannot tell), but the installed software
                        failed to run it: the error text says what to upgrade
  unavailable           nothing to probe: no GPU, package not installed, probe skipped
  error                 it ran but was wrong, or failed for another reason (OOM, lost context)

Here: gates from the compute capability, classification of a probe's outcome, the guide's
memory rule of thumb, topology parsing and the terminal table, all pure, and `evaluate`,
which runs the probe it is given inside the gate and the classification. The probes
themselves (tiny real GPU operations) are in capability/probes.py; the report's
side-by-side table is report/page/capabilities.py.
"""
import math
import re
import warnings
from dataclasses import dataclass

from ..kernels.attention import backends as attn_backends
from ..faults import is_oom
from ..hardware import formats
from ..hardware.fingerprint import Device
from ..log.runs import with_headers

STATUSES = ("ok", "unsupported_hardware", "unsupported_stack", "unavailable", "error")
NO_GPU = "no GPU"


@dataclass(frozen=True)
class Verdict:
    status: str
    detail: str
    value: object = None

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {STATUSES}")


@dataclass(frozen=True)
class Passed:
    """What a probe returns when its operation ran and checked out."""
    detail: str
    value: object = None


class WrongResult(RuntimeError):
    """The operation ran but its result is wrong: a defect to report, not a missing feature."""


class NotEngaged(RuntimeError):
    """The call ran but the stack silently did something else (e.g. fp32 instead of TF32)."""


def gate(item: str, device: Device) -> Verdict | None:
    """The verdict reached without running anything (formats.NEEDS), or None: run the probe.
    Attention backends are gated by their row of kernels/attention/backends.py (attention_gate)."""
    if device.capability is None:
        return Verdict("unavailable", NO_GPU)
    why = formats.below_floor(item, device)
    return Verdict("unsupported_hardware", f"{why}; this GPU is {device.arch} (not run)") if why else None


def error_text(err: BaseException, warned=(), limit: int = 800) -> str:
    """`Type: message` on one line plus the warnings the call raised (SDPA explains there
    why a backend refused), cut to `limit` characters."""
    message = " ".join(line.strip() for line in str(err).splitlines() if line.strip())
    text = f"{type(err).__name__}: {message}".rstrip(": ")
    extra = [w for w in dict.fromkeys(str(w).strip() for w in warned) if w]
    if extra:
        text += " | warnings: " + " | ".join(extra)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def classify(outcome, warned=()) -> Verdict:
    """A probe's outcome (Passed, or the exception it raised) -> Verdict.

    Only called once the gate has let the probe run, so a refusal here is the stack's.
    """
    if isinstance(outcome, Passed):
        return Verdict("ok", outcome.detail, outcome.value)
    if not isinstance(outcome, BaseException):
        raise TypeError(f"probe outcome must be Passed or an exception, got {outcome!r}")
    if isinstance(outcome, WrongResult):
        return Verdict("error", f"ran but gave a wrong result: {outcome}")
    if is_oom(outcome):
        return Verdict("error", "out of memory: " + error_text(outcome, warned))
    return Verdict("unsupported_stack", error_text(outcome, warned))


def evaluate(item: str, device: Device, probe) -> Verdict:
    """Gate, then run `probe()` (returns Passed or raises) and classify what happened."""
    verdict = gate(item, device)
    if verdict is not None:
        return verdict
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            outcome = probe()
        except Exception as err:  # every failure becomes a verdict, never a crash
            outcome = err
    return classify(outcome, [w.message for w in caught])


def attention_gate(backend: attn_backends.Backend, device: Device, version: str | None) -> Verdict | None:
    """The verdict on an attention backend reached without running it, or None: run the probe.

    No GPU: nothing to probe. A package that is not installed (version None) is unavailable;
    a GPU outside the backend's architectures is the hardware's answer.
    """
    if device.capability is None:
        return Verdict("unavailable", NO_GPU)
    if backend.package and version is None:
        return Verdict("unavailable", f"{backend.package.label} is not installed "
                                      f"({backend.package.install_hint})")
    problem = attn_backends.arch_problem(backend, device)
    return Verdict("unsupported_hardware", f"{problem} (not run)") if problem else None


def check_close(actual, expected, rtol: float, what: str) -> float:
    """max |actual - expected| / max |expected| (tensors); WrongResult above rtol."""
    scale = float(expected.detach().abs().max())
    err = float((actual.detach().double() - expected.detach().double()).abs().max()) / (scale or 1.0)
    if not math.isfinite(err) or err > rtol:
        raise WrongResult(f"{what}: max error {err:.3g} of max |expected| (tolerance {rtol:g})")
    return err


# ---- memory: the guide's rule of thumb --------------------------------------------------

# Llama-3.1-8B, ZeRO-3 + activation checkpointing + CPU AdamW offload + fused cross-entropy,
# 8 GPUs, mbs=1: peak ~= 12.6 GiB + 0.00043 GiB per token, the same on H200 and B200 (it is
# a property of model + sharding + activations). It puts the H200's top at ~256K tokens
# (~125 GiB) and the B200 past ~350K.
GUIDE_FIXED_GIB = 12.6
GUIDE_GIB_PER_TOKEN = 0.00043
GUIDE_CONFIG = ("the guide's Llama-3.1-8B long-context config (ZeRO-3, checkpointing, "
                "CPU AdamW offload, fused CE) on 8 GPUs")


def estimate_max_seq_len(budget_gib: float, fixed_gib: float = GUIDE_FIXED_GIB,
                         gib_per_token: float = GUIDE_GIB_PER_TOKEN) -> int:
    """Largest sequence length whose predicted peak fits `budget_gib` (0 if none does)."""
    return max(0, math.floor((budget_gib - fixed_gib) / gib_per_token))


def max_seq_len_estimate(budget_gib: float, budget_what: str) -> Verdict:
    tokens = estimate_max_seq_len(budget_gib)
    return Verdict("ok", f"estimate: ({budget_gib:g} GiB {budget_what} - {GUIDE_FIXED_GIB} GiB) / "
                   f"{GUIDE_GIB_PER_TOKEN} GiB per token = {tokens} tokens, for {GUIDE_CONFIG}; "
                   f"measure it with run_sweep's max-seqlen search", tokens)


def max_seq_len_verdict(gpu_name: str | None, capacity_records, usable_gib, total_gib) -> Verdict:
    """Measured (a `capacity` record of this GPU in CAPACITY_LOG) beats the estimate; the
    estimate uses the largest allocation if it was probed, else total HBM."""
    if gpu_name is None:
        return Verdict("unavailable", NO_GPU)
    measured = capacity_verdict(capacity_records, gpu_name) if capacity_records else None
    if measured:
        return measured
    note = f"; CAPACITY_LOG has no capacity record for {gpu_name}" if capacity_records is not None else ""
    if usable_gib is not None:
        v = max_seq_len_estimate(usable_gib, "usable (largest allocation)")
    elif total_gib is not None:
        v = max_seq_len_estimate(total_gib, "total HBM")
    else:
        return Verdict("unavailable", "no memory figure to estimate from" + note)
    return Verdict(v.status, v.detail + note, v.value)


def _gpu_name(header: dict) -> str | None:
    return (header.get("hardware") or {}).get("gpu_name")


def capacity_verdict(records, gpu_name: str) -> Verdict | None:
    """The last `capacity` record measured on a GPU of this name, as a verdict; failing
    that, the last one whose run has no header in the log (its GPU unknown); else None."""
    capacity = [(r, header) for r, header in with_headers(records) if r.get("kind") == "capacity"]
    mine = [r for r, header in capacity if header and _gpu_name(header) == gpu_name]
    orphans = [r for r, header in capacity if header is None]
    if not mine and not orphans:
        return None
    cap = (mine or orphans)[-1]
    tokens = cap.get("max_fit_seq_len") or 0
    detail = (f"measured (capacity record, run {cap.get('run_id')}): fits {tokens} tokens, "
              f"fails at {cap.get('min_fail_seq_len')}, peak {cap.get('peak_mem_gib_at_max')} GiB "
              f"at the max, step {cap.get('seq_len_step')}")
    if not mine:
        detail += "; the log does not say which GPU it ran on"
    return Verdict("ok", detail, tokens)


# ---- interconnect -----------------------------------------------------------------------

# NVML's common-ancestor levels in nvidia-smi's vocabulary (`nvidia-smi topo -m` legend).
NVML_LEVEL_CODE = {0: "internal", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


def parse_topo_matrix(text: str) -> tuple[int, dict]:
    """`nvidia-smi topo -m` -> (GPU count, {"i-j": link} for GPU pairs i < j, e.g. "NV18").

    The header is the first line naming GPU columns; GPU columns come first, NIC and
    affinity columns follow and are ignored, as is the legend. Rows are told from the
    header by their "X" (self) cell. Terminal escape codes (underlined header) are dropped.
    """
    header, rows = None, []
    for line in re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines():
        cells = line.split()
        if not cells or not re.fullmatch(r"GPU\d+", cells[0]):
            continue
        if "X" not in cells and header is None:
            header = [int(c[3:]) for c in cells if re.fullmatch(r"GPU\d+", c)]
        elif "X" in cells:
            rows.append(cells)
    if header is None:
        return 0, {}
    pairs = {}
    for cells in rows:
        row = int(cells[0][3:])
        for col, link in zip(header, cells[1:1 + len(header)]):
            if row < col:
                pairs[f"{row}-{col}"] = link
    return len(header), pairs


def summarize_topology(gpu_count: int, pairs: dict, nvlinks_active: list) -> str:
    links = ", ".join(f"{n}x {link}" for link, n in
                      sorted(_counts(pairs.values()).items(), key=lambda kv: -kv[1]))
    active = sorted(set(nvlinks_active))
    nvlink = ("no active NVLink" if active in ([], [0]) else
              f"{'/'.join(map(str, active))} NVLink links active per GPU")
    if gpu_count < 2:
        return f"{gpu_count} GPU, no GPU pairs; {nvlink}"
    return f"{gpu_count} GPUs; GPU pairs: {links or 'unknown'}; {nvlink}"


def _counts(values) -> dict:
    out = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


# ---- tables -----------------------------------------------------------------------------

def text_table(rows) -> str:
    """(item, Verdict) rows -> the human table printed at the end of a run."""
    width = max([len(item) for item, _ in rows] + [4])
    out = [f"{'item':<{width}}  {'status':<20}  detail"]
    for item, v in rows:
        detail = v.detail if len(v.detail) <= 110 else v.detail[:107] + "..."
        out.append(f"{item:<{width}}  {v.status:<20}  {detail}")
    return "\n".join(out) + "\n"

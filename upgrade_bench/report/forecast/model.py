"""Forecast a GPU you do not have from a step measured on the one you have.

The model is the guide's analysis of its H200 -> B200 pair, made a formula: a training step
is the sum of parts, each bounded by one thing the candidate does faster (or not), and each
part scales by the candidate/baseline ratio of what bounds it (Habitat, Yu et al., USENIX ATC
2021, scales each operation of a profiled step the same way):

- attention kernels: the isolated-attention ratio (measured on both GPUs, else published
  kernel figures, else on one die the sustained clock's ratio, the GEMMs', and across dies
  anywhere between the HBM-bandwidth and the peak ratio);
- GEMMs: the MAMF ratio (Maximum Achievable Matmul FLOPS, the GPU table's published figures);
  a decomposition's GEMM kernels below MAMF as the other kernels (`gemm_kernels_ratio`);
- other kernels (norms, elementwise, the optimizer on the GPU, MoE routing): HBM bandwidth;
- a part with GEMMs and other kernels together (a decomposition that does not split them, or
  a sweep's dense FLOPs): the time its matmuls need at the baseline's MAMF by the MAMF ratio,
  the rest of its time by the HBM ratio (`gemm_share`, `dense_ratio`); the range runs from
  all of it bandwidth-bound to all of it at MAMF;
- exposed communication: the interconnect (NVLink) bandwidth ratio;
- host and idle time (CPU-offloaded Adam, data loading, launch gaps): unchanged, the host
  assumed the same.

A step without a decomposition is split by its own sweep: T(n) = a*A(n) + d*D(n) + h over
the lengths n it ran, with A and D the attention and dense TFLOP of a step (the FLOP count),
a least-squares fit of the baseline alone. Nothing is fitted to a candidate's figures. Every
ratio carries a range (low, high) from what bounds it; the page's forecast is then corrected
and ranged on published pairs of other workloads (calibration.py).

The platform a GPU comes in (hardware/gpus.py) moves the ratios too: within one die family the
MAMF ratio and the board-power ratio bound the sustained matmul ratio, a part without a
published MAMF sustains its sibling's at its board power, or else its other precision's share of
its peak (`sustained_mamf`), the same die at a higher clock speeds other kernels up to that
ratio, and Blackwell Ultra's exponent units speed the attention kernels' forward
(`exponent_ratio`).
"""
import functools
import math
import statistics
from dataclasses import dataclass

from ...hardware.gpus import GPUSpec


@dataclass(frozen=True)
class Ratio:
    """How much faster the candidate runs one kind of work: mid, and the range (low, high)."""
    mid: float
    low: float
    high: float
    source: str
    note: str = ""  # how this one was read off its source (e.g. past the longest length of a table)

    @staticmethod
    def exact(value: float, source: str) -> "Ratio":
        return Ratio(value, value, value, source)


UNCHANGED = Ratio.exact(1.0, "host time: the same host assumed")


def between(low: float, high: float, source: str) -> Ratio:
    """A ratio known only to lie between two bounds: the geometric middle, the bounds as range."""
    low, high = min(low, high), max(low, high)
    return Ratio(math.sqrt(low * high), low, high, source)


def hardware_ratios(base: GPUSpec, cand: GPUSpec, precision: str = "bf16", comm: Ratio | None = None,
                    power_bound: float | None = None) -> dict:
    """{bound: Ratio} from the GPU table alone: peak and MAMF of the training precision, HBM
    bandwidth, interconnect (the dense and attention ratios depend on the workload too:
    dense_ratio, attention_ratio). Attention's own peak ratio stays bf16: FP8 recipes
    (Transformer Engine's, torchao's) keep the attention kernels in bf16. `comm`, the
    interconnect's measured on both GPUs (forecast_comm), replaces the datasheets'. `power_bound`:
    the baseline's SM clock under load over its maximum where its telemetry showed the power cap
    holding it (clock_gain), else None."""
    what = peak_precision(base, cand, precision)
    base_peak, cand_peak = base.peak_tflops(what), cand.peak_tflops(what)
    hbm = cand.hbm_tbps / base.hbm_tbps
    out = {"peak": Ratio.exact(cand_peak / base_peak, f"{what} peak {cand_peak:g} / {base_peak:g} TFLOPS (datasheets)"),
           "attention_peak": Ratio.exact(cand.bf16 / base.bf16,
                                         f"bf16 peak {cand.bf16:g} / {base.bf16:g} TFLOPS (datasheets)"),
           "hbm": Ratio.exact(hbm, f"HBM {cand.hbm_tbps:g} / {base.hbm_tbps:g} TB/s (datasheets)")}
    (base_mamf, base_how), (cand_mamf, cand_how) = sustained_mamf(base, precision), sustained_mamf(cand, precision)
    gain = clock_gain(base, cand, power_bound)
    if base_mamf and cand_mamf:
        # the MAMF of each part is measured at its own board power: their ratio is the sustained
        # matmul ratio; more watts add clock only where the baseline's GEMMs ran power-bound
        mamf = cand_mamf / base_mamf
        how = "; ".join(h for h in (base_how, cand_how) if h)
        out["gemm"] = Ratio(mamf * gain.mid, min(hbm, mamf), mamf * gain.high,
                            f"{precision} sustained matmul {cand_mamf:.0f} / {base_mamf:.0f} TFLOPS "
                            f"({how or 'published MAMF'}), down to the HBM ratio"
                            + (f"; times {gain.source}" if gain.source else ""))
        if base.die and base.die == cand.die:
            out["attention_unmeasured"] = one_die_attention(mamf, gain, base, cand)
    else:  # no published MAMF: the peak ratio, as far down as the HBM ratio
        out["gemm"] = between(hbm, out["peak"].mid, f"{precision} MAMF unpublished: between the HBM and peak ratios")
    if comm:
        out["comm"] = comm
    elif cand.link_gbps and base.link_gbps:
        out["comm"] = Ratio.exact(cand.link_gbps / base.link_gbps,
                                  f"NVLink {cand.link_gbps:g} / {base.link_gbps:g} GB/s (datasheets)")
    else:
        out["comm"] = between(1.0, hbm, "interconnect unknown: between unchanged and the HBM ratio")
    out["other"] = out["hbm"]
    if move_of(base, cand) == SAME_FAMILY and out["gemm"].mid != hbm:
        # one die family: kernels other than matmuls run anywhere from bandwidth-bound (the HBM
        # ratio) to clock-bound (the matmuls' ratio), whichever way the pair goes (so A -> B
        # and B -> A are each other's inverse)
        out["other"] = between(hbm, out["gemm"].mid, f"other kernels of one die family: between the HBM ratio "
                               f"and the sustained clock's ({platform_words(base)} -> {platform_words(cand)})")
    out["compute_top"] = compute_top(base, cand, precision, out)
    out["host"] = UNCHANGED
    out["fixed"] = Ratio(1.0, min(1.0, out["comm"].low), max(1.0, out["comm"].high), "host time and exposed "
                         f"communication: unchanged, up to the interconnect ratio ({out['comm'].source})")
    return out


def peak_precision(base: GPUSpec, cand: GPUSpec, precision: str) -> str:
    """The precision whose datasheet peaks a pair's ratios read: the training precision where both
    parts have a peak of it, else bf16 (every part of the table has that)."""
    return precision if base.peak_tflops(precision) and cand.peak_tflops(precision) else "bf16"


def one_die_attention(mamf: float, gain: Ratio, base: GPUSpec, cand: GPUSpec) -> Ratio:
    """The attention kernels' ratio on one die, unmeasured: FlashAttention's fwd+bwd at 8K and
    longer is bound by the tensor cores and the exponent units, both at the SM clock, so on one
    die it moves with the sustained clock, as the GEMMs do: the MAMF ratio (each part's at its
    own board power; H100/H200: the same), times the clock extra watts buy where the baseline's
    telemetry showed it power-bound (clock_gain, at most the board-power ratio's cube root). The
    HBM ratio moves only its memory-bound fraction, small at these lengths (model.ceiling keeps
    it in the attention part's physical bound). Measured on one stack (results/h100-node-10 and
    results/h200-precision-7, bench_flash_attn.py): the H200 ran fa4 and cuDNN attention fwd+bwd
    at 0.995-1.024x the H100 at 8K and 32K, where the HBM-to-peak span said 1.0-1.43x."""
    return Ratio(mamf * gain.mid, mamf, mamf * gain.high,
                 f"attention on one die ({base.name} -> {cand.name}): the sustained clock's ratio, the GEMMs' "
                 f"(MAMF ratio {mamf:.3f}" + (f", times {gain.source})" if gain.source else ")"))


def die_family(spec: GPUSpec) -> str:
    """The GPU table's `family` of a part: dies whose tensor cores are alike."""
    return spec.family


# Dynamic power goes with voltage squared times clock, and in the DVFS range voltage rises with
# clock: power ~ clock^3, so at the power cap the clock grows with the cube root of the watts.
CLOCK_PER_POWER_EXPONENT = 1 / 3


def clock_gain(base: GPUSpec, cand: GPUSpec, power_bound: float | None) -> Ratio:
    """What the candidate's extra board power gives the baseline's GEMMs: only where the baseline's
    telemetry showed a power-bound clock (`power_bound`: its clock under load over its maximum)
    and the candidate is of its die family with more watts: the cube root of the power ratio, at
    most back to the maximum clock (the middle half of that, the high end all of it); else none."""
    power = power_ratio(base, cand)
    if not power_bound or not power or power <= 1.0:
        return Ratio.exact(1.0, "")
    high = min(power ** CLOCK_PER_POWER_EXPONENT, 1.0 / power_bound)
    if high <= 1.0:
        return Ratio.exact(1.0, "")
    return Ratio(math.sqrt(high), 1.0, high, f"the clock {cand.tdp_w:g} / {base.tdp_w:g} W buys a baseline whose "
                 f"GEMMs ran power-bound at {power_bound:.0%} of its maximum clock (up to {high:.2f}x)")


def compute_top(base: GPUSpec, cand: GPUSpec, precision: str, hw: dict) -> Ratio:
    """The most the candidate's compute can give the baseline's matmuls, physically, not the
    likely: the baseline's GEMMs sustain its MAMF at best. On one die the candidate's clock can
    rise over the baseline's at most in proportion to its board power (dynamic power goes with
    the clock at a fixed voltage, and more than that where the voltage rises too), and never past
    its own datasheet peak; another die (Blackwell Ultra over Blackwell, another architecture)
    has its own power efficiency, so only its datasheet peak bounds it. Never below the peak or
    sustained matmul ratios the model uses."""
    what = peak_precision(base, cand, precision)
    base_sustained = sustained_mamf(base, what)[0] or base.peak_tflops(what)
    full = cand.peak_tflops(what) / base_sustained
    floor = max(hw["peak"].mid, hw["gemm"].high)
    if base.die and base.die == cand.die:
        power = max(1.0, power_ratio(base, cand) or 1.0)
        top = min(full, power)
        return Ratio.exact(max(floor, top), f"one die: the clock at most in proportion to the board power "
                                            f"({power:.3f}x), at most the candidate's {what} peak")
    return Ratio.exact(max(floor, full), f"the candidate's {what} peak {cand.peak_tflops(what):g} over the "
                                         f"baseline's sustained {base_sustained:.0f} TFLOPS")


# The parts whose kernels run at the SM clock: a node whose matmuls fell short of its reference
# (a power cap, a slow part) ran these short of its hardware too (the ceiling's credit and a healthy
# candidate's forecast, series.healthy_tflops).
CLOCK_BOUND = ("attention", "gemm", "dense")


def ceiling(hw: dict, parts: dict, base_share: float | None = None) -> float:
    """The most the candidate's hardware can speed the baseline's step of `parts` ({bound: ms}):
    the largest, over the step's parts, of what bounds each (compute: compute_top; bandwidth:
    HBM; link: the interconnect; host: none). A sum of parts each sped up at most so is sped up
    at most the largest. `base_share`: the baseline node's MAMF over its reference where the node
    check measured it short (below 1; the reference the node check used: the published MAMF, or a
    --reference node's): the ratios are the reference figures', so a candidate at its own reference
    can give the compute bounds of the clock-bound parts (CLOCK_BOUND) that shortfall back as well,
    not their bandwidth bounds (issue 52: an H200 node power-capped at 94% of its reference, an
    H100 at 98%, ran the H100's attention 1.04x the H200's on one die)."""
    credit = 1.0 / base_share if base_share and base_share < 1.0 else 1.0
    compute = hw["compute_top"].mid * credit
    attention = max(hw["attention_peak"].mid, hw.get("attention", hw["hbm"]).high) * credit
    by_bound = {"attention": max(attention, hw["hbm"].mid), "gemm": max(compute, hw["gemm"].high * credit),
                "dense": max(compute, hw["other"].high), "other": max(hw["hbm"].mid, hw["other"].high),
                "comm": hw["comm"].high, "fixed": max(1.0, hw["comm"].high), "host": 1.0}
    return max(by_bound.get(b, compute) for b in parts)


def power_ratio(base: GPUSpec, cand: GPUSpec) -> float | None:
    """The candidate's board power over the baseline's where both are of one die family (B200,
    B300, GB200, GB300; H100, H200; MI300X, MI325X), else None."""
    if base.die and cand.die and die_family(base) == die_family(cand) and base.tdp_w and cand.tdp_w:
        return cand.tdp_w / base.tdp_w
    return None


# The MAMF table's two precisions: a part with one published estimates the other from it.
OTHER_PRECISION = {"fp8": "bf16", "bf16": "fp8"}


def sustained_mamf(spec: GPUSpec, dtype: str) -> tuple[float | None, str]:
    """(sustained matmul TFLOPS, how, '' where published) of a part: its published MAMF (measured
    on that part, at its own power); else its die-family sibling's of the same platform (or the
    nearest board power), scaled by the board-power ratio: a sustained GEMM runs at the power cap,
    and the same silicon at more power holds a higher clock (published runs of one die at 1000 W
    against 750 W trained 1.35x faster); else its own MAMF at the other precision, as the same
    share of this precision's peak times what that share moves by between precisions on the parts
    that publish both (cross_precision_share). None where none of these is published."""
    own = spec.mamf_tflops(dtype)
    if own:
        return own, ""
    top = spec.peak_tflops(dtype) or math.inf  # never above the part's own datasheet peak
    siblings = [s for s in gpus_of_family(spec) if s.mamf_tflops(dtype) and power_ratio(s, spec)]
    if siblings:
        sib = min(siblings, key=lambda s: (s.power_class != spec.power_class, abs(s.tdp_w - spec.tdp_w)))
        power = power_ratio(sib, spec)
        return min(sib.mamf_tflops(dtype) * power, top), (f"{spec.name}'s unpublished: {sib.name}'s "
                                                          f"{sib.mamf_tflops(dtype):g} at {spec.tdp_w:g} / {sib.tdp_w:g} W")
    other = OTHER_PRECISION.get(dtype)
    if other and spec.mamf_tflops(other) and spec.peak_tflops(other) and spec.peak_tflops(dtype):
        own_share, moves = spec.mamf_tflops(other) / spec.peak_tflops(other), cross_precision_share(other, dtype)
        return min(own_share * moves * spec.peak_tflops(dtype), top), (
            f"{spec.name}'s {dtype} unpublished: its {other} MAMF's {own_share:.1%} of peak, x{moves:.2f} as on "
            f"the parts publishing both")
    return None, ""


@functools.lru_cache(maxsize=None)  # of the constant GPU table: one median per precision pair, not one a lookup
def cross_precision_share(known: str, wanted: str) -> float:
    """The median, over the GPU table's parts with a published MAMF at both precisions, of the
    `wanted` MAMF's share of its peak over the `known` one's: how much of its peak a part's matmuls
    keep at the other precision (the Open Book's H100 0.88, H200 0.91, GH200 0.93, B300 0.95, B200
    0.98, GB200 0.99 of the bf16 share at fp8; an H100 measured here, results/h100-mamf-14: 0.905
    by the suite's mamf-finder.py, 0.916 by the guide's)."""
    from ...hardware import gpus  # the table, read lazily: this module's formulas take specs
    shares = [(s.mamf_tflops(wanted) / s.peak_tflops(wanted)) / (s.mamf_tflops(known) / s.peak_tflops(known))
              for s in gpus.specs()
              if s.mamf_tflops(wanted) and s.mamf_tflops(known) and s.peak_tflops(wanted) and s.peak_tflops(known)]
    return statistics.median(shares)


def gpus_of_family(spec: GPUSpec) -> list:
    """The GPU table's other parts of `spec`'s die family."""
    from ...hardware import gpus  # the table, read lazily: this module's formulas take specs
    return [s for s in gpus.specs() if s.name != spec.name and s.die and die_family(s) == die_family(spec)]


NEW_ARCHITECTURE, SAME_FAMILY = "new architecture", "same die family"


def move_of(base: GPUSpec, cand: GPUSpec) -> str:
    """What a forecast moves across: a new architecture (another die family, where young
    software shows) or another part of the baseline's die family (board power, platform)."""
    return SAME_FAMILY if base.die and die_family(base) == die_family(cand) else NEW_ARCHITECTURE


def platform_words(spec: GPUSpec) -> str:
    """'GB200 NVL72, 1200 W, NVLink domain 72, Grace CPU': the platform figures a forecast part used."""
    return (f"{spec.name} {spec.power_class}".strip() + (f", {spec.tdp_w:g} W" if spec.tdp_w else "")
            + (f", NVLink domain {spec.nvlink_domain}" if spec.nvlink_domain else "")
            + (f", {spec.host_cpu} CPU" if spec.host_cpu else ""))


def host_change(base: GPUSpec, cand: GPUSpec) -> str:
    """'the server's host CPU -> the GB200's Grace CPU' where the CPU that drives the GPU changes
    (a Grace part against one in a server), else '': the model carries host time over unchanged."""
    if base.host_cpu == cand.host_cpu:
        return ""
    def cpu(spec: GPUSpec) -> str:
        return f"the {spec.name}'s {spec.host_cpu} CPU" if spec.host_cpu else "the server's host CPU"
    return f"{cpu(base)} -> {cpu(cand)}"


# FlashAttention's forward on Blackwell is bound by the tensor cores and the softmax's
# exponentials together (FlashAttention-4: the MUFU exp rate matches the MMA rate per score at
# head dim 128); the forward is 1 of fwd+bwd's 3.5 FLOP units (backward 2.5x forward), the
# backward's matmuls outnumber its exponentials 5 to 1. So a faster exponent unit can speed at
# most the forward's share of the attention kernels' time.
EXP_BOUND_SHARE = 1 / 3.5


def exponent_ratio(base: GPUSpec, cand: GPUSpec) -> Ratio:
    """The attention kernels' gain from the candidate's exponent (SFU) throughput over the
    baseline's (Blackwell Ultra's is twice Blackwell's): none at the low end, the forward's share
    at the new rate at the high end, their geometric middle."""
    factor = cand.attention_exp_factor / base.attention_exp_factor
    if factor == 1.0:
        return Ratio.exact(1.0, "")
    if factor < 1.0:  # the way back: the inverse of the way there, so A -> B and B -> A agree
        there = exponent_ratio(cand, base)
        return Ratio(1 / there.mid, 1 / there.high, 1 / there.low, f"the inverse of {there.source}")
    high = 1.0 / ((1 - EXP_BOUND_SHARE) + EXP_BOUND_SHARE / factor)
    return between(1.0, high, f"softmax exponent throughput {factor:g}x ({cand.name} over {base.name}) on the "
                   f"forward's share of the attention kernels")


def with_exponent(attention: Ratio, exp: Ratio) -> Ratio:
    """An attention ratio times the exponent units' gain, its source saying so."""
    if exp.mid == 1.0 and exp.low == 1.0 and exp.high == 1.0:
        return attention
    return Ratio(attention.mid * exp.mid, attention.low * exp.low, attention.high * exp.high,
                 f"{attention.source}; times {exp.source}", attention.note)


# Activation checkpointing runs each layer's forward again: 2 more FLOPs per matmul parameter
# per token on top of the 6 of fwd+bwd. A summary's gemm_tflop_per_step counts it exactly; for
# one without (published figures, older logs) the lm_head, not recomputed, is taken as
# recomputed too: 4/3 where Llama-3.1-8B's exact factor is 1.31.
CHECKPOINT_DENSE_HARDWARE_PER_MODEL = 8 / 6


def gemm_share(dense_tflop: float, dense_ms: float, base_mamf_tflops: float | None,
               checkpointed: bool) -> float | None:
    """The share of a dense part's time its matmuls need at the baseline's MAMF: its matmul
    TFLOP (the model's dense FLOPs, with the checkpoint recompute where the run checkpointed)
    over MAMF, over the part's time, at most 1. A roofline bound: matmuls cannot run faster
    than MAMF, so at least this share of the part is matmul time; the rest is other kernels,
    matmuls below MAMF and gaps. None without a MAMF or a time."""
    if not base_mamf_tflops or not dense_ms or dense_ms <= 0:
        return None
    tflop = dense_tflop * (CHECKPOINT_DENSE_HARDWARE_PER_MODEL if checkpointed else 1.0)
    return min(1.0, tflop / base_mamf_tflops * 1e3 / dense_ms)


def dense_ratio(hw: dict, share: float | None) -> Ratio:
    """A part of matmuls and other kernels together: `share` of its time at the MAMF ratio
    (`hw["gemm"]`), the rest at the other kernels' (`hw["other"]`: the HBM ratio, or up to the
    sustained clock's on one die family; time-weighted: the harmonic mix); the range from all of
    it at the other kernels' low end to all of it at the MAMF ratio. Without a share (no MAMF
    published for the baseline) the geometric middle of that range."""
    other, gemm = hw["other"], hw["gemm"]
    if share is None:
        return between(other.low, gemm.high, "GEMMs and other kernels together, GEMM share unknown (no "
                       "baseline MAMF): between the other kernels' and MAMF ratios")
    mid = 1.0 / (share / gemm.mid + (1.0 - share) / other.mid)
    return Ratio(mid, min(other.low, mid), max(gemm.high, mid),
                 "GEMMs and other kernels together: the time its matmuls need at the baseline's MAMF by "
                 "the MAMF ratio, the rest by the HBM ratio; range from all at HBM to all at MAMF")


def gemm_kernels_ratio(hw: dict, share: float | None) -> Ratio:
    """A decomposition's GEMM kernels: `share` of their time is what their matmul FLOPs need at
    the baseline's MAMF (gemm_share), at the MAMF ratio; the rest (matmuls below MAMF: small or
    skinny shapes, waves, epilogues) moves as the other kernels do, from bandwidth-bound to
    clock-bound (time-weighted); the range as `hw["gemm"]`'s, widened to that middle. Without a
    share, `hw["gemm"]` as it is. Measured on one stack at 8K (results/h100-node-10 and
    results/h200-precision-7 decompose.jsonl, GEMMs at 79-84% of MAMF): the H200's GEMM kernels
    took 166.2 ms where the H100's took 172.2 (1.036x) at the same MAMF."""
    gemm = hw["gemm"]
    if share is None or share >= 1.0:
        return gemm
    other = hw["other"]
    mid = 1.0 / (share / gemm.mid + (1.0 - share) / other.mid)
    return Ratio(mid, min(gemm.low, mid), max(gemm.high, mid),
                 f"{gemm.source}; the {1 - share:.0%} of the GEMM kernels' time beyond what their FLOPs need at "
                 f"the baseline's MAMF as the other kernels", gemm.note)


def attention_ratio(hw: dict, table: dict | None = None, seq_len: int = 0, source: str = "") -> Ratio:
    """The attention kernels' ratio at `seq_len` from isolated-kernel figures of both GPUs,
    `table` {seq_len: Ratio} (measured or published; `source` says which):

    - at a length of the table: its ratio;
    - between two of its lengths: interpolated in log length, the range spanning both;
    - past the longest: the longest's, up to the peak ratio (attention grows more
      compute-bound with length, and no kernel outruns the peak ratio for long);
    - before the shortest: the shortest's, down to the HBM ratio.

    No table: on one die the sustained clock's ratio (`hw["attention_unmeasured"]`,
    one_die_attention); else anywhere between the HBM and the peak ratio (`source` may say why)."""
    hbm, peak = hw["hbm"].mid, hw["attention_peak"].mid
    if not table:
        return hw.get("attention_unmeasured") or between(
            hbm, peak, source or "attention unmeasured: between the HBM and peak ratios")
    if seq_len in table:
        r = table[seq_len]
        return Ratio(r.mid, r.low, r.high, source)
    shorter = [n for n in sorted(table) if n < seq_len]
    longer = [n for n in sorted(table) if n > seq_len]
    if shorter and longer:
        (n0, r0), (n1, r1) = (shorter[-1], table[shorter[-1]]), (longer[0], table[longer[0]])
        mid = r0.mid + (r1.mid - r0.mid) * math.log(seq_len / n0) / math.log(n1 / n0)
        return Ratio(mid, min(r0.low, r1.low), max(r0.high, r1.high), source,
                     "between its lengths: interpolated in log length")
    if shorter:
        r = table[shorter[-1]]
        return Ratio(r.mid, r.low, max(r.high, peak), source, "past its longest length: that one's, up to the "
                     "peak ratio")
    r = table[longer[0]]
    return Ratio(r.mid, min(r.low, hbm), r.high, source, "before its shortest length: that one's, down to the "
                 "HBM ratio")


def fit_split(points: list) -> tuple[float, float, float] | None:
    """(ms per attention TFLOP, ms per dense TFLOP, host ms) of T = a*A + d*D + h by least
    squares over [(attention TFLOP, dense TFLOP, step ms)], relative errors weighted equally;
    None with fewer than 3 points or when the parts cannot be told apart (a non-positive
    coefficient: the lengths are too close, or the steps too noisy)."""
    if len(points) < 3:
        return None
    rows = [(a / t, d / t, 1.0 / t, 1.0) for a, d, t in points]  # each equation over its T
    # normal equations, 3x3, solved by Cramer's rule (no numpy in the report's imports)
    m = [[sum(r[i] * r[j] for r in rows) for j in range(3)] for i in range(3)]
    v = [sum(r[i] * r[3] for r in rows) for i in range(3)]
    det = _det3(m)
    if abs(det) < 1e-300:
        return None
    coef = []
    for k in range(3):
        mk = [[v[i] if j == k else m[i][j] for j in range(3)] for i in range(3)]
        coef.append(_det3(mk) / det)
    a, d, h = coef
    if a <= 0 or d <= 0 or h < 0:
        return None
    return a, d, h


def _det3(m) -> float:
    return (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))


@dataclass(frozen=True)
class Forecast:
    step_ms: float
    step_ms_fast: float  # every ratio at its high end (on the page: the calibrated range's fast end)
    step_ms_slow: float
    parts_ms: dict       # the baseline's parts, {bound: ms}
    how: str             # where the split came from


def scale(parts_ms: dict, ratios: dict, how: str = "") -> Forecast:
    """The candidate's step from the baseline's {bound: ms} and {bound: Ratio}: each part over
    its ratio; the range from the ratios' ends."""
    mid = sum(ms / ratios[b].mid for b, ms in parts_ms.items())
    fast = sum(ms / ratios[b].high for b, ms in parts_ms.items())
    slow = sum(ms / ratios[b].low for b, ms in parts_ms.items())
    return Forecast(mid, fast, slow, dict(parts_ms), how)


def sweep_parts(split: tuple, attention_tflop: float, dense_tflop: float, sharded: bool = False) -> dict:
    """{bound: ms} of one length from a fit_split: attention, dense, and the part that does not
    grow with length: host work, and on several GPUs also the exposed communication of the
    parameters and gradients (ZeRO), which no sweep can tell apart from host work."""
    a, d, h = split
    return {"attention": a * attention_tflop, "dense": d * dense_tflop, ("fixed" if sharded else "host"): h}


def bound_parts(dec: dict) -> dict:
    """{bound: ms} of a decomposition record: its kernel buckets on one clock; the wall time
    beyond the kernels (host work, launch gaps) as host. A bucket's `ms` is its share of the
    wall time, idle gaps included (bench_decompose splits the wall by kernel time); where
    every bucket also has its own kernel time (`kernel_ms_per_step`) and they fit in the wall,
    those are the parts, so the gaps stay host time instead of speeding up with the kernels.
    A decomposition that only splits attention from everything else (the guide's) has a
    `dense` rest."""
    buckets = dec.get("buckets") or {}
    named = [(b, bound, buckets.get(b) or {}) for b, bound in (
        ("attention", "attention"), ("gemm", "gemm"), ("other", "other"), ("linear_mixer", "other"),
        ("comm", "comm")) if (buckets.get(b) or {}).get("ms")]
    own = [part.get("kernel_ms_per_step") for _, _, part in named]
    wall = dec.get("wall_step_ms")
    key = "kernel_ms_per_step" if named and all(own) and wall and sum(own) <= wall else "ms"
    parts = {}
    for _, bound, part in named:
        parts[bound] = parts.get(bound, 0.0) + part[key]
    if set(parts) <= {"attention"}:
        rest = (dec.get("everything_else") or {}).get("ms")
        if rest:
            parts["dense"] = rest
    kernel_ms = sum(parts.values())
    if wall and wall > kernel_ms:
        parts["host"] = wall - kernel_ms
    return parts


def nearest_parts(parts_at: dict, shares_at: dict, seq_len: int, step_ms: float,
                  attention_tflop: float, dense_tflop: float) -> tuple[dict, str] | None:
    """{bound: ms} at `seq_len` from the decomposition at the nearest length: attention by the
    attention FLOPs, the dense parts by the dense FLOPs, host as it was, then all rescaled to
    the measured step. `shares_at`: {length: (attention TFLOP, dense TFLOP)} of the lengths
    with a decomposition."""
    if not parts_at:
        return None
    m = min(parts_at, key=lambda n: (abs(math.log(n / seq_len)), n))
    a_m, d_m = shares_at[m]
    provisional = {}
    for bound, ms in parts_at[m].items():
        if bound == "attention":
            provisional[bound] = ms * attention_tflop / a_m if a_m else ms
        elif bound == "host":
            provisional[bound] = ms
        else:
            provisional[bound] = ms * dense_tflop / d_m if d_m else ms
    total = sum(provisional.values())
    how = "its decomposition" if m == seq_len else \
        f"the decomposition at {m} tokens, scaled by the FLOP count"
    return {b: ms * step_ms / total for b, ms in provisional.items()}, how

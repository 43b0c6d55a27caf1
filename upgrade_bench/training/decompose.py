"""Step decomposition on one clock: kernel classification and the wall-time split.

The guide's method: time the step with the profiler off, profile a window of steps, sort
every kernel into a bucket, and split the measured wall time by each bucket's share of
compute kernel time. Communication (NCCL) overlaps the backward pass on its own stream, so
it is left out of the split and reported as a share of all kernel time instead. The
buckets then sum to the measured step by construction, and the profiler's own overhead
never enters a bucket's milliseconds.

Buckets: `attention` (FlashAttention / cuDNN / SDPA kernels, windowed ones too),
`linear_mixer` (flash-linear-attention's Gated DeltaNet and Mamba's scan kernels), `gemm`
(cuBLAS / CUTLASS / nvjet matmuls, grouped expert GEMMs among them), `other` (norms, RoPE,
SwiGLU, cross-entropy, optimizer, copies; MoE routing is listed as its own part of it) and
`comm`.
"""
import re
from dataclasses import dataclass

from ..models import flops
from ..numfmt import pct, sig

BUCKETS = ("attention", "linear_mixer", "gemm", "other")  # the compute buckets the wall time is split into
COMM = "comm"
MOE_ROUTING = "moe_routing"  # a part of `other`: router top-k, token counts, permutation
PRECISION_CAST = "precision_cast"  # a part of `other`: a low precision's amax, scale and cast kernels
LOW_PRECISION_GEMM = "low_precision"  # a part of `gemm`: its FP8 / block-scaled GEMMs
NAME_CHARS = 200  # templated CUTLASS names run to thousands of characters; records keep a prefix


@dataclass(frozen=True)
class Rule:
    bucket: str
    family: str
    pattern: re.Pattern
    part: str = ""  # a named part of the bucket, reported beside it (MOE_ROUTING)


def _rule(bucket: str, family: str, pattern: str, part: str = "") -> Rule:
    return Rule(bucket, family, re.compile(pattern, re.IGNORECASE), part)


# First match wins. Order matters:
# - comm first: NCCL kernels are never compute, whatever else their names say;
# - attention before gemm: FA3 runs as `cutlass::device_kernel<flash::...>` and FA4 (CuTe DSL)
#   as `kernel_cutlass_kernel_flash_attn...`, and cuDNN's SDPA names carry `sm90` and `wgmma`;
# - `other` rules name the known non-matmul families, so a kernel matching no rule at all is
#   a family this table has not seen: it still goes to `other`, and is listed as unclassified.
# GPU names are CUDA kernel names as the profiler demangles them; CPU runs have no kernels,
# so the aten op names of the same work are classified instead.
RULES = (
    _rule(COMM, "NCCL collectives (ncclDevKernel_AllReduce_..., ncclKernel_...; FSDP2's and ZeRO-3's "
          "ncclDevKernel_AllGather_* and ncclDevKernel_ReduceScatter_*)", r"nccl"),
    _rule(COMM, "CPU collectives (c10d / gloo: FSDP2's c10d::_allgather_base_, c10d::_reduce_scatter_base_; "
          "DTensor's functional ones, _c10d_functional::all_reduce and its wait_tensor, of gradient clipping)",
          r"^c10d::|^_c10d_functional::|gloo|record_param_comms"),
    _rule("attention", "cuDNN SDPA (cudnn_generated_fort_native_sdpa_sm90_...)", r"cudnn.*(sdpa|fmha)"),
    _rule("attention", "cuDNN SDPA backward helpers (cudnn::fusion::compute_dot_do_o_specialized, "
          "cudnn::fusion::convert_dq_to_16bits), seen on an H200", r"cudnn::fusion::(compute_dot_do_o|convert_dq)"),
    _rule("attention", "FA2 (torch's pytorch_flash::flash_fwd_kernel, flash_bwd_*; flash-attn 2)",
          r"\bflash_(fwd|bwd)"),
    _rule("attention", "memory-efficient / xformers (fmha_cutlassF_*, fmha_cutlassB_*)", r"fmha"),
    _rule("attention", "FA3 (cutlass::device_kernel<flash::FlashAttnFwdSm90...>, flash::prepare_varlen_*)",
          r"\bflash::"),
    _rule("attention", "FA4 CuTe DSL (...flash_attn...FlashAttentionForwardSm90 / BackwardSm100 ...)",
          r"flash_?attn|flashattention"),
    _rule("attention", "any kernel or op named attention (aten::scaled_dot_product_attention, "
          "_scaled_dot_product_flash_attention_for_cpu; FlexAttention's inductor kernels "
          "triton_tem_fused_flex_attention_0, ..._backward_1, triton_per_fused_flex_attention_backward_0, "
          "seen on an H200)", r"attention|sdpa"),
    # Only PRECISION's converted linears are compiled (training/low_precision.py; FlexAttention's
    # inductor kernels matched attention above): their fused kernels are its amax, scale and cast,
    # named after the ops they fuse, the GEMM they feed among them (triton_poi_fused__scaled_mm_
    # _to_copy_clamp_..., triton_red_fused_abs_max_...: an H200's): before any GEMM rule.
    _rule("other", "a low precision's amax / scale / cast: inductor kernels of the converted linears "
          "(triton_poi_fused_*, triton_red_fused_*, triton_per_fused_*), torchao's of the FP8 experts "
          "(_triton_fp8_rowwise_*, _triton_fp8_per_group_*); on CPU aten::amax",
          r"^triton_(poi|red|per)_fused|^_triton_fp8_|^aten::amax$", part=PRECISION_CAST),
    # Before the other gemm rules: the same libraries' float8 kernels name their element types
    # (cuBLASLt's nvjet kernels as q/r: nvjet_sm90_qqtst_* for e4m3 x e4m3, nvjet_sm90_qrtst_*
    # with an e5m2 gradient, seen on an H200 beside the bf16 nvjet_sm90_tst_*).
    _rule("gemm", "float8 GEMMs (cuBLASLt's nvjet_sm90_qqtst_* / qrtst_*, *_e4m3* / *_e5m2*, CUTLASS's "
          "f8f8bf16 row-wise; on CPU aten::_scaled_mm)", r"nvjet_sm\d+_[qr][qr]|e4m3|e5m2|f8f8|float_e[45]m|"
          r"^aten::_scaled_mm$", part=LOW_PRECISION_GEMM),
    # Before gemm and the Triton rule: FLA's kernels are Triton, Mamba's name a "bmm" of chunks.
    _rule("linear_mixer", "flash-linear-attention Gated DeltaNet (chunk_gated_delta_rule_*, "
          "chunk_scaled_dot_kkt_*, solve_tril, recompute_w_u_*, prepare_wy_repr_*, chunk_fwd/bwd_kernel_*, "
          "l2norm, causal_conv1d)",
          r"delta_rule|chunk_(fwd|bwd)_kernel|chunk_scaled_dot_kkt|chunk_local_cumsum|solve_tril|"
          r"merge_16x16|recompute_w_u|wy_repr|causal_conv1d|l2norm_(fwd|bwd)"),
    _rule("linear_mixer", "Mamba-2 SSD / selective scan (_chunk_scan_*, _chunk_state_*, _chunk_cumsum_*, "
          "_state_passing_*, _bmm_chunk_*, selective_scan; mamba-ssm's, seen on an H200)",
          r"_chunk_scan|_chunk_state|_chunk_cumsum|_state_passing|_bmm_chunk|selective_scan"),
    _rule("gemm", "cuBLAS / cuBLASLt (sm90_xmma_gemm_*, ampere_*gemm*, nvjet_*, gemv, splitKreduce)",
          r"gemm|gemv|nvjet|cublas|xmma"),
    _rule("gemm", "CUTLASS (cutlass::Kernel2<cutlass_80_tensorop_*>, cutlass::device_kernel<...>)",
          r"cutlass"),
    _rule("gemm", "CPU matmul ops", r"^aten::(mm|addmm|bmm|baddbmm|addbmm|matmul|linear|_addmm_activation)$"),
    # Before the ATen rule: torch's top-k and histogram kernels are at::native ones.
    _rule("other", "MoE routing (router top-k: at::native::sbtopk / mbtopk, expert token counts: "
          "histc / bincount, token permutation)", r"topk|histc|histogram|bincount|moe|router|permut",
          part=MOE_ROUTING),
    # An MoE gathers each expert's tokens by advanced indexing (hidden[token_idx]); its backward
    # is this scatter-add: on the H200 it was 5.6% of gpt-oss's 8K step. A dense step has none.
    _rule("other", "token permutation backward (indexing_backward_kernel)", r"indexing_backward",
          part=MOE_ROUTING),
    _rule("other", "ATen native CUDA kernels (elementwise, reductions, copies, softmax, embedding)",
          r"at::native::|at_cuda_detail|\bcub::|elementwise|reduce_kernel"),
    _rule("other", "Triton: Liger (_rms_norm_*, _swiglu_*, _triton_rope, liger_cross_entropy), mamba-ssm's "
          "gated norm (_layer_norm_fwd_1pass_kernel, _layer_norm_bwd_kernel) and inductor (triton_poi_/red_/per_)",
          r"triton|rms_norm|layer_norm|swiglu|_rope|cross_entropy|element_mul"),
    _rule("other", "optimizer (multi_tensor_apply_kernel: fused / foreach Adam)", r"multi_tensor_apply"),
    _rule("other", "memory copies and sets (Memcpy HtoD, Memset)", r"^mem(cpy|set)\b"),
    _rule("other", "CPU ops and autograd glue (aten::*, *Backward0, AccumulateGrad)",
          r"^aten::|^autograd::|Backward\d*$|AccumulateGrad|^detach_?$"),
)


def match(name: str) -> Rule | None:
    """The first rule whose pattern occurs in the kernel (or op) name; None if none does."""
    for rule in RULES:
        if rule.pattern.search(name):
            return rule
    return None


def classify(name: str) -> str:
    """attention | linear_mixer | gemm | other | comm; a name no rule knows is `other`."""
    rule = match(name)
    return rule.bucket if rule else "other"


def bucket_us(kernel_us: dict) -> dict:
    """Kernel time per bucket, microseconds, from {name: us}; every bucket present."""
    out = dict.fromkeys(BUCKETS + (COMM,), 0.0)
    for name, us in kernel_us.items():
        out[classify(name)] += us
    return out


def part_us(kernel_us: dict, part: str) -> float:
    """Kernel time of the rules that name `part`, microseconds."""
    return sum(us for name, us in kernel_us.items() if (rule := match(name)) and rule.part == part)


def split_wall(wall_ms: float, per_bucket_us: dict) -> dict:
    """Wall milliseconds per compute bucket, in proportion to its kernel time.

    Comm is excluded: it overlaps compute on another stream, and the step's idle gaps are
    shared out in proportion too. The values sum to wall_ms (up to float rounding).
    """
    compute_us = sum(per_bucket_us[b] for b in BUCKETS)
    if compute_us <= 0:
        raise ValueError("no compute kernel time in the profile: nothing to split the step by")
    return {b: wall_ms * per_bucket_us[b] / compute_us for b in BUCKETS}


def _throughput(tflop: float | None, ms: float, peak_tflops: float | None) -> dict:
    tflops = None if tflop is None or ms <= 0 else flops.tflops(tflop * 1e12, ms)
    return {"tflop": tflop, "ms": ms, "tflops": tflops,
            "mfu": None if tflops is None else flops.peak_share(tflops, peak_tflops)}


def _top(kernel_us: dict, steps: int, n: int, names=None) -> list:
    names = kernel_us if names is None else names
    ranked = sorted(names, key=lambda k: kernel_us[k], reverse=True)[:n]
    return [{"name": k[:NAME_CHARS], "bucket": classify(k), "ms": kernel_us[k] / steps / 1e3}
            for k in ranked]


def decompose(wall_ms: float, kernel_us: dict, steps: int, step_flops: flops.StepFlops,
              peak_tflops: float | None, top_n: int = 15, low_tflop: float = 0.0) -> dict:
    """The decomposition record's fields from a wall step time and a profile.

    kernel_us: {kernel name: total microseconds over `steps` profiled steps}. Attention gets
    the model's attention FLOPs, gemm the dense FLOPs (model FLOPs, as the guide: recompute of
    checkpointed layers is kernel time without model FLOPs); `other` does no model FLOPs, so
    its TFLOPS and MFU are null; `linear_mixer` gets the linear-attention layers' conv and
    state FLOPs. `everything_else` (all but attention) is the guide's "rest of the step"
    column. Times per bucket are milliseconds per step. (With ATTN_BACKEND=eager the
    attention matmuls run as plain GEMMs: attention shows no time, gemm carries its work.)
    Under a low PRECISION, `low_tflop` (its converted linears' model TFLOP) goes to gemm's
    `low_precision` part, whose TFLOPS are then the format's own, and `other` shows its casts.
    """
    per_bucket = bucket_us(kernel_us)
    ms = split_wall(wall_ms, per_bucket)
    tflop = {"attention": step_flops.attention / 1e12, "linear_mixer": step_flops.linear / 1e12,
             "gemm": step_flops.dense / 1e12, "other": None}
    buckets = {b: {**_throughput(tflop[b], ms[b], peak_tflops), "time_share": ms[b] / wall_ms,
                   "kernel_ms_per_step": per_bucket[b] / steps / 1e3} for b in BUCKETS}
    compute_us = sum(per_bucket[b] for b in BUCKETS)
    for bucket, part in (("other", MOE_ROUTING), ("other", PRECISION_CAST), ("gemm", LOW_PRECISION_GEMM)):
        us = part_us(kernel_us, part)
        buckets[bucket][part] = {"ms": wall_ms * us / compute_us, "kernel_ms_per_step": us / steps / 1e3}
    low = buckets["gemm"][LOW_PRECISION_GEMM]
    low.update(tflop=low_tflop or None, tflops=flops.tflops(low_tflop * 1e12, low["ms"]) if low_tflop and low["ms"] else None)
    rest_ms = wall_ms - ms["attention"]
    unknown = [k for k in kernel_us if match(k) is None]
    return {
        "wall_step_ms": wall_ms,
        "buckets": buckets,
        "everything_else": {**_throughput((step_flops.dense + step_flops.linear) / 1e12, rest_ms,
                                          peak_tflops),
                            "time_share": rest_ms / wall_ms},
        "total": _throughput(step_flops.model / 1e12, wall_ms, peak_tflops),
        # Busy compute-kernel time per step over the wall step: below 1 means idle gaps (host,
        # waits on comm), which the split shares out in proportion; above 1, concurrent streams.
        "kernel_busy_share": compute_us / steps / 1e3 / wall_ms,
        "comm_share": per_bucket[COMM] / (compute_us + per_bucket[COMM]),
        "comm_kernel_ms_per_step": per_bucket[COMM] / steps / 1e3,
        "attn_flop_share": step_flops.attn_share,
        "top_kernels": _top(kernel_us, steps, top_n),
        "unclassified_top": [{"name": k["name"], "ms": k["ms"]} for k in _top(kernel_us, steps, 5, unknown)],
    }


def table(record: dict) -> str:
    """The guide's decomposition table, for humans (stderr)."""
    rows = [(b, record["buckets"][b]) for b in BUCKETS]
    rows += [("everything else", record["everything_else"]), ("total", record["total"])]
    lines = [f"step decomposition at seq_len {record['seq_len']} ({record['attn_backend']}, "
             f"liger {'on' if record['use_liger'] else 'off'}): wall {record['wall_step_ms']:.1f} ms, "
             f"compute kernels busy {record['kernel_busy_share']:.0%} of it, NCCL "
             f"{record['comm_share']:.1%} of kernel time (overlapped, not in the split)",
             f"{'bucket':<16}{'ms':>10}{'share':>8}{'TFLOPS':>9}{'MFU':>7}"]
    for label, r in rows:
        share = r.get("time_share", 1.0)
        lines.append(f"{label:<16}{sig(r['ms']):>10}{pct(share):>8}{sig(r['tflops']):>9}{pct(r['mfu']):>7}")
    for bucket, part, what in (("gemm", LOW_PRECISION_GEMM, "low-precision GEMMs"), ("other", MOE_ROUTING, "MoE routing"),
                               ("other", PRECISION_CAST, "low-precision casts")):
        r = record["buckets"][bucket].get(part) or {}
        if r.get("ms"):
            lines.append(f"  of {bucket}, {what}: {sig(r['ms'])} ms ({pct(r['ms'] / record['wall_step_ms'])})"
                         + (f", {sig(r['tflops'])} TFLOPS" if r.get("tflops") else ""))
    for k in record["unclassified_top"]:
        lines.append(f"unclassified kernel (counted in other): {k['ms']:.3f} ms/step  {k['name']}")
    return "\n".join(lines)

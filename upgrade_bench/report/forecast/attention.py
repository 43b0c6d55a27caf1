"""The attention ratio's sources for a forecast: isolated attention measured by this suite on
both GPUs (bench_flash_attn.py's `attention` records), else published kernel figures (the
guide's FA4/FA3 ratios, FlashAttention-2's paper), each for the backend each GPU trains with.
model.attention_ratio reads the {seq_len: Ratio} table either gives.
"""
import re
import statistics

from . import model as forecast_model
from ..published import guide as published
from ...hardware import gpus
from ...kernels.attention import backends as attn_backends
from ..compare.isolated_attention import ATTENTION_SHAPE
from ..read.series import Series, seq_label


# FlashAttention-2 on the GPUs its paper measured (Tri Dao, "FlashAttention-2: Faster Attention
# with Better Parallelism and Work Partitioning", 2023, section 4.1): fwd+bwd up to 225 TFLOPS
# on an A100 and up to 335 on an H100, at its longest sequences (16K). The same Ampere-style
# kernel on both, without Hopper's TMA and warpgroup MMA: a baseline training with FA2 (or
# torch's flash kernel, FA2 inside torch) carries this ratio, not the peaks', to the H100. The
# H200 has the H100's compute die: its figure, at the long sequences where FA2 is compute-bound.
FA2_PAPER_TFLOPS = {"A100 SXM": 225.0, "H100 SXM": 335.0, "H200 SXM": 335.0}
FA2_PAPER_SEQ_LEN = 16384
# FA2 by this suite's backend names and as others spell it (transformers' attn_implementation,
# the package's name), compared without case or punctuation.
FA2_BACKENDS = ("fa2", "sdpaflash", "flashattention2", "flashattn2")


def trains_with_fa2(backend: str | None) -> bool:
    """Whether a run's attention backend is FlashAttention-2 (or torch's flash kernel, FA2 inside)."""
    return re.sub(r"[^a-z0-9]", "", str(backend or "").lower()) in FA2_BACKENDS


def published_attention(base: str, cand: str, base_backend: str | None) -> tuple[dict, str]:
    """({seq_len: Ratio}, source) of published isolated-attention ratios of a pair of GPU table
    names: FlashAttention-2's paper figures where the baseline trains with FA2; else the guide's,
    where the baseline trains with the kernel the guide's baseline ran (its candidate's is what
    `auto` picks there); ({}, why not) otherwise."""
    if trains_with_fa2(base_backend) and base in FA2_PAPER_TFLOPS and cand in FA2_PAPER_TFLOPS:
        ratio = FA2_PAPER_TFLOPS[cand] / FA2_PAPER_TFLOPS[base]
        return ({FA2_PAPER_SEQ_LEN: forecast_model.Ratio.exact(ratio, "")},
                f"FlashAttention-2's published fwd+bwd TFLOPS ({cand} {FA2_PAPER_TFLOPS[cand]:g} over {base} "
                f"{FA2_PAPER_TFLOPS[base]:g}, Dao 2023, at {seq_label(FA2_PAPER_SEQ_LEN)}): the same kernel on both")
    table = published.GUIDE_ISOLATED_ATTENTION_RATIO.get((base, cand)) or {}
    kernels = {gpus.lookup(g).name: k for g, (k, _, _) in published.GUIDE_ATTENTION_PACKAGE.items()}
    if not table:
        return {}, ""
    if base_backend and base_backend != kernels.get(base):
        return {}, (f"attention unmeasured on both GPUs: the guide's published ratio is {kernels.get(cand)} over "
                    f"{kernels.get(base)}, this baseline trains with {base_backend}; between the HBM and peak ratios")
    figures = ", ".join(f"{v:g}x at {seq_label(n)}" for n, v in sorted(table.items()))
    return ({n: forecast_model.Ratio.exact(v, "") for n, v in table.items()},
            f"isolated attention fwd+bwd, the guide's published {kernels.get(cand)}/{kernels.get(base)} kernel "
            f"figures ({figures})")


# What makes two isolated-attention records the same kernel call, packed_doc_len aside (its
# records are picked by it first).
KERNEL_CALL = tuple(k for k in ATTENTION_SHAPE if k != "packed_doc_len")


def _fwd_bwd_tflops(records: list, backend: str, packed_doc_len: int) -> dict:
    """{(seq_len, shape...): median TFLOPS} of one backend's successful fwd+bwd records."""
    found = {}
    for r in records:
        if (r.get("backend") == backend and r.get("pass") == "fwd_bwd" and r.get("status", "ok") == "ok"
                and (r.get("tflops") or 0) > 0 and (r.get("packed_doc_len") or 0) == packed_doc_len):
            found.setdefault((r["seq_len"], *(r.get(k) for k in KERNEL_CALL)), []).append(r["tflops"])
    return {k: statistics.median(v) for k, v in found.items()}


def measured_attention_table(base_records: list, cand_records: list, base_backend: str, cand_backend: str,
                             packed_doc_len: int = 0) -> dict:
    """{seq_len: Ratio} of isolated attention this suite measured on both GPUs: fwd+bwd, the
    baseline's records of its backend against the candidate's of its own, call for call
    (same length and shape); over several shapes at a length, their median, the range
    their lowest and highest."""
    base = _fwd_bwd_tflops(base_records, base_backend, packed_doc_len)
    cand = _fwd_bwd_tflops(cand_records, cand_backend, packed_doc_len)
    by_len = {}
    for key in sorted(base.keys() & cand.keys(), key=str):
        by_len.setdefault(key[0], []).append(cand[key] / base[key])
    return {n: forecast_model.Ratio(statistics.median(v), min(v), max(v), "") for n, v in by_len.items()}


def candidate_backend(s: Series, cand_series: Series | None, cand_backends: set) -> str | None:
    """The attention backend the candidate would train with: its measured training run's;
    else the baseline's where the baseline asked for one by name; else what `auto` picks
    (attn_backends.TABLE's order) among the backends whose kernels ran on the candidate."""
    if cand_series is not None:
        return cand_series.backend
    asked = s.config.get("ATTN_BACKEND")
    if asked and asked != "auto":
        return asked
    return next((b.name for b in attn_backends.TABLE if b.auto and b.name in cand_backends), None)


def measured_attention(data, s: Series, cand: str, cand_series: Series | None = None) -> tuple[dict, str]:
    """({seq_len: Ratio}, source) of the isolated attention measured on both GPUs of a
    forecast (`data`: the report's series.Dataset), for the backend each trains with; ({}, "")
    where the logs lack either side."""
    base_gpu, cand_gpu = data.gpus.get(s.gpu), data.gpus.get(cand)
    if base_gpu is None or cand_gpu is None:
        return {}, ""
    base_recs = [r for r, ref in base_gpu.attention if not ref]
    cand_recs = [r for r, ref in cand_gpu.attention if not ref]
    backend = candidate_backend(s, cand_series, {r.get("backend") for r in cand_recs if r.get("pass") == "fwd_bwd"})
    table = measured_attention_table(base_recs, cand_recs, s.backend, backend,
                                     s.config.get("PACKED_DOC_LEN") or 0) if backend else {}
    return (table, f"isolated attention fwd+bwd measured here on both GPUs, {cand} {backend} over "
                   f"{s.gpu} {s.backend}") if table else ({}, "")

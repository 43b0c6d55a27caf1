"""Isolated attention: each GPU's kernel lines (backend and provenance) per pass and shape,
and each GPU's best backend over the baseline's best of the same provenance."""
from ..read.series import median_record, provenance
from .verdict import ratio

# What sets one isolated-attention table apart from another: the inputs of the kernel call
# (a model's windowed, full and linear layers are tables of their own).
ATTENTION_SHAPE = ("layer", "batch", "heads", "kv_heads", "head_dim", "v_head_dim", "window", "sinks",
                   "causal", "dtype", "packed_doc_len")


def attention_series(gpu_map: dict) -> dict:
    """{(pass, shape): {(gpu, backend, provenance): {seq_len: tflops}}} of ok kernel runs."""
    out = {}
    for gpu in gpu_map.values():
        grouped = {}
        for r, reference in gpu.attention:
            if r.get("status", "ok") != "ok" or r.get("tflops") is None:
                continue
            shape = tuple(r.get(k) for k in ATTENTION_SHAPE)
            key = ((r.get("pass"), shape), (gpu.name, r.get("backend"), provenance(reference)))
            grouped.setdefault(key, {}).setdefault(r["seq_len"], []).append(r)
        for (group, line), by_len in grouped.items():
            out.setdefault(group, {})[line] = {n: median_record(rs, "tflops")["tflops"]
                                               for n, rs in sorted(by_len.items())}
    return out


def attention_rows(lines: dict, baseline: str) -> list:
    """Per seq_len: each line's TFLOPS and, per other GPU and provenance, its best backend
    over the baseline's best of the same provenance (never measured over published)."""
    rows = []
    for n in sorted({n for pts in lines.values() for n in pts}):
        best = {}
        for (gpu, backend, tag), pts in lines.items():
            if n in pts and ((gpu, tag) not in best or pts[n] > best[gpu, tag][0]):
                best[gpu, tag] = (pts[n], backend)
        ratios = {(g, tag): (ratio(v[0], best[baseline, tag][0]), v[1], best[baseline, tag][1])
                  for (g, tag), v in best.items() if g != baseline and (baseline, tag) in best}
        rows.append({"seq_len": n, "tflops": {line: pts.get(n) for line, pts in lines.items()},
                     "ratios": ratios})
    return rows

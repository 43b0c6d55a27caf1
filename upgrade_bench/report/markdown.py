"""report.md from a report.Analysis: markdown tables and the page that holds them.

Rendering only: every number shown is computed in comparisons.py; this module formats it.
"""
from .. import gpus
from .comparisons import Analysis, attention_rows, ratio
from .series import GUIDE_LABEL, _short, normalise_dtype, provenance, seq_label

# The settings that shape the workload most, shown in the report's series table.
SUMMARY_FIELDS = ("MODEL", "NUM_LAYERS", "BATCH_SIZE", "ZERO_STAGE", "OFFLOAD_OPTIMIZER",
                  "GRAD_CHECKPOINT", "USE_LIGER", "ATTN_BACKEND", "PACKED_DOC_LEN", "world_size")
TELEMETRY_FIELDS = ("sm_clock_mhz_median", "sm_clock_mhz_min", "power_w_mean", "temp_c_max",
                    "throttle", "energy_j_per_token")


def fmt(value, kind: str = "num") -> str:
    if value is None or value == []:
        return "-"
    if kind == "pct":
        return f"{value:.1%}"
    if kind == "x":
        return f"{value:.2f}x"
    if kind == "usd":
        return f"${value:.4g}"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 10 else f"{value:.1f}"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def md_table(headers: list, rows: list) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c).replace("|", "/") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def speedup_markdown(c: dict) -> str:
    b, o = c["base"], c["other"]
    rows = []
    for r in c["speedup"]:
        check = "-" if r["identity_ok"] is None else ("ok" if r["identity_ok"] else "**MISMATCH**")
        speed = fmt(r["speedup"], "x") if not r["gap"] else f"**capability gap: {r['gap']}**"
        rows.append([seq_label(r["seq_len"]), fmt(r["attn_share"], "pct"), fmt(r["base_tflops"]),
                     fmt(r["other_tflops"]), fmt(r["base_mfu"], "pct"), fmt(r["other_mfu"], "pct"),
                     speed, fmt(r["peak_ratio"], "x"), fmt(r["mfu_ratio"], "x"),
                     fmt(r["identity"], "x"), check])
    return md_table(["seq_len", "attn FLOP share", f"{b.gpu} TFLOPS", f"{o.gpu} TFLOPS",
                     f"{b.gpu} MFU", f"{o.gpu} MFU", "speedup", "peak ratio", "MFU ratio",
                     "peak ratio x MFU ratio", "identity"], rows)


def cost_markdown(c: dict) -> str:
    b, o = c["base"], c["other"]
    rows = [[seq_label(r["seq_len"]), fmt(r["base_step_ms"]), fmt(r["other_step_ms"]),
             fmt(r["base_usd_per_mtok"], "usd"), fmt(r["other_usd_per_mtok"], "usd"),
             fmt(r["cost_ratio"], "x"), r["verdict"]] for r in c["cost"]]
    return md_table(["seq_len", f"{b.gpu} step ms", f"{o.gpu} step ms", f"{b.gpu} $/1M tokens",
                     f"{o.gpu} $/1M tokens", "cost ratio", "verdict"], rows)


def memory_markdown(a: Analysis) -> str:
    shown = [s for s in a.data.series if s.points or s.errors]
    lens = sorted({n for s in shown for n in list(s.points) + list(s.errors)})
    if not lens:
        return ""

    def cell(s, n):
        if n in s.points:
            return fmt(s.points[n].get("peak_mem_gib"))
        return s.errors[n].get("error", "error") if n in s.errors else ""
    rows = [[seq_label(n)] + [cell(s, n) for s in shown] for n in lens]
    hbm = ["HBM GiB"] + [fmt(s.hbm_gib) for s in shown]
    out = [md_table(["seq_len"] + [f"{s.label} peak GiB" for s in shown], rows + [hbm])]
    caps = [(g, ref, rec) for g in a.order for _, ref, rec in a.data.gpus[g].capacity]
    if caps:
        out.append("Largest sequence length that fits (`capacity` records):\n\n" + md_table(
            ["GPU", "max fit seq_len", "min fail seq_len", "peak GiB at max", "HBM GiB", "search step"],
            [[g + (f" ({provenance(ref)})" if ref else ""),
              seq_label(rec.get("max_fit_seq_len")) if rec.get("max_fit_seq_len") else "-",
              seq_label(rec.get("min_fail_seq_len")) if rec.get("min_fail_seq_len") else "-",
              fmt(rec.get("peak_mem_gib_at_max")), fmt(rec.get("hbm_gib") or a.data.gpus[g].hbm_gib),
              fmt(rec.get("seq_len_step"))] for g, ref, rec in caps]))
    return "\n\n".join(out)


def mamf_markdown(a: Analysis) -> str:
    recs = [(g, r) for g in a.order for r in a.data.gpus[g].mamf]
    if not recs:
        return ""
    rows = []
    for g, r in recs:
        dtype = normalise_dtype(r.get("dtype"))
        spec = gpus.lookup(g)
        peak = r.get("peak_tflops") or (spec.peak_tflops(dtype) if spec else None)
        rows.append([g, dtype, fmt(r.get("tflops_mean")), fmt(r.get("tflops_max")),
                     "x".join(str(r[k]) for k in "mnk") if all(r.get(k) for k in "mnk") else "-",
                     fmt(peak), fmt(r.get("efficiency") or ratio(r.get("tflops_mean"), peak), "pct"),
                     provenance(r.get("reference")) or "measured"])
    out = [md_table(["GPU", "dtype", "MAMF TFLOPS (mean)", "max", "shape m x n x k", "peak",
                     "MAMF / peak", "source"], rows)]
    ratios = [f"{g}: {fmt(a.mamf_ratio[g], 'x')} (theoretical peak "
              f"{fmt(ratio(a.data.gpus[g].peak_tflops, a.data.gpus[a.baseline].peak_tflops), 'x')})"
              for g in a.order[1:] if a.mamf_ratio[g]]
    if ratios:
        out.append(f"bf16 MAMF ratio over {a.baseline}: " + "; ".join(ratios))
    util = [s for s in a.data.series if s.points and a.mamf[s.gpu]]
    lens = sorted({n for s in util for n in s.points})
    if util:
        out.append("MAMF utilisation (training TFLOPS / bf16 MAMF, the realistic ceiling):\n\n" + md_table(
            ["seq_len"] + [s.label for s in util],
            [[seq_label(n)] + [fmt(ratio(s.points[n].get("tflops_per_gpu"), a.mamf[s.gpu]), "pct")
                               if n in s.points else "" for s in util] for n in lens]))
    return "\n\n".join(out)


def decomposition_markdown(c: dict) -> str:
    b, o = c["base"], c["other"]
    return md_table(["seq_len", "bucket", f"{b.gpu} TFLOPS", f"{o.gpu} TFLOPS", f"{b.gpu} ms",
                     f"{o.gpu} ms", f"{b.gpu} time share", f"{o.gpu} time share", "speedup"],
                    [[seq_label(r["seq_len"]), r["bucket"], fmt(r["base_tflops"]), fmt(r["other_tflops"]),
                      fmt(r["base_ms"]), fmt(r["other_ms"]), fmt(r["base_share"], "pct"),
                      fmt(r["other_share"], "pct"), fmt(r["speedup"], "x")] for r in c["decomposition"]])


def attention_markdown(a: Analysis) -> str:
    out = []
    for (pass_, shape), lines in sorted(a.attention.items(), key=lambda kv: str(kv[0])):
        names = list(lines)
        others = [g for g in a.order[1:] if any(line[0] == g for line in names)]
        rows = []
        for r in attention_rows(lines, a.baseline):
            cells = [fmt(r["tflops"][line]) for line in names]
            for g in others:
                got = r["ratios"].get(g)
                cells.append(f"{fmt(got[0], 'x')} ({got[1]} / {got[2]})" if got else "-")
            rows.append([seq_label(r["seq_len"])] + cells)
        heads = [" ".join(p for p in line if p) + " TFLOPS" for line in names]
        shape_text = ", ".join(f"{k} {v}" for k, v in zip(
            ("batch", "heads", "kv_heads", "head_dim", "causal", "dtype", "packed_doc_len"), shape))
        out.append(f"**{pass_}** ({shape_text})\n\n" + md_table(
            ["seq_len"] + heads + [f"{g} best / {a.baseline} best" for g in others], rows))
    return "\n\n".join(out)


def telemetry_markdown(a: Analysis) -> str:
    out = []
    for s in a.data.series:
        rows = [[seq_label(n)] + [fmt(p.get(f)) for f in TELEMETRY_FIELDS]
                for n, p in s.points.items() if any(p.get(f) is not None for f in TELEMETRY_FIELDS)]
        if rows:
            out.append(f"{s.label}\n\n" + md_table(["seq_len"] + list(TELEMETRY_FIELDS), rows))
    return "\n\n".join(out)


def capability_markdown(a: Analysis) -> str:
    """check_capabilities' side-by-side table, one column per GPU that has capability records."""
    from ..capabilities import capability_table

    by_gpu = {g: a.data.gpus[g].capabilities for g in a.order if a.data.gpus[g].capabilities}
    return capability_table(by_gpu).strip() if by_gpu else ""


def render(a: Analysis, figures=(), inputs=(), skipped: int = 0) -> str:
    """report.md: stack warnings first, then the guide's tables."""
    d = a.data
    out = ["# GPU upgrade report", ""]
    if a.stack:
        out += ["> **WARNING: software stacks differ between the GPUs compared.** The guide's "
                "caveat 2: the stack alone moves results by double-digit percent, so part of "
                "any difference below may be the stack, not the GPU.", ">"]
        out += [f"> - {line}" for line in a.stack] + [""]
    n_records = sum(len(s.points) for s in d.series)
    out += [f"Generated by plot_results.py from {len(inputs)} log file(s); baseline GPU: "
            f"**{a.baseline}**; {n_records} sweep points in {len(d.series)} series."
            + (f" Skipped {skipped} malformed line(s)." if skipped else "")
            + (f" {d.orphans} record(s) had no header (GPU unknown)." if d.orphans else ""), ""]
    if any(s.reference for s in d.series) or any(r.get("reference") for g in d.gpus.values() for r in g.mamf):
        out += [f"Series marked *({GUIDE_LABEL})* are the guide's published figures fed through "
                "this pipeline, not measurements of this suite.", ""]
    for path in figures:
        out += [f"![{path}]({path})", ""]
    out += ["## Series", "", md_table(
        ["series", "GPU (as reported)", "records", "configuration", "points", "torch / CUDA", "sources"],
        [[s.label, s.gpu_raw or "-", "sweep" if s.repeats or s.errors else "decomposition",
          " ".join(f"{k}={_short(s.config[k])}" for k in SUMMARY_FIELDS if k in s.config) or "-",
          ", ".join(seq_label(n) for n in sorted(set(s.points) | set(s.decompositions))) or "-",
          "; ".join(f"{st.get('torch')} / {st.get('cuda')}" for st in s.stacks) or "-",
          ", ".join(sorted(s.sources))] for s in d.series]), ""]
    if a.hints:
        out += ["Not compared:", ""] + [f"- {h}" for h in a.hints] + [""]
    caps = capability_markdown(a)
    if caps:
        out += ["## Capabilities", "", "Rows in bold: one GPU can and another cannot; no benchmark "
                "is needed to answer those.", "", caps, ""]
    for c in a.comparisons:
        if not (c["base"].points or c["other"].points):
            continue
        out += [f"## Speedup: {c['other'].label} vs {c['base'].label}", "",
                "The identity column checks `speedup ~= peak ratio x MFU ratio`.", "",
                speedup_markdown(c), ""]
        if a.prices:
            out += ["### $/token and wall-clock", "", "Decide on $/token; break ties on wall-clock "
                    "and memory headroom.", "", cost_markdown(c), ""]
    mem = memory_markdown(a)
    if mem:
        out += ["## Peak memory vs sequence length", "", mem, ""]
    for c in a.comparisons:
        if c["decomposition"]:
            out += [f"## Step decomposition: {c['other'].label} vs {c['base'].label}", "",
                    decomposition_markdown(c), ""]
    att = attention_markdown(a)
    if att:
        out += ["## Isolated attention kernels", "", att, ""]
    mamf = mamf_markdown(a)
    if mamf:
        out += ["## MAMF (maximum achievable matmul FLOPS)", "", mamf, ""]
    tel = telemetry_markdown(a)
    if tel:
        out += ["## Telemetry", "", tel, ""]
    if d.failures:
        out += ["## Failures without a sequence length", ""]
        out += [f"- {s.label}: {r.get('error')}: {r.get('message')}" for s, r in d.failures] + [""]
    return "\n".join(out)

"""The tables after the verdicts: the guide's details per comparison (speedup, MFU, the
identity check, memory), then memory and capacity, the step decomposition, isolated
attention, MAMF, memory bandwidth, interconnect, telemetry, capabilities and the series read."""
from ...hardware import bandwidth, collectives, gpus
from .capabilities import capability_table
from ..compare.comparisons import Analysis, Comparison
from ..compare.decompositions import decomposed, decomposition_parts
from ..compare.isolated_attention import ATTENTION_SHAPE
from ...faults import DIVERGED
from ..read.series import MEASURED, normalise_dtype, provenance, seq_label
from ..text.tables import fmt, md_table
from .words import column_names, ignored_words, series_words, stack_words, unlike_note, unlike_words, who

TELEMETRY_FIELDS = ("sm_clock_mhz_median", "sm_clock_mhz_min", "power_w_mean", "temp_c_max",
                    "throttle", "energy_j_per_token")


AFTER_OTHERS = "†"
AFTER_OTHERS_NOTE = (f"{AFTER_OTHERS} measured after other lengths in the same process "
                     "(`REUSE_PROCESS=1`, or several `SEQ_LEN` in one run): what the allocator "
                     "cached for them shapes this peak, so a fresh training job's can differ.")


def peak_cell(point) -> str:
    """A point's peak reserved GiB, marked when earlier lengths in its process shaped it."""
    point = point or {}
    return fmt(point.get("peak_mem_gib")) + (AFTER_OTHERS if point.get("earlier_points_in_process") else "")


def with_after_others_note(text: str) -> str:
    return f"{text}\n\n{AFTER_OTHERS_NOTE}" if AFTER_OTHERS in text else text


def details_markdown(c: Comparison) -> str:
    """The guide's speedup table of one comparison, with the identity check and memory."""
    b, o = column_names(c.base, c.other)
    rows = []
    for r in c.rows:
        check = "-" if r.identity_ok is None else ("ok" if r.identity_ok else "**MISMATCH**")
        rows.append([seq_label(r.seq_len), fmt(r.attn_share, "pct"), fmt((r.base or {}).get("tflops_per_gpu")),
                     fmt((r.other or {}).get("tflops_per_gpu")), fmt((r.base or {}).get("mfu"), "pct"),
                     fmt((r.other or {}).get("mfu"), "pct"), r.missing or fmt(r.speedup, "x"),
                     fmt(c.peak_ratio, "x"),
                     fmt(r.mfu_ratio, "x"), fmt(r.identity, "x"), check, peak_cell(r.base), peak_cell(r.other)])
    table = md_table(["seq_len", "attn FLOP share", f"{b} TFLOPS", f"{o} TFLOPS", f"{b} MFU",
                      f"{o} MFU", "speedup", "peak ratio", "MFU ratio", "peak ratio x MFU ratio",
                      "identity", f"{b} peak GiB", f"{o} peak GiB"], rows)
    mamf = (f"bf16 MAMF ratio of this pair: {fmt(c.mamf_ratio, 'x')} ({who(c.other)} {fmt(c.mamf[1])} / "
            f"{who(c.base)} {fmt(c.mamf[0])}); theoretical peak ratio {fmt(c.peak_ratio, 'x')}."
            if c.mamf_ratio else f"No bf16 MAMF of both sides' GPU and provenance; theoretical peak "
                                 f"ratio {fmt(c.peak_ratio, 'x')}.")
    return "\n\n".join(([unlike_note(c)] if c.unlike else []) + [with_after_others_note(table), mamf])


def memory_markdown(a: Analysis) -> str:
    shown = [s for s in a.data.series if s.is_sweep]
    lens = sorted({n for s in shown for n in list(s.points) + list(s.errors)})
    if not lens:
        return ""

    def cell(s, n):
        if n in s.points:
            return peak_cell(s.points[n])
        return s.errors[n].get("error") or "error" if n in s.errors else "-"
    rows = [[seq_label(n)] + [cell(s, n) for s in shown] for n in lens]
    hbm = ["HBM GiB"] + [fmt(s.hbm_gib) for s in shown]
    out = [with_after_others_note(md_table(["seq_len"] + [f"{s.label} peak GiB" for s in shown], rows + [hbm]))]
    caps = [(g, ref, rec) for g in a.order for _, ref, rec in a.data.gpus[g].capacity]
    if caps:
        out.append("Largest sequence length that fits (`capacity` records):\n\n" + md_table(
            ["GPU", "max fit seq_len", "min fail seq_len", "peak GiB at max", "HBM GiB", "search step"],
            [[f"{g} ({provenance(ref) or MEASURED})",
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
                     fmt(peak), fmt(r.get("efficiency"), "pct"), provenance(r.get("reference")) or MEASURED])
    out = [md_table(["GPU", "dtype", "MAMF TFLOPS (mean)", "max", "shape m x n x k", "peak",
                     "MAMF / peak", "source"], rows)]
    if a.mamf_ratios:
        out.append(f"bf16 MAMF ratio over {a.baseline}, each within one source: " + "; ".join(
            f"{g} ({provenance(ref) or MEASURED}): {fmt(value, 'x')} (theoretical peak {fmt(peak, 'x')})"
            for g, ref, value, peak in a.mamf_ratios))
    if a.utilisation:
        lens = sorted({n for _, shares in a.utilisation for n in shares})
        out.append("MAMF utilisation (training TFLOPS / bf16 MAMF of the same GPU and source, the "
                   "realistic ceiling):\n\n" + md_table(
                       ["seq_len"] + [s.label for s, _ in a.utilisation],
                       [[seq_label(n)] + [fmt(shares.get(n), "pct") for _, shares in a.utilisation]
                        for n in lens]))
    return "\n\n".join(out)


def bandwidth_markdown(a: Analysis) -> str:
    """Per GPU and run (bench_hbm.py), each op's best sustained GB/s over the run's buffer
    sizes, the GPU table's datasheet bandwidth and the best copy's share of it: a row never
    takes one op from one run and another from the next."""
    rows = []
    for g in a.order:
        by_run = {}
        for r, reference in a.data.gpus[g].hbm:
            by_run.setdefault((provenance(reference) or MEASURED, r.get("run_id")), []).append(r)
        datasheet = bandwidth.datasheet_gb_per_s(g)[0]
        for (source, run_id), recs in by_run.items():
            best = bandwidth.best_by_op(recs)
            if best:
                copy = best["copy"]["gb_per_s"] if "copy" in best else None
                rows.append([g] + [fmt(best[op]["gb_per_s"]) if op in best else "-" for op in bandwidth.OPS]
                            + [fmt(datasheet and datasheet / 1e3), fmt(bandwidth.share_of_datasheet(copy, datasheet), "pct"),
                               f"{source}, run {run_id}" if run_id else source])
    if not rows:
        return ""
    return ("Decimal GB/s at the median call, the best of each op over a run's buffer sizes; the forecast "
            "scales other kernels by the datasheets' ratio, not by these.\n\n" + md_table(
                ["GPU"] + [f"{op} GB/s" for op in bandwidth.OPS] + ["datasheet TB/s", "copy / datasheet", "source"],
                rows))


def interconnect_markdown(a: Analysis) -> str:
    """Per GPU and run (bench_comm.py: one node), each op's best bus bandwidth over the run's
    sizes, its ranks, the link figure it was set against and the best all_reduce's share of
    it: a row never takes one op from one run and another from the next."""
    rows = []
    for g in a.order:
        by_run = {}
        for r, reference in a.data.gpus[g].comm:
            by_run.setdefault((provenance(reference) or MEASURED, r.get("run_id")), []).append(r)
        for (source, run_id), recs in by_run.items():
            best = collectives.best_by_op(recs)
            if best:
                link = next((r["link_gbps"] for r in recs if r.get("link_gbps")), None)
                reduce = best["all_reduce"]["busbw_gbps"] if "all_reduce" in best else None
                rows.append([g, "/".join(sorted({str(r.get("ranks")) for r in best.values()}))]
                            + [fmt(best[op]["busbw_gbps"]) if op in best else "-" for op in collectives.OPS]
                            + [fmt(link), fmt(collectives.share_of_link(reduce, link), "pct"),
                               f"{source}, run {run_id}" if run_id else source])
    if not rows:
        return ""
    return ("Bus bandwidth by nccl-tests' convention (decimal GB/s at the median call), the best of each op over "
            "a run's sizes; link: the GPU table's figure in one direction (half the datasheet's duplex; none for "
            "ranks on several hosts). The forecast scales exposed communication by these where both GPUs have "
            "them (the same op, ranks and size, 64 MiB and up), else by the datasheets' link ratio.\n\n" + md_table(
                ["GPU", "ranks"] + [f"{op} GB/s" for op in collectives.OPS] + ["link GB/s", "all_reduce / link", "source"],
                rows))


def decomposition_markdown(a: Analysis) -> str:
    """Each pair's per-part table with its speedups, then every decomposition in no pair,
    under the names decomposition.png gives them: the page lists all the figure shows."""
    out = []
    for p in a.decompositions:
        b, o = column_names(p.base, p.other)
        notes = [f"Ignored: {ignored_words(p.ignored)}." if p.ignored else "",
                 f"**Not like for like** ({unlike_words(p)}): TFLOPS per GPU is not comparable." if p.unlike else "",
                 f"Software stacks differ: {stack_words(p.stack)}." if p.stack else ""]
        note = " ".join(n for n in notes if n)
        out.append(f"**{p.other.label} vs {p.base.label}**" + (f" {note}" if note else "") + "\n\n" + md_table(
            ["seq_len", "bucket", f"{b} TFLOPS", f"{o} TFLOPS", f"{b} ms", f"{o} ms",
             f"{b} time share", f"{o} time share", "speedup"],
            [[seq_label(r["seq_len"]), r["bucket"], fmt(r["base_tflops"]), fmt(r["other_tflops"]),
              fmt(r["base_ms"]), fmt(r["other_ms"]), fmt(r["base_share"], "pct"),
              fmt(r["other_share"], "pct"), fmt(r["speedup"], "x")] for r in p.rows]))
    members, named = decomposed(a.data.series)
    paired = {id(s) for p in a.decompositions for s in (p.base, p.other)}
    alone = [[named[id(s)], seq_label(n), part, fmt(got.get("tflops")), fmt(got.get("ms")),
              fmt(got.get("time_share"), "pct")]
             for s in members if id(s) not in paired for n, record in sorted(s.decompositions.items())
             for part, got in decomposition_parts(record).items()]
    if alone:
        out.append("**Decompositions in no pair** (no decomposition of the same configuration to compare with):\n\n"
                   + md_table(["series", "seq_len", "part", "TFLOPS", "ms", "time share"], alone))
    return "\n\n".join(out)


def attention_markdown(a: Analysis) -> str:
    out = []
    for (pass_, shape), (lines, table) in a.attention.items():
        names = list(lines)
        pairs = list(dict.fromkeys(k for r in table for k in r["ratios"]))
        rows = []
        for r in table:
            cells = [fmt(r["tflops"][line]) for line in names]
            for k in pairs:
                got = r["ratios"].get(k)
                cells.append(f"{fmt(got[0], 'x')} ({got[1]} / {got[2]})" if got else "-")
            rows.append([seq_label(r["seq_len"])] + cells)
        heads = [" ".join(p for p in line if p) + " TFLOPS" for line in names]
        shape_text = ", ".join(f"{k} {v}" for k, v in zip(ATTENTION_SHAPE, shape) if v is not None)
        out.append(f"**{pass_}** ({shape_text})\n\n" + md_table(
            ["seq_len"] + heads + [f"{g} best / {a.baseline} best ({tag or MEASURED})" for g, tag in pairs], rows))
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
    by_gpu = {g: a.data.gpus[g].capabilities for g in a.order if a.data.gpus[g].capabilities}
    return capability_table(by_gpu).strip() if by_gpu else ""


def series_markdown(a: Analysis) -> str:
    rows = []
    for s in a.data.series:
        words = series_words(s, a.data.also_in)
        gone = {n for n, e in s.errors.items() if e.get("error") == DIVERGED}
        rows.append([s.label, "sweep" if s.is_sweep else "decomposition",
                     ", ".join(seq_label(n) + (f" ({DIVERGED})" if n in gone else "")
                               for n in sorted(set(s.points) | set(s.decompositions) | gone)) or "-",
                     words["configuration"], words["software"], words["source"], words["notes"]])
    return md_table(["series", "records", "points", "configuration", "software", "source", "notes"], rows)

"""report.md, and the verdict blocks the terminal prints: formatting only.

Every number shown is computed in comparisons.py (its formulas in verdict.py); this module
words and tables it. The page opens with one verdict block per comparison, then the series
that pair with nothing and why, then the figures and the guide's detailed tables.
"""

from ..hardware import gpus
from .comparisons import ATTENTION_SHAPE, HEALTH, Analysis, Comparison
from .forecasts import forecast_markdown
from .series import GUIDE_LABEL, MEASURED, Series, _short, config_phrase, normalise_dtype, provenance, seq_label
from .tables import fmt, md_table
from .text import md_cell
from .verdict import ABOVE, BELOW, UNDECIDED, WITHIN, Call
from .workload import workload_markdown

# The settings that shape the workload, in the words of a verdict block.
WORKLOAD_KEYS = ("ZERO_STAGE", "OFFLOAD_OPTIMIZER", "GRAD_CHECKPOINT", "USE_LIGER", "PACKED_DOC_LEN",
                 "BATCH_SIZE", "WARMUP_STEPS", "PYTORCH_CUDA_ALLOC_CONF")
SHOWN_KEYS = ("world_size", "MODEL", "NUM_LAYERS", "ATTN_BACKEND") + WORKLOAD_KEYS
TELEMETRY_FIELDS = ("sm_clock_mhz_median", "sm_clock_mhz_min", "power_w_mean", "temp_c_max",
                    "throttle", "energy_j_per_token")
MOST_RUNS_NAMED = 3


def who(s: Series) -> str:
    """'H200 SXM (measured)', 'B200 SXM (guide's published)'."""
    return f"{s.gpu} ({s.provenance})"


def column_names(base: Series, other: Series) -> tuple:
    """How a table's columns name the two sides: the GPU, with provenance where both are one GPU."""
    return (base.gpu, other.gpu) if base.gpu != other.gpu else (who(base), who(other))


# ---------------------------------------------------------------- a series in words

def _phrases(s: Series, key: str) -> str:
    return " / ".join(config_phrase(key, v) for v in s.settings(key)) or "not recorded"


def _stack_words(stack: dict) -> str:
    names = {"cuda": "CUDA"}
    return ", ".join(f"{names.get(k, k)} {v}" for k, v in stack.items() if v is not None) or "not recorded"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def sources_words(s: Series, also_in: dict) -> str:
    """Where a series was read: files and run ids, the first few, then how many more."""
    runs = list(s.runs.values())
    named = []
    for run in runs[:MOST_RUNS_NAMED]:
        again = sorted(set(also_in.get(run.run_id, ())) - {run.source})
        named.append(f"{run.source} (run {run.run_id}" + (f"; also in {', '.join(again)}" if again else "") + ")")
    more = len(runs) - MOST_RUNS_NAMED
    files = len({run.source for run in runs[MOST_RUNS_NAMED:]})
    return "; ".join(named) + (f"; and {_count(more, 'more run')} in {_count(files, 'file')}" if more > 0 else "")


def series_words(s: Series, also_in: dict) -> dict:
    """The facts of a series a buyer needs, in words: {row name: text}."""
    runs = list(s.runs.values())
    counts = sorted({r.gpu_count for r in runs if r.gpu_count})
    node = f" ({' / '.join(map(str, counts))} on the node)" if counts else ""
    layers = sorted({r.num_layers for r in runs if r.num_layers})
    model = ", ".join(map(str, s.settings("MODEL"))) or "model not recorded"
    cut = [v for v in s.settings("NUM_LAYERS") if v not in (0, "0")]
    layer_words = _phrases(s, "NUM_LAYERS") if cut or not layers else f"all {' / '.join(map(str, layers))} layers"
    others = [config_phrase(k, s.config[k]) for k in sorted(s.config)
              if k not in SHOWN_KEYS and not (k == "MEM_DEBUG" and not s.config[k])]
    notes = list(dict.fromkeys(r.notes for r in runs if r.notes))
    asked = ", ".join(map(_short, s.settings("ATTN_BACKEND"))) or "not recorded"
    return {"GPU": f"{s.gpu}, {_phrases(s, 'world_size')} in the run{node}",
            "model": f"{model}, {layer_words}",
            "configuration": ", ".join([_phrases(s, k) for k in WORKLOAD_KEYS if s.settings(k)] + others),
            "attention": f"{s.backend} (ATTN_BACKEND={asked})",
            "software": " | ".join(_stack_words(st) for st in s.stacks) or "not recorded",
            "source": f"{s.provenance}: {sources_words(s, also_in)}",
            "notes": " | ".join(notes[:MOST_RUNS_NAMED]) + (f" | (+{len(notes) - MOST_RUNS_NAMED} more)"
                                                            if len(notes) > MOST_RUNS_NAMED else "") or "-"}


# ---------------------------------------------------------------- verdict blocks

def _range(low, high, kind: str) -> str:
    """'1.83x to 1.85x'; more digits where two places would print the ends the same."""
    if kind == "x":
        digits = next((d for d in (2, 3, 4) if f"{low:.{d}f}" != f"{high:.{d}f}"), 4)
        return f"{low:.{digits}f}x to {high:.{digits}f}x"
    return f"{fmt(low, kind)} to {fmt(high, kind)}"


def _signed(value: float) -> str:
    return f"{value:+.1%}"


def cost_words(c: Comparison, row) -> str:
    """The $/token call of one point: cheaper / same / dearer with its margin and range."""
    if row.missing:
        return f"**{row.missing}**"
    if row.cost is None:
        return "no throughput recorded" if c.prices else f"no price ({price_flags(c)})"
    if c.unlike:
        return "no call: not like for like"
    return _call_words(row.cost, row, ("cheaper", "same $/token", "dearer"))


def speed_words(c: Comparison, row) -> str:
    """A health check's call: this node slower / as published / faster."""
    if row.missing:
        return f"**{row.missing}**"
    if row.speed is None:
        return "no TFLOPS recorded"
    if c.unlike:
        return "no call: not like for like"
    return _call_words(row.speed, row, ("slower than published", "as published", "faster than published"))


def price_flags(c: Comparison) -> str:
    """'--price B200=USD_PER_GPU_HOUR' for each GPU of a comparison without a price."""
    return " ".join(f"--price {gpu.split()[0]}=USD_PER_GPU_HOUR" for gpu in c.unpriced)


def no_spread_words(s: Series, summary: dict) -> str:
    """Why one side of a point has no step-time range."""
    if s.reference:
        return f"no spread published for {s.gpu}"
    if summary.get("steps") == 1:
        return f"one timed step on {who(s)}, no spread"
    return f"no step-time spread recorded for {who(s)}"


def _call_words(got: Call, row, words: tuple) -> str:
    below, within, above = words
    if got.word == UNDECIDED:
        side = below if got.value < 1 else above
        return (f"cannot decide: {'; '.join(no_spread_words(s, summary) for s, summary in row.no_range)}; point "
                f"estimate {abs(got.value - 1):.1%} {side}")
    if got.word == WITHIN:
        return f"{within} within the spread ({_signed(got.low - 1)} to {_signed(got.high - 1)})"
    if got.word == BELOW:
        return f"{1 - got.value:.1%} {below} ({1 - got.high:.1%} to {1 - got.low:.1%})"
    assert got.word == ABOVE
    return f"{got.value - 1:.1%} {above} ({got.low - 1:.1%} to {got.high - 1:.1%})"


def _with_range(value, value_range, kind: str = "x") -> str:
    if value is None:
        return "-"
    return fmt(value, kind) + (f" ({_range(*value_range, kind)})" if value_range else "")


def headline(c: Comparison) -> str:
    """One sentence: where the candidate is cheaper / the same / dearer, and how much faster;
    first, where the two series do different work per GPU, that this is no verdict."""
    if not c.unlike:
        return _findings(c)
    text = (f"**Not like for like** ({unlike_words(c)}): TFLOPS per GPU and $/token are not comparable, "
            f"so this pair gets no verdict: no cheaper or dearer call and no speedup headline.")
    above = [r for r in c.rows if r.speedup and c.peak_ratio and r.speedup > c.peak_ratio]
    if above:
        top = max(above, key=lambda r: r.speedup)
        text += (f" Its TFLOPS ratio reaches {fmt(top.speedup, 'x')} at {seq_label(top.seq_len)}, above the "
                 f"{fmt(c.peak_ratio, 'x')} peak ratio of the two GPUs: a configuration difference, not hardware.")
    return text + _one_sided(c)


def _findings(c: Comparison) -> str:
    if c.kind == HEALTH:
        groups = _by_word(c, lambda r: r.speed, ("slower than published", "as published within the spread",
                                                 "faster than published"))
        return (f"This {c.other.gpu} node: {groups}." if groups else "") + _one_sided(c)
    speeds = [r.speedup for r in c.rows if r.speedup]
    ends = dict.fromkeys(fmt(v, "x") for v in (min(speeds), max(speeds))) if speeds else {}
    pace = " to ".join(ends) + " the baseline's TFLOPS per GPU" if speeds else ""
    if not c.prices:
        unpriced = f"No price for {' and '.join(c.unpriced)} ({price_flags(c)})"
        return f"{unpriced}: speed only, {pace}." if pace else f"{unpriced}."
    groups = _by_word(c, lambda r: r.cost, ("cheaper per token", "the same within the spread", "dearer per token"))
    groups = groups or "not priced at any length"
    return f"At these prices {c.other.gpu} is {groups}" + (f"; {pace}." if pace else ".") + _one_sided(c)


def _one_sided(c: Comparison) -> str:
    """' One side only: <why> at 192K; ...' for the lengths only one series has."""
    found = {}
    for r in c.rows:
        if r.missing:
            found.setdefault(r.missing, []).append(seq_label(r.seq_len))
    return " One side only: " + "; ".join(f"{why} at {', '.join(lens)}" for why, lens in found.items()) + "." \
        if found else ""


def _by_word(c: Comparison, get, words: tuple) -> str:
    names = dict(zip((BELOW, WITHIN, ABOVE, UNDECIDED), words + ("undecided",)))
    found = {}
    for r in c.rows:
        got = get(r)
        if got is not None:
            found.setdefault(names[got.word], []).append(seq_label(r.seq_len))
    return "; ".join(f"{name} at {', '.join(lens)}" for name, lens in found.items())


def ignored_words(ignored: list) -> str:
    """'world_size 2 vs 8; WARMUP_STEPS 1, 0 vs 2' from (key, base values, other values)."""
    def values(vs):
        return ", ".join(map(_short, vs)) or "not recorded"
    return "; ".join(f"{k} {values(b)} vs {values(o)}" for k, b, o in ignored)


def unlike_words(c: Comparison) -> str:
    """The ignored keys that make a comparison not like for like, with both values."""
    return ignored_words([i for i in c.ignored if i[0] in c.unlike])


def stack_words(stack: list) -> str:
    """'torch 2.11.0 vs 2.13.0; ...' from (package, base versions, other versions)."""
    return "; ".join(f"{pkg} {' / '.join(b)} vs {' / '.join(o)}" for pkg, b, o in stack)


def title(c: Comparison) -> str:
    if c.kind == HEALTH:
        return f"{c.number}. Health check: this {c.other.gpu} node vs the {c.base.provenance} {c.base.gpu}"
    return f"{c.number}. {c.other.gpu} vs {c.base.gpu}: {c.sources}"


def block_heading(c: Comparison) -> str:
    return f"## {title(c)}" + (f" - ignored: {ignored_words(c.ignored)}" if c.ignored else "")


def verdict_block(c: Comparison, also_in: dict) -> str:
    """The block report.md opens with, one per comparison; the terminal prints it too."""
    b, o = c.base, c.other
    names = ("published", "this node") if c.kind == HEALTH else ("baseline", "candidate")
    words = [series_words(b, also_in), series_words(o, also_in)]
    rows = [[f"**{k}**", words[0][k], words[1][k]] for k in words[0]]
    if c.prices:
        times = f" ({fmt(c.price_ratio, 'x')} the baseline's)" if c.kind != HEALTH else ""
        rows.append(["**price**", f"${c.prices[0]:.2f} per GPU-hour", f"${c.prices[1]:.2f} per GPU-hour{times}"])
    else:
        rows.append(["**price**"] + [f"${usd:.2f} per GPU-hour" if usd else "not given" for usd in c.usd_per_gpu_hour])
    out = [block_heading(c), "", headline(c), "",
           md_table(["", f"{names[0]}: {who(b)}", f"{names[1]}: {who(o)}"], rows), ""]
    if c.unlike:
        out += [f"> **Not like for like** ({unlike_words(c)}): "
                "TFLOPS per GPU is not comparable between these series, and neither is their $/token: "
                "each GPU does different work.", ""]
    if c.stack:
        out += ["> **Software stacks differ** (the stack alone moves results by double-digit percent): "
                + stack_words(c.stack), ""]
    if c.kind == HEALTH and b.backend != o.backend:
        out += [f"> Attention backend differs: {b.backend} (published) vs {o.backend} (this node).", ""]
    if any(s.reference for s in (b, o)):
        out += ["Ranges: the guide publishes whole-number TFLOPS and no step-time spread, so the range "
                "of its figures is only their rounding (a run-to-run spread, which it does not publish, "
                "would be wider); a measured series' range is the spread of its timed steps and runs.", ""]
    out += [points_table(c), ""]
    return "\n".join(out)


def points_table(c: Comparison) -> str:
    b, o = c.base, c.other
    if c.kind == HEALTH:
        return md_table(
            ["seq_len", "published TFLOPS", "this node TFLOPS", "this node / published", "verdict",
             f"{b.gpu} $/1M tokens published", "this node"],
            [[seq_label(r.seq_len), fmt((r.base or {}).get("tflops_per_gpu")),
              fmt((r.other or {}).get("tflops_per_gpu")), _with_range(r.speedup, r.speedup_range),
              speed_words(c, r), fmt(r.base_usd_per_mtok, "usd"), fmt(r.other_usd_per_mtok, "usd")]
             for r in c.rows])
    return md_table(
        ["seq_len", "speedup", f"{b.gpu} $/1M tokens", f"{o.gpu} $/1M tokens",
         f"{o.gpu} per token at these prices", "break-even price ratio"],
        [[seq_label(r.seq_len), _with_range(r.speedup, r.speedup_range), fmt(r.base_usd_per_mtok, "usd"),
          fmt(r.other_usd_per_mtok, "usd"), cost_words(c, r), _with_range(r.break_even, r.break_even_range)]
         for r in c.rows])


def unpaired_markdown(a: Analysis) -> str:
    if not a.unpaired:
        return ""
    return "\n".join(f"- {s.label}: {why}" for s, why in a.unpaired)


def no_comparison_words(a: Analysis) -> str:
    if not a.data.series:
        return "the input holds no training summaries (`summary` records) to compare"
    return "no two series of the same configuration (the series and why are listed below)"


def terminal_text(a: Analysis) -> str:
    """What plot_results.py prints: the same verdict blocks, then the series not compared."""
    out = [f"{fc.label}: {fc.candidate} " + ", ".join(
        f"{seq_label(r.seq_len)} {fmt(r.tflops[0])} TFLOPS/GPU ({fmt(r.tflops[1])}-{fmt(r.tflops[2])})"
        for r in fc.rows) + "\n" for fc in a.forecasts]
    out += [verdict_block(c, a.data.also_in) for c in a.comparisons]
    if not a.comparisons:
        out.append(f"No comparison: {no_comparison_words(a)}.\n")
    lonely = unpaired_markdown(a)
    if lonely:
        out.append("## Series not compared\n\n" + lonely + "\n")
    return "\n".join(out)


# ---------------------------------------------------------------- the guide's tables

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
                     fmt((r.other or {}).get("mfu"), "pct"), fmt(r.speedup, "x"), fmt(c.peak_ratio, "x"),
                     fmt(r.mfu_ratio, "x"), fmt(r.identity, "x"), check, peak_cell(r.base), peak_cell(r.other)])
    table = md_table(["seq_len", "attn FLOP share", f"{b} TFLOPS", f"{o} TFLOPS", f"{b} MFU",
                      f"{o} MFU", "speedup", "peak ratio", "MFU ratio", "peak ratio x MFU ratio",
                      "identity", f"{b} peak GiB", f"{o} peak GiB"], rows)
    mamf = (f"bf16 MAMF ratio of this pair: {fmt(c.mamf_ratio, 'x')} ({who(c.other)} {fmt(c.mamf[1])} / "
            f"{who(c.base)} {fmt(c.mamf[0])}); theoretical peak ratio {fmt(c.peak_ratio, 'x')}."
            if c.mamf_ratio else f"No bf16 MAMF of both sides' GPU and provenance; theoretical peak "
                                 f"ratio {fmt(c.peak_ratio, 'x')}.")
    return "\n\n".join([with_after_others_note(table), mamf])


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


def decomposition_markdown(a: Analysis) -> str:
    out = []
    for p in a.decompositions:
        b, o = column_names(p.base, p.other)
        notes = [f"Ignored: {ignored_words(p.ignored)}." if p.ignored else "",
                 "**Not like for like**: TFLOPS per GPU is not comparable." if p.unlike else "",
                 f"Software stacks differ: {stack_words(p.stack)}." if p.stack else ""]
        note = " ".join(n for n in notes if n)
        out.append(f"**{p.other.label} vs {p.base.label}**" + (f" {note}" if note else "") + "\n\n" + md_table(
            ["seq_len", "bucket", f"{b} TFLOPS", f"{o} TFLOPS", f"{b} ms", f"{o} ms",
             f"{b} time share", f"{o} time share", "speedup"],
            [[seq_label(r["seq_len"]), r["bucket"], fmt(r["base_tflops"]), fmt(r["other_tflops"]),
              fmt(r["base_ms"]), fmt(r["other_ms"]), fmt(r["base_share"], "pct"),
              fmt(r["other_share"], "pct"), fmt(r["speedup"], "x")] for r in p.rows]))
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
    from .capability_table import capability_table

    by_gpu = {g: a.data.gpus[g].capabilities for g in a.order if a.data.gpus[g].capabilities}
    return capability_table(by_gpu).strip() if by_gpu else ""


def series_markdown(a: Analysis) -> str:
    rows = []
    for s in a.data.series:
        words = series_words(s, a.data.also_in)
        rows.append([s.label, "sweep" if s.is_sweep else "decomposition",
                     ", ".join(seq_label(n) for n in sorted(set(s.points) | set(s.decompositions))) or "-",
                     words["configuration"], words["software"], words["source"], words["notes"]])
    return md_table(["series", "records", "points", "configuration", "software", "source", "notes"], rows)


def inputs_markdown(a: Analysis, inputs, tally) -> str:
    lines = [f"Read {len(inputs)} log file(s); baseline GPU: **{a.baseline}**."]
    if tally is not None:
        if tally.duplicates:
            lines.append(f"{sum(tally.duplicates.values())} record(s) found again in another log "
                         "(the same run_id, kind and content) were counted once: "
                         + ", ".join(f"{src}: {n}" for src, n in tally.duplicates.items()) + ".")
        if tally.skipped_total():
            lines.append(f"Skipped {tally.skipped_total()} malformed line(s) or record(s):")
            lines += [f"- {line}" for line in tally.skipped_lines()]
    if a.data.orphans:
        lines.append(f"{a.data.orphans} record(s) had no header (GPU unknown).")
    for run_id, names in a.data.conflicts.items():
        lines.append(f"Run id {md_cell(run_id)} has headers of different GPUs ({md_cell(', '.join(names))}): "
                     f"each record was joined to the header of its own file, none to a guess.")
    if any(s.reference for s in a.data.series):
        lines.append(f"Series marked *({GUIDE_LABEL})* are the guide's published figures fed through "
                     "this pipeline (Machine Learning Engineering Open Book, insights/when-to-upgrade-gpus), "
                     "not measurements of this suite.")
    return "\n\n".join(lines)


def render(a: Analysis, figures=(), inputs=(), tally=None) -> str:
    """report.md: the verdict blocks first, then the unpaired series, figures and tables."""
    out = ["# GPU upgrade report", ""]
    prices = ", ".join(f"{g} ${usd:.2f}" for g, usd in a.prices.items())
    out += [f"Prices per GPU-hour: {prices}." if prices else
            "No prices given (--price GPU=USD_PER_GPU_HOUR): speed only, no $/token verdicts.", ""]
    if tally is not None and tally.skipped_total():
        out += [f"**Skipped {tally.skipped_total()} malformed line(s) or record(s)** while reading (see Inputs): "
                "what they held is missing from the verdicts below.", ""]
    if a.forecasts:
        out += ["## Forecasts (not measured)", ""] + [forecast_markdown(fc) + "\n" for fc in a.forecasts]
    if not a.comparisons:
        out += [f"**No comparison**: {no_comparison_words(a)}.", ""]
    out += [verdict_block(c, a.data.also_in) for c in a.comparisons]
    lonely = unpaired_markdown(a)
    if lonely:
        out += ["## Series not compared", "", lonely, ""]
    if a.mixed_stacks:
        out += ["## Series that mix software stacks", ""] + [
            f"- {s.label}: {stack_words(d)}" for s, d in a.mixed_stacks] + [""]
    if figures:
        out += ["## Figures", ""] + [f"![{path}]({path})\n" for path in figures]
    for c in a.comparisons:
        out += [f"## Details of {title(c)}", "",
                "The identity column checks the guide's `speedup ~= peak ratio x MFU ratio`.", "",
                details_markdown(c), ""]
    sections = [("Series", series_markdown(a) if a.data.series else ""),
                ("Attention share per workload", workload_markdown(a.data.series)),
                ("Capabilities", capability_markdown(a)),
                ("Peak memory vs sequence length", memory_markdown(a)),
                ("Step decomposition", decomposition_markdown(a)),
                ("Isolated attention kernels", attention_markdown(a)),
                ("MAMF (maximum achievable matmul FLOPS)", mamf_markdown(a)),
                ("Telemetry", telemetry_markdown(a))]
    for heading, text in sections:
        if text:
            out += [f"## {heading}", "", text, ""]
    if a.data.failures:
        out += ["## Failures without a sequence length", ""]
        out += [f"- {s.label}: {r.get('error')}: {r.get('message')}" for s, r in a.data.failures] + [""]
    out += ["## Inputs", "", inputs_markdown(a, inputs, tally), ""]
    return "\n".join(out)

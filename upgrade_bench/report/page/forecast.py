"""A forecast's block on the page: its table, how sure it is, where each ratio came from, and the
reconfigured forecast's table (the figures are forecast/series.py's and forecast/reconfig.py's)."""
from ..forecast import model as forecast_model, reconfig as forecast_reconfig
from ..forecast.series import Beyond, SeriesForecast
from ...hardware import gpus
from ..read.series import seq_label
from ..text.tables import fmt, md_table

COST_WORDS = {"below": "cheaper", "above": "dearer", "within": "cannot tell (the range spans even)"}


def sources_words(sources: dict) -> str:
    """'source (note; note) / source' of one bound's {source: {note: None}}."""
    return " / ".join(src + (f" ({'; '.join(n for n in notes if n)})" if any(notes) else "")
                      for src, notes in sources.items())


def _span(values: tuple, kind: str) -> str:
    """'1.87x (1.54x-1.98x)' of a (mid, low, high)."""
    return f"{fmt(values[0], kind)} ({fmt(values[1], kind)}-{fmt(values[2], kind)})"


def price_words(fc: SeriesForecast) -> str:
    """The prices a forecast's $/token used, or which are missing."""
    (base, cand), gpus_ = fc.prices, (fc.base.gpu, fc.candidate)
    given = [f"{g} ${usd:.2f}" for g, usd in zip(gpus_, (base, cand)) if usd]
    missing = [g for g, usd in zip(gpus_, (base, cand)) if not usd]
    return ("at " + " and ".join(given) + " per GPU-hour" if given else "") + \
        (f"{'; ' if given else ''}no price for {' and '.join(missing)}: no $/token call" if missing else "")


def forecast_markdown(fc: SeriesForecast) -> str:
    """One series' forecast block: the table, the kinds it was calibrated on and how often such
    ranges held, where each ratio came from, what it cannot see."""
    rows = []
    for r in fc.rows:
        usd = (f"{fmt(r.usd_per_mtok[0], 'usd')} ({fmt(r.usd_per_mtok[2], 'usd')}-{fmt(r.usd_per_mtok[1], 'usd')})"
               if r.usd_per_mtok else "-")
        fits = "-" if r.fits is None else ("fits" if r.fits else f"{fmt(r.peak_mem_gib)} GiB > HBM")
        rows.append([seq_label(r.seq_len), r.calibration.kind, fmt(r.step_ms),
                     f"{fmt(r.forecast.step_ms)} ({fmt(r.forecast.step_ms_fast)}-{fmt(r.forecast.step_ms_slow)})",
                     _span(r.tflops, "num"), _span(r.speedup, "x"), fmt(r.base_usd_per_mtok, "usd"), usd,
                     COST_WORDS.get(r.cost_call.word, r.cost_call.word) if r.cost_call else
                     "no call: does not fit" if r.fits is False else "-",
                     _span(r.break_even_usd, "usd") if r.break_even_usd else "-", fits, fmt(r.measured_tflops),
                     fmt(r.healthy_tflops), f"{r.ceiling:.2f}x" if r.ceiling else "-", r.forecast.how])
    measured = f"{fc.candidate} measured TFLOPS" + (" (another configuration)" if fc.measured_differs else "")
    lines = [f"**{fc.label}**: {fc.candidate} for this series' own configuration and node, {price_words(fc)}. "
             "Each row: the model's forecast, the candidate at the same share of its reference as this node "
             "reached, ranged by the misses of published pairs of its group (pair class and step kind; leave one "
             "source out in the backtest), no end above what the candidate's hardware can give the step "
             "(its ceiling).", "",
             md_table(["seq_len", "kind", f"{fc.base.gpu} step ms (measured)", f"{fc.candidate} step ms (forecast)",
                       "TFLOPS/GPU (forecast)", "speedup (forecast)", f"{fc.base.gpu} $/1M tokens (measured)",
                       f"{fc.candidate} $/1M tokens (forecast)", "$/token call",
                       f"{fc.candidate} pays off below (per GPU-hour)", f"memory on {fc.candidate}", measured,
                       "TFLOPS/GPU of a healthy candidate", "ceiling", "split"], rows), ""]
    if fc.reconfigured:
        lines += ["", reconfigured_markdown(fc), ""]
    lines += [f"How sure, {kind}: {cal.words()}." for kind, cal in
              {r.calibration.kind: r.calibration for r in fc.rows}.items()]
    if fc.node and fc.node.share:
        lines.append(f"Like node: this node's MAMF reached {fc.node.share:.1%} of its reference, and the candidate "
                     "is assumed at the same share; the healthy-candidate column is one at its full reference"
                     + (" (this node's GEMMs ran power-bound: the candidate's extra watts, if any, buy clock)"
                        if fc.node.power_bound else "") + ".")
    if fc.measured_differs:
        lines.append(f"The {measured} column is another configuration, paired by --ignore-config "
                     f"({fc.measured_differs}): not the workload this forecast is for.")
    lines.append(f"Platform: {forecast_model.platform_words(gpus.lookup(fc.base.gpu))} -> "
                 f"{forecast_model.platform_words(gpus.lookup(fc.candidate))} (hardware/gpus.py, each figure cited).")
    lines.append("Ratios: " + "; ".join(f"{b}: {sources_words(srcs)}" for b, srcs in sorted(fc.ratio_sources.items()))
                 + ".")
    for b in fc.beyond:
        lines.append(f"At {seq_label(b.seq_len)} the baseline ran out of memory; it needs {need_words(b)} per GPU "
                     f"({b.how}), {fit_words(b, fc.candidate, fc.hbm_gib)} (a memory estimate, no step time).")
    host = forecast_model.host_change(gpus.lookup(fc.base.gpu), gpus.lookup(fc.candidate))
    lines.append("Blind spots: kernels that change between GPUs (another attention backend, beta kernels), "
                 "a young cuBLAS, and host CPUs that differ (host time is carried over unchanged)"
                 + (f"; the host CPU changes here: {host}" if host else "") + ".")
    return "\n".join(lines)


def need_words(b: Beyond) -> str:
    """'about 84.1 GiB', or 'at least 62.6 GiB' where the estimate is a floor."""
    return f"{'at least' if b.floor else 'about'} {fmt(b.gib)} GiB"


def fit_words(b: Beyond, candidate: str, hbm_gib: float) -> str:
    """Whether the candidate's HBM holds what a length the baseline could not run needs, by estimate."""
    if b.fits is None:
        return f"within the {candidate}'s {hbm_gib:g} GiB HBM, but a floor says nothing of fitting"
    return f"{'within' if b.fits else 'more than'} the {candidate}'s {hbm_gib:g} GiB HBM" + (
        "" if b.fits else ": it would not fit there either")


def reconfigured_markdown(fc: SeriesForecast) -> str:
    """The reconfigured forecast's table: per length, what the candidate's memory lets the
    workload change, its memory estimate, and the forecast of that configuration."""
    base, cand = gpus.lookup(fc.base.gpu), gpus.lookup(fc.candidate)
    rows = [[seq_label(r.seq_len), r.plan.label, fmt(r.plan.peak_gib),
             "yes: a change the baseline could make too" if r.fits_baseline else "no",
             _span(r.tflops, "num"), _span(r.speedup, "x"), r.memory_how] for r in fc.reconfigured]
    return (f"**Reconfigured {fc.label}**: configurations planned from this series' own, or measured on the "
            f"{base.name} for the same workload, whose memory fits within "
            f"{forecast_reconfig.MEMORY_HEADROOM:.0%} of the {cand.name}'s {cand.hbm_gib:g} GiB, "
            "the one with the most tokens a second at each length where it beats the like-for-like forecast.\n\n"
            + md_table(["seq_len", "what it changed", "memory estimate per GPU (GiB)",
                        f"fits the {base.name}'s {base.hbm_gib:g} GiB too", "TFLOPS/GPU (forecast)",
                        f"tokens/s over the {base.name} as measured (forecast)", "memory estimate from"], rows))

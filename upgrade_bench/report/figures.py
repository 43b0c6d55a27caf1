"""The report's overview figures, drawn from a comparisons.Analysis as PNG: upgrade.png
(every sweep series, and every forecast beside the series it was made from),
attention.png and decomposition.png (only when those records exist);
write_all writes them with comparison_figure.py's one per comparison. Every series has its
own colour; provenance is the line style (plotkit.py). Where the series do different work
per GPU (GPU count, model cut, ...) the legend opens by saying so. Each draw_* returns the
Figure, so tests can measure its text.
"""
import os

from .comparison_figure import draw_comparison
from .comparisons import Analysis, usd_per_mtok_by_length
from .decompositions import decomposed, decomposition_parts
from .isolated_attention import ATTENTION_SHAPE
from .plotkit import (BAR_ROW_IN, DPI, FORECAST_HATCH, FORECAST_LINE, MARKERS, PALETTE, colours, figure_legend,
                      finish, from_zero, panel_grid, plot_line, plt, save, seq_axis)
from .series import seq_label
from .words import unlike_across


def draw_overview(a: Analysis):
    """Every sweep series on shared axes: TFLOPS per GPU, peak memory (where recorded), $/1M
    tokens (where priced); and every forecast, dotted over its hatched range, beside the
    series it was made from."""
    shown = [s for s in a.data.series if s.points]
    if not shown:
        return None
    col = colours([s for s in a.data.series if s.is_sweep])
    # A model cut to a few layers makes tokens far cheaper than the whole model would:
    # its $/token is no price of training that model, so it stays off this panel.
    priced = [s for s in shown if s.gpu in a.prices and not s.config.get("NUM_LAYERS")]
    memory = any(p.get("peak_mem_gib") is not None for s in shown for p in s.points.values())
    panels = [_throughput_panel] + ([_memory_panel] if memory else []) + ([_money_panel] if priced else [])
    fig, axes = panel_grid(len(panels), "All series (each its own colour; published dashed"
                           + ("; forecasts dotted over a hatched range" if a.forecasts else "") + ")")
    for ax, draw in zip(axes, panels):
        seq_axis(ax, draw(ax, a, shown, col, priced))
    from_zero(axes)
    finish(fig, figure_legend(fig, axes[:1], ncol=2, chars=80, note=unlike_across(shown)))
    return fig


def _series_lines(ax, shown: list, col: dict, field: str) -> list:
    """Each shown series' `field` against sequence length; the lengths drawn."""
    lens = []
    for i, s in enumerate(shown):
        lens += plot_line(ax, s, col[id(s)], i, [(n, p.get(field)) for n, p in s.points.items()], s.label)
    return lens


RANGE_KEY = ("forecast range (hatched): 90% of the misses on published pairs of its group,\n"
             "  around the forecast corrected by their median")


def _throughput_panel(ax, a: Analysis, shown: list, col: dict, priced: list) -> list:
    lens = _series_lines(ax, shown, col, "tflops_per_gpu")
    for fc in a.forecasts:
        lens += forecast_line(ax, fc, col[id(fc.base)], [(r.seq_len, r.tflops) for r in fc.rows])
    if a.forecasts:  # one legend key for every range, in no series' colour
        ax.fill_between([], [], facecolor="none", edgecolor="grey", hatch=FORECAST_HATCH, linewidth=0.0,
                        label=RANGE_KEY)
    ax.set(ylabel="model TFLOPS per GPU", title="Training throughput per GPU")
    return lens


def _memory_panel(ax, a: Analysis, shown: list, col: dict, priced: list) -> list:
    lens = _series_lines(ax, shown, col, "peak_mem_gib")
    for g in a.order:
        gpu = a.data.gpus[g]
        if gpu.hbm_gib and any(s.gpu == g for s in shown):
            ax.axhline(gpu.hbm_gib, color="grey", linestyle=":", linewidth=1)
            ax.annotate(f"{g} HBM {gpu.hbm_gib:g} GiB", (0.01, gpu.hbm_gib),
                        xycoords=("axes fraction", "data"), fontsize=7, color="grey", va="bottom")
    ax.set(ylabel="peak memory per GPU (GiB)", title="Peak memory")
    return lens


def _money_panel(ax, a: Analysis, shown: list, col: dict, priced: list) -> list:
    lens = []
    for i, s in enumerate(shown):
        if s in priced:
            lens += plot_line(ax, s, col[id(s)], i, list(usd_per_mtok_by_length(s, a.prices[s.gpu]).items()), s.label)
    for fc in a.forecasts:
        if any(fc.base is s for s in priced):
            lens += forecast_line(ax, fc, col[id(fc.base)], [(r.seq_len, r.usd_per_mtok) for r in fc.rows])
    ax.set(ylabel="$ per 1M tokens (per GPU)", title="$/1M tokens at "
           + ", ".join(f"{g} ${u:.2f}" for g, u in a.prices.items()) + " (whole models)")
    ax.title.set_fontsize(10)
    return lens


def forecast_line(ax, fc, colour: str, points: list) -> list:
    """A forecast's (seq_len, (mid, low, high)) points: its mid dotted in the colour of the
    series it was made from, its range hatched; returns the lengths drawn."""
    points = [(n, v) for n, v in points if v is not None]
    if not points:
        return []
    lens = [n for n, _ in points]
    ax.plot(lens, [v[0] for _, v in points], color=colour, label=f"{fc.candidate} {fc.label}", **FORECAST_LINE)
    ax.fill_between(lens, [min(v[1:]) for _, v in points], [max(v[1:]) for _, v in points], facecolor="none",
                    edgecolor=colour, hatch=FORECAST_HATCH, linewidth=0.0, alpha=0.6)
    return lens


def draw_attention(a: Analysis):
    """Isolated attention TFLOPS per backend vs sequence length, one panel per pass/shape."""
    groups = list(a.attention.items())
    if not groups:
        return None
    lines = list(dict.fromkeys(line for _, (by_line, _) in groups for line in by_line))
    col = {line: PALETTE[i % len(PALETTE)] for i, line in enumerate(lines)}
    fig, axes = panel_grid(len(groups), "Isolated attention kernels", cols=min(3, len(groups)))
    for ax, ((pass_, shape), (by_line, _)) in zip(axes, groups):
        lens = []
        for (gpu, backend, tag), pts in by_line.items():
            ax.plot(list(pts), list(pts.values()), color=col[gpu, backend, tag],
                    marker=MARKERS[lines.index((gpu, backend, tag)) % len(MARKERS)],
                    linestyle="--" if tag else "-", label=f"{gpu} {backend}" + (f" ({tag})" if tag else ""))
            lens += list(pts)
        seq_axis(ax, lens)
        ax.set_ylabel("attention TFLOPS")
        f = dict(zip(ATTENTION_SHAPE, shape))
        extra = "".join(f", {k} {f[k]}" for k in ("layer", "window", "sinks") if f.get(k))
        ax.set_title(f"{pass_}: heads {f['heads']}/{f['kv_heads']}, d {f['head_dim']}, causal {f['causal']}"
                     + extra, fontsize=10)
    from_zero(axes)
    finish(fig, figure_legend(fig, axes, ncol=min(4, len(lines)), chars=40))
    return fig


def draw_decomposition(a: Analysis):
    """TFLOPS per part of the step (attention, gemm, other, everything else, total) per
    series, as horizontal bars labelled with TFLOPS and milliseconds; one panel per length."""
    series, named = decomposed(a.data.series)
    lens = sorted({n for s in series for n in s.decompositions})
    if not lens:
        return None
    col = colours(series)
    bars = max(sum(len(decomposition_parts(s.decompositions[n])) for s in series if n in s.decompositions)
               for n in lens)
    fig, axes = plt.subplots(1, len(lens), dpi=DPI, squeeze=False,
                             figsize=(9.0 * len(lens), BAR_ROW_IN * bars + 1.2))
    for ax, n in zip(axes[0], lens):
        here = [s for s in series if n in s.decompositions]
        # Parts with TFLOPS only: `other` (norms, optimizer, ...) has time but no FLOPs.
        parts = list(dict.fromkeys(p for s in here for p, got in decomposition_parts(s.decompositions[n]).items()
                                   if got.get("tflops") is not None))
        y, ticks, top = 0.0, [], 0.0
        for part in parts:
            start = y
            for s in here:
                got = decomposition_parts(s.decompositions[n]).get(part)
                if not got or got.get("tflops") is None:
                    continue
                ax.barh(y, got["tflops"], height=0.8, color=col[id(s)], hatch="//" if s.reference else None,
                        alpha=0.6 if s.reference else 1.0, label=named[id(s)])
                ms = f", {got['ms']:.0f} ms" if got.get("ms") is not None else ""
                ax.text(got["tflops"], y, f" {got['tflops']:.0f} TFLOPS{ms}", va="center", fontsize=7)
                top = max(top, got["tflops"])
                y += 1
            ticks.append(((start + y - 1) / 2, part))
            y += 0.6
        ax.set_yticks([t for t, _ in ticks])
        ax.set_yticklabels([p for _, p in ticks])
        ax.invert_yaxis()
        ax.set_xlim(0, top * 1.35)   # room for the labels right of the longest bar
        ax.set_xlabel("TFLOPS")
        ax.set_title(f"Step decomposition at {seq_label(n)} (one clock; hatched: published)")
        ax.grid(True, axis="x", alpha=0.3)
    finish(fig, figure_legend(fig, axes[0], ncol=1, chars=110, note=unlike_across(series)))
    return fig


def write_all(a: Analysis, out_dir: str, opener=open) -> list:
    """Every figure the records allow, each file opened by `opener` (staged.Staged.open keeps
    them under temporary names until the whole report is written); returns their names."""
    written = []
    for c in a.comparisons:
        written.append(save(draw_comparison(c, a), os.path.join(out_dir, f"comparison-{c.number}.png"), opener))
    for name, draw in (("upgrade.png", draw_overview), ("attention.png", draw_attention),
                       ("decomposition.png", draw_decomposition)):
        fig = draw(a)
        if fig is not None:
            written.append(save(fig, os.path.join(out_dir, name), opener))
    return written

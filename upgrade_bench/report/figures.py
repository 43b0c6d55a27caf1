"""The report's figures, drawn from a comparisons.Analysis as PNG (matplotlib, Agg backend).

comparison-N.png, one per comparison: the guide's 2x2 (TFLOPS per GPU; speedup with its
range and the pair's own peak-ratio and MAMF-ratio lines; attention FLOP share; peak memory
against each GPU's HBM, with capacity ceilings and OOMs) plus $/1M tokens at the user's
prices (tokens/s per GPU without prices), and a panel naming the series. upgrade.png is the
overview of every sweep series; attention.png and decomposition.png exist only when those
records do. Every series has its own colour; provenance is the line style (measured solid,
published dashed with open markers). A panel without data is not drawn. Each draw_* returns
the Figure, so tests can measure its text.
"""
import math
import os
import textwrap

import matplotlib

matplotlib.use("Agg")
# Labels carry prices ("$3.50") and strings from the logs: '$' is a dollar, never TeX
# (two of them made matplotlib typeset the text between; an unknown TeX command raised).
matplotlib.rcParams["text.parse_math"] = False
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.ticker import NullLocator  # noqa: E402

from .comparisons import ATTENTION_SHAPE, HEALTH, Analysis, Comparison, capacity_of, decomposition_parts, usd_per_mtok_by_length
from .markdown import ignored_words, stack_words, title
from .series import labels, seq_label

DPI = 100
PANEL_IN = (5.3, 3.9)              # one panel of a comparison or the overview
LEGEND_FONT = 8
TICK_FONT = 8
SEQ_AXIS = "sequence length (tokens)"
NOTE_CHARS = 60                    # wrap width of a comparison's notes (8 pt in a 5 in panel)
BAR_ROW_IN = 0.26                  # one bar of decomposition.png
# Distinct colours, one per series (matplotlib's tab10 without its grey, which marks
# reference lines here, then darker extras; black is the MAMF line).
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#bcbd22", "#5b3a00", "#00577a", "#7a0057"]
MARKERS = "osD^vP*Xh<>"


def colours(series: list) -> dict:
    """{id(series): colour}; the same series has the same colour in every figure."""
    return {id(s): PALETTE[i % len(PALETTE)] for i, s in enumerate(series)}


def style(s, colour: str, index: int = 0, under: bool = False) -> dict:
    """Line style of a series: its colour; solid filled for measured, dashed open for published.
    `under`: wide and pale, for a baseline beneath its candidate, so that where the two agree
    (the attention share of one model, the memory of one sharding) both stay visible."""
    wide = {"linewidth": 4.0, "alpha": 0.45, "markersize": 9} if under else {}
    return {"color": colour, "marker": MARKERS[index % len(MARKERS)], **wide,
            "linestyle": "--" if s.reference else "-", "markerfacecolor": "none" if s.reference else colour}


def short_name(s) -> str:
    return f"{s.gpu} {s.backend}, {s.provenance}"


def spaced_labels(centres_px: list, widths_px: list, gap_px: float = 3.0, preferred=None) -> list[bool]:
    """Which tick labels to print, from their centres and widths in pixels, none touching
    another within `gap_px`: the `preferred` ones first (the powers of two a buyer reads:
    256K before a capacity point at 272K beside it), left to right, then the others where
    they still fit. Without `preferred`, left to right and the last label always, in place of
    those it would touch."""
    n = len(centres_px)
    if preferred is None:
        keep, last = [], None
        for x, w in zip(centres_px, widths_px):
            fits = last is None or x - w / 2 >= last + gap_px
            keep.append(fits)
            last = x + w / 2 if fits else last
        if keep and not keep[-1]:
            keep[-1], left = True, centres_px[-1] - widths_px[-1] / 2
            for i in range(len(keep) - 2, -1, -1):
                if keep[i] and centres_px[i] + widths_px[i] / 2 + gap_px > left:
                    keep[i] = False
        return keep
    keep = [False] * n

    def clear(i):
        return all(abs(centres_px[i] - centres_px[j]) >= (widths_px[i] + widths_px[j]) / 2 + gap_px
                   for j in range(n) if keep[j])

    for first in (True, False):
        for i in range(n):
            if bool(preferred[i]) == first and clear(i):
                keep[i] = True
    return keep


def _seq_axis(ax, lens) -> None:
    """A log2 axis of sequence lengths, every length a tick (labelled by _label_ticks)."""
    lens = sorted(set(lens))
    if len(lens) > 1:
        ax.set_xscale("log", base=2)
    ax.set_xticks(lens)
    ax.set_xticklabels([seq_label(n) for n in lens], fontsize=TICK_FONT)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(SEQ_AXIS)
    ax.grid(True, alpha=0.3)


def _label_ticks(fig) -> None:
    """Once the layout is final: blank the length labels that would touch another."""
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        if ax.get_xlabel() != SEQ_AXIS:
            continue
        labels = ax.get_xticklabels()
        lens = ax.get_xticks()
        centres = [ax.transData.transform((n, ax.get_ylim()[0]))[0] for n in lens]
        widths = [label.get_window_extent(renderer).width for label in labels]
        keep = spaced_labels(centres, widths, preferred=[n > 0 and int(n) & (int(n) - 1) == 0 for n in lens])
        ax.set_xticklabels([label.get_text() if k else "" for label, k in zip(labels, keep)], fontsize=TICK_FONT)


def _from_zero(axes) -> None:
    """Amounts (TFLOPS, $/token, shares, GiB) on a y axis from zero, so that a gap looks as
    large as it is, and 5% above the highest line; once everything is drawn, as a limit
    stops autoscaling."""
    for ax in axes:
        top = ax.dataLim.y1
        ax.set_ylim(0, top * 1.05 if math.isfinite(top) and top > 0 else None)


def _wrap(text: str, chars: int) -> str:
    return "\n".join(textwrap.fill(line, chars, subsequent_indent="  ") for line in text.split("\n"))


def _grid(n_panels: int, title: str, cols: int = 3):
    """A figure of n panels in rows of `cols`; the unused slots removed."""
    rows = -(-n_panels // cols)
    fig, axes = plt.subplots(rows, cols, dpi=DPI, squeeze=False,
                             figsize=(PANEL_IN[0] * cols, PANEL_IN[1] * rows + 0.6))
    flat = list(axes.flat)
    for ax in flat[n_panels:]:
        ax.remove()
    fig.suptitle(title, fontsize=12)
    return fig, flat[:n_panels]


def _line(ax, s, colour, index, points: list, label: str, under: bool = False) -> list:
    """Plot (seq_len, value) points of a series; returns the lengths drawn."""
    points = [(n, v) for n, v in points if v is not None]
    if points:
        ax.plot([n for n, _ in points], [v for _, v in points], label=label, **style(s, colour, index, under))
    return [n for n, _ in points]


# ---------------------------------------------------------------- panels of a comparison

def _series_panel(ax, c: Comparison, col: dict, value, scale=1.0):
    lens = []
    for i, s in enumerate((c.base, c.other)):
        lens += _line(ax, s, col[id(s)], i, [(n, p.get(value) * scale if p.get(value) is not None else None)
                                             for n, p in s.points.items()], short_name(s), under=i == 0)
    return lens


def _speedup_panel(ax, c: Comparison, col: dict) -> list:
    rows = [r for r in c.rows if r.speedup]
    xs, ys = [r.seq_len for r in rows], [r.speedup for r in rows]
    low = [r.speedup - r.speedup_range[0] if r.speedup_range else 0.0 for r in rows]
    high = [r.speedup_range[1] - r.speedup if r.speedup_range else 0.0 for r in rows]
    published = c.base.reference and c.other.reference
    ratio_name = "this node / published" if c.kind == HEALTH else f"{c.other.gpu} / {c.base.gpu} ({c.sources})"
    ax.errorbar(xs, ys, yerr=[low, high], color=col[id(c.other)], marker="o", capsize=4,
                linestyle="--" if published else "-", markerfacecolor="none" if published else None,
                label=f"{ratio_name}, with its range")
    bare = [r for r in rows if not r.speedup_range]
    if bare:  # a point without a range would look as exact as the others
        ax.plot([r.seq_len for r in bare], [r.speedup for r in bare], linestyle="none", marker="o", markersize=13,
                markerfacecolor="none", markeredgecolor="black", label="no range: cannot decide")
    if c.kind == HEALTH:
        ax.axhline(1.0, color="grey", linestyle=":", label="as published (1.00x)")
    elif c.peak_ratio:
        ax.axhline(c.peak_ratio, color="grey", linestyle=":", label=f"theoretical peak ratio {c.peak_ratio:.2f}x")
    if c.mamf_ratio:
        ax.axhline(c.mamf_ratio, color="black", linestyle="-.", linewidth=1,
                   label=f"bf16 MAMF ratio {c.mamf_ratio:.2f}x ({c.other.provenance} / {c.base.provenance})")
    ax.set_ylabel("this node / published" if c.kind == HEALTH else f"speedup over {c.base.gpu}")
    ax.set_title("This node / published (TFLOPS per GPU)" if c.kind == HEALTH else "Speedup (TFLOPS per GPU ratio)")
    return xs


def _money_panel(ax, c: Comparison, col: dict) -> list:
    lens = []
    if c.prices:
        for i, (s, key) in enumerate(((c.base, "base_usd_per_mtok"), (c.other, "other_usd_per_mtok"))):
            lens += _line(ax, s, col[id(s)], i, [(r.seq_len, getattr(r, key)) for r in c.rows], short_name(s),
                          under=i == 0)
        ax.set_ylabel("$ per 1M tokens (per GPU)")
        prices = ", ".join(f"{gpu} ${usd:.2f}" for gpu, usd in dict(zip((c.base.gpu, c.other.gpu), c.prices)).items())
        ax.set_title(f"$/1M tokens at {prices} per GPU-hour", fontsize=10)
    else:
        lens = _series_panel(ax, c, col, "tokens_per_s_per_gpu")
        ax.set_ylabel("tokens/s per GPU")
        ax.set_title("Throughput (no --price given)")
    return lens


def _memory_panel(ax, c: Comparison, col: dict, gpu_map: dict) -> list:
    lens = _series_panel(ax, c, col, "peak_mem_gib")
    hbm = {}
    for s in (c.base, c.other):
        if s.hbm_gib:
            hbm.setdefault(s.gpu, (col[id(s)], set()))[1].add(s.hbm_gib)
    for gpu, (colour, values) in hbm.items():
        ax.axhline(max(values), color=colour, linestyle=":",
                   label=f"{gpu} HBM " + " / ".join(f"{v:g}" for v in sorted(values)) + " GiB")
    for s in (c.base, c.other):
        for cap in capacity_of(s, gpu_map[s.gpu]):
            fit, peak = cap.get("max_fit_seq_len"), cap.get("peak_mem_gib_at_max")
            if fit and peak is not None:
                ax.plot([fit], [peak], marker="*", markersize=13, linestyle="none", color=col[id(s)],
                        label=f"{s.gpu} ({s.provenance}) max fit {seq_label(fit)}")
                lens.append(fit)
        ooms = [n for n, e in s.errors.items() if e.get("error") == "oom" and n not in s.points]
        if ooms and s.hbm_gib:
            ax.plot(ooms, [s.hbm_gib] * len(ooms), marker="x", markersize=10, linestyle="none",
                    color=col[id(s)], label=f"{s.gpu} ({s.provenance}) OOM")
            lens += ooms
    ax.set_ylabel("peak memory per GPU (GiB)")
    ax.set_title("Peak memory vs HBM")
    return lens


def _notes(c: Comparison) -> str:
    lines = [f"Ignored (--ignore-config): {ignored_words(c.ignored)}" if c.ignored else "",
             f"NOT LIKE FOR LIKE ({', '.join(c.unlike)} differs): TFLOPS per GPU not comparable"
             if c.unlike else "",
             f"Software stacks differ: {stack_words(c.stack)}" if c.stack else ""]
    return _wrap("\n".join(line for line in lines if line), NOTE_CHARS)


def _legend_panel(ax, fig_axes, c: Comparison) -> None:
    """The last panel names every line of the figure (once) and the comparison's warnings."""
    ax.axis("off")
    entries = {}
    for other in fig_axes:
        for handle, label in zip(*other.get_legend_handles_labels()):
            entries.setdefault(_wrap(label, NOTE_CHARS), handle)
    ax.legend(list(entries.values()), list(entries), loc="upper left", fontsize=LEGEND_FONT,
              frameon=False, borderaxespad=0)
    note = _notes(c)
    if note:
        ax.text(0, 0, note, transform=ax.transAxes, va="bottom", fontsize=LEGEND_FONT, color="firebrick")


def _tflops_panel(ax, c: Comparison, col: dict) -> list:
    lens = _series_panel(ax, c, col, "tflops_per_gpu")
    ax.set(ylabel="model TFLOPS per GPU", title="Training throughput per GPU")
    return lens


def _share_panel(ax, c: Comparison, col: dict) -> list:
    lens = _series_panel(ax, c, col, "attn_flop_share", 100.0)
    ax.set(ylabel="attention share of model FLOPs (%)", title="Attention FLOP share")
    return lens


def _has(c: Comparison, field: str) -> bool:
    return any(p.get(field) is not None for s in (c.base, c.other) for p in s.points.values())


def draw_comparison(c: Comparison, a: Analysis):
    """The figure of one comparison: the guide's 2x2, $/1M tokens, and the names of its lines."""
    col = colours([s for s in a.data.series if s.is_sweep])
    panels = [(_tflops_panel, _has(c, "tflops_per_gpu")),
              (_speedup_panel, any(r.speedup for r in c.rows)),
              (_money_panel, any(r.base_usd_per_mtok or r.other_usd_per_mtok for r in c.rows) if c.prices
               else _has(c, "tokens_per_s_per_gpu")),
              (_share_panel, _has(c, "attn_flop_share")),
              (lambda ax, c, col: _memory_panel(ax, c, col, a.data.gpus), _has(c, "peak_mem_gib"))]
    drawn = [draw for draw, has in panels if has]
    fig, axes = _grid(len(drawn) + 1, title(c))
    for ax, draw in zip(axes, drawn):
        _seq_axis(ax, draw(ax, c, col))
    _legend_panel(axes[-1], axes[:-1], c)
    _from_zero([ax for ax, draw in zip(axes, drawn) if draw is not _speedup_panel])  # a ratio
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    _label_ticks(fig)
    return fig


# ---------------------------------------------------------------- overview and the others

def _figure_legend(fig, axes, ncol: int, chars: int) -> float:
    """One legend below all panels; returns its height in inches."""
    entries = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(_wrap(label, chars), handle)
    if not entries:
        return 0.0
    legend = fig.legend(list(entries.values()), list(entries), loc="lower center", ncol=ncol,
                        fontsize=LEGEND_FONT, frameon=False)
    return legend.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi + 0.1


def _finish(fig, legend_in: float) -> None:
    """Grow the figure by the legend's height and lay the panels out above it."""
    height = fig.get_figheight()
    fig.set_figheight(height + legend_in)
    fig.tight_layout(rect=(0, legend_in / (height + legend_in), 1, 0.95))
    _label_ticks(fig)


def draw_overview(a: Analysis):
    """Every sweep series on shared axes: TFLOPS per GPU, peak memory, $/1M tokens."""
    shown = [s for s in a.data.series if s.points]
    if not shown:
        return None
    col = colours([s for s in a.data.series if s.is_sweep])
    # A model cut to a few layers makes tokens far cheaper than the whole model would:
    # its $/token is no price of training that model, so it stays off this panel.
    priced = [s for s in shown if s.gpu in a.prices and not s.config.get("NUM_LAYERS")]
    fig, axes = _grid(3 if priced else 2, "All series (each its own colour; published dashed)")
    for ax, value in zip(axes, ("tflops_per_gpu", "peak_mem_gib")):
        lens = []
        for i, s in enumerate(shown):
            lens += _line(ax, s, col[id(s)], i, [(n, p.get(value)) for n, p in s.points.items()], s.label)
        _seq_axis(ax, lens)
    axes[0].set(ylabel="model TFLOPS per GPU", title="Training throughput per GPU")
    axes[1].set(ylabel="peak memory per GPU (GiB)", title="Peak memory")
    for g in a.order:
        gpu = a.data.gpus[g]
        if gpu.hbm_gib and any(s.gpu == g for s in shown):
            axes[1].axhline(gpu.hbm_gib, color="grey", linestyle=":", linewidth=1)
            axes[1].annotate(f"{g} HBM {gpu.hbm_gib:g} GiB", (0.01, gpu.hbm_gib),
                             xycoords=("axes fraction", "data"), fontsize=7, color="grey", va="bottom")
    if priced:
        lens = []
        for i, s in enumerate(shown):
            if s in priced:
                usd = usd_per_mtok_by_length(s, a.prices[s.gpu])
                lens += _line(axes[2], s, col[id(s)], i, list(usd.items()), s.label)
        _seq_axis(axes[2], lens)
        axes[2].set(ylabel="$ per 1M tokens (per GPU)", title="$/1M tokens at "
                    + ", ".join(f"{g} ${u:.2f}" for g, u in a.prices.items()) + " (whole models)")
        axes[2].title.set_fontsize(10)
    _from_zero(axes)
    _finish(fig, _figure_legend(fig, axes[:1], ncol=2, chars=80))
    return fig


def draw_attention(a: Analysis):
    """Isolated attention TFLOPS per backend vs sequence length, one panel per pass/shape."""
    groups = list(a.attention.items())
    if not groups:
        return None
    lines = list(dict.fromkeys(line for _, (by_line, _) in groups for line in by_line))
    col = {line: PALETTE[i % len(PALETTE)] for i, line in enumerate(lines)}
    fig, axes = _grid(len(groups), "Isolated attention kernels", cols=min(3, len(groups)))
    for ax, ((pass_, shape), (by_line, _)) in zip(axes, groups):
        lens = []
        for (gpu, backend, tag), pts in by_line.items():
            ax.plot(list(pts), list(pts.values()), color=col[gpu, backend, tag],
                    marker=MARKERS[lines.index((gpu, backend, tag)) % len(MARKERS)],
                    linestyle="--" if tag else "-", label=f"{gpu} {backend}" + (f" ({tag})" if tag else ""))
            lens += list(pts)
        _seq_axis(ax, lens)
        ax.set_ylabel("attention TFLOPS")
        f = dict(zip(ATTENTION_SHAPE, shape))
        extra = "".join(f", {k} {f[k]}" for k in ("layer", "window", "sinks") if f.get(k))
        ax.set_title(f"{pass_}: heads {f['heads']}/{f['kv_heads']}, d {f['head_dim']}, causal {f['causal']}"
                     + extra, fontsize=10)
    _from_zero(axes)
    _finish(fig, _figure_legend(fig, axes, ncol=min(4, len(lines)), chars=40))
    return fig


def draw_decomposition(a: Analysis):
    """TFLOPS per part of the step (attention, gemm, other, everything else, total) per
    series, as horizontal bars labelled with TFLOPS and milliseconds; one panel per length."""
    series = [s for s in a.data.series if s.decompositions]
    lens = sorted({n for s in series for n in s.decompositions})
    if not lens:
        return None
    col, named = colours(series), labels(series)
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
    _finish(fig, _figure_legend(fig, axes[0], ncol=1, chars=110))
    return fig


def save(fig, path: str, opener=open) -> str:
    try:
        with opener(path, "wb") as f:
            fig.savefig(f, dpi=DPI, format="png")
    finally:
        plt.close(fig)
    return os.path.basename(path)


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

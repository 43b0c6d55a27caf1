"""The look every figure of the report shares (matplotlib, Agg backend): one colour per
series, provenance as the line style (measured solid, published dashed with open markers,
forecasts dotted or dash-dotted with stroke markers over a hatched range, each candidate GPU its
own), a log2 axis of sequence lengths
whose labels never touch, amounts from zero, panels on a grid, one legend below them headed
by what the figure may not be read as, and a PNG written through the caller's opener.
"""
import math
import os
import textwrap
from typing import NamedTuple

import matplotlib

matplotlib.use("Agg")
# Labels carry prices ("$3.50") and strings from the logs: '$' is a dollar, never TeX
# (two of them made matplotlib typeset the text between; an unknown TeX command raised).
matplotlib.rcParams["text.parse_math"] = False
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.ticker import NullLocator  # noqa: E402

from ..read.series import seq_label

DPI = 100
PANEL_IN = (5.3, 3.9)              # one panel of a comparison or the overview
LEGEND_FONT = 8
TICK_FONT = 8
SEQ_AXIS = "sequence length (tokens)"
NOTE_CHARS = 60                    # wrap width of a comparison's notes (8 pt in a 5 in panel)
# Distinct colours, one per series (matplotlib's tab10 without its grey, which marks
# reference lines here, then darker extras; black is the MAMF line).
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#bcbd22", "#5b3a00", "#00577a", "#7a0057"]
MARKERS = "osD^vP*Xh<>"
WARNING_COLOUR = "firebrick"       # what a figure may not be read as
# A forecast is never drawn like a measurement (solid, filled markers) or a publication (dashed,
# open markers): dotted or dash-dotted, with markers of strokes alone, over a hatched range. Each
# candidate GPU has its own look (forecast_look), so that two forecasts of one series differ.
FORECAST_LINESTYLES = (":", "-.")
FORECAST_MARKERS = "x+12"
FORECAST_HATCHES = ("///", "\\\\\\", "xxx", "...")


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


class ForecastLook(NamedTuple):
    linestyle: str
    marker: str
    hatch: str   # of its range


def forecast_look(index: int) -> ForecastLook:
    """The look of the index-th forecast candidate, the same in every panel."""
    return ForecastLook(FORECAST_LINESTYLES[index % len(FORECAST_LINESTYLES)],
                        FORECAST_MARKERS[index % len(FORECAST_MARKERS)], FORECAST_HATCHES[index % len(FORECAST_HATCHES)])


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


def seq_axis(ax, lens) -> None:
    """A log2 axis of sequence lengths, every length a tick (labelled by label_ticks)."""
    lens = sorted(set(lens))
    if len(lens) > 1:
        ax.set_xscale("log", base=2)
    ax.set_xticks(lens)
    ax.set_xticklabels([seq_label(n) for n in lens], fontsize=TICK_FONT)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(SEQ_AXIS)
    ax.grid(True, alpha=0.3)


def label_ticks(fig) -> None:
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


def from_zero(axes) -> None:
    """Amounts (TFLOPS, $/token, shares, GiB) on a y axis from zero, so that a gap looks as
    large as it is, and 5% above the highest line; once everything is drawn, as a limit
    stops autoscaling."""
    for ax in axes:
        top = ax.dataLim.y1
        ax.set_ylim(0, top * 1.05 if math.isfinite(top) and top > 0 else None)


def hbm_words(gpu: str, hbm: float, measured: bool) -> str:
    """An HBM line's label in its own unit: GiB as a measured GPU reports its memory, or the
    datasheet's GB, never one printed as the other."""
    return f"{gpu} HBM {hbm:g} GiB (as measured)" if measured else f"{gpu} HBM {hbm:g} GB (datasheet)"


def wrap_text(text: str, chars: int) -> str:
    return "\n".join(textwrap.fill(line, chars, subsequent_indent="  ") for line in text.split("\n"))


def panel_grid(n_panels: int, title: str, cols: int = 3):
    """A figure of n panels in rows of at most `cols`, as few columns as fill its rows (2 x 2
    for 4 of 3): no row leaves a blank slot where a panel would fit."""
    cols = min(cols, n_panels)
    rows = -(-n_panels // cols)
    cols = -(-n_panels // rows)
    fig, axes = plt.subplots(rows, cols, dpi=DPI, squeeze=False,
                             figsize=(PANEL_IN[0] * cols, PANEL_IN[1] * rows + 0.6))
    flat = list(axes.flat)
    for ax in flat[n_panels:]:
        ax.remove()
    fig.suptitle(title, fontsize=12)
    return fig, flat[:n_panels]


def plot_line(ax, s, colour, index, points: list, label: str, under: bool = False) -> list:
    """Plot (seq_len, value) points of a series; returns the lengths drawn."""
    points = [(n, v) for n, v in points if v is not None]
    if points:
        ax.plot([n for n, _ in points], [v for _, v in points], label=label, **style(s, colour, index, under))
    return [n for n, _ in points]


def legend_entries(axes, chars: int) -> dict:
    """{label wrapped at `chars`: handle} of every line of `axes`, each label once."""
    entries = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(wrap_text(label, chars), handle)
    return entries


def figure_legend(fig, axes, ncol: int, chars: int, note: str = "") -> float:
    """One legend below all panels, headed by `note` (a warning, in red) where there is one;
    returns its height in inches."""
    entries = legend_entries(axes, chars)
    if not entries:
        return 0.0
    legend = fig.legend(list(entries.values()), list(entries), loc="lower center", ncol=ncol,
                        fontsize=LEGEND_FONT, frameon=False, title=wrap_text(note, chars * ncol) or None,
                        title_fontsize=LEGEND_FONT + 1)
    legend.get_title().set_color(WARNING_COLOUR)
    return legend.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi + 0.1


def finish(fig, legend_in: float) -> None:
    """Grow the figure by the legend's height and lay the panels out above it."""
    height = fig.get_figheight()
    fig.set_figheight(height + legend_in)
    fig.tight_layout(rect=(0, legend_in / (height + legend_in), 1, 0.95))
    label_ticks(fig)


def save(fig, path: str, opener=open) -> str:
    try:
        with opener(path, "wb") as f:
            fig.savefig(f, dpi=DPI, format="png")
    finally:
        plt.close(fig)
    return os.path.basename(path)

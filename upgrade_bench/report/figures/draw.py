"""The report's overview figures, drawn from a comparisons.Analysis as PNG: upgrade.png
(every sweep series, and every forecast beside the series it was made from),
attention.png and decomposition.png (only when those records exist);
write_all writes them with comparison_figure.py's one per comparison. Every series has its
own colour; provenance is the line style (style.py), and each forecast candidate its own
look, in every panel. Where the series do different work
per GPU (GPU count, model cut, ...) the legend opens by saying so. Each draw_* returns the
Figure, so tests can measure its text.
"""
import os

from .comparison import draw_comparison
from ..compare.comparisons import Analysis, usd_per_mtok_by_length
from ..compare.decompositions import decomposed, decomposition_parts
from ..compare.isolated_attention import ATTENTION_SHAPE
from ...hardware import gpus
from ..published.guide import GUIDE_ATTENTION_PACKAGE, GUIDE_ISOLATED_ATTENTION_RATIO
from .style import (
    DPI, MARKERS, PALETTE, colours, figure_legend, finish, forecast_look, from_zero, hbm_words, panel_grid,
    plot_line, plt, save, seq_axis, wrap_text)
from ..read.series import seq_label
from ..read.whole_model import scope
from ..page.words import unlike_across


def draw_overview(a: Analysis):
    """Every sweep series on shared axes: TFLOPS per GPU (cuts of a model, and their forecasts,
    in a panel of their own beside the whole models'), peak memory (where recorded), $/1M tokens
    of whole models (where priced); every forecast in its candidate's look over its range
    (hatched, or a bar at a single length), in the colour of the series it was made from, and
    its candidate's HBM in the memory panel."""
    shown = [s for s in a.data.series if s.points]
    if not shown:
        return None
    colour = colours([s for s in a.data.series if s.is_sweep])
    col = {id(s): (colour[id(s)], i) for i, s in enumerate(shown)}  # a series' colour and marker in every panel
    cuts = [s for s in shown if not scope(s).whole]
    whole = [s for s in shown if s not in cuts]
    # A cut does a fraction of its model's work per token: its $/token is no price of training
    # that model, so it stays off this panel (the answer scales it, and says so).
    priced = [s for s in whole if s.gpu in a.prices]
    memory = any(p.get("peak_mem_gib") is not None for s in shown for p in s.points.values())
    candidates = list(dict.fromkeys(fc.candidate for fc in a.forecasts))
    col.update({c: (None, i) for i, c in enumerate(candidates)})  # each candidate's look in every panel
    panels = ([(_throughput_panel, whole, "Training throughput per GPU" + (": whole models" if cuts else ""))]
              if whole else [])
    panels += [(_throughput_panel, cuts, "Training throughput per GPU: cuts of a model")] if cuts else []
    panels += [(_memory_panel, shown, "Peak memory")] if memory else []
    panels += [(_money_panel, priced, "")] if priced else []
    fig, axes = panel_grid(len(panels), "All series (each its own colour; published dashed"
                           + ("; forecasts dotted, one style per candidate" if a.forecasts else "") + ")")
    for ax, (draw, members, title) in zip(axes, panels):
        seq_axis(ax, draw(ax, a, members, col))
        if title:
            ax.set_title(title, fontsize=10 if cuts else None)
    from_zero(axes)
    finish(fig, figure_legend(fig, axes, ncol=2, chars=80, note=unlike_across(shown)))
    return fig


def _series_lines(ax, members: list, col: dict, field: str) -> list:
    """Each series' `field` against sequence length; the lengths drawn. A series keeps its
    marker in every panel (its place among the series with points)."""
    lens = []
    for s in members:
        colour, i = col[id(s)]
        lens += plot_line(ax, s, colour, i, [(n, p.get(field)) for n, p in s.points.items()], s.label)
    return lens


RANGE_KEY = ("forecast range ({}): each end holds 90% of the misses on its side\n"
             "  of other sources' published pairs of its group (no correction)")


def _made_from(a: Analysis, members: list) -> list:
    return [fc for fc in a.forecasts if any(fc.base is s for s in members)]


def _throughput_panel(ax, a: Analysis, members: list, col: dict) -> list:
    lens = _series_lines(ax, members, col, "tflops_per_gpu")
    drawn = [forecast_line(ax, fc, col[id(fc.base)][0], col[fc.candidate][1], [(r.seq_len, r.tflops) for r in fc.rows])
             for fc in _made_from(a, members)]
    hatched, bars = any(len(d) > 1 for d in drawn), any(len(d) == 1 for d in drawn)
    key = RANGE_KEY.format(", or ".join(["hatched"] * hatched + ["a bar"] * bars))
    if hatched:  # one legend key for every range, in no series' colour
        ax.fill_between([], [], facecolor="none", edgecolor="grey", hatch=forecast_look(0).hatch, linewidth=0.0,
                        label=key)
    elif bars:
        ax.plot([], [], color="grey", marker="|", markersize=12, linestyle="none", label=key)
    ax.set(ylabel="model TFLOPS per GPU")
    return lens + [n for d in drawn for n in d]


def _memory_panel(ax, a: Analysis, members: list, col: dict) -> list:
    lens = _series_lines(ax, members, col, "peak_mem_gib")
    lines = sorted(hbm_lines(a, members), key=lambda line: -line[1])
    label_gib = 0.05 * max([line[1] for line in lines] + [ax.dataLim.y1])  # a 7 pt label's height, about
    free_below = float("inf")  # from the top line down: a label that would touch the one above goes under its line
    for g, hbm, measured, candidate in lines:
        # a forecast's candidate in its look: does the baseline's peak (the forecast's) fit it?
        look = {"linestyle": forecast_look(col[g][1]).linestyle, "linewidth": 1.5} if candidate else {
            "linestyle": ":", "linewidth": 1}
        ax.axhline(hbm, color="dimgrey" if candidate else "grey", **look)
        under = hbm + label_gib > free_below
        ax.annotate(hbm_words(g, hbm, measured) + (": the forecast's candidate" if candidate else ""),
                    (0.01, hbm), xycoords=("axes fraction", "data"), fontsize=7,
                    color="dimgrey" if candidate else "grey", va="top" if under else "bottom")
        free_below = hbm - label_gib if under else hbm
    ax.set(ylabel="peak memory per GPU (GiB)")
    return lens


def hbm_lines(a: Analysis, members: list) -> list:
    """[(GPU, HBM, measured, a forecast's candidate)]: the HBM of each GPU with a series among
    `members`, and of each candidate forecast from one of them (the baseline's peak is the
    forecast's: the line says whether it fits), each GPU once: GiB as a run of it measured,
    else its datasheet's figure (GB)."""
    lines = {g: [a.data.gpus[g].hbm_gib, any(s.gpu == g and not s.reference for s in members), False]
             for g in a.order if a.data.gpus[g].hbm_gib and any(s.gpu == g for s in members)}
    for fc in _made_from(a, members):
        measured = next((s.hbm_gib for s in a.data.series if s.gpu == fc.candidate and not s.reference
                         and s.hbm_gib), None)
        lines.setdefault(fc.candidate, [measured or fc.hbm_gib, measured is not None, True])[2] = True
    return [(g, *line) for g, line in lines.items() if line[0]]


def _money_panel(ax, a: Analysis, priced: list, col: dict) -> list:
    lens = []
    for s in priced:
        lens += plot_line(ax, s, *col[id(s)], list(usd_per_mtok_by_length(s, a.prices[s.gpu]).items()), s.label)
    for fc in _made_from(a, priced):
        lens += forecast_line(ax, fc, col[id(fc.base)][0], col[fc.candidate][1],
                              [(r.seq_len, r.usd_per_mtok) for r in fc.rows])
    ax.set(ylabel="$ per 1M tokens (per GPU)", title="$/1M tokens at "
           + ", ".join(f"{g} ${u:.2f}" for g, u in a.prices.items()) + " (whole models)")
    ax.title.set_fontsize(10)
    return lens


def forecast_line(ax, fc, colour: str, index: int, points: list) -> list:
    """A forecast's (seq_len, (mid, low, high)) points in the colour of the series it was made
    from and the look of its candidate (forecast_look(index)): its mids a line over its range
    hatched, or, at a single length (no line, no area to draw), a marker and its range a bar;
    returns the lengths drawn."""
    points = [(n, v) for n, v in points if v is not None]
    if not points:
        return []
    lens, mids = [n for n, _ in points], [v[0] for _, v in points]
    lows, highs = [min(v[1:]) for _, v in points], [max(v[1:]) for _, v in points]
    look, label = forecast_look(index), f"{fc.candidate} {fc.label}"
    if len(points) == 1:
        bar = ax.errorbar(lens, mids, yerr=[[mids[0] - lows[0]], [highs[0] - mids[0]]], color=colour,
                          linestyle="none", marker=look.marker, markersize=9, markeredgewidth=2, capsize=6,
                          elinewidth=1.5, label=label)
        bar.lines[2][0].set_linestyle(look.linestyle)
        return lens
    ax.plot(lens, mids, color=colour, label=label, linestyle=look.linestyle, linewidth=2.0,
            marker=look.marker, markersize=7, markeredgewidth=1.5)
    ax.fill_between(lens, lows, highs, facecolor="none", edgecolor=colour, hatch=look.hatch, linewidth=0.0,
                    alpha=0.6)
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
    finish(fig, figure_legend(fig, axes, ncol=min(4, len(lines)), chars=40, note=attention_missing(a, lines)))
    return fig


def attention_missing(a: Analysis, lines: list) -> str:
    """Each GPU the page compares that has no isolated-attention line here, and what is known of
    it instead (the guide's published kernel ratio over the baseline), or ''."""
    drawn = {gpu for gpu, _, _ in lines}
    compared = [g for c in a.comparisons for g in (c.base.gpu, c.other.gpu)] + [fc.candidate for fc in a.forecasts]
    out = []
    for gpu in dict.fromkeys(compared):
        if gpu in drawn:
            continue
        ratios = GUIDE_ISOLATED_ATTENTION_RATIO.get((a.baseline, gpu), {})
        kernels = {gpus.lookup(g).name: k for g, (k, _, _) in GUIDE_ATTENTION_PACKAGE.items()}
        known = (f"; the guide publishes only its {kernels.get(gpu)} over the {a.baseline}'s "
                 f"{kernels.get(a.baseline)}, "
                 "fwd+bwd: " + ", ".join(f"{v:g}x at {seq_label(n)}" for n, v in sorted(ratios.items()))
                 if ratios else "")
        out.append(f"{gpu}: no isolated-attention records in these logs{known}")
    return "\n".join(out)


# One colour per part of the step, in every panel (the series are the rows).
PART_COLOURS = {"attention": PALETTE[0], "gemm": PALETTE[1], "linear_mixer": PALETTE[2], "other": PALETTE[7],
                "everything else": PALETTE[4]}
UNATTRIBUTED = "everything else"


def step_segments(record: dict) -> tuple:
    """([(part, ms, TFLOPS or None)], step ms): the parts that add up to the step, each bucket
    with a time, then what they leave of the step's total (a published decomposition names
    only attention: the rest is its `everything else`)."""
    parts = decomposition_parts(record)
    total = (parts.get("total") or {}).get("ms") or record.get("wall_step_ms")
    buckets = [(name, p["ms"], p.get("tflops")) for name, p in (record.get("buckets") or {}).items()
               if isinstance(p, dict) and p.get("ms")]
    if not total:
        return buckets, sum(ms for _, ms, _ in buckets)
    rest = total - sum(ms for _, ms, _ in buckets)
    if rest > 0.005 * total:  # beyond rounding: the part the buckets do not name
        alone = [name for name, _, _ in buckets] == ["attention"]
        buckets.append((UNATTRIBUTED, rest, (parts.get("everything else") or {}).get("tflops") if alone else None))
    return buckets, total


def draw_decomposition(a: Analysis):
    """Each decomposed series' step as one bar of its time (100% = the step), split into its
    parts (attention, GEMMs, other kernels, ...), each part's ms and TFLOPS written beside the
    bar; one panel per length. Time shares add up; TFLOPS of parts do not."""
    series, named = decomposed(a.data.series)
    lens = sorted({n for s in series for n in s.decompositions})
    if not lens:
        return None
    def oom(s, n) -> bool:  # a length this series could not run: marked on its row, no step
        return n not in s.decompositions and (s.errors.get(n) or {}).get("error") == "oom"
    rows = max(sum(1 for s in series if n in s.decompositions or oom(s, n)) for n in lens)
    fig, axes = plt.subplots(len(lens), 1, dpi=DPI, squeeze=False,
                             figsize=(13.0, len(lens) * (0.55 * rows + 1.0) + 0.6))
    for ax, n in zip(axes[:, 0], lens):
        here = [s for s in series if n in s.decompositions or oom(s, n)]
        for y, s in enumerate(here):
            if oom(s, n):
                ax.text(0.01, y, f"out of memory at {seq_label(n)}: no step to split", va="center", fontsize=8,
                        color="firebrick")
                continue
            segments, total = step_segments(s.decompositions[n])
            left = 0.0
            for part, ms, _ in segments:
                ax.barh(y, ms / total, left=left, height=0.6, color=PART_COLOURS.get(part, "grey"),
                        hatch="//" if s.reference else None, alpha=0.6 if s.reference else 1.0,
                        edgecolor="white", label=part)
                left += ms / total
            words = " + ".join(f"{part} {ms:.0f}" + (f" ({tflops:.0f} TFLOPS)" if tflops else "")
                               for part, ms, tflops in segments)
            ax.text(1.01, y, f"{total:.0f} ms = {words}", va="center", fontsize=7,
                    transform=ax.get_yaxis_transform(), clip_on=False)
        ax.set_yticks(range(len(here)))
        ax.set_yticklabels([wrap_text(named[id(s)], 48) for s in here], fontsize=7)
        ax.set_ylim(len(here) - 0.5, -0.5)  # first series on top; a row without a bar keeps its room
        ax.set_xlim(0, 1)
        ax.xaxis.set_major_formatter(lambda x, _: f"{x:.0%}")
        ax.set_xlabel("share of the step's time (one clock" + ("; hatched: published)" if any(
            s.reference for s in here) else ")"))
        ax.set_title(f"Step decomposition at {seq_label(n)}: each bar is one step", fontsize=10)
        ax.grid(True, axis="x", alpha=0.3)
    finish(fig, figure_legend(fig, axes[:, 0], ncol=len(PART_COLOURS), chars=40, note=unlike_across(series)))
    for ax in axes[:, 0]:  # the parts' words beside the bars: the panels make room on the right
        box = ax.get_position()
        ax.set_position([box.x0, box.y0, box.width * 0.55, box.height])
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

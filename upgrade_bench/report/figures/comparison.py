"""comparison-N.png, one per comparison: the guide's 2x2 (TFLOPS per GPU; speedup with its
range, the pair's own peak-ratio and MAMF-ratio lines and, when both sides are priced, the
price ratio, its break-even; attention FLOP share; peak memory against each GPU's HBM, with
capacity ceilings and OOMs) plus $/1M tokens at the user's prices (tokens/s per GPU without
prices), and a panel naming the lines and the pair's warnings. A panel without data is not
drawn; draw_comparison returns the Figure, so tests can measure its text.
"""
from ..compare.comparisons import HEALTH, Analysis, Comparison, capacity_of
from .style import (
    LEGEND_FONT, NOTE_CHARS, WARNING_COLOUR, colours, from_zero, hbm_words, label_ticks, legend_entries,
    panel_grid, plot_line, seq_axis, wrap_text)
from ..read.series import seq_label
from ..read.whole_model import cut_of
from ..page.words import ignored_words, stack_words, title

PRICE_COLOUR = "#b8860b"   # the break-even line: dark goldenrod, no series' colour


def short_name(s) -> str:
    return f"{s.gpu} {s.backend}, {s.provenance}"


def _series_panel(ax, c: Comparison, col: dict, value, scale=1.0):
    lens = []
    for i, s in enumerate((c.base, c.other)):
        lens += plot_line(ax, s, col[id(s)], i, [(n, p.get(value) * scale if p.get(value) is not None else None)
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
    if c.kind != HEALTH and c.price_ratio and not c.unlike:  # no break-even where no call is made
        ax.axhline(c.price_ratio, color=PRICE_COLOUR, linestyle="--", linewidth=1.5,
                   label=f"price ratio {c.price_ratio:.2f}x: break-even (a speedup above it is cheaper per token)")
        ax.annotate(f"break-even: price ratio {c.price_ratio:.2f}x", (0.01, c.price_ratio), va="bottom",
                    xycoords=("axes fraction", "data"), fontsize=7, color=PRICE_COLOUR)
        # the same axis as a price: the candidate pays off below the baseline's price x its speedup
        base_usd = c.prices[0]
        right = ax.secondary_yaxis("right", functions=(lambda x: x * base_usd, lambda usd: usd / base_usd))
        right.set_ylabel(f"{c.other.gpu} pays off below ($/GPU-hour)", color=PRICE_COLOUR, fontsize=8)
        right.tick_params(labelsize=7, colors=PRICE_COLOUR)
    if c.mamf_ratio:
        ax.axhline(c.mamf_ratio, color="black", linestyle="-.", linewidth=1,
                   label=f"bf16 MAMF ratio {c.mamf_ratio:.2f}x ({c.other.provenance} / {c.base.provenance})")
    ax.set_ylabel("this node / published" if c.kind == HEALTH else f"speedup over {c.base.gpu}")
    ax.set_title("This node / published (TFLOPS per GPU)" if c.kind == HEALTH else "Speedup (TFLOPS per GPU ratio)")
    return xs


def money_title(prices: tuple, gpus: tuple, cut: str) -> str:
    """The $ panel's title: the prices, and the cut its $/1M tokens are of (not the whole model's)."""
    at = ", ".join(f"{gpu} ${usd:.2f}" for gpu, usd in dict(zip(gpus, prices)).items())
    return "$/1M tokens" + (f" of the cut ({cut})\n" if cut else " ") + f"at {at} per GPU-hour"  # two lines fit the panel


def _money_panel(ax, c: Comparison, col: dict) -> list:
    lens = []
    if c.prices:
        for i, (s, key) in enumerate(((c.base, "base_usd_per_mtok"), (c.other, "other_usd_per_mtok"))):
            lens += plot_line(ax, s, col[id(s)], i, [(r.seq_len, getattr(r, key)) for r in c.rows], short_name(s),
                          under=i == 0)
        ax.set_ylabel("$ per 1M tokens (per GPU)")
        ax.set_title(money_title(c.prices, (c.base.gpu, c.other.gpu), cut_of(c.base)), fontsize=10)
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
            hbm.setdefault((s.gpu, s.hbm_gib), (col[id(s)], not s.reference))
    for (gpu, value), (colour, measured) in hbm.items():
        ax.axhline(value, color=colour, linestyle=":", label=hbm_words(gpu, value, measured))
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
    return wrap_text("\n".join(line for line in lines if line), NOTE_CHARS)


def _legend_panel(ax, fig_axes, c: Comparison) -> None:
    """The last panel names every line of the figure (once) and the comparison's warnings."""
    ax.axis("off")
    entries = legend_entries(fig_axes, NOTE_CHARS)
    ax.legend(list(entries.values()), list(entries), loc="upper left", fontsize=LEGEND_FONT,
              frameon=False, borderaxespad=0)
    note = _notes(c)
    if note:
        ax.text(0, 0, note, transform=ax.transAxes, va="bottom", fontsize=LEGEND_FONT, color=WARNING_COLOUR)


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
    fig, axes = panel_grid(len(drawn) + 1, title(c))
    for ax, draw in zip(axes, drawn):
        seq_axis(ax, draw(ax, c, col))
    _legend_panel(axes[-1], axes[:-1], c)
    from_zero([ax for ax, draw in zip(axes, drawn) if draw is not _speedup_panel])  # a ratio
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    label_ticks(fig)
    return fig

"""The figures of the report, drawn from a report.Analysis as PNG (matplotlib, Agg backend).

upgrade.png is the guide's 2x2: TFLOPS per GPU, speedup (with the theoretical peak ratio
and, when `mamf` records exist, the MAMF ratio), attention FLOP share, and peak memory
(with each GPU's HBM and its `capacity` ceiling). attention.png and decomposition.png exist
only when those records do. Published figures fed through the pipeline are drawn dashed and
labelled as such; a software-stack mismatch is printed on every figure.
"""
import os
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.ticker import NullLocator  # noqa: E402

from .comparisons import Analysis, decomposition_parts  # noqa: E402
from .series import provenance, seq_label  # noqa: E402

DPI = 100
MAIN_SIZE_IN = (14, 10)        # 1400 x 1000 px
PANEL_SIZE_IN = (5.5, 5)       # per panel of the optional figures
MARKERS = "osD^vP*Xh"


def _colors(a: Analysis) -> dict:
    return {g: f"C{i % 10}" for i, g in enumerate(a.order)}


def _style(a: Analysis, s) -> dict:
    """Colour per GPU, marker per series of that GPU (configs of one GPU stay apart),
    dashed open markers for the guide's published figures."""
    same_gpu = [x for x in a.data.series if x.gpu == s.gpu]
    index = next(i for i, x in enumerate(same_gpu) if x is s)
    return {"color": _colors(a)[s.gpu], "marker": MARKERS[index % len(MARKERS)],
            "linestyle": "--" if s.reference else "-", "mfc": "none" if s.reference else None}


def spaced_labels(lens: list[int], min_ratio: float = 1.25) -> list[str]:
    """Tick labels of ascending lengths on a log axis, blank where a length is within
    `min_ratio` of the last labelled one (a capacity point at 272K next to 256K would
    print over it); the tick itself stays."""
    labels, last = [], None
    for n in lens:
        keep = last is None or n >= last * min_ratio
        labels.append(seq_label(n) if keep else "")
        last = n if keep else last
    return labels


def _seq_axis(ax, lens) -> None:
    lens = sorted(set(lens))
    if not lens:
        return
    if len(lens) > 1:
        ax.set_xscale("log", base=2)
    ax.set_xticks(lens)
    ax.set_xticklabels(spaced_labels(lens), rotation=45 if len(lens) > 4 else 0)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("sequence length (tokens)")


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="grey")


def _legend(ax, width_chars: int = 48) -> None:
    """A small legend with wrapped labels that tight_layout ignores, so long series names
    (GPU, backend, the config fields that differ) never squeeze the plot."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        labels = [textwrap.fill(label, width_chars, subsequent_indent="  ") for label in labels]
        ax.legend(handles, labels, fontsize=7, framealpha=0.6).set_in_layout(False)


def _stack_note(fig, a: Analysis) -> int:
    """The guide's caveat 2 on the figure itself; returns how many text lines it took."""
    if not a.stack:
        return 0
    shown = a.stack[:3] + ([f"(+{len(a.stack) - 3} more in report.md)"] if len(a.stack) > 3 else [])
    chars = int(fig.get_figwidth() * 14)  # about 14 characters of 8 pt text per inch
    text = "\n".join(textwrap.fill(line, chars) for line in ["SOFTWARE STACKS DIFFER:"] + shown)
    fig.text(0.01, 0.005, text, color="red", fontsize=8, va="bottom")
    return text.count("\n") + 1


def _figure_legend(fig, axes, bottom_in: float, ncol: int = 3, width_chars: int = 60) -> float:
    """One legend below all panels (series repeat across panels and would hide the data
    inside them); returns its height in inches."""
    entries = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if not entries:
        return 0.0
    labels = [textwrap.fill(label, width_chars, subsequent_indent="  ") for label in entries]
    rows = -(-len(labels) // ncol)
    height_in = rows * (max(label.count("\n") for label in labels) + 1) * 7 * 1.35 / 72 + 0.2
    fig.legend(list(entries.values()), labels, loc="lower center", ncol=ncol, fontsize=7,
               bbox_to_anchor=(0.5, bottom_in / fig.get_figheight()), frameon=False)
    return height_in


def _save(fig, a: Analysis, path: str, legend_axes=()) -> str:
    lines = _stack_note(fig, a)
    bottom_in = lines * 8 * 1.25 / 72 + 0.05 if lines else 0.0  # 8 pt lines
    bottom_in += _figure_legend(fig, legend_axes, bottom_in)
    fig.tight_layout(rect=(0, bottom_in / fig.get_figheight(), 1, 0.95))
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _series_lines(ax, a: Analysis, value, scale: float = 1.0) -> list:
    lens = []
    for s in a.data.series:
        pts = [(n, p.get(value)) for n, p in s.points.items() if p.get(value) is not None]
        if pts:
            st = _style(a, s)
            ax.plot([n for n, _ in pts], [v * scale for _, v in pts], label=s.label,
                    color=st["color"], marker=st["marker"], linestyle=st["linestyle"],
                    markerfacecolor=st["mfc"])
            lens += [n for n, _ in pts]
    return lens


def _pair_label(b, o) -> str:
    """'B200 SXM fa4 / H200 SXM fa3': a pair shares its configuration, so that is left out."""
    def name(s):
        tag = provenance(s.reference)
        return f"{s.gpu} {s.backend}" + (f" ({tag})" if tag else "")
    return f"{name(o)} / {name(b)}"


def _speedup_panel(ax, a: Analysis) -> None:
    lens, peak_lines = [], {}
    colors = _colors(a)
    for c in a.comparisons:
        b, o = c["base"], c["other"]
        pts = [(r["seq_len"], r["speedup"]) for r in c["speedup"] if r["speedup"]]
        gaps = [r for r in c["speedup"] if r["gap"]]
        if pts:
            st = _style(a, o)
            ax.plot([n for n, _ in pts], [v for _, v in pts], label=_pair_label(b, o),
                    color=st["color"], marker=st["marker"],
                    linestyle="--" if (o.reference or b.reference) else "-",
                    markerfacecolor="none" if (o.reference or b.reference) else None)
            lens += [n for n, _ in pts]
            if o.peak_tflops and b.peak_tflops:
                peak_lines[o.gpu] = o.peak_tflops / b.peak_tflops
        for r in gaps:
            ax.axvline(r["seq_len"], color="grey", linestyle=":", linewidth=1)
            ax.text(r["seq_len"], 0.02, r["gap"], rotation=90, fontsize=7, color="grey",
                    transform=ax.get_xaxis_transform(), va="bottom", ha="right")
            lens.append(r["seq_len"])
    for gpu, value in peak_lines.items():
        ax.axhline(value, color=colors[gpu], linestyle=":",
                   label=f"{gpu}/{a.baseline} theoretical peak ratio {value:.2f}x")
        mamf_ratio = a.mamf_ratio.get(gpu)
        if mamf_ratio:
            ax.axhline(mamf_ratio, color=colors[gpu], linestyle="-.",
                       label=f"{gpu}/{a.baseline} MAMF ratio {mamf_ratio:.2f}x")
    if not lens:
        _empty(ax, "no pair of GPUs with the same configuration")
    _seq_axis(ax, lens)
    ax.set_ylabel(f"speedup over {a.baseline}")
    ax.set_title("Speedup vs sequence length")


def _memory_panel(ax, a: Analysis) -> None:
    colors = _colors(a)
    lens = _series_lines(ax, a, "peak_mem_gib")
    drawn = bool(lens)
    for g in a.order:
        gpu = a.data.gpus[g]
        if gpu.hbm_gib and any(s.gpu == g for s in a.data.series):
            ax.axhline(gpu.hbm_gib, color=colors[g], linestyle=":", label=f"{g} HBM {gpu.hbm_gib:g} GiB")
        for _, reference, cap in gpu.capacity:
            fit = cap.get("max_fit_seq_len")
            if fit:
                tag = f" ({provenance(reference)})" if reference else ""
                ax.axvline(fit, color=colors[g], linestyle="-.", linewidth=1,
                           label=f"{g} max fit {seq_label(fit)}{tag}")
                if cap.get("peak_mem_gib_at_max") is not None:
                    ax.plot([fit], [cap["peak_mem_gib_at_max"]], marker="*", markersize=12, color=colors[g])
                lens.append(fit)
                drawn = True
    for s in a.data.series:
        ooms = [n for n, e in s.errors.items() if e.get("error") == "oom" and n not in s.points]
        if ooms and s.hbm_gib:
            ax.scatter(ooms, [s.hbm_gib] * len(ooms), marker="x", s=80, color=colors[s.gpu],
                       label=f"{s.label} OOM", zorder=3)
            lens += ooms
    if not drawn:
        _empty(ax, "no GPU memory recorded")
    _seq_axis(ax, lens)
    ax.set_ylabel("peak memory per GPU (GiB)")
    ax.set_title("Peak memory vs sequence length")


def main_figure(a: Analysis, path: str) -> str:
    """The guide's 2x2 figure."""
    fig, axes = plt.subplots(2, 2, figsize=MAIN_SIZE_IN, dpi=DPI)
    ax = axes[0][0]
    lens = _series_lines(ax, a, "tflops_per_gpu")
    if not lens:
        _empty(ax, "no summary records")
    _seq_axis(ax, lens)
    ax.set_ylabel("model TFLOPS per GPU")
    ax.set_title("Training throughput per GPU")
    _speedup_panel(axes[0][1], a)
    ax = axes[1][0]
    _seq_axis(ax, _series_lines(ax, a, "attn_flop_share", 100.0))
    ax.set_ylabel("attention share of model FLOPs (%)")
    ax.set_title("Attention FLOP share")
    _memory_panel(axes[1][1], a)
    for ax in axes.flat:
        ax.grid(True, alpha=0.3)
    _legend(axes[0][1])  # speedup pairs and ratio lines belong to that panel alone
    others = [g for g in a.order[1:] if any(s.gpu == g for s in a.data.series)]
    title = f"{', '.join(others) or 'no other GPU'} vs {a.baseline}"
    fig.suptitle(title + ("   [software stacks differ: see footnote]" if a.stack else ""),
                 color="red" if a.stack else "black")
    return _save(fig, a, path, legend_axes=(axes[0][0], axes[1][0], axes[1][1]))


def attention_figure(a: Analysis, path: str) -> str | None:
    """Isolated attention TFLOPS per backend vs sequence length, one panel per pass/shape."""
    groups = sorted(a.attention.items(), key=lambda kv: str(kv[0]))
    if not groups:
        return None
    colors = _colors(a)
    fig, axes = plt.subplots(1, len(groups), dpi=DPI, squeeze=False,
                             figsize=(PANEL_SIZE_IN[0] * len(groups), PANEL_SIZE_IN[1]))
    backends = sorted({line[1] or "-" for _, lines in groups for line in lines})
    for ax, ((pass_, shape), lines) in zip(axes[0], groups):
        lens = []
        for (gpu, backend, tag), pts in lines.items():
            ax.plot(list(pts), list(pts.values()), color=colors[gpu],
                    marker=MARKERS[backends.index(backend or "-") % len(MARKERS)],
                    linestyle="--" if tag else "-",
                    label=f"{gpu} {backend}" + (f" ({tag})" if tag else ""))
            lens += list(pts)
        _seq_axis(ax, lens)
        ax.set_ylabel("attention TFLOPS")
        ax.set_title(f"{pass_} (heads {shape[1]}/{shape[2]}, d {shape[3]}, causal {shape[4]})", fontsize=10)
        ax.grid(True, alpha=0.3)
        _legend(ax)
    fig.suptitle("Isolated attention kernels")
    return _save(fig, a, path)


def decomposition_figure(a: Analysis, path: str) -> str | None:
    """TFLOPS per part (attention, GEMM, other, everything else, total) per series, one panel per seq_len;
    each bar is labelled with its milliseconds."""
    series = [s for s in a.data.series if s.decompositions]
    lens = sorted({n for s in series for n in s.decompositions})
    if not lens:
        return None
    colors = _colors(a)
    fig, axes = plt.subplots(1, len(lens), dpi=DPI, squeeze=False,
                             figsize=(PANEL_SIZE_IN[0] * len(lens), PANEL_SIZE_IN[1]))
    for ax, n in zip(axes[0], lens):
        here = [s for s in series if n in s.decompositions]
        buckets = list(dict.fromkeys(b for s in here for b in decomposition_parts(s.decompositions[n])))
        width = 0.8 / len(here)
        for i, s in enumerate(here):
            parts = [decomposition_parts(s.decompositions[n]).get(b) or {} for b in buckets]
            xs = [j + i * width for j in range(len(buckets))]
            bars = ax.bar(xs, [p.get("tflops") or 0.0 for p in parts], width, color=colors[s.gpu],
                          hatch="//" if s.reference else None, alpha=0.6 if s.reference else 1.0,
                          label=s.label)
            for bar, p in zip(bars, parts):
                if p.get("ms") is not None:
                    ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height(), f"{p['ms']:.0f} ms",
                            ha="center", va="bottom", fontsize=7)
        ax.set_ylim(top=ax.get_ylim()[1] * 1.15)  # room for the ms labels and the legend
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(buckets))])
        ax.set_xticklabels(buckets)
        ax.set_ylabel("TFLOPS")
        ax.set_title(f"Step decomposition at {seq_label(n)}")
        ax.grid(True, axis="y", alpha=0.3)
        _legend(ax)
    fig.suptitle("Step decomposition (one clock)")
    return _save(fig, a, path)


def write_all(a: Analysis, out_dir: str) -> list:
    """Every figure the records allow; returns the file names written (relative to out_dir)."""
    written = [main_figure(a, os.path.join(out_dir, "upgrade.png")),
               attention_figure(a, os.path.join(out_dir, "attention.png")),
               decomposition_figure(a, os.path.join(out_dir, "decomposition.png"))]
    return [os.path.basename(p) for p in written if p]

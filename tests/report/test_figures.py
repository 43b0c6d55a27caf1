"""figures/: figures a buyer can read: no text over another or over the bars, no empty panel,
amounts from zero, the break-even line, forecasts dotted, dollar signs as text. The shipped data's
analysis is made once per module (its tests stay in this file)."""
import dataclasses
import io
import os

import pytest
from matplotlib.text import Text

from conftest import REPO
from report.helpers import (
    H200_PEAK, B200_PEAK, rec, header, summary, two_gpu_log, analysis_of, only, guide_with_a_measured_h200, overlaps)
from upgrade_bench.report.forecast import backtest, calibration
from upgrade_bench.report.compare import comparisons
from upgrade_bench.report.page import details as detail_tables
from upgrade_bench.report.figures import draw as figures, style as plotkit
from upgrade_bench.report.read import inputs, series
from upgrade_bench.report.published import pairs as published_pairs
from upgrade_bench.report import analysis as report_analysis


def test_tick_labels_that_would_touch_are_left_out_but_never_the_last():
    # labels 20 px wide, 3 px apart at least: 50 touches 30; 110 (the last) replaces 100
    assert plotkit.spaced_labels([0, 30, 50, 100, 110], [20] * 5) == [True, True, False, False, True]
    assert plotkit.spaced_labels([0, 23], [20, 20]) == [True, True]    # exactly 3 px apart
    assert plotkit.spaced_labels([], []) == []
    # on a sweep's axis the powers of two come first: 256K stays, the 272K beside it gives way
    centres, widths = [0, 100, 200, 290, 300], [20] * 5  # 8K 32K 128K 256K 272K
    assert plotkit.spaced_labels(centres, widths, preferred=[True, True, True, True, False]) == \
        [True, True, True, True, False]
    assert plotkit.spaced_labels([0, 50, 100], [20] * 3, preferred=[False, True, False]) == [True, True, True]


@pytest.fixture(scope="module")
def shipped_analysis():
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        tally = inputs.Tally()
        data = series.load(inputs.read(inputs.expand(["results/"]), tally), also_in=tally.seen_again)
        return comparisons.analyse(data, prices={"H200": 3.5, "B200": 7.0}), tally
    finally:
        os.chdir(cwd)


def test_no_figure_text_overlaps_another_or_the_bars(shipped_analysis):
    a, _ = shipped_analysis
    drawn = [figures.draw_comparison(c, a) for c in a.comparisons]
    drawn += [figures.draw_overview(a), figures.draw_attention(a), figures.draw_decomposition(a)]
    for fig in drawn:
        fig.canvas.draw()
        assert overlaps(fig) == [], fig.texts[0].get_text() if fig.texts else fig.axes[0].get_title()
        figures.plt.close(fig)


def test_no_panel_is_drawn_empty():
    # no length measured on both: no speedup panel; no price: throughput in place of $/token
    recs = [header("h", "NVIDIA H200"), summary("h", 1024, 400.0, H200_PEAK, 10000.0, 100.0),
            header("b", "NVIDIA B200", "fa4"), summary("b", 2048, 900.0, B200_PEAK, 9000.0, 200.0)]
    a = analysis_of(recs)
    fig = figures.draw_comparison(a.comparisons[0], a)
    panels = [ax for ax in fig.axes if ax.axison]
    assert [ax.get_title() for ax in panels] == ["Training throughput per GPU", "Throughput (no --price given)",
                                                 "Attention FLOP share", "Peak memory vs HBM"]
    assert all(len(ax.get_lines()) >= 2 for ax in panels)
    figures.plt.close(fig)
    # a CPU try-out records no peak memory: the overview has no empty memory panel
    for r in recs:
        r.pop("peak_mem_gib", None)
    fig = figures.draw_overview(analysis_of(recs))
    assert [ax.get_title() for ax in fig.axes] == ["Training throughput per GPU"]
    figures.plt.close(fig)


def test_each_series_has_its_own_colour_and_published_lines_are_dashed(shipped_analysis):
    a, _ = shipped_analysis
    fig = figures.draw_overview(a)
    lines = {line.get_label(): line for ax in fig.axes[:2] for line in ax.get_lines()}  # whole models, cuts
    assert len({line.get_color() for line in lines.values()}) == len(lines) == 5
    assert {label.endswith("(guide's published)") for label, line in lines.items()
            if line.get_linestyle() == "--"} == {True}
    figures.plt.close(fig)


def test_the_speedup_panel_draws_the_break_even_at_the_price_ratio():
    # The line a buyer looks for: above it the candidate is cheaper per token at these prices.
    for a, expected in ((analysis_of(two_gpu_log(), prices={"H200": 2.0, "B200": 5.0}), [2.5, 2.5]),
                        (analysis_of(two_gpu_log()), None)):
        fig = figures.draw_comparison(only(a), a)
        (ax,) = [ax for ax in fig.axes if ax.get_title().startswith("Speedup")]
        lines = [line for line in ax.get_lines() if "break-even" in line.get_label()]
        assert [list(line.get_ydata()) for line in lines] == ([expected] if expected else [])
        if expected:
            assert lines[0].get_label().startswith("price ratio 2.50x: break-even")
            assert "break-even: price ratio 2.50x" in [t.get_text() for t in ax.texts]
            # its right axis reads the speedup as the price the B200 pays off below: $2.00 x 2.5 = $5.00
            (right,) = [child for child in ax.child_axes]
            assert right.get_ylabel() == "B200 SXM pays off below ($/GPU-hour)"
            fig.canvas.draw()
            low, high = ax.get_ylim()
            assert right.get_ylim() == pytest.approx((2.0 * low, 2.0 * high))
        figures.plt.close(fig)


def test_a_pair_that_is_not_like_for_like_draws_no_break_even():
    recs = guide_with_a_measured_h200(config={"world_size": 2, "WARMUP_STEPS": 1})
    a = analysis_of(recs, ignore=("world_size", "WARMUP_STEPS"), prices={"H200": 3.5, "B200": 7.0})
    c = a.comparisons[0]
    assert c.unlike == ["world_size"] and c.price_ratio == 2.0
    fig = figures.draw_comparison(c, a)
    (ax,) = [ax for ax in fig.axes if ax.get_title().startswith("Speedup")]
    assert not [line for line in ax.get_lines() if "break-even" in line.get_label()]
    figures.plt.close(fig)


def one_gpu_eight_layers():
    """two_gpu_log plus an H200 run of 8 layers on 1 GPU: a sweep point and a decomposition."""
    cut = {"world_size": 1, "NUM_LAYERS": 8}
    return two_gpu_log() + [
        header("cut", "NVIDIA H200", config=cut), summary("cut", 1024, 420.0, H200_PEAK, 11000.0, 95.0),
        header("cut-dec", "NVIDIA H200", script="bench_decompose.py",
               config={**cut, "ZERO_STAGE": 2, "GRAD_CHECKPOINT": False, "OFFLOAD_OPTIMIZER": False}),
        rec("decomposition", "cut-dec", script="bench_decompose.py", seq_len=8192,
            buckets={"attention": {"ms": 30.0, "tflops": 461.0}}, total={"ms": 300.0, "tflops": 386.0})]


def test_overview_figures_say_where_series_differ_in_model_cut_and_gpu_count():
    a = analysis_of(one_gpu_eight_layers())
    for fig in (figures.draw_overview(a), figures.draw_decomposition(a)):
        note = fig.legends[0].get_title().get_text().replace("\n  ", " ")
        assert note.startswith("Not like for like: these series differ in GPUs in the run (1 GPU, 8 GPUs) and "
                               "model cut (8 layers, NUM_LAYERS not recorded); each GPU does different work"), note
        figures.plt.close(fig)
    alike = analysis_of(two_gpu_log())  # the same work per GPU everywhere: nothing to say
    fig = figures.draw_overview(alike)
    assert fig.legends[0].get_title().get_text() == ""
    figures.plt.close(fig)


def test_the_decomposition_table_lists_every_decomposition_the_figure_shows():
    # decomposition.png drew the measured 1-GPU decompositions; the table listed only pairs.
    a = analysis_of(one_gpu_eight_layers())
    fig = figures.draw_decomposition(a)
    shown = [t.get_text().replace("\n", " ") for t in fig.axes[0].get_yticklabels()]
    figures.plt.close(fig)
    text = detail_tables.decomposition_markdown(a)
    assert len(shown) == 3 and all(name in text for name in shown), shown
    (cut,) = [name for name in shown if "1 GPU" in name]
    assert f"| {cut} | 8K | attention | 461.0 | 30.0 |" in text and f"| {cut} | 8K | total | 386.0 | 300.0 |" in text


def test_upgrade_png_keeps_cuts_apart_labels_hbm_in_its_unit_and_leaves_no_blank_slot(shipped_analysis):
    a, _ = shipped_analysis
    fig = figures.draw_overview(a)
    titles = [ax.get_title() for ax in fig.axes]
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    rows_cols = fig.axes[0].get_subplotspec().get_gridspec().get_geometry()
    figures.plt.close(fig)
    assert titles[:2] == ["Training throughput per GPU: whole models", "Training throughput per GPU: cuts of a model"]
    assert rows_cols[0] * rows_cols[1] == len(fig.axes) == 4  # 2 x 2: no third column left blank
    assert "B200 SXM HBM 180 GB (datasheet)" in texts and "H200 SXM HBM 139.8 GiB (as measured)" in texts


def test_every_gpu_compared_is_named_in_the_attention_figure(shipped_analysis):
    a, _ = shipped_analysis
    fig = figures.draw_attention(a)
    title = fig.legends[0].get_title().get_text().replace("\n  ", " ")
    figures.plt.close(fig)
    assert ("B200 SXM: no isolated-attention records in these logs; the guide publishes only its fa4 over the "
            "H200 SXM's fa3, fwd+bwd: 1.88x at 8K, 1.95x at 32K") in title


def test_the_decomposition_bars_add_up_to_the_step(shipped_analysis):
    a, _ = shipped_analysis
    fig = figures.draw_decomposition(a)
    ax = fig.axes[0]
    ends = {}
    for bar in ax.patches:  # each row's parts, left to right, as shares of its step
        y = round(bar.get_y() + bar.get_height() / 2)
        ends[y] = max(ends.get(y, 0.0), bar.get_x() + bar.get_width())
    words = [t.get_text() for t in ax.texts]
    figures.plt.close(fig)
    assert ends and all(end == pytest.approx(1.0) for end in ends.values())
    # the guide's right-sized 8K H200: attention 447 TFLOPS and the rest 463, one 915 ms step
    assert "915 ms = attention 118 (447 TFLOPS) + everything else 797 (463 TFLOPS)" in words
    segments, total = figures.step_segments({"buckets": {"attention": {"ms": 30.0, "tflops": 400.0},
                                                         "gemm": {"ms": 170.0}, "other": {"ms": 100.0}},
                                             "total": {"ms": 300.0}})
    assert total == 300.0 and sum(ms for _, ms, _ in segments) == 300.0 and len(segments) == 3


def test_forecasts_are_drawn_dotted_over_a_hatched_range_and_named_forecasts(shipped_analysis):
    made, notes = report_analysis.forecasts_of(shipped_analysis[0].data, ["B200 SXM"], {"H200": 3.5, "B200": 7.0},
                                               calibration.calibration(backtest.backtest(published_pairs.all_records())))
    a = dataclasses.replace(shipped_analysis[0], forecasts=tuple(made))
    assert a.forecasts and notes == []
    fig = figures.draw_overview(a)
    fig.canvas.draw()
    assert overlaps(fig) == []
    for ax in fig.axes[:2] + fig.axes[3:]:  # throughput of whole models and of cuts, and $/token
        lines = [line for line in ax.get_lines() if "forecast" in line.get_label()]
        assert lines and all(line.get_linestyle() == ":" and line.get_marker() == "x" and
                             line.get_label().endswith("not measured") for line in lines)
        assert {line.get_linestyle() for line in ax.get_lines() if line not in lines} <= {"-", "--"}
        assert len([col for col in ax.collections if col.get_hatch()]) >= len(lines)
    assert len([line for ax in fig.axes[:2] for line in ax.get_lines() if "forecast" in line.get_label()]) == \
        len(a.forecasts)
    figures.plt.close(fig)


def test_dollar_signs_in_figures_are_text_never_tex(tmp_path):
    # One price gives a title with two '$': matplotlib read "$/1M tokens at $" as TeX and
    # printed "/1Mtokensat3.50"; a log string with "$\x$" ended in a ParseFatalException.
    recs = guide_with_a_measured_h200()
    for r in recs:
        if r["kind"] == "header" and r["run_id"] == "mine":
            r["software"]["torch"] = "2.11$\\x$"
            r["config"]["NOTES"] = "cost $1$"
    a = analysis_of(recs, prices={"H200": 3.5})
    health = only(a, comparisons.HEALTH)
    for fig in (figures.draw_comparison(health, a), figures.draw_overview(a)):
        fig.savefig(io.BytesIO(), format="png")  # no TeX parse error
        texts = [t for t in fig.findobj(Text) if "$" in t.get_text()]
        assert texts and not [t.get_text() for t in texts if t.get_parse_math()]
        figures.plt.close(fig)
    fig = figures.draw_comparison(health, a)
    (money,) = [ax for ax in fig.axes if ax.get_title().startswith("$/1M tokens")]
    assert money.get_title() == "$/1M tokens at H200 SXM $3.50 per GPU-hour"
    figures.plt.close(fig)


def test_panels_of_amounts_start_at_zero(shipped_analysis):
    # An axis from 0.2 drew the guide's 69% dearer 8K $/token as a 4x gap; amounts
    # (TFLOPS, $/token, share, GiB) start at zero, only the speedup's ratio axis may not.
    a, _ = shipped_analysis
    figs = [figures.draw_comparison(a.comparisons[0], a), figures.draw_overview(a), figures.draw_attention(a)]
    panels = [ax for fig in figs for ax in fig.axes if ax.axison and not ax.get_title().startswith("Speedup")]
    assert len(panels) == 4 + 4 + 2 and [ax.get_title() for ax in panels if ax.get_ylim()[0] != 0] == []
    # nor does the highest point sit on the frame (the axis keeps its margin above)
    for ax in figs[2].axes:
        assert ax.get_ylim()[1] >= 1.04 * max(max(line.get_ydata()) for line in ax.get_lines())
    for fig in figs:
        figures.plt.close(fig)


def test_a_speedup_without_a_range_is_marked_on_the_figure():
    # 3K: H200 timed once, no range: without a mark its dot looked as exact as the others
    a = analysis_of(two_gpu_log())
    fig = figures.draw_comparison(only(a), a)
    (ax,) = [ax for ax in fig.axes if ax.get_title().startswith("Speedup")]
    (ring,) = [line for line in ax.get_lines() if line.get_label().startswith("no range")]
    assert list(ring.get_xdata()) == [3072] and list(ring.get_ydata()) == [pytest.approx(2.2)]
    figures.plt.close(fig)

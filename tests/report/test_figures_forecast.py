"""Issue 54, item 8: upgrade.png's forecasts. A forecast at one length is a marker with its range
as a bar (a dotted line of one point draws nothing); each candidate GPU has its own look, the
same in every panel; the memory panel draws each candidate's HBM (GiB as a run of it measured,
else its datasheet's GB). On the shipped node runs, drawn in-process, asserted on the artists."""
import pytest
from matplotlib.container import ErrorbarContainer

from report.helpers import overlaps
from upgrade_bench.report.analysis import build
from upgrade_bench.report.figures import draw
from upgrade_bench.report.forecast import backtest, calibration
from upgrade_bench.report.published import pairs
from upgrade_bench.report.read import inputs

H100_ONE_LENGTH = "results/h100-node-10/node"   # one H100 sweep point, 8K, 62.5 GiB peak
H200_THREE_LENGTHS = "results/h200-precision-7/node"  # H200 at 8K, 16K, 32K (84.4 GiB peak)


@pytest.fixture(scope="module")
def calibrated():
    return calibration.calibration(backtest.backtest(pairs.all_records()))


@pytest.fixture
def overview(calibrated, monkeypatch):
    """draw(folders, candidates, prices) -> (Analysis, upgrade.png's Figure, laid out); closed after."""
    from conftest import REPO
    monkeypatch.chdir(REPO)
    drawn = []

    def make(folders, candidates, prices=None):
        tally = inputs.Tally()
        records = list(inputs.read(inputs.expand(folders), tally))
        a = build(records, tally.seen_again, prices or {}, candidates, calibrated)
        fig = draw.draw_overview(a)
        fig.canvas.draw()
        drawn.append(fig)
        return a, fig
    yield make
    for fig in drawn:
        draw.plt.close(fig)


def panel(fig, title: str):
    return next(ax for ax in fig.axes if ax.get_title().startswith(title))


def forecast_lines(ax) -> dict:
    """{candidate: Line2D} of the forecasts' lines ('<candidate> forecast from <series>, not measured')."""
    return {line.get_label().split(" forecast from ")[0]: line for line in ax.get_lines()
            if " forecast from " in line.get_label()}


def hbm_lines(ax) -> dict:
    """{GiB: Line2D} of the panel's horizontal lines across the axes (axhline)."""
    return {line.get_ydata()[0]: line for line in ax.get_lines() if list(line.get_xdata()) == [0, 1]}


def test_a_forecast_at_one_length_is_a_marker_with_its_range_as_a_bar(overview):
    a, fig = overview([H100_ONE_LENGTH], ["H200 SXM"], {"H100": 2.40, "H200": 3.50})
    (fc,) = a.forecasts
    (row,) = fc.rows
    ax = panel(fig, "Training throughput per GPU")
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert [c.get_label() for c in bars] == ["H200 SXM forecast from H100 SXM fa4, not measured"]
    marker, _, (bar,) = bars[0].lines
    assert marker.get_marker() == "x" and list(marker.get_xdata()) == [8192]
    assert marker.get_ydata()[0] == pytest.approx(row.tflops[0])
    (segment,) = bar.get_segments()
    assert sorted(y for _, y in segment) == pytest.approx(sorted((min(row.tflops[1:]), max(row.tflops[1:]))))
    assert segment[1][1] - segment[0][1] > 0  # a range, not a point
    assert not forecast_lines(ax)  # no dotted line of one point, which would draw nothing
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(t.startswith("forecast range (a bar):") for t in legend)
    assert not any("hatched" in t for t in legend)  # no hatch is drawn
    assert overlaps(fig) == []


def test_two_candidates_each_have_their_own_look_and_their_hbm_line_in_it(overview):
    a, fig = overview([H200_THREE_LENGTHS], ["H100 SXM", "B200 SXM"])
    assert [fc.candidate for fc in a.forecasts] == ["H100 SXM", "B200 SXM"]
    ax = panel(fig, "Training throughput per GPU")
    lines = forecast_lines(ax)
    h100, b200 = lines["H100 SXM"], lines["B200 SXM"]
    assert (h100.get_linestyle(), h100.get_marker()) == (":", "x")
    assert (b200.get_linestyle(), b200.get_marker()) == ("-.", "+")
    assert all(line.get_label().endswith("not measured") and len(line.get_xdata()) == 3 for line in lines.values())
    ranges = [c for c in ax.collections if c.get_hatch() and len(c.get_paths())]
    assert len(ranges) == 2 and ranges[0].get_hatch() != ranges[1].get_hatch()
    memory = panel(fig, "Peak memory")
    hbm = hbm_lines(memory)
    # the candidates' datasheet figures in their forecast's look; the baseline's HBM as measured
    assert set(hbm) == {80, 180, 139.8}
    assert hbm[80].get_linestyle() == ":" and hbm[180].get_linestyle() == "-."
    words = [t.get_text() for t in memory.texts]
    assert words == ["B200 SXM HBM 180 GB (datasheet): the forecast's candidate",
                     "H200 SXM HBM 139.8 GiB (as measured)",
                     "H100 SXM HBM 80 GB (datasheet): the forecast's candidate"]
    # the baseline's 32K peak, which the forecast assumes, reads above the H100's line: it does not fit
    (peak,) = [line for line in memory.get_lines() if line.get_label() == a.forecasts[0].base.label]
    assert max(peak.get_ydata()) > 80 > min(peak.get_ydata())
    assert memory.get_ylim()[1] > 180  # the highest line is in view
    assert overlaps(fig) == []


def test_a_candidate_measured_in_the_logs_has_its_measured_hbm_once(overview):
    _, fig = overview([H100_ONE_LENGTH, H200_THREE_LENGTHS], ["H200 SXM"])
    memory = panel(fig, "Peak memory")
    assert sorted(hbm_lines(memory)) == [79.2, 139.8]  # no second H200 line at its datasheet's 141
    assert "H200 SXM HBM 139.8 GiB (as measured): the forecast's candidate" in [t.get_text() for t in memory.texts]
    assert overlaps(fig) == []

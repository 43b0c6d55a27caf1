"""The text tables' numbers (upgrade_bench.numfmt): significant figures a CPU's small values keep;
an op-by-size grid and the record of each op it shows."""
import pytest

from upgrade_bench import numfmt
from upgrade_bench.numfmt import pct, sig


@pytest.mark.parametrize("value, text", [
    (812.34, "812"), (81.234, "81.2"), (0.0004123, "0.000412"), (0.0000412, "0.0000412"),
    (9.996, "10.0"), (999.7, "1000"), (1453.4, "1453"), (12345.6, "12346"), (-3.14159, "-3.14"),
    (0, "0"), (None, "-"), (float("nan"), "nan"),
])
def test_three_significant_figures_never_an_exponent(value, text):
    assert sig(value) == text


def test_shares_as_percentages():
    assert (pct(0.4531), pct(0.0004), pct(1.0), pct(None)) == ("45.3%", "0.0400%", "100%", "-")
    assert sig(2 / 3, digits=2) == "0.67"


def test_a_grid_column_widens_for_a_label_longer_than_its_width():
    text = numfmt.grid("title", "op", ["copy"], ["1 MiB", "1048576 MiB"], lambda r, c: "9.99", 6, 8)
    assert text.splitlines() == ["title", "op       1 MiB  1048576 MiB", "copy      9.99         9.99"]


def test_the_best_record_of_each_op_skips_what_did_not_run_and_keeps_the_order_asked():
    recs = [{"op": "b", "x": 2.0}, {"op": "a", "x": 1.0, "status": "oom"}, {"op": "a", "x": 3.0},
            {"op": "b", "x": 5.0}, {"op": "c", "x": None}]
    assert numfmt.best_by(recs, "x", ["a", "b", "c"]) == {"a": {"op": "a", "x": 3.0}, "b": {"op": "b", "x": 5.0}}

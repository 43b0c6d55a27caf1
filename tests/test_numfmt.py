"""The text tables' numbers (upgrade_bench.numfmt): significant figures a CPU's small values keep."""
import pytest

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

"""A bad flag to a script that takes flags (faults.Parser) is bad input like any other: one
line on stderr and exit 2 through faults.run_main, not argparse's usage text."""
import pytest

from conftest import import_script
from upgrade_bench import faults


@pytest.mark.parametrize("script", ["plot_results.py", "mamf-finder.py"])
@pytest.mark.parametrize("argv", [["--no-such-flag"], ["--out"]])  # unknown; a value missing
def test_a_bad_flag_is_one_line_and_exit_2(script, argv, capsys):
    assert faults.run_main(import_script(script).main, argv) == faults.EXIT_BAD_INPUT
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("error: ") and err.endswith("(see --help)\n")

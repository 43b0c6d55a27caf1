"""What a user sees of the report is unchanged by a change that means not to change it: the page,
the terminal answer and points.csv on the committed logs, byte for byte (tests/golden/; after a
change that means to change them: `.venv/bin/python -m tests.report.golden`, then review the diff)."""
import pytest

import golden


@pytest.fixture(scope="module")
def made():
    return golden.outputs()


@pytest.mark.parametrize("name", ["report.md", "terminal.txt", "stderr.txt", "points.csv"])
def test_the_report_on_the_committed_logs_is_the_golden_one(made, name):
    assert made[name] == (golden.GOLDEN / name).read_text(encoding="utf-8"), (
        f"{name} changed; if that is meant: .venv/bin/python -m tests.report.golden and review the diff")

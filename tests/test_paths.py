"""The repository root every module finds the suite's files from."""
from conftest import REPO
from upgrade_bench.models import model
from upgrade_bench import paths
from upgrade_bench.sweep import plan as sweep_plan


def test_the_repository_root_holds_the_presets_and_the_sweeps_default_benchmark():
    assert paths.REPO == REPO
    assert all(path.is_file() and path.parent == REPO / "configs" for path in model.PRESETS.values())
    (benchmark,) = [v for v in sweep_plan.VARS if v.name == "BENCHMARK"]
    # Relative to the root, so --help and the README show no machine's path.
    assert benchmark.default == "benchmark.py" and (paths.REPO / benchmark.default).is_file()

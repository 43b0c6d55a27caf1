"""The README documents every variable, and CI runs exactly the README's test command."""
from conftest import REPO, import_script
from upgrade_bench import settings, sweep_plan

README = (REPO / "README.md").read_text()


def script_vars(name: str):
    return import_script(name).VARS


def test_every_environment_variable_is_documented():
    tables = [settings.TRAINING_VARS, sweep_plan.VARS] + [
        script_vars(name) for name in ("bench_decompose.py", "bench_flash_attn.py", "check_capabilities.py")]
    missing = sorted({var.name for table in tables for var in table if f"| `{var.name}` |" not in README})
    assert missing == []


def test_ci_runs_the_readme_test_command():
    command = ".venv/bin/python -m pytest -q tests"
    assert f"\n{command}\n" in README
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert ci[-1] == command and "./install.sh --cpu" in ci

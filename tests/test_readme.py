"""The README documents every variable, and CI runs exactly the README's test command."""
from conftest import REPO, import_script
from upgrade_bench.sweep import node, sweep_plan
from upgrade_bench.training import variables
from upgrade_bench.log import schema

README = (REPO / "README.md").read_text()
CONFIGURATION = (REPO / "docs" / "configuration.md").read_text()  # the README links it


def script_vars(name: str):
    return import_script(name).VARS


def test_every_environment_variable_is_documented():
    tables = [variables.TRAINING_VARS, sweep_plan.VARS, node.VARS] + [
        script_vars(name) for name in ("bench_decompose.py", "bench_flash_attn.py", "bench_hbm.py",
                                       "bench_comm.py", "check_capabilities.py")]
    missing = sorted({var.name for table in tables for var in table if f"| `{var.name}` |" not in CONFIGURATION})
    assert missing == []


def test_ci_runs_the_readme_test_command():
    command = ".venv/bin/python -m pytest -q tests"
    assert f"\n{command}\n" in README
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert ci[-1] == command and "./install.sh --cpu" in ci


def readme_row(var) -> str:
    """A variable's row as the README's configuration tables print it (the --help facts)."""
    default = " ".join(map(str, var.default)) if isinstance(var.default, list) else var.default
    if isinstance(default, bool):
        default = int(default)
    cells = [f"`{var.name}`", f"`{default}`" if default != "" else "`(empty)`", var.allowed(), var.help]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def table_rows(heading: str) -> list[str]:
    section = CONFIGURATION.split(f"\n### {heading}\n", 1)[1].split("\n#", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def test_the_configuration_tables_say_what_help_says():
    # Defaults and meanings drift when written twice: each row must be the variable's own.
    training = variables.TRAINING_VARS
    names = {v.name for v in training}
    expected = {
        "benchmark.py": training,
        "bench_decompose.py": [v for v in script_vars("bench_decompose.py") if v.name not in names],
        "run_sweep.sh": sweep_plan.VARS,
        "run_node.sh": node.VARS,
        "bench_flash_attn.py": script_vars("bench_flash_attn.py"),
        "bench_hbm.py": script_vars("bench_hbm.py"),
        "bench_comm.py": script_vars("bench_comm.py"),
        "check_capabilities.py": script_vars("check_capabilities.py"),
    }
    for heading, table in expected.items():
        assert table_rows(heading) == [readme_row(v) for v in table], heading


def test_the_readme_links_each_reference_page_and_stays_short():
    for page in ("configuration", "outputs", "report", "forecast", "install", "records", "flops", "model-families",
                 "layout"):
        assert f"(docs/{page}.md)" in README and (REPO / "docs" / f"{page}.md").is_file()
    assert len(README.splitlines()) < 300  # a user's page; the tables live in docs/


def test_the_records_page_lists_every_field_of_the_schema_as_declared():
    # A field is added once, in log/schema.py: the page's tables are generated from it.
    page = (REPO / "docs" / "records.md").read_text()
    fields = page.split("\n## Fields by kind\n", 1)[1].split("\n## ", 1)[0]
    assert fields.strip("\n").split("\n\n", 1)[1] == schema.markdown().strip("\n"), \
        "docs/records.md is out of date: paste `python -m upgrade_bench.log.schema` under 'Fields by kind'"
    documented = {line.split("`")[1] for line in fields.splitlines() if line.startswith("| `")}
    assert {"seq_len", "peak_mem_gib", "hardware.gpu_name", "tflops_mean", "item"} <= documented

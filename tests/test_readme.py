"""The README documents every variable, and CI runs exactly the README's test command."""
from conftest import REPO, import_script
from upgrade_bench.sweep.node import main as node
from upgrade_bench.sweep import plan as sweep_plan
from upgrade_bench.training import variables
from upgrade_bench.log import schema

README = (REPO / "README.md").read_text()
CONFIGURATION = (REPO / "docs" / "configuration.md").read_text()  # the README links it


CONFIG_DOCS = import_script("tools/config_docs.py")


def test_every_environment_variable_is_documented():
    tables = [variables.TRAINING_VARS, sweep_plan.VARS, node.VARS, *CONFIG_DOCS.sections().values()]
    missing = sorted({var.name for table in tables for var in table if f"| `{var.name}` |" not in CONFIGURATION})
    assert missing == []


def test_ci_runs_the_readme_test_command():
    command = ".venv/bin/python -m pytest -q tests"
    assert f"\n{command}\n" in README
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert ci[-1] == command and "./install.sh --cpu" in ci


def test_the_configuration_tables_say_what_help_says():
    # Defaults and meanings drift when written twice: each row must be the variable's own.
    for heading, table in CONFIG_DOCS.sections().items():
        assert CONFIG_DOCS.table_rows(CONFIGURATION, heading) == [CONFIG_DOCS.row(v) for v in table], \
            f"{heading}: run tools/config_docs.py"


def test_the_readme_links_each_reference_page_and_stays_short():
    for page in ("configuration", "outputs", "report", "forecast", "install", "records", "flops", "model-families",
                 "layout"):
        assert f"(docs/{page}.md)" in README and (REPO / "docs" / f"{page}.md").is_file()
    assert len(README.splitlines()) < 330  # a user's page, two worked cases; the tables live in docs/


def test_the_records_page_lists_every_field_of_the_schema_as_declared():
    # A field is added once, in log/schema.py: the page's tables are generated from it.
    page = (REPO / "docs" / "records.md").read_text()
    fields = page.split("\n## Fields by kind\n", 1)[1].split("\n## ", 1)[0]
    assert fields.strip("\n").split("\n\n", 1)[1] == schema.markdown().strip("\n"), \
        "docs/records.md is out of date: paste `python -m upgrade_bench.log.schema` under 'Fields by kind'"
    documented = {line.split("`")[1] for line in fields.splitlines() if line.startswith("| `")}
    assert {"seq_len", "peak_mem_gib", "hardware.gpu_name", "tflops_mean", "item"} <= documented

"""The package's layers only point down (issue 37): read from every module's imports, and what
loading the report pulls in, run for real."""
import ast
import subprocess
import sys

from conftest import REPO
from upgrade_bench.hardware import fingerprint
from upgrade_bench.kernels.attention import backends as attn_backends
from upgrade_bench.log import runs
from upgrade_bench.report.published import guide as published
from upgrade_bench import settings
from upgrade_bench.training import variables

PACKAGE = REPO / "upgrade_bench"
# Lowest first: a module may import its own layer and those below. The report sits beside the
# measuring wings, not above them: it reads records and tables, and of `kernels` only the
# attention backend table (TABLES).
RANK = {"faults": 0, "paths": 0, "numfmt": 0, "interrupts": 0, "hardware": 1, "models": 1, "log": 2,
        "settings": 3, "kernels": 4, "report": 4, "capability": 5, "training": 6, "sweep": 7}
TABLES = {"upgrade_bench.kernels.attention.backends", "upgrade_bench.kernels.attention.adapters"}


def wing(module: str) -> str:
    return module.split(".")[1]


def imports(path) -> set:
    """The upgrade_bench modules (or packages) `path` imports, as absolute names."""
    module = ".".join(path.relative_to(REPO).with_suffix("").parts)
    package = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            target = base + (node.module.split(".") if node.module else [])
            if target[:1] == ["upgrade_bench"]:
                names = [".".join(target + [a.name]) for a in node.names]
                out |= {n for n in names if (REPO / (n.replace(".", "/") + ".py")).exists()
                        or (REPO / n.replace(".", "/")).is_dir()} or {".".join(target)}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("upgrade_bench.")}
    return {m for m in out if m.count(".") >= 1}


def test_every_import_points_down():
    upward = []
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        if module.count(".") < 1 or wing(module) == "__init__":
            continue
        for target in imports(path):
            if target in TABLES and wing(module) == "report":
                continue
            if RANK[wing(target)] > RANK[wing(module)] or (wing(module) == "report" and wing(target) == "kernels"):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_an_entry_point_is_imported_only_by_the_node_that_runs_its_script():
    # A script's main module (its VARS and main) sits at the top of its wing: the node reads the
    # settings of the scripts it runs; nothing else leans on an entry point.
    leaning = []
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        for target in imports(path):
            if target.endswith(("main", "_main")) and module != "upgrade_bench.sweep.node.main":
                leaning.append(f"{module} -> {target}")
    assert leaning == []


def test_no_module_loads_another_by_its_file_path():
    # importlib's file loaders hide an arrow from this test's import graph (settings.script_module did)
    hidden = [str(p.relative_to(REPO)) for p in PACKAGE.rglob("*.py") if "spec_from_file_location" in p.read_text()]
    assert hidden == []


def test_loading_the_report_loads_no_measuring_code():
    code = ("import sys; import plot_results; "
            "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('upgrade_bench.')}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    wings = set(eval(out.stdout))
    assert not wings & {"training", "sweep", "capability"}, wings
    loaded = subprocess.run([sys.executable, "-c", "import sys, plot_results; print(sorted(m for m in sys.modules "
                             "if m.startswith('upgrade_bench.kernels')))"], capture_output=True, text=True, cwd=REPO,
                            timeout=60).stdout
    assert set(eval(loaded)) <= TABLES | {"upgrade_bench.kernels", "upgrade_bench.kernels.attention"}


def test_the_header_lists_every_attention_package():
    assert set(attn_backends.DISTRIBUTIONS) <= set(fingerprint.STACK_DISTRIBUTIONS)


def test_the_guides_published_config_is_what_a_default_run_records():
    # published.GUIDE_CONFIG is written out so the report reads no training code; a new
    # setting must keep its default out of a recorded config (log/runs.IDENTITY_DEFAULTS).
    defaults = runs.training_config(settings.parse(variables.TRAINING_VARS, {}), True, 8, "")
    assert defaults == published.GUIDE_CONFIG

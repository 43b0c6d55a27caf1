"""The package's layers only point down (issue 37), and so do the report wing's rooms (issue 51);
no import cycle inside any wing: read from every module's imports, and what loading the report
pulls in, run for real."""
import ast
import re
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


def report_rooms() -> list:
    """The report wing's rooms in their rank, as its index (report/__init__.py) lists them: a room
    name at the start of a line and two spaces after it (a sub-package's with its '/')."""
    index = ast.get_docstring(ast.parse((PACKAGE / "report" / "__init__.py").read_text()))
    return [m.group(1) for m in re.finditer(r"^(\w+)/?(?=\s{2})", index, re.MULTILINE)]


def room(module: str) -> str:
    """'upgrade_bench.report.page.answer' -> 'page'; 'upgrade_bench.report.main' -> 'main'."""
    return module.split(".")[2]


def test_every_import_inside_the_report_points_down_its_rooms():
    rooms = report_rooms()
    assert rooms[:2] == ["text", "published"] and rooms[-1] == "main", rooms  # the index was read
    upward = []
    for path in (PACKAGE / "report").rglob("*.py"):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        if path.parent == PACKAGE / "report" and path.name == "__init__.py":
            continue
        for target in imports(path):
            if target.startswith("upgrade_bench.report.") and rooms.index(room(target)) > rooms.index(room(module)):
                upward.append(f"{module} -> {target}")
    assert upward == []


def cycles(graph: dict) -> list:
    """The import cycles of `graph` ({module: modules it imports}): its strongly connected
    components of more than one module (Tarjan's algorithm), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))
    for v in list(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_inside_any_wing():
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name == "__init__.py":  # a package's own imports are its modules', loaded with it
            continue
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        graph[module] = {t for t in imports(path) if t.count(".") >= 2 and wing(t) == wing(module)}
    assert cycles(graph) == []


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

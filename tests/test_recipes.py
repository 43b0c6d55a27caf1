"""docs/layout.md, taken at its word: the recipes followed on a scratch copy of the repository (a
GPU, a model family inserted anywhere in its table, a training precision, a workload, a report
section) need only the files they name, no test edit; and the page names only files and functions
that exist."""
import json
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, script_env

LAYOUT = (REPO / "docs" / "layout.md").read_text()
FILES = [p.relative_to(REPO).as_posix() for p in REPO.rglob("*")
         if p.is_file() and not {".git", ".venv", ".cache", "results", "__pycache__"} & set(p.parts)]


def named_files(text: str) -> set:
    """The files a page names in backticks: paths with an extension the project uses."""
    return set(re.findall(r"`([\w/.-]+\.(?:py|md|sh|json|ini))`", text))


def named_attributes(text: str) -> set:
    """(module, name) of every `module.name` (or `dir/module.name`) the page names in backticks,
    a function's `()` allowed, where the module is one of the package's."""
    found = set()
    for module, name in re.findall(r"`((?:[a-z_]+/)*[a-z_]+)\.([A-Za-z_]+)(?:\([^`]*\))?`", text):
        if name not in ("py", "md", "sh", "json", "ini"):
            found.add((module, name))
    return found


def where(name: str) -> list:
    return [f for f in FILES if f == name or f.endswith("/" + name)]


def test_the_layout_page_names_only_files_that_exist():
    assert named_files("`models/flops.py`, `gone/nowhere.py`") == {"models/flops.py", "gone/nowhere.py"}
    missing = sorted(name for name in named_files(LAYOUT) if not where(name))
    assert missing == []


def test_the_layout_page_names_only_functions_and_tables_that_exist():
    assert named_attributes("`capabilities.attention_gate` and `attention/backends.resolve()`") == {
        ("capabilities", "attention_gate"), ("attention/backends", "resolve")}
    gone = []
    for module, name in sorted(named_attributes(LAYOUT)):
        homes = where(module + ".py")
        if not homes:
            if where(module.split("/")[-1]) or module in ("torch", "triton", "transformers", "settings"):
                continue  # a package or library, not a module of ours
            gone.append(f"{module}.{name} (no module {module}.py)")
            continue
        defined = re.compile(rf"^\s*(def|class) {name}\b|^{name}\b.*=", re.M)
        if not any(defined.search((REPO / h).read_text()) for h in homes):
            gone.append(f"{module}.{name}")
    assert gone == []


def add_after(path, anchor: str, text: str) -> None:
    source = path.read_text()
    assert anchor in source, f"{path.name}: the recipe's anchor {anchor!r} is gone"
    path.write_text(source.replace(anchor, anchor + text, 1))


@pytest.mark.xdist_group("recipes")
def test_the_recipes_need_only_the_files_they_name(tmp_path):
    scratch = tmp_path / "repo"
    shutil.copytree(REPO, scratch, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".cache", "results", "out", "__pycache__", ".pytest_cache", "*.png"))
    package = scratch / "upgrade_bench"
    # A GPU: one row of hardware/gpus.py citing its datasheet.
    assert "a GPU | `hardware/gpus.py`: one row" in LAYOUT
    add_after(package / "hardware" / "gpus.py", "_TABLE = [\n",
              '    (_CHIP + r"z700", GPUSpec("Z700", 1000, 2000, None, 100, 5.0, 800,\n'
              '                             datasheet="NVIDIA Z700 Tensor Core GPU datasheet")),\n')
    # A model family: a row of FAMILIES (here between two others, not appended) and its tiny config.
    assert "1. `models/architecture.py`: a row of `FAMILIES`" in LAYOUT and "2. `configs/tiny-<family>.json`" in LAYOUT
    add_after(package / "models" / "architecture.py", '"qwen2": Family(read_dense, "dense, GQA, layer_types"),\n',
              '    "olmo2": Family(read_dense, "dense, GQA, q/k norms"),\n')
    tiny = json.loads((REPO / "configs" / "tiny.json").read_text())
    (scratch / "configs" / "tiny-olmo2.json").write_text(json.dumps(
        {**tiny, "model_type": "olmo2", "architectures": ["Olmo2ForCausalLM"]}))
    # A training precision: a row of hardware/precisions.py (an existing recipe under a new name).
    assert "1. `hardware/precisions.py`: a row" in LAYOUT
    add_after(package / "hardware" / "precisions.py", "    Precision(\"bf16\", None, None, converts=\"every GEMM in bf16 (the guide's runs)\"),\n",
              '    Precision("fp8-recipe", "tensorwise", TORCHAO, "torchao.float8", "matmul:fp8_e4m3:tensorwise", "fp8",\n'
              '              "fp8", "a copy of fp8-tensorwise under its own name", _KEEPS_FP8, _FP8_EXPERTS),\n')
    # A workload: one row of training/workloads.py's TABLE.
    assert "| a workload | `training/workloads.py`: one row of `TABLE`" in LAYOUT
    add_after(package / "training" / "workloads.py", "TABLE = (\n",
              '    Workload("tiny-try", "the tiny model on a CPU, two lengths", {"MODEL": "tiny", "ZERO_STAGE": "2",\n'
              '             "OFFLOAD_OPTIMIZER": "0", "GRAD_CHECKPOINT": "0", "SEQLENS": "64 128"}),\n')
    # A report section: its rows in compare/, its words in page/, its place in page/markdown.py's
    # render, its modules in report/__init__.py's index, the golden page regenerated.
    for step in ("(a frozen dataclass) and the function that makes it, in the room of",
                 "2. The words: a module in `page/`", "its place on the page in `page/markdown.py` (`render`",
                 "3. `report/__init__.py`: the new modules named under their rooms",
                 "4. `tests/golden/`: regenerate (`.venv/bin/python -m tests.report.golden`)"):
        assert step in LAYOUT, step
    report = package / "report"
    (report / "compare" / "lengths.py").write_text(
        '"""How many lengths each series measured (numbers only)."""\n'
        "from dataclasses import dataclass\n\n\n"
        "@dataclass(frozen=True)\nclass LengthRow:\n    label: str\n    lengths: int\n\n\n"
        "def rows(series_list) -> list:\n"
        "    return [LengthRow(s.label, len(s.points)) for s in series_list if s.points]\n")
    (report / "page" / "lengths.py").write_text(
        '"""The lengths each series measured, as a table of report.md."""\n'
        "from ..compare.lengths import rows\nfrom ..text.tables import md_table\n\n\n"
        "def lengths_markdown(series_list) -> str:\n"
        "    table = [[r.label, str(r.lengths)] for r in rows(series_list)]\n"
        '    return md_table(["series", "lengths measured"], table) if table else ""\n')
    add_after(report / "page" / "markdown.py", "from .bound import workload_markdown\n",
              "from .lengths import lengths_markdown\n")
    add_after(report / "page" / "markdown.py", '("Attention share per workload", workload_markdown(a.data.series)),\n',
              '                ("Lengths measured", lengths_markdown(a.data.series)),\n')
    add_after(report / "__init__.py", "isolated_attention, precision, bound", ", lengths")
    add_after(report / "__init__.py", "markdown, terminal, export", ", lengths")
    (scratch / "results").symlink_to(REPO / "results")  # the committed logs the golden page is made of
    # The family's, the precision's and the workload's last step: tools/config_docs.py, run once.
    assert "`tools/config_docs.py`, run once" in LAYOUT
    env = script_env({"PYTHONPATH": str(scratch)})
    docs = subprocess.run([sys.executable, "tools/config_docs.py"], cwd=scratch, env=env, capture_output=True,
                          text=True, timeout=120)
    assert docs.returncode == 0, docs.stderr
    configuration = (scratch / "docs" / "configuration.md").read_text()
    assert "tiny-olmo2" in configuration and "fp8-recipe" in configuration and "tiny-try" in configuration
    # The report section's last step: the golden outputs regenerated, the diff the new section alone.
    golden = subprocess.run([sys.executable, "-m", "tests.report.golden"], cwd=scratch, env=env, capture_output=True,
                            text=True, timeout=120)
    assert golden.returncode == 0, golden.stderr
    for name in ("terminal.txt", "stderr.txt", "points.csv"):
        assert (scratch / "tests" / "golden" / name).read_text() == (REPO / "tests" / "golden" / name).read_text()
    page = (scratch / "tests" / "golden" / "report.md").read_text()
    start = page.index("## Lengths measured\n\n| series | lengths measured |\n")
    end = page.index("\n## ", start) + 1
    assert page[:start] + page[end:] == (REPO / "tests" / "golden" / "report.md").read_text()
    # The tests that iterate the tables take the new rows with no edit of theirs.
    checks = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-n", "0", "-p", "no:cacheprovider", "-x", "tests/test_gpus.py",
         "tests/test_readme.py", "tests/test_architecture.py", "tests/test_resolver.py", "tests/test_workloads.py",
         "tests/test_layers.py", "tests/report/test_index.py", "tests/report/test_golden.py", "-k",
         "not published_sizes and not by_hand and not mixer_kernels and not kernel_packages and not fallback"],
        cwd=scratch, env=env, capture_output=True, text=True, timeout=300)
    assert checks.returncode == 0, checks.stdout[-3000:]
    ran = re.search(r"(\d+) passed", checks.stdout)
    assert ran and int(ran.group(1)) > 50
    assert "[Z700]" in checks.stdout and "tiny-olmo2" in checks.stdout and "[tiny-try]" in checks.stdout  # the new rows

#!/usr/bin/env python3
"""docs/configuration.md's variable tables, generated from the scripts' own settings (what
`--help` prints), so a setting is documented where it is declared: run this after adding or
changing one (`.venv/bin/python tools/config_docs.py`); tests/test_readme.py checks the page
against the same tables.
"""
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "configuration.md"


def sections() -> dict:
    """{heading of docs/configuration.md: the variables its table lists}."""
    from upgrade_bench.capability import main as capabilities
    from upgrade_bench.kernels.attention import main as attention
    from upgrade_bench.kernels.comm import main as comm
    from upgrade_bench.kernels.hbm import main as hbm
    from upgrade_bench.sweep.node import main as node
    from upgrade_bench.sweep import plan as sweep_plan
    from upgrade_bench.training import decompose_main, variables

    training = variables.TRAINING_VARS
    names = {v.name for v in training}
    return {
        "benchmark.py": training,
        "bench_decompose.py": [v for v in decompose_main.VARS if v.name not in names],
        "run_sweep.sh": sweep_plan.VARS,
        "run_node.sh": node.VARS,
        "bench_flash_attn.py": attention.VARS,
        "bench_hbm.py": hbm.VARS,
        "bench_comm.py": comm.VARS,
        "check_capabilities.py": capabilities.VARS,
    }


def row(var) -> str:
    """A variable's row: the --help facts."""
    default = " ".join(map(str, var.default)) if isinstance(var.default, list) else var.default
    if isinstance(default, bool):
        default = int(default)
    cells = [f"`{var.name}`", f"`{default}`" if default != "" else "`(empty)`", var.allowed(), var.help]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def table_rows(page: str, heading: str) -> list[str]:
    section = page.split(f"\n### {heading}\n", 1)[1].split("\n#", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def rewrite(page: str) -> str:
    """`page` with each section's variable rows replaced by the generated ones."""
    for heading, variables in sections().items():
        old = table_rows(page, heading)
        start = page.index(old[0], page.index(f"\n### {heading}\n"))
        end = page.index(old[-1], start) + len(old[-1])
        page = page[:start] + "\n".join(row(v) for v in variables) + page[end:]
    return page


if __name__ == "__main__":
    PAGE.write_text(rewrite(PAGE.read_text()))

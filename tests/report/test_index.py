"""report/__init__.py's index names every module of the report wing under its room, and nothing
that does not exist: a contributor finds a module from it (tests/test_layers.py ranks the rooms
in its order)."""
import ast
import re

from conftest import REPO

WING = REPO / "upgrade_bench" / "report"


def index() -> dict:
    """{room: [the modules its lines list]}: a room's line starts at the margin, its modules'
    lines are indented and hold names alone, comma-separated; a top-level module is a room of its own."""
    text = ast.get_docstring(ast.parse((WING / "__init__.py").read_text()))
    rooms, room = {}, None
    for line in text.splitlines():
        start = re.match(r"^(\w+)(/?)\s{2}", line)
        if start:
            room = start.group(1) + start.group(2)
            rooms[room] = []
        elif room and re.fullmatch(r"\s+\w+(, \w+)*,?", line):
            rooms[room] += [name.strip() for name in line.split(",") if name.strip()]
    return rooms


def on_disk() -> dict:
    found = {}
    for path in WING.rglob("*.py"):
        parts = path.relative_to(WING).with_suffix("").parts
        if parts[-1] == "__init__":
            continue
        if len(parts) == 1:
            found[parts[0]] = []
        else:
            found.setdefault(parts[0] + "/", []).append(".".join(parts[1:]))
    return found


def test_the_index_names_every_module_of_the_report_and_nothing_else():
    listed, there = index(), on_disk()
    assert sorted(listed) == sorted(there)
    for room, modules in there.items():
        assert sorted(listed[room]) == sorted(modules), room


def test_the_index_is_read():
    listed = index()
    assert list(listed)[:3] == ["text/", "published/", "read/"] and listed["main"] == []
    assert "answer" in listed["decide/"] and "answer" in listed["page/"]

"""Imports point one way: each room of the package imports only the rooms before it in the layers
table of docs/architecture.md, so the map and the code cannot drift apart."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "agenttui"


def layers() -> list[str]:
    """The rooms in the order of the table's first column (`errors`, `stores`, ...)."""
    table = (ROOT / "docs" / "architecture.md").read_text().split("## Layers", 1)[1].split("\n## ", 1)[0]
    return [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")]


def room_of(module: str) -> str | None:
    """`agenttui.runs.status` → `runs`; `agenttui.cli` → `cli`; the package root has no room."""
    parts = module.split(".")
    return parts[1] if parts[0] == "agenttui" and len(parts) > 1 else None


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_table_names_every_room() -> None:
    packages = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists()}
    modules = {path.stem for path in PACKAGE.glob("*.py") if not path.name.startswith("__")}
    assert sorted(layers()) == sorted(packages | modules)


def test_every_import_points_to_an_earlier_room() -> None:
    order = {room: index for index, room in enumerate(layers())}
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = room_of(".".join(path.relative_to(ROOT).with_suffix("").parts))
        if here not in order:
            continue  # the package root and __main__ sit above every room
        for module in imports(path):
            there = room_of(module)
            if there in order and there != here and order[there] > order[here]:
                upward.append(f"{path.relative_to(ROOT)} imports {module} ({here} → {there})")
    assert not upward, "imports that point up the layers:\n" + "\n".join(upward)

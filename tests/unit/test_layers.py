"""Imports point one way: each room of the package imports only the rooms before it in the layers
table of docs/architecture.md, and each room of ``runs`` only those before it in its own table, so
the map and the code cannot drift apart."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "agenttui"


def table_rooms(heading: str) -> list[str]:
    """The rooms in the order of the first column of the table under ``heading``."""
    section = (ROOT / "docs" / "architecture.md").read_text().split(f"\n{heading}\n", 1)[1]
    table = section.split("\n## ", 1)[0].split("\n### ", 1)[0]
    return [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")]


def layers() -> list[str]:
    """The rooms in the order of the table's first column (`errors`, `stores`, ...)."""
    return table_rooms("## Layers")


def room_of(module: str) -> str | None:
    """`agenttui.runs.statuses.status` → `runs`; `agenttui.cli` → `cli`; the package root has no room."""
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


RUNS = PACKAGE / "runs"


def runs_room_of(module: str) -> str | None:
    """`agenttui.runs.statuses.status` → `statuses`; `agenttui.runs` itself has no room."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["agenttui", "runs"] and len(parts) > 2 else None


def test_the_runs_table_names_every_room_of_runs() -> None:
    rooms = {path.name for path in RUNS.iterdir() if (path / "__init__.py").exists()}
    assert sorted(table_rooms("### The rooms of `runs`")) == sorted(rooms)
    assert not [path.name for path in RUNS.glob("*.py") if path.name != "__init__.py"], "a module of runs in no room"


def test_every_import_in_runs_points_to_an_earlier_room() -> None:
    order = {room: index for index, room in enumerate(table_rooms("### The rooms of `runs`"))}
    upward = []
    for path in sorted(RUNS.rglob("*.py")):
        here = runs_room_of(".".join(path.relative_to(ROOT).with_suffix("").parts))
        if here not in order:
            continue  # the package's root names what every room offers
        for module in imports(path):
            there = runs_room_of(module)
            if there in order and there != here and order[there] > order[here]:
                upward.append(f"{path.relative_to(ROOT)} imports {module} ({here} → {there})")
    assert not upward, "imports that point up the rooms of runs:\n" + "\n".join(upward)


TUI = PACKAGE / "tui"


def tui_imports() -> dict[str, set[str]]:
    """Each module of the TUI and the TUI's modules it imports: at the top, in a function (a
    deferred import is still an import) or for types alone."""
    modules = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): path
        for path in TUI.rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        named = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                named |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
            elif isinstance(node, ast.Import):
                named |= {alias.name for alias in node.names}
        graph[module] = {other for other in named if other in modules and other != module}
    return graph


def test_no_module_of_the_tui_imports_the_app() -> None:
    """Screens, widgets and the palette reach the app through ``TuiHost`` and messages."""
    importers = sorted(module for module, imported in tui_imports().items() if "agenttui.tui.app" in imported)
    assert importers == []


def test_widgets_import_no_screen() -> None:
    graph = tui_imports()
    upward = sorted(
        f"{module} imports {other}"
        for module, imported in graph.items()
        if module.startswith("agenttui.tui.widgets")
        for other in imported
        if other.startswith("agenttui.tui.screens")
    )
    assert upward == []


def test_the_tui_has_no_import_circle() -> None:
    graph = tui_imports()
    done: set[str] = set()

    def circle_from(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return None
        for other in sorted(graph[module]):
            if found := circle_from(other, [*path, module]):
                return found
        done.add(module)
        return None

    for module in sorted(graph):
        circle = circle_from(module, [])
        assert circle is None, "an import circle: " + " → ".join(circle)

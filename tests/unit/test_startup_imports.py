"""Start-up stays lean: what `agenttui STORE` imports before its first screen, checked by name (no
timing: benchmarks/startup.py measures it), each in a fresh interpreter."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

#: Modules the runs list, the first screen, does not need: imported when first used, not at start.
NOT_AT_START = [
    # The records, the codec, the Journal and the status rules: the statuses are read once the
    # first rows are on screen.
    "agenttui.journal.record",
    "agenttui.journal.codec",
    "agenttui.journal.journal",
    "agenttui.journal.describe",
    "agenttui.runs.statuses.status",
    "agenttui.runs.reading.view",
    "agenttui.agent.model",
    "agenttui.agent.tools",
    "agenttui.stores.memory",
    "agenttui.tui.screens.help",  # the help and the dialogs, when first shown
    "agenttui.tui.screens.dialogs",
    "agenttui.agent.loop",  # the agent loop: replays, re-drives, recover
    "agenttui.agent.scripted",
    "agenttui.agent.factory",  # the user's agent, only with --agent
    "agenttui.runs.recovery.actions",
    "agenttui.runs.recovery.operations",
    "agenttui.replay",
    "agenttui.render",
    "agenttui.demo",
    "agenttui.stores.postgres",
    "agenttui.tui.screens.run",
    "agenttui.tui.screens.replay",
    "agenttui.tui.screens.diff",
    "agenttui.tui.screens.recover",
    "textual.widgets._tabbed_content",  # the run and replay screens' panes
    "watchfiles",  # the change feed's file watcher starts after the first rows
    "anyio",
]
#: Inside those, what the first screen does need: fitting text to cells (the runs list's details
#: cut after a word), whose package loads the rest of itself on first use.
AT_START = {"agenttui.render", "agenttui.render.cells"}


def imported_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_the_tui_imports_only_what_its_first_screen_needs() -> None:
    # The console script imports the command line, which imports the app to run it.
    modules = imported_after("import agenttui.cli, agenttui.tui.app")
    assert "agenttui.tui.screens.runs" in modules  # the probe sees the app's imports
    early = sorted(m for m in modules - AT_START for lazy in NOT_AT_START if m == lazy or m.startswith(lazy + "."))
    assert not early, f"imported before the first screen needs them: {early}"


def test_the_command_line_alone_imports_no_tui() -> None:
    # `agenttui --help` and `agenttui runs STORE --json` start without Textual.
    modules = imported_after("import agenttui.cli")
    assert not sorted(m for m in modules if m.split(".")[0] in ("textual", "rich") or m.startswith("agenttui.tui"))


@pytest.mark.parametrize("package", ["agenttui.agent", "agenttui.journal", "agenttui.runs", "agenttui.stores"])
def test_a_package_root_gives_its_heavy_names_when_first_asked(package: str) -> None:
    root = importlib.import_module(package)
    lazy: dict[str, tuple[str, ...]] = root.LAZY
    # Imported alone, the root imports none of the modules it gives names of lazily.
    alone = imported_after(f"import {package}")
    assert not sorted(f"{package}.{module}" for module in lazy if f"{package}.{module}" in alone)
    for module, names in lazy.items():
        for name in names:
            assert name in root.__all__
            assert getattr(root, name) is getattr(importlib.import_module(f"{package}.{module}"), name)
    # A name that were also a module's would be shadowed by the module once that is imported.
    submodules = {info.name for info in pkgutil.iter_modules(root.__path__)}
    assert not submodules & {name for names in lazy.values() for name in names}
    for name in root.__all__:
        assert getattr(root, name) is not None
    with pytest.raises(AttributeError):
        getattr(root, "no_such_name")  # noqa: B009  (the module's __getattr__ is what is tested)

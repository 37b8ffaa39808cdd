"""The core never imports Textual or Rich: every module of every room before `tui` in the layers
table, each room imported in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.unit.test_layers import layers

CORE = ["agenttui", *(f"agenttui.{room}" for room in layers()[: layers().index("tui")])]


@pytest.mark.parametrize("room", CORE)
def test_core_room_imports_neither_textual_nor_rich(room: str) -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        f"package = importlib.import_module({room!r})\n"
        "rooms = [] if package.__name__ == 'agenttui' else getattr(package, '__path__', [])\n"  # the root: itself only
        "for module in pkgutil.walk_packages(rooms, package.__name__ + '.'):\n"
        "    importlib.import_module(module.name)\n"
        "leaked = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "assert not leaked, leaked\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr

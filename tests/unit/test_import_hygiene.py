"""The core never imports Textual or Rich."""

from __future__ import annotations

import subprocess
import sys

import pytest

CORE = ["agenttui", "agenttui.journal", "agenttui.stores", "agenttui.stores.sqlite", "agenttui.stores.postgres"]


@pytest.mark.parametrize("module", CORE)
def test_core_module_imports_neither_textual_nor_rich(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "leaked = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "assert not leaked, leaked\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr

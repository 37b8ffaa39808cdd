"""The render core never imports Textual or Rich."""

from __future__ import annotations

import subprocess
import sys


def test_render_imports_neither_textual_nor_rich() -> None:
    code = (
        "import sys, agenttui.render\n"
        "leaked = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "assert not leaked, leaked\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr

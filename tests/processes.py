"""``agenttui`` run as a real process, the way a person or a script runs it: the one helper the
tests that need the real entry point (its exit code, its stderr, its signals) share."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping


def agenttui(
    *args: str, stdin: str | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m agenttui ARGS``, its output captured as text. No standard input unless
    ``stdin`` is given (a command must never wait on one); ``env`` adds to the environment,
    from which ``AGENTTUI_DEBUG`` is removed so that no traceback is asked for."""
    environment = {k: v for k, v in os.environ.items() if k != "AGENTTUI_DEBUG"} | dict(env or {})
    return subprocess.run(
        [sys.executable, "-m", "agenttui", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        env=environment,
    )

"""The last resort of a process told to stop: if it has not ended ``BACKSTOP_SECONDS`` after the
signal, it ends there, with the exit code the signal gives.

A stop cancels what runs on the event loop, and leases are released on the way out; but a thread
blocked in a read nothing will end (the MCP transport's on an open stdin, the TUI's on a closed
terminal) keeps a process alive that nobody can stop but SIGKILL. Imports nothing of agenttui:
the TUI and the CLI both arm it.
"""

from __future__ import annotations

import os
import threading
import time

#: How long a stop by signal may take before the process is ended regardless.
BACKSTOP_SECONDS = 2.0

_said = threading.Event()


def arm(return_code: int, last_words: str = "") -> None:
    """End the process with ``return_code`` in ``BACKSTOP_SECONDS``, saying ``last_words`` on
    stderr first unless the process has said why it stops already (``said``)."""

    def backstop() -> None:
        time.sleep(BACKSTOP_SECONDS)
        if last_words and not _said.is_set():
            os.write(2, last_words.encode() + b"\n")
        os._exit(return_code)

    threading.Thread(target=backstop, name="agenttui-backstop", daemon=True).start()


def said() -> None:
    """The process has said why it stops: a backstop that fires after this says nothing more."""
    _said.set()

"""The TUI stopped by a signal whatever its terminal's state: SIGTERM, and SIGHUP, which a closed
SSH session sends.

The handler itself does only what cannot wait, since it runs even where the event loop is stuck
(a write to a closed terminal blocks it): SIGHUP means the terminal is gone, its reads and writes
fail, and Textual's output thread, which dies on a failed write, would leave the app waiting
forever on its full queue (a stack dump showed ``App._shutdown`` → ``WriterThread.stop`` →
``Queue.put``); so the terminal's descriptors are pointed at /dev/null, which takes the last
frames. It arms the backstop (``agenttui.backstop``) that ends the process moments later, then
hands the quit itself to the event loop (``call_soon_threadsafe``), where the app exits as ``q``
does. A second signal ends the process at once. A stopped drive's leases are released on the way out when the
loop gets there, and lapse when it does not.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from typing import Protocol

from agenttui import backstop


class Exits(Protocol):
    def exit(self, *, return_code: int) -> None: ...


def stop_on_signals(app: Exits, return_code: int) -> None:
    """Quit ``app`` (as ``q`` does) on SIGTERM or SIGHUP; call from inside its event loop."""
    loop = asyncio.get_running_loop()
    stopping = threading.Event()

    def stop(signum: int, _frame: object) -> None:
        if signum == signal.SIGHUP:
            _leave_the_terminal()
        if stopping.is_set():  # asked twice: now
            os._exit(return_code)
        stopping.set()
        backstop.arm(return_code)
        loop.call_soon_threadsafe(lambda: app.exit(return_code=return_code))

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)


def _leave_the_terminal() -> None:
    """Point standard input, output and error, the closed terminal's, at /dev/null."""
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for fd in (0, 1, 2):
            os.dup2(null, fd)
    finally:
        os.close(null)

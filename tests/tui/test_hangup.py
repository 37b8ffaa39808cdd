"""A closed terminal ends the TUI: the process is gone within 3 s every time, as when an SSH
session drops. Each trial runs ``agenttui STORE`` on a pseudo-terminal of its own (the session
leader's controlling terminal, as sshd gives it), waits for the runs list, then closes the
terminal's other end: the kernel sends SIGHUP, and every read and write of the terminal fails."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures)

TRIALS = 50
AT_ONCE = 5
GONE_WITHIN = 3.0
#: What the runs list shows once its first rows are painted.
PAINTED = b"runs"


def close_the_terminal_once(store: Path) -> float:
    """Start the TUI on a terminal of its own, close it once the list shows; how long the
    process took to go (a hung one is killed, and reported as never gone)."""
    pid, terminal = pty.fork()
    if pid == 0:  # the child: the session leader, the terminal its controlling one
        os.execv(sys.executable, [sys.executable, "-m", "agenttui", str(store), "--theme", "agenttui-dark"])
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    shown, deadline = b"", time.monotonic() + 30
    while PAINTED not in shown and time.monotonic() < deadline:
        if select.select([terminal], [], [], 0.1)[0]:
            try:
                shown += os.read(terminal, 65536)
            except OSError:
                break
    assert PAINTED in shown, shown[-400:]
    os.close(terminal)  # the SSH session drops
    closed = time.monotonic()
    while time.monotonic() - closed < GONE_WITHIN + 2:
        if os.waitpid(pid, os.WNOHANG) != (0, 0):
            return time.monotonic() - closed
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return float("inf")


def test_a_closed_terminal_ends_the_tui_every_time(demo_db: Path) -> None:  # noqa: F811  (the fixture imported above)
    with ThreadPoolExecutor(AT_ONCE) as pool:
        took = list(pool.map(close_the_terminal_once, [demo_db] * TRIALS))
    slow = [seconds for seconds in took if seconds > GONE_WITHIN]
    assert not slow, f"{len(slow)} of {TRIALS} outlived their terminal by over {GONE_WITHIN} s: {sorted(took)[-5:]}"

"""End to end: ``agenttui demo`` in a real terminal (tmux), driven with keys, read back as text.

Everything is real: the demo store is built by the runtime, the TUI runs in a pseudo-terminal, and
the demo's background writer (a separate process) keeps ``live-tail-<pid>`` in flight, so the
screen must show that run's records growing without a key being pressed. Waits poll the screen
(bounded), never sleep for a fixed time.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
WIDTH, HEIGHT = 140, 40
#: How often the screen is read while waiting.
POLL = 0.1
#: The demo builds its store before the TUI starts; that can take a while on a loaded machine.
START_TIMEOUT = 90.0
STEP_TIMEOUT = 20.0
#: The live writer commits a turn every 1.5 s, and SQLite change detection may poll every 2 s.
GROWTH_TIMEOUT = 30.0

#: The tmux client's environment; COLUMNS/LINES from the test runner's terminal must not leak in.
ENV = {**{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")}, "TERM": "xterm-256color"}


class Terminal:
    """One tmux session on a private tmux server, so nothing touches anyone else's tmux."""

    def __init__(self, command: str) -> None:
        self.server = f"agenttui-e2e-{uuid.uuid4().hex[:10]}"
        self.target = "e2e"
        self._tmux(
            "-f", "/dev/null", "new-session", "-d", "-s", self.target, "-x", str(WIDTH), "-y", str(HEIGHT), command
        )
        # Keep the pane after the command exits, so a failure shows the last screen.
        self._tmux("set-option", "-t", self.target, "remain-on-exit", "on")

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.server, *args], check=False, capture_output=True, text=True, env=ENV, timeout=30
        )
        if done.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", self.target)

    def press(self, *keys: str) -> None:
        for key in keys:
            self._tmux("send-keys", "-t", self.target, key)

    def pane(self, field: str) -> str:
        return self._tmux("display-message", "-p", "-t", self.target, f"#{{{field}}}").strip()

    def wait_for(self, what: str, test: Callable[[str], object], timeout: float = STEP_TIMEOUT) -> str:
        """Poll the screen until ``test(screen)`` is truthy; fail with the last screen if it never is."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            dead = self.pane("pane_dead") == "1"
            screen = self.screen()
            if test(screen):
                return screen
            if dead:
                break  # the shell had gone before this look: nothing will change any more
            time.sleep(POLL)
        raise AssertionError(f"timed out waiting for {what}; the screen was:\n{screen}")

    def kill(self) -> None:
        subprocess.run(
            ["tmux", "-L", self.server, "kill-server"], check=False, capture_output=True, env=ENV, timeout=30
        )


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Callable[[str], Terminal]]:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed; the end-to-end test needs it")
    started: list[Terminal] = []

    def start(command: str) -> Terminal:
        started.append(Terminal(command))
        return started[-1]

    try:
        yield start
    finally:
        for term in started:
            term.kill()


def live_row(screen: str) -> tuple[str, int] | None:
    """The live run's id and its STEPS column, from the runs screen."""
    match = re.search(r"(live-tail-\d+)\s+\S+\s+[\w-]+\s+(\d+)\s+\d+", screen)
    return (match.group(1), int(match.group(2))) if match else None


def row_index(screen: str, run_id: str) -> int:
    """The position of ``run_id``'s row in the runs list on screen."""
    lines = screen.splitlines()
    header = next(i for i, line in enumerate(lines) if "PENDING / DETAIL" in line)
    return next(i for i, line in enumerate(lines[header + 1 :]) if run_id in line)


def records_shown(screen: str) -> int | None:
    match = re.search(r"run live-tail-\d+\s+([\d,]+) records", screen)
    return int(match.group(1).replace(",", "")) if match else None


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers signal 0; it has exited all the same.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True


def test_demo_in_a_real_terminal(terminal: Callable[[str], Terminal], tmp_path: Path) -> None:
    db, status_file = tmp_path / "demo.db", tmp_path / "exit-status"
    # The shell records the app's exit status itself: tmux learns it only when it reaps the
    # process, and this tmux (3.3a) was seen to leave the exited app a zombie for good.
    command = (
        f"cd {shlex.quote(str(ROOT))} && env TERM=xterm-256color "
        f"{shlex.quote(sys.executable)} -m agenttui demo --path {shlex.quote(str(db))} --bulk-turns 50; "
        f"echo $? > {shlex.quote(str(status_file))}"
    )
    term = terminal(command)

    # The runs screen: every demo run, with the live run listed among them.
    screen = term.wait_for("the runs screen", lambda s: re.search(r"\b\d+ runs\b", s) and live_row(s), START_TIMEOUT)
    assert "refund-a1005" in screen and "awaiting-approval" in screen and "demo.db" in screen
    row = live_row(screen)
    assert row is not None  # what the wait above waited for
    run_id, steps = row
    writer_pid = int(run_id.rpartition("-")[2])
    assert process_alive(writer_pid)

    # Its records count grows while nobody touches a key: the app follows another process's commits.
    term.wait_for(
        f"{run_id}'s steps to grow past {steps}",
        lambda s: (row := live_row(s)) is not None and row[1] > steps,
        GROWTH_TIMEOUT,
    )

    # Open the live run: move down to its row. Where it sits depends on how the app first heard
    # of it (a listing puts it in id order, a change notification appends it), so read it off.
    term.press("g", *["j"] * row_index(term.screen(), run_id), "Enter")
    screen = term.wait_for("the live run's screen", lambda s: records_shown(s) is not None)
    assert f"run {run_id}" in screen and "Inspector" in screen
    first = records_shown(screen)
    assert first is not None
    term.wait_for(
        "new records on the run screen", lambda s: (n := records_shown(s)) is not None and n > first, GROWTH_TIMEOUT
    )

    # The flowchart pane draws the run.
    term.press("w")
    term.wait_for("the flowchart", lambda s: "LLM" in s and "tool: lookup_order" in s)

    # Back to the runs, then the help screen lists the keys, in words.
    term.press("Escape")
    term.wait_for("the runs screen again", lambda s: "PENDING / DETAIL" in s)
    term.press("?")
    screen = term.wait_for("the help screen", lambda s: "Cycle status filter" in s)
    assert "Find and filter" in screen
    term.press("Escape")
    term.wait_for("the help screen to close", lambda s: "Cycle status filter" not in s and "PENDING / DETAIL" in s)

    # q quits: the app exits 0, and the demo stops its background writer.
    term.press("q")
    screen = term.wait_for("the app to exit", lambda s: status_file.exists() and status_file.read_text().strip())
    assert status_file.read_text().strip() == "0", f"the app exited with {status_file.read_text().strip()}:\n{screen}"
    deadline = time.monotonic() + STEP_TIMEOUT
    while process_alive(writer_pid) and time.monotonic() < deadline:
        time.sleep(POLL)
    assert not process_alive(writer_pid), f"the live writer {writer_pid} outlived the app"

"""``agenttui serve`` as a real process on a free port, and a real headless Chromium (the operating
system's, driven by Playwright) that reads what the page's terminal was sent."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.pg import free_port
from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (the demo store, for these tests too)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: As the machine's notes have it: no first run, no background connections (the network is closed).
CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip

#: Kept on the page: every byte the page's terminal was sent, as text (the terminal draws on a
#: canvas, so its rows are read from what it was sent, escapes left out).
CAPTURE_SCRIPT = """
(() => {
  window.__terminalText = [];
  window.__terminalTimes = [];  // when each piece came (performance.now()), as the page saw it
  window.__paintTimes = [];  // when the frame after each piece began
  window.__keyTimes = [];  // when each key went down in the page
  document.addEventListener("keydown", () => window.__keyTimes.push(performance.now()), true);
  const Real = window.WebSocket;
  const decoder = new TextDecoder();
  window.WebSocket = function (url, protocols) {
    const socket = protocols ? new Real(url, protocols) : new Real(url);
    socket.addEventListener("message", (event) => {
      if (typeof event.data !== "string") {
        window.__terminalText.push(decoder.decode(new Uint8Array(event.data), {stream: true}));
        const piece = window.__terminalTimes.push(performance.now()) - 1;
        // The frame that paints it: xterm.js draws in the animation frame after a write.
        requestAnimationFrame(() => { window.__paintTimes[piece] = performance.now(); });
      }
    });
    return socket;
  };
  window.WebSocket.prototype = Real.prototype;
})();
"""
ESCAPES = re.compile(r"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78])")


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    port: int

    def output(self) -> str:
        """What the server printed (call once it has stopped)."""
        assert self.process.stdout is not None
        return self.process.stdout.read()

    def tab_processes(self) -> list[int]:
        """The pids of the tabs' apps: the server's children."""
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.process.pid:
                children.append(int(stat.parent.name))
        return children


@contextmanager
def served(store: str, *args: str, env: Mapping[str, str] | None = None) -> Iterator[Served]:
    """``agenttui serve STORE --port N ARGS`` until the block ends (stopped as ctrl+c stops it)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "agenttui", "serve", store, "--port", str(port), *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                pytest.fail(
                    f"agenttui serve exited {process.returncode}: {process.stdout.read() if process.stdout else ''}"
                )
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                pytest.fail("agenttui serve did not listen within 30 s")
            time.sleep(0.05)
        yield Served(process, f"http://127.0.0.1:{port}/", port)
    finally:
        process.send_signal(2)  # ctrl+c
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    """A headless Chromium from the operating system's packages; skipped where none is installed,
    except in CI (``CI`` set), whose run installs it: there, missing is a failure."""
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"no Chromium at {CHROMIUM}: .ci/run installs it (apt-get install chromium)")
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            await launched.close()


class Tab:
    """One browser tab on the served TUI: keys typed into its terminal, its text read back."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.read_to = 0
        """How much of the text was seen by the last ``until`` (what a key press brought is after it)."""

    @classmethod
    async def open(cls, browser: Any, url: str) -> Tab:
        page = await browser.new_page(viewport={"width": 1200, "height": 800})
        await page.add_init_script(CAPTURE_SCRIPT)
        await page.goto(url)
        return cls(page)

    async def text(self) -> str:
        return ESCAPES.sub("", "".join(await self.page.evaluate("window.__terminalText || []")))

    async def until(self, *wanted: str, seconds: float = 30) -> str:
        """Wait until every one of ``wanted`` was sent after what the last ``until`` saw."""
        deadline = time.monotonic() + seconds
        while True:
            text = await self.text()
            fresh = text[self.read_to :]
            if all(part in fresh for part in wanted):
                self.read_to = len(text)
                return fresh
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"never shown: {wanted!r} in {len(text)} characters sent ({len(fresh)} fresh); the last sent: {fresh[-1500:]!r}"
                )
            await self.page.wait_for_timeout(50)

    async def press_until(self, key: str, wanted: str, *, again_on: str, tries: int = 5) -> str:
        """Press ``key`` until ``wanted`` is shown: again each time ``again_on`` is (the app said the
        key came too early, as a loaded machine's list still being laid out makes it)."""
        for _ in range(tries):
            await self.press(key)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                fresh = (await self.text())[self.read_to :]
                if wanted in fresh:
                    return await self.until(wanted)
                if again_on in fresh:
                    self.read_to += fresh.index(again_on) + len(again_on)
                    break
                await self.page.wait_for_timeout(50)
            else:
                break
        return await self.until(wanted, seconds=0)

    async def press(self, *keys: str) -> None:
        await self.page.focus(
            ".xterm-helper-textarea"
        )  # the terminal takes keys once focused (no click: the app would take it)
        for key in keys:
            await self.page.keyboard.press(key)

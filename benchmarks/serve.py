"""The TUI in a browser (issue 33): page load to the first run row, against the terminal's first
rows; and twenty tabs at once.

    python benchmarks/serve.py [--rounds 7] [--tabs 20] [--store FILE] [--smoke]

Needs Chromium from the operating system's packages (``apt-get install chromium``), driven by
Playwright (the test extra). The store is a demo built afresh (``agenttui demo --no-tui``, about
15 s) unless ``--store`` names one.

(a) **Page load → first run row**: ``agenttui serve STORE`` runs throughout (started before the
rounds, as a server is); each round opens a new tab in a running headless Chromium and times
from the navigation's start to the arrival of the first bytes the page's terminal is sent that
hold one of the store's run ids (read from the bytes it was sent, escapes taken out, as the
terminal's case is read from the bytes its pseudo-terminal is sent: like for like), on the
page's own clock (``performance.now()``: reading the page through the driver added 40-390 ms
that were not the page's). The animation frame after those bytes, in which xterm.js paints
them, is reported beside it: in this headless Chromium without a GPU it came 0-360 ms later. The tab's app is a process of its own, started for the tab: its start-up is in the
figure, as it is in the terminal's. Beside it, in the same rounds, alternating: ``agenttui
STORE`` in a pseudo-terminal of the same size, from its spawn to its first rows
(``startup.py``'s measure). Target: at most 1.5x the terminal's median.

(b) **Twenty tabs**: ``--tabs`` tabs opened at once on the store, each until its runs list
shows, and until every tab's app is done starting (the server and its apps under 5% of a core
over half a second); then the server's resident memory with every tab's app (the server and its children,
``VmRSS``: the spare app started ahead of the next page too), and in each tab in turn a key
(``j``) timed from the key going down in the page to the first bytes the page's terminal is sent
back, both read from the page's own clock (``performance.now()``: the driver's round trips to the
page are not the app's), the terminal focused first and quiet (focused, an app draws its footer's
keys). Target: every key answered within 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from startup import Case, cpu_seconds, environment, run_ids_pattern, to_first_paint  # noqa: E402

from tests.web.conftest import CAPTURE_SCRIPT, CHROMIUM, CHROMIUM_FLAGS, ESCAPES, Served, Tab, served  # noqa: E402

SIZE = (120, 40)
"""The terminal's, and about the browser page's (a 1200x800 viewport at the page's font)."""


async def page_to_first_row(browser: Any, url: str, first_rows: re.Pattern[bytes]) -> tuple[float, float]:
    """From the navigation's start to the animation frame after the first bytes that hold a run
    row (xterm.js paints them in it), and to those bytes' arrival, as the page's own clock has
    them (``performance.now()`` counts from the navigation's start): the driver's round trips to
    read the page are not the page's time."""
    page = await browser.new_page(viewport={"width": 1200, "height": 800})
    await page.add_init_script(CAPTURE_SCRIPT)
    await page.goto(url)
    await until_rows(Tab(page), first_rows)
    pieces = await page.evaluate("window.__terminalText")
    at = next(at for at in range(len(pieces)) if first_rows.search(ESCAPES.sub("", "".join(pieces[: at + 1])).encode()))
    while (times := await page.evaluate(f"[window.__paintTimes[{at}], window.__terminalTimes[{at}]]"))[0] is None:
        await asyncio.sleep(0.01)  # the frame has not begun yet
    await page.close()
    return float(times[0]) / 1000, float(times[1]) / 1000


async def until_rows(tab: Tab, first_rows: re.Pattern[bytes]) -> None:
    while not first_rows.search((await tab.text()).encode()):
        await asyncio.sleep(0.005)


def rss_mb(served_server: Served) -> float:
    """The server's resident memory and its tabs' apps'."""
    total = 0
    for pid in [served_server.process.pid, *served_server.tab_processes()]:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        total += next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    return total / 1024


def served_cpu_seconds(served_server: Served) -> float:
    """CPU time so far of the server and its tabs' apps (one may end meanwhile)."""
    total = 0.0
    for pid in [served_server.process.pid, *served_server.tab_processes()]:
        with contextlib.suppress(OSError):
            total += cpu_seconds(pid)
    return total


async def until_idle(served_server: Served) -> None:
    """Until the server and its tabs' apps use under 5% of a core over half a second."""
    before = served_cpu_seconds(served_server)
    while True:
        await asyncio.sleep(0.5)
        now = served_cpu_seconds(served_server)
        if now - before < 0.025:
            return
        before = now


async def sent(tab: Tab) -> int:
    """How much the page's terminal was sent so far."""
    length: int = await tab.page.evaluate("window.__terminalText.join('').length")
    return length


async def key_latency(tab: Tab) -> float:
    """From a key going down in the page to the first bytes the page's terminal is sent back
    after it, both timed by the page itself (the time the driver's own round trips take is not
    the app's), the terminal focused first and quiet (a tab's app draws its footer's keys once it
    has the focus)."""
    await tab.page.focus(".xterm-helper-textarea")
    before, quiet_since = await sent(tab), time.perf_counter()
    while time.perf_counter() - quiet_since < 0.3:
        await asyncio.sleep(0.05)
        if (now := await sent(tab)) != before:
            before, quiet_since = now, time.perf_counter()
    pressed = await tab.page.evaluate("window.__keyTimes.length")
    await tab.page.keyboard.press("j")
    answer = f"""(() => {{
        const down = window.__keyTimes[{pressed}];
        const back = window.__terminalTimes.find((at) => at >= down);
        return down === undefined || back === undefined ? null : back - down;
    }})()"""
    while (waited := await tab.page.evaluate(answer)) is None:
        await asyncio.sleep(0.01)
    return float(waited) / 1000


async def measure(store: Path, rounds: int, tabs: int, env: dict[str, str], here: Path) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    first_rows = run_ids_pattern(store)
    terminal = Case("agenttui STORE", [sys.executable, "-m", "agenttui", str(store)], env, here, painted=first_rows)
    browser_seconds: list[float] = []
    arrivals: list[float] = []
    figures: dict[str, Any] = {}
    with served(str(store), env=env) as server:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            await page_to_first_row(browser, server.url, first_rows)  # warm-up: the page's files cached
            to_first_paint(terminal, SIZE)
            terminal.forget()
            for _ in range(rounds):  # each from a quiet machine: the spare app started, the last tab's gone
                await until_idle(server)
                painted, arrived = await page_to_first_row(browser, server.url, first_rows)
                browser_seconds.append(painted)
                arrivals.append(arrived)
                await until_idle(server)
                await asyncio.to_thread(to_first_paint, terminal, SIZE)
            figures["page"] = browser_seconds
            figures["arrived"] = arrivals
            figures["terminal"] = list(terminal.walls)
            figures["terminal_peak_mb"] = max(terminal.peaks_mb)

            opened = [await Tab.open(browser, server.url) for _ in range(tabs)]
            await asyncio.gather(*(until_rows(tab, first_rows) for tab in opened))
            await until_idle(server)  # every tab's app done starting: statuses read and painted
            figures["tabs"] = tabs
            figures["tab_processes"] = len(server.tab_processes())
            figures["rss_mb"] = rss_mb(server)
            figures["keys"] = [await key_latency(tab) for tab in opened]
            await browser.close()
    return figures


def terminal_alone(store: Path, env: dict[str, str], here: Path) -> None:
    """``--smoke`` without Playwright or Chromium: the terminal's side of (a) alone, once."""
    terminal = Case("agenttui STORE", [sys.executable, "-m", "agenttui", str(store)], env, here,
                    painted=run_ids_pattern(store))  # fmt: skip
    to_first_paint(terminal, SIZE)
    print(f"agenttui serve, {store.name}: the browser's parts skipped (smoke: Playwright or Chromium missing)")
    print(f"(a) the terminal: spawn -> first rows' bytes ({SIZE[0]}x{SIZE[1]}): {terminal.walls[0] * 1000:,.0f} ms, "
          f"peak RSS {terminal.peaks_mb[0]:.0f} MB")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tabs", type=int, default=20)
    parser.add_argument("--store", type=Path, help="a SQLite store (default: a demo built afresh)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="1 round and 2 tabs (unless given), on a demo whose long run has 50 turns, the status index's cache in "
        "the temporary directory; without Playwright or Chromium, the terminal's side alone: seconds",
    )
    if "--smoke" in sys.argv[1:]:
        parser.set_defaults(rounds=1, tabs=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agenttui-serve-") as temporary:
        work = Path(temporary)
        here = work / "here"
        here.mkdir()
        if args.smoke:  # the children's (environment() copies it), and the server's and its apps'
            os.environ["XDG_CACHE_HOME"] = str(work / "xdg-cache")
        env = environment(ROOT, work / "bytecode")
        store = args.store
        if store is None:
            store = work / "demo.db"
            shorter = ["--bulk-turns", "50"] if args.smoke else []  # its long run: 2,000 turns otherwise
            subprocess.run([sys.executable, "-m", "agenttui", "demo", "--path", str(store), "--no-tui", *shorter],
                           cwd=here, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        if args.smoke and (importlib.util.find_spec("playwright") is None or not Path(CHROMIUM).exists()):
            terminal_alone(store.resolve(), env, here)
            return
        load = os.getloadavg()
        f = asyncio.run(measure(store.resolve(), args.rounds, args.tabs, env, here))
        load_after = os.getloadavg()
    judged = "smoke: not judged" if args.smoke else ""
    page, terminal = statistics.median(f["arrived"]), statistics.median(f["terminal"])
    painted = statistics.median(f["page"])
    keys = sorted(f["keys"])
    print(f"agenttui serve, {store.name}; load average {load[0]:.1f} -> {load_after[0]:.1f}; 2 cores")
    print()
    print("| figure | median | min | max | target | met? |")
    print("|---|---|---|---|---|---|")
    print(f"| (a) page load -> the first run row's bytes in the page (its app started ahead of it, the spare) | "
          f"{page * 1000:,.0f} ms | {min(f['arrived']) * 1000:,.0f} ms | {max(f['arrived']) * 1000:,.0f} ms | | |")  # fmt: skip
    print(f"| (a) the terminal: spawn -> first rows' bytes in the pseudo-terminal ({SIZE[0]}x{SIZE[1]}), same rounds | "
          f"{terminal * 1000:,.0f} ms | {min(f['terminal']) * 1000:,.0f} ms | {max(f['terminal']) * 1000:,.0f} ms | | |")  # fmt: skip
    ratio = page / terminal
    print(f"| (a) page / terminal | {ratio:.2f}x | | | ≤ 1.5x | {judged or ('met' if ratio <= 1.5 else 'MISSED')} |")
    print(f"| (a) page load -> the frame after those bytes (xterm.js paints them; headless Chromium, no GPU) | "
          f"{painted * 1000:,.0f} ms | {min(f['page']) * 1000:,.0f} ms | {max(f['page']) * 1000:,.0f} ms | "
          f"reported ({painted / terminal:.2f}x) | |")  # fmt: skip
    print(f"| (b) {f['tabs']} tabs open: server + {f['tab_processes']} apps (the spare too), resident memory | "
          f"{f['rss_mb']:,.0f} MB | | | reported | |")  # fmt: skip
    p50 = statistics.median(keys)
    print(f"| (b) key j -> first bytes back, each of {f['tabs']} tabs | {p50 * 1000:,.0f} ms | {keys[0] * 1000:,.0f} ms "
          f"| {keys[-1] * 1000:,.0f} ms | ≤ 100 ms each | {judged or ('met' if keys[-1] <= 0.1 else 'MISSED')} |")  # fmt: skip
    print()
    print(f"peak RSS of the terminal's agenttui: {f['terminal_peak_mb']:.0f} MB; {args.rounds} rounds, alternating")


if __name__ == "__main__":
    main()

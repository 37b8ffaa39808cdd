"""Part (b) of ``benchmarks/tui.py``, each side a process of its own, timed from its start.

    python benchmarks/_long_run.py tui STORE RUN_ID      the TUI, as ``agenttui STORE --run RUN_ID``
    python benchmarks/_long_run.py floor STORE RUN_ID    ``Journal.history()`` of the same run

Each prints one line of JSON: its figures, its CPU time from the process's start (interpreter,
imports and all) and its peak resident memory. Both import only what their side needs: the
benchmark's own modules (store builders, the demo agent) would count in both figures.

The TUI's side is what the issue names: the run opened (``--run``), End pressed as soon as the
first records are painted, then the conversation, events and flowchart panes shown in turn, each
until it shows the last record. The CPU time and peak memory are taken then; a few page-ups after
(key to the new cursor row painted, each reading its record back from the store) are timed
for the report, outside those figures.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZE = (120, 40)
PAGES_AFTER = 30
"""Page-ups timed after the figures are taken, from the run's last record back."""


def peak_rss_mb() -> float:
    """This process's peak RSS, from ``VmHWM`` (``ru_maxrss`` may start at the parent's peak)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024


def process_figures() -> dict[str, float]:
    """CPU time since the process started (``process_time`` counts from there) and peak RSS."""
    return {"cpu_s": time.process_time(), "peak_rss_mb": peak_rss_mb(), "at": time.time()}


async def floor(path: Path, run_id: str) -> dict[str, Any]:
    """``Journal.history()`` of the run, once: every record decoded and held, as the floor reads it."""
    from agenttui.journal import Journal
    from agenttui.stores.sqlite import SQLiteStore

    imported = time.process_time()
    async with await SQLiteStore.open(path, read_only=True) as store:
        started, started_cpu = time.perf_counter(), time.process_time()
        records = await Journal(store).history(run_id)
        history_s, history_cpu_s = time.perf_counter() - started, time.process_time() - started_cpu
        figures = process_figures()
    return {"records": len(records), "imports_cpu_s": imported, "history_s": history_s,
            "history_cpu_s": history_cpu_s} | figures  # fmt: skip


async def until(
    test: Callable[[], object], timeout: float, what: str | Callable[[], str], every: float = 0.005
) -> float:
    """Poll ``test`` on the app's loop until true; the time it first was. ``what`` says what
    was waited for (a callable: as things stood when it timed out)."""
    deadline = time.perf_counter() + timeout
    while not test():
        if time.perf_counter() > deadline:
            said = what() if callable(what) else what
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {said}")
        await asyncio.sleep(every)
    return time.perf_counter()


async def tui(path: Path, run_id: str, records: int) -> dict[str, Any]:
    """The app opened on the run, End, every pane; the process's figures once the last is shown."""
    from textual.widgets import TabbedContent

    from agenttui.tui.app import AgentTuiApp
    from agenttui.tui.messages import StoreOpened
    from agenttui.tui.widgets.events_view import EventsView
    from agenttui.tui.widgets.inspector import ConversationView, RecordInspector
    from agenttui.tui.widgets.journal_list import JournalList

    first_painted: list[float] = []
    original = JournalList.render_line

    def render_line(widget: JournalList, y: int) -> Any:
        if not first_painted and round(widget.scroll_offset.y) + y < len(widget.items):
            first_painted.append(time.perf_counter())
        return original(widget, y)

    JournalList.render_line = render_line  # type: ignore[method-assign]  # the timing hook, on the class
    marks: dict[str, float] = {}

    def hook(message: Any) -> None:
        if isinstance(message, StoreOpened):
            marks.setdefault("opened", time.perf_counter())

    app = AgentTuiApp(str(path), run_id=run_id, tail=False)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        from agenttui.tui.screens.run import RunScreen  # imported by the app as it opens the run

        screen = app.screen
        assert isinstance(screen, RunScreen), screen
        await until(lambda: bool(first_painted), 600, "the first records painted")
        first = first_painted[0]
        journal, inspector = screen.journal_list, screen.query_one(RecordInspector)
        await pilot.press("end")
        last = records - 1

        def loading() -> bool:
            return any(w.group == "run-load" and not w.is_finished for w in screen.workers)

        def reading() -> bool:
            return any(w.group == "run-read" and not w.is_finished for w in screen.workers)

        loaded = await until(lambda: len(screen.rows) >= records and not loading(), 600, "the whole run")
        shown = await until(lambda: inspector.shown is not None and inspector.shown[1] == last, 120,
                            lambda: f"the last record inspected (the cursor on {journal.cursor} of {len(screen.rows)}, the inspector on {inspector.shown and inspector.shown[1]})")  # fmt: skip
        assert journal.cursor == last, (journal.cursor, last)
        cpu_marks = {"last_shown": time.process_time()}
        tabs = screen.query_one(TabbedContent)
        conversation, events = screen.query_one(ConversationView), screen.query_one(EventsView)
        panes: dict[str, float] = {}
        shown_in: dict[str, Callable[[], bool]] = {
            "conversation": lambda: (
                not reading() and conversation._shown is not None and conversation._shown[1] == last
            ),
            "events": lambda: events.items is screen.events and len(events.items) > 0,
            "flow": lambda: True,
        }
        for key, pane in (("c", "conversation"), ("v", "events"), ("w", "flow")):
            before = time.perf_counter()
            await pilot.press(key)
            await until(lambda: tabs.active == pane and shown_in[pane](), 600, f"the {pane} pane")
            await pilot.pause()  # its frame painted
            panes[pane] = time.perf_counter() - before
            cpu_marks[pane] = time.process_time()
        figures = process_figures()
        from agenttui.tui.screens.runs import RunsScreen

        runs_screen = app.screen_stack[1]
        assert isinstance(runs_screen, RunsScreen), app.screen_stack
        runs_listed = len(runs_screen.model.statuses)
        # Page-ups from the end, timed for the report (outside the figures above): each reads
        # its record back from the store, for the flowchart pane now shown.
        await pilot.press("i")
        pages = []
        for _ in range(PAGES_AFTER):
            if journal.cursor == 0:
                break  # a short run (--smoke) is paged to its top before PAGES_AFTER
            before, cursor = time.perf_counter(), journal.cursor
            await pilot.press("pageup")
            await until(lambda: inspector.shown is not None and inspector.shown[1] == journal.cursor
                        and journal.cursor != cursor, 600, "the record a page up")  # fmt: skip
            pages.append(time.perf_counter() - before)
    opened = marks["opened"]
    return {
        "records": len(screen.rows), "store_opened_at": opened, "first_paint_s": first - opened,
        "loaded_s": loaded - opened, "last_shown_s": shown - opened, "panes_s": panes, "page_s": pages,
        "perf_to_epoch": time.time() - time.perf_counter(), "cpu_marks": cpu_marks, "runs_listed_underneath": runs_listed,
    } | figures  # fmt: skip


def main() -> None:
    side, path, run_id = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    measure = floor(path, run_id) if side == "floor" else tui(path, run_id, int(sys.argv[4]))
    figures = asyncio.run(measure)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

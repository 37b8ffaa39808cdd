"""An open run holds a row for each record, not the records: the inspector and the conversation
read theirs back from the store and show what they showed when every record was kept, a long
conversation shows its start and its newest voices, and closing the run frees it."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from agenttui.journal import Journal, Record, StepKind, keys
from agenttui.journal.record import JOURNAL_FORMAT
from agenttui.runs.reading.view import CONVERSATION_VOICES
from agenttui.stores.base import LOAD_PAGE_SIZE, Entry
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.run import RunScreen
from agenttui.tui.screens.runs import RunsScreen
from agenttui.tui.widgets.inspector import RecordInspector
from tests.tui.conftest import settle
from tests.tui.test_app import shown

SIZE = (140, 40)


async def open_run(pilot: Pilot[Any], run_id: str, *, keep_nothing: bool = False) -> RunScreen:
    """The run screen of ``run_id``; with ``keep_nothing``, its view keeps no decoded record
    beyond the last one read, as a run far longer than the view's budget would."""
    await settle(pilot)
    screen = RunScreen(run_id)
    if keep_nothing:
        screen.view.decoded.budget = 0
    await pilot.app.push_screen(screen)
    await settle(pilot)
    return screen


async def what_the_panes_show(pilot: Pilot[Any], screen: RunScreen, indices: list[int]) -> list[str]:
    """For each record in ``indices``: the journal list's lines, the inspector, the conversation."""
    journal = screen.journal_list
    seen = []
    for pane, content in (("i", "#inspector-content"), ("c", "#conversation-content")):
        await pilot.press(pane)
        for index in indices:
            journal.cursor = index
            await settle(pilot)
            lines = "\n".join(journal.render_line(y).text for y in range(journal.size.height))
            seen.append(f"{lines}\n{shown(screen.query_one(content))}")
    return seen


async def test_a_run_shows_the_same_whether_its_records_are_kept_or_read_back(demo_db: Path) -> None:
    for run_id, indices in (("refund-a1002", list(range(12))), ("audit-bulk", [0, 1, 2, 45, 80, 81])):
        shown_kept: list[str] = []
        for keep_nothing in (False, True):
            app = AgentTuiApp(str(demo_db), tail=False)
            async with app.run_test(size=SIZE) as pilot:
                screen = await open_run(pilot, run_id, keep_nothing=keep_nothing)
                seen = await what_the_panes_show(pilot, screen, indices)
                if keep_nothing:
                    assert len(screen.view.decoded) == 1  # every record shown was read back from the store
                    assert seen == shown_kept, run_id
                else:
                    assert len(screen.view.decoded) == len(screen.rows)  # a short run is read once
                    shown_kept = seen


async def test_a_long_conversation_shows_its_start_and_its_newest_voices(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_run(pilot, "audit-bulk")
        await pilot.press("c", "G")
        await settle(pilot)
        last = len(screen.rows) - 1
        voices = screen.view.voices(last)
        assert voices.left_out > 0 and len(voices.indices) == CONVERSATION_VOICES + 1
        conversation = shown(screen.query_one("#conversation-content"))
        assert conversation.startswith(f"as of record #{last}\n\nuser\nAudit every open order")
        assert f"… {voices.left_out:,} voices in between (agenttui show --at {last} prints them all)" in conversation
        assert "Auditing order A-1004 (pass 8)." in conversation  # the last lookup, before the answer
        assert conversation.rstrip().endswith("Audit done: 39 lookups, no anomalies.")
        assert conversation.count("tool lookup_order") == CONVERSATION_VOICES // 2


async def test_closing_a_run_frees_it(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_run(pilot, "audit-bulk")
        await pilot.press("G", "c", "v", "w", "i")
        await settle(pilot)
        held = weakref.ref(screen), weakref.ref(screen.view), weakref.ref(screen.view.decoded)
        assert gc.get_freeze_count() > 0  # what its load made, set aside from the collector's passes
        del screen
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, RunsScreen)
        assert gc.get_freeze_count() == 0  # and given back as it closes
        gc.collect()
        assert [ref() for ref in held] == [None, None, None]


class GatedStore(SQLiteStore):
    """A real SQLite store whose load of a run hands on its first page, then waits for ``gate``
    and hands on the rest at once: its batches are all posted in one turn of the loop."""

    gate: asyncio.Event

    def load(self, run_id: str, after: int = -1) -> AsyncIterator[Entry]:
        return self._gated(super().load(run_id, after))

    async def _gated(self, entries: AsyncIterator[Entry]) -> AsyncIterator[Entry]:
        read = [entry async for entry in entries]
        for entry in read[:LOAD_PAGE_SIZE]:
            yield entry
        await self.gate.wait()
        for entry in read[LOAD_PAGE_SIZE:]:
            yield entry


async def test_end_pressed_while_the_last_batches_are_on_their_way_reaches_the_last_record(tmp_path: Path) -> None:
    """End (G) pressed while a run loads means its last record, also when the load reads to its
    end between the key and the screen's hearing of it: the load's last batches then reach the
    screen before the key's message, and the cursor must still end on the last record (the
    long-run benchmark's smoke run stopped on record 256 of 600 under load)."""
    path = tmp_path / "long.db"
    async with await SQLiteStore.open(path) as writer:
        journal = Journal(writer)
        await journal.append("long", Record(keys.HEADER, StepKind.HEADER, format=JOURNAL_FORMAT))
        for n in range(599):
            await journal.append("long", Record(f"step/{n}", StepKind.VALUE, result=b'{"n":%d}' % n))
    store = await GatedStore.open(path, read_only=True)
    assert isinstance(store, GatedStore)
    store.gate = asyncio.Event()
    app = AgentTuiApp(str(path), store=store, run_id="long", tail=False)
    async with app.run_test(size=SIZE) as pilot:
        while not isinstance(screen := app.screen, RunScreen) or not len(screen.view):
            await pilot.pause(0)  # the first screenful handled; the load waits at the gate
        # End, as its key does it, then the rest of the run read and its batches posted to the
        # screen at once: before the key's message (LastAsked) has bubbled up to it.
        screen.journal_list.action_cursor_last()
        store.gate.set()
        await settle(pilot)
        assert len(screen.view) == 600
        assert screen.journal_list.cursor == 599
        shown = screen.query_one(RecordInspector).shown
        assert shown is not None and shown[1] == 599
    await store.close()

"""Finding things in a long run (issue 15, point 3): / searches names and content with a count,
n and N walk the hits, esc cancels, : goes to a record, e expands a long value in place, and state
at step opens at the step, saying what it reads meanwhile, on a run of 3,002 records."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from agenttui.runs.reading.search import SearchPage, search_content
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens import run as run_screen
from agenttui.tui.screens.run import RunScreen
from agenttui.tui.widgets.find_bar import FindBar
from agenttui.tui.widgets.inspector import VALUE_LIMIT, ConversationView
from tests.tui.conftest import settle
from tests.tui.test_app import shown
from tests.tui.test_open_run import open_run

RUN = "audit-long"
TURNS = 1500
"""Each a model turn and its tool's result, after the header and run:start: 3,002 records."""
ZEBRAS = (700, 1400)
"""The turns whose results hold "ZEBRA" past what their list line shows: found by content only."""
LONG_TURN = 1200
"""The turn whose result holds a value longer than ``VALUE_LIMIT``."""
SIZE = (80, 24)


def result_index(turn: int) -> int:
    return 2 + 2 * turn + 1


def records() -> list[tuple[str, bytes]]:
    def dumped(record: dict[str, Any]) -> bytes:
        return json.dumps(record, separators=(",", ":")).encode()

    rows = [
        ("@journal", dumped({"name": "@journal", "kind": "header", "format": "bide.journal.v1-dev"})),
        ("run:start", dumped({"name": "run:start", "kind": "value", "result": {"input": "Audit every order.", "kind": "agent"}})),
    ]  # fmt: skip
    for turn in range(TURNS):
        call = f"call_{turn}"
        parts = [
            {"text": f"Auditing order A-{turn}.", "type": "text"},
            {"args": {"order_id": f"A-{turn}"}, "id": call, "name": "lookup_order", "type": "tool_use"},
        ]
        customer = "grace@example.com" if turn % 100 == 7 else "ada@example.com"
        note = "x" * 300 + (" ZEBRA" if turn in ZEBRAS else "")
        if turn == LONG_TURN:
            note = " ".join(f"word{n}" for n in range(2 * VALUE_LIMIT // 5)) + " THE-END"
        result = {"order_id": f"A-{turn}", "customer": customer, "note": note}
        rows += [
            (f"@llm/{turn}", dumped({"name": f"@llm/{turn}", "kind": "model", "message": {"role": "assistant", "parts": parts}})),
            (f"tool:{call}", dumped({"name": f"tool:{call}", "kind": "tool_result", "tool_use_id": call, "result": result})),
        ]  # fmt: skip
    return rows


@pytest.fixture
def long_db(tmp_path: Path) -> Path:
    path = tmp_path / "long.db"

    async def schema() -> None:
        await (await SQLiteStore.open(path)).close()

    asyncio.run(schema())
    # One transaction: the store's own inserts commit each record, seconds for a run this long.
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO bide_steps (run_id, name, data) VALUES (?, ?, ?)", [(RUN, n, d) for n, d in records()]
        )
    return path


async def type_text(pilot: Pilot[Any], text: str) -> None:
    await pilot.press(*["slash" if c == "/" else "colon" if c == ":" else c for c in text])


def mode(bar: FindBar) -> str:
    """What the bar asks for (a function: mypy would hold ``bar.mode`` to its first comparison)."""
    return bar.mode


def shows(bar: FindBar) -> bool:
    """Whether the bar is on screen (a function, for the same reason as ``mode``)."""
    return bar.display


def count(screen: RunScreen) -> str:
    return shown(screen.query_one("#find-count")).strip()


async def test_slash_searches_names_and_content_and_n_and_shift_n_walk_the_hits(long_db: Path) -> None:
    app = AgentTuiApp(str(long_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_run(pilot, RUN)
        assert len(screen.rows) == 3002
        await type_text(pilot, "/zebra")
        assert isinstance(app.focused, Input) and screen.find_bar.display
        assert "search step names and content, any case" in screen.find_bar.input.placeholder
        await settle(pilot)
        zebras = [result_index(turn) for turn in ZEBRAS]
        assert screen.hits is not None and screen.hits.indices == zebras and screen.hits.done
        assert count(screen) == "2 hits"
        await pilot.press("enter")
        await settle(pilot)
        assert screen.journal_list.has_focus and screen.journal_list.cursor == zebras[0]
        assert count(screen) == "hit 1 of 2"
        assert f"#{zebras[0]}" in shown(screen.query_one("#inspector-content"))
        assert all(index in screen.journal_list.marked for index in zebras)
        await pilot.press("n")
        assert (screen.journal_list.cursor, count(screen)) == (zebras[1], "hit 2 of 2")
        await pilot.press("n")  # wraps to the first
        assert (screen.journal_list.cursor, count(screen)) == (zebras[0], "hit 1 of 2")
        await pilot.press("N")
        assert (screen.journal_list.cursor, count(screen)) == (zebras[1], "hit 2 of 2")
        await pilot.press("k")
        assert count(screen) == "2 hits"

        # A new search replaces the old one; names and summaries match before the content is read.
        await pilot.press("slash", "ctrl+u")
        await type_text(pilot, "GRACE")
        hits = screen.hits
        assert hits is not None and hits.needle.query == "GRACE"
        graces = [result_index(turn) for turn in range(7, TURNS, 100)]
        assert hits.indices == graces  # from the rows, at once
        await settle(pilot)
        assert hits.done and hits.indices == graces and count(screen) == f"{len(graces)} hits"
        await pilot.press("enter")  # the first hit from the cursor on (2,802)
        assert count(screen) == "hit 15 of 15" and screen.journal_list.cursor == graces[14]
        await pilot.press("N")
        assert count(screen) == "hit 14 of 15"
        await pilot.press("escape")  # from the list: the find line closes first
        assert app.screen is screen and not shows(screen.find_bar) and not screen.journal_list.marked
        await pilot.press("escape")
        assert app.screen is not screen


async def test_esc_cancels_a_search_under_way_and_closes_the_bar(
    long_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stalled = asyncio.Event()

    async def stalling(*args: Any, **kwargs: Any) -> AsyncIterator[SearchPage]:
        """The real search's first page, then a store that never answers."""
        async for page in search_content(*args, **kwargs):
            yield page
            stalled.set()
            await asyncio.Event().wait()

    monkeypatch.setattr(run_screen, "search_content", stalling)
    app = AgentTuiApp(str(long_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_run(pilot, RUN)
        await type_text(pilot, "/zebra")
        await stalled.wait()
        await pilot.pause()
        hits = screen.hits
        assert hits is not None and not hits.done
        assert count(screen) == "no hits · searching 256 of 3,002"
        await pilot.press("escape")
        await settle(pilot)
        assert screen.hits is None and not hits.done  # cancelled before it read the run through
        assert all(w.is_cancelled for w in app.workers if w.group == "run-search")
        assert not screen.find_bar.display and screen.journal_list.has_focus
        assert app.screen is screen and not screen.journal_list.marked
        await pilot.press("n")  # nothing to walk: it says how to search
        await settle(pilot)
        assert screen.journal_list.cursor == 0
        await pilot.press("slash")
        assert screen.find_bar.input.value == ""


async def test_colon_goes_to_a_record_and_back_to_the_search(long_db: Path) -> None:
    app = AgentTuiApp(str(long_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_run(pilot, RUN)
        await type_text(pilot, ":2500")
        bar = screen.query_one(FindBar)
        assert mode(bar) == "jump" and "record number, 0 to 3,001" in bar.input.placeholder
        await pilot.press("enter")
        await settle(pilot)
        assert screen.journal_list.cursor == 2500 and not bar.display
        assert shown(screen.query_one("#inspector-content")).startswith("#2500")
        await type_text(pilot, ":9999")
        await pilot.press("enter")
        await settle(pilot)
        assert screen.journal_list.cursor == 2500  # no such record: it says so and stays
        await type_text(pilot, "/zebra")
        await pilot.press("enter")
        await settle(pilot)
        await type_text(pilot, ":12")
        await pilot.press("enter")
        await settle(pilot)
        assert screen.journal_list.cursor == 12
        assert (
            screen.query_one(FindBar).display and bar.input.value == "zebra" and mode(bar) == "search"
        )  # the search is on
        await pilot.press("n")
        assert screen.journal_list.cursor == result_index(ZEBRAS[0])


async def test_e_expands_a_long_value_in_place(long_db: Path) -> None:
    app = AgentTuiApp(str(long_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_run(pilot, RUN)
        await type_text(pilot, f":{result_index(LONG_TURN)}")
        await pilot.press("enter")
        await settle(pilot)
        cut = shown(screen.query_one("#inspector-content"))
        assert "(e: expand in place)" in cut and "THE-END" not in cut
        await pilot.press("e")
        await settle(pilot)
        whole = shown(screen.query_one("#inspector-content"))
        assert "THE-END" in whole and "more characters" not in whole and "stored bytes" not in whole
        await pilot.press("e")
        assert "THE-END" not in shown(screen.query_one("#inspector-content"))


async def test_state_at_step_opens_at_the_step_and_says_what_it_reads_meanwhile(
    long_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = AgentTuiApp(str(long_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_run(pilot, RUN, keep_nothing=True)
        view = screen.query_one(ConversationView)
        meanwhile: list[str] = []
        reading = view.reading

        def read_and_note(index: int, done: int, total: int) -> None:
            reading(index, done, total)
            meanwhile.append(shown(screen.query_one("#conversation-content")))

        monkeypatch.setattr(view, "reading", read_and_note)
        # Progress is said at most every PROGRESS_SECONDS; here, after each record read back.
        monkeypatch.setattr(run_screen, "PROGRESS_SECONDS", 0.0)
        await type_text(pilot, ":2901")
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        voices = len(screen.view.voices(2901).indices)
        assert (
            meanwhile[0]
            == f"as of record #2901\n\nreading the conversation back from the store: 0 of {voices} records…\n"
        )
        assert len(meanwhile) == voices + 1 and f"{voices} of {voices} records…" in meanwhile[-1]  # one a record
        conversation = shown(screen.query_one("#conversation-content"))
        assert "Auditing order A-1449." in conversation and conversation.rstrip().endswith("}")
        top = view.scroll_y
        assert top > 0  # opened at the step, not the top
        # The newest voice (the step's) starts on screen: its heading is among the lines shown.
        content = screen.query_one("#conversation-content")
        lines = [content.render_line(y).text.strip() for y in range(int(top), int(top) + view.size.height)]
        assert "tool lookup_order" in lines, lines

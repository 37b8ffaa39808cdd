"""The runs list over a shared run index (issue 50): read a page at a time by keyset as the rows
on screen near the end of those read, its counts from the database, its filters narrowed there.
As far as it has read, it shows what the whole listing (the index off) shows."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from textual.pilot import Pilot

from agenttui.journal import Journal, Record, StepKind
from agenttui.runs.statuses.index import CACHE_ENV
from agenttui.runs.statuses.indexer import index_of
from agenttui.runs.statuses.status import list_statuses
from agenttui.stores.postgres import PostgresStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens import runs as runs_screen
from agenttui.tui.screens.runs import RunsScreen
from tests.pg import PostgresCluster
from tests.runs.test_shared_index import indexed_now
from tests.tui.conftest import notices, screen_of, settle, until

pytestmark = pytest.mark.postgres

SIZE = (120, 14)
Row = tuple[str, str | None, int]


@pytest.fixture
async def indexed_demo(postgres_cluster: PostgresCluster) -> AsyncIterator[str]:
    """The demo store on PostgreSQL and 40 runs of a record each, more than a few screens, its
    shared run index installed and caught up: its URL."""
    url = await postgres_cluster.demo_schema("paged", bulk_turns=1)
    store = await PostgresStore.open(url)
    try:
        for n in range(40):
            await Journal(store).append(f"note-{n:02d}", Record("note", StepKind.VALUE, result=b'"noted"'))
        await index_of(store).install()
        await indexed_now(store)
    finally:
        await store.close()
    yield url


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of a few runs, a first page of one screen: the demo's runs take several."""
    monkeypatch.setattr(runs_screen, "PAGE_RUNS", 4)
    monkeypatch.setattr(runs_screen, "FIRST_PAGE_SCREENS", 1)


def rows(screen: RunsScreen) -> list[Row]:
    return [(row.run_id, None if row.line is None else row.line.state.value, row.depth) for row in screen.table.items]


async def read_to_the_end(pilot: Pilot[Any], screen: RunsScreen) -> None:
    """Go to the last row read until every page is read: each time, the next page comes."""
    for _ in range(100):
        await settle(pilot)
        if screen._listed:
            return
        await pilot.press("G")
    raise AssertionError("the pages never ended")


async def whole_listing(url: str, keys: list[str], monkeypatch: pytest.MonkeyPatch) -> list[Row]:
    """The rows the list shows without the index (every run listed), after ``keys``."""
    monkeypatch.setenv(CACHE_ENV, "off")
    try:
        app = AgentTuiApp(url)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            screen = screen_of(app, RunsScreen)
            assert screen._paging is None
            for key in keys:
                await pilot.press(key)
            await settle(pilot)
            return rows(screen)
    finally:
        monkeypatch.delenv(CACHE_ENV)


async def test_the_list_reads_a_page_at_a_time_and_shows_what_the_whole_listing_does(
    indexed_demo: str, small_pages: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await PostgresStore.open(indexed_demo, read_only=True)
    try:
        every = [status async for status in list_statuses(store)]
    finally:
        await store.close()
    app = AgentTuiApp(indexed_demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        assert screen._paging is not None
        first = rows(screen)
        assert not screen._listed and len(screen.model.runs) < len(every)
        # Counted on the database, every run (sub-runs too), before the list has read them.
        assert screen._counted == Counter(status.state for status in every)
        header = str(screen.query_one("#runs-counts").render())
        assert f"{len(every):,} runs" in header and "more as you scroll" in header
        await read_to_the_end(pilot, screen)
        paged = rows(screen)
        assert "more as you scroll" not in str(screen.query_one("#runs-counts").render())
    whole = await whole_listing(indexed_demo, [], monkeypatch)
    assert paged == whole
    assert first == whole[: len(first)]


@pytest.mark.parametrize(
    ("keys", "narrowed"),
    [
        (["s"], "status=awaiting-approval,awaiting-input,halted,ready,stalled,unreadable"),  # needs attention
        (["s", "s", "s"], "status=in-flight"),
        (["slash", *"status=halted,ready", "enter"], "(status=halted,ready)"),
        (["slash", *"sub", "enter"], "(sub)"),  # the sub-runs, listed under their top-level runs
        (["slash", *"refund", "enter"], ""),  # plain words: nothing narrows on the database
    ],
    ids=["needs-attention", "in-flight", "expression", "sub-runs", "words"],
)
async def test_a_filter_narrows_the_pages_and_shows_what_the_whole_listing_does(
    indexed_demo: str, small_pages: None, monkeypatch: pytest.MonkeyPatch, keys: list[str], narrowed: str
) -> None:
    app = AgentTuiApp(indexed_demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        for key in keys:
            await pilot.press(key)
        await read_to_the_end(pilot, screen)
        assert screen._paging is not None and screen._paging.where.text == narrowed
        if narrowed:  # read no more than the runs selected and the runs above them
            assert not any(run_id.startswith("note-") for run_id in screen.model.runs)
        paged = rows(screen)
    assert paged == await whole_listing(indexed_demo, keys, monkeypatch)
    assert paged


async def test_a_run_written_under_a_paged_list_shows_and_is_counted(indexed_demo: str) -> None:
    app = AgentTuiApp(indexed_demo, tail=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        await read_to_the_end(pilot, screen)
        counted = screen._counted
        assert counted is not None
        writer = await PostgresStore.open(indexed_demo)
        try:
            await Journal(writer).append("zz-written-later", Record("note", StepKind.VALUE, result=b'"late"'))
        finally:
            await writer.close()
        await until(pilot, lambda: "zz-written-later" in [row[0] for row in rows(screen)], "the new run to show")
        await until(pilot, lambda: screen._counted is not None and screen._counted.total() == counted.total() + 1,
                    "the counts to take it in")  # fmt: skip


async def test_sorting_by_cost_says_why_it_is_not_offered_over_pages(indexed_demo: str) -> None:
    app = AgentTuiApp(indexed_demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        before = rows(screen)
        await pilot.press("dollar_sign")
        await settle(pilot)
        assert not screen.model.by_cost and rows(screen) == before
        assert any("sorting by cost" in notice for notice in notices(app))

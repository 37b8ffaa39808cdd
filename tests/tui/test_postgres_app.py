"""The TUI over PostgreSQL: the runs list, a run, live tail by LISTEN/NOTIFY, replay and an action."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agenttui.demo.build import build_demo
from agenttui.journal import Journal, Record, StepKind
from agenttui.runs.statuses.status import RunState
from agenttui.stores.postgres import PostgresStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.dialogs import ConfirmDialog
from agenttui.tui.screens.replay import ReplayScreen
from agenttui.tui.screens.run import RunScreen
from agenttui.tui.screens.runs import RunsScreen
from agenttui.tui.widgets.status_bar import StatusBar
from tests.pg import PostgresCluster
from tests.tui.conftest import FIXED_NOW, screen_of, settle, status_of, until, wait_for_screen

pytestmark = pytest.mark.postgres
SIZE = (140, 40)


@pytest.fixture
async def demo_schema(postgres_cluster: PostgresCluster) -> AsyncIterator[tuple[str, str]]:
    """A demo journal in a fresh schema: (the schema, the store URL the app opens)."""
    schema = "tui_" + uuid.uuid4().hex[:10]
    store = await PostgresStore.open(postgres_cluster.dsn, schema=schema)
    await build_demo(store, bulk_turns=12, clock=lambda: FIXED_NOW)
    await store.close()
    separator = "&" if "?" in postgres_cluster.dsn else "?"
    yield schema, f"{postgres_cluster.dsn}{separator}schema={schema}"


async def test_runs_statuses_and_a_run(demo_schema: tuple[str, str]) -> None:
    _, url = demo_schema
    app = AgentTuiApp(url, tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        rows = {r.run_id: status_of(r) for r in screen_of(app, RunsScreen).table.items}
        assert (
            rows["refund-a1005"].state == RunState.AWAITING_APPROVAL
            and rows["settlement-a1002"].state == RunState.SLEEPING
        )
        assert len(rows) == 17
        app.open_run("refund-a1002")
        await settle(pilot)
        assert isinstance(app.screen, RunScreen) and len(app.screen.rows) == 12


async def test_live_tail_by_notifications(postgres_cluster: PostgresCluster, demo_schema: tuple[str, str]) -> None:
    schema, url = demo_schema
    app = AgentTuiApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await until(pilot, lambda: app.screen.query_one(StatusBar).tail == "listening", "the feed to LISTEN")
        app.open_run("refund-a1005")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await pilot.press("f")  # follow: the cursor goes to the newest record and stays there
        before = len(screen.rows)
        writer = await PostgresStore.open(postgres_cluster.dsn, schema=schema)
        try:
            await Journal(writer).append("refund-a1005", Record("ops-note", StepKind.VALUE, result=b'"seen"'))
            await until(pilot, lambda: len(screen.rows) > before, "the committed record to appear")
        finally:
            await writer.close()
        assert screen.rows[-1].name == "ops-note" and screen.journal_list.cursor == len(screen.rows) - 1  # followed


async def test_replay_and_approve(postgres_cluster: PostgresCluster, demo_schema: tuple[str, str]) -> None:
    schema, url = demo_schema
    app = AgentTuiApp(url, tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_run("refund-a1002")
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        replay = screen_of(app, ReplayScreen)
        await pilot.press("e")
        await settle(pilot)
        assert screen_of(app, ReplayScreen) is replay and replay.session is not None
        assert replay.session.progress.state == "finished" and replay.diff is not None and replay.diff.matches
        await pilot.press("escape", "escape")
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == "refund-a1005")
        await pilot.press("a")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("w")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmDialog), app.screen
        from agenttui.tui.screens.dialogs import ErrorDialog

        assert not isinstance(app.screen, ErrorDialog), app.screen._message
    reader = await PostgresStore.open(postgres_cluster.dsn, schema=schema, read_only=True)
    try:
        assert [r.name for r in await Journal(reader).history("refund-a1005")][-1] == "approval:call_1_0"
    finally:
        await reader.close()


async def test_E_exports_a_run_and_its_sub_runs_from_postgresql_byte_for_byte(
    postgres_cluster: PostgresCluster, demo_schema: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agenttui.stores.sqlite import SQLiteStore
    from agenttui.tui.screens.export import ExportDialog

    schema, url = demo_schema
    monkeypatch.chdir(tmp_path)
    app = AgentTuiApp(url, tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == "eligibility-a1004")
        await pilot.press("E")
        await wait_for_screen(pilot, ExportDialog)
        await pilot.press("w")
        await until(pilot, lambda: not isinstance(app.screen, ExportDialog), "the export to end")
    source = await PostgresStore.open(postgres_cluster.dsn, schema=schema, read_only=True)
    bundle = await SQLiteStore.open(tmp_path / "eligibility-a1004.bundle.db", read_only=True)
    try:
        ids = [run_id async for run_id in bundle.runs()]
        assert ids == ["eligibility-a1004", "eligibility-a1004>call_0_0"]
        for run_id in ids:
            mine = [(e.name, e.data) async for e in bundle.load(run_id)]
            assert mine == [(e.name, e.data) async for e in source.load(run_id)]
    finally:
        await bundle.close()
        await source.close()

"""Outages: PostgreSQL stopped under the TUI, and started again; the store file replaced."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest

from agenttui.demo.build import build_demo
from agenttui.stores.postgres import PostgresStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.messages import StoreChanged
from agenttui.tui.widgets.status_bar import StatusBar
from tests.pg import PostgresCluster
from tests.tui.conftest import settle, until




@pytest.mark.postgres
async def test_postgres_stopped_and_restarted_under_the_tui(postgres_cluster: PostgresCluster) -> None:
    schema = "outage_" + uuid.uuid4().hex[:10]
    writer = await PostgresStore.open(postgres_cluster.dsn, schema=schema)
    await build_demo(writer, bulk_turns=5, clock=lambda: datetime(2031, 1, 1, tzinfo=timezone.utc))
    await writer.close()
    separator = "&" if "?" in postgres_cluster.dsn else "?"
    app = AgentTuiApp(f"{postgres_cluster.dsn}{separator}schema={schema}", tail=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        shown = [(r.run_id, r.status.state) for r in app.screen.table.items]  # type: ignore[attr-defined, union-attr]
        assert len(shown) == 11
        bar = app.screen.query_one(StatusBar)
        postgres_cluster.stop()
        try:
            app.screen.post_message(StoreChanged(None))  # what the change feed would send
            await until(pilot, lambda: bar.connection == "reconnecting", "the status bar to say reconnecting")
            assert [(r.run_id, r.status.state) for r in app.screen.table.items] == shown  # type: ignore[attr-defined, union-attr]
            assert "password" not in str(bar.render()).lower()
        finally:
            postgres_cluster.start()
        await until(pilot, lambda: bar.connection == "connected", "the app to reconnect by itself")
        await settle(pilot)
        assert [(r.run_id, r.status.state) for r in app.screen.table.items] == shown  # type: ignore[attr-defined, union-attr]
        app.open_run("refund-a1002")
        await settle(pilot)
        assert len(app.screen.records) == 12  # type: ignore[attr-defined]


async def test_the_sqlite_file_deleted_then_replaced_under_the_tui(demo_db, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import shutil

    saved = tmp_path / "saved.db"
    shutil.copy(demo_db, saved)
    app = AgentTuiApp(str(demo_db))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await until(pilot, lambda: app.screen.query_one(StatusBar).tail == "watching", "the change feed to watch the file")
        shown = [r.run_id for r in app.screen.table.items]  # type: ignore[attr-defined]
        bar = app.screen.query_one(StatusBar)
        demo_db.unlink()
        (demo_db.parent / (demo_db.name + "-wal")).touch()  # any event in the watched names wakes the feed
        await until(pilot, lambda: bar.connection == "reconnecting", "the status bar to say reconnecting")
        assert [r.run_id for r in app.screen.table.items] == shown  # type: ignore[attr-defined]
        (demo_db.parent / (demo_db.name + "-wal")).unlink()
        shutil.copy(saved, demo_db)
        await until(pilot, lambda: app.screen.query_one(StatusBar).connection == "connected", "the app to open the new file")
        await settle(pilot)
        assert [r.run_id for r in app.screen.table.items] == shown  # type: ignore[attr-defined]

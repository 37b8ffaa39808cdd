"""Read-only by default, proven: browsing every screen, replaying and diffing write nothing."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest

from agenttui.demo.build import build_demo
from agenttui.stores.postgres import PostgresStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.runs import RunsScreen
from tests.pg import PostgresCluster
from tests.tui.conftest import screen_of, settle

DEMO_AGENT = "agenttui.demo.build:factory"
#: Runs replayed to the end, both ways: a complete one, a paused one and a halted one.
REPLAYED = {"refund-a1002", "refund-a1005", "refund-a1004-halted"}


async def browse_everything(app: AgentTuiApp) -> None:
    """Every screen and pane over every run: inspector, raw bytes, time travel, events, flowchart,
    replay to the end with recorded tools and with the demo's code, and a run-against-run diff."""
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        runs = [row.run_id for row in screen_of(app, RunsScreen).table.items]
        await pilot.press("question_mark", "escape", "s", "s", "slash", "a", "escape")
        for run_id in runs:
            app.open_run(run_id)
            await settle(pilot)
            await pilot.press("G", "c", "v", "w", "i", "r", "g")
            if run_id not in REPLAYED:
                await pilot.press("escape")
                await settle(pilot)
                continue
            for replay_key in ("R", "Y"):
                await pilot.press(replay_key)
                await settle(pilot)
                await pilot.press("e")
                await settle(pilot)
                await pilot.press("2", "3", "b", "escape")
                await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
        assert isinstance(app.screen, RunsScreen)
        await pilot.press("g", "m", "j", "m", "d")
        await settle(pilot)
        await pilot.press("escape")


async def test_sqlite_bytes_mtime_and_directory_unchanged(demo_db: Path) -> None:
    before = (demo_db.read_bytes(), demo_db.stat().st_mtime_ns, sorted(p.name for p in demo_db.parent.iterdir()))
    await browse_everything(AgentTuiApp(str(demo_db), agent_spec=DEMO_AGENT))
    after = (demo_db.read_bytes(), demo_db.stat().st_mtime_ns, sorted(p.name for p in demo_db.parent.iterdir()))
    assert after == before


AUDIT = """
CREATE TABLE {s}.audit (at timestamptz DEFAULT now(), tbl text, op text);
CREATE FUNCTION {s}.audit_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO {s}.audit (tbl, op) VALUES (TG_TABLE_NAME, TG_OP); RETURN NULL; END $$;
CREATE TRIGGER audit_steps AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {s}.bide_steps
    FOR EACH STATEMENT EXECUTE FUNCTION {s}.audit_write();
CREATE TRIGGER audit_leases AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {s}.bide_leases
    FOR EACH STATEMENT EXECUTE FUNCTION {s}.audit_write();
"""


@pytest.mark.postgres
async def test_postgres_no_statement_changes_a_row(postgres_cluster: PostgresCluster) -> None:
    schema = "ro_" + uuid.uuid4().hex[:10]
    writer = await PostgresStore.open(postgres_cluster.dsn, schema=schema)
    await build_demo(writer, bulk_turns=5, clock=lambda: datetime(2031, 1, 1, tzinfo=UTC))
    await writer.close()
    conn = await asyncpg.connect(postgres_cluster.dsn)
    try:
        await conn.execute(AUDIT.format(s=schema))
        separator = "&" if "?" in postgres_cluster.dsn else "?"
        await browse_everything(AgentTuiApp(f"{postgres_cluster.dsn}{separator}schema={schema}", agent_spec=DEMO_AGENT))
        assert await conn.fetch(f"SELECT tbl, op FROM {schema}.audit") == []
        await conn.execute(f"DELETE FROM {schema}.bide_leases WHERE false")  # the audit does fire on writes
        assert len(await conn.fetch(f"SELECT * FROM {schema}.audit")) == 1
    finally:
        await conn.close()


def test_a_wal_journal_on_read_only_media_opens(tmp_path: Path) -> None:
    """A read-only mount (in a mount namespace of its own: nothing changes outside the test)."""
    import asyncio
    import subprocess
    import sys

    from agenttui.demo.build import build_demo
    from agenttui.stores.sqlite import SQLiteStore

    source, mount = tmp_path / "media", tmp_path / "mnt"
    source.mkdir()
    mount.mkdir()

    async def build() -> None:
        store = await SQLiteStore.open(source / "journal.db")  # WAL, as the SDK writes its files
        try:
            await build_demo(store, bulk_turns=2)
        finally:
            await store.close()

    asyncio.run(build())
    script = (f"mount --bind {source} {mount} && mount -o remount,bind,ro {mount} && "
              f"exec {sys.executable} -m agenttui runs {mount / 'journal.db'} --json")  # fmt: skip
    result = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[2],
    )
    assert result.returncode == 0, result.stderr
    assert '"run_id": "refund-a1002"' in result.stdout or '"run_id":"refund-a1002"' in result.stdout

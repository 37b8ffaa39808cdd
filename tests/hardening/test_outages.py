"""Outages: PostgreSQL stopped under the TUI, and started again; the store file replaced or made
unreadable; a write confirmed while the store is away."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Static

from agenttui.demo.build import build_demo
from agenttui.journal import Journal, Record, StepKind
from agenttui.stores.base import Store
from agenttui.stores.postgres import PostgresStore
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.messages import StoreChanged
from agenttui.tui.screens.dialogs import ConfirmDialog, ErrorDialog
from agenttui.tui.screens.run import RunScreen
from agenttui.tui.screens.runs import RunsScreen
from agenttui.tui.widgets.status_bar import StatusBar
from tests.pg import PostgresCluster
from tests.tui.conftest import screen_of, settle, status_of, until, wait_for_screen

AWAITING_APPROVAL = "refund-a1005"
"""The demo run gated on a human's approval of its call ``call_1_0``."""


async def journal_of(store: Store, run_id: str) -> list[tuple[int, str, bytes]]:
    """Every entry of a run exactly as stored: seq, name and the bytes."""
    return [(e.seq, e.name, e.data) async for e in store.load(run_id)]


def dialog_text(dialog: Screen[Any]) -> str:
    """What a dialog shows a person: its title and its message."""
    return " ".join(str(static.render()) for static in dialog.query(Static))


async def confirm_approval_of(pilot: Pilot[Any], run_id: str) -> None:
    """Select ``run_id`` in the runs list and press ``a``; return with the ConfirmDialog showing."""
    screen = screen_of(pilot.app, RunsScreen)
    screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == run_id)
    await pilot.press("a")
    await wait_for_screen(pilot, ConfirmDialog)


def sqlite_files(path: Path) -> list[Path]:
    """The database file and those of its ``-wal``/``-shm`` companions that exist."""
    return [f for f in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")) if f.exists()]


async def demo_on_postgres(cluster: PostgresCluster) -> tuple[str, str]:
    """A demo store in a fresh schema of ``cluster``: its URL for the app, and the schema."""
    schema = "outage_" + uuid.uuid4().hex[:10]
    writer = await PostgresStore.open(cluster.dsn, schema=schema)
    try:
        await build_demo(writer, bulk_turns=5, clock=lambda: datetime(2031, 1, 1, tzinfo=UTC))
    finally:
        await writer.close()
    separator = "&" if "?" in cluster.dsn else "?"
    return f"{cluster.dsn}{separator}schema={schema}", schema


#: prctl(2) option and capability numbers from <linux/prctl.h> and <linux/capability.h>.
_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE = 1
_CAP_DAC_READ_SEARCH = 2


def bound_by_file_modes() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes file modes apply to the child; None when they already do.

    Root ignores file modes only through CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH. Dropped from
    the bounding set before exec, the child runs as root without them, and a mode-000 file
    refuses it as it refuses any user. (Switching to ``nobody`` is no option: the interpreter
    lives under /root, which other users cannot enter.)
    """
    if os.geteuid() != 0:
        return None
    # Looked up in the parent: after fork the child should do nothing but make the system calls.
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def drop_file_capabilities() -> None:
        for capability in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
            if prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")

    return drop_file_capabilities


@pytest.mark.postgres
async def test_postgres_stopped_and_restarted_under_the_tui(postgres_cluster: PostgresCluster) -> None:
    url, _ = await demo_on_postgres(postgres_cluster)
    app = AgentTuiApp(url, tail=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        shown = [(r.run_id, status_of(r).state) for r in screen_of(app, RunsScreen).table.items]
        assert len(shown) == 17
        bar = app.screen.query_one(StatusBar)
        postgres_cluster.stop()
        try:
            app.screen.post_message(StoreChanged(None))  # what the change feed would send
            await until(pilot, lambda: bar.connection == "reconnecting", "the status bar to say reconnecting")
            assert [(r.run_id, status_of(r).state) for r in screen_of(app, RunsScreen).table.items] == shown
            assert "password" not in str(bar.render()).lower()
        finally:
            postgres_cluster.start()
        await until(pilot, lambda: bar.connection == "connected", "the app to reconnect by itself")
        await settle(pilot)
        assert [(r.run_id, status_of(r).state) for r in screen_of(app, RunsScreen).table.items] == shown
        app.open_run("refund-a1002")
        await settle(pilot)
        assert len(screen_of(app, RunScreen).rows) == 12


@pytest.mark.postgres
async def test_the_live_tail_resumes_after_postgres_comes_back(postgres_cluster: PostgresCluster) -> None:
    url, schema = await demo_on_postgres(postgres_cluster)
    app = AgentTuiApp(url, tail=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        bar = app.screen.query_one(StatusBar)
        await until(pilot, lambda: bar.tail == "listening", "the change feed to listen")
        postgres_cluster.stop()
        try:
            await until(pilot, lambda: bar.connection == "reconnecting", "the status bar to say reconnecting")
        finally:
            postgres_cluster.start()
        await until(pilot, lambda: bar.connection == "connected", "the app to reconnect by itself")
        await until(pilot, lambda: bar.tail == "listening", "the change feed to listen again")
        writer = await PostgresStore.open(postgres_cluster.dsn, schema=schema)
        try:
            await Journal(writer).append("after-the-outage", Record("note", StepKind.VALUE, result=b'"back"'))
        finally:
            await writer.close()
        await until(pilot, lambda: any(r.run_id == "after-the-outage" for r in screen_of(app, RunsScreen).table.items),
                    "a run written after the outage to show")  # fmt: skip


async def test_the_live_tail_resumes_when_the_sqlite_file_comes_back(demo_db: Path, tmp_path: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        bar = app.screen.query_one(StatusBar)
        await until(pilot, lambda: bar.tail == "watching", "the change feed to watch the file")
        away = tmp_path / "away"
        away.mkdir()
        for file in sqlite_files(demo_db):
            file.rename(away / file.name)
        (demo_db.parent / (demo_db.name + "-wal")).touch()  # any event in the watched names wakes the feed
        await until(pilot, lambda: bar.connection == "reconnecting", "the status bar to say reconnecting")
        assert bar.tail == "paused"
        (demo_db.parent / (demo_db.name + "-wal")).unlink()
        for file in away.iterdir():
            file.rename(demo_db.parent / file.name)
        await until(pilot, lambda: bar.connection == "connected", "the app to reconnect by itself")
        await until(pilot, lambda: bar.tail == "watching", "the change feed to watch the file again")
        writer = await SQLiteStore.open(demo_db)
        try:
            await Journal(writer).append("after-the-outage", Record("note", StepKind.VALUE, result=b'"back"'))
        finally:
            await writer.close()
        await until(pilot, lambda: any(r.run_id == "after-the-outage" for r in screen_of(app, RunsScreen).table.items),
                    "a run written after the outage to show")  # fmt: skip


async def test_the_sqlite_file_deleted_then_replaced_under_the_tui(demo_db: Path, tmp_path: Path) -> None:
    import shutil

    saved = tmp_path / "saved.db"
    shutil.copy(demo_db, saved)
    app = AgentTuiApp(str(demo_db))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await until(
            pilot, lambda: app.screen.query_one(StatusBar).tail == "watching", "the change feed to watch the file"
        )
        shown = [r.run_id for r in screen_of(app, RunsScreen).table.items]
        bar = app.screen.query_one(StatusBar)
        demo_db.unlink()
        (demo_db.parent / (demo_db.name + "-wal")).touch()  # any event in the watched names wakes the feed
        await until(pilot, lambda: bar.connection == "reconnecting", "the status bar to say reconnecting")
        assert [r.run_id for r in screen_of(app, RunsScreen).table.items] == shown
        (demo_db.parent / (demo_db.name + "-wal")).unlink()
        shutil.copy(saved, demo_db)
        await until(
            pilot, lambda: app.screen.query_one(StatusBar).connection == "connected", "the app to open the new file"
        )
        await settle(pilot)
        assert [r.run_id for r in screen_of(app, RunsScreen).table.items] == shown


async def test_the_sqlite_file_made_unreadable_under_the_tui(demo_db: Path) -> None:
    # Open connections keep their file descriptors, so the app's keeps reading and a writer that was
    # running when the mode changed keeps committing, for any user. (Root could even open the file
    # afresh: what this proves under root is that the app does not take the change for an outage.)
    writer = await SQLiteStore.open(demo_db)
    app = AgentTuiApp(str(demo_db), tail=True)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)
            await until(
                pilot, lambda: app.screen.query_one(StatusBar).tail == "watching", "the change feed to watch the file"
            )
            listed = [r.run_id for r in screen_of(app, RunsScreen).table.items]
            app.open_run(AWAITING_APPROVAL)
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, RunScreen)
            shown = [r.name for r in screen.rows]
            bar = screen.query_one(StatusBar)
            modes = {f: f.stat().st_mode for f in sqlite_files(demo_db)}
            for f in modes:
                os.chmod(f, 0)  # the chmod itself is an event in the watched names: the feed wakes
            try:
                await Journal(writer).append(
                    AWAITING_APPROVAL, Record("ops-note", StepKind.VALUE, result=b'"while unreadable"')
                )
                await until(pilot, lambda: len(screen.rows) > len(shown), "the record committed meanwhile to appear")
                assert [r.name for r in screen.rows] == [*shown, "ops-note"]
                assert app.screen is screen, f"{app.screen!r} covers the run"
                assert (bar.connection, bar.tail) == ("connected", "watching")
            finally:
                for f, mode in modes.items():
                    os.chmod(f, mode)
            await pilot.press("escape")
            await settle(pilot)
            assert isinstance(app.screen, RunsScreen)
            assert [r.run_id for r in app.screen.table.items] == listed
            assert app.screen.query_one(StatusBar).connection == "connected"
    finally:
        await writer.close()


def test_an_unreadable_sqlite_file_is_one_clear_line_and_exit_code_2(demo_db: Path) -> None:
    as_a_user = bound_by_file_modes()
    mode = demo_db.stat().st_mode
    demo_db.chmod(0)
    try:
        # The premise, checked: the CLI's process really cannot read the file.
        probe = subprocess.run(
            [sys.executable, "-c", f"open({str(demo_db)!r}, 'rb')"],
            check=False, preexec_fn=as_a_user, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert probe.returncode != 0 and "PermissionError" in probe.stderr, probe.stderr
        done = subprocess.run(
            [sys.executable, "-m", "agenttui", "runs", str(demo_db)],
            check=False, preexec_fn=as_a_user, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        demo_db.chmod(mode)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("agenttui: ") and str(demo_db) in line and "permission denied" in line.lower(), line


@pytest.mark.postgres
async def test_an_approval_confirmed_while_postgres_is_down_writes_nothing_and_says_so(
    postgres_cluster: PostgresCluster,
) -> None:
    url, schema = await demo_on_postgres(postgres_cluster)
    store = await PostgresStore.open(postgres_cluster.dsn, schema=schema)
    try:
        before = await journal_of(store, AWAITING_APPROVAL)
    finally:
        await store.close()
    app = AgentTuiApp(url, tail=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        bar = app.screen.query_one(StatusBar)
        await confirm_approval_of(pilot, AWAITING_APPROVAL)
        postgres_cluster.stop()
        try:
            await pilot.press("w")
            await until(pilot, lambda: isinstance(app.screen, ErrorDialog), "an error dialog")
            assert "The write was not made" in dialog_text(app.screen)
            await until(pilot, lambda: bar.connection == "reconnecting", "the status bar to say reconnecting")
        finally:
            postgres_cluster.start()
        await until(pilot, lambda: bar.connection == "connected", "the app to reconnect by itself")
        checker = await PostgresStore.open(postgres_cluster.dsn, schema=schema, read_only=True)
        try:
            assert await journal_of(checker, AWAITING_APPROVAL) == before
        finally:
            await checker.close()
        # As the dialog says: once connected, the same write goes through, once.
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, RunsScreen)
        await confirm_approval_of(pilot, AWAITING_APPROVAL)
        await pilot.press("w")
        await settle(pilot)
        assert not isinstance(app.screen, ErrorDialog), dialog_text(app.screen)
    checker = await PostgresStore.open(postgres_cluster.dsn, schema=schema, read_only=True)
    try:
        after = await journal_of(checker, AWAITING_APPROVAL)
    finally:
        await checker.close()
    assert after[: len(before)] == before and [name for _, name, _ in after[len(before) :]] == ["approval:call_1_0"]


async def test_an_approval_confirmed_after_the_sqlite_file_was_moved_away_writes_nothing_and_says_so(
    demo_db: Path, tmp_path: Path
) -> None:
    store = await SQLiteStore.open(demo_db, read_only=True)
    try:
        before = await journal_of(store, AWAITING_APPROVAL)
    finally:
        await store.close()
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        bar = app.screen.query_one(StatusBar)
        await confirm_approval_of(pilot, AWAITING_APPROVAL)
        # Moved, not deleted, so the journal can be compared afterwards; to the path it is gone
        # alike. The app's open connection keeps reading the moved files.
        aside = {f: tmp_path / "aside" / f.name for f in sqlite_files(demo_db)}
        (tmp_path / "aside").mkdir()
        for f, moved in aside.items():
            f.rename(moved)
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, ErrorDialog), "an error dialog")
        assert "The write was not made" in dialog_text(app.screen)
        await until(pilot, lambda: bar.connection == "reconnecting", "the status bar to say reconnecting")
        # Trying again before the file is back fails the same way: still away, still nothing made.
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, RunsScreen), "the dialog to close")
        await confirm_approval_of(pilot, AWAITING_APPROVAL)
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, ErrorDialog), "the second error dialog")
        assert "The write was not made" in dialog_text(app.screen)
        assert bar.connection == "reconnecting"
        assert not demo_db.exists(), "the write created a new, empty journal in the file's place"
        for f, moved in aside.items():
            moved.rename(f)
        await until(pilot, lambda: bar.connection == "connected", "the app to reconnect by itself")
        store = await SQLiteStore.open(demo_db, read_only=True)
        try:
            assert await journal_of(store, AWAITING_APPROVAL) == before
        finally:
            await store.close()
        # Once connected, the same write goes to the file on screen, once.
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, RunsScreen), "the dialog to close")
        await settle(pilot)
        await confirm_approval_of(pilot, AWAITING_APPROVAL)
        await pilot.press("w")
        await settle(pilot)
        assert not isinstance(app.screen, ErrorDialog), dialog_text(app.screen)
    store = await SQLiteStore.open(demo_db, read_only=True)
    try:
        after = await journal_of(store, AWAITING_APPROVAL)
    finally:
        await store.close()
    assert after[: len(before)] == before and [name for _, name, _ in after[len(before) :]] == ["approval:call_1_0"]


async def test_a_store_locked_by_another_process_says_so_and_quitting_does_not_wait(demo_db: Path) -> None:
    """Another process holds an exclusive lock: the status bar says what the TUI waits for, the
    runs list fills in once the lock goes, and quitting meanwhile takes no more than a moment."""
    import sqlite3
    import time

    from agenttui.tui.messages import WAITING_FOR_LOCK

    def lock() -> sqlite3.Connection:
        holder = sqlite3.connect(demo_db, isolation_level=None, check_same_thread=False)
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        return holder

    holder = lock()
    app = AgentTuiApp(str(demo_db), tail=False)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await until(pilot, lambda: app.connection == WAITING_FOR_LOCK, "the lock to be named", turns=400)
            assert WAITING_FOR_LOCK in str(app.screen.query_one(StatusBar).render())
            holder.close()  # the other process lets go
            await until(
                pilot,
                lambda: len(screen_of(app, RunsScreen).table.items) == 17,
                "the runs once the lock went",
                turns=600,
            )
            assert app.connection == "connected"
        holder = lock()
        again = AgentTuiApp(str(demo_db), tail=False)
        async with again.run_test(size=(120, 30)) as pilot:
            await until(pilot, lambda: again.connection == WAITING_FOR_LOCK, "the lock to be named", turns=400)
            started = time.monotonic()
            await pilot.press("q")
        assert time.monotonic() - started < 3  # it took 28 s: a read blocked the close
    finally:
        holder.close()

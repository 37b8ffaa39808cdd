"""Exporting from the TUI, driven with Pilot at 80x24 over a copy of the demo store: the run under
the cursor (or the one open) with its sub-runs, byte for byte; every run the filter shows; a
redaction; an existing file refused unless replacing it is confirmed; esc cancelling an export
under way with nothing left behind; and the source store's bytes untouched throughout."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, ProgressBar, Static

from agenttui.runs.bundles import read_manifest
from agenttui.stores.bundle_file import BundleFile
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.dialogs import ConfirmDialog
from agenttui.tui.screens.export import ExportDialog
from agenttui.tui.screens.run import RunScreen
from agenttui.tui.screens.runs import RunsScreen
from tests.tui.conftest import notices, screen_of, settle, until, wait_for_screen

SIZE = (80, 24)


@pytest.fixture
def out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory, where a bundle goes by default: empty, apart from the store."""
    directory = tmp_path / "out"
    directory.mkdir()
    monkeypatch.chdir(directory)
    return directory


async def entries(path: Path) -> dict[str, list[tuple[str, bytes]]]:
    """Every run of the store at ``path`` and its entries (name, stored bytes), in order."""
    store = await SQLiteStore.open(path, read_only=True)
    try:
        return {run_id: [(e.name, e.data) async for e in store.load(run_id)] async for run_id in store.runs()}
    finally:
        await store.close()


def note(dialog: ExportDialog) -> str:
    return str(dialog.query_one("#export-note", Static).render())


async def export_dialog(pilot: Pilot[Any], run_id: str | None = None, *keys: str) -> ExportDialog:
    """The runs list settled, its cursor on ``run_id``, ``keys`` pressed, then E: the dialog."""
    await settle(pilot)
    screen = screen_of(pilot.app, RunsScreen)
    if run_id is not None:
        screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == run_id)
    await pilot.press(*keys, "E")
    await wait_for_screen(pilot, ExportDialog)
    await pilot.pause()
    return screen_of(pilot.app, ExportDialog)


async def exported(pilot: Pilot[Any]) -> None:
    await until(pilot, lambda: not isinstance(pilot.app.screen, ExportDialog), "the export to end")
    await settle(pilot)


async def test_E_exports_the_run_under_the_cursor_with_its_sub_runs_byte_for_byte(demo_db: Path, out: Path) -> None:
    before = demo_db.read_bytes()
    source = await entries(demo_db)
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        dialog = await export_dialog(pilot, "eligibility-a1004")
        target = out / "eligibility-a1004.bundle.db"
        # The default file, in full, and the command that writes the same bundle.
        assert dialog.query_one("#export-path", Input).value == str(target)
        assert dialog.query_one("#dialog-command").command == (  # type: ignore[attr-defined]  # CommandLine's
            f"agenttui export {demo_db} eligibility-a1004 -o {target}"
        )
        await pilot.press("w")
        await exported(pilot)
        [notice] = [n for n in notices(app) if n.startswith("wrote")]
        assert notice == f"wrote {target}\n2 runs (eligibility-a1004, eligibility-a1004>call_0_0), 12 records"
    bundle = await entries(target)
    assert list(bundle) == ["eligibility-a1004", "eligibility-a1004>call_0_0"]
    assert all(bundle[run_id] == source[run_id] for run_id in bundle)
    assert demo_db.read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["eligibility-a1004.bundle.db"]  # no partial left


async def test_E_on_an_open_run_exports_it_and_y_copies_the_command(demo_db: Path, out: Path) -> None:
    before = demo_db.read_bytes()
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        app.open_run("refund-a1002")
        await settle(pilot)
        screen_of(app, RunScreen)
        await pilot.press("E")
        await wait_for_screen(pilot, ExportDialog)
        dialog = screen_of(app, ExportDialog)
        assert dialog.scope.run_ids == ("refund-a1002",)
        await pilot.press("tab", "tab", "space")  # the scope is the open run alone: path, then sub-runs off
        await pilot.pause()
        assert not dialog.sub_runs
        await pilot.press("y")
        await pilot.pause()
        assert (
            app.clipboard == f"agenttui export {demo_db} refund-a1002 -o {out / 'refund-a1002.bundle.db'} --no-sub-runs"
        )
        await pilot.press("w")
        await exported(pilot)
        assert isinstance(app.screen, RunScreen)
    assert list(await entries(out / "refund-a1002.bundle.db")) == ["refund-a1002"]
    assert demo_db.read_bytes() == before


async def test_every_run_the_filter_shows_goes_into_one_bundle_with_a_redaction(demo_db: Path, out: Path) -> None:
    before = demo_db.read_bytes()
    source = await entries(demo_db)
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        runs = screen_of(app, RunsScreen)
        await pilot.press("slash", *"refund-a100", "enter")  # refund-a1001-cancelled ... refund-a1006-in-flight
        await settle(pilot)
        shown = [row.run_id for row in runs.table.items]
        assert len(shown) == 8
        dialog = await export_dialog(pilot)
        await pilot.press("tab", "down", "enter")  # the scope: every run the filter shows
        await pilot.pause()
        assert dialog.scope.run_ids == tuple(shown)
        target = out / "refund-a100-runs.bundle.db"
        assert dialog.query_one("#export-path", Input).value == str(target)
        await pilot.press("tab", "tab", "tab", *"order_id", "enter")
        await pilot.pause()
        assert dialog.redactions == ["order_id"]
        await pilot.press("w")
        await exported(pilot)
        [notice] = [n for n in notices(app) if n.startswith("wrote")]
        assert notice.startswith(
            f"wrote {target}\n8 runs (refund-a1001-cancelled, refund-a1001-stalled, refund-a1002 and 5 more)"
        )
        assert "redacted order_id: " in notice and "matched nothing" not in notice
    bundle = await entries(target)
    assert list(bundle) == shown
    assert all(len(bundle[run_id]) == len(source[run_id]) for run_id in shown)
    assert any(b"order_id" in data for run_id in shown for _, data in source[run_id])
    assert not any(b'"order_id":"A-' in data for run_id in shown for _, data in bundle[run_id])
    store = await SQLiteStore.open(target, read_only=True)
    try:
        manifest = await read_manifest(store)
    finally:
        await store.close()
    assert manifest is not None and manifest.redacted and [p for p, _ in manifest.redactions] == ["order_id"]
    assert demo_db.read_bytes() == before


async def test_an_existing_file_is_replaced_only_once_confirmed(demo_db: Path, out: Path) -> None:
    target = out / "refund-a1002.bundle.db"
    target.write_bytes(b"not yours to replace")
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        dialog = await export_dialog(pilot, "refund-a1002")
        assert note(dialog) == "refund-a1002.bundle.db exists: w asks before replacing it"
        await pilot.press("w")
        await wait_for_screen(pilot, ConfirmDialog)
        confirm = screen_of(app, ConfirmDialog)
        assert confirm.command.endswith(" --force")
        await pilot.press("n")
        await wait_for_screen(pilot, ExportDialog)
        await settle(pilot)
        assert target.read_bytes() == b"not yours to replace"
        assert "kept" in note(dialog)
        await pilot.press("w")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("w")
        await exported(pilot)
    assert list(await entries(target)) == ["refund-a1002"]


async def test_esc_cancels_an_export_under_way_and_leaves_nothing(
    demo_db: Path, out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = demo_db.read_bytes()
    writing = asyncio.Event()
    never = asyncio.Event()

    async def add_forever(self: BundleFile, rows: Any) -> None:
        writing.set()
        await never.wait()  # a write that takes as long as the test wants

    monkeypatch.setattr(BundleFile, "add", add_forever)
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        dialog = await export_dialog(pilot, "audit-bulk")
        await pilot.press("w")
        await until(pilot, writing.is_set, "the export to write")
        assert dialog.running and dialog.query_one(ProgressBar).display
        assert any(p.name.endswith(".partial") for p in out.iterdir())  # begun
        await pilot.press("escape")
        await until(pilot, lambda: not dialog.running, "the export to stop")
        await settle(pilot)
        assert note(dialog) == "export cancelled: nothing was written"
        assert list(out.iterdir()) == []
        await pilot.press("escape")  # and esc again closes the dialog
        await wait_for_screen(pilot, RunsScreen)
    assert demo_db.read_bytes() == before


async def test_esc_before_w_writes_nothing_and_a_bad_redaction_is_refused_in_the_dialog(
    demo_db: Path, out: Path
) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        dialog = await export_dialog(pilot, "refund-a1002")
        await pilot.press("tab", "tab", "tab", "tab", *"$.name", "enter")  # the scope, the path, sub-runs, redact
        await pilot.pause()
        assert "$.name" in note(dialog)
        assert "-error" in dialog.query_one("#export-note").classes
        await pilot.press("w")  # refused: the note says why
        await settle(pilot)
        assert isinstance(app.screen, ExportDialog) and not dialog.running
        await pilot.press("escape")
        await wait_for_screen(pilot, RunsScreen)
    assert list(out.iterdir()) == []


async def test_the_palette_offers_export_from_a_run(demo_db: Path, out: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        app.open_run("lookup-z0042")
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"export this run")
        await pilot.pause(0.4)
        await pilot.press("enter")
        await wait_for_screen(pilot, ExportDialog)
        assert screen_of(app, ExportDialog).scope.run_ids == ("lookup-z0042",)


async def test_marked_runs_are_offered_first_and_exported_together(demo_db: Path, out: Path) -> None:
    source = await entries(demo_db)
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        runs = screen_of(app, RunsScreen)
        for run_id in ("eligibility-a1004", "refund-a1002"):
            runs.table.cursor = next(i for i, r in enumerate(runs.table.items) if r.run_id == run_id)
            await pilot.press("m")
        dialog = await export_dialog(pilot)
        assert [s.label for s in dialog.scopes] == [
            "the run under the cursor: refund-a1002",
            "the 2 marked runs",
            "every run listed: 17",
        ]
        assert dialog.scope.run_ids == ("eligibility-a1004", "refund-a1002")
        assert dialog.query_one("#export-path", Input).value == str(out / "marked-runs.bundle.db")
        await pilot.press("w")
        await exported(pilot)
    bundle = await entries(out / "marked-runs.bundle.db")
    assert list(bundle) == ["eligibility-a1004", "eligibility-a1004>call_0_0", "refund-a1002"]
    assert all(bundle[run_id] == source[run_id] for run_id in bundle)


async def test_an_error_is_shown_in_the_dialog_and_nothing_is_left(demo_db: Path, out: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        dialog = await export_dialog(pilot, "refund-a1002")
        await pilot.press("tab", "tab", "end", "ctrl+u", *f"{out}/no/such/dir/x.db", "enter")
        await pilot.press("w")
        await settle(pilot)
        assert isinstance(app.screen, ExportDialog) and not dialog.running
        assert f"cannot write in {out}/no/such/dir: No such file or directory" in note(dialog)
        assert "-error" in dialog.query_one("#export-note").classes
    assert list(out.iterdir()) == []


async def test_an_app_that_refuses_writes_writes_no_file_either(demo_db: Path, out: Path) -> None:
    """``serve`` without --allow-writes (``open --no-writes``): a bundle is a file on the server's
    machine, so the dialog shows the command and writes nothing."""
    app = AgentTuiApp(str(demo_db), tail=False, writes_refused="this agenttui serve refuses writes")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        dialog = await export_dialog(pilot, "refund-a1002")
        await pilot.press("w")
        await pilot.pause()
        assert note(dialog).startswith("Nothing is written here: this agenttui serve refuses writes.")
        assert isinstance(app.screen, ExportDialog)
    assert list(out.iterdir()) == []

"""The TUI driven with Pilot over real SQLite stores built by the runtime."""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import sqlite3
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Input, Static

from agenttui.journal import Journal, Record, StepKind
from agenttui.runs.statuses.status import RunState, RunStatus
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.messages import StoreOpened
from agenttui.tui.screens.base import SCREEN_STYLES
from agenttui.tui.screens.help import HelpScreen
from agenttui.tui.screens.run import RunScreen
from agenttui.tui.screens.runs import RunsScreen
from agenttui.tui.widgets import key_footer
from agenttui.tui.widgets.inspector import RecordInspector
from agenttui.tui.widgets.key_footer import KeyFooter
from tests.runs.test_summary_statuses import comparable
from tests.tui.conftest import screen_of, settle, status_of, type_ahead, until

SIZE = (140, 40)


def shown(widget: Widget) -> str:
    """The plain text a Static shows."""
    from rich.console import Console

    assert isinstance(widget, Static)

    console = Console(width=200, record=True, file=io.StringIO())
    console.print(widget.content)
    return console.export_text()


async def test_runs_screen_lists_every_run_with_its_status(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        rows = {row.run_id: row for row in screen.table.items}
        assert status_of(rows["refund-a1005"]).state == RunState.AWAITING_APPROVAL
        assert status_of(rows["refund-a1004-halted"]).state == RunState.HALTED
        assert "eligibility-a1004>call_0_0" not in rows  # sub-runs fold under their parent
        assert rows["eligibility-a1004"].children == 1
        counts = screen.model.counts()
        assert counts[RunState.COMPLETE] == 5 and counts[RunState.SLEEPING] == 1 and sum(counts.values()) == 17
        # A run in every status but fork: a person saves forks from replays (tests/tui/test_fork.py lists one).
        assert {state for state, count in counts.items() if count} == set(RunState) - {RunState.FORK}


async def test_a_reopen_shows_every_status_the_index_kept_at_once(demo_db: Path) -> None:
    """The second look at a store fills the runs list from the status index in one message,
    every status as the first look read it (and the clock and leases say now)."""
    looks: list[dict[str, RunStatus | None]] = []
    filled: list[RunsScreen.RunsListed] = []
    for _ in range(2):
        app = AgentTuiApp(str(demo_db), tail=False)

        def note(message: object) -> None:
            if isinstance(message, RunsScreen.RunsListed) and message.statuses is not None:
                filled.append(message)

        async with app.run_test(size=(140, 12), message_hook=note) as pilot:  # the rest below the first screen
            await settle(pilot)
            screen = screen_of(app, RunsScreen)
            statuses = screen.model.statuses.items()
            looks.append({run_id: line and comparable(line.status(run_id)) for run_id, line in statuses})
    first, again = looks
    assert again == first and None not in again.values()
    fill = filled[-1]  # the second look's: the runs below its first screen, most statuses in
    assert fill.statuses is not None and len(fill.statuses.places([None])) < len(fill.run_ids) / 2


async def test_keys_typed_ahead_of_the_filter_go_into_it(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        type_ahead(app, "/a1004\rj")
        await pilot.pause()
        field = screen.query_one("#runs-filter", Input)
        assert field.value == "a1004" and field.display  # still shown: it holds the filter
        assert app.screen is screen and screen.table.has_focus  # enter closed the filter; no run opened
        assert [r.run_id for r in screen.table.items] == ["eligibility-a1004", "refund-a1004-halted"]
        assert screen.table.cursor == 1  # the j after it moved the cursor
        type_ahead(app, "/zz/z")
        await pilot.pause()
        assert field.value == "zz/z"  # it replaced the selected text; "/" is text
        assert len(screen.table.items) == 0 and "No run matches the filter" in screen.table.empty_text


async def test_unfinished_runs_get_their_status_first() -> None:
    from agenttui.stores.memory import MemStore
    from agenttui.tui.screens.runs import RunsScreen

    store = MemStore()
    journal = Journal(store)
    started = Record("run:start", StepKind.VALUE, result=b'{"input":"x"}')
    for n in range(6000):  # finished, and listed first (byte order)
        await journal.append(f"a-{n:04d}", started)
        await journal.append(f"a-{n:04d}", Record("run:complete", StepKind.VALUE))
    for n in range(3):  # unfinished, listed last
        await journal.append(f"z-{n}", started)
    order: list[str] = []

    def hook(message: object) -> None:
        if isinstance(message, RunsScreen.StatusesComputed):
            order.extend(s.run_id for s in message.statuses)

    app = AgentTuiApp(store=store, tail=False)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await settle(pilot)
        assert screen_of(app, RunsScreen).model.pending == 0
    first_read = list(dict.fromkeys(order))
    assert len(first_read) == 6003
    # Finished runs are read a page (SUMMARY_PAGE) at a time; once the unfinished runs are known,
    # they jump the queue instead of waiting behind every finished run listed before them.
    assert max(first_read.index(f"z-{n}") for n in range(3)) < 3000, [first_read.index(f"z-{n}") for n in range(3)]


async def test_filter_and_status_cycle(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        await pilot.press("slash", *"a1004")
        assert [r.run_id for r in screen.table.items] == ["eligibility-a1004", "refund-a1004-halted"]
        await pilot.press("enter")
        assert screen.table.has_focus
        await pilot.press("escape")
        assert len(screen.table.items) == 17
        await pilot.press("s")  # needs attention
        assert {status_of(r).state for r in screen.table.items} == {
            RunState.HALTED,
            RunState.AWAITING_APPROVAL,
            RunState.AWAITING_INPUT,
            RunState.READY,
            RunState.STALLED,
            RunState.UNREADABLE,
        }
        assert len(screen.table.items) == 6


async def test_unfold_a_sub_run_and_open_it(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        index = next(i for i, r in enumerate(screen.table.items) if r.run_id == "eligibility-a1004")
        screen.table.cursor = index
        await pilot.press("l", "j", "enter")
        await settle(pilot)
        assert isinstance(app.screen, RunScreen) and app.screen.run_id == "eligibility-a1004>call_0_0"


async def test_open_a_run_step_and_time_travel(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        runs = screen_of(app, RunsScreen)
        runs.table.cursor = next(i for i, r in enumerate(runs.table.items) if r.run_id == "refund-a1002")
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunScreen)
        assert [r.name for r in screen.rows][:4] == ["@journal", "run:start", "@llm/0", "tool:call_0_0"]
        await pilot.press("j", "j", "j")
        await pilot.pause()
        text = shown(screen.query_one("#inspector-content"))
        assert "tool:call_0_0" in text and '"customer": "grace@example.com"' in text
        await pilot.press("c")
        await pilot.pause()
        conversation = shown(screen.query_one("#conversation-content"))
        assert "as of record #3" in conversation and "standing mat" in conversation and "Refunded" not in conversation
        await pilot.press("G")
        await pilot.pause()
        assert "Refunded $129.00" in shown(screen.query_one("#conversation-content"))
        await pilot.press("escape")
        assert isinstance(app.screen, RunsScreen)


async def test_a_run_opened_before_the_store_is_open_loads_once_it_opens(demo_db: Path) -> None:
    # `--run`: the run's screen is pushed on mount, before the store's worker has opened it (it
    # opens in one hand-off to its thread now, too quickly for a test to open a run before it).
    shown_when_opened: list[object] = []

    def hook(message: object) -> None:
        if isinstance(message, StoreOpened) and not shown_when_opened:
            shown_when_opened.append(app.screen)

    app = AgentTuiApp(str(demo_db), tail=False, run_id="refund-a1002")
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunScreen), screen
        assert [r.name for r in screen.rows][:1] == ["@journal"]
        assert shown_when_opened == [screen]  # else this test did not test the early case


async def test_on_an_80_column_terminal_runs_show_what_they_wait_on(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        header = str(screen.query_one("#runs-header").render())
        # The id column is as wide as the longest run's line (24), not a fixed 28; no counts.
        assert "STEPS" not in header and header.index("STATUS") == 25 and header.index("PENDING") == 45
        row = next(i for i, r in enumerate(screen.table.items) if r.run_id == "refund-a1005")
        line = screen.table.render_line(row).text
        assert line.index("refund-a1005 ") == 2 and "? awaiting-approval" in line
        assert line.index("refund_payment (call_1_0) awaits…") == 45  # under its title, cut after a word
        for y, item in enumerate(screen.table.items):  # every id whole, every state named
            assert item.run_id in screen.table.render_line(y).text
        await pilot.resize_terminal(100, 24)  # the counts still give way to what a run waits on
        await pilot.pause()
        assert "STEPS" not in str(screen.query_one("#runs-header").render())
        assert "refund_payment (call_1_0) awaits approval" in screen.table.render_line(row).text
        await pilot.resize_terminal(120, 24)
        await pilot.pause()
        assert "STEPS" in str(screen.query_one("#runs-header").render())
        assert "awaits approval" in screen.table.render_line(row).text


async def test_on_an_80_column_terminal_the_journal_keeps_room_for_summaries(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(80, 24)) as pilot:
        app.open_run("refund-a1003-denied")
        await settle(pilot)
        journal = screen_of(app, RunScreen).journal_list
        lines = [journal.render_line(y).text.rstrip() for y in range(9)]
        # The record number as wide as the run needs; names to 18 cells, 14 left for summaries.
        assert lines[3].startswith("  3 ⚙ tool:call_0_0     lookup_order: {")
        assert lines[5].startswith("  5 ⊘ approval:call_1_0 denied call_1_0")
        await pilot.press("p")  # without the side panes, every summary is longer
        await pilot.pause()
        assert journal.render_line(5).text.startswith("  5 ⊘ approval:call_1_0 denied call_1_0 by ops@example.com")


async def test_run_given_at_start_opens_over_the_runs_list(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False, run_id="refund-a1005")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, RunScreen) and app.screen.run_id == "refund-a1005"
        assert len(app.screen.rows) == 5
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, RunsScreen) and len(app.screen.table.items) == 17


async def test_a_run_that_does_not_exist_says_so(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False, run_id="refund-z9999")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        journal = screen_of(app, RunScreen).journal_list
        assert journal.render_line(0).text.startswith("No records: the store has no run with this id (yet).")


async def test_the_inspector_shows_the_journal_cursor_record_whatever_other_lists_do(demo_db: Path) -> None:
    # The events pane follows its newest event: its cursor moves must not move the inspector.
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        app.open_run("refund-a1002")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunScreen)
        inspector = screen.query_one(RecordInspector)
        assert inspector._shown is not None and inspector._shown[1] == screen.journal_list.cursor == 0
        await pilot.press("j")
        await pilot.pause()
        assert inspector._shown[1] == screen.journal_list.cursor == 1


async def test_inspector_shows_raw_bytes_on_request(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_run("refund-a1005")
        await settle(pilot)
        screen = app.screen
        await pilot.press("j", "j")
        screen.query_one(RecordInspector).focus()
        await pilot.press("r")
        await pilot.pause()
        assert "stored bytes" in shown(screen.query_one("#inspector-content"))


async def test_an_unreadable_record_shows_and_the_rest_still_shows(demo_db: Path) -> None:
    store = await SQLiteStore.open(demo_db)
    await store.insert("refund-a1005", "@llm/2", b"{broken")
    await Journal(store).append("refund-a1005", Record("note", StepKind.VALUE, result=b'"after the broken one"'))
    await store.close()
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        rows = {r.run_id: r for r in screen_of(app, RunsScreen).table.items}
        assert status_of(rows["refund-a1005"]).state == RunState.UNREADABLE
        app.open_run("refund-a1005")
        await settle(pilot)
        screen = screen_of(app, RunScreen)
        names = [r.name for r in screen.rows]
        assert names[-2:] == ["@llm/2", "note"] and screen.rows[-2].unreadable
        screen.journal_list.cursor = len(names) - 2
        await pilot.pause()
        assert "unreadable" in shown(screen.query_one("#inspector-content"))


async def test_help_lists_the_screens_keys_first_grouped_in_words_and_moving_about_last(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = shown(app.screen.query_one("#help-bindings"))
        groups = [line for line in text.splitlines() if line and not line.startswith(" ") and "  " not in line]
        assert groups == [
            "Find and filter", "Act on runs (each asks first)", "Mark and compare", "Copy and export",
            "Screens and stores", "This app", "Moving about",
        ]  # fmt: skip
        assert re.search(r"^s +Cycle status filter", text, re.M)
        assert re.search(r"^m +Mark or unmark the selected run", text, re.M)
        assert "runs.filter" not in text and "list.choose" not in text  # words, not ids
        await pilot.press("escape")
        assert isinstance(app.screen, RunsScreen)


async def test_the_footer_composes_its_keys_again_only_when_they_change(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)

        def keys() -> list[Widget]:
            return list(screen.query_one(KeyFooter).query("FooterKey"))

        before = keys()
        assert "Filter" in [key.description for key in before]  # type: ignore[attr-defined]  # FooterKey's
        screen.refresh_bindings()  # as a focus change or a resumed screen does: the same keys
        await settle(pilot)
        assert keys() == before  # the same widgets: nothing composed again
        await pilot.press("slash")  # in the filter, "/" is text: the Filter key goes
        await settle(pilot)
        assert "Filter" not in [key.description for key in keys()]  # type: ignore[attr-defined]  # FooterKey's


async def test_every_screens_styles_are_read_once_the_first_rows_are_painted(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Start-up parses the app's own styles only; the others are read in one parse right after
    the first rows (each screen would read its own as it first opens, its ``CSS_PATH``, and Textual
    would then parse every source again)."""
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.first_rows_shown.is_set()
        assert all(app.stylesheet.has_source(str(path)) for path in SCREEN_STYLES)
        reparsed: list[None] = []
        reparse = app.stylesheet.reparse

        def noted() -> None:
            reparsed.append(None)
            reparse()

        monkeypatch.setattr(app.stylesheet, "reparse", noted)
        await pilot.press("enter")  # a run opens: its styles are read already
        await settle(pilot)
        assert isinstance(app.screen, RunScreen) and reparsed == []


class _FooterAfter(App[None]):
    BINDINGS = [Binding("x", "bell", "Ring", id="test.ring")]

    def __init__(self, after: asyncio.Event) -> None:
        super().__init__()
        self.after = after

    def compose(self) -> ComposeResult:
        yield KeyFooter(after=self.after)


def footer_descriptions(app: App[None]) -> list[str]:
    return [key.description for key in app.screen.query_one(KeyFooter).query("FooterKey")]  # type: ignore[attr-defined]  # FooterKey's


async def test_a_footer_told_to_wait_composes_its_keys_once_told() -> None:
    """The runs list's footer waits for its first rows (start-up's 30 ms of keys come after them)."""
    rows_painted = asyncio.Event()
    app = _FooterAfter(rows_painted)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert footer_descriptions(app) == []
        rows_painted.set()
        await until(pilot, lambda: "Ring" in footer_descriptions(app), "the footer's keys")


async def test_a_footer_told_to_wait_shows_its_keys_anyway_if_nothing_comes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_footer, "KEYS_AT_LATEST", 0.05)
    app = _FooterAfter(asyncio.Event())  # never set: rows kept back by a lock, say
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "Ring" in footer_descriptions(app), "the footer's keys")


async def test_palette_offers_actions_and_runs(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"open refund-a1002")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RunScreen) and app.screen.run_id == "refund-a1002"


async def test_a_palette_action_runs_on_the_widget_whose_binding_it_is(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_run("refund-a1002")
        await settle(pilot)
        assert isinstance(app.screen, RunScreen)
        journal = app.screen.journal_list
        journal.cursor = 3
        await pilot.press("ctrl+p")
        await pilot.press(*"journal: First record")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RunScreen) and journal.cursor == 0


async def test_a_missing_store_exits_with_a_connection_error(tmp_path: Path) -> None:
    app = AgentTuiApp(str(tmp_path / "missing.db"), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
    assert app.return_code == 2 and "no such file" in app.failure


async def test_an_empty_list_says_why_it_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    await (await SQLiteStore.open(path)).close()
    app = AgentTuiApp(str(path), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = screen_of(app, RunsScreen).table
        assert len(table.items) == 0 and table.render_line(0).text.rstrip() == "No runs in this store yet."
        assert table.render_line(1).text.strip() == ""


def test_the_command_line_names_a_missing_store_before_the_screen_switches(tmp_path: Path) -> None:
    import subprocess
    import sys

    missing = tmp_path / "missing.db"
    child = subprocess.run(
        [sys.executable, "-m", "agenttui", str(missing)], check=False, capture_output=True, text=True, timeout=60
    )
    assert child.returncode == 2
    assert child.stderr == f"agenttui: No such store: {missing}: no such file\n"  # the path typed, not a URL
    assert "\x1b" not in child.stdout + child.stderr and not missing.exists()


async def test_live_tail_shows_a_record_another_writer_commits(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_run("refund-a1005")
        await settle(pilot)
        screen = screen_of(app, RunScreen)
        before = len(screen.rows)
        writer = await SQLiteStore.open(demo_db)
        try:
            await Journal(writer).append("refund-a1005", Record("ops-note", StepKind.VALUE, result=b'"looked at it"'))
            for _ in range(100):  # the watcher is event-driven: wait for its message, bounded
                if len(screen.rows) > before:
                    break
                await asyncio.sleep(0.05)
        finally:
            await writer.close()
        assert [r.name for r in screen.rows[before:]] == ["ops-note"]


async def test_long_run_ids_give_way_in_the_middle_and_the_footer_keeps_help(demo_db: Path) -> None:
    """A store whose run ids share a tenant prefix and a long suffix: at 80 columns each id shows
    what tells it apart, the status and what it waits on show, and the footer keeps ``?``; the
    columns and keys follow a resize."""
    with contextlib.closing(sqlite3.connect(demo_db)) as db, db:
        for table in ("bide_steps", "bide_leases"):
            db.execute(f"UPDATE {table} SET run_id = 'tenant-acme/' || run_id || '-2f9c1e7a-4b7d-4e2a-9f1c'"
                       " WHERE run_id NOT LIKE '%>%'")  # fmt: skip
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        row = next(i for i, r in enumerate(screen.table.items) if "refund-a1005-2f" in r.run_id)
        line = screen.table.render_line(row).text
        assert line.startswith("  …refund-a1005…") and "? awaiting-approval" in line
        assert "refund_payment (call_1_0) awaits" in line

        def footer() -> list[str]:
            return [str(key.render()).strip() for key in screen.query_one(KeyFooter).query("FooterKey")]

        assert footer()[:2] == ["? Help", "q Quit"] and "← Fold" not in footer()
        await pilot.resize_terminal(160, 24)
        await settle(pilot)
        assert "← Fold" in footer()
        assert "refund-a1005-2f9c1e7a-4b7d-4e2a-9f1c" in screen.table.render_line(row).text
        await pilot.resize_terminal(60, 24)
        await settle(pilot)
        assert footer()[0] == "? Help"
        assert sum(key.region.width for key in screen.query_one(KeyFooter).query("FooterKey")) <= 60


async def test_the_list_follows_leases_let_go_or_lapsed_with_no_journal_write(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-flight runs are not read again every tick: their leases are, in one query, and a run is
    read again when its lease changes hands or lapses."""
    from agenttui.demo.build import IN_FLIGHT_HOLDER
    from agenttui.tui.screens import runs as runs_screen

    monkeypatch.setattr(runs_screen, "CLOCK_REFRESH_SECONDS", 0.1)
    other = await SQLiteStore.open(demo_db)
    await other.acquire_lease("refund-a1001-stalled", "worker#1", ttl=2.0)  # lapses while the list shows it
    app = AgentTuiApp(str(demo_db), tail=False)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)

            def status(run_id: str) -> RunStatus:
                rows = {r.run_id: r for r in screen_of(app, RunsScreen).table.items}
                return status_of(rows[run_id])

            assert status("refund-a1001-stalled").state == RunState.IN_FLIGHT
            assert status("refund-a1006-in-flight").state == RunState.IN_FLIGHT
            await other.release_lease("refund-a1006-in-flight", IN_FLIGHT_HOLDER)
            await until(pilot, lambda: status("refund-a1006-in-flight").state == RunState.STALLED, "the lease let go")
            await until(pilot, lambda: status("refund-a1001-stalled").lease_lapsed, "the lease to lapse")
            assert status("refund-a1001-stalled").state == RunState.STALLED
    finally:
        await other.close()

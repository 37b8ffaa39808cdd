"""Run against run: two marked runs' journals aligned by step name, the first divergence marked."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Static

from agenttui.journal.describe import printable
from agenttui.journal.journal import Journal
from agenttui.render.diff import JournalDiff, RowState, diff_journals
from agenttui.tui.screens.base import VIEW_STYLES, StoreScreen
from agenttui.tui.widgets.diff_view import DiffView, diff_detail
from agenttui.tui.widgets.header_bar import HeaderBar
from agenttui.tui.widgets.key_footer import KeyFooter
from agenttui.tui.widgets.scrolling_pane import ScrollingPane
from agenttui.tui.widgets.status_bar import StatusBar


class DiffScreen(StoreScreen):
    """The journal of ``left`` against that of ``right``."""

    CSS_PATH = VIEW_STYLES

    @dataclass
    class Diffed(Message):
        diff: JournalDiff

    AUTO_FOCUS = "#diff-view"
    BINDINGS = [
        Binding("escape", "back", "Back", id="diff.back"),
        Binding("y", "copy", "Copy step name", show=False, id="diff.copy"),
    ]

    def __init__(self, left: str, right: str) -> None:
        super().__init__()
        self.left, self.right = left, right
        self.diff: JournalDiff | None = None

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="diff-title")
        yield DiffView(id="diff-view")
        with ScrollingPane(id="diff-detail-scroll"):
            yield Static(id="diff-detail")
        yield StatusBar(id="status-bar")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one(HeaderBar).show([self._names(), Text("reading…")])
        self.compare()

    def _names(self) -> Text:
        return Text(f"diff {printable(self.left)} → {printable(self.right)}", style="bold")

    @work(exclusive=True, exit_on_error=False)
    async def compare(self) -> None:
        journal = Journal(self.store)
        left, right = await journal.history(self.left), await journal.history(self.right)
        self.post_message(DiffScreen.Diffed(diff_journals(left, right)))

    def on_diff_screen_diffed(self, message: DiffScreen.Diffed) -> None:
        self.diff = message.diff
        counts = message.diff.counts()
        first = message.diff.first_divergence
        # Parts that wrap between them, never inside one: a count is never cut from its word.
        counted = [(RowState.SAME, "same"), (RowState.CHANGED, "changed"), (RowState.MISSING, "only left"),
                   (RowState.EXTRA, "only right")]  # fmt: skip
        self.query_one(HeaderBar).show([
            self._names(),
            *(Text(f"{counts[state]} {word}") for state, word in counted),
            Text("identical") if first is None
            else Text(f"first divergence: {printable(first.name)} ({printable(first.reason)})"),
        ])  # fmt: skip
        self.query_one(DiffView).show(message.diff)

    @on(DiffView.CursorMoved)
    def moved(self) -> None:
        line = self.query_one(DiffView).current
        detail = self.query_one("#diff-detail", Static)
        detail.update(
            ""
            if line is None or line.row is None
            else diff_detail(line.row, left_label=self.left, right_label=self.right)
        )

    @on(DiffView.Chosen)
    def open_detail(self) -> None:
        """Enter on a step: its detail takes the keys (j/k scroll it; esc comes back)."""
        self.focus_now(self.query_one("#diff-detail-scroll"))

    def action_back(self) -> None:
        self.back_to(self.query_one(DiffView))

    def action_copy(self) -> None:
        line = self.query_one(DiffView).current
        name = None if line is None or line.row is None else line.row.name
        self.copy_step_name(name, "no step under the cursor (identical steps are folded)")

"""The whole explanation: what a header or a list cut to fit the terminal, in full and scrollable."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from agenttui.journal.inert import printable
from agenttui.tui.keymap import key_of
from agenttui.tui.screens.base import AppModal
from agenttui.tui.widgets.scrolling_pane import ScrollingPane


class ExplanationScreen(AppModal[None]):
    """``W``: the text cut to fit (a fork's reason for stopping, a breakpoint, a run's detail), whole.
    j/k/g/G scroll it; esc, q, enter or W closes it."""

    BINDINGS = [Binding("escape,enter,W", "close", "Close", id="explain.close")]

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self._title, self._text = title, text

    def compose(self) -> ComposeResult:
        with ScrollingPane(id="explain-panel"):
            yield Static(Text(printable(self._title), style="bold"), id="explain-title")
            yield Static(Text(printable(self._text, multiline=True)), id="explain-text")
            down, up = key_of(self, "pane.down", ScrollingPane), key_of(self, "pane.up", ScrollingPane)
            yield Static(Text(f"{key_of(self, 'explain.close')} closes · {down}/{up} scroll"), id="explain-footnote")

    def on_mount(self) -> None:
        self.query_one(ScrollingPane).focus()

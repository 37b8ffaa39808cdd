"""FindBar: the run screen's line for finding a record: a search (``/``) or a record number (``:``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Static

from agenttui.tui.keymap import key_of

Mode = Literal["search", "jump"]

SEARCH_HINT = "search step names and content, any case · ⏎ go · {close} close"
"""What a search matches, said where it is typed (``{close}``: the key that closes the bar)."""


class FindBar(Horizontal):
    """One line: a prompt (``/`` or ``:``), the input, and what the search found (``set_count``).

    It stays on screen after enter with the query and its count, while ``n``/``N`` walk the hits;
    esc closes it (and the screen cancels the search).
    """

    BINDINGS = [Binding("escape", "close", "Close", id="find.close")]

    @dataclass
    class Changed(Message):
        """The search query was edited (a record number is only read on enter)."""

        query: str

    @dataclass
    class Submitted(Message):
        """Enter: go to the first hit, or to record ``value``."""

        mode: Mode
        value: str

    @dataclass
    class Closed(Message):
        """Esc: the bar closed (a search it started is over) or, from a jump, went back to the search."""

        mode: Mode

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.mode: Mode = "search"
        self._search_query = ""
        """The search's query while the input asks for a record number."""

    def compose(self) -> ComposeResult:
        yield Static("/", id="find-prompt")
        yield Input(
            placeholder=SEARCH_HINT.format(close=key_of(self, "find.close")), id="find-input", select_on_focus=False
        )
        yield Static("", id="find-count")

    @property
    def input(self) -> Input:
        return self.query_one(Input)

    def open(self, mode: Mode, *, last: int = 0, focus: bool = True) -> None:
        """Show the bar for ``mode`` (and focus its input); a jump asks for a number up to
        ``last`` and keeps the search's query for when the bar goes back to it."""
        entry = self.input
        with entry.prevent(Input.Changed):  # switching modes is not an edit of the query
            if mode == "jump":
                if self.mode == "search":
                    self._search_query = entry.value
                entry.value = ""
            elif self.mode == "jump":
                entry.value = self._search_query
        self.mode = mode
        self.query_one("#find-prompt", Static).update("/" if mode == "search" else ":")
        close = key_of(self, "find.close")
        entry.placeholder = (
            SEARCH_HINT.format(close=close)
            if mode == "search"
            else f"record number, 0 to {last:,} · ⏎ go · {close} close"
        )
        entry.restrict = None if mode == "search" else r"[0-9]*"
        if mode == "jump":
            self.set_count("")
        self.display = True
        if focus:  # at once: ``focus()`` waits a turn, and keys typed right after / went to the list
            self.screen.set_focus(entry)

    def set_count(self, text: str) -> None:
        self.query_one("#find-count", Static).update(Text(text, no_wrap=True))

    @on(Input.Changed, "#find-input")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        if self.mode == "search":
            self.post_message(self.Changed(event.value))

    @on(Input.Submitted, "#find-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Submitted(self.mode, event.value))

    def action_close(self) -> None:
        self.display = False
        if self.mode == "search":
            with self.input.prevent(Input.Changed):
                self.input.value = ""
        self.post_message(self.Closed(self.mode))

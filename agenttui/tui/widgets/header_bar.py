"""HeaderBar: a screen's header, its parts on as many lines as the width needs (never cut off)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from agenttui.tui.layout import flow_parts, lines_of


class HeaderBar(Static):
    """A header of parts (a run id, a count, a status, a filter): each goes on the line it fits,
    else on the next, so a narrow terminal gets a taller header instead of one cut short.

    Headers change often (a record count while a run tails, each replayed turn): the screen is
    laid out again only when the header's line count changes, not on each new text."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._parts: tuple[Text, ...] = ()
        self._lines = 1

    def show(self, parts: Sequence[Text]) -> None:
        self._parts = tuple(parts)
        self._flow()

    def on_resize(self) -> None:
        self._flow()

    def _flow(self) -> None:
        width = self.content_region.width or self.app.size.width
        text = flow_parts(self._parts, width)
        lines = lines_of(text)
        self.update(text, layout=lines != self._lines)
        self._lines = lines

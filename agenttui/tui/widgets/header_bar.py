"""HeaderBar: a screen's header, its parts on as many lines as the width needs (never cut off)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from agenttui.render.cells import was_cut
from agenttui.tui.layout import EXPLANATION_LINES, flow_parts, lines_of


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

    @property
    def whole(self) -> str:
        """The header's text in full, each part on a line."""
        return "\n".join(part.plain for part in self._parts if part.plain)

    @property
    def cut(self) -> bool:
        """Some part did not fit whole (``W`` shows it all)."""
        width = self.content_region.width or self.app.size.width
        return any(was_cut(part.plain, width, EXPLANATION_LINES) for part in self._parts if part.cell_len > width)

    def on_resize(self) -> None:
        self._flow()

    def _flow(self) -> None:
        width = self.content_region.width or self.app.size.width
        text = flow_parts(self._parts, width)
        lines = lines_of(text)
        self.update(text, layout=lines != self._lines)
        self._lines = lines

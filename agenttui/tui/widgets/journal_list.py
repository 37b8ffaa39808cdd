"""JournalList: one line per record of a run: position, kind icon, step name, summary."""

from __future__ import annotations

from collections.abc import Container, Iterable
from typing import ClassVar

from rich.text import Text
from textual.message import Message

from agenttui.journal.describe import printable
from agenttui.journal.record import StepKind
from agenttui.runs.reading.view import RecordRow, RecordRows
from agenttui.tui.layout import middle_truncate
from agenttui.tui.widgets.virtual_list import Items, VirtualList

_MUTED_KINDS = {StepKind.HEADER, StepKind.ATTEMPT, StepKind.NOT_STARTED}
#: The step name column is as wide as the longest name listed, but within these bounds, and
#: leaves the summary ``SUMMARY_MIN`` cells where it can: in the 40 columns an 80-column
#: terminal gives the journal, names like ``approval:call_1_0`` show whole. Longer names are cut
#: in the middle (``attempt:…call_1_0``): both the kind and the call id stay.
NAME_COLUMN_MIN, NAME_COLUMN_MAX = 14, 30
SUMMARY_MIN = 14
INDEX_MIN = 3
"""The record number column is as wide as the largest number needs, at least this."""


class JournalList(VirtualList[RecordRow]):
    """The stepped journal view, drawn from each record's row (``RunView.rows``)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = VirtualList.COMPONENT_CLASSES | {
        "journal-list--model",
        "journal-list--name",
        "journal-list--hit",
    }

    class LastAsked(Message):
        """``G`` (or end) was pressed: a journal still loading takes it to mean its last record, once read."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._longest_name = 0
        self._index_width = INDEX_MIN
        self.marked: Container[int] = frozenset()
        """The records a search found: their numbers are drawn as hits (``refresh_items`` after
        changing it: drawn lines are kept)."""

    def action_cursor_last(self) -> None:
        self.post_message(self.LastAsked())
        super().action_cursor_last()

    def set_items(self, items: Items[RecordRow]) -> None:
        self._longest_name = 0
        self._measure(items)
        self._index_width = max(INDEX_MIN, len(str(len(items) - 1)))
        super().set_items(items)

    def extend(self, items: list[RecordRow]) -> None:
        widened = self._measure(items)
        super().extend(items)
        self._widen(widened)

    def show_rows(self, rows: RecordRows, start: int) -> None:
        """Show ``rows`` (a run view's own: the list keeps them, not a copy of each), of which
        those from ``start`` on are new."""
        if self.items is not rows:
            self.set_items(rows)
            return
        if start == len(rows):
            return
        longest = max((len(rows.name(index)) for index in range(start, len(rows))), default=0)
        widened = longest > self._longest_name
        self._longest_name = max(longest, self._longest_name)
        self.items_added()
        self._widen(widened)

    def _widen(self, widened: bool) -> None:
        index_width = max(INDEX_MIN, len(str(len(self.items) - 1)))
        if widened or index_width != self._index_width:
            self._index_width = index_width
            self.refresh_items()

    def _measure(self, rows: Iterable[RecordRow]) -> bool:
        """Note the longest step name; whether it grew (every line is then drawn again)."""
        longest = max((len(row.name) for row in rows), default=0)
        if longest <= self._longest_name:
            return False
        self._longest_name = longest
        return True

    def name_column(self, width: int) -> int:
        prefix = self._index_width + 3  # the index, a space, the kind icon and a space
        room = max(NAME_COLUMN_MIN, min(NAME_COLUMN_MAX, width - prefix - 1 - SUMMARY_MIN))
        return min(self._longest_name, room)

    def render_item(self, item: RecordRow, index: int, width: int) -> Text:
        hit = index in self.marked
        number_style = self.get_component_rich_style("journal-list--hit", partial=True) if hit else self.muted()
        line = Text(f"{index:>{self._index_width}} ", style=number_style, no_wrap=True)
        icon_style = self.error() if item.failed else ""
        if item.kind == StepKind.MODEL and not icon_style:
            icon_style = self.get_component_rich_style("journal-list--model", partial=True)
        line.append(f"{item.icon} ", style=icon_style)
        name = printable(item.name)
        name_style = (
            self.muted()
            if item.kind in _MUTED_KINDS
            else self.get_component_rich_style("journal-list--name", partial=True)
        )
        column = self.name_column(width)
        line.append(middle_truncate(name, column).ljust(column + 1), style=name_style)
        line.append(printable(item.summary[: width * 2]), style=self.error() if item.unreadable else "")
        return line

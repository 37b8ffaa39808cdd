"""JournalList: one line per record of a run: position, kind icon, step name, summary."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from agenttui.journal.describe import kind_icon, printable, summary
from agenttui.journal.record import Record, StepKind
from agenttui.tui.widgets.virtual_list import VirtualList

_MUTED_KINDS = {StepKind.HEADER, StepKind.ATTEMPT, StepKind.NOT_STARTED}


class JournalList(VirtualList[Record]):
    """The stepped journal view. ``tool_names`` maps call ids to tool names for summaries."""

    COMPONENT_CLASSES: ClassVar[set[str]] = VirtualList.COMPONENT_CLASSES | {"journal-list--model", "journal-list--name"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tool_names: dict[str, str] = {}

    def render_item(self, item: Record, index: int, width: int) -> Text:
        line = Text(f"{index:>6} ", style=self.muted(), no_wrap=True)
        icon_style = self.error() if item.unreadable or item.is_error or (item.kind == StepKind.APPROVAL and not item.approved) else ""
        if item.kind == StepKind.MODEL and not icon_style:
            icon_style = self.get_component_rich_style("journal-list--model", partial=True)
        line.append(f"{kind_icon(item)} ", style=icon_style)
        name = printable(item.name)
        name_style = self.muted() if item.kind in _MUTED_KINDS else self.get_component_rich_style("journal-list--name", partial=True)
        line.append(f"{name[:30]:<31}", style=name_style)
        line.append(printable(summary(item, self.tool_names)[: width * 2]), style=self.error() if item.unreadable else "")
        return line

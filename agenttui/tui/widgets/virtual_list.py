"""VirtualList: a cursor list on the Line API that draws only the rows on screen."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

T = TypeVar("T")


class Items(Protocol[T]):
    """What a list holds its items in: a ``list``, or a packed sequence that makes each item
    when asked for it (``EventLines``): a long run's list need not keep an object per line."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> T: ...

    def __iter__(self) -> Iterator[T]: ...

    def extend(self, items: Iterable[T]) -> None: ...


BLANK = -1
"""The index under which the blank line drawn below the items is kept with the drawn lines."""


class VirtualList(ScrollView, Generic[T], can_focus=True):
    """A list of items, one line each, of any length: only visible rows are ever rendered.

    Subclasses implement ``render_item``. Items are replaced or appended in batches
    (``set_items``, ``extend``); the cursor stays on its item where it can.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j,down", "cursor_down", "Down", show=False, id="list.down"),
        Binding("k,up", "cursor_up", "Up", show=False, id="list.up"),
        Binding("g,home", "cursor_first", "First", show=False, id="list.first"),
        Binding("G,end", "cursor_last", "Last", show=False, id="list.last"),
        Binding("pagedown,ctrl+f,space", "page_down", "Page down", show=False, id="list.page-down"),
        Binding("pageup,ctrl+b", "page_up", "Page up", show=False, id="list.page-up"),
        Binding("enter", "choose", "Open", id="list.choose"),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {"virtual-list--cursor", "virtual-list--muted", "virtual-list--error"}

    cursor: reactive[int] = reactive(0, always_update=True)
    """Index of the highlighted item."""
    empty_text: reactive[str] = reactive("")
    """Shown, muted, on the first line while there are no items: what the emptiness means."""

    class CursorMoved(Message, bubble=True):
        """The cursor moved to ``index``. Coalesces: only the newest position matters."""

        def __init__(self, sender: VirtualList[Any], index: int) -> None:
            super().__init__()
            self.list = sender
            self.index = index

        @property
        def control(self) -> VirtualList[Any]:
            return self.list

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, VirtualList.CursorMoved) and message.list is self.list

    class Chosen(Message, bubble=True):
        """Enter was pressed on ``index``."""

        def __init__(self, sender: VirtualList[Any], index: int) -> None:
            super().__init__()
            self.list = sender
            self.index = index

        @property
        def control(self) -> VirtualList[Any]:
            return self.list

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.items: Items[T] = []
        # Drawn lines by (index, width, under the cursor, focused). Any layout change (a list
        # growing, a title updating) repaints the whole screen; without this every visible row
        # of every list was rendered again each time: most of a replay step's cost.
        self._lines: LRUCache[tuple[int, int, bool, bool], Strip] = LRUCache(1024)

    # -- data --------------------------------------------------------------------------------

    def set_items(self, items: Items[T]) -> None:
        self.items = items
        self._lines.clear()
        self._resize()
        self.cursor = min(self.cursor, max(0, len(items) - 1))
        self.refresh()

    def extend(self, items: list[T]) -> None:
        if not items:
            return
        self.items.extend(items)
        self.items_added()

    def items_added(self) -> None:
        """Items were added to ``items`` by their owner (a sequence the list shares): show them."""
        self._resize()
        self.refresh()

    def refresh_item(self, index: int) -> None:
        self._lines.clear()
        self.refresh_lines(index, 1)

    def refresh_items(self) -> None:
        """Draw every item again: what they show changed in place (``set_items`` does this too)."""
        self._lines.clear()
        self.refresh()

    def notify_style_update(self) -> None:
        self._lines.clear()  # a theme switch recolours every line
        super().notify_style_update()

    def _resize(self) -> None:
        size = Size(self.size.width, len(self.items))
        if size == self.virtual_size:
            return
        # Textual's own no-layout path (``Widget._size_updated(layout=False)``): a list growing
        # changes its scrollbar, not the screen's layout. Setting ``virtual_size`` plainly lays
        # out and repaints the whole screen, once per list per batch of new items.
        self.set_reactive(VirtualList.virtual_size, size)
        self._scroll_update(size)
        self.refresh()

    @property
    def current(self) -> T | None:
        return self.items[self.cursor] if 0 <= self.cursor < len(self.items) else None

    # -- rendering ---------------------------------------------------------------------------

    def render_item(self, item: T, index: int, width: int) -> Text:
        raise NotImplementedError

    def render_line(self, y: int) -> Strip:
        index = round(self.scroll_offset.y) + y
        width = self.scrollable_content_region.width
        if index >= len(self.items):
            if index == 0 and self.empty_text:
                return self._draw_text(Text(self.empty_text, style=self.muted()), width, self.rich_style)
            # One blank strip for every line below the items: ``rich_style`` walks the ancestors.
            key = (BLANK, width, False, False)
            line = self._lines.get(key)
            if line is None:
                line = self._lines[key] = Strip.blank(width, self.rich_style)
            return line
        key = (index, width, index == self.cursor, self.has_focus)
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = self._draw(index, width)
        return line

    def _draw(self, index: int, width: int) -> Strip:
        base = self.rich_style
        if index == self.cursor:
            base = base + self.get_component_rich_style("virtual-list--cursor")
        return self._draw_text(self.render_item(self.items[index], index, width), width, base)

    def _draw_text(self, text: Text, width: int, base: Style) -> Strip:
        text.truncate(width, overflow="ellipsis", pad=True)
        segments = [Segment(s.text, base + s.style if s.style else base) for s in text.render(self.app.console)]
        return Strip(segments, width).crop_extend(0, width, base)

    def muted(self) -> Style:
        return self.get_component_rich_style("virtual-list--muted", partial=True)

    def error(self) -> Style:
        return self.get_component_rich_style("virtual-list--error", partial=True)

    # -- cursor ------------------------------------------------------------------------------

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh_lines(old, 1)
        self.refresh_lines(new, 1)
        self.scroll_to_region_line(new)
        if self.items:
            self.post_message(self.CursorMoved(self, new))

    def scroll_to_region_line(self, index: int) -> None:
        top = round(self.scroll_offset.y)
        height = self.scrollable_content_region.height
        if index < top:
            self.scroll_to(y=index, animate=False)
        elif height and index >= top + height:
            self.scroll_to(y=index - height + 1, animate=False)

    def validate_cursor(self, value: int) -> int:
        return max(0, min(value, len(self.items) - 1)) if self.items else 0

    def action_cursor_down(self) -> None:
        self.cursor += 1

    def action_cursor_up(self) -> None:
        self.cursor -= 1

    def action_cursor_first(self) -> None:
        self.cursor = 0

    def action_cursor_last(self) -> None:
        self.cursor = len(self.items) - 1

    def action_page_down(self) -> None:
        self.cursor += max(1, self.scrollable_content_region.height - 1)

    def action_page_up(self) -> None:
        self.cursor -= max(1, self.scrollable_content_region.height - 1)

    def action_choose(self) -> None:
        if self.current is not None:
            self.post_message(self.Chosen(self, self.cursor))
        else:  # the footer offers enter: said why it opens nothing (the list's emptiness, if it says)
            self.notify(self.empty_text or "nothing here to open", timeout=3, markup=False)

    def on_click(self, event: Click) -> None:
        index = round(self.scroll_offset.y) + event.y
        if 0 <= index < len(self.items):
            if index == self.cursor and event.chain == 2:
                self.action_choose()
            self.cursor = index

    def on_resize(self) -> None:
        self._resize()

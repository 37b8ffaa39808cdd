"""ScrollingPane: a pane of text that scrolls with the keys every list of agenttui's moves with."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll


class ScrollingPane(VerticalScroll):
    """A ``VerticalScroll`` that j/k, g/G and space scroll too, as they move the lists beside it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "scroll_down", "Down", show=False, id="pane.down"),
        Binding("k", "scroll_up", "Up", show=False, id="pane.up"),
        Binding("g", "scroll_home", "Top", show=False, id="pane.top"),
        Binding("G", "scroll_end", "Bottom", show=False, id="pane.bottom"),
        Binding("space", "page_down", "Page down", show=False, id="pane.page-down"),
    ]

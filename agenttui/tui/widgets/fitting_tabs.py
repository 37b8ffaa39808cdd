"""Tabbed panes whose tabs take short labels where their full ones would not all fit."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.widget import Widget
from textual.widgets import TabbedContent, TabPane

#: The columns a tab takes besides its label (Textual's ``Tab`` is padded one column each side).
TAB_PADDING = 2


class FittingTabs(TabbedContent):
    """A ``TabbedContent`` whose tabs show ``short_labels`` (by pane id) while their full labels
    would run past its width. Textual's tabs scroll instead, and the last ones, cut or out of
    sight, are easily missed (at 100 columns a run's panes showed "Cos" for "Cost").

    The bar under the active tab moves to the tab chosen at once: Textual's slides there, some
    twenty frames of the whole screen a switch (0.05 s of CPU each time a pane was shown, on a
    50,000-record run), while the pane itself shows at once."""

    def __init__(self, *, short_labels: dict[str, str], initial: str = "", id: str | None = None) -> None:
        super().__init__(initial=initial, id=id)
        self.short_labels = short_labels
        self._full_labels: dict[str, str] = {}

    def on_mount(self) -> None:
        underline = self.query_one("ContentTabs Underline")  # Textual's (private) Underline widget
        setattr(underline, "animate", _moved_at_once(underline))  # noqa: B010  # this instance only

    def on_resize(self, event: events.Resize) -> None:
        if not self._full_labels:  # the panes' own titles, before any is shortened
            self._full_labels = {
                pane.id: self.get_tab(pane.id).label_text for pane in self.query(TabPane) if pane.id is not None
            }
        fits = sum(len(label) + TAB_PADDING for label in self._full_labels.values()) <= event.size.width
        for pane, full in self._full_labels.items():
            label = full if fits else self.short_labels.get(pane, full)
            if (tab := self.get_tab(pane)).label_text != label:
                tab.label = label


def _moved_at_once(widget: Widget) -> Any:
    """An ``animate`` for ``widget`` that sets the attribute to its final value at once."""

    def animate(attribute: str, value: object, *args: object, **kwargs: object) -> None:
        setattr(widget, attribute, value)
        on_complete = kwargs.get("on_complete")
        if callable(on_complete):
            widget.call_later(on_complete)

    return animate

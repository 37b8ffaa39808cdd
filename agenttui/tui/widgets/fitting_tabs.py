"""Tabbed panes whose tabs take short labels where their full ones would not all fit."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.content import Content
from textual.widget import Widget
from textual.widgets import TabbedContent, TabPane

from agenttui.tui.keymap import key_of

#: The columns a tab takes besides its label (Textual's ``Tab`` is padded one column each side).
TAB_PADDING = 2


class FittingTabs(TabbedContent):
    """A ``TabbedContent`` whose tabs name each pane's key as bound (``keys``: pane id to binding
    id, ``tui/keymap.py``) before its label, and show ``short_labels`` (by pane id) while their
    full labels would run past its width, then the keys pressed against them, with less room
    between tabs (``-tight``): at 80 columns a run's five panes show "iRecord cState vEvents
    wFlow $Cost", so every pane's key is in sight where it is named. Textual's tabs scroll
    instead, and the last ones, cut or out of sight, are easily missed (at 100 columns a run's
    panes showed "Cos" for "Cost").

    The bar under the active tab moves to the tab chosen at once: Textual's slides there, some
    twenty frames of the whole screen a switch (0.05 s of CPU each time a pane was shown, on a
    50,000-record run), while the pane itself shows at once."""

    def __init__(
        self, *, short_labels: dict[str, str], keys: dict[str, str], initial: str = "", id: str | None = None
    ) -> None:
        super().__init__(initial=initial, id=id)
        self.short_labels = short_labels
        self.keys = keys
        self._full_labels: dict[str, str] = {}

    def on_mount(self) -> None:
        underline = self.query_one("ContentTabs Underline")  # Textual's (private) Underline widget
        setattr(underline, "animate", _moved_at_once(underline))  # noqa: B010  # this instance only

    def on_resize(self, event: events.Resize) -> None:
        self.fit(event.size.width)

    def fit(self, width: int) -> None:
        """Label the tabs as fits ``width``: again when the keys are bound anew (``[keys]``)."""
        if not self._full_labels:  # the panes' own titles, before any is shortened
            self._full_labels = {
                pane.id: self.get_tab(pane.id).label_text for pane in self.query(TabPane) if pane.id is not None
            }
        keys = {pane: key_of(self.screen, binding_id) for pane, binding_id in self.keys.items()}
        short = {pane: self.short_labels.get(pane, full) for pane, full in self._full_labels.items()}

        def needs(labels: dict[str, str]) -> int:
            return sum(len(keys[p]) + 1 if p in keys else 0 for p in labels) + sum(map(len, labels.values()))

        padding = TAB_PADDING * len(short)
        labels = self._full_labels if needs(self._full_labels) + padding <= width else short
        tight = needs(short) + padding > width
        self.set_class(tight, "-tight")
        for pane, label in labels.items():
            content = (
                Content.assemble((keys[pane], "bold $accent"), "" if tight else " ", label)
                if pane in keys
                else Content(label)
            )
            if (tab := self.get_tab(pane)).label != content:
                tab.label = content


def _moved_at_once(widget: Widget) -> Any:
    """An ``animate`` for ``widget`` that sets the attribute to its final value at once."""

    def animate(attribute: str, value: object, *args: object, **kwargs: object) -> None:
        setattr(widget, attribute, value)
        on_complete = kwargs.get("on_complete")
        if callable(on_complete):
            widget.call_later(on_complete)

    return animate

"""KeyFooter: Textual's footer of keys, composed again only when the keys it shows change."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey  # not exported by textual.widgets; the pin holds it

Shown = tuple[tuple[Binding, bool, str, str], ...]
"""Every active binding as the footer reads it: the binding, enabled, tooltip, key display."""


def shown_keys(screen: Screen[Any]) -> Shown:
    app = screen.app
    return tuple(
        (binding, enabled, tooltip, app.get_key_display(binding))
        for _, binding, enabled, tooltip in screen.active_bindings.values()
    )


class KeyFooter(Footer):
    """Textual's ``Footer``, but a bindings signal that changes none of its keys leaves it alone.

    Textual's footer removes and mounts all its keys again on every signal: a focus change, a
    screen resumed or suspended, the terminal's focus report. Before the runs list's first rows
    there were three, each mounting and styling every key: about 60 ms of start-up
    (benchmarks/startup.py), and as much again on each later focus change.
    """

    def __init__(self) -> None:
        super().__init__()
        self._signalled = False
        """A bindings signal came: from then on the footer composes its keys (as Textual's does)."""
        self._composed: Shown | None = None
        """The keys as last composed."""

    def compose(self) -> ComposeResult:
        if self._signalled:
            self._composed = shown_keys(self.screen)
        for widget in super().compose():
            if isinstance(widget, FooterKey) and not widget.has_class("-command-palette"):
                # Bound to the footer's ``compact`` (False) as it mounts, a key starts True, and was
                # styled once for each: composed with the footer's value, it is styled once.
                widget.set_reactive(FooterKey.compact, self.compact)
            yield widget

    def bindings_changed(self, screen: Screen[Any]) -> None:
        self._signalled = True
        if self._composed is not None and shown_keys(screen) == self._composed:
            return
        super().bindings_changed(screen)

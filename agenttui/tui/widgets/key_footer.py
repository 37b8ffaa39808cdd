"""KeyFooter: Textual's footer of keys, the most important that fit (``?`` always), composed
again only when the keys it shows change."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey  # not exported by textual.widgets; the pin holds it

from agenttui.tui.layout import fit_in_order

Shown = tuple[tuple[Binding, bool, str, str], ...]
"""Every active binding as the footer reads it: the binding, enabled, tooltip, key display."""

KEYS_AT_LATEST = 0.5
"""Seconds after mounting by which a footer told to wait for something composes its keys anyway."""

PALETTE = "palette"
"""The command palette's key in ``KEY_PRIORITY`` (Textual's binding for it has no id)."""

#: The footer's keys by binding id, most important first: help (it lists every key, so it always
#: shows), quit and back, then what a person came to each screen to do. A narrow footer keeps the
#: longest run of these that fits, and shows them in this order; keys not named here come after,
#: in the order the screen lists them.
KEY_PRIORITY: tuple[str, ...] = (
    "app.help",
    "app.quit",
    "run.back",
    "replay.back",
    "diff.back",
    "compare.back",
    "list.choose",
    "runs.filter",
    "runs.operate",
    "runs.status-filter",
    "replay.next",
    "replay.end",
    "replay.previous",
    "replay.jump",
    "compare.next",
    "compare.previous",
    "compare.differing",
    "run.replay",
    "run.operate",
    "run.follow",
    "inspector.raw",
    "flow.fold",
    PALETTE,
    "screen.explain",
    "run.inspector",
    "run.conversation",
    "run.flowchart",
    "runs.unfold",
    "runs.fold",
)


def shown_keys(screen: Screen[Any]) -> Shown:
    app = screen.app
    return tuple(
        (binding, enabled, tooltip, app.get_key_display(binding))
        for _, binding, enabled, tooltip in screen.active_bindings.values()
    )


def key_width(display: str, description: str, *, palette: bool = False) -> int:
    """Cells a footer key takes: its key padded by a space each side, its description and a space
    (Textual's ``FooterKey`` styles); the palette's key adds its left border and right padding."""
    return cell_len(display) + 2 + (cell_len(description) + 1 if description else 0) + (2 if palette else 0)


def fitting_keys(shown: Shown, palette_key: str | None, width: int) -> tuple[tuple[str, str], ...]:
    """The footer's keys as ``(key, action)``, most important first, that fit in ``width``.

    One key per action, as Textual's footer shows (the first listed). A key is left out whole,
    never cut, and a less important key never shows where a more important one did not fit."""
    candidates: dict[str, tuple[int, tuple[str, str], int]] = {}
    for position, (binding, _enabled, _tooltip, display) in enumerate(shown):
        is_palette = binding.key == palette_key
        if not (binding.show or is_palette) or binding.action in candidates:
            continue
        key_id = PALETTE if is_palette else binding.id
        rank = KEY_PRIORITY.index(key_id) if key_id in KEY_PRIORITY else len(KEY_PRIORITY) + position
        size = key_width(display, binding.description, palette=is_palette)
        candidates[binding.action] = (rank, (binding.key, binding.action), size)
    ordered = sorted(candidates.values())
    always = sum(1 for rank, _, _ in ordered if rank == 0)  # help, whatever the width
    count = fit_in_order([size for _, _, size in ordered], width, always=always)
    return tuple(key for _, key, _ in ordered[:count])


class KeyFooter(Footer):
    """Textual's ``Footer``, showing the most important keys that fit (``KEY_PRIORITY``), again on
    a resize; a bindings signal that changes none of its keys leaves it alone.

    Textual's footer removes and mounts all its keys again on every signal: a focus change, a
    screen resumed or suspended, the terminal's focus report. Before the runs list's first rows
    there were three, each mounting and styling every key: about 60 ms of start-up
    (benchmarks/startup.py), and as much again on each later focus change.
    """

    def __init__(self, *, after: asyncio.Event | None = None) -> None:
        super().__init__()
        self._after = after
        """Keys are composed once this is set: the runs list passes its first rows painted, as
        mounting and styling a footer's keys is about 30 ms of start-up (benchmarks/startup.py)."""
        self._waiting = False
        self._signalled = False
        """A bindings signal came: from then on the footer composes its keys (as Textual's does)."""
        self._composed: tuple[Shown, tuple[tuple[str, str], ...]] | None = None
        """The active keys as last composed, and those shown, in the order shown."""

    def _fitting(self, screen: Screen[Any]) -> tuple[Shown, tuple[tuple[str, str], ...]]:
        shown = shown_keys(screen)
        palette = self.app.COMMAND_PALETTE_BINDING if self.show_command_palette else None
        return shown, fitting_keys(shown, palette, self.size.width or self.app.size.width)

    def compose(self) -> ComposeResult:
        if not self._signalled:
            yield from self._styled_once(super().compose())
            return
        self._composed = self._fitting(self.screen)
        chosen = self._composed[1]
        # Textual makes the keys (its private FooterKey, with its styles and clicks); this
        # footer picks and orders them.
        made = {
            (getattr(key, "key", ""), getattr(key, "action", "")): key for key in self._styled_once(super().compose())
        }
        for wanted in chosen:
            if wanted in made:
                yield made[wanted]

    def _styled_once(self, widgets: Iterable[Widget]) -> Iterator[Widget]:
        for widget in widgets:
            if isinstance(widget, FooterKey) and not widget.has_class("-command-palette"):
                # Bound to the footer's ``compact`` (False) as it mounts, a key starts True, and was
                # styled once for each: composed with the footer's value, it is styled once.
                widget.set_reactive(FooterKey.compact, self.compact)
            yield widget

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if self._after is not None and not self._after.is_set():
            if not self._waiting:
                self._waiting = True
                self.run_worker(self._keys_after(self._after), exit_on_error=False)
            return  # the worker signals again
        self._signalled = True
        if self._composed is not None and self._fitting(screen) == self._composed:
            return
        super().bindings_changed(screen)

    async def _keys_after(self, after: asyncio.Event) -> None:
        with contextlib.suppress(TimeoutError):  # the keys show, whatever keeps the rows (a lock)
            await asyncio.wait_for(after.wait(), KEYS_AT_LATEST)
        self._after = None
        self.call_later(lambda: self.bindings_changed(self.screen))  # on the footer's own loop: its keys bind to it

    def on_resize(self) -> None:
        if self._composed is not None and self._fitting(self.screen) != self._composed:
            self.call_after_refresh(self.recompose)

"""StatusBar: the store (password masked), the connection state and the live-tail state.

The first three are the app's reactives (``store_label``, ``connection``, ``tail_state``), which
every bar watches; ``writes`` is the bar's own, set by the screen it sits on."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from agenttui.journal.inert import printable
from agenttui.tui.layout import middle_truncate

_SEPARATOR = "  ·  "
STORE_MIN = 12
"""The store's name is cut in the middle down to this many cells before it gives way."""


class StatusBar(Static):
    store_url: reactive[str] = reactive("")
    connection: reactive[str] = reactive("connecting")
    tail: reactive[str] = reactive("off")
    writes: reactive[str] = reactive("read-only")
    """What the screen does to the world: "read-only", or a replay's live side effects."""

    def render(self) -> Text:
        """One line. On a narrow terminal the least important part gives way first (the store's
        name is cut in the middle while it can be); a replay's live side effects lead the line
        and never give way (cut at the end if they must)."""
        writes, store, tail = printable(self.writes), printable(self.store_url), f"tail: {self.tail}"
        if writes != "read-only":
            shown, give_way = [writes, self.connection, store, tail], [tail, store, self.connection]
        else:
            shown, give_way = [store, self.connection, tail, writes], [writes, tail, store]
        width = self.size.width - 1
        for part in give_way:
            over = _joined_len(shown) - width
            if over <= 0:
                break
            if part == store and len(store) - over >= STORE_MIN:
                shown[shown.index(store)] = middle_truncate(store, len(store) - over)
                break
            shown.remove(part)
        return Text(" " + _SEPARATOR.join(shown), no_wrap=True, overflow="ellipsis")

    def watch_writes(self, value: str) -> None:
        self.set_class(value != "read-only", "-live")

    def on_mount(self) -> None:
        self.watch(self.app, "store_label", self._store_label_changed)
        self.watch(self.app, "connection", self._connection_changed)
        self.watch(self.app, "tail_state", self._tail_state_changed)

    def _store_label_changed(self, value: str) -> None:
        self.store_url = value

    def _connection_changed(self, value: str) -> None:
        self.connection = value

    def _tail_state_changed(self, value: str) -> None:
        self.tail = value

    def watch_connection(self, value: str) -> None:
        self.set_class(value != "connected", "-degraded")


def _joined_len(parts: list[str]) -> int:
    return sum(map(len, parts)) + len(_SEPARATOR) * (len(parts) - 1)

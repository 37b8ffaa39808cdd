"""StatusBar: the store (password masked), the connection state and the live-tail state.

The first three are the app's reactives (``store_label``, ``connection``, ``tail_state``), which
every bar watches; ``writes`` is the bar's own, set by the screen it sits on."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from agenttui.journal.describe import printable
from agenttui.tui.layout import middle_truncate

_SEPARATOR = "  ·  "


class StatusBar(Static):
    store_url: reactive[str] = reactive("")
    connection: reactive[str] = reactive("connecting")
    tail: reactive[str] = reactive("off")
    writes: reactive[str] = reactive("read-only")
    """What the screen does to the world: "read-only", or a replay's live side effects."""

    def render(self) -> Text:
        """One line, by priority on a narrow terminal: live side effects first (then the line is
        led by them), the connection, the store (cut in the middle), the tail state last."""
        writes, store = printable(self.writes), printable(self.store_url)
        tail = f"tail: {self.tail}"
        parts = [store, self.connection, tail, writes]
        if writes != "read-only":
            parts = [writes, self.connection, store, tail]
        width = self.size.width - 1
        if _joined_len(parts) > width:
            parts.remove(tail)
        if _joined_len(parts) > width:
            store_room = width - _joined_len([p for p in parts if p is not store])
            parts[parts.index(store)] = middle_truncate(store, max(store_room - len(_SEPARATOR), 8))
        return Text(" " + _SEPARATOR.join(parts), no_wrap=True, overflow="ellipsis")

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

"""StatusBar: the store (password masked), the connection state and the live-tail state.

The first three are the app's reactives (``store_label``, ``connection``, ``tail_state``), which
every bar watches; ``writes`` is the bar's own, set by the screen it sits on."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from agenttui.journal.inert import printable


class StatusBar(Static):
    store_url: reactive[str] = reactive("")
    connection: reactive[str] = reactive("connecting")
    tail: reactive[str] = reactive("off")
    writes: reactive[str] = reactive("read-only")
    """What the screen does to the world: "read-only", or a replay's live side effects."""

    def render(self) -> Text:
        return Text(
            f" {printable(self.store_url)}  ·  {self.connection}  ·  tail: {self.tail}  ·  {printable(self.writes)}"
        )

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

"""StatusBar: the store (password masked), the connection state and the live-tail state."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from agenttui.journal.describe import printable

if TYPE_CHECKING:
    from agenttui.tui.app import AgentTuiApp


class StatusBar(Static):
    store_url: reactive[str] = reactive("")
    connection: reactive[str] = reactive("connecting")
    tail: reactive[str] = reactive("off")
    writes: reactive[str] = reactive("read-only")
    """What the screen does to the world: "read-only", or a replay's live side effects."""

    def render(self) -> Text:
        return Text(f" {printable(self.store_url)}  ·  {self.connection}  ·  tail: {self.tail}  ·  {printable(self.writes)}")

    def watch_writes(self, value: str) -> None:
        self.set_class(value != "read-only", "-live")

    def on_mount(self) -> None:
        self.show(*cast("AgentTuiApp", self.app).status_fields())

    def show(self, store_url: str, connection: str, tail: str) -> None:
        self.store_url, self.connection, self.tail = store_url, connection, tail

    def watch_connection(self, value: str) -> None:
        self.set_class(value != "connected", "-degraded")

"""TuiHost: the app as its screens, dialogs and command palette see it, a typed interface.

Screens reach the app through this protocol and through messages, never by importing ``app.py``:
the app imports its screens, screens import widgets and the core, and no import goes back
(``tests/unit/test_layers.py``). ``AgentTuiApp`` satisfies it; a test asserts so.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from textual.app import App
    from textual.worker import Worker

    from agenttui.agent.factory import AgentFactory
    from agenttui.runs.cost.lens import PriceBook
    from agenttui.runs.recovery.operations import Operation
    from agenttui.runs.statuses.status import RunStatus
    from agenttui.stores.base import Store


class TuiHost(Protocol):
    """What the app holds and does for the screens over its store."""

    store: Store | None
    """The store on screen, once open (``StoreOpened``); None before."""
    url: str
    """The store's URL, as the user gave it (shown through ``describe_url``, never raw)."""
    agent_spec: str | None
    """``--agent module:factory``, for replays with the user's code and re-drives."""
    agent_factory: AgentFactory | None
    writes_refused: str
    """Why every write is refused ("" when what is confirmed is written)."""
    prices: PriceBook | None
    """Model prices once read (``read_prices``)."""
    first_rows_shown: asyncio.Event
    """Set once the first screen's first rows are painted."""
    keymap: dict[str, str]
    """The keys bound over the bindings' own, by binding id (``tui/keymap.py``)."""

    def first_rows_painted(self) -> None:
        """Say the first screen's first rows are on screen: what waited for them starts."""

    async def read_prices(self) -> PriceBook:
        """The model prices, read once, kept for every screen."""

    def worker_failed(self, worker: Worker[Any]) -> None:
        """The one error hub: every failed worker, the app's or a screen's, ends up here."""

    def open_run(self, run_id: str) -> None:
        """Open a run's journal over the current screen."""

    async def act_on_screen(self, kind: str, action: str, run_id: str | None) -> None:
        """Run another screen's action (the palette's), opening or finding that screen first."""

    def operate(self, status: RunStatus, pick: str | None = None) -> Worker[None]:
        """Offer the operations that fit a run's status; confirm, then write (a worker)."""

    def operate_marked(
        self, marked: dict[str, RunStatus | None], shown_filter: str | None = None, pick: str | None = None
    ) -> Worker[None]:
        """Offer the bulk actions that fit every marked run; confirm, then apply (a worker)."""

    async def confirm_and_apply(self, operation: Operation, run_id: str | None) -> str | None:
        """Show what ``operation`` writes and write it once confirmed; what it wrote, or None."""

    def writing(self) -> AbstractAsyncContextManager[Store]:
        """A store handle to write with, for the length of an ``async with``."""

    def switch_store(self, name: str) -> Worker[None]:
        """Open the store the config file names ``name`` in place of this one."""
        ...

    def show_keys(self) -> None:
        """The keys of the screen or dialog on top (``?``)."""

    def show_whole(self, title: str, text: str) -> None:
        """Show a text that was cut to fit, whole (``W``)."""


def host_of(app: App[Any]) -> TuiHost:
    """``app`` as its screens see it: every screen of agenttui's runs in ``AgentTuiApp``."""
    return cast("TuiHost", app)

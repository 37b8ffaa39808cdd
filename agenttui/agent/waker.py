"""Wakers: what re-drives a sleeping run when its wake time comes."""

from __future__ import annotations

import contextlib
import contextvars
import heapq
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime
from typing import Protocol


class Waker(Protocol):
    """Told of every durable sleep a run enters; it re-drives the run once ``wake_at`` passes."""

    def register(self, run_id: str, wake_at: datetime) -> None: ...


_current_waker: contextvars.ContextVar[Waker | None] = contextvars.ContextVar("agenttui_waker", default=None)


@contextlib.contextmanager
def with_waker(waker: Waker) -> Iterator[Waker]:
    """Bind ``waker`` for runs driven inside the block (as the SDK's ``WithWaker(ctx, w)``).

    A run replayed into a journaled sleep registers its wake with the bound waker, so recovery
    rebuilds every timer without a separate scan.
    """
    token = _current_waker.set(waker)
    try:
        yield waker
    finally:
        _current_waker.reset(token)


def current_waker() -> Waker | None:
    return _current_waker.get()


class MemWaker:
    """An in-process waker: keeps wakes in a heap; ``fire_due`` re-drives every run that is due.

    ``resume`` is deployment policy: it knows how to re-drive a run (agent, input, waker).
    """

    def __init__(self, resume: Callable[[str], Awaitable[object]]) -> None:
        self._resume = resume
        self._wakes: list[tuple[datetime, str]] = []

    def register(self, run_id: str, wake_at: datetime) -> None:
        if (wake_at, run_id) not in self._wakes:
            heapq.heappush(self._wakes, (wake_at, run_id))

    @property
    def pending(self) -> list[tuple[datetime, str]]:
        return sorted(self._wakes)

    async def fire_due(self, now: datetime) -> list[str]:
        """Re-drive every run whose wake time is at or before ``now``; return their ids."""
        fired: list[str] = []
        while self._wakes and self._wakes[0][0] <= now:
            _, run_id = heapq.heappop(self._wakes)
            fired.append(run_id)
            await self._resume(run_id)
        return fired

"""A drive's lease is released however the drive ends, even when it is stopped while the store
is granting it (the lease committed, its answer not yet back)."""

from __future__ import annotations

import asyncio

import pytest

from agenttui.runs.recovery.lease import lease
from agenttui.stores.memory import MemStore


class GrantingLate(MemStore):
    """An in-memory store whose grant of a lease is committed before its answer comes back,
    as a database's is while its reply is on its way (the window a stopped command falls in)."""

    def __init__(self) -> None:
        super().__init__()
        self.granted = asyncio.Event()

    async def acquire_lease(self, run_id: str, holder: str, ttl: float) -> bool:
        granted = await super().acquire_lease(run_id, holder, ttl)
        self.granted.set()
        await asyncio.Event().wait()  # the answer is still on its way when the command stops
        return granted


async def test_a_drive_stopped_while_its_lease_is_granted_releases_it() -> None:
    store = GrantingLate()
    drives: list[str] = []

    async def drive() -> None:
        drives.append("driven")

    stopped = asyncio.create_task(lease(store, "run-1", drive))
    await store.granted.wait()
    assert await store.get_lease("run-1") is not None
    stopped.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopped
    assert await store.get_lease("run-1") is None  # released, not left to lapse after its TTL
    assert drives == []  # and nothing was driven


async def test_a_drive_that_ends_releases_its_lease() -> None:
    store = MemStore()

    async def drive() -> str:
        assert await store.get_lease("run-1") is not None
        return "done"

    assert await lease(store, "run-1", drive) == "done"
    assert await store.get_lease("run-1") is None


class ReleasingSlowly(MemStore):
    """An in-memory store whose release of a lease waits for ``go`` (a round trip under way)."""

    def __init__(self) -> None:
        super().__init__()
        self.granted = asyncio.Event()
        self.releasing = asyncio.Event()
        self.go = asyncio.Event()

    async def acquire_lease(self, run_id: str, holder: str, ttl: float) -> bool:
        granted = await super().acquire_lease(run_id, holder, ttl)
        self.granted.set()
        return granted

    async def release_lease(self, run_id: str, holder: str) -> None:
        self.releasing.set()
        await self.go.wait()
        await super().release_lease(run_id, holder)


async def test_a_drive_cancelled_again_while_its_lease_is_released_still_releases_it() -> None:
    """An app that quits cancels a drive's worker, then its tasks on the way out: the second
    cancellation must not cut the release short and leave the lease held for a TTL."""
    store = ReleasingSlowly()

    async def drive() -> None:
        await asyncio.Event().wait()  # a slow model

    driving = asyncio.create_task(lease(store, "run-1", drive))
    await store.granted.wait()
    driving.cancel()
    await store.releasing.wait()
    driving.cancel()  # again, mid-release
    store.go.set()
    with pytest.raises(asyncio.CancelledError):
        await driving
    assert await store.get_lease("run-1") is None

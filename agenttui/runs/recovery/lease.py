"""Run leases: one driver per run at a time, across processes, renewed while driving."""

from __future__ import annotations

import asyncio
import os
import random
import socket
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from agenttui.errors import AgentTuiError
from agenttui.journal.keys import root_run_id
from agenttui.stores.base import Store

T = TypeVar("T")
DEFAULT_TTL = 30.0
_PROCESS_HOLDER = f"{socket.gethostname()}-{os.getpid()}-{random.getrandbits(64)}"


class LeaseHeld(AgentTuiError):
    """Another live driver holds the run's lease."""

    title = "Run is leased"

    def __init__(self, run_id: str, holder: str, expires_in: float) -> None:
        left = f"{expires_in / 86400:.0f} days" if expires_in >= 2 * 86400 else f"{expires_in:.0f} s"
        super().__init__(
            f"run {run_id!r} is being driven by {holder} (lease for {left} more; if that driver is gone, release --force breaks it)"
        )
        self.run_id, self.holder, self.expires_in = run_id, holder, expires_in


class LeaseLost(AgentTuiError):
    """The lease could not be renewed in time, so the drive was stopped."""

    title = "Lease lost"


def new_holder() -> str:
    """The value stored in ``holder``: ``<host>-<pid>-<random>#<token>``, one token per call."""
    return f"{_PROCESS_HOLDER}#{random.getrandbits(64):016x}"


async def lease(store: Store, run_id: str, drive: Callable[[], Awaitable[T]], *, ttl: float = DEFAULT_TTL) -> T:
    """Run ``drive`` while holding the lease of ``run_id``'s tree root.

    Raises ``LeaseHeld`` when another live holder has it. The lease is renewed from TTL/2, retried
    every TTL/20; if it cannot be renewed by 3/4 TTL the drive is cancelled with ``LeaseLost``.
    It is released when the drive returns. A store without leases just drives.
    """
    if not store.IMPLEMENTS_LEASES:
        return await drive()
    root = root_run_id(run_id)
    holder = new_holder()
    try:
        acquired = await store.acquire_lease(root, holder, ttl)
    except BaseException:
        # Stopped (a signal cancels the command) or failed after the store may have committed
        # the lease but before it said so: the row may be this holder's, and nothing else would
        # release it before its TTL. Only this holder's row is deleted.
        await _release(store, root, holder)
        raise
    if not acquired:
        current = await store.get_lease(root)
        raise LeaseHeld(run_id, current.holder if current else "another driver", current.expires_in if current else ttl)
    driving = asyncio.ensure_future(drive())
    keeper = asyncio.create_task(_keep(store, root, holder, ttl, driving))
    try:
        return await driving
    except asyncio.CancelledError:
        if keeper.done() and keeper.result() is False:
            raise LeaseLost(f"lost the lease of run {run_id!r}; the drive was stopped") from None
        raise
    finally:
        keeper.cancel()
        if not driving.done():
            driving.cancel()
        await _release(store, root, holder)


async def _release(store: Store, run_id: str, holder: str) -> None:
    """Release the lease if ``holder`` has it; a release that fails is left to lapse after its TTL.

    A release is seen through even when the caller is cancelled again meanwhile, as an app that
    quits cancels a drive's worker and then, on its way out, its tasks: the cancellation goes on
    once the release is done (it is bounded, 10 s), never in its middle, which would leave the
    lease held for a TTL with nobody driving."""
    release = asyncio.ensure_future(asyncio.wait_for(store.release_lease(run_id, holder), timeout=10))
    cancelled = False
    while not release.done():
        try:
            await asyncio.shield(release)
        except asyncio.CancelledError:
            cancelled = True
    error = None if release.cancelled() else release.exception()
    if cancelled:
        raise asyncio.CancelledError
    if error is not None and not isinstance(error, TimeoutError | AgentTuiError):
        raise error  # a failed release is left to lapse (the drive's outcome stands); not a bug


async def _keep(store: Store, run_id: str, holder: str, ttl: float, driving: asyncio.Future[Any]) -> bool:
    """Renew until cancelled; on failing past 3/4 TTL, cancel the drive and return False."""
    loop = asyncio.get_running_loop()
    renewed_at = loop.time()
    await asyncio.sleep(ttl / 2)
    while True:
        try:
            ok = await store.renew_lease(run_id, holder, ttl)
        except AgentTuiError:
            ok = False
        if ok:
            renewed_at = loop.time()
            await asyncio.sleep(ttl / 2)
        elif loop.time() - renewed_at >= ttl * 3 / 4:
            driving.cancel()
            return False
        else:
            await asyncio.sleep(ttl / 20)

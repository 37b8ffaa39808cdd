"""Live tail on PostgreSQL: the ``NOTIFY`` channel of a store's tables, and its listener.

Every insert that wins also sends ``NOTIFY`` in the same statement, so listeners hear
of it only once it has committed. The channel is ``<schema>.<prefix>steps`` (``public.bide_steps``
by default), which keeps two schemas in one database apart, and is the same for every handle
onto the same tables. A name longer than PostgreSQL's 63-byte limit becomes
``steps_<40 hex of its SHA-256>``. The payload is the run id, cut at a character boundary to at
most ``NOTIFY_PAYLOAD_LIMIT`` bytes (the server refuses payloads of 8,000 bytes or more); a
payload that long may be a prefix of the run id.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable

import asyncpg

from agenttui.errors import StoreConnectionError
from agenttui.stores.postgres.connection import CLOSE_TIMEOUT, Target
from agenttui.stores.postgres.schema import MAX_IDENTIFIER

#: Upper bound on a notification payload in bytes; the server's own limit is just under 8,000.
NOTIFY_PAYLOAD_LIMIT = 7000


def channel_name(schema: str, table_prefix: str) -> str:
    full = f"{schema}.{table_prefix}steps"
    if len(full.encode()) <= MAX_IDENTIFIER:
        return full
    return "steps_" + hashlib.sha256(full.encode()).hexdigest()[:40]


def notify_payload(run_id: str) -> str:
    """The run id, cut at a character boundary to at most ``NOTIFY_PAYLOAD_LIMIT`` bytes."""
    encoded = run_id.encode()
    if len(encoded) <= NOTIFY_PAYLOAD_LIMIT:
        return run_id
    return encoded[:NOTIFY_PAYLOAD_LIMIT].decode(errors="ignore")


class Notifications:
    """Ids of runs whose inserts committed, heard on one ``LISTEN`` connection (live tail).

    Ids heard while the consumer is busy are coalesced: each pending run is yielded once, in the
    order first heard, so a burst of inserts costs the consumer one wake-up per run. A payload of
    ``NOTIFY_PAYLOAD_LIMIT`` bytes may be a prefix of a longer run id. Iteration ends when the
    iterator or its store is closed, and raises ``StoreConnectionError`` if the connection is lost.
    """

    def __init__(self, conn: asyncpg.Connection, target: Target, *, forget: Callable[[Notifications], None]) -> None:
        """Use ``PostgresStore.notifications``."""
        self._conn = conn
        self._target = target
        self._forget = forget
        self._pending: dict[str, None] = {}
        self._wake = asyncio.Event()
        self._closing = False
        conn.add_termination_listener(self._lost)

    @classmethod
    async def listen(
        cls, conn: asyncpg.Connection, channel: str, target: Target, *, forget: Callable[[Notifications], None]
    ) -> Notifications:
        """``LISTEN`` on ``conn``, which the result then owns (and closes, even if this fails)."""
        tail = cls(conn, target, forget=forget)
        try:
            await conn.add_listener(channel, tail._heard)
        except BaseException:
            tail.terminate()
            raise
        return tail

    def __aiter__(self) -> Notifications:
        return self

    async def __anext__(self) -> str:
        while not self._closing:
            if self._pending:
                run_id = next(iter(self._pending))
                del self._pending[run_id]
                return run_id
            if self._conn.is_closed():
                raise StoreConnectionError(f"lost the notification connection to PostgreSQL at {self._target.address}")
            self._wake.clear()
            await self._wake.wait()
        raise StopAsyncIteration

    def terminate(self) -> None:
        """Stop listening at once, cutting the connection (the store's ``close`` does this)."""
        self._closing = True
        self._forget(self)
        self._conn.terminate()
        self._wake.set()

    async def aclose(self) -> None:
        """Stop listening and release the connection. Safe to call twice."""
        self._closing = True
        self._forget(self)
        if not self._conn.is_closed():
            try:
                await asyncio.wait_for(self._conn.close(), CLOSE_TIMEOUT)
            except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                # Its server is gone or stuck; there is nothing left to release but the socket.
                self._conn.terminate()
        self._wake.set()

    async def __aenter__(self) -> Notifications:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    def _heard(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        self._pending[payload] = None
        self._wake.set()

    def _lost(self, _conn: object) -> None:
        self._wake.set()

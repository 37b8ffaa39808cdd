"""The PostgreSQL server the benchmarks measure on, and a fresh schema on it for each measurement.

Imported by the benchmark scripts (each puts the repository root on ``sys.path`` first).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import shutil
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

#: A server to measure on instead of the throwaway cluster (a ``postgresql://`` URL).
DSN_ENV = "AGENTTUI_BENCH_PG_DSN"


@asynccontextmanager
async def throwaway_postgres() -> AsyncIterator[str]:
    """A DSN: ``AGENTTUI_BENCH_PG_DSN``'s server, or the test suite's throwaway cluster made durable."""
    if dsn := os.environ.get(DSN_ENV):
        yield dsn
        return
    import asyncpg

    from tests import pg

    if shutil.which("initdb") is None or shutil.which("pg_ctl") is None:
        raise SystemExit(f"no initdb/pg_ctl on PATH: set {DSN_ENV} or pass --no-postgres")
    # The session fixture's own generator: it starts the cluster, and stops and removes it after.
    session = inspect.unwrap(pg.postgres_cluster)()
    cluster = next(session)
    try:
        if cluster.managed:
            # The test cluster trades durability for speed; a benchmark must not. Both settings
            # take effect on a reload, so every commit is flushed to disk as SQLite's are.
            conn = await asyncpg.connect(cluster.dsn)
            try:
                await conn.execute("ALTER SYSTEM SET fsync = on")
                await conn.execute("ALTER SYSTEM SET full_page_writes = on")
                await conn.execute("SELECT pg_reload_conf()")
                await asyncio.sleep(0.5)
                assert await conn.fetchval("SHOW fsync") == "on", "the server did not take fsync = on"
            finally:
                await conn.close()
        yield cluster.dsn
    finally:
        next(session, None)


@asynccontextmanager
async def bench_schema(dsn: str, prefix: str = "bench_") -> AsyncIterator[str]:
    """A fresh schema name on ``dsn``'s server, dropped afterwards (it may be someone else's)."""
    schema = prefix + uuid.uuid4().hex[:12]
    try:
        yield schema
    finally:
        import asyncpg

        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await conn.close()

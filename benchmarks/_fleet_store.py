"""The fleet benchmark's stores (``benchmarks/fleet.py``): production-shaped PostgreSQL journals of
100,000 to 1,000,000 runs, each with the shared run index installed and caught up, in a
PostgreSQL cluster of their own, built once and kept under the cache.

A store of N runs is N / S copies of the production-shaped SQLite store of S runs
(``benchmarks/shapes.py``), each copy's run ids prefixed (``c00-``, ``c01-``, ...), so that they
stay distinct and every sub-run stays under its root (a run's root is its id before the first
``>``); its lease rows are copied with the same prefix. Entries go in as a service writes them: in
commit order, so that a copy's runs interleave on disk as production's do, each run's ``seq``
counted from 0 as the Go SDK's ``next_seq`` counts it. One schema a size, ``fleet_<N>``; how long
each step of its build took is kept in ``builds.json`` beside the cluster's data.

The cluster is made by ``tests/pg.py``'s ``initdb`` (as the ``postgres`` user when run as root),
started on a free port while the benchmark runs and stopped when it ends, however it ends. Stores
are loaded with fsync off and everything after is done with it on (``durable``), as production
runs.

Imported by ``benchmarks/fleet.py`` (which puts the repository's root and ``benchmarks/`` on
``sys.path`` first).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
from _report import checkout
from shapes import SHAPE_VERSION, shape_of
from statuses import Case, server_cpu_of, timed

from agenttui.stores.postgres import PostgresStore
from agenttui.stores.postgres.run_index import index_schema
from agenttui.stores.postgres.schema import Names
from tests import pg

#: The cluster's folder under the cache; another production shape is another cluster.
CLUSTER_FOLDER = f"pg-fleet-v{SHAPE_VERSION}"
#: Beside the cluster's data: each size's build, step by step.
BUILDS_FILE = "builds.json"
#: The cluster superuser's password (made by ``initdb``), readable by this user alone.
PASSWORD_FILE = "password"
#: What the server runs with, over ``tests/pg.py``'s test settings (the later lines win): a
#: server as production keeps one (WAL for replicas, autovacuum on, a modest buffer cache that
#: holds the index but not the journal). ``fsync`` and ``full_page_writes`` are set by
#: ``durable``, in ``postgresql.auto.conf``.
SERVER_SETTINGS = {
    "wal_level": "replica",
    "autovacuum": "on",
    "shared_buffers": "'1GB'",
    "max_wal_size": "'4GB'",
    "checkpoint_timeout": "'15min'",
    "max_connections": "100",
}
#: The server's log is started afresh past this size (each run of ``fleet.py`` logs plans to it).
LOG_KEPT_BYTES = 200 * 10**6
#: What a run takes on disk before the first size is built (journal and index; issue 50 guessed
#: 12-15 GB a million runs); after, the largest size built says.
GUESSED_BYTES_A_RUN = 15_000
#: Disk kept free beyond a build's estimate: the WAL a load leaves (``max_wal_size``) and slack.
SPARE_BYTES = 6 * 10**9

Say = Callable[[str], None]


def schema_of(runs: int) -> str:
    """The schema the store of ``runs`` runs lives in."""
    return f"fleet_{runs}"


def copy_prefix(copy: int) -> str:
    """What the run ids of the ``copy``-th copy of the source start with."""
    return f"c{copy:02d}-"


def index_schema_of(runs: int) -> str:
    """The schema that store's shared run index lives in."""
    return index_schema(Names(schema_of(runs), "bide_"))


@dataclass
class Fleet:
    """The running cluster and where its builds are recorded."""

    folder: Path
    cluster: pg.PostgresCluster
    scratch: Path
    """Where each agenttui process gets an empty ``XDG_CACHE_HOME`` of its own."""

    @property
    def dsn(self) -> str:
        """The server's URL; its password is in ``PGPASSWORD`` (set by ``running``), as the
        project's docs advise, so that no command line or message holds it."""
        return f"postgresql://{self.cluster.user}@{self.cluster.host}:{self.cluster.port}/{self.cluster.database}"

    @property
    def log(self) -> Path:
        """The server's log (``tests/pg.py`` starts it with ``-l`` there)."""
        return self.folder / "server.log"

    def url(self, runs: int) -> str:
        """The store of ``runs`` runs, as agenttui opens it."""
        return f"{self.dsn}?schema={schema_of(runs)}"

    def builds(self) -> dict[str, dict[str, Any]]:
        """Each size's build record, by its number of runs (as text)."""
        path = self.folder / BUILDS_FILE
        return json.loads(path.read_text()) if path.exists() else {}

    def record(self, runs: int, **figures: Any) -> None:
        """Add ``figures`` to the build record of the store of ``runs`` runs."""
        builds = self.builds()
        builds.setdefault(str(runs), {}).update(figures)
        (self.folder / BUILDS_FILE).write_text(json.dumps(builds, indent=1))

    def server_cpu(self) -> Callable[[], float]:
        """The server's CPU seconds so far (the postmaster's and every backend's, from /proc)."""
        assert self.cluster.data_dir is not None
        # The postmaster's pid heads its pid file (a backend's parent, as ``postmaster_of`` finds
        # it, may be gone once its connection closes).
        postmaster = int((self.cluster.data_dir / "postmaster.pid").read_text().split()[0])
        return server_cpu_of(postmaster)

    def agenttui(self, *args: str) -> Case:
        """``agenttui ARGS`` as a process to time, with an empty ``XDG_CACHE_HOME`` of its own, so
        that no status index in a user's cache helps it."""
        cache_home = tempfile.mkdtemp(prefix="xdg-", dir=self.scratch)
        return Case([sys.executable, "-m", "agenttui", *args], env={"XDG_CACHE_HOME": cache_home})


@contextmanager
def running(folder: Path, scratch: Path) -> Iterator[Fleet]:
    """The cluster under ``folder`` (made by ``initdb`` first if it is not there), started on a
    free port, and stopped on the way out: at the end, on an error, ctrl+c or SIGTERM."""
    user = pg._server_user()
    cluster = _existing(folder, user) or _made(folder, user)
    cluster.port = pg.free_port()
    log = Fleet(folder, cluster, scratch).log
    if log.exists() and log.stat().st_size > LOG_KEPT_BYTES:
        log.unlink()  # the plans (g) logs, run after run; the server is not running yet
    # SIGTERM ends the benchmark as ctrl+c does, through the ``finally`` that stops the server.
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    password = os.environ.get("PGPASSWORD")
    os.environ["PGPASSWORD"] = cluster.password  # for this process's connections and every child's
    cluster.start()
    try:
        yield Fleet(folder, cluster, scratch)
    finally:
        try:
            # A clean stop (a shutdown checkpoint): the next start replays no WAL.
            pg._run(["pg_ctl", "stop", "-w", "-t", "300", "-m", "fast", "-D", str(cluster.data_dir)], user)
        finally:
            signal.signal(signal.SIGTERM, previous)
            if password is None:
                del os.environ["PGPASSWORD"]
            else:
                os.environ["PGPASSWORD"] = password


def _existing(folder: Path, user: str | None) -> pg.PostgresCluster | None:
    """The cluster made under ``folder`` before, or None (a folder ``initdb`` left half made is removed)."""
    if not (folder / "data" / "PG_VERSION").exists():
        shutil.rmtree(folder, ignore_errors=True)
        return None
    if not (folder / PASSWORD_FILE).exists():
        raise SystemExit(
            f"{folder / PASSWORD_FILE} is gone: no way to log in to the cluster; remove {folder} to build it again"
        )
    password = (folder / PASSWORD_FILE).read_text().strip()
    return pg.PostgresCluster("127.0.0.1", 0, "agenttui", password, data_dir=folder / "data", run_as=user)


def _made(folder: Path, user: str | None) -> pg.PostgresCluster:
    folder.mkdir(parents=True)
    if user is not None:
        pg._check_traversable(folder)
    cluster = pg._initdb(folder, user, port=0)
    with (folder / "data" / "postgresql.conf").open("a") as conf:
        conf.write("\n# agenttui fleet benchmark: a server as production keeps one\n")
        conf.writelines(f"{key} = {value}\n" for key, value in SERVER_SETTINGS.items())
    password = folder / PASSWORD_FILE
    password.write_text(cluster.password + "\n")
    password.chmod(0o600)
    return cluster


def durable(dsn: str, on: bool) -> None:
    """Every commit flushed to disk (``on``), or not: the loads are made with fsync off, and
    nothing is measured so. Turned on, what was written meanwhile is flushed first."""

    async def apply() -> None:
        conn = await asyncpg.connect(dsn)
        try:
            value = "on" if on else "off"
            for setting in ("fsync", "full_page_writes"):
                await conn.execute(f"ALTER SYSTEM SET {setting} = {value}")
            await conn.execute("SELECT pg_reload_conf()")
            for _ in range(50):  # the reload reaches this backend at its next command
                if await conn.fetchval("SHOW fsync") == value:
                    break
                await asyncio.sleep(0.1)
            else:
                raise SystemExit(f"the server did not take fsync = {value}")
            if on:
                await conn.execute("CHECKPOINT")
        finally:
            await conn.close()

    asyncio.run(apply())
    if on:
        os.sync()  # pages the kernel held unflushed while fsync was off


def source_runs(source: Path) -> int:
    """How many runs the source store holds (its ``.shape.json``)."""
    return int(shape_of(source)["runs"])


def build(fleet: Fleet, source: Path, runs: int, say: Say) -> None:
    """The store of ``runs`` runs, copied from ``source`` into a fresh schema, with the shared run
    index installed and caught up; each step's time recorded. A build stopped midway is made again
    from the start."""
    copies, rest = divmod(runs, source_runs(source))
    if rest or not copies:
        raise SystemExit(f"{runs:,} runs is not a whole number of copies of {source.name}'s {source_runs(source):,}")
    _check_space(fleet, runs)
    fleet.record(runs, complete=False)
    durable(fleet.dsn, False)
    started, load = time.perf_counter(), os.getloadavg()[0]
    asyncio.run(_copy(fleet.dsn, runs, source, copies, say))
    copied = time.perf_counter()
    asyncio.run(_vacuum(fleet.dsn, schema_of(runs), ["bide_steps", "bide_leases"]))
    fleet.record(
        runs,
        source=str(source),
        copies=copies,
        copy_s=copied - started,
        vacuum_s=time.perf_counter() - copied,
        load_at_copy=load,
        load_after_copy=os.getloadavg()[0],
    )
    durable(fleet.dsn, True)
    index(fleet, runs, say)
    sizes = asyncio.run(_sizes_of(fleet.dsn, runs))
    fleet.record(runs, **sizes, complete=True, built_at=time.strftime("%Y-%m-%d %H:%M"))


def index(fleet: Fleet, runs: int, say: Say) -> None:
    """The shared run index installed afresh (``agenttui index install``) and caught up once
    (``agenttui index run --once``), each timed from its process's start with the server's CPU."""
    url = fleet.url(runs)
    timed(fleet.agenttui("index", "uninstall", "--yes", url))  # an index of another layout goes first
    server_cpu = fleet.server_cpu()
    for step, args in (("install", ["index", "install"]), ("catch_up", ["index", "run", "--once"])):
        say(f"{runs:,} runs: agenttui {' '.join(args)}")
        load = os.getloadavg()[0]
        wall, cpu, peak = timed(fleet.agenttui(*args, url), server_cpu)
        fleet.record(
            runs, **{f"{step}_s": wall, f"{step}_cpu_s": cpu, f"{step}_peak_mb": peak, f"load_at_{step}": load}
        )
    fleet.record(runs, indexed_by=checkout())
    asyncio.run(_vacuum(fleet.dsn, index_schema_of(runs), ["changes", "runs"]))


async def _copy(dsn: str, runs: int, source: Path, copies: int, say: Say) -> None:
    schema = schema_of(runs)
    conn = await asyncpg.connect(dsn)
    try:
        await drop_store(conn, schema)
        await (await PostgresStore.open(dsn, schema=schema)).close()  # the journal's tables, as agenttui makes them
        for copy in range(copies):
            prefix = copy_prefix(copy)
            await conn.copy_records_to_table(
                "bide_steps", schema_name=schema, columns=["run_id", "seq", "name", "data"],
                records=_entries(source, prefix),
            )  # fmt: skip
            await conn.executemany(
                f'INSERT INTO "{schema}".bide_leases (run_id, holder, expiry) VALUES ($1, $2, to_timestamp($3))',
                _leases(source, prefix),
            )
            say(f"{runs:,} runs: copy {copy + 1} of {copies} loaded")
    finally:
        await conn.close()


def _entries(source: Path, prefix: str) -> Iterator[tuple[str, int, str, bytes]]:
    """``source``'s entries in commit order (its global ``seq``), run ids prefixed, each run's
    ``seq`` counted from 0 as ``next_seq`` counts it."""
    next_seq: dict[str, int] = {}
    with closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True)) as conn:
        for run_id, name, data in conn.execute("SELECT run_id, name, data FROM bide_steps ORDER BY seq"):
            seq = next_seq.get(run_id, 0)
            next_seq[run_id] = seq + 1
            yield prefix + run_id, seq, name, data


def _leases(source: Path, prefix: str) -> list[tuple[str, str, float]]:
    with closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True)) as conn:
        return [(prefix + run_id, holder, expiry) for run_id, holder, expiry in
                conn.execute("SELECT run_id, holder, expiry FROM bide_leases")]  # fmt: skip


async def drop_store(conn: asyncpg.Connection, schema: str) -> None:
    """The journal in ``schema`` dropped, and its shared run index if it has one."""
    # The index's schema first: its functions go, and with them their triggers on the journal.
    for each in (index_schema(Names(schema, "bide_")), schema):
        await conn.execute(f'DROP SCHEMA IF EXISTS "{each}" CASCADE')


async def _vacuum(dsn: str, schema: str, tables: list[str]) -> None:
    """``VACUUM ANALYZE`` of the tables, as autovacuum soon would: a table loaded whole, or a
    queue the first catch-up emptied of a row a run, is measured as it is once it has run."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("VACUUM ANALYZE " + ", ".join(f'"{schema}"."{table}"' for table in tables))
    finally:
        await conn.close()


async def _sizes_of(dsn: str, runs: int) -> dict[str, int]:
    """The journal's size and its index's (every table of its schema), with their indexes and TOAST."""
    conn = await asyncpg.connect(dsn)
    try:
        row = await conn.fetchrow(
            "SELECT pg_total_relation_size(format('%I.bide_steps', $1::text)) AS journal_bytes,"
            " (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::int8 FROM pg_class AS c"
            "  JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = $2 AND c.relkind = 'r')"
            " AS index_bytes",
            schema_of(runs),
            index_schema_of(runs),
        )
    finally:
        await conn.close()
    return dict(row)


def _check_space(fleet: Fleet, runs: int) -> None:
    """Refuse a build the disk cannot hold, before anything is written."""
    measured = [
        (build["journal_bytes"] + build["index_bytes"]) / int(size)
        for size, build in fleet.builds().items()
        if build.get("complete")
    ]
    needed = runs * max(measured, default=GUESSED_BYTES_A_RUN) + SPARE_BYTES
    free = shutil.disk_usage(fleet.folder).free
    if free < needed:
        raise SystemExit(
            f"the store of {runs:,} runs needs about {needed / 1e9:.0f} GB free under {fleet.folder}"
            f" (its journal, its index and the WAL of the load); {free / 1e9:.0f} GB are."
            " Free some space, or leave that size out of --sizes"
        )

"""A throwaway PostgreSQL cluster for the test session, or the server ``AGENTTUI_TEST_PG_DSN`` names.

Under pytest-xdist every worker is a session of its own, so each starts its own cluster, in its own
temporary directory on its own free port: the outage tests stop and start theirs without touching
another worker's.

The cluster is real: password logins (scram-sha-256) over TCP on 127.0.0.1, and an ICU ``en-US``
default collation, so a query that forgets ``COLLATE "C"`` sorts differently from byte order and
the ordering tests notice. Durability is traded for speed (``fsync=off``): the data lives only as
long as the session.

Anything that goes wrong while starting it fails the session with the tools' output; PostgreSQL
tests must fail, never skip, when the server is missing.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import pytest

#: Set to a ``postgresql://`` URL to test against that server instead of starting one.
DSN_ENV = "AGENTTUI_TEST_PG_DSN"

#: Settings for a disposable cluster: nothing is worth an fsync, and no background work should
#: compete with the tests. Commits stay synchronous, so a committed row survives ``stop()`` (a
#: server crash, not an OS crash). ``max_connections`` covers the contract tests' many pools
#: (four handles of up to ten connections each) and the cross-process race.
_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "max_connections": "300",
    "fsync": "off",
    "full_page_writes": "off",
    "wal_level": "minimal",
    "max_wal_senders": "0",
    "max_wal_size": "'1GB'",
    "checkpoint_timeout": "'1h'",
    "autovacuum": "off",
    "jit": "off",
    "shared_buffers": "'128MB'",
    "log_min_messages": "warning",
    "log_connections": "off",
}


@dataclass
class PostgresCluster:
    """Where the test server listens and how to log in; ``stop``/``start`` simulate an outage."""

    host: str
    port: int
    user: str
    password: str
    database: str = "postgres"
    data_dir: Path | None = None
    """The cluster's data directory; None for an external server (``AGENTTUI_TEST_PG_DSN``)."""
    run_as: str | None = None
    """The OS user that runs the server tools (``postgres`` when the tests run as root)."""

    @property
    def dsn(self) -> str:
        """A ``postgresql://`` URL with the user and password."""
        return (
            f"postgresql://{quote(self.user, safe='')}:{quote(self.password, safe='')}"
            f"@{self.host}:{self.port}/{quote(self.database, safe='')}"
        )

    def schema_url(self, prefix: str) -> str:
        """A store URL naming a new schema of its own (``prefix`` and a random suffix)."""
        import uuid

        return f"{self.dsn}{'&' if '?' in self.dsn else '?'}schema={prefix}_{uuid.uuid4().hex[:10]}"

    async def demo_schema(self, prefix: str, *, bulk_turns: int) -> str:
        """The demo store (a run in every status, written by the runtime) in a new schema: its URL."""
        from agenttui.demo.build import build_demo
        from agenttui.stores import open_store

        url = self.schema_url(prefix)
        store = await open_store(url)
        try:
            await build_demo(store, bulk_turns=bulk_turns)
        finally:
            await store.close()
        return url

    @property
    def managed(self) -> bool:
        """True when this session started the server, so it may stop and start it."""
        return self.data_dir is not None

    def stop(self) -> None:
        """Stop the server at once, as a crash would (``pg_ctl stop -m immediate``)."""
        self._pg_ctl("stop", "-m", "immediate")

    def start(self) -> None:
        """Start the server (again, after ``stop``) on its port; return once it accepts connections."""
        self._pg_ctl("start", "-l", str(self._log_file), "-o", f"-p {self.port}")

    @property
    def _log_file(self) -> Path:
        assert self.data_dir is not None
        return self.data_dir.parent / "server.log"

    def _pg_ctl(self, action: str, *args: str) -> None:
        if self.data_dir is None:
            raise RuntimeError(f"{self.host}:{self.port} is an external server; this session cannot {action} it")
        _run(["pg_ctl", action, "-w", "-t", "60", "-D", str(self.data_dir), *args], self.run_as, log=self._log_file)


def _run(argv: list[str], user: str | None, *, log: Path | None = None) -> None:
    """Run a server tool as ``user``; fail the session with its output (and the server log) on error."""
    try:
        done = subprocess.run(argv, check=False, user=user, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.fail(f"{argv[0]} could not run: {exc}", pytrace=False)
    if done.returncode != 0:
        server_log = log.read_text(errors="replace")[-4000:] if log is not None and log.exists() else ""
        pytest.fail(
            f"{' '.join(argv)} exited with {done.returncode}\n{done.stdout}{done.stderr}\n{server_log}",
            pytrace=False,
        )


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _server_user() -> str | None:
    """The OS user to run the server as: ``postgres`` under root (which PostgreSQL refuses), else us."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.fail("running as root, but there is no 'postgres' OS user to run the test server", pytrace=False)
    return "postgres"


def _check_traversable(path: Path) -> None:
    """Fail unless every ancestor of ``path`` lets other users search it, as the server user must."""
    for ancestor in path.parents:
        if not ancestor.stat().st_mode & stat.S_IXOTH:
            pytest.fail(
                f"{ancestor} is not searchable by other users, so the 'postgres' user cannot reach "
                f"the test cluster under it; point TMPDIR at a directory it can reach",
                pytrace=False,
            )


def _external(dsn: str) -> PostgresCluster:
    parts = urlsplit(dsn)
    if parts.scheme not in ("postgres", "postgresql") or not parts.hostname:
        pytest.fail(f"{DSN_ENV} must be a postgresql://user:password@host:port/db URL", pytrace=False)
    return PostgresCluster(
        host=parts.hostname,
        port=parts.port or 5432,
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        database=unquote(parts.path.lstrip("/")) or "postgres",
    )


def _initdb(base: Path, user: str | None, port: int) -> PostgresCluster:
    """Create a cluster under ``base`` (handed to ``user``) with a random superuser password."""
    data_dir, socket_dir, pwfile = base / "data", base / "run", base / "pwfile"
    password = secrets.token_urlsafe(18)
    socket_dir.mkdir()
    pwfile.write_text(password + "\n")
    if user is not None:
        # The server user writes the data, socket and log under base; root can still remove it.
        for path in (base, socket_dir, pwfile):
            shutil.chown(path, user=user)
    _run(
        [
            "initdb",
            "-D",
            str(data_dir),
            "-U",
            "agenttui",
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
            # A non-byte-order default collation makes a missing COLLATE "C" visible in tests.
            "--locale-provider=icu",
            "--icu-locale=en-US",
            "--no-sync",
            "--no-instructions",
        ],
        user,
    )
    pwfile.unlink()
    settings = {**_SETTINGS, "unix_socket_directories": f"'{socket_dir}'"}
    with (data_dir / "postgresql.conf").open("a") as conf:
        conf.write("\n# agenttui test cluster\n")
        conf.writelines(f"{key} = {value}\n" for key, value in settings.items())
    return PostgresCluster(
        host="127.0.0.1", port=port, user="agenttui", password=password, data_dir=data_dir, run_as=user
    )


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """The session's PostgreSQL server: ``AGENTTUI_TEST_PG_DSN``'s, or a fresh cluster in a temp dir."""
    if dsn := os.environ.get(DSN_ENV):
        yield _external(dsn)
        return
    user = _server_user()
    base = Path(tempfile.mkdtemp(prefix="agenttui-pg-"))
    try:
        if user is not None:
            _check_traversable(base)
        cluster = _initdb(base, user, port=free_port())
        cluster.start()
        try:
            yield cluster
        finally:
            # Immediate: the data is thrown away, so a clean shutdown checkpoint is wasted time.
            if cluster.data_dir is not None and (cluster.data_dir / "postmaster.pid").exists():
                cluster.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@dataclass
class Replicated:
    """A primary and a hot standby streaming from it."""

    primary: PostgresCluster
    standby: PostgresCluster

    async def caught_up(self) -> None:
        """Return once the standby has replayed everything the primary has written so far."""
        import asyncio

        import asyncpg

        primary = await asyncpg.connect(self.primary.dsn)
        standby = await asyncpg.connect(self.standby.dsn)
        try:
            written = await primary.fetchval("SELECT pg_current_wal_lsn()")
            async with asyncio.timeout(30):
                # Polled: replay is the standby's own, and tells no one.
                while not await standby.fetchval("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", written):  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
        finally:
            await primary.close()
            await standby.close()


@pytest.fixture(scope="module")
def replicated_postgres() -> Iterator[Replicated]:
    """A throwaway primary (``wal_level = replica``) and a hot standby made from it by
    ``pg_basebackup``, streaming: what a deployment's read replica is. Not under
    ``AGENTTUI_TEST_PG_DSN``: the test makes both servers itself."""
    user = _server_user()
    base = Path(tempfile.mkdtemp(prefix="agenttui-pg-replica-"))
    started: list[PostgresCluster] = []
    try:
        if user is not None:
            _check_traversable(base)
            shutil.chown(base, user=user)  # the server user reaches both clusters under it
        (base / "primary").mkdir()
        primary = _initdb(base / "primary", user, port=free_port())
        assert primary.data_dir is not None
        with (primary.data_dir / "postgresql.conf").open("a") as conf:
            conf.write("wal_level = replica\nmax_wal_senders = 4\nhot_standby = on\n")
        primary.start()
        started.append(primary)
        standby_base = base / "standby"
        standby_base.mkdir()
        if user is not None:
            shutil.chown(standby_base, user=user)
        backup = subprocess.run(
            ["pg_basebackup", "-h", primary.host, "-p", str(primary.port), "-U", primary.user,
             "-D", str(standby_base / "data"), "-R", "-X", "stream", "--no-sync"],
            check=False, user=user, capture_output=True, text=True, timeout=120,
            env={**os.environ, "PGPASSWORD": primary.password},
        )  # fmt: skip
        if backup.returncode != 0:
            pytest.fail(f"pg_basebackup failed: {backup.stdout}{backup.stderr}", pytrace=False)
        standby = PostgresCluster(
            host=primary.host, port=free_port(), user=primary.user, password=primary.password,
            data_dir=standby_base / "data", run_as=user,
        )  # fmt: skip
        standby.start()
        started.append(standby)
        yield Replicated(primary, standby)
    finally:
        for cluster in reversed(started):
            cluster.stop()
        shutil.rmtree(base, ignore_errors=True)

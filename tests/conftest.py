"""Shared fixtures: real stores under tmp_path, and one throwaway PostgreSQL cluster per session."""

from __future__ import annotations

import compileall
import uuid
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from agenttui.stores.base import Store
from agenttui.stores.memory import MemStore
from tests import idle
from tests.pg import PostgresCluster, postgres_cluster, replicated_postgres  # noqa: F401  (fixtures)


def pytest_configure(config: pytest.Config) -> None:
    """Compile the package once before the tests start the CLI as a process, hundreds of times,
    and have Pilot notice sooner that the app is idle (``tests/idle.py``).

    Where ``PYTHONDONTWRITEBYTECODE`` is set (CI's image sets it), no process caches what it
    compiles, so each would compile the package again (about 0.3 s); bytecode already on disk is
    still read. Written atomically: two xdist workers may both do it."""
    compileall.compile_dir(Path(__file__).resolve().parents[1] / "agenttui", quiet=1)
    idle.install()


class StoreFactory(Protocol):
    """What ``make_store`` yields: call it for a new handle; it also says which database it opens."""

    kind: str  # one of STORE_KINDS
    db_path: Path  # the sqlite kind's file (the other kinds do not use it)

    def __call__(self, *, read_only: bool = False) -> Awaitable[Store]: ...


STORE_KINDS = ["memory", "sqlite", "postgres"]


@pytest.fixture(params=STORE_KINDS)
async def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreFactory]:
    """A factory of handles onto one fresh database of the parametrised kind.

    Every call opens a new handle (``read_only=`` as asked) onto the same database, so tests can
    race two handles or read what another wrote. All handles are closed at teardown.
    """
    kind: str = request.param
    opened: list[Store] = []
    memory = MemStore()

    if kind == "postgres":
        cluster: PostgresCluster = request.getfixturevalue("postgres_cluster")
        schema = "t_" + uuid.uuid4().hex[:12]
    db_path = tmp_path / "journal.db"

    async def factory(*, read_only: bool = False) -> Store:
        if kind == "memory":
            return memory.handle(read_only=read_only)
        if kind == "sqlite":
            from agenttui.stores.sqlite import SQLiteStore

            store: Store = await SQLiteStore.open(db_path, read_only=read_only)
        else:
            from agenttui.stores.postgres import PostgresStore

            store = await PostgresStore.open(cluster.dsn, schema=schema, read_only=read_only)
        opened.append(store)
        return store

    @dataclass
    class Factory:
        kind: str
        db_path: Path

        def __call__(self, *, read_only: bool = False) -> Awaitable[Store]:
            return factory(read_only=read_only)

    yield Factory(kind, db_path)
    for store in opened:
        await store.close()


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test's cache directory (the status index) under its own temporary directory, never
    the user's ``~/.cache``; the index switched on, as a user finds it."""
    from agenttui.runs.statuses import index as status_index

    cache = tmp_path_factory.mktemp("xdg-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setattr(status_index._Switch, "off", False)
    return cache


@pytest.fixture(autouse=True)
def no_user_config(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test reads a config file of its own (none, until it writes one), never the user's
    ``~/.config/agenttui/config.toml``: its path, and the process's reading of it forgotten."""
    from agenttui.config import CONFIG_ENV, user_config

    path = tmp_path_factory.mktemp("xdg-config") / "config.toml"
    monkeypatch.setenv(CONFIG_ENV, str(path))
    user_config.cache_clear()
    return path


@pytest.fixture
async def store(make_store: StoreFactory) -> Store:
    """A writable store of each kind."""
    return await make_store()

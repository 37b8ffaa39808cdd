"""``agenttui demo``: build the demo store in a SQLite file or a PostgreSQL schema, never over
someone's real runs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from agenttui.demo.build import build_demo, is_demo_run
from agenttui.errors import AgentTuiError, ConfigError, StoreURLError
from agenttui.journal.keys import root_run_id
from agenttui.stores import describe_url, open_store, sqlite_path
from agenttui.stores.base import Store
from agenttui.stores.files import check_replaceable, is_regular_file, partial_path, place_file, remove_own_file
from agenttui.stores.sqlite import SQLiteStore


async def build_demo_at(
    url: str, *, bulk_turns: int, echo: Callable[[str], None], force: bool = False, fresh: bool = False
) -> None:
    """Build the demo where ``url`` says: a SQLite file (``build_demo_store``) or a PostgreSQL
    schema (``build_demo_schema``); where it stands already, it is left as it stands unless
    ``fresh``. Raises ``StoreURLError`` for a URL naming neither."""
    if url.strip() == "memory:":
        raise StoreURLError("the demo needs a store the TUI can open after it is built: a file or postgresql://")
    path = sqlite_path(url)
    if path is not None:
        await build_demo_store(path, bulk_turns=bulk_turns, echo=echo, force=force, fresh=fresh)
    else:
        await build_demo_schema(url, bulk_turns=bulk_turns, echo=echo, force=force, fresh=fresh)


async def build_demo_store(
    path: Path, *, bulk_turns: int, echo: Callable[[str], None], force: bool = False, fresh: bool = False
) -> None:
    """Write the demo store at ``path``, unless the demo is there already: then it is opened as
    it stands, with what a person did in it (``fresh`` rebuilds it).

    A file already there is replaced only if it is a demo store agenttui made and ``fresh`` asks
    for it, or with ``force`` a file that is no journal (``stores.files``): ``--path orders.db``
    must never delete a journal of real runs. The store is built under a temporary name and moved
    into place once whole.
    """
    demo = await is_demo_store(path)  # read once: it opens the file
    if demo and not fresh:
        echo(f"{path} already holds the demo: opening it as it stands (--fresh rebuilds it)")
        return
    target = await check_replaceable(path, force=force or demo, ours=demo)
    echo(f"building the demo store at {path} …")
    partial = await asyncio.to_thread(partial_path, target)
    try:
        store = await SQLiteStore.open(partial)
        try:
            await _build(store, bulk_turns, echo)
        finally:
            await store.close()
        await asyncio.to_thread(place_file, partial, target, force=True)  # checked above
    except BaseException:
        remove_own_file(partial)
        raise


async def build_demo_schema(
    url: str, *, bulk_turns: int, echo: Callable[[str], None], force: bool = False, fresh: bool = False
) -> None:
    """Build the demo in the PostgreSQL schema ``url`` names (created if missing).

    A schema holding no runs gets the demo; one holding the demo already is left as it stands
    (the TUI opens it); one holding any other run is refused. Nothing is ever deleted from a
    database, ``force``, ``fresh`` or not: a journal is append-only, and its runs may be someone's
    real ones.
    """
    shown = describe_url(url)
    if force or fresh:
        raise ConfigError(
            f"--{'force' if force else 'fresh'} replaces a demo SQLite file; a PostgreSQL schema is never emptied: "
            "name a fresh one with ?schema= (or drop it yourself)"
        )
    store = await open_store(url)
    try:
        roots = await _roots(store)
        if roots and not all(is_demo_run(run_id) for run_id in roots):
            others = sorted(run_id for run_id in roots if not is_demo_run(run_id))
            raise ConfigError(
                f"{shown} already holds {len(others)} runs that are not the demo's (such as {others[0]!r}): "
                "name a schema of its own with ?schema=, e.g. ?schema=agenttui_demo"
            )
        if roots:
            echo(f"{shown} already holds the demo: opening it as it stands (?schema= another name for a fresh one)")
            return
        echo(f"building the demo in {shown} …")
        await _build(store, bulk_turns, echo)
    finally:
        await store.close()


async def _build(store: Store, bulk_turns: int, echo: Callable[[str], None]) -> None:
    runs = await build_demo(store, bulk_turns=bulk_turns)
    echo(f"{len(runs)} runs written: " + ", ".join(f"{r.run_id} ({r.expected.value})" for r in runs))


async def _roots(store: Store) -> set[str]:
    return {root_run_id(run_id) async for run_id in store.runs()}


async def is_demo_store(path: Path) -> bool:
    """Whether ``path`` is a journal holding the demo's runs and nothing else (a regular file:
    opening a FIFO would wait for a writer, and a link is not the demo's to follow)."""
    if not is_regular_file(path):
        return False
    try:
        store = await SQLiteStore.open(path, read_only=True)
    except AgentTuiError:
        return False  # not a journal at all
    try:
        roots = await _roots(store)
    finally:
        await store.close()
    return bool(roots) and all(is_demo_run(run_id) for run_id in roots)

"""``agenttui demo``: build the demo SQLite store, replacing an earlier demo store only."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agenttui.demo.build import build_demo, is_demo_run
from agenttui.errors import AgentTuiError, ConfigError
from agenttui.journal.keys import root_run_id
from agenttui.stores.sqlite import SQLiteStore


async def build_demo_store(path: Path, *, bulk_turns: int, echo: Callable[[str], None], force: bool = False) -> None:
    """Write a fresh demo store at ``path``.

    A file already there is replaced only if it is a demo store agenttui made (or ``force``):
    ``--path orders.db`` must never delete a journal of real runs.
    """
    if path.exists() and not force and not await is_demo_store(path):  # noqa: ASYNC240  (one stat, before any task runs)
        raise ConfigError(
            f"{path} exists and is not a demo store agenttui made: give another --path, or --force to replace it"
        )
    for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        stale.unlink(missing_ok=True)
    echo(f"building the demo store at {path} …")
    store = await SQLiteStore.open(path)
    try:
        runs = await build_demo(store, bulk_turns=bulk_turns)
    finally:
        await store.close()
    echo(f"{len(runs)} runs written: " + ", ".join(f"{r.run_id} ({r.expected.value})" for r in runs))


async def is_demo_store(path: Path) -> bool:
    """Whether ``path`` is a journal holding the demo's runs and nothing else."""
    try:
        store = await SQLiteStore.open(path, read_only=True)
    except AgentTuiError:
        return False  # not a journal at all
    try:
        roots = {root_run_id(run_id) async for run_id in store.runs()}
    finally:
        await store.close()
    return bool(roots) and all(is_demo_run(run_id) for run_id in roots)

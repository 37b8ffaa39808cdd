"""``agenttui demo``: build the demo SQLite store, replacing an earlier one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agenttui.demo.build import build_demo
from agenttui.stores.sqlite import SQLiteStore


async def build_demo_store(path: Path, *, bulk_turns: int, echo: Callable[[str], None]) -> None:
    """Write a fresh demo store at ``path`` (an earlier demo file there is replaced)."""
    for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        stale.unlink(missing_ok=True)
    echo(f"building the demo store at {path} …")
    store = await SQLiteStore.open(path)
    try:
        runs = await build_demo(store, bulk_turns=bulk_turns)
    finally:
        await store.close()
    echo(f"{len(runs)} runs written: " + ", ".join(f"{r.run_id} ({r.expected.value})" for r in runs))

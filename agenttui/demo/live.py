"""``python -m agenttui.demo.live [STORE]``: keep one demo run in flight until terminated.

A separate process, so the TUI tails commits made by someone else, as it would in production.
The store is ``AGENTTUI_DEMO_STORE`` when set (how ``agenttui demo`` passes it: a PostgreSQL
URL's password stays out of the process's arguments), else the argument.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from agenttui.demo.build import write_live_run
from agenttui.stores import open_store


async def main(url: str) -> None:
    store = await open_store(url)
    try:
        await write_live_run(store, run_id=f"live-tail-{os.getpid()}")
    finally:
        await store.close()


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        asyncio.run(main(os.environ.get("AGENTTUI_DEMO_STORE") or sys.argv[1]))
    except (KeyboardInterrupt, SystemExit):
        pass

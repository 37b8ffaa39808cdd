"""``agenttui mcp STORE``: the MCP server a coding agent debugs runs through, over stdio.

A thin front end over the same core functions as the CLI and the TUI: the read tools
(``reads``), what they read (``reading``), answers made inert and fitted to a budget
(``answers``), the one way an answer or a failure reaches the agent (``served``). Read-only
unless started with ``--allow-writes``: only then are the write tools listed, each a dry run
unless asked otherwise (``writes``). stdout carries the protocol alone; what the server has to
say goes to stderr.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from agenttui.mcp_server.answers import LEAST_BUDGET
from agenttui.mcp_server.reading import RunRecords
from agenttui.mcp_server.served import Served
from agenttui.stores.base import Store

INSTRUCTIONS = """\
agenttui reads durable agent runs from a journal store (SQLite or PostgreSQL), offline.
Start with list_runs (filter by status, or a --where expression such as
"status=halted and tool=refund_payment"), then run_overview for one run: its status, why,
what it waits on, and whether it replays. run_records outlines a run record by record;
read_record and conversation read one record or the conversation in full. fork_run asks
"what if this tool had returned X" in a scratch store: nothing is written to the user's store.
Every answer fits a byte budget; a cut value says how to read the rest."""


def build_server(served: Served, *, allow_writes: bool, agent_spec: str | None) -> MCPServer:
    """The server over ``served``'s store: the read tools, the run resource, and, with
    ``allow_writes``, the write tools."""
    from agenttui import __version__
    from agenttui.mcp_server.reads import add_read_tools

    server = MCPServer("agenttui", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    add_read_tools(server, served)
    if allow_writes:
        from agenttui.mcp_server.writes import add_write_tools

        add_write_tools(server, served, agent_spec)
    return server


async def serve(store_url: str, *, allow_writes: bool, agent_spec: str | None, budget: int) -> None:
    """Serve the store over stdio until the client goes (the store opened read-only: a write
    tool opens it for writing for its one write)."""
    from agenttui.stores import open_store

    store = await open_store(store_url, read_only=True, create=False)
    try:
        await _ready_for_the_first_call(store)
        served = Served(store, store_url, RunRecords(store), max(LEAST_BUDGET, budget))
        await build_server(served, allow_writes=allow_writes, agent_spec=agent_spec).run_stdio_async()
    finally:
        await store.close()


async def _ready_for_the_first_call(store: Store) -> None:
    """Import what the run list reads and open the store's status index before serving: a
    server starts once a session, and an agent's first call is the one a person waits on."""
    import agenttui.replay.reports
    import agenttui.runs.selection.where  # noqa: F401  (imported for its time, not a name)
    from agenttui.runs.statuses.status import statuses_kept

    await statuses_kept(store)

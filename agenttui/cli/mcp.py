"""``agenttui mcp``: serve a store to a coding agent over the Model Context Protocol (stdio)."""

from __future__ import annotations

import click

from agenttui.cli.app import agent_option, fail, main, run_async
from agenttui.mcp_server.answers import DEFAULT_BUDGET, LEAST_BUDGET


@main.command("mcp")
@click.argument("store")
@click.option("--allow-writes", is_flag=True,
              help="List the write tools (approve, deny, answer, resolve, cancel; redrive with --agent): "
                   "each a dry run unless called with dry_run false.")  # fmt: skip
@agent_option
@click.option("--budget", type=int, default=DEFAULT_BUDGET, show_default=True, metavar="BYTES",
              help="An answer's size at most, in bytes of JSON, when the tool call sets none.")  # fmt: skip
@run_async
async def mcp_command(store: str, allow_writes: bool, agent_spec: str | None, budget: int) -> None:
    """Serve STORE to a coding agent over MCP, on stdio: list runs, read one, its records and
    conversation, replay it, fork it with a changed tool result in a scratch store, compare runs,
    draw its flowchart. Read-only unless --allow-writes. stdout carries the protocol alone.

    \b
    Register it with a client, e.g. Claude Code:
      claude mcp add agenttui -- agenttui mcp /path/to/journal.db
    """
    from agenttui.mcp_server.server import serve

    if agent_spec is not None and not allow_writes:
        fail("--agent gives the redrive tool, a write: add --allow-writes")
    if budget < LEAST_BUDGET:
        fail(f"--budget {budget}: at least {LEAST_BUDGET:,} bytes")
    await serve(store, allow_writes=allow_writes, agent_spec=agent_spec, budget=budget)

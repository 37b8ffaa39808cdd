"""The write tools of ``agenttui mcp --allow-writes``: approve, deny, answer, resolve, cancel and
(given ``--agent``) redrive, each the CLI's own operation (``runs.operations``).

Each is a dry run unless called with ``dry_run`` false: it says what it would write, the CLI
command that does the same and the run's status now, and writes nothing. A real write opens the
store for writing for that write alone and applies the operation as the CLI does: checked
against the run under its lease, through the journal's at-most-once insert. Each write is told
on stderr, what was written and to which run.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

from mcp_types import ToolAnnotations
from pydantic import Field

from agenttui.agent.pauses import AlreadyDecided
from agenttui.journal.inert import printable
from agenttui.mcp_server.answers import fit
from agenttui.mcp_server.reading import status_line
from agenttui.mcp_server.server import RunId, Served, answered

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from agenttui.runs.operations import Operation

DryRun = Annotated[bool, Field(description="Say what would be written, and write nothing (the default).")]

WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


async def preview_or_apply(served: Served, run_id: str, operation: Operation, dry_run: bool) -> dict[str, Any]:
    """A dry run's preview, or the operation applied (the CLI's way: its own writable store,
    the run's lease, the at-most-once insert)."""
    from agenttui.runs.status import statuses
    from agenttui.stores import open_store

    (status,) = await statuses(served.store, [run_id])
    if dry_run:
        answer = {
            "dry_run": True, "written": None, "would": operation.title, "would_write": operation.will_write(),
            "command": operation.command(served.store_url), "status": status_line(status),
            "note": "nothing was written; call again with dry_run false to write it (the run is checked again then)",
        }  # fmt: skip
        return fit(answer, served.budget, read_more="")
    store = await open_store(served.store_url, read_only=False, create=False)
    try:
        written = await operation.apply(store)
    except AlreadyDecided as decided:
        return fit({"dry_run": False, "written": None, "already_decided": decided.message}, served.budget, read_more="")
    finally:
        await store.close()
    served.records.forget(run_id)
    print(f"agenttui mcp: {printable(operation.title)}: {printable(written)}", file=sys.stderr, flush=True)
    return fit({"dry_run": False, "written": written}, served.budget, read_more="")


def add_write_tools(server: MCPServer, served: Served, agent_spec: str | None) -> None:
    from agenttui.runs.operations import Answer, Cancel, Decide, Redrive, Resolve, parse_value

    @server.tool(annotations=WRITES)
    @answered
    async def approve(
        run_id: RunId, call: Annotated[str, Field(description="The call awaiting approval (tool_use_id).")],
        approver: str = "", dry_run: DryRun = True,
    ) -> dict[str, Any]:  # fmt: skip
        """Approve a call of a run awaiting approval: writes approval:CALL, approved (the next
        drive runs the call)."""
        return await preview_or_apply(served, run_id, Decide(run_id, call, True, approver), dry_run)

    @server.tool(annotations=WRITES)
    @answered
    async def deny(
        run_id: RunId, call: Annotated[str, Field(description="The call awaiting approval (tool_use_id).")],
        approver: str = "", dry_run: DryRun = True,
    ) -> dict[str, Any]:  # fmt: skip
        """Deny a call of a run awaiting approval: writes approval:CALL, denied."""
        return await preview_or_apply(served, run_id, Decide(run_id, call, False, approver), dry_run)

    @server.tool(annotations=WRITES)
    @answered
    async def answer(
        run_id: RunId, name: Annotated[str, Field(description="The interrupt the run waits on.")],
        value_json: Annotated[str, Field(description="The answer as JSON (plain text is taken as a string).")],
        dry_run: DryRun = True,
    ) -> dict[str, Any]:  # fmt: skip
        """Answer the interrupt a run awaiting input waits on: writes interrupt:NAME, VALUE."""
        return await preview_or_apply(
            served, run_id, Answer(run_id, name, parse_value(value_json, json_only=False)), dry_run
        )

    @server.tool(annotations=WRITES)
    @answered
    async def resolve(
        run_id: RunId, call: Annotated[str, Field(description="The halted call (tool_use_id).")],
        fired: Annotated[bool, Field(description="Whether the call's effect happened.")],
        result_json: Annotated[str | None, Field(description="fired: the call's result, as JSON.")] = None,
        dry_run: DryRun = True,
    ) -> dict[str, Any]:  # fmt: skip
        """Resolve a halted call whose outcome was unknown: fired writes tool:CALL with the
        result, marked reconciled; not fired voids the attempt (the next drive retries it)."""
        from mcp.server.mcpserver.exceptions import ToolError

        if fired and result_json is None:
            raise ToolError("fired needs the call's result: give result_json (null for none)")
        if not fired and result_json is not None:
            raise ToolError("a call that did not fire has no result: give no result_json")
        value = None if result_json is None else parse_value(result_json, json_only=True)
        return await preview_or_apply(served, run_id, Resolve(run_id, call, fired, value), dry_run)

    @server.tool(annotations=WRITES.model_copy(update={"destructive_hint": True}))
    @answered
    async def cancel(run_id: RunId, reason: str = "", dry_run: DryRun = True) -> dict[str, Any]:
        """Cancel a run: writes run:cancelled (the run does not go on)."""
        return await preview_or_apply(served, run_id, Cancel(run_id, reason), dry_run)

    if agent_spec is None:
        return
    from agenttui.agent.factory import load_factory

    factory = load_factory(agent_spec)

    @server.tool(annotations=WRITES.model_copy(update={"idempotent_hint": False, "open_world_hint": True}))
    @answered
    async def redrive(run_id: RunId, dry_run: DryRun = True) -> dict[str, Any]:
        """Drive a run forward with the server's agent (--agent), under its lease: its model and
        tools run for real, side effects and all."""
        return await preview_or_apply(served, run_id, Redrive(run_id, agent_spec, factory), dry_run)

"""The write tools of ``agenttui mcp --allow-writes``: approve, deny, answer, resolve, cancel and
(given ``--agent``) redrive, each the CLI's own operation (``runs.operations``), on one run or,
given ``where``, on every run a filter selects (``runs.batch``, the CLI's ``--where``).

Each is a dry run unless called with ``dry_run`` false: it says what it would write, the CLI
command that does the same and the runs' statuses now, and writes nothing. A real write opens
the store for writing for that write alone and applies the operation as the CLI does: checked
against the run under its lease, through the journal's at-most-once insert. Each write is told
on stderr, what was written and to which run.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from agenttui.agent.pauses import AlreadyDecided
from agenttui.journal.inert import printable
from agenttui.mcp_server.answers import fit, take_fitting
from agenttui.mcp_server.reading import status_line
from agenttui.mcp_server.served import Served, answered

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from agenttui.runs.recovery.operations import Operation
    from agenttui.runs.selection.batch import BulkAction
    from agenttui.runs.statuses.status import RunStatus

DryRun = Annotated[bool, Field(description="Say what would be written, and write nothing (the default).")]
OneRun = Annotated[str | None, Field(description="The run's id (or give where instead).")]
Where = Annotated[
    str | None,
    Field(
        description="Instead of run_id: every run this filter selects (status=halted and tool=charge), each its own call."
    ),
]

WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def _one_or_many(run_id: str | None, where: str | None, **named: str | None) -> None:
    """Refuse a call that names its run and selects with ``where`` too, or misses either."""
    if (run_id is None) == (where is None):
        raise ToolError("give run_id, or where to select runs by a filter (one of them)")
    if where is None and (missing := [name for name, value in named.items() if value is None]):
        raise ToolError(f"with run_id, give {' and '.join(missing)} too")


async def preview_or_apply(served: Served, operation: Operation, status: RunStatus, dry_run: bool) -> dict[str, Any]:
    """A dry run's preview, or the operation applied (the CLI's way: its own writable store,
    the run's lease, the at-most-once insert)."""
    from agenttui.runs.recovery.operations import planned
    from agenttui.stores import open_store

    if dry_run:
        operation = await planned(served.store, operation)
        answer = {
            "dry_run": True, "written": None, "would": operation.title, "would_write": operation.will_write(),
            "command": operation.command(served.shown_url), "status": status_line(status),
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
    served.records.forget(status.run_id)
    print(f"agenttui mcp: {printable(operation.title)}: {printable(written)}", file=sys.stderr, flush=True)
    return fit({"dry_run": False, "written": written}, served.budget, read_more="")


async def on_one_run(served: Served, run_id: str, operation: Operation, dry_run: bool) -> dict[str, Any]:
    from agenttui.runs.statuses.status import statuses

    (status,) = await statuses(served.store, [run_id])
    return await preview_or_apply(served, operation, status, dry_run)


async def on_selected_runs(served: Served, where: str, action: BulkAction, dry_run: bool) -> dict[str, Any]:
    """The CLI's ``--where``: every run the filter selects, previewed, or applied run by run,
    each under its lease and checked again under it."""
    from agenttui.runs.selection.batch import (
        Tally,
        apply_selection,
        outcome_json,
        planned_selection,
        select,
        selection_json,
        summary_json,
    )
    from agenttui.runs.selection.where import parse_where
    from agenttui.stores import open_store

    selection = await select(served.store, action, where=parse_where(where))
    if not selection.matched:
        raise ToolError(f"no run matches {where!r} ({selection.read:,} runs read)")
    if dry_run:
        preview = selection_json(await planned_selection(served.store, selection), served.shown_url)
        preview["runs"] = take_fitting(preview["runs"], served.budget // 2)
        return fit({"dry_run": True, **preview}, served.budget, read_more="list_runs with the filter lists them all")
    store = await open_store(served.store_url, read_only=False, create=False)
    tally, outcomes = Tally(), []
    try:
        async for outcome in apply_selection(store, selection):
            tally.add(outcome)
            outcomes.append(outcome_json(outcome))
            served.records.forget(outcome.run_id)
            said = f"{action.verb} {outcome.run_id}: {outcome.result}: {outcome.detail}"
            print(f"agenttui mcp: {printable(said)}", file=sys.stderr, flush=True)
    finally:
        await store.close()
    answer = {
        "dry_run": False,
        "summary": summary_json(tally, selection),
        "runs": take_fitting(outcomes, served.budget // 2),
    }
    return fit(answer, served.budget, read_more="list_runs shows each run's status now")


def add_write_tools(server: MCPServer, served: Served, agent_spec: str | None) -> None:
    from agenttui.runs.recovery.operations import Answer, Cancel, Decide, Redrive, Resolve, parse_value
    from agenttui.runs.selection.batch import AnswerRuns, CancelRuns, DecideRuns, RedriveRuns, ResolveRuns

    async def decide(run_id: str | None, call: str | None, where: str | None, approved: bool, approver: str,
                     dry_run: bool) -> dict[str, Any]:  # fmt: skip
        _one_or_many(run_id, where, call=call)
        if where is not None:
            return await on_selected_runs(served, where, DecideRuns(approved, approver), dry_run)
        assert run_id is not None and call is not None
        return await on_one_run(served, run_id, Decide(run_id, call, approved, approver), dry_run)

    @server.tool(annotations=WRITES, structured_output=False)
    @answered
    async def approve(
        run_id: OneRun = None, call: Annotated[str | None, Field(description="The call awaiting approval.")] = None,
        where: Where = None, approver: str = "", dry_run: DryRun = True,
    ) -> dict[str, Any]:  # fmt: skip
        """Approve a call of a run awaiting approval: writes approval:CALL, approved (the next
        drive runs the call). With where: the call each selected run awaits approval for."""
        return await decide(run_id, call, where, True, approver, dry_run)

    @server.tool(annotations=WRITES, structured_output=False)
    @answered
    async def deny(
        run_id: OneRun = None, call: Annotated[str | None, Field(description="The call awaiting approval.")] = None,
        where: Where = None, approver: str = "", dry_run: DryRun = True,
    ) -> dict[str, Any]:  # fmt: skip
        """Deny a call of a run awaiting approval: writes approval:CALL, denied. With where: the
        call each selected run awaits approval for."""
        return await decide(run_id, call, where, False, approver, dry_run)

    @server.tool(annotations=WRITES, structured_output=False)
    @answered
    async def answer(
        value_json: Annotated[str, Field(description="The answer as JSON (plain text is taken as a string).")],
        run_id: OneRun = None, name: Annotated[str | None, Field(description="The interrupt the run waits on.")] = None,
        where: Where = None, dry_run: DryRun = True,
    ) -> dict[str, Any]:  # fmt: skip
        """Answer the interrupt a run awaiting input waits on: writes interrupt:NAME, VALUE. With
        where: each selected run's own question (only those named name, if given)."""
        value = parse_value(value_json, json_only=False)
        if where is not None and run_id is None:
            return await on_selected_runs(served, where, AnswerRuns(value, name or ""), dry_run)
        _one_or_many(run_id, where, name=name)
        assert run_id is not None and name is not None
        return await on_one_run(served, run_id, Answer(run_id, name, value), dry_run)

    @server.tool(annotations=WRITES, structured_output=False)
    @answered
    async def resolve(
        fired: Annotated[bool, Field(description="Whether the call's effect happened.")],
        run_id: OneRun = None, call: Annotated[str | None, Field(description="The halted call.")] = None,
        # Exactly str (not str | None): the SDK parses JSON text given for any other type, which
        # made "null" no result and an object's text a dict the type refused.
        result_json: Annotated[
            str, Field(description='fired: the call\'s result as JSON text: "null", "[1, 2]", "{\\"id\\": 1}" ("" for none).')
        ] = "",
        where: Where = None, dry_run: DryRun = True,
    ) -> dict[str, Any]:  # fmt: skip
        """Resolve a halted call whose outcome was unknown: fired writes tool:CALL with the
        result, marked reconciled; not fired voids the attempt (the next drive retries it). With
        where: the halted call of each selected run."""
        if fired and not result_json:
            raise ToolError('fired needs the call\'s result: give result_json (the text "null" for a null result)')
        if not fired and result_json:
            raise ToolError("a call that did not fire has no result: give no result_json")
        value = parse_value(result_json, json_only=True) if result_json else None
        _one_or_many(run_id, where, call=call)
        if where is not None:
            return await on_selected_runs(served, where, ResolveRuns(fired, value), dry_run)
        assert run_id is not None and call is not None
        return await on_one_run(served, run_id, Resolve(run_id, call, fired, value), dry_run)

    @server.tool(annotations=WRITES.model_copy(update={"destructive_hint": True}), structured_output=False)
    @answered
    async def cancel(
        run_id: OneRun = None, where: Where = None, reason: str = "", dry_run: DryRun = True
    ) -> dict[str, Any]:
        """Cancel a run: writes run:cancelled (the run does not go on). With where: every
        selected run that can be cancelled."""
        _one_or_many(run_id, where)
        if where is not None:
            return await on_selected_runs(served, where, CancelRuns(reason), dry_run)
        assert run_id is not None
        return await on_one_run(served, run_id, Cancel(run_id, reason), dry_run)

    if agent_spec is None:
        return
    from agenttui.agent.factory import load_factory

    factory = load_factory(agent_spec)

    @server.tool(
        annotations=WRITES.model_copy(update={"idempotent_hint": False, "open_world_hint": True}),
        structured_output=False,
    )
    @answered
    async def redrive(run_id: OneRun = None, where: Where = None, dry_run: DryRun = True) -> dict[str, Any]:
        """Drive a run forward with the server's agent (--agent), under its lease: its model and
        tools run for real, side effects and all. With where: every selected run that can be."""
        _one_or_many(run_id, where)
        if where is not None:
            return await on_selected_runs(served, where, RedriveRuns(agent_spec, factory), dry_run)
        assert run_id is not None
        return await on_one_run(served, run_id, Redrive(run_id, agent_spec, factory), dry_run)

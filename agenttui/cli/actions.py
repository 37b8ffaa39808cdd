"""The commands that write to a store, each only what it names, under the run's lease:
``approve``, ``deny``, ``answer``, ``resolve``, ``cancel``, ``redrive``, ``recover``, ``release``."""

from __future__ import annotations

import sys
from typing import Any

import click

from agenttui.cli.app import EXIT_RUNS_FAILED, fail, main, run_async, with_store
from agenttui.journal.inert import printable
from agenttui.stores.base import LeaseInfo, Store


async def apply_operation(store: str, operation: Any) -> None:
    """Open the store for writing only for this operation, apply it, print what it did."""
    message = await with_store(store, operation.apply, read_only=False)
    click.echo(printable(message, multiline=True))  # it may quote the store: lease holders, run ids


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.argument("call")
@click.option("--approver", default="", help="Who approves (recorded on the decision).")
@run_async
async def approve(store: str, run_id: str, call: str, approver: str) -> None:
    """Approve call CALL of a run awaiting approval: writes approval:CALL, approved (the next drive runs the call)."""
    from agenttui.runs.operations import Decide

    await apply_operation(store, Decide(run_id, call, True, approver))


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.argument("call")
@click.option("--approver", default="", help="Who denies (recorded on the decision).")
@run_async
async def deny(store: str, run_id: str, call: str, approver: str) -> None:
    """Deny call CALL of a run awaiting approval: writes approval:CALL, denied (the decision alone: the next drive
    records the denial as the call's result)."""
    from agenttui.runs.operations import Decide

    await apply_operation(store, Decide(run_id, call, False, approver))


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.argument("name")
@click.argument("value")
@run_async
async def answer(store: str, run_id: str, name: str, value: str) -> None:
    """Answer interrupt NAME, the one the run waits on: writes interrupt:NAME, VALUE (JSON, or plain text as a string)."""
    from agenttui.runs.operations import Answer, parse_value

    await apply_operation(store, Answer(run_id, name, parse_value(value, json_only=False)))


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.argument("call")
@click.option("--fired", is_flag=True, help="The call's effect happened (give its --result or --result-text).")
@click.option("--not-fired", is_flag=True, help="The call's effect did not happen: the next drive retries it.")
@click.option("--result", metavar="JSON", help="With --fired: the call's result, as JSON.")
@click.option("--result-text", metavar="TEXT", help="With --fired: the call's result, recorded as a JSON string.")
@run_async
async def resolve(
    store: str, run_id: str, call: str, fired: bool, not_fired: bool, result: str | None, result_text: str | None
) -> None:
    """Resolve a halted call whose outcome was unknown. --fired: writes tool:CALL, the result you give, marked
    reconciled. --not-fired: writes a not_started record voiding the attempt (the next drive retries the call)."""
    from agenttui.runs.operations import Resolve, parse_value

    if fired == not_fired:
        fail("say what happened: --fired or --not-fired, one of them")
    if not_fired and (result is not None or result_text is not None):
        fail("--result and --result-text go with --fired: a call that did not fire has no result")
    if fired and result is None and result_text is None:
        # Recorded for good as the call's result: a forgotten option must not become a null.
        fail(
            "--fired needs the call's result: give it with --result JSON or --result-text TEXT (--result null for none)"
        )
    if result is not None and result_text is not None:
        fail("--result or --result-text, not both")
    value = (
        result_text if result_text is not None else parse_value(result, json_only=True) if result is not None else None
    )
    await apply_operation(store, Resolve(run_id, call, fired, value))


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.option("--reason", default="", help="Why (recorded in run:cancelled).")
@run_async
async def cancel(store: str, run_id: str, reason: str) -> None:
    """Cancel a run: writes run:cancelled."""
    from agenttui.runs.operations import Cancel

    await apply_operation(store, Cancel(run_id, reason))


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.option("--agent", "agent_spec", required=True, metavar="MODULE:FACTORY", help="Your agent factory.")
@run_async
async def redrive(store: str, run_id: str, agent_spec: str) -> None:
    """Drive one run forward with your agent, under its lease: writes its next steps as your agent takes them."""
    from agenttui.agent.factory import load_factory
    from agenttui.runs.operations import Redrive

    await apply_operation(store, Redrive(run_id, agent_spec, load_factory(agent_spec)))


@main.command("recover")
@click.argument("store")
@click.option("--agent", "agent_spec", required=True, metavar="MODULE:FACTORY", help="Your agent factory.")
@run_async
async def recover_command(store: str, agent_spec: str) -> None:
    """Re-drive every unfinished run, each under its lease (pauses count as recovered): writes each run's
    next steps as your agent takes them.

    Exits 5 when any run failed; the report names each.
    """
    from agenttui.agent.factory import load_factory
    from agenttui.runs.operations import RecoverAll, report_lines

    report = await with_store(store, RecoverAll(agent_spec, load_factory(agent_spec)).run, read_only=False)
    click.echo(printable("\n".join(report_lines(report)), multiline=True))  # run ids and errors quote the store
    if report.errors:
        sys.exit(EXIT_RUNS_FAILED)


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.option(
    "--force", is_flag=True, help="Break a live lease (its driver is gone); shows holder and expiry and asks first."
)
@click.option("--yes", is_flag=True, help="With --force: do not ask.")
@run_async
async def release(store: str, run_id: str, force: bool, yes: bool) -> None:
    """Release a run's lapsed lease: deletes its lease row, the journal untouched (refused while the lease is
    live, unless --force)."""
    from agenttui.journal.keys import root_run_id
    from agenttui.runs.operations import ReleaseLease

    operation = ReleaseLease(run_id)
    if force:

        async def lease_row(opened: Store) -> LeaseInfo | None:
            return await opened.get_lease(root_run_id(run_id)) if opened.IMPLEMENTS_LEASES else None

        current = await with_store(store, lease_row)
        operation = ReleaseLease(run_id, force=True, current=current)
        if current is not None and not yes:
            if not sys.stdin.isatty():
                fail("--force breaks a lease: confirm at a terminal, or add --yes")
            if not click.confirm(
                printable(operation.will_write(), multiline=True) + "\nBreak it?", default=False, err=True
            ):
                fail("nothing written")
    await apply_operation(store, operation)

"""The commands that write to a store, each only what it names, under the run's lease:
``approve``, ``deny``, ``answer``, ``resolve``, ``cancel``, ``redrive``, ``recover``, ``release``.

Each acts on one run, or, with ``--where EXPR``, on every run the filter selects: previewed
(nothing written) unless ``--yes``, then applied run by run (``runs.batch``)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import click

from agenttui.cli.app import (
    EXIT_NOT_FOUND,
    EXIT_RUNS_FAILED,
    fail,
    main,
    run_async,
    takes_view,
    with_store,
)
from agenttui.journal.inert import printable, safe_json
from agenttui.stores.base import LeaseInfo, Store

if TYPE_CHECKING:
    from agenttui.runs.recovery.recover import RecoverReport
    from agenttui.runs.selection.batch import BulkAction, Selection

F = TypeVar("F", bound=Callable[..., Any])


def selection_options(command: F) -> F:
    """``--where``, ``--view``, ``--yes`` and ``--json``: act on every run a filter selects, not
    one (a view's filter joins ``--where``'s, and the command sees the two as one)."""

    command = takes_view("where")(command)
    command = click.option(
        "--json", "as_json", is_flag=True,
        help="With --where: the preview as one JSON object; with --yes, each run's outcome as a JSON line.",
    )(command)  # fmt: skip
    command = click.option(
        "--yes", is_flag=True, help="With --where: apply it, run by run, each under its lease (without: a preview)."
    )(command)
    return click.option(
        "--where", metavar="EXPR",
        help="Every run the filter EXPR selects, in place of RUN_ID (docs/guide/filters.md); "
             "previews what it would write unless --yes.",
    )(command)  # fmt: skip


def _one_run(where: str | None, yes: bool, as_json: bool, **targets: str | None) -> None:
    """Refuse a command that names its run(s) and selects with ``--where`` too, or misses either."""
    given = [name.upper() for name, value in targets.items() if value is not None]
    if where is not None:
        if given:
            fail(f"--where selects the runs: give no {' or '.join(given)} with it")
        return
    if yes or as_json:
        fail("--yes and --json go with --where: they apply or show a selection")
    if missing := [name.upper() for name, value in targets.items() if value is None]:
        fail(f"give {' and '.join(missing)}, or select runs with --where EXPR")


async def act_on_selection(store: str, where_text: str, action: BulkAction, *, yes: bool, as_json: bool) -> None:
    """Preview ``action`` on every run ``where_text`` selects; with ``yes``, apply it."""
    from agenttui.runs.selection.batch import planned_selection, select
    from agenttui.runs.selection.where import parse_where
    from agenttui.stores import describe_url

    where = parse_where(where_text)  # a bad filter is refused before the store is opened
    shown_store = describe_url(store)

    async def body(opened: Store) -> None:
        selection = await select(opened, action, where=where)
        if not selection.matched:
            fail(f"no run matches {where.text!r} ({selection.read:,} runs read)", EXIT_NOT_FOUND)
        if not yes:
            _show_preview(await planned_selection(opened, selection), shown_store, as_json=as_json)
            return
        await _apply(opened, selection, shown_store, as_json=as_json)

    await with_store(store, body, read_only=not yes)


def _show_preview(selection: Selection, store: str, *, as_json: bool) -> None:
    from agenttui.runs.selection.batch import preview_lines, selection_json

    if as_json:
        click.echo(safe_json(selection_json(selection, store)))
        return
    click.echo(printable("\n".join(preview_lines(selection, store)), multiline=True))
    if selection.fitting:
        click.echo(f"nothing written. To apply:\n  {printable(selection.command(store))}")
    else:
        click.echo("nothing to apply.")


async def _apply(store: Store, selection: Selection, store_url: str, *, as_json: bool) -> None:
    """Apply, a line per run as each is done, then a summary; exit 5 when any run failed.
    Stopped (ctrl+c, SIGTERM), it says how far it got, and that running it again finishes it."""
    from agenttui.runs.selection.batch import (
        Tally,
        apply_selection,
        heading_lines,
        outcome_json,
        outcome_line,
        summary_json,
        summary_line,
        unfit_lines,
    )

    tally = Tally()
    verb = selection.action.verb
    if not as_json:
        click.echo(printable("\n".join(heading_lines(selection)), multiline=True))
    try:
        async for outcome in apply_selection(store, selection):
            tally.add(outcome)
            click.echo(safe_json(outcome_json(outcome), indent=None) if as_json else printable(outcome_line(outcome)))
    except (asyncio.CancelledError, KeyboardInterrupt):
        click.echo(printable(summary_line(verb, tally, selection, stopped=True)), err=True)
        raise
    if as_json:
        click.echo(safe_json({"summary": summary_json(tally, selection)}, indent=None))
    else:
        # The runs matched but left alone are named again last: a run a dead process's lease
        # still holds must not pass for done.
        click.echo(
            printable("\n".join([summary_line(verb, tally, selection), *unfit_lines(selection)]), multiline=True)
        )
    if tally.failed:
        sys.exit(EXIT_RUNS_FAILED)


async def apply_operation(store: str, operation: Any, *, planned: bool = False) -> None:
    """Open the store for writing only for this operation, apply it, print what it did;
    ``planned``, say first what it does first (a re-drive: the calls it runs)."""
    from agenttui.runs.recovery import operations

    async def body(opened: Store) -> str:
        if planned:
            shown = await operations.planned(opened, operation)
            click.echo(printable(shown.will_write(), multiline=True))
        message: str = await operation.apply(opened)
        return message

    message = await with_store(store, body, read_only=False)
    click.echo(printable(message, multiline=True))  # it may quote the store: lease holders, run ids


@main.command()
@click.argument("store")
@click.argument("run_id", required=False)
@click.argument("call", required=False)
@click.option("--approver", default="", help="Who approves (recorded on the decision).")
@selection_options
@run_async
async def approve(
    store: str, run_id: str | None, call: str | None, approver: str, where: str | None, yes: bool, as_json: bool
) -> None:
    """Approve call CALL of a run awaiting approval: writes approval:CALL, approved (the next drive runs the call).
    With --where: the call each selected run awaits approval for."""
    await _decide(store, run_id, call, True, approver, where, yes, as_json)


@main.command()
@click.argument("store")
@click.argument("run_id", required=False)
@click.argument("call", required=False)
@click.option("--approver", default="", help="Who denies (recorded on the decision).")
@selection_options
@run_async
async def deny(
    store: str, run_id: str | None, call: str | None, approver: str, where: str | None, yes: bool, as_json: bool
) -> None:
    """Deny call CALL of a run awaiting approval: writes approval:CALL, denied (the decision alone: the next drive
    records the denial as the call's result). With --where: the call each selected run awaits approval for."""
    await _decide(store, run_id, call, False, approver, where, yes, as_json)


async def _decide(
    store: str, run_id: str | None, call: str | None, approved: bool, approver: str,
    where: str | None, yes: bool, as_json: bool,
) -> None:  # fmt: skip
    from agenttui.runs.recovery.operations import Decide
    from agenttui.runs.selection.batch import DecideRuns

    _one_run(where, yes, as_json, run_id=run_id, call=call)
    if where is not None:
        await act_on_selection(store, where, DecideRuns(approved, approver), yes=yes, as_json=as_json)
        return
    assert run_id is not None and call is not None
    await apply_operation(store, Decide(run_id, call, approved, approver))


@main.command()
@click.argument("store")
@click.argument("run_id", required=False)
@click.argument("name", required=False)
@click.argument("value", required=False)
@selection_options
@run_async
async def answer(
    store: str, run_id: str | None, name: str | None, value: str | None, where: str | None, yes: bool, as_json: bool
) -> None:
    """Answer interrupt NAME, the one the run waits on: writes interrupt:NAME, VALUE (JSON, or plain text as a string).

    \b
    With --where, give VALUE alone (each selected run's own question), or NAME VALUE (runs waiting on NAME):
    agenttui answer STORE --where 'status=awaiting-input' '"yes"'
    """
    from agenttui.runs.recovery.operations import Answer, parse_value
    from agenttui.runs.selection.batch import AnswerRuns

    if where is not None:
        words = [word for word in (run_id, name, value) if word is not None]
        if not words or len(words) > 2:
            fail("with --where, give VALUE, or NAME VALUE (the runs are the ones the filter selects)")
        *named, typed = words
        action = AnswerRuns(parse_value(typed, json_only=False), named[0] if named else "")
        await act_on_selection(store, where, action, yes=yes, as_json=as_json)
        return
    _one_run(where, yes, as_json, run_id=run_id, name=name, value=value)
    assert run_id is not None and name is not None and value is not None
    await apply_operation(store, Answer(run_id, name, parse_value(value, json_only=False)))


@main.command()
@click.argument("store")
@click.argument("run_id", required=False)
@click.argument("call", required=False)
@click.option("--fired", is_flag=True, help="The call's effect happened (give its --result or --result-text).")
@click.option("--not-fired", is_flag=True, help="The call's effect did not happen: the next drive retries it.")
@click.option("--result", metavar="JSON", help="With --fired: the call's result, as JSON.")
@click.option("--result-text", metavar="TEXT", help="With --fired: the call's result, recorded as a JSON string.")
@selection_options
@run_async
async def resolve(
    store: str, run_id: str | None, call: str | None, fired: bool, not_fired: bool, result: str | None,
    result_text: str | None, where: str | None, yes: bool, as_json: bool,
) -> None:  # fmt: skip
    """Resolve a halted call whose outcome was unknown. --fired: writes tool:CALL, the result you give, marked
    reconciled. --not-fired: writes a not_started record voiding the attempt (the next drive retries the call).
    With --where: the halted call of each selected run."""
    from agenttui.runs.recovery.operations import Resolve, parse_value
    from agenttui.runs.selection.batch import ResolveRuns

    _one_run(where, yes, as_json, run_id=run_id, call=call)
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
    if where is not None:
        await act_on_selection(store, where, ResolveRuns(fired, value), yes=yes, as_json=as_json)
        return
    assert run_id is not None and call is not None
    await apply_operation(store, Resolve(run_id, call, fired, value))


@main.command()
@click.argument("store")
@click.argument("run_id", required=False)
@click.option("--reason", default="", help="Why (recorded in run:cancelled).")
@selection_options
@run_async
async def cancel(store: str, run_id: str | None, reason: str, where: str | None, yes: bool, as_json: bool) -> None:
    """Cancel a run: writes run:cancelled. With --where: every selected run that can be cancelled."""
    from agenttui.runs.recovery.operations import Cancel
    from agenttui.runs.selection.batch import CancelRuns

    _one_run(where, yes, as_json, run_id=run_id)
    if where is not None:
        await act_on_selection(store, where, CancelRuns(reason), yes=yes, as_json=as_json)
        return
    assert run_id is not None
    await apply_operation(store, Cancel(run_id, reason))


@main.command()
@click.argument("store")
@click.argument("run_id", required=False)
@click.option("--agent", "agent_spec", required=True, metavar="MODULE:FACTORY", help="Your agent factory.")
@selection_options
@run_async
async def redrive(store: str, run_id: str | None, agent_spec: str, where: str | None, yes: bool, as_json: bool) -> None:
    """Drive one run forward with your agent, under its lease: writes its next steps as your agent takes them.
    With --where: every selected run that can be driven, one at a time."""
    from agenttui.agent.factory import load_factory
    from agenttui.runs.recovery.operations import Redrive
    from agenttui.runs.selection.batch import RedriveRuns

    _one_run(where, yes, as_json, run_id=run_id)
    factory = load_factory(agent_spec)
    if where is not None:
        await act_on_selection(store, where, RedriveRuns(agent_spec, factory), yes=yes, as_json=as_json)
        return
    assert run_id is not None
    await apply_operation(store, Redrive(run_id, agent_spec, factory), planned=True)


@main.command("recover")
@click.argument("store")
@click.option("--agent", "agent_spec", required=True, metavar="MODULE:FACTORY", help="Your agent factory.")
@selection_options
@run_async
async def recover_command(store: str, agent_spec: str, where: str | None, yes: bool, as_json: bool) -> None:
    """Re-drive every unfinished run, each under its lease (pauses count as recovered): writes each run's
    next steps as your agent takes them. With --where: only the root runs the filter selects (a preview
    unless --yes).

    Exits 5 when any run failed; the report names each.
    """
    from agenttui.agent.factory import load_factory
    from agenttui.runs.recovery.operations import RecoverAll, first_call_lines, report_lines
    from agenttui.runs.recovery.recover import plan_recover
    from agenttui.runs.selection.batch import RedriveRuns

    _one_run(where, yes, as_json)
    if where is not None:
        action = RedriveRuns(agent_spec, load_factory(agent_spec), verb="recover")
        await act_on_selection(store, where, action, yes=yes, as_json=as_json)
        return
    recover_all = RecoverAll(agent_spec, load_factory(agent_spec))

    async def body(opened: Store) -> RecoverReport:
        # First, what runs a tool before its model is asked again (where a side effect may fire at
        # once), as the store stands; then every unfinished run, as the spec's Recover drives them.
        first = await replace(recover_all, plan=await plan_recover(opened)).planned(opened)
        if said := first_call_lines(first.first):
            click.echo(printable("\n".join(said), multiline=True))
        return await recover_all.run(opened)

    report = await with_store(store, body, read_only=False)
    click.echo(printable("\n".join(report_lines(report)), multiline=True))  # run ids and errors quote the store
    if report.errors:
        sys.exit(EXIT_RUNS_FAILED)


@main.command()
@click.argument("store")
@click.argument("run_id", required=False)
@click.option(
    "--force", is_flag=True, help="Break a live lease (its driver is gone); shows holder and expiry and asks first."
)
@click.option("--yes", is_flag=True, help="With --force: do not ask. With --where: apply (without: a preview).")
@click.option("--where", metavar="EXPR", help="Every run the filter EXPR selects, in place of RUN_ID.")
@takes_view("where")
@click.option("--json", "as_json", is_flag=True, help="With --where: the preview, or the outcomes, as JSON.")
@run_async
async def release(store: str, run_id: str | None, force: bool, yes: bool, where: str | None, as_json: bool) -> None:
    """Release a run's lapsed lease: deletes its lease row, the journal untouched (refused while the lease is
    live, unless --force). With --where: every selected run's lapsed lease (live ones too, with --force)."""
    from agenttui.journal.keys import root_run_id
    from agenttui.runs.recovery.operations import ReleaseLease
    from agenttui.runs.selection.batch import ReleaseRuns

    if where is not None:
        _one_run(where, yes, as_json, run_id=run_id)
        await act_on_selection(store, where, ReleaseRuns(force), yes=yes, as_json=as_json)
        return
    if as_json:
        fail("--json goes with --where")
    if run_id is None:
        fail("give RUN_ID, or select runs with --where EXPR")
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

"""``agenttui fork``: what-if replay, a run replayed with one recorded output changed."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agenttui.cli.app import agent_option, fail, main, open_for_command, run_async
from agenttui.journal.inert import printable, safe_json
from agenttui.stores import describe_url, sqlite_path
from agenttui.stores.files import check_replaceable

if TYPE_CHECKING:
    from agenttui.replay.fork import ForkSession, TurnSource
    from agenttui.replay.save import SaveFork
    from agenttui.stores.base import Store

#: The breakpoint grammar, as ``--help`` shows it (``agenttui.replay.breakpoints`` parses it;
#: it is not imported here: the replay package is not loaded until a replay runs).
GRAMMAR = """\
tool:NAME          a turn calls the tool NAME
call:NAME K=V ...  a call to NAME whose arguments hold K=V (V is JSON, else text)
kind:KIND          a record of this step kind is written (model, tool_result, approval, ...)
divergence         a record the replay writes is not the recording's
tokens>=N          the replay's token total reaches N"""

UNTIL_HELP = "Stop at a breakpoint (repeatable): tool:NAME, call:NAME K=V..., kind:KIND, divergence, tokens>=N."


@main.command("fork", epilog="\b\nBreakpoints (--until):\n" + textwrap.indent(GRAMMAR, "  "))
@click.argument("store")
@click.argument("run_id")
@click.option("--at", "at", required=True, metavar="NAME", help="The step to change: a model turn (@llm/N) or a tool result (tool:CALL).")  # fmt: skip
@click.option("--set", "value_file", required=True, type=click.File("r"), metavar="FILE|-",
              help="Its new value, JSON: a model turn's message, or the tool's result (- reads stdin).")  # fmt: skip
@click.option("--error/--no-error", "is_error", default=None, help="A tool result: mark it an error, or not (default: as recorded).")  # fmt: skip
@agent_option
@click.option("--live", is_flag=True, help="With --agent giving a model: go on live where the recording cannot answer.")  # fmt: skip
@click.option("--until", "until", multiple=True, metavar="BREAKPOINT", help=UNTIL_HELP)
@click.option("--into", "into", default=None, metavar="FILE.db", help="Save the fork as a run in a new SQLite file.")  # fmt: skip
@click.option("--force", is_flag=True, help="With --into: replace the file if it exists.")
@click.option("--save", is_flag=True, help="Save the fork as a new run <run>~fork-<n> in STORE (asks first).")
@click.option("--yes", is_flag=True, help="With --save: do not ask.")
@click.option("--json", "as_json", is_flag=True, help="The fork's outcome, turn by turn, as JSON.")
@run_async
async def fork_command(
    store: str, run_id: str, at: str, value_file: Any, is_error: bool | None, agent_spec: str | None, live: bool,
    until: tuple[str, ...], into: str | None, force: bool, save: bool, yes: bool, as_json: bool,
) -> None:  # fmt: skip
    """Replay a run with one recorded output changed: what if the model had said, or the tool
    had returned, something else?

    Turns before --at come from the recording, --at from --set, later turns from the recording
    for as long as the replayed loop asks what the recording holds. Where it asks anything else,
    the fork stops and says why, or with --live goes on with your agent's model (live turns are
    marked). Tools never go live: a fork fires no side effect. The fork lives in memory; --into
    or --save keeps it. STORE is never written to, except by --save.

    \b
    exit 0: the fork finished, paused (as the recording did), or stopped at a breakpoint
    exit 3: it stopped where the recording cannot answer (the reason names the turn)
    exit 2: a bad edit, breakpoint or option; a run the loop cannot re-drive
    """
    from agenttui.agent.factory import load_factory
    from agenttui.replay.breakpoints import parse_breakpoints
    from agenttui.replay.fork import fork_run
    from agenttui.replay.reports import fork_json

    breakpoints = parse_breakpoints(until)
    if save and into:
        fail("--save and --into: choose one place to keep the fork")
    if force and not into:
        fail("--force goes with --into")
    target = None if into is None else sqlite_path(into)
    if into is not None and target is None:
        fail(f"--into takes a new SQLite file, not {describe_url(into)}: --save keeps the fork in STORE itself")
    value = value_file.read()
    setup = load_factory(agent_spec)(run_id) if agent_spec else None
    source = await open_for_command(store, read_only=not save)
    try:
        if target is not None:  # refused before the replay, not after it
            await check_replaceable(target, force=force, protect=[source.file_path])
        fork = await fork_run(source, run_id, at, value, setup, is_error=is_error, live=live, until=breakpoints)
        try:
            saved = await _keep(fork, source, store, target, agent_spec or "", yes, force) if save or target else None
            records = await fork.replayed()
        finally:
            await fork.aclose()
    finally:
        await source.close()
    if as_json:
        click.echo(safe_json(fork_json(fork, records, saved)))
    else:
        _print(fork, saved)
    sys.exit(fork.exit_code)


async def _keep(
    fork: ForkSession, source: Store, store_url: str, target: Path | None, agent: str, yes: bool, force: bool
) -> str:
    """Save the fork into a new file, or, once confirmed, into the source store."""
    from agenttui.replay.save import plan_save, save_into_file

    if target is None:
        operation = await plan_save(fork, source, where="the source store", live_agent=agent)
        _confirm(operation, store_url, yes)
        return await operation.apply(source)
    return await save_into_file(fork, target, force=force, protect=[source.file_path], live_agent=agent)


def _confirm(operation: SaveFork, store_url: str, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        fail("--save writes a new run into STORE: confirm at a terminal, or add --yes")
    click.echo(printable(operation.will_write(), multiline=True), err=True)
    if not click.confirm("Write it?", default=False, err=True):
        fail("nothing saved")


def sources_line(sources: list[TurnSource]) -> str:
    """Where each turn came from, runs of turns folded: ``0-2 recording, 3 edit, 4-6 live``."""
    spans: list[str] = []
    start = 0
    for turn in range(1, len(sources) + 1):
        if turn == len(sources) or sources[turn] != sources[start]:
            span = str(start) if turn - 1 == start else f"{start}-{turn - 1}"
            spans.append(f"{span} {sources[start]}")
            start = turn
    return ", ".join(spans) or "none"


def _print(fork: ForkSession, saved: str | None) -> None:
    from agenttui.replay.fork import turn_sources

    progress = fork.progress
    what = "a model turn" if fork.edit.turn is not None else "a tool result"
    click.echo(printable(f"forked {fork.run_id} at {fork.edit.name} ({what}) with {fork.mode}"))
    click.echo(f"replayed {progress.turn} turns (the recording has {progress.recorded_turns}): turns "
               + sources_line(turn_sources(fork, progress.turn)))  # fmt: skip
    if fork.live_from is not None:
        click.echo(printable(f"LIVE from turn {fork.live_from}: {fork.live_reason}"))
    click.echo(printable(fork.outcome()))
    if saved:
        click.echo(printable(saved))

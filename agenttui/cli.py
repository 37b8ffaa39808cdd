"""The command line: ``agenttui STORE`` opens the TUI; every view also runs non-interactively.

One exit-code table for every command (``EXIT_CODES``, shown in ``--help`` and README). Errors
are one line on stderr, the store's text in them shown inert; a password is never printed.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import signal
import sys
from collections.abc import Awaitable, Callable, Coroutine
from functools import wraps
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from agenttui.agent.pauses import AlreadyDecided
from agenttui.errors import AgentTuiError, RunNotFoundError
from agenttui.journal.inert import clip, printable, printable_id, safe_json
from agenttui.runs.state import RunState
from agenttui.stores import open_store
from agenttui.stores.base import LeaseInfo, Store

# `agenttui STORE` imports what the TUI's first screen needs and no more: the records, the
# Journal, the status rules and the views of a run are imported by the commands that use them
# (benchmarks/startup.py).
if TYPE_CHECKING:
    from agenttui.agent.factory import AgentSetup
    from agenttui.journal.record import Record
    from agenttui.replay.verdict import Verdict
    from agenttui.runs.status import RunStatus

T = TypeVar("T")

EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
EXIT_DIVERGED = 3
EXIT_ALREADY_DECIDED = 4
EXIT_RUNS_FAILED = 5
EXIT_TERMINATED = 143

#: Every command's exit codes, as ``--help`` and README show them.
EXIT_CODES = {
    0: "done (a replay: it matches the recording, to its end or up to where it stops)",
    EXIT_NOT_FOUND: "no such run",
    EXIT_USAGE: "usage, store or connection error, nothing written (a replay: refused)",
    EXIT_DIVERGED: "a replay diverged from the recording",
    EXIT_ALREADY_DECIDED: "nothing written: the step was already decided (the standing decision is named)",
    EXIT_RUNS_FAILED: "`recover`: some runs failed (the report names them)",
    130: "interrupted (ctrl+c)",
    EXIT_TERMINATED: "terminated (SIGTERM, SIGHUP); as on ctrl+c, leases are released",
}
DEFAULT_DEMO_PATH = "agenttui-demo.db"
DEMO_FACTORY = "agenttui.demo.build:factory"


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """One line on stderr and an exit code. Messages quote the store (lease holders, reasons,
    record names, run ids): they go through the same inert-text path as every view."""
    click.echo(f"agenttui: {printable(message)}", err=True)
    sys.exit(code)


def run_async(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Run a command's coroutine; turn agenttui's errors into one line and an exit code."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return asyncio.run(_stoppable(fn(*args, **kwargs)))
        except asyncio.CancelledError:
            fail("terminated: leases released, nothing half-written", EXIT_TERMINATED)
        except RunNotFoundError as exc:
            fail(exc.message, EXIT_NOT_FOUND)
        except AlreadyDecided as exc:
            fail(exc.message, EXIT_ALREADY_DECIDED)
        except AgentTuiError as exc:
            fail(f"{exc.title}: {exc.message}")
        except KeyboardInterrupt:
            fail("interrupted", 130)

    return wrapper


async def _stoppable(command: Coroutine[Any, Any, T]) -> T:
    """``command``, stopped on SIGTERM or SIGHUP as on SIGINT: cancelled, so every lease it holds
    is released on the way out (a killed process's lease would block its runs for a whole TTL)."""
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    for stop in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(stop, task.cancel)
    return await command


async def _open(url: str, *, read_only: bool = True) -> Store:
    # A write acts on a journal that exists: a mistyped path must not become a new, empty store.
    return await open_store(url, read_only=read_only, create=False)


async def _with_store(url: str, body: Callable[[Store], Awaitable[T]], *, read_only: bool = True) -> T:
    store = await _open(url, read_only=read_only)
    try:
        return await body(store)
    finally:
        await store.close()


async def _history(store: Store, run_id: str) -> list[Any]:
    from agenttui.journal.journal import Journal

    records = (await Journal(store).read(run_id)).records
    if not records:
        raise RunNotFoundError(run_id)
    return records


class DefaultCommandGroup(click.Group):
    """A group where ``agenttui STORE`` (no subcommand) means ``agenttui open STORE``."""

    default_command = "open"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultCommandGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="\b\nExit codes, every command:\n" + "\n".join(f"  {code:>3}  {meaning}" for code, meaning in EXIT_CODES.items()))  # fmt: skip
@click.version_option(package_name="agenttui")
def main() -> None:
    """Debug durable AI-agent runs from a terminal.

    \b
    agenttui STORE              open the TUI on a store (read-only)
    agenttui demo               build a demo store and open the TUI on it
    STORE is a SQLite file, sqlite:///abs/path.db, postgresql://user@host/db[?schema=s]
    """


theme_option = click.option("--theme", default=None, help="Theme name (see themes/).")


@main.command("open")
@click.argument("store")
@theme_option
@click.option(
    "--agent", "agent_spec", metavar="MODULE:FACTORY", help="Your agent factory: replay with your code, re-drive runs."
)
@click.option("--run", "run_id", metavar="RUN_ID", help="Open this run's journal at once (esc goes back to every run).")
def open_command(store: str, theme: str | None, agent_spec: str | None, run_id: str | None) -> None:
    """Open the TUI on STORE (read-only: nothing is written unless you confirm an action)."""
    from agenttui.stores import sqlite_path
    from agenttui.stores.sqlite import require_file
    from agenttui.tui.app import launch

    if agent_spec:
        _check_factory(agent_spec)
    try:
        if (path := sqlite_path(store)) is not None:
            require_file(path)  # said here, before the terminal switches to the app's screen
    except AgentTuiError as exc:
        fail(f"{exc.title}: {exc.message}")
    sys.exit(launch(store, theme=theme, agent_spec=agent_spec, run_id=run_id))


def _check_factory(spec: str) -> None:
    from agenttui.agent.factory import load_factory

    try:
        load_factory(spec)
    except AgentTuiError as exc:
        fail(f"{exc.title}: {exc.message}")


@main.command()
@click.option("--path", "path", metavar="FILE|URL", default=DEFAULT_DEMO_PATH, show_default=True,
              help="Where to build the demo: a SQLite file, or postgresql://…?schema=s (a schema holding no other runs).")  # fmt: skip
@click.option("--no-tui", is_flag=True, help="Build the store and exit.")
@click.option("--force", is_flag=True, help="Replace the file at --path even if it is not a demo store agenttui made (never a PostgreSQL schema).")  # fmt: skip
@click.option("--bulk-turns", type=int, default=2000, show_default=True, help="Turns in the long run.")
@theme_option
def demo(path: str, no_tui: bool, force: bool, bulk_turns: int, theme: str | None) -> None:
    """Build a demo store with the runtime (a run in every status) and open the TUI on it."""
    from agenttui.demo.command import build_demo_at
    from agenttui.stores import describe_url

    run_async(build_demo_at)(path, bulk_turns=bulk_turns, echo=lambda m: click.echo(m, err=True), force=force)
    if no_tui:
        click.echo(describe_url(path))
        return
    from agenttui.tui.app import launch

    sys.exit(launch(path, theme=theme, live_writer=True, agent_spec=DEMO_FACTORY))


def _status_json(status: RunStatus) -> dict[str, Any]:
    return {
        "run_id": status.run_id,
        "status": status.state.value,
        "steps": status.steps,
        "turns": status.turns,
        "tokens": status.tokens,
        "detail": status.detail,
        "pending_call": status.tool_use_id or None,
        "pending_tool": status.tool_name or None,
        "interrupt_name": status.interrupt_name or None,
        "wake_at": status.wake_at.isoformat() if status.wake_at else None,
        "lease_holder": status.lease_holder or None,
        "lease_lapsed": status.lease_lapsed,
        "lease_unknown": status.lease_unknown,
        "legacy": status.legacy,
    }


@main.command()
@click.argument("store")
@click.option(
    "--status",
    "states",
    multiple=True,
    type=click.Choice([s.value for s in RunState]),
    help="Only runs in this status (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON array of objects.")
@run_async
async def runs(store: str, states: tuple[str, ...], as_json: bool) -> None:
    """List every run with its status, a page of runs at a time as their statuses are read."""
    from agenttui.runs.status import list_statuses

    wanted = {RunState(s) for s in states}

    async def body(opened: Store) -> None:
        # Streamed: a million runs print from the first one on, not after all are read. The
        # JSON array is written piece by piece; each element is what safe_json would write. The
        # stream flushes as its buffer fills (each line, on a terminal), not after every run.
        out = sys.stdout
        first = True
        async for status in list_statuses(opened):
            if wanted and status.state not in wanted:
                continue
            if as_json:
                out.write(("[" if first else ",") + safe_json(_status_json(status), indent=None) + "\n")
            else:
                out.write(_status_line(status) + "\n")
            first = False
        if as_json:
            out.write("[]\n" if first else "]\n")
        out.flush()

    await _with_store(store, body)


def _status_line(s: RunStatus) -> str:
    state = f"{s.state.icon} {s.state.value}"
    detail = ("[legacy] " if s.legacy else "") + ("[lease unknown] " if s.lease_unknown else "") + printable(s.detail)
    # The id column is as wide as the TUI's; a longer id pushes its own line's columns only.
    return f"{printable_id(s.run_id):<28}  {state:<19} {s.steps:>6} steps {s.turns:>5} turns {s.tokens:>9} tok  {detail}".rstrip()


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="The records as a JSON array.")
@click.option(
    "--at", "at", type=int, metavar="N", help="The conversation as it stood after record N (the TUI's state at step)."
)
@run_async
async def show(store: str, run_id: str, as_json: bool, at: int | None) -> None:
    """Print a run's journal, one record a line (with --at N, its conversation as of record N)."""
    from agenttui.journal.describe import kind_icon, record_json, summary
    from agenttui.runs.view import tool_names

    records = await _with_store(store, lambda s: _history(s, run_id))
    if at is not None:
        _show_conversation(records, at, as_json=as_json)
    elif as_json:
        click.echo(safe_json([{"index": i} | record_json(r) for i, r in enumerate(records)]))
    else:
        names = tool_names(records)
        for index, record in enumerate(records):
            click.echo(
                f"{index:>5} {kind_icon(record)} {printable_id(clip(record.name, 40)):<40} {printable(clip(summary(record, names), 120))}"
            )


def _show_conversation(records: list[Record], at: int, *, as_json: bool) -> None:
    from agenttui.journal.describe import part_json, part_text
    from agenttui.runs.view import conversation_at

    if not 0 <= at < len(records):
        fail(f"--at {at}: the run has {len(records):,} records, numbered 0 to {len(records) - 1:,}")
    said = conversation_at(records, at)
    if as_json:
        voices = [{"index": u.index, "speaker": u.speaker}
                  | ({"parts": [part_json(p) for p in u.message.parts]} if u.message else {"text": u.text, "is_error": u.is_error})
                  for u in said]  # fmt: skip
        click.echo(safe_json({"as_of": at, "conversation": voices}))
        return
    click.echo(f"as of record #{at} ({printable_id(records[at].name)})")
    for u in said:
        click.echo(f"\n#{u.index} {printable(u.speaker)}{' ✗' if u.is_error else ''}")
        for text in [part_text(p) for p in u.message.parts] if u.message else [u.text]:
            click.echo("  " + printable(text, multiline=True).replace("\n", "\n  "))


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="The events as a JSON array.")
@run_async
async def events(store: str, run_id: str, as_json: bool) -> None:
    """Print the semantic events rebuilt from a run's journal (replay events)."""
    records = await _with_store(store, lambda s: _history(s, run_id))
    from agenttui.agent.events import AssistantTurn
    from agenttui.journal.describe import json_value
    from agenttui.replay.events import events_of

    out: list[dict[str, Any]] = []
    for event in events_of(run_id, records):
        if isinstance(event, AssistantTurn):
            out.append({"event": "assistant_turn", "turn": event.turn, "replayed": event.replayed,
                        "text": event.message.text, "calls": [c.name for c in event.message.tool_uses]})  # fmt: skip
        else:
            out.append({"event": "tool_completed", "tool_use_id": event.tool_use_id, "name": event.name,
                        "is_error": event.is_error, "result": json_value(event.result)})  # fmt: skip
    if as_json:
        click.echo(safe_json(out))
        return
    for item in out:
        if item["event"] == "assistant_turn":
            calls = f" → {', '.join(item['calls'])}" if item["calls"] else ""
            click.echo(f"assistant turn {item['turn']}: {printable(clip(item['text'], 100))}{printable(calls)}")
        else:
            mark = " ✗" if item["is_error"] else ""
            click.echo(
                f"  tool {printable(item['name'])}{mark}: {printable(clip(json.dumps(item['result'], ensure_ascii=False), 100))}"
            )


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.option("--ascii", "as_ascii", is_flag=True, help="Draw the flowchart as box art for a terminal.")
@click.option("--plain", is_flag=True, help="With --ascii: plain + - | v characters only.")
@click.option("--width", type=int, default=None, help="With --ascii: the width to fit (default: the terminal's).")
@run_async
async def mermaid(store: str, run_id: str, as_ascii: bool, plain: bool, width: int | None) -> None:
    """Print a run's Mermaid flowchart (or, with --ascii, draw it, ending where the run stands)."""
    from agenttui.render.flow import flow_steps

    if not as_ascii:
        from agenttui.render.mermaid import for_terminal, mermaid_text

        records = await _with_store(store, lambda s: _history(s, run_id))
        click.echo(for_terminal(mermaid_text(flow_steps(records))), nl=False)
        return
    from agenttui.render.ascii import render_text
    from agenttui.runs.chart_end import chart_end
    from agenttui.runs.status import statuses
    from agenttui.runs.tree import sub_run_steps

    async def body(opened: Store) -> tuple[list[Any], dict[str, Any], RunStatus]:
        records = await _history(opened, run_id)
        (status,) = await statuses(opened, [run_id])
        return records, await sub_run_steps(opened, run_id), status

    records, children, status = await _with_store(store, body)
    steps = flow_steps(records, run_id=run_id, sub_runs=children, end=chart_end(status))
    click.echo(
        render_text(steps, width=width or shutil.get_terminal_size().columns, ascii=plain, children=children), nl=False
    )


@main.command()
@click.argument("mermaid_file", type=click.File("r", encoding="utf-8"))
@click.option("--plain", is_flag=True, help="Plain + - | v characters only.")
@click.option("--width", type=int, default=None, help="The width to fit (default: the terminal's).")
def draw(mermaid_file: Any, plain: bool, width: int | None) -> None:
    """Draw a Mermaid flowchart file (the dialect render_mermaid and Go services write) as box art."""
    from agenttui.render.ascii import render_text
    from agenttui.render.mermaid import MermaidSyntaxError, parse_mermaid

    try:
        steps = parse_mermaid(mermaid_file.read())
    except MermaidSyntaxError as exc:
        fail(f"{mermaid_file.name}: {exc.message}")
    except UnicodeDecodeError:
        fail(f"{mermaid_file.name}: not UTF-8 text")
    click.echo(render_text(steps, width=width or shutil.get_terminal_size().columns, ascii=plain), nl=False)


agent_option = click.option(
    "--agent",
    "agent_spec",
    metavar="MODULE:FACTORY",
    help="Your agent factory: builds the tools (and model) for a run.",
)


@main.command("replay")
@click.argument("store")
@click.argument("run_id")
@agent_option
@click.option("--live-tool", "live_tools", multiple=True, metavar="TOOL",
              help="With --agent: run this tool for real, side effects and all (repeatable; asks first).")  # fmt: skip
@click.option("--yes", is_flag=True, help="With --live-tool: do not ask (for scripts that mean it).")
@click.option("--json", "as_json", is_flag=True, help="The verdict, and the divergence with both records, as JSON.")
@run_async
async def replay_command(
    store: str, run_id: str, agent_spec: str | None, live_tools: tuple[str, ...], yes: bool, as_json: bool
) -> None:
    """Replay a run offline against its recording and judge it.

    With --agent your tools run, but those not declared read-only are served from the
    recording: a replay fires no side effect unless --live-tool names the tool.

    \b
    exit 0: it matches the recording, to its end or up to where the recording stops
    exit 3: it diverged (the first divergence is shown, both sides in full)
    exit 2: refused (not a run the agent loop re-drives: a flow, a session journal, ...)
    """
    from agenttui.agent.factory import load_factory
    from agenttui.render.diff import payload_diff
    from agenttui.replay.session import replay_verdict

    setup = load_factory(agent_spec)(run_id) if agent_spec else None
    if live_tools:
        _confirm_live_tools(setup, live_tools, yes)
    session, verdict = await _with_store(
        store, lambda opened: replay_verdict(opened, run_id, setup, live_tools=live_tools)
    )
    progress = session.progress
    if as_json:
        click.echo(safe_json(verdict_json(run_id, session.mode, progress.turn, progress.recorded_turns, verdict)))
    else:
        click.echo(f"replayed {progress.turn} of {progress.recorded_turns} turns with {session.mode}")
        click.echo(printable(verdict.summary()))
        if verdict.not_compared:
            click.echo(
                f"not compared: {', '.join(verdict.not_compared)} (the SDK's digests of its tool registry and prompt)"
            )
        if verdict.served:
            click.echo(f"served from the recording, not run (not read-only): {', '.join(verdict.served)}")
        if verdict.live:
            click.echo(f"ran for real, side effects and all: {', '.join(verdict.live)}")
        if verdict.divergence is not None:
            for line in payload_diff(verdict.divergence.recorded, verdict.divergence.replayed, context=1_000):
                click.echo("  " + printable(line))
    sys.exit(verdict.exit_code)


def _confirm_live_tools(setup: AgentSetup | None, names: tuple[str, ...], yes: bool) -> None:
    """Ask before a replay runs side effects for real, naming each tool; refuse what cannot be."""
    if setup is None:
        fail("--live-tool needs --agent: recorded tools never run anything")
    side_effects = {t.name for t in setup.tools if not t.safety.read_only}
    if unknown := [n for n in names if n not in {t.name for t in setup.tools}]:
        fail(f"--live-tool: your agent has no tool {', '.join(map(repr, unknown))}")
    if harmless := [n for n in names if n not in side_effects]:
        fail(f"--live-tool: {', '.join(harmless)} is read-only and runs anyway")
    if yes:
        return
    if not sys.stdin.isatty():
        fail("--live-tool runs side effects for real: confirm at a terminal, or add --yes")
    question = (
        "This replay will run these tools for real, with their side effects:\n"
        + "".join(f"  {n}\n" for n in names)
        + "Go on?"
    )
    if not click.confirm(question, default=False, err=True):
        fail("nothing replayed")


def verdict_json(run_id: str, tools: str, turns: int, recorded_turns: int, verdict: Verdict) -> dict[str, Any]:
    """A replay's verdict for scripts: the same words the text output and the TUI use."""
    from agenttui.journal.describe import record_json

    divergence = verdict.divergence
    return {
        "run_id": run_id, "tools": tools, "verdict": verdict.kind.value, "exit_code": verdict.exit_code,
        "matches": verdict.matches, "summary": verdict.summary(), "reason": verdict.reason,
        "stopped": verdict.stopped or None, "turns": turns, "recorded_turns": recorded_turns,
        "not_compared": list(verdict.not_compared), "served_from_recording": list(verdict.served),
        "live_side_effects": list(verdict.live),
        "divergence": None if divergence is None else {
            "index": divergence.index, "step": divergence.name, "state": divergence.state.value, "reason": divergence.reason,
            "recorded": None if divergence.recorded is None else record_json(divergence.recorded),
            "replayed": None if divergence.replayed is None else record_json(divergence.replayed),
        },
    }  # fmt: skip


async def _apply(store: str, operation: Any) -> None:
    """Open the store for writing only for this operation, apply it, print what it did."""
    message = await _with_store(store, operation.apply, read_only=False)
    click.echo(printable(message, multiline=True))  # it may quote the store: lease holders, run ids


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.argument("call")
@click.option("--approver", default="", help="Who approves (recorded on the decision).")
@run_async
async def approve(store: str, run_id: str, call: str, approver: str) -> None:
    """Approve call CALL of a run awaiting approval."""
    from agenttui.runs.operations import Decide

    await _apply(store, Decide(run_id, call, True, approver))


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.argument("call")
@click.option("--approver", default="", help="Who denies (recorded on the decision).")
@run_async
async def deny(store: str, run_id: str, call: str, approver: str) -> None:
    """Deny call CALL of a run awaiting approval (records the denial result too)."""
    from agenttui.runs.operations import Decide

    await _apply(store, Decide(run_id, call, False, approver))


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.argument("name")
@click.argument("value")
@run_async
async def answer(store: str, run_id: str, name: str, value: str) -> None:
    """Answer interrupt NAME, the one the run waits on; VALUE is JSON, or plain text (a string)."""
    from agenttui.runs.operations import Answer, parse_value

    await _apply(store, Answer(run_id, name, parse_value(value, json_only=False)))


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.argument("call")
@click.option("--fired", is_flag=True, help="The call's effect happened (give its --result).")
@click.option("--not-fired", is_flag=True, help="The call's effect did not happen: the next drive retries it.")
@click.option("--result", metavar="JSON", help="With --fired: the call's result, as JSON.")
@click.option("--result-text", metavar="TEXT", help="With --fired: the call's result, recorded as a JSON string.")
@run_async
async def resolve(
    store: str, run_id: str, call: str, fired: bool, not_fired: bool, result: str | None, result_text: str | None
) -> None:
    """Resolve a halted call whose outcome was unknown: it fired (with its result), or it did not."""
    from agenttui.runs.operations import Resolve, parse_value

    if fired == not_fired:
        fail("say what happened: --fired or --not-fired, one of them")
    if not_fired and (result is not None or result_text is not None):
        fail("--result and --result-text go with --fired: a call that did not fire has no result")
    if result is not None and result_text is not None:
        fail("--result or --result-text, not both")
    value = (
        result_text if result_text is not None else parse_value(result, json_only=True) if result is not None else None
    )
    await _apply(store, Resolve(run_id, call, fired, value))


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.option("--reason", default="", help="Why (recorded in run:cancelled).")
@run_async
async def cancel(store: str, run_id: str, reason: str) -> None:
    """Cancel a run: writes run:cancelled."""
    from agenttui.runs.operations import Cancel

    await _apply(store, Cancel(run_id, reason))


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.option("--agent", "agent_spec", required=True, metavar="MODULE:FACTORY", help="Your agent factory.")
@run_async
async def redrive(store: str, run_id: str, agent_spec: str) -> None:
    """Drive one run forward with your agent, under its lease."""
    from agenttui.agent.factory import load_factory
    from agenttui.runs.operations import Redrive

    await _apply(store, Redrive(run_id, agent_spec, load_factory(agent_spec)))


@main.command("recover")
@click.argument("store")
@click.option("--agent", "agent_spec", required=True, metavar="MODULE:FACTORY", help="Your agent factory.")
@run_async
async def recover_command(store: str, agent_spec: str) -> None:
    """Re-drive every unfinished run, each under its lease (pauses count as recovered).

    Exits 5 when any run failed; the report names each.
    """
    from agenttui.agent.factory import load_factory
    from agenttui.runs.operations import RecoverAll, report_lines

    report = await _with_store(store, RecoverAll(agent_spec, load_factory(agent_spec)).run, read_only=False)
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
    """Release a run's lapsed lease (refused while the lease is live, unless --force)."""
    from agenttui.journal.keys import root_run_id
    from agenttui.runs.operations import ReleaseLease

    operation = ReleaseLease(run_id)
    if force:

        async def lease_row(opened: Store) -> LeaseInfo | None:
            return await opened.get_lease(root_run_id(run_id)) if opened.IMPLEMENTS_LEASES else None

        current = await _with_store(store, lease_row)
        operation = ReleaseLease(run_id, force=True, current=current)
        if current is not None and not yes:
            if not sys.stdin.isatty():
                fail("--force breaks a lease: confirm at a terminal, or add --yes")
            if not click.confirm(
                printable(operation.will_write(), multiline=True) + "\nBreak it?", default=False, err=True
            ):
                fail("nothing written")
    await _apply(store, operation)


def mask_process_title() -> None:
    """Show the process in ``ps`` with any password in its arguments masked (``PGPASSWORD`` or
    ``~/.pgpass`` keep it out of the command line altogether)."""
    from agenttui.stores import describe_url

    masked = [describe_url(arg) if "://" in arg else arg for arg in sys.argv]
    if masked != sys.argv:
        import setproctitle  # deferred: most commands carry no password

        setproctitle.setproctitle(" ".join(["agenttui", *masked[1:]]))


def entry() -> None:
    """The console script: ``main``, safe on any terminal and into any output.

    A terminal whose encoding cannot show a character gets an escape for it, not a traceback;
    output that cannot be written (a full disk, a closed pipe) is one line on stderr and exit 2.
    """
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    mask_process_title()
    try:
        main()
    except OSError as exc:  # the store's errors are StoreErrors: this is the output failing
        # Python would try the output again at exit and complain: point it at nothing first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if not isinstance(exc, BrokenPipeError):  # a reader that stopped reading is no error
            click.echo(f"agenttui: cannot write the output: {exc.strerror or exc}", err=True)
            sys.exit(EXIT_USAGE)


if __name__ == "__main__":  # pragma: no cover
    entry()

"""The command line: ``agenttui STORE`` opens the TUI; every view also runs non-interactively.

Exit codes: 0 done, 1 run not found, 2 usage or connection error (3 is the replay command's
"diverged"). Errors are one line on stderr; a password in a store URL is never printed.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Coroutine
from functools import wraps
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from agenttui.errors import AgentTuiError, RunNotFoundError
from agenttui.journal.describe import clip, kind_icon, printable, record_json, summary
from agenttui.journal.journal import Journal
from agenttui.replay.events import events_of, tool_names
from agenttui.replay.status import RunState, RunStatus, list_statuses
from agenttui.stores import open_store
from agenttui.stores.base import Store

T = TypeVar("T")

EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
DEFAULT_DEMO_PATH = "agenttui-demo.db"


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    click.echo(f"agenttui: {message}", err=True)
    sys.exit(code)


def run_async(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Run a command's coroutine; turn agenttui's errors into one line and an exit code."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return asyncio.run(fn(*args, **kwargs))
        except RunNotFoundError as exc:
            fail(exc.message, EXIT_NOT_FOUND)
        except AgentTuiError as exc:
            fail(f"{exc.title}: {exc.message}")
        except KeyboardInterrupt:
            fail("interrupted", 130)

    return wrapper


async def _open(url: str, *, read_only: bool = True) -> Store:
    return await open_store(url, read_only=read_only)


async def _with_store(url: str, body: Callable[[Store], Awaitable[T]], *, read_only: bool = True) -> T:
    store = await _open(url, read_only=read_only)
    try:
        return await body(store)
    finally:
        await store.close()


async def _history(store: Store, run_id: str) -> list[Any]:
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


@click.group(cls=DefaultCommandGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
def open_command(store: str, theme: str | None) -> None:
    """Open the TUI on STORE (read-only: nothing is written unless you confirm an action)."""
    from agenttui.tui.app import launch

    sys.exit(launch(store, theme=theme))


@main.command()
@click.option("--path", "path", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_DEMO_PATH, show_default=True,
              help="Where to write the demo SQLite store.")  # fmt: skip
@click.option("--no-tui", is_flag=True, help="Build the store and exit.")
@click.option("--bulk-turns", type=int, default=2000, show_default=True, help="Turns in the long run.")
@theme_option
def demo(path: Path, no_tui: bool, bulk_turns: int, theme: str | None) -> None:
    """Build a demo store with the runtime (a run in every status) and open the TUI on it."""
    from agenttui.demo.command import build_demo_store

    run_async(build_demo_store)(path, bulk_turns=bulk_turns, echo=lambda m: click.echo(m, err=True))
    if no_tui:
        click.echo(str(path))
        return
    from agenttui.tui.app import launch

    sys.exit(launch(str(path), theme=theme, live_writer=True))


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
        "wake_at": status.wake_at.isoformat() if status.wake_at else None,
        "lease_holder": status.lease_holder or None,
    }




@main.command()
@click.argument("store")
@click.option("--status", "states", multiple=True, type=click.Choice([s.value for s in RunState]), help="Only runs in this status (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="One JSON array of objects.")
@run_async
async def runs(store: str, states: tuple[str, ...], as_json: bool) -> None:
    """List every run with its status."""

    async def body(opened: Store) -> list[RunStatus]:
        wanted = {RunState(s) for s in states}
        return [s async for s in list_statuses(opened) if not wanted or s.state in wanted]

    statuses = await _with_store(store, body)
    if as_json:
        click.echo(json.dumps([_status_json(s) for s in statuses], indent=2, ensure_ascii=False))
        return
    width = max((len(s.run_id) for s in statuses), default=6)
    for s in statuses:
        state = f"{s.state.icon} {s.state.value}"
        click.echo(f"{printable(s.run_id):<{width}}  {state:<19} {s.steps:>6} steps {s.turns:>5} turns {s.tokens:>9} tok  {printable(s.detail)}")


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="The records as a JSON array.")
@run_async
async def show(store: str, run_id: str, as_json: bool) -> None:
    """Print a run's journal, one record a line."""
    records = await _with_store(store, lambda s: _history(s, run_id))
    if as_json:
        click.echo(json.dumps([{"index": i} | record_json(r) for i, r in enumerate(records)], indent=2, ensure_ascii=False))
        return
    names = tool_names(records)
    for index, record in enumerate(records):
        click.echo(f"{index:>5} {kind_icon(record)} {printable(clip(record.name, 40)):<40} {printable(clip(summary(record, names), 120))}")


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="The events as a JSON array.")
@run_async
async def events(store: str, run_id: str, as_json: bool) -> None:
    """Print the semantic events rebuilt from a run's journal (replay events)."""
    records = await _with_store(store, lambda s: _history(s, run_id))
    from agenttui.agent.events import AssistantTurn

    out = []
    for event in events_of(run_id, records):
        if isinstance(event, AssistantTurn):
            out.append({"event": "assistant_turn", "turn": event.turn, "replayed": event.replayed,
                        "text": event.message.text, "calls": [c.name for c in event.message.tool_uses]})  # fmt: skip
        else:
            out.append({"event": "tool_completed", "tool_use_id": event.tool_use_id, "name": event.name,
                        "is_error": event.is_error, "result": json.loads(event.result or b"null")})  # fmt: skip
    if as_json:
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    for item in out:
        if item["event"] == "assistant_turn":
            calls = f" → {', '.join(item['calls'])}" if item["calls"] else ""
            click.echo(f"assistant turn {item['turn']}: {printable(clip(item['text'], 100))}{printable(calls)}")
        else:
            mark = " ✗" if item["is_error"] else ""
            click.echo(f"  tool {printable(item['name'])}{mark}: {printable(clip(json.dumps(item['result'], ensure_ascii=False), 100))}")


@main.command()
@click.argument("store")
@click.argument("run_id")
@click.option("--ascii", "as_ascii", is_flag=True, help="Draw the flowchart as box art for a terminal.")
@click.option("--plain", is_flag=True, help="With --ascii: plain + - | v characters only.")
@click.option("--width", type=int, default=None, help="With --ascii: the width to fit (default: the terminal's).")
@run_async
async def mermaid(store: str, run_id: str, as_ascii: bool, plain: bool, width: int | None) -> None:
    """Print a run's Mermaid flowchart (or, with --ascii, draw it)."""
    from agenttui.render import flow

    records = await _with_store(store, lambda s: _history(s, run_id))
    steps = flow.flow_steps(records)
    if not as_ascii:
        from agenttui.render.mermaid import mermaid_text

        click.echo(mermaid_text(steps), nl=False)
        return
    from agenttui.render.ascii import render_text

    click.echo(render_text(steps, width=width or click.get_terminal_size()[0], ascii=plain))




if __name__ == "__main__":  # pragma: no cover
    main()

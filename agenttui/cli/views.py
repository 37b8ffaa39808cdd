"""The read-only views of a store without the TUI: ``runs``, ``show``, ``events``, ``mermaid``,
``draw``; text for people, ``--json`` for scripts."""

from __future__ import annotations

import json
import shutil
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

import click

from agenttui.cli.app import fail, main, run_async, run_history, takes_view, with_store
from agenttui.journal.inert import clip, printable, printable_id, safe_json
from agenttui.runs.statuses.state import RunState
from agenttui.stores.base import Store

if TYPE_CHECKING:
    from agenttui.journal.record import Record
    from agenttui.runs.statuses.status import RunStatus


@main.command()
@click.argument("store")
@click.option(
    "--status",
    "states",
    multiple=True,
    type=click.Choice([s.value for s in RunState]),
    help="Only runs in this status (repeatable).",
)
@click.option(
    "--where",
    "where_text",
    metavar="EXPR",
    help="Only runs this filter matches, as: status=halted and tool=refund_payment and idle<2h (docs/guide/filters.md).",
)
@takes_view()
@click.option("--json", "as_json", is_flag=True, help="One JSON array of objects (with --count, one object).")
@click.option(
    "--count",
    "count_only",
    is_flag=True,
    help="How many runs are in each status, not the runs (with --where or --status: of those they select).",
)
@run_async
async def runs(store: str, states: tuple[str, ...], where_text: str | None, as_json: bool, count_only: bool) -> None:
    """List every run with its status, a page of runs at a time as their statuses are read."""
    from datetime import UTC, datetime

    from agenttui.runs.statuses.status import list_status_json, list_statuses, status_json

    where = None
    if where_text or states:  # the filters' module only where one is given (fractions, difflib: 5 ms)
        from agenttui.runs.selection.where import parse_where

        parse_where(where_text or "")  # a bad filter says so before the store opens, at its own columns
        chosen = [f"({where_text})"] if where_text else []
        chosen += [f"status={','.join(states)}"] if states else []
        where = parse_where(" and ".join(chosen))
    now = datetime.now(UTC)  # one time for the whole listing

    async def body(opened: Store) -> None:
        if count_only:
            from agenttui.runs.selection.indexed import count_statuses

            _print_counts(await count_statuses(opened, now, where), as_json)
            return
        # Streamed: a million runs print from the first one on, not after all are read. The
        # JSON array is written piece by piece; each element is what safe_json would write. The
        # stream flushes as its buffer fills (each line, on a terminal), not after every run.
        out = sys.stdout
        first = True
        if as_json and where is None:  # every run: no status made that a line says
            async for texts in list_status_json(opened):
                out.write(("[" if first else ",") + texts + "\n")
                first = False
            out.write("[]\n" if first else "]\n")
            out.flush()
            return
        if where is not None:
            from agenttui.runs.selection.indexed import candidate_statuses

            matches = where.matcher(now)
            listed = candidate_statuses(opened, where, now)
        else:
            listed = list_statuses(opened)
        async for status in listed:
            if where is not None and not matches(status):
                continue
            if as_json:
                out.write(("[" if first else ",") + safe_json(status_json(status), indent=None) + "\n")
            else:
                out.write(_status_line(status) + "\n")
            first = False
        if as_json:
            out.write("[]\n" if first else "]\n")
        out.flush()

    await with_store(store, body)


def _print_counts(counted: Counter[RunState], as_json: bool) -> None:
    """Runs by status, in the order of the states, and their total."""
    total = sum(counted.values())
    if as_json:
        by_state = {state.value: counted[state] for state in RunState if counted[state]}
        click.echo(json.dumps({"statuses": by_state, "total": total}))
        return
    for state in RunState:
        if counted[state]:
            click.echo(f"{state.icon} {state.value:<19} {counted[state]:>12,}")
    click.echo(f"  {'total':<19} {total:>12,}")


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
    from agenttui.runs.reading.view import tool_names

    records = await with_store(store, lambda s: run_history(s, run_id))
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
    from agenttui.runs.reading.view import conversation_at

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
    records = await with_store(store, lambda s: run_history(s, run_id))
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

        records = await with_store(store, lambda s: run_history(s, run_id))
        click.echo(for_terminal(mermaid_text(flow_steps(records))), nl=False)
        return
    from agenttui.render.ascii import render_text
    from agenttui.runs.reading.tree import sub_run_steps
    from agenttui.runs.statuses.chart_end import chart_end
    from agenttui.runs.statuses.status import statuses

    async def body(opened: Store) -> tuple[list[Any], dict[str, Any], RunStatus]:
        records = await run_history(opened, run_id)
        (status,) = await statuses(opened, [run_id])
        return records, await sub_run_steps(opened, run_id), status

    records, children, status = await with_store(store, body)
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

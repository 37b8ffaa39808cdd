"""``agenttui index``: the shared run index of a PostgreSQL store, installed, run, watched and
removed (``stores.postgres.run_index``; docs/guide/shared-index.md)."""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Any

import click

from agenttui.cli.app import fail, main, run_async, with_store
from agenttui.journal.inert import printable
from agenttui.stores.base import Store

if TYPE_CHECKING:
    from agenttui.runs.statuses.indexer import Progress
    from agenttui.stores.postgres.run_index import IndexState


@main.group()
def index() -> None:
    """The shared run index of a PostgreSQL store: every run's status kept in its database by
    one indexer, read by every look from any machine (docs/guide/shared-index.md).

    \b
    agenttui index install STORE     create it (a schema of its own, triggers on the journal)
    agenttui index run STORE         keep it current (one at a time, by a lease)
    agenttui index status STORE      how far behind it is
    agenttui index uninstall STORE   remove every trace of it
    """


@index.command()
@click.argument("store")
@run_async
async def install(store: str) -> None:
    """Create the index and queue every run for the indexer; nothing if it is there already.

    It lives in a schema of its own (<schema>_agenttui) and adds to the journal's table four
    triggers, agenttui_index_*, that note which runs an insert, update, delete or truncate
    changed. It needs
    CREATE on the database and TRIGGER on the journal's table.
    """
    from agenttui.runs.statuses.indexer import index_of

    async def body(opened: Store) -> None:
        shared = index_of(opened)
        made = await shared.install()
        state = await shared.state()
        if made:
            click.echo(
                f"installed the shared run index in schema {state.schema}: {state.pending_runs:,} runs queued;"
                f" start the indexer: agenttui index run {printable(opened.display_url)}"
            )
        else:
            click.echo(f"the shared run index is installed already, in schema {state.schema}")

    await with_store(store, body, read_only=False)


@index.command()
@click.argument("store")
@click.option("--yes", is_flag=True, help="Do not ask.")
@run_async
async def uninstall(store: str, yes: bool) -> None:
    """Remove the index: its schema, its functions and its triggers on the journal's table.
    The journal is left as it was; every look reads it as without an index again."""
    from agenttui.runs.statuses.indexer import index_of

    async def body(opened: Store) -> None:
        shared = index_of(opened)
        if not await shared.installed():
            click.echo("no shared run index is installed: nothing to remove")
            return
        if not yes:
            if not sys.stdin.isatty():
                fail("uninstall removes the index every reader of this store uses: confirm at a terminal, or add --yes")
            click.confirm(
                f"Remove the shared run index (schema {shared.schema}) and its triggers? Every look at this store"
                " then reads the journal as without it",
                abort=True,
            )
        await shared.uninstall()
        click.echo(f"removed the shared run index (schema {shared.schema}) and its triggers")

    await with_store(store, body, read_only=False)


@index.command()
@click.argument("store")
@click.option("--json", "as_json", is_flag=True, help="One JSON object, for monitoring.")
@run_async
async def status(store: str, as_json: bool) -> None:
    """Where the index stands: whether looks use it, how many runs it holds, how far behind it
    is (changes queued, the oldest one's age) and which indexer holds its lease."""
    from agenttui.runs.statuses.indexer import index_of

    async def body(opened: Store) -> tuple[IndexState, str | None, float | None]:
        return await index_of(opened).state(), opened.replica, await opened.replica_lag()

    state, replica, lag = await with_store(store, body)
    if as_json:
        click.echo(json.dumps({**_state_json(state), "replica": replica, "replica_lag_seconds": lag}, indent=2))
        return
    lines = _state_lines(state)
    if replica is not None:
        behind = "its lag unknown" if lag is None else f"{_seconds(lag)} behind the primary"
        lines.append(f"read from     the replica at {printable(replica)}, {behind}")
    click.echo("\n".join(lines))


def _state_json(state: IndexState) -> dict[str, Any]:
    from dataclasses import asdict

    return {**asdict(state), "in_use": state.installed and not state.usable}


def _state_lines(state: IndexState) -> list[str]:
    if not state.installed:
        return [f"no shared run index is installed (it would be schema {state.schema}): agenttui index install STORE"]
    used = "in use" if not state.usable else f"not used: {state.usable}"
    lines = [f"shared run index in schema {state.schema}: {used}", f"runs indexed  {state.runs:,}"]
    behind = f"{state.pending:,} changes of {state.pending_runs:,} runs queued"
    if state.oldest_pending_seconds is not None:
        behind += f", the oldest {_seconds(state.oldest_pending_seconds)} ago"
    lines.append(f"behind        {behind if state.pending else 'nothing queued'}")
    caught = "never" if state.caught_up_seconds is None else f"{_seconds(state.caught_up_seconds)} ago"
    lines.append(f"caught up     {caught} (watermark {state.watermark:,})")
    if state.holder and state.lease_seconds is not None and state.lease_seconds >= 0:
        beat = "" if state.beat_seconds is None else f", last worked {_seconds(state.beat_seconds)} ago"
        lines.append(f"indexer       {printable(state.holder)} (lease {_seconds(state.lease_seconds)} left{beat})")
    else:
        lines.append("indexer       none running: agenttui index run STORE")
    share = f", {state.index_bytes / state.journal_bytes:.0%} of the journal's" if state.journal_bytes else ""
    lines.append(f"size          {_size(state.index_bytes)}{share} {_size(state.journal_bytes)}")
    return lines


def _seconds(value: float) -> str:
    if value < 90:
        return f"{value:.1f} s"
    if value < 5400:
        return f"{value / 60:.0f} min"
    return f"{value / 3600:.1f} h"


def _size(value: int) -> str:
    size = float(value)
    for unit in ("bytes", "kB", "MB"):
        if size < 1024:
            return f"{size:,.0f} {unit}" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size:,.1f} GB"


@index.command(name="run")
@click.argument("store")
@click.option("--once", is_flag=True, help="Catch up once, then stop (for a job run on a schedule).")
@click.option("--holder", metavar="NAME", help="The name the lease holds (default: host:pid).")
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    metavar="N",
    help="Changes a batch takes off the queue's head, each with every other change of its run"
    " (default 2,000): each batch is one transaction.",
)
@click.option(
    "--lease",
    type=click.FloatRange(min=1),
    metavar="SECONDS",
    help="How long the lease runs unless renewed (default 30): a standby takes over this long after"
    " the indexer holding it stops.",
)
@click.option(
    "--poll",
    type=click.FloatRange(min=0.01),
    metavar="SECONDS",
    help="How often an indexer that caught up looks at the queue again (default 0.5).",
)
@run_async
async def run_index(
    store: str, once: bool, holder: str | None, batch: int | None, lease: float | None, poll: float | None
) -> None:
    """Keep the index current: take the runs written since, read them with the status rules
    and write their statuses, until stopped (SIGTERM or ctrl+c give the lease up). One indexer
    works at a time: another started elsewhere waits as a standby and takes over once the
    first stops renewing its lease (--lease, 30 s). Killed at any point, none of its work is lost or
    done twice."""
    from agenttui.runs.statuses.indexer import BATCH_CHANGES, IDLE_SECONDS, LEASE_SECONDS, run_indexer

    said: list[tuple[object, ...]] = []
    started = time.monotonic()

    def report(progress: Progress) -> None:
        now = (progress.holding, progress.caught_up, progress.runs)
        if said and said[-1] == now:
            return
        said.append(now)
        if not progress.holding:
            line = "standing by: another indexer holds the lease"
        elif progress.caught_up:
            line = f"caught up: {progress.runs:,} runs indexed in {time.monotonic() - started:.1f} s (watermark {progress.watermark:,})"
        else:
            line = f"indexing: {progress.runs:,} runs so far"
        click.echo(f"agenttui index: {printable(progress.holder)}: {line}", err=True)

    async def body(opened: Store) -> None:
        await run_indexer(
            opened,
            holder=holder,
            once=once,
            batch=batch or BATCH_CHANGES,
            lease=lease or LEASE_SECONDS,
            idle=poll or IDLE_SECONDS,
            on_progress=report,
        )

    await with_store(store, body, read_only=False)

"""``agenttui export`` and ``agenttui import``: runs carried to another machine in one file."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import click

from agenttui.cli.app import (
    EXIT_CONFLICT,
    EXIT_NOT_FOUND,
    fail,
    main,
    open_for_command,
    run_async,
    takes_view,
    with_store,
)
from agenttui.journal.inert import printable, printable_id
from agenttui.runs.statuses.state import RunState
from agenttui.stores import describe_url, sqlite_path
from agenttui.stores.base import Store

if TYPE_CHECKING:
    from agenttui.runs.bundles import ExportReport, ImportedRun, ImportReport
    from agenttui.runs.selection.where import Where


#: Runs an export's report names one by one; beyond, it counts them.
_LISTED = 20


@main.command("export")
@click.argument("store")
@click.argument("run_ids", nargs=-1, metavar="[RUN]...")
@click.option("-o", "--output", metavar="FILE",
              help="The bundle to write (a new SQLite store); with --jsonl, '-' is standard output.")  # fmt: skip
@click.option("--otel", "otel_path", metavar="FILE",
              help="Write OpenTelemetry traces instead: OTLP JSON lines, a trace a run ('-': standard output; "
                   "docs/guide/observability.md).")  # fmt: skip
@click.option("--otlp", "otlp_url", metavar="URL",
              help="Send OpenTelemetry traces instead, over OTLP/HTTP to a collector or a backend (URL, or its "
                   "/v1/traces endpoint); OTEL_EXPORTER_OTLP_HEADERS and the other OTEL_EXPORTER_OTLP_* "
                   "variables are read.")  # fmt: skip
@click.option("--header", "headers", multiple=True, metavar="NAME=VALUE",
              help="With --otlp: a header to send, added to OTEL_EXPORTER_OTLP_HEADERS' (repeatable; a key is "
                   "better kept in that variable than on a command line).")  # fmt: skip
@click.option(
    "--content",
    is_flag=True,
    help="With --otel/--otlp: carry message content, tool arguments and results (redacted by --redact).",
)
@click.option("--prices", "prices_path", metavar="FILE",
              help="With --otel/--otlp: a TOML file of prices for each run's cost (docs/guide/cost.md).")  # fmt: skip
@click.option("--at", "anchor", metavar="TIME",
              help="With --otel/--otlp: the time (RFC 3339) of runs no record of which carries one; "
                   "the Unix epoch by default.")  # fmt: skip
@click.option("--replay", is_flag=True,
              help="With --otel/--otlp: export a replay of each run instead (offline, side effects served), as a "
                   "trace of its own linked to the recording's, its verdict on it.")  # fmt: skip
@click.option("--agent", "agent_spec", metavar="MODULE:FACTORY",
              help="With --replay: replay with your agent's code (as `agenttui replay --agent`); the recorded one "
                   "otherwise.")  # fmt: skip
@click.option("--timeout", "request_seconds", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="With --otlp: the most a request may take, its retries included (default: "
                   "OTEL_EXPORTER_OTLP_TIMEOUT, else 10).")  # fmt: skip
@click.option("--no-sub-runs", is_flag=True, help="Leave the runs under each run out (they travel with it by default).")
@click.option("--redact", "redact", multiple=True, metavar="PATH",
              help="Replace the values at this JSON path by a marker, e.g. $.result.card_number, or a member name "
                   "anywhere in a record, e.g. card_number (repeatable).")  # fmt: skip
@click.option("--drop-undecodable", is_flag=True,
              help="With --redact: leave out records that are not JSON (damaged, cut short), which cannot be "
                   "redacted, instead of refusing the export; the report names them.")  # fmt: skip
@click.option("--status", "states", multiple=True, type=click.Choice([s.value for s in RunState]),
              help="Every run in this status (repeatable), instead of naming runs.")  # fmt: skip
@click.option("--filter", "text", default="", metavar="TEXT",
              help="Every run whose id, status or detail contains TEXT, instead of naming runs.")  # fmt: skip
@click.option("--where", "where_text", metavar="EXPR",
              help="Every run the filter EXPR selects (docs/guide/filters.md), instead of naming runs.")  # fmt: skip
@takes_view()
@click.option("--sample", type=click.IntRange(1), metavar="N",
              help="N of the runs selected (or of every run), spread over their statuses and tools: a suite's runs.")  # fmt: skip
@click.option("--jsonl", is_flag=True, help="Write one decoded record a line (for diffs and grep), not a store.")
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@run_async
async def export_command(
    store: str, run_ids: tuple[str, ...], output: str | None, otel_path: str | None, otlp_url: str | None,
    headers: tuple[str, ...], content: bool, prices_path: str | None, anchor: str | None, replay: bool,
    agent_spec: str | None, request_seconds: float | None, no_sub_runs: bool, redact: tuple[str, ...], drop_undecodable: bool,
    states: tuple[str, ...], text: str, where_text: str | None, sample: int | None, jsonl: bool, force: bool,
) -> None:  # fmt: skip
    """Export runs to a bundle: one SQLite file that every agenttui view, `agenttui replay` and the
    Go SDK open as a store, each record's bytes as stored (leases are not copied). With --redact,
    a record that is not JSON refuses the export (exit 2), unless --drop-undecodable.

    With --otel or --otlp, export them as OpenTelemetry traces by the GenAI semantic conventions
    instead (a trace a run, with the runs below it), to a file or to a collector or a backend.

    \b
    agenttui export STORE RUN -o run.db            a run and its sub-runs
    agenttui export STORE --status halted -o h.db  every halted run
    agenttui export STORE --where 'status=halted and tool=refund_payment' -o h.db
    agenttui export STORE RUN --redact card_number -o run.db
    agenttui export STORE --where 'status=complete' --sample 200 -o suite.db   a regression suite
    agenttui export STORE --where 'status=halted' --otlp http://localhost:4318   to a collector
    agenttui export STORE RUN --otel run.otlp.jsonl --content --redact card_number
    """
    from agenttui.cli.traces import TraceTarget
    from agenttui.journal.redact import Redactor
    from agenttui.runs.bundles import export_jsonl, export_runs, unredacted_lines

    targets = [name for name, given in (("-o", output), ("--otel", otel_path), ("--otlp", otlp_url)) if given]
    if len(targets) != 1:
        fail("say where the runs go: -o FILE (a bundle), --otel FILE or --otlp URL (traces)" if not targets
             else f"{' and '.join(targets)}: choose one")  # fmt: skip
    traces = TraceTarget.of(otel_path, otlp_url, headers=headers, content=content, prices=prices_path,
                            anchor=anchor, replay=replay, agent=agent_spec, request_seconds=request_seconds,
                            redact=redact, jsonl=jsonl, no_sub_runs=no_sub_runs,
                            drop_undecodable=drop_undecodable)  # fmt: skip
    selecting = bool(states or text or where_text is not None or sample is not None)
    if run_ids and selecting:
        fail("name runs, or select them with --status/--filter/--where/--sample, not both")
    if not run_ids and not selecting:
        fail("name a run to export, or select runs with --status, --filter, --where or --sample")
    chosen_by = None
    if where_text is not None:
        from agenttui.runs.selection.where import parse_where

        chosen_by = parse_where(where_text)  # a bad filter is refused before the store is opened
    Redactor(redact)  # a bad path is refused before the store is opened
    if traces is not None:

        async def send(opened: Store) -> None:
            chosen = list(run_ids) or await _selected(opened, states, text, chosen_by, sample, where_text)
            with _progress("exporting") as on_progress:
                await traces.export(opened, chosen, force=force, on_progress=on_progress)

        await with_store(store, send)
        return
    assert output is not None
    if output == "-" and not jsonl:
        fail("-o -: a bundle is a SQLite file; only --jsonl writes to standard output")
    target = None if output == "-" else sqlite_path(output)
    if output != "-" and target is None:
        fail(f"-o takes a file (or sqlite:///abs/path.db), not {describe_url(output)}")
    if drop_undecodable and not redact:
        fail("--drop-undecodable leaves out records that cannot be redacted: it goes with --redact")

    async def body(opened: Store) -> ExportReport:
        chosen = list(run_ids) or await _selected(opened, states, text, chosen_by, sample, where_text)
        with _progress("exporting") as on_progress:
            options: dict[str, Any] = {"sub_runs": not no_sub_runs, "redact": redact, "force": force,
                                       "drop_undecodable": drop_undecodable, "on_progress": on_progress}  # fmt: skip
            if jsonl:
                return await export_jsonl(opened, chosen, sys.stdout if target is None else target, **options)
            assert target is not None
            return await export_runs(opened, chosen, target, **options)

    report = await with_store(store, body)
    say = _say(to_stderr=output == "-")
    written_to = "standard output" if report.path is None else str(report.path)
    runs = len(report.runs)
    say(f"wrote {printable(written_to)}: {runs} run{'s' * (runs != 1)}, {report.records:,} records")
    for run in report.runs[:_LISTED]:
        say(f"  {printable_id(run.run_id)}  {run.records:,} records")
    if runs > _LISTED:
        say(f"  ... and {runs - _LISTED:,} more")
    for path, count in report.redactions:
        say(
            f"redacted {printable(path)}: {count:,} value{'s' * (count != 1)}"
            + (" (matched nothing)" if not count else "")
        )
    for line in unredacted_lines(report, listed=_LISTED):
        say(line)


async def _selected(
    opened: Store, states: tuple[str, ...], text: str, where: Where | None, sample: int | None, where_text: str | None
) -> list[str]:
    """The runs ``--status``, ``--filter``, ``--where`` and ``--sample`` select (a miss: exit 1)."""
    from agenttui.runs.bundles import select_runs

    chosen = await select_runs(opened, states={RunState(s) for s in states}, text=text, where=where, sample=sample)
    if not chosen:
        fail(f"no run matches {_selection(states, text, where_text)}", EXIT_NOT_FOUND)
    return chosen


def _selection(states: tuple[str, ...], text: str, where: str | None) -> str:
    parts = ([f"--status {' or '.join(states)}"] if states else []) + ([f"--filter {text!r}"] if text else [])
    parts += [f"--where {where!r}"] if where is not None else []
    return " and ".join(parts)


@main.command("import")
@click.argument("bundle")
@click.argument("store")
@click.option("--prefix", default="", metavar="P", help="Import each run as P<run id> (its sub-runs follow).")
@click.option("--create", is_flag=True, help="Create STORE if it does not exist (a SQLite file, or a schema's tables).")
@click.option("--skip-damaged", is_flag=True,
              help="Import the other runs when some hold rows that cannot be copied as they are; those runs, "
                   "with the runs of their tree, are left out and named (exit 2).")  # fmt: skip
@run_async
async def import_command(bundle: str, store: str, prefix: str, create: bool, skip_damaged: bool) -> None:
    """Copy a bundle's runs (or any store's) into STORE, each run in one transaction through its
    at-most-once insert: whatever stops it, a run is there whole or not at all. A run STORE
    already holds with other records is refused and named, and then nothing is written; a run it
    holds identically is skipped. Rows that cannot be copied as they are (a damaged file) are
    named and nothing is written, unless --skip-damaged.
    """
    from agenttui.errors import StoreMissingError
    from agenttui.runs.bundles import BundleDamaged, BundleImport, ImportConflict, ImportStopped
    from agenttui.stores import open_store

    source = await open_for_command(bundle)
    try:
        try:
            target = await open_store(store, create=True) if create else await open_for_command(store, read_only=False)
        except StoreMissingError as exc:
            fail(f"{exc.message}: the store does not exist; --create makes it")
        job: BundleImport | None = None
        try:
            job = BundleImport(source, target, prefix=prefix, skip_damaged=skip_damaged)
            with _progress("importing") as on_progress:
                report = await job.run(on_progress)
        except BundleDamaged as exc:
            _say_damaged([(run.run_id, run.reason) for run in exc.runs])
            fail(f"{exc.title}: {exc.message} (--skip-damaged imports the others)")
        except ImportConflict as exc:
            for conflict in exc.conflicts:
                click.echo(
                    f"agenttui: refused {printable_id(conflict.target_id)}: {printable(conflict.reason)}", err=True
                )
            _say_written(exc.written, ())
            runs, done = len(exc.conflicts), len(exc.written)
            written = f"{done:,} run{'s' * (done != 1)} written first, each whole" if done else "nothing was written"
            fail(f"import refused: {runs} run{'s' * (runs != 1)} conflict{'s' * (runs == 1)}; {written}", EXIT_CONFLICT)
        except ImportStopped as exc:
            _say_written(exc.written, exc.unwritten)
            fail(f"{exc.title}: {exc.message}")
        except (asyncio.CancelledError, KeyboardInterrupt):
            if job is not None:  # the exit line says how it stopped; first, what is in the store
                _say_written(job.written, job.unwritten)
                click.echo(f"agenttui: import stopped: {printable(job.account())}", err=True)
            raise
        finally:
            await target.close()
    finally:
        await source.close()
    _print_import(report)
    if report.left_out:
        _say_damaged([(run.target_id, run.reason) for run in report.left_out])
        left, done = len(report.left_out), len(report.runs)
        fail(
            f"left out {left} run{'s' * (left != 1)} holding or beside rows that cannot be copied as they are;"
            f" the other {done} run{'s' * (done != 1)} {'was' if done == 1 else 'were'} imported"
        )


def _say_damaged(runs: Sequence[tuple[str, str]]) -> None:
    for run_id, reason in runs[:_LISTED]:
        click.echo(f"agenttui: damaged {printable_id(run_id)}: {printable(reason)}", err=True)
    if len(runs) > _LISTED:
        click.echo(f"agenttui: ... and {len(runs) - _LISTED:,} more", err=True)


def _say_written(written: Sequence[ImportedRun], unwritten: Sequence[str]) -> None:
    """The runs an import wrote before it stopped, and those it did not, a line each (up to a limit)."""
    for run in written[:_LISTED]:
        click.echo(f"agenttui: written {printable_id(run.target_id)}  {run.written:,} records", err=True)
    if len(written) > _LISTED:
        click.echo(f"agenttui: ... and {len(written) - _LISTED:,} more written", err=True)
    for target_id in unwritten[:_LISTED]:
        click.echo(f"agenttui: not written {printable_id(target_id)}", err=True)
    if len(unwritten) > _LISTED:
        click.echo(f"agenttui: ... and {len(unwritten) - _LISTED:,} more not written", err=True)


def _print_import(report: ImportReport) -> None:
    said = {
        "imported": "imported",
        "identical": "skipped (already there, identical)",
        "completed": "completed (the store held its first records)",
    }
    for run in report.runs:
        renamed = f" as {printable_id(run.target_id)}" if run.target_id != run.run_id else ""
        click.echo(
            f"{said[run.outcome]}: {printable_id(run.run_id)}{renamed}  {run.written:,} of {run.records:,} records written"
        )
    runs = len(report.runs)
    click.echo(f"{runs} run{'s' * (runs != 1)}, {report.written:,} records written")
    if report.redacted:
        click.echo(f"the runs carry redacted values ({printable(', '.join(report.redacted))}): they read as [redacted]")


def _say(*, to_stderr: bool) -> Callable[[str], None]:
    def say(line: str) -> None:
        click.echo(line, err=to_stderr)

    return say


class Counted(Protocol):
    """Where a job over many runs stands: an export's, an import's, a trace export's."""

    @property
    def runs_total(self) -> int: ...


@contextmanager
def _progress(label: str) -> Iterator[Callable[[Counted], None] | None]:
    """A progress bar on stderr for a person at a terminal; nothing otherwise (logs and pipes)."""
    if not sys.stderr.isatty():
        yield None
        return
    bar: Any = None

    def on_progress(progress: Counted) -> None:
        nonlocal bar
        if bar is None:
            if progress.runs_total < 2:
                return  # one run: nothing to count
            bar = click.progressbar(length=progress.runs_total, label=label, file=sys.stderr, show_pos=True)
            bar.__enter__()
        bar.update(1)

    try:
        yield on_progress
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)

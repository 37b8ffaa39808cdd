"""``agenttui export --otel FILE | --otlp URL``: runs as OpenTelemetry traces (``runs.telemetry``)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import click

from agenttui.cli.app import fail
from agenttui.journal.inert import printable, printable_id
from agenttui.stores import describe_url

if TYPE_CHECKING:
    from agenttui.runs.telemetry.export import TraceOptions, TraceProgress, TraceReport
    from agenttui.stores.base import Store

#: Runs a report names one by one; beyond, it counts them.
_LISTED = 20


@dataclass(frozen=True, slots=True)
class TraceTarget:
    """Where traces go and what they carry, checked before the store is opened."""

    path: str | None
    url: str | None
    headers: dict[str, str]
    options: TraceOptions
    request_seconds: float | None

    @classmethod
    def of(
        cls, path: str | None, url: str | None, *, headers: Sequence[str], content: bool, prices: str | None,
        anchor: str | None, replay: bool, agent: str | None, request_seconds: float | None, redact: Sequence[str],
        jsonl: bool, no_sub_runs: bool, drop_undecodable: bool,
    ) -> TraceTarget | None:  # fmt: skip
        """The traces asked for (None: a bundle is), or an exit saying what does not go together."""
        from agenttui.replay.traces import ReplayTraces
        from agenttui.runs.cost.lens import PriceBook
        from agenttui.runs.telemetry.export import TraceOptions

        if path is None and url is None:
            for given, option in ((headers, "--header"), (content, "--content"), (prices, "--prices"),
                                  (anchor, "--at"), (replay, "--replay"), (request_seconds, "--timeout")):  # fmt: skip
                if given:
                    fail(f"{option} goes with --otel or --otlp")
            return None
        for given, option in ((jsonl, "--jsonl"), (no_sub_runs, "--no-sub-runs"),
                              (drop_undecodable, "--drop-undecodable")):  # fmt: skip
            if given:
                fail(
                    f"{option} is a bundle's: a trace holds a run with the runs below it, their records read as they are"
                )
        if agent is not None and not replay:
            fail("--agent goes with --replay: a run's trace is what it recorded")
        if agent is not None:
            from agenttui.agent.factory import load_factory

            load_factory(agent)  # a factory that cannot be loaded is refused before the store is opened
        if path is not None and (headers or request_seconds):
            fail(f"{'--header' if headers else '--timeout'} goes with --otlp, not --otel")
        if url is not None and not url.startswith(("http://", "https://")):
            fail(f"--otlp takes an http:// or https:// URL, not {describe_url(url)}")
        from agenttui.runs.telemetry.export import otel_missing

        missing = otel_missing()
        if missing is not None:
            fail(missing)
        options = TraceOptions(PriceBook.load(prices), content, tuple(redact), _anchor(anchor),
                               ReplayTraces(agent) if replay else None)  # fmt: skip
        return cls(path, url, _parsed_headers(headers), options, request_seconds)

    async def export(
        self, store: Store, run_ids: Sequence[str], *, force: bool, on_progress: Callable[[TraceProgress], None] | None,
    ) -> None:  # fmt: skip
        from agenttui.runs.telemetry.export import (
            TraceSendError,
            default_workers,
            export_trace_file,
            resolved_endpoint,
            send_traces,
        )

        if self.path is not None:
            to = sys.stdout if self.path == "-" else self.path
            report = await export_trace_file(store, run_ids, to, self.options, force=force,
                                             workers=default_workers(), on_progress=on_progress)  # fmt: skip
            _say_report(report, f"wrote {printable(str(report.path or 'standard output'))}", err=self.path == "-")
            return
        try:
            report = await send_traces(store, run_ids, self.url, self.options, headers=self.headers,
                                       request_seconds=self.request_seconds, on_progress=on_progress)  # fmt: skip
        except TraceSendError as exc:
            for run_id in exc.sent[:_LISTED]:
                click.echo(f"agenttui: sent {printable_id(run_id)}", err=True)
            if len(exc.sent) > _LISTED:
                click.echo(f"agenttui: ... and {len(exc.sent) - _LISTED:,} more sent", err=True)
            sent, unsent = len(exc.sent), len(exc.failed) + exc.unread
            fail(f"OTLP export failed: {exc.message}; {sent:,} run{'s' * (sent != 1)} sent before it, each whole,"
                 f" {unsent:,} not sent")  # fmt: skip
        _say_report(report, f"sent to {printable(resolved_endpoint(self.url))}", err=False)


def _say_report(report: TraceReport, done: str, *, err: bool) -> None:
    traces = len(report.traces)
    click.echo(
        f"{done}: {traces:,} trace{'s' * (traces != 1)}, {report.spans:,} spans, {report.events:,} events", err=err
    )
    for run_id in report.traces[:_LISTED]:
        click.echo(f"  {printable_id(run_id)}", err=err)
    if traces > _LISTED:
        click.echo(f"  ... and {traces - _LISTED:,} more", err=err)
    if untimed := len(report.untimed):
        click.echo(
            f"{untimed:,} run{'s' * (untimed != 1)} carr{'ies' if untimed == 1 else 'y'} no recorded time:"
            " their spans are at the anchor (--at TIME places them; agenttui.time says 'unrecorded')",
            err=err,
        )


def _parsed_headers(given: Sequence[str]) -> dict[str, str]:
    headers = {}
    for header in given:
        name, sep, value = header.partition("=")
        if not sep or not name.strip():
            fail(f"--header takes NAME=VALUE, not {header.partition('=')[0]!r}...")  # the value may be a key: not said
        headers[name.strip()] = value.strip()
    return headers


def _anchor(text: str | None) -> int:
    """``--at``'s time in Unix nanoseconds (0: the epoch)."""
    if text is None:
        return 0
    from agenttui.journal.timefmt import parse_go_time

    try:
        when = parse_go_time(text.replace("z", "Z"))
    except ValueError:
        fail(f"--at takes an RFC 3339 time such as 2026-12-07T04:00:00Z, not {text!r}")
    return (when - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 1000

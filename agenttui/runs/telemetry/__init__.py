"""Runs into the observability stack a team already has: OpenTelemetry traces by the GenAI
semantic conventions, pinned to one version (``conventions``: ``SEMCONV_VERSION``), made from the
journal (``spans``, pure) and written to a file of OTLP JSON lines or sent over OTLP/HTTP
through the OpenTelemetry SDK (``export``; the ``otel`` extra installs it).

The API (``agenttui export --otel`` and ``--otlp`` call these, nothing else):

- ``TraceOptions(prices, content=False, redact=(), anchor_ns=0, replayer=None)``: what
  the spans carry; ``replayer=agenttui.replay.traces.ReplayTraces(agent)`` exports a replay of
  each run instead, as a trace of its own.
- ``await export_trace_file(store, run_ids, path_or_stream, options, *, force=False, workers=1,
  on_progress=None) -> TraceReport``: each run with every run below it as one trace, a line of
  OTLP JSON (an ``ExportTraceServiceRequest``, ids in hex), the same bytes every time; a file is
  written whole or not at all.
- ``await send_traces(store, run_ids, url, options, *, headers=None, request_seconds=None,
  on_progress=None) -> TraceReport``: the same spans over OTLP/HTTP (protobuf) through the SDK's
  exporter, which reads the standard ``OTEL_EXPORTER_OTLP_*`` variables. Raises
  ``TraceSendError`` naming the runs sent before a request failed.
- ``spans_of_tree(runs, *, content=False, anchor_ns=0) -> list[Span]``: the mapping itself, pure.
- ``trace_id_of(run_id)``, ``span_id_of(run_id, step)``: the ids a run's spans get, from its id alone.

``docs/decisions.md`` ("Traces") records the choices the conventions leave open.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agenttui.lazy import lazy_names

if TYPE_CHECKING:
    from agenttui.runs.telemetry.conventions import SCHEMA_URL, SEMCONV_VERSION
    from agenttui.runs.telemetry.export import (
        TraceOptions,
        TraceProgress,
        TraceReport,
        TraceSendError,
        TraceWriteError,
        default_workers,
        export_trace_file,
        send_traces,
    )
    from agenttui.runs.telemetry.spans import (
        Moment,
        Span,
        SpanEvent,
        SpanLink,
        TracedRun,
        span_id_of,
        spans_of_tree,
        trace_id_of,
    )

LAZY = {
    "conventions": ("SCHEMA_URL", "SEMCONV_VERSION"),
    "export": (
        "TraceOptions",
        "TraceProgress",
        "TraceReport",
        "TraceSendError",
        "TraceWriteError",
        "default_workers",
        "export_trace_file",
        "send_traces",
    ),
    "spans": ("Moment", "Span", "SpanEvent", "SpanLink", "TracedRun", "span_id_of", "spans_of_tree", "trace_id_of"),
}
"""The modules imported when one of their names is first asked for, and those names."""

__all__ = [
    "SCHEMA_URL",
    "SEMCONV_VERSION",
    "Moment",
    "Span",
    "SpanEvent",
    "SpanLink",
    "TraceOptions",
    "TraceProgress",
    "TraceReport",
    "TraceSendError",
    "TraceWriteError",
    "TracedRun",
    "default_workers",
    "export_trace_file",
    "send_traces",
    "span_id_of",
    "spans_of_tree",
    "trace_id_of",
]

__getattr__ = lazy_names(__name__, LAZY)

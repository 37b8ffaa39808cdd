"""Runs exported as OpenTelemetry traces, through the official SDK and its OTLP encoders: a file
of OTLP JSON lines (``export_trace_file``), or OTLP/HTTP in protobuf to a collector or a
backend (``send_traces``).

A run is read with every run below it (a trace is a tree), its records redacted as a bundle's
are (``journal.redact``) before anything is made of them, its status read as ``agenttui runs``
reads it and its cost priced as ``agenttui cost`` prices it. Trees are read a page at a time, so
memory holds a page, not the selection.

The file holds one ``ExportTraceServiceRequest`` a line, a trace each, in the OTLP JSON
encoding (ids in hex, enums as numbers), as the OpenTelemetry Collector's file exporter writes
them. Over HTTP, spans go in requests of about ``BATCH_SPANS``; a request the endpoint refuses
stops the export, naming the runs already sent (``TraceSendError``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import multiprocessing
import os
import signal
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol, cast

from agenttui.errors import AgentTuiError
from agenttui.journal import keys
from agenttui.journal.journal import decode_entry
from agenttui.journal.record import Record
from agenttui.journal.redact import Redactor
from agenttui.runs.bundles.export import bundle_run_ids
from agenttui.runs.cost.lens import PriceBook, RunCost, RunTokens, run_cost
from agenttui.runs.statuses.status import lease_in, lease_rows, status_of
from agenttui.runs.telemetry.conventions import SCHEMA_URL
from agenttui.runs.telemetry.spans import Attributes, Span, TracedRun, spans_of_tree
from agenttui.stores.base import Entry, LeaseInfo, Store
from agenttui.stores.files import check_replaceable, streamed_text_file

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

#: Runs read from the store in one round trip (with the runs below them).
PAGE_RUNS = 200
#: Spans in one OTLP/HTTP request, about (a tree is never split: its spans travel together).
BATCH_SPANS = 2_000


@dataclass(frozen=True, slots=True)
class TraceProgress:
    """Where an export stands, after each run tree."""

    runs_done: int
    runs_total: int
    run_id: str


@dataclass(slots=True)
class TraceReport:
    """What an export wrote or sent."""

    traces: list[str] = field(default_factory=list)
    """The runs exported, a trace each (with the runs below them)."""
    spans: int = 0
    events: int = 0
    untimed: list[str] = field(default_factory=list)
    """Runs no record of whose tree carries a time: their spans are at the anchor."""
    path: Path | None = None

    def add(self, traced: _Traced) -> None:
        self.traces.append(traced.root)
        self.spans += traced.spans
        self.events += traced.events
        if traced.untimed:
            self.untimed.append(traced.root)


class TraceWriteError(AgentTuiError):
    """The trace file could not be written."""

    title = "Cannot write the trace file"


class TraceSendError(AgentTuiError):
    """An OTLP endpoint refused spans, or could not be reached."""

    title = "OTLP export failed"

    def __init__(self, message: str, sent: Sequence[str], failed: Sequence[str], unread: int) -> None:
        super().__init__(message)
        self.sent = list(sent)
        """The runs whose spans the endpoint took, each whole."""
        self.failed = list(failed)
        """The runs of the request that failed."""
        self.unread = unread
        """The runs not yet read when it failed (so not sent either)."""


def otel_missing() -> str | None:
    """Why the OpenTelemetry packages cannot be imported (None: they can)."""
    from importlib.util import find_spec

    for module in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"):
        try:
            found = find_spec(module) is not None
        except ImportError:  # a parent package is missing
            found = False
        if not found:
            return f"the OpenTelemetry packages are not installed ({module}): pip install 'agenttui[otel]'"
    return None


# -- reading the trees ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TraceOptions:
    """What every tree's spans are made with."""

    prices: PriceBook
    """How each run's cost is priced (``agenttui cost``'s prices)."""
    content: bool = False
    """Carry message content, tool arguments and results."""
    redact: tuple[str, ...] = ()
    """Paths replaced before anything is made of a record, as a bundle's (``journal.redact``)."""
    anchor_ns: int = 0
    """The time of a tree no record of which carries one (Unix nanoseconds)."""
    replayer: Replayer | None = None
    """Export a replay of each run instead, made by this (``replay.traces.replayer``): a trace of
    its own, linked to the recording's. Replays live above the runs, so they are handed in."""


class Replayer(Protocol):
    """Replays a run and makes its trace's spans, ``records`` redacted by ``redact``."""

    async def __call__(self, store: Store, run_id: str, options: TraceOptions) -> list[Span]: ...


@dataclass(frozen=True, slots=True)
class _Tree:
    """A run and every run below it (parents first) as read from the store: its entries as
    stored, and its root's lease row. Plain data: a worker process takes it as it is."""

    run_ids: list[str]
    entries: dict[str, list[Entry]]
    lease: LeaseInfo | None


@dataclass(frozen=True, slots=True)
class _Traced:
    """What a report counts of a tree's trace."""

    root: str
    spans: int
    events: int
    untimed: bool
    """No record of the tree carries a time: its spans are at the anchor."""

    @classmethod
    def of(cls, root: str, spans: Sequence[Span]) -> _Traced:
        untimed = bool(spans) and spans[0].start.how == "unrecorded"
        return cls(root, len(spans), sum(len(span.events) for span in spans), untimed)


@dataclass(frozen=True, slots=True)
class _Made:
    """What a tree became: its OTLP JSON line (a file's), and what the report counts of it."""

    traced: _Traced
    line: str


async def _read_trees(store: Store, trees: Sequence[Sequence[str]]) -> AsyncIterator[_Tree]:
    """Each tree as stored, a page of trees a round trip."""
    for start in range(0, len(trees), PAGE_RUNS):
        page = trees[start : start + PAGE_RUNS]
        loaded = await store.load_runs([run_id for tree in page for run_id in tree])
        leases = await lease_rows(store, {keys.root_run_id(tree[0]) for tree in page})
        for tree in page:
            yield _Tree(list(tree), {run_id: loaded.get(run_id, []) for run_id in tree}, lease_in(leases, tree[0]))


def _trees(ids: Sequence[str]) -> list[list[str]]:
    """``ids`` grouped into trees: each run with every run below it (parents first), a run under
    another of ``ids`` in that one's tree, whatever order they were named in."""
    chosen = set(ids)
    trees: dict[str, list[str]] = {}
    for run_id in ids:
        top = run_id
        while keys.is_sub_run(top) and (parent := keys.parent_run_id(top)) is not None and parent in chosen:
            top = parent
        trees.setdefault(top, []).append(run_id)
    return [sorted(tree, key=lambda r: r.count(">")) for tree in trees.values()]


async def _tree_ids(store: Store, run_ids: Sequence[str]) -> list[list[str]]:
    return _trees(await bundle_run_ids(store, run_ids, sub_runs=True))


async def _spans_read(
    store: Store, trees: Sequence[Sequence[str]], options: TraceOptions
) -> AsyncIterator[tuple[str, list[Span]]]:
    """Each tree's spans, by its root: the runs as recorded, or with ``options.replayer`` a replay
    of each root run."""
    if options.replayer is not None:
        for ids in trees:
            yield ids[0], await options.replayer(store, ids[0], options)
        return
    async for tree in _read_trees(store, trees):
        yield tree.run_ids[0], tree_spans(tree, options)


def tree_spans(tree: _Tree, options: TraceOptions) -> list[Span]:
    """A tree's spans: its records decoded (and redacted, as a bundle's are), each run's status
    read as ``agenttui runs`` reads it and its cost priced as ``agenttui cost`` prices it."""
    redactor = redactor_of(options.redact)
    records: dict[str, list[Record]] = {}
    for run_id in tree.run_ids:
        decoded = [decode_entry(entry) for entry in tree.entries[run_id]]
        records[run_id] = [redactor.redact_record(r) for r in decoded] if redactor else decoded
    costs: dict[str, RunCost] = {}
    for run_id in sorted(tree.run_ids, key=lambda r: -r.count(">")):  # the deepest first: a parent sums its children
        below = {sub: costs[sub] for sub in costs if keys.parent_run_id(sub) == run_id}
        costs[run_id] = _cost(run_id, records[run_id], options.prices, below)
    runs = [TracedRun(run_id, records[run_id], status_of(run_id, records[run_id], tree.lease), costs[run_id])
            for run_id in tree.run_ids]  # fmt: skip
    return spans_of_tree(runs, content=options.content, anchor_ns=options.anchor_ns)


@cache
def redactor_of(paths: tuple[str, ...]) -> Redactor | None:
    return Redactor(paths) if paths else None


def _cost(run_id: str, records: Sequence[Record], prices: PriceBook, below: dict[str, RunCost]) -> RunCost:
    """The run's cost as ``agenttui cost`` prices it: its tokens summed by model and priced once
    a model (a trace carries the total, not each turn's), or turn by turn where a price has tiers."""
    tokens = RunTokens.of(records)
    priced = tokens.priced(run_id, prices, below) if tokens is not None else None
    return priced if priced is not None else run_cost(run_id, records, prices, below)


# -- the SDK's spans -----------------------------------------------------------------------------


def resource() -> Resource:
    """The resource every span carries: ``service.name`` agenttui and the SDK's own attributes,
    with what ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME`` say over them, read by the
    SDK's detector. Not ``Resource.create``: it adds a ``service.instance.id`` new each time (an
    export would never give the same bytes twice), and puts what it is given over the variables."""
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource
    from opentelemetry.sdk.version import __version__ as sdk_version

    own = Resource({"service.name": "agenttui", "telemetry.sdk.language": "python",
                    "telemetry.sdk.name": "opentelemetry", "telemetry.sdk.version": sdk_version})  # fmt: skip
    return own.merge(OTELResourceDetector().detect())


def scope() -> InstrumentationScope:
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    from agenttui import __version__

    return InstrumentationScope("agenttui", __version__, SCHEMA_URL)


def readable_spans(spans: Sequence[Span], of: Resource, by: InstrumentationScope) -> list[ReadableSpan]:
    """``spans`` as the SDK's finished spans, which its OTLP encoders take."""
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

    sampled = TraceFlags(TraceFlags.SAMPLED)
    kinds = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}
    made = []
    for span in spans:
        context = SpanContext(span.trace_id, span.span_id, is_remote=False, trace_flags=sampled)
        parent = None if span.parent_id is None else SpanContext(span.trace_id, span.parent_id, False, sampled)
        events = [Event(event.name, _encodable(event.attributes), event.at.ns) for event in span.events]
        links = [Link(SpanContext(link.trace_id, link.span_id, False, sampled), _encodable(link.attributes))
                 for link in span.links]  # fmt: skip
        status = Status(StatusCode.ERROR, span.error) if span.error is not None else Status(StatusCode.UNSET)
        made.append(ReadableSpan(span.name, context, parent, of, _encodable(span.attributes), events, links,
                                 kinds[span.kind], status=status, start_time=span.start.ns, end_time=span.end.ns,
                                 instrumentation_scope=by))  # fmt: skip
    return made


_INT64 = range(-(2**63), 2**63)


def _encodable(attributes: Attributes) -> Attributes:
    """``attributes`` as OTLP can carry them: a count past a 64-bit integer (a hostile or broken
    writer's) is written as its digits, rather than dropped by the encoder with a traceback."""
    if all(type(value) is not int or value in _INT64 for value in attributes.values()):
        return attributes
    return {key: str(value) if type(value) is int and value not in _INT64 else value
            for key, value in attributes.items()}  # fmt: skip


def otlp_json_line(spans: Sequence[ReadableSpan]) -> str:
    """One OTLP JSON line: the request the SDK's encoder makes of ``spans``, written by protobuf's
    JSON printer with the ids in hex (protobuf writes bytes in base64; OTLP JSON wants hex)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from agenttui.journal.inert import inert_json

    request = MessageToDict(encode_spans(spans), use_integers_for_enums=True, preserving_proto_field_name=False)
    for resource_spans in request.get("resourceSpans", ()):
        for scope_spans in resource_spans.get("scopeSpans", ()):
            for span in scope_spans.get("spans", ()):
                _hex_ids(span)
                for link in span.get("links", ()):
                    _hex_ids(link)
    return inert_json(json.dumps(request, ensure_ascii=False, separators=(",", ":")))


def _hex_ids(item: dict[str, Any]) -> None:
    for key in ("traceId", "spanId", "parentSpanId"):
        if key in item:
            item[key] = base64.b64decode(item[key]).hex()


def made_trees(trees: list[_Tree], options: TraceOptions) -> list[_Made]:
    """Trees as OTLP JSON lines, a tree a line: all of an export's work past reading the store
    (a worker's task: it makes its own resource and scope, from the environment the export was
    started in)."""
    of, by = resource(), scope()
    return [_made(tree.run_ids[0], tree_spans(tree, options), of, by) for tree in trees]


def _made(root: str, spans: list[Span], of: Resource, by: InstrumentationScope) -> _Made:
    return _Made(_Traced.of(root, spans), otlp_json_line(readable_spans(spans, of, by)))


def default_workers() -> int:
    """Worker processes for a large export: one a core, up to four (more add little: the export
    reads the store on one)."""
    return min(4, os.cpu_count() or 1)


#: Records a worker's task holds, about (whole trees): enough that passing its entries costs little
#: beside the work, few enough that the workers share a selection's long runs evenly.
TASK_RECORDS = 1_000
#: An export of fewer trees makes them itself: starting workers costs more than they save.
POOL_FROM_TREES = 100
_ENCODING_MODULES = ("opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.common.trace_encoder",
                     "google.protobuf.json_format", "genai_prices")  # fmt: skip


class _Makers:
    """Where trees are made into lines: on the export's own process, or, for many trees on a
    machine of several cores, on worker processes while the export reads on (decoding, mapping
    and encoding are nearly all of an export's CPU; the SDK's encoder and protobuf's JSON
    printer are pure Python)."""

    def __init__(self, options: TraceOptions, runs: int, workers: int) -> None:
        """``runs``: how many runs were named or selected (trees are as many, or fewer)."""
        self.options = options
        self.workers = workers
        self.pooled = runs >= POOL_FROM_TREES and workers > 1 and options.replayer is None  # a replay reads the store
        self.pool: ProcessPoolExecutor | None = None

    async def __aenter__(self) -> _Makers:
        if self.pooled:
            context = multiprocessing.get_context("forkserver")
            # Each worker forks from a server that imported the SDK and the encoders once.
            context.set_forkserver_preload([__name__, *_ENCODING_MODULES])
            self.pool = ProcessPoolExecutor(self.workers, mp_context=context, initializer=_quiet_worker)
            for _ in range(self.workers):  # started now: they import while the export lists and reads
                self.pool.submit(_ready)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if self.pool is not None:  # done: the workers are waited for; stopped: told to stop at once
            self.pool.shutdown(wait=kind is None, cancel_futures=True)

    async def made(self, store: Store, ids: Sequence[Sequence[str]]) -> AsyncIterator[_Made]:
        """Each tree made, in the order read."""
        if self.pool is None:
            of, by = resource(), scope()
            async for root, spans in _spans_read(store, ids, self.options):
                yield _made(root, spans, of, by)
            return
        trees = _read_trees(store, ids)
        loop = asyncio.get_running_loop()
        pending: deque[asyncio.Future[list[_Made]]] = deque()
        task: list[_Tree] = []
        records = 0
        async for tree in trees:
            task.append(tree)
            records += sum(map(len, tree.entries.values()))
            if records < TASK_RECORDS:
                continue
            pending.append(loop.run_in_executor(self.pool, made_trees, task, self.options))
            task, records = [], 0
            while pending and (pending[0].done() or len(pending) > 2 * self.workers):
                for made in await pending.popleft():
                    yield made
        if task:
            pending.append(loop.run_in_executor(self.pool, made_trees, task, self.options))
        while pending:
            for made in await pending.popleft():
                yield made


def _ready() -> None:
    """A worker's first task: nothing, so that it starts."""


def _quiet_worker() -> None:
    """A worker leaves ctrl+c to the export (which stops it): no traceback of its own on the terminal."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# -- to a file -----------------------------------------------------------------------------------


async def export_trace_file(
    store: Store,
    run_ids: Sequence[str],
    path: str | os.PathLike[str] | IO[str],
    options: TraceOptions,
    *,
    force: bool = False,
    workers: int = 1,
    on_progress: Callable[[TraceProgress], None] | None = None,
) -> TraceReport:
    """Write ``run_ids`` (with the runs below them) as OTLP JSON lines, a trace a line. ``path``
    is a file (written under a temporary name and renamed, never over a file unless ``force``) or
    an open text stream. ``options`` say what the spans carry (``TraceOptions``).

    ``workers`` above 1 makes the lines of many runs (``POOL_FROM_TREES``) on that many worker
    processes (``default_workers()``: one a core, up to four), started from a fresh interpreter
    that imports the calling program's main module again, as ``multiprocessing`` does: a script
    that asks for them runs its own work under ``if __name__ == "__main__"`` (the ``agenttui``
    command does)."""
    redactor_of(options.redact)  # a bad path is refused before anything is read
    target = None
    if isinstance(path, str | os.PathLike):
        target = await check_replaceable(path, force=force, protect=[store.file_path])
    report = TraceReport(path=target)

    async def write(out: IO[str]) -> None:
        async with _Makers(options, len(run_ids), workers) as makers:
            trees = await _tree_ids(store, run_ids)
            async for made in makers.made(store, trees):
                out.write(made.line + "\n")
                report.add(made.traced)
                if on_progress is not None:
                    on_progress(TraceProgress(len(report.traces), len(trees), made.traced.root))

    if target is None:
        await write(cast(IO[str], path))
    else:
        async with streamed_text_file(target, force=force, protect=[store.file_path], failure=TraceWriteError) as out:
            await write(out)
    return report


# -- over OTLP/HTTP ------------------------------------------------------------------------------


def traces_endpoint(url: str) -> str:
    """The URL spans are posted to: ``url`` itself when it ends in ``/v1/traces``, else that path
    added to it (``http://collector:4318`` → ``http://collector:4318/v1/traces``), as the SDK
    does with ``OTEL_EXPORTER_OTLP_ENDPOINT``."""
    if url.rstrip("/").endswith("/v1/traces"):
        return url
    return url.rstrip("/") + "/v1/traces"


async def send_traces(
    store: Store,
    run_ids: Sequence[str],
    url: str | None,
    options: TraceOptions,
    *,
    headers: dict[str, str] | None = None,
    request_seconds: float | None = None,
    on_progress: Callable[[TraceProgress], None] | None = None,
) -> TraceReport:
    """Send ``run_ids`` (with the runs below them) over OTLP/HTTP to ``url`` (None: where the
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` variables say, as
    the SDK reads them; its ``*_HEADERS``, ``*_TIMEOUT``, ``*_COMPRESSION`` and certificate
    variables too). ``headers`` are added to those the variables give; ``request_seconds`` bounds
    each request, its retries included (None: ``OTEL_EXPORTER_OTLP_TIMEOUT``, else 10 s). Raises
    ``TraceSendError`` naming the runs sent before a request failed."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    redactor_of(options.redact)  # a bad path is refused before anything is sent
    exporter = OTLPSpanExporter(endpoint=traces_endpoint(url) if url else None,
                                headers=_headers(headers), timeout=request_seconds)  # fmt: skip
    report = TraceReport()
    of, by = resource(), scope()
    batch: list[ReadableSpan] = []
    batch_runs: list[str] = []
    sent: list[str] = []
    trees: list[list[str]] = []

    async def flush() -> None:
        if not batch:
            return
        with _failures_heard() as heard:
            result = await asyncio.to_thread(exporter.export, list(batch))
        if result is not SpanExportResult.SUCCESS:
            why = heard[-1] if heard else "no reason given"
            raise TraceSendError(f"{resolved_endpoint(url)}: {why}", sent, batch_runs, len(trees) - len(report.traces))
        sent.extend(batch_runs)
        batch.clear()
        batch_runs.clear()

    try:
        trees = await _tree_ids(store, run_ids)
        async for root, spans in _spans_read(store, trees, options):
            report.add(_Traced.of(root, spans))
            batch.extend(readable_spans(spans, of, by))
            batch_runs.append(root)
            if len(batch) >= BATCH_SPANS:
                await flush()
            if on_progress is not None:
                on_progress(TraceProgress(len(report.traces), len(trees), root))
        await flush()
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated
    return report


def resolved_endpoint(url: str | None) -> str:
    """Where spans go: ``url``'s traces endpoint, else the one the variables name, as the SDK
    resolves it (for messages: never the headers, which may hold a key)."""
    if url:
        return traces_endpoint(url)
    if signal := os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return signal
    return traces_endpoint(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "http://localhost:4318")


def _headers(given: dict[str, str] | None) -> dict[str, str] | None:
    """The headers the variables give, with ``given`` added (None: the SDK reads the variables)."""
    if not given:
        return None
    from opentelemetry.util.re import parse_env_headers

    from_env = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or os.environ.get("OTEL_EXPORTER_OTLP_HEADERS", "")
    return {**parse_env_headers(from_env, liberal=True), **given}


@contextmanager
def _failures_heard() -> Iterator[list[str]]:
    """What the SDK's exporter logs while it sends, kept (the last is why a request failed) and
    kept off standard error: an endpoint's reason is said once, inert, by the caller."""
    from agenttui.journal.inert import printable

    heard: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            heard.append(printable(record.getMessage()))

    logger = logging.getLogger("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    keep, propagate = Keep(logging.WARNING), logger.propagate
    logger.addHandler(keep)
    logger.propagate = False
    try:
        yield heard
    finally:
        logger.removeHandler(keep)
        logger.propagate = propagate

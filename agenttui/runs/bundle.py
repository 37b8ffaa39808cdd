"""Portable run bundles: runs exported to one SQLite file anyone can open, and imported elsewhere.

The API (the CLI's ``export``/``import`` and the TUI call these, nothing else):

- ``await export_runs(store, run_ids, path, *, sub_runs=True, redact=(), drop_undecodable=False,
  force=False, on_progress=None) -> ExportReport``: a new SQLite store at ``path``, in the
  current layout, holding each run (and, with ``sub_runs``, every run under it: ids
  ``<run>>…``), each entry's bytes exactly as ``store.load`` yields them, except for the values
  ``redact`` names (``journal.redact``). Leases are not copied. Raises ``RunNotFoundError`` for a
  run with no records, ``BundleExistsError`` when ``path`` is taken (unless ``force``),
  ``RedactionError`` for a bad path, ``UndecodableRecordsError`` (naming every one) when
  redacting meets records that are not JSON, whose values cannot be looked for, unless
  ``drop_undecodable`` leaves them out (the report and the manifest name them). Written to a
  temporary file and renamed: a failure leaves nothing at ``path``.
- ``await export_jsonl(store, run_ids, path_or_stream, *, ...same...) -> ExportReport``: one
  decoded record a line, ``{"run_id", "index", ...record_json}`` (what ``show --json`` prints).
- ``await select_runs(store, *, states=(), text="") -> list[str]``: the runs in any of
  ``states`` whose id, status or detail contains ``text`` (the runs list's filters), for
  exporting many runs at once.
- ``await import_runs(bundle, store, *, prefix="", skip_damaged=False, on_progress=None) ->
  ImportReport``: every run of ``bundle`` (a ``Store``, or a path/URL opened read-only) copied
  into ``store`` under ``prefix + run_id``, each run in one transaction through the store's
  at-most-once ``insert_many``: a run is in the store whole or not at all, whatever stops the
  import (``BundleImport`` does it, and says which runs it wrote). Every run is checked before
  anything is written: rows that cannot be copied as they are (a run id, step name, data or seq
  of the wrong type; a step name twice in a run) raise ``BundleDamaged``, naming run, row and
  why, and nothing is written (``skip_damaged`` leaves those runs and their trees out instead); a
  run the store already holds with other records raises ``ImportConflict`` (naming each such
  run) and nothing is written; a run it holds identically is skipped; a run it holds a
  beginning of, byte for byte, is completed. A failure while writing raises ``ImportStopped``,
  naming the runs written and those not.
- ``await read_manifest(store) -> BundleManifest | None``: what a bundle says of itself (its
  source, its runs, which paths were redacted and how many values each, the records left out),
  or None for a store that is no bundle. ``replay`` reads it to leave redacted values out of the comparison.
- ``on_progress(BundleProgress)`` is called after each run.

``docs/decisions.md`` ("Bundles") records the choices the format leaves open.
"""

from __future__ import annotations

import json
import os
from bisect import bisect_left
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, cast

from agenttui.errors import AgentTuiError, ConfigError, CorruptRecordError, RunNotFoundError
from agenttui.journal.inert import printable, printable_id
from agenttui.journal.redact import MARKER, RedactionError, Redactor, RedactPath, opaque_values
from agenttui.runs.state import RunState
from agenttui.stores.base import Entry, StepTakenError, Store
from agenttui.stores.bundle_file import BundleExistsError, BundleFile
from agenttui.stores.bundle_file import read_manifest as read_manifest_rows
from agenttui.stores.files import check_replaceable, partial_path, place_file, remove_own_file

if TYPE_CHECKING:
    from agenttui.runs.status import RunStatus
    from agenttui.runs.where import Where

__all__ = [
    "BUNDLE_FORMAT",
    "BundleDamaged",
    "BundleExistsError",
    "BundleImport",
    "BundleManifest",
    "BundleProgress",
    "DamagedRow",
    "DamagedRun",
    "ExportReport",
    "ExportedRun",
    "ImportConflict",
    "ImportReport",
    "ImportStopped",
    "ImportedRun",
    "LeftOut",
    "RunConflict",
    "UndecodableRecord",
    "UndecodableRecordsError",
    "export_jsonl",
    "export_runs",
    "import_runs",
    "read_manifest",
    "select_runs",
    "unredacted_lines",
]

BUNDLE_FORMAT = "agenttui.bundle.v1"
"""The ``format`` a bundle's manifest names."""

#: Rows handed to the bundle's writer at a time: large enough that the hand-offs to its thread
#: cost nothing, small enough that a long run is never held whole.
_WRITE_BATCH = 2048


@dataclass(frozen=True, slots=True)
class BundleProgress:
    """Where an export or import stands, after each run."""

    runs_done: int
    runs_total: int
    run_id: str
    """The run just copied."""
    records: int
    """Records copied so far, all runs."""


@dataclass(frozen=True, slots=True)
class UndecodableRecord:
    """A record whose bytes are not JSON, so that redaction cannot look inside it."""

    run_id: str
    name: str
    reason: str
    """Where the bytes stop being JSON (by byte offset; never quoting them)."""


@dataclass(frozen=True, slots=True)
class ExportedRun:
    run_id: str
    records: int
    """Records written (those left out not counted)."""
    redacted: dict[str, int] = field(default_factory=dict)
    """Values replaced in this run, by redaction path."""
    dropped: tuple[UndecodableRecord, ...] = ()
    """Records left out because they are not JSON (``drop_undecodable``)."""
    opaque: dict[str, int] = field(default_factory=dict)
    """Values written that redaction could not look inside, by what they are (an image's data)."""
    kept_in_names: tuple[tuple[str, str], ...] = ()
    """(step name, path): a value the path replaced that the step name still holds."""


@dataclass(frozen=True, slots=True)
class ExportReport:
    path: Path | None
    """The bundle written (None for JSON lines written to a stream)."""
    runs: tuple[ExportedRun, ...]
    redactions: tuple[tuple[str, int], ...]
    """Each redaction path asked for, and how many values it replaced in all."""

    @property
    def records(self) -> int:
        return sum(r.records for r in self.runs)

    @property
    def dropped(self) -> tuple[UndecodableRecord, ...]:
        return tuple(record for run in self.runs for record in run.dropped)


@dataclass(frozen=True, slots=True)
class BundleManifest:
    """What a bundle says of itself (its ``agenttui_bundle`` table)."""

    format: str
    source: str
    """The store it was exported from, as ``display_url`` shows it (no password)."""
    exported_at: str
    runs: tuple[ExportedRun, ...]
    redactions: tuple[tuple[str, int], ...]
    marker: str = MARKER

    @property
    def redacted(self) -> bool:
        return any(count for _, count in self.redactions)

    def redacted_in(self, run_id: str) -> tuple[str, ...]:
        """The redaction paths that replaced a value in ``run_id``."""
        for run in self.runs:
            if run.run_id == run_id:
                return tuple(path for path, count in run.redacted.items() if count)
        return ()

    def redactor(self) -> Redactor:
        """The bundle's redaction, to apply to other records (a replay's) the same way. A path
        an earlier build took that names only what a run is read by is left out: it could
        replace nothing then either."""
        paths = []
        for path, _ in self.redactions:
            try:
                RedactPath.parse(path)
            except RedactionError:
                continue
            paths.append(path)
        return Redactor(paths)

    def rows(self) -> dict[str, str]:
        return {
            "format": self.format,
            "source": self.source,
            "exported_at": self.exported_at,
            "marker": self.marker,
            "runs": json.dumps([_run_row(r) for r in self.runs]),
            "redactions": json.dumps([{"path": path, "values": count} for path, count in self.redactions]),
        }

    @classmethod
    def of_rows(cls, rows: dict[str, str]) -> BundleManifest:
        """Read leniently: a member missing or malformed reads as empty."""
        runs: list[ExportedRun] = []
        redactions: list[tuple[str, int]] = []
        try:
            runs = [_run_of_row(run) for run in json.loads(rows.get("runs", "[]"))]
        except (ValueError, TypeError, KeyError, AttributeError):
            runs = []
        try:
            redactions = [(str(r["path"]), int(r.get("values", 0))) for r in json.loads(rows.get("redactions", "[]"))]
        except (ValueError, TypeError, KeyError, AttributeError):
            redactions = []
        return cls(
            rows.get("format", ""), rows.get("source", ""), rows.get("exported_at", ""), tuple(runs),
            tuple(redactions), rows.get("marker", MARKER),
        )  # fmt: skip


def _run_row(run: ExportedRun) -> dict[str, object]:
    """A run in the manifest: what it says only when there is something to say (bundles
    exported with nothing left out read as they always did)."""
    row: dict[str, object] = {"run_id": run.run_id, "records": run.records, "redacted": run.redacted}
    if run.dropped:
        row["dropped"] = [{"name": r.name, "reason": r.reason} for r in run.dropped]
    if run.opaque:
        row["opaque"] = run.opaque
    if run.kept_in_names:
        row["kept_in_names"] = [{"name": name, "path": path} for name, path in run.kept_in_names]
    return row


def _run_of_row(row: Any) -> ExportedRun:
    """A run of the manifest; raises ValueError, TypeError, KeyError or AttributeError where it
    is malformed."""
    run_id = str(row["run_id"])
    return ExportedRun(
        run_id,
        int(row.get("records", 0)),
        {str(k): int(v) for k, v in dict(row.get("redacted") or {}).items()},
        tuple(UndecodableRecord(run_id, str(d["name"]), str(d.get("reason", ""))) for d in row.get("dropped") or ()),
        {str(k): int(v) for k, v in dict(row.get("opaque") or {}).items()},
        tuple((str(k["name"]), str(k["path"])) for k in row.get("kept_in_names") or ()),
    )


async def read_manifest(store: Store) -> BundleManifest | None:
    """What a bundle says of itself, or None for a store that is no bundle."""
    rows = await read_manifest_rows(store)
    return None if rows is None else BundleManifest.of_rows(rows)


# -- export -----------------------------------------------------------------------------------


#: From this many runs on, the store's runs are listed once, not looked up run by run (two
#: queries a run: 4 s of CPU for 10,000 runs of the production-shaped store).
LIST_ONCE_FROM = 100


async def bundle_run_ids(store: Store, run_ids: Sequence[str], *, sub_runs: bool = True) -> list[str]:
    """``run_ids`` and, with ``sub_runs``, every run under each, once each, parents first.
    Raises ``RunNotFoundError`` for a run with no records."""
    if store.IMPLEMENTS_LISTING and len(run_ids) >= LIST_ONCE_FROM:
        return _chosen_from_listing([run_id async for run_id in store.runs()], run_ids, sub_runs=sub_runs)
    chosen: dict[str, None] = {}
    for run_id in run_ids:
        if run_id in chosen:
            continue
        if await _first(store.load(run_id)) is None:
            raise RunNotFoundError(run_id)
        chosen[run_id] = None
        if sub_runs and store.IMPLEMENTS_LISTING:
            async for child in store.runs(prefix=run_id + ">"):
                chosen.setdefault(child, None)
    return list(chosen)


def _chosen_from_listing(listed: list[str], run_ids: Sequence[str], *, sub_runs: bool) -> list[str]:
    """``bundle_run_ids`` from every run the store lists, in its ascending byte order (code
    point order, as UTF-8 keeps it): a run's sub-runs sit right after it."""
    chosen: dict[str, None] = {}
    for run_id in run_ids:
        if run_id in chosen:
            continue
        at = bisect_left(listed, run_id)
        if at == len(listed) or listed[at] != run_id:
            raise RunNotFoundError(run_id)
        chosen[run_id] = None
        if sub_runs:
            prefix = run_id + ">"
            at = bisect_left(listed, prefix, at)
            while at < len(listed) and listed[at].startswith(prefix):
                chosen.setdefault(listed[at], None)
                at += 1
    return list(chosen)


async def _first(entries: AsyncIterator[Entry]) -> Entry | None:
    """The first of ``entries``, the iteration closed at once (A8: nothing held after)."""
    try:
        return await anext(entries, None)
    finally:
        if isinstance(entries, AsyncGenerator):
            await entries.aclose()


async def select_runs(
    store: Store,
    *,
    states: Collection[RunState] = (),
    text: str = "",
    where: Where | None = None,
    sample: int | None = None,
) -> list[str]:
    """The runs in any of ``states`` (every state when empty) whose id, status or detail
    contains ``text`` (case-insensitive) and that ``where`` matches, in run id order; with
    ``sample``, that many of them spread over their statuses and tools (``sampled``)."""
    from agenttui.runs.status import list_statuses

    needle = text.lower()
    now = datetime.now(UTC)
    chosen: list[RunStatus] = []
    async for status in list_statuses(store):
        if states and status.state not in states:
            continue
        if needle and needle not in f"{status.run_id.lower()} {status.detail.lower()} {status.state.value}":
            continue
        if where is not None and not where.matches(status, now):
            continue
        chosen.append(status)
    return sampled(chosen, sample) if sample is not None else [status.run_id for status in chosen]


def sampled(statuses: Sequence[RunStatus], count: int) -> list[str]:
    """``count`` of the runs, spread over their statuses and the tools they wait on: grouped by
    both, the groups take turns (the largest first: the common path is always in), each group's
    runs taken evenly spaced through it (run id order), so a few long-tail cases are not crowded
    out by thousands of complete runs. The same runs every time, in run id order: a suite built from it is
    reproducible."""
    groups: dict[tuple[str, str], list[RunStatus]] = {}
    for status in statuses:
        groups.setdefault((status.state.value, status.tool_name), []).append(status)
    quota = dict.fromkeys(groups, 0)
    left = min(count, len(statuses))
    while left:
        for group in sorted(groups, key=lambda g: (-len(groups[g]), g)):
            if left and quota[group] < len(groups[group]):
                quota[group] += 1
                left -= 1
    chosen = []
    for group, taken in quota.items():
        runs = groups[group]
        chosen += [runs[(2 * k + 1) * len(runs) // (2 * taken)].run_id for k in range(taken)] if taken else []
    return sorted(chosen)


async def export_runs(
    store: Store,
    run_ids: Sequence[str],
    path: str | os.PathLike[str],
    *,
    sub_runs: bool = True,
    redact: Sequence[str] = (),
    drop_undecodable: bool = False,
    force: bool = False,
    on_progress: Callable[[BundleProgress], None] | None = None,
) -> ExportReport:
    """Write ``run_ids`` (and their sub-runs) to a new bundle at ``path``; see the module's doc."""
    redacting = _Redacting(Redactor(redact), drop_undecodable)
    await check_replaceable(path, force=force, protect=[store.file_path])  # before the runs are read
    ids = await bundle_run_ids(store, run_ids, sub_runs=sub_runs)
    bundle = await BundleFile.create(path, force=force, protect=[store.file_path])
    exported: list[ExportedRun] = []
    try:
        batch: list[tuple[str, str, bytes]] = []
        copied = 0
        for run_id in ids:
            run = redacting.run(run_id)
            async for entry in store.load(run_id):
                data = run.bytes_of(entry)
                if data is None or redacting.refused:  # once refused, read on only to name them all
                    continue
                batch.append((run_id, entry.name, data))
                if len(batch) >= _WRITE_BATCH:
                    await bundle.add(batch)
                    batch = []
            exported.append(run.exported())
            copied += run.records
            if on_progress is not None:
                on_progress(BundleProgress(len(exported), len(ids), run_id, copied))
        redacting.refuse()
        if batch:
            await bundle.add(batch)
        report = _report(bundle.path, exported, redacting.redactor)
        manifest = BundleManifest(BUNDLE_FORMAT, store.display_url, _now(), report.runs, report.redactions, MARKER)
        await bundle.finish(manifest.rows())
    except BaseException:
        await bundle.abort()
        raise
    return report


async def export_jsonl(
    store: Store,
    run_ids: Sequence[str],
    path: str | os.PathLike[str] | IO[str],
    *,
    sub_runs: bool = True,
    redact: Sequence[str] = (),
    drop_undecodable: bool = False,
    force: bool = False,
    on_progress: Callable[[BundleProgress], None] | None = None,
) -> ExportReport:
    """Write ``run_ids`` (and their sub-runs) as JSON lines, one decoded record a line:
    ``{"run_id", "index"}`` and what ``record_json`` (``show --json``) gives. ``path`` is a file
    (written under a temporary name and renamed, never over a file unless ``force``) or an open
    text stream (where the lines before a record refused have been written: a stream cannot be
    taken back)."""
    from agenttui.journal.describe import record_json
    from agenttui.journal.inert import safe_json
    from agenttui.journal.journal import decode_entry

    redacting = _Redacting(Redactor(redact), drop_undecodable)
    target = None
    if isinstance(path, str | os.PathLike):
        target = await check_replaceable(path, force=force, protect=[store.file_path])
    ids = await bundle_run_ids(store, run_ids, sub_runs=sub_runs)
    exported: list[ExportedRun] = []

    async def write(out: IO[str]) -> None:
        copied = 0
        for run_id in ids:
            run = redacting.run(run_id)
            index = -1  # as `show` numbers the records: one left out keeps its number
            async for entry in store.load(run_id):
                index += 1
                data = run.bytes_of(entry)
                if data is None or redacting.refused:
                    continue
                record = decode_entry(Entry(entry.seq, entry.name, data, entry.damage))
                out.write(safe_json({"run_id": run_id, "index": index} | record_json(record), indent=None) + "\n")
            exported.append(run.exported())
            copied += run.records
            if on_progress is not None:
                on_progress(BundleProgress(len(exported), len(ids), run_id, copied))
        redacting.refuse()

    if target is None:
        await write(cast(IO[str], path))
        return _report(None, exported, redacting.redactor)
    try:
        partial = partial_path(target)
    except OSError as exc:
        raise BundleWriteError(f"cannot write in {target.parent}: {exc.strerror or exc}") from exc
    try:
        with open(partial, "w", encoding="utf-8", newline="\n") as out:  # noqa: ASYNC230  (small writes, buffered)
            await write(out)
        await check_replaceable(target, force=force, protect=[store.file_path])  # taken meanwhile?
        place_file(partial, target, force=force)
    except OSError as exc:
        remove_own_file(partial)
        raise BundleWriteError(f"cannot write {target}: {exc.strerror or exc}") from exc
    except BaseException:
        remove_own_file(partial)
        raise
    return _report(target, exported, redacting.redactor)


class BundleWriteError(AgentTuiError):
    """The bundle's file could not be written."""

    title = "Cannot write"


class UndecodableRecordsError(AgentTuiError):
    """Redaction met records that are not JSON: nothing in them can be looked for, so nothing
    was exported (``drop_undecodable`` leaves them out instead)."""

    title = "Cannot redact"

    def __init__(self, records: Sequence[UndecodableRecord]) -> None:
        named = "; ".join(f"run {r.run_id!r} step {r.name!r} ({r.reason})" for r in records[:5])
        more = f"; and {len(records) - 5} more" if len(records) > 5 else ""
        count = f"{len(records)} record{'s' * (len(records) != 1)}"
        super().__init__(
            f"{count} cannot be redacted, so nothing was written: {named}{more}; "
            "--drop-undecodable leaves them out of the export"
        )
        self.records = tuple(records)


class _Redacting:
    """An export's redaction, run by run: each record's bytes to write, and what it could not
    redact (records that are not JSON: refused, or dropped when asked)."""

    def __init__(self, redactor: Redactor, drop_undecodable: bool) -> None:
        if drop_undecodable and not redactor:
            raise ConfigError("--drop-undecodable leaves out records that cannot be redacted: it goes with --redact")
        self.redactor = redactor
        self.drop_undecodable = drop_undecodable
        self.undecodable: list[UndecodableRecord] = []

    @property
    def refused(self) -> bool:
        """Whether the export will be refused: records it cannot redact, and no leave to drop them."""
        return bool(self.undecodable) and not self.drop_undecodable

    def run(self, run_id: str) -> _RunRedaction:
        return _RunRedaction(self, run_id)

    def refuse(self) -> None:
        """Raise ``UndecodableRecordsError`` if the export is refused."""
        if self.refused:
            raise UndecodableRecordsError(self.undecodable)


class _RunRedaction:
    """One run of an export: its records' bytes, and what was redacted, dropped or kept."""

    def __init__(self, export: _Redacting, run_id: str) -> None:
        self.export = export
        self.run_id = run_id
        self.records = 0
        self.counts: Counter[str] = Counter()
        self.dropped: list[UndecodableRecord] = []
        self.opaque: Counter[str] = Counter()
        self.kept_in_names: dict[tuple[str, str], None] = {}

    def bytes_of(self, entry: Entry) -> bytes | None:
        """The bytes to export for ``entry``, redacted; None to leave it out (not JSON)."""
        redactor = self.export.redactor
        if not redactor:
            self.records += 1
            return entry.data
        try:
            redacted = redactor.redact(entry.data, entry.name)
        except CorruptRecordError as exc:
            record = UndecodableRecord(self.run_id, entry.name, exc.message)
            self.export.undecodable.append(record)
            if self.export.drop_undecodable:
                self.dropped.append(record)
            return None
        self.records += 1
        if redacted.counts:
            self.counts.update(redacted.counts)
            self.kept_in_names.update(((entry.name, path), None) for path in redacted.kept_in_name)
        if opaque := opaque_values(redacted.data):
            self.opaque.update(opaque)
        return redacted.data

    def exported(self) -> ExportedRun:
        return ExportedRun(
            self.run_id,
            self.records,
            _in_order(self.counts, self.export.redactor),
            tuple(self.dropped),
            dict(sorted(self.opaque.items())),
            tuple(self.kept_in_names),
        )


def unredacted_lines(report: ExportReport, *, listed: int = 20) -> list[str]:
    """What an export's redaction could not do, for a person (inert text, ``listed`` records a
    list at most): records left out, values it could not look inside, redacted values a step
    name still holds. Empty when there is nothing to say."""
    lines = []
    dropped = report.dropped
    if dropped:
        lines.append(f"left out {len(dropped):,} record{'s' * (len(dropped) != 1)} that cannot be redacted (not JSON):")
        lines += [f"  {printable_id(r.run_id)}  {printable(r.name)}: {printable(r.reason)}" for r in dropped[:listed]]
        if len(dropped) > listed:
            lines.append(f"  ... and {len(dropped) - listed:,} more")
    opaque: Counter[str] = Counter()
    for run in report.runs:
        opaque.update(run.opaque)
    if opaque:
        held = ", ".join(f"{count:,} {what}" for what, count in sorted(opaque.items()))
        lines.append(f"not looked inside: {held} (a path naming them replaces them whole)")
    kept = [(run.run_id, name, path) for run in report.runs for name, path in run.kept_in_names]
    if kept:
        lines.append("still in step names (names are never rewritten):")
        lines += [
            f"  {printable_id(run_id)}  {printable(name)}: a value {printable(path)} replaced"
            for run_id, name, path in kept[:listed]
        ]
        if len(kept) > listed:
            lines.append(f"  ... and {len(kept) - listed:,} more")
    return lines


def _in_order(counts: Counter[str], redactor: Redactor) -> dict[str, int]:
    return {path: counts[path] for path in redactor.texts if counts[path]}


def _report(path: Path | None, exported: list[ExportedRun], redactor: Redactor) -> ExportReport:
    totals = {path: sum(run.redacted.get(path, 0) for run in exported) for path in redactor.texts}
    return ExportReport(path, tuple(exported), tuple(totals.items()))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


# -- import -----------------------------------------------------------------------------------

ImportOutcome = Literal["imported", "identical", "completed"]

#: Runs a message names one by one; beyond, it counts them.
NAMED_RUNS = 5
#: Rows a damaged run's reason names one by one; beyond, it counts them.
NAMED_ROWS = 3


@dataclass(frozen=True, slots=True)
class ImportedRun:
    run_id: str
    """The run's id in the bundle."""
    target_id: str
    """Its id in the store (``prefix + run_id``)."""
    outcome: ImportOutcome
    """``imported`` (new to the store), ``identical`` (already there, byte for byte: skipped),
    ``completed`` (the store held its first records, byte for byte)."""
    written: int
    records: int


@dataclass(frozen=True, slots=True)
class DamagedRow:
    """A row of a bundle's run that an import cannot copy as it is."""

    index: int
    """Its place in the run, from 0, as ``show`` numbers records."""
    seq: object
    """Its seq, as stored."""
    name: str | None
    """Its step name; None when the name is not text (what reading shows for it is a stand-in)."""
    why: str

    def __str__(self) -> str:
        named = "" if self.name is None else f", {self.name!r}"
        return f"record {self.index} (seq {self.seq!r}{named}): {self.why}"


@dataclass(frozen=True, slots=True)
class DamagedRun:
    """A run of the bundle holding rows an import cannot copy as they are."""

    run_id: str
    """As the bundle lists it (for an id that is not stored as text, the stand-in it is shown as)."""
    rows: tuple[DamagedRow, ...]
    """The first of those rows (``NAMED_ROWS`` at most)."""
    count: int
    """How many rows of the run are damaged."""

    @property
    def reason(self) -> str:
        if not self.count:
            return "it is listed, but none of its rows reads back"
        more = self.count - len(self.rows)
        return "; ".join(map(str, self.rows)) + (f"; and {more} more row{'s' * (more != 1)}" if more else "")


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A run an import left out (``skip_damaged``), and why."""

    run_id: str
    target_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class ImportReport:
    source: str
    runs: tuple[ImportedRun, ...]
    redacted: tuple[str, ...] = ()
    """The bundle's redaction paths that replaced values (its runs carry the marker)."""
    left_out: tuple[LeftOut, ...] = ()
    """The runs left out because they, or a run of their tree, are damaged (``skip_damaged``)."""

    @property
    def written(self) -> int:
        return sum(r.written for r in self.runs)


@dataclass(frozen=True, slots=True)
class RunConflict:
    run_id: str
    target_id: str
    reason: str


def _named(ids: Sequence[str], limit: int = NAMED_RUNS) -> str:
    """``'a', 'b' and 3 more``: the first ``limit`` of ``ids``, then how many others."""
    shown = ", ".join(repr(run_id) for run_id in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _runs(count: int) -> str:
    return f"{count:,} run{'s' * (count != 1)}"


def _written_before(written: Sequence[ImportedRun]) -> str:
    if not written:
        return "nothing was written"
    were = "was" if len(written) == 1 else "were"
    return f"{_runs(len(written))} {were} written before, each whole: {_named([r.target_id for r in written])}"


class ImportConflict(AgentTuiError):
    """Runs the store already holds with other records. Found by the check, nothing of the
    bundle was written; found while writing (another writer took a run meanwhile), that run was
    not written, and ``written`` names the runs written before it."""

    title = "Import refused"

    def __init__(self, conflicts: Sequence[RunConflict], *, written: Sequence[ImportedRun] = ()) -> None:
        first = conflicts[0]
        super().__init__(
            f"the store already holds {'run' if len(conflicts) == 1 else 'runs'}"
            f" {_named([c.target_id for c in conflicts])} with other records"
            f" ({first.target_id!r}: {first.reason}); {_written_before(written)}"
        )
        self.conflicts = tuple(conflicts)
        self.written = tuple(written)


class BundleDamaged(AgentTuiError):
    """The bundle holds rows an import cannot copy as they are (a run id, a step name or data of
    the wrong type, a step name twice in one run): nothing was imported."""

    title = "Import refused"

    def __init__(self, damaged: Sequence[DamagedRun]) -> None:
        first = damaged[0]
        super().__init__(
            f"the bundle holds rows that cannot be copied as they are, in {_runs(len(damaged))}"
            f" ({_named([d.run_id for d in damaged])}); {first.run_id!r}: {first.reason}; nothing was imported"
        )
        self.runs = tuple(damaged)


class ImportStopped(AgentTuiError):
    """An import stopped partway (a store error, a full disk, a lost connection): every run is
    in the store whole or not at all, and the message says which were written."""

    title = "Import stopped"

    def __init__(self, cause: str, job: BundleImport) -> None:
        super().__init__(f"{cause}; {job.account()}")
        self.written = tuple(job.written)
        self.unwritten = tuple(job.unwritten)
        self.uncertain = job.uncertain


@dataclass(frozen=True, slots=True)
class _Plan:
    run_id: str
    target_id: str
    held: int
    """Records of the run the store holds already (its first ones, byte for byte)."""
    records: int
    outcome: ImportOutcome


class BundleImport:
    """One import of a bundle's runs into a store: ``check`` every run before anything is
    written, then ``write`` them, each run in one transaction (``insert_many``). However it
    ends, it says which runs it wrote and which it did not (``account``): after an error, and,
    for a front end that catches it, after an interruption."""

    def __init__(self, bundle: Store, store: Store, *, prefix: str = "", skip_damaged: bool = False) -> None:
        """Raises ``ConfigError`` for a prefix holding ``>`` and a store that cannot write a run
        in one transaction."""
        if ">" in prefix:
            raise ConfigError(f"--prefix {prefix!r}: a run id's first segment cannot hold '>' (it names sub-runs)")
        if not store.IMPLEMENTS_ATOMIC_INSERT_MANY:
            raise ConfigError(f"{store.display_url} cannot write a run in one transaction: nothing is imported into it")
        self.bundle = bundle
        self.store = store
        self.prefix = prefix
        self.skip_damaged = skip_damaged
        self.done: list[ImportedRun] = []
        """The runs dealt with so far: written, or found there already."""
        self.uncertain: str | None = None
        """The run being written when the import stopped, if the store could not say whether it
        holds it now (it holds it whole or not at all)."""
        self._plans: list[_Plan] = []
        self._left_out: list[LeftOut] = []
        self._checked = False
        self._writing: tuple[str, bytes] | None = None
        """The first record of the run being written, to ask the store for after a failure."""

    @property
    def written(self) -> list[ImportedRun]:
        """The runs written so far (each whole)."""
        return [run for run in self.done if run.written]

    @property
    def unwritten(self) -> list[str]:
        """The target ids of the runs not written (yet), but for ``uncertain`` and those the
        store holds already."""
        done = {run.run_id for run in self.done}
        return [
            p.target_id
            for p in self._plans
            if p.run_id not in done and p.outcome != "identical" and p.target_id != self.uncertain
        ]

    def account(self) -> str:
        """Which runs were written and which not, in a sentence."""
        written, unwritten = self.written, self.unwritten
        done = {run.run_id for run in self.done}
        # Already there: found so (nothing written), or to be found so when reached.
        there = len(self.done) - len(written)
        there += sum(plan.outcome == "identical" for plan in self._plans if plan.run_id not in done)
        parts = [
            f"{_runs(len(written))} written, each whole ({_named([r.target_id for r in written])})"
            if written
            else "nothing was written"
        ]
        if there:
            parts.append(f"{_runs(there)} already there")
        if unwritten:
            parts.append(f"{_runs(len(unwritten))} not written ({_named(unwritten)})")
        if self.uncertain:
            parts.append(
                f"whether {self.uncertain!r} was written could not be checked (it is there whole or not at all)"
            )
        if unwritten or self.uncertain:
            parts.append("import again to write the rest")
        return "; ".join(parts)

    async def run(self, on_progress: Callable[[BundleProgress], None] | None = None) -> ImportReport:
        """``check``, then ``write``."""
        await self.check()
        return await self.write(on_progress)

    async def check(self) -> None:
        """Compare every run of the bundle with what the store holds, writing nothing.

        Raises ``BundleDamaged`` for rows that cannot be copied as they are (unless
        ``skip_damaged``: then each such run, and every run of its tree, is left out), and
        ``ImportConflict`` for runs the store holds with other records."""
        from agenttui.journal.keys import root_run_id

        conflicts: list[RunConflict] = []
        damaged: list[DamagedRun] = []
        self._plans = []
        async for run_id in self.bundle.runs():
            target_id = self.prefix + run_id
            compared = await _compare(self.bundle, run_id, self.store, target_id)
            if compared.damaged is not None:
                damaged.append(compared.damaged)
            elif compared.reason:
                conflicts.append(RunConflict(run_id, target_id, compared.reason))
            else:
                held, total = compared.held, compared.records
                outcome: ImportOutcome = "identical" if held == total else "imported" if held == 0 else "completed"
                self._plans.append(_Plan(run_id, target_id, held, total, outcome))
        if damaged and not self.skip_damaged:
            raise BundleDamaged(damaged)
        # A run goes with its tree (the parent reads its sub-runs from their ids): a damaged run
        # takes the runs above and under it out with it.
        trees = {root_run_id(d.run_id): d.run_id for d in damaged}
        self._left_out = [LeftOut(d.run_id, self.prefix + d.run_id, d.reason) for d in damaged]
        for plan in self._plans:
            if (damaged_id := trees.get(root_run_id(plan.run_id))) is not None:
                self._left_out.append(LeftOut(plan.run_id, plan.target_id, f"its tree holds {damaged_id!r}, damaged"))
        self._plans = [p for p in self._plans if root_run_id(p.run_id) not in trees]
        conflicts = [c for c in conflicts if root_run_id(c.run_id) not in trees]
        if conflicts:
            raise ImportConflict(conflicts)
        self._checked = True

    async def write(self, on_progress: Callable[[BundleProgress], None] | None = None) -> ImportReport:
        """Write the runs ``check`` found, each in one transaction.

        Raises ``ImportStopped`` when the store (or the bundle) fails, naming the runs written
        and those not; ``ImportConflict`` when another writer took a name of a run meanwhile
        (then that run is not written). An interruption is raised as it came, ``account``
        saying what was written."""
        if not self._checked:
            await self.check()
        copied = 0
        for plan in self._plans:
            written = 0
            if plan.outcome != "identical":
                try:
                    written = await self._copy(plan)
                except StepTakenError as exc:
                    reason = f"{exc.name!r} was written meanwhile with other bytes, so none of the run was written"
                    raise ImportConflict(
                        [RunConflict(plan.run_id, plan.target_id, reason)], written=self.written
                    ) from exc
                except BaseException as exc:
                    await self._settle(plan)
                    if isinstance(exc, AgentTuiError | OSError):
                        raise ImportStopped(_cause(exc), self) from exc
                    raise
            copied += written
            self.done.append(ImportedRun(plan.run_id, plan.target_id, plan.outcome, written, plan.records))
            if on_progress is not None:
                on_progress(BundleProgress(len(self.done), len(self._plans), plan.run_id, copied))
        manifest = await read_manifest(self.bundle)
        redacted = tuple(path for path, count in manifest.redactions if count) if manifest else ()
        return ImportReport(self.bundle.display_url, tuple(self.done), redacted, tuple(self._left_out))

    async def _copy(self, plan: _Plan) -> int:
        """The run's records past those the store holds, in one ``insert_many``: the run is held
        in memory while it is written, the price of writing it in one transaction."""
        self._writing = None
        items = [(entry.name, entry.data) async for entry in _skipping(self.bundle.load(plan.run_id), plan.held)]
        if not items:
            return 0
        self._writing = items[0]
        inserted = await self.store.insert_many(plan.target_id, items, refuse_conflicts=True)
        self._writing = None
        return sum(outcome.won for outcome in inserted)

    async def _settle(self, plan: _Plan) -> None:
        """After a failure while ``plan``'s run was written: whether its transaction committed
        (the connection was lost or the process interrupted as it did). The run is whole or
        absent, so its first record says which."""
        if self._writing is None:  # it failed before the store was asked to write anything
            return
        name, data = self._writing
        try:
            found = await self.store.get(plan.target_id, name)
        except BaseException:  # the store is gone too: say so (the first failure is raised)
            self.uncertain = plan.target_id
            return
        if found is not None and found.data == data:
            written = plan.records - plan.held
            self.done.append(ImportedRun(plan.run_id, plan.target_id, plan.outcome, written, plan.records))


def _cause(exc: BaseException) -> str:
    if isinstance(exc, AgentTuiError):
        return f"{exc.title}: {exc.message}"
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}"
    return type(exc).__name__


async def import_runs(
    bundle: Store | str | os.PathLike[str],
    store: Store,
    *,
    prefix: str = "",
    skip_damaged: bool = False,
    on_progress: Callable[[BundleProgress], None] | None = None,
) -> ImportReport:
    """Copy every run of ``bundle`` into ``store``; see the module's doc."""
    if isinstance(bundle, Store):
        return await BundleImport(bundle, store, prefix=prefix, skip_damaged=skip_damaged).run(on_progress)
    from agenttui.stores import open_store

    source = await open_store(os.fspath(bundle), read_only=True, create=False)
    try:
        return await BundleImport(source, store, prefix=prefix, skip_damaged=skip_damaged).run(on_progress)
    finally:
        await source.close()


@dataclass(frozen=True, slots=True)
class _Compared:
    held: int
    """How many of the run's records the store holds already, as a beginning of it, in order,
    byte for byte."""
    records: int
    """How many the bundle holds."""
    reason: str
    """Why the store's run conflicts with the bundle's ("" when it does not)."""
    damaged: DamagedRun | None
    """The bundle's rows of the run that cannot be copied as they are, if any."""


async def _compare(bundle: Store, run_id: str, store: Store, target_id: str) -> _Compared:
    """The bundle's run against the store's (``_Compared``), every row of the bundle's read."""
    mine, theirs = aiter(bundle.load(run_id)), aiter(store.load(target_id))
    try:
        compared = await _matched(run_id, mine, theirs)
    finally:  # a conflict leaves the store's run part read: release what they hold now (A8)
        for entries in (mine, theirs):
            if isinstance(entries, AsyncGenerator):
                await entries.aclose()
    held, total = compared.held, compared.records
    if compared.damaged is None and not compared.reason and 0 < held < total and store.IMPLEMENTS_LEASES:
        from agenttui.journal.keys import root_run_id

        lease = await store.get_lease(root_run_id(target_id))
        if lease is not None and lease.live:
            reason = f"it holds the bundle's first {held} records and is being driven ({lease.holder})"
            return _Compared(held, total, reason, None)
    return compared


async def _matched(run_id: str, mine: AsyncIterator[Entry], theirs: AsyncIterator[Entry]) -> _Compared:
    held = total = 0
    ahead = True  # the store's records so far are the bundle's first ones
    reason = ""
    first_as: dict[str, int] = {}
    damaged: list[DamagedRow] = []
    count = 0
    async for entry in mine:
        index = total
        total += 1
        why = entry.damage or entry.retyped
        if not why and entry.name in first_as:
            # A file whose table lacks the unique constraint, or one written by hand: a store
            # keeps one record a name, so the run cannot be copied as it is.
            why = f"the run holds this step name twice (first as record {first_as[entry.name]})"
        first_as.setdefault(entry.name, index)
        if why:
            count += 1
            if len(damaged) < NAMED_ROWS:
                name = None if "its name is" in entry.damage else entry.name
                damaged.append(DamagedRow(index, entry.seq, name, why))
        if reason or not ahead:
            continue
        other = await anext(theirs, None)
        if other is None:
            ahead = False
        elif other.name != entry.name:
            reason = f"its record {held} is {other.name!r} where the bundle has {entry.name!r}"
        elif other.data != entry.data:
            reason = f"its record {held} ({entry.name}) holds other bytes than the bundle's"
        else:
            held += 1
    if not reason and ahead and (extra := await anext(theirs, None)) is not None:
        reason = f"it goes on past the bundle's {total} records (record {held} is {extra.name!r})"
    if count or not total:
        return _Compared(held, total, reason, DamagedRun(run_id, tuple(damaged), count))
    return _Compared(held, total, reason, None)


async def _skipping(entries: AsyncIterator[Entry], count: int) -> AsyncIterator[Entry]:
    async for entry in entries:
        if count:
            count -= 1
            continue
        yield entry

"""Portable run bundles: runs exported to one SQLite file anyone can open, and imported elsewhere.

The API (the CLI's ``export``/``import`` and the TUI call these, nothing else):

- ``await export_runs(store, run_ids, path, *, sub_runs=True, redact=(), force=False,
  on_progress=None) -> ExportReport``: a new SQLite store at ``path``, in the current layout,
  holding each run (and, with ``sub_runs``, every run under it: ids ``<run>>…``), each entry's
  bytes exactly as ``store.load`` yields them, except for the values ``redact`` names
  (``journal.redact``). Leases are not copied. Raises ``RunNotFoundError`` for a run with no
  records, ``BundleExistsError`` when ``path`` is taken (unless ``force``), ``RedactionError``
  for a bad path. Written to a temporary file and renamed: a failure leaves nothing at ``path``.
- ``await export_jsonl(store, run_ids, path_or_stream, *, ...same...) -> ExportReport``: one
  decoded record a line, ``{"run_id", "index", ...record_json}`` (what ``show --json`` prints).
- ``await select_runs(store, *, states=(), text="") -> list[str]``: the runs in any of
  ``states`` whose id, status or detail contains ``text`` (the runs list's filters), for
  exporting many runs at once.
- ``await import_runs(bundle, store, *, prefix="", on_progress=None) -> ImportReport``: every
  run of ``bundle`` (a ``Store``, or a path/URL opened read-only) copied into ``store`` through
  its at-most-once ``insert``, under ``prefix + run_id``. Every run is checked before anything is
  written: a run the store already holds with other records raises ``ImportConflict`` (naming
  each such run) and nothing is written; a run it holds identically is skipped; a run it holds a
  beginning of (an earlier import cut short) is completed.
- ``await read_manifest(store) -> BundleManifest | None``: what a bundle says of itself (its
  source, its runs, which paths were redacted and how many values each), or None for a store
  that is no bundle. ``replay`` reads it to leave redacted values out of the comparison.
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
from typing import IO, Literal, cast

from agenttui.errors import AgentTuiError, ConfigError, RunNotFoundError
from agenttui.journal.redact import MARKER, Redactor
from agenttui.runs.state import RunState
from agenttui.stores.base import Entry, Store
from agenttui.stores.bundle_file import BundleExistsError, BundleFile
from agenttui.stores.bundle_file import read_manifest as read_manifest_rows
from agenttui.stores.files import check_replaceable, partial_path, place_file, remove_partial

__all__ = [
    "BUNDLE_FORMAT",
    "BundleExistsError",
    "BundleManifest",
    "BundleProgress",
    "ExportReport",
    "ExportedRun",
    "ImportConflict",
    "ImportReport",
    "ImportedRun",
    "RunConflict",
    "export_jsonl",
    "export_runs",
    "import_runs",
    "read_manifest",
    "select_runs",
]

BUNDLE_FORMAT = "agenttui.bundle.v1"
"""The ``format`` a bundle's manifest names."""

#: Rows handed to the bundle's writer at a time: large enough that the hand-offs to its thread
#: cost nothing, small enough that a long run is never held whole.
_WRITE_BATCH = 2048
#: Entries handed to a store's ``insert_many`` at a time, on import.
_INSERT_BATCH = 1024


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
class ExportedRun:
    run_id: str
    records: int
    redacted: dict[str, int] = field(default_factory=dict)
    """Values replaced in this run, by redaction path."""


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
        """The bundle's redaction, to apply to other records (a replay's) the same way."""
        return Redactor([path for path, _ in self.redactions])

    def rows(self) -> dict[str, str]:
        return {
            "format": self.format,
            "source": self.source,
            "exported_at": self.exported_at,
            "marker": self.marker,
            "runs": json.dumps([{"run_id": r.run_id, "records": r.records, "redacted": r.redacted} for r in self.runs]),
            "redactions": json.dumps([{"path": path, "values": count} for path, count in self.redactions]),
        }

    @classmethod
    def of_rows(cls, rows: dict[str, str]) -> BundleManifest:
        """Read leniently: a member missing or malformed reads as empty."""
        runs: list[ExportedRun] = []
        redactions: list[tuple[str, int]] = []
        try:
            for run in json.loads(rows.get("runs", "[]")):
                redacted = {str(k): int(v) for k, v in dict(run.get("redacted") or {}).items()}
                runs.append(ExportedRun(str(run["run_id"]), int(run.get("records", 0)), redacted))
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


async def select_runs(store: Store, *, states: Collection[RunState] = (), text: str = "") -> list[str]:
    """The runs in any of ``states`` (every state when empty) whose id, status or detail
    contains ``text`` (case-insensitive), in run id order: the runs list's filters."""
    from agenttui.runs.status import list_statuses

    needle = text.lower()
    chosen = []
    async for status in list_statuses(store):
        if states and status.state not in states:
            continue
        if needle and needle not in f"{status.run_id.lower()} {status.detail.lower()} {status.state.value}":
            continue
        chosen.append(status.run_id)
    return chosen


async def export_runs(
    store: Store,
    run_ids: Sequence[str],
    path: str | os.PathLike[str],
    *,
    sub_runs: bool = True,
    redact: Sequence[str] = (),
    force: bool = False,
    on_progress: Callable[[BundleProgress], None] | None = None,
) -> ExportReport:
    """Write ``run_ids`` (and their sub-runs) to a new bundle at ``path``; see the module's doc."""
    redactor = Redactor(redact)
    await check_replaceable(path, force=force, protect=[store.file_path])  # before the runs are read
    ids = await bundle_run_ids(store, run_ids, sub_runs=sub_runs)
    bundle = await BundleFile.create(path, force=force, protect=[store.file_path])
    exported: list[ExportedRun] = []
    try:
        batch: list[tuple[str, str, bytes]] = []
        copied = 0
        for run_id in ids:
            counts: Counter[str] = Counter()
            records = 0
            async for entry in store.load(run_id):
                batch.append((run_id, entry.name, _redacted(entry, redactor, counts)))
                records += 1
                if len(batch) >= _WRITE_BATCH:
                    await bundle.add(batch)
                    batch = []
            copied += records
            exported.append(ExportedRun(run_id, records, _in_order(counts, redactor)))
            if on_progress is not None:
                on_progress(BundleProgress(len(exported), len(ids), run_id, copied))
        if batch:
            await bundle.add(batch)
        report = _report(bundle.path, exported, redactor)
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
    force: bool = False,
    on_progress: Callable[[BundleProgress], None] | None = None,
) -> ExportReport:
    """Write ``run_ids`` (and their sub-runs) as JSON lines, one decoded record a line:
    ``{"run_id", "index"}`` and what ``record_json`` (``show --json``) gives. ``path`` is a file
    (written under a temporary name and renamed, never over a file unless ``force``) or an open
    text stream."""
    from agenttui.journal.describe import record_json
    from agenttui.journal.inert import safe_json
    from agenttui.journal.journal import decode_entry

    redactor = Redactor(redact)
    target = None
    if isinstance(path, str | os.PathLike):
        target = await check_replaceable(path, force=force, protect=[store.file_path])
    ids = await bundle_run_ids(store, run_ids, sub_runs=sub_runs)
    exported: list[ExportedRun] = []

    async def write(out: IO[str]) -> None:
        copied = 0
        for run_id in ids:
            counts: Counter[str] = Counter()
            records = 0
            async for entry in store.load(run_id):
                data = _redacted(entry, redactor, counts)
                record = decode_entry(Entry(entry.seq, entry.name, data, entry.damage))
                out.write(safe_json({"run_id": run_id, "index": records} | record_json(record), indent=None) + "\n")
                records += 1
            copied += records
            exported.append(ExportedRun(run_id, records, _in_order(counts, redactor)))
            if on_progress is not None:
                on_progress(BundleProgress(len(exported), len(ids), run_id, copied))

    if target is None:
        await write(cast(IO[str], path))
        return _report(None, exported, redactor)
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
        remove_partial(partial)
        raise BundleWriteError(f"cannot write {target}: {exc.strerror or exc}") from exc
    except BaseException:
        remove_partial(partial)
        raise
    return _report(target, exported, redactor)


class BundleWriteError(AgentTuiError):
    """The bundle's file could not be written."""

    title = "Cannot write"


def _redacted(entry: Entry, redactor: Redactor, counts: Counter[str]) -> bytes:
    if not redactor:
        return entry.data
    data, found = redactor.redact(entry.data)
    counts.update(found)
    return data


def _in_order(counts: Counter[str], redactor: Redactor) -> dict[str, int]:
    return {path: counts[path] for path in redactor.texts if counts[path]}


def _report(path: Path | None, exported: list[ExportedRun], redactor: Redactor) -> ExportReport:
    totals = {path: sum(run.redacted.get(path, 0) for run in exported) for path in redactor.texts}
    return ExportReport(path, tuple(exported), tuple(totals.items()))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


# -- import -----------------------------------------------------------------------------------

ImportOutcome = Literal["imported", "identical", "completed"]


@dataclass(frozen=True, slots=True)
class ImportedRun:
    run_id: str
    """The run's id in the bundle."""
    target_id: str
    """Its id in the store (``prefix + run_id``)."""
    outcome: ImportOutcome
    """``imported`` (new to the store), ``identical`` (already there, byte for byte: skipped),
    ``completed`` (the store held its beginning, as an import cut short leaves it)."""
    written: int
    records: int


@dataclass(frozen=True, slots=True)
class ImportReport:
    source: str
    runs: tuple[ImportedRun, ...]
    redacted: tuple[str, ...] = ()
    """The bundle's redaction paths that replaced values (its runs carry the marker)."""

    @property
    def written(self) -> int:
        return sum(r.written for r in self.runs)


@dataclass(frozen=True, slots=True)
class RunConflict:
    run_id: str
    target_id: str
    reason: str


class ImportConflict(AgentTuiError):
    """Runs the store already holds with other records: nothing of the bundle was written."""

    title = "Import refused"

    def __init__(self, conflicts: Sequence[RunConflict], *, written: int = 0) -> None:
        names = ", ".join(repr(c.target_id) for c in conflicts[:5]) + (
            f" and {len(conflicts) - 5} more" if len(conflicts) > 5 else ""
        )
        first = conflicts[0]
        tail = "nothing was written" if not written else f"{written} records were written before it was found"
        super().__init__(
            f"the store already holds {'run' if len(conflicts) == 1 else 'runs'} {names} with other records"
            f" ({first.target_id!r}: {first.reason}); {tail}"
        )
        self.conflicts = tuple(conflicts)
        self.written = written


async def import_runs(
    bundle: Store | str | os.PathLike[str],
    store: Store,
    *,
    prefix: str = "",
    on_progress: Callable[[BundleProgress], None] | None = None,
) -> ImportReport:
    """Copy every run of ``bundle`` into ``store``; see the module's doc."""
    if ">" in prefix:
        raise ConfigError(f"--prefix {prefix!r}: a run id's first segment cannot hold '>' (it names sub-runs)")
    if isinstance(bundle, Store):
        return await _import(bundle, store, prefix, on_progress)
    from agenttui.stores import open_store

    source = await open_store(os.fspath(bundle), read_only=True, create=False)
    try:
        return await _import(source, store, prefix, on_progress)
    finally:
        await source.close()


async def _import(
    bundle: Store, store: Store, prefix: str, on_progress: Callable[[BundleProgress], None] | None
) -> ImportReport:
    plans: list[tuple[str, str, int]] = []  # run id, target id, records the store holds already
    conflicts: list[RunConflict] = []
    outcomes: dict[str, ImportOutcome] = {}
    totals: dict[str, int] = {}
    async for run_id in bundle.runs():
        target_id = prefix + run_id
        held, total, reason = await _compare(bundle, run_id, store, target_id)
        if reason:
            conflicts.append(RunConflict(run_id, target_id, reason))
            continue
        totals[run_id] = total
        outcomes[run_id] = "identical" if held == total else "imported" if held == 0 else "completed"
        plans.append((run_id, target_id, held))
    if conflicts:
        raise ImportConflict(conflicts)
    done: list[ImportedRun] = []
    copied = 0
    for run_id, target_id, held in plans:
        written = 0
        if outcomes[run_id] != "identical":
            written = await _copy(bundle, run_id, store, target_id, held, copied)
        copied += written
        done.append(ImportedRun(run_id, target_id, outcomes[run_id], written, totals[run_id]))
        if on_progress is not None:
            on_progress(BundleProgress(len(done), len(plans), run_id, copied))
    manifest = await read_manifest(bundle)
    redacted = tuple(path for path, count in manifest.redactions if count) if manifest else ()
    return ImportReport(bundle.display_url, tuple(done), redacted)


async def _compare(bundle: Store, run_id: str, store: Store, target_id: str) -> tuple[int, int, str]:
    """How many of the run's records the store holds already (as a beginning of it, in order,
    byte for byte), how many the bundle holds, and why the two conflict ("" when they do not)."""
    mine, theirs = aiter(bundle.load(run_id)), aiter(store.load(target_id))
    try:
        held, total, reason = await _matched(mine, theirs)
    finally:  # a conflict leaves both part read: release what they hold now (A8)
        for entries in (mine, theirs):
            if isinstance(entries, AsyncGenerator):
                await entries.aclose()
    if not reason and 0 < held < total and store.IMPLEMENTS_LEASES:
        from agenttui.journal.keys import root_run_id

        lease = await store.get_lease(root_run_id(target_id))
        if lease is not None and lease.live:
            reason = f"it holds the bundle's first {held} records and is being driven ({lease.holder})"
    return held, total, reason


async def _matched(mine: AsyncIterator[Entry], theirs: AsyncIterator[Entry]) -> tuple[int, int, str]:
    held = total = 0
    ahead = True
    async for entry in mine:
        total += 1
        other = await anext(theirs, None) if ahead else None
        if other is None:
            ahead = False
            continue
        if other.name != entry.name:
            return held, total, f"its record {held} is {other.name!r} where the bundle has {entry.name!r}"
        if other.data != entry.data:
            return held, total, f"its record {held} ({entry.name}) holds other bytes than the bundle's"
        held += 1
    if ahead and (extra := await anext(theirs, None)) is not None:
        return held, total, f"it goes on past the bundle's {total} records (record {held} is {extra.name!r})"
    return held, total, ""


async def _copy(bundle: Store, run_id: str, store: Store, target_id: str, held: int, copied: int) -> int:
    written = 0
    batch: list[tuple[str, bytes]] = []

    async def flush() -> None:
        nonlocal written
        for (name, data), inserted in zip(batch, await store.insert_many(target_id, batch), strict=True):
            if not inserted.won and inserted.entry.data != data:
                # Another writer took the name between the check and this insert.
                raise ImportConflict(
                    [RunConflict(run_id, target_id, f"{name!r} was written meanwhile with other bytes")],
                    written=copied + written,
                )
            written += inserted.won
        batch.clear()

    async for entry in _skipping(bundle.load(run_id), held):
        batch.append((entry.name, entry.data))
        if len(batch) >= _INSERT_BATCH:
            await flush()
    if batch:
        await flush()
    return written


async def _skipping(entries: AsyncIterator[Entry], count: int) -> AsyncIterator[Entry]:
    async for entry in entries:
        if count:
            count -= 1
            continue
        yield entry

"""Runs exported to a bundle (``export_runs``) or to JSON lines (``export_jsonl``), redacted on the
way out if asked; which runs to export (``select_runs``, ``sampled``, ``bundle_run_ids``)."""

from __future__ import annotations

import os
from bisect import bisect_left
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Collection, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from agenttui.errors import AgentTuiError, ConfigError, CorruptRecordError, RunNotFoundError
from agenttui.journal.inert import printable, printable_id
from agenttui.journal.redact import MARKER, Redactor, opaque_values
from agenttui.runs.bundles.manifest import (
    BUNDLE_FORMAT,
    BundleManifest,
    BundleProgress,
    ExportedRun,
    ExportReport,
    UndecodableRecord,
)
from agenttui.runs.statuses.state import RunState
from agenttui.stores.base import Entry, Store
from agenttui.stores.bundle_file import BundleFile
from agenttui.stores.files import check_replaceable, streamed_text_file

if TYPE_CHECKING:
    from agenttui.runs.selection.where import Where
    from agenttui.runs.statuses.status import RunStatus

#: Rows handed to the bundle's writer at a time: large enough that the hand-offs to its thread
#: cost nothing, small enough that a long run is never held whole.
_WRITE_BATCH = 2048


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
    from agenttui.runs.statuses.status import list_statuses

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
    async with streamed_text_file(target, force=force, protect=[store.file_path], failure=BundleWriteError) as out:
        await write(out)
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

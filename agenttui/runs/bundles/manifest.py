"""What a bundle holds and says of itself: its format, the runs exported with their counts, the
report of an export, and the manifest (``read_manifest``); shared by export and import."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenttui.journal.redact import MARKER, RedactionError, Redactor, RedactPath
from agenttui.stores.base import Store
from agenttui.stores.bundle_file import read_manifest as read_manifest_rows

BUNDLE_FORMAT = "agenttui.bundle.v1"
"""The ``format`` a bundle's manifest names."""


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

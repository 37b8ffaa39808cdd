"""Portable run bundles: runs exported to one SQLite file anyone can open, and imported elsewhere
(``export``, ``importing``, what a bundle says of itself in ``manifest``).

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

from typing import TYPE_CHECKING

from agenttui.lazy import lazy_names

if TYPE_CHECKING:
    from agenttui.runs.bundles.export import (
        UndecodableRecordsError,
        export_jsonl,
        export_runs,
        select_runs,
        unredacted_lines,
    )
    from agenttui.runs.bundles.importing import (
        BundleDamaged,
        BundleImport,
        DamagedRow,
        DamagedRun,
        ImportConflict,
        ImportedRun,
        ImportReport,
        ImportStopped,
        LeftOut,
        RunConflict,
        import_runs,
    )
    from agenttui.runs.bundles.manifest import (
        BUNDLE_FORMAT,
        BundleManifest,
        BundleProgress,
        ExportedRun,
        ExportReport,
        UndecodableRecord,
        read_manifest,
    )

LAZY = {
    "manifest": (
        "BUNDLE_FORMAT",
        "BundleManifest",
        "BundleProgress",
        "ExportReport",
        "ExportedRun",
        "UndecodableRecord",
        "read_manifest",
    ),
    "export": ("UndecodableRecordsError", "export_jsonl", "export_runs", "select_runs", "unredacted_lines"),
    "importing": (
        "BundleDamaged",
        "BundleImport",
        "DamagedRow",
        "DamagedRun",
        "ImportConflict",
        "ImportReport",
        "ImportStopped",
        "ImportedRun",
        "LeftOut",
        "RunConflict",
        "import_runs",
    ),
}
"""The modules imported when one of their names is first asked for, and those names: a reader of
a manifest (``replay``) imports neither export nor import."""

__all__ = [
    "BUNDLE_FORMAT",
    "BundleDamaged",
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

__getattr__ = lazy_names(__name__, LAZY)

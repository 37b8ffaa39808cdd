"""What an export from the TUI will do: which runs, into which file, the CLI command that does the
same, and what to say once it is done. Plain Python, so the rules are tested without Pilot."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agenttui.journal.inert import printable, printable_id, shell_word
from agenttui.runs.statuses.state import RunState

if TYPE_CHECKING:
    from agenttui.runs.bundles import ExportReport

SUFFIX = ".bundle.db"
"""A bundle's file name ends so: it is a SQLite store, and says it is a bundle."""
#: A selection of at most this many runs is named run by run in the equivalent CLI command, which
#: is then exactly what the TUI exports; past it, the command selects by the filter
#: (``--status``, ``--filter``), as the list does.
NAMED_AT_MOST = 20
#: Runs the notice at the end names one by one; beyond, it counts them.
LISTED = 3


@dataclass(frozen=True, slots=True)
class ExportScope:
    """One choice of runs the export dialog offers."""

    label: str
    """What the choice says: "the run under the cursor: refund-a1002"."""
    run_ids: tuple[str, ...]
    stem: str
    """The default file's name, before ``SUFFIX``: the run's id, or what the runs have in common."""
    states: tuple[RunState, ...] = ()
    """The status filter that chose the runs (every state: none), for the command's ``--status``."""
    text: str = ""
    """The text filter that chose the runs, for the command's ``--filter``."""
    by_filter: bool = False
    """The runs are the ones a filter shows (``states`` and ``text`` say which)."""


def one_run(run_id: str, where: str) -> ExportScope:
    """The run ``where`` names ("the run under the cursor", "this run")."""
    return ExportScope(f"{where}: {printable_id(run_id)}", (run_id,), file_stem(run_id))


def marked_runs(run_ids: Sequence[str]) -> ExportScope:
    count = len(run_ids)
    return ExportScope(f"the {count} marked run{'s' * (count != 1)}", tuple(run_ids), "marked-runs")


def filtered_runs(
    run_ids: Sequence[str], *, filter_name: str, states: Collection[RunState] | None, text: str
) -> ExportScope:
    """The top-level runs the list shows under its filters (``states`` None: every status)."""
    count = len(run_ids)
    filtered = states is not None or bool(text)
    label = f"every run the filter shows: {count:,}" if filtered else f"every run listed: {count:,}"
    stem = "-".join(part for part in (filter_name if states is not None else "", text) if part) or "runs"
    ordered = tuple(state for state in RunState if states is not None and state in states)
    return ExportScope(label, tuple(run_ids), file_stem(stem + ("-runs" if filtered else "")), ordered, text, True)


def file_stem(name: str) -> str:
    """``name`` as a file name's stem: a run id's ``>`` and ``/``, spaces and anything a shell or
    another system would trip on become ``_``."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[:120]
    return stem or "runs"


def default_path(directory: Path, scope: ExportScope) -> Path:
    return directory / f"{scope.stem}{SUFFIX}"


def parse_redactions(text: str) -> list[str]:
    """The redaction paths typed, comma-separated; a comma inside ``[...]`` or quotes (``$['a,b']``)
    belongs to its path."""
    paths: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth = max(0, depth - 1)
        elif char == "," and not depth:
            paths.append("".join(current))
            current = []
            continue
        current.append(char)
    paths.append("".join(current))
    return [path.strip() for path in paths if path.strip()]


def export_command(
    store_url: str,
    scope: ExportScope,
    path: str | Path,
    *,
    sub_runs: bool,
    redact: Sequence[str],
    force: bool = False,
) -> str:
    """The ``agenttui export`` command that writes the same bundle."""
    options = ["-o", str(path)]
    if not sub_runs:
        options.append("--no-sub-runs")
    for redaction in redact:
        options += ["--redact", redaction]
    if force:
        options.append("--force")
    if scope.by_filter and len(scope.run_ids) > NAMED_AT_MOST:
        for state in scope.states or (() if scope.text else tuple(RunState)):
            options += ["--status", state.value]
        if scope.text:
            options += ["--filter", scope.text]
        arguments = [store_url]
    else:
        arguments = [store_url, *scope.run_ids]
    # A run id (or a store) that starts with "-" would read as an option: then the options go
    # first, and "--" says that what follows are arguments.
    words = ["export", *options, "--", *arguments] if any(a.startswith("-") for a in arguments) else [
        "export", *arguments, *options
    ]  # fmt: skip
    return "agenttui " + " ".join(shell_word(word) for word in words)


def report_lines(report: ExportReport) -> list[str]:
    """What an export wrote, for a notice: the file, the runs and records, each redaction, and
    what the redaction could not do."""
    from agenttui.runs.bundles import unredacted_lines  # the export has imported it already

    runs = len(report.runs)
    names = ", ".join(printable_id(run.run_id) for run in report.runs[:LISTED])
    if runs > LISTED:
        names += f" and {runs - LISTED:,} more"
    where = printable(str(report.path)) if report.path is not None else "standard output"
    lines = [f"wrote {where}", f"{runs:,} run{'s' * (runs != 1)} ({names}), {report.records:,} records"]
    for path, count in report.redactions:
        matched = f"{count:,} value{'s' * (count != 1)}" if count else "matched nothing"
        lines.append(f"redacted {printable(path)}: {matched}")
    return lines + unredacted_lines(report, listed=LISTED)

"""What a TUI export will do, without Pilot: the scopes, default files, redaction paths typed, the
equivalent CLI command (which the CLI's own parser accepts), and the notice at the end."""

from __future__ import annotations

import shlex
from pathlib import Path

from agenttui.runs.bundles import ExportedRun, ExportReport
from agenttui.runs.statuses.state import RunState
from agenttui.tui.export_plan import (
    NAMED_AT_MOST,
    default_path,
    export_command,
    file_stem,
    filtered_runs,
    marked_runs,
    one_run,
    parse_redactions,
    report_lines,
)


def test_a_runs_file_is_named_after_it_and_safe_for_a_shell() -> None:
    assert default_path(Path("/w"), one_run("refund-a1002", "this run")) == Path("/w/refund-a1002.bundle.db")
    assert file_stem("eligibility-a1004>call_0_0") == "eligibility-a1004_call_0_0"
    assert file_stem("tenant acme/refund;rm -rf") == "tenant_acme_refund_rm_-rf"
    assert file_stem("../..") == "runs"
    assert marked_runs(["a", "b"]).stem == "marked-runs"


def test_a_filter_names_its_file_and_its_choice() -> None:
    attention = frozenset({RunState.HALTED, RunState.READY})
    scope = filtered_runs(["a", "b"], filter_name="needs attention", states=attention, text="refund")
    assert scope.label == "every run the filter shows: 2"
    assert scope.stem == "needs_attention-refund-runs"
    assert scope.states == (RunState.HALTED, RunState.READY)  # in RunState's order, as the CLI lists them
    everything = filtered_runs(["a", "b"], filter_name="all", states=None, text="")
    assert (everything.label, everything.stem, everything.states) == ("every run listed: 2", "runs", ())


def test_redaction_paths_are_split_on_commas_outside_brackets_and_quotes() -> None:
    assert parse_redactions("") == []
    assert parse_redactions(" card_number , $.result.token,, ") == ["card_number", "$.result.token"]
    assert parse_redactions("$['a,b'].c, $[\"x,y\"], $.list[0,1]") == ["$['a,b'].c", '$["x,y"]', "$.list[0,1]"]


def test_the_command_names_the_runs_and_every_option() -> None:
    scope = marked_runs(["refund a", "b"])
    command = export_command("demo.db", scope, Path("/w/x y.db"), sub_runs=False, redact=["$..email"], force=True)
    assert command == "agenttui export demo.db 'refund a' b -o '/w/x y.db' --no-sub-runs --redact '$..email' --force"


def test_a_run_id_like_an_option_goes_after_double_dash() -> None:
    command = export_command("demo.db", one_run("-x", "this run"), "/w/x.db", sub_runs=True, redact=[])
    assert command == "agenttui export -o /w/x.db -- demo.db -x"


def test_many_filtered_runs_are_selected_as_the_list_does() -> None:
    many = [f"run-{n}" for n in range(NAMED_AT_MOST + 1)]
    few = filtered_runs(many[:NAMED_AT_MOST], filter_name="in-flight", states={RunState.IN_FLIGHT}, text="")
    assert export_command("s.db", few, "/o.db", sub_runs=True, redact=[]).count(" run-") == NAMED_AT_MOST
    by_state = filtered_runs(many, filter_name="in-flight", states={RunState.IN_FLIGHT}, text="tenant")
    assert export_command("s.db", by_state, "/o.db", sub_runs=True, redact=[]) == (
        "agenttui export s.db -o /o.db --status in-flight --filter tenant"
    )
    by_text = filtered_runs(many, filter_name="all", states=None, text="tenant")
    assert export_command("s.db", by_text, "/o.db", sub_runs=True, redact=[]).endswith("-o /o.db --filter tenant")
    # No filter at all: every status, as the CLI wants a selection named.
    listed = shlex.split(export_command("s.db", filtered_runs(many, filter_name="all", states=None, text=""),
                                        "/o.db", sub_runs=True, redact=[]))  # fmt: skip
    assert [listed[i + 1] for i, word in enumerate(listed) if word == "--status"] == [s.value for s in RunState]


def test_the_command_is_one_the_cli_accepts() -> None:
    from click.testing import CliRunner

    from agenttui.cli import main

    command = export_command("/no/such.db", one_run("-x", "this run"), "/w/x.db", sub_runs=False, redact=["a"])
    result = CliRunner().invoke(main, shlex.split(command)[1:])
    # The arguments parsed: it went on to open the store, which is not there.
    assert "no such file" in result.output and "Usage" not in result.output, result.output


def test_the_notice_names_the_file_the_runs_records_and_redactions() -> None:
    runs = tuple(ExportedRun(f"r{n}", 3, {"card_number": 1}) for n in range(5))
    report = ExportReport(Path("/w/b.db"), runs, (("card_number", 5), ("$.x", 0)))
    assert report_lines(report) == [
        "wrote /w/b.db",
        "5 runs (r0, r1, r2 and 2 more), 15 records",
        "redacted card_number: 5 values",
        "redacted $.x: matched nothing",
    ]


def test_the_notice_says_what_the_redaction_could_not_do() -> None:
    run = ExportedRun("r0", 3, {"approver": 1}, opaque={"image data (base64)": 2},
                      kept_in_names=(("approval:c1:ann:00ff", "approver"),))  # fmt: skip
    report = ExportReport(Path("/w/b.db"), (run,), (("approver", 1),))
    assert report_lines(report)[-3:] == [
        "not looked inside: 2 image data (base64) (a path naming them replaces them whole)",
        "still in step names (names are never rewritten):",
        "  r0  approval:c1:ann:00ff: a value approver replaced",
    ]

"""Flowcharts that end where the run stands: the terminal drawing of every run the demo and the Go
corpus hold, each read from a store as the TUI and the CLI read it; the Mermaid text stays the SDK's."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agenttui.cli import main
from agenttui.journal import Journal, Record
from agenttui.render import DONE, Flowchart, FlowKind, Role, flow_steps, mermaid_text, render_text
from agenttui.runs.statuses.chart_end import chart_end
from agenttui.runs.statuses.status import RunState, RunStatus, statuses
from agenttui.stores.sqlite import SQLiteStore
from tests.forks import HALTED, HALTED_REWORDED, save_fork
from tests.gocorpus import CASES, mermaid, write_corpus

#: The last node of each demo run's drawing: where it stands (the demo's clock is pinned, its
#: sleeper sleeps until a fixed time, its in-flight run holds a live lease).
DEMO_ENDS = {
    "refund-a1004-halted": "halted on refund_payment: outcome unknown",
    "refund-a1005": "awaiting approval: refund_payment",
    "question-a1001": "awaiting input: ask_customer",
    "refund-a1005-approved": "ready to re-drive: refund_payment approved",
    "refund-a1001-stalled": "stalled: nothing pending, re-drive to go on",
    "saga-a1003-cancelling": "cancelling: rolling back",
    "reply-a1006": "not started",
    "lookup-a1001-damaged": "unreadable",
    # Finished runs end in done, as their Mermaid text does.
    "refund-a1002": "done",
    "refund-a1001-cancelled": "done",
    "saga-a1003-rolled-back": "done",
}


async def read(path: Path, run_ids: list[str] | None = None) -> dict[str, tuple[list[Record], RunStatus]]:
    store = await SQLiteStore.open(path, read_only=True)
    try:
        ids = run_ids if run_ids is not None else [run_id async for run_id in store.runs()]
        found = await statuses(store, ids)
        return {s.run_id: ((await Journal(store).read(s.run_id)).records, s) for s in found}
    finally:
        await store.close()


def last_label(text: str) -> str:
    """The label of the drawing's last box (its second-last row, inside the borders)."""
    return text.splitlines()[-2][2:-2].strip()


async def test_every_demo_run_ends_where_it_stands(demo_db: Path) -> None:
    runs = await read(demo_db)
    for run_id, label in DEMO_ENDS.items():
        records, status = runs[run_id]
        text = render_text(flow_steps(records, run_id=run_id, end=chart_end(status)), width=100)
        assert last_label(text) == label, (run_id, status.state)
    records, status = runs["settlement-a1002"]
    assert status.state == RunState.SLEEPING and status.wake_at is not None
    until = status.wake_at.isoformat(timespec="seconds")
    assert last_label(render_text(flow_steps(records, end=chart_end(status)), width=100)) == f"sleeping until {until}"
    records, status = runs["refund-a1006-in-flight"]
    assert status.state == RunState.IN_FLIGHT
    assert last_label(render_text(flow_steps(records, end=chart_end(status)), width=100)).startswith(
        "in flight: leased by refund-worker-2"
    )


async def test_the_halted_call_is_drawn_as_an_unknown_outcome(demo_db: Path) -> None:
    """The user's report: the chart read "approved ✓ → done" and never showed the call."""
    records, status = (await read(demo_db, ["refund-a1004-halted"]))["refund-a1004-halted"]
    chart = Flowchart(flow_steps(records, end=chart_end(status)))
    rows = chart.rows(0, chart.row_count, 80)
    assert [row.text for row in rows[-7:]] == [
        "┌────────────┐",
        "│ approved ✓ │",
        "└──┬─────────┘",
        "   ▼",
        "┏╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍┓",
        "╏ halted on refund_payment: outcome unknown ╏",
        "┗╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍┛",
    ]
    assert rows[-2].text == "╏ halted on refund_payment: outcome unknown ╏"
    assert {span.role for span in rows[-2]} == {Role.ERROR}
    assert "done" not in chart.text(80)
    plain = chart.text(80, ascii=True).splitlines()
    assert plain[-3:] == [
        "+" + "." * 43 + "+",
        ": halted on refund_payment: outcome unknown :",
        "+" + "." * 43 + "+",
    ]
    # A pending state that is not a failure is drawn dashed, in its own role.
    records, status = (await read(demo_db, ["refund-a1005"]))["refund-a1005"]
    rows = Flowchart(flow_steps(records, end=chart_end(status))).rows(0, 10_000, 80)
    assert rows[-2].text == "╎ awaiting approval: refund_payment ╎"
    assert {span.role for span in rows[-2]} == {Role.UNFINISHED}


async def test_mermaid_text_stays_the_sdks_whatever_the_end(demo_db: Path) -> None:
    for run_id, (records, status) in (await read(demo_db)).items():
        steps = flow_steps(records, run_id=run_id, end=chart_end(status))
        assert mermaid_text(steps) == mermaid_text(flow_steps(records, run_id=run_id)), run_id
        assert mermaid_text(steps).endswith(" --> done([done])\n")


@pytest.fixture
async def go_corpus(tmp_path: Path) -> Path:
    path = tmp_path / "go.db"
    store = await SQLiteStore.open(path)
    try:
        await write_corpus(store)
    finally:
        await store.close()
    return path


async def test_go_runs_end_where_they_stand(go_corpus: Path) -> None:
    runs = await read(go_corpus, [case.run_id for case in CASES])
    wanted = {
        RunState.HALTED: "halted on charge: outcome unknown",
        RunState.READY: "ready to re-drive",
        RunState.SLEEPING: "sleeping until 20",
        RunState.STALLED: "stalled",
        RunState.CANCELLING: "cancelling",
        RunState.NOT_STARTED: "not started",
    }
    seen = set()
    for case in CASES:
        records, status = runs[case.run_id]
        assert status.state == case.status, case.run_id
        end = chart_end(status)
        steps = flow_steps(records, run_id=case.run_id, end=end)
        assert mermaid_text(steps) == mermaid(case.labels), case.run_id  # the SDK's text, end or not
        label = last_label(render_text(steps, width=120))
        if status.state.finished:
            assert end == DONE and label == "done", case.run_id
        else:
            assert end.kind == FlowKind.UNFINISHED and label.startswith(wanted[status.state]), (case.run_id, label)
            seen.add(status.state)
    assert seen == set(wanted)  # the corpus holds every one of these


def test_the_cli_draws_the_end_and_keeps_mermaid_as_is(demo_db: Path) -> None:
    runner = CliRunner()
    drawn = runner.invoke(main, ["mermaid", str(demo_db), "refund-a1004-halted", "--ascii", "--width", "80"])
    assert drawn.exit_code == 0, drawn.output
    assert last_label(drawn.output) == "halted on refund_payment: outcome unknown"
    text = runner.invoke(main, ["mermaid", str(demo_db), "refund-a1004-halted"])
    assert text.exit_code == 0 and text.output.endswith("  n4 --> done([done])\n") and "halted" not in text.output


async def test_a_saved_fork_ends_as_a_fork_not_where_its_journal_stops(demo_db: Path) -> None:
    store = await SQLiteStore.open(demo_db)
    try:
        fork_id = await save_fork(store, HALTED, HALTED_REWORDED)
    finally:
        await store.close()
    records, status = (await read(demo_db, [fork_id]))[fork_id]
    steps = flow_steps(records, run_id=fork_id, end=chart_end(status))
    assert last_label(render_text(steps, width=100)) == f"what-if fork of {HALTED}: never driven"

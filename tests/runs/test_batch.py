"""Bulk actions: a selection read before anything is written, then applied run by run under
each run's lease, on journals written byte for byte as the Go SDK writes them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agenttui.journal import keys
from agenttui.runs.recovery.lease import new_holder
from agenttui.runs.selection import batch
from agenttui.runs.selection.batch import CancelRuns, DecideRuns, ResolveRuns, apply_selection, select
from agenttui.runs.selection.where import parse_where
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import run_status
from agenttui.stores.base import Store
from agenttui.stores.sqlite import SQLiteStore
from tests.incident import incident, make_store, write_runs
from tests.processes import agenttui


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    opened = await SQLiteStore.open(tmp_path / "incident.db")
    await write_runs(opened, incident())
    yield opened
    await opened.close()


async def stored_bytes(store: Store) -> dict[str, list[tuple[str, bytes]]]:
    return {run_id: [(e.name, e.data) async for e in store.load(run_id)] async for run_id in store.runs()}


async def test_a_selection_sorts_the_matched_runs_and_writes_nothing(store: SQLiteStore) -> None:
    before = await stored_bytes(store)
    selection = await select(store, CancelRuns("payments down"), where=parse_where("id=refund-* or id=done-*"))
    assert selection.read == 12
    assert [s.run_id for s in selection.fitting] == [f"refund-{n}" for n in range(6)]
    assert [(s.run_id, why) for s, why in selection.unfit] == [
        ("done-0", "it has ended (complete)"),
        ("done-1", "it has ended (complete)"),
    ]
    assert await stored_bytes(store) == before


async def test_a_bulk_cancel_writes_once_per_run_and_a_second_pass_writes_nothing(store: SQLiteStore) -> None:
    where = parse_where("status=halted and tool=charge")
    selection = await select(store, CancelRuns("payments down"), where=where)
    outcomes = [o async for o in apply_selection(store, selection)]
    # Eight runs are in hand at once: outcomes come as each run is done, in no set order.
    assert sorted((o.run_id, o.result, o.detail) for o in outcomes) == [
        (f"refund-{n}", "done", "cancelled: wrote run:cancelled") for n in range(6)
    ]
    for n in range(6):
        assert (await run_status(store, f"refund-{n}")).state == RunState.CANCELLED
    assert (await run_status(store, "ship-0")).state == RunState.HALTED  # another tool: not selected
    again = await select(store, CancelRuns("payments down"), where=where)
    assert not again.matched  # cancelled runs are halted no more: a second pass finds nothing
    cancels = [e async for e in store.load("refund-0") if e.name == keys.RUN_CANCELLED]
    assert len(cancels) == 1
    assert json.loads(cancels[0].data)["result"] == {"reason": "payments down"}


async def test_a_run_that_changed_since_it_was_selected_is_skipped(store: SQLiteStore) -> None:
    selection = await select(store, CancelRuns(), where=parse_where("id=refund-*"))
    # Someone resolves refund-2 between the preview and the apply: it is stalled now (the call voided), not halted.
    await ResolveRuns(False).operation(selection.fitting[2]).apply(store)
    outcomes = {o.run_id: o async for o in apply_selection(store, selection)}
    assert outcomes["refund-2"].result == "skipped"
    assert outcomes["refund-2"].detail == "its status changed since it was selected: was halted, now stalled"
    assert (await run_status(store, "refund-2")).state == RunState.STALLED  # left as the person left it
    assert sum(o.result == "done" for o in outcomes.values()) == 5


async def test_a_run_another_holder_keeps_leased_is_skipped_naming_it(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch, "LEASE_PATIENCE", 0.2)
    selection = await select(store, CancelRuns(), where=parse_where("id=refund-1 or id=refund-3"))
    holder = new_holder()
    assert await store.acquire_lease("refund-3", holder, 300)  # a driver that took it after the preview
    outcomes = {o.run_id: o async for o in apply_selection(store, selection)}
    assert outcomes["refund-1"].result == "done"
    assert outcomes["refund-3"].result == "skipped"
    assert holder in outcomes["refund-3"].detail
    assert (await run_status(store, "refund-3")).state == RunState.IN_FLIGHT


async def test_a_lease_let_go_while_waiting_is_taken_and_the_run_done(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    selection = await select(store, CancelRuns(), where=parse_where("id=refund-4"))
    holder = new_holder()
    assert await store.acquire_lease("refund-4", holder, 300)
    outcomes = apply_selection(store, selection)
    waiting = anext(outcomes)
    await store.release_lease("refund-4", holder)  # the other bulk action, or recover, lets go
    outcome = await waiting
    assert (outcome.run_id, outcome.result) == ("refund-4", "done")


async def test_approve_fits_only_the_runs_awaiting_approval(store: SQLiteStore) -> None:
    selection = await select(store, DecideRuns(True, "oncall"), where=parse_where("id=gated-* or id=refund-0"))
    assert [s.run_id for s in selection.fitting] == ["gated-0", "gated-1"]
    assert selection.unfit[0][1] == "it is halted: it awaits no approval"
    outcomes = [o async for o in apply_selection(store, selection)]
    assert [o.detail for o in outcomes] == ["approved: wrote approval:toolu_09"] * 2
    assert (await run_status(store, "gated-0")).state == RunState.READY


async def test_the_preview_names_counts_first_runs_misfits_and_the_command(store: SQLiteStore) -> None:
    selection = await select(store, CancelRuns("down"), where=parse_where("id=refund-* or id=done-*"))
    lines = batch.preview_lines(selection, "incident.db", runs=2)
    assert lines == [
        "cancel: 6 runs matched by 'id=refund-* or id=done-*' (12 read)",
        "  6 halted",
        "the first runs, and what each gets:",
        '  refund-0  run:cancelled  value  {"reason": "down"}',
        '  refund-1  run:cancelled  value  {"reason": "down"}',
        "  ... and 4 more",
        "2 runs matched do not fit cancel:",
        "  done-0  it has ended (complete)",
        "  done-1  it has ended (complete)",
    ]
    assert selection.command("incident.db") == (
        "agenttui cancel incident.db --where 'id=refund-* or id=done-*' --reason down --yes"
    )


def test_the_cli_previews_without_yes_and_applies_with_it(tmp_path: Path) -> None:
    path = tmp_path / "incident.db"
    make_store(path)
    preview = agenttui("cancel", str(path), "--where", "status=halted and tool=charge", "--reason", "down")
    assert preview.returncode == 0, preview.stderr
    assert "cancel: 6 runs matched by 'status=halted and tool=charge' (12 read)" in preview.stdout
    assert "nothing written. To apply:" in preview.stdout
    assert "--yes" in preview.stdout.splitlines()[-1]
    applied = agenttui("cancel", str(path), "--where", "status=halted and tool=charge", "--reason", "down", "--yes")
    assert applied.returncode == 0, applied.stderr
    done = [line for line in applied.stdout.splitlines() if line.startswith("done")]
    assert len(done) == 6
    assert applied.stdout.splitlines()[-1] == "cancel: 6 done, 0 skipped, 0 failed of 6 runs"
    again = agenttui("cancel", str(path), "--where", "status=halted and tool=charge", "--yes")
    assert again.returncode == 1
    assert again.stderr.startswith("agenttui: no run matches 'status=halted and tool=charge'")


def test_the_cli_streams_json_lines_and_previews_json(tmp_path: Path) -> None:
    path = tmp_path / "incident.db"
    make_store(path)
    preview = agenttui("resolve", str(path), "--where", "id=ship-*", "--not-fired", "--json")
    assert preview.returncode == 0, preview.stderr
    shown = json.loads(preview.stdout)
    assert shown["fitting"] == 2 and shown["by_status"] == {"halted": 2}
    assert shown["runs"][0]["run_id"] == "ship-0"
    applied = agenttui("resolve", str(path), "--where", "id=ship-*", "--not-fired", "--json", "--yes")
    assert applied.returncode == 0, applied.stderr
    lines = [json.loads(line) for line in applied.stdout.splitlines()]
    assert [line.get("result") for line in lines[:2]] == ["done", "done"]
    assert lines[-1] == {
        "summary": {"action": "resolve", "done": 2, "skipped": 0, "failed": 0, "fitting": 2, "not_fitting": 0,
                    "not_fitting_by_reason": {}}
    }  # fmt: skip


def test_a_run_a_killed_process_still_leases_is_waited_for_and_done(tmp_path: Path) -> None:
    import asyncio

    path = tmp_path / "incident.db"
    make_store(path)

    async def lease_left_by_a_killed_process() -> None:
        opened = await SQLiteStore.open(path)
        assert await opened.acquire_lease("refund-3", "killed-host-77#0f", 2)  # lapses in 2 s
        await opened.close()

    asyncio.run(lease_left_by_a_killed_process())
    # Selected by its journal (halted), not left out as in flight; its lease waited for, then taken.
    applied = agenttui("cancel", str(path), "--where", "status=halted and tool=charge", "--yes")
    assert applied.returncode == 0, applied.stderr
    assert "done     refund-3  cancelled: wrote run:cancelled" in applied.stdout
    assert applied.stdout.splitlines()[-1] == "cancel: 6 done, 0 skipped, 0 failed of 6 runs"


def test_runs_matched_as_in_flight_are_named_with_how_to_select_them(tmp_path: Path) -> None:
    import asyncio

    path = tmp_path / "incident.db"
    make_store(path)

    async def a_live_driver() -> None:
        opened = await SQLiteStore.open(path)
        assert await opened.acquire_lease("refund-3", "worker-2#0f", 300)
        await opened.close()

    asyncio.run(a_live_driver())
    preview = agenttui("cancel", str(path), "--where", "status=in-flight")
    assert preview.returncode == 0, preview.stderr
    assert preview.stdout.splitlines()[-3:] == [
        "  refund-3  a live driver holds its lease (worker-2#0f)",
        "1 run matched as in flight: cancel waits for a lease that lapses within 35 s, where the filter"
        " selects the run by what its journal holds (e.g. status=halted)",
        "nothing to apply.",
    ]
    # A lease set to outlive the wait is no holder that lets go: the run is not selected by its journal.
    by_id = agenttui("cancel", str(path), "--where", "id=refund-3", "--yes")
    assert by_id.returncode == 0, by_id.stderr
    assert "  refund-3  a live driver holds its lease (worker-2#0f)" in by_id.stdout
    assert "cancel: 0 done, 0 skipped, 0 failed of 0 runs" in by_id.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["cancel", "S", "run-1", "--where", "id=x"], "--where selects the runs: give no RUN_ID with it"),
        (["cancel", "S"], "give RUN_ID, or select runs with --where EXPR"),
        (["cancel", "S", "run-1", "--yes"], "--yes and --json go with --where"),
        (["approve", "S", "run-1"], "give CALL, or select runs with --where EXPR"),
        (["answer", "S", "--where", "id=x"], "with --where, give VALUE, or NAME VALUE"),
    ],
)
def test_a_command_that_names_its_runs_wrongly_is_refused(tmp_path: Path, args: list[str], message: str) -> None:
    path = tmp_path / "incident.db"
    make_store(path)
    done = agenttui(*[str(path) if arg == "S" else arg for arg in args])
    assert done.returncode == 2
    assert message in done.stderr


def test_export_takes_the_runs_a_filter_selects(tmp_path: Path) -> None:
    path = tmp_path / "incident.db"
    make_store(path)
    bundle = tmp_path / "halted.db"
    done = agenttui("export", str(path), "--where", "status=halted and tool=ship", "-o", str(bundle))
    assert done.returncode == 0, done.stderr
    assert "2 runs" in done.stdout
    assert [line.split()[0] for line in done.stdout.splitlines()[1:3]] == ["ship-0", "ship-1"]
    bad = agenttui("export", str(path), "--where", "stauts=halted", "-o", str(tmp_path / "x.db"))
    assert bad.returncode == 2
    assert bad.stderr.startswith("agenttui: Bad filter: at column 1")
    assert not (tmp_path / "x.db").exists()


def test_ids_where_names_each_id_exactly_glob_characters_and_quotes_included() -> None:
    assert batch.ids_where(["refund-0", "refund-1"]) == "id=refund-0 or id=refund-1"
    assert batch.ids_where(["a b", "x*y", "q?[z]", "it's", 'say "hi"', "p(1),2", "=eq"]) == (
        "id='a b' or id=x[*]y or id=q[?][[]z] or id=\"it's\" or id='say \"hi\"' or id='p(1),2' or id='=eq'"
    )
    assert batch.ids_where(["both'\""]) is None  # the filter language escapes nothing
    assert batch.ids_where([]) is None
    where = batch.where_command(CancelRuns("down"), "incident.db", "id=refund-0 or id=refund-1")
    assert where == "agenttui cancel incident.db --where 'id=refund-0 or id=refund-1' --reason down --yes"

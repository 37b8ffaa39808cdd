"""What the marked runs' menu offers, by fit, and the ``--where`` that selects exactly the marked
runs: plain Python, on statuses read from Go-shaped journals (tests/incident.py)."""

from __future__ import annotations

from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import RunStatus, run_status
from agenttui.stores.memory import MemStore
from agenttui.tui.bulk_plan import NOT_READ, bulk_choices, fits, selecting_where
from tests.incident import GATED, HALTED, write_runs


async def statuses() -> dict[str, RunStatus | None]:
    store = MemStore()
    await write_runs(store, {"halted-0": HALTED, "halted-1": HALTED, "gated-0": GATED})
    return {run_id: await run_status(store, run_id) for run_id in ("halted-0", "halted-1", "gated-0")}


async def test_the_actions_that_fit_every_marked_run_come_first_and_the_others_say_why() -> None:
    marked = await statuses()
    assert [s.state for s in marked.values() if s] == [RunState.HALTED, RunState.HALTED, RunState.AWAITING_APPROVAL]
    fitted = fits(bulk_choices(None, None), marked)
    assert [fit.line() for fit in fitted if fit.fits] == ["Cancel the runs"]
    lines = [fit.line() for fit in fitted]
    assert "Approve the pending call — 2 of 3 do not fit: it is halted: it awaits no approval" in lines
    assert lines.index("Cancel the runs") == 0
    assert not any(fit.choice.label.startswith("Re-drive") for fit in fitted)  # no agent given


async def test_a_run_whose_status_is_not_read_fits_nothing_yet() -> None:
    marked = await statuses()
    marked["halted-1"] = None
    fitted = fits(bulk_choices(None, None), marked)
    cancel = next(fit for fit in fitted if fit.choice.label == "Cancel the runs")
    assert not cancel.fits and cancel.why == NOT_READ and cancel.misfits == 1


def test_the_command_selects_the_filter_only_when_every_marked_run_fits() -> None:
    marked = ["a", "b", "c"]
    assert selecting_where(["a", "b", "c"], marked=marked, shown_filter="status=halted") == "status=halted"
    assert selecting_where(["a", "c"], marked=marked, shown_filter="status=halted") == "id=a or id=c"
    assert selecting_where(["a", "b"], marked=marked, shown_filter=None) == "id=a or id=b"

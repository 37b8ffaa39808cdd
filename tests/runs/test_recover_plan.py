"""What recover-all shows before it asks: the plan's lines, on stores of any size."""

from __future__ import annotations

from agenttui.demo.build import factory
from agenttui.runs.recovery.choices import choices_for
from agenttui.runs.recovery.operations import plan_lines
from agenttui.runs.recovery.recover import RecoverPlan
from agenttui.runs.statuses.status import RunState, RunStatus


def test_a_plan_counts_every_run_and_names_the_first_of_each_status() -> None:
    stalled = [RunStatus(f"refund-{n:05d}", RunState.STALLED) for n in range(4000)]
    halted = [RunStatus("refund-halted", RunState.HALTED)]
    alone = [RunStatus(f"w-{n}", RunState.IN_FLIGHT) for n in range(12)] + [RunStatus("s", RunState.CANCELLING)]
    lines = plan_lines(RecoverPlan(to_drive=[*halted, *stalled], left_alone=alone))
    assert lines == [
        "re-drives 4001 unfinished runs, each under its lease:",
        "  4000 stalled  refund-00000, refund-00001, refund-00002, +3997 more",
        "  1 halted      refund-halted",
        "leaves alone 13: 12 in-flight, 1 cancelling",
    ]
    assert all(len(line) <= 70 for line in lines)  # an 80-column dialog shows each on one line


def test_long_run_ids_give_way_to_the_count() -> None:
    long_ids = [RunStatus("x" * 40 + str(n), RunState.READY) for n in range(3)]
    (_, line) = plan_lines(RecoverPlan(to_drive=long_ids))
    assert line == f"  3 ready  {'x' * 40}0, +2 more"


def test_a_plan_leaves_saved_forks_alone_and_says_why() -> None:
    forks = [RunStatus(f"refund-a1005~fork-{n}", RunState.FORK, fork_of="refund-a1005") for n in range(1, 6)]
    lines = plan_lines(RecoverPlan(to_drive=[RunStatus("refund-a1005", RunState.READY)], left_alone=forks))
    assert lines[-2:] == [
        "leaves alone 5: 5 fork",
        "  what-if forks, never driven: refund-a1005~fork-1, +4 more",
    ]
    assert all(len(line) <= 70 for line in lines)


def test_a_saved_fork_offers_nothing_to_drive_or_write() -> None:
    fork = RunStatus("refund-a1005~fork-1", RunState.FORK, fork_of="refund-a1005")
    assert choices_for(fork, "tests.agent.counting_agent:factory", factory) == []
    lapsed = fork._replace(lease_lapsed=True)
    assert [title for title, _ in choices_for(lapsed, None, None)] == ["Release a lapsed lease"]  # no journal write

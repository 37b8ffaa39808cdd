"""What the step a write decides is (``StepContext``), read as a pure function of runs written byte
for byte as the Go SDK writes them (``tests/gocorpus.py``, ``tests/incident.py``): the call's tool
and arguments, the turn that asked for it and the model's words, and why the run waits."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from agenttui.journal import keys
from agenttui.journal.codec import decode_record
from agenttui.journal.record import Record
from agenttui.runs.recovery.choices import StepContext, choices_for, step_context_in, step_context_of
from agenttui.runs.recovery.operations import Cancel
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import RunStatus, status_of
from agenttui.stores.memory import MemStore
from tests.gocorpus import CASES, GoRun, call, model, start, text
from tests.incident import GATED, HALTED, write_runs

NOW = datetime(2031, 3, 14, 9, 26, tzinfo=UTC)


def records_of(case: GoRun) -> list[Record]:
    return [decode_record(data, name) for name, data in case.entries()]


def context_of(case: GoRun) -> tuple[RunStatus, StepContext]:
    records = records_of(case)
    status = status_of(case.run_id, records, now=NOW)
    assert status.state == case.status
    return status, step_context_in(records, status)


def test_a_gated_call_shows_its_tool_arguments_turn_and_the_policy_that_gates_it() -> None:
    _, step = context_of(GATED)
    assert (step.tool_name, step.tool_use_id, step.turn) == ("charge", "toolu_09", "@llm/0")
    assert step.arguments == '{"amount":1200}'
    assert step.pretty_arguments == '{\n  "amount": 1200\n}'
    assert step.said == "Charging the card."
    assert step.why == "run:start's policy gates charge: a person approves or denies each call before it runs"
    assert step.lines() == [
        "Why it waits: run:start's policy gates charge: a person approves or denies each call before it runs",
        "",
        "The call: charge (toolu_09), asked in @llm/0:",
        "  {",
        '    "amount": 1200',
        "  }",
        "",
        "The model said in @llm/0:",
        "  Charging the card.",
    ]


def test_a_halted_call_says_its_outcome_is_unknown_and_when_it_was_attempted() -> None:
    _, step = context_of(HALTED)
    assert (step.tool_name, step.tool_use_id, step.arguments) == ("charge", "toolu_05", '{"amount":1200}')
    assert step.why == (
        "outcome unknown: an attempt of charge (toolu_05) was recorded (attempt:tool:toolu_05, at "
        "2026-01-01T00:00:00+00:00) and no result: it may or may not have fired"
    )


def test_a_retried_halt_names_its_newest_attempt() -> None:
    _, step = context_of(next(c for c in CASES if c.run_id == "go-voided-halted"))
    assert "(attempt:retry:1:tool:toolu_17, at 2026-01-01T00:01:40+00:00)" in step.why


def test_a_pending_m_of_n_gate_says_how_many_decided() -> None:
    quorum = next(c for c in CASES if c.run_id == "go-quorum")
    # The quorum run, cut after its first vote: the gate is open, one of its approvers decided.
    pending = dataclasses.replace(quorum, run_id="go-quorum-pending", records=quorum.records[:3])
    records = records_of(pending)
    status = status_of(pending.run_id, records, now=NOW)
    assert status.state == RunState.AWAITING_APPROVAL
    step = step_context_in(records, status)
    assert step.why == "an m-of-n approval gate: 1 decided so far, no tally yet"
    assert step.pretty_arguments == '{\n  "to": "acct-9",\n  "cents": 50000\n}'


def test_a_question_shows_what_it_asks_and_where_the_answer_goes() -> None:
    asking = GoRun(
        "asking",
        [
            start('"Ship it"', ',"kind":"agent","ext":{"agenttui":{"tools":[{"name":"ask","interrupts":true}]}}'),
            model(
                0,
                text("Before I ship:") + "," + call("toolu_30", "ask", '{"question":"Which address?"}'),
                '"usage":{},"finish":"tool_use"',
            ),
        ],
        RunState.AWAITING_INPUT,
        HALTED.verdict,
        [],
    )
    status, step = context_of(asking)
    assert step.asks == "Which address?" and step.said == "Before I ship:"
    assert step.why == (
        f"ask (toolu_30) asks a person a question; the answer is recorded as interrupt:{status.interrupt_name}"
    )


def test_a_stalled_run_with_no_open_call_says_so_and_shows_no_call() -> None:
    stalled = next(c for c in CASES if c.status == RunState.STALLED)
    _, step = context_of(stalled)
    assert step.why.startswith("stalled: its driver stopped between steps")
    assert "A re-drive with your agent (--agent module:factory, with a model)" in step.why
    assert not step.tool_use_id and step.lines() == [f"Why it waits: {step.why}"]


def test_a_finished_run_is_its_state_and_detail() -> None:
    _, step = context_of(next(c for c in CASES if c.run_id == "go-charge"))
    assert step.why == "complete" and not step.tool_use_id


def test_a_call_whose_turn_is_missing_says_the_arguments_were_not_found() -> None:
    status, _ = context_of(GATED)
    step = step_context_in([r for r in records_of(GATED) if not r.name.startswith("@llm/")], status)
    assert step.tool_name == "charge" and step.turn == "" and step.arguments == ""
    assert "  (not found in the journal)" in step.lines()


async def test_read_from_a_store_and_offered_with_the_choices() -> None:
    store = MemStore()
    await write_runs(store, {"gated-0": GATED})
    status = status_of("gated-0", records_of(dataclasses.replace(GATED, run_id="gated-0")), now=NOW)
    step = await step_context_of(store, status)
    assert step.run_id == "gated-0" and step.arguments == '{"amount":1200}'
    labels = [label for label, _ in choices_for(status, None, None, step)]
    assert labels[:2] == ["Approve charge (toolu_09)", "Deny charge (toolu_09)"]
    cancel = await dict(choices_for(status, None, None, step))["Cancel the run"](lambda *_: _never())
    assert cancel == Cancel("gated-0", "cancelled from agenttui")
    assert keys.RUN_CANCELLED in cancel.will_write()


async def _never() -> str | None:
    raise AssertionError("a ready operation asks nothing")

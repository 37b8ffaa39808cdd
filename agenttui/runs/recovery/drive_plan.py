"""What a drive will do first, read before it runs: the calls it executes, each with its tool,
arguments, the policy it runs under (the run's recorded policy as the floor, ``ToolSafety.at_least``)
and what happens to it (it runs, it runs again, its denial is recorded, the drive stops at it),
then what is the model's to decide.

The loop (``agent.loop``) settles a run's pending calls in order before it asks the model again;
this module reads the same records the same way, so a confirmation names what the drive fires,
not "the run's next steps". Pure, on records: the TUI, the CLI, a bulk preview and the MCP
server's dry runs all show it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agenttui.agent.pauses import tally_approved
from agenttui.agent.runstart import RunStart
from agenttui.agent.tools import ToolSafety
from agenttui.journal import keys
from agenttui.journal.describe import clip, raw_json_text
from agenttui.journal.record import Record, StepKind, ToolUsePart

#: The most of a call's arguments a plan shows on its line (the inspector shows them all).
ARGUMENTS_SHOWN = 160


@dataclass(frozen=True, slots=True)
class PlannedCall:
    """One call the drive reaches before the model is asked again."""

    tool_name: str
    tool_use_id: str
    arguments: str
    """As recorded (raw JSON text)."""
    policy: str
    """The policy it runs under, in words: "not retry-safe, gated on approval"..."""
    outcome: str
    """What the drive does with it: "RUNS, approved by ops@example.com", "stops here: ..."."""
    short: str
    """The same in a word or two, for a line a run: "RUNS", "stops: awaits approval"."""
    runs: bool
    """Whether the tool itself is called (a side effect may fire)."""
    stops: bool
    """Whether the drive stops at this call (nothing after it happens)."""


@dataclass(frozen=True, slots=True)
class DrivePlan:
    """What a drive of ``run_id`` does first, as its records stand."""

    run_id: str
    calls: tuple[PlannedCall, ...]
    then: str
    """What comes after the calls ("" when the drive stops at one)."""

    @property
    def fires(self) -> tuple[PlannedCall, ...]:
        """The calls whose tool the drive calls: where a side effect may fire."""
        return tuple(call for call in self.calls if call.runs)

    def summary(self) -> str:
        """One line: what the drive does first (a bulk preview's line for the run)."""
        calls = "; ".join(f"{call.tool_name} ({call.tool_use_id}) {call.short}" for call in self.calls)
        if not self.then:
            return f"first: {calls}"
        if not calls:
            return f"first: {self.then}"
        return f"first: {calls}; then {self.then.partition(':')[0]}"

    def lines(self) -> list[str]:
        """The plan as a confirmation shows it, the most telling first (a dialog may show only the
        first lines): the summary; each call with its fate, then its policy and arguments; then
        what is the model's to decide."""
        summary = self.summary()
        out = [summary[:1].upper() + summary[1:]]
        if not self.calls:
            return out
        for call in self.calls:
            out += [f"  {call.tool_name} ({call.tool_use_id}) {call.outcome}",
                    f"    {call.policy}; arguments {clip(call.arguments, ARGUMENTS_SHOWN)}"]  # fmt: skip
        out.append(f"Then: {self.then}" if self.then else "Then: nothing more (the drive stops there)")
        return out


def plan_drive(run_id: str, records: Sequence[Record], tools: Mapping[str, ToolSafety] | None) -> DrivePlan:
    """What a drive of the run holding ``records`` does first, with an agent whose tools have the
    policies ``tools`` (None: not known, the recorded policy alone is shown)."""
    if bad := next((r for r in records if r.unreadable), None):
        return DrivePlan(
            run_id, (), f"nothing: the run holds an unreadable record ({bad.name}), and a drive refuses it"
        )
    by_name = {r.name: r for r in records}
    start = RunStart.decode(by_name[keys.RUN_START].result if keys.RUN_START in by_name else None)
    turns = [r for r in records if r.kind == StepKind.MODEL and r.name.startswith("@llm/")]
    if not turns:
        return DrivePlan(run_id, (), f"the model's first turn ({keys.llm_key(0)}): {_MODEL_DECIDES}")
    last = turns[-1]
    pending = [c for c in (last.message.tool_uses if last.message else ()) if keys.tool_key(c.id) not in by_name]
    next_turn = keys.llm_key(len(turns))
    if not pending:
        if last.message is not None and last.message.tool_uses:
            return DrivePlan(run_id, (), f"the model's turn {next_turn}: {_MODEL_DECIDES}")
        return DrivePlan(run_id, (), f"{keys.RUN_COMPLETE}: the model's last turn ({last.name}) answered; nothing runs")
    planned: list[PlannedCall] = []
    for call in pending:
        step = _planned(call, by_name, start, tools)
        planned.append(step)
        if step.stops:
            return DrivePlan(run_id, tuple(planned), "")
    return DrivePlan(run_id, tuple(planned), f"the model's turn {next_turn}: {_MODEL_DECIDES}")


_MODEL_DECIDES = (
    "your agent's model answers it; what follows (model turns, tool calls, run:complete) depends on its answers"
)


def _planned(
    call: ToolUsePart, by_name: Mapping[str, Record], start: RunStart, tools: Mapping[str, ToolSafety] | None
) -> PlannedCall:
    recorded = start.policy(call.name)
    if tools is None:
        policy, known = recorded, True
    elif call.name in tools:
        policy, known = tools[call.name].at_least(recorded), True
    else:
        policy, known = recorded, False
    arguments = raw_json_text(call.args or b"{}")
    said = _policy_words(policy)

    def planned(outcome: str, short: str, *, runs: bool, stops: bool = False) -> PlannedCall:
        return PlannedCall(call.name, call.id, arguments, said, outcome, short, runs, stops)

    decided = ""
    if policy is not None and policy.needs_approval:
        decision = _decision(call.id, by_name)
        if decision is None:
            return planned(
                "stops here: it awaits a person's approval (nothing runs)",
                "stops: awaits approval",
                runs=False,
                stops=True,
            )
        approved, who = decision
        if not approved:
            return planned(f"records its denial{who} as the result (it does not run)", "denied: not run", runs=False)
        decided = f", approved{who}"
    if not known:
        return planned(
            "records 'unknown tool' as its result: your agent has no such tool", "unknown tool: not run", runs=False
        )
    if policy is not None and not policy.retry_safe:
        marker = _latest_attempt(call.id, by_name)
        if marker is not None and keys.not_started_key(marker.claim, marker.name) not in by_name:
            return planned(
                f"stops here: {marker.name} is recorded with no result (outcome unknown; nothing runs)",
                "stops: outcome unknown",
                runs=False,
                stops=True,
            )
        again = " again (its last attempt is recorded as not fired)" if marker is not None else ""
        return planned(
            f"RUNS{again}{decided}: an attempt marker is written first", "RUNS" + (" again" if again else ""), runs=True
        )
    return planned(f"RUNS{decided}", "RUNS", runs=True)


def _decision(tool_use_id: str, by_name: Mapping[str, Record]) -> tuple[bool, str] | None:
    """The decision on a gated call (approved?, " by <approver>"), or None while there is none."""
    if (tally := by_name.get(keys.approval_tally_key(tool_use_id))) is not None:
        return tally_approved(tally), " (m-of-n tally)"
    if (decision := by_name.get(keys.approval_key(tool_use_id))) is None:
        return None
    return bool(decision.approved), f" by {decision.approver}" if decision.approver else ""


def _latest_attempt(tool_use_id: str, by_name: Mapping[str, Record]) -> Record | None:
    latest, generation = None, 0
    while True:
        name = keys.attempt_key(tool_use_id) if generation == 0 else keys.retry_attempt_key(generation, tool_use_id)
        if name not in by_name:
            return latest
        latest, generation = by_name[name], generation + 1


def _policy_words(policy: ToolSafety | None) -> str:
    if policy is None:
        return "policy not recorded (your agent's)"
    safety = next(
        (words for flag, words in ((policy.read_only, "read-only"), (policy.idempotent, "idempotent"),
                                   (policy.idempotency_key, "idempotency key")) if flag),
        "side effects, not retry-safe",
    )  # fmt: skip
    if policy.needs_approval:
        safety += ", gated on m-of-n approvals" if policy.approval_tally else ", gated on approval"
    return safety

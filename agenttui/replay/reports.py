"""What the front ends hand scripts and agents: replay verdicts, forks and comparisons as plain
values ready for JSON (the CLI's ``--json``, the MCP server's answers). One projection each, so
the words an agent reads are the words a person reads (a status's is ``runs.status.status_json``:
a run list imports no replay)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agenttui.journal.describe import record_json
from agenttui.replay.fork import turn_sources
from agenttui.replay.verdict import Verdict, VerdictKind

if TYPE_CHECKING:
    from agenttui.journal.record import Record
    from agenttui.replay.compare import Comparison, Side
    from agenttui.replay.fork import ForkSession


def verdict_json(run_id: str, tools: str, turns: int, recorded_turns: int, verdict: Verdict) -> dict[str, Any]:
    """A replay's verdict for scripts and agents: the same words the text output and the TUI use."""

    divergence = verdict.divergence
    return {
        "run_id": run_id, "tools": tools, "verdict": verdict.kind.value, "exit_code": verdict.exit_code,
        "matches": verdict.matches, "summary": verdict.summary(), "reason": verdict.reason,
        "stopped": verdict.stopped or None, "turns": turns, "recorded_turns": recorded_turns,
        "not_compared": list(verdict.not_compared), "redacted": list(verdict.redacted),
        "served_from_recording": list(verdict.served),
        "input_from": "--input" if verdict.input_given else "journal",
        "tombstones": list(verdict.tombstones),
        "live_side_effects": list(verdict.live),
        "request_changes": [
            {"member": change.member, "turns": list(change.turns), "summary": change.words()}
            for change in verdict.request_changes
        ],
        "divergence": None if divergence is None else {
            "index": divergence.index, "step": divergence.name, "state": divergence.state.value, "reason": divergence.reason,
            "kind": divergence.kind(),
            "recorded": None if divergence.recorded is None else record_json(divergence.recorded),
            "replayed": None if divergence.replayed is None else record_json(divergence.replayed),
        },
    }  # fmt: skip


def fork_json(fork: ForkSession, replayed: list[Record], saved: str | None) -> dict[str, Any]:
    """A fork for scripts and agents: the edit, each turn's source, each record (live ones marked), the outcome."""

    progress, hit = fork.progress, fork.progress.breakpoint
    live_from = None if fork.live_from is None else f"@llm/{fork.live_from}"
    records, live = [], False
    for record in replayed:
        live = live or record.name == live_from
        records.append({"name": record.name, "kind": record.kind, "live": live})
    return {
        "run_id": fork.run_id, "at": fork.edit.name, "value": json.loads(fork.edit.value), "tools": fork.mode,
        "state": progress.state.value, "outcome": fork.outcome(), "exit_code": fork.exit_code,
        "reason": progress.reason, "turns": progress.turn, "recorded_turns": progress.recorded_turns,
        "turn_sources": turn_sources(fork, progress.turn), "live_from": live_from, "live_reason": fork.live_reason or None,
        "breakpoint": None if hit is None or fork.done else {"breakpoint": hit.breakpoint.text, "turn": hit.turn, "why": hit.why},
        "records": records, "saved": saved,
    }  # fmt: skip


def comparison_json(left: Side, right: Side, comparison: Comparison) -> dict[str, Any]:
    """The comparison for scripts and agents: both runs, every turn's tokens and differing records."""

    first = comparison.first_difference

    def side(of: Side, turns: int, tokens: int) -> dict[str, Any]:
        return {"run_id": of.run_id, "turns": turns, "tokens": tokens}

    return {
        "left": side(left, comparison.left_turns, comparison.left_usage.total),
        "right": side(right, comparison.right_turns, comparison.right_usage.total),
        "same": comparison.same, "exit_code": 0 if comparison.same else VerdictKind.DIVERGED.exit_code,
        "token_delta": comparison.token_delta,
        "first_difference": None if first is None else {
            "turn": first.turn, "step": first.row.name, "state": first.row.state.value, "reason": first.row.reason,
            "summary": first.words(left.label, right.label),
            "left": None if first.row.left is None else record_json(first.row.left),
            "right": None if first.row.right is None else record_json(first.row.right),
        },
        "turns": [
            {
                "turn": turn.number, "left_tokens": turn.left_tokens if turn.left_usage is not None else None,
                "right_tokens": turn.right_tokens if turn.right_usage is not None else None,
                "token_delta": turn.token_delta,
                "differing": [{"step": row.name, "state": row.state.value, "reason": row.reason} for row in turn.differing],
            }
            for turn in comparison.turns
        ],
    }  # fmt: skip

"""Replay events: the durable semantic events a run's journal implies, without re-running anything."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agenttui.agent.events import AssistantTurn, ToolCompleted
from agenttui.journal.journal import Journal
from agenttui.journal.record import Message, Record, StepKind
from agenttui.runs.reading.view import tool_names
from agenttui.stores.base import Store


def events_of(
    run_id: str, records: Sequence[Record], *, first_turn: int = 0, names: Mapping[str, str] | None = None
) -> list[AssistantTurn | ToolCompleted]:
    """Model records as ``AssistantTurn(replayed=True)``, tool results as ``ToolCompleted``, in order.

    For a slice of the journal (the records a live tail read), ``first_turn`` numbers its turns
    and ``names`` gives the tool names of calls made before it.
    """
    names = names if names is not None else tool_names(records)
    events: list[AssistantTurn | ToolCompleted] = []
    turn = first_turn
    for record in records:
        if record.kind == StepKind.MODEL:
            events.append(AssistantTurn(run_id, turn, record.message or Message.assistant(), replayed=True))
            turn += 1
        elif record.kind == StepKind.TOOL_RESULT:
            name = names.get(record.tool_use_id) or record.tool_use_id
            events.append(
                ToolCompleted(run_id, record.tool_use_id, name, record.result or b"null", record.is_error, True)
            )
    return events


async def replay_events(store: Store, run_id: str) -> list[AssistantTurn | ToolCompleted]:
    """The spec's ``ReplayEvents``: identical before and after a crash, a resume-stable audit trail."""
    return events_of(run_id, await Journal(store).history(run_id))

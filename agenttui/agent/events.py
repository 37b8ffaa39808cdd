"""The events an agent run streams: live-loop signals and the durable ones replay re-emits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from agenttui.agent.model import ModelDelta
from agenttui.journal.record import Message


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """A live model turn began (never for a turn replayed from the journal)."""

    run_id: str
    turn: int


@dataclass(frozen=True, slots=True)
class ModelEvent:
    """A streaming delta of the live model turn: text, reasoning or a tool call's arguments."""

    run_id: str
    turn: int
    delta: ModelDelta


@dataclass(frozen=True, slots=True)
class AssistantTurn:
    """A model turn's whole message; ``replayed`` when it came from the journal, not the model."""

    run_id: str
    turn: int
    message: Message
    replayed: bool
    live: bool = False
    """A what-if fork's turn that a live model answered, where the recording could not."""


@dataclass(frozen=True, slots=True)
class ToolStarted:
    run_id: str
    tool_use_id: str
    name: str
    args: bytes


@dataclass(frozen=True, slots=True)
class ToolCompleted:
    """A tool call's recorded outcome; ``result`` is its raw JSON."""

    run_id: str
    tool_use_id: str
    name: str
    result: bytes
    is_error: bool
    replayed: bool = False


@dataclass(frozen=True, slots=True)
class Finished:
    """The run reached its terminal answer."""

    run_id: str
    message: Message


AgentEvent: TypeAlias = TurnStarted | ModelEvent | AssistantTurn | ToolStarted | ToolCompleted | Finished

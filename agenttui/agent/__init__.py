"""The agent runtime: the loop, models, tools and their safety, durable pauses, wakers.

What a person does to a run (approve, deny, answer, resolve, cancel) lives in ``agenttui.runs``.

The loop, its events, the scripted model and sub-agents are imported when first asked for
(``__getattr__``), not with the package: a run's status reads ``pauses`` and ``runstart``, and
importing those must not bring the loop with them (benchmarks/startup.py).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from agenttui.agent.model import Finish, Model, ModelRequest, ReasoningDelta, TextDelta, ToolCallDelta, ToolSpec
from agenttui.agent.pauses import (
    Interrupted,
    NothingPending,
    PendingApproval,
    ResumeHalt,
    RunEnded,
    RunNotStarted,
    RunPaused,
    Sleeping,
)
from agenttui.agent.tools import Tool, ToolContext, ToolOutput, ToolSafety, tool
from agenttui.agent.waker import MemWaker, Waker, with_waker

if TYPE_CHECKING:
    from agenttui.agent.events import (
        AgentEvent,
        AssistantTurn,
        Finished,
        ModelEvent,
        ToolCompleted,
        ToolStarted,
        TurnStarted,
    )
    from agenttui.agent.loop import Agent, Result, TurnLimitExceeded
    from agenttui.agent.scripted import Call, ScriptedModel, Turn
    from agenttui.agent.subagent import subagent_tool

LAZY = {
    "events": ("AgentEvent", "AssistantTurn", "Finished", "ModelEvent", "ToolCompleted", "ToolStarted", "TurnStarted"),
    "loop": ("Agent", "Result", "TurnLimitExceeded"),
    "scripted": ("Call", "ScriptedModel", "Turn"),
    "subagent": ("subagent_tool",),
}
"""The modules imported when one of their names is first asked for, and those names."""

__all__ = [
    "Agent", "AgentEvent", "AssistantTurn", "Call", "Finish", "Finished",
    "Interrupted", "MemWaker", "Model", "ModelEvent", "ModelRequest", "NothingPending",
    "PendingApproval", "ReasoningDelta", "Result", "ResumeHalt", "RunEnded", "RunNotStarted",
    "RunPaused", "ScriptedModel", "Sleeping", "TextDelta", "Tool", "ToolCallDelta", "ToolCompleted",
    "ToolContext", "ToolOutput", "ToolSafety", "ToolSpec", "ToolStarted", "Turn", "TurnLimitExceeded",
    "TurnStarted", "Waker", "subagent_tool",
    "tool", "with_waker",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    for module, names in LAZY.items():
        if name in names:
            value = getattr(import_module(f"{__name__}.{module}"), name)
            globals()[name] = value  # asked once
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The agent runtime: the loop, models, tools and their safety, durable pauses, wakers.

What a person does to a run (approve, deny, answer, resolve, cancel) lives in ``agenttui.runs``.

Every name is imported when first asked for (``agenttui.lazy``), not with the package: a run's
status reads ``pauses`` and ``runstart``, and recover ``pauses``; importing those must not bring
the models, the tools or the loop with them (benchmarks/startup.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agenttui.lazy import lazy_names

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
    from agenttui.agent.scripted import Call, ScriptedModel, Turn
    from agenttui.agent.subagent import subagent_tool
    from agenttui.agent.tools import Tool, ToolContext, ToolOutput, ToolSafety, tool
    from agenttui.agent.waker import MemWaker, Waker, with_waker

LAZY = {
    "events": ("AgentEvent", "AssistantTurn", "Finished", "ModelEvent", "ToolCompleted", "ToolStarted", "TurnStarted"),
    "loop": ("Agent", "Result", "TurnLimitExceeded"),
    "model": ("Finish", "Model", "ModelRequest", "ReasoningDelta", "TextDelta", "ToolCallDelta", "ToolSpec"),
    "pauses": (
        "Interrupted", "NothingPending", "PendingApproval", "ResumeHalt", "RunEnded", "RunNotStarted", "RunPaused",
        "Sleeping",
    ),
    "scripted": ("Call", "ScriptedModel", "Turn"),
    "subagent": ("subagent_tool",),
    "tools": ("Tool", "ToolContext", "ToolOutput", "ToolSafety", "tool"),
    "waker": ("MemWaker", "Waker", "with_waker"),
}  # fmt: skip
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

__getattr__ = lazy_names(__name__, LAZY)

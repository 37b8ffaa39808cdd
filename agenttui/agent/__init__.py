"""The agent runtime: the loop, models, tools and their safety, durable pauses, wakers.

What a person does to a run (approve, deny, answer, resolve, cancel) lives in ``agenttui.runs``."""

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

__all__ = [
    "Agent", "AgentEvent", "AssistantTurn", "Call", "Finish", "Finished",
    "Interrupted", "MemWaker", "Model", "ModelEvent", "ModelRequest", "NothingPending",
    "PendingApproval", "ReasoningDelta", "Result", "ResumeHalt", "RunEnded", "RunNotStarted",
    "RunPaused", "ScriptedModel", "Sleeping", "TextDelta", "Tool", "ToolCallDelta", "ToolCompleted",
    "ToolContext", "ToolOutput", "ToolSafety", "ToolSpec", "ToolStarted", "Turn", "TurnLimitExceeded",
    "TurnStarted", "Waker", "subagent_tool",
    "tool", "with_waker",
]  # fmt: skip

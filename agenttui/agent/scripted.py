"""ScriptedModel: a deterministic model that plays a list of turns, for demos and tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agenttui.agent.model import Finish, ModelDelta, ModelRequest, ReasoningDelta, TextDelta, ToolCallDelta
from agenttui.errors import AgentTuiError
from agenttui.journal.record import ModelInfo, Usage

SCRIPTED_MODEL = ModelInfo(provider="scripted", model="scripted-1")


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call a scripted turn makes."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    id: str = ""


@dataclass(frozen=True, slots=True)
class Turn:
    """One scripted assistant turn: optional reasoning, text, and tool calls."""

    text: str = ""
    calls: Sequence[Call] = ()
    reasoning: str = ""
    usage: Usage = field(default_factory=lambda: Usage(input_tokens=120, output_tokens=40))


class ScriptExhausted(AgentTuiError):
    """The agent asked a ScriptedModel for more turns than its script holds."""

    title = "Script exhausted"


class ScriptedModel:
    """Plays ``turns`` in order, one per request, streaming text in small chunks.

    The turn played is ``request.turn`` (the run's model-turn count), so a resumed run picks up
    where the script says, whatever process drives it. Sub-agents play their own script from
    ``agents`` (by agent name). ``latency`` is waited once per turn. Tool call ids default to
    ``call_<turn>_<index>``, stable across re-drives.
    """

    def __init__(
        self,
        turns: Sequence[Turn],
        *,
        agents: Mapping[str, Sequence[Turn]] | None = None,
        latency: float = 0.0,
        chunk: int = 16,
        model: ModelInfo = SCRIPTED_MODEL,
        agent_models: Mapping[str, ModelInfo] | None = None,
    ) -> None:
        self.turns = list(turns)
        self.model = model
        """The model the turns say answered (sub-agents': ``agent_models``, by agent name)."""
        self.agent_models = dict(agent_models or {})
        self.agents = {name: list(script) for name, script in (agents or {}).items()}
        self.latency = latency
        self.chunk = chunk

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        script = self.agents.get(request.agent, self.turns)
        if request.turn >= len(script):
            raise ScriptExhausted(
                f"the script of {request.agent} has {len(script)} turns; turn {request.turn} was asked for"
            )
        turn = script[request.turn]
        if self.latency:
            await asyncio.sleep(self.latency)
        if turn.reasoning:
            yield ReasoningDelta(turn.reasoning)
        for start in range(0, len(turn.text), self.chunk):
            yield TextDelta(turn.text[start : start + self.chunk])
        for index, call in enumerate(turn.calls):
            call_id = call.id or f"call_{request.turn}_{index}"
            yield ToolCallDelta(index, call_id, call.name, json.dumps(call.args, separators=(",", ":")))
        model = self.agent_models.get(request.agent, self.model)
        yield Finish("tool_use" if turn.calls else "stop", turn.usage, model=model)

"""An agent whose drive of a run halted on ``charge`` or ``ship``, or awaiting approval of
``charge``, pauses again without writing: the recover pass the bulk-action races run beside a
bulk cancel. Its model refuses to be asked: a drive that reached it would have left the pause."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agenttui.agent.factory import AgentSetup
from agenttui.agent.model import ModelDelta, ModelRequest
from agenttui.agent.tools import tool


class NoModel:
    """A model a paused run never reaches: asked, it fails the drive (the test sees the error)."""

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        raise AssertionError("the pausing agent's model was asked for a turn")


@tool(needs_approval=True)
async def charge(args: dict[str, Any]) -> dict[str, Any]:
    """Charge a card (never called: every run the races drive is paused before it)."""
    raise AssertionError("charge was called")


@tool()
async def ship(args: dict[str, Any]) -> dict[str, Any]:
    """Ship an order (never called)."""
    raise AssertionError("ship was called")


def factory(run_id: str) -> AgentSetup:
    return AgentSetup(tools=[charge, ship], model=NoModel())

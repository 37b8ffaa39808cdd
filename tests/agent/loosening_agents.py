"""The demo's agent with ``refund_payment``'s recorded policy (gated, not retry-safe) loosened one
way or another: a deployment whose code changed since its runs were recorded. Every refund it
really sends is counted: in memory (``loosened``), or a line in the file ``AGENTTUI_EFFECTS``
names for a driver in another process (``module:<kind>`` as ``--agent``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from agenttui.agent.factory import AgentSetup
from agenttui.agent.tools import ToolSafety
from agenttui.demo.build import factory as demo_factory
from agenttui.demo.desk import Effects, desk_tools
from tests.agent.counting_agent import FileEffects

#: Each kind of loosening, as the factory's policy for ``refund_payment`` (None: no such tool).
LOOSENINGS: dict[str, ToolSafety | None] = {
    "ungated": ToolSafety(),
    "ungated_idempotent": ToolSafety(idempotent=True),
    "ungated_keyed": ToolSafety(idempotency_key=True),
    "ungated_read_only": ToolSafety(read_only=True),
    "gated_read_only": ToolSafety(read_only=True, needs_approval=True),
    "missing": None,
}


def loosened(run_id: str, kind: str, effects: Effects) -> AgentSetup:
    """The demo's agent for ``run_id``, its refund tool loosened as ``kind`` says."""
    policy = LOOSENINGS[kind]
    tools = [
        replace(tool, safety=policy) if tool.name == "refund_payment" and policy is not None else tool
        for tool in desk_tools(effects)
        if tool.name != "refund_payment" or policy is not None
    ]
    return replace(demo_factory(run_id), tools=tools)


def _counted_in_file(kind: str) -> Callable[[str], AgentSetup]:
    def factory(run_id: str) -> AgentSetup:
        return loosened(run_id, kind, FileEffects(Path(os.environ["AGENTTUI_EFFECTS"])))

    return factory


ungated = _counted_in_file("ungated")
ungated_read_only = _counted_in_file("ungated_read_only")
missing = _counted_in_file("missing")

"""A user's agent factory whose lookup tool changed since the demo ran: replays must diverge."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agenttui.agent.factory import AgentSetup
from agenttui.agent.tools import tool
from agenttui.demo.build import factory as demo_factory
from agenttui.demo.desk import OrderRef


@tool(read_only=True)
async def lookup_order(args: OrderRef) -> dict[str, Any]:
    """Look an order up by id (today's code: a new field)."""
    return {"order_id": args.order_id, "status": "delivered", "warehouse": "EU-2"}


def factory(run_id: str) -> AgentSetup:
    setup = demo_factory(run_id)
    return replace(setup, tools=[lookup_order if t.name == "lookup_order" else t for t in setup.tools])

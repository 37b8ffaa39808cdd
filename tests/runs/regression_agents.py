"""The demo's agent as a team might change it, for the regression suite's tests: each factory is
the demo's own (``agenttui.demo.build:factory``) with one change to its code."""

from __future__ import annotations

from dataclasses import replace

from agenttui.agent.factory import AgentSetup
from agenttui.demo.build import factory as demo_factory


def renamed_tool(run_id: str) -> AgentSetup:
    """``lookup_order`` is now ``find_order``: a recorded turn that calls it finds no such tool."""
    setup = demo_factory(run_id)
    return replace(setup, tools=[replace(t, name="find_order") if t.name == "lookup_order" else t for t in setup.tools])


def no_refund_gate(run_id: str) -> AgentSetup:
    """``refund_payment`` no longer waits for a human's approval."""
    setup = demo_factory(run_id)
    ungated = [replace(t, safety=replace(t.safety, needs_approval=False)) if t.name == "refund_payment" else t
               for t in setup.tools]  # fmt: skip
    return replace(setup, tools=ungated)


def edited_prompt(run_id: str) -> AgentSetup:
    """The system prompt reworded: the model's request changes, not what the code does."""
    return replace(demo_factory(run_id), system_prompt="You are the refund desk. Be brief.")


def reworded_tool(run_id: str) -> AgentSetup:
    """``lookup_order``'s description reworded: the tool list the model is sent changes, not the code."""
    setup = demo_factory(run_id)
    reworded = [replace(t, description="Find an order by its id.") if t.name == "lookup_order" else t
                for t in setup.tools]  # fmt: skip
    return replace(setup, tools=reworded)

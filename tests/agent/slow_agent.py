"""The demo's agent with a model that takes a minute a turn: a drive that holds its lease long
enough for a test to signal the process that drives it."""

from __future__ import annotations

from dataclasses import replace

from agenttui.agent.factory import AgentSetup
from agenttui.demo.build import SCRIPTS
from agenttui.demo.build import factory as demo_factory
from agenttui.demo.desk import demo_model


def factory(run_id: str) -> AgentSetup:
    return replace(demo_factory(run_id), model=demo_model(SCRIPTS[run_id], latency=60))

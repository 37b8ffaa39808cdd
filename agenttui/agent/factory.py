"""Agent factories: the user's code that builds an agent's tools and settings for a run.

``--agent module:factory`` names a callable ``factory(run_id) -> AgentSetup``. Replay swaps the
model for the recording; a re-drive uses the setup's own model.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from agenttui.agent.loop import Agent, utc_now
from agenttui.agent.model import Model
from agenttui.agent.tools import Tool
from agenttui.errors import ConfigError
from agenttui.stores.base import Store


@dataclass(frozen=True)
class AgentSetup:
    """How to build the agent that drives a run."""

    tools: Sequence[Tool]
    model: Model | None = None
    """The model a re-drive uses (a replay uses the recording instead)."""
    name: str = "agent"
    system_prompt: str = ""
    max_turns: int = 100
    clock: Callable[[], datetime] = field(default=utc_now)

    def agent(self, store: Store, model: Model | None = None) -> Agent:
        chosen = model or self.model
        if chosen is None:
            raise ConfigError(f"the {self.name} agent's factory gives no model to re-drive with")
        return Agent(chosen, store, *self.tools, name=self.name, system_prompt=self.system_prompt,
                     max_turns=self.max_turns, clock=self.clock)  # fmt: skip


AgentFactory = Callable[[str], AgentSetup]


def load_factory(spec: str) -> AgentFactory:
    """Import ``module:attribute`` and check it is callable. Raises ``ConfigError`` with why not."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(f"--agent takes module:factory, not {spec!r}")
    # Your module usually sits where you run agenttui; an installed console script does not put
    # that directory on the path (``python -m`` does), so look there too, as uvicorn does.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import {module_name!r} for --agent: {exc}") from None
    factory: AgentFactory | None = getattr(module, attribute, None)  # whatever it is, checked next
    if not callable(factory):
        raise ConfigError(f"{spec!r} names no callable")
    return factory

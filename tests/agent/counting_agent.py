"""The demo's agent, with every refund and email it really sends appended to the file named by
``AGENTTUI_EFFECTS``: a replay test counts side effects across processes with it."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from agenttui.agent.factory import AgentSetup
from agenttui.demo.build import factory as demo_factory
from agenttui.demo.desk import Effects, desk_tools


class FileEffects(Effects):
    """Effects that also append one line per refund and email to a file."""

    def __init__(self, path: Path) -> None:
        super().__init__(on_refund=lambda order_id, amount: self._note(f"refund {order_id} {amount}"))
        self.path = path

    def _note(self, line: str) -> None:
        with self.path.open("a") as out:
            out.write(line + "\n")


def factory(run_id: str) -> AgentSetup:
    effects = FileEffects(Path(os.environ["AGENTTUI_EFFECTS"]))
    return replace(demo_factory(run_id), tools=desk_tools(effects))

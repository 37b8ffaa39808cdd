"""Sub-agents: a tool that runs another Agent as a run of its own, under the call's sub-run id."""

from __future__ import annotations

from dataclasses import dataclass

from agenttui.agent.loop import Agent, run_usage
from agenttui.agent.tools import Tool, ToolContext, ToolOutput, ToolSafety
from agenttui.journal.keys import sub_run_id


@dataclass(frozen=True, slots=True)
class Task:
    task: str
    """What the sub-agent is asked to do."""


def subagent_tool(name: str, agent: Agent, description: str = "") -> Tool:
    """A tool whose call drives ``agent`` on run ``<parent run>><enc call id>``.

    The child's journal is its own run; driving the call again resumes the child, so the tool is
    idempotent. A pause in the child (an approval, say) pauses the parent too.
    """

    async def delegate(ctx: ToolContext, args: Task) -> ToolOutput:
        child = sub_run_id(ctx.run_id, ctx.tool_use_id)
        answer = await agent.run(child, args.task)
        return ToolOutput(answer.text, usage=await run_usage(agent.journal, child))

    return Tool(name, delegate, description or f"Delegate a task to the {name} agent.", Task, ToolSafety(idempotent=True))

"""Sub-agents: a tool that runs another agent as a run of its own, under the call's sub-run id."""

from __future__ import annotations

from dataclasses import dataclass

from agenttui.agent.loop import Agent, run_usage
from agenttui.agent.tools import Tool, ToolContext, ToolOutput, ToolSafety
from agenttui.journal.keys import sub_run_id


@dataclass(frozen=True, slots=True)
class Task:
    task: str
    """What the sub-agent is asked to do."""


def subagent_tool(name: str, *tools: Tool, system_prompt: str = "", description: str = "") -> Tool:
    """A tool whose call drives a sub-agent named ``name`` on run ``<parent run>><enc call id>``.

    The sub-agent shares its parent's model, store and clock, so a replayed parent replays its
    children from their own recordings. The child's journal is its own run; driving the call
    again resumes the child, so the tool is idempotent. A pause in the child pauses the parent.
    """

    async def delegate(ctx: ToolContext, args: Task) -> ToolOutput:
        parent = ctx.agent
        child = Agent(parent.model, parent.store, *tools, name=name, system_prompt=system_prompt, clock=parent.clock)
        child_run = sub_run_id(ctx.run_id, ctx.tool_use_id)
        answer = await child.run(child_run, args.task)
        # The SDK carries a sub-run's usage onto the call's result only when there is some.
        return ToolOutput(answer.text, usage=await run_usage(child.journal, child_run) or None)

    return Tool(
        name, delegate, description or f"Delegate a task to the {name} agent.", Task, ToolSafety(idempotent=True)
    )

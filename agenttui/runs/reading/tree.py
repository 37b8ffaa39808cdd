"""A run's tree: the flow steps of every sub-run under it, for flowchart frames."""

from __future__ import annotations

from agenttui.journal.journal import Journal
from agenttui.render.flow import FlowStep, flow_steps
from agenttui.stores.base import Store


async def sub_run_steps(store: Store, run_id: str) -> dict[str, list[FlowStep]]:
    """Every descendant run of ``run_id`` (ids starting ``run_id>``) mapped to its flow steps.

    A store that cannot list its runs has no sub-runs to show.
    """
    if not store.IMPLEMENTS_LISTING:
        return {}
    journal = Journal(store)
    descendants = [r async for r in store.runs(prefix=run_id + ">")]
    children: dict[str, list[FlowStep]] = {}
    for child in descendants:
        records = (await journal.read(child)).records
        children[child] = flow_steps(records, run_id=child, sub_runs=descendants)
    return children

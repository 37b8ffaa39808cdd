"""The spec's ``Recover``: (runs re-driven, genuine errors), with a pause counted as a recovery."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from agenttui.agent.runstart import RunStart
from agenttui.demo.build import build_demo, factory
from agenttui.errors import ConfigError
from agenttui.journal import Journal, keys
from agenttui.runs import is_complete, recover, recover_runs
from agenttui.stores.base import Entry, Inserted, Store
from agenttui.stores.memory import MemStore


def resume_with_the_demo_agent(store: Store, failing: str = "") -> Callable[[str], Awaitable[None]]:
    """The deployment's policy: the demo's agent, fed each run's recorded input."""

    async def resume(run_id: str) -> None:
        if run_id == failing:
            raise RuntimeError(f"the model provider is down for {run_id}")
        start = await Journal(store).get(run_id, keys.RUN_START)
        assert start is not None
        await factory(run_id).agent(store).run(run_id, RunStart.decode(start.result).input)

    return resume


async def unfinished_roots(store: Store) -> list[str]:
    return [run_id async for run_id in store.runs() if ">" not in run_id and not await is_complete(store, run_id)]


#: Demo runs recover leaves alone or cannot drive: ended without completing (cancelled, rolled
#: back), never started, a saga asked to roll back, one another worker drives, and the damaged
#: run (a genuine error).
NOT_RE_DRIVEN = {"refund-a1001-cancelled", "saga-a1003-rolled-back", "reply-a1006", "saga-a1003-cancelling",
                 "refund-a1006-in-flight", "lookup-a1001-damaged"}  # fmt: skip


async def test_pauses_are_recoveries_and_finished_runs_are_skipped(store: Store) -> None:
    await build_demo(store, bulk_turns=2)
    unfinished = await unfinished_roots(store)
    report = await recover_runs(store, resume_with_the_demo_agent(store))
    # Every other unfinished run is driven on, to its end or back into a pause.
    assert sorted(report.re_driven) == sorted(set(unfinished) - NOT_RE_DRIVEN)
    assert set(report.skipped) == {"reply-a1006", "saga-a1003-cancelling", "refund-a1006-in-flight"}
    assert "rollback was requested" in report.skipped["saga-a1003-cancelling"]
    assert list(report.errors) == ["lookup-a1001-damaged"]


async def test_only_genuine_faults_are_errors(store: Store) -> None:
    await build_demo(store, bulk_turns=2)
    unfinished = await unfinished_roots(store)
    re_driven, errors = await recover(store, resume_with_the_demo_agent(store, failing="refund-a1001-stalled"))
    assert sorted(str(e).split(" (")[0] for e in errors) == [
        "run 'lookup-a1001-damaged' holds an unreadable or redacted record",
        "the model provider is down for refund-a1001-stalled",
    ]
    assert re_driven == len(set(unfinished) - NOT_RE_DRIVEN) - 1  # not the failing run


class UnlistedStore(Store):
    """A store without the optional Lister capability: a real MemStore that does not offer it."""

    def __init__(self) -> None:
        self.inner = MemStore()

    @property
    def display_url(self) -> str:
        return "unlisted:"

    async def insert(self, run_id: str, name: str, data: bytes) -> Inserted:
        return await self.inner.insert(run_id, name, data)

    async def get(self, run_id: str, name: str) -> Entry | None:
        return await self.inner.get(run_id, name)

    def load(self, run_id: str, after: int = -1) -> AsyncIterator[Entry]:
        return self.inner.load(run_id, after)


async def test_a_store_that_cannot_list_is_a_config_error() -> None:
    store = UnlistedStore()
    with pytest.raises(ConfigError, match="unlisted: cannot"):
        await recover(store, resume_with_the_demo_agent(store))

"""The spec's ``Recover``: (runs re-driven, genuine errors), with a pause counted as a recovery."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from agenttui.agent.runstart import RunStart
from agenttui.demo.build import build_demo, factory
from agenttui.errors import ConfigError
from agenttui.journal import Journal, keys
from agenttui.runs import is_complete, recover, recover_runs
from agenttui.runs.recovery.operations import plan_lines
from agenttui.runs.recovery.recover import plan_recover
from agenttui.runs.statuses.state import RunState
from agenttui.stores.base import Entry, Inserted, Store
from agenttui.stores.memory import MemStore
from agenttui.stores.sqlite import SQLiteStore
from tests.agent.test_replay_side_effects import COUNTING, cli
from tests.forks import APPROVED, APPROVED_REWORDED, save_as_before_the_mark, save_fork
from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures)


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
    def url_shown(self) -> str:
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


# -- saved what-if forks: never driven ------------------------------------------------------------


async def journal_of(store: Store, run_ids: list[str]) -> dict[str, list[bytes]]:
    return {run_id: [e.data async for e in store.load(run_id)] for run_id in run_ids}


async def test_recover_leaves_saved_forks_alone_and_says_why(store: Store) -> None:
    await build_demo(store, bulk_turns=2)
    marked = await save_fork(store, APPROVED, APPROVED_REWORDED)
    await save_as_before_the_mark(store, APPROVED, APPROVED_REWORDED, "old-fork")
    plan = await plan_recover(store)
    assert "old-fork" not in [s.run_id for s in plan.to_drive] and marked not in [s.run_id for s in plan.to_drive]
    assert [(s.run_id, s.state) for s in plan.left_alone if s.state == RunState.FORK] == [("old-fork", RunState.FORK)]
    assert "  what-if forks, never driven: old-fork" in plan_lines(plan)
    before = await journal_of(store, [marked, "old-fork"])
    report = await recover_runs(store, resume_with_the_demo_agent(store))
    assert report.skipped["old-fork"] == f"a what-if fork of {APPROVED} (at @llm/0): forks are never driven"
    assert marked not in report.skipped and marked not in report.re_driven  # its run:cancelled ended it
    assert await journal_of(store, [marked, "old-fork"]) == before


async def test_recover_with_your_agent_fires_no_side_effect_of_a_fork(demo_db: Path, tmp_path: Path) -> None:  # noqa: F811
    """Saved forks of a refund approved and not yet driven: driven, each would refund for real."""
    only_forks = tmp_path / "what-if.db"
    source, into = await SQLiteStore.open(demo_db), await SQLiteStore.open(only_forks)
    try:
        for target in (source, into):  # beside the run forked, and in a file holding forks alone
            await save_fork(source, APPROVED, APPROVED_REWORDED, into=None if target is source else into)
            await save_as_before_the_mark(source, APPROVED, APPROVED_REWORDED, "old-fork", into=target)
    finally:
        await source.close()
        await into.close()
    effects = tmp_path / "effects.log"
    skipped = f"skipped old-fork: a what-if fork of {APPROVED} (at @llm/0): forks are never driven"
    forks_alone = cli("recover", str(only_forks), "--agent", COUNTING, effects=effects)
    assert forks_alone.returncode == 0, forks_alone.stdout + forks_alone.stderr
    assert forks_alone.stdout.startswith("recovered 0 runs") and skipped in forks_alone.stdout
    assert not effects.exists()  # zero side effects
    beside = cli("recover", str(demo_db), "--agent", COUNTING, effects=effects)
    assert skipped in beside.stdout and f"{APPROVED}~fork-1" not in beside.stdout  # that one, its save ended
    assert effects.read_text() == "refund A-1005 64.1\n"  # the approved run's own refund, once; no fork's

"""Recorded runs as pytest tests: ``pytest --agenttui-runs PATH --agenttui-agent module:factory``.

Registered through the ``pytest11`` entry point and off unless asked for: given
``--agenttui-runs`` (stores, bundles or folders of bundles, repeatable), each run becomes one test
item, named by its bundle and run id (``-k refund-8812`` selects it), which replays the run
offline against the agent's code and fails on a divergence with the divergence itself (both
sides of the record, diffed), not a traceback into agenttui. The ``agenttui_replay`` fixture
replays one run from a hand-written test. Works under ``pytest -n`` (every worker collects the
same items in the same order).

This module is imported by every pytest run where agenttui is installed: it imports nothing
heavy until a run is collected or replayed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from agenttui.agent.factory import AgentSetup
    from agenttui.replay.session import RunRead
    from agenttui.replay.suite import Replayed
    from agenttui.stores.base import Store


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agenttui", "recorded agent runs replayed as tests (agenttui)")
    group.addoption("--agenttui-runs", action="append", default=[], metavar="PATH",
                    help="A store, bundle or folder of bundles whose runs become tests (repeatable).")  # fmt: skip
    group.addoption("--agenttui-agent", metavar="MODULE:FACTORY",
                    help="The agent factory the runs are replayed against (without: recorded tools alone).")  # fmt: skip
    group.addoption("--agenttui-where", metavar="EXPR",
                    help="Only the runs this filter selects (docs/guide/filters.md), e.g. 'status=complete'.")  # fmt: skip
    group.addoption("--agenttui-strict", action="store_true",
                    help="Fail a run whose prompt or tool list is not the recording's (tolerated without).")  # fmt: skip


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add a test item for every run of ``--agenttui-runs`` after the tests collected from files."""
    given: list[str] = config.getoption("agenttui_runs")
    if not given:
        return
    from agenttui.errors import AgentTuiError

    try:
        _collect_runs(session, config, given, items)
    except AgentTuiError as exc:  # a path, a filter or an agent the command line got wrong
        from agenttui.journal.inert import printable

        raise pytest.UsageError(f"agenttui: {printable(exc.message)}") from None


def _collect_runs(session: pytest.Session, config: pytest.Config, given: list[str], items: list[pytest.Item]) -> None:
    from agenttui.agent.factory import load_factory
    from agenttui.replay.suite import sources_of

    if agent := config.getoption("agenttui_agent"):
        load_factory(agent)  # refused here, once, rather than by every run's test
    for source in sources_of(given):
        collector = RecordedRuns.from_parent(session, path=_path_of(source), source=source)
        runs = list(collector.collect())
        # Reported as a collection, as a file's tests are: pytest counts them then ("collected
        # N items", "N tests collected" under --collect-only).
        report = pytest.CollectReport(collector.nodeid, "passed", None, [*runs])
        session.ihook.pytest_collectreport(report=report)
        items.extend(runs)


def _path_of(source: str) -> Path:
    """A node's path for a source (a URL has none: the current directory stands for it)."""
    return Path(source).resolve() if "://" not in source else Path.cwd()


class RecordedRuns(pytest.File):
    """A store or bundle whose runs are tests."""

    def __init__(self, *, source: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.source = source

    def collect(self) -> Iterator[RecordedRun]:
        self.run_ids: list[str] = asyncio.run(_selected_runs(self.source, self.config.getoption("agenttui_where")))
        from agenttui.journal.inert import printable_id

        for index, run_id in enumerate(self.run_ids):
            # pytest prints a node's name raw (-v, failures, the summary): a run id is the store's
            # text, so its name is the id made inert, never two ids alike (-k matches what shows).
            yield RecordedRun.from_parent(self, name=printable_id(run_id), run_id=run_id, index=index)


class RecordedRun(pytest.Item):
    """One recorded run, replayed against the agent's code: passes while it matches."""

    def __init__(self, *, run_id: str, index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run_id = run_id
        self.index = index
        """Where the run stands among its source's (``RecordedRuns.run_ids``)."""

    def runtest(self) -> None:
        parent = self.parent
        assert isinstance(parent, RecordedRuns)
        config = self.config
        if (replayer := config.stash.get(_REPLAYER, None)) is None:
            replayer = _Replayer(config.getoption("agenttui_agent"), strict=config.getoption("agenttui_strict"))
            config.stash[_REPLAYER] = replayer
            config.add_cleanup(replayer.close)
        replayer.replay(parent.source, parent.run_ids, self.index).assert_matches()

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        from agenttui.journal.inert import printable
        from agenttui.replay.suite import RunDidNotMatch

        if isinstance(excinfo.value, RunDidNotMatch):
            return str(excinfo.value)  # made inert where it was raised
        # A traceback may quote the store too (an agent's exception about a recorded value).
        return printable(str(super().repr_failure(excinfo, style=style)), multiline=True)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"agenttui replay {self.name}"


async def _selected_runs(source: str, where_text: str | None) -> list[str]:
    from agenttui.replay.suite import selected_runs
    from agenttui.runs.selection.where import parse_where
    from agenttui.stores import open_store

    store = await open_store(source, read_only=True, create=False)
    try:
        return await selected_runs(store, parse_where(where_text) if where_text else None)
    finally:
        await store.close()


class _Replayer:
    """A session's replays of recorded runs, as ``agenttui replay --all`` replays them: on one
    event loop, each source opened once, its runs read a page at a time while the items run in
    order (a run a test, each opening its store on an event loop of its own, took twice the
    suite's time a run). The loop is never the thread's current one: a test's own async code
    keeps its own."""

    def __init__(self, agent: str | None, *, strict: bool) -> None:
        from agenttui.agent.factory import load_factory

        self._factory = load_factory(agent) if agent else None
        self._strict = strict
        self._loop = asyncio.new_event_loop()
        self._stores: dict[str, Store] = {}
        self._read: dict[str, dict[str, RunRead]] = {}
        """Each source's runs read ahead, not replayed yet (one page at most)."""
        self._last: dict[str, int] = {}
        """The index of the run of each source replayed last."""

    def replay(self, source: str, run_ids: Sequence[str], index: int) -> Replayed:
        """Replay the run at ``index`` of ``source``'s ``run_ids``, and judge it."""
        return self._loop.run_until_complete(self._replay(source, run_ids, index))

    async def _replay(self, source: str, run_ids: Sequence[str], index: int) -> Replayed:
        from agenttui.replay.session import read_runs
        from agenttui.replay.suite import READ_PAGE, replay_one
        from agenttui.stores import open_store

        if (store := self._stores.get(source)) is None:
            store = self._stores[source] = await open_store(source, read_only=True, create=False)
        run_id = run_ids[index]
        read = self._read.get(source, {})
        if run_id not in read and self._last.get(source) == index - 1:
            # The items run in order here (no -k, no worker taking the others): read on ahead.
            read = self._read[source] = await read_runs(store, run_ids[index : index + READ_PAGE])
        self._last[source] = index
        return await replay_one(store, source, run_id, self._factory, strict=self._strict, given=read.pop(run_id, None))

    def close(self) -> None:
        async def close_stores() -> None:
            for store in self._stores.values():
                await store.close()

        try:
            self._loop.run_until_complete(close_stores())
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        finally:
            self._loop.close()


_REPLAYER = pytest.StashKey[_Replayer]()


def replay_run(
    source: str | Path, run_id: str, agent: str | Callable[[str], AgentSetup] | None = None, *, strict: bool = False
) -> Replayed:
    """Replay one recorded run of ``source`` against ``agent`` (a factory, or ``module:factory``)
    and judge it (``Replayed.assert_matches`` fails a test with the divergence); ``strict``: a
    changed prompt or tool list fails it too."""
    from agenttui.agent.factory import load_factory
    from agenttui.replay.suite import replay_one
    from agenttui.stores import open_store

    factory = load_factory(agent) if isinstance(agent, str) else agent

    async def replay() -> Replayed:
        store = await open_store(str(source), read_only=True, create=False)
        try:
            return await replay_one(store, str(source), run_id, factory, strict=strict)
        finally:
            await store.close()

    return asyncio.run(replay())


@pytest.fixture
def agenttui_replay() -> Callable[..., Replayed]:
    """Replay a recorded run in a test: ``agenttui_replay("tests/runs/refunds.db", "refund-8812",
    "myapp.agents:factory").assert_matches()``, or read its ``verdict``."""
    return replay_run

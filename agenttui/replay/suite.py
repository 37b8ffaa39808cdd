"""Many recorded runs replayed at once against the user's agent: a regression suite of production
runs (``agenttui replay SOURCE... --all | --where EXPR``).

Each source is a store or a bundle (a bundle is a SQLite store), or a folder of bundles; each run
selected is replayed offline as ``replay_verdict`` replays one (recorded model outputs, tools
served from the recording unless read-only), a few at a time, and judged. The suite's outcome is
the worst verdict: any divergence, else any refusal, else a match.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenttui.errors import AgentTuiError
from agenttui.replay.verdict import Verdict, VerdictKind

if TYPE_CHECKING:
    from agenttui.agent.factory import AgentSetup
    from agenttui.replay.session import RunRead
    from agenttui.runs.selection.where import Where
    from agenttui.stores.base import Store

#: Runs replayed at a time: their reads of the store overlap the others' replays.
AT_ONCE = 4
#: Runs read from the store at once (``read_runs``): three round trips a page, not three a run.
READ_PAGE = 50
#: What a folder of bundles holds: the files taken from it.
BUNDLE_SUFFIXES = (".db", ".sqlite", ".sqlite3", ".bundle")


class NoSource(AgentTuiError):
    """A source that names no store (nothing is replayed)."""

    title = "No such source"


@dataclass(frozen=True)
class Replayed:
    """One run of the suite and how its replay was judged."""

    source: str
    """The store or bundle it was read from, as given."""
    run_id: str
    verdict: Verdict
    tools: str
    """What served the tools (``recorded tools``, or the agent's)."""
    turns: int
    recorded_turns: int
    seconds: float

    @property
    def name(self) -> str:
        """The run as a test names it: its bundle's file name and its run id."""
        return f"{Path(self.source).name}::{self.run_id}"

    def assert_matches(self) -> None:
        """Raise ``RunDidNotMatch``, saying how (the divergence, both sides), unless the replay
        matches the recording (to its end, or to where an unfinished run stops)."""
        if not self.verdict.matches:
            raise RunDidNotMatch(f"{self.name}: " + verdict_lines(self.verdict))


class RunDidNotMatch(AssertionError):
    """A recorded run whose replay did not match: its message is the verdict and the divergence,
    inert, which is all a test report shows of it."""

    def __init__(self, message: str) -> None:
        from agenttui.journal.inert import printable

        super().__init__(printable(message, multiline=True))


@dataclass
class SuiteTally:
    """How the runs of a suite were judged, and its exit code (the CLI's)."""

    runs: int = 0
    by_kind: dict[VerdictKind, int] = field(default_factory=dict)

    def add(self, replayed: Replayed) -> None:
        self.runs += 1
        self.by_kind[replayed.verdict.kind] = self.by_kind.get(replayed.verdict.kind, 0) + 1

    @property
    def exit_code(self) -> int:
        """3 when any run diverged, else 2 when any was refused, else 0."""
        if self.by_kind.get(VerdictKind.DIVERGED):
            return VerdictKind.DIVERGED.exit_code
        if self.by_kind.get(VerdictKind.REFUSED):
            return VerdictKind.REFUSED.exit_code
        return 0

    def summary(self) -> str:
        counted = ", ".join(f"{count:,} {kind.value}" for kind, count in sorted(self.by_kind.items()))
        return f"{self.runs:,} runs replayed: {counted or 'none'}"


def sources_of(given: Sequence[str]) -> list[str]:
    """The stores to read: each given store or bundle, and the bundles of each given folder (in
    name order). A path that is not there is refused before anything is replayed."""
    found: list[str] = []
    for source in given:
        path = Path(source)
        if path.is_dir():
            bundles = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in BUNDLE_SUFFIXES)
            if not bundles:
                raise NoSource(f"{source}: a folder with no bundle in it ({', '.join(BUNDLE_SUFFIXES)})")
            found += [str(bundle) for bundle in bundles]
        elif "://" in source or source == "memory:" or path.is_file():
            found.append(source)
        else:
            raise NoSource(f"{source}: no such file or folder")
    return found


async def selected_runs(store: Store, where: Where | None) -> list[str]:
    """The runs of ``store`` the filter selects (every run without one), in run id order."""
    run_ids = [run_id async for run_id in store.runs()]
    if where is None:
        return run_ids
    from agenttui.runs.statuses.status import statuses

    now = datetime.now(UTC)
    chosen: list[str] = []
    for start in range(0, len(run_ids), 500):
        chosen += [s.run_id for s in await statuses(store, run_ids[start : start + 500]) if where.matches(s, now)]
    return chosen


async def replay_suite(
    sources: Sequence[str],
    factory: Callable[[str], AgentSetup] | None,
    *,
    where: Where | None = None,
    at_once: int = AT_ONCE,
    strict: bool = False,
) -> AsyncIterator[Replayed]:
    """Every run of ``sources`` the filter selects, replayed and judged, as each is done (in
    order of the sources, and of the runs within each, ``at_once`` in hand at a time);
    ``strict``: a changed prompt or tool list fails a run (``Verdict.strictly``)."""
    from agenttui.stores import open_store

    for source in sources_of(sources):
        store = await open_store(source, read_only=True, create=False)
        try:
            run_ids = await selected_runs(store, where)
            async for replayed in _replay_runs(store, source, run_ids, factory, at_once, strict):
                yield replayed
        finally:
            await store.close()


async def _replay_runs(
    store: Store, source: str, run_ids: list[str], factory: Callable[[str], AgentSetup] | None, at_once: int,
    strict: bool,
) -> AsyncIterator[Replayed]:  # fmt: skip
    from agenttui.replay.session import read_runs

    gate = asyncio.Semaphore(max(1, at_once))
    pages: dict[int, asyncio.Future[dict[str, RunRead]]] = {}

    async def read_ahead(index: int) -> RunRead | None:
        """The run's reads, from its page's (each run's taken once: a page read goes as its runs do)."""
        page = index // READ_PAGE
        if page not in pages:
            pages[page] = asyncio.ensure_future(read_runs(store, run_ids[page * READ_PAGE : (page + 1) * READ_PAGE]))
        return (await pages[page]).pop(run_ids[index], None)

    async def replay(index: int, run_id: str) -> Replayed:
        async with gate:
            given = await read_ahead(index)
            return await replay_one(store, source, run_id, factory, strict=strict, given=given)

    # Started all at once, held back by the gate, handed on in order: a long run early holds up
    # what is shown, never what is replayed.
    pending = [asyncio.ensure_future(replay(index, run_id)) for index, run_id in enumerate(run_ids)]
    try:
        for task in pending:
            yield await task
    finally:
        unfinished: list[asyncio.Future[Any]] = [*pending, *pages.values()]
        for future in unfinished:
            future.cancel()
        await asyncio.gather(*unfinished, return_exceptions=True)


async def replay_one(
    store: Store, source: str, run_id: str, factory: Callable[[str], AgentSetup] | None, *, strict: bool = False,
    given: RunRead | None = None,
) -> Replayed:  # fmt: skip
    """One run replayed and judged: a run that cannot be replayed is refused, saying why; one
    whose replay raises (the agent's code) diverged, naming the error; under ``strict`` one
    whose prompt or tool list changed diverged too. ``given``: the run as ``read_runs`` read it."""
    from agenttui.replay.session import replay_verdict

    started = asyncio.get_running_loop().time()
    try:
        setup = factory(run_id) if factory is not None else None
        session, verdict = await replay_verdict(store, run_id, setup, given=given)
    except AgentTuiError as exc:
        return Replayed(source, run_id, Verdict(VerdictKind.REFUSED, exc.message), "", 0, 0, _since(started))
    except Exception as exc:  # the agent's own code failed on a recorded run: that is the regression
        crashed = Verdict(VerdictKind.DIVERGED, f"the replay stopped: the agent raised {type(exc).__name__}: {exc}")
        return Replayed(source, run_id, crashed, "", 0, 0, _since(started))
    progress = session.progress
    verdict = verdict.strictly() if strict else verdict
    return Replayed(source, run_id, verdict, session.mode, progress.turn, progress.recorded_turns, _since(started))


def _since(started: float) -> float:
    return asyncio.get_running_loop().time() - started


def junit_xml(results: Sequence[Replayed], tally: SuiteTally) -> bytes:
    """The suite as JUnit XML, as CI systems display it: a test case a run (named by its bundle
    and run id), a divergence a failure with its one-line reason, a refusal an error."""
    import xml.etree.ElementTree as ET

    from agenttui.journal.inert import printable

    diverged = tally.by_kind.get(VerdictKind.DIVERGED, 0)
    refused = tally.by_kind.get(VerdictKind.REFUSED, 0)
    suite = ET.Element("testsuite", name="agenttui replay", tests=str(tally.runs), failures=str(diverged),
                       errors=str(refused), time=f"{sum(r.seconds for r in results):.3f}")  # fmt: skip
    for replayed in results:
        case = ET.SubElement(suite, "testcase", classname=printable(Path(replayed.source).name),
                             name=printable(replayed.run_id), time=f"{replayed.seconds:.3f}")  # fmt: skip
        verdict = replayed.verdict
        if verdict.kind == VerdictKind.DIVERGED:
            ET.SubElement(case, "failure", message=printable(verdict.summary())).text = printable(
                verdict_lines(verdict), multiline=True
            )
        elif verdict.kind == VerdictKind.REFUSED:
            ET.SubElement(case, "error", message=printable(verdict.summary()))
        else:
            ET.SubElement(case, "system-out").text = printable(verdict.summary())
    written: bytes = ET.tostring(suite, encoding="utf-8", xml_declaration=True)
    return written


def verdict_lines(verdict: Verdict) -> str:
    """What a divergence shows a person: the verdict, and both sides of the record, diffed."""
    from agenttui.render.diff import payload_diff

    lines = [verdict.summary()]
    if (divergence := verdict.divergence) is not None:
        lines.append(f"  what: {divergence.kind()}")
        lines += ["  " + line for line in payload_diff(divergence.recorded, divergence.replayed, context=3)]
    return "\n".join(lines)

"""The status index (``runs.status_index``): statuses read through it equal the exact rules'
after every change a store can see, it spares the store the summing up of unchanged runs, and it
is never an error: a cache that cannot be written or an index that is damaged means no index."""

from __future__ import annotations

import asyncio
import json
import math
import os
import sqlite3
import stat
from collections.abc import AsyncIterator, Collection, Sequence
from datetime import datetime, tzinfo
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agenttui.cli import main
from agenttui.errors import AgentTuiWarning
from agenttui.journal import Journal, Record, StepKind, keys
from agenttui.journal.record import Usage
from agenttui.runs.statuses import index as status_index
from agenttui.runs.statuses import status as status_module
from agenttui.runs.statuses.columns import says_more_than_its_line
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import (
    RunStatus,
    StatusTracker,
    _line_formats,
    kept_statuses,
    list_statuses,
    run_status,
)
from agenttui.stores.base import Entry, Store
from agenttui.stores.memory import MemStore
from agenttui.stores.sqlite import SQLiteStore
from agenttui.stores.summary import RunSummary, SummedJournal
from tests import gocorpus
from tests.conftest import StoreFactory
from tests.gocorpus import write_corpus
from tests.runs.test_summary_statuses import comparable, model_turn


class CountingSQLiteStore(SQLiteStore):
    """A real SQLite store that notes which runs it was asked to sum up, load and check."""

    summed: list[str]
    loaded: list[str]
    marked: list[str]

    async def summaries(self, run_ids: Sequence[str], end_markers: Collection[str]) -> list[RunSummary]:
        self.__dict__.setdefault("summed", []).extend(run_ids)
        return await super().summaries(run_ids, end_markers)

    async def sum_up_journal(self, end_markers: Collection[str]) -> SummedJournal:
        summed = await super().sum_up_journal(end_markers)
        self.__dict__.setdefault("passes", []).append(len(summed))
        return summed

    async def run_marks(self, run_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        self.__dict__.setdefault("marked", []).extend(run_ids)
        return await super().run_marks(run_ids)

    async def load_runs(self, run_ids: Sequence[str]) -> dict[str, list[Entry]]:
        self.__dict__.setdefault("loaded", []).extend(run_ids)
        return await super().load_runs(run_ids)

    def load(self, run_id: str, after: int = -1) -> AsyncIterator[Entry]:
        self.__dict__.setdefault("loaded_alone", []).append(run_id)
        return super().load(run_id, after)


async def indexed(store: Store) -> list[RunStatus]:
    return [comparable(status) async for status in list_statuses(store)]


async def exact(store: Store) -> list[RunStatus]:
    return [comparable(await run_status(store, run_id)) async for run_id in store.runs()]


async def kept(store: Store) -> list[RunStatus]:
    """Every status as a reopen of the runs list reads it: the listing with what the index
    vouches for, laid in columns (``kept_statuses``), and every other run read as any other."""

    async def listing() -> list[str]:
        return [run_id async for run_id in store.runs()]

    run_ids, columns, _ = await kept_statuses(store, listing)
    await status_index.spot_checks_done(store)
    return [
        comparable(columns.status(at, run_id) or await run_status(store, run_id)) for at, run_id in enumerate(run_ids)
    ]


def index_files(cache: Path) -> list[Path]:
    return sorted((cache / "agenttui").glob("status-*.sqlite")) if (cache / "agenttui").exists() else []


async def an_indexed_store(tmp_path: Path, cache: Path) -> tuple[Path, list[RunStatus], Path]:
    """The Go corpus in a SQLite file, looked at once through the index: the file, its exact
    statuses, and the index file the look wrote."""
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as store:
        await write_corpus(store)
        want = await exact(store)
        await indexed(store)
    (index,) = index_files(cache)
    return path, want, index


async def test_statuses_through_the_index_equal_the_exact_rules(make_store: StoreFactory) -> None:
    """On every store, first look and second look alike (the Go corpus: every kind of run)."""
    store = await make_store()
    await write_corpus(store)
    want = await exact(store)
    assert await indexed(store) == want
    assert await indexed(await make_store(read_only=True)) == want
    assert await kept(await make_store(read_only=True)) == want  # a reopen of the runs list


async def test_a_reopen_takes_every_unchanged_status_from_the_index(
    tmp_path: Path, private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runs list's reopen (``kept_statuses``): every run that did not change since the last
    look comes from the index, a finished run's line laid in the columns without a status made;
    a run written to since is left to be read, and is read right."""
    monkeypatch.setattr(status_index, "SPOT_SHARE", 0.0)  # what is summed up below is the look's own
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as writer:
        await write_corpus(writer)
        await writer.acquire_lease(gocorpus.CASES[0].run_id, "worker-1#1", ttl=600)
    async with await SQLiteStore.open(path, read_only=True) as store:
        await indexed(store)  # the first look keeps every status
    async with await SQLiteStore.open(path) as writer:
        changed = gocorpus.CASES[1].run_id
        await Journal(writer).append(changed, Record(keys.RUN_CANCELLED, StepKind.VALUE, result=b'{"reason":"x"}'))
    async with await CountingSQLiteStore.open(path, read_only=True) as store:
        run_ids, columns, _ = await kept_statuses(store, lambda: _listed(store))
        pending = [run_ids[at] for at in columns.places([None])]
        assert pending == [changed]
        # Made whole only where a status says more than its line: most runs are three numbers
        # and two strings.
        statuses = {run_id: await run_status(store, run_id) for run_id in run_ids}
        fuller = {at for at, run_id in enumerate(run_ids) if says_more_than_its_line(statuses[run_id])}
        assert columns.whole.keys() == fuller - {run_ids.index(changed)} and len(fuller) < len(run_ids) / 2
        assert store.__dict__.get("summed", []) == []  # nothing summed up again
        assert await kept(store) == await exact(store)


async def test_a_reopen_lists_the_runs_from_the_validators_where_it_reads_every_runs(
    make_store: StoreFactory,
) -> None:
    """Where the store keeps no seq across runs (PostgreSQL), checking the index reads every
    run's validator in one pass: those runs are the reopen's listing, the pages are not
    read, and a run written since the last look is listed and left to be read."""
    store = await make_store()
    if store.index_identity() is None or store.INDEX_GLOBAL_SEQ:
        return  # a store that keeps no index, or whose reopen checks only the runs written since
    await write_corpus(store)
    await indexed(await make_store(read_only=True))  # the first look keeps every status
    await Journal(store).append("zz-new-run", Record(keys.RUN_START, StepKind.VALUE, result=b"{}"))
    every_run = [run_id async for run_id in store.runs()]
    reader = await make_store(read_only=True)
    listed = []

    async def never_done() -> list[str]:  # pages that would never end
        listed.append(True)
        never: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        return await never

    run_ids, columns, earlier = await kept_statuses(reader, never_done, after=every_run[0])
    assert run_ids == every_run[1:] and not listed
    # The run listed before (the runs list's first page) comes from the index too.
    assert [comparable(status) for status in earlier] == [comparable(await run_status(reader, every_run[0]))]
    assert [run_ids[at] for at in columns.places([None])] == ["zz-new-run"]
    await status_index.spot_checks_done(reader)


async def _listed(store: Store) -> list[str]:
    return [run_id async for run_id in store.runs()]


async def test_a_second_look_sums_up_only_the_runs_that_changed(tmp_path: Path, private_cache: Path) -> None:
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as writer:
        await write_corpus(writer)
        everything = [run_id async for run_id in writer.runs()]
    first = await CountingSQLiteStore.open(path, read_only=True)
    assert isinstance(first, CountingSQLiteStore)
    await indexed(first)
    await first.close()
    # The first look sums every run up in one pass over the journal, none by pages.
    assert first.__dict__["passes"] == [len(everything)] and first.__dict__.get("summed", []) == []
    assert len(index_files(private_cache)) == 1

    async with await SQLiteStore.open(path) as writer:
        await writer.insert("go-awaiting-approval", "signal:late", b'{"name":"signal:late","kind":"value"}')
    second = await CountingSQLiteStore.open(path, read_only=True)
    assert isinstance(second, CountingSQLiteStore)
    assert await indexed(second) == await exact(second)
    await second.close()
    # The run that changed, and the spot check's few; of the unfinished runs, only the one that
    # changed is read whole again. No run's validators are read: a summary carries its own, and
    # the run written to left the index when it was settled.
    assert first.__dict__.get("marked", []) == second.__dict__.get("marked", []) == []
    assert "go-awaiting-approval" in second.summed
    assert len(set(second.summed)) <= 1 + 2 * math.ceil(len(everything) * status_index.SPOT_SHARE)
    assert "go-awaiting-approval" in second.loaded
    assert len(first.loaded) > 0 and second.loaded == ["go-awaiting-approval"]


async def test_a_viewers_second_look_reads_no_unchanged_run_whole(tmp_path: Path, private_cache: Path) -> None:
    """The runs screen's first look at many runs (``StatusTracker.statuses``) keeps what it made
    of them, and a viewer opened again takes the unchanged ones from the index, sleeping runs
    too (decided by the clock as they are read): none is read whole again."""
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as writer:
        await write_corpus(writer)
        everything = [run_id async for run_id in writer.runs()]
        want = await exact(writer)
    loaded: list[set[str]] = []
    for _ in range(2):
        store = await CountingSQLiteStore.open(path, read_only=True)
        assert isinstance(store, CountingSQLiteStore)
        seen = await StatusTracker(store).statuses(everything)
        await store.close()
        assert [comparable(status) for status in seen] == want
        loaded.append(set(store.__dict__.get("loaded", [])))
    assert loaded[0] and not loaded[1]


@pytest.mark.parametrize("look", ["viewer", "command"])
async def test_a_long_run_read_alone_is_kept_too(
    tmp_path: Path, private_cache: Path, monkeypatch: pytest.MonkeyPatch, look: str
) -> None:
    """A run too long to be read with its page is read alone, whole, by a first look (a
    viewer's, or a command's: ``runs``); what it made of the run is kept as well, so the second
    look reads it from the index."""
    monkeypatch.setattr(status_module, "BATCH_STEPS", 4)  # the corpus's longer runs stand for long ones
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as writer:
        await write_corpus(writer)
        everything = [run_id async for run_id in writer.runs()]
        want = await exact(writer)
    read_alone: list[set[str]] = []
    for _ in range(2):
        store = await CountingSQLiteStore.open(path, read_only=True)
        assert isinstance(store, CountingSQLiteStore)
        assert await status_module.statuses_kept(store) == bool(read_alone)
        if look == "viewer":
            seen = await StatusTracker(store).statuses(everything)
        else:
            seen = [status async for status in list_statuses(store)]
        await store.close()
        assert [comparable(status) for status in seen] == want
        read_alone.append(set(store.__dict__.get("loaded_alone", [])))
    assert read_alone[0] and not read_alone[1]


async def test_unfinished_runs_kept_read_their_lease_and_clock_now(make_store: StoreFactory) -> None:
    """What the index keeps of an unfinished run holds no lease and no wake time: a lease taken
    after it was kept makes the run in flight, and a sleeping run is read again each time."""
    store = await make_store()
    await write_corpus(store)
    await indexed(store)  # kept
    assert await indexed(store) == await exact(store)  # read from what was kept
    async for run_id in store.runs():
        await store.acquire_lease(run_id, "worker-1#1", ttl=600)
    assert await indexed(await make_store(read_only=True)) == await exact(store)


async def test_a_sleeping_run_kept_wakes_by_the_clock_now(
    tmp_path: Path, private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the index keeps of a run sleeping on a timer is its wake time: read after it (the
    clock moved past 2099), the run is ready, as the exact rules read it then; not read whole."""
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as writer:
        await write_corpus(writer)
    async with await SQLiteStore.open(path, read_only=True) as store:
        assert {s.run_id: s.state for s in await indexed(store)}["go-sleeping"] == RunState.SLEEPING

    class Later(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> Later:
            return cls(2100, 1, 1, tzinfo=tz)

    monkeypatch.setattr(status_module, "datetime", Later)
    store = await CountingSQLiteStore.open(path, read_only=True)
    assert isinstance(store, CountingSQLiteStore)
    woken = {s.run_id: s for s in await indexed(store)}["go-sleeping"]
    assert "go-sleeping" not in store.__dict__.get("loaded", [])
    assert comparable(woken) == comparable(await run_status(store, "go-sleeping"))
    assert woken.state == RunState.READY
    await store.close()


async def test_the_index_file_is_private(tmp_path: Path, private_cache: Path) -> None:
    async with await SQLiteStore.open(tmp_path / "journal.db") as store:
        await write_corpus(store)
        await indexed(store)
        (index,) = index_files(private_cache)
        assert stat.S_IMODE(index.parent.stat().st_mode) == 0o700
        for written in index.parent.iterdir():  # its -wal and -shm files too
            assert stat.S_IMODE(written.stat().st_mode) == 0o600, written.name


async def test_a_cache_that_cannot_be_written_means_no_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o500)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    async with await SQLiteStore.open(tmp_path / "journal.db") as store:
        await write_corpus(store)
        assert await indexed(store) == await exact(store)
    if os.geteuid() != 0:  # root writes anywhere
        assert not (cache / "agenttui").exists()


async def test_a_damaged_index_is_made_again(tmp_path: Path, private_cache: Path) -> None:
    path, want, index = await an_indexed_store(tmp_path, private_cache)
    index.write_bytes(b"not a database at all" * 100)
    async with await SQLiteStore.open(path, read_only=True) as store:
        assert await indexed(store) == want
    with sqlite3.connect(index) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] > 0


async def test_a_file_that_is_no_database_is_made_again(tmp_path: Path, private_cache: Path) -> None:
    """Found where the index belongs by a process that never had it open (no WAL beside it)."""
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as store:
        await write_corpus(store)
        want = await exact(store)
        identity = store.index_identity()
    assert identity is not None
    index = status_index.index_path(identity)
    index.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    index.write_bytes(b"junk" * 100)
    async with await SQLiteStore.open(path, read_only=True) as store:
        assert await indexed(store) == want
    with sqlite3.connect(index) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] > 0


async def test_an_index_that_lies_is_caught_by_its_spot_check(
    tmp_path: Path, private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change no validator sees (here every row falsified in the file) empties the index: the
    look whose spot check finds it out is served from the index (the checks run beside it), and
    the next look is the store's."""
    path, want, index = await an_indexed_store(tmp_path, private_cache)
    with sqlite3.connect(index) as conn:
        conn.execute("UPDATE runs SET tokens = tokens + 1, verdict_tokens = verdict_tokens + 1")
    monkeypatch.setattr(status_index, "SPOT_SHARE", 1.0)
    async with await SQLiteStore.open(path, read_only=True) as store:
        assert await indexed(store) != want  # found out as it goes
        assert await indexed(store) == want
    async with await SQLiteStore.open(path, read_only=True) as store:
        ids = [run_id async for run_id in store.runs()]
        fresh = {summary.run_id: summary for summary in await store.summaries(ids, keys.END_MARKERS)}
    meta = status_index._meta(sqlite3.connect(index))
    meta.pop("made_at")
    kept = status_index.StatusIndex.open(index, meta)
    assert kept is not None
    assert kept.summaries(ids) == fresh
    kept.close()


@pytest.mark.parametrize("off", ["env", "flag"])
def test_turned_off_no_index_is_written(
    tmp_path: Path, private_cache: Path, monkeypatch: pytest.MonkeyPatch, off: str
) -> None:
    path = tmp_path / "journal.db"

    async def build() -> None:
        async with await SQLiteStore.open(path) as store:
            await write_corpus(store)

    asyncio.run(build())
    if off == "env":
        monkeypatch.setenv(status_index.CACHE_ENV, "off")
    args = ["--no-cache"] if off == "flag" else []
    result = CliRunner().invoke(main, [*args, "runs", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert index_files(private_cache) == []
    monkeypatch.delenv(status_index.CACHE_ENV, raising=False)
    status_index.disable(False)
    result = CliRunner().invoke(main, ["runs", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert len(index_files(private_cache)) == 1


async def test_a_memory_store_keeps_no_index(private_cache: Path) -> None:
    store = MemStore()
    await write_corpus(store)
    assert await indexed(store) == await exact(store)
    assert index_files(private_cache) == []


# -- the property: after every change a store can see, the index says what the exact rules say --

OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("new"), st.integers(0, 0)),
        st.tuples(st.sampled_from(["turn", "result", "finish", "cancel", "lease", "release"]), st.integers(0, 5)),
        st.tuples(st.sampled_from(["truncate", "replace", "concurrent"]), st.integers(0, 0)),
    ),
    min_size=3,
    max_size=10,
)


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(operations=OPERATIONS)
def test_statuses_stay_exact_whatever_the_store_goes_through(
    tmp_path_factory: pytest.TempPathFactory, operations: list[tuple[str, int]]
) -> None:
    """Appends, new runs, runs finishing, leases taken and let go, the file truncated to an
    earlier copy or replaced by another store, a writer appending while statuses are read: after
    each step, every status read through the index (by a new handle, as a new look is) equals
    the exact rules' reading."""
    root = tmp_path_factory.mktemp("property")
    # No spot check: the validators alone must hold (one would find and mend what they miss).
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(status_index, "SPOT_SHARE", 0.0)
        asyncio.run(_go_through(root, operations))


async def _go_through(root: Path, operations: list[tuple[str, int]]) -> None:
    path = root / "journal.db"
    snapshot = root / "snapshot.db"
    runs: list[str] = []
    turns: dict[str, int] = {}

    async def new_run(store: Store) -> None:
        run_id = f"run-{len(runs):03d}"
        runs.append(run_id)
        turns[run_id] = 0
        await Journal(store).append(run_id, Record(keys.RUN_START, StepKind.VALUE, result=b'{"input":"x"}'))

    async def step(store: Store, what: str, which: int) -> None:
        run_id = runs[which % len(runs)]
        journal = Journal(store)
        if what == "turn":
            await journal.append(run_id, model_turn(turns[run_id], f"c{turns[run_id]}", Usage(input_tokens=3 + which)))
            turns[run_id] += 1
        elif what == "result":
            call = f"c{max(turns[run_id] - 1, 0)}"
            await journal.append(
                run_id, Record(keys.tool_key(call), StepKind.TOOL_RESULT, tool_use_id=call, result=b'"ok"')
            )
        elif what == "lease":  # a status kept without its lease must take the lease read now
            await store.acquire_lease(run_id, "worker-1#1", ttl=600)
        elif what == "release":
            await store.release_lease(run_id, "worker-1#1")
        elif what in ("finish", "cancel"):
            name = keys.RUN_COMPLETE if what == "finish" else keys.RUN_CANCELLED
            await journal.append(run_id, Record(name, StepKind.VALUE, result=b'{"reason":"step %d"}' % len(runs)))

    async with await SQLiteStore.open(path) as writer:
        await new_run(writer)
        await new_run(writer)
        await step(writer, "turn", 0)
    _copy_store(path, snapshot)
    for what, which in operations:
        if what == "truncate":  # the file overwritten in place by an earlier copy of itself
            _copy_store(snapshot, path)
            async with await SQLiteStore.open(path, read_only=True) as store:
                runs[:] = [run_id async for run_id in store.runs()]
                # Runs appended to again after the truncation, to the lengths they had.
            async with await SQLiteStore.open(path) as writer:
                for run_id in runs:
                    await step(writer, "result", runs.index(run_id))
        elif what == "replace":  # another store renamed over this one
            other = root / "other.db"
            other.unlink(missing_ok=True)
            async with await SQLiteStore.open(other) as writer:
                await Journal(writer).append(runs[0], Record(keys.RUN_COMPLETE, StepKind.VALUE, result=b'"other"'))
            os.replace(other, path)
            runs[:] = [runs[0]]
        else:
            async with await SQLiteStore.open(path) as writer:
                if what == "new":
                    await new_run(writer)
                    _copy_store(path, snapshot)
                elif what == "concurrent":
                    async with await SQLiteStore.open(path, read_only=True) as reader:

                        async def appending() -> None:
                            for index in range(len(runs) * 2):
                                await step(writer, "turn", index)
                                await asyncio.sleep(0)

                        await asyncio.gather(appending(), indexed(reader))
                else:
                    await step(writer, what, which)
        async with await SQLiteStore.open(path, read_only=True) as store:
            assert await indexed(store) == await exact(store), (what, which)
        async with await SQLiteStore.open(path, read_only=True) as store:
            assert await kept(store) == await exact(store), (what, which, "reopen")


def _copy_store(source: Path, target: Path) -> None:
    """``source``'s journal copied into ``target``'s file in place (same inode), as a restore does."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    src.close()
    dst.close()


async def test_a_redaction_is_seen_by_the_spot_check(
    tmp_path: Path, private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A redaction keeps the entry's seq: no validator sees it. The spot check does, when it
    picks the run (here it picks every run); the index is then emptied, and the next look sums
    every run up again."""
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as store:
        await write_corpus(store)
        before = {status.run_id: status for status in await indexed(store)}["go-charge"]
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT seq, run_id, data FROM bide_steps WHERE run_id = 'go-charge' AND name LIKE '@llm/%'"
        ).fetchall()
        assert rows
        for seq, run_id, data in rows:
            body = bytes(data)[: bytes(data).rindex(b',"salt":')] + b"}"
            conn.execute(
                "UPDATE bide_steps SET data = ? WHERE seq = ?",
                (gocorpus.tombstone(run_id, body.decode()).encode(), seq),
            )
    conn.close()
    async with await SQLiteStore.open(path, read_only=True) as store:
        want = await exact(store)
    assert {status.run_id: status for status in want}["go-charge"].tokens != before.tokens
    with monkeypatch.context() as patch:
        patch.setattr(status_index, "SPOT_SHARE", 1.0)
        async with await SQLiteStore.open(path, read_only=True) as store:
            await indexed(store)  # the look that finds it out
            assert await indexed(store) == want


async def test_an_index_older_than_its_age_is_made_again(
    tmp_path: Path, private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bound on what no validator sees: past ``MAX_AGE_SECONDS`` the index is summed again."""
    monkeypatch.setattr(status_index, "SPOT_SHARE", 1.0)
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as store:
        await write_corpus(store)
        await indexed(store)
    (index,) = index_files(private_cache)
    with sqlite3.connect(index) as conn:
        conn.execute("UPDATE runs SET tokens = tokens + 1")
    conn.close()
    monkeypatch.setattr(status_index, "MAX_AGE_SECONDS", 0)
    async with await SQLiteStore.open(path, read_only=True) as store:
        assert await indexed(store) == await exact(store)


async def test_a_truncated_store_written_again_to_the_same_lengths_is_not_mistaken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite hands a deleted top rowid out again: a store cut back to an earlier copy and written
    to again can give a run its old count and highest seq over other bytes. The entry at the
    index's high-water mark is no longer the one it summed, so the index is not trusted."""
    monkeypatch.setattr(status_index, "SPOT_SHARE", 0.0)
    path, snapshot = tmp_path / "journal.db", tmp_path / "snapshot.db"
    async with await SQLiteStore.open(path) as writer:
        await write_corpus(writer)  # the first entries, which the fingerprint holds, stay as they are
        await Journal(writer).append("a", Record(keys.RUN_START, StepKind.VALUE, result=b'{"input":"x"}'))
    _copy_store(path, snapshot)
    async with await SQLiteStore.open(path) as writer:
        await Journal(writer).append("a", Record(keys.RUN_COMPLETE, StepKind.VALUE, result=b'"first"'))
        assert [s.detail for s in await indexed(writer) if s.run_id == "a"] == ["first"]
    _copy_store(snapshot, path)
    async with await SQLiteStore.open(path) as writer:
        await Journal(writer).append("a", Record(keys.RUN_CANCELLED, StepKind.VALUE, result=b'"second"'))
    async with await SQLiteStore.open(path, read_only=True) as store:
        assert await indexed(store) == await exact(store)


async def test_a_summary_taken_before_another_look_settled_the_index_is_not_kept(
    tmp_path: Path, private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two looks at one store share its index file. One reads a run's validators; a writer then
    appends to the run, and a second look settles the index past the new entry; the first look's
    summary of the run, which misses that entry, must not land in the index: the next look would
    take it for the run as it is (no entry past the settled seq)."""
    monkeypatch.setattr(status_index, "SPOT_SHARE", 0.0)
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as writer:
        await write_corpus(writer)  # the first entries, which the fingerprint holds, stay as they are
        await Journal(writer).append("a", Record(keys.RUN_START, StepKind.VALUE, result=b'{"input":"x"}'))
        await Journal(writer).append("a", Record(keys.RUN_COMPLETE, StepKind.VALUE, result=b'"done"'))

    class Interleaved(SQLiteStore):
        async def summaries(self, run_ids: Sequence[str], end_markers: Collection[str]) -> list[RunSummary]:
            summed = await super().summaries(run_ids, end_markers)
            async with await SQLiteStore.open(path) as writer:  # after this look read its validators
                # A turn after the end marker: the status is the same, its counts are not.
                await Journal(writer).append("a", model_turn(0, "c0", Usage(input_tokens=3)))
            async with await SQLiteStore.open(path, read_only=True) as other:
                await indexed(other)  # settles the index past the new turn
            return summed

    slow = await Interleaved.open(path, read_only=True)
    await indexed(slow)
    await slow.close()
    async with await SQLiteStore.open(path, read_only=True) as store:
        assert await indexed(store) == await exact(store)


async def test_a_pass_that_ended_before_the_index_settled_keeps_nothing(
    tmp_path: Path, private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first look sums every run up in one pass over the journal (``sum_up_journal``); a row
    the index keeps must sum every entry of its run up to the seq the index settled at. Here the
    pass ends, a run gains an entry, and only then is the index opened (settled past that entry):
    what the pass said of the run must not be kept, or the next look would take it as it is."""
    monkeypatch.setattr(status_index, "SPOT_SHARE", 0.0)
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as writer:
        await write_corpus(writer)
        await Journal(writer).append("a", Record(keys.RUN_START, StepKind.VALUE, result=b'{"input":"x"}'))
        await Journal(writer).append("a", Record(keys.RUN_COMPLETE, StepKind.VALUE, result=b'"done"'))
        run_ids = [run_id async for run_id in writer.runs()]
        summed = await writer.sum_up_journal(keys.END_MARKERS)
        await Journal(writer).append("a", model_turn(0, "c0", Usage(input_tokens=3)))  # counts change, not the status
        page = await status_index.indexed_page(writer, run_ids, keys.END_MARKERS, summed)
        assert {s.run_id: s.tokens for s in page.summaries}["a"] == 0  # as of the pass
        assert page.to_keep is None
        await status_index.keep_page(writer, page, [])
    async with await SQLiteStore.open(path, read_only=True) as store:
        assert await indexed(store) == await exact(store)


def test_no_cache_may_stand_before_a_store_given_without_a_command(tmp_path: Path) -> None:
    """``agenttui --no-cache STORE`` opens the store as ``agenttui STORE`` does (here: says it is missing)."""
    missing = str(tmp_path / "missing.db")
    plain = CliRunner().invoke(main, [missing])
    flagged = CliRunner().invoke(main, ["--no-cache", missing])
    assert "no such command" not in flagged.output
    assert (flagged.exit_code, flagged.output) == (plain.exit_code, plain.output)


@pytest.mark.parametrize("shared", ["others-write", "symlinked", "another-owner"])
async def test_an_index_in_a_folder_not_the_users_alone_is_never_read(
    tmp_path: Path, private_cache: Path, shared: str
) -> None:
    """A verdict read from a file someone else can write is theirs: with the cache folder writable
    by others, a symbolic link, or another user's, every status is read from the store, and the
    user is told why once."""
    path, want, index = await an_indexed_store(tmp_path, private_cache)
    with sqlite3.connect(index) as conn:  # forged, as by another user: every verdict's tokens
        conn.execute("UPDATE runs SET tokens = tokens + 1, verdict_tokens = verdict_tokens + 1")
    folder = index.parent
    if shared == "others-write":
        folder.chmod(0o777)
    elif shared == "symlinked":
        folder.rename(private_cache / "elsewhere")
        folder.symlink_to(private_cache / "elsewhere")
    elif os.geteuid() == 0:  # CI runs as root, where chown works
        os.chown(folder, 65534, -1)
    else:
        pytest.skip("giving a folder to another user needs root")
    with pytest.warns(AgentTuiWarning, match="the status index is not used"):
        async with await SQLiteStore.open(path, read_only=True) as store:
            assert await indexed(store) == want


# -- runs --json on a reopen: lines written from the columns, the very bytes of every other look --


async def _every_state(path: Path) -> None:
    """A SQLite store with a run in every state (the demo's, the Go corpus's aborted saga, a fork,
    an unreadable run, a legacy journal, live and lapsed leases), hostile ids and details."""
    from agenttui.demo.build import CrashingModel, SimulatedCrash, build_demo
    from agenttui.demo.desk import demo_model, desk_agent, refund_story
    from agenttui.replay.fork import fork_run
    from agenttui.replay.save import plan_save
    from tests.agent.test_status import SAME_LOOKUP
    from tests.hardening.hostile_corpus import _write_codec_runs

    async with await SQLiteStore.open(path) as store:
        await write_corpus(store)
        await build_demo(store, bulk_turns=3)
        await _write_codec_runs(store)
        with pytest.raises(SimulatedCrash):
            await desk_agent(CrashingModel(demo_model(refund_story("A-1001", 42.5)), 1), store).run("in-flight", "x")
        await store.acquire_lease("in-flight", "worker-7#1", ttl=600)
        await store.acquire_lease("refund-a1001-stalled", "gone\x1b[2J#1", ttl=-60)
        await Journal(store).append("broken\u202e", Record("run:start", StepKind.VALUE, result=b'{"input":"x"}'))
        await store.insert("broken\u202e", "@llm/0", b"\x00garbage")
        await store.insert("legacy", "run:start", b'{"name":"run:start","kind":"value","result":{"input":"x"}}')
        fork = await fork_run(store, "refund-a1004-halted", "@llm/0", SAME_LOOKUP)
        await (await plan_save(fork, store, where="the store")).apply(store)


def test_runs_json_on_a_reopen_writes_the_bytes_of_a_look_with_the_cache_off(
    tmp_path: Path, private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reopen writes most lines straight from the index's columns (``list_status_json``); its
    output is byte for byte what the cache off writes, and what a status made a run writes (a
    ``--status`` filter naming every state), nothing changed and after a change."""
    path = tmp_path / "every-state.db"
    asyncio.run(_every_state(path))
    runner = CliRunner()

    def runs(*options: str, cache: bool = True) -> bytes:
        result = runner.invoke(main, [*([] if cache else ["--no-cache"]), "runs", str(path), "--json", *options])
        status_index.disable(False)  # --no-cache turns it off for the process
        assert result.exit_code == 0, result.output
        return result.stdout_bytes

    every_state = [word for state in RunState for word in ("--status", state.value)]
    cache_off = runs(cache=False)
    listed = json.loads(cache_off)
    assert {line["status"] for line in listed} == {state.value for state in RunState}
    assert any(line["lease_lapsed"] for line in listed) and any(line["legacy"] for line in listed)
    assert "\x1b" not in cache_off.decode() and "\\u001b" in cache_off.decode()
    assert runs() == cache_off  # the first look, which writes the index
    assert index_files(private_cache)
    made: list[int] = []

    def line_formats() -> tuple[str, ...]:
        made.append(1)
        return _line_formats()

    monkeypatch.setattr(status_module, "_line_formats", line_formats)
    assert runs() == cache_off  # a reopen, nothing changed
    assert made, "the reopen did not write from the index's columns"
    assert runs(*every_state) == cache_off  # a status made a run

    async def change() -> None:
        async with await SQLiteStore.open(path) as store:
            await Journal(store).append(gocorpus.CASES[1].run_id, Record("note", StepKind.VALUE, result=b'"x"'))
            await store.insert("new-run", "run:start", b'{"name":"run:start","kind":"value","result":{"input":"x"}}')

    asyncio.run(change())
    cache_off = runs(cache=False)
    assert runs() == cache_off == runs(*every_state)

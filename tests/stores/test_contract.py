"""The store contract (A1-A8, Lister, Leaser, read-only), one body for memory, SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator

import pytest

from agenttui.errors import ConfigError, ReadOnlyStoreError, StoreError
from agenttui.stores.base import StepTakenError, Store
from tests.conftest import StoreFactory


async def entries(store: Store, run_id: str, after: int = -1) -> list[tuple[str, bytes]]:
    return [(e.name, e.data) async for e in store.load(run_id, after)]


# -- A1: one winner per name -------------------------------------------------------------------


async def test_insert_then_get_returns_the_bytes(store: Store) -> None:
    result = await store.insert("run-1", "a", b'{"x":1}')
    assert result.won
    assert result.entry.name == "a" and result.entry.data == b'{"x":1}'
    got = await store.get("run-1", "a")
    assert got == result.entry


async def test_second_insert_of_a_name_loses_and_sees_the_winner(store: Store) -> None:
    await store.insert("run-1", "a", b"first")
    result = await store.insert("run-1", "a", b"second")
    assert not result.won
    assert result.entry.data == b"first"
    assert await entries(store, "run-1") == [("a", b"first")]


async def test_names_are_per_run(store: Store) -> None:
    await store.insert("run-1", "a", b"1")
    assert (await store.insert("run-2", "a", b"2")).won
    got = await store.get("run-2", "a")
    assert got is not None and got.data == b"2"


async def test_insert_many_keeps_each_inserts_promises_in_order(store: Store) -> None:
    await store.insert("run-1", "b", b"taken")
    items = [(f"s{n:04d}", f"{n}".encode()) for n in range(700)]  # more than one statement's worth
    items[3:3] = [("b", b"late"), ("s0001", b"again")]
    outcomes = await store.insert_many("run-1", items)
    assert [(o.entry.name, o.won) for o in outcomes][:6] == [
        ("s0000", True), ("s0001", True), ("s0002", True), ("b", False), ("s0001", False), ("s0003", True),
    ]  # fmt: skip
    assert outcomes[3].entry.data == b"taken" and outcomes[4].entry.data == b"1"
    stored = [(e.name, e.data, e.seq) async for e in store.load("run-1")]
    assert [(name, data) for name, data, _ in stored] == [("b", b"taken")] + [
        (f"s{n:04d}", f"{n}".encode()) for n in range(700)
    ]
    assert [o.entry.seq for o in outcomes if o.won] == [seq for *_, seq in stored[1:]]
    assert await store.insert_many("run-1", []) == []


async def test_insert_many_writes_all_of_its_items_or_none(make_store: StoreFactory) -> None:
    store = await make_store()
    assert store.IMPLEMENTS_ATOMIC_INSERT_MANY
    await store.insert("run-1", "held", b"first")
    items = [(f"s{n:04d}", b"x") for n in range(700)]  # past a statement's worth (SQLite) and a batch's (PG)
    # A store error midway: a name no store can hold (a lone surrogate is not Unicode).
    broken = [*items[:650], ("bad\ud800", b"x"), *items[650:]]
    if make_store.kind != "memory":  # a dict holds any str
        with pytest.raises(StoreError):
            await store.insert_many("run-1", broken)
        assert await entries(await make_store(), "run-1") == [("held", b"first")]
    # A name held with other bytes, or repeated with other bytes, refuses the whole call if asked.
    for refused in ([*items[:650], ("held", b"other")], [*items[:650], ("s0003", b"other"), *items[650:]]):
        with pytest.raises(StepTakenError) as taken:
            await store.insert_many("run-1", refused, refuse_conflicts=True)
        assert taken.value.name in {"held", "s0003"} and taken.value.run_id == "run-1"
        assert await entries(await make_store(), "run-1") == [("held", b"first")]
    # The same bytes are no conflict: the name loses, as at-most-once says.
    outcomes = await store.insert_many("run-1", [("held", b"first"), *items, ("s0001", b"x")], refuse_conflicts=True)
    assert [o.won for o in outcomes] == [False] + [True] * 700 + [False]
    assert await entries(await make_store(), "run-1") == [("held", b"first"), *items]


async def test_insert_many_cancelled_midway_leaves_none_or_all(make_store: StoreFactory) -> None:
    store = await make_store()
    await store.insert("other", "x", b"1")
    items = [(f"s{n:05d}", b"%d" % n) for n in range(20_000)]
    writing = asyncio.ensure_future(store.insert_many("run-1", items))
    # Well into it: SQLite writes the items in under a second, PostgreSQL in seconds (a round
    # trip each). A memory store writes them all before it looks up.
    await asyncio.sleep(0.3 if make_store.kind == "postgres" else 0.02)
    # A call of the same handle meanwhile is no part of the transaction: committed whatever
    # becomes of it (it waits while the transaction holds the write lock, on SQLite).
    inserting = asyncio.ensure_future(store.insert("other", "y", b"2"))
    await asyncio.sleep(0.01)
    writing.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await writing
    assert (await inserting).won
    reader = await make_store()
    assert len(await entries(reader, "run-1")) in (0, len(items))
    assert await entries(reader, "other") == [("x", b"1"), ("y", b"2")]
    # ...and the store writes on: the transaction left nothing held.
    assert [o.won for o in await store.insert_many("run-2", items[:10])] == [True] * 10


async def test_insert_many_is_refused_on_a_read_only_store(make_store: StoreFactory) -> None:
    await make_store()
    reader = await make_store(read_only=True)
    with pytest.raises(ReadOnlyStoreError):
        await reader.insert_many("run-1", [("a", b"1")])


async def test_concurrent_inserts_of_one_name_have_one_winner(make_store: StoreFactory) -> None:
    handles = [await make_store() for _ in range(4)]
    results = await asyncio.gather(
        *(handles[i % 4].insert("run-1", f"step-{n}", f"{i}".encode()) for n in range(20) for i in range(8))
    )
    for n in range(20):
        mine = [r for r in results if r.entry.name == f"step-{n}"]
        assert sum(r.won for r in mine) == 1
        assert len({r.entry.data for r in mine}) == 1
    assert len(await entries(handles[0], "run-1")) == 20


# -- A2, A4: commit-ordered, prefix-closed, monotone ----------------------------------------------


async def test_load_returns_commit_order_with_increasing_seq(store: Store) -> None:
    names = [f"s{n}" for n in range(600)]  # more than two pages
    for name in names:
        await store.insert("run-1", name, name.encode())
    await store.insert("run-2", "other", b"x")
    loaded = [e async for e in store.load("run-1")]
    assert [e.name for e in loaded] == names
    seqs = [e.seq for e in loaded]
    assert seqs == sorted(set(seqs))


async def test_load_after_returns_the_suffix(store: Store) -> None:
    for n in range(5):
        await store.insert("run-1", f"s{n}", b"x")
    loaded = [e async for e in store.load("run-1")]
    rest = [e async for e in store.load("run-1", after=loaded[1].seq)]
    assert rest == loaded[2:]
    assert [e async for e in store.load("run-1", after=loaded[-1].seq)] == []


async def test_unknown_run_loads_nothing(store: Store) -> None:
    assert await entries(store, "nope") == []
    assert await store.get("nope", "a") is None


async def test_a_second_handle_reads_what_the_first_wrote(make_store: StoreFactory) -> None:
    writer, reader = await make_store(), await make_store()
    await writer.insert("run-1", "a", b"1")
    assert await entries(reader, "run-1") == [("a", b"1")]
    await writer.insert("run-1", "b", b"2")
    assert await entries(reader, "run-1") == [("a", b"1"), ("b", b"2")]


# -- A5: byte fidelity -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00\x01\xff\xfe",
        "\u2028 ✓ \U0001f600".encode(),
        b'{"n":[1e20,-0.0,9007199254740993]}',
        bytes(range(256)) * 64,
    ],
    ids=["empty", "binary", "unicode", "numbers", "16KiB"],
)
async def test_bytes_come_back_exactly(store: Store, data: bytes) -> None:
    await store.insert("run-1", "a", data)
    got = await store.get("run-1", "a")
    assert got is not None and got.data == data
    assert await entries(store, "run-1") == [("a", data)]


async def test_names_and_run_ids_keep_every_character(store: Store) -> None:
    run_id, name = "root>call%2F1 ✓", "tool:toolu_01/é"
    await store.insert(run_id, name, b"x")
    got = await store.get(run_id, name)
    assert got is not None and got.name == name


# -- A8: iterator hygiene ----------------------------------------------------------------------


async def test_insert_while_iterating_load(store: Store) -> None:
    for n in range(300):
        await store.insert("run-1", f"s{n:03}", b"x")
    seen = []
    async for entry in store.load("run-1"):
        seen.append(entry.name)
        if len(seen) == 1:
            await store.insert("run-1", "late", b"y")
    assert seen[:300] == [f"s{n:03}" for n in range(300)]


async def test_leaving_load_early_releases_it(store: Store) -> None:
    for n in range(300):
        await store.insert("run-1", f"s{n:03}", b"x")
    for _ in range(20):
        iterator = store.load("run-1")
        async for _entry in iterator:
            break
        assert isinstance(iterator, AsyncGenerator)  # each store's load is one, so it can be closed early
        await iterator.aclose()
    assert len(await entries(store, "run-1")) == 300


# -- Lister ------------------------------------------------------------------------------------


async def test_runs_lists_in_byte_order(store: Store) -> None:
    assert store.IMPLEMENTS_LISTING
    ids = ["b", "a", "a>c1", "B", "é", "a/x", "ab"]
    for run_id in ids:
        await store.insert(run_id, "x", b"1")
    assert [r async for r in store.runs()] == sorted(ids, key=lambda s: s.encode())


async def test_runs_after_and_prefix(store: Store) -> None:
    for run_id in ["order-1", "order-2", "order-10", "other", "ord"]:
        await store.insert(run_id, "x", b"1")
    assert [r async for r in store.runs(prefix="order-")] == ["order-1", "order-10", "order-2"]
    assert [r async for r in store.runs(after="order-10")] == ["order-2", "other"]
    assert [r async for r in store.runs(prefix="order-", after="order-1")] == ["order-10", "order-2"]


async def test_runs_pages_past_one_page(store: Store) -> None:
    ids = [f"run-{n:04}" for n in range(1100)]
    for run_id in ids:
        await store.insert(run_id, "x", b"1")
    assert [r async for r in store.runs()] == ids
    pages = [page async for page in store.run_pages()]
    assert all(pages) and [r for page in pages for r in page] == ids  # the same runs, a page at a time
    assert [r for page in [p async for p in store.run_pages(after="run-0999")] for r in page] == ids[1000:]


async def test_runs_exclude_holding(store: Store) -> None:
    await store.insert("done", "run:complete", b"1")
    await store.insert("open", "run:start", b"1")
    await store.insert("gone", "run:cancelled", b"1")
    listed = [r async for r in store.runs(exclude_holding=["run:complete", "run:cancelled"])]
    assert listed == ["open"]


async def test_runs_lease_lapsed(store: Store) -> None:
    for run_id in ["a", "b", "c"]:
        await store.insert(run_id, "x", b"1")
    await store.acquire_lease("a", "h1", ttl=0.05)
    await store.acquire_lease("b", "h1", ttl=60)
    await asyncio.sleep(0.1)  # the lapse is on the store's clock; nothing else to wait on
    assert [r async for r in store.runs(lease_lapsed=True)] == ["a"]


# -- Leaser ------------------------------------------------------------------------------------


async def test_lease_granted_refused_renewed_released(make_store: StoreFactory) -> None:
    one, two = await make_store(), await make_store()
    assert one.IMPLEMENTS_LEASES
    assert await one.acquire_lease("run-1", "h1", ttl=30)
    assert not await two.acquire_lease("run-1", "h2", ttl=30)
    assert await one.acquire_lease("run-1", "h1", ttl=30)  # re-entrant for its holder
    assert await one.renew_lease("run-1", "h1", ttl=30)
    assert not await two.renew_lease("run-1", "h2", ttl=30)
    lease = await two.get_lease("run-1")
    assert lease is not None and lease.holder == "h1" and lease.live and 25 < lease.expires_in <= 30
    await two.release_lease("run-1", "h2")  # not the holder: nothing happens
    assert (await one.get_lease("run-1")) is not None
    await one.release_lease("run-1", "h1")
    assert await one.get_lease("run-1") is None
    assert await two.acquire_lease("run-1", "h2", ttl=30)


async def test_leases_read_for_a_few_runs_or_a_whole_stores(make_store: StoreFactory) -> None:
    """``get_leases``: asked about a few runs, each looked up; asked about a whole store's (where
    stores read the lease table whole instead), the same answer: only the runs asked about."""
    store = await make_store()
    for run_id in ("a", "b", "c"):
        assert await store.acquire_lease(run_id, "h1", ttl=30)
    few = await store.get_leases(["a", "c", "never-leased"])
    many = await store.get_leases(["a", "c", *(f"never-{n:05d}" for n in range(5000))])
    assert few.keys() == many.keys() == {"a", "c"}
    assert all(lease.holder == "h1" and lease.live for lease in many.values())
    assert await store.get_leases([]) == {}


async def test_lease_taken_over_after_expiry(make_store: StoreFactory) -> None:
    one, two = await make_store(), await make_store()
    assert await one.acquire_lease("run-1", "h1", ttl=0.05)
    await asyncio.sleep(0.1)  # the lapse is on the store's clock; nothing else to wait on
    lease = await two.get_lease("run-1")
    assert lease is not None and not lease.live
    assert not await one.renew_lease("run-1", "h1", ttl=30)
    assert await two.acquire_lease("run-1", "h2", ttl=30)
    lease = await one.get_lease("run-1")
    assert lease is not None and lease.holder == "h2"


async def test_concurrent_acquires_grant_one(make_store: StoreFactory) -> None:
    handles = [await make_store() for _ in range(4)]
    granted = await asyncio.gather(*(h.acquire_lease("run-1", f"h{i}", ttl=30) for i, h in enumerate(handles)))
    assert sum(granted) == 1


# -- read-only ---------------------------------------------------------------------------------


async def test_read_only_refuses_every_write(make_store: StoreFactory) -> None:
    writer = await make_store()
    await writer.insert("run-1", "a", b"1")
    reader = await make_store(read_only=True)
    assert reader.read_only
    with pytest.raises(ReadOnlyStoreError):
        await reader.insert("run-1", "b", b"2")
    with pytest.raises(ReadOnlyStoreError):
        await reader.acquire_lease("run-1", "h", ttl=30)
    assert await entries(reader, "run-1") == [("a", b"1")]
    assert [r async for r in reader.runs()] == ["run-1"]


# -- change feed -------------------------------------------------------------------------------


async def test_changes_since_names_the_runs_written_after_a_cursor(make_store: StoreFactory) -> None:
    store = await make_store()
    if not store.IMPLEMENTS_CHANGES:
        assert make_store.kind == "postgres"  # it notifies instead
        return
    await store.insert("a", "x", b"1")
    _, cursor = await store.changes_since(-1)
    assert await store.changes_since(cursor) == (set(), cursor)
    other = await make_store()
    await other.insert("b", "x", b"1")
    await other.insert("c", "x", b"1")
    await other.insert("b", "y", b"1")
    changed, newer = await store.changes_since(cursor)
    assert changed == {"b", "c"} and newer > cursor
    assert (await store.changes_since(newer))[0] == set()


async def test_the_write_mark_moves_with_every_commit_of_another_handle_and_only_then(
    make_store: StoreFactory,
) -> None:
    store = await make_store()
    await store.insert("a", "x", b"1")
    mark = await store.write_mark()
    assert mark is not None  # every store here can tell: a poll of a quiet store reads nothing else
    assert [e async for e in store.load("a")] and [r async for r in store.runs()] == ["a"]
    await store.get_leases(["a"])
    if make_store.kind != "postgres":  # the server's mark moves with every database's writes (other tests')
        assert await store.write_mark() == mark  # reads write nothing
    other = await make_store()
    await other.insert("b", "x", b"1")
    assert await store.write_mark() != mark
    for write in (
        lambda: other.acquire_lease("a", "holder", 30),
        lambda: other.renew_lease("a", "holder", 60),
        lambda: other.release_lease("a", "holder"),
    ):
        before = await store.write_mark()
        await write()
        assert await store.write_mark() != before, "a lease written moves the mark: a run's holder changed"


async def test_a_store_that_notifies_names_each_run_as_it_commits(make_store: StoreFactory) -> None:
    store = await make_store()
    if not store.IMPLEMENTS_NOTIFICATIONS:
        with pytest.raises(ConfigError):
            await store.notifications()
        return
    feed = await store.notifications()
    try:
        writer = await make_store()
        await writer.insert("a", "x", b"1")
        await writer.insert("b", "x", b"1")
        heard = aiter(feed)
        assert [await asyncio.wait_for(anext(heard), 10) for _ in range(2)] == ["a", "b"]
    finally:
        await feed.aclose()


async def test_a_store_in_a_local_file_names_it(make_store: StoreFactory) -> None:
    store = await make_store()
    expected = make_store.db_path if make_store.kind == "sqlite" else None
    assert store.file_path == expected

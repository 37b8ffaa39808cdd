"""Run summaries: every store that sums runs up on the database side agrees with the reference,
``stores.summary.summarize``, entry for entry, on well-formed and on hostile bytes."""

from __future__ import annotations

import pytest

from agenttui.journal import keys
from agenttui.stores.summary import summarize
from tests.conftest import StoreFactory

ENDS = keys.END_MARKERS
GOOD = [
    ("@journal", b'{"name":"@journal","kind":"header","format":"bide.journal.v1-dev"}'),
    ("run:start", b'{"name":"run:start","kind":"value","result":{"input":"x"}}'),
    ("@llm/0", b'{"name":"@llm/0","kind":"model","usage":{"input_tokens":380,"output_tokens":60}}'),
    ("tool:c1", b'{"name":"tool:c1","kind":"tool_result","result":{"ok":true}}'),
    (
        "@llm/1",
        b'{"name":"@llm/1","kind":"model","usage":{"input_tokens":5,"cache_read_tokens":7,"cache_write_tokens":1}}',
    ),
    ("run:cancelled", b'{"name":"run:cancelled","kind":"value","result":{"reason":"no"}}'),
    ("run:complete", b'{"name":"run:complete","kind":"value"}'),  # after the first end marker
]
#: One odd entry each, added to a copy of GOOD: every store must call the run what the reference does.
ODD = {
    "not-json": b"\x00garbage",
    "not-utf8": b'{"name":"odd","kind":"value","result":"\xff\xfe"}',  # read as the codec reads it
    "nul-escape": b'{"name":"odd","kind":"value","result":"a\\u0000b"}',  # jsonb refuses it: PostgreSQL asks the reference
    "an-array": b'["name","odd"]',
    "renamed": b'{"name":"other","kind":"model"}',
    "no-name": b'{"kind":"model"}',
    "null-kind": b'{"name":"odd","kind":null}',
    "numeric-kind": b'{"name":"odd","kind":7}',
    "null-usage": b'{"name":"odd","kind":"model","usage":null}',
    "null-count": b'{"name":"odd","kind":"model","usage":{"input_tokens":null,"output_tokens":2}}',
    "string-usage": b'{"name":"odd","kind":"model","usage":"lots"}',
    "real-count": b'{"name":"odd","kind":"model","usage":{"input_tokens":1.5}}',
    "exponent-count": b'{"name":"odd","kind":"model","usage":{"input_tokens":1e2}}',
    "bool-count": b'{"name":"odd","kind":"model","usage":{"input_tokens":true}}',
    "negative-count": b'{"name":"odd","kind":"model","usage":{"input_tokens":-4}}',
    "huge-count": b'{"name":"odd","kind":"model","usage":{"input_tokens":12345678901234567890}}',
    "tombstone": b'{"redacted":{"leaf_hash":"ab","at_ms":1}}',
    "spaces": b' { "name" : "odd" , "kind" : "model" , "usage" : { "output_tokens" : 9 } } ',
    "usage-in-a-string": b'{"name":"odd","kind":"model","usage":"{\\"input_tokens\\":5}"}',
    "kind-like-an-object": b'{"name":"odd","kind":"{model}"}',
}
#: Entries a store may call suspect though the reference trusts them (a cheaper check on the
#: database side): a name or a kind that begins like a JSON object or array.
CAUTIOUS = {"kind-like-an-object"}


async def test_summaries_agree_with_the_reference(make_store: StoreFactory) -> None:
    store = await make_store()
    if not store.IMPLEMENTS_SUMMARIES:
        pytest.fail(f"{make_store.kind} stores sum runs up")
    for name, data in GOOD:
        await store.insert("good", name, data)
    for case, data in ODD.items():
        for name, data_of_good in GOOD[:3]:
            await store.insert(case, name, data_of_good)
        await store.insert(case, "odd", data)
    await store.insert("open", *GOOD[0])
    run_ids = ["good", *ODD, "open", "never-written"]
    summed = {summary.run_id: summary for summary in await store.summaries(run_ids, ENDS)}
    assert set(summed) == set(run_ids) - {"never-written"}
    for run_id, summary in summed.items():
        entries = [entry async for entry in store.load(run_id)]
        reference = summarize(run_id, entries, ENDS)
        assert reference is not None
        assert summary.suspect >= reference.suspect, f"{run_id}: a store must never trust what the reference does not"
        if run_id not in CAUTIOUS:
            assert summary.suspect == reference.suspect, run_id
        assert (summary.steps, summary.first, summary.end) == (reference.steps, reference.first, reference.end), run_id
        if not summary.suspect:  # a suspect run's counts are never read
            assert (summary.turns, summary.tokens) == (reference.turns, reference.tokens), run_id
    good = summed["good"]
    assert (good.steps, good.turns, good.tokens, good.suspect) == (7, 2, 453, False)
    assert good.first.name == "@journal" and good.end is not None and good.end.name == "run:cancelled"
    assert summed["open"].end is None and not summed["open"].suspect
    assert summed["spaces"].tokens == 449 and not summed["spaces"].suspect
    assert summed["null-usage"].turns == 2 and not summed["null-usage"].suspect
    suspect = {run_id for run_id, summary in summed.items() if summary.suspect}
    assert suspect == {
        "not-json", "an-array", "renamed", "no-name", "numeric-kind", "string-usage",
        "real-count", "exponent-count", "bool-count", "huge-count", "tombstone", "usage-in-a-string",
    } | (CAUTIOUS if make_store.kind == "sqlite" else set())  # fmt: skip


async def test_a_read_only_store_sums_runs_up_and_an_empty_page_is_empty(make_store: StoreFactory) -> None:
    writer = await make_store()
    for name, data in GOOD:
        await writer.insert("good", name, data)
    reader = await make_store(read_only=True)
    assert [s.run_id for s in await reader.summaries(["good"], ENDS)] == ["good"]
    assert await reader.summaries([], ENDS) == []


async def test_load_runs_reads_several_runs_as_load_reads_each(make_store: StoreFactory) -> None:
    store = await make_store()
    for case, data in ODD.items():
        for name, data_of_good in GOOD[:3]:
            await store.insert(case, name, data_of_good)
        await store.insert(case, "odd", data)
    run_ids = [*ODD, "never-written"]
    loaded = await store.load_runs(run_ids)
    assert set(loaded) == set(ODD)
    for run_id in ODD:
        assert loaded[run_id] == [entry async for entry in store.load(run_id)], run_id
    assert await store.load_runs([]) == {}


#: Keys the codec reads as the reference does (the last of duplicates; escapes decoded) and
#: SQLite's JSON path lookups do not (the first; escapes kept): known, not yet fixed there.
KEYS_SQLITE_MISREADS = {
    "second-name": b'{"name":"odd","kind":"value","name":"other"}',
    "escaped-kind": b'{"name":"odd","k\\u0069nd":"model"}',
}


async def test_keys_written_twice_or_escaped(make_store: StoreFactory) -> None:
    store = await make_store()
    for case, data in KEYS_SQLITE_MISREADS.items():
        await store.insert(case, "odd", data)
    misread = []
    for summary in await store.summaries(list(KEYS_SQLITE_MISREADS), ENDS):
        reference = summarize(summary.run_id, [entry async for entry in store.load(summary.run_id)], ENDS)
        assert reference is not None
        if summary.suspect < reference.suspect or (not summary.suspect and summary.turns != reference.turns):
            misread.append(summary.run_id)
    if make_store.kind == "sqlite" and misread:
        pytest.xfail(f"SQLite's json_extract reads the first of duplicate keys and matches keys unescaped: {misread}")
    assert misread == []

"""Run summaries: every store that sums runs up on the database side agrees with the reference,
``stores.summary.summarize``, entry for entry, on well-formed and on hostile bytes."""

from __future__ import annotations

import pytest

from agenttui.errors import ConfigError
from agenttui.journal import decode_entry, keys
from agenttui.journal.codec import encode_string
from agenttui.stores import sqlite as sqlite_store
from agenttui.stores.summary import shaped_kind, summarize
from tests.conftest import StoreFactory
from tests.gocorpus import write_corpus

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


#: Runs that may be saved what-if forks (their run:start holds the fork mark's name as the codec
#: writes it, or they hold a fork:origin), each with its run:start's bytes and any other entry.
MAYBE_FORKS = {
    "marked": (b'{"input":"x","ext":{"agenttui.fork":{"run_id":"r","at":"@llm/0"}}}', None),
    "marked-nested": (b'{"input":"x","ext":{"o":{"agenttui.fork":1}}}', None),
    "marked-in-text": (b'{"input":"say \\"agenttui.fork\\" here"}', None),  # the closing quote escaped
    "origin": (b'{"input":"x"}', ("fork:origin", b'{"name":"fork:origin","kind":"value","result":"x"}')),
    "mark-elsewhere": (b'{"input":"x"}', ("step", b'{"name":"step","kind":"value","result":{"agenttui.fork":1}}')),
}


async def test_a_summary_says_which_runs_may_be_forks_as_the_reference_does(make_store: StoreFactory) -> None:
    store = await make_store()
    for run_id, (start, other) in MAYBE_FORKS.items():
        await store.insert(run_id, *GOOD[0])
        await store.insert(run_id, "run:start", b'{"name":"run:start","kind":"value","result":' + start + b"}")
        if other is not None:
            await store.insert(run_id, *other)
        await store.insert(run_id, *GOOD[-1])
    summed = {summary.run_id: summary for summary in await store.summaries(list(MAYBE_FORKS), ENDS)}
    for run_id, summary in summed.items():
        reference = summarize(run_id, [entry async for entry in store.load(run_id)], ENDS)
        assert reference is not None and summary.forked == reference.forked, run_id
    assert {run_id for run_id, summary in summed.items() if summary.forked} == {"marked", "marked-nested", "origin"}


async def test_a_read_only_store_sums_runs_up_and_an_empty_page_is_empty(make_store: StoreFactory) -> None:
    writer = await make_store()
    for name, data in GOOD:
        await writer.insert("good", name, data)
    reader = await make_store(read_only=True)
    assert [s.run_id for s in await reader.summaries(["good"], ENDS)] == ["good"]
    assert await reader.summaries([], ENDS) == []


async def test_a_pass_over_the_journal_sums_runs_up_as_its_pages_would_have(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sum_up_journal`` (where ``IMPLEMENTS_JOURNAL_PASS``): each run's summary as ``summaries``
    says it when the pass is made, over every odd entry and with each run's entries spread across
    the pass's statements (three entries each here); a run written after the pass is summed up
    as it was then, a run new since is asked of the store, and one never written has none."""
    store = await make_store()
    if not store.IMPLEMENTS_JOURNAL_PASS:
        with pytest.raises(ConfigError):
            await store.sum_up_journal(ENDS)
        return
    monkeypatch.setattr(sqlite_store, "PASS_ENTRIES", 3)
    runs: dict[str, list[tuple[str, bytes]]] = {
        "good": GOOD,
        **{case: [*GOOD[:3], ("odd", data)] for case, data in ODD.items()},
    }
    runs |= {run_id: entries for run_id, (entries, _) in SHAPED_RUNS.items()}
    runs["open"] = GOOD[:1]
    for at in range(max(map(len, runs.values()))):  # interleaved, as runs written at once are
        for run_id, entries in runs.items():
            if at < len(entries):
                await store.insert(run_id, *entries[at])
    run_ids = [*runs, "never-written"]
    before = {summary.run_id: summary for summary in await store.summaries(run_ids, ENDS)}
    summed = await store.sum_up_journal(ENDS)
    await store.insert("open", *GOOD[-1])
    await store.insert("new", *GOOD[0])
    passed = {summary.run_id: summary for summary in await summed.summaries([*run_ids, "new"])}
    assert passed == before | {"new": (await store.summaries(["new"], ENDS))[0]}
    assert len(summed) == len(runs)
    assert summed.reached(max(summary.last_seq or 0 for summary in before.values()))
    assert await summed.summaries([]) == []


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


async def test_a_status_indexs_validators_agree_with_what_load_reads(make_store: StoreFactory) -> None:
    """``run_marks`` (every store that keeps a status index) and, where seq runs across runs,
    ``last_seq`` and ``runs_after``: what ``runs.status_index`` trusts in place of the entries."""
    store = await make_store()
    if store.index_identity() is None:  # a store that keeps no index (in memory) has no validators
        with pytest.raises(ConfigError):
            await store.run_marks(["a"])
        with pytest.raises(ConfigError):
            await store.every_run_mark()
        return
    assert await store.every_run_mark() == {}  # no run yet
    for run_id in ("a", "b", "c"):
        for name, data in GOOD[:3]:
            await store.insert(run_id, name, data)
    seqs = {run_id: [entry.seq async for entry in store.load(run_id)] for run_id in ("a", "b", "c")}
    marks = {run_id: (len(seq), seq[-1]) for run_id, seq in seqs.items()}
    assert await store.run_marks(["a", "c", "never-written"]) == {"a": marks["a"], "c": marks["c"]}
    # Asked about a whole store's runs (more than one statement's worth, or one pass over the
    # index), the same answer.
    many = ["a", "c", *(f"never-{n:05d}" for n in range(40_000))]
    assert await store.run_marks(many) == {"a": marks["a"], "c": marks["c"]}
    assert await store.every_run_mark() == marks  # every run the store holds: a listing too
    if not store.INDEX_GLOBAL_SEQ:
        return
    last = await store.last_seq()
    assert last == max(seq[-1] for seq in seqs.values())
    assert await store.runs_after(last) == {}
    await store.insert("b", "more", GOOD[1][1])
    await store.insert("d", "new", GOOD[0][1])
    after = await store.runs_after(last)
    assert after == {run_id: [e.seq async for e in store.load(run_id)][-1] for run_id in ("b", "d")}
    assert await store.last_seq() == max(after.values())
    assert await store.entry_digest(max(after.values())) != await store.entry_digest(last)


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


SALT = ',"salt":"' + "A" * 43 + '="}'
#: A tool result's payload, large enough that a parse of it would cost more than the shape check.
PAYLOAD = "x" * 4096


def salted(body: str) -> bytes:
    """A record's JSON without its closing brace, ended as every record since v0.7 is: by its salt."""
    return (body + SALT).encode()


#: Runs of records as the codec and the Go SDK write them (shaped: trusted without a parse) and
#: records that are not shaped (parsed, as before), each with its (steps, turns, tokens, suspect).
SHAPED_RUNS: dict[str, tuple[list[tuple[str, bytes]], tuple[int, int, int, bool]]] = {
    "shaped": (
        [
            ("@journal", salted('{"name":"@journal","kind":"header","format":"bide.journal.v1-dev"')),
            ("run:start", salted('{"name":"run:start","kind":"value","result":{"input":"x"}')),
            (
                "@llm/0",
                salted('{"name":"@llm/0","kind":"model","message":{"role":"assistant"},"usage":{"input_tokens":7}'),
            ),
            ("attempt:tool:c1", salted('{"name":"attempt:tool:c1","kind":"attempt","tool_use_id":"c1","claim":"ab"')),
            ("tool:c1", salted('{"name":"tool:c1","kind":"tool_result","tool_use_id":"c1","result":"' + PAYLOAD + '"')),
            ("approval:c2", salted('{"name":"approval:c2","kind":"approval","tool_use_id":"c2","approved":true')),
            ("@llm/1", salted('{"name":"@llm/1","kind":"model","finish":"stop","result":"' + PAYLOAD + '"')),
            ("odd-kind", salted('{"name":"odd-kind","kind":"Kind_2","result":"' + PAYLOAD + '"')),
            ("empty-kind", salted('{"name":"empty-kind","kind":"","result":"' + PAYLOAD + '"')),
            ("run:complete", salted('{"name":"run:complete","kind":"value"')),
        ],
        (10, 2, 7, False),
    ),
    # Trusted by its shape: its broken middle is found when the run is opened (unreadable).
    "broken-middle": (
        [("tool:c1", salted('{"name":"tool:c1","kind":"tool_result","result":{"a":' + PAYLOAD + ",,}"))],
        (1, 0, 0, False),
    ),
    "cut-short": (
        [("tool:c1", salted('{"name":"tool:c1","kind":"tool_result","result":"' + PAYLOAD + '"')[:-20])],
        (1, 0, 0, True),
    ),
    "salt-less": (
        [("tool:c1", ('{"name":"tool:c1","kind":"tool_result","result":"' + PAYLOAD + '"}').encode())],
        (1, 0, 0, False),
    ),
    "salt-less-broken": (
        [("tool:c1", ('{"name":"tool:c1","kind":"tool_result","result":' + PAYLOAD + "}").encode())],
        (1, 0, 0, True),
    ),
    "usage-after-kind": (
        [
            ("@llm/0", salted('{"name":"@llm/0","kind":"model","usage":{"input_tokens":5},"result":"' + PAYLOAD + '"')),
            (
                "tool:c1",
                salted(
                    '{"name":"tool:c1","kind":"tool_result","usage":{"output_tokens":11},"result":"' + PAYLOAD + '"'
                ),
            ),
        ],
        (2, 1, 16, False),
    ),
    "usage-after-message": (
        [
            (
                "@llm/0",
                salted(
                    '{"name":"@llm/0","kind":"model","message":{"text":"' + PAYLOAD + '"},"usage":{"input_tokens":3}'
                ),
            )
        ],
        (1, 1, 3, False),
    ),
    "wrong-usage-after-kind": (
        [("@llm/0", salted('{"name":"@llm/0","kind":"model","usage":{"input_tokens":1.5},"result":"' + PAYLOAD + '"'))],
        (1, 0, 0, True),
    ),
    "escaped-kind": (
        [("@llm/0", salted('{"name":"@llm/0","kind":"m\\u006fdel","result":"' + PAYLOAD + '"'))],
        (1, 1, 0, False),
    ),
    "another-name": (
        [("tool:c1", salted('{"name":"tool:c2","kind":"tool_result","result":"' + PAYLOAD + '"'))],
        (1, 0, 0, True),
    ),
}


async def test_shaped_entries_are_trusted_without_a_parse(make_store: StoreFactory) -> None:
    store = await make_store()
    for run_id, (entries, _) in SHAPED_RUNS.items():
        for name, data in entries:
            await store.insert(run_id, name, data)
    summed = {summary.run_id: summary for summary in await store.summaries(list(SHAPED_RUNS), ENDS)}
    more_cautious = set()
    for run_id, (_, expected) in SHAPED_RUNS.items():
        summary = summed[run_id]
        reference = summarize(run_id, [entry async for entry in store.load(run_id)], ENDS)
        assert reference is not None
        counts = (reference.steps, *((reference.turns, reference.tokens) if not reference.suspect else (0, 0)))
        assert (*counts, reference.suspect) == expected, run_id
        assert summary.suspect >= reference.suspect, run_id  # a store may be more cautious, never less
        if summary.suspect > reference.suspect:
            more_cautious.add(run_id)
        elif not summary.suspect:  # a suspect run's counts are never read
            assert summary == reference, run_id
    # SQLite parses every entry (a shape check costs it as much as a parse): it finds the broken
    # middle that the reference, and PostgreSQL, trust by the entry's shape.
    assert more_cautious == ({"broken-middle"} if make_store.kind == "sqlite" else set())
    broken = [entry async for entry in store.load("broken-middle")]
    assert shaped_kind(broken[0].data, broken[0].name) == b"tool_result"
    assert decode_entry(broken[0]).unreadable, "what a shaped entry does not check is found when it is opened"


async def test_go_written_runs_sum_up_as_the_reference_does(make_store: StoreFactory) -> None:
    store = await make_store()
    await write_corpus(store)
    run_ids = [run_id async for run_id in store.runs()]
    summed = await store.summaries(run_ids, ENDS)
    assert len(summed) == len(run_ids)
    shaped = 0
    for summary in summed:
        entries = [entry async for entry in store.load(summary.run_id)]
        assert summary == summarize(summary.run_id, entries, ENDS), summary.run_id
        shaped += sum(shaped_kind(entry.data, entry.name) is not None for entry in entries)
    assert shaped > 100  # the SDK's records but its model turns are shaped


@pytest.mark.parametrize(
    "name", ["tool:c1", "", 'a"b', "back\\slash", "tab\tnew\nline\x01\x7f", "\u00e9\u65e5", "\u2028\u2029", "<&>"]
)
def test_a_shaped_record_begins_with_its_name_as_the_codec_writes_it(name: str) -> None:
    data = b'{"name":' + encode_string(name) + b',"kind":"value"' + SALT.encode()
    assert shaped_kind(data, name) == b"value"
    assert shaped_kind(data, name + "x") is None

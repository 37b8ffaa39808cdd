"""Finding text in a run (runs/reading/search.py): names and summaries from the rows, content read back
from every kind of store page by page, any case, escapes and all; and the hits n and N walk."""

from __future__ import annotations

import json

from agenttui.journal import Journal
from agenttui.runs.reading.search import Hits, Needle, row_hits, search_content
from agenttui.runs.reading.view import RunView
from agenttui.stores.base import Store

RUN = "find-me"


def model(turn: int, text: str, args: dict[str, object]) -> bytes:
    parts = [
        {"text": text, "type": "text"},
        {"args": args, "id": f"call_{turn}", "name": "lookup_order", "type": "tool_use"},
    ]
    return json.dumps(
        {"name": f"@llm/{turn}", "kind": "model", "message": {"role": "assistant", "parts": parts}}
    ).encode()


def result(turn: int, value: object, *, ascii_only: bool = True) -> bytes:
    record = {"name": f"tool:call_{turn}", "kind": "tool_result", "tool_use_id": f"call_{turn}", "result": value}
    return json.dumps(record, ensure_ascii=ascii_only).encode()


RECORDS: list[tuple[str, bytes]] = [
    ("@journal", b'{"name":"@journal","kind":"header","format":"bide.journal.v1-dev"}'),
    ("@llm/0", model(0, "Looking order A-1001 up.", {"order_id": "A-1001"})),
    ("tool:call_0", result(0, {"customer": "Grace Hopper", "note": "x" * 400 + " ZEBRA crossing"})),  # past the summary
    ("@llm/1", model(1, "Next one.\nAnd a zebra on the second line.", {"order_id": "A-1002"})),
    ("tool:call_1", result(1, {"note": 'a "café"\nwith a Zebra'})),  # escaped: \" \n \u00e9
    ("tool:call_2", result(2, {"note": "zèbre, unescaped"}, ascii_only=False)),
    ("@llm/2", b'{"name":"@llm/2","kind":"model","message":{"role":"assis'),  # cut short: unreadable, zebra-free
    ("@llm/3", b'{"name":"@llm/3","kind":"model","message":{"role":"assistant ZEBRA'),  # unreadable, holds it
]


async def write(store: Store) -> list[int]:
    seqs = []
    for name, data in RECORDS:
        seqs.append((await store.insert(RUN, name, data)).entry.seq)
    return seqs


async def found(store: Store, query: str, **kwargs: int) -> list[list[int]]:
    return [page.hits async for page in search_content(store, RUN, Needle(query), **kwargs)]


async def test_content_is_searched_in_any_case_page_by_page_in_every_store(store: Store) -> None:
    seqs = await write(store)
    assert await found(store, "zebra") == [[2, 3, 4, 7]]
    assert await found(store, "zebra", page=3) == [[2], [3, 4], [7]]  # a page each 3 records, the last short
    pages = [(page.hits, page.searched) async for page in search_content(store, RUN, Needle("ZEB"), page=4)]
    assert pages == [([2, 3], 4), ([4, 7], 8), ([], 8)]
    assert await found(store, "zebra", upto_seq=seqs[3]) == [[2, 3]]  # what a viewer held when it began
    assert await found(store, "CAFÉ") == await found(store, r"\"café\"\nwith") == [[4]]  # as the inspector shows it
    assert await found(store, "zÈbre") == [[5]]
    assert await found(store, "a-1002") == [[3]]  # a call's arguments
    assert await found(store, "lookup_order") == [[1, 3]]  # the tool a model turn calls
    assert await found(store, "header") == [[]]  # a record's kind is not its content
    assert await found(store, "assis") == [[6, 7]]  # an unreadable record: its stored bytes
    assert await found(store, "nobody") == [[]]
    assert [page.hits async for page in search_content(store, "no-such-run", Needle("x"))] == [[]]


async def test_names_and_summaries_match_from_the_rows(store: Store) -> None:
    await write(store)
    view = RunView(RUN)
    view.add_entries([(entry.seq, record) async for entry, record in Journal(store).entries(RUN)])
    assert row_hits(view.rows, Needle("CALL_1")) == [4]  # the name (and its summary names the tool)
    assert row_hits(view.rows, Needle("grace")) == [2]  # the summary shows the result's start
    assert row_hits(view.rows, Needle("zebra crossing")) == []  # past the summary: content only
    assert row_hits(view.rows, Needle("llm"), start=5) == [6, 7]


def test_hits_are_walked_in_order_wrapping_and_counted_once() -> None:
    hits = Hits(Needle("zebra"), total=100)
    assert hits.after(0) is None and hits.before(0) is None
    assert hits.count(0) == "no hits · searching 0 of 100"
    assert hits.add([40, 10]) and not hits.add([10])
    hits.add([70, 40])
    assert hits.indices == [10, 40, 70] and len(hits) == 3 and 40 in hits
    assert (hits.after(10), hits.after(39), hits.after(70)) == (40, 40, 10)  # wraps to the first
    assert (hits.before(40), hits.before(41), hits.before(10)) == (10, 40, 70)  # wraps to the last
    hits.searched = 60
    assert hits.count(40) == "hit 2 of 3 · searching 60 of 100"
    hits.done = True
    assert hits.count(41) == "3 hits" and hits.count(70) == "hit 3 of 3"


def test_a_query_is_matched_as_typed_whatever_the_stored_bytes() -> None:
    assert not Needle("") and Needle("a")
    # The bytes shortcut never hides a hit: non-ASCII queries, and records with escapes, decode.
    assert Needle("É").text == "é"

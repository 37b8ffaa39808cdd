"""The read tools of ``agenttui mcp``: each one core function (the CLI's and the TUI's), its
answer inert and fitted to the budget; and each run as a resource, ``agenttui://runs/{run_id}``."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from pydantic import Field

from agenttui.errors import AgentTuiError
from agenttui.journal.inert import printable
from agenttui.mcp_server.answers import LEAST_BUDGET, fit, size_of, take_fitting
from agenttui.mcp_server.reading import given_run_id, list_runs, status_line
from agenttui.mcp_server.served import READ_ONLY, Budget, RecordRef, RunId, Served, answered, budget_of

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from agenttui.runs.reading.view import Utterance


#: The most model turns ``run_cost`` answers with at once (fewer where the budget runs out).
_TURNS_A_PAGE = 200


def add_read_tools(server: MCPServer, served: Served) -> None:
    """The read tools, each one core function, and each run as a resource."""
    records = served.records

    @server.tool(name="list_runs", annotations=READ_ONLY, structured_output=False)
    @answered
    async def list_runs_tool(
        where: Annotated[
            str | None,
            Field(description="A filter: status=halted and tool=charge and idle<2h (docs/guide/filters.md)."),
        ] = None,
        status: Annotated[
            list[str] | None, Field(description="Only runs in these statuses (halted, awaiting-approval, ...).")
        ] = None,
        cursor: Annotated[str | None, Field(description="next_cursor of the page before.")] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="Runs in this page at most.")] = 50,
        budget: Budget = None,
    ) -> dict[str, Any]:
        """Runs by status, in run id order, a page at a time: each with its status, why, what it
        waits on, steps, turns, tokens and last activity (a member a run has nothing for is left
        out). A filter that matches few runs of a
        large store may return fewer than limit with a next_cursor: read on from it."""
        from agenttui.runs.statuses.state import RunState

        if unknown := [s for s in status or [] if s not in {state.value for state in RunState}]:
            raise ToolError(f"no status {', '.join(map(repr, unknown))}: one of {', '.join(s.value for s in RunState)}")
        page = await list_runs(served.store, where=where, states=status or [], cursor=cursor, limit=limit)
        room = budget_of(served, budget)
        runs = take_fitting(page.runs, room - 300)
        next_cursor = page.next_cursor
        if len(runs) < len(page.runs):  # the budget ended the page: read on from the last run shown
            from agenttui.mcp_server.reading import cursor_of

            next_cursor = cursor_of(page.runs[len(runs) - 1]["run_id"])
        return fit({"runs": runs, "scanned": page.scanned, "next_cursor": next_cursor}, room,
                   read_more="list_runs with a smaller limit")  # fmt: skip

    @server.tool(annotations=READ_ONLY, structured_output=False)
    @answered
    async def run_overview(run_id: RunId, replay: bool = True, budget: Budget = None) -> dict[str, Any]:
        """One run: its status and why, what it waits on, steps, turns, tokens, its sub-runs, and
        (replay) the verdict of replaying it offline with its recorded tools: no live model, no
        side effect."""
        from agenttui.runs.statuses.status import statuses

        kept = await records.run(run_id)
        (status,) = await statuses(served.store, [run_id])
        sub_runs = [r async for r in served.store.runs(prefix=run_id + ">")][:200]
        overview: dict[str, Any] = {
            "status": status_line(status),
            "records": len(kept.records),
            "sub_runs": [status_line(s) for s in await statuses(served.store, sub_runs)] if sub_runs else [],
        }
        if replay:
            from agenttui.replay.reports import verdict_json

            session, verdict = await records.verdict(run_id)
            progress = session.progress
            overview["replay"] = verdict_json(run_id, session.mode, progress.turn, progress.recorded_turns, verdict)
        return fit(overview, budget_of(served, budget), read_more="read_record reads one record whole")

    @server.tool(annotations=READ_ONLY, structured_output=False)
    @answered
    async def run_records(
        run_id: RunId,
        cursor: Annotated[
            int, Field(ge=0, description="The first record's index (next_cursor of the page before).")
        ] = 0,
        limit: Annotated[int, Field(ge=1, le=1000)] = 200,
        budget: Budget = None,
    ) -> dict[str, Any]:
        """A run's records as a compact outline, a page at a time: index, step name, kind, one
        line of what it holds, and its stored size in bytes. read_record reads one whole."""
        from agenttui.journal.describe import summary
        from agenttui.journal.inert import clip

        kept = await records.run(run_id)
        names = kept.tool_names
        page = kept.records[cursor : cursor + limit]
        rows = [
            {"index": cursor + at, "name": record.name, "kind": record.kind,
             "summary": clip(summary(record, names).replace("\n", " "), 160), "bytes": len(record.raw)}
            for at, record in enumerate(page)
        ]  # fmt: skip
        room = budget_of(served, budget)
        shown = take_fitting(rows, room - 300)
        end = cursor + len(shown)
        return fit(
            {"run_id": run_id, "records": len(kept.records), "outline": shown,
             "next_cursor": end if end < len(kept.records) else None},
            room, read_more="read_record reads one record whole",
        )  # fmt: skip

    @server.tool(annotations=READ_ONLY, structured_output=False)
    @answered
    async def read_record(
        run_id: RunId,
        record: RecordRef,
        offset: Annotated[
            int, Field(ge=0, description="Where to read on in the record's JSON text (next_offset).")
        ] = 0,
        budget: Budget = None,
    ) -> dict[str, Any]:
        """One record in full, as JSON. A record larger than the budget comes as its JSON text,
        a page at a time (offset, next_offset)."""
        from agenttui.journal.describe import record_json
        from agenttui.journal.inert import safe_json

        kept = await records.run(run_id)
        index, found = _find(kept.records, record)
        whole = record_json(found)
        room = budget_of(served, budget)
        if offset == 0 and size_of(whole) <= room - 200:
            return fit({"index": index, "record": whole}, room, read_more="")
        text = safe_json(whole)
        chunk = max(500, (room - 400) // 2)  # a character may take two bytes and more once made inert
        piece = text[offset : offset + chunk]
        end = offset + len(piece)
        return fit(
            {"index": index, "name": found.name, "json_text": piece, "offset": offset, "total_chars": len(text),
             "next_offset": end if end < len(text) else None},
            room, read_more="read on with a larger budget",
        )  # fmt: skip

    @server.tool(annotations=READ_ONLY, structured_output=False)
    @answered
    async def conversation(
        run_id: RunId,
        at: Annotated[
            str | None, Field(description="As of this record (index or step name); default: the run's last.")
        ] = None,
        budget: Budget = None,
    ) -> dict[str, Any]:
        """The conversation as it stood after a record: the user's input, every assistant turn,
        tool result and human decision up to it."""
        from agenttui.runs.reading.view import utterance

        kept = await records.run(run_id)
        index = len(kept.records) - 1 if at is None else _find(kept.records, at)[0]
        voices_up_to = kept.voices[: bisect_right(kept.voices, index)]
        room = budget_of(served, budget)

        def voice(at: int) -> dict[str, Any]:
            said = utterance(kept.records[at], at, kept.tool_names)
            assert said is not None  # a voice's record speaks
            return _voice(said)

        # The user's input, then the newest voices that fit (a long run's middle is left out, as
        # the TUI leaves it: read_record reads any of them). Only those are made.
        first, rest = voices_up_to[:1], voices_up_to[1:]
        newest = take_fitting([voice(at) for at in reversed(rest[-_NEWEST_VOICES:])], room * 3 // 4)[::-1]
        shown = [voice(at) for at in first] + newest
        return fit({"as_of": index, "voices": len(voices_up_to), "left_out": len(voices_up_to) - len(shown),
                    "conversation": shown},
                   room, read_more="read_record reads that record whole")  # fmt: skip

    @server.tool(name="replay", annotations=READ_ONLY, structured_output=False)
    @answered
    async def replay_run(run_id: RunId, budget: Budget = None) -> dict[str, Any]:
        """Replay a run offline against its recording, with its recorded tools (no live model, no
        side effect), and judge it: matches, matches so far (an unfinished run), diverged (both
        sides of the first divergence), or refused (why)."""
        from agenttui.replay.reports import verdict_json

        session, verdict = await records.verdict(run_id)
        progress = session.progress
        found = verdict_json(run_id, session.mode, progress.turn, progress.recorded_turns, verdict)
        return fit(found, budget_of(served, budget), read_more="read_record reads a record whole")

    @server.tool(name="fork_run", annotations=READ_ONLY, structured_output=False)
    @answered
    async def fork_run(
        run_id: RunId,
        at: Annotated[
            str, Field(description="The step to change: a model turn (@llm/N) or a tool result (tool:CALL).")
        ],
        value_json: Annotated[
            str, Field(description="Its new value as JSON text: the tool's result, or a model turn's message.")
        ],
        is_error: Annotated[
            bool | None, Field(description="A tool result: mark it an error, or not (default: as recorded).")
        ] = None,
        budget: Budget = None,
    ) -> dict[str, Any]:
        """What if this tool had returned, or the model had said, something else? Replays the run
        with one recorded output changed, in a scratch store in memory (the user's store is never
        written), and gives the fork's outcome and, turn by turn, how it differs from the
        recording."""
        from agenttui.replay.compare import Side, compare_sides
        from agenttui.replay.fork import fork_run as fork
        from agenttui.replay.reports import comparison_json, fork_json
        from agenttui.replay.verdict import REQUEST_DIGESTS

        forked = await fork(served.store, run_id, at, value_json, None, is_error=is_error)
        try:
            replayed = await forked.replayed()
            recording, fork_side = Side(served.store, run_id, "recording"), Side(forked.store, run_id, "fork")
            comparison = await compare_sides(
                recording, fork_side, markers_optional=True, not_compared=tuple(REQUEST_DIGESTS)
            )
            answer = {
                "fork": fork_json(forked, replayed, None),
                "against_recording": comparison_json(recording, fork_side, comparison),
                "written_to_store": False,
            }
        finally:
            await forked.aclose()
        return fit(answer, budget_of(served, budget), read_more="compare the steps named with read_record")

    @server.tool(annotations=READ_ONLY, structured_output=False)
    @answered
    async def compare_runs(run_a: RunId, run_b: RunId, budget: Budget = None) -> dict[str, Any]:
        """Two runs side by side, turn by turn: the first difference (both sides), the records
        that differ in each turn, and the tokens each turn spent."""
        from agenttui.replay.compare import Side, compare_sides
        from agenttui.replay.reports import comparison_json

        left, right = Side(served.store, run_a, run_a), Side(served.store, run_b, run_b)
        comparison = await compare_sides(left, right)
        return fit(comparison_json(left, right, comparison), budget_of(served, budget),
                   read_more="read_record reads a record whole")  # fmt: skip

    @server.tool(annotations=READ_ONLY, structured_output=False)
    @answered
    async def run_cost(
        run_id: RunId,
        cursor: Annotated[int, Field(ge=0, description="The first turn's index (next_cursor of the page before).")] = 0,
        budget: Budget = None,
    ) -> dict[str, Any]:
        """What a run spent: its sub-runs rolled up and apart; by tool and by model; the token
        budget's share; what failed, retried or late requests wasted; and its model turns a page
        at a time (cursor, next_cursor), each turn's tokens (input, cached, cache-write, output),
        model, context and cost. Prices from genai-prices; a model with no known price is named
        in unpriced_models, never costed at 0."""
        from agenttui.runs.cost.lens import spend_json
        from agenttui.runs.cost.reading import store_costs

        await records.run(run_id)  # a run the store does not hold is said so
        prices = await served.read_prices()
        (cost,) = [found async for found in store_costs(served.store, [run_id], prices)]
        answer: dict[str, Any] = {
            "run_id": run_id, "prices": prices.describe(), "total": spend_json(cost.total), "own": spend_json(cost.own),
            "sub_runs": spend_json(cost.sub_runs), "token_budget": cost.token_budget, "budget_used": cost.budget_used,
            "unreadable": cost.unreadable or None,
            "by_model": {name: spend_json(spend) for name, spend in cost.by_model.items()},
            "by_tool": {name: spend_json(spend) for name, spend in cost.by_tool.items()},
            "turn_count": len(cost.turns),
        }  # fmt: skip
        room = budget_of(served, budget)
        turns = [{"step": turn.name, "model": turn.model, "context_tokens": turn.context, "tools": list(turn.tools)}
                 | spend_json(turn.spend) for turn in cost.turns[cursor : cursor + _TURNS_A_PAGE]]  # fmt: skip
        # The turns a page at a time, as many as the budget leaves room for: never JSON cut mid-turn.
        shown = answer["turns"] = take_fitting(turns, max(room - size_of(answer) - 300, 0)) if turns else []
        end = cursor + len(shown)
        answer["next_cursor"] = end if end < len(cost.turns) else None
        return fit(answer, room, read_more="run_cost with next_cursor reads the next turns")

    @server.tool(annotations=READ_ONLY, structured_output=False)
    @answered
    async def flowchart(
        run_id: RunId,
        format: Literal["mermaid", "ascii"] = "mermaid",
        width: Annotated[int, Field(ge=40, le=400, description="ascii: the width to draw in.")] = 100,
        budget: Budget = None,
    ) -> dict[str, Any]:
        """The run's flowchart: Mermaid text (as the Go SDK renders it), or an ASCII drawing that
        ends where the run stands."""
        kept = await records.run(run_id)
        if format == "mermaid":
            text = kept.mermaid
        else:
            from agenttui.render.ascii import render_text
            from agenttui.render.flow import flow_steps
            from agenttui.runs.reading.tree import sub_run_steps
            from agenttui.runs.statuses.chart_end import chart_end
            from agenttui.runs.statuses.status import statuses

            # The end node and the sub-runs are read each time (a lease, the clock or a sub-run
            # moves them); the drawing is made again only when they or the records moved.
            (status,) = await statuses(served.store, [run_id])
            children = await sub_run_steps(served.store, run_id)
            end = chart_end(status)
            drawn_with, text = kept.drawings.get((width, end), (None, ""))
            if drawn_with != children:
                steps = flow_steps(kept.records, run_id=run_id, sub_runs=children, end=end)
                text = render_text(steps, width=width, ascii=True, children=children)
                kept.drawings[(width, end)] = (children, text)
        return fit(
            {"format": format, "text": text}, budget_of(served, budget), read_more="run_records outlines the run"
        )

    @server.tool(name="search", annotations=READ_ONLY, structured_output=False)
    @answered
    async def search_run(
        run_id: RunId,
        text: Annotated[
            str,
            Field(min_length=1, description="What to find, case-insensitively: in step names, summaries and content."),
        ],
        cursor: Annotated[
            int, Field(ge=0, description="The record to search from (next_cursor of the page before).")
        ] = 0,
        limit: Annotated[int, Field(ge=1, le=500)] = 50,
        budget: Budget = None,
    ) -> dict[str, Any]:
        """Find text inside a run: the records whose name, summary or content holds it, in
        order, a page at a time (a word in every other record of 50,000 is found page by page)."""
        from agenttui.journal.describe import summary
        from agenttui.journal.inert import clip
        from agenttui.runs.reading.search import Needle, content_texts

        kept = await records.run(run_id)
        names = kept.tool_names
        needle = Needle(text)
        hits: list[dict[str, Any]] = []
        next_cursor = None

        def candidates() -> Iterator[tuple[int, bool]]:
            """Each record found by its name (or its call's tool), or whose bytes may hold the
            text, with which; a window at a time, so a page found early reads no further."""
            for start in range(cursor, len(kept.records), _SEARCH_WINDOW):
                stop = min(start + _SEARCH_WINDOW, len(kept.records))
                named = {
                    index for index in range(start, stop)
                    if needle.text in kept.records[index].name.lower()
                    or needle.text in names.get(kept.records[index].tool_use_id, "").lower()
                }  # fmt: skip
                for index in sorted(named | kept.may_hold(needle, start, stop)):
                    yield index, index in named

        for index, by_name in candidates():
            record = kept.records[index]
            said = summary(record, names)
            if by_name or needle.text in said.lower() or any(needle.text in t.lower() for t in content_texts(record)):
                if len(hits) == limit:
                    next_cursor = index
                    break
                hits.append({"index": index, "name": record.name, "kind": record.kind,
                             "summary": clip(said.replace("\n", " "), 160)})  # fmt: skip
        room = budget_of(served, budget)
        shown = take_fitting(hits, room - 300)
        if len(shown) < len(hits):  # the budget ended the page: read on from the first hit left out
            next_cursor = hits[len(shown)]["index"]
        searched = (next_cursor if next_cursor is not None else len(kept.records)) - cursor
        return fit({"query": text, "hits": shown, "searched": searched, "next_cursor": next_cursor}, room,
                   read_more="read_record reads a hit whole")  # fmt: skip

    _run_resource(server, served)


#: The records a search looks through at once before it reads the candidates among them.
_SEARCH_WINDOW = 2_000

#: The newest voices of a conversation an answer holds at most (before its budget cuts them).
_NEWEST_VOICES = 200


def _voice(u: Utterance) -> dict[str, Any]:
    from agenttui.journal.describe import part_json

    said = {"parts": [part_json(p) for p in u.message.parts]} if u.message else {"text": u.text, "is_error": u.is_error}
    return {"index": u.index, "speaker": u.speaker} | said


def _find(records: list[Any], ref: str) -> tuple[int, Any]:
    """A record by its index or its step name."""
    if ref.strip().isdigit():
        index = int(ref)
        if index >= len(records):
            raise ToolError(f"record {index}: the run has {len(records):,} records, numbered 0 to {len(records) - 1:,}")
        return index, records[index]
    for index, record in enumerate(records):
        if record.name == ref:
            return index, record
    raise ToolError(f"no record named {printable(ref)!r} in the run (run_records lists them)")


def _run_resource(server: MCPServer, served: Served) -> None:
    @server.resource("agenttui://runs/{run_id}", mime_type="application/json")
    async def run(run_id: str) -> str:
        """A run, to attach: its status, what it waits on, and its records outlined."""
        from agenttui.journal.describe import summary
        from agenttui.journal.inert import clip, safe_json
        from agenttui.runs.statuses.status import statuses

        # The answer carries the resource's URI too, the id percent-encoded (up to 3 bytes a byte):
        # what the budget counts is the whole answer.
        room = max(LEAST_BUDGET, served.budget - 3 * len(run_id.encode("utf-8", "surrogatepass")))
        try:
            run_id = given_run_id(run_id)
            kept = await served.records.run(run_id)
            (status,) = await statuses(served.store, [run_id])
        except AgentTuiError as exc:
            raise ResourceError(clip(printable(exc.message), 300)) from None
        names = kept.tool_names
        outline = take_fitting(
            [f"{index} {record.name}: {clip(summary(record, names).replace(chr(10), ' '), 120)}"
             for index, record in enumerate(kept.records[:2000])],
            room // 2,
        )  # fmt: skip
        answer = fit({"status": status_line(status), "records": len(kept.records), "outline": outline}, room,
                     read_more="the tools run_records and read_record read the rest")  # fmt: skip
        return safe_json(answer)

"""A filter (``runs.selection.where``) as SQL over the shared run index's rows, so that a
selection is one query on the database, not every status in Python.

The SQL *narrows*; it never decides. Over a row whose status is its verdict's (no lease row, no
wake time: ``stores.postgres.run_index`` hands every other row back whatever the condition
says), each test compiles to the value the filter gives it, with SQL's NULL for ``UNKNOWN``:
SQL's ``AND``, ``OR`` and ``NOT`` over NULL are Kleene's, as the filter's are, and a ``WHERE``
keeps only TRUE, as ``matches`` does. A test the SQL cannot say exactly (a glob with a set,
``[...]``) compiles to a pair: what may match and what must, which ``not`` swaps. Every row the
query returns is then matched by the filter itself, on the status the rules make of it.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from agenttui.runs.selection.where import Condition, Where
from agenttui.runs.statuses.state import RunState

#: The columns of ``runs AS r`` a field reads (``stores.postgres.run_index.VERDICT_COLUMNS``).
_TEXT_COLUMNS = {"id": "r.run_id", "tool": "r.tool_name", "call": "r.tool_use_id", "interrupt": "r.interrupt_name"}
_NUMBER_COLUMNS = {"turns": "r.turns", "tokens": "r.tokens", "steps": "r.steps"}
_INT8 = (-(2**63), 2**63 - 1)


class _Params:
    """The parameters of one compiled condition, numbered from ``$1``."""

    def __init__(self, now_ms: int) -> None:
        self.args: list[object] = []
        self._now_ms = now_ms
        self._now = ""

    def param(self, value: object, cast: str) -> str:
        self.args.append(value)
        return f"${len(self.args)}::pg_catalog.{cast}"

    @property
    def now(self) -> str:
        """The time as a parameter, once, where a test reads it (an unused one has no type)."""
        if not self._now:
            self._now = self.param(self._now_ms, "int8")
        return self._now


class WhereSql(NamedTuple):
    """A filter as SQL over ``runs AS r`` (``where_sql``)."""

    settled: str
    """Holds for every row the filter may match whose status is its verdict's (no lease row, no
    wake time): exactly where it matches, but for globs with a set."""
    settled_args: list[object]
    """Its parameters, from ``$1``."""
    unsettled: str
    """Holds for every row the filter may match whatever its lease row and the clock make of it."""
    unsettled_args: list[object]
    """Its parameters, from ``$1``."""


def where_sql(where: Where, now_ms: int) -> WhereSql:
    """The SQL conditions over ``runs AS r`` that hold for every row ``where`` may match at
    ``now_ms`` (Unix ms), and their parameters."""
    settled = _Params(now_ms)
    settled_text, _ = _compiled(where.condition(), settled, settled=True)
    unsettled = _Params(now_ms)
    unsettled_text, _ = _compiled(where.condition(), unsettled, settled=False)
    return WhereSql(*_renumbered(settled_text, settled.args), *_renumbered(unsettled_text, unsettled.args))


#: A parameter as ``_Params.param`` writes it: its number, then its type.
_PLACEHOLDER = re.compile(r"\$(\d+)(?=::)")


def _renumbered(text: str, args: list[object]) -> tuple[str, list[object]]:
    """``text`` with only the parameters it uses, numbered from ``$1``: a test whose SQL a
    ``not`` left out still made its parameters, and the server refuses a parameter no statement
    uses (it cannot tell its type)."""
    used: dict[int, int] = {}
    for number in _PLACEHOLDER.findall(text):
        used.setdefault(int(number), len(used) + 1)
    renumbered = _PLACEHOLDER.sub(lambda found: f"${used[int(found.group(1))]}", text)
    return renumbered, [args[number - 1] for number in used]


def _compiled(condition: Condition, sql: _Params, *, settled: bool) -> tuple[str, str]:
    """(may, must): SQL that is TRUE where the condition may be TRUE, and only where it must;
    ``settled``, over rows whose status is their verdict's, else over rows whose lease row and
    the clock may change their state and clear their open call (``_leased``, ``_by_the_clock``)."""
    kind = condition[0]
    if kind == "everything":
        return "true", "true"
    if kind == "not":
        may, must = _compiled(condition[1], sql, settled=settled)  # type: ignore[arg-type]
        return f"(NOT {must})", f"(NOT {may})"
    if kind in ("all", "any"):
        parts = [_compiled(operand, sql, settled=settled) for operand in condition[1]]  # type: ignore[attr-defined]
        joiner = " AND " if kind == "all" else " OR "
        return f"({joiner.join(may for may, _ in parts)})", f"({joiner.join(must for _, must in parts)})"
    if not settled and (unsettled := _unsettled(condition, sql)) is not None:
        return unsettled
    exact = _test(condition, sql)
    return (exact, exact) if exact is not None else ("true", "false")


def _unsettled(condition: Condition, sql: _Params) -> tuple[str, str] | None:
    """(may, must) of a test a lease row or the clock may move, over a row they may move (None
    for a test they leave alone: its exact SQL holds). A live lease makes a run in flight and
    clears its open call; the clock makes a sleeping run ready; a lease row's holder is not in
    the index. Nothing is ever sure of such a row (``must`` false): the filter decides it."""
    kind, *rest = condition
    if kind == "flag":
        return ("true", "false") if rest[0] in ("leased", "lapsed") else None
    if kind != "text":
        return None
    field, op, values = rest
    if field == "lease":
        return "true", "false"
    if field in ("tool", "call", "interrupt"):  # only ever cleared: it may match only if it does now
        exact = _test(("text", field, "=", values), sql)
        may = exact if exact is not None else "true"
        return (may, "false") if op == "=" else ("true", f"(NOT {may})")
    if field != "status":
        return None
    states = {str(value) for value in values}  # type: ignore[attr-defined]
    possible = [f"(r.state = ANY({sql.param(sorted(states), 'text[]')}))"]
    if RunState.IN_FLIGHT.value in states:
        possible.append("true")
    if states & {RunState.SLEEPING.value, RunState.READY.value}:
        possible.append("(r.wake_at IS NOT NULL)")
    matched = f"({' OR '.join(possible)})"
    return (matched, "false") if op == "=" else ("true", f"(NOT {matched})")


def _test(condition: Condition, sql: _Params) -> str | None:
    """One test's SQL over a row decided by its verdict alone; None where it cannot say exactly."""
    kind, *rest = condition
    if kind == "flag":
        (name,) = rest
        return {
            "sub": "(r.run_id <> r.root_id)",
            "legacy": "r.legacy",
            "fork": "(r.state = 'fork')",
            "leased": "false",  # a row with a lease row is handed back whatever this says
            "lapsed": "false",
        }[str(name)]
    field, op, value = rest
    if kind == "text":
        return _text(str(field), str(op), tuple(str(v) for v in value), sql)  # type: ignore[attr-defined]
    if kind == "number":
        column = _NUMBER_COLUMNS[str(field)]
        number = int(value)  # type: ignore[call-overload]
        if not _INT8[0] <= number <= _INT8[1]:  # past the column's range: compared as numbers
            return f"({column}::pg_catalog.numeric {op} {sql.param(str(number), 'numeric')})"
        return f"({column} {op} {sql.param(number, 'int8')})"
    if kind == "interval":
        return _interval(str(field), str(op), int(value), sql)  # type: ignore[call-overload]
    raise AssertionError(f"a filter test of no known kind: {condition!r}")


def _text(field: str, op: str, values: tuple[str, ...], sql: _Params) -> str | None:
    if field == "status":
        matched = f"(r.state = ANY({sql.param(list(values), 'text[]')}))"
    elif field == "lease":
        matched = "false"  # no lease row: the holder is empty, which no pattern matches
    else:
        patterns = [_regex(value) for value in values]
        if any(pattern is None for pattern in patterns):
            return None
        column = _TEXT_COLUMNS[field]
        matched = f"({column} <> '' AND {column} ~ ANY({sql.param(patterns, 'text[]')}))"
    return matched if op == "=" else f"(NOT {matched})"


def _regex(pattern: str) -> str | None:
    """The POSIX regular expression that matches what ``fnmatch`` matches with ``pattern``
    (``*`` any text, ``?`` one character); None for one with a set (``[``), left to the filter."""
    if "[" in pattern:
        return None
    out = ["^"]
    for char in pattern:
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char.isalnum():
            out.append(char)
        else:
            out.append("\\" + char)  # an escaped non-alphanumeric stands for itself
    out.append("$")
    return "".join(out)


def _interval(field: str, op: str, bound: int, sql: _Params) -> str:
    """``runs.selection.where._interval_truth`` over the interval the row's times give: the
    idle time is ``now - latest`` exactly when the last record carries the latest time, at most
    that otherwise; the age is ``now - earliest`` exactly when the first carries the earliest,
    at least that otherwise; NULL times, NULL interval."""
    now = sql.now
    if field == "idle":
        low = f"(CASE WHEN r.last_is_latest THEN {now} - r.latest_ms END)"
        high = f"({now} - r.latest_ms)"
    else:
        low = f"({now} - r.earliest_ms)"
        high = f"(CASE WHEN r.first_is_earliest THEN {now} - r.earliest_ms END)"
    limit = sql.param(bound, "int8")
    sure, bounded = (low, high) if op in (">", ">=") else (high, low)
    return (
        f"(CASE WHEN {low} IS NOT NULL AND {low} = {high} THEN {low} {op} {limit}"
        f" WHEN {sure} IS NOT NULL AND {sure} {op} {limit} THEN true"
        f" WHEN {bounded} IS NOT NULL AND NOT ({bounded} {op} {limit}) THEN false END)"
    )

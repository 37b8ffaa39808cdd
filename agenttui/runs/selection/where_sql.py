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

from agenttui.runs.selection.where import Condition, Where

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


def where_sql(where: Where, now_ms: int) -> tuple[str, list[object]]:
    """The SQL condition over ``runs AS r`` that holds for every row ``where`` may match at
    ``now_ms`` (Unix ms), and its parameters."""
    sql = _Params(now_ms)
    may, _ = _compiled(where.condition(), sql)
    return may, sql.args


def _compiled(condition: Condition, sql: _Params) -> tuple[str, str]:
    """(may, must): SQL that is TRUE where the condition may be TRUE, and only where it must."""
    kind = condition[0]
    if kind == "everything":
        return "true", "true"
    if kind == "not":
        may, must = _compiled(condition[1], sql)  # type: ignore[arg-type]
        return f"(NOT {must})", f"(NOT {may})"
    if kind in ("all", "any"):
        parts = [_compiled(operand, sql) for operand in condition[1]]  # type: ignore[attr-defined]
        joiner = " AND " if kind == "all" else " OR "
        return f"({joiner.join(may for may, _ in parts)})", f"({joiner.join(must for _, must in parts)})"
    exact = _test(condition, sql)
    return (exact, exact) if exact is not None else ("true", "false")


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

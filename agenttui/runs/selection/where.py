"""The filter language for runs (``status=halted and tool=refund_payment and idle<2h``): parsed
once into a ``Where``, then asked of each run's status, in three-valued logic.

A run's times are known only as far as its records carry them (docs/decisions.md, "Times of a
run"): a comparison its times cannot decide is ``UNKNOWN``, ``and``/``or``/``not`` follow
Kleene's logic, and ``matches`` is true only for ``TRUE``: a bulk action never touches a run
because of a time nobody knows. docs/guide/filters.md lists the fields.
"""

from __future__ import annotations

import difflib
import enum
import fnmatch
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import TYPE_CHECKING

from agenttui.errors import AgentTuiError
from agenttui.journal.keys import root_run_id
from agenttui.runs.statuses.state import RunState

if TYPE_CHECKING:
    from agenttui.runs.statuses.status import RunStatus


class WhereError(AgentTuiError):
    """A filter that does not parse. ``position`` is the 0-based offset of the character where
    the problem is (the message says ``at column position + 1``)."""

    title = "Bad filter"

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"at column {position + 1}: {message}")
        self.position = position


class Truth(enum.IntEnum):
    """Kleene's three truth values, ordered so that ``and`` is the least and ``or`` the greatest."""

    FALSE = 0
    UNKNOWN = 1
    TRUE = 2

    def negated(self) -> Truth:
        return Truth(2 - self)


def parse_where(text: str) -> Where:
    """The filter ``text`` says; raises ``WhereError`` (one line: where, what is wrong, what is
    accepted there). An empty or blank text matches every run."""
    return Where(text)


@dataclass(frozen=True)
class Where:
    """A parsed filter over run statuses."""

    text: str
    """The filter as typed."""
    _root: _Node = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_root", _Parser(self.text).parse())

    def verdict(self, status: RunStatus, now: datetime) -> Truth:
        """Whether ``status`` matches at ``now`` (aware, UTC): TRUE, FALSE, or UNKNOWN when it
        depends on what the run's records do not say (a time, a lease row that could not be read)."""
        return self._root.verdict(status, unix_ms(now))

    def matches(self, status: RunStatus, now: datetime) -> bool:
        """True only when the run surely matches (``verdict`` is TRUE)."""
        return self._root.verdict(status, unix_ms(now)) is Truth.TRUE

    def matcher(self, now: datetime) -> Callable[[RunStatus], bool]:
        """``matches`` at ``now``, as a predicate of a status alone: a list that asks it of
        100,000 rows converts ``now`` once, not once a row."""
        root, now_ms = self._root, unix_ms(now)
        return lambda status: root.verdict(status, now_ms) is Truth.TRUE

    @property
    def uses_time(self) -> bool:
        """Whether the filter mentions ``idle`` or ``age`` (its verdicts change with ``now``)."""
        return self._root.uses_time

    def condition(self) -> Condition:
        """The filter as plain data, for a store that narrows a selection itself
        (``runs.selection.where_sql``): ``("all", (c, ...))``, ``("any", (c, ...))``,
        ``("not", c)``, ``("everything",)``, ``("flag", name)``, ``("text", field, op, values)``
        (statuses or glob patterns), ``("number", field, op, n)``, ``("interval", field, op, ms)``."""
        return self._root.condition()


#: A filter as plain data (``Where.condition``).
Condition = tuple[object, ...]


def looks_like_where(text: str) -> bool:
    """Whether ``text`` means to be a filter rather than words to find: it holds an operator, a
    parenthesis or a quote, or a word that names a field, a flag or a keyword. A search box
    reads other text as plain words (``a1004``, ``halted``)."""
    if any(c in _SPECIAL for c in text):
        return True
    return any(word.lower() in _NAMES for word in text.split())


# -- the tree ---------------------------------------------------------------------------------


class _Node:
    uses_time = False

    def verdict(self, status: RunStatus, now_ms: int) -> Truth:
        raise NotImplementedError

    def condition(self) -> Condition:
        raise NotImplementedError


class _Everything(_Node):
    def verdict(self, status: RunStatus, now_ms: int) -> Truth:
        return Truth.TRUE

    def condition(self) -> Condition:
        return ("everything",)


@dataclass(frozen=True)
class _Not(_Node):
    operand: _Node

    def verdict(self, status: RunStatus, now_ms: int) -> Truth:
        return self.operand.verdict(status, now_ms).negated()

    def condition(self) -> Condition:
        return ("not", self.operand.condition())

    @property
    def uses_time(self) -> bool:  # type: ignore[override]  # a property over the class default
        return self.operand.uses_time


@dataclass(frozen=True)
class _All(_Node):
    operands: tuple[_Node, ...]

    def verdict(self, status: RunStatus, now_ms: int) -> Truth:
        result = Truth.TRUE
        for operand in self.operands:
            truth = operand.verdict(status, now_ms)
            if truth is Truth.FALSE:
                return truth  # one false operand decides, whatever the rest would say
            result = min(result, truth)
        return result

    def condition(self) -> Condition:
        return ("all", tuple(operand.condition() for operand in self.operands))

    @property
    def uses_time(self) -> bool:  # type: ignore[override]  # a property over the class default
        return any(operand.uses_time for operand in self.operands)


@dataclass(frozen=True)
class _Any(_Node):
    operands: tuple[_Node, ...]

    def verdict(self, status: RunStatus, now_ms: int) -> Truth:
        result = Truth.FALSE
        for operand in self.operands:
            truth = operand.verdict(status, now_ms)
            if truth is Truth.TRUE:
                return truth
            result = max(result, truth)
        return result

    def condition(self) -> Condition:
        return ("any", tuple(operand.condition() for operand in self.operands))

    @property
    def uses_time(self) -> bool:  # type: ignore[override]  # a property over the class default
        return any(operand.uses_time for operand in self.operands)


@dataclass(frozen=True)
class _Test(_Node):
    """A leaf: a comparison or a flag, as a function of the status and the time in Unix ms."""

    test: Callable[[RunStatus, int], Truth]
    spec: Condition
    """What it tests, as plain data (``Where.condition``)."""
    uses_time: bool = False

    def verdict(self, status: RunStatus, now_ms: int) -> Truth:
        return self.test(status, now_ms)

    def condition(self) -> Condition:
        return self.spec


def _truth(value: bool) -> Truth:
    return Truth.TRUE if value else Truth.FALSE


# -- fields -----------------------------------------------------------------------------------

_EQUALITY = ("=", "!=")
_ORDER = ("=", "!=", ">", ">=", "<", "<=")
_INTERVAL = (">", ">=", "<", "<=")

#: Each field's canonical name, by every name it answers to.
_FIELD_NAMES = {
    "status": "status",
    "state": "status",
    "id": "id",
    "run": "id",
    "tool": "tool",
    "call": "call",
    "interrupt": "interrupt",
    "lease": "lease",
    "turns": "turns",
    "tokens": "tokens",
    "steps": "steps",
    "idle": "idle",
    "age": "age",
}
_FIELDS = ("status", "id", "tool", "call", "interrupt", "lease", "turns", "tokens", "steps", "idle", "age")
_OPERATORS = {
    "status": _EQUALITY,
    "id": _EQUALITY,
    "tool": _EQUALITY,
    "call": _EQUALITY,
    "interrupt": _EQUALITY,
    "lease": _EQUALITY,
    "turns": _ORDER,
    "tokens": _ORDER,
    "steps": _ORDER,
    "idle": _INTERVAL,
    "age": _INTERVAL,
}
_FLAGS = ("sub", "legacy", "fork", "leased", "lapsed")
_KEYWORDS = ("and", "or", "not")
_NAMES = frozenset(_FIELD_NAMES) | frozenset(_FLAGS) | frozenset(_KEYWORDS)
_SPECIAL = frozenset("=!<>()'\"")
#: What ends a name (a field, a flag, a keyword).
_NAME_ENDS = frozenset("=!<>(),'\"")
#: What ends a bare value.
_VALUE_ENDS = frozenset("(),'\"")

_CONDITIONS = "conditions: FIELD OP VALUE, a flag (" + ", ".join(_FLAGS) + "), not, ("
_FIELD_LIST = "fields: " + ", ".join(_FIELDS) + "; flags: " + ", ".join(_FLAGS)
_STATES = "statuses: " + ", ".join(state.value for state in RunState)
_NUMBERS = "numbers: whole numbers, as 42, 10k, 1.5M"
_DURATIONS = "durations: numbers with a unit s, m, h, d or w, as 30s, 15m, 2h, 1h30m"


def _flag(name: str) -> _Test:
    tests: dict[str, Callable[[RunStatus, int], Truth]] = {
        "sub": lambda s, _: _truth(root_run_id(s.run_id) != s.run_id),
        "legacy": lambda s, _: _truth(s.legacy),
        "fork": lambda s, _: _truth(s.state is RunState.FORK),
        "leased": lambda s, _: Truth.UNKNOWN if s.lease_unknown else _truth(bool(s.lease_holder)),
        "lapsed": lambda s, _: Truth.UNKNOWN if s.lease_unknown else _truth(s.lease_lapsed),
    }
    return _Test(tests[name], ("flag", name))


def _glob_test(
    read: Callable[[RunStatus], str], patterns: Sequence[str], *, lease: bool = False
) -> Callable[[RunStatus, int], Truth]:
    """Whether what ``read`` gives matches any pattern; an empty value (the run waits on nothing)
    matches none. With ``lease``, UNKNOWN when the lease table could not be read."""
    compiled = [re.compile(fnmatch.translate(pattern)) for pattern in patterns]

    def test(status: RunStatus, _: int) -> Truth:
        if lease and status.lease_unknown:
            return Truth.UNKNOWN
        value = read(status)
        return _truth(bool(value) and any(p.match(value) for p in compiled))

    return test


def _compare(op: str, value: int, bound: int) -> bool:
    if op == "=":
        return value == bound
    if op == "!=":
        return value != bound
    if op == ">":
        return value > bound
    if op == ">=":
        return value >= bound
    if op == "<":
        return value < bound
    return value <= bound


def _interval_truth(op: str, low: int | None, high: int | None, bound: int) -> Truth:
    """``x OP bound`` where x is only known to lie in [low, high] (None: unbounded that way)."""
    if low is not None and high is not None and low == high:
        return _truth(_compare(op, low, bound))
    if op in (">", ">="):
        if low is not None and _compare(op, low, bound):
            return Truth.TRUE
        if high is not None and not _compare(op, high, bound):
            return Truth.FALSE
    else:
        if high is not None and _compare(op, high, bound):
            return Truth.TRUE
        if low is not None and not _compare(op, low, bound):
            return Truth.FALSE
    return Truth.UNKNOWN


def idle_interval(status: RunStatus, now_ms: int) -> tuple[int | None, int | None]:
    """How long the run has been idle, in ms, as [low, high] (None: unknown that way): exactly
    ``now - latest`` when its last record carries its latest time, at most that otherwise (later
    records came after it), unknown when no record carries a time."""
    times = status.times
    if times is None:
        return None, None
    idle = now_ms - times.latest_ms
    return (idle if times.last_is_latest else None), idle


def age_interval(status: RunStatus, now_ms: int) -> tuple[int | None, int | None]:
    """How long ago the run began, in ms, as [low, high]: exactly ``now - earliest`` when its
    first record carries its earliest time, at least that otherwise, unknown with no time."""
    times = status.times
    if times is None:
        return None, None
    age = now_ms - times.earliest_ms
    return age, (age if times.first_is_earliest else None)


# -- parsing ----------------------------------------------------------------------------------


#: How deep a filter may nest: far past what a person writes, short of Python's recursion limit.
MOST_NESTED = 50


class _Parser:
    """Recursive descent over the text, character by character (the lexer needs to know whether
    it reads a name or a value: a value may hold ``>``, as a sub-run's id does)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self.depth = 0
        """How many parentheses and ``not``s the cursor is inside (at most ``MOST_NESTED``)."""

    def _deeper(self) -> None:
        self.depth += 1
        if self.depth > MOST_NESTED:
            raise WhereError(f"nested deeper than {MOST_NESTED} parentheses or 'not's", self.at)

    def parse(self) -> _Node:
        self._skip()
        if self.at == len(self.text):
            return _Everything()
        node = self._or()
        self._skip()
        if self.at < len(self.text):
            if self.text[self.at] == ")":
                raise WhereError("')' closes nothing; expected a condition, and, or, or the end", self.at)
            raise WhereError(f"unexpected {self._shown()}; expected a condition, and, or, or the end", self.at)
        return node

    # -- characters

    def _skip(self) -> None:
        text, at = self.text, self.at
        while at < len(text) and text[at].isspace():
            at += 1
        self.at = at

    def _peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def _shown(self) -> str:
        """The character at the cursor, quoted for a message."""
        char = self._peek()
        return "the end" if not char else repr(char)

    def _name_at(self) -> str:
        """The name starting at the cursor (not consumed), lowercased; "" if none starts here."""
        end = self.at
        text = self.text
        while end < len(text) and not text[end].isspace() and text[end] not in _NAME_ENDS:
            end += 1
        return text[self.at : end]

    def _keyword(self, word: str) -> bool:
        """Consume keyword ``word`` if it is next."""
        self._skip()
        name = self._name_at()
        if name.lower() == word:
            self.at += len(name)
            return True
        return False

    # -- grammar: or > and (or juxtaposition) > not > condition

    def _or(self) -> _Node:
        operands = [self._and()]
        while self._keyword("or"):
            operands.append(self._condition_after("or"))
        return operands[0] if len(operands) == 1 else _Any(tuple(operands))

    def _and(self) -> _Node:
        operands = [self._not()]
        while True:
            self._skip()
            char = self._peek()
            if not char or char == ")" or self._name_at().lower() == "or":
                break
            if self._keyword("and"):
                operands.append(self._condition_after("and"))
            else:
                operands.append(self._not())
        return operands[0] if len(operands) == 1 else _All(tuple(operands))

    def _condition_after(self, keyword: str) -> _Node:
        self._skip()
        if self.at == len(self.text) or self._peek() == ")":
            raise WhereError(f"expected a condition after {keyword!r}, found {self._shown()}; {_CONDITIONS}", self.at)
        return self._and() if keyword == "or" else self._not()

    def _not(self) -> _Node:
        if self._keyword("not"):
            self._skip()
            if self.at == len(self.text) or self._peek() == ")":
                raise WhereError(f"expected a condition after 'not', found {self._shown()}; {_CONDITIONS}", self.at)
            self._deeper()
            node = _Not(self._not())
            self.depth -= 1
            return node
        return self._primary()

    def _primary(self) -> _Node:
        self._skip()
        start = self.at
        char = self._peek()
        if char == "(":
            self.at += 1
            self._skip()
            if self._peek() == ")":
                raise WhereError(f"empty parentheses; {_CONDITIONS}", self.at)
            if not self._peek():
                raise WhereError(f"expected a condition after '(', found the end; {_CONDITIONS}", self.at)
            self._deeper()
            node = self._or()
            self.depth -= 1
            self._skip()
            if self._peek() != ")":
                raise WhereError(f"expected ')' to close the '(' at column {start + 1}, found {self._shown()}; {_CONDITIONS}, and, or, )", self.at)  # fmt: skip
            self.at += 1
            return node
        name = self._name_at()
        if not name:
            what = "')' closes nothing" if char == ")" else f"expected a condition, found {self._shown()}"
            raise WhereError(f"{what}; {_CONDITIONS}", start)
        word = name.lower()
        if word in ("and", "or"):
            raise WhereError(f"{word!r} needs a condition before it; {_CONDITIONS}", start)
        self.at += len(name)
        if word in _FLAGS:
            self._skip()
            if self._peek() in ("=", "!", "<", ">"):
                raise WhereError(f"the flag {word!r} takes no operator; write {word} or not {word}", self.at)
            return _flag(word)
        canonical = _FIELD_NAMES.get(word)
        if canonical is None:
            near = difflib.get_close_matches(word, list(_FIELD_NAMES) + list(_FLAGS), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise WhereError(f"unknown field {name!r}{hint}; {_FIELD_LIST}", start)
        return self._comparison(name, canonical)

    def _comparison(self, name: str, field_name: str) -> _Node:
        self._skip()
        accepted = _OPERATORS[field_name]
        accepted_text = "operators for " + field_name + ": " + ", ".join(accepted)
        op_at = self.at
        op = next((o for o in (">=", "<=", "!=", "=", ">", "<") if self.text.startswith(o, self.at)), "")
        if not op:
            raise WhereError(f"expected an operator after {name!r}, found {self._shown()}; {accepted_text}", op_at)
        if op not in accepted:
            raise WhereError(f"{field_name!r} takes no {op!r}; {accepted_text}", op_at)
        self.at += len(op)
        if field_name in ("status", "id", "tool", "call", "interrupt", "lease"):
            values = self._values(f"{name}{op}", field_name)
            return _Test(self._text_test(field_name, op, values), ("text", field_name, op, tuple(v for v, _ in values)))
        self._skip()
        value_at = self.at
        value = self._value(f"{name}{op}", field_name)
        if field_name in ("idle", "age"):
            bound = _duration_ms(value, value_at)
            reader = idle_interval if field_name == "idle" else age_interval
            return _Test(
                lambda s, now: _interval_truth(op, *reader(s, now), bound),
                ("interval", field_name, op, bound),
                uses_time=True,
            )
        number = _number(value, value_at)
        member = field_name
        return _Test(lambda s, _: _truth(_compare(op, getattr(s, member), number)), ("number", member, op, number))

    def _text_test(self, field_name: str, op: str, values: list[tuple[str, int]]) -> Callable[[RunStatus, int], Truth]:
        if field_name == "status":
            states = set()
            for value, at in values:
                try:
                    states.add(RunState(value))
                except ValueError:
                    near = difflib.get_close_matches(value, [s.value for s in RunState], n=1)
                    hint = f" (did you mean {near[0]!r}?)" if near else ""
                    raise WhereError(f"unknown status {value!r}{hint}; {_STATES}", at) from None
            frozen = frozenset(states)
            test: Callable[[RunStatus, int], Truth] = lambda s, _: _truth(s.state in frozen)  # noqa: E731
        else:
            patterns = [value for value, _ in values]
            readers: dict[str, Callable[[RunStatus], str]] = {
                "id": lambda s: s.run_id,
                "tool": lambda s: s.tool_name,
                "call": lambda s: s.tool_use_id,
                "interrupt": lambda s: s.interrupt_name,
                "lease": lambda s: s.lease_holder,
            }
            test = _glob_test(readers[field_name], patterns, lease=field_name == "lease")
        if op == "=":
            return test
        return lambda s, now: test(s, now).negated()

    def _values(self, after: str, field_name: str) -> list[tuple[str, int]]:
        """A comma list of values, each with its offset."""
        values = []
        while True:
            self._skip()
            at = self.at
            value = self._value(after, field_name)
            values.append((value, at))
            self._skip()
            if self._peek() != ",":
                return values
            self.at += 1
            after = ","

    def _value(self, after: str, field_name: str) -> str:
        """One value, bare or quoted with ' or " (nothing is escaped: the other quote quotes one)."""
        self._skip()
        start = self.at
        char = self._peek()
        if char in ("'", '"'):
            end = self.text.find(char, start + 1)
            if end < 0:
                raise WhereError(f"the quote {char} is never closed; end the value with {char}", start)
            self.at = end + 1
            return self.text[start + 1 : end]
        text = self.text
        end = start
        while end < len(text) and not text[end].isspace() and text[end] not in _VALUE_ENDS:
            end += 1
        value = text[start:end]
        if not value:
            raise WhereError(f"expected a value after {after!r}, found {self._shown()}; {_accepted(field_name)}", start)
        if value[0] in "=!<>":
            raise WhereError(f"a value cannot start with {value[0]!r}; quote it, as '{value}'", start)
        self.at = end
        return value


def _accepted(field_name: str) -> str:
    if field_name == "status":
        return _STATES
    if field_name in ("idle", "age"):
        return _DURATIONS
    if field_name in ("turns", "tokens", "steps"):
        return _NUMBERS
    return "a glob (* ? [...]) or a comma list of them; quote one with spaces or commas"


_NUMBER = re.compile(r"(\d+(?:\.\d+)?)([kKmMgG]?)")
_MULTIPLIERS = {"": 1, "k": 1000, "m": 1000_000, "g": 1000_000_000}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)([smhdwSMHDW])")
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


def _number(value: str, at: int) -> int:
    match = _NUMBER.fullmatch(value)
    if match is None:
        raise WhereError(f"{value!r} is not a number; {_NUMBERS}", at)
    number = Fraction(match[1]) * _MULTIPLIERS[match[2].lower()]
    if number.denominator != 1:
        raise WhereError(f"{value!r} is not a whole number; {_NUMBERS}", at)
    return int(number)


def _duration_ms(value: str, at: int) -> int:
    parts = []
    end = 0
    for match in _DURATION_PART.finditer(value):
        if match.start() != end:
            break
        parts.append(match)
        end = match.end()
    if not parts or end != len(value):
        hint = " (a duration needs a unit)" if _NUMBER.fullmatch(value) and not value[-1].isalpha() else ""
        raise WhereError(f"{value!r} is not a duration{hint}; {_DURATIONS}", at + end)
    total = sum(Fraction(m[1]) * _UNIT_MS[m[2].lower()] for m in parts)
    return int(total)  # to the millisecond below: a bound finer than that says nothing more


def unix_ms(now: datetime) -> int:
    """``now`` in Unix milliseconds, exactly (a float timestamp loses the last ones)."""
    return (now - _EPOCH) // timedelta(milliseconds=1)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

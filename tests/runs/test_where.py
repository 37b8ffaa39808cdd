"""The filter language (``runs.where``): random filters printed as a person might type them,
parsed, and judged against a reference written here; malformed text; the messages of typos."""

from __future__ import annotations

import fnmatch
import operator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agenttui.runs.selection.where import Truth, WhereError, looks_like_where, parse_where
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import RunStatus, RunTimes

# -- the reference: a filter as a tree, printed, and judged the plain way ------------------------

T, F, U = "T", "F", "U"
Verdict = str  # T, F or U
KLEENE_NOT: dict[Verdict, Verdict] = {T: F, F: T, U: U}


def kleene_and(a: Verdict, b: Verdict) -> Verdict:
    if F in (a, b):
        return F
    if U in (a, b):
        return U
    return T


def kleene_or(a: Verdict, b: Verdict) -> Verdict:
    if T in (a, b):
        return T
    if U in (a, b):
        return U
    return F


@dataclass(frozen=True)
class Cmp:
    name: str  # as typed: any case, any alias
    op: str
    values: tuple[object, ...]  # str for text fields, int for counts, ms for durations


@dataclass(frozen=True)
class Flag:
    name: str


@dataclass(frozen=True)
class Not:
    operand: Node


@dataclass(frozen=True)
class And:
    operands: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    operands: tuple[Node, ...]


Node = Cmp | Flag | Not | And | Or

OPS = {"=": operator.eq, "!=": operator.ne, ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
TEXT_MEMBERS = {
    "id": "run_id",
    "run": "run_id",
    "tool": "tool_name",
    "call": "tool_use_id",
    "interrupt": "interrupt_name",
    "lease": "lease_holder",
}


def reference(node: Node, s: RunStatus, now_ms: int) -> Verdict:
    """The filter's verdict, as docs/guide/filters.md states it, the long way."""
    if isinstance(node, Not):
        return KLEENE_NOT[reference(node.operand, s, now_ms)]
    if isinstance(node, And):
        verdict: Verdict = T
        for operand in node.operands:
            verdict = kleene_and(verdict, reference(operand, s, now_ms))
        return verdict
    if isinstance(node, Or):
        verdict = F
        for operand in node.operands:
            verdict = kleene_or(verdict, reference(operand, s, now_ms))
        return verdict
    if isinstance(node, Flag):
        name = node.name.lower()
        if name == "sub":  # a session's turn (``id>@turn/n``) is a root of its own
            parts = s.run_id.split(">")
            session_turn = len(parts) > 1 and parts[1].startswith(("@turn/", "@event/"))
            return T if len(parts) > (2 if session_turn else 1) else F
        if name == "legacy":
            return T if s.legacy else F
        if name == "fork":
            return T if s.state == RunState.FORK else F
        if s.lease_unknown:
            return U
        return T if (s.lease_holder if name == "leased" else s.lease_lapsed) else F
    name = node.name.lower()
    if name in ("status", "state"):
        found = s.state.value in node.values
        return T if found == (node.op == "=") else F
    if name in TEXT_MEMBERS:
        if name == "lease" and s.lease_unknown:
            return U
        value = getattr(s, TEXT_MEMBERS[name])
        found = value != "" and any(fnmatch.fnmatchcase(value, str(p)) for p in node.values)
        return T if found == (node.op == "=") else F
    (bound,) = node.values
    assert isinstance(bound, int)
    if name in ("turns", "tokens", "steps"):
        return T if OPS[node.op](getattr(s, name), bound) else F
    # idle and age: the values the run's times allow lie in [low, high]; the comparison is
    # monotone, so its ends decide it, or it is unknown.
    low: float
    high: float
    if s.times is None:
        low, high = float("-inf"), float("inf")
    elif name == "idle":
        high = now_ms - s.times.latest_ms
        low = high if s.times.last_is_latest else float("-inf")
    else:
        low = now_ms - s.times.earliest_ms
        high = low if s.times.first_is_earliest else float("inf")
    at_low, at_high = OPS[node.op](low, bound), OPS[node.op](high, bound)
    return (T if at_low else F) if at_low == at_high else U


# -- printing -------------------------------------------------------------------------------------

FIELD_SPELLINGS = {
    "status": ["status", "state", "STATUS", "State"],
    "id": ["id", "run", "ID", "Run"],
    "tool": ["tool", "TOOL"],
    "call": ["call", "Call"],
    "interrupt": ["interrupt", "INTERRUPT"],
    "lease": ["lease", "Lease"],
    "turns": ["turns", "TURNS"],
    "tokens": ["tokens", "Tokens"],
    "steps": ["steps"],
    "idle": ["idle", "IDLE"],
    "age": ["age", "Age"],
}
FLAGS = ["sub", "legacy", "fork", "leased", "lapsed", "SUB", "Legacy", "LEASED"]
#: Characters of ids and names: glob specials, a sub-run's ">", quotes, a space and a comma.
NAME_CHARS = "ab*?[]!>-_ ,'\"/@"
NAMES = st.text(alphabet=NAME_CHARS, min_size=0, max_size=5)
BARE_UNSAFE = set(" ,()'\"")


def print_value(draw: st.DrawFn, value: str) -> str:
    bare_ok = value and not (set(value) & BARE_UNSAFE) and value[0] not in "=!<>"
    if bare_ok and draw(st.booleans()):
        return value
    quote = "'" if "'" not in value else '"'
    return quote + value + quote


def print_count(draw: st.DrawFn, n: int) -> str:
    forms = [str(n)]
    if n % 1000 == 0:
        forms.append(f"{n // 1000}{draw(st.sampled_from('kK'))}")
    if n % 100 == 0 and n >= 1000:
        forms.append(f"{n // 1000}.{n % 1000 // 100}k")
    if n % 100_000 == 0 and n > 0:
        forms.append(f"{n // 1_000_000}.{n % 1_000_000 // 100_000}{draw(st.sampled_from('mM'))}")
    return draw(st.sampled_from(forms))


UNITS = {"w": 604_800_000, "d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000}


def print_node(draw: st.DrawFn, node: Node) -> str:
    def space() -> str:
        return draw(st.sampled_from(["", " ", "  ", "\t"]))

    def gap() -> str:
        return draw(st.sampled_from([" ", "  ", "\t", " \n "]))

    def keyword(word: str) -> str:
        return draw(st.sampled_from([word, word.upper(), word.capitalize()]))

    def wrapped(child: Node) -> str:
        text = print_node(draw, child)
        if isinstance(child, (And, Or)) or (draw(st.booleans()) and draw(st.booleans())):
            return "(" + space() + text + space() + ")"
        return text

    if isinstance(node, Flag):
        return node.name
    if isinstance(node, Not):
        return keyword("not") + gap() + wrapped(node.operand)
    if isinstance(node, And):
        out = wrapped(node.operands[0])
        for operand in node.operands[1:]:
            joiner = gap() if draw(st.booleans()) else gap() + keyword("and") + gap()
            out += joiner + wrapped(operand)
        return out
    if isinstance(node, Or):
        return (gap() + keyword("or") + gap()).join(wrapped(o) for o in node.operands)
    name = node.name.lower()
    canonical = "status" if name == "state" else "id" if name == "run" else name
    if canonical in ("turns", "tokens", "steps"):
        (n,) = node.values
        assert isinstance(n, int)
        printed = print_count(draw, n)
    elif canonical in ("idle", "age"):
        (ms,) = node.values
        assert isinstance(ms, int)
        printed = print_duration(draw, ms)
    else:
        printed = (space() + "," + space()).join(print_value(draw, str(v)) for v in node.values)
    return node.name + space() + node.op + space() + printed


def print_duration(draw: st.DrawFn, ms: int) -> str:
    parts, left = [], ms // 1000
    for unit, size in UNITS.items():
        count, left = divmod(left, size // 1000)
        if count:
            parts.append(f"{count}{draw(st.sampled_from([unit, unit.upper()]))}")
    return "".join(parts) or "0s"


# -- strategies -----------------------------------------------------------------------------------


@st.composite
def comparisons(draw: st.DrawFn) -> Cmp:
    canonical = draw(st.sampled_from(list(FIELD_SPELLINGS)))
    name = draw(st.sampled_from(FIELD_SPELLINGS[canonical]))
    if canonical == "status":
        values = tuple(draw(st.lists(st.sampled_from([s.value for s in RunState]), min_size=1, max_size=3)))
        return Cmp(name, draw(st.sampled_from(["=", "!="])), values)
    if canonical in ("id", "tool", "call", "interrupt", "lease"):
        # A quoted value may be anything but a mix of both quotes; a bare one never empty.
        value = NAMES.filter(lambda v: not ("'" in v and '"' in v))
        return Cmp(name, draw(st.sampled_from(["=", "!="])), tuple(draw(st.lists(value, min_size=1, max_size=3))))
    if canonical in ("turns", "tokens", "steps"):
        n = draw(st.one_of(st.integers(0, 30), st.sampled_from([1000, 1500, 10_000, 2_000_000, 1_500_000])))
        return Cmp(name, draw(st.sampled_from(list(OPS))), (n,))
    seconds = draw(st.sampled_from([0, 1, 30, 60, 90, 3600, 5400, 7200, 86_400, 90_061, 604_800]))
    return Cmp(name, draw(st.sampled_from([">", ">=", "<", "<="])), (seconds * 1000,))


def filters() -> st.SearchStrategy[Node]:
    leaves: st.SearchStrategy[Node] = st.one_of(comparisons(), st.sampled_from(FLAGS).map(Flag))
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            children.map(Not),
            st.lists(children, min_size=2, max_size=3).map(lambda c: And(tuple(c))),
            st.lists(children, min_size=2, max_size=3).map(lambda c: Or(tuple(c))),
        ),
        max_leaves=8,
    )


NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
NOW_MS = int(NOW.timestamp()) * 1000


@st.composite
def run_times(draw: st.DrawFn) -> RunTimes | None:
    if draw(st.booleans()) and draw(st.booleans()):
        return None
    # Ages around the bounds the filters use: exactly on them too.
    ago = st.sampled_from([0, 1, 29, 30, 31, 60, 90, 3599, 3600, 5400, 7200, 7201, 86_400, 700_000]).map(
        lambda s: NOW_MS - s * 1000
    )
    a, b = draw(ago), draw(ago)
    return RunTimes(min(a, b), max(a, b), draw(st.booleans()), draw(st.booleans()))


@st.composite
def statuses(draw: st.DrawFn) -> RunStatus:
    waits = draw(st.booleans())
    lease_unknown = draw(st.booleans()) and draw(st.booleans())
    holder = "" if lease_unknown else draw(NAMES)
    return RunStatus(
        draw(st.text(alphabet=NAME_CHARS, min_size=1, max_size=6) | st.sampled_from(["a>@turn/1", "a>b", "a"])),
        draw(st.sampled_from(list(RunState))),
        tool_name=draw(NAMES) if waits else "",
        tool_use_id=draw(NAMES) if waits else "",
        interrupt_name=draw(NAMES) if waits else "",
        lease_holder=holder,
        lease_lapsed=not holder and not lease_unknown and draw(st.booleans()),
        lease_unknown=lease_unknown,
        legacy=draw(st.booleans()),
        steps=draw(st.integers(0, 40)),
        turns=draw(st.sampled_from([0, 3, 999, 1000, 1001, 1500, 10_000])),
        tokens=draw(st.sampled_from([0, 1_499_999, 1_500_000, 2_000_001])),
        times=draw(run_times()),
    )


def uses_time(node: Node) -> bool:
    if isinstance(node, Cmp):
        return node.name.lower() in ("idle", "age")
    if isinstance(node, Flag):
        return False
    if isinstance(node, Not):
        return uses_time(node.operand)
    return any(uses_time(o) for o in node.operands)


@st.composite
def printed_filters(draw: st.DrawFn) -> tuple[Node, str]:
    node = draw(filters())
    return node, draw(st.sampled_from(["", " ", "\n"])) + print_node(draw, node) + draw(st.sampled_from(["", " "]))


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(printed_filters(), st.lists(statuses(), min_size=1, max_size=8))
def test_verdicts_agree_with_the_reference(printed: tuple[Node, str], runs: list[RunStatus]) -> None:
    node, text = printed
    where = parse_where(text)
    assert where.text == text
    assert where.uses_time == uses_time(node)
    for status in runs:
        expected = reference(node, status, NOW_MS)
        verdict = where.verdict(status, NOW)
        assert verdict is {T: Truth.TRUE, F: Truth.FALSE, U: Truth.UNKNOWN}[expected], (text, status)
        assert where.matches(status, NOW) == (expected == T)


LANGUAGE = "status=halted,ready id!='a b' tool call idle<>2h30m age>=1d turns 10k and or not ()\"'!,"


@settings(max_examples=600)
@given(st.text(alphabet=LANGUAGE, max_size=40) | st.text(max_size=20))
def test_any_text_parses_or_says_where_it_goes_wrong(text: str) -> None:
    try:
        parse_where(text)
    except WhereError as error:
        assert 0 <= error.position <= len(text)
        assert error.message.startswith(f"at column {error.position + 1}: ")
        assert "\n" not in error.message and error.title == "Bad filter"


@given(printed_filters(), st.integers(0, 200))
def test_a_cut_filter_parses_or_says_where(printed: tuple[Node, str], cut: int) -> None:
    text = printed[1][: cut % (len(printed[1]) + 1)]
    try:
        parse_where(text)
    except WhereError as error:
        assert 0 <= error.position <= len(text)


# -- examples -------------------------------------------------------------------------------------

INCIDENT = "status=halted and tool=refund_payment and idle<2h"


def halted(idle_minutes: int | None, *, exact: bool = True, tool: str = "refund_payment") -> RunStatus:
    times = None
    if idle_minutes is not None:
        at = NOW_MS - idle_minutes * 60_000
        times = RunTimes(at - 3_600_000, at, first_is_earliest=False, last_is_latest=exact)
    return RunStatus("r", RunState.HALTED, tool_name=tool, tool_use_id="toolu_1", times=times)


def test_the_incident_filter() -> None:
    where = parse_where(INCIDENT)
    assert where.matches(halted(30), NOW)
    assert not where.matches(halted(150), NOW)
    assert not where.matches(halted(30, tool="charge"), NOW)
    assert where.verdict(halted(None), NOW) is Truth.UNKNOWN and not where.matches(halted(None), NOW)
    # Idle at most 30 minutes (records came after the marker): surely under two hours.
    assert where.matches(halted(30, exact=False), NOW)
    # Idle at most 150 minutes: maybe under two hours, maybe not.
    assert where.verdict(halted(150, exact=False), NOW) is Truth.UNKNOWN


def test_not_never_selects_a_run_whose_time_is_unknown() -> None:
    where = parse_where("not idle>2h")
    assert where.verdict(halted(None), NOW) is Truth.UNKNOWN
    assert not where.matches(halted(None), NOW)
    assert not where.matches(halted(150, exact=False), NOW)
    assert where.matches(halted(30), NOW) and where.matches(halted(30, exact=False), NOW)


def test_an_empty_filter_matches_every_run() -> None:
    for text in ("", "  \t"):
        where = parse_where(text)
        assert where.matches(RunStatus("x", RunState.UNREADABLE), NOW) and not where.uses_time


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("status=halted,awaiting-approval", [True, True, False]),
        ("state!=halted", [False, True, True]),
        ("STATUS = halted  OR  status=complete", [True, False, True]),
        ("id=r-*", [True, True, False]),
        ("run='r-1'", [True, False, False]),
        ("tool=*", [True, True, False]),  # waits on some tool
        ("tool!=charge", [False, True, True]),
        ("turns>=1.5k", [True, False, False]),
        ("tokens<10K", [False, True, True]),
        ("steps=3", [False, False, True]),
        ("sub", [False, True, False]),
        ("not sub status!=complete", [True, False, False]),
        ("(status=complete or sub) and not tool=charge", [False, True, True]),
    ],
)
def test_examples(text: str, expected: list[bool]) -> None:
    runs = [
        RunStatus("r-1", RunState.HALTED, tool_name="charge", turns=1500, tokens=20_000),
        RunStatus("r-2>call_1", RunState.AWAITING_APPROVAL, tool_name="refund", turns=2, tokens=9_999),
        RunStatus("x-3", RunState.COMPLETE, steps=3),
    ]
    assert [parse_where(text).matches(s, NOW) for s in runs] == expected


def test_a_lease_table_that_could_not_be_read_leaves_lease_tests_unknown() -> None:
    status = RunStatus("r", RunState.STALLED, lease_unknown=True)
    for text in ("leased", "lapsed", "lease=w*", "lease!=w*", "not leased"):
        assert parse_where(text).verdict(status, NOW) is Truth.UNKNOWN, text
    assert parse_where("leased or status=stalled").matches(status, NOW)


def test_durations_and_counts() -> None:
    status = RunStatus("r", RunState.HALTED, times=RunTimes(NOW_MS - 5_400_000, NOW_MS - 5_400_000, True, True))
    assert parse_where("idle>=1h30m").matches(status, NOW) and not parse_where("idle>1h30m").matches(status, NOW)
    assert parse_where("age<=90m idle>5399s age<1.5h1s").matches(status, NOW)
    assert parse_where("idle>1w").verdict(status, NOW) is Truth.FALSE
    assert parse_where("age>=1d").verdict(status, NOW + timedelta(days=1)) is Truth.TRUE


@pytest.mark.parametrize(
    ("text", "column", "says"),
    [
        ("stauts=halted", 1, "unknown field 'stauts' (did you mean 'status'?); fields: status, id,"),
        ("status=haltd", 8, "unknown status 'haltd' (did you mean 'halted'?); statuses: complete,"),
        ("idle>2x", 6, "'2x' is not a duration; durations:"),
        ("idle>2", 6, "'2' is not a duration (a duration needs a unit)"),
        ("turns>abc", 7, "'abc' is not a number; numbers:"),
        ("(status=halted", 15, "expected ')' to close the '(' at column 1, found the end"),
        ("status=halted)", 14, "')' closes nothing"),
        ("status=halted and", 18, "expected a condition after 'and', found the end; conditions:"),
        ("status>halted", 7, "'status' takes no '>'; operators for status: =, !="),
        ("idle=2h", 5, "'idle' takes no '='; operators for idle: >, >=, <, <="),
        ("status", 7, "expected an operator after 'status', found the end; operators for status: =, !="),
        ("tool=", 6, "expected a value after 'tool=', found the end; a glob"),
        ("id='a b", 4, "the quote ' is never closed"),
        ("sub ,", 5, "expected a condition, found ','"),
        ("()", 2, "empty parentheses"),
        ("sub=1", 4, "the flag 'sub' takes no operator"),
        ("or sub", 1, "'or' needs a condition before it"),
        ("tokens>1.2345k", 8, "'1.2345k' is not a whole number"),
        ("id==x", 4, "a value cannot start with '='; quote it"),
    ],
)
def test_typos_say_where_and_what_is_accepted(text: str, column: int, says: str) -> None:
    with pytest.raises(WhereError) as caught:
        parse_where(text)
    assert caught.value.position == column - 1
    assert caught.value.message.startswith(f"at column {column}: {says}"), caught.value.message
    assert str(caught.value) == caught.value.message


def test_what_reads_as_a_filter_and_what_as_words() -> None:
    for words in ("a1004", "halted", "refund payment", "charge"):
        assert not looks_like_where(words), words
    for text in ("stauts=halted", "status", "Tool", "(", "x > 1", "not"):
        assert looks_like_where(text), text


def test_a_where_is_its_text() -> None:
    assert parse_where("sub") == parse_where("sub") and parse_where("sub") != parse_where("SUB")
    assert len({parse_where("sub"), parse_where("sub")}) == 1


@pytest.mark.parametrize(
    "text",
    ["(" * 400 + "status=halted" + ")" * 400, "not " * 1000 + "status=halted", "(not " * 300 + "sub" + ")" * 300],
)
def test_a_filter_nested_past_reason_is_a_bad_filter_not_a_crash(text: str) -> None:
    with pytest.raises(WhereError, match="nested deeper than 50 parentheses or 'not's"):
        parse_where(text)
    assert parse_where("(" * 50 + "status=halted" + ")" * 50).text  # as deep as a person goes

"""Go's time.Time in JSON, from any host: offsets, nanoseconds, garbage; and the sleeping status it feeds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agenttui.journal import keys
from agenttui.journal.codec import go_json
from agenttui.journal.record import HEADER_NAME, JOURNAL_FORMAT, Message, Record, StepKind, ToolUsePart
from agenttui.journal.timefmt import format_go_time, parse_go_time
from agenttui.runs.statuses.status import RunState, status_of

PLUS_2 = timezone(timedelta(hours=2))
MINUS_7 = timezone(timedelta(hours=-7))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2099-01-15T10:30:00Z", datetime(2099, 1, 15, 10, 30, tzinfo=UTC)),
        ("2099-01-15T10:30:00.123456789+02:00", datetime(2099, 1, 15, 10, 30, 0, 123456, tzinfo=PLUS_2)),
        ("2099-01-15T10:30:00-07:00", datetime(2099, 1, 15, 10, 30, tzinfo=MINUS_7)),
        (
            "2099-01-15T10:30:00.5+05:45",
            datetime(2099, 1, 15, 10, 30, 0, 500000, tzinfo=timezone(timedelta(hours=5, minutes=45))),
        ),
        ("2099-01-15T10:30:00.000000001Z", datetime(2099, 1, 15, 10, 30, tzinfo=UTC)),
        ("2099-01-15T10:30:00.1234567890123Z", datetime(2099, 1, 15, 10, 30, 0, 123456, tzinfo=UTC)),
        ("2099-01-15T10:30:00,25Z", datetime(2099, 1, 15, 10, 30, 0, 250000, tzinfo=UTC)),
        ("2099-01-15T10:30:00-00:00", datetime(2099, 1, 15, 10, 30, tzinfo=UTC)),
        (
            "9999-12-31T23:59:59.999999999-23:59",
            datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=timezone(-timedelta(hours=23, minutes=59))),
        ),
    ],
)
def test_go_times_parse_aware_with_their_offset(text: str, expected: datetime) -> None:
    parsed = parse_go_time(text)
    assert parsed == expected and parsed.utcoffset() == expected.utcoffset()


def test_offsets_name_the_same_instant() -> None:
    assert (
        parse_go_time("2099-01-15T12:30:00+02:00")
        == parse_go_time("2099-01-15T10:30:00Z")
        == parse_go_time("2099-01-15T03:30:00-07:00")
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "soon",
        "2099-01-15",
        "2099-01-15T10:30:00",
        "2099-01-15T10:30:00.123456789",
        "2099-01-15t10:30:00Z",
        "2099-01-15T10:30:00z",
        "2099-01-15 10:30:00Z",
        " 2099-01-15T10:30:00Z",
        "2099-01-15T10:30:00Z\n",
        "2099-01-15T10:30:00.Z",
        "2099-01-15T10:30:00+0200",
        "2099-01-15T10:30:00+02",
        "2099-01-15T10:30:00+24:00",
        "2099-01-15T10:30:00+02:60",
        "2099-02-30T10:30:00Z",
        "2099-01-15T24:00:00Z",
        "2099-01-15T10:30:60Z",
        "0000-01-01T00:00:00Z",
        "10000-01-01T00:00:00Z",
        "+2099-01-15T10:30:00Z",
        "２０９９-01-15T10:30:00Z",
        "2099-01-15T10:30:00.１Z",
    ],
)
def test_anything_else_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        parse_go_time(text)


@pytest.mark.parametrize(
    "value", [None, 1767225600, 1.5, True, ["2099-01-15T10:30:00Z"], {"t": 1}, b"2099-01-15T10:30:00Z"]
)
def test_a_non_string_is_a_value_error(value: object) -> None:
    with pytest.raises(ValueError):
        parse_go_time(value)


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        (datetime(2099, 1, 15, 10, 30, tzinfo=UTC), "2099-01-15T10:30:00Z"),
        (datetime(2099, 1, 15, 12, 30, 0, 120000, tzinfo=PLUS_2), "2099-01-15T10:30:00.12Z"),
    ],
)
def test_format_writes_utc_with_the_fraction_trimmed(moment: datetime, text: str) -> None:
    assert format_go_time(moment) == text


@given(st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)))
def test_format_then_parse_is_the_same_instant(moment: datetime) -> None:
    assert parse_go_time(format_go_time(moment)) == moment


# -- the sleeping status, from a timer any host wrote ------------------------------------------

NOW = datetime(2099, 1, 15, 10, 0, tzinfo=UTC)


def sleeping_run(timer_result: bytes | None) -> list[Record]:
    """A run whose last model turn called a tool that then slept (``timer:`` after the turn)."""
    call = ToolUsePart("call_1", "wait_for_settlement", b"{}")
    return [
        Record(HEADER_NAME, StepKind.HEADER, format=JOURNAL_FORMAT),
        Record(
            keys.RUN_START, StepKind.VALUE, result=b'{"input":"settle","kind":"agent","tools":["wait_for_settlement"]}'
        ),
        Record(keys.llm_key(0), StepKind.MODEL, message=Message.assistant(call), finish="tool_use"),
        Record("timer:settlement", StepKind.VALUE, result=timer_result),
    ]


@pytest.mark.parametrize(
    ("wake", "instant"),
    [
        ("2099-01-15T12:30:00.123456789+02:00", datetime(2099, 1, 15, 10, 30, 0, 123456, tzinfo=UTC)),
        ("2099-01-15T03:30:00.5-07:00", datetime(2099, 1, 15, 10, 30, 0, 500000, tzinfo=UTC)),
        ("2099-01-15T10:30:00Z", datetime(2099, 1, 15, 10, 30, tzinfo=UTC)),
        (
            "9999-12-31T23:59:59.999999999-23:59",
            datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=timezone(-timedelta(hours=23, minutes=59))),
        ),
    ],
)
def test_a_wake_time_ahead_with_any_offset_is_sleeping(wake: str, instant: datetime) -> None:
    status = status_of("r", sleeping_run(go_json(wake)), now=NOW)
    assert status.state == RunState.SLEEPING and status.tool_use_id == "call_1" and status.wake_at == instant


@pytest.mark.parametrize("wake", ["2099-01-15T11:30:00+02:00", "2099-01-15T02:59:59.999999999-07:00"])
def test_a_wake_time_passed_with_any_offset_is_no_sleep(wake: str) -> None:
    # Past its wake time the run only waits to be re-driven, whatever offset the host wrote.
    assert status_of("r", sleeping_run(go_json(wake)), now=NOW).state not in (RunState.SLEEPING, RunState.UNREADABLE)


@pytest.mark.parametrize(
    "result",
    [
        None,
        b"null",
        b"1767225600",
        b"true",
        b'["2099-01-15T12:30:00+02:00"]',
        b'{"wake":"2099-01-15T12:30:00Z"}',
        b'"2099-01-15T12:30:00"',
        b'"2099-01-15T12:30:00.123456789"',
        b'"99999-01-15T12:30:00Z"',
        b'"0000-01-01T00:00:00Z"',
        b'"tomorrow"',
        b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=[
        "none",
        "null",
        "number",
        "bool",
        "list",
        "object",
        "naive",
        "naive-nanos",
        "huge-year",
        "year-0",
        "text",
        "deep",
    ],
)
def test_a_timer_without_a_wake_time_is_stalled_never_an_error(result: bytes | None) -> None:
    assert status_of("r", sleeping_run(result), now=NOW).state == RunState.STALLED

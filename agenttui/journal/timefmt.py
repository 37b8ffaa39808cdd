"""Go's ``time.Time`` in JSON: RFC 3339 with up to nanoseconds and any UTC offset (format 2.4).

Timer records (``timer:<name>``) hold a wake time written by whichever host drove the run, so
a reader must take any offset Go writes, not only agenttui's own ``Z``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

# RFC 3339 as Go's time.Time.UnmarshalJSON reads it: an upper-case T and Z (Go takes no lower
# case), a fraction of any length (its Parse takes a comma before it too), Z or a ±hh:mm offset.
# [0-9] rather than \d: Python's \d also matches other scripts' digits, Go's parser does not.
_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:[.,]([0-9]+))?"
    r"(?:Z|([+-])([0-9]{2}):([0-9]{2}))"
)


def format_go_time(moment: datetime) -> str:
    """``moment`` as Go's ``time.Time`` marshals it in UTC: RFC 3339, fraction trimmed of trailing zeros."""
    moment = moment.astimezone(UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += ("." + f"{moment.microsecond:06d}").rstrip("0")
    return text + "Z"


def parse_go_time(text: object) -> datetime:
    """An aware datetime of Go's RFC 3339, keeping its offset; a fraction finer than
    microseconds is truncated. Raises ``ValueError`` for anything else, a non-string included,
    and for a time Python cannot hold (year 0)."""
    if not isinstance(text, str) or (match := _RFC3339.fullmatch(text)) is None:
        raise ValueError(f"not an RFC 3339 time: {text!r:.80}")
    year, month, day, hour, minute, second, fraction, sign, offset_hours, offset_minutes = match.groups()
    if sign is None:
        zone = UTC
    elif int(offset_hours) > 23 or int(offset_minutes) > 59:
        raise ValueError(f"not an RFC 3339 offset: {text!r:.80}")
    else:
        offset = timedelta(hours=int(offset_hours), minutes=int(offset_minutes))
        zone = timezone(-offset if sign == "-" else offset)
    microsecond = int(fraction[:6].ljust(6, "0")) if fraction else 0
    return datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), microsecond, zone)

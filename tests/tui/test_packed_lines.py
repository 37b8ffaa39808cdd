"""Lines a long run's panes keep packed give back what was put in."""

from __future__ import annotations

import pytest

from agenttui.tui.widgets.events_view import EventLines


def test_event_lines_give_back_each_line_as_added() -> None:
    lines = [("turn", "assistant turn 0: hi → lookup"), ("tool", "tool lookup completed: {\"é\": 1}"),
             ("error", "tool pay failed: \ud800 lone surrogate"), ("delta", ""), ("finished", "finished: ok")]  # fmt: skip
    packed = EventLines(lines[:2])
    packed.extend(lines[2:])
    assert len(packed) == len(lines)
    assert list(packed) == lines
    assert packed[-1] == lines[-1] and packed[2] == lines[2]
    with pytest.raises(IndexError):
        packed[len(lines)]
    assert len(EventLines()) == 0 and list(EventLines()) == []

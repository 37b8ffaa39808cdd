"""STUB (replaced by the filter language's branch at merge): ``field=value`` terms, and-ed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from fnmatch import fnmatchcase

from agenttui.errors import AgentTuiError
from agenttui.runs.status import RunStatus


class WhereError(AgentTuiError):
    title = "Bad filter"


@dataclass(frozen=True)
class Where:
    text: str
    groups: tuple[tuple[tuple[str, str], ...], ...]

    def matches(self, status: RunStatus, now: datetime) -> bool:
        return any(self._all(terms, status) for terms in self.groups)

    def _all(self, terms: tuple[tuple[str, str], ...], status: RunStatus) -> bool:
        for field, value in terms:
            if field == "status" and status.state.value not in value.split(","):
                return False
            if field == "id" and not fnmatchcase(status.run_id, value):
                return False
            if field == "tool" and not fnmatchcase(status.tool_name, value):
                return False
        return True


def parse_where(text: str) -> Where:
    groups = []
    for group in text.split(" or "):
        terms = []
        for word in group.replace(" and ", " ").split():
            field, eq, value = word.partition("=")
            if not eq or field not in ("status", "id", "tool"):
                raise WhereError(f"at column {text.index(word) + 1}: bad term {word!r}")
            terms.append((field, value))
        groups.append(tuple(terms))
    return Where(text, tuple(groups))

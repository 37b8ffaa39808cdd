"""What the runs list offers for its marked runs: the bulk actions, which fit every marked run and
why the others do not, and the command line that selects exactly those runs.

Plain Python, kept apart from the dialogs (``screens/bulk.py``) so its rules are tested without
Pilot. The actions themselves, and how each is applied, are ``runs.batch``'s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agenttui.runs.recovery.choices import Ask, ask_value
from agenttui.runs.selection.batch import (
    AnswerRuns,
    BulkAction,
    CancelRuns,
    DecideRuns,
    RedriveRuns,
    ReleaseRuns,
    ResolveRuns,
    ids_where,
)

if TYPE_CHECKING:
    from agenttui.agent.factory import AgentFactory
    from agenttui.runs.statuses.status import RunStatus

#: Why a marked run fits nothing yet: the list has not read its status.
NOT_READ = "its status is still being read"
#: The reason a bulk action's cancel records, as the single-run menu's.
CANCEL_REASON = "cancelled from agenttui"


@dataclass(frozen=True)
class BulkChoice:
    """One entry of the marked runs' action menu."""

    label: str
    action: BulkAction
    """The action, as the menu judges its fit (a value-needing one with a stand-in value)."""
    asks: Callable[[Ask, int], Awaitable[BulkAction | None]] | None = None
    """For an action that needs a value (an answer, a result): asks for it, given how many runs
    it goes to; the action with that value, or None when the person cancels."""

    async def chosen(self, ask: Ask, runs: int) -> BulkAction | None:
        """The action to take, once asked for any value it needs (None: cancelled)."""
        return self.action if self.asks is None else await self.asks(ask, runs)


async def _answer(ask: Ask, runs: int) -> BulkAction | None:
    value = await ask_value(
        ask,
        f"Answer {runs:,} runs",
        "One answer for every marked run, recorded as interrupt:<the question's name> in each (JSON, or plain text):",
        "your answer",
        json_only=False,
    )
    return None if value is None else AnswerRuns(value[0])


async def _fired(ask: Ask, runs: int) -> BulkAction | None:
    value = await ask_value(
        ask,
        f"It fired, in {runs:,} runs",
        'Each halted call\'s result, as you confirmed it, in JSON (text in quotes: "sent"):',
        '{"refund_id": "..."}',
        json_only=True,
    )
    return None if value is None else ResolveRuns(True, value[0])


def bulk_choices(factory_spec: str | None, factory: AgentFactory | None) -> list[BulkChoice]:
    """Every action the marked runs' menu lists, in the single-run menu's order."""
    choices = [
        BulkChoice("Approve the pending call", DecideRuns(True)),
        BulkChoice("Deny the pending call", DecideRuns(False)),
        BulkChoice("Answer the question…", AnswerRuns(None), _answer),
        BulkChoice("It did not fire: retry the halted call", ResolveRuns(False)),
        BulkChoice("It fired: record its result…", ResolveRuns(True), _fired),
    ]
    if factory is not None and factory_spec:
        choices.append(BulkChoice("Re-drive with your agent", RedriveRuns(factory_spec, factory)))
    return [
        *choices,
        BulkChoice("Cancel the runs", CancelRuns(CANCEL_REASON)),
        BulkChoice("Release lapsed leases", ReleaseRuns()),
        BulkChoice("Break the leases (their drivers are gone)", ReleaseRuns(force=True)),
    ]


@dataclass(frozen=True)
class Fit:
    """How one action fits the marked runs."""

    choice: BulkChoice
    misfits: int
    """Marked runs it does not fit."""
    why: str
    """The most common reason (empty when it fits them all)."""
    marked: int

    @property
    def fits(self) -> bool:
        return self.misfits == 0

    def line(self) -> str:
        """The menu's line: the action, and when it does not fit, how many runs and why."""
        if self.fits:
            return self.choice.label
        return f"{self.choice.label} — {self.misfits:,} of {self.marked:,} do not fit: {self.why}"


def fits(choices: Sequence[BulkChoice], marked: Mapping[str, RunStatus | None]) -> list[Fit]:
    """Each action against the marked runs' statuses as the list holds them (None: not read yet):
    those that fit every marked run first, each group in ``choices``' order."""
    out = []
    for choice in choices:
        reasons = Counter(
            why
            for status in marked.values()
            if (why := NOT_READ if status is None else choice.action.misfit(status)) is not None
        )
        why = reasons.most_common(1)[0][0] if reasons else ""
        out.append(Fit(choice, sum(reasons.values()), why, len(marked)))
    return sorted(out, key=lambda fit: not fit.fits)


def selecting_where(fitting: Sequence[str], *, marked: Sequence[str], shown_filter: str | None) -> str | None:
    """The ``--where`` of the command that does what the confirmation shows: the filter in force
    (``shown_filter``, given when the marks are exactly the runs it shows) when every marked
    run fits, else the fitting runs by id (None: an id no filter can name)."""
    if shown_filter and len(fitting) == len(marked):
        return shown_filter
    return ids_where(fitting)

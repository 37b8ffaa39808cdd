"""Recover operations: what a person does to a run, described before it is done.

Each operation says exactly what it will write and the CLI command that does the same, so the
TUI's confirmation and the CLI share one description; ``apply`` then does it under the run's
lease (a run a live driver holds is refused, naming the holder), writing only through the
journal's at-most-once insert. The TUI and the CLI both call these; neither has its own copy.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from agenttui.agent.factory import AgentSetup
from agenttui.agent.pauses import AlreadyDecided, RunPaused
from agenttui.agent.runstart import RunStart
from agenttui.errors import AgentTuiError, RunNotFoundError
from agenttui.journal import keys
from agenttui.journal.inert import shell_word
from agenttui.journal.journal import Journal, RunJournal
from agenttui.runs.recovery import actions
from agenttui.runs.recovery.drive_plan import DrivePlan, plan_drive
from agenttui.runs.recovery.lease import LeaseHeld, lease, new_holder
from agenttui.runs.recovery.recover import RecoverPlan, RecoverReport, recover_runs
from agenttui.runs.statuses.forks import refuse_a_fork
from agenttui.runs.statuses.state import RunState
from agenttui.stores.base import LeaseInfo, Store


class Operation(Protocol):
    @property
    def title(self) -> str: ...

    def will_write(self) -> str:
        """The records the operation writes, for a person to check before confirming."""

    def command(self, store_url: str) -> str:
        """The CLI command that does the same."""

    async def apply(self, store: Store) -> str:
        """Do it; return one line saying what happened."""


def _cli(*words: str) -> str:
    return "agenttui " + " ".join(shell_word(w) for w in words)


class BadValue(AgentTuiError):
    """A value typed for a write that is not what it must be (nothing is written)."""

    title = "Bad value"


def parse_value(text: str, *, json_only: bool) -> Any:
    """A value a person typed for a write: JSON, as it is recorded for good.

    ``json_only`` (a call's result): anything but valid JSON is refused; text is recorded as a
    string only when given as one explicitly (the CLI's ``--result-text``). Otherwise (an
    answer) plain text is taken as a string, but text that starts like JSON and is not (``{bad``)
    is refused rather than recorded as a string nobody meant.
    """
    try:
        return json.loads(text)
    except ValueError as exc:
        looks_like_json = text.lstrip()[:1] in ("{", "[", '"') or json_only
        if looks_like_json:
            why = f"{exc.msg} at character {exc.pos}" if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise BadValue(f"not valid JSON ({why}): {text[:80]!r}; give text as a JSON string") from None
        return text


def replay_command(store_url: str, run_id: str, agent_spec: str, live_tools: Sequence[str]) -> str:
    """The CLI command that replays ``run_id`` with your agent, these tools' side effects live."""
    return _cli(
        "replay",
        store_url,
        run_id,
        "--agent",
        agent_spec,
        *[word for name in live_tools for word in ("--live-tool", name)],
    )


T = TypeVar("T")


async def _leased(store: Store, run_id: str, body: Callable[[], Awaitable[T]]) -> T:
    return await lease(store, run_id, body, ttl=30)


class LeasedOperation:
    """An operation on one run that writes to its journal: ``apply`` is ``write`` under the run's
    lease. A bulk action (``runs.batch``) takes the lease itself, reads the run again under it,
    then calls ``write`` with what it read."""

    run_id: str

    async def write(self, store: Store, read: RunJournal | None = None) -> str:
        """Do it, the run's lease already held; return one line saying what happened. ``read``:
        the run as read whole under that lease, checked by the write instead of reading it again."""
        raise NotImplementedError

    async def apply(self, store: Store) -> str:
        return await _leased(store, self.run_id, lambda: self.write(store))


def _outcome(outcome: actions.ActionOutcome, what: str) -> str:
    """What an action wrote; an action whose step was already decided raises ``AlreadyDecided``
    naming the standing decision (the CLI exits 4, the TUI says so)."""
    if not outcome.applied:
        raise AlreadyDecided(f"nothing written: {outcome.already()}", outcome.standing)
    return f"{what}: wrote " + ", ".join(r.name for r in outcome.written)


@dataclass(frozen=True)
class Decide(LeasedOperation):
    """Approve or deny a call awaiting approval."""

    run_id: str
    tool_use_id: str
    approved: bool
    approver: str = ""
    tool_name: str = ""
    """The call's tool, for the title ("" when not known: nothing written depends on it)."""

    @property
    def title(self) -> str:
        tool = f"{self.tool_name} " if self.tool_name else ""
        return f"{'Approve' if self.approved else 'Deny'} {tool}call {self.tool_use_id} of run {self.run_id}"

    def will_write(self) -> str:
        line = f"{keys.approval_key(self.tool_use_id)}  approval  approved={str(self.approved).lower()}"
        line += f" approver={self.approver}" if self.approver else ""
        if not self.approved:
            line += "\n(the next drive records the denial as the call's result)"
        return line

    def command(self, store_url: str) -> str:
        extra = ["--approver", self.approver] if self.approver else []
        return _cli("approve" if self.approved else "deny", store_url, self.run_id, self.tool_use_id, *extra)

    async def write(self, store: Store, read: RunJournal | None = None) -> str:
        outcome = await actions.decide_approval(
            store, self.run_id, self.tool_use_id, approved=self.approved, approver=self.approver, read=read
        )
        return _outcome(outcome, "approved" if self.approved else "denied")


@dataclass(frozen=True)
class Answer(LeasedOperation):
    """Answer a pending interrupt."""

    run_id: str
    name: str
    value: Any

    @property
    def title(self) -> str:
        return f"Answer {self.name} of run {self.run_id}"

    def will_write(self) -> str:
        return f"{keys.interrupt_key(self.name)}  value  {json.dumps(self.value, ensure_ascii=False)}"

    def command(self, store_url: str) -> str:
        return _cli("answer", store_url, self.run_id, self.name, json.dumps(self.value, ensure_ascii=False))

    async def write(self, store: Store, read: RunJournal | None = None) -> str:
        return _outcome(await actions.answer(store, self.run_id, self.name, self.value, read=read), "answered")


@dataclass(frozen=True)
class Resolve(LeasedOperation):
    """Resolve a halted call: it did not fire (retry it), or it fired with a result."""

    run_id: str
    tool_use_id: str
    fired: bool
    result: Any = None
    tool_name: str = ""
    """The call's tool, for the title ("" when not known: nothing written depends on it)."""

    @property
    def title(self) -> str:
        tool = f"{self.tool_name} " if self.tool_name else ""
        return f"Resolve halted {tool}call {self.tool_use_id} of run {self.run_id}: " + (
            "it fired" if self.fired else "it did not fire"
        )

    def will_write(self) -> str:
        if self.fired:
            return f"{keys.tool_key(self.tool_use_id)}  tool_result  reconciled=true  {json.dumps(self.result, ensure_ascii=False)}"
        return "attempt:not-started:<claim>:<marker>  not_started  (voids the attempt; the next drive retries the call)"

    def command(self, store_url: str) -> str:
        if self.fired:
            return _cli(
                "resolve",
                store_url,
                self.run_id,
                self.tool_use_id,
                "--fired",
                "--result",
                json.dumps(self.result, ensure_ascii=False),
            )
        return _cli("resolve", store_url, self.run_id, self.tool_use_id, "--not-fired")

    async def write(self, store: Store, read: RunJournal | None = None) -> str:
        outcome = await actions.resolve_halt(
            store, self.run_id, self.tool_use_id, fired=self.fired, result=self.result, read=read
        )
        return _outcome(outcome, "resolved")


@dataclass(frozen=True)
class Cancel(LeasedOperation):
    run_id: str
    reason: str = ""

    @property
    def title(self) -> str:
        return f"Cancel run {self.run_id}"

    def will_write(self) -> str:
        return f"{keys.RUN_CANCELLED}  value  {json.dumps({'reason': self.reason}, ensure_ascii=False)}"

    def command(self, store_url: str) -> str:
        return _cli("cancel", store_url, self.run_id, *(["--reason", self.reason] if self.reason else []))

    async def write(self, store: Store, read: RunJournal | None = None) -> str:
        return _outcome(await actions.cancel(store, self.run_id, self.reason, read=read), "cancelled")


async def read_drive_plan(store: Store, run_id: str, factory: Callable[[str], AgentSetup] | None) -> DrivePlan:
    """What a drive of ``run_id`` with ``factory``'s agent does first (``runs.drive_plan``).
    A what-if fork has no plan: it is refused, as its drive is."""
    await refuse_a_fork(store, run_id)
    records = await Journal(store).history(run_id)
    tools = None if factory is None else {tool.name: tool.safety for tool in factory(run_id).tools}
    return plan_drive(run_id, records, tools)


async def planned(store: Store, operation: Operation) -> Operation:
    """``operation`` as its confirmation shows it: a re-drive (and a recover pass) names the calls
    it runs first."""
    return await operation.planned(store) if isinstance(operation, Redrive | RecoverAll) else operation


async def _redrive(store: Store, run_id: str, setup: AgentSetup) -> str:
    await refuse_a_fork(store, run_id)
    records = await Journal(store).history(run_id)
    start = next((r for r in records if r.name == keys.RUN_START), None)
    if start is None:
        raise RunNotFoundError(run_id) if not records else AgentTuiError(f"run {run_id!r} has no run:start record")
    try:
        answer = await setup.agent(store).run(run_id, RunStart.decode(start.result).input)
    except RunPaused as pause:
        return f"re-driven; paused again: {pause.message}"
    return f"re-driven to completion: {answer.text[:80]}"


@dataclass(frozen=True)
class Redrive(LeasedOperation):
    """Drive a run forward with the user's agent (``--agent``), under its lease. Confirm it
    ``planned``: what it will write names the calls it runs first."""

    run_id: str
    factory_spec: str
    factory: Callable[[str], AgentSetup]
    plan: DrivePlan | None = None
    """What the drive does first, as the run stood when it was read (``planned``)."""

    @property
    def title(self) -> str:
        return f"Re-drive run {self.run_id}"

    def will_write(self) -> str:
        if self.plan is None:
            return "the run's next steps, as the agent takes them (model turns, tool results, run:complete)"
        return "\n".join(self.plan.lines())

    async def planned(self, store: Store) -> Redrive:
        """This re-drive, with what it does first read from the run as it stands."""
        return replace(self, plan=await read_drive_plan(store, self.run_id, self.factory))

    def command(self, store_url: str) -> str:
        return _cli("redrive", store_url, self.run_id, "--agent", self.factory_spec)

    async def write(self, store: Store, read: RunJournal | None = None) -> str:
        return await _redrive(store, self.run_id, self.factory(self.run_id))  # the agent reads the run as it drives


@dataclass(frozen=True)
class RecoverAll:
    """The spec's Recover: re-drive every unfinished run (pauses count as recovered).

    Given the ``plan`` a person was shown (``plan_recover``), it touches those runs and no other.
    """

    factory_spec: str
    factory: Callable[[str], AgentSetup]
    on_progress: Callable[[int, str], None] | None = None
    plan: RecoverPlan | None = None
    first: Mapping[str, DrivePlan] = field(default_factory=dict)
    """What the drive of each run of the plan does first (``planned``), by run id."""

    title = "Recover every unfinished run"

    def will_write(self) -> str:
        if self.plan is None:
            return "for each unfinished root run not leased elsewhere: its next steps, under its lease"
        return "\n".join([*plan_lines(self.plan), *first_call_lines(self.first)])

    async def planned(self, store: Store, *, runs: int = 50) -> RecoverAll:
        """This pass, with what the drive of each of its first ``runs`` runs does first."""
        if self.plan is None:
            return self
        to_drive = self.plan.to_drive[:runs]
        return replace(self, first={s.run_id: await read_drive_plan(store, s.run_id, self.factory) for s in to_drive})

    def command(self, store_url: str) -> str:
        return _cli("recover", store_url, "--agent", self.factory_spec)

    async def run(self, store: Store) -> RecoverReport:
        async def resume(run_id: str) -> None:
            records = await Journal(store).history(run_id)
            start = next(r for r in records if r.name == keys.RUN_START)
            await self.factory(run_id).agent(store).run(run_id, RunStart.decode(start.result).input)

        only = None if self.plan is None else [status.run_id for status in self.plan.to_drive]
        return await recover_runs(store, resume, on_progress=self.on_progress, run_ids=only)

    async def apply(self, store: Store) -> str:
        return "\n".join(report_lines(await self.run(store)))


#: The most run ids a plan's line names for one status (the rest are counted).
PLAN_IDS = 3


def first_call_lines(first: Mapping[str, DrivePlan], *, most: int = 8) -> list[str]:
    """The runs of a pass whose drive runs a tool before the model is asked again, each with its
    calls: where a side effect may fire at once (the others stop at a call, or ask the model)."""
    firing = [(run_id, plan) for run_id, plan in first.items() if plan.fires]
    if not firing:
        return ["no run's drive runs a tool before its model's next turn"] if first else []
    lines = [f"runs a tool first in {len(firing)} run{'s' * (len(firing) != 1)}:"]
    lines += [f"  {run_id}: {plan.summary().removeprefix('first: ')}" for run_id, plan in firing[:most]]
    if len(firing) > most:
        lines.append(f"  ... and {len(firing) - most} more")
    return lines


def plan_lines(plan: RecoverPlan, *, width: int = 70) -> list[str]:
    """What a recover pass will touch, before it starts: the runs it re-drives, a line per status
    with its count and first run ids, then what it leaves alone. Run ids are the store's: show
    them inert."""
    drive = RecoverPlan.by_state(plan.to_drive)
    lines = [f"re-drives {len(plan.to_drive)} unfinished runs, each under its lease:"]
    column = max((len(f"{len(ids)} {state.value}") for state, ids in drive.items()), default=0)
    for state, ids in drive.items():
        head = f"  {f'{len(ids)} {state.value}':<{column}}  "
        lines.append(head + _ids(ids, width - len(head)))
    if plan.left_alone:
        alone = RecoverPlan.by_state(plan.left_alone)
        lines.append(
            f"leaves alone {len(plan.left_alone)}: "
            + ", ".join(f"{len(ids)} {state.value}" for state, ids in alone.items())
        )
        if forks := alone.get(RunState.FORK):
            head = "  what-if forks, never driven: "
            lines.append(head + _ids(forks, width - len(head)))
        if unreadable := alone.get(RunState.UNREADABLE):
            head = "  unreadable, which a drive refuses: "
            lines.append(head + _ids(unreadable, width - len(head)))
    return lines


def _ids(run_ids: Sequence[str], width: int) -> str:
    """The first run ids that fit ``width``, then how many more."""
    shown: list[str] = []
    for run_id in run_ids[:PLAN_IDS]:
        rest = len(run_ids) - len(shown) - 1
        candidate = ", ".join([*shown, run_id]) + (f", +{rest} more" if rest else "")
        if len(candidate) > width and shown:
            break
        shown.append(run_id)
    rest = len(run_ids) - len(shown)
    return ", ".join(shown) + (f", +{rest} more" if rest else "")


def report_lines(report: RecoverReport, *, most: int | None = None) -> list[str]:
    """What a recover pass did: a summary line, then a line per run that did not simply finish
    (``most`` of each kind at the most). Run ids and messages are the store's: show them inert."""
    lines = [f"recovered {len(report.re_driven)} runs ({len(report.paused)} paused again), "
             f"skipped {len(report.skipped)}, {len(report.errors)} errors"]  # fmt: skip
    lines += [f"  error {run_id}: {error}" for run_id, error in list(report.errors.items())[:most]]
    lines += [f"  paused: {pause}" for pause in list(report.paused.values())[:most]]  # a pause names its run
    lines += [f"  skipped {run_id}: {why}" for run_id, why in list(report.skipped.items())[:most]]
    return lines


@dataclass(frozen=True)
class ReleaseLease:
    """Drop a lapsed lease, so the run reads as stalled and can be recovered; or, ``force``d,
    break a live one (a host with a fast clock stamped it a year ahead; its driver is gone).

    ``current`` is the lease row as read before asking, so the confirmation names its holder and
    expiry; a forced release breaks only that very lease, not one taken since.
    """

    run_id: str
    force: bool = False
    current: LeaseInfo | None = None

    @property
    def title(self) -> str:
        return f"{'Break the lease' if self.force else 'Release the lapsed lease'} of run {self.run_id}"

    def will_write(self) -> str:
        root = keys.root_run_id(self.run_id)
        if not self.force:
            return f"deletes the lease row of {root} (only if it has lapsed; the journal is untouched)"
        held = "" if self.current is None else f": held by {self.current.holder}, {_expiry(self.current)}"
        return (f"deletes the lease row of {root}{held}\n"
                "a driver still running would go on without a lease: break it only if that driver is gone")  # fmt: skip

    def command(self, store_url: str) -> str:
        return _cli("release", store_url, self.run_id, *(["--force"] if self.force else []))

    async def apply(self, store: Store) -> str:
        root = keys.root_run_id(self.run_id)
        current = await store.get_lease(root)
        if current is None:
            if not await _has_records(store, self.run_id):
                raise RunNotFoundError(self.run_id)
            return "nothing to release: the run holds no lease"
        if self.force:
            if self.current is not None and current.holder != self.current.holder:
                raise LeaseHeld(self.run_id, current.holder, current.expires_in)  # taken since it was shown: ask again
            await store.release_lease(root, current.holder)  # as its holder would: the row goes
            return f"broke the lease of {current.holder} ({_expiry(current)})"
        holder = new_holder()
        # Acquiring succeeds only if the lease has lapsed, atomically; then release our own.
        if not await store.acquire_lease(root, holder, ttl=5):
            raise LeaseHeld(self.run_id, current.holder, current.expires_in)
        await store.release_lease(root, holder)
        return f"released the lapsed lease of {current.holder}"


async def _has_records(store: Store, run_id: str) -> bool:
    """Whether the store holds any record of ``run_id`` (its first entry is read, no more). A
    lease row alone is a run too: its driver died before it wrote its first record."""
    entries = store.load(run_id)
    try:
        return await anext(entries, None) is not None
    finally:
        if isinstance(entries, AsyncGenerator):
            await entries.aclose()


def _expiry(lease: LeaseInfo) -> str:
    seconds = abs(lease.expires_in)
    span = (
        f"{seconds / 86400:.0f} days"
        if seconds >= 2 * 86400
        else f"{seconds / 3600:.1f} h"
        if seconds >= 3600
        else f"{seconds:.0f} s"
    )
    return f"expires in {span}" if lease.live else f"lapsed {span} ago"

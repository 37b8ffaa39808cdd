"""A bundle's runs imported into a store (``import_runs``, ``BundleImport``): every run checked
before anything is written, then each written whole or not at all through the store's
at-most-once ``insert_many``."""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from agenttui.errors import AgentTuiError, ConfigError
from agenttui.runs.bundles.manifest import BundleProgress, read_manifest
from agenttui.stores.base import Entry, StepTakenError, Store

ImportOutcome = Literal["imported", "identical", "completed"]

#: Runs a message names one by one; beyond, it counts them.
NAMED_RUNS = 5
#: Rows a damaged run's reason names one by one; beyond, it counts them.
NAMED_ROWS = 3


@dataclass(frozen=True, slots=True)
class ImportedRun:
    run_id: str
    """The run's id in the bundle."""
    target_id: str
    """Its id in the store (``prefix + run_id``)."""
    outcome: ImportOutcome
    """``imported`` (new to the store), ``identical`` (already there, byte for byte: skipped),
    ``completed`` (the store held its first records, byte for byte)."""
    written: int
    records: int


@dataclass(frozen=True, slots=True)
class DamagedRow:
    """A row of a bundle's run that an import cannot copy as it is."""

    index: int
    """Its place in the run, from 0, as ``show`` numbers records."""
    seq: object
    """Its seq, as stored."""
    name: str | None
    """Its step name; None when the name is not text (what reading shows for it is a stand-in)."""
    why: str

    def __str__(self) -> str:
        named = "" if self.name is None else f", {self.name!r}"
        return f"record {self.index} (seq {self.seq!r}{named}): {self.why}"


@dataclass(frozen=True, slots=True)
class DamagedRun:
    """A run of the bundle holding rows an import cannot copy as they are."""

    run_id: str
    """As the bundle lists it (for an id that is not stored as text, the stand-in it is shown as)."""
    rows: tuple[DamagedRow, ...]
    """The first of those rows (``NAMED_ROWS`` at most)."""
    count: int
    """How many rows of the run are damaged."""

    @property
    def reason(self) -> str:
        if not self.count:
            return "it is listed, but none of its rows reads back"
        more = self.count - len(self.rows)
        return "; ".join(map(str, self.rows)) + (f"; and {more} more row{'s' * (more != 1)}" if more else "")


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A run an import left out (``skip_damaged``), and why."""

    run_id: str
    target_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class ImportReport:
    source: str
    runs: tuple[ImportedRun, ...]
    redacted: tuple[str, ...] = ()
    """The bundle's redaction paths that replaced values (its runs carry the marker)."""
    left_out: tuple[LeftOut, ...] = ()
    """The runs left out because they, or a run of their tree, are damaged (``skip_damaged``)."""

    @property
    def written(self) -> int:
        return sum(r.written for r in self.runs)


@dataclass(frozen=True, slots=True)
class RunConflict:
    run_id: str
    target_id: str
    reason: str


def _named(ids: Sequence[str], limit: int = NAMED_RUNS) -> str:
    """``'a', 'b' and 3 more``: the first ``limit`` of ``ids``, then how many others."""
    shown = ", ".join(repr(run_id) for run_id in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _runs(count: int) -> str:
    return f"{count:,} run{'s' * (count != 1)}"


def _written_before(written: Sequence[ImportedRun]) -> str:
    if not written:
        return "nothing was written"
    were = "was" if len(written) == 1 else "were"
    return f"{_runs(len(written))} {were} written before, each whole: {_named([r.target_id for r in written])}"


class ImportConflict(AgentTuiError):
    """Runs the store already holds with other records. Found by the check, nothing of the
    bundle was written; found while writing (another writer took a run meanwhile), that run was
    not written, and ``written`` names the runs written before it."""

    title = "Import refused"

    def __init__(self, conflicts: Sequence[RunConflict], *, written: Sequence[ImportedRun] = ()) -> None:
        first = conflicts[0]
        super().__init__(
            f"the store already holds {'run' if len(conflicts) == 1 else 'runs'}"
            f" {_named([c.target_id for c in conflicts])} with other records"
            f" ({first.target_id!r}: {first.reason}); {_written_before(written)}"
        )
        self.conflicts = tuple(conflicts)
        self.written = tuple(written)


class BundleDamaged(AgentTuiError):
    """The bundle holds rows an import cannot copy as they are (a run id, a step name or data of
    the wrong type, a step name twice in one run): nothing was imported."""

    title = "Import refused"

    def __init__(self, damaged: Sequence[DamagedRun]) -> None:
        first = damaged[0]
        super().__init__(
            f"the bundle holds rows that cannot be copied as they are, in {_runs(len(damaged))}"
            f" ({_named([d.run_id for d in damaged])}); {first.run_id!r}: {first.reason}; nothing was imported"
        )
        self.runs = tuple(damaged)


class ImportStopped(AgentTuiError):
    """An import stopped partway (a store error, a full disk, a lost connection): every run is
    in the store whole or not at all, and the message says which were written."""

    title = "Import stopped"

    def __init__(self, cause: str, job: BundleImport) -> None:
        super().__init__(f"{cause}; {job.account()}")
        self.written = tuple(job.written)
        self.unwritten = tuple(job.unwritten)
        self.uncertain = job.uncertain


@dataclass(frozen=True, slots=True)
class _Plan:
    run_id: str
    target_id: str
    held: int
    """Records of the run the store holds already (its first ones, byte for byte)."""
    records: int
    outcome: ImportOutcome


class BundleImport:
    """One import of a bundle's runs into a store: ``check`` every run before anything is
    written, then ``write`` them, each run in one transaction (``insert_many``). However it
    ends, it says which runs it wrote and which it did not (``account``): after an error, and,
    for a front end that catches it, after an interruption."""

    def __init__(self, bundle: Store, store: Store, *, prefix: str = "", skip_damaged: bool = False) -> None:
        """Raises ``ConfigError`` for a prefix holding ``>`` and a store that cannot write a run
        in one transaction."""
        if ">" in prefix:
            raise ConfigError(f"--prefix {prefix!r}: a run id's first segment cannot hold '>' (it names sub-runs)")
        if not store.IMPLEMENTS_ATOMIC_INSERT_MANY:
            raise ConfigError(f"{store.display_url} cannot write a run in one transaction: nothing is imported into it")
        self.bundle = bundle
        self.store = store
        self.prefix = prefix
        self.skip_damaged = skip_damaged
        self.done: list[ImportedRun] = []
        """The runs dealt with so far: written, or found there already."""
        self.uncertain: str | None = None
        """The run being written when the import stopped, if the store could not say whether it
        holds it now (it holds it whole or not at all)."""
        self._plans: list[_Plan] = []
        self._left_out: list[LeftOut] = []
        self._checked = False
        self._writing: tuple[str, bytes] | None = None
        """The first record of the run being written, to ask the store for after a failure."""

    @property
    def written(self) -> list[ImportedRun]:
        """The runs written so far (each whole)."""
        return [run for run in self.done if run.written]

    @property
    def unwritten(self) -> list[str]:
        """The target ids of the runs not written (yet), but for ``uncertain`` and those the
        store holds already."""
        done = {run.run_id for run in self.done}
        return [
            p.target_id
            for p in self._plans
            if p.run_id not in done and p.outcome != "identical" and p.target_id != self.uncertain
        ]

    def account(self) -> str:
        """Which runs were written and which not, in a sentence."""
        written, unwritten = self.written, self.unwritten
        done = {run.run_id for run in self.done}
        # Already there: found so (nothing written), or to be found so when reached.
        there = len(self.done) - len(written)
        there += sum(plan.outcome == "identical" for plan in self._plans if plan.run_id not in done)
        parts = [
            f"{_runs(len(written))} written, each whole ({_named([r.target_id for r in written])})"
            if written
            else "nothing was written"
        ]
        if there:
            parts.append(f"{_runs(there)} already there")
        if unwritten:
            parts.append(f"{_runs(len(unwritten))} not written ({_named(unwritten)})")
        if self.uncertain:
            parts.append(
                f"whether {self.uncertain!r} was written could not be checked (it is there whole or not at all)"
            )
        if unwritten or self.uncertain:
            parts.append("import again to write the rest")
        return "; ".join(parts)

    async def run(self, on_progress: Callable[[BundleProgress], None] | None = None) -> ImportReport:
        """``check``, then ``write``."""
        await self.check()
        return await self.write(on_progress)

    async def check(self) -> None:
        """Compare every run of the bundle with what the store holds, writing nothing.

        Raises ``BundleDamaged`` for rows that cannot be copied as they are (unless
        ``skip_damaged``: then each such run, and every run of its tree, is left out), and
        ``ImportConflict`` for runs the store holds with other records."""
        from agenttui.journal.keys import root_run_id

        conflicts: list[RunConflict] = []
        damaged: list[DamagedRun] = []
        self._plans = []
        async for run_id in self.bundle.runs():
            target_id = self.prefix + run_id
            compared = await _compare(self.bundle, run_id, self.store, target_id)
            if compared.damaged is not None:
                damaged.append(compared.damaged)
            elif compared.reason:
                conflicts.append(RunConflict(run_id, target_id, compared.reason))
            else:
                held, total = compared.held, compared.records
                outcome: ImportOutcome = "identical" if held == total else "imported" if held == 0 else "completed"
                self._plans.append(_Plan(run_id, target_id, held, total, outcome))
        if damaged and not self.skip_damaged:
            raise BundleDamaged(damaged)
        # A run goes with its tree (the parent reads its sub-runs from their ids): a damaged run
        # takes the runs above and under it out with it.
        trees = {root_run_id(d.run_id): d.run_id for d in damaged}
        self._left_out = [LeftOut(d.run_id, self.prefix + d.run_id, d.reason) for d in damaged]
        for plan in self._plans:
            if (damaged_id := trees.get(root_run_id(plan.run_id))) is not None:
                self._left_out.append(LeftOut(plan.run_id, plan.target_id, f"its tree holds {damaged_id!r}, damaged"))
        self._plans = [p for p in self._plans if root_run_id(p.run_id) not in trees]
        conflicts = [c for c in conflicts if root_run_id(c.run_id) not in trees]
        if conflicts:
            raise ImportConflict(conflicts)
        self._checked = True

    async def write(self, on_progress: Callable[[BundleProgress], None] | None = None) -> ImportReport:
        """Write the runs ``check`` found, each in one transaction.

        Raises ``ImportStopped`` when the store (or the bundle) fails, naming the runs written
        and those not; ``ImportConflict`` when another writer took a name of a run meanwhile
        (then that run is not written). An interruption is raised as it came, ``account``
        saying what was written."""
        if not self._checked:
            await self.check()
        copied = 0
        for plan in self._plans:
            written = 0
            if plan.outcome != "identical":
                try:
                    written = await self._copy(plan)
                except StepTakenError as exc:
                    reason = f"{exc.name!r} was written meanwhile with other bytes, so none of the run was written"
                    raise ImportConflict(
                        [RunConflict(plan.run_id, plan.target_id, reason)], written=self.written
                    ) from exc
                except BaseException as exc:
                    await self._settle(plan)
                    if isinstance(exc, AgentTuiError | OSError):
                        raise ImportStopped(_cause(exc), self) from exc
                    raise
            copied += written
            self.done.append(ImportedRun(plan.run_id, plan.target_id, plan.outcome, written, plan.records))
            if on_progress is not None:
                on_progress(BundleProgress(len(self.done), len(self._plans), plan.run_id, copied))
        manifest = await read_manifest(self.bundle)
        redacted = tuple(path for path, count in manifest.redactions if count) if manifest else ()
        return ImportReport(self.bundle.display_url, tuple(self.done), redacted, tuple(self._left_out))

    async def _copy(self, plan: _Plan) -> int:
        """The run's records past those the store holds, in one ``insert_many``: the run is held
        in memory while it is written, the price of writing it in one transaction."""
        self._writing = None
        items = [(entry.name, entry.data) async for entry in _skipping(self.bundle.load(plan.run_id), plan.held)]
        if not items:
            return 0
        self._writing = items[0]
        inserted = await self.store.insert_many(plan.target_id, items, refuse_conflicts=True)
        self._writing = None
        return sum(outcome.won for outcome in inserted)

    async def _settle(self, plan: _Plan) -> None:
        """After a failure while ``plan``'s run was written: whether its transaction committed
        (the connection was lost or the process interrupted as it did). The run is whole or
        absent, so its first record says which."""
        if self._writing is None:  # it failed before the store was asked to write anything
            return
        name, data = self._writing
        try:
            found = await self.store.get(plan.target_id, name)
        except BaseException:  # the store is gone too: say so (the first failure is raised)
            self.uncertain = plan.target_id
            return
        if found is not None and found.data == data:
            written = plan.records - plan.held
            self.done.append(ImportedRun(plan.run_id, plan.target_id, plan.outcome, written, plan.records))


def _cause(exc: BaseException) -> str:
    if isinstance(exc, AgentTuiError):
        return f"{exc.title}: {exc.message}"
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}"
    return type(exc).__name__


async def import_runs(
    bundle: Store | str | os.PathLike[str],
    store: Store,
    *,
    prefix: str = "",
    skip_damaged: bool = False,
    on_progress: Callable[[BundleProgress], None] | None = None,
) -> ImportReport:
    """Copy every run of ``bundle`` into ``store``; see the module's doc."""
    if isinstance(bundle, Store):
        return await BundleImport(bundle, store, prefix=prefix, skip_damaged=skip_damaged).run(on_progress)
    from agenttui.stores import open_store

    source = await open_store(os.fspath(bundle), read_only=True, create=False)
    try:
        return await BundleImport(source, store, prefix=prefix, skip_damaged=skip_damaged).run(on_progress)
    finally:
        await source.close()


@dataclass(frozen=True, slots=True)
class _Compared:
    held: int
    """How many of the run's records the store holds already, as a beginning of it, in order,
    byte for byte."""
    records: int
    """How many the bundle holds."""
    reason: str
    """Why the store's run conflicts with the bundle's ("" when it does not)."""
    damaged: DamagedRun | None
    """The bundle's rows of the run that cannot be copied as they are, if any."""


async def _compare(bundle: Store, run_id: str, store: Store, target_id: str) -> _Compared:
    """The bundle's run against the store's (``_Compared``), every row of the bundle's read."""
    mine, theirs = aiter(bundle.load(run_id)), aiter(store.load(target_id))
    try:
        compared = await _matched(run_id, mine, theirs)
    finally:  # a conflict leaves the store's run part read: release what they hold now (A8)
        for entries in (mine, theirs):
            if isinstance(entries, AsyncGenerator):
                await entries.aclose()
    held, total = compared.held, compared.records
    if compared.damaged is None and not compared.reason and 0 < held < total and store.IMPLEMENTS_LEASES:
        from agenttui.journal.keys import root_run_id

        lease = await store.get_lease(root_run_id(target_id))
        if lease is not None and lease.live:
            reason = f"it holds the bundle's first {held} records and is being driven ({lease.holder})"
            return _Compared(held, total, reason, None)
    return compared


async def _matched(run_id: str, mine: AsyncIterator[Entry], theirs: AsyncIterator[Entry]) -> _Compared:
    held = total = 0
    ahead = True  # the store's records so far are the bundle's first ones
    reason = ""
    first_as: dict[str, int] = {}
    damaged: list[DamagedRow] = []
    count = 0
    async for entry in mine:
        index = total
        total += 1
        why = entry.damage or entry.retyped
        if not why and entry.name in first_as:
            # A file whose table lacks the unique constraint, or one written by hand: a store
            # keeps one record a name, so the run cannot be copied as it is.
            why = f"the run holds this step name twice (first as record {first_as[entry.name]})"
        first_as.setdefault(entry.name, index)
        if why:
            count += 1
            if len(damaged) < NAMED_ROWS:
                name = None if "its name is" in entry.damage else entry.name
                damaged.append(DamagedRow(index, entry.seq, name, why))
        if reason or not ahead:
            continue
        other = await anext(theirs, None)
        if other is None:
            ahead = False
        elif other.name != entry.name:
            reason = f"its record {held} is {other.name!r} where the bundle has {entry.name!r}"
        elif other.data != entry.data:
            reason = f"its record {held} ({entry.name}) holds other bytes than the bundle's"
        else:
            held += 1
    if not reason and ahead and (extra := await anext(theirs, None)) is not None:
        reason = f"it goes on past the bundle's {total} records (record {held} is {extra.name!r})"
    if count or not total:
        return _Compared(held, total, reason, DamagedRun(run_id, tuple(damaged), count))
    return _Compared(held, total, reason, None)


async def _skipping(entries: AsyncIterator[Entry], count: int) -> AsyncIterator[Entry]:
    async for entry in entries:
        if count:
            count -= 1
            continue
        yield entry

"""Bulk actions as real processes, raced and killed: two bulk cancels and a recover pass at once,
SIGKILL at random points, ctrl+c and SIGTERM midway, and a run changed while an apply runs.

Every store holds Go-shaped runs (``tests.gocorpus``), halted on ``charge`` or awaiting its
approval; what the tests count is rows in the store (``run:cancelled`` records per run), never
statuses, so a doubled or lost write cannot hide behind a status that reads right.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

from agenttui.journal import keys
from agenttui.runs.recovery.actions import resolve_halt
from agenttui.runs.recovery.lease import new_holder
from agenttui.runs.selection.batch import APPLY_AT_ONCE, LEASE_PATIENCE
from agenttui.stores.base import Store
from agenttui.stores.postgres import PostgresStore
from agenttui.stores.sqlite import SQLiteStore
from tests.gocorpus import GoRun
from tests.incident import GATED, HALTED
from tests.pg import PostgresCluster

#: The recover pass's agent: its drive of each of these runs pauses again, writing nothing.
PAUSING_AGENT = "tests.agent.pausing_agent:factory"
RACE_RUNS = 1000
KILL_RUNS = 300
#: How long a lease a killed process held lives on (``runs.lease.DEFAULT_TTL``), and some slack.
LEASE_LAPSE = 30.0 + 2.0


def incident(count: int) -> dict[str, GoRun]:
    """``count`` runs: two in three halted on charge, one in three awaiting approval of it."""
    return {f"run-{n:04}": GATED if n % 3 == 2 else HALTED for n in range(count)}


def records_of(count: int) -> dict[str, list[tuple[str, bytes]]]:
    return {run_id: dataclasses.replace(case, run_id=run_id).entries() for run_id, case in incident(count).items()}


async def fill(store: Store, count: int) -> None:
    """The runs, each in one transaction, a few dozen at a time."""
    items = list(records_of(count).items())
    for start in range(0, len(items), 50):
        await asyncio.gather(*(store.insert_many(run_id, entries) for run_id, entries in items[start : start + 50]))


@dataclass(frozen=True)
class Incident:
    """A store of Go-shaped runs, as a URL the CLI opens and a way to open it here."""

    url: str
    count: int
    schema: str = ""

    async def open(self) -> Store:
        if self.schema:
            return await PostgresStore.open(self.url.partition("?")[0], schema=self.schema)
        return await SQLiteStore.open(self.url)


class Templates:
    """SQLite files of incidents, one per size, built on first use and copied by each test."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.built = folder, dict[int, Path]()

    def copy(self, to: Path, count: int) -> Incident:
        if count not in self.built:
            path = self.folder / f"incident-{count}.db"
            with ThreadPoolExecutor(1) as builder:  # the caller may be inside an event loop
                builder.submit(asyncio.run, self._build(path, count)).result()
            self.built[count] = path
        shutil.copyfile(self.built[count], to)
        return Incident(str(to), count)

    @staticmethod
    async def _build(path: Path, count: int) -> None:
        store = await SQLiteStore.open(path)
        try:
            await fill(store, count)
        finally:
            await store.close()


@pytest.fixture(scope="session")
def sqlite_templates(tmp_path_factory: pytest.TempPathFactory) -> Templates:
    return Templates(tmp_path_factory.mktemp("bulk-templates"))


def sqlite_incident(templates: Templates, tmp_path: Path, count: int) -> Incident:
    return templates.copy(tmp_path / "incident.db", count)


async def postgres_incident(cluster: PostgresCluster, count: int) -> Incident:
    schema = "bulk_" + uuid.uuid4().hex[:10]
    store = await PostgresStore.open(cluster.dsn, schema=schema)
    try:
        await fill(store, count)
    finally:
        await store.close()
    separator = "&" if "?" in cluster.dsn else "?"
    return Incident(f"{cluster.dsn}{separator}schema={schema}", count, schema)


@pytest.fixture(params=["sqlite", "postgres"])
async def race_store(request: pytest.FixtureRequest, tmp_path: Path) -> Incident:
    if request.param == "sqlite":
        return sqlite_incident(request.getfixturevalue("sqlite_templates"), tmp_path, RACE_RUNS)
    return await postgres_incident(request.getfixturevalue("postgres_cluster"), RACE_RUNS)


async def rows(incident: Incident) -> dict[str, list[str]]:
    """Every run's record names, as stored, in order."""
    store = await incident.open()
    try:
        return {run_id: [e.name async for e in store.load(run_id)] async for run_id in store.runs()}
    finally:
        await store.close()


async def lease_rows(incident: Incident) -> list[str]:
    """The runs whose lease row is still there (lapsed or not)."""
    store = await incident.open()
    try:
        return [run_id for run_id in sorted(await rows(incident)) if await store.get_lease(run_id) is not None]
    finally:
        await store.close()


async def assert_cancelled_once_each(incident: Incident) -> None:
    """Every run holds exactly one run:cancelled, and every record it held before."""
    stored = await rows(incident)
    assert len(stored) == incident.count
    originals = records_of(incident.count)
    for run_id, names in stored.items():
        assert names.count(keys.RUN_CANCELLED) == 1, (run_id, names)
        assert [name for name in names if name != keys.RUN_CANCELLED] == [n for n, _ in originals[run_id]], run_id


def leases_in_file(path: str) -> list[str]:
    """The lease rows of a SQLite file, read without the store (whose opening may wait on a writer
    that is stopped); none when the file cannot be read at once."""
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.2)) as conn:
            return [run_id for (run_id,) in conn.execute("SELECT run_id FROM bide_leases")]
    except sqlite3.OperationalError:
        return []


#: The processes a test started, killed at its teardown should it fail with one still running
#: (or stopped: a SIGSTOPped apply would hold its SQLite file for good).
STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def no_process_left() -> Iterator[None]:
    yield
    while STARTED:
        process = STARTED.pop()
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)


def command(*args: str, stdout: IO[str] | int = subprocess.PIPE) -> subprocess.Popen[str]:
    """``python -m agenttui ARGS`` started, not waited for (``tests.processes`` waits)."""
    environment = {k: v for k, v in os.environ.items() if k != "AGENTTUI_DEBUG"}
    process = subprocess.Popen(
        [sys.executable, "-m", "agenttui", *args],
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )
    STARTED.append(process)
    return process


def finished(process: subprocess.Popen[str], timeout: float = 90) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out or "", err


def json_outcomes(text: str) -> tuple[list[dict[str, str]], dict[str, int]]:
    """A ``--json --yes`` apply's lines: the outcomes, and its summary."""
    lines = [json.loads(line) for line in text.splitlines()]
    assert "summary" in lines[-1], lines[-3:]
    return lines[:-1], lines[-1]["summary"]


#: Why a cancel leaves a run the other cancel has done: read again under its lease (the other
#: wrote between this one's selection and its turn), or read at selection after the other wrote.
SKIP_REASONS = ("its status changed since it was selected: was ", "it has ended (cancelled)")


@pytest.mark.slow
async def test_two_bulk_cancels_and_a_recover_at_once_cancel_each_run_exactly_once(
    race_store: Incident, tmp_path: Path
) -> None:
    url = race_store.url
    out_a, out_b = (tmp_path / "a.out").open("w+"), (tmp_path / "b.out").open("w+")
    started = time.monotonic()
    first = command("cancel", url, "--where", "status=halted,awaiting-approval", "--reason", "a", "--yes", "--json", stdout=out_a)  # fmt: skip
    recover = command("recover", url, "--agent", PAUSING_AGENT)
    second = command("cancel", url, "--where", "id=run-*", "--reason", "b", "--yes", "--json", stdout=out_b)
    code_a, _, err_a = finished(first)
    code_b, _, err_b = finished(second)
    code_r, report, err_r = finished(recover)
    took = time.monotonic() - started
    assert (code_a, code_b) == (0, 0), (err_a, err_b)
    assert code_r == 0, report + err_r
    out_a.seek(0), out_b.seek(0)
    done_a, summary_a = json_outcomes(out_a.read())
    done_b, summary_b = json_outcomes(out_b.read())

    await assert_cancelled_once_each(race_store)
    # Each run done by exactly one of the two; the other left it, saying why, or never selected it.
    done = Counter(o["run_id"] for o in done_a + done_b if o["result"] == "done")
    assert len(done) == race_store.count and set(done.values()) == {1}
    assert summary_a["done"] + summary_b["done"] == race_store.count
    assert summary_a["failed"] == summary_b["failed"] == 0
    skipped = [o for o in done_a + done_b if o["result"] == "skipped"]
    assert all(o["detail"].startswith(SKIP_REASONS) for o in skipped), Counter(o["detail"] for o in skipped)
    assert summary_a["fitting"] + summary_b["fitting"] == race_store.count + len(skipped)
    # The recover pass wrote nothing: it drove each run it got to a pause, or found it ended.
    recovered = next((line for line in report.splitlines() if line.startswith("recovered ")), None)
    assert recovered is not None, report  # after what runs a tool first, if any does
    assert await lease_rows(race_store) == []
    print(f"\n{race_store.count} runs raced in {took:.1f} s: cancel a {summary_a}, cancel b {summary_b}; {recovered}")


def outcome_lines(process: subprocess.Popen[str], count: int) -> list[str]:
    """The first ``count`` outcome lines of a streaming apply (its heading lines passed over).

    Read from the pipe itself, a byte at a time: the text wrapper's ``readline`` reads ahead, and
    what it holds ``communicate`` (which reads the pipe) never sees, so the outcome lines just
    after these went uncounted (a test that failed now and then by a few lines)."""
    assert process.stdout is not None
    pipe = process.stdout.fileno()
    seen: list[str] = []
    while len(seen) < count:
        line = bytearray()
        while not line.endswith(b"\n") and (byte := os.read(pipe, 1)):
            line += byte
        assert line, f"the apply ended after {len(seen)} outcome lines"
        text = line.decode()
        if text.startswith(("done ", "skipped ", "failed ")):
            seen.append(text)
    return seen


def apply_until_done(url: str, *, where: str = "id=run-*") -> tuple[int, str, str, float]:
    started = time.monotonic()
    code, out, err = finished(command("cancel", url, "--where", where, "--yes"))
    return code, out, err, time.monotonic() - started


def summary_of(out: str) -> str:
    """The summary line of an apply (the runs it left alone, if any, are named after it)."""
    return next(line for line in reversed(out.splitlines()) if line.startswith("cancel: ") and " done, " in line)


def held_line(out: str) -> str:
    """The line that counts the runs a live lease held, or ""."""
    return next((line for line in out.splitlines() if " held by a live lease" in line), "")


KILL_TRIALS = [("sqlite", 1), ("sqlite", 2), ("sqlite", 3), ("postgres", 4)]


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "seed"), KILL_TRIALS, ids=[f"{kind}-{seed}" for kind, seed in KILL_TRIALS])
async def test_a_bulk_cancel_killed_anywhere_finishes_on_a_rerun_writing_nothing_twice(
    kind: str, seed: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if kind == "sqlite":
        incident = sqlite_incident(request.getfixturevalue("sqlite_templates"), tmp_path, KILL_RUNS)
    else:
        incident = await postgres_incident(request.getfixturevalue("postgres_cluster"), KILL_RUNS)
    chance = random.Random(seed)
    applying = command("cancel", incident.url, "--where", "id=run-*", "--yes")
    if chance.random() < 0.5:
        outcome_lines(applying, chance.randrange(1, KILL_RUNS // 2))
    else:
        await asyncio.sleep(chance.uniform(0.5, 2.0))  # maybe still selecting, maybe mid-apply
    applying.send_signal(signal.SIGKILL)
    applying.communicate(timeout=10)
    stale = await lease_rows(incident)  # the runs in hand when it died keep their leases: nothing released them
    assert len(stale) <= APPLY_AT_ONCE, stale

    code, out, err, took = apply_until_done(incident.url)
    assert code == 0, err
    lines = out.splitlines()
    assert not [line for line in lines if line.startswith(("failed", "skipped"))], lines
    # A run the killed process held is selected by what its journal holds, not left out as in
    # flight: the rerun waits for its lease to lapse, then does it.
    assert took < (LEASE_PATIENCE + 10 if stale else 10), f"the rerun took {took:.1f} s"
    await assert_cancelled_once_each(incident)
    print(f"\nseed {seed}: rerun in {took:.1f} s; stale leases {stale}; summary {summary_of(out)!r}")


@pytest.mark.slow
async def test_a_run_whose_lease_a_killed_apply_held_is_done_by_the_rerun_once_the_lease_lapses(
    sqlite_templates: Templates, tmp_path: Path
) -> None:
    incident = sqlite_incident(sqlite_templates, tmp_path, KILL_RUNS)
    applying = command("cancel", incident.url, "--where", "id=run-*", "--yes")
    outcome_lines(applying, 20)
    for _ in range(200):  # stopped until it is caught holding a run's lease, then killed there
        applying.send_signal(signal.SIGSTOP)
        await asyncio.sleep(0.05)  # stopped for sure before the lease table is read
        if stale := leases_in_file(incident.url):
            break
        applying.send_signal(signal.SIGCONT)
        outcome_lines(applying, 1)
    applying.send_signal(signal.SIGKILL)
    applying.communicate(timeout=10)
    killed_at = time.monotonic()
    assert stale, "the apply was never caught holding a lease"
    held = stale[0]
    cancelled_before = keys.RUN_CANCELLED in (await rows(incident))[held]

    code, out, err, took = apply_until_done(incident.url)
    assert code == 0, err
    assert not [line for line in out.splitlines() if line.startswith(("failed", "skipped"))], out
    if not cancelled_before:
        assert f"done     {held}  cancelled: wrote run:cancelled" in out
    waited = time.monotonic() - killed_at
    assert took < LEASE_PATIENCE + 10, f"the rerun took {took:.1f} s"
    print(f"\nrerun in {took:.1f} s ({waited:.1f} s after the kill): {summary_of(out)!r}")
    await assert_cancelled_once_each(incident)


@pytest.mark.slow
async def test_a_run_changed_while_a_bulk_apply_runs_is_skipped_and_the_others_done(
    sqlite_templates: Templates, tmp_path: Path
) -> None:
    incident = sqlite_incident(sqlite_templates, tmp_path, KILL_RUNS)
    where = "status=halted"
    preview = finished(command("cancel", incident.url, "--where", where, "--json"))
    assert preview[0] == 0, preview[2]
    previewed = [run["run_id"] for run in json.loads(preview[1])["runs"]]
    changed = previewed[-1]
    # A person holds the last run's lease, one that lapses within the apply's patience, so the
    # apply selects the run by its journal (halted) and starts: it does every other run, then
    # comes back to it and waits; meanwhile the person resolves it, and lets the lease go. (The
    # lease is taken before the apply starts: taken after its first outcome, it raced an apply
    # that may have reached the last run by then.)
    person = await incident.open()
    try:
        holder = new_holder()
        assert await person.acquire_lease(changed, holder, LEASE_PATIENCE - 5)
        applying = command("cancel", incident.url, "--where", where, "--yes", "--json")
        assert applying.stdout is not None
        lines = [applying.stdout.readline() for _ in range(len(previewed) - 1)]
        assert all(json.loads(line)["result"] == "done" for line in lines)
        await resolve_halt(person, changed, "toolu_05", fired=False)
        await person.release_lease(changed, holder)
    finally:
        await person.close()
    code, out, err = finished(applying)
    assert code == 0, err
    outcomes, summary = json_outcomes("".join(lines) + out)
    by_run = {o["run_id"]: o for o in outcomes}
    assert sorted(by_run) == sorted(previewed)
    assert by_run[changed] == {
        "run_id": changed,
        "result": "skipped",
        "detail": "its status changed since it was selected: was halted, now stalled",
    }
    assert summary["done"] == len(previewed) - 1 and summary["skipped"] == 1 and summary["failed"] == 0


@pytest.mark.slow
def test_an_apply_after_a_preview_acts_on_the_runs_as_they_are_then(
    sqlite_templates: Templates, tmp_path: Path
) -> None:
    incident = sqlite_incident(sqlite_templates, tmp_path, KILL_RUNS)
    where = "status=halted"
    preview = finished(command("cancel", incident.url, "--where", where, "--json"))
    previewed = json.loads(preview[1])
    changed = previewed["runs"][3]["run_id"]
    resolved = finished(command("resolve", incident.url, changed, "toolu_05", "--not-fired"))
    assert resolved[0] == 0, resolved[2]
    code, out, err = finished(command("cancel", incident.url, "--where", where, "--yes", "--json"))
    assert code == 0, err
    outcomes, summary = json_outcomes(out)
    # The apply selects again: the run that is stalled now is no longer matched, so neither done nor skipped.
    assert changed not in {o["run_id"] for o in outcomes}
    assert summary["done"] == summary["fitting"] == previewed["fitting"] - 1


@pytest.mark.slow
@pytest.mark.parametrize(("stop", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["sigint", "sigterm"])
async def test_a_bulk_apply_stopped_midway_says_how_far_it_got_and_a_rerun_finishes_at_once(
    sqlite_templates: Templates, tmp_path: Path, stop: signal.Signals, code: int
) -> None:
    incident = sqlite_incident(sqlite_templates, tmp_path, KILL_RUNS)
    applying = command("cancel", incident.url, "--where", "id=run-*", "--yes")
    seen = outcome_lines(applying, 40)
    applying.send_signal(stop)
    returned, out, err = finished(applying)
    assert returned == code, err
    done = len(seen) + sum(line.startswith("done ") for line in out.splitlines())
    summary, said = err.strip().splitlines()[-2:]
    assert summary == (
        f"cancel: {done} done, 0 skipped, 0 failed of {KILL_RUNS} runs; "
        f"stopped with {KILL_RUNS - done} left: run it again to finish them"
    )
    assert said in ("agenttui: interrupted", "agenttui: terminated: leases released, nothing half-written")
    assert await lease_rows(incident) == []
    again, out, err, took = apply_until_done(incident.url)
    assert again == 0, err
    # The runs in hand when it stopped were stopped too: each wrote its record whole, or nothing
    # (one whose insert had committed is done, unreported, and the rerun finds it ended).
    rest = int(summary_of(out).split(" done,")[0].removeprefix("cancel: "))
    assert KILL_RUNS - done - APPLY_AT_ONCE <= rest <= KILL_RUNS - done
    assert summary_of(out) == f"cancel: {rest} done, 0 skipped, 0 failed of {rest} runs"
    assert took < 10
    await assert_cancelled_once_each(incident)

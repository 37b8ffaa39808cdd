"""Every command the CLI registers, run against every store of the hostile corpus.

The commands are read from the ``agenttui`` group itself (subgroups too), so a command added
tomorrow is run here the day it lands; one without an argument recipe below fails the test, so it
cannot land uncovered. Each run must end with an exit code from the table, no traceback, nothing a
terminal would act on in its output, and, for a command that only reads, the store's bytes and its
directory as they were. A command that writes, run without ``--yes`` and without a terminal, writes
only what it names when it succeeds, and nothing when it refuses.

Commands run in-process (``CliRunner`` on ``agenttui.cli.main``); a few run through
``python -m agenttui`` as well, to prove the real entry point.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import quote

import asyncpg
import click
import pytest
from click.testing import CliRunner

from agenttui.cli import EXIT_CODES, main
from agenttui.journal.keys import llm_key
from tests.hardening.hostile_corpus import OSC52, CorpusStore, build_odd_paths, build_postgres_schema
from tests.hardening.test_hostile_content import TERMINAL_ACTIVE
from tests.hardening.test_read_only import AUDIT
from tests.pg import PostgresCluster

AGENT = "agenttui.demo.build:factory"
#: Names no store holds, themselves hostile: errors quote them.
NO_RUN = f"no-such-run{OSC52}"
#: An MCP client's first words: initialize, then initialized (``agenttui mcp`` reads them on stdin).
MCP_HELLO = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"hostile-test","version":"1"}}}\n'
    '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
)
NO_STEP = f"@llm/99{OSC52}"


def registered_commands(group: click.Group = main, prefix: tuple[str, ...] = ()) -> dict[str, click.Command]:
    """Every command of ``group``, subgroups walked, by its words (``"runs"``, ``"a b"``)."""
    found: dict[str, click.Command] = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found |= registered_commands(command, (*prefix, name))
        else:
            found[" ".join((*prefix, name))] = command
    return found


COMMANDS = sorted(registered_commands())


@dataclass(frozen=True)
class Call:
    """One invocation: its arguments after the command's words, and what it may do."""

    args: list[str]
    writes: bool = False
    """It may write to the store it is given (when it succeeds; a refusal writes nothing)."""
    stdin: str = ""
    expect: tuple[int, ...] = ()
    """The exit codes it must end with, if it matters here (any code from the table otherwise)."""


@dataclass(frozen=True)
class Aids:
    """Files a recipe hands a command besides the store."""

    value: Path
    """A fork's new value: a model turn's message with hostile text."""
    mermaid: Path
    """A Mermaid file whose labels hold escapes."""
    bundle: Path
    """A bundle of good runs, to import into a store."""
    out: Path
    """A directory of its own for new files (an export, a fork saved ``--into``)."""
    odd: tuple[Path, ...] = ()
    """Output paths that are no regular file (``build_odd_paths``): a link, a FIFO, a socket, a device."""


def into_odd_paths(make: Callable[[CorpusStore, Path], list[str]]) -> Recipe:
    """A command's output given each odd path, on one store (the paths are the subject here):
    refused in one line, exit 2, the path as it was."""

    def recipe(store: CorpusStore, aids: Aids) -> list[Call]:
        if store.name != "escapes":
            return []
        return [Call(make(store, path), expect=(2,)) for path in aids.odd]

    return recipe


def featured(store: CorpusStore) -> list[str]:
    """The runs a command is run on: the corpus lists the telling ones first; a run no store
    holds too, but on the 20 MB store (each command reads its run whole: time better spent)."""
    return [*store.runs[:3], *([NO_RUN] if store.name != "huge" else [])]


def step_of(store: CorpusStore, run_id: str) -> str:
    return store.steps.get(run_id, llm_key(0))


def call_of(store: CorpusStore, run_id: str) -> str:
    return store.calls.get(run_id, f"call{OSC52}")


Recipe = Callable[[CorpusStore, Aids], list[Call]]


def per_run(make: Callable[[CorpusStore, str], list[Call]]) -> Recipe:
    def recipe(store: CorpusStore, aids: Aids) -> list[Call]:
        return [call for run_id in featured(store) for call in make(store, run_id)]

    return recipe


def views(*variants: list[str]) -> Recipe:
    return per_run(lambda store, run_id: [Call([store.url, run_id, *variant]) for variant in variants])


def _fork(store: CorpusStore, aids: Aids) -> list[Call]:
    calls = []
    for run_id in featured(store):
        at = ["--at", step_of(store, run_id), "--set", str(aids.value)]
        calls += [
            Call([store.url, run_id, *at]),
            Call([store.url, run_id, *at, "--json", "--until", "divergence"]),
            Call([store.url, run_id, "--at", NO_STEP, "--set", str(aids.value)]),
            Call([store.url, run_id, *at, "--save"]),  # no --yes, no terminal: refused
            Call([store.url, run_id, *at, "--into", str(aids.out / "fork.db"), "--force"]),
            Call([store.url, run_id, *at, "--into", store.url]),  # the store itself: refused
        ]
    at = ["--at", step_of(store, store.runs[0]), "--set", str(aids.value)]
    return calls + into_odd_paths(lambda store, path: [store.url, store.runs[0], *at, "--into", str(path), "--force"])(
        store, aids
    )


def _compare(store: CorpusStore, aids: Aids) -> list[Call]:
    a, b, *_ = [*featured(store), NO_RUN]
    return [
        Call([store.url, a, b]),
        Call([store.url, a, b, "--json"]),
        Call([store.url, a, a, "--other-store", store.url, "--json"]),
        Call([store.url, b, a, "--other-store", str(aids.bundle)]),
    ]


def _export(store: CorpusStore, aids: Aids) -> list[Call]:
    new, traces = str(aids.out / "bundle.db"), str(aids.out / "traces.jsonl")
    calls = [
        *into_odd_paths(lambda store, path: [store.url, store.runs[0], "-o", str(path), "--force"])(store, aids),
        *into_odd_paths(lambda store, path: [store.url, store.runs[0], "--otel", str(path), "--force"])(store, aids),
        Call([store.url, store.runs[0], "--otel", store.url, "--force"]),  # the store itself: refused
        Call([store.url, store.runs[0], "--otlp", "http://127.0.0.1:9", "--timeout", "0.2"], expect=(2,)),
        Call([store.url, "--status", "unreadable", "--status", "complete", "-o", new, "--force"]),
        Call([store.url, "--filter", "\x1b", "-o", new, "--force"]),
        Call([store.url, "--sample", "2", "-o", new, "--force"]),
        Call([store.url, store.runs[0], "-o", store.url, "--force"]),  # the store itself: refused
    ]
    for run_id in featured(store):
        calls += [
            Call([store.url, run_id, "-o", new, "--force", "--redact", "q"]),
            Call([store.url, run_id, "--jsonl", "-o", "-"]),
        ]
    # The telling runs as traces at once (a process each call is most of a call's time): their
    # records, then a replay of each, content and redaction in.
    runs = store.runs[:3]
    calls += [
        Call([store.url, *runs, "--otel", traces, "--force", "--content", "--redact", "q"]),
        Call([store.url, *runs, "--otel", "-", "--replay", "--content"]),
    ]
    return calls


def _import(store: CorpusStore, aids: Aids) -> list[Call]:
    return [
        Call([store.url, str(aids.out / "imported.db"), "--create"]),  # the corpus store as a bundle
        Call([str(aids.bundle), store.url], writes=True),
        Call([str(aids.bundle), store.url, "--prefix", f"p{OSC52}"], writes=True),
        Call([store.url, store.url]),
    ]


def _resolve(store: CorpusStore, run_id: str) -> list[Call]:
    call = call_of(store, run_id)
    return [
        Call([store.url, run_id, call, "--not-fired"], writes=True),
        Call([store.url, run_id, call, "--fired", "--result", '{"ok":true}'], writes=True),
        Call([store.url, run_id, call, "--fired", "--result", "{bad"], writes=True),
    ]


RECIPES: dict[str, Recipe] = {
    # One bad row, page or index never hides the other runs: a store holding a journal lists.
    "runs": lambda store, aids: [
        Call([store.url], expect=(0,) if store.journal else (2,)),
        Call([store.url, "--json"], expect=(0,) if store.journal else (2,)),
        Call([store.url, "--status", "unreadable", "--json"]),
        Call([store.url, "--where", "status=halted,unreadable or not idle<2h or id='*>*' or lease=w*", "--json"]),
        Call([store.url, "--where", "stauts=halted"], expect=(2,)),
    ],
    "show": views([], ["--json"], ["--at", "1"], ["--at", "2", "--json"], ["--at", "99"]),
    # Every run's spend, a line a turn of each featured run, by model and tool, a filter's.
    "cost": lambda store, aids: [
        Call([store.url], expect=(0,) if store.journal else (2,)),
        Call([store.url, "--by", "model", "--json"], expect=(0,) if store.journal else (2,)),
        Call([store.url, "--by", "tool", "--where", "status=unreadable,halted or id='*\x1b*'"], expect=(0, 1, 2)),
        *views([], ["--json"])(store, aids),
    ],
    "events": views([], ["--json"]),
    "mermaid": views([], ["--ascii", "--width", "80"], ["--ascii", "--plain", "--width", "40"]),
    "draw": lambda store, aids: (
        [Call([str(aids.mermaid)]), Call([str(aids.mermaid), "--plain", "--width", "30"])]
        + ([Call([store.url])] if os.path.exists(store.url) else [])  # a store is no Mermaid text
    ),
    "replay": lambda store, aids: [
        *views([], ["--json"], ["--until", "divergence", "--json"], ["--agent", AGENT])(store, aids),
        # A suite: every run, or a filter's, a line or a JSON verdict each, and JUnit XML.
        Call([store.url, "--all", "--junit", str(aids.out / "replays.xml")]),
        Call([store.url, "--where", "status=unreadable,halted or id='*\x1b*'", "--json", "--agent", AGENT]),
        *into_odd_paths(lambda store, path: [store.url, "--all", "--junit", str(path)])(store, aids),
    ],
    "compare": _compare,
    "fork": _fork,
    "open": lambda store, aids: [
        Call([store.url, "--agent", "no.such.module:factory"]),  # refused before the TUI starts
        Call([str(aids.out / "missing.db")]),
        Call([store.url, "--run", "no-such-run"]),  # no such run: refused before the TUI starts
    ],
    # Refusals only: a store that opens is served until stopped (tests/web drive the server).
    "serve": lambda store, aids: [
        Call([str(aids.out / "missing.db")], expect=(2,)),
        Call([store.url, "--port", "70000"], expect=(2,)),
    ],
    # The shared run index: PostgreSQL's alone (a SQLite store is refused, exit 2). Whether an
    # index is there when each runs depends on the order the commands' tests run in: either way
    # each ends with a code from the table, and none writes to the journal's rows.
    # The config file: the test's own, none (no store is read).
    "config path": lambda store, aids: [Call([])],
    "config check": lambda store, aids: [Call([])],
    "config keys": lambda store, aids: [Call([]), Call(["--json"])],
    "index install": lambda store, aids: [Call([store.url], writes=True)],
    "index run": lambda store, aids: [Call([store.url, "--once", "--holder", f"h{OSC52}"], writes=True)],
    "index status": lambda store, aids: [Call([store.url]), Call([store.url, "--json"])],
    "index uninstall": lambda store, aids: [Call([store.url]), Call([store.url, "--yes"], writes=True)],
    "demo": lambda store, aids: [
        Call(["--path", store.url, "--no-tui", "--bulk-turns", "1"]),
        # --force replaces a file that is no journal (another application's), never a journal.
        Call(["--path", store.url, "--no-tui", "--bulk-turns", "1", "--force"], writes=True),
        Call(["--path", store.url, "--no-tui", "--bulk-turns", "1", "--fresh"], writes=True),
        *into_odd_paths(lambda store, path: ["--path", str(path), "--no-tui", "--bulk-turns", "1", "--force"])(
            store, aids
        ),
    ],
    "export": _export,
    "import": _import,
    "approve": per_run(lambda store, run_id: [Call([store.url, run_id, call_of(store, run_id)], writes=True)]),
    "deny": per_run(
        lambda store, run_id: [Call([store.url, run_id, call_of(store, run_id), "--approver", OSC52], writes=True)]
    ),
    "answer": per_run(
        lambda store, run_id: [
            Call([store.url, run_id, store.questions.get(run_id, f"q{OSC52}"), "yes"], writes=True),
            Call([store.url, run_id, "q", "{not json"], writes=True),
        ]
    ),
    "resolve": per_run(_resolve),
    "cancel": per_run(lambda store, run_id: [Call([store.url, run_id, "--reason", OSC52], writes=True)]),
    "redrive": per_run(lambda store, run_id: [Call([store.url, run_id, "--agent", AGENT], writes=True)]),
    "recover": lambda store, aids: [Call([store.url, "--agent", AGENT], writes=True)],
    "mcp": lambda store, aids: [
        # A client that says hello and goes: the server answers on stdout, then ends at EOF.
        Call([store.url], stdin=MCP_HELLO, expect=(0,) if store.journal else (2,)),
        Call(
            [store.url, "--allow-writes", "--budget", "2000"], stdin=MCP_HELLO, expect=(0,) if store.journal else (2,)
        ),
        Call([store.url, "--agent", AGENT], expect=(2,)),  # a write tool without --allow-writes: refused
    ],
    "release": per_run(
        lambda store, run_id: [
            Call([store.url, run_id], writes=True),
            Call([store.url, run_id, "--force"], writes=True),  # no --yes, no terminal: refused if live
        ]
    ),
}


def test_the_commands_of_a_subgroup_are_found_too() -> None:
    @click.group()
    def top() -> None:
        pass

    @top.group("runs")
    def sub() -> None:
        pass

    @sub.command("prune")
    def prune() -> None:
        pass

    @top.command("show")
    def show() -> None:
        pass

    assert sorted(registered_commands(top)) == ["runs prune", "show"]


def test_every_command_has_a_recipe() -> None:
    """A command nobody wrote a recipe for would go untested: adding one means adding its recipe."""
    missing = sorted(set(COMMANDS) - set(RECIPES))
    assert not missing, f"commands with no recipe in {__name__}.RECIPES: {missing}"
    assert not set(RECIPES) - set(COMMANDS), "recipes for commands that no longer exist"


# -- what every invocation must do ------------------------------------------------------------


def listing(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def contents(path: Path) -> dict[str, object]:
    """What a SQLite file holds, table by table (a table that cannot be read: why), its schema
    and journal mode: what a write that was refused must leave as it was.

    Taking a run's lease and releasing it again changes bytes, not contents; a lapsed lease may
    be taken over and released, as every driver of the SDK does, but a live one never."""
    # immutable: a look that takes no lock and leaves nothing beside the file.
    with closing(sqlite3.connect(f"file:{quote(str(path))}?mode=ro&immutable=1", uri=True)) as conn:
        schema = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
        held: dict[str, object] = {"schema": schema, "journal mode": path.read_bytes()[18:20]}
        for kind, name, _ in schema:
            if kind == "table":
                live = " WHERE expiry > unixepoch()" if name.endswith("leases") else ""
                try:
                    held[name] = sorted(map(repr, conn.execute(f'SELECT * FROM "{name}" NOT INDEXED{live}')))
                except sqlite3.DatabaseError as exc:
                    held[name] = str(exc)
    return held


@dataclass
class Outcome:
    args: list[str]
    code: int
    stdout: str
    stderr: str


def problems(outcome: Outcome, expect: tuple[int, ...] = ()) -> Iterator[str]:
    """What is wrong with one invocation's output, whatever the command and the store."""
    if outcome.code not in EXIT_CODES:
        yield f"exit code {outcome.code} is not in the table"
    elif expect and outcome.code not in expect:
        yield f"exit code {outcome.code}, where {' or '.join(map(str, expect))} was due"
    for stream, text in (("stdout", outcome.stdout), ("stderr", outcome.stderr)):
        if "Traceback" in text:
            yield f"a traceback on {stream}"
        if found := TERMINAL_ACTIVE.search(text):
            yield f"a control byte {found.group()!r} on {stream}"


def shown(args: list[str]) -> str:
    return " ".join(arg.encode("unicode_escape").decode()[:60] for arg in args)


def run_in_process(args: list[str], stdin: str) -> Outcome:
    result = CliRunner().invoke(main, args, input=stdin, env={"AGENTTUI_DEBUG": ""})
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += f"\nTraceback (escaped the entry point): {type(result.exception).__name__}: {result.exception}"
    return Outcome(args, result.exit_code, result.stdout, stderr)


def run_in_subprocess(args: list[str], stdin: str) -> Outcome:
    env = {k: v for k, v in os.environ.items() if k != "AGENTTUI_DEBUG"}
    done = subprocess.run(
        [sys.executable, "-m", "agenttui", *args],
        check=False, capture_output=True, input=stdin.encode(), env=env, timeout=120,
    )  # fmt: skip
    return Outcome(
        args, done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    )


@pytest.fixture(scope="module")
def aids(tmp_path_factory: pytest.TempPathFactory, hostile_corpus: dict[str, CorpusStore]) -> Aids:
    base = tmp_path_factory.mktemp("aids")
    value = base / "value.json"
    value.write_text('{"role":"assistant","parts":[{"type":"text","text":"what if \\u001b]52;c;eA==\\u0007"}]}')
    mermaid = base / "evil.mmd"
    mermaid.write_text(
        f'flowchart TD\n  start([user])\n  n0["{OSC52}\x9b2J\u202e"]\n  start --> n0\n  n1["\x1b[31m#quot;"]\n'
        "  n0 --> n1\n  n1 --> done([done])\n"
    )
    bundle = base / "bundle.db"
    shutil.copy(hostile_corpus["escapes"].url, bundle)  # every run of it is one a store may lack
    odd = tuple(path for path, _ in build_odd_paths(base).values())
    return Aids(value, mermaid, bundle, base, odd)


#: Where a recipe puts new files; each invocation gets a directory of its own in its place.
OUT = Path("/@out@")


def run_recipe(
    command: str,
    stores: list[CorpusStore],
    aids: Aids,
    tmp_path: Path,
    run: Callable[[list[str], str], Outcome],
    most: int | None = None,
) -> list[str]:
    """Run ``command``'s recipe (its first ``most`` calls) on a copy of each store; every problem
    found, one line each."""
    found: list[str] = []
    for store in stores:
        for n, call in enumerate(RECIPES[command](store, replace(aids, out=OUT))[:most]):
            home = tmp_path / f"{store.name}-{n}"
            (home / "out").mkdir(parents=True)
            copy = home / Path(store.url).name
            shutil.copy(store.url, copy)
            if call.writes:
                shutil.copy(store.url, tmp_path / "was.db")
            args = [str(copy) if a == store.url else a.replace(str(OUT), str(home / "out")) for a in call.args]
            before = listing(home)
            outcome = run([*command.split(), *args], call.stdin)
            for problem in problems(outcome, call.expect):
                found.append(f"{store.name}: agenttui {command} {shown(args)}: {problem}\n{outcome.stderr[-2000:]}")
            after = listing(home)
            said = f"{store.name}: agenttui {command} {shown(args)} (exit {outcome.code})"
            if not call.writes and after != before:
                changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
                found.append(f"{said} only reads, yet changed {changed}")
            elif call.writes and outcome.code != 0:
                if set(after) != set(before):
                    found.append(f"{said} refused, yet left {sorted(set(after) ^ set(before))}")
                elif (now := contents(copy)) != (was := contents(tmp_path / "was.db")):
                    changed = sorted(k for k in set(was) | set(now) if was.get(k) != now.get(k))
                    found.append(f"{said} refused, yet wrote to {changed}")
    return found


def sqlite_stores(corpus: dict[str, CorpusStore]) -> list[CorpusStore]:
    return [store for store in corpus.values() if os.path.exists(store.url)]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_is_safe_on_every_hostile_store(
    command: str, hostile_corpus: dict[str, CorpusStore], aids: Aids, tmp_path: Path
) -> None:
    if command not in RECIPES:
        pytest.fail(f"agenttui {command} has no recipe: add one to RECIPES")
    found = run_recipe(command, sqlite_stores(hostile_corpus), aids, tmp_path, run_in_process)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("command", ["runs", "show", "fork", "approve", "export"])
def test_the_real_entry_point_is_as_safe(
    command: str, hostile_corpus: dict[str, CorpusStore], aids: Aids, tmp_path: Path
) -> None:
    """``python -m agenttui``, as a person runs it: the console entry point, real stdout and
    stderr, the process's exit code (a process each: the first call of each recipe)."""
    stores = [hostile_corpus[name] for name in ("escapes", "foreign", "damaged-index")]
    found = run_recipe(command, stores, aids, tmp_path, run_in_subprocess, most=1)
    assert not found, "\n".join(found)


# -- PostgreSQL ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PostgresCorpus:
    store: CorpusStore
    dsn: str
    schema: str

    def writes(self) -> tuple[list[tuple[str, str]], set[tuple[str, str]]]:
        """The writes audited since the last call (forgotten now), and the live leases."""

        async def read() -> tuple[list[tuple[str, str]], set[tuple[str, str]]]:
            conn = await asyncpg.connect(self.dsn)
            try:
                rows = await conn.fetch(f"DELETE FROM {self.schema}.audit RETURNING tbl, op")
                live = await conn.fetch(f"SELECT run_id, holder FROM {self.schema}.bide_leases WHERE expiry > now()")
                return [(row["tbl"], row["op"]) for row in rows], {(row["run_id"], row["holder"]) for row in live}
            finally:
                await conn.close()

        return asyncio.run(read())


@pytest.fixture(scope="module")
def postgres_corpus(postgres_cluster: PostgresCluster) -> PostgresCorpus:
    """The PostgreSQL schema of the corpus, its writes audited."""
    schema = "hostile_" + uuid.uuid4().hex[:10]

    async def build() -> CorpusStore:
        store = await build_postgres_schema(postgres_cluster.dsn, schema)
        conn = await asyncpg.connect(postgres_cluster.dsn)
        try:
            await conn.execute(AUDIT.format(s=schema))
        finally:
            await conn.close()
        return store

    return PostgresCorpus(asyncio.run(build()), postgres_cluster.dsn, schema)


@pytest.mark.postgres
@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_is_safe_on_a_hostile_postgres_schema(
    command: str, postgres_corpus: PostgresCorpus, aids: Aids, tmp_path: Path
) -> None:
    """As on SQLite, with what PostgreSQL's types allow (text holds no NUL, columns no NULL); the
    audit triggers see every row a command changes. A write that succeeds changes the schema
    for the calls after it, as a person's would."""
    if command not in RECIPES:
        pytest.fail(f"agenttui {command} has no recipe: add one to RECIPES")
    store, found = postgres_corpus.store, []
    _, live = postgres_corpus.writes()
    for n, call in enumerate(RECIPES[command](store, replace(aids, out=OUT))):
        out = tmp_path / str(n)
        out.mkdir()
        args = [a.replace(str(OUT), str(out)) for a in call.args]
        outcome = run_in_process([*command.split(), *args], call.stdin)
        said = f"postgres: agenttui {command} {shown(args)} (exit {outcome.code})"
        found += [f"{said}: {problem}\n{outcome.stderr[-2000:]}" for problem in problems(outcome, call.expect)]
        was_live, (written, live) = live, postgres_corpus.writes()
        if not call.writes and written:
            found.append(f"{said} only reads, yet wrote {written}")
        # A refused write may take a run's lease and give it back (or take over a lapsed one), as
        # every driver does; it writes no entry and breaks no live lease.
        elif call.writes and outcome.code != 0:
            if entries := [change for change in written if change[0] != "bide_leases"]:
                found.append(f"{said} refused, yet wrote {entries}")
            if live != was_live:
                found.append(f"{said} refused, yet changed the live leases: {was_live} -> {live}")
    assert not found, "\n".join(found)


def test_every_command_answers_help() -> None:
    for command in COMMANDS:
        outcome = run_in_process([*command.split(), "--help"], "")
        assert outcome.code == 0 and not list(problems(outcome)), (command, outcome)

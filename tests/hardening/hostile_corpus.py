"""A corpus of hostile stores: what a foreign writer, a damaged disk or an attacker leaves in a journal.

Each store is a file a person might hand agenttui: written through the codec where the codec can
write it (hostile run ids, step names and payloads), and byte for byte with ``sqlite3`` where it
cannot (ids stored as blobs and numbers, NULLs, columns of the wrong type, duplicate names, a
legacy ``steps`` table, a damaged data page, a damaged index page). ``build_corpus`` builds them
all once; the tests copy a store before each command, so no command sees another's writes.

PostgreSQL's types allow less (text is UTF-8 without NUL, the columns are NOT NULL): its schema
holds the hostile content those types allow (``build_postgres_schema``).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import stat
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from agenttui.journal import Journal, Message, Record, StepKind, TextPart, ToolUsePart, encode_record
from agenttui.journal.codec import go_json
from agenttui.journal.keys import attempt_key, llm_key, tool_key
from agenttui.journal.record import ModelInfo, Usage
from agenttui.stores.base import Store
from agenttui.stores.sqlite import SQLiteStore

# What a terminal would act on, one of each: a screen clear and a colour (CSI), the clipboard
# (OSC 52: "rm -rf ~ #"), a hyperlink (OSC 8), C1 controls (0x9b is CSI, 0x85 NEL), bidi
# overrides and isolates that reorder what is shown.
CSI = "\x1b[2J\x1b[31m"
OSC52 = "\x1b]52;c;cm0gLXJmIH4gIw==\x07"
OSC8 = "\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\"
C1 = "\x9b2J\x85"
BIDI = "\u202eevil\u202c\u2066iso\u2069"
MARKUP = "[@click=app.quit]click[/]"
EVERYTHING = CSI + OSC52 + OSC8 + C1 + BIDI + MARKUP + "\x00\x08\x7f\r"

#: JSON nested deeper than any reader goes (Go stops at 10,000 levels).
DEEP_LEVELS = 100_000
#: A value larger than any pane shows whole.
HUGE_BYTES = 20_000_000


@dataclass
class CorpusStore:
    """One store of the corpus and the names a command can be given for it."""

    name: str
    url: str
    """What a command is given: a file's path, or a PostgreSQL URL naming the schema."""
    runs: list[str]
    """Run ids as the CLI takes them (an id stored as a blob: the id the listing shows)."""
    steps: dict[str, str] = field(default_factory=dict)
    """A step name of a run (run id -> name): what ``fork --at`` and ``show`` point at."""
    calls: dict[str, str] = field(default_factory=dict)
    """A call of a run (run id -> raw call id): what ``approve``, ``deny`` and ``resolve`` name."""
    questions: dict[str, str] = field(default_factory=dict)
    """An interrupt a run waits on (run id -> name): what ``answer`` names."""
    journal: bool = True
    """Whether it holds a journal at all (another application's database does not)."""


# -- runs written through the codec ------------------------------------------------------------

R_COMPLETE = f"done{CSI}{OSC52}"
R_APPROVAL = f"wait{OSC8}{BIDI}"
R_HALTED = f"halt{C1}{MARKUP}"
R_ASKED = f"ask{BIDI}{OSC52}"
R_DEEP = "deep-nesting"
#: A run whose figures no int64 holds (a token count of 2^64 and more): one absurd run must not
#: blind a look at the others (the status index's SQLite, the cost's decimals).
R_ABSURD = "absurd-figures"
ABSURD = 2**64 + 1
CALL_APPROVAL = f"call{OSC52}{C1}"
CALL_HALTED = f"charge{CSI}"
CALL_DONE = f"look{BIDI}"
QUESTION = f"confirm{CSI}{BIDI}"
STEP = f"step{OSC52}{C1}{BIDI}"
TOOL = f"tool{CSI}{MARKUP}"


def _start(text: str) -> Record:
    return Record("run:start", StepKind.VALUE, result=go_json({"input": text, "kind": "agent"}))


def _calling(turn: int, text: str, call: str, tool: str) -> Record:
    args = go_json({"q": EVERYTHING, "\x1b]52;c;a2V5\x07": [EVERYTHING]})
    message = Message.assistant(TextPart(text), ToolUsePart(call, tool, args))
    return Record(llm_key(turn), StepKind.MODEL, message=message, finish="tool_use")


def _answer(turn: int, text: str) -> Record:
    return Record(llm_key(turn), StepKind.MODEL, message=Message.assistant(TextPart(text)), finish="stop")


def codec_runs() -> dict[str, list[Record]]:
    """Runs in every state a write command acts on, every name and payload hostile."""
    return {
        R_COMPLETE: [
            _start(EVERYTHING),
            _calling(0, EVERYTHING, CALL_DONE, TOOL),
            Record(
                tool_key(CALL_DONE),
                StepKind.TOOL_RESULT,
                tool_use_id=CALL_DONE,
                result=go_json({"echo": EVERYTHING}),
                is_error=True,
            ),
            Record(STEP, StepKind.VALUE, result=go_json(EVERYTHING)),
            _answer(1, EVERYTHING),
            Record("run:complete", StepKind.VALUE),
        ],
        R_APPROVAL: [_start(EVERYTHING), _calling(0, EVERYTHING, CALL_APPROVAL, TOOL)],
        R_HALTED: [
            _start(EVERYTHING),
            _calling(0, EVERYTHING, CALL_HALTED, TOOL),
            Record(
                attempt_key(CALL_HALTED),
                StepKind.ATTEMPT,
                tool_use_id=CALL_HALTED,
                attempted_at=1767225600123,
                claim="5608d3daa98f802ac851ca33910d95c3",
            ),
        ],
        R_ASKED: [_start(EVERYTHING), _calling(0, EVERYTHING, f"ask-{QUESTION}", TOOL)],
        R_ABSURD: [
            _start("count it"),
            Record(
                llm_key(0),
                StepKind.MODEL,
                message=Message.assistant(TextPart("big")),
                finish="stop",
                usage=Usage(input_tokens=ABSURD, output_tokens=10**30, cache_read_tokens=ABSURD),
                model=ModelInfo(provider="openai", model="gpt-4o"),
            ),
            Record("run:complete", StepKind.VALUE),
        ],
    }


async def _write_codec_runs(store: Store) -> None:
    journal = Journal(store)
    for run_id, records in codec_runs().items():
        for record in records:
            await journal.append(run_id, record)
    # Python's writer refuses JSON nested deeper than its parser reads, but a Go writer stores up
    # to 10,000 levels and any other writer more: such bytes reach a store as another writer puts them.
    await journal.append(R_DEEP, _start("parse it"))
    placeholder = Record("note:abyss", StepKind.VALUE, result=b'"abyss"', salt=os.urandom(32))
    abyss = b"[" * DEEP_LEVELS + b"]" * DEEP_LEVELS
    await store.insert(R_DEEP, placeholder.name, encode_record(placeholder).replace(b'"abyss"', abyss))
    await store.insert(
        R_DEEP, "note:unclosed", b'{"name":"note:unclosed","kind":"value","result":' + b"[" * DEEP_LEVELS
    )


def _codec_store(name: str, url: str) -> CorpusStore:
    return CorpusStore(
        name,
        url,
        runs=[R_COMPLETE, R_APPROVAL, R_HALTED, R_ASKED, R_DEEP, R_ABSURD],
        steps={R_COMPLETE: tool_key(CALL_DONE), R_APPROVAL: llm_key(0), R_HALTED: llm_key(0), R_DEEP: "note:abyss"},
        calls={R_APPROVAL: CALL_APPROVAL, R_HALTED: CALL_HALTED, R_COMPLETE: CALL_DONE},
        questions={R_ASKED: QUESTION},
    )


async def build_escapes(path: Path) -> CorpusStore:
    """The current layout, every name and payload hostile, written by the codec."""
    store = await SQLiteStore.open(path)
    try:
        await _write_codec_runs(store)
        await store.acquire_lease(R_HALTED, f"worker{OSC52}{BIDI}#1", ttl=-60)  # a lapsed lease quoting its holder
    finally:
        await store.close()
    return _codec_store("escapes", str(path))


async def build_huge(path: Path) -> CorpusStore:
    """A run whose tool returned 20 MB of text (with escapes at both ends)."""
    store = await SQLiteStore.open(path)
    try:
        journal = Journal(store)
        await journal.append("huge", _start("fetch it"))
        await journal.append("huge", _calling(0, "Fetching.", "fetch", "fetch_page"))
        value = OSC52 + "x" * HUGE_BYTES + CSI
        await journal.append(
            "huge", Record(tool_key("fetch"), StepKind.TOOL_RESULT, tool_use_id="fetch", result=go_json(value))
        )
        await journal.append("huge", _answer(1, "Fetched."))
        await journal.append("huge", Record("run:complete", StepKind.VALUE))
    finally:
        await store.close()
    return CorpusStore("huge", str(path), runs=["huge"], steps={"huge": tool_key("fetch")}, calls={"huge": "fetch"})


# -- stores only another writer leaves ---------------------------------------------------------


def _header() -> bytes:
    return b'{"name":"@journal","kind":"header","format":"bide.journal.v1-dev","salt":"' + b"A" * 43 + b'="}'


BLOB_ID = f"blob{OSC52}".encode() + b"\xff\xfe"
NUMBER_ID = 7
NOT_UTF8_ID = f"latin{OSC52}".encode() + b"\xe9t\xe9"
R_NULLS = f"nulls{CSI}"
R_TYPES = f"types{C1}"
R_DUPES = f"dupes{BIDI}"
R_TEXT_SEQ = f"text-seq{OSC8}"
R_MIXED_SEQ = "mixed-seq"
R_PLAIN = "plain"


def build_foreign(path: Path) -> CorpusStore:
    """A ``bide_steps`` another program made by hand: no types, no NOT NULL, no unique names.

    Ids stored as a blob, a number and NULL; NULL names and data; data stored as text, an
    integer and a real; ``seq`` stored as text (sorting "10" before "9"), as a real and a blob,
    and NULL; two entries of one name with different bytes.
    """
    rows: list[tuple[object, object, object, object]] = []
    numbered = iter(range(1, 1_000))

    def add(run_id: object, name: object, data: object) -> None:
        rows.append((next(numbered), run_id, name, data))

    start, complete = encode_record(_start(EVERYTHING)), encode_record(Record("run:complete", StepKind.VALUE))
    for run_id in (R_PLAIN, R_NULLS, R_TYPES, R_DUPES):
        add(run_id, "@journal", _header())
        add(run_id, "run:start", start)
    add(R_PLAIN, llm_key(0), encode_record(_answer(0, EVERYTHING)))
    add(R_PLAIN, "run:complete", complete)
    add(R_NULLS, None, encode_record(_answer(0, "a name that is NULL")))
    add(R_NULLS, llm_key(1), None)
    add(R_NULLS, None, None)
    rows.append((None, R_NULLS, "note:no-seq", encode_record(Record("note:no-seq", StepKind.VALUE, result=b"2"))))
    add(None, "run:start", start)
    add(R_TYPES, llm_key(0), encode_record(_answer(0, EVERYTHING)).decode())  # data as TEXT
    add(R_TYPES, "note:integer", 42)
    add(R_TYPES, "note:real", 4.2)
    add(R_TYPES, 12, encode_record(Record("12", StepKind.VALUE, result=b"12")))  # a name stored as a number
    add(R_TYPES, "note:text-with-nul", "{\x00}")
    add(R_DUPES, llm_key(0), encode_record(_calling(0, "first", CALL_APPROVAL, TOOL)))
    add(R_DUPES, llm_key(0), encode_record(_answer(0, "second, same name")))
    add(R_DUPES, "run:start", encode_record(_start("again")))
    add(R_DUPES, "run:complete", complete)
    add(R_DUPES, "run:complete", complete)
    for odd_id in (BLOB_ID, NUMBER_ID):
        add(odd_id, "@journal", _header())
        add(odd_id, "run:start", start)
    journal = [("@journal", _header()), ("run:start", start), (llm_key(0), encode_record(_answer(0, "seq"))),
               ("run:complete", complete)]  # fmt: skip
    # As text, "10" sorts before "9"; SQLite sorts numbers first, then text, then blobs.
    for run_id, seqs in ((R_TEXT_SEQ, ["9", "10", "11", "100"]), (R_MIXED_SEQ, [500, "501", 502.5, b"\x01"])):
        rows += [(at, run_id, name, data) for at, (name, data) in zip(seqs, journal, strict=True)]
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE bide_steps (seq, run_id, name, data)")
        conn.executemany("INSERT INTO bide_steps VALUES (?, ?, ?, ?)", rows)
        # Text that is not UTF-8 (Python's sqlite3 refuses to read it as text), as a C writer may leave.
        for name, data in (("@journal", _header()), ("run:start", start)):
            conn.execute(
                "INSERT INTO bide_steps VALUES (?, CAST(? AS TEXT), ?, ?)", (next(numbered), NOT_UTF8_ID, name, data)
            )
    return CorpusStore(
        "foreign",
        str(path),
        runs=[
            R_TEXT_SEQ, R_MIXED_SEQ, R_NULLS, R_TYPES, R_DUPES, R_PLAIN,
            BLOB_ID.decode("utf-8", "replace") + " (id stored as a blob)", "7 (id stored as a number)",
            "None (id stored as NULL)", NOT_UTF8_ID.decode("utf-8", "replace") + " (id not UTF-8)",
        ],
        steps={R_PLAIN: llm_key(0), R_DUPES: llm_key(0), R_TEXT_SEQ: llm_key(0), R_TYPES: llm_key(0)},
        calls={R_DUPES: CALL_APPROVAL},
    )  # fmt: skip


R_LEGACY = f"order{CSI}{BIDI}"
LEGACY_CALL = f"toolu_01{OSC52}"


def _legacy_json(value: object) -> bytes:
    """``json.Marshal`` of SDK v0.7 and before: HTML-escaped, compact, no salt."""
    text = json.dumps(value, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def build_legacy(path: Path) -> CorpusStore:
    """SDK v0.7's layout (``journal-format.md`` 4.1): table ``steps``, per-run seq, no header,
    tool results under the raw tool-use id."""
    turn = {"name": "@llm/0", "kind": "model", "message": {"role": "assistant", "parts": [
        {"text": EVERYTHING, "type": "text"},
        {"args": {"q": EVERYTHING}, "id": LEGACY_CALL, "name": TOOL, "type": "tool_use"}]}}  # fmt: skip
    result = {"name": LEGACY_CALL, "kind": "tool_result", "tool_use_id": LEGACY_CALL, "result": {"e": EVERYTHING}}
    final = {"name": "@llm/1", "kind": "model", "message": {"role": "assistant", "parts": [{"text": "<done>", "type": "text"}]}}  # fmt: skip
    rows = [
        (R_LEGACY, 0, "@llm/0", _legacy_json(turn)),
        (R_LEGACY, 1, LEGACY_CALL, _legacy_json(result)),
        (R_LEGACY, 2, "@llm/1", _legacy_json(final)),
        (R_LEGACY, 3, "run:complete", _legacy_json({"name": "run:complete", "kind": "value"})),
        ("order-2", 0, "@llm/0", _legacy_json(turn)),
    ]
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "CREATE TABLE steps (run_id TEXT NOT NULL, seq INTEGER NOT NULL, name TEXT NOT NULL,"
            " data BLOB NOT NULL, PRIMARY KEY (run_id, name))"
        )
        conn.execute("CREATE INDEX idx_steps_run_seq ON steps(run_id, seq)")
        conn.executemany("INSERT INTO steps VALUES (?, ?, ?, ?)", rows)
    return CorpusStore(
        "legacy", str(path), runs=[R_LEGACY, "order-2"], steps={R_LEGACY: LEGACY_CALL}, calls={R_LEGACY: LEGACY_CALL}
    )


# -- damaged pages ------------------------------------------------------------------------------

#: Long ids spread a few runs over several pages of the index (one damaged page is one of many).
PADDING = "p" * 600
#: Runs in each damaged store; the run ``DAMAGED_RUN`` holds the data page that is overwritten.
DAMAGED_RUNS = 6
DAMAGED_RUN = 3


def _page_size(data: bytes | bytearray) -> int:
    size = int.from_bytes(data[16:18], "big")
    return 65536 if size == 1 else size


def index_leaf_page(path: Path, index: str) -> int:
    """A leaf page of ``index`` (its number, from 1): its root's first child, or the root itself."""
    with closing(sqlite3.connect(path)) as conn:
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (index,)).fetchone()
    data = path.read_bytes()
    size = _page_size(data)
    header = (root - 1) * size + (100 if root == 1 else 0)
    if data[header] != 0x02:  # not an interior index page: the root is the only page
        return int(root)
    cell = (root - 1) * size + int.from_bytes(data[header + 12 : header + 14], "big")
    return int.from_bytes(data[cell : cell + 4], "big")  # a cell starts with its left child's number


def smash_page(path: Path, page: int) -> None:
    """Overwrite a page with bytes no b-tree page starts with, as a bad sector or a stray write does."""
    data = bytearray(path.read_bytes())
    size = _page_size(data)
    data[(page - 1) * size : page * size] = b"\xff" * size
    path.write_bytes(bytes(data))


def damaged_run_ids(prefix: str) -> list[str]:
    """The runs of a damaged store, long and hostile: the run on the damaged data page first."""
    run_ids = [f"{prefix}{n}-{CSI}{PADDING}" for n in range(DAMAGED_RUNS)]
    return [run_ids[DAMAGED_RUN], *run_ids[:DAMAGED_RUN], *run_ids[DAMAGED_RUN + 1 :]]


async def write_small_runs(path: Path, run_ids: list[str]) -> None:
    """A small complete run under each id, each with a marker naming it in its model turn."""
    store = await SQLiteStore.open(path)
    try:
        journal = Journal(store)
        for run_id in sorted(run_ids):
            await journal.append(run_id, _start(EVERYTHING))
            await journal.append(run_id, _answer(0, f"marker-{run_id[:4]}"))
            await journal.append(run_id, Record("run:complete", StepKind.VALUE))
    finally:
        await store.close()


async def build_damaged_index(path: Path) -> CorpusStore:
    """One page of the ``(run_id, seq)`` index ``bide_steps_run_seq`` overwritten; the table intact."""
    run_ids = damaged_run_ids("idx")
    await write_small_runs(path, run_ids)
    smash_page(path, index_leaf_page(path, "bide_steps_run_seq"))
    return CorpusStore("damaged-index", str(path), runs=run_ids, steps={run_ids[0]: llm_key(0)})


async def build_damaged_data(path: Path) -> CorpusStore:
    """One data page of ``bide_steps`` overwritten: the runs on it are lost, the others are not."""
    run_ids = damaged_run_ids("dat")
    await write_small_runs(path, run_ids)
    data = path.read_bytes()
    smash_page(path, data.index(f"marker-dat{DAMAGED_RUN}".encode()) // _page_size(data) + 1)
    return CorpusStore("damaged-data", str(path), runs=run_ids, steps={run_ids[0]: llm_key(0)})


def build_other_app(path: Path) -> CorpusStore:
    """Another application's SQLite database: no journal in it, and none may be made in it."""
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, customer TEXT, total REAL)")
        conn.execute("INSERT INTO invoices (customer, total) VALUES (?, 12.5)", (f"ACME{OSC52}",))
    return CorpusStore("other-app", str(path), runs=["run-1"], journal=False)


async def build_corpus(directory: Path) -> dict[str, CorpusStore]:
    """Every store of the corpus, each in ``directory`` under its name."""
    directory.mkdir(parents=True, exist_ok=True)
    stores = [
        await build_escapes(directory / "escapes.db"),
        await build_huge(directory / "huge.db"),
        build_foreign(directory / "foreign.db"),
        build_legacy(directory / "legacy.db"),
        await build_damaged_index(directory / "damaged-index.db"),
        await build_damaged_data(directory / "damaged-data.db"),
        build_other_app(directory / "other-app.db"),
    ]
    return {store.name: store for store in stores}


async def build_postgres_schema(dsn: str, schema: str) -> CorpusStore:
    """A PostgreSQL schema holding what its types allow: hostile ids, names and payloads, a 100,000
    level deep value, bytes that are not UTF-8 and not JSON (text cannot hold NUL, nor a NULL)."""
    from agenttui.stores.postgres import PostgresStore

    store = await PostgresStore.open(dsn, schema=schema)
    try:
        await _write_codec_runs(store)
        await store.insert(R_COMPLETE, f"note{C1}\ufffd", b"\xff\xfe\x00not json \x1b]52;c;eA==\x07")
        await store.acquire_lease(R_HALTED, f"worker{OSC52}{BIDI}#1", ttl=-60)
    finally:
        await store.close()
    separator = "&" if "?" in dsn else "?"
    return _codec_store("postgres", f"{dsn}{separator}schema={schema}")


def build_odd_paths(directory: Path) -> dict[str, tuple[Path, str]]:
    """Output paths that are no regular file, each with what the refusal must call it: a link to a
    file (``kept.txt``, beside them), a dangling link, a FIFO, a socket, and (as root, as CI runs)
    a character device like /dev/null. No command may replace one, write through it or wait on it."""
    kept = directory / "kept.txt"
    kept.write_text("mine")
    odd = directory / "odd"
    odd.mkdir()
    paths = {"link": (odd / "link", "a symbolic link to"), "dangling": (odd / "dangling", "a symbolic link to"),
             "fifo": (odd / "fifo", "a FIFO"), "socket": (odd / "socket", "a socket")}  # fmt: skip
    paths["link"][0].symlink_to(kept)
    paths["dangling"][0].symlink_to(odd / "nowhere.db")
    os.mkfifo(paths["fifo"][0])
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(paths["socket"][0]))
    if os.geteuid() == 0:  # mknod needs root; CI runs as root, where -o /dev/null once replaced it
        device = odd / "null"
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        paths["device"] = (device, "a character device")
    return paths

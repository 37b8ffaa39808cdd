"""The journal's tables in one schema: their names, the DDL, the catalog check, the statements.

The Bide SDK's newest (P5) layout. Tables, in one schema (``journal-format.md`` section 4.2)::

    <prefix>steps           run_id text COLLATE "C", seq int8, name text, data bytea;
                            PRIMARY KEY (run_id, name), UNIQUE (run_id, seq)
    <prefix>leases          run_id text PRIMARY KEY, holder text, expiry timestamptz;
                            indexes <prefix>leases_expiry (expiry), <prefix>leases_run_c (run_id COLLATE "C")
    <prefix>schema_version  id int PRIMARY KEY CHECK (id = 1), version int; row (1, 1)
    <prefix>next_seq_v1(r text) -> int8   the run's next seq, under a per-run advisory lock

``seq`` is per run (0, 1, 2, ...): ``next_seq`` holds a transaction-scoped advisory lock on the
run until the insert commits, so one run's inserts commit one at a time and in ``seq`` order (A2).
Its source is byte for byte the SDK's, which Go nodes check before they write to a schema.

Read-only handles run every session with ``default_transaction_read_only = on`` and never issue
DDL. They also read the legacy ``steps`` table (P1/P2: jsonb ``data``, per-run ``seq``) of a
database that has no ``bide_`` tables: ``layout`` is then ``"legacy"``, entries come back as
PostgreSQL's normalised JSON text, and there are no leases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import asyncpg

from agenttui.errors import ConfigError, SchemaVersionError
from agenttui.stores.base import LIST_PAGE_SIZE
from agenttui.stores.summary import (
    FORK_EXT_BYTES,
    FORK_ORIGIN,
    RUN_START,
    SALT_MEMBER,
    SALT_TAIL,
    TOMBSTONE_PREFIX,
    USAGE_AHEAD,
    USAGE_MEMBERS,
)

#: The newest schema version this module reads and writes.
SCHEMA_VERSION = 1
#: The key of the advisory lock every migration runs under: "bide" in ASCII, as the SDK uses.
MIGRATION_LOCK = 0x62696465

_PREFIX_RE = re.compile(r"^[a-z_][a-z0-9_]*$")
_SCHEMA_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: PostgreSQL silently truncates longer identifiers, which would make two names collide.
MAX_IDENTIFIER = 63
#: The longest suffix put after the table prefix (``<prefix>schema_version``).
_LONGEST_SUFFIX = len("schema_version")

#: ``next_seq``'s body, byte for byte the SDK's: its ``Open`` refuses a function with any other
#: source, so a schema this module creates stays writable by Go nodes. Every name is qualified.
_NEXT_SEQ_BODY = (
    "\nBEGIN\n"
    "\tPERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended(r, 0::pg_catalog.int8));\n"
    "\tRETURN (SELECT COALESCE(pg_catalog.max(seq), OPERATOR(pg_catalog.-) 1) OPERATOR(pg_catalog.+) 1\n"
    "\t\tFROM {steps} WHERE run_id OPERATOR(pg_catalog.=) r);\n"
    "END\n"
)
#: The one setting ``next_seq`` runs with, as ``pg_proc.proconfig`` holds it.
_NEXT_SEQ_CONFIG = "search_path=pg_catalog, pg_temp"

Layout = Literal["current", "legacy"]


def check_names(schema: str | None, table_prefix: str) -> None:
    """Refuse identifiers that could not be quoted safely or would be truncated by the server."""
    if not _PREFIX_RE.match(table_prefix):
        raise ConfigError(f"table prefix {table_prefix!r} must match {_PREFIX_RE.pattern}")
    if len(table_prefix) + _LONGEST_SUFFIX > MAX_IDENTIFIER:
        raise ConfigError(f"table prefix {table_prefix!r} is too long for PostgreSQL's 63-byte names")
    if schema is None:
        return
    if not _SCHEMA_RE.match(schema) or len(schema) > MAX_IDENTIFIER:
        raise ConfigError(f"schema {schema!r} must match {_SCHEMA_RE.pattern} and fit in 63 bytes")
    if schema == "information_schema" or schema.startswith("pg_"):
        raise ConfigError(f"schema {schema!r} is a system schema")


def _q(identifier: str) -> str:
    """Quote an identifier ``check_names`` vouched for (so it holds no quote to escape)."""
    return f'"{identifier}"'


@dataclass(frozen=True, slots=True)
class Names:
    """The names of one store's objects: ``bare`` as the catalog spells them, ``qualified`` for SQL."""

    schema: str
    prefix: str

    def bare(self, suffix: str) -> str:
        return self.prefix + suffix

    def qualified(self, suffix: str) -> str:
        return f"{_q(self.schema)}.{_q(self.prefix + suffix)}"

    def next_seq_body(self) -> str:
        # Spelled as the SDK spells the table in it (schema quoted, table bare), for equal source.
        return _NEXT_SEQ_BODY.format(steps=f"{_q(self.schema)}.{self.bare('steps')}")


async def prepare_schema(
    conn: asyncpg.Connection, schema: str | None, table_prefix: str, *, read_only: bool, create: bool = True
) -> tuple[str, Layout, bool]:
    """Find (and, writable, create) the journal tables; return the schema, layout, and leases flag."""
    if schema is None:
        schema = await _discover_schema(conn, table_prefix, read_only=read_only)
    names = Names(schema, table_prefix)
    if read_only:
        found = await _Catalog.read(conn, names)
        if found.has(names.bare("steps")):
            await _check_version(conn, names, found)
            return schema, "current", found.has(names.bare("leases"))
        if found.legacy:
            return schema, "legacy", False
        raise SchemaVersionError(
            f"schema {schema} holds no journal: neither {names.bare('steps')} nor a legacy steps table"
        )
    async with conn.transaction(isolation="read_committed"):
        # Set before the lock is taken: a client stopped inside the migration must not hold it.
        await conn.execute("SET LOCAL idle_in_transaction_session_timeout = '5s'")
        await conn.execute(f"SELECT pg_catalog.pg_advisory_xact_lock({MIGRATION_LOCK})")
        found = await _Catalog.read(conn, names)
        if not found.has(names.bare("steps")) and found.legacy:
            raise SchemaVersionError(
                f"schema {schema} holds a legacy steps table (a pre-v0.7 journal); open it read-only"
            )
        if not found.has(names.bare("steps")) and not create:
            raise SchemaVersionError(f"schema {schema} holds no journal ({names.bare('steps')}): nothing was written")
        if not found.complete(names):
            # Only when something is missing: CREATE ... IF NOT EXISTS still needs the CREATE
            # privilege, which a deployed role that only writes rows may lack.
            await conn.execute(_ddl(names, create_schema=not found.schema_exists))
            if found.next_seq_ok is None:
                await conn.execute(_next_seq_ddl(names))
            found = await _Catalog.read(conn, names)
        if not found.next_seq_ok:
            # Never replaced: nodes of another version may be calling it.
            raise SchemaVersionError(
                f"function {schema}.{names.bare('next_seq_v1')}(text) is not the one the Bide SDK and agenttui "
                "create (VOLATILE plpgsql, SET search_path = pg_catalog, pg_temp, the same body, owned by "
                f"the owner of {names.bare('steps')}); inserts depend on it, so this schema is refused"
            )
        await _check_version(conn, names, found)
    return schema, "current", True


async def _discover_schema(conn: asyncpg.Connection, table_prefix: str, *, read_only: bool) -> str:
    """The schema an unpinned store uses, as the SDK finds it.

    The first schema on the search path holding ``<prefix>steps`` (for a reader, else one holding
    a legacy ``steps``), or else ``current_schema()``, where a writable open creates the tables.
    """
    wanted = [table_prefix + "steps", "steps"] if read_only else [table_prefix + "steps"]
    schema: str | None = await conn.fetchval(
        """
        SELECT COALESCE(
            (SELECT n.nspname FROM pg_catalog.pg_class AS c
             JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
             WHERE c.relname = ANY($1::pg_catalog.text[]) AND c.relkind IN ('r', 'p')
               AND n.nspname = ANY(pg_catalog.current_schemas(false))
             ORDER BY pg_catalog.array_position($1::pg_catalog.text[], c.relname::pg_catalog.text),
                      pg_catalog.array_position(pg_catalog.current_schemas(false), n.nspname)
             LIMIT 1),
            pg_catalog.current_schema())
        """,
        wanted,
    )
    if schema is None:
        raise ConfigError("no schema on the search path exists; pass schema= to name one")
    check_names(schema, table_prefix)  # it goes into SQL text like a given one
    return schema


async def _check_version(conn: asyncpg.Connection, names: Names, found: _Catalog) -> None:
    """Refuse a schema version this module does not know; a P3 schema (no version table) is version 1."""
    if not found.has(names.bare("schema_version")):
        return
    version = await conn.fetchval(f"SELECT max(version) FROM {names.qualified('schema_version')}")
    if version is None:
        raise SchemaVersionError(f"{names.bare('schema_version')} in schema {names.schema} has no version row")
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"schema {names.schema} is at journal schema version {version}; agenttui reads version {SCHEMA_VERSION}"
        )


@dataclass(frozen=True, slots=True)
class _Catalog:
    """What one schema holds, read from the system catalogs with the statement's snapshot."""

    schema_exists: bool
    relations: frozenset[str]
    next_seq_ok: bool | None
    """None when there is no ``next_seq(text)``; else whether it is exactly the SDK's."""
    legacy: bool
    """A ``steps`` table with ``run_id``, ``seq``, ``name`` and jsonb ``data`` (P1/P2)."""

    _QUERY = """
        SELECT n.oid IS NOT NULL AS schema_exists,
               ARRAY(SELECT c.relname::text FROM pg_catalog.pg_class AS c
                     WHERE c.relnamespace = n.oid AND c.relname = ANY($2::text[])) AS relations,
               (SELECT l.lanname = 'plpgsql' AND p.provolatile = 'v' AND NOT p.prosecdef AND NOT p.proretset
                       AND p.proconfig = $4::pg_catalog.text[] AND p.prosrc = $5
                       AND p.prorettype = 'pg_catalog.int8'::pg_catalog.regtype
                       AND p.proowner IS NOT DISTINCT FROM (SELECT c.relowner FROM pg_catalog.pg_class AS c
                                                            WHERE c.relnamespace = n.oid AND c.relname = $2[1])
                FROM pg_catalog.pg_proc AS p JOIN pg_catalog.pg_language AS l ON l.oid = p.prolang
                WHERE p.pronamespace = n.oid AND p.proname = $3
                  AND p.proargtypes = '25'::pg_catalog.oidvector) AS next_seq_ok,
               (SELECT count(*) FILTER (WHERE a.attname IN ('run_id', 'seq', 'name')) = 3
                       AND COALESCE(bool_or(a.attname = 'data'
                                            AND a.atttypid = 'pg_catalog.jsonb'::pg_catalog.regtype), false)
                FROM pg_catalog.pg_attribute AS a JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
                WHERE c.relnamespace = n.oid AND c.relname = 'steps' AND c.relkind IN ('r', 'p')
                  AND a.attnum > 0 AND NOT a.attisdropped) AS legacy
        FROM (SELECT $1::text AS name) AS wanted
        LEFT JOIN pg_catalog.pg_namespace AS n ON n.nspname = wanted.name
    """

    @staticmethod
    def _wanted(names: Names) -> list[str]:
        # The steps table first: the query reads its owner as $2[1].
        return [names.bare(s) for s in ("steps", "leases", "schema_version", "leases_expiry", "leases_run_c")]

    @classmethod
    async def read(cls, conn: asyncpg.Connection, names: Names) -> _Catalog:
        row = await conn.fetchrow(
            cls._QUERY,
            names.schema,
            cls._wanted(names),
            names.bare("next_seq_v1"),
            [_NEXT_SEQ_CONFIG],
            names.next_seq_body(),
        )
        return cls(row["schema_exists"], frozenset(row["relations"]), row["next_seq_ok"], bool(row["legacy"]))

    def has(self, relation: str) -> bool:
        return relation in self.relations

    def complete(self, names: Names) -> bool:
        return self.relations.issuperset(self._wanted(names)) and self.next_seq_ok is not None


def _ddl(names: Names, *, create_schema: bool) -> str:
    """The P5 tables and indexes, each created only if missing (types spelled as the SDK's)."""
    schema = f"CREATE SCHEMA IF NOT EXISTS {_q(names.schema)};\n" if create_schema else ""
    steps, leases, version = (names.qualified(s) for s in ("steps", "leases", "schema_version"))
    return (
        schema
        + f"""
        CREATE TABLE IF NOT EXISTS {steps} (
            run_id pg_catalog.text COLLATE pg_catalog."C" NOT NULL,
            seq pg_catalog.int8 NOT NULL,
            name pg_catalog.text NOT NULL,
            data pg_catalog.bytea NOT NULL,
            PRIMARY KEY (run_id, name),
            UNIQUE (run_id, seq)
        );
        CREATE TABLE IF NOT EXISTS {leases} (
            run_id pg_catalog.text PRIMARY KEY,
            holder pg_catalog.text NOT NULL,
            expiry pg_catalog.timestamptz NOT NULL
        );
        CREATE INDEX IF NOT EXISTS {_q(names.bare("leases_expiry"))} ON {leases} (expiry);
        CREATE INDEX IF NOT EXISTS {_q(names.bare("leases_run_c"))} ON {leases} ((run_id COLLATE "C"));
        CREATE TABLE IF NOT EXISTS {version} (
            id pg_catalog.int4 PRIMARY KEY CHECK (id = 1),
            version pg_catalog.int4 NOT NULL
        );
        INSERT INTO {version} (id, version) VALUES (1, {SCHEMA_VERSION})
            ON CONFLICT (id) DO NOTHING;
    """
    )


def _next_seq_ddl(names: Names) -> str:
    """``next_seq``: the run's advisory lock, held to commit, then one past its highest seq.

    The fixed search path is a second guard beside the qualified names: objects a caller can
    create on its own search path cannot shadow the built-ins the body calls.
    """
    return (
        f"CREATE FUNCTION {names.qualified('next_seq_v1')}(r pg_catalog.text) RETURNS pg_catalog.int8"
        " LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp"
        f" AS $bide${names.next_seq_body()}$bide$"
    )


def _usage_checks() -> str:
    """Each usage member absent, null, or an integer of at most 18 digits (SQLite's JSON reads a
    longer one as a real; the reference, ``summarize``, holds every store to the same bound).
    Checked as numerics: a regular expression per member cost as much as the cast itself."""
    checks = []
    for member in USAGE_MEMBERS:
        value = f"u->'{member}'"
        checks.append(
            f"CASE COALESCE(pg_catalog.jsonb_typeof({value}), 'null') WHEN 'null' THEN true"
            f" WHEN 'number' THEN pg_catalog.scale(({value})::pg_catalog.numeric) = 0"
            f" AND pg_catalog.abs(({value})::pg_catalog.numeric) < 1e18 ELSE false END"
        )
    return "\n          AND ".join(checks)


def _tokens() -> str:
    return " + ".join(f"COALESCE((u->>'{member}')::pg_catalog.numeric, 0)" for member in USAGE_MEMBERS)


def _usage_as_written() -> str:
    """The usage member's text as the codec writes it (members in order, integers as jsonb
    writes them, which is never with an exponent), from the parsed ``u``."""
    members = ", ".join(f"""'"{member}":' || (u->>'{member}')""" for member in USAGE_MEMBERS)
    return f"""('"usage":{{{{' || pg_catalog.concat_ws(',', {members}) || '}}}}')"""


def _bytes(text: str | bytes) -> str:
    """A bytea literal of ``text``'s (UTF-8) bytes."""
    data = text if isinstance(text, bytes) else text.encode()
    return f"'\\x{data.hex()}'::pg_catalog.bytea"


#: The bytes a shaped entry's kind is made of (``stores.summary``: ASCII letters, digits, ``_``).
_KIND_BYTES = _bytes("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
#: Bytes after an entry's kind searched first for its closing quote (then the rest of them).
_KIND_WINDOW = 300

# One pass over a page of runs' entries (``stores.summary`` says what it sums and why). Each entry
# is looked at in ``LATERAL (...) OFFSET 0`` subqueries, which the planner never merges into the
# query, so each is computed once an entry, and only small values are materialized: the first
# entry's and the end marker's bytes come back through the joins at the end. (Materialized with
# each entry's text and jsonb, the first CTE was a page's record data twice.)
#
# ``shape``: a *shaped* entry is trusted from its bytes, uncast: ``{"name":<its row's name, as
# to_json writes it>,"kind":"<ASCII letters, digits, _>"`` first, not followed by ``,"message":``
# or ``,"usage":``, and its salt last. It counts no tokens, and a turn when its kind is ``model``
# (``shape.model``; NULL for every other entry). Only its first and last bytes are read: a large
# tool result is neither made text nor parsed. No regular expression: one per entry cost as much
# as a cast.
# ``text_of``, ``parsed``: every other entry's bytes are made text once, and only text that ends in
# ``}`` (whitespace aside) is cast to jsonb, so a damaged record, cut short, is suspect instead of
# failing the page. Bytes that still are not JSON make the cast raise, and the store then halves
# that page until it finds their run, which it sums up in Python.
# ``tokens`` is NULL for a suspect entry (its checks failed), whose counts are never cast.
# ``forked``: a fork's mark is found in its run:start's bytes, uncast, as the reference finds it
# (``may_mark_a_fork``).
_SUMMARIES = (
    """
WITH entry AS MATERIALIZED (
    SELECT s.run_id, s.seq, s.name,
        CASE WHEN shape.model IS NOT NULL THEN 0
             WHEN pg_catalog.jsonb_typeof(j) = 'object'
          AND pg_catalog.jsonb_typeof(j->'name') = 'string' AND j->>'name' = s.name
          AND COALESCE(NULLIF(pg_catalog.jsonb_typeof(j->'kind'), 'null'), 'string') = 'string'
          AND COALESCE(NULLIF(pg_catalog.jsonb_typeof(u), 'null'), 'object') = 'object'
          AND {usage}
          -- jsonb writes 1e2 as 100: the text says whether a count was written as an integer.
          -- Where "usage" is written once, as the codec writes it, no regular expression is needed
          -- (looked for in the bytes: text is found by character, a walk from its start).
          AND (u IS NULL
               OR (usage.at > 0 AND pg_catalog.position(s.data, pg_catalog.convert_to("""
    + _usage_as_written()
    + """, 'UTF8')) = usage.at
                   AND pg_catalog.position(pg_catalog.substr(s.data, usage.at + 1), """
    + _bytes('"usage"')
    + """) = 0)
               OR text_of.t !~ '"usage"[[:space:]]*:[[:space:]]*[{{][^{{}}]*[0-9][eE]')
             THEN """
    + _tokens()
    + """ END AS tokens,
        COALESCE(shape.model, j->>'kind' = 'model') AS model,
        s.name = '"""
    + FORK_ORIGIN
    + """' OR s.name = '"""
    + RUN_START
    + """' AND pg_catalog.position(s.data, """
    + _bytes(FORK_EXT_BYTES)
    + """) > 0 AS forked
    FROM {steps} AS s
    CROSS JOIN LATERAL (
        SELECT CASE WHEN kind.quote > 0
                     AND pg_catalog.substr(s.data, pg_catalog.length(s.data) - """
    + str(SALT_TAIL - 1)
    + f", {len(SALT_MEMBER)}) = "
    + _bytes(SALT_MEMBER)
    + """
                     AND pg_catalog.substr(s.data, pg_catalog.length(s.data) - 1, 2) = """
    + _bytes('"}')
    + """
                     AND pg_catalog.btrim(pg_catalog.substr(s.data, kind.at, kind.quote - 1), {kind_bytes}) = ''::pg_catalog.bytea
                     AND """
    + "\n                     AND ".join(
        f"pg_catalog.substr(s.data, kind.at + kind.quote, {len(ahead)}) <> {_bytes(ahead)}" for ahead in USAGE_AHEAD
    )
    + """
                THEN pg_catalog.substr(s.data, kind.at, kind.quote - 1) = """
    + _bytes("model")
    + """ END AS model
        FROM (
            SELECT head.at,
                CASE WHEN pg_catalog.substr(s.data, 1, head.at - 1) = head.bytes
                     THEN COALESCE(NULLIF(pg_catalog.position(pg_catalog.substr(s.data, head.at, {window}), '\\x22'), 0),
                                   pg_catalog.position(pg_catalog.substr(s.data, head.at), '\\x22'))
                END AS quote
            FROM (
                SELECT bytes, pg_catalog.length(bytes) + 1 AS at
                FROM (SELECT """
    + _bytes('{"name":')
    + """ || pg_catalog.convert_to(pg_catalog.to_json(s.name)::pg_catalog.text, 'UTF8') || """
    + _bytes(',"kind":"')
    + """ AS bytes
                      OFFSET 0) AS prefix
            ) AS head
            OFFSET 0
        ) AS kind
        OFFSET 0
    ) AS shape
    CROSS JOIN LATERAL (
        SELECT CASE WHEN shape.model IS NULL THEN pg_catalog.convert_from(s.data, 'UTF8') END AS t OFFSET 0
    ) AS text_of
    CROSS JOIN LATERAL (
        SELECT CASE WHEN pg_catalog.substr(s.data, 1, """
    + str(len(TOMBSTONE_PREFIX))
    + ") <> "
    + _bytes(TOMBSTONE_PREFIX)
    + """
                  AND (pg_catalog.right(text_of.t, 1) = '}}'
                       OR pg_catalog.right(pg_catalog.rtrim(text_of.t, E' \\t\\n\\r'), 1) = '}}')
                 THEN text_of.t::pg_catalog.jsonb END AS j
        OFFSET 0
    ) AS parsed
    CROSS JOIN LATERAL (
        SELECT parsed.j->'usage' AS u,
            CASE WHEN parsed.j IS NOT NULL THEN pg_catalog.position(s.data, """
    + _bytes('"usage"')
    + """) END AS at
        OFFSET 0
    ) AS usage
    WHERE s.run_id = ANY($1::pg_catalog.text[])
), run AS (
    SELECT run_id, pg_catalog.count(*) AS steps, pg_catalog.max(seq) AS last_seq,
        pg_catalog.count(*) FILTER (WHERE model AND tokens IS NOT NULL) AS turns,
        COALESCE(pg_catalog.sum(tokens), 0)::pg_catalog.int8 AS tokens,
        pg_catalog.bool_or(tokens IS NULL) AS suspect,
        pg_catalog.min(seq) AS first_seq,
        pg_catalog.min(seq) FILTER (WHERE name = ANY($2::pg_catalog.text[])) AS end_seq,
        pg_catalog.bool_or(forked) AS forked
    FROM entry GROUP BY run_id
)
SELECT run.run_id, run.steps, run.last_seq, run.turns, run.tokens, run.suspect, run.forked,
       f.seq AS first_seq, f.name AS first_name, f.data AS first_data,
       e.seq AS end_seq, e.name AS end_name, e.data AS end_data
FROM run
JOIN {steps} AS f ON f.run_id = run.run_id AND f.seq = run.first_seq
LEFT JOIN {steps} AS e ON e.run_id = run.run_id AND e.seq = run.end_seq
ORDER BY run.run_id
"""
)


class Statements:
    """Every statement of one store, built once from its validated names.

    asyncpg prepares each statement once per connection and caches it by its text.
    """

    def __init__(self, names: Names, *, layout: Layout, notify: bool) -> None:
        steps = names.qualified("steps") if layout == "current" else f"{_q(names.schema)}.{_q('steps')}"
        leases = names.qualified("leases")
        # Legacy jsonb comes back as its text; bytea as the stored bytes.
        data = "data" if layout == "current" else "data::pg_catalog.text AS data"
        self._steps = steps
        self._leases = leases
        self.get = f"SELECT seq, {data} FROM {steps} WHERE run_id = $1 AND name = $2"
        self.load = f"SELECT seq, name, {data} FROM {steps} WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"
        self.load_runs = (
            f"SELECT run_id, seq, name, {data} FROM {steps} WHERE run_id = ANY($1::pg_catalog.text[])"
            ' ORDER BY run_id COLLATE "C", seq'
        )
        self.steps_table = steps
        # What a status index checks (``PostgresStore.run_marks``): from the (run_id, seq) index alone.
        # The table's and the database's object ids and the table's file: a table dropped and
        # made again, truncated or restored from a dump has others (seq is per run here, so the
        # first entries in commit order cannot be found from an index).
        self.table_identity = (
            "SELECT c.oid::pg_catalog.int8, c.relfilenode::pg_catalog.int8, d.oid::pg_catalog.int8"
            " FROM pg_catalog.pg_class AS c, pg_catalog.pg_database AS d"
            f" WHERE c.oid = '{steps}'::pg_catalog.regclass AND d.datname = pg_catalog.current_database()"
        )
        self.run_marks = (
            f"SELECT run_id, pg_catalog.count(*) AS count, pg_catalog.max(seq) AS last FROM {steps}"
            " WHERE run_id = ANY($1::pg_catalog.text[]) GROUP BY run_id"
        )
        # As three arrays, one value each: asyncpg decodes an array in C, and a row a run cost the
        # client 0.1 s of CPU on 100,000 runs (an array 0.02 s).
        self.every_run_mark = (
            "SELECT pg_catalog.array_agg(run_id) AS run_ids, pg_catalog.array_agg(count) AS counts,"
            " pg_catalog.array_agg(last) AS lasts FROM (SELECT run_id, pg_catalog.count(*) AS count,"
            f" pg_catalog.max(seq) AS last FROM {steps} GROUP BY run_id) AS marks"
        )
        insert = (
            f"INSERT INTO {steps} (run_id, seq, name, data)"
            f" VALUES ($1, {names.qualified('next_seq_v1')}($1), $2, $3)"
            " ON CONFLICT (run_id, name) DO NOTHING RETURNING seq"
        )
        if notify:
            # pg_notify sits in the select list, so it runs once per inserted row: only a winner
            # notifies, and the server delivers it when the statement's transaction commits.
            self.insert = f"WITH ins AS ({insert}) SELECT ins.seq, pg_catalog.pg_notify($4, $5) FROM ins"
            self.insert_args = 5
        else:
            self.insert = insert
            self.insert_args = 3
        self.acquire = (
            f"INSERT INTO {leases} AS l (run_id, holder, expiry)"
            " VALUES ($1, $2, pg_catalog.now() + $3::pg_catalog.float8 * interval '1 second')"
            " ON CONFLICT (run_id) DO UPDATE SET holder = EXCLUDED.holder, expiry = EXCLUDED.expiry"
            " WHERE l.holder = EXCLUDED.holder OR l.expiry < pg_catalog.now() RETURNING true"
        )
        self.renew = (
            f"UPDATE {leases} SET expiry = pg_catalog.now() + $3::pg_catalog.float8 * interval '1 second'"
            " WHERE run_id = $1 AND holder = $2 AND expiry >= pg_catalog.now() RETURNING true"
        )
        self.release = f"DELETE FROM {leases} WHERE run_id = $1 AND holder = $2"
        self.every_lease = f"SELECT run_id, holder, {lease_expires_in('expiry')} AS expires_in FROM {leases}"
        self.get_leases = f"{self.every_lease} WHERE run_id = ANY($1::pg_catalog.text[])"
        self.summaries = _SUMMARIES.format(
            steps=steps, usage=_usage_checks(), window=_KIND_WINDOW, kind_bytes=_KIND_BYTES
        )

    def runs(self, *, prefix: bool, prefix_end: bool, exclude: bool, lease_lapsed: bool) -> str:
        """The Lister query for these filters: P5's (section 4.2), with the same results.

        Parameters in order: after, then prefix, prefix end and the excluded names, each only
        when its filter is used.
        """
        if lease_lapsed:
            column = "l.run_id"
            clauses = [
                f'SELECT {column} COLLATE "C" AS id FROM {self._leases} AS l WHERE l.expiry < pg_catalog.now()',
                f"EXISTS (SELECT FROM {self._steps} AS s WHERE s.run_id = l.run_id)",
            ]
        else:
            column = "s.run_id"
            clauses = [f'SELECT DISTINCT {column} COLLATE "C" AS id FROM {self._steps} AS s WHERE true']
        clauses.append(f'{column} COLLATE "C" > $1')
        n = 1
        if prefix:
            n += 1
            # starts_with decides; the C-collation range lets the (run_id, name) index serve it.
            clauses.append(f'pg_catalog.starts_with({column}, ${n}) AND {column} COLLATE "C" >= ${n}')
            if prefix_end:
                n += 1
                clauses.append(f'{column} COLLATE "C" < ${n}')
        sql = " AND ".join(clauses)
        if exclude:
            n += 1
            # Tested once per listed run (not once per step row, as a filter under DISTINCT would
            # be), by a probe of the (run_id, name) key. OFFSET 0 keeps the planner from turning
            # the probe into an anti-join that reads the whole table on every page: 100,000 runs,
            # half of them finished, list in 0.8 s instead of 7 s.
            sql = (
                f"SELECT r.id FROM ({sql}) AS r WHERE NOT EXISTS (SELECT FROM {self._steps} AS x"
                f" WHERE x.run_id = r.id AND x.name = ANY(${n}::pg_catalog.text[]) OFFSET 0)"
            )
        return sql + f" ORDER BY id LIMIT {LIST_PAGE_SIZE}"


def lease_expires_in(expiry: str) -> str:
    """A lease row's seconds to live on the database's clock (``LeaseInfo.expires_in``), of its
    ``expiry`` column as the statement names it."""
    return f"extract(epoch FROM {expiry} - pg_catalog.now())::pg_catalog.float8"

"""The shared run index's statements (``stores.postgres.run_index``): its tables, triggers and
queries, built once from the journal's validated names, as ``schema.Statements`` is the
journal's."""

from __future__ import annotations

from agenttui.errors import ConfigError
from agenttui.stores.postgres.schema import MAX_IDENTIFIER, SCHEMA_VERSION, Names, lease_expires_in

#: The index's layout: an index of an older version is made again by the indexer, one of a newer
#: version left alone, and neither is read meanwhile.
INDEX_VERSION = 6
#: The advisory lock install and uninstall run under ("agtx" in ASCII).
INSTALL_LOCK = 0x61677478
#: The triggers install adds to the journal's table, by the statements they note.
#: An insert is noted row by row: the SDK's statement inserts one row, and a row trigger with no
#: transition table costs it least. An update or a delete (a hand's, never the SDK's) is noted
#: once a statement a run.
TRIGGERS = {
    "agenttui_index_insert": "AFTER INSERT ON {steps} FOR EACH ROW EXECUTE FUNCTION {note_row}()",
    "agenttui_index_update": (
        "AFTER UPDATE ON {steps} REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION {note}()"
    ),
    "agenttui_index_delete": (
        "AFTER DELETE ON {steps} REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION {note}()"
    ),
}
TRUNCATE_TRIGGER = "agenttui_index_truncate"

#: What the index keeps of a status, in ``runs.statuses.index.Verdict``'s order (a test holds the
#: two equal), with each column's type.
VERDICT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("state", "text"),
    ("detail", "text"),
    ("tool_use_id", "text"),
    ("tool_name", "text"),
    ("interrupt_name", "text"),
    ("legacy", "bool"),
    ("fork_of", "text"),
    ("steps", "int8"),
    ("turns", "int8"),
    ("tokens", "int8"),
    ("earliest_ms", "int8"),
    ("latest_ms", "int8"),
    ("first_is_earliest", "bool"),
    ("last_is_latest", "bool"),
    ("wake_at", "text"),
)
_VERDICT_NAMES = [name for name, _ in VERDICT_COLUMNS]
#: A verdict that says no more than a status line: no open call, interrupt, fork, legacy
#: journal, times or wake time (``runs.statuses.index.KeptLines.plain``).
_PLAIN = (
    "tool_use_id = '' AND tool_name = '' AND interrupt_name = '' AND NOT legacy AND fork_of = ''"
    " AND earliest_ms IS NULL AND wake_at IS NULL"
)


def index_schema(names: Names) -> str:
    """The schema the index of the journal ``names`` names lives in."""
    tail = "agenttui" if names.prefix == "bide_" else f"{names.prefix}agenttui"
    schema = f"{names.schema}_{tail}"
    if len(schema.encode()) > MAX_IDENTIFIER:
        raise ConfigError(f"the index's schema name {schema!r} does not fit PostgreSQL's 63-byte names")
    return schema


def _q(identifier: str) -> str:
    return f'"{identifier}"'


def _trigger_function(name: str, body: str) -> str:
    """A trigger's function: ``body`` run with the installer's rights (a writer's role needs none
    on the index's schema), ``search_path`` fixed so that nothing a caller makes can shadow what
    it calls, every name in it qualified."""
    return (
        f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER"
        f" SET search_path = pg_catalog, pg_temp AS $agenttui$ BEGIN {body} RETURN NULL; END $agenttui$;"
    )


class IndexStatements:
    """Every statement of one index, built once from its validated names."""

    def __init__(self, names: Names, schema: str, *, has_leases: bool) -> None:
        steps = names.qualified("steps")
        leases = names.qualified("leases")
        q = _q(schema)
        meta, changes, runs, indexer, counts = (
            f"{q}.{_q(t)}" for t in ("meta", "changes", "runs", "indexer", "counts")
        )
        verdict_ddl = ", ".join(f"{name} pg_catalog.{kind}" for name, kind in VERDICT_COLUMNS)
        note = f"{q}.note_changes"
        truncated = f"{q}.note_truncate"
        note_row = f"{q}.note_row"
        triggers = "\n".join(
            f"CREATE TRIGGER {name} {when.format(steps=steps, note=note, note_row=note_row)};"
            for name, when in TRIGGERS.items()
        )
        self.create = f"""
            CREATE SCHEMA {q};
            CREATE TABLE {meta} (key pg_catalog.text PRIMARY KEY, value pg_catalog.text NOT NULL);
            CREATE TABLE {changes} (
                id pg_catalog.int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                run_id pg_catalog.text COLLATE pg_catalog."C" NOT NULL,
                noted_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
                -- The writer's transaction: a live tail reads the changes past its last snapshot's.
                xid pg_catalog.xid8 NOT NULL DEFAULT pg_catalog.pg_current_xact_id()
            ) WITH (
                -- A queue: rows come and go all day. Vacuumed by the thousand dead rows, not by a
                -- share of a table that is empty most of the time.
                autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
                autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 1000
            );
            -- A batch takes every change of the runs it picks; readers look up a run's.
            CREATE INDEX changes_run ON {changes} (run_id);
            CREATE TABLE {runs} (
                run_id pg_catalog.text COLLATE pg_catalog."C" PRIMARY KEY,
                root_id pg_catalog.text COLLATE pg_catalog."C" NOT NULL,
                xid pg_catalog.xid8,
                count pg_catalog.int8 NOT NULL, last pg_catalog.int8 NOT NULL,
                {verdict_ddl},
                indexed_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now()
            );
            -- A selection by status, and the counts; the runs a lease row may make in flight;
            -- the runs the clock decides.
            CREATE INDEX runs_state ON {runs} (state, run_id);
            CREATE INDEX runs_root ON {runs} (root_id);
            CREATE INDEX runs_waking ON {runs} (run_id) WHERE wake_at IS NOT NULL;
            CREATE INDEX runs_xid ON {runs} (xid);
            -- The rows by their verdict's state, kept with them: counts that read no row.
            CREATE TABLE {counts} (state pg_catalog.text PRIMARY KEY, runs pg_catalog.int8 NOT NULL);
            CREATE TABLE {indexer} (
                id pg_catalog.int4 PRIMARY KEY CHECK (id = 1),
                holder pg_catalog.text NOT NULL DEFAULT '',
                expiry pg_catalog.timestamptz NOT NULL DEFAULT '-infinity',
                watermark pg_catalog.int8 NOT NULL DEFAULT 0,
                caught_up_at pg_catalog.timestamptz,
                beat_at pg_catalog.timestamptz
            );
            INSERT INTO {indexer} (id) VALUES (1);
            INSERT INTO {meta} (key, value) VALUES
                ('version', '{INDEX_VERSION}'), ('journal_version', '{SCHEMA_VERSION}'),
                ('journal', '{steps}'), ('installed_at', pg_catalog.now()::pg_catalog.text),
                ('installed_by', current_user::pg_catalog.text);
            {_trigger_function(note, f"INSERT INTO {changes} (run_id) SELECT DISTINCT run_id FROM changed_rows;")}
            {_trigger_function(note_row, f"INSERT INTO {changes} (run_id) VALUES (NEW.run_id);")}
            {_trigger_function(truncated, f"DELETE FROM {runs}; DELETE FROM {changes}; DELETE FROM {counts};")}
            REVOKE ALL ON FUNCTION {note}(), {note_row}(), {truncated}() FROM PUBLIC;
            {triggers}
            CREATE TRIGGER {TRUNCATE_TRIGGER} AFTER TRUNCATE ON {steps} FOR EACH STATEMENT EXECUTE FUNCTION {truncated}();
        """
        trigger_names = ", ".join(f"'{name}'" for name in [*TRIGGERS, TRUNCATE_TRIGGER])
        self.trigger_count = (
            "SELECT pg_catalog.count(*) FROM pg_catalog.pg_trigger"
            f" WHERE tgrelid = pg_catalog.to_regclass('{steps}') AND tgname IN ({trigger_names})"
        )
        drop_triggers = "\n".join(
            f"DROP TRIGGER IF EXISTS {name} ON {steps};" for name in [*TRIGGERS, TRUNCATE_TRIGGER]
        )
        self.drop = f"{drop_triggers}\nDROP SCHEMA IF EXISTS {q} CASCADE;"
        self.schema_exists = f"SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = '{schema}')"
        self.usable = f"""
            SELECT ({self.trigger_count} AND tgenabled <> 'D') AS triggers,
                (SELECT value FROM {meta} WHERE key = 'version') AS version,
                (SELECT value FROM {meta} WHERE key = 'journal_version') AS journal_version,
                (SELECT caught_up_at FROM {indexer}) AS caught_up
        """
        self.rights = f"""
            SELECT current_user::pg_catalog.text AS role,
                pg_catalog.has_database_privilege(pg_catalog.current_database(), 'CREATE') AS create,
                pg_catalog.has_table_privilege('{steps}', 'TRIGGER') AS trigger
        """
        # Every role that may read the journal may read its index (the owner reads it anyway).
        self.readers = f"""
            SELECT COALESCE(pg_catalog.array_agg(DISTINCT
                CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE r.rolname::pg_catalog.text END), '{{}}')
            FROM pg_catalog.pg_class AS c CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS a
            LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = a.grantee
            WHERE c.oid = '{steps}'::pg_catalog.regclass AND a.privilege_type = 'SELECT'
        """
        self._grant = f"GRANT USAGE ON SCHEMA {q} TO {{role}}; GRANT SELECT ON ALL TABLES IN SCHEMA {q} TO {{role}};"
        self.queue_every_run = f"INSERT INTO {changes} (run_id) SELECT DISTINCT run_id FROM {steps}"
        self.rebuild = f"""
            DELETE FROM {runs};
            DELETE FROM {changes};
            DELETE FROM {counts};
            UPDATE {meta} SET value = '{INDEX_VERSION}' WHERE key = 'version';
            UPDATE {meta} SET value = '{SCHEMA_VERSION}' WHERE key = 'journal_version';
            UPDATE {indexer} SET caught_up_at = NULL;
        """
        self.state = f"""
            SELECT (SELECT value FROM {meta} WHERE key = 'version')::pg_catalog.int4 AS version,
                (SELECT pg_catalog.count(*) FROM {runs}) AS runs,
                (SELECT pg_catalog.count(*) FROM {changes}) AS pending,
                (SELECT pg_catalog.count(DISTINCT run_id) FROM {changes}) AS pending_runs,
                (SELECT extract(epoch FROM pg_catalog.now() - pg_catalog.min(noted_at))::pg_catalog.float8
                 FROM {changes}) AS oldest_pending_seconds,
                i.watermark,
                extract(epoch FROM pg_catalog.now() - i.caught_up_at)::pg_catalog.float8 AS caught_up_seconds,
                i.holder,
                CASE WHEN i.holder <> '' THEN extract(epoch FROM i.expiry - pg_catalog.now())::pg_catalog.float8
                END AS lease_seconds,
                extract(epoch FROM pg_catalog.now() - i.beat_at)::pg_catalog.float8 AS beat_seconds,
                (SELECT COALESCE(pg_catalog.sum(pg_catalog.pg_total_relation_size(c.oid)), 0)::pg_catalog.int8
                 FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
                 WHERE n.nspname = '{schema}' AND c.relkind = 'r') AS index_bytes,
                pg_catalog.pg_total_relation_size('{steps}') AS journal_bytes
            FROM {indexer} AS i
        """
        self.take_lease = f"""
            UPDATE {indexer} SET holder = $1,
                expiry = pg_catalog.now() + $2::pg_catalog.float8 * interval '1 second', beat_at = pg_catalog.now()
            WHERE holder = $1 OR holder = '' OR expiry < pg_catalog.now() RETURNING true
        """
        self.release_lease = f"UPDATE {indexer} SET holder = '', expiry = '-infinity' WHERE holder = $1"
        self.hold = f"SELECT true FROM {indexer} WHERE holder = $1 AND expiry >= pg_catalog.now() FOR UPDATE"
        self.hold_renewing = f"""
            UPDATE {indexer} SET expiry = pg_catalog.now() + $2::pg_catalog.float8 * interval '1 second',
                beat_at = pg_catalog.now()
            WHERE holder = $1 AND expiry >= pg_catalog.now() RETURNING true
        """
        self.claim = f"""
            WITH picked AS (
                SELECT DISTINCT run_id FROM (
                    SELECT run_id FROM {changes} ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
                ) AS head
            ), taken AS (
                -- Every change of each run picked, not only those at the head: a run is read once
                -- a batch, and not again by the next for a change queued behind the first.
                DELETE FROM {changes} AS c USING picked WHERE c.run_id = picked.run_id RETURNING c.id, c.run_id, c.xid
            ), runs AS (SELECT run_id, pg_catalog.max(xid) AS xid FROM taken GROUP BY run_id)
            SELECT (SELECT pg_catalog.array_agg(run_id ORDER BY run_id) FROM runs) AS run_ids,
                (SELECT pg_catalog.array_agg(xid ORDER BY run_id) FROM runs) AS xids,
                (SELECT pg_catalog.max(id) FROM taken) AS watermark
        """
        self.worked = f"""
            UPDATE {indexer} SET watermark = GREATEST(watermark, COALESCE($1::pg_catalog.int8, 0)),
                caught_up_at = CASE WHEN $2::pg_catalog.bool THEN pg_catalog.now() ELSE caught_up_at END
        """
        columns = ", ".join(["run_id", "root_id", "xid", "count", "last", *_VERDICT_NAMES])
        placeholders = ", ".join(
            ["$1", "$2", "$3::pg_catalog.xid8", *(f"${at}" for at in range(4, 6 + len(VERDICT_COLUMNS)))]
        )
        updates = ", ".join(
            f"{name} = EXCLUDED.{name}" for name in ["root_id", "xid", "count", "last", *_VERDICT_NAMES]
        )
        self.upsert = (
            f"INSERT INTO {runs} ({columns}) VALUES ({placeholders}) ON CONFLICT (run_id) DO UPDATE SET {updates},"
            " indexed_at = pg_catalog.now()"
        )
        leases_now = (
            f""",
                ARRAY(SELECT run_id FROM {leases} ORDER BY run_id) AS leased,
                ARRAY(SELECT holder FROM {leases} ORDER BY run_id) AS holders,
                ARRAY(SELECT expiry >= pg_catalog.now() FROM {leases} ORDER BY run_id) AS live"""
            if has_leases
            else ", NULL AS leased, NULL AS holders, NULL AS live"
        )
        self.changed_since = f"""
            SELECT pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot()) AS mark,
                ARRAY(SELECT run_id FROM {changes} WHERE xid >= $1::pg_catalog.xid8
                      UNION SELECT run_id FROM {runs} WHERE xid >= $1::pg_catalog.xid8) AS runs{leases_now}
        """
        self.runs_under = f"SELECT run_id FROM {runs} WHERE root_id = ANY($1::pg_catalog.text[])"
        self.drop_runs = f"DELETE FROM {runs} WHERE run_id = ANY($1::pg_catalog.text[])"
        self.states_of_array = (
            f"SELECT COALESCE(pg_catalog.array_agg(state), '{{}}') FROM {runs}"
            " WHERE run_id = ANY($1::pg_catalog.text[]) AND state IS NOT NULL"
        )
        self.add_counts = (
            f"INSERT INTO {counts} AS n (state, runs)"
            " SELECT * FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.int8[]))"
            " ON CONFLICT (state) DO UPDATE SET runs = n.runs + EXCLUDED.runs"
        )
        self.requeue = f"INSERT INTO {changes} (run_id) SELECT pg_catalog.unnest($1::pg_catalog.text[])"
        # As one array a column: asyncpg decodes an array in C (a row a run cost the client a
        # tenth of a second of 100,000 runs). The subquery's order is the primary key's.
        aggregated = ", ".join(
            f"pg_catalog.array_agg({column})" for column in ["run_id", "count", "last", *_VERDICT_NAMES]
        )
        self.lines = (
            f"SELECT {aggregated}, pg_catalog.array_agg(COALESCE({_PLAIN}, false)::pg_catalog.int4)"
            f' FROM (SELECT * FROM {runs} ORDER BY run_id COLLATE "C") AS r'
        )
        self.pending_runs = f"""
            SELECT pg_catalog.array_agg(c.run_id ORDER BY c.run_id) FILTER (WHERE c.held),
                pg_catalog.array_agg(c.run_id) FILTER (WHERE NOT c.held)
            FROM (SELECT q.run_id, EXISTS (SELECT FROM {steps} AS s WHERE s.run_id = q.run_id) AS held
                  FROM (SELECT DISTINCT run_id FROM {changes}) AS q) AS c
        """
        selected = ", ".join(["r.run_id", *(f"r.{name}" for name in _VERDICT_NAMES)])
        self.rows = (
            f"SELECT {selected} FROM {runs} AS r WHERE r.run_id = ANY($1::pg_catalog.text[]) AND r.state IS NOT NULL"
            f" AND NOT EXISTS (SELECT FROM {changes} AS c WHERE c.run_id = r.run_id)"
        )

        selected_columns = ", ".join(["r.run_id", "r.root_id", *(f"r.{name}" for name in _VERDICT_NAMES)])
        unqueued = f"NOT EXISTS (SELECT FROM {changes} AS c WHERE c.run_id = r.run_id)"
        self._selected_columns = selected_columns
        self._unqueued = unqueued
        # Each lease row's runs through the root index, a probe a lease row (OFFSET 0 keeps the
        # planner from a hash join that reads every run: 0.5 s of a million).
        under_lease = f'(SELECT * FROM {runs} AS r WHERE r.root_id = l.run_id COLLATE "C" OFFSET 0) AS r'
        self._leases = leases if has_leases else None
        self._under_lease = under_lease
        self._runs = runs
        self.counts = f"SELECT state, runs FROM {counts} WHERE runs <> 0"
        # The states counted of runs whose changes are queued: they are read from the journal.
        self.queued_states = (
            f"SELECT pg_catalog.array_agg(r.state) FROM (SELECT DISTINCT run_id FROM {changes}) AS q"
            f" JOIN {runs} AS r ON r.run_id = q.run_id WHERE r.state IS NOT NULL"
        )
        # The runs a lease row or the clock decides, as arrays: no more than their states need,
        # with their lease rows read in the same snapshot (a second statement sending back 20,000
        # ids took a third of the counts' time at a million runs). Only live lease rows (as
        # ``LeaseInfo.live`` judges them: ``expires_in > 0``) are read: a lapsed one changes no
        # run's state, and a fleet's lease table keeps a row for each run ever driven. The two
        # branches are disjoint (a waking run; a leased run with no wake time), so no run found
        # twice is sorted out.
        live = (
            f"(SELECT run_id, holder, {lease_expires_in('expiry')} AS expires_in FROM {leases}"
            " WHERE expiry > pg_catalog.now())"
        )
        self.uncertain = (
            "SELECT pg_catalog.array_agg(run_id), pg_catalog.array_agg(state), pg_catalog.array_agg(wake_at),"
            " pg_catalog.array_agg(leased), pg_catalog.array_agg(holder), pg_catalog.array_agg(expires_in) FROM ("
            + (
                f"SELECT r.run_id, r.state, r.wake_at, l.run_id AS leased, l.holder, l.expires_in"
                f' FROM {runs} AS r LEFT JOIN {live} AS l ON l.run_id COLLATE "C" = r.root_id'
                f" WHERE r.wake_at IS NOT NULL AND r.state IS NOT NULL AND {unqueued}"
                f" UNION ALL SELECT r.run_id, r.state, r.wake_at, l.run_id, l.holder, l.expires_in"
                f" FROM {live} AS l CROSS JOIN LATERAL {under_lease}"
                f" WHERE r.wake_at IS NULL AND r.state IS NOT NULL AND {unqueued}"
                if has_leases
                else "SELECT r.run_id, r.state, r.wake_at, NULL::pg_catalog.text AS leased,"
                " NULL::pg_catalog.text AS holder, NULL::pg_catalog.float8 AS expires_in"
                f" FROM {runs} AS r WHERE r.wake_at IS NOT NULL AND r.state IS NOT NULL AND {unqueued}"
            )
            + ") AS uncertain"
        )
        self.to_read = f"""
            SELECT pg_catalog.array_agg(run_id ORDER BY run_id) FROM (
                SELECT q.run_id FROM (SELECT DISTINCT run_id FROM {changes}) AS q
                WHERE EXISTS (SELECT FROM {steps} AS s WHERE s.run_id = q.run_id)
                UNION SELECT run_id FROM {runs} WHERE state IS NULL
            ) AS queued
        """

    def settled(self, condition: str, after: int, *, paged: bool) -> str:
        """The rows ``condition`` may select past the run id ``$<after>``, no change queued, in
        run id order; ``paged``, the first ``$<after + 1>`` of them: read by the index the
        condition picks (its state's, or the primary key from ``after`` on), no further."""
        limit = f" LIMIT ${after + 1}" if paged else ""
        return (
            f"SELECT {self._selected_columns} FROM {self._runs} AS r WHERE r.state IS NOT NULL AND ({condition})"
            f" AND r.run_id > ${after} AND {self._unqueued} ORDER BY r.run_id{limit}"
        )

    def unsettled(self, condition: str, after: int, *, bounded: bool) -> str:
        """The rows a lease row or the clock decides that ``condition`` (an unsettled one) may
        select past the run id ``$<after>`` (``bounded``, through ``$<after + 2>``: a page's
        range), no change queued: the asleep through their own index, the leased from the lease
        rows of the top-level runs in the range, and of those whose ids begin ``$<after>`` (the
        array ``$<after + 1>``: a run past it may be a sub-run of theirs), through the root index.
        A page reads its own: the first page of a million runs waits on no more."""
        within = f"r.run_id > ${after}" + (f" AND r.run_id <= ${after + 2}" if bounded else "")
        roots = f'l.run_id COLLATE "C" > ${after}' + (f' AND l.run_id COLLATE "C" <= ${after + 2}' if bounded else "")
        parts = [f"SELECT {self._selected_columns} FROM {self._runs} AS r WHERE r.wake_at IS NOT NULL AND {within}"]
        if self._leases is not None:
            parts.append(
                f"SELECT {self._selected_columns} FROM {self._leases} AS l CROSS JOIN LATERAL {self._under_lease}"
                f' WHERE ({roots} OR l.run_id COLLATE "C" = ANY(${after + 1}::pg_catalog.text[])) AND {within}'
            )
        unioned = " UNION ".join(
            f"({part} AND r.state IS NOT NULL AND ({condition}) AND {self._unqueued})" for part in parts
        )
        return f"SELECT * FROM ({unioned}) AS unsettled ORDER BY run_id"

    def grant_to(self, role: str) -> str:
        return self._grant.format(role=role if role == "PUBLIC" else _q(role.replace('"', '""')))

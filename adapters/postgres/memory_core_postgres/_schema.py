"""The versioned schema: migrations applied once, safely, by any number of openers.

A store lives in one PostgreSQL schema. ``schema_version`` records the
applied migrations. An opener first reads the version (one statement; the
common case ends there); if migrations are missing it takes a transaction-
scoped advisory lock keyed by the schema name, reads the version again under
the lock and applies what is still missing, so many processes opening one new
database at once create the schema exactly once (the SQLite case C12, here
with ``pg_advisory_xact_lock``). Each migration runs as one multi-statement
script (one round trip).

Column notes (the README has the whole layout):

- ids are ``text COLLATE "C"``: byte order of UTF-8 is code point order, the
  order of Python's ``str`` (thread ties by id, R-ORDER);
- free text and JSON (title, type, content, metadata, working memory) are
  ``json`` holding the exact text ``memory_core.codec`` wrote: ``jsonb``
  would rewrite ``1e16`` as an integer, drop the sign of ``-0.0`` and refuse
  ``\\u0000`` (R-JSON), and ``text`` cannot hold NUL at all;
- ``meta`` (``jsonb``) is the filterable projection of ``metadata`` that
  R-META filters match with ``@>`` (see :mod:`._sql`), GIN-indexed;
- ``search`` (``tsvector``) is the full text of a message, written with it.
"""

from __future__ import annotations

import asyncpg

from memory_core_postgres._url import quote_ident

__all__ = ["LOCK_CLASS", "MIGRATIONS", "SCHEMA_VERSION", "migrate", "schema_version"]

LOCK_CLASS = 0x6D63
"""First key of memory-core's advisory locks (``'mc'``); the second is
``hashtext(schema)``. A collision with another application's lock only makes
an opener wait."""

_COUNTERS = """
-- R-PAGE: unfiltered totals are counters the writes keep, never a count of rows.
-- Every write locks in one order: threads (by id), then messages (by id), then
-- resource counters (by id), so writes of one thread or resource queue instead
-- of deadlocking. The whole migration holds the tables, so the backfill and
-- the functions that keep the counters from then on see the same rows.
LOCK TABLE {s}.threads, {s}.messages IN SHARE ROW EXCLUSIVE MODE;
ALTER TABLE {s}.threads ADD COLUMN message_count bigint NOT NULL DEFAULT 0;
CREATE TABLE {s}.resource_counters (
    resource_id text COLLATE "C" PRIMARY KEY,
    messages bigint NOT NULL
);
UPDATE {s}.threads t SET message_count = c.n
FROM (SELECT thread_id, count(*) AS n FROM {s}.messages GROUP BY thread_id) c WHERE t.id = c.thread_id;
INSERT INTO {s}.resource_counters (resource_id, messages)
SELECT resource_id, count(*) FROM {s}.messages GROUP BY resource_id;

-- Add deltas to resource counters, locking their rows in id order (always the
-- last locks a write takes); a counter a delete brings to 0 stays until erasure.
CREATE FUNCTION {s}.shift_resource_counters(resources text[], deltas bigint[]) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO {s}.resource_counters AS c (resource_id, messages)
    SELECT r, sum(d) FROM unnest(resources, deltas) AS x(r, d) GROUP BY r HAVING sum(d) <> 0 ORDER BY r
    ON CONFLICT (resource_id) DO UPDATE SET messages = c.messages + excluded.messages
$$;

CREATE OR REPLACE FUNCTION {s}.save_messages(
    ids text[], seqs bigint[], thread_ids text[], resource_ids text[], roles text[], types text[],
    contents text[], metadatas text[], metas text[], created timestamptz[], texts text[], ts_config regconfig,
    owner_threads text[], owner_resources text[], bump text[], now_at timestamptz, max_at timestamptz
) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    found bigint;
    bad bigint;
    written bigint;
    result bigint[];
    old_threads text[];
    fresh_resources text[];
BEGIN
    -- Every thread this batch writes (targets, sources of moves, bumped), by
    -- id; they must still exist under the owners the core read. A concurrent
    -- delete_thread waits for this batch, or this batch for it.
    SELECT count(*) FILTER (WHERE (t.id, t.resource_id) IN (SELECT * FROM unnest(owner_threads, owner_resources)))
    INTO found FROM (
        SELECT id, resource_id FROM {s}.threads WHERE id = ANY(owner_threads || bump) ORDER BY id FOR NO KEY UPDATE
    ) t;
    IF found <> cardinality(owner_threads) THEN
        RAISE EXCEPTION 'a thread changed' USING ERRCODE = 'MC409';
    END IF;
    -- The stored rows of known ids, by id: where each is now (a move leaves it).
    SELECT COALESCE(array_agg(m.thread_id), '{{}}') INTO old_threads
    FROM (SELECT thread_id FROM {s}.messages WHERE id = ANY(ids) ORDER BY id FOR UPDATE) m;
    IF NOT old_threads <@ bump THEN
        RAISE EXCEPTION 'a message moved' USING ERRCODE = 'MC409';
    END IF;
    -- New ids take the next sequence numbers in list order; known ids
    -- keep seq, created_at and resource_id. What the core read about
    -- each id (new, or known under this resource) must still hold.
    WITH batch AS (
        SELECT * FROM unnest(ids, seqs, thread_ids, resource_ids, roles, types, contents, metadatas, metas,
                             created, texts)
            WITH ORDINALITY AS b(id, seq, thread_id, resource_id, role, type, content, metadata, meta,
                                 created_at, body, ord)
    ), written_rows AS (
        INSERT INTO {s}.messages AS m
            (id, seq, thread_id, resource_id, role, type, content, metadata, meta, created_at, search)
        SELECT id, COALESCE(seq, nextval('{s}.message_sequence')), thread_id, resource_id, role,
               type::json, content::json, metadata::json, meta::jsonb, created_at,
               to_tsvector(ts_config, body)
        FROM batch ORDER BY ord
        ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id, role = excluded.role,
            type = excluded.type, content = excluded.content, metadata = excluded.metadata,
            meta = excluded.meta, search = excluded.search
            WHERE m.resource_id = excluded.resource_id
        RETURNING m.id, m.seq, (m.xmax = 0) AS fresh
    )
    SELECT array_agg(w.seq ORDER BY b.ord), count(*) FILTER (WHERE w.fresh <> (b.seq IS NULL)), count(w.id),
           COALESCE(array_agg(b.resource_id) FILTER (WHERE w.fresh), '{{}}')
    INTO result, bad, written, fresh_resources
    FROM batch b LEFT JOIN written_rows w ON w.id = b.id;
    IF bad > 0 OR written <> cardinality(ids) THEN
        RAISE EXCEPTION 'a message changed' USING ERRCODE = 'MC409';
    END IF;
    -- Each row counts +1 in its thread now, -1 in the thread it was in.
    UPDATE {s}.threads t SET message_count = t.message_count + d.delta, updated_at = CASE WHEN t.id = ANY(bump)
        THEN LEAST(GREATEST(now_at, t.updated_at + interval '1 microsecond'), max_at) ELSE t.updated_at END
    FROM (
        SELECT tid, sum(n) AS delta FROM (
            SELECT unnest(thread_ids) AS tid, 1 AS n
            UNION ALL SELECT unnest(old_threads), -1
            UNION ALL SELECT unnest(bump), 0
        ) x GROUP BY tid
    ) d
    WHERE t.id = d.tid;
    PERFORM {s}.shift_resource_counters(fresh_resources, array_fill(1::bigint, ARRAY[cardinality(fresh_resources)]));
    RETURN result;
END
$$;

CREATE OR REPLACE FUNCTION {s}.patch_messages(
    ids text[], versions xid[], thread_ids text[], roles text[], types text[], contents text[],
    metadatas text[], metas text[], texts text[], ts_config regconfig,
    owner_threads text[], owner_resources text[], bump text[], now_at timestamptz, max_at timestamptz
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    found bigint;
    matching bigint;
    written bigint;
    old_threads text[];
BEGIN
    SELECT count(*) FILTER (WHERE (t.id, t.resource_id) IN (SELECT * FROM unnest(owner_threads, owner_resources)))
    INTO found FROM (
        SELECT id, resource_id FROM {s}.threads WHERE id = ANY(owner_threads || bump) ORDER BY id FOR NO KEY UPDATE
    ) t;
    IF found <> cardinality(owner_threads) THEN
        RAISE EXCEPTION 'a thread changed' USING ERRCODE = 'MC409';
    END IF;
    -- Compare-and-set: each row, locked by id, must still be the version the
    -- new values were computed from (xmin changes with every update), in a
    -- thread the core read (bump).
    SELECT count(*) FILTER (WHERE m.xmin = u.version AND m.thread_id = ANY(bump)),
           COALESCE(array_agg(m.thread_id), '{{}}')
    INTO matching, old_threads
    FROM (SELECT id, xmin, thread_id FROM {s}.messages WHERE id = ANY(ids) ORDER BY id FOR UPDATE) m
    JOIN unnest(ids, versions) AS u(id, version) ON u.id = m.id;
    IF matching <> cardinality(ids) THEN
        RAISE EXCEPTION 'a message changed' USING ERRCODE = 'MC409';
    END IF;
    UPDATE {s}.messages m SET thread_id = u.thread_id, role = u.role, type = u.type::json,
        content = u.content::json, metadata = u.metadata::json, meta = u.meta::jsonb,
        search = to_tsvector(ts_config, u.body)
    FROM unnest(ids, versions, thread_ids, roles, types, contents, metadatas, metas, texts)
        AS u(id, version, thread_id, role, type, content, metadata, meta, body)
    WHERE m.id = u.id AND m.xmin = u.version;
    GET DIAGNOSTICS written = ROW_COUNT;
    IF written <> cardinality(ids) THEN
        RAISE EXCEPTION 'a message changed' USING ERRCODE = 'MC409';
    END IF;
    -- A move counts in its new thread instead of its old one (same resource).
    UPDATE {s}.threads t SET message_count = t.message_count + d.delta, updated_at = CASE WHEN t.id = ANY(bump)
        THEN LEAST(GREATEST(now_at, t.updated_at + interval '1 microsecond'), max_at) ELSE t.updated_at END
    FROM (
        SELECT tid, sum(n) AS delta FROM (
            SELECT unnest(thread_ids) AS tid, 1 AS n
            UNION ALL SELECT unnest(old_threads), -1
            UNION ALL SELECT unnest(bump), 0
        ) x GROUP BY tid
    ) d
    WHERE t.id = d.tid;
END
$$;

CREATE FUNCTION {s}.delete_messages(ids text[], now_at timestamptz, max_at timestamptz) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    removed bigint;
    gone_resources text[];
BEGIN
    -- Their threads first, by id (as every write); a message moved in between
    -- still has its new thread counted below, only locked out of order.
    PERFORM 1 FROM {s}.threads WHERE id IN (SELECT thread_id FROM {s}.messages WHERE id = ANY(ids))
    ORDER BY id FOR NO KEY UPDATE;
    -- A racing delete of the same row waits for ours and then counts nothing.
    WITH gone AS (
        DELETE FROM {s}.messages WHERE id = ANY(ids) RETURNING thread_id, resource_id
    ), bumped AS (
        UPDATE {s}.threads t SET message_count = t.message_count - g.n,
            updated_at = LEAST(GREATEST(now_at, t.updated_at + interval '1 microsecond'), max_at)
        FROM (SELECT thread_id, count(*) AS n FROM gone GROUP BY thread_id) g WHERE t.id = g.thread_id
    )
    SELECT count(*), COALESCE(array_agg(resource_id), '{{}}') INTO removed, gone_resources FROM gone;
    PERFORM {s}.shift_resource_counters(gone_resources, array_fill(-1::bigint, ARRAY[cardinality(gone_resources)]));
    RETURN removed;
END
$$;

CREATE FUNCTION {s}.delete_thread(tid text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    owner text;
    removed bigint;
BEGIN
    -- The thread first: a writer into it (which locks it) finishes before, and
    -- none starts after. Its messages cascade; its counter is how many.
    DELETE FROM {s}.threads WHERE id = tid RETURNING resource_id, message_count INTO owner, removed;
    IF owner IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM {s}.shift_resource_counters(ARRAY[owner], ARRAY[-removed]);
    RETURN removed;
END
$$;

CREATE FUNCTION {s}.delete_resource(rid text, OUT thread_ids text[], OUT removed bigint, OUT record boolean)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM {s}.threads WHERE resource_id = rid ORDER BY id FOR UPDATE;
    WITH gone AS (DELETE FROM {s}.threads WHERE resource_id = rid RETURNING id, message_count)
    SELECT COALESCE(array_agg(id ORDER BY id), '{{}}'), COALESCE(sum(message_count), 0)
    INTO thread_ids, removed FROM gone;
    WITH gone AS (DELETE FROM {s}.resources WHERE id = rid RETURNING 1) SELECT count(*) > 0 INTO record FROM gone;
    -- Erasure leaves no counter behind; what a racing writer added meanwhile
    -- (a thread created after the lock) stays counted.
    UPDATE {s}.resource_counters SET messages = messages - removed WHERE resource_id = rid;
    DELETE FROM {s}.resource_counters WHERE resource_id = rid AND messages = 0;
END
$$;
"""
"""Migration 2: message counters (``threads.message_count``,
``resource_counters``), backfilled from the rows, and the write functions
that keep them."""

MIGRATIONS: tuple[tuple[int, str], ...] = (
    (
        1,
        """
        CREATE TABLE {s}.threads (
            id text COLLATE "C" PRIMARY KEY,
            resource_id text COLLATE "C" NOT NULL,
            title json NOT NULL,
            metadata json NOT NULL,
            meta jsonb NOT NULL,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL
        );
        CREATE INDEX threads_resource_created ON {s}.threads (resource_id, created_at, id);
        CREATE INDEX threads_resource_updated ON {s}.threads (resource_id, updated_at, id);
        CREATE INDEX threads_created ON {s}.threads (created_at, id);
        CREATE INDEX threads_updated ON {s}.threads (updated_at, id);
        CREATE INDEX threads_meta ON {s}.threads USING gin (meta jsonb_path_ops);
        CREATE SEQUENCE {s}.message_sequence AS bigint;
        CREATE TABLE {s}.messages (
            id text COLLATE "C" PRIMARY KEY,
            seq bigint NOT NULL,
            thread_id text COLLATE "C" NOT NULL REFERENCES {s}.threads (id) ON DELETE CASCADE,
            resource_id text COLLATE "C" NOT NULL,
            role text NOT NULL,
            type json NOT NULL,
            content json NOT NULL,
            metadata json NOT NULL,
            meta jsonb NOT NULL,
            created_at timestamptz NOT NULL,
            search tsvector NOT NULL
        );
        CREATE INDEX messages_thread_order ON {s}.messages (thread_id, created_at, seq) INCLUDE (resource_id);
        CREATE INDEX messages_resource_order ON {s}.messages (resource_id, created_at, seq);
        CREATE INDEX messages_meta ON {s}.messages USING gin (meta jsonb_path_ops);
        CREATE INDEX messages_search ON {s}.messages USING gin (search);
        CREATE TABLE {s}.resources (
            id text COLLATE "C" PRIMARY KEY,
            working_memory json,
            metadata json NOT NULL,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL
        );
        CREATE FUNCTION {s}.save_messages(
            ids text[], seqs bigint[], thread_ids text[], resource_ids text[], roles text[], types text[],
            contents text[], metadatas text[], metas text[], created timestamptz[], texts text[], ts_config regconfig,
            owner_threads text[], owner_resources text[], bump text[], now_at timestamptz, max_at timestamptz
        ) RETURNS bigint[] LANGUAGE plpgsql AS $$
        DECLARE
            found bigint;
            bad bigint;
            written bigint;
            result bigint[];
        BEGIN
            -- The threads still exist under the owners the core read; KEY SHARE
            -- makes a concurrent delete_thread wait for this batch.
            SELECT count(*) INTO found FROM (
                SELECT 1 FROM {s}.threads t
                WHERE (t.id, t.resource_id) IN (SELECT * FROM unnest(owner_threads, owner_resources))
                FOR KEY SHARE
            ) locked;
            IF found <> cardinality(owner_threads) THEN
                RAISE EXCEPTION 'a thread changed' USING ERRCODE = 'MC409';
            END IF;
            -- New ids take the next sequence numbers in list order; known ids
            -- keep seq, created_at and resource_id. What the core read about
            -- each id (new, or known under this resource) must still hold.
            WITH batch AS (
                SELECT * FROM unnest(ids, seqs, thread_ids, resource_ids, roles, types, contents, metadatas, metas,
                                     created, texts)
                    WITH ORDINALITY AS b(id, seq, thread_id, resource_id, role, type, content, metadata, meta,
                                         created_at, body, ord)
            ), written_rows AS (
                INSERT INTO {s}.messages AS m
                    (id, seq, thread_id, resource_id, role, type, content, metadata, meta, created_at, search)
                SELECT id, COALESCE(seq, nextval('{s}.message_sequence')), thread_id, resource_id, role,
                       type::json, content::json, metadata::json, meta::jsonb, created_at,
                       to_tsvector(ts_config, body)
                FROM batch ORDER BY ord
                ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id, role = excluded.role,
                    type = excluded.type, content = excluded.content, metadata = excluded.metadata,
                    meta = excluded.meta, search = excluded.search
                    WHERE m.resource_id = excluded.resource_id
                RETURNING m.id, m.seq, (m.xmax = 0) AS fresh
            )
            SELECT array_agg(w.seq ORDER BY b.ord), count(*) FILTER (WHERE w.fresh <> (b.seq IS NULL)), count(w.id)
            INTO result, bad, written
            FROM batch b LEFT JOIN written_rows w ON w.id = b.id;
            IF bad > 0 OR written <> cardinality(ids) THEN
                RAISE EXCEPTION 'a message changed' USING ERRCODE = 'MC409';
            END IF;
            UPDATE {s}.threads SET updated_at = LEAST(GREATEST(now_at, updated_at + interval '1 microsecond'), max_at)
            WHERE id = ANY(bump);
            RETURN result;
        END
        $$;
        CREATE FUNCTION {s}.patch_messages(
            ids text[], versions xid[], thread_ids text[], roles text[], types text[], contents text[],
            metadatas text[], metas text[], texts text[], ts_config regconfig,
            owner_threads text[], owner_resources text[], bump text[], now_at timestamptz, max_at timestamptz
        ) RETURNS void LANGUAGE plpgsql AS $$
        DECLARE
            found bigint;
            written bigint;
        BEGIN
            SELECT count(*) INTO found FROM (
                SELECT 1 FROM {s}.threads t
                WHERE (t.id, t.resource_id) IN (SELECT * FROM unnest(owner_threads, owner_resources))
                FOR KEY SHARE
            ) locked;
            IF found <> cardinality(owner_threads) THEN
                RAISE EXCEPTION 'a thread changed' USING ERRCODE = 'MC409';
            END IF;
            -- Compare-and-set: each row must still be the version the new values
            -- were computed from (xmin changes with every update).
            UPDATE {s}.messages m SET thread_id = u.thread_id, role = u.role, type = u.type::json,
                content = u.content::json, metadata = u.metadata::json, meta = u.meta::jsonb,
                search = to_tsvector(ts_config, u.body)
            FROM unnest(ids, versions, thread_ids, roles, types, contents, metadatas, metas, texts)
                AS u(id, version, thread_id, role, type, content, metadata, meta, body)
            WHERE m.id = u.id AND m.xmin = u.version;
            GET DIAGNOSTICS written = ROW_COUNT;
            IF written <> cardinality(ids) THEN
                RAISE EXCEPTION 'a message changed' USING ERRCODE = 'MC409';
            END IF;
            UPDATE {s}.threads SET updated_at = LEAST(GREATEST(now_at, updated_at + interval '1 microsecond'), max_at)
            WHERE id = ANY(bump);
        END
        $$;
        """,
    ),
    (2, _COUNTERS),
)
"""(version, script) in order; ``{s}`` is the quoted schema name. Scripts use
plain ``CREATE`` (no ``IF NOT EXISTS``), so applying one twice fails loudly."""

SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The version this package writes and reads."""

_VERSION_TABLE = """CREATE TABLE IF NOT EXISTS {s}.schema_version (
    version integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)"""


async def schema_version(conn: asyncpg.Connection, schema: str) -> int:
    """The highest applied migration of ``schema`` (0 when it has none)."""
    table = f"{quote_ident(schema)}.schema_version"
    if await conn.fetchval("SELECT to_regclass($1)", table) is None:
        return 0
    return int(await conn.fetchval(f"SELECT COALESCE(max(version), 0) FROM {table}"))


async def migrate(conn: asyncpg.Connection, schema: str) -> None:
    """Bring ``schema`` up to :data:`SCHEMA_VERSION` (idempotent, race-safe).

    Raises:
        RuntimeError: the schema was written by a newer memory-core-postgres.
        asyncpg.PostgresError: any driver failure (the caller wraps it).
    """
    version = await schema_version(conn, schema)
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise RuntimeError(_newer(schema, version))
    quoted = quote_ident(schema)
    async with conn.transaction():
        # Losing a just-committed migration to a crash is harmless (the next
        # opener applies it again), so its commit does not wait for the WAL flush.
        await conn.execute("SET LOCAL synchronous_commit = off")
        await conn.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", LOCK_CLASS, schema)
        await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {quoted}; " + _VERSION_TABLE.format(s=quoted))
        version = await schema_version(conn, schema)  # again, now under the lock
        if version > SCHEMA_VERSION:
            raise RuntimeError(_newer(schema, version))
        for number, script in MIGRATIONS:
            if number > version:
                await conn.execute(script.format(s=quoted))
                await conn.execute(f"INSERT INTO {quoted}.schema_version (version) VALUES ($1)", number)


def _newer(schema: str, version: int) -> str:
    return (
        f"schema {schema!r} is at version {version}, newer than this memory-core-postgres supports ({SCHEMA_VERSION})"
    )

"""Raw asyncpg on the PostgreSQL adapter's own schema, tables and indexes.

The ceiling for ``postgresql://``: what a careful developer writes by hand
with the same driver for the same answers, sharing the adapter's schema
(memory-core-postgres: ``threads`` with ``message_count``, ``messages`` with
``seq``, ``meta`` and ``search``, ``resource_counters``, the
``message_sequence`` sequence; a pool whose connections' ``search_path`` is
the schema, as the adapter's).

Every operation is ONE statement: a read returns the ownership check and
the total with the page (``LEFT JOIN LATERAL``), its rows decoded (JSON
content and metadata); an unfiltered total is the thread's
``message_count`` (R-PAGE: read, not counted, as the adapter), a filtered
one a count. A save is one statement of data-modifying CTEs that checks the
owners, upserts with new sequence numbers, fills ``meta`` and the full-text
column, bumps the threads adding their new messages to ``message_count`` in
the same update, and adds them to the resources' counters (as the adapter's
``save_messages`` and ``shift_resource_counters``). Every saved message is
new (the workloads save fresh ids): it counts in its thread and resource. It
does not re-verify ids against concurrent writers (the adapter's PL/pgSQL
save does), which is part of what the adapter's margin pays for.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import asyncpg
from memory_core import codec
from memory_core.clock import TIME_MAX_US, from_us
from memory_core.errors import AdapterClosedError

from memory_core_bench.dataset import BenchMessage, ThreadSpec
from memory_core_bench.subjects import AdapterSubject, Answer, Kind, Subject

__all__ = ["MIRRORED", "RawPostgres", "make"]

_COLS = "id, thread_id, resource_id, role, type, content, metadata, created_at, seq"
_BUMP = "LEAST(GREATEST($2, updated_at + interval '1 microsecond'), $3)"  # R-BUMP, saturating
_LAST_MESSAGE_AT = "(SELECT max(m.created_at) FROM messages m WHERE m.thread_id = threads.id)"
_SAVE = (
    "WITH b AS (SELECT * FROM unnest($1::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],"
    " $9::text[], $10::timestamptz[], $11::text[]) WITH ORDINALITY"
    " AS b(id, thread_id, resource_id, role, content, metadata, meta, created_at, body, ord)),"
    " owned AS (SELECT b.* FROM b JOIN threads t ON t.id = b.thread_id AND t.resource_id = b.resource_id),"
    " w AS (INSERT INTO messages (id, seq, thread_id, resource_id, role, type, content, metadata, meta,"
    " created_at, search) SELECT id, nextval('message_sequence'), thread_id, resource_id, role, '\"v2\"',"
    " content::json, metadata::json, meta::jsonb, created_at, to_tsvector('simple', body) FROM owned ORDER BY ord"
    " ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id, role = excluded.role, type = excluded.type,"
    " content = excluded.content, metadata = excluded.metadata, meta = excluded.meta, search = excluded.search"
    " RETURNING 1),"
    f" bump AS (UPDATE threads SET message_count = message_count + d.n, updated_at = {_BUMP}"
    " FROM (SELECT thread_id, count(*) AS n FROM owned GROUP BY thread_id) d WHERE id = d.thread_id RETURNING 1),"
    " counted AS (INSERT INTO resource_counters AS c (resource_id, messages)"
    " SELECT resource_id, count(*) FROM owned GROUP BY resource_id ORDER BY resource_id"
    " ON CONFLICT (resource_id) DO UPDATE SET messages = c.messages + excluded.messages RETURNING 1)"
    " SELECT (SELECT count(*) FROM owned), (SELECT count(*) FROM w), (SELECT count(*) FROM bump),"
    " (SELECT count(*) FROM counted)"
)
_MAX_AT = from_us(TIME_MAX_US)
_TOTAL = "COALESCE(sum(message_count), 0)::bigint AS total FROM threads WHERE id = $1"
"""The unfiltered total of thread ``$1`` (a row even when it is missing): its counter, as the adapter reads it."""

MIRRORED = {
    "_BUMP": "memory_core_postgres.storage:_BUMP",
    "_LAST_MESSAGE_AT": "memory_core_postgres._sql:LAST_MESSAGE_AT",
}
"""The adapter layout this baseline repeats by hand: our name -> the adapter's
``module:attribute``; a test fails when the two differ."""


def make(adapter: AdapterSubject) -> RawPostgres | None:
    """The raw baseline on ``adapter``'s schema (None when it is not PostgreSQL)."""
    settings = getattr(adapter.storage, "settings", None)
    dsn, schema = getattr(settings, "dsn", None), getattr(settings, "schema", None)
    if not isinstance(dsn, str) or not isinstance(schema, str):
        return None
    return RawPostgres(adapter.backend, dsn, schema)


def _decoded(rows: Sequence[Any], start: int) -> list[tuple[Any, ...]]:
    """Message rows (columns from ``start``), JSON decoded; NULL rows skipped."""
    out = []
    for r in rows:
        if r[start] is not None:
            o = start
            content, metadata = codec.loads(r[o + 5]), codec.loads(r[o + 6])
            out.append((r[o], r[o + 1], r[o + 2], r[o + 3], content, metadata, r[o + 7], r[o + 8]))
    return out


def _now() -> datetime:
    return from_us(time.time_ns() // 1000)


class RawPostgres(Subject):
    """asyncpg by hand on the adapter's schema (shares its data).

    Args:
        backend: group name.
        dsn: the adapter's URL (its options removed).
        schema: the adapter's schema.
    """

    kind: Kind = "raw"
    shares_data = True

    def __init__(self, backend: str, dsn: str, schema: str) -> None:
        self.backend = backend
        self.label = "asyncpg (raw)"
        self.dsn = dsn
        self.schema = schema
        self._pool: asyncpg.Pool | None = None

    @property
    def pool(self) -> asyncpg.Pool:
        """The open pool."""
        if self._pool is None:
            raise AdapterClosedError("raw PostgreSQL baseline: open() first")
        return self._pool

    async def open(self) -> None:
        """A pool like the adapter's (search_path = the schema, no session reset)."""
        from memory_core_postgres.storage import keep_session

        quoted = '"' + self.schema.replace('"', '""') + '"'
        self._pool = await asyncpg.create_pool(
            self.dsn, min_size=1, max_size=10, server_settings={"search_path": quoted}, reset=keep_session
        )

    async def close(self) -> None:
        """Disconnect (the adapter drops the schema)."""
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def create_threads(self, threads: Sequence[ThreadSpec]) -> None:
        """Insert threads in one statement."""
        from memory_core_postgres._sql import meta_document

        await self.pool.execute(
            "INSERT INTO threads (id, resource_id, title, metadata, meta, created_at, updated_at)"
            " SELECT id, resource_id, title::json, metadata::json, meta::jsonb, at, at FROM unnest($1::text[],"
            " $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[]) AS t(id, resource_id, title,"
            " metadata, meta, at)",
            [t.id for t in threads],
            [t.resource_id for t in threads],
            [codec.dumps(t.title) for t in threads],
            [codec.dumps(t.metadata) for t in threads],
            [meta_document(t.metadata) for t in threads],
            [from_us(t.created_at_us) for t in threads],
        )

    def prepare(self, messages: list[BenchMessage]) -> Any:
        """The column arrays of one batch (what a caller would build)."""
        from memory_core_postgres._sql import meta_document

        return (
            [m.id for m in messages],
            [m.thread_id for m in messages],
            [m.resource_id for m in messages],
            [m.role for m in messages],
            [codec.dumps(m.content) for m in messages],
            [codec.dumps(m.metadata) for m in messages],
            [meta_document(m.metadata) for m in messages],
            [from_us(m.created_at_us) for m in messages],
            [m.content if isinstance(m.content, str) else "" for m in messages],
        )

    async def save(self, prepared: Any) -> None:
        """One statement: owners checked, upserts with new sequences, bumps
        with the thread counters, resource counters."""
        ids, *columns = prepared
        owned, written, _, _ = await self.pool.fetchrow(_SAVE, ids, _now(), _MAX_AT, *columns)
        if owned != len(prepared[0]) or written != owned:
            raise LookupError("a thread is missing or owned by another resource")

    async def _page(
        self, thread_id: str, where: str, params: Sequence[Any], limit: int, offset: int, keyset: str = ""
    ) -> Answer:
        """Total under ``where`` (unfiltered: the thread's counter; else a
        count) + the window (``keyset`` narrows the window only), created_at
        ASC, in one statement."""
        total = f"count(*) AS total FROM messages WHERE thread_id = $1{where}" if where else _TOTAL
        rows = await self.pool.fetch(
            f"SELECT c.total, w.* FROM (SELECT {total}) c"
            f" LEFT JOIN LATERAL (SELECT {_COLS} FROM messages WHERE thread_id = $1{where}{keyset}"
            f" ORDER BY created_at, seq LIMIT {int(limit)} OFFSET {int(offset)}) w ON true",
            thread_id,
            *params,
        )
        return Answer(int(rows[0][0]), tuple(r[0] for r in _decoded(rows, 1)))

    async def recall_newest(self, thread: ThreadSpec, n: int) -> Answer:
        """Owner + total (the counter) + newest ``n`` in one statement, returned oldest first."""
        rows = await self.pool.fetch(
            "SELECT t.resource_id, t.message_count, w.* FROM threads t"
            f" LEFT JOIN LATERAL (SELECT {_COLS} FROM messages WHERE thread_id = $1 AND resource_id = $2"
            " ORDER BY created_at DESC, seq DESC LIMIT $3) w ON true WHERE t.id = $1",
            thread.id,
            thread.resource_id,
            n,
        )
        if not rows or rows[0][0] != thread.resource_id:
            raise PermissionError("not the owner")
        items = _decoded(rows, 2)
        items.reverse()
        return Answer(int(rows[0][1]), tuple(r[0] for r in items))

    async def page_offset(self, thread: ThreadSpec, page: int, per_page: int) -> Answer:
        """Total (the counter) + ``LIMIT/OFFSET`` page in one statement."""
        return await self._page(thread.id, "", (), per_page, page * per_page)

    async def first_cursor(self, thread: ThreadSpec, per_page: int, depth: int) -> Any:
        """(created_at, seq) of the message at position ``depth - 1``."""
        if depth <= 0:
            return None
        row = await self.pool.fetchrow(
            "SELECT created_at, seq FROM messages WHERE thread_id = $1 ORDER BY created_at, seq LIMIT 1 OFFSET $2",
            thread.id,
            depth - 1,
        )
        return (row[0], row[1])

    async def page_cursor(self, thread: ThreadSpec, cursor: Any, per_page: int) -> Answer:
        """Total (the counter) + keyset page (one extra row for has_more) in one statement."""
        if cursor is None:
            return await self.page_offset(thread, 0, per_page)
        answer = await self._page(thread.id, "", cursor, per_page + 1, 0, " AND (created_at, seq) > ($2, $3)")
        return Answer(answer.total, answer.ids[:per_page])

    async def filter_meta(self, thread: ThreadSpec, key: str, value: str, per_page: int) -> Answer:
        """Containment on the adapter's ``meta`` projection."""
        return await self._page(thread.id, " AND meta @> $2::jsonb", (codec.dumps({key: value}),), per_page, 0)

    async def filter_date(self, thread: ThreadSpec, start_us: int, end_us: int, per_page: int) -> Answer:
        """``created_at`` between the bounds, on the thread index."""
        return await self._page(
            thread.id,
            " AND created_at >= $2 AND created_at <= $3",
            (from_us(start_us), from_us(end_us)),
            per_page,
            0,
        )

    async def include_windows(
        self, thread: ThreadSpec, targets: Sequence[str], before: int, after: int, n: int
    ) -> Answer:
        """One statement: owner + total (the counter) + newest ``n``, then every target's
        window (restricted to the resource); merged and sorted here."""
        rows = await self.pool.fetch(
            "SELECT t.resource_id, t.message_count, w.* FROM threads t"
            " LEFT JOIN LATERAL ("
            f"(SELECT {_COLS} FROM messages WHERE thread_id = $1 AND resource_id = $2"
            " ORDER BY created_at DESC, seq DESC LIMIT $3)"
            f" UNION ALL SELECT x.* FROM unnest($4::text[]) AS g(id) JOIN messages a ON a.id = g.id"
            " AND a.resource_id = $2 CROSS JOIN LATERAL ("
            f"(SELECT {_COLS} FROM messages m WHERE m.thread_id = a.thread_id AND m.resource_id = $2"
            " AND (m.created_at, m.seq) < (a.created_at, a.seq) ORDER BY m.created_at DESC, m.seq DESC LIMIT $5)"
            f" UNION ALL SELECT {_COLS} FROM messages m WHERE m.id = a.id"
            f" UNION ALL (SELECT {_COLS} FROM messages m WHERE m.thread_id = a.thread_id AND m.resource_id = $2"
            " AND (m.created_at, m.seq) > (a.created_at, a.seq) ORDER BY m.created_at, m.seq LIMIT $6)) x"
            ") w ON true WHERE t.id = $1",
            thread.id,
            thread.resource_id,
            n,
            list(targets),
            before,
            after,
        )
        if not rows or rows[0][0] != thread.resource_id:
            raise PermissionError("not the owner")
        merged = {r[0]: r for r in _decoded(rows, 2)}
        items = sorted(merged.values(), key=lambda r: (r[6], r[7]))
        return Answer(int(rows[0][1]), tuple(r[0] for r in items))

    async def list_threads(self, resource_id: str, page: int, per_page: int) -> Answer:
        """Count + page of threads (created_at DESC, id DESC) with each one's
        newest message time (R-LAST, as the adapter returns it) in one statement."""
        rows = await self.pool.fetch(
            "SELECT c.total, w.* FROM (SELECT count(*) AS total FROM threads WHERE resource_id = $1) c"
            " LEFT JOIN LATERAL (SELECT id, resource_id, title, metadata, created_at, updated_at,"
            f" {_LAST_MESSAGE_AT} FROM threads"
            " WHERE resource_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3) w ON true",
            resource_id,
            per_page,
            page * per_page,
        )
        threads = [
            (r[1], codec.loads(r[3]), codec.loads(r[4])) for r in rows if r[1] is not None
        ]  # decoded, as the adapter's
        return Answer(int(rows[0][0]), tuple(t[0] for t in threads))

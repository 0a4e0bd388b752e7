"""Raw aiosqlite on the SQLite adapter's own file, tables and indexes.

The ceiling for ``sqlite://``: what a careful developer writes by hand with
the same driver for the same answers, sharing the adapter's database (schema
of memory-core-sqlite: ``threads`` with ``message_count``, ``messages`` with ``seq``,
``resource_message_counts``, ``counters``;
indexes ``messages_thread_order (thread_id, created_at, seq)`` and
``threads_resource_created (resource_id, created_at, id)``). The connection
is set up like the adapter's (WAL file, ``synchronous=NORMAL``, foreign
keys on, busy timeout).

Every operation is ONE job on aiosqlite's worker thread (the connection's
own queue, ``Connection._execute``, as the adapter uses it): a read is one
statement (a header row with the ownership check and the total, ``UNION
ALL`` the page) whose rows are decoded (JSON content and metadata) in the
job; an unfiltered total is the thread's ``message_count`` (R-PAGE: read,
not counted, as the adapter), a filtered one a count. A save is one ``BEGIN
IMMEDIATE`` transaction: ownership check, sequence reservation, the upserts,
the message counters (per thread and per resource, as the adapter's
``_counters.apply``) and the thread bumps. Every saved message is new (the
workloads save fresh ids): it counts in its thread and resource.
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import aiosqlite
from memory_core import codec
from memory_core.clock import TIME_MAX_US
from memory_core.errors import AdapterClosedError

from memory_core_bench.dataset import BenchMessage, ThreadSpec
from memory_core_bench.subjects import AdapterSubject, Answer, Kind, Subject

__all__ = ["MIRRORED", "RawSQLite", "make"]

_COLS = "id, thread_id, resource_id, role, type, content, metadata, created_at, seq"
_PAD = "NULL, NULL, NULL, NULL, NULL, NULL"
_UPSERT = (
    "INSERT INTO messages (id, seq, thread_id, resource_id, role, type, content, metadata, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id, role = excluded.role,"
    " type = excluded.type, content = excluded.content, metadata = excluded.metadata"
)
_BUMP = "UPDATE threads SET updated_at = min(max(?, updated_at + 1), ?) WHERE id = ?"  # R-BUMP, saturating
_THREAD_COUNT = "UPDATE threads SET message_count = message_count + ? WHERE id = ?"
_RESOURCE_COUNT = (
    "INSERT INTO resource_message_counts (resource_id, message_count) VALUES (?, ?)"
    " ON CONFLICT (resource_id) DO UPDATE SET message_count = message_count + excluded.message_count"
)
_TOTAL = "(SELECT message_count FROM threads WHERE id = ?1)"
"""The unfiltered total of thread ``?1``: its counter."""

MIRRORED = {
    "_UPSERT": "memory_core_sqlite._ops:_UPSERT_MESSAGE",
    "_BUMP": "memory_core_sqlite._ops:_BUMP",
    "_THREAD_COUNT": "memory_core_sqlite._counters:_THREAD",
    "_RESOURCE_COUNT": "memory_core_sqlite._counters:_RESOURCE",
}
"""The adapter layout this baseline repeats by hand: our name -> the adapter's
``module:attribute``; a test fails when the two differ."""

T = TypeVar("T")


def make(adapter: AdapterSubject) -> RawSQLite | None:
    """The raw baseline on ``adapter``'s database file (None for ``:memory:``)."""
    path = getattr(adapter.storage, "path", None)
    if not isinstance(path, str) or path == ":memory:":
        return None
    return RawSQLite(adapter.backend, path)


def _fetch_decoded(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Rows of a header + message statement; message rows JSON-decoded."""
    out: list[tuple[Any, ...]] = []
    for r in conn.execute(sql, params):
        if r[0] is None:
            out.append(tuple(r))
        else:
            out.append((r[0], r[1], r[2], r[3], r[4], codec.loads(r[5]), codec.loads(r[6]), r[7], r[8]))
    return out


def _fetch_threads(conn: sqlite3.Connection, resource_id: str, limit: int, offset: int) -> list[tuple[Any, ...]]:
    rows = conn.execute(
        "SELECT NULL, (SELECT COUNT(*) FROM threads WHERE resource_id = ?1), NULL, NULL, NULL, NULL"
        " UNION ALL SELECT * FROM (SELECT id, resource_id, title, metadata, created_at, updated_at"
        " FROM threads WHERE resource_id = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2 OFFSET ?3)",
        (resource_id, limit, offset),
    ).fetchall()
    return [tuple(rows[0])] + [(r[0], r[1], r[2], codec.loads(r[3]), r[4], r[5]) for r in rows[1:]]


def _save(conn: sqlite3.Connection, messages: list[BenchMessage], now_us: int) -> None:
    threads = list(dict.fromkeys(m.thread_id for m in messages))
    conn.execute("BEGIN IMMEDIATE")
    try:
        owners: dict[str, str] = {
            row[0]: row[1]
            for row in conn.execute(
                "SELECT id, resource_id FROM threads WHERE id IN (SELECT value FROM json_each(?))",
                (codec.dumps(threads),),
            )
        }
        for m in messages:
            if owners.get(m.thread_id) != m.resource_id:
                raise LookupError(f"thread {m.thread_id} missing or not owned by {m.resource_id}")
        (value,) = conn.execute(
            "UPDATE counters SET value = value + ? WHERE name = 'message_sequence' RETURNING value",
            (len(messages),),
        ).fetchone()
        first = int(value) - len(messages) + 1
        conn.executemany(
            _UPSERT,
            [
                (
                    m.id,
                    first + k,
                    m.thread_id,
                    m.resource_id,
                    m.role,
                    "v2",
                    codec.dumps(m.content),
                    codec.dumps(m.metadata),
                    m.created_at_us,
                )
                for k, m in enumerate(messages)
            ],
        )
        conn.executemany(_THREAD_COUNT, [(n, t) for t, n in Counter(m.thread_id for m in messages).items()])
        conn.executemany(_RESOURCE_COUNT, list(Counter(m.resource_id for m in messages).items()))
        conn.executemany(_BUMP, [(now_us, TIME_MAX_US, t) for t in threads])
        conn.execute("COMMIT")
    except BaseException:
        conn.rollback()
        raise


def _now_us() -> int:
    return time.time_ns() // 1000


class RawSQLite(Subject):
    """aiosqlite by hand on the adapter's schema (shares its data).

    Args:
        backend: group name.
        path: the adapter's database file.
    """

    kind: Kind = "raw"
    shares_data = True

    def __init__(self, backend: str, path: str) -> None:
        self.backend = backend
        self.label = "aiosqlite (raw)"
        self.path = path
        self._db: aiosqlite.Connection | None = None

    @property
    def db(self) -> aiosqlite.Connection:
        """The open connection."""
        if self._db is None:
            raise AdapterClosedError("raw SQLite baseline: open() first")
        return self._db

    async def open(self) -> None:
        """Connect like the adapter: autocommit, busy timeout, FK, NORMAL sync."""
        self._db = await aiosqlite.connect(self.path, isolation_level=None, timeout=30)
        await self._db.execute("PRAGMA busy_timeout = 30000")
        await self._db.execute("PRAGMA foreign_keys = ON")
        await self._db.execute("PRAGMA synchronous = NORMAL")

    async def close(self) -> None:
        """Disconnect (the adapter deletes the file)."""
        if self._db is not None:
            await self._db.close()
            self._db = None

    async def create_threads(self, threads: Sequence[ThreadSpec]) -> None:
        """Insert threads in one transaction."""
        await self.db.execute("BEGIN IMMEDIATE")
        await self.db.executemany(
            "INSERT INTO threads (id, resource_id, title, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (t.id, t.resource_id, t.title, codec.dumps(t.metadata), t.created_at_us, t.created_at_us)
                for t in threads
            ],
        )
        await self.db.execute("COMMIT")

    async def _job(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(sqlite3_connection, *args)`` as one job on the worker thread."""
        db = self.db
        conn: sqlite3.Connection = db._conn

        def job() -> T:
            return fn(conn, *args)

        result: T = await db._execute(job)  # type: ignore[no-untyped-call]
        return result

    async def save(self, prepared: Any) -> None:
        """One transaction in one job (jobs run one at a time on the
        connection's thread): owners checked, sequence reserved, upserts, bumps."""
        await self._job(_save, prepared, _now_us())

    async def _header_page(self, header: str, page: str, params: Sequence[Any]) -> tuple[Any, list[Any]]:
        rows = await self._job(_fetch_decoded, f"{header} UNION ALL SELECT * FROM ({page})", params)
        if not rows or rows[0][0] is not None:
            raise LookupError("no header row")
        return rows[0], rows[1:]

    async def recall_newest(self, thread: ThreadSpec, n: int) -> Answer:
        """Owner + total (the counter) + newest ``n`` in one statement, returned oldest first."""
        header, rows = await self._header_page(
            f"SELECT NULL, resource_id, message_count, {_PAD} FROM threads WHERE id = ?1",
            f"SELECT {_COLS} FROM messages WHERE thread_id = ?1 AND +resource_id = ?2"
            " ORDER BY created_at DESC, seq DESC LIMIT ?3",
            (thread.id, thread.resource_id, n),
        )
        if header[1] != thread.resource_id:
            raise PermissionError("not the owner")
        rows.reverse()
        return Answer(int(header[2]), tuple(r[0] for r in rows))

    async def _thread_page(
        self, thread_id: str, where: str, params: Sequence[Any], order: str, limit: int, offset: int = 0
    ) -> Answer:
        total = f"(SELECT COUNT(*) FROM messages WHERE thread_id = ?1{where})" if where else _TOTAL
        header, rows = await self._header_page(
            f"SELECT NULL, NULL, {total}, {_PAD}",
            f"SELECT {_COLS} FROM messages WHERE thread_id = ?1{where} ORDER BY {order} LIMIT {int(limit)}"
            f" OFFSET {int(offset)}",
            (thread_id, *params),
        )
        return Answer(int(header[2]), tuple(r[0] for r in rows))

    async def page_offset(self, thread: ThreadSpec, page: int, per_page: int) -> Answer:
        """Total (the counter) + ``LIMIT/OFFSET`` page in one statement."""
        return await self._thread_page(thread.id, "", (), "created_at, seq", per_page, page * per_page)

    async def first_cursor(self, thread: ThreadSpec, per_page: int, depth: int) -> Any:
        """(created_at, seq) of the message at position ``depth - 1``."""
        if depth <= 0:
            return None
        rows = list(
            await self.db.execute_fetchall(
                "SELECT created_at, seq FROM messages WHERE thread_id = ? ORDER BY created_at, seq LIMIT 1 OFFSET ?",
                (thread.id, depth - 1),
            )
        )
        return (int(rows[0][0]), int(rows[0][1]))

    async def page_cursor(self, thread: ThreadSpec, cursor: Any, per_page: int) -> Answer:
        """Total (the counter) + keyset page (one extra row for has_more) in one statement."""
        if cursor is None:
            return await self._thread_page(thread.id, "", (), "created_at, seq", per_page)
        else:
            header, rows = await self._header_page(
                f"SELECT NULL, NULL, {_TOTAL}, {_PAD}",
                f"SELECT {_COLS} FROM messages WHERE thread_id = ?1 AND (created_at, seq) > (?2, ?3)"
                f" ORDER BY created_at, seq LIMIT {int(per_page) + 1}",
                (thread.id, cursor[0], cursor[1]),
            )
            answer = Answer(int(header[2]), tuple(r[0] for r in rows))
        return Answer(answer.total, answer.ids[:per_page])

    async def filter_meta(self, thread: ThreadSpec, key: str, value: str, per_page: int) -> Answer:
        """Same JSON expression as the adapter (``metadata -> '$."key"'``)."""
        return await self._thread_page(
            thread.id, " AND metadata -> ?2 = ?3", (f'$."{key}"', codec.dumps(value)), "created_at, seq", per_page
        )

    async def filter_date(self, thread: ThreadSpec, start_us: int, end_us: int, per_page: int) -> Answer:
        """``created_at`` between the bounds, on the thread index."""
        return await self._thread_page(
            thread.id, " AND created_at >= ?2 AND created_at <= ?3", (start_us, end_us), "created_at, seq", per_page
        )

    async def include_windows(
        self, thread: ThreadSpec, targets: Sequence[str], before: int, after: int, n: int
    ) -> Answer:
        """One statement: owner + total (the counter), newest ``n``, and each target's
        window (restricted to the resource); merged and sorted here."""
        parts = [
            f"SELECT NULL, resource_id, message_count, {_PAD} FROM threads WHERE id = ?1",
            f"SELECT * FROM (SELECT {_COLS} FROM messages WHERE thread_id = ?1 AND +resource_id = ?2"
            " ORDER BY created_at DESC, seq DESC LIMIT ?3)",
        ]
        params: list[Any] = [thread.id, thread.resource_id, n]
        for target in targets:
            k = len(params) + 1
            params.append(target)
            me = f"(SELECT thread_id FROM messages WHERE id = ?{k})"
            pos = f"(SELECT created_at, seq FROM messages WHERE id = ?{k})"
            scope = f"thread_id = {me} AND +resource_id = ?2"
            parts.append(
                f"SELECT * FROM (SELECT {_COLS} FROM messages WHERE {scope} AND (created_at, seq) < {pos}"
                f" ORDER BY created_at DESC, seq DESC LIMIT {int(before)})"
            )
            parts.append(f"SELECT {_COLS} FROM messages WHERE id = ?{k} AND resource_id = ?2")
            parts.append(
                f"SELECT * FROM (SELECT {_COLS} FROM messages WHERE {scope} AND (created_at, seq) > {pos}"
                f" ORDER BY created_at, seq LIMIT {int(after)})"
            )
        rows = await self._job(_fetch_decoded, " UNION ALL ".join(parts), params)
        header = rows[0]
        if header[0] is not None or header[1] != thread.resource_id:
            raise PermissionError("not the owner")
        merged = {r[0]: r for r in rows[1:]}
        items = sorted(merged.values(), key=lambda r: (r[7], r[8]))
        return Answer(int(header[2]), tuple(r[0] for r in items))

    async def list_threads(self, resource_id: str, page: int, per_page: int) -> Answer:
        """Count + page of threads (created_at DESC, id DESC) in one statement."""
        rows = await self._job(_fetch_threads, resource_id, per_page, page * per_page)
        return Answer(int(rows[0][1]), tuple(r[0] for r in rows[1:]))

"""Connection setup and the versioned schema (idempotent, race-safe).

Every connection gets a busy timeout, foreign keys, ``secure_delete`` (see
:func:`memory_core_sqlite._ops.erasing`), and (for files) WAL journaling with
``synchronous=NORMAL`` (or FULL). The schema is a list of
numbered migrations recorded in ``schema_version``; an opener applies the
missing ones inside ``BEGIN IMMEDIATE`` after re-reading the version under
the lock, so many connections initialising one new file at once create
the schema exactly once. Busy errors while opening are retried until the
timeout.
"""

from __future__ import annotations

import sqlite3
import time

from memory_core_sqlite._errors import is_busy
from memory_core_sqlite._ops import transaction

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "MIN_SQLITE", "prepare", "schema_version"]

MIN_SQLITE = (3, 38, 0)
"""Oldest SQLite library supported (JSON ``->`` operator, row values)."""

MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            """CREATE TABLE threads (
                id TEXT PRIMARY KEY NOT NULL,
                resource_id TEXT NOT NULL,
                title TEXT NOT NULL,
                metadata TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            )""",
            "CREATE INDEX threads_resource_created ON threads (resource_id, created_at, id)",
            "CREATE INDEX threads_resource_updated ON threads (resource_id, updated_at, id)",
            "CREATE INDEX threads_created ON threads (created_at, id)",
            "CREATE INDEX threads_updated ON threads (updated_at, id)",
            """CREATE TABLE messages (
                id TEXT PRIMARY KEY NOT NULL,
                seq INTEGER NOT NULL,
                thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
                resource_id TEXT NOT NULL,
                role TEXT NOT NULL,
                type TEXT NOT NULL,
                content TEXT NOT NULL,
                metadata TEXT NOT NULL,
                created_at INTEGER NOT NULL
            )""",
            "CREATE INDEX messages_thread_order ON messages (thread_id, created_at, seq, resource_id)",
            "CREATE INDEX messages_resource_order ON messages (resource_id, created_at, seq)",
            """CREATE TABLE resources (
                id TEXT PRIMARY KEY NOT NULL,
                working_memory TEXT,
                metadata TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            )""",
            "CREATE TABLE counters (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL)",
            "INSERT INTO counters (name, value) VALUES ('message_sequence', 0)",
        ),
    ),
    (
        2,
        (
            # Message counters (R-PAGE: an unfiltered total is a counter read),
            # kept by the writes (:mod:`._counters`); backfilled from the rows in
            # the migration's own transaction, so no write lands in between.
            "ALTER TABLE threads ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0",
            "UPDATE threads SET message_count = (SELECT COUNT(*) FROM messages WHERE messages.thread_id = threads.id)",
            """CREATE TABLE resource_message_counts (
                resource_id TEXT PRIMARY KEY NOT NULL,
                message_count INTEGER NOT NULL
            ) WITHOUT ROWID""",
            "INSERT INTO resource_message_counts (resource_id, message_count)"
            " SELECT resource_id, COUNT(*) FROM messages GROUP BY resource_id",
        ),
    ),
)
"""(version, statements) in order. Statements use plain ``CREATE`` (no
``IF NOT EXISTS``), so applying a migration twice would fail loudly."""

SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The version this package writes and reads."""

_VERSION_TABLE = """CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY NOT NULL,
    applied_at INTEGER NOT NULL
)"""


def schema_version(conn: sqlite3.Connection) -> int:
    """The highest applied migration (0 for a new, empty database)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'").fetchone()
    if found is None:
        return 0
    return int(conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0])


def _configure(conn: sqlite3.Connection, in_memory: bool, busy_seconds: float, synchronous: str) -> str:
    conn.execute(f"PRAGMA busy_timeout = {int(busy_seconds * 1000)}")
    conn.execute("PRAGMA foreign_keys = ON")
    # Deleted rows and freed pages are overwritten with zeros, not left for a
    # file reader to find (off by default in most SQLite builds; not FAST,
    # which leaves freed overflow pages, where long messages live, as they were).
    conn.execute("PRAGMA secure_delete = ON")
    if in_memory:
        return "memory"
    mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
    conn.execute(f"PRAGMA synchronous = {synchronous if mode == 'wal' else 'FULL'}")
    return mode


def _migrate(conn: sqlite3.Connection, now_us: int) -> None:
    version = schema_version(conn)
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise RuntimeError(
            f"database schema version {version} is newer than this memory-core-sqlite supports ({SCHEMA_VERSION})"
        )
    with transaction(conn):
        conn.execute(_VERSION_TABLE)
        version = schema_version(conn)  # again, now under the write lock
        for number, statements in MIGRATIONS:
            if number <= version:
                continue
            for statement in statements:
                conn.execute(statement)
            conn.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (number, now_us))


def prepare(conn: sqlite3.Connection, in_memory: bool, busy_seconds: float, synchronous: str, now_us: int) -> str:
    """Configure a fresh connection and bring the schema up to date
    (synchronous: runs on the connection's worker thread).

    Busy/locked errors (another opener holds the lock, e.g. while switching
    a new file to WAL) are retried with backoff for up to ``busy_seconds``.

    Args:
        conn: a new connection in autocommit mode (``isolation_level=None``).
        in_memory: the database is ``:memory:`` (no WAL).
        busy_seconds: busy timeout and retry budget, in seconds.
        synchronous: ``"NORMAL"`` or ``"FULL"`` (used in WAL mode).
        now_us: time recorded for applied migrations (µs since the epoch).

    Returns:
        The journal mode in effect (``"wal"`` for files, ``"memory"``).

    Raises:
        RuntimeError: SQLite library too old, or the file's schema is newer.
        sqlite3.Error: any other driver failure, or still busy at the deadline.
    """
    if sqlite3.sqlite_version_info < MIN_SQLITE:
        raise RuntimeError(f"memory-core-sqlite needs SQLite >= 3.38, found {sqlite3.sqlite_version}")
    deadline = time.monotonic() + busy_seconds
    delay = 0.002
    while True:
        try:
            mode = _configure(conn, in_memory, busy_seconds, synchronous)
            _migrate(conn, now_us)
            return mode
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)

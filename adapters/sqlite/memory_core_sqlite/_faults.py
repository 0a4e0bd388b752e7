"""SQLite's fault points (:mod:`memory_core.retry`), produced the way SQLite does.

``busy``: a second connection to the same file takes the write lock
(``BEGIN IMMEDIATE``) and releases it :data:`BUSY_HOLD_S` later from a timer
thread, so the store's next write meets a real SQLITE_BUSY and waits in
SQLite's busy handler (the store's ``timeout``). ``lock_timeout``: SQLite's two
ways of reporting a lock held elsewhere, in turn: odd passes the same held
lock, met by a write whose busy timeout is 0 for that one write, so SQLite
raises "database is locked" (SQLITE_BUSY) at once (what a timeout that ran
out does); even passes a table lock (SQLITE_LOCKED, "database table is
locked", which SQLite reports at once, busy handler or not: a conflict
within the connection, or with another connection of a shared cache),
produced on the store's own connection before the write (:func:`table_locked`).
``stale_write``: the write's
transaction begins and raises StaleStateError, as a write that finds its
thread changed does, so the transaction's rollback runs and the core reads,
checks and writes again.
"""

from __future__ import annotations

import sqlite3
import threading

from memory_core.errors import StaleStateError

from memory_core_sqlite._ops import transaction

__all__ = ["BUSY_HOLD_S", "hold_write_lock", "stale_write", "table_locked"]


BUSY_HOLD_S = 0.05
"""Seconds the ``busy`` fault holds the write lock (far below any busy timeout)."""


def hold_write_lock(path: str, seconds: float = BUSY_HOLD_S) -> None:
    """Take ``path``'s write lock on a new connection now and release it
    ``seconds`` later from a timer thread (returns at once, lock held)."""
    blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")

    def release() -> None:
        blocker.execute("ROLLBACK")
        blocker.close()

    timer = threading.Timer(seconds, release)
    timer.daemon = True
    timer.start()


def stale_write(conn: sqlite3.Connection) -> None:
    """Begin a write transaction and find the reads stale (StaleStateError)."""
    with transaction(conn):
        raise StaleStateError("fault point stale_write: the write found its reads stale")


def table_locked(conn: sqlite3.Connection) -> None:
    """Meet a table lock (SQLITE_LOCKED) on ``conn``: a statement of the
    connection still reads a temporary table while another drops it. Raises
    the driver's ``sqlite3.OperationalError`` ("database table is locked",
    ``sqlite_errorcode`` 6) after putting everything back, so the write it
    stands in for writes nothing.

    Raises:
        sqlite3.OperationalError: always (SQLITE_LOCKED).
    """
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS mc_fault_table_locked (n INTEGER)")
    try:
        conn.execute("INSERT INTO temp.mc_fault_table_locked (n) VALUES (1), (2)")
        reading = conn.execute("SELECT n FROM temp.mc_fault_table_locked")
        reading.fetchone()  # the statement stays open, holding its table
        try:
            conn.execute("DROP TABLE temp.mc_fault_table_locked")
        finally:
            reading.close()
    finally:
        conn.execute("DROP TABLE IF EXISTS temp.mc_fault_table_locked")
    raise sqlite3.OperationalError("fault point lock_timeout: the table lock was not met")

"""In-process opening locks shared by every store of one database file.

Opening a new file means switching it to WAL and creating the schema, both
under SQLite's exclusive/write lock; a connection that finds the lock taken
sleeps in its busy handler (1 ms growing to 100 ms per retry). Stores of one
event loop opening one file at once therefore queue on one FIFO asyncio
lock per file instead: the first creates the schema, the others find it
done. Other processes still meet at SQLite's lock, busy timeout and the
open retry loop. (Write transactions do not take this lock: each runs in
one job on its connection's thread and holds SQLite's lock only briefly.)
"""

from __future__ import annotations

import asyncio
import weakref

__all__ = ["file_lock"]

_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, weakref.WeakValueDictionary[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def file_lock(path: str) -> asyncio.Lock:
    """The running loop's lock for the database file ``path`` (absolute).

    The lock lives as long as someone holds a reference to it (a waiter or
    the holder), so the registry does not grow with the files ever used.
    """
    loop = asyncio.get_running_loop()
    per_loop = _LOCKS.get(loop)
    if per_loop is None:
        per_loop = _LOCKS[loop] = weakref.WeakValueDictionary()
    lock = per_loop.get(path)
    if lock is None:
        lock = per_loop[path] = asyncio.Lock()
    return lock

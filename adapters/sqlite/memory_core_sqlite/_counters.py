"""The message counters the writes keep (R-PAGE: an unfiltered total is read,
not counted).

Each thread's count is ``threads.message_count``; each resource's is a row of
``resource_message_counts``, present only while the resource holds a message
(a count reaching 0 deletes its row, so an erased resource leaves nothing).
Every write that adds, moves or removes messages calls :func:`apply` inside
its own transaction with what it changed, so a counter is exact at every
commit. Deltas are summed per thread and resource first: a batch of 1,000
messages into one thread is two statements, not 2,000.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable

__all__ = ["Deltas", "apply"]

_THREAD = "UPDATE threads SET message_count = message_count + ? WHERE id = ?"
_RESOURCE = (
    "INSERT INTO resource_message_counts (resource_id, message_count) VALUES (?, ?)"
    " ON CONFLICT (resource_id) DO UPDATE SET message_count = message_count + excluded.message_count"
)
_EMPTY = "DELETE FROM resource_message_counts WHERE resource_id = ? AND message_count = 0"


class Deltas:
    """Changes to the counters of one write, summed per thread and resource."""

    __slots__ = ("resources", "threads")

    def __init__(self) -> None:
        self.threads: Counter[str] = Counter()
        self.resources: Counter[str] = Counter()

    def add(self, thread_id: str, resource_id: str, n: int = 1) -> None:
        """``n`` messages came into ``thread_id`` (of ``resource_id``); negative: left."""
        self.threads[thread_id] += n
        self.resources[resource_id] += n

    def move(self, source: str, target: str) -> None:
        """One message moved between two threads (of one resource: its count stays)."""
        self.threads[source] -= 1
        self.threads[target] += 1

    def removed(self, rows: Iterable[tuple[str, str]]) -> None:
        """Deleted messages, as their ``(thread_id, resource_id)``."""
        for thread_id, resource_id in rows:
            self.add(thread_id, resource_id, -1)


def apply(conn: sqlite3.Connection, deltas: Deltas) -> None:
    """Write ``deltas`` into the counters (inside the caller's transaction)."""
    conn.executemany(_THREAD, [(n, tid) for tid, n in deltas.threads.items() if n])
    changed = [(rid, n) for rid, n in deltas.resources.items() if n]
    conn.executemany(_RESOURCE, changed)
    conn.executemany(_EMPTY, [(rid,) for rid, n in changed if n < 0])

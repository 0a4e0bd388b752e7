"""Message counters: where they live, how writes change them, how old stores get them.

An unfiltered total (R-PAGE) is a counter read, never a count of messages:
each thread document carries :data:`MESSAGE_COUNT`, its number of messages;
a resource's total is the sum of its threads' counters (a message always
belongs to a thread of its own resource: a thread's resource never changes
and moves stay within one resource), read through the threads' index on
``resource_id``.

Writes change a thread's counter in the same transaction (or, without
transactions, the same ordered write) as its messages: :class:`CountDeltas`
collects the changes of one write, :func:`thread_count_expr` is the update
part. No write touches a document shared with writers of other threads, so
concurrent writers of different threads of one resource never conflict.

Stores written before the counters existed are backfilled once at open
(:func:`backfill_counters`): idempotent, and race-safe in transactions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from memory_core_mongodb._layout import MESSAGE_COUNT, us
from memory_core_mongodb._schema import COUNTERS, MESSAGES, MESSAGES_THREAD_ORDER, THREADS

__all__ = [
    "BACKFILL_MARKER",
    "MESSAGE_COUNT",
    "CountDeltas",
    "backfill_counters",
    "thread_count_expr",
]

Doc = dict[str, Any]
Session = AsyncClientSession | None
Atomic = Callable[[Callable[[Session], Awaitable[None]]], Awaitable[None]]

BACKFILL_MARKER = "message_counts"
"""``_id`` of the ``counters`` document that says every thread has its counter."""


@dataclass
class CountDeltas:
    """How one write changes the thread counters: thread id -> change."""

    threads: Counter[str] = field(default_factory=Counter)

    def add(self, thread_id: str, n: int = 1) -> None:
        """``n`` messages appeared in (or, negative, left) a thread."""
        self.threads[thread_id] += n

    def move(self, old_thread: str, new_thread: str) -> None:
        """A message moved between two threads of one resource."""
        if old_thread != new_thread:
            self.threads[old_thread] -= 1
            self.threads[new_thread] += 1

    def of_thread(self, thread_id: str) -> int:
        """The change of one thread's counter (0 if none)."""
        return self.threads.get(thread_id, 0)


def thread_count_expr(delta: int) -> Doc:
    """Pipeline expression: the thread's counter plus ``delta``. A thread
    without the field (a store whose backfill another process is running)
    keeps it missing, so the backfill's count of its rows stays exact."""
    return {
        "$cond": [
            {"$eq": [{"$type": "$" + MESSAGE_COUNT}, "missing"]},
            "$$REMOVE",
            {"$add": ["$" + MESSAGE_COUNT, us(delta)]},
        ]
    }


async def _backfill_thread(db: AsyncDatabase[Doc], thread_id: str, session: Session) -> None:
    """Count a thread's messages and store them as its counter, if it still
    lacks one (one transaction when the store has them)."""
    held = await db[MESSAGES].count_documents({"thread_id": thread_id}, hint=MESSAGES_THREAD_ORDER, session=session)
    await db[THREADS].update_one(
        {"_id": thread_id, MESSAGE_COUNT: {"$exists": False}},
        {"$set": {MESSAGE_COUNT: us(held)}},
        session=session,
    )


async def backfill_counters(db: AsyncDatabase[Doc], atomic: Atomic) -> int:
    """Give every thread its message counter, once per store; returns how
    many threads were backfilled.

    A marker document in ``counters`` records that it is done, so later opens
    cost one ``find``. Idempotent and safe when several processes open the
    store at once: a thread's counter is set only while missing, and each
    thread is counted and stored in one ``atomic`` unit (a transaction where
    the server has them: a writer of that thread conflicts with it and one of
    the two retries). Writers keep a missing thread counter missing
    (:func:`thread_count_expr`), so a thread's rows are counted once.
    Without transactions a message written to a thread *while* it is being
    counted can be missed or counted twice (README, "Counters").
    """
    if await db[COUNTERS].find_one({"_id": BACKFILL_MARKER}) is not None:
        return 0
    lacking = db[THREADS].find({MESSAGE_COUNT: {"$exists": False}}, {"_id": 1})
    thread_ids = [doc["_id"] async for doc in lacking]
    for thread_id in thread_ids:

        async def work(session: Session, thread_id: str = thread_id) -> None:
            await _backfill_thread(db, thread_id, session)

        await atomic(work)
    with suppress(DuplicateKeyError):  # another opener set it first
        await db[COUNTERS].update_one({"_id": BACKFILL_MARKER}, {"$set": {"done": True}}, upsert=True)
    return len(thread_ids)

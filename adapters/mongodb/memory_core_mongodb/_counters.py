"""Message counters: where they live, how writes change them, how old stores get them.

An unfiltered total (R-PAGE) is a counter read, never a count of messages:

- each thread document carries :data:`MESSAGE_COUNT`, its number of messages;
- each resource with messages has a document ``{_id: resource_id,
  messages: n}`` in the collection ``resource_counts``
  (:data:`~memory_core_mongodb._schema.RESOURCE_COUNTS`), since a resource
  may have threads and messages but no record (and its record's fields are
  the user's).

Writes change them in the same transaction (or, without transactions, the
same ordered write) as the messages: :class:`CountDeltas` collects the
changes of one write, :func:`thread_count_expr` and
:func:`resource_count_update` are the update parts. Erasure deletes the
resource's counter once its count is back to 0 (:func:`erase_resource_count`).

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
from memory_core_mongodb._schema import COUNTERS, MESSAGES, MESSAGES_THREAD_ORDER, RESOURCE_COUNTS, THREADS

__all__ = [
    "BACKFILL_MARKER",
    "MESSAGE_COUNT",
    "RESOURCE_MESSAGES",
    "CountDeltas",
    "backfill_counters",
    "erase_resource_count",
    "resource_count_update",
    "thread_count_expr",
]

Doc = dict[str, Any]
Session = AsyncClientSession | None
Atomic = Callable[[Callable[[Session], Awaitable[None]]], Awaitable[None]]

RESOURCE_MESSAGES = "messages"
"""``resource_counts`` field: how many messages the resource holds (int64)."""
BACKFILL_MARKER = "message_counts"
"""``_id`` of the ``counters`` document that says every thread has its counter."""


@dataclass
class CountDeltas:
    """How one write changes the counters: thread id -> change, resource id -> change."""

    threads: Counter[str] = field(default_factory=Counter)
    resources: Counter[str] = field(default_factory=Counter)

    def add(self, thread_id: str, resource_id: str, n: int = 1) -> None:
        """``n`` messages appeared in (or, negative, left) a thread and its resource."""
        self.threads[thread_id] += n
        self.resources[resource_id] += n

    def move(self, old_thread: str, new_thread: str) -> None:
        """A message moved between two threads of one resource."""
        if old_thread != new_thread:
            self.threads[old_thread] -= 1
            self.threads[new_thread] += 1

    def of_thread(self, thread_id: str) -> int:
        """The change of one thread's counter (0 if none)."""
        return self.threads.get(thread_id, 0)

    def changed_resources(self) -> dict[str, int]:
        """The resources whose counter changes, with the change."""
        return {rid: n for rid, n in self.resources.items() if n}


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


def resource_count_update(resource_id: str, delta: int) -> tuple[Doc, Doc]:
    """Filter and update (an upsert) adding ``delta`` to a resource's counter."""
    return {"_id": resource_id}, {"$inc": {RESOURCE_MESSAGES: us(delta)}}


async def erase_resource_count(db: AsyncDatabase[Doc], resource_id: str) -> None:
    """Delete an erased resource's counter once it is 0: the erasure's thread
    deletes brought it there; a count left means a concurrent save put
    messages into a thread created meanwhile, and those still count."""
    await db[RESOURCE_COUNTS].delete_one({"_id": resource_id, RESOURCE_MESSAGES: {"$lte": 0}})


async def _backfill_resource(db: AsyncDatabase[Doc], resource_id: str, session: Session) -> None:
    """Count the messages of a resource's threads that lack a counter, and the
    resource's, and store them (one transaction when the store has them)."""
    lacking = db[THREADS].find({"resource_id": resource_id, MESSAGE_COUNT: {"$exists": False}}, {"_id": 1})
    async for doc in lacking:
        held = await db[MESSAGES].count_documents(
            {"thread_id": doc["_id"]}, hint=MESSAGES_THREAD_ORDER, session=session
        )
        await db[THREADS].update_one(
            {"_id": doc["_id"], MESSAGE_COUNT: {"$exists": False}},
            {"$set": {MESSAGE_COUNT: us(held)}},
            session=session,
        )
    held = await db[MESSAGES].count_documents({"resource_id": resource_id}, session=session)
    await db[RESOURCE_COUNTS].update_one(
        {"_id": resource_id}, {"$set": {RESOURCE_MESSAGES: us(held)}}, upsert=True, session=session
    )


async def backfill_counters(db: AsyncDatabase[Doc], atomic: Atomic) -> int:
    """Give every thread, and every resource with such threads, its message
    counter, once per store; returns how many resources were backfilled.

    A marker document in ``counters`` records that it is done, so later opens
    cost one ``find``. Idempotent and safe when several processes open the
    store at once: a thread's counter is set only while missing, and each
    resource is counted and stored in one ``atomic`` unit (a transaction where
    the server has them: a writer of those threads or that counter conflicts
    with it and one of the two retries). Writers keep a missing thread counter
    missing (:func:`thread_count_expr`), so a thread's rows are counted once.
    Without transactions a message written to a thread *while* it is being
    counted can be missed or counted twice (README, "Counters").
    """
    if await db[COUNTERS].find_one({"_id": BACKFILL_MARKER}) is not None:
        return 0
    pending = await db[THREADS].aggregate(
        [{"$match": {MESSAGE_COUNT: {"$exists": False}}}, {"$group": {"_id": "$resource_id"}}]
    )
    resources = [doc["_id"] async for doc in pending]
    for resource_id in resources:

        async def work(session: Session, resource_id: str = resource_id) -> None:
            await _backfill_resource(db, resource_id, session)

        await atomic(work)
    with suppress(DuplicateKeyError):  # another opener set it first
        await db[COUNTERS].update_one({"_id": BACKFILL_MARKER}, {"$set": {"done": True}}, upsert=True)
    return len(resources)

"""Collections, indexes and their idempotent creation.

Every query the adapter sends names one of these indexes with ``hint`` (see
:mod:`memory_core_mongodb._query`), so plans are stable across servers and
data sizes. Setup is safe when several processes open the same database at
once: ``create`` of an existing collection and ``createIndexes`` of an
identical existing index are no-ops, and the transient "already in progress"
races are retried. Collections of earlier versions that the layout no longer
has (:data:`LEGACY_COLLECTIONS`) are dropped.
"""

from __future__ import annotations

from typing import Any

from pymongo import ASCENDING, IndexModel
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import OperationFailure

from memory_core.retry import RetryPolicy

__all__ = [
    "COUNTER_ID",
    "COUNTERS",
    "INDEXES",
    "LEGACY_COLLECTIONS",
    "MESSAGES",
    "MESSAGES_RESOURCE_ORDER",
    "MESSAGES_THREAD_META",
    "MESSAGES_THREAD_ORDER",
    "RESOURCES",
    "THREADS",
    "THREADS_CREATED",
    "THREADS_LAST_ASC",
    "THREADS_LAST_DESC",
    "THREADS_RESOURCE_LAST_ASC",
    "THREADS_RESOURCE_LAST_DESC",
    "THREADS_RESOURCE_CREATED",
    "THREADS_RESOURCE_META",
    "THREADS_RESOURCE_UPDATED",
    "THREADS_UPDATED",
    "ensure_schema",
]

THREADS = "threads"
MESSAGES = "messages"
RESOURCES = "resources"
COUNTERS = "counters"
LEGACY_COLLECTIONS = ("resource_counts",)
"""Collections of earlier versions, dropped at open: ``resource_counts`` held
one message counter per resource, a document every writer of the resource
updated (a resource's total is now the sum of its threads' counters), and
holds resource ids that erasure must not leave behind."""
COUNTER_ID = "message_sequence"
"""``_id`` of the counter document that hands out R-ORDER sequence numbers."""

THREADS_RESOURCE_CREATED = "threads_resource_created"
THREADS_RESOURCE_UPDATED = "threads_resource_updated"
THREADS_CREATED = "threads_created"
THREADS_UPDATED = "threads_updated"
THREADS_RESOURCE_META = "threads_resource_meta"
THREADS_RESOURCE_LAST_ASC = "threads_resource_last_asc"
THREADS_RESOURCE_LAST_DESC = "threads_resource_last_desc"
THREADS_LAST_ASC = "threads_last_asc"
THREADS_LAST_DESC = "threads_last_desc"
MESSAGES_THREAD_ORDER = "messages_thread_order"
MESSAGES_RESOURCE_ORDER = "messages_resource_order"
MESSAGES_THREAD_META = "messages_thread_meta"

_A = ASCENDING
INDEXES: dict[str, list[IndexModel]] = {
    THREADS: [
        # list_threads(resource) ordered by (created_at|updated_at, id), both directions
        IndexModel([("resource_id", _A), ("created_at", _A), ("_id", _A)], name=THREADS_RESOURCE_CREATED),
        IndexModel([("resource_id", _A), ("updated_at", _A), ("_id", _A)], name=THREADS_RESOURCE_UPDATED),
        # list_threads without a resource filter
        IndexModel([("created_at", _A), ("_id", _A)], name=THREADS_CREATED),
        IndexModel([("updated_at", _A), ("_id", _A)], name=THREADS_UPDATED),
        # metadata equality within a resource (multikey over the entry array)
        IndexModel([("resource_id", _A), ("meta.k", _A), ("meta.v", _A)], name=THREADS_RESOURCE_META),
        # ordered by last_message_at: one sort key per direction (no message: last)
        IndexModel([("resource_id", _A), ("last_asc", _A), ("_id", _A)], name=THREADS_RESOURCE_LAST_ASC),
        IndexModel([("resource_id", _A), ("last_desc", _A), ("_id", _A)], name=THREADS_RESOURCE_LAST_DESC),
        IndexModel([("last_asc", _A), ("_id", _A)], name=THREADS_LAST_ASC),
        IndexModel([("last_desc", _A), ("_id", _A)], name=THREADS_LAST_DESC),
    ],
    MESSAGES: [
        # a thread's messages in R-ORDER (list, count, windows, keyset cursors)
        IndexModel([("thread_id", _A), ("created_at", _A), ("seq", _A)], name=MESSAGES_THREAD_ORDER),
        # a resource's messages in R-ORDER (list_messages_by_resource)
        IndexModel([("resource_id", _A), ("created_at", _A), ("seq", _A)], name=MESSAGES_RESOURCE_ORDER),
        # metadata equality within a thread (multikey over the entry array)
        IndexModel([("thread_id", _A), ("meta.k", _A), ("meta.v", _A)], name=MESSAGES_THREAD_META),
    ],
    RESOURCES: [],
    COUNTERS: [],
}
"""Secondary indexes per collection (``_id`` is always unique-indexed)."""

# Server codes of races between processes creating the same things at once.
_NAMESPACE_EXISTS = 48
_RACE_CODES = frozenset(
    {
        _NAMESPACE_EXISTS,  # the collection appeared meanwhile (implicit create by an index build)
        67,  # CannotCreateIndex while a concurrent create of the collection finishes
        276,  # IndexBuildAborted: a concurrent identical build won
        11000,  # DuplicateKey on the catalog when two creators collide
    }
)
_RACED_BUILDS = RetryPolicy(attempts=5, pause_s=0.025, max_pause_s=0.25)
"""Index builds tried again (after a pause) while a concurrent creator of the
same collection or index finishes."""


async def _create_collection(db: AsyncDatabase[dict[str, Any]], name: str) -> None:
    try:
        await db.command("create", name)
    except OperationFailure as exc:
        if exc.code != _NAMESPACE_EXISTS:
            raise


async def _create_indexes(db: AsyncDatabase[dict[str, Any]], name: str, indexes: list[IndexModel]) -> None:
    async def build() -> None:
        await db[name].create_indexes(indexes)

    await _RACED_BUILDS.run(build, lambda exc: isinstance(exc, OperationFailure) and exc.code in _RACE_CODES)


async def ensure_schema(db: AsyncDatabase[dict[str, Any]]) -> None:
    """Create the collections and indexes of one store (idempotent, safe when
    several processes run it at once).

    Collections are created explicitly, since a transaction cannot create
    one on older servers and on sharded clusters. The
    :data:`LEGACY_COLLECTIONS` found are dropped (a drop racing another
    opener's is a no-op).

    Raises:
        pymongo.errors.OperationFailure: an index of the same name with other
            keys exists (codes 85/86), or the server refused; the core wraps it.
    """
    existing = set(await db.list_collection_names())
    for name, indexes in INDEXES.items():
        if name not in existing:
            await _create_collection(db, name)
        if indexes:
            await _create_indexes(db, name, indexes)
    for name in LEGACY_COLLECTIONS:
        if name in existing:
            await db.drop_collection(name)

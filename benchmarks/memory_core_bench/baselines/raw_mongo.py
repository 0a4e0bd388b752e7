"""Raw PyMongo (``AsyncMongoClient``) on the MongoDB adapter's own database.

The ceiling for ``mongodb://``: what a careful developer writes by hand with
PyMongo's async API for the same answers on the same collections, documents
and indexes as memory-core-mongodb (README "Layout"): ``threads`` and
``messages`` keyed by id, metadata as an entry array ``meta: [{k, v}]``,
times as int64 µs, R-ORDER by ``(created_at, seq)``, the ``counters``
document for sequence numbers, the message counters (each thread's
``message_count``; a resource's total is the sum of its threads'); every
query hints the same index the adapter hints (``messages_thread_order``,
``messages_thread_meta``, ``threads_resource_created``).

Independent queries of one operation (ownership check and total, count,
page, windows) are sent concurrently with ``asyncio.gather`` over the
client's connection pool, so a read costs one round trip of latency. An
unfiltered total is the thread's ``message_count``, read with the ownership
check (R-PAGE: read, not counted, as the adapter); a filtered one is counted.
A save is: the owners check and the sequence reservation (concurrently), one
ordered ``bulk_write`` of upserts, one of thread bumps, each adding the
thread's new messages to its counter in the same pipeline update (no
transaction, as the adapter on a standalone server). Every saved message is
new (the workloads save fresh ids): it counts in its thread.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from bson.int64 import Int64
from memory_core.clock import TIME_MAX_US
from memory_core.errors import AdapterClosedError
from pymongo import AsyncMongoClient, ReturnDocument, UpdateOne

from memory_core_bench.dataset import BenchMessage, ThreadSpec
from memory_core_bench.subjects import AdapterSubject, Answer, Kind, Subject

__all__ = ["MIRRORED", "RawMongo", "make"]

Doc = dict[str, Any]
_ORDER = "messages_thread_order"
_META = "messages_thread_meta"
_THREADS_ORDER = "threads_resource_created"
_COUNT = "message_count"

MIRRORED = {
    "_ORDER": "memory_core_mongodb._schema:MESSAGES_THREAD_ORDER",
    "_META": "memory_core_mongodb._schema:MESSAGES_THREAD_META",
    "_THREADS_ORDER": "memory_core_mongodb._schema:THREADS_RESOURCE_CREATED",
    "_bumped": "memory_core_mongodb.storage:_bumped",
    "_COUNT": "memory_core_mongodb._layout:MESSAGE_COUNT",
    "_count_expr": "memory_core_mongodb._counters:thread_count_expr",
}
"""The adapter layout this baseline repeats by hand: our name -> the adapter's
``module:attribute`` (functions compared by their result); a test fails when
the two differ."""


def _bumped(now_us: int) -> Doc:
    """Expression ``min(max(now, updated_at + 1), TIME_MAX_US)`` (R-BUMP)."""
    return {"$min": [{"$max": [Int64(now_us), {"$add": ["$updated_at", 1]}]}, Int64(TIME_MAX_US)]}


def _count_expr(delta: int) -> Doc:
    """Expression: the thread's counter plus ``delta``, left missing when it
    is (a store being backfilled by the adapter's open)."""
    return {
        "$cond": [
            {"$eq": [{"$type": "$" + _COUNT}, "missing"]},
            "$$REMOVE",
            {"$add": ["$" + _COUNT, Int64(delta)]},
        ]
    }


def make(adapter: AdapterSubject) -> RawMongo | None:
    """The raw baseline on ``adapter``'s database."""
    name = getattr(adapter.storage, "database_name", None)
    if not isinstance(name, str):
        return None
    return RawMongo(adapter, name)


def _entries(obj: Mapping[str, Any]) -> list[Doc]:
    return [{"k": k, "v": v} for k, v in obj.items()]


def _decode(doc: Mapping[str, Any]) -> tuple[Any, ...]:
    meta = {e["k"]: e.get("v") for e in doc.get("meta", ())}
    return (
        doc["_id"],
        doc["thread_id"],
        doc["resource_id"],
        doc["role"],
        doc["content"],
        meta,
        int(doc["created_at"]),
        int(doc["seq"]),
    )


class RawMongo(Subject):
    """PyMongo async by hand on the adapter's collections (shares its data).

    Args:
        adapter: the adapter subject whose database this reads and writes (its
            ``create_threads`` is reused for untimed setup).
        database: the adapter's database name.
    """

    kind: Kind = "raw"
    shares_data = True

    def __init__(self, adapter: AdapterSubject, database: str) -> None:
        self.backend = adapter.backend
        self.label = "pymongo async (raw)"
        self.adapter = adapter
        self.database = database
        self._client: AsyncMongoClient[Doc] | None = None

    def server_pid(self) -> int | None:
        """The adapter's server."""
        return self.adapter.server_pid()

    async def open(self) -> None:
        """Connect to the adapter's server."""
        self._client = AsyncMongoClient(self.adapter.url)
        await self._client.admin.command("ping")

    async def close(self) -> None:
        """Disconnect (the adapter drops the database)."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    def _coll(self, name: str) -> Any:
        if self._client is None:
            raise AdapterClosedError("raw MongoDB baseline: open() first")
        return self._client[self.database][name]

    async def create_threads(self, threads: Sequence[ThreadSpec]) -> None:
        """Untimed setup through the adapter (same documents)."""
        await self.adapter.create_threads(threads)

    async def save(self, prepared: Any) -> None:
        """Owners check + sequence reservation, upserts, bumps with the thread
        counters."""
        messages: list[BenchMessage] = prepared
        threads = list(dict.fromkeys(m.thread_id for m in messages))
        owners_cursor = self._coll("threads").find({"_id": {"$in": threads}}, {"resource_id": 1})
        owners_docs, counter = await asyncio.gather(
            owners_cursor.to_list(None),
            self._coll("counters").find_one_and_update(
                {"_id": "message_sequence"},
                {"$inc": {"value": Int64(len(messages))}},
                upsert=True,
                return_document=ReturnDocument.AFTER,
            ),
        )
        owners = {d["_id"]: d["resource_id"] for d in owners_docs}
        for m in messages:
            if owners.get(m.thread_id) != m.resource_id:
                raise LookupError(f"thread {m.thread_id} missing or not owned by {m.resource_id}")
        first = int(counter["value"]) - len(messages) + 1
        writes = [
            UpdateOne(
                {"_id": m.id, "resource_id": m.resource_id},
                {
                    "$set": {
                        "thread_id": m.thread_id,
                        "role": m.role,
                        "type": "v2",
                        "content": m.content,
                        "meta": _entries(m.metadata),
                    },
                    "$setOnInsert": {"created_at": Int64(m.created_at_us), "seq": Int64(first + k)},
                },
                upsert=True,
            )
            for k, m in enumerate(messages)
        ]
        await self._coll("messages").bulk_write(writes, ordered=True)
        bumped = _bumped(time.time_ns() // 1000)
        added = Counter(m.thread_id for m in messages)
        await self._coll("threads").bulk_write(
            [
                UpdateOne(
                    {"_id": t, "resource_id": owners[t]}, [{"$set": {"updated_at": bumped, _COUNT: _count_expr(n)}}]
                )
                for t, n in added.items()
            ],
            ordered=True,
        )

    async def _find(self, flt: Doc, sort: list[tuple[str, int]], hint: str, skip: int, limit: int) -> list[Doc]:
        cursor = self._coll("messages").find(flt).sort(sort).hint(hint)
        if skip:
            cursor = cursor.skip(skip)
        result: list[Doc] = await cursor.limit(limit).to_list(None)
        return result

    async def _total(self, thread_id: str, owner: str | None = None) -> int:
        """The thread's unfiltered total: its counter (one document read);
        with ``owner``, the thread's ownership is checked by the same read."""
        doc = await self._coll("threads").find_one({"_id": thread_id}, {"resource_id": 1, _COUNT: 1})
        if owner is not None and (doc is None or doc["resource_id"] != owner):
            raise PermissionError("not the owner")
        return 0 if doc is None else int(doc.get(_COUNT, 0))

    async def recall_newest(self, thread: ThreadSpec, n: int) -> Answer:
        """Ownership with the total (the counter) and newest ``n`` concurrently."""
        scope = {"thread_id": thread.id, "resource_id": thread.resource_id}
        total, docs = await asyncio.gather(
            self._total(thread.id, thread.resource_id),
            self._find(scope, [("created_at", -1), ("seq", -1)], _ORDER, 0, n),
        )
        rows = [_decode(d) for d in reversed(docs)]
        return Answer(int(total), tuple(r[0] for r in rows))

    async def _page(self, thread_id: str, flt: Doc, skip: int, limit: int, count_hint: str | None = None) -> Answer:
        """Total and page concurrently: the total is the thread's counter, or
        with ``count_hint`` (a filtered page) a count of ``flt`` on that index."""
        counted: Awaitable[int] = (
            self._total(thread_id)
            if count_hint is None
            else self._coll("messages").count_documents(flt, hint=count_hint)
        )
        total, docs = await asyncio.gather(
            counted, self._find(flt, [("created_at", 1), ("seq", 1)], _ORDER, skip, limit)
        )
        rows = [_decode(d) for d in docs]
        return Answer(int(total), tuple(r[0] for r in rows))

    async def page_offset(self, thread: ThreadSpec, page: int, per_page: int) -> Answer:
        """Total (the counter) and skip/limit page concurrently."""
        return await self._page(thread.id, {"thread_id": thread.id}, page * per_page, per_page)

    async def first_cursor(self, thread: ThreadSpec, per_page: int, depth: int) -> Any:
        """(created_at, seq) of the message at position ``depth - 1``."""
        if depth <= 0:
            return None
        docs = await self._find({"thread_id": thread.id}, [("created_at", 1), ("seq", 1)], _ORDER, depth - 1, 1)
        return (docs[0]["created_at"], docs[0]["seq"])

    async def page_cursor(self, thread: ThreadSpec, cursor: Any, per_page: int) -> Answer:
        """Total (the counter) and keyset page (range + tie ``$nor``, as the adapter) concurrently."""
        if cursor is None:
            return await self._page(thread.id, {"thread_id": thread.id}, 0, per_page)
        at, seq = cursor
        flt = {"thread_id": thread.id, "created_at": {"$gte": at}, "$nor": [{"created_at": at, "seq": {"$lte": seq}}]}
        answer = await self._page(thread.id, flt, 0, per_page + 1)
        return Answer(answer.total, answer.ids[:per_page])

    async def filter_meta(self, thread: ThreadSpec, key: str, value: str, per_page: int) -> Answer:
        """``$elemMatch`` on the entry array; count on the metadata index."""
        flt = {"thread_id": thread.id, "$and": [{"meta": {"$elemMatch": {"k": key, "v": value}}}]}
        return await self._page(thread.id, flt, 0, per_page, _META)

    async def filter_date(self, thread: ThreadSpec, start_us: int, end_us: int, per_page: int) -> Answer:
        """``created_at`` range on the thread index."""
        flt = {"thread_id": thread.id, "created_at": {"$gte": Int64(start_us), "$lte": Int64(end_us)}}
        return await self._page(thread.id, flt, 0, per_page, _ORDER)

    async def _window(self, target: str, resource_id: str, before: int, after: int) -> list[Doc]:
        doc = await self._coll("messages").find_one({"_id": target, "resource_id": resource_id})
        if doc is None:
            return []
        scope = {"thread_id": doc["thread_id"], "resource_id": resource_id}
        at, seq = doc["created_at"], doc["seq"]
        prev, nxt = await asyncio.gather(
            self._find(
                {**scope, "created_at": {"$lte": at}, "$nor": [{"created_at": at, "seq": {"$gte": seq}}]},
                [("created_at", -1), ("seq", -1)],
                _ORDER,
                0,
                before,
            ),
            self._find(
                {**scope, "created_at": {"$gte": at}, "$nor": [{"created_at": at, "seq": {"$lte": seq}}]},
                [("created_at", 1), ("seq", 1)],
                _ORDER,
                0,
                after,
            ),
        )
        return [*prev, doc, *nxt]

    async def include_windows(
        self, thread: ThreadSpec, targets: Sequence[str], before: int, after: int, n: int
    ) -> Answer:
        """Ownership with the total (the counter), newest ``n`` and every window
        concurrently; merged here."""
        scope = {"thread_id": thread.id, "resource_id": thread.resource_id}
        total, newest, windows = await asyncio.gather(
            self._total(thread.id, thread.resource_id),
            self._find(scope, [("created_at", -1), ("seq", -1)], _ORDER, 0, n),
            asyncio.gather(*(self._window(t, thread.resource_id, before, after) for t in targets)),
        )
        merged: dict[str, tuple[Any, ...]] = {}
        for docs in (newest, *windows):
            for d in docs:
                row = _decode(d)
                merged.setdefault(row[0], row)
        items = sorted(merged.values(), key=lambda r: (r[6], r[7]))
        return Answer(int(total), tuple(r[0] for r in items))

    async def list_threads(self, resource_id: str, page: int, per_page: int) -> Answer:
        """Count and page of a resource's threads concurrently."""
        threads = self._coll("threads")
        cursor = (
            threads.find({"resource_id": resource_id})
            .sort([("created_at", -1), ("_id", -1)])
            .hint(_THREADS_ORDER)
            .skip(page * per_page)
            .limit(per_page)
        )
        total, docs = await asyncio.gather(
            threads.count_documents({"resource_id": resource_id}, hint=_THREADS_ORDER), cursor.to_list(None)
        )
        rows = [
            (
                d["_id"],
                d["resource_id"],
                d["title"],
                {e["k"]: e.get("v") for e in d.get("meta", ())},
                int(d["created_at"]),
                int(d["updated_at"]),
            )
            for d in docs
        ]
        return Answer(int(total), tuple(r[0] for r in rows))

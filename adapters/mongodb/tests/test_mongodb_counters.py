"""Message counters (R-PAGE: an unfiltered total is a counter read): where
they live, that every write keeps them, that no message write touches a
document shared with writers of other threads, the backfill of stores
written before them, the legacy ``resource_counts`` dropped at open, and the
race of issue 25 (save_thread against delete_resource).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from memory_core_conformance.harness import assert_counters
from memory_core_mongodb import MongoStorage
from memory_core_mongodb._counters import BACKFILL_MARKER
from memory_core_mongodb._schema import COUNTER_ID, COUNTERS, LEGACY_COLLECTIONS, MESSAGES, THREADS
from pymongo import AsyncMongoClient, monitoring

from memory_core import Message, OwnershipError, Thread

pytestmark = pytest.mark.anyio

StoreFactory = Callable[..., MongoStorage]
Doc = dict[str, Any]


async def _stored_counts(store: MongoStorage) -> dict[str, int]:
    return {d["_id"]: int(d["message_count"]) async for d in store._collection(THREADS).find({})}


async def _resource_totals(store: MongoStorage, *resource_ids: str) -> dict[str, int]:
    totals = {rid: (await store.list_messages_by_resource(rid, per_page=0)).total for rid in resource_ids}
    return {rid: n for rid, n in totals.items() if n is not None}


async def _seed(store: MongoStorage) -> None:
    for tid, rid in (("t1", "r1"), ("t2", "r1"), ("t3", "r2")):
        await store.save_thread(Thread(tid, rid))
    await store.save_messages([Message(f"m{i}", ("t1", "t2", "t3")[i % 3], "user", "x") for i in range(9)])


@pytest.mark.parametrize("transactions", [None, False], ids=["server-default", "ordered-plan"])
async def test_every_write_keeps_the_counters(store_factory: StoreFactory, transactions: bool | None) -> None:
    store = store_factory(transactions=transactions)
    await store.open()
    try:
        await _seed(store)
        assert await _stored_counts(store) == {"t1": 3, "t2": 3, "t3": 3}
        assert await _resource_totals(store, "r1", "r2") == {"r1": 6, "r2": 3}
        await store.save_messages([Message("m0", "t2", "user", "moved"), Message("n1", "t1", "user", "new")])
        await store.update_messages([{"id": "m1", "thread_id": "t1"}, {"id": "nope", "thread_id": "t1"}])
        assert await _stored_counts(store) == {"t1": 4, "t2": 3, "t3": 3}
        assert await _resource_totals(store, "r1", "r2") == {"r1": 7, "r2": 3}
        assert await store.delete_messages(["m0", "m2", "gone"]) == 2
        assert await _stored_counts(store) == {"t1": 4, "t2": 2, "t3": 2}
        await store.delete_thread("t1")
        assert await _stored_counts(store) == {"t2": 2, "t3": 2}
        assert await _resource_totals(store, "r1", "r2") == {"r1": 2, "r2": 2}
        await assert_counters(store, ["t1", "t2", "t3"], ["r1", "r2"], "after every kind of write")
        erased = await store.delete_resource("r1")
        assert erased.messages == 2
        assert await _stored_counts(store) == {"t3": 2}
        assert await _resource_totals(store, "r1", "r2") == {"r1": 0, "r2": 2}
    finally:
        await store.destroy()


class _Writes(monitoring.CommandListener):
    """Records every document write a client sends: (collection, filter)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Doc]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        command = event.command
        name = event.command_name
        if name in ("update", "delete"):
            for op in command.get(name + "s", ()):
                self.seen.append((command[name], op["q"]))
        elif name == "findAndModify":
            self.seen.append((command[name], command["query"]))
        elif name == "insert":
            self.seen.extend((command[name], {"_id": doc["_id"]}) for doc in command.get("documents", ()))
        elif name == "bulkWrite":  # MongoDB 8.0's client bulkWrite
            spaces = [info["ns"].split(".", 1)[1] for info in command["nsInfo"]]
            for op in command.get("ops", ()):
                kind = next(k for k in ("insert", "update", "delete") if k in op)
                self.seen.append((spaces[op[kind]], op.get("filter", op.get("document", {}))))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        """Nothing to record."""

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        """Nothing to record."""


@pytest.mark.parametrize("transactions", [None, False], ids=["server-default", "ordered-plan"])
async def test_message_writes_touch_only_their_own_threads(
    store_factory: StoreFactory, transactions: bool | None
) -> None:
    """The kind behind conformance c12: writers of different threads of one
    resource must not write one shared document (in a transaction every such
    writer would conflict with every other). A save, a move, a delete and a
    thread delete in ``r1`` write only messages and the threads they name,
    besides the R-ORDER sequence (an ``$inc`` outside any transaction)."""
    writes = _Writes()
    store = store_factory(transactions=transactions, event_listeners=[writes])
    await store.open()
    try:
        await _seed(store)
        writes.seen.clear()
        await store.save_messages([Message("n1", "t1", "user", "new"), Message("m0", "t1", "user", "again")])
        await store.update_messages([{"id": "m1", "thread_id": "t2"}])
        await store.delete_messages(["n1"])
        await store.delete_thread("t2")
        assert writes.seen, "the listener saw no write"
        named = {"t1", "t2"}
        for collection, key in writes.seen:
            if collection == COUNTERS:
                assert key == {"_id": COUNTER_ID}
            elif collection == THREADS:
                assert key["_id"] in named, key
            else:
                assert collection == MESSAGES, (collection, key)
    finally:
        await store.destroy()


async def test_an_old_resource_counts_collection_is_dropped_at_open(
    store_factory: StoreFactory, raw_client: AsyncMongoClient[Doc]
) -> None:
    """A store of an earlier version kept per-resource counters (resource ids)
    in ``resource_counts``: the next open drops it (erasure leaves no id
    behind), idempotently, and the totals come from the threads."""
    store = store_factory()
    await store.open()
    await _seed(store)
    db = raw_client[store.database_name]
    (legacy,) = LEGACY_COLLECTIONS
    await db[legacy].insert_many([{"_id": "r1", "messages": 6}, {"_id": "r2", "messages": 3}])
    await store.close()
    openers = [MongoStorage(store.url, database=store.database_name) for _ in range(3)]
    await asyncio.gather(*(s.open() for s in openers))
    try:
        assert legacy not in await db.list_collection_names()
        assert await _resource_totals(openers[0], "r1", "r2") == {"r1": 6, "r2": 3}
    finally:
        for other in openers[1:]:
            await other.close()
        await openers[0].destroy()


async def test_totals_are_counter_reads(store: MongoStorage) -> None:
    """An unfiltered total comes from the counters, so a counter changed
    behind the adapter's back shows in it (and a filtered total still counts)."""
    await _seed(store)
    await store._collection(THREADS).update_one({"_id": "t1"}, {"$set": {"message_count": 100}})
    assert (await store.list_messages("t1", per_page=1)).total == 100
    assert (await store.list_messages(["t1", "t2"], "r1", per_page=0)).total == 103
    with pytest.raises(OwnershipError):  # t3 is r2's: a read of another resource's thread is refused (R-OWN)
        await store.list_messages(["t1", "t3"], "r1", per_page=0)
    assert (await store.list_messages_by_resource("r1", per_page=2)).total == 103  # the sum of its threads'
    assert (await store.list_messages_by_resource("nobody", per_page=2)).total == 0
    filtered = await store.list_messages("t1", filter={"metadata": {"k": 1}}, per_page=1)
    assert filtered.total == 0
    assert (await store.list_messages("t1", per_page=1, total=False)).total is None


async def test_a_store_without_counters_is_backfilled_once(
    store_factory: StoreFactory, raw_client: AsyncMongoClient[Doc]
) -> None:
    """A store written before the counters (no ``message_count``, no
    marker) gets them at the next open, exact, from any number of openers at
    once; later opens leave them alone."""
    store = store_factory()
    await store.open()
    await _seed(store)
    db = raw_client[store.database_name]
    await db[THREADS].update_many({}, {"$unset": {"message_count": ""}})
    await db[COUNTERS].delete_one({"_id": BACKFILL_MARKER})
    await store.close()

    openers = [MongoStorage(store.url, database=store.database_name) for _ in range(4)]
    await asyncio.gather(*(s.open() for s in openers))
    try:
        assert await _stored_counts(openers[0]) == {"t1": 3, "t2": 3, "t3": 3}
        assert await _resource_totals(openers[0], "r1", "r2") == {"r1": 6, "r2": 3}
        assert await db[COUNTERS].find_one({"_id": BACKFILL_MARKER}) is not None
        await assert_counters(openers[0], ["t1", "t2", "t3"], ["r1", "r2"], "after the backfill")
        # Done once: a later open does not recount (a wrong counter stays wrong).
        await db[THREADS].update_one({"_id": "t1"}, {"$set": {"message_count": 7}})
        again = MongoStorage(store.url, database=store.database_name)
        await again.open()
        assert (await again.list_messages("t1", per_page=0)).total == 7
        await again.close()
    finally:
        for other in openers[1:]:
            await other.close()
        await openers[0].destroy()


async def test_save_thread_racing_delete_resource_is_never_a_backend_error(store: MongoStorage) -> None:
    """Issue 25: a thread save racing the erasure of its resource reached a
    bare ``assert`` (an empty, non-retryable BackendError). Now the save is
    retried: both calls succeed, in either order, and the counters agree."""
    for n in range(30):
        rid, tid = f"r{n}", f"t{n}"
        await store.save_thread(Thread(tid, rid))
        await store.save_messages([Message(f"{tid}-m{i}", tid, "user", "x") for i in range(2)])
        results = await asyncio.gather(
            store.save_thread(Thread(tid, rid, title="again")),
            store.delete_resource(rid),
            store.save_thread(Thread(tid, rid, title="once more")),
            return_exceptions=True,
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        assert not errors, f"round {n}: {errors!r}"
        await assert_counters(store, [tid], [rid], f"round {n}")

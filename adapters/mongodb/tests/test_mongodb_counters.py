"""Message counters (R-PAGE: an unfiltered total is a counter read): where
they live, that every write keeps them, the backfill of stores written
before them, and the race of issue 25 (save_thread against delete_resource).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from memory_core_conformance.harness import assert_counters
from memory_core_mongodb import MongoStorage
from memory_core_mongodb._counters import BACKFILL_MARKER
from memory_core_mongodb._schema import COUNTERS, RESOURCE_COUNTS, THREADS
from pymongo import AsyncMongoClient

from memory_core import Message, OwnershipError, Thread

pytestmark = pytest.mark.anyio

StoreFactory = Callable[..., MongoStorage]
Doc = dict[str, Any]


async def _stored_counts(store: MongoStorage) -> tuple[dict[str, int], dict[str, int]]:
    threads = {d["_id"]: int(d["message_count"]) async for d in store._collection(THREADS).find({})}
    resources = {d["_id"]: int(d["messages"]) async for d in store._collection(RESOURCE_COUNTS).find({})}
    return threads, resources


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
        assert await _stored_counts(store) == ({"t1": 3, "t2": 3, "t3": 3}, {"r1": 6, "r2": 3})
        await store.save_messages([Message("m0", "t2", "user", "moved"), Message("n1", "t1", "user", "new")])
        await store.update_messages([{"id": "m1", "thread_id": "t1"}, {"id": "nope", "thread_id": "t1"}])
        assert await _stored_counts(store) == ({"t1": 4, "t2": 3, "t3": 3}, {"r1": 7, "r2": 3})
        assert await store.delete_messages(["m0", "m2", "gone"]) == 2
        assert await _stored_counts(store) == ({"t1": 4, "t2": 2, "t3": 2}, {"r1": 6, "r2": 2})
        await store.delete_thread("t1")
        assert await _stored_counts(store) == ({"t2": 2, "t3": 2}, {"r1": 2, "r2": 2})
        await assert_counters(store, ["t1", "t2", "t3"], ["r1", "r2"], "after every kind of write")
        erased = await store.delete_resource("r1")
        assert erased.messages == 2
        # Erasure leaves no trace of the resource: its counter goes too.
        assert await _stored_counts(store) == ({"t3": 2}, {"r2": 2})
    finally:
        await store.destroy()


async def test_totals_are_counter_reads(store: MongoStorage) -> None:
    """An unfiltered total comes from the counters, so a counter changed
    behind the adapter's back shows in it (and a filtered total still counts)."""
    await _seed(store)
    await store._collection(THREADS).update_one({"_id": "t1"}, {"$set": {"message_count": 100}})
    await store._collection(RESOURCE_COUNTS).update_one({"_id": "r1"}, {"$set": {"messages": 200}})
    assert (await store.list_messages("t1", per_page=1)).total == 100
    assert (await store.list_messages(["t1", "t2"], "r1", per_page=0)).total == 103
    with pytest.raises(OwnershipError):  # t3 is r2's: a read of another resource's thread is refused (R-OWN)
        await store.list_messages(["t1", "t3"], "r1", per_page=0)
    assert (await store.list_messages_by_resource("r1", per_page=2)).total == 200
    assert (await store.list_messages_by_resource("nobody", per_page=2)).total == 0
    filtered = await store.list_messages("t1", filter={"metadata": {"k": 1}}, per_page=1)
    assert filtered.total == 0
    assert (await store.list_messages("t1", per_page=1, total=False)).total is None


async def test_a_store_without_counters_is_backfilled_once(
    store_factory: StoreFactory, raw_client: AsyncMongoClient[Doc]
) -> None:
    """A store written before the counters (no ``message_count``, no
    ``resource_counts``, no marker) gets them at the next open, exact, from
    any number of openers at once; later opens leave them alone."""
    store = store_factory()
    await store.open()
    await _seed(store)
    db = raw_client[store.database_name]
    await db[THREADS].update_many({}, {"$unset": {"message_count": ""}})
    await db[RESOURCE_COUNTS].drop()
    await db[COUNTERS].delete_one({"_id": BACKFILL_MARKER})
    await store.close()

    openers = [MongoStorage(store.url, database=store.database_name) for _ in range(4)]
    await asyncio.gather(*(s.open() for s in openers))
    try:
        assert await _stored_counts(openers[0]) == ({"t1": 3, "t2": 3, "t3": 3}, {"r1": 6, "r2": 3})
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

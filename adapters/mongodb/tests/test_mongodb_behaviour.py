"""MongoDB-specific guarantees: namespaces, R-META typing on BSON, atomic
updates under concurrency, all-or-nothing batches, big documents and results."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from memory_core_mongodb import MongoStorage
from memory_core_mongodb.testing import unique_namespace
from pymongo import AsyncMongoClient

from memory_core.clock import ManualClock, to_us
from memory_core.errors import ConflictError, ValidationError
from memory_core.lineage import clone_thread
from memory_core.models import Message, MessageFilter, Thread, ThreadFilter
from memory_core.validation import MAX_MESSAGE_BYTES, message_size

pytestmark = pytest.mark.anyio

T0 = datetime(2025, 1, 1, tzinfo=UTC)
StoreFactory = Callable[..., MongoStorage]


async def test_namespaces_are_separate_databases_and_destroy_drops_only_its_own(
    store_factory: StoreFactory, raw_client: AsyncMongoClient[dict[str, Any]]
) -> None:
    first, second = store_factory(), store_factory()
    await first.open()
    await second.open()
    await first.save_thread(Thread("t1", "r1", "first"))
    await second.save_thread(Thread("t1", "r1", "second"))
    await first.save_messages([Message("m1", "t1", "user", "only in first")])
    assert (await first.get_thread("t1")).title == "first"  # type: ignore[union-attr]
    assert (await second.get_thread("t1")).title == "second"  # type: ignore[union-attr]
    assert await second.get_messages(["m1"]) == []
    assert first.database_name != second.database_name
    assert {first.database_name, second.database_name} <= set(await raw_client.list_database_names())

    await first.destroy()
    names = set(await raw_client.list_database_names())
    assert first.database_name not in names and second.database_name in names
    assert (await second.get_thread("t1")).title == "second"  # type: ignore[union-attr]
    await second.destroy()
    assert second.database_name not in set(await raw_client.list_database_names())


async def test_same_namespace_shares_data(store_factory: StoreFactory) -> None:
    namespace = unique_namespace()
    writer, reader = store_factory(namespace=namespace), store_factory(namespace=namespace)
    await writer.save_thread(Thread("t1", "r1"))
    assert await reader.get_thread("t1") is not None
    await reader.close()
    await writer.destroy()


C10_A = {
    "n": 5,
    "b": True,
    "s": "5",
    "one": 1,
    "f": 1.5,
    "z": 0,
    "nul": None,
    "lst": [None],
    "obj": {},
    "big": 2**53 + 1,
}
C10_B = {"n": "5", "b": "true", "s": 5, "one": True, "f": "1.5", "z": False, "lst": None, "big": float(2**53)}
C10_QUERIES: list[tuple[dict[str, Any], list[str]]] = [
    ({"n": 5}, ["A"]),
    ({"n": "5"}, ["B"]),
    ({"n": 5.0}, ["A"]),
    ({"b": True}, ["A"]),
    ({"b": "true"}, ["B"]),
    ({"b": 1}, []),
    ({"one": 1}, ["A"]),
    ({"one": True}, ["B"]),
    ({"one": 1.0}, ["A"]),
    ({"s": "5"}, ["A"]),
    ({"f": 1.5}, ["A"]),
    ({"z": 0}, ["A"]),
    ({"z": False}, ["B"]),
    ({"z": 0.0}, ["A"]),
    ({"n": 5, "b": True}, ["A"]),
    ({"missing": 1}, []),
    ({"missing": None}, []),
    ({"nul": None}, ["A"]),
    ({"lst": None}, ["B"]),
    ({"obj": None}, []),
    ({"big": 2**53 + 1}, ["A"]),
    ({"big": 2**53}, ["B"]),
    ({"big": float(2**53)}, ["B"]),
    ({}, ["A", "B"]),
]


@pytest.mark.parametrize(("condition", "expected"), C10_QUERIES, ids=[repr(q[0]) for q in C10_QUERIES])
async def test_r_meta_typing_on_threads_and_messages(
    store: MongoStorage, condition: dict[str, Any], expected: list[str]
) -> None:
    await store.save_thread(Thread("tA", "r1", metadata=C10_A, created_at=T0))
    await store.save_thread(Thread("tB", "r1", metadata=C10_B, created_at=T0 + timedelta(seconds=1)))
    await store.save_messages(
        [
            Message("mA", "tA", "user", "a", metadata=C10_A, created_at=T0),
            Message("mB", "tA", "user", "b", metadata=C10_B, created_at=T0 + timedelta(seconds=1)),
        ]
    )
    threads = await store.list_threads(ThreadFilter("r1", condition), per_page=False, order_by={"direction": "ASC"})
    assert [t.id for t in threads.items] == ["t" + x for x in expected]
    assert threads.total == len(expected)
    messages = await store.list_messages("tA", filter=MessageFilter(metadata=condition), per_page=False)
    assert [m.id for m in messages.items] == ["m" + x for x in expected]
    assert messages.total == len(expected)
    by_resource = await store.list_messages_by_resource("r1", filter=MessageFilter(metadata=condition), per_page=1)
    assert by_resource.total == len(expected)


async def test_concurrent_partial_updates_never_lose_a_write(store_factory: StoreFactory) -> None:
    """Each update is one atomic server-side operation: N concurrent merges keep
    all N keys, and N bumps under a frozen clock advance updated_at by N µs."""
    clock = ManualClock(T0)
    store = store_factory(clock)
    await store.save_thread(Thread("t1", "r1", created_at=T0, updated_at=T0))
    await store.update_resource("r1", working_memory="", metadata={})
    count = 24
    await asyncio.gather(
        *(store.update_thread("t1", metadata={f"k{i}": i}) for i in range(count)),
        *(store.update_resource("r1", metadata={f"k{i}": i}) for i in range(count)),
        store.update_thread("t1", title="kept"),
    )
    thread = await store.get_thread("t1")
    assert thread is not None
    assert thread.metadata == {f"k{i}": i for i in range(count)} and thread.title == "kept"
    assert thread.updated_at == T0 + timedelta(microseconds=count + 1)
    resource = await store.get_resource("r1")
    assert resource is not None and resource.metadata == {f"k{i}": i for i in range(count)}
    assert resource.working_memory == ""
    assert resource.updated_at == T0 + timedelta(microseconds=count)
    assert resource.created_at == T0
    await store.destroy()


async def test_message_saves_and_thread_updates_interleave_without_reverting(store_factory: StoreFactory) -> None:
    clock = ManualClock(T0)
    store = store_factory(clock)
    await store.save_thread(Thread("t1", "r1", created_at=T0, updated_at=T0))
    await asyncio.gather(
        *(store.save_messages([Message(f"m{i}", "t1", "user", str(i))]) for i in range(10)),
        *(store.update_thread("t1", metadata={f"k{i}": i}) for i in range(10)),
        *(store.update_messages([{"id": "m0", "metadata": {f"x{i}": i}}]) for i in range(5)),
    )
    thread = await store.get_thread("t1")
    assert thread is not None and thread.metadata == {f"k{i}": i for i in range(10)}
    assert thread.updated_at is not None and to_us(thread.updated_at) > to_us(T0)
    page = await store.list_messages("t1", per_page=False)
    assert page.total == 10
    assert len({m.sequence for m in page.items}) == 10
    await store.destroy()


async def test_concurrent_stores_get_distinct_sequences(store_factory: StoreFactory) -> None:
    namespace = unique_namespace()
    stores = [store_factory(namespace=namespace) for _ in range(4)]
    await stores[0].save_thread(Thread("t1", "r1"))
    await asyncio.gather(
        *(
            s.save_messages([Message(f"s{n}-{i}-{j}", "t1", "user", "x", created_at=T0) for j in range(3)])
            for n, s in enumerate(stores)
            for i in range(5)
        )
    )
    page = await stores[0].list_messages("t1", per_page=False)
    sequences = [m.sequence for m in page.items]
    assert len(page.items) == 60 and len(set(sequences)) == 60 and sequences == sorted(sequences)  # type: ignore[type-var]
    # within one batch, list order = sequence order
    for n in range(4):
        for i in range(5):
            ids = [m.id for m in page.items if m.id.startswith(f"s{n}-{i}-")]
            assert ids == [f"s{n}-{i}-{j}" for j in range(3)]
    for other in stores[1:]:
        await other.close()
    await stores[0].destroy()


@pytest.mark.parametrize("transactions", [True, False], ids=["transactions", "ordered-plan"])
async def test_ids_taken_behind_the_cores_back_fail_the_batch_and_write_nothing(
    store_factory: StoreFactory, raw_client: AsyncMongoClient[dict[str, Any]], transactions: bool
) -> None:
    """A message id another resource holds, written behind the core's back,
    fails the save's checks (read with the write: in its transaction, or
    just before the ordered plan) with ConflictError, and nothing is
    written."""
    store = store_factory(ManualClock(T0), transactions=transactions)
    await store.open()
    if transactions and not store.transactions:
        await store.destroy()
        pytest.skip("this server has no multi-document transactions (standalone mongod)")
    await store.save_thread(Thread("t1", "r1", created_at=T0, updated_at=T0))
    [old] = await store.save_messages([Message("old", "t1", "user", "before", created_at=T0)])
    before = await store.get_thread("t1")
    clash = {
        "_id": "clash",
        "resource_id": "r2",
        "thread_id": "tX",
        "role": "user",
        "content": "x",
        "meta": [],
        "created_at": 0,
        "seq": 0,
    }
    await raw_client[store.database_name]["messages"].insert_one(clash)
    batch = [
        Message("new1", "t1", "user", "one", resource_id="r1", created_at=T0 + timedelta(seconds=1)),
        replace(old, content="changed"),
        Message("clash", "t1", "user", "boom", resource_id="r1", created_at=T0 + timedelta(seconds=2)),
    ]
    with pytest.raises(ConflictError):
        await store.save_messages(batch)
    assert await store.get_messages(["new1"]) == []
    assert [m.content for m in await store.get_messages(["old"])] == ["before"]
    assert await store.get_thread("t1") == before
    await store.destroy()


async def test_a_15_mib_message_round_trips(store: MongoStorage) -> None:
    await store.save_thread(Thread("t1", "r1"))
    body = "\u00e9" * (7 * 1024 * 1024) + "x" * (1024 * 1024 - 4096) + "|end"  # ~15 MiB of UTF-8
    await store.save_messages([Message("huge", "t1", "user", body, metadata={"k": "v"})])
    [got] = await store.get_messages(["huge"])
    assert got.content == body
    page = await store.list_messages("t1", per_page=False)
    assert page.items[0].content == body


async def test_a_clone_whose_big_copy_would_exceed_r_size_writes_nothing(
    store: MongoStorage, raw_client: AsyncMongoClient[dict[str, Any]]
) -> None:
    """Copies over a sixth of R-SIZE are read back to check exactly: a 3 MiB
    one passes; near 15 MiB, the copy's longer ids and resource id push it
    over (ValidationError naming the message), and the staged copies go."""
    await store.save_thread(Thread("t1", "r1"))
    body = "a" * (MAX_MESSAGE_BYTES - message_size(Message("big", "t1", "user", "")) - 10)
    await store.save_messages([Message("mid", "t1", "user", "x" * (3 * 1024 * 1024))])
    made = await clone_thread(store, "t1", "copy")
    assert [m.content for m in (await store.list_messages("copy", per_page=False)).items] == ["x" * (3 * 1024 * 1024)]
    assert list(made.message_ids) == ["mid"]
    await store.save_messages([Message("big", "t1", "user", body)])
    with pytest.raises(ValidationError, match="copy of message 'big'"):
        await clone_thread(store, "t1", "n" * 256, resource_id="r" * 256, source_resource_id="r1")
    assert await store.get_thread("n" * 256) is None
    assert await raw_client[store.database_name]["messages"].count_documents({}) == 3


async def test_listings_bigger_than_one_driver_batch_are_not_truncated(store: MongoStorage) -> None:
    await store.save_thread(Thread("t1", "r1"))
    chunk = 3 * 1024 * 1024
    await store.save_messages(
        [Message(f"m{i}", "t1", "user", f"{i}|" + "x" * chunk, created_at=T0 + timedelta(seconds=i)) for i in range(8)]
    )  # 24 MiB in all: more than one 16 MiB reply
    page = await store.list_messages("t1", per_page=False)
    assert [m.id for m in page.items] == [f"m{i}" for i in range(8)]
    assert all(len(m.content) == chunk + 2 for m in page.items)
    desc = await store.list_messages("t1", per_page=5, order_by={"direction": "DESC"})
    assert [m.id for m in desc.items] == ["m7", "m6", "m5", "m4", "m3"] and desc.has_more


async def test_thread_listings_longer_than_the_first_driver_batch(store: MongoStorage) -> None:
    """The first reply of a find holds 101 documents: the rest must be fetched, not dropped."""
    await asyncio.gather(
        *(store.save_thread(Thread(f"a{n:03d}", "r1", created_at=T0 + timedelta(seconds=n))) for n in range(250))
    )
    await asyncio.gather(*(store.save_thread(Thread(f"b{n:02d}", "r2")) for n in range(5)))
    everything = await store.list_threads(ThreadFilter("r1"), per_page=False)
    assert everything.total == 250
    assert [t.id for t in everything.items] == [f"a{n:03d}" for n in reversed(range(250))]
    last = await store.list_threads(ThreadFilter("r1"), page=1, per_page=200)
    assert len(last.items) == 50 and not last.has_more and last.items[-1].id == "a000"
    other = await store.list_threads(ThreadFilter("r2"), per_page=False)
    assert other.total == 5 and all(t.resource_id == "r2" for t in other.items)

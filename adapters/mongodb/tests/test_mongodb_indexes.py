"""Indexes exist for every query shape, and the adapter's real queries use them.

The queries are captured with PyMongo's command monitoring while the public
API runs, then re-sent as ``explain``: the winning plan must be an index scan
of the index built for that shape, never a collection scan. On a real
MongoDB (``MONGODB_URL``) the sort must also come from the index (no SORT
stage); secantusdb always sorts after the scan (see test_secantus_differences).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from memory_core_mongodb import MongoStorage
from memory_core_mongodb._schema import INDEXES
from memory_core_mongodb.testing import unique_namespace
from pymongo import AsyncMongoClient

from adapters.mongodb.tests.explain import Recorder, by_id, explain_command, is_sorted, queries, winning_stages
from memory_core.clock import ManualClock
from memory_core.models import DateRange, Include, Message, MessageFilter, Thread, ThreadFilter

pytestmark = pytest.mark.anyio

T0 = datetime(2025, 1, 1, tzinfo=UTC)
StoreFactory = Callable[..., MongoStorage]


async def test_every_index_exists(store: MongoStorage, raw_client: AsyncMongoClient[dict[str, Any]]) -> None:
    db = raw_client[store.database_name]
    assert set(await db.list_collection_names()) >= set(INDEXES)
    for name, models in INDEXES.items():
        found = {ix["name"]: list(ix["key"].items()) async for ix in await db[name].list_indexes()}
        for model in models:
            spec = model.document
            assert found.get(spec["name"]) == list(spec["key"].items()), (name, spec["name"])


async def test_concurrent_openers_create_the_schema_once(store_factory: StoreFactory) -> None:
    namespace = unique_namespace()
    stores = [store_factory(namespace=namespace) for _ in range(6)]
    await asyncio.gather(*(s.open() for s in stores))
    try:
        await asyncio.gather(*(s.save_thread(Thread(f"t{i}", "r1")) for i, s in enumerate(stores)))
        page = await stores[0].list_threads(ThreadFilter(resource_id="r1"), per_page=False)
        assert page.total == 6
        db = stores[0]._here().db
        names = {ix["name"] async for ix in await db["messages"].list_indexes()}
        assert names == {"_id_", *(m.document["name"] for m in INDEXES["messages"])}
    finally:
        for other in stores[1:]:
            await other.close()
        await stores[0].destroy()


async def test_hot_queries_use_their_indexes(store_factory: StoreFactory, is_secantus: bool) -> None:
    recorder = Recorder()
    clock = ManualClock(T0)
    store = store_factory(clock, event_listeners=[recorder])
    await store.open()
    try:
        await store.save_thread(Thread("t1", "r1", metadata={"kind": "a"}))
        await store.save_thread(Thread("t2", "r1", metadata={"kind": "b"}))
        for n in range(30):
            clock.advance(1)
            meta = {"tag": n % 3, "even": n % 2 == 0, "label": None if n % 5 == 0 else "x"}
            await store.save_messages(
                [Message(f"m{n:02d}", "t1" if n % 4 else "t2", "user", f"text {n}", metadata=meta)]
            )
        recorder.commands.clear()

        first = await store.list_messages("t1", "r1", per_page=5, order_by={"field": "created_at", "direction": "DESC"})
        assert first.next_cursor is not None
        await store.list_messages(
            "t1", "r1", per_page=5, order_by={"field": "created_at", "direction": "DESC"}, cursor=first.next_cursor
        )
        await store.list_messages("t1", per_page=5, page=2)
        await store.list_messages(["t1", "t2"], "r1", per_page=5)
        await store.list_messages("t1", filter=MessageFilter(metadata={"tag": 1, "even": True}), per_page=3)
        await store.list_messages("t1", filter=MessageFilter(metadata={"label": None}), per_page=3)
        window = DateRange(T0 + timedelta(seconds=3), T0 + timedelta(seconds=20), start_exclusive=True)
        await store.list_messages("t1", filter=MessageFilter(date_range=window, metadata={"tag": 2}), per_page=3)
        await store.list_messages_by_resource("r1", per_page=4, order_by={"direction": "DESC"})
        await store.list_messages_by_resource("r1", per_page=0)  # the total alone: its threads' counters
        await store.list_messages("t1", per_page=1, include=[Include("m13", with_previous=2, with_next=2)])
        await store.list_threads(ThreadFilter(resource_id="r1"), per_page=1)
        threads = await store.list_threads(
            ThreadFilter(resource_id="r1"), per_page=1, order_by={"field": "updated_at", "direction": "ASC"}
        )
        await store.list_threads(
            ThreadFilter(resource_id="r1"),
            per_page=1,
            order_by={"field": "updated_at", "direction": "ASC"},
            cursor=threads.next_cursor,
        )
        await store.list_threads(ThreadFilter(resource_id="r1", metadata={"kind": "a"}), per_page=1)
        await store.list_threads(per_page=1)
        await store.save_resource({"id": "r0"})
        resources = await store.list_resource_ids(per_page=1)
        await store.list_resource_ids(per_page=1, cursor=resources.next_cursor)

        commands = [query for command in recorder.commands for query in queries(command)]
        assert len(commands) >= 25
        client = store._here().client
        for command in commands:
            reply = await client[store.database_name].command(explain_command(command))
            stages = winning_stages(reply)
            names = [s["stage"] for s in stages]
            assert stages, command
            if "hint" not in command and is_secantus:
                continue  # secantusdb plans unhinted queries badly (test_secantus_differences)
            assert "COLLSCAN" not in names, (command, names)
            scans = [s for s in stages if "SCAN" in s["stage"] or s["stage"] in ("IDHACK", "EXPRESS_IXSCAN")]
            assert scans, (command, names)
            if "hint" in command:
                assert {s.get("indexName") for s in scans} == {command["hint"]}, (command, names)
            elif by_id(command):
                assert all(s["stage"] in ("IDHACK", "EXPRESS_IXSCAN") or s.get("indexName") == "_id_" for s in scans)
            if is_sorted(command) and not is_secantus:
                assert "SORT" not in names, (command, names)
    finally:
        await store.destroy()

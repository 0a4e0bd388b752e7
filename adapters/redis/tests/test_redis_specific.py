"""Behaviour only the Redis adapter has: key layout and hash tags, no keyspace
scans on request paths, Cluster, prefix isolation, destroy, URL discovery,
error wrapping, and the two-slot write protocol."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis.asyncio as aioredis
from memory_core import BackendError, ManualClock, Message, Storage, connect
from memory_core.errors import ConflictError, StaleStateError, ValidationError
from memory_core.query import MessagePatch
from redis.asyncio.cluster import RedisCluster

from memory_core_redis import RedisStorage
from memory_core_redis._keys import escape
from memory_core_redis.storage import Snapshot

pytestmark = pytest.mark.anyio

T0 = datetime(2025, 1, 1, tzinfo=UTC)
MakeStore = Callable[..., RedisStorage]


def tag_of(key: str) -> str:
    start = key.find("{")
    end = key.find("}", start + 1)
    assert start == 0 and end > 1, key
    return key[1:end]


async def all_keys(store: RedisStorage) -> list[str]:
    """Every key of the store (SCAN: test-side only), through a client of its
    own (the store's clients are closed with it)."""
    client = store._new_client()
    try:
        return [key async for key in client.scan_iter(match=store._keys.pattern, count=1000)]
    finally:
        await client.aclose()


async def seed(store: Storage, resource: str = "r1", thread: str = "t1", n: int = 5) -> list[Message]:
    await store.save_thread({"id": thread, "resource_id": resource, "metadata": {"k": 1}})
    return await store.save_messages(
        [
            {
                "id": f"{thread}-m{i}",
                "thread_id": thread,
                "role": "user",
                "content": f"m{i}",
                "created_at": T0 + timedelta(seconds=i),
                "metadata": {"i": i},
            }
            for i in range(n)
        ]
    )


async def test_keys_carry_resource_and_store_hash_tags(make_store: MakeStore) -> None:
    store = make_store()
    odd = "r{1}:%x"
    async with store:
        await seed(store, resource=odd, thread="t{a}:b")
        await seed(store, resource="r2", thread="t2")
        await store.update_resource(odd, working_memory="wm")
        keys = await all_keys(store)
        await store.destroy()
    prefix = escape(store.prefix, colon=True)
    tags = {tag_of(k) for k in keys}
    assert tags == {prefix, f"{prefix}:{escape(odd)}", f"{prefix}:r2"}
    # thread, its messages and the resource's indexes share one slot
    resource_keys = {k[len(prefix) + len(escape(odd)) + 4 :] for k in keys if tag_of(k) == f"{prefix}:{escape(odd)}"}
    assert {"r", "rm", "tc", "tu", "tla", "tld", "t:t{a}:b", "tm:t{a}:b", "m:t{a}:b-m0"} <= resource_keys
    store_keys = {k[len(prefix) + 3 :] for k in keys if tag_of(k) == prefix}
    listing = {"rs", "rsa", "rsv"}  # the resource listing's index, stamps and backfill mark
    listing.add("key")  # the secret naming deleted threads' tombstones
    assert {"seq", "stamp", "msg", "tc", "tu", "tla", "tld", "g:t{a}:b", "g:t2", *listing} == store_keys


async def _command_calls(client: Any) -> dict[str, int]:
    if isinstance(client, RedisCluster):
        per_node = await client.info("commandstats", target_nodes=RedisCluster.PRIMARIES)
        infos = list(per_node.values())
    else:
        infos = [await client.info("commandstats")]
    calls: dict[str, int] = {}
    for info in infos:
        for name, stats in info.items():
            calls[name] = calls.get(name, 0) + int(stats["calls"])
    return calls


async def test_request_paths_never_scan_the_keyspace(make_store: MakeStore) -> None:
    store = make_store(clock=ManualClock(T0))
    async with store:
        await store.get_thread("warm-up")  # opens and loads the scripts
        before = await _command_calls(store.client)
        await seed(store)
        await seed(store, resource="r2", thread="t2")
        await store.list_threads(per_page=False)
        await store.list_threads({"metadata": {"k": 1}}, order_by={"field": "updated_at", "direction": "ASC"})
        await store.list_threads({"resource_id": "r1", "metadata": {"k": 1}})
        await store.list_messages("t1", per_page=2, filter={"metadata": {"i": 2}})
        await store.list_messages(["t1", "t2"], per_page=3, include=[{"id": "t1-m3", "with_previous": 1}])
        await store.list_messages_by_resource("r1", per_page=2, page=1)
        await store.update_messages([{"id": "t1-m1", "metadata": {"x": 1}, "content": {"a": 1}}])
        await store.update_thread("t1", title="x", metadata={"k": 2})
        await store.update_resource("r1", working_memory="w", metadata={"a": 1})
        await store.get_messages(["t1-m1", "t2-m2", "nope"])
        await store.delete_messages(["t1-m0"])
        await store.delete_thread("t2")
        await store.list_resource_ids(per_page=1)
        await store.list_resource_ids(per_page=False)
        after = await _command_calls(store.client)
        await store.destroy()
    used = {name.removeprefix("cmdstat_") for name, n in after.items() if n > before.get(name, 0)}
    scans = {"keys", "scan", "hscan", "sscan", "zscan"}
    assert not used & scans, used
    # (commandstats also counts the commands scripts run inside the server)
    assert after["cmdstat_evalsha"] - before.get("cmdstat_evalsha", 0) > 20


async def test_cluster_spreads_resources_over_nodes(redis_cluster: str) -> None:
    store = RedisStorage.from_url(redis_cluster, namespace=f"spread-{uuid.uuid4().hex[:8]}")
    async with store:
        for i in range(24):
            await seed(store, resource=f"user-{i}", thread=f"t{i}", n=2)
        page = await store.list_threads(per_page=False)
        assert page.total == 24
        nodes = set()
        for i in range(24):
            slot = await store.client.cluster_keyslot(store._keys.resource(f"user-{i}") + "r")
            nodes.add(store.client.get_node_from_key(store._keys.resource(f"user-{i}") + "r").name)
            assert slot == await store.client.cluster_keyslot(store._keys.resource(f"user-{i}") + "t:t{i}")
        await store.destroy()
    assert len(nodes) == 3


async def test_prefixes_isolate_stores_and_destroy_removes_only_its_own_keys(make_store: MakeStore) -> None:
    base = f"iso-{uuid.uuid4().hex[:6]}"
    names = [base, base + ":b", base + "*", base + "}"]
    stores = [make_store(namespace=name) for name in names]
    for index, store in enumerate(stores):
        await store.open()
        await seed(store, n=index + 1)
    for index, store in enumerate(stores):
        page = await store.list_messages("t1", per_page=False)
        assert [m.id for m in page.items] == [f"t1-m{i}" for i in range(index + 1)]
        assert (await store.list_threads()).total == 1
    counts = [len(await all_keys(store)) for store in stores]
    await stores[0].destroy()
    assert await all_keys(stores[0]) == []
    for store, count in zip(stores[1:], counts[1:], strict=True):
        assert len(await all_keys(store)) == count
        assert (await store.get_thread("t1")) is not None
    for store in stores[1:]:
        await store.destroy()
        assert await all_keys(store) == []


async def test_connect_finds_the_adapter_by_scheme(redis_target: str) -> None:
    store = await connect(redis_target, namespace=f"conn-{uuid.uuid4().hex[:8]}")
    try:
        assert isinstance(store, RedisStorage)
        assert isinstance(store.client, RedisCluster) == ("cluster" in redis_target)
        await store.save_thread({"id": "t", "resource_id": "r"})
        assert (await store.get_thread("t")) is not None
    finally:
        await store.destroy()


async def test_unix_socket_url(redis_unix_socket: str) -> None:
    store = await connect(f"unix://{redis_unix_socket}", namespace=f"unix-{uuid.uuid4().hex[:8]}")
    try:
        await seed(store)
        assert (await store.list_messages("t1")).total == 5
    finally:
        await store.destroy()


async def test_injected_client_is_used_and_not_closed(redis_standalone: str) -> None:
    client = aioredis.Redis.from_url(redis_standalone, decode_responses=True)
    store = RedisStorage(client=client, prefix=f"inj-{uuid.uuid4().hex[:8]}")
    await seed(store)
    await store.destroy()
    assert await client.ping()
    await client.aclose()


async def test_unreachable_server_is_a_retryable_backend_error() -> None:
    store = RedisStorage("redis://127.0.0.1:1/0", prefix="x", socket_connect_timeout=1)
    with pytest.raises(BackendError) as caught:
        await store.get_thread("t")
    assert caught.value.retryable
    assert caught.value.backend == "redis"


async def test_server_errors_are_non_retryable_backend_errors(make_store: MakeStore) -> None:
    store = make_store()
    async with store:
        await store.client.set(store._keys.resource("r1") + "r", "not a hash")
        with pytest.raises(BackendError) as caught:
            await store.get_resource("r1")
        assert not caught.value.retryable
        assert caught.value.operation == "get_resource"
        await store.destroy()


async def test_stale_location_cache_follows_a_thread_recreated_elsewhere(make_store: MakeStore) -> None:
    namespace = f"stale-{uuid.uuid4().hex[:8]}"
    reader, writer = make_store(namespace=namespace), make_store(namespace=namespace)
    async with reader, writer:
        await seed(writer, resource="r1")
        assert (await reader.get_thread("t1")).resource_id == "r1"  # type: ignore[union-attr]
        assert len(await reader.get_messages(["t1-m1"])) == 1
        await writer.delete_thread("t1")
        await seed(writer, resource="r2", n=3)
        thread = await reader.get_thread("t1")
        assert thread is not None and thread.resource_id == "r2"
        assert (await reader.list_messages("t1")).total == 3
        assert [m.resource_id for m in await reader.get_messages(["t1-m1"])] == ["r2"]
        window = await reader.list_messages("t1", per_page=0, include=[{"id": "t1-m1", "with_next": 1}])
        assert [m.id for m in window.items] == ["t1-m1", "t1-m2"]
        assert (await reader.update_thread("t1", title="new")).resource_id == "r2"
        await reader.delete_thread("t1")
        assert await writer.get_thread("t1") is None
        await writer.destroy()


async def test_late_global_update_never_resurrects_or_reverts(make_store: MakeStore) -> None:
    clock = ManualClock(T0)
    store = make_store(clock=clock)
    async with store:
        await seed(store)
        rid = "r1"
        slot = store._slot(rid)
        old = await store._run("get_threads", slot, ["t1"])
        assert old[0] is not None
        clock.advance(5)
        await store.update_thread("t1", title="new")
        stale = Snapshot("t1", rid, "l", "1", "", "", "", [])  # version 1: older than anything applied since
        await store._apply([stale])
        page = await store.list_threads(order_by={"field": "updated_at", "direction": "DESC"})
        assert [t.title for t in page.items] == ["new"]
        await store.delete_thread("t1")
        await store._apply([stale])
        assert (await store.list_threads()).total == 0
        await store.destroy()


async def test_id_held_by_another_resource_is_a_conflict_and_writes_nothing(make_store: MakeStore) -> None:
    store = make_store()
    async with store:
        await seed(store, resource="r1", thread="t1", n=1)
        await seed(store, resource="r2", thread="t2", n=1)
        with pytest.raises(ConflictError):
            await store.save_messages([{"id": "t1-m0", "thread_id": "t2", "role": "user", "content": "x"}])
        # the core's check runs first; the claim step guards the same rule
        # against a racing writer (here: called directly)
        msg = Message("t1-m0", "t2", "user", "x", "r2", created_at=T0)
        new = Message("fresh", "t2", "user", "y", "r2", created_at=T0)
        with pytest.raises(ConflictError):
            await store._write_saves([new, msg], ["t2"], 0)
        assert await store.get_messages(["fresh"]) == []
        assert [m.thread_id for m in await store.get_messages(["t1-m0"])] == ["t1"]
        await store.destroy()


async def test_message_into_a_vanished_thread_is_stale_and_leaves_no_orphan(make_store: MakeStore) -> None:
    store = make_store()
    async with store:
        await seed(store, n=1)
        msg = Message("orphan", "gone", "user", "x", "r1", created_at=T0)
        with pytest.raises(StaleStateError):  # the core re-reads and raises NotFoundError
            await store._write_saves([msg], ["gone"], 0)
        await store.save_thread({"id": "gone", "resource_id": "r1"})
        assert (await store.list_messages("gone")).total == 0
        assert (await store.list_messages_by_resource("r1")).total == 1
        await store.destroy()


async def test_concurrent_partial_updates_never_revert_each_other(make_store: MakeStore) -> None:
    namespace = f"conc-{uuid.uuid4().hex[:8]}"
    stores = [make_store(namespace=namespace) for _ in range(4)]
    for store in stores:
        await store.open()
    await seed(stores[0], n=1)

    async def writer(index: int, store: RedisStorage) -> None:
        for step in range(15):
            key = f"w{index}_{step}"
            await store.update_thread("t1", metadata={key: step})
            await store.update_resource("r1", metadata={key: step})
            await store.update_messages([{"id": "t1-m0", "metadata": {key: step}, "content": {key: step}}])
            await store.save_messages(
                [{"id": f"{key}-msg", "thread_id": "t1", "role": "user", "content": key, "metadata": {"w": index}}]
            )

    await asyncio.gather(*(writer(i, s) for i, s in enumerate(stores)))
    expected = {f"w{i}_{s}": s for i in range(4) for s in range(15)}
    thread = await stores[0].get_thread("t1")
    resource = await stores[0].get_resource("r1")
    (message,) = await stores[0].get_messages(["t1-m0"])
    assert thread is not None and resource is not None
    assert {k: v for k, v in thread.metadata.items() if k != "k"} == expected
    assert {k: v for k, v in resource.metadata.items()} == expected
    assert {k: v for k, v in message.metadata.items() if k != "i"} == expected
    assert message.content == expected
    page = await stores[0].list_messages("t1", per_page=False)
    assert page.total == 61
    assert len({m.sequence for m in page.items}) == 61
    for index in range(4):
        assert (await stores[0].list_messages("t1", filter={"metadata": {"w": index}})).total == 15
    for store in stores[1:]:
        await store.close()
    await stores[0].destroy()


async def test_times_across_the_supported_range_order_and_filter_exactly(make_store: MakeStore) -> None:
    store = make_store()
    times = [
        datetime(1900, 1, 1, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
        datetime(2199, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ]
    async with store:
        await store.save_thread({"id": "t", "resource_id": "r", "created_at": times[0], "updated_at": times[-1]})
        thread = await store.get_thread("t")
        assert thread is not None and (thread.created_at, thread.updated_at) == (times[0], times[-1])
        await store.save_messages(
            [
                {"id": f"m{i}", "thread_id": "t", "role": "user", "content": "x", "created_at": at}
                for i, at in reversed(list(enumerate(times)))
            ]
        )
        page = await store.list_messages("t", per_page=False)
        assert [m.created_at for m in page.items] == times
        window = {"date_range": {"start": times[1], "end": times[3], "end_exclusive": True}}
        assert [m.id for m in (await store.list_messages("t", filter=window)).items] == ["m1", "m2"]
        await store.destroy()


async def test_fifteen_mib_message_round_trips_and_merges_intact(make_store: MakeStore) -> None:
    store = make_store()
    big = "é" * (7 * 1024 * 1024) + "|end"  # ~14 MiB of UTF-8
    async with store:
        await store.save_thread({"id": "t", "resource_id": "r"})
        await store.save_messages(
            [{"id": "big", "thread_id": "t", "role": "user", "content": {"format": 2, "content": big}}]
        )
        await store.update_messages([{"id": "big", "content": {"format": 3}}])
        (message,) = await store.get_messages(["big"])
        assert message.content == {"format": 3, "content": big}
        page = await store.list_messages("t", per_page=1)
        assert page.items[0].content == {"format": 3, "content": big}
        await store.destroy()


async def test_huge_offsets_and_windows_reach_lua_as_exact_integers(make_store: MakeStore) -> None:
    store = make_store()
    async with store:
        await seed(store, n=3)
        huge = 2**62 // 8
        for listing in (
            store.list_messages("t1", page=huge, per_page=8),
            store.list_messages(["t1", "t1"], page=huge, per_page=8),
            store.list_messages_by_resource("r1", page=huge, per_page=8),
            store.list_threads(page=huge, per_page=8),
            store.list_threads({"resource_id": "r1", "metadata": {"k": 1}}, page=huge, per_page=8),
        ):
            page = await listing
            assert page.items == [] and page.page == huge
        window = await store.list_messages(
            "t1", per_page=0, include=[{"id": "t1-m1", "with_previous": 2**62, "with_next": 2**62}]
        )
        assert [m.id for m in window.items] == ["t1-m0", "t1-m1", "t1-m2"]
        await store.destroy()


async def test_bursts_of_reads_wait_for_connections_instead_of_failing(make_store: MakeStore) -> None:
    """Hundreds of include windows in one call and dozens of concurrent
    recalls stay within the connection pool (bounded composite reads and a
    blocking pool), instead of raising MaxConnectionsError."""
    store = make_store(max_connections=10)  # the store queues its calls at the pool's size
    async with store:
        await seed(store, n=300)
        page = await store.list_messages("t1", include=[{"id": f"t1-m{i}"} for i in range(250)], per_page=0)
        assert len(page.items) == 250
        includes = [{"id": f"t1-m{i}", "with_previous": 1} for i in range(0, 100, 10)]
        pages = await asyncio.gather(*(store.list_messages("t1", include=includes, per_page=20) for _ in range(40)))
        assert all(len(p.items) == len(pages[0].items) for p in pages)
        await store.destroy()


def test_store_follows_a_new_event_loop(make_store: MakeStore) -> None:
    """Sync frameworks call async code with ``asyncio.run`` per call: each call
    is a new loop, and redis-py connections belong to the loop that made them."""
    store = make_store()

    async def write() -> None:
        await store.save_thread({"id": "t1", "resource_id": "r1"})
        await store.save_messages([Message("m1", "t1", "user", "hi")])

    async def read() -> list[str]:
        return [m.id for m in (await store.list_messages("t1")).items]

    asyncio.run(write())
    assert asyncio.run(read()) == ["m1"]  # a second loop: was "Event loop is closed"
    asyncio.run(store.destroy())


async def test_a_given_client_from_another_loop_is_a_clear_error(redis_target: str) -> None:
    outer: list[Any] = []

    def build() -> None:
        async def make() -> None:
            client = aioredis.Redis.from_url(redis_target, decode_responses=True)
            store = RedisStorage(client=client, prefix=f"loop-{uuid.uuid4().hex}")
            await store.open()
            await client.aclose()  # the caller's to close; the refusal below needs no connection
            outer.append(store)

        asyncio.run(make())

    if "cluster" in redis_target:
        pytest.skip("a standalone client is given here")
    await asyncio.to_thread(build)
    with pytest.raises(ValidationError, match="another event loop"):
        await outer[0].get_thread("t1")


@pytest.mark.parametrize("write", ["save", "patch", "delete"])
async def test_a_standalone_write_over_two_resources_found_stale_writes_neither(
    redis_standalone: str, write: str
) -> None:
    # One script writes both resources' slots; the second slot finds the
    # core's read stale (its message moved to a thread not to bump). The
    # first slot must not have been written: a failed write writes nothing.
    store = RedisStorage.from_url(redis_standalone, namespace=f"dry-{uuid.uuid4().hex[:12]}")
    async with store:
        (a1,) = await seed(store, resource="r1", thread="t1", n=1)
        (b1,) = await seed(store, resource="r2", thread="t2", n=1)
        await store.save_thread({"id": "t3", "resource_id": "r2"})
        await store.update_messages([{"id": b1.id, "thread_id": "t3"}])  # after the "read"
        t1_before = await store.get_thread("t1")
        fresh = Message("fresh", "t1", "user", "new", "r1", created_at=T0)
        if write == "save":
            with pytest.raises(StaleStateError):
                await store._write_saves([fresh, b1], ["t1", "t2"], 0)
        elif write == "patch":
            patches = [MessagePatch(a1.id, metadata={"x": 1}), MessagePatch(b1.id, metadata={"x": 1})]
            with pytest.raises(StaleStateError):
                await store._write_patches(patches, ["t1", "t2"], 0)
        else:
            deleted, stale = await store._delete_in_slots([a1.id, b1.id], ["t1", "t2"], 0)
            assert (deleted, stale) == ([], b1.id)
        assert await store.get_messages([a1.id, "fresh"]) == [a1]
        assert await store.get_thread("t1") == t1_before  # not bumped
        # the new id was never reserved: another resource may take it
        await store.save_messages([{"id": "fresh", "thread_id": "t2", "role": "user", "content": "x"}])
        await store.destroy()


async def test_a_delete_over_two_resources_counts_a_slot_found_stale_once(make_store: MakeStore) -> None:
    # Between the delete's read and its write, another store moves one of
    # the messages: every message is deleted and this call counts each one
    # (on a cluster the fresh slot's delete stands while the stale one is
    # read again; a standalone server reads nothing first).
    namespace = f"count-{uuid.uuid4().hex[:12]}"
    store, other = make_store(namespace=namespace), make_store(namespace=namespace)
    async with store, other:
        (a1,) = await seed(store, resource="r1", thread="t1", n=1)
        (b1,) = await seed(store, resource="r2", thread="t2", n=1)
        await store.save_thread({"id": "t3", "resource_id": "r2"})
        read = store._get_messages

        async def read_then_move(ids: Sequence[str]) -> list[Message]:
            found = await read(ids)
            if len(ids) == 2:
                await other.update_messages([{"id": b1.id, "thread_id": "t3"}])
            return found

        store._get_messages = read_then_move  # type: ignore[method-assign]
        assert await store.delete_messages([a1.id, b1.id]) == 2
        assert await store.get_messages([a1.id, b1.id]) == []
        assert (await store.get_thread("t3")).last_message_at is None  # type: ignore[union-attr]
        await store.destroy()


async def test_scripts_load_again_after_the_server_forgets_them(make_store: MakeStore) -> None:
    # A restart, a failover or SCRIPT FLUSH empties the script cache: the next
    # call reloads its script and runs, on every node.
    store = make_store(clock=ManualClock(T0))
    async with store:
        await seed(store)
        client = store.client
        if isinstance(client, RedisCluster):
            await client.execute_command("SCRIPT FLUSH", target_nodes=RedisCluster.ALL_NODES)
        else:
            await client.execute_command("SCRIPT", "FLUSH")
        page = await store.list_messages("t1", per_page=2, order_by={"field": "created_at", "direction": "DESC"})
        assert [m.id for m in page.items] == ["t1-m4", "t1-m3"] and page.total == 5
        await store.save_messages([{"id": "again", "thread_id": "t1", "role": "user", "content": "x"}])
        assert (await store.list_messages("t1", per_page=0)).total == 6
        await store.destroy()


async def test_every_key_a_store_writes_carries_its_prefix(redis_target: str) -> None:
    """The key prefix shows on the server: every key a store writes (threads,
    messages, records, its store slot) contains it, and destroy removes
    exactly those keys."""
    prefix = f"pfx-{uuid.uuid4().hex[:12]}"
    url = redis_target.replace("redis+cluster", "redis", 1)
    client: aioredis.Redis | RedisCluster = (
        RedisCluster.from_url(url, decode_responses=True)
        if redis_target.startswith("redis+cluster")
        else aioredis.Redis.from_url(url, decode_responses=True)
    )

    async def keys() -> set[str]:
        found: set[str] = set()
        async for key in client.scan_iter(match=f"*{prefix}*", count=1000):
            found.add(key)
        return found

    store = RedisStorage.from_url(redis_target, namespace=prefix)
    try:
        await seed(store)
        await store.update_resource("r1", working_memory="notes")
        written = await keys()
        assert len(written) >= 5, written
        assert all("{" + prefix in key for key in written), written
        await store.destroy()
        assert await keys() == set()
    finally:
        await client.aclose()


async def test_a_store_without_the_cached_location_reads_a_thread_and_its_owner(make_store: MakeStore) -> None:
    """``get_thread_with_owner`` on a store that never saw the thread: its
    plan names no slot it knows, so it is answered through the directory
    (the simple reads: the thread, then its resource's record)."""
    namespace = f"cold-{uuid.uuid4().hex[:8]}"
    writer, reader = make_store(namespace=namespace), make_store(namespace=namespace)
    await writer.open()
    await reader.open()
    await seed(writer, n=1)
    await writer.update_resource("r1", working_memory="wm")
    thread, resource = await reader.get_thread_with_owner("t1")
    assert thread is not None and thread.resource_id == "r1"
    assert resource is not None and resource.working_memory == "wm"
    assert await reader.get_thread_with_owner("t-missing") == (None, None)
    await reader.close()
    await writer.destroy()


async def test_preflight_must_exist_finds_a_written_store_and_refuses_an_empty_prefix(make_store: MakeStore) -> None:
    """``preflight(must_exist=True)`` asks the server (a client of its own
    when the store is not open) whether the prefix holds a store."""
    namespace = f"pre-{uuid.uuid4().hex[:8]}"
    with pytest.raises(ValidationError) as caught:
        await make_store(namespace=namespace).preflight(must_exist=True)
    assert caught.value.field == "prefix"
    store = make_store(namespace=namespace)
    await seed(store, n=1)
    await make_store(namespace=namespace).preflight(must_exist=True)  # not open: a temporary client
    await store.preflight(must_exist=True)  # open: the store's own client
    await store.destroy()

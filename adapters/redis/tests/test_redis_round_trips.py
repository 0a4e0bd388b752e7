"""One script call per read operation (issue 14, item 1), counted by the
server itself (INFO commandstats, summed over a cluster's primaries)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from memory_core import ManualClock, Memory, MemoryConfig, WorkingMemory
from memory_core.plan import ReadPlan
from redis.asyncio.cluster import RedisCluster

from memory_core_redis import RedisStorage

from .test_redis_specific import T0, seed

pytestmark = pytest.mark.anyio

MakeStore = Callable[..., RedisStorage]


async def _calls(store: RedisStorage) -> int:
    """Commands the server ran for clients so far: every call but those
    scripts make inside the server (EVALSHA counts once per script) and
    INFO (this probe)."""
    client = store.client
    infos = (
        list((await client.info("commandstats", target_nodes=RedisCluster.PRIMARIES)).values())
        if isinstance(client, RedisCluster)
        else [await client.info("commandstats")]
    )
    inside = {"cmdstat_hmget", "cmdstat_zrangebylex", "cmdstat_zrevrangebylex", "cmdstat_exists", "cmdstat_hget"}
    inside |= {"cmdstat_zlexcount", "cmdstat_info"}
    return sum(int(stats["calls"]) for info in infos for name, stats in info.items() if name not in inside)


async def test_reads_are_one_script_call(make_store: MakeStore) -> None:
    store = make_store(clock=ManualClock(T0))
    async with Memory(store) as memory:
        await seed(store, n=30)
        await seed(store, thread="t2", n=3)
        config = MemoryConfig(working_memory=WorkingMemory(enabled=True, template="tpl"))

        async def trips(call: Callable[[], object]) -> int:
            before = await _calls(store)
            await call()  # type: ignore[misc]
            return await _calls(store) - before

        result = await memory.recall("t1", "r1", per_page=10, include=[{"id": "t1-m3", "with_previous": 1}])
        assert len(result.messages) == 12 and result.total == 30
        assert await trips(lambda: memory.recall("t1", "r1", per_page=10, include=[{"id": "t1-m3"}])) == 1
        assert await trips(lambda: memory.list_messages("t1", per_page=5)) == 1
        assert await trips(lambda: memory.list_threads({"resource_id": "r1"}, per_page=1)) == 1
        assert await trips(lambda: memory.get_working_memory("t1", "r1", thread_config=config)) == 1
        page = await memory.list_threads({"resource_id": "r1"}, per_page=1, cursor=None)
        assert page.total == 2 and page.has_more and page.next_cursor is not None
        after = await memory.list_threads({"resource_id": "r1"}, per_page=1, cursor=page.next_cursor)
        assert after.total == 2 and not after.has_more and after.items[0].id != page.items[0].id
        await store.destroy()


async def test_a_plan_with_ids_outside_its_slot_falls_back_to_the_default(make_store: MakeStore) -> None:
    store = make_store(clock=ManualClock(T0))
    async with store:
        await seed(store, resource="r1", thread="t1", n=3)
        await seed(store, resource="r2", thread="t2", n=3)
        fresh = make_store(namespace=store.prefix)  # no cached locations
        async with fresh:
            parts = await fresh._read(ReadPlan(threads=("t1", "t2", "gone"), windows=(("t2-m1", 1, 1),)))
            assert set(parts.threads) == {"t1", "t2"}
            assert [m.id for m in parts.windows[0]] == ["t2-m0", "t2-m1", "t2-m2"]
            thread, owner = await fresh.get_thread_with_owner("t2")
            assert thread is not None and thread.resource_id == "r2" and owner is None
        await store.destroy()

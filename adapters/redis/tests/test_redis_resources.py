"""The Redis resource listing (README: "Resource listing"): candidates in the
store slot, checked in their own slots, forgotten only when their
registration is older than the lease, and backfilled once for stores
written before the listing existed. Standalone and cluster."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from memory_core import Thread

from memory_core_redis import RedisStorage, storage

pytestmark = pytest.mark.anyio

MakeStore = Callable[..., RedisStorage]


async def _candidates(store: RedisStorage) -> list[str]:
    return list(await store.client.zrange(store._keys.store + "rs", 0, -1))


async def test_a_registration_without_its_write_is_not_listed(make_store: MakeStore) -> None:
    """A write that died after registering its resource (step one) leaves a
    candidate the listing checks and skips; a fresh one is kept."""
    async with make_store() as store:
        await store.save_resource({"id": "kept"})
        await store._run("register", store._keys.store, ["dead-write"])
        assert (await store.list_resource_ids()).items == ["kept"]
        assert await _candidates(store) == ["dead-write", "kept"]  # younger than the lease: kept
        await store.destroy()


async def test_empty_candidates_older_than_the_lease_are_forgotten(make_store: MakeStore) -> None:
    async with make_store() as store:
        for rid in ("a", "b", "c", "d"):
            await store.save_resource({"id": rid})
        await store.save_thread(Thread("t1", "c"))
        for rid in ("a", "b", "c"):
            await store.delete_resource(rid)
        await store.update_resource("b", working_memory="back")  # registered again, now
        stamps = store._keys.store + "rsa"
        await store.client.hset(stamps, "a", "1")  # registered long before the lease
        await store.client.hset(stamps, "c", "1")
        assert (await store.list_resource_ids()).items == ["b", "d"]
        assert await _candidates(store) == ["b", "d"]
        await store.destroy()


async def test_a_re_registration_keeps_the_candidate(make_store: MakeStore) -> None:
    """forget.lua drops a candidate only if its stamp is still the one the
    listing saw: a write registering meanwhile wins."""
    async with make_store() as store:
        await store._run("register", store._keys.store, ["r1"])
        stamps = store._keys.store + "rsa"
        await store.client.hset(stamps, "r1", "1")
        await store.update_resource("r1", working_memory="wm")  # a new stamp
        await store._run("forget", store._keys.store, [1, "r1", "1"])
        assert await _candidates(store) == ["r1"]
        await store._run("forget", store._keys.store, [1, "r1", await store.client.hget(stamps, "r1")])
        assert await _candidates(store) == ["r1"], "a stamp younger than the lease is never forgotten"
        await store.destroy()


async def test_listing_crosses_its_chunks(make_store: MakeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage, "_LISTING_CHUNK", 3)
    async with make_store() as store:
        wanted = [f"r{i:02}" for i in range(11)]
        for index, rid in enumerate(wanted):
            await store.save_resource({"id": rid})
            await store._run("register", store._keys.store, [f"{rid}-dead"])  # an empty candidate after each
            if index % 2:
                await store.save_thread(Thread(f"t{index}", rid))
        assert (await store.list_resource_ids(per_page=False)).items == wanted
        for per_page in (1, 2, 3, 4, 7):
            seen: list[str] = []
            page = await store.list_resource_ids(per_page=per_page)
            seen += page.items
            while page.next_cursor is not None:
                page = await store.list_resource_ids(per_page=per_page, cursor=page.next_cursor)
                seen += page.items
            assert seen == wanted, per_page
        await store.destroy()


async def test_a_store_written_before_the_listing_is_backfilled_once(make_store: MakeStore) -> None:
    first = make_store()
    async with first:
        await first.save_resource({"id": "record-only"})
        await first.save_resource({"id": "odd{}%:"})
        await first.save_thread(Thread("t1", "threads-only"))
        await first.save_thread(Thread("t2", "both"))
        await first.update_resource("both", working_memory="wm")
        # What an older version left: no index, stamps or mark.
        base = first._keys.store
        await first.client.delete(base + "rs", base + "rsa", base + "rsv")
        assert (await first.list_resource_ids()).items == []
    again = make_store(namespace=first.prefix)
    async with again:
        listed = (await again.list_resource_ids()).items
        assert listed == ["both", "odd{}%:", "record-only", "threads-only"]
        assert await again.client.get(again._keys.store + "rsv") == "1"
        await again.destroy()


async def test_a_new_store_is_marked_without_a_scan(make_store: MakeStore) -> None:
    async with make_store() as store:
        assert await store.client.get(store._keys.store + "rsv") == "1"
        assert await _candidates(store) == []
        await store.destroy()

"""Erasure leaves no copy of the erased ids (issue 25a, R-ERASE).

A resource id is often an email or a user id: after ``delete_resource`` no
key name and no value anywhere in the store may hold the resource id, its
thread ids (live or deleted earlier) or its message ids, at once, not
after a tombstone's expiry or a later listing call. The test SCANs every
key of the store and dumps every value, on every target (standalone,
cluster, REDIS_URL's server).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from memory_core import ManualClock

from memory_core_redis import RedisStorage

pytestmark = pytest.mark.anyio

T0 = datetime(2025, 1, 1, tzinfo=UTC)
MakeStore = Callable[..., RedisStorage]

ERASED = "erase.me@example.com"
THREADS = ["erased-thread-alpha", "erased-thread-beta", "erased-thread-gone"]
MESSAGES = [f"erased-msg-{t[-4:]}-{i}" for t in THREADS for i in range(3)]
KEPT = "kept-user@example.com"


async def _dump(store: RedisStorage) -> list[str]:
    """Every key name and every value (members, fields, scores) of the store."""
    client = store.client
    out: list[str] = []
    async for key in client.scan_iter(match=store._keys.pattern, count=1000):
        out.append(key)
        kind = await client.type(key)
        value: Any
        if kind == "string":
            value = [await client.get(key)]
        elif kind == "hash":
            value = [part for pair in (await client.hgetall(key)).items() for part in pair]
        elif kind == "zset":
            value = [str(part) for pair in await client.zrange(key, 0, -1, withscores=True) for part in pair]
        elif kind == "set":
            value = list(await client.smembers(key))
        elif kind == "list":
            value = await client.lrange(key, 0, -1)
        else:
            value = [f"<{kind}>"]
        out += (str(v) for v in value)
    return out


async def _fill(store: RedisStorage, resource_id: str, thread_ids: list[str], message_ids: list[str]) -> None:
    await store.update_resource(resource_id, working_memory=f"notes of {resource_id}", metadata={"plan": "pro"})
    for index, tid in enumerate(thread_ids):
        await store.save_thread({"id": tid, "resource_id": resource_id, "metadata": {"owner": resource_id}})
        mine = [mid for mid in message_ids if mid.startswith(f"erased-msg-{tid[-4:]}-")] or [f"{tid}-m"]
        await store.save_messages(
            [
                {
                    "id": mid,
                    "thread_id": tid,
                    "role": "user",
                    "content": f"hi from {resource_id}",
                    "created_at": T0 + timedelta(seconds=10 * index + k),
                    "metadata": {"who": resource_id},
                }
                for k, mid in enumerate(mine)
            ]
        )


async def test_erasure_leaves_no_trace_of_the_resource_threads_or_messages(make_store: MakeStore) -> None:
    store = make_store(clock=ManualClock(T0))
    async with store:
        await _fill(store, ERASED, THREADS, MESSAGES)
        await _fill(store, KEPT, ["kept-thread"], [])
        await store.delete_messages([MESSAGES[0]])
        await store.delete_thread(THREADS[-1])  # deleted before the erasure: its tombstones too
        assert ERASED in (await store.list_resource_ids()).items
        await store.list_threads(per_page=False)  # the store-wide index, rolled forward

        removed = await store.delete_resource(ERASED)
        assert sorted(removed.thread_ids) == sorted(THREADS[:-1])

        dumped = await _dump(store)
        for secret in [ERASED, *THREADS, *MESSAGES]:
            leaks = [text for text in dumped if secret in text]
            assert not leaks, f"{secret!r} is still in the store after its erasure: {leaks[:5]}"
        assert any(KEPT in text for text in dumped)  # the dump does see ids
        assert (await store.list_resource_ids()).items == [KEPT]
        # The erased ids are free again: a new thread of that id starts empty.
        await store.save_thread({"id": THREADS[0], "resource_id": ERASED})
        assert (await store.list_messages(THREADS[0], per_page=False)).items == []
        await store.destroy()

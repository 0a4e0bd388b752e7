"""Crash safety of the multi-slot writes (README.md, "Crash safety").

A client dies before each step of each write: it closes its real
connections to the server and fails from then on (no mock of the server).
A fresh client then checks what any later reader or writer sees: per
resource and store-wide listings agree, totals equal the items, cursor
walks in every thread order neither repeat nor skip, retrying the write
succeeds, and every id that holds no record can be used by another resource.
Also: chunk limits of the deletes, at sizes that cross them.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, cast

import pytest
from memory_core import BackendError
from memory_core.clock import to_us
from memory_core.errors import ConflictError, NotFoundError
from redis import exceptions as redis_errors

from memory_core_redis import RedisStorage
from memory_core_redis._keys import message_member
from memory_core_redis._scripts import INTENT_LEASE_MS
from memory_core_redis.storage import RELEASE_CHUNK

pytestmark = pytest.mark.anyio
T = TypeVar("T")

T0 = datetime(2025, 1, 1, tzinfo=UTC)
WRITE_STEPS = frozenset(
    {"claim", "apply", "put_thread", "patch_thread", "save_messages", "patch_messages", "delete_messages"}
    | {"delete_thread", "solo"}
)
"""The scripts of a write's steps (reads before a write are not steps)."""
RESOURCE_STEPS = frozenset({"register", "put_resource", "patch_resource", "solo_record"})
"""The steps of a resource record write: on a cluster its registration, then
the record; on a standalone server one script doing both."""


class DroppingStore(RedisStorage):
    """A store whose client closes its real connections just before its
    ``drop_at``-th write step (0: never) and fails every call after it, as
    a killed process would; ``steps`` records the write steps run."""

    drop_at = 0
    watched = WRITE_STEPS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.steps: list[str] = []
        self.dead = False

    async def _run(self, name: str, base: str, args: list[Any]) -> Any:
        if name in self.watched and not self.dead:
            self.steps.append(name)
            if len(self.steps) == self.drop_at:
                self.dead = True
                await self._client.aclose()
        if self.dead:
            raise redis_errors.ConnectionError("connection dropped")
        return await super()._run(name, base, args)

    async def _gather(self, calls: Iterable[Awaitable[T]]) -> list[T]:
        # Every step ends before the write fails, as a killed process's steps
        # end with it: a step in flight when another closed the client would
        # reconnect it (redis-py retries) after the store is closed, and the
        # checks after the write would race it.
        results = await asyncio.gather(*calls, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return cast(list[T], results)


Op = Callable[[RedisStorage], Awaitable[Any]]


def message(mid: str, thread: str, second: int) -> dict[str, Any]:
    created = T0 + timedelta(seconds=second)
    return {"id": mid, "thread_id": thread, "role": "user", "content": mid, "created_at": created}


async def seed(store: RedisStorage) -> None:
    """r1: t1 (3 messages), t2 (2); r2: t3 (2), t4 (none)."""
    for tid, rid, n in (("t1", "r1", 3), ("t2", "r1", 2), ("t3", "r2", 2), ("t4", "r2", 0)):
        await store.save_thread({"id": tid, "resource_id": rid, "metadata": {"k": tid}})
        if n:
            await store.save_messages([message(f"{tid}-m{i}", tid, i) for i in range(n)])


OPS: dict[str, Op] = {
    "create_thread": lambda s: s.save_thread({"id": "new", "resource_id": "r2", "title": "n"}),
    "replace_thread": lambda s: s.save_thread({"id": "t2", "resource_id": "r1", "title": "x"}),
    "save_messages_two_resources": lambda s: s.save_messages([message("n1", "t1", 50), message("n2", "t3", 51)]),
    "update_thread": lambda s: s.update_thread("t3", title="y", metadata={"k": "z"}),
    "update_messages_move": lambda s: s.update_messages([{"id": "t1-m0", "thread_id": "t2", "content": "moved"}]),
    "delete_messages": lambda s: s.delete_messages(["t1-m1", "t3-m0"]),
    "delete_thread": lambda s: s.delete_thread("t1"),
    "delete_resource": lambda s: s.delete_resource("r2"),
}
THREAD_IDS = ("t1", "t2", "t3", "t4", "new")
MESSAGE_IDS = ("t1-m0", "t1-m1", "t1-m2", "t2-m0", "t2-m1", "t3-m0", "t3-m1", "n1", "n2")


async def walk(store: RedisStorage, field: str, direction: str) -> list[str]:
    """Every thread id of a store-wide cursor walk, two per page; checks
    each page's total against the walk's length."""
    ids: list[str] = []
    totals: set[int] = set()
    cursor = None
    for _ in range(20):
        page = await store.list_threads(per_page=2, order_by={"field": field, "direction": direction}, cursor=cursor)
        ids += (t.id for t in page.items)
        totals.add(page.counted_total)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert cursor is None, f"{field} {direction}: the walk never ends: {ids}"
    assert len(ids) == len(set(ids)), f"{field} {direction} repeats: {ids}"
    assert totals == {len(ids)}, f"{field} {direction}: totals {totals} for {ids}"
    return ids


async def check_listed(store: RedisStorage, owners: set[str]) -> None:
    """The resource listing (R-RESOURCES) holds exactly the resources with
    threads (``owners``) or a record, by page and by cursor walk."""
    records = {rid for rid in ("r1", "r2", "r3") if await store.get_resource(rid) is not None}
    listed = (await store.list_resource_ids(per_page=False)).items
    assert listed == sorted(owners | records), (listed, owners, records)
    walked: list[str] = []
    page = await store.list_resource_ids(per_page=1)
    walked += page.items
    while page.next_cursor is not None:
        page = await store.list_resource_ids(per_page=1, cursor=page.next_cursor)
        walked += page.items
    assert walked == listed


async def check_consistent(store: RedisStorage) -> None:
    """What every later reader must see: one truth in every listing."""
    by_resource: dict[str, str] = {}
    for rid in ("r1", "r2", "r3"):
        page = await store.list_threads({"resource_id": rid})
        assert page.total == len(page.items)
        by_resource.update((t.id, rid) for t in page.items)
        messages = await store.list_messages_by_resource(rid, per_page=100)
        assert messages.total == len(messages.items)
        for thread in page.items:
            own = await store.list_messages(thread.id, per_page=100)
            assert own.total == len(own.items)
            assert {m.id for m in own.items} <= {m.id for m in messages.items}
    for field in ("created_at", "updated_at", "last_message_at"):
        for direction in ("ASC", "DESC"):
            ids = await walk(store, field, direction)
            assert sorted(ids) == sorted(by_resource), f"{field} {direction}: {ids} vs {sorted(by_resource)}"
    for tid in THREAD_IDS:
        found = await store.get_thread(tid)
        assert (found.resource_id if found else None) == by_resource.get(tid)
    await check_listed(store, set(by_resource.values()))


async def age_intents(store: RedisStorage) -> None:
    """Make every pending intent older than the lease (time passing)."""
    for suffix in ("pt", "pm"):
        key = store._keys.store + suffix
        for member, score in await store.client.zrange(key, 0, -1, withscores=True):
            await store.client.zadd(key, {member: score - 2 * INTENT_LEASE_MS * 1000}, xx=True)


async def check_ids_free(store: RedisStorage) -> None:
    """Every thread or message id without a record is free for another
    resource (r3): no id stays reserved by a write that died."""
    await store.save_thread({"id": "home", "resource_id": "r3"})
    for tid in THREAD_IDS:
        if await store.get_thread(tid) is None:
            await store.save_thread({"id": tid, "resource_id": "r3"})
    free = [mid for mid in MESSAGE_IDS if not await store.get_messages([mid])]
    if free:
        await store.save_messages([message(mid, "home", 90) for mid in free])
    assert {m.resource_id for m in await store.get_messages(free)} <= {"r3"}
    assert len(await store.get_messages(free)) == len(free)


async def run_dropped(
    target: str, op: Op, drop_at: int, watched: frozenset[str] = WRITE_STEPS
) -> tuple[str, list[str]]:
    """Seed a fresh namespace, run ``op`` on a client dropping before step
    ``drop_at`` (of the scripts in ``watched``); the namespace and the steps
    it ran."""
    namespace = f"crash-{uuid.uuid4().hex[:10]}"
    async with RedisStorage.from_url(target, namespace=namespace) as setup:
        await seed(setup)
    dropping = DroppingStore.from_url(target, namespace=namespace)
    assert isinstance(dropping, DroppingStore)
    dropping.drop_at = drop_at
    dropping.watched = watched
    async with dropping:  # closes its client, and again if a step reconnected it
        if drop_at:
            with pytest.raises(BackendError):
                await op(dropping)
        else:
            await op(dropping)
    return namespace, dropping.steps


@pytest.mark.parametrize("name", list(OPS))
async def test_a_write_dropped_before_any_step_leaves_a_consistent_store(redis_target: str, name: str) -> None:
    op = OPS[name]
    namespace, steps = await run_dropped(redis_target, op, 0)
    async with RedisStorage.from_url(redis_target, namespace=namespace) as store:
        await check_consistent(store)
        await store.destroy()
    # a standalone server runs every write as one script; else claim, write(s), apply
    assert steps == ["solo"] or (steps[0] == "claim" and steps[-1] == "apply" and len(steps) >= 3)
    for drop_at in range(1, len(steps) + 1):
        namespace, _ = await run_dropped(redis_target, op, drop_at)
        async with RedisStorage.from_url(redis_target, namespace=namespace) as store:
            try:
                await check_consistent(store)
                await op(store)  # the retry
                await check_consistent(store)
                await age_intents(store)
                await check_ids_free(store)
                await check_consistent(store)
                assert await store.client.zcard(store._keys.store + "pt") == 0
            except AssertionError as error:
                raise AssertionError(f"{name}, dropped before step {drop_at} ({steps[drop_at - 1]})") from error
            finally:
                await store.destroy()


async def test_ids_of_a_save_dropped_after_its_claim_are_free_once_the_lease_ends(redis_cluster: str) -> None:
    # (a standalone server saves in one script: there is no "after the claim")
    namespace, steps = await run_dropped(redis_cluster, OPS["save_messages_two_resources"], 2)
    assert steps == ["claim", "save_messages"]
    async with RedisStorage.from_url(redis_cluster, namespace=namespace) as store:
        await store.save_thread({"id": "home", "resource_id": "r3"})
        # within the lease the write may still be in flight: the ids stay held
        with pytest.raises(ConflictError):
            await store.save_messages([message("n1", "home", 1)])
        await age_intents(store)
        await store.save_messages([message("n1", "home", 1), message("n2", "home", 2)])
        assert [m.resource_id for m in await store.get_messages(["n1", "n2"])] == ["r3", "r3"]
        await check_consistent(store)
        await store.destroy()


async def test_a_thread_deleted_before_its_last_step_is_no_ghost_and_its_id_is_free(redis_cluster: str) -> None:
    # (a standalone server deletes in one script: there is no "before its last step")
    namespace, steps = await run_dropped(redis_cluster, OPS["delete_thread"], 3)
    assert steps == ["claim", "delete_thread", "apply"]
    async with RedisStorage.from_url(redis_cluster, namespace=namespace) as store:
        page = await store.list_threads(per_page=10)
        assert "t1" not in [t.id for t in page.items] and page.total == len(page.items) == 3
        await store.delete_thread("t1")  # the retry finds nothing and succeeds
        await store.save_thread({"id": "t1", "resource_id": "r2"})
        await store.save_messages([message("t1-m0", "t1", 1)])
        assert (await store.list_messages_by_resource("r2")).total == 3
        await store.destroy()


async def test_deleting_a_thread_longer_than_a_zrem_chunk_leaves_the_resource_index_exact(redis_target: str) -> None:
    async with RedisStorage.from_url(redis_target, namespace=f"chunk-{uuid.uuid4().hex[:10]}") as store:
        await store.save_thread({"id": "long", "resource_id": "r"})
        await store.save_thread({"id": "short", "resource_id": "r"})
        await store.save_messages([message(f"l{i}", "long", i) for i in range(600)])
        await store.save_messages([message("s0", "short", 1)])
        await store.delete_thread("long")
        page = await store.list_messages_by_resource("r")
        assert page.total == 1 and [m.id for m in page.items] == ["s0"]
        await store.destroy()


@pytest.mark.parametrize("kind", ["delete_thread", "delete_messages"])
async def test_deleting_more_messages_than_a_release_chunk_frees_every_id(redis_target: str, kind: str) -> None:
    n = RELEASE_CHUNK + 1
    async with RedisStorage.from_url(redis_target, namespace=f"chunk-{uuid.uuid4().hex[:10]}") as store:
        await store.save_thread({"id": "big", "resource_id": "a"})
        for start in range(0, n, 1000):
            await store.save_messages([message(f"b{i}", "big", i) for i in range(start, min(n, start + 1000))])
        if kind == "delete_thread":
            await store.delete_thread("big")
        else:
            await store.delete_messages([f"b{i}" for i in range(n)])
        assert await store.client.hlen(store._keys.store + "msg") == 0
        await store.save_thread({"id": "other", "resource_id": "b"})
        await store.save_messages([message(f"b{i}", "other", i) for i in (0, n // 2, n - 1)])
        assert (await store.list_messages_by_resource("b")).total == 3
        await store.destroy()


async def test_standalone_saves_in_one_script_and_a_cluster_in_three_steps(
    redis_standalone: str, redis_cluster: str
) -> None:
    save = OPS["save_messages_two_resources"]
    for target, expected in (
        (redis_standalone, ["solo"]),
        (redis_cluster, ["claim", "save_messages", "save_messages", "apply"]),
    ):
        namespace, steps = await run_dropped(target, save, 0)
        assert steps == expected
        async with RedisStorage.from_url(target, namespace=namespace) as store:
            stored = await store.get_messages(["n1", "n2"])
            assert [(m.resource_id, m.thread_id) for m in stored] == [("r1", "t1"), ("r2", "t3")]
            assert stored[0].sequence is not None and stored[1].sequence == stored[0].sequence + 1
            for m in stored:  # Lua makes the index member exactly as _keys.message_member does
                assert m.resource_id is not None and m.created_at is not None and m.sequence is not None
                member = await store.client.hget(store._slot(m.resource_id) + "m:" + m.id, "k")
                assert member == message_member(to_us(m.created_at), m.sequence, m.id)
            await check_consistent(store)
            await store.destroy()


@pytest.mark.parametrize("write", ["update_thread", "delete_thread"])
async def test_a_standalone_write_settles_a_deletion_that_never_reached_the_store_slot(
    redis_standalone: str, write: str
) -> None:
    # what a three-step delete_thread (an earlier version's, on this server)
    # that died before its apply leaves, its intent long gone: the thread is
    # deleted in its slot, the store slot still lists it
    async with RedisStorage.from_url(redis_standalone, namespace=f"settle-{uuid.uuid4().hex[:10]}") as store:
        await seed(store)
        await store._run("delete_thread", store._slot("r1"), ["t1", 60])
        ghost = await store.list_threads(per_page=10)
        assert ghost.total == 4 and len(ghost.items) == 3
        if write == "update_thread":
            with pytest.raises(NotFoundError):
                await store.update_thread("t1", title="x")
        else:
            await store.delete_thread("t1")
        await check_consistent(store)  # the one script applied the slot's tombstone
        await store.destroy()


RESOURCE_OPS: dict[str, Op] = {
    "save_resource": lambda s: s.save_resource({"id": "r3", "working_memory": "w"}),
    "update_resource": lambda s: s.update_resource("r3", metadata={"k": 1}),
    "swap_working_memory": lambda s: s.swap_working_memory("r3", None, "w"),
}


@pytest.mark.parametrize("name", list(RESOURCE_OPS))
async def test_a_resource_write_dropped_after_its_registration_is_not_listed(redis_target: str, name: str) -> None:
    """Registration first, then the record: a write that dies in between
    leaves a candidate the listing skips, never a record it misses."""
    op = RESOURCE_OPS[name]
    _, steps = await run_dropped(redis_target, op, 0, RESOURCE_STEPS)
    assert steps == ["solo_record"] or (steps[0] == "register" and len(steps) == 2), steps
    for drop_at in range(1, len(steps) + 1):
        namespace, _ = await run_dropped(redis_target, op, drop_at, RESOURCE_STEPS)
        async with RedisStorage.from_url(redis_target, namespace=namespace) as store:
            try:
                await check_consistent(store)
                assert "r3" not in (await store.list_resource_ids()).items
                await op(store)  # the retry
                await check_consistent(store)
                assert "r3" in (await store.list_resource_ids()).items
            finally:
                await store.destroy()

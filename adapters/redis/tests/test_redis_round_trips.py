"""Round trips per operation (issue 14): one script call per read
operation, counted by the server itself (INFO commandstats, summed over a
cluster's primaries); and the commands each write sends, counted where
they are sent (the server's counters also count the commands a write
script runs inside). On a standalone server every write primitive is one
script call; on a cluster a write touching both kinds of slot takes three
(claim, write, apply: README.md, "Crash safety")."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from memory_core import ManualClock, Memory, MemoryConfig, WorkingMemory
from memory_core.clock import to_us
from memory_core.errors import ConflictError, NotFoundError, OwnershipError, StaleStateError
from memory_core.plan import ReadPlan
from redis.asyncio.cluster import RedisCluster

from memory_core_redis import RedisStorage, _scripts
from memory_core_redis._patient import call_patiently

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
    inside |= {"cmdstat_zlexcount", "cmdstat_zcard", "cmdstat_zrange", "cmdstat_info"}
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


def _sent(store: RedisStorage, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on, the name of every command the store's client sends:
    a long script's EVALSHA goes on a connection of the client's own
    (``memory_core_redis._patient``, counted where the scripts call it);
    redis-py routes every other command, EVALSHA included, through
    ``execute_command``, except the cluster client's multi-key commands
    (``DEL``), which it sends as a pipeline per slot (counted ``PIPELINE``:
    the adapter's have one key, so one round trip)."""
    client = store.client
    sent: list[str] = []
    send, pipeline = client.execute_command, client.pipeline

    async def counting(*args: Any, **options: Any) -> Any:
        sent.append(str(args[0]).upper())
        return await send(*args, **options)

    def counted_pipeline(*args: Any, **options: Any) -> Any:
        pipe = pipeline(*args, **options)
        execute = pipe.execute

        async def counted_execute(*a: Any, **o: Any) -> Any:
            sent.append("PIPELINE")
            return await execute(*a, **o)

        pipe.execute = counted_execute
        return pipe

    async def counted_patiently(patient_client: Any, key: str, *args: Any) -> Any:
        sent.append(str(args[0]).upper())
        return await call_patiently(patient_client, key, *args)

    client.execute_command = counting
    client.pipeline = counted_pipeline
    monkeypatch.setattr(_scripts, "call_patiently", counted_patiently)
    return sent


THREAD_WM = {"enabled": True, "scope": "thread"}
RESOURCE_WM = {"enabled": True, "scope": "resource"}

WRITES: dict[str, tuple[Callable[[RedisStorage, Memory], Awaitable[object]], int, int]] = {
    # operation: (call, standalone round trips, cluster round trips), with
    # the thread and message locations cached (the store wrote them)
    "save one message": (
        lambda s, _: s.save_messages([{"id": "new", "thread_id": "t1", "role": "user", "content": "x"}]),
        1,  # the thread's location is cached and the id new: no read first
        5,
    ),
    "update_messages": (
        lambda s, _: s.update_messages([{"id": "t1-m1", "content": "y"}]),
        2,  # the core's read, then one script that returns what it wrote
        4,
    ),
    "delete_messages": (
        lambda s, _: s.delete_messages(["t1-m2"]),
        1,  # the directory and the slot name the message's thread: no read first
        4,  # the core's read, then claim (intents for the thread), delete, apply
    ),
    "delete_messages (two threads, an unknown id)": (
        lambda s, _: s.delete_messages(["t1-m0", "t2-m0", "gone"]),
        1,
        5,  # the read asks the directory where "gone" is first
    ),
    "update_thread": (lambda s, _: s.update_thread("t1", title="n", metadata={"k": 2}), 1, 3),
    "save_thread (replace)": (
        lambda s, _: s.save_thread({"id": "t2", "resource_id": "r1"}),
        1,  # the claim checks the owner, the snapshot carries last_message_at: no read first
        3,
    ),
    "save_thread (new)": (lambda s, _: s.save_thread({"id": "t8", "resource_id": "r1"}), 1, 3),
    "insert_thread": (lambda s, _: s.insert_thread({"id": "t3", "resource_id": "r1"}), 1, 3),
    "swap_thread_working_memory": (lambda s, _: s.swap_thread_working_memory("t1", None, "wm"), 1, 3),
    "update_working_memory (thread scope)": (
        lambda _, m: m.update_working_memory("t1", "w2", thread_config={"working_memory": THREAD_WM}),
        1,  # no owner to check: the patch itself finds the thread or reports it missing
        3,
    ),
    "update_working_memory (resource scope, by resource id)": (
        lambda _, m: m.update_working_memory(None, "w4", "r1", thread_config={"working_memory": RESOURCE_WM}),
        1,  # nothing to check: one script
        2,  # the registration for the resource listing, the record
    ),
    "update_working_memory (resource scope)": (
        lambda _, m: m.update_working_memory("t1", "w3", thread_config={"working_memory": RESOURCE_WM}),
        2,  # the core's read of the value, then one script
        3,  # the read, the registration for the resource listing, the record
    ),
    "update_resource": (lambda s, _: s.update_resource("r1", metadata={"k": 1}), 1, 2),
    "save_resource": (lambda s, _: s.save_resource({"id": "r9", "working_memory": "w"}), 1, 2),
    "delete_thread": (lambda s, _: s.delete_thread("t2"), 1, 3),
    "delete_resource (2 threads)": (
        lambda s, _: s.delete_resource("r1"),
        3,  # the erasure, then the lineage sweep's listing of threads cloned from r1 (lineage.forget_resource)
        12,  # the thread listing, 3 per thread, the record, the tombstones (erase.lua), the listing (unlist.lua),
        # then the lineage sweep's listing
    ),
}


@pytest.mark.parametrize("name", list(WRITES))
async def test_write_round_trips(make_store: MakeStore, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    call, standalone, cluster = WRITES[name]
    store = make_store(clock=ManualClock(T0))
    async with Memory(store) as memory:
        await seed(store, n=3)
        await seed(store, thread="t2", n=1)
        sent = _sent(store, monkeypatch)
        await call(store, memory)
        expected = cluster if isinstance(store.client, RedisCluster) else standalone
        assert len(sent) == expected, sent
        await store.destroy()


async def test_a_standalone_write_reports_what_it_found(redis_standalone: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # one script each, and still the facts of a failed check (nothing written)
    store = RedisStorage.from_url(redis_standalone, namespace=f"one-{uuid.uuid4().hex[:12]}")
    async with store:
        await seed(store, n=1)
        await seed(store, resource="r2", thread="t9", n=0)
        before = await store.get_thread("t1")
        assert before is not None
        sent = _sent(store, monkeypatch)

        async def sends(call: Awaitable[object], expected: object = None) -> int:
            """Commands ``call`` sent (all script calls), checking its result."""
            sent.clear()
            assert await call == expected
            assert set(sent) == {"EVALSHA"}
            return len(sent)

        missing = store._patch_thread("gone", "x", None, to_us(T0))
        assert await sends(missing, None) == 1  # no such thread
        mismatch = store._swap_thread_memory("t1", "not-there", "v", to_us(T0))
        assert await sends(mismatch, False) == 1  # the condition does not hold
        with pytest.raises(StaleStateError):  # exists
            await sends(store._insert_thread(before))
        assert len(sent) == 1
        # the id is held by another resource: refused, nothing written, and the
        # holder's slot is asked whether a write died there (README)
        assert await sends(store._save_thread_checked(replace(before, id="t9")), None) == 3
        # the directory knows no such message: nothing to write
        assert await sends(store._delete_found(["gone"], to_us(T0)), 0) == 1
        assert await store.get_thread("t1") == before
        assert (await store.get_thread("t9")).resource_id == "r2"  # type: ignore[union-attr]
        await store.destroy()


async def test_a_save_on_a_wrong_guess_reads_and_decides_again(
    redis_standalone: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the store guesses from its cache (thread t1 in r1, the message ids
    # new); another store changed all of that meanwhile
    namespace = f"guess-{uuid.uuid4().hex[:12]}"
    async with (
        RedisStorage.from_url(redis_standalone, namespace=namespace, clock=ManualClock(T0)) as store,
        RedisStorage.from_url(redis_standalone, namespace=namespace) as other,
    ):
        await seed(store, n=1)
        await seed(store, thread="t2", n=0)
        first = await other.save_messages([{"id": "x", "thread_id": "t1", "role": "user", "content": "a"}])
        sent = _sent(store, monkeypatch)
        again = await store.save_messages([{"id": "x", "thread_id": "t2", "role": "user", "content": "b"}])
        assert len(sent) > 1  # the script refused the guess "x is new", then the core read
        assert (again[0].created_at, again[0].sequence) == (first[0].created_at, first[0].sequence)
        assert [m.thread_id for m in await other.get_messages(["x"])] == ["t2"]  # moved, not copied
        assert (await other.list_messages("t1")).total == 1
        await other.delete_thread("t1")
        await other.save_thread({"id": "t1", "resource_id": "r2"})
        with pytest.raises(OwnershipError):  # the real owner, not the cached one
            await store.save_messages(
                [{"id": "y", "thread_id": "t1", "resource_id": "r1", "role": "user", "content": "c"}]
            )
        await other.delete_thread("t1")
        with pytest.raises(NotFoundError):
            await store.save_messages([{"id": "z", "thread_id": "t1", "role": "user", "content": "d"}])
        assert await store.get_messages(["y", "z"]) == []
        await store.destroy()


async def test_delete_and_thread_save_need_no_cached_location(
    make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that never saw the ids (nothing cached) deletes messages and
    replaces a thread in one script call on a standalone server: the script
    asks the directory. A thread id of another resource writes nothing and
    is a ConflictError (the holder's slot is asked whether a write died
    there, README: "Crash safety")."""
    store = make_store(clock=ManualClock(T0))
    async with store:
        await seed(store, n=3)
        await seed(store, resource="r2", thread="t9", n=1)
        fresh = make_store(namespace=store.prefix, clock=ManualClock(T0 + timedelta(hours=1)))
        async with fresh:
            standalone = not isinstance(fresh.client, RedisCluster)
            before = await store.get_thread("t1")
            assert before is not None
            sent = _sent(fresh, monkeypatch)
            assert await fresh.delete_messages(["t1-m2", "t9-m0", "gone"]) == 2
            # cluster: locate, a read in each slot, claim, a delete in each slot, apply
            assert len(sent) == (1 if standalone else 7), sent
            t1, t9 = await fresh.get_thread("t1"), await fresh.get_thread("t9")
            assert t1 is not None and t9 is not None and before.last_message_at is not None
            assert t1.updated_at == t9.updated_at == T0 + timedelta(hours=1)
            assert t1.last_message_at == before.last_message_at - timedelta(seconds=1) and t9.last_message_at is None
            sent.clear()
            saved = await fresh.save_thread({"id": "t1", "resource_id": "r1", "title": "new"})
            assert saved.last_message_at == t1.last_message_at
            assert len(sent) == (1 if standalone else 3), sent
            sent.clear()
            with pytest.raises(ConflictError):
                await fresh.save_thread({"id": "t9", "resource_id": "r1", "title": "theirs"})
            assert len(sent) == 3, sent  # the write (its claim), then the holder's state, applied
            assert await fresh.get_thread("t9") == t9
        await store.destroy()

"""Schema creation, versioning and many openers on one new schema."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import asyncpg
import pytest
from memory_core import BackendError, Message, Thread

from memory_core_postgres import PostgresStorage
from memory_core_postgres import _schema as schema_module
from memory_core_postgres._schema import MIGRATIONS, SCHEMA_VERSION


async def _versions(store: PostgresStorage) -> list[int]:
    rows = await store.pool.fetch("SELECT version FROM schema_version ORDER BY version")
    return [row[0] for row in rows]


@pytest.mark.anyio
async def test_open_twice_applies_each_migration_once(make_store: Callable[..., PostgresStorage]) -> None:
    first = make_store()
    await first.open()
    try:
        for n in range(3):
            again = PostgresStorage(first.settings.dsn, schema=first.schema)
            await again.open()
            await again.open()  # idempotent on one instance too
            await again.save_thread(Thread(f"t{n}", "r1"))
            await again.close()
        assert await _versions(first) == [number for number, _ in MIGRATIONS]
        tables = {
            row[0]
            for row in await first.pool.fetch("SELECT tablename FROM pg_tables WHERE schemaname = $1", first.schema)
        }
        assert tables == {"threads", "messages", "resources", "resource_counters", "schema_version"}
        assert (await first.list_threads(per_page=False)).total == 3
    finally:
        await first.destroy()


@pytest.mark.anyio
async def test_c12_many_openers_and_writers_on_one_new_schema(make_store: Callable[..., PostgresStorage]) -> None:
    # Eight stores open one new schema at once (advisory lock), then write and read.
    stores = [make_store(namespace="c12shared")]
    dsn, schema = stores[0].settings.dsn, stores[0].schema
    stores += [PostgresStorage(dsn, schema=schema) for _ in range(7)]

    async def work(index: int, store: PostgresStorage) -> None:
        await store.open()
        await store.save_thread(Thread(f"t{index}", "r1"))
        for n in range(20):
            await store.save_messages([Message(f"t{index}-m{n:02d}", f"t{index}", "user", f"message {n}")])
            page = await store.list_messages(f"t{index}", "r1", per_page=5, order_by={"direction": "DESC"})
            assert page.total == n + 1

    try:
        await asyncio.gather(*(work(i, s) for i, s in enumerate(stores)))
        assert await _versions(stores[0]) == [number for number, _ in MIGRATIONS]
        for index in range(8):
            page = await stores[0].list_messages(f"t{index}", per_page=False)
            assert [m.id for m in page.items] == [f"t{index}-m{n:02d}" for n in range(20)]
    finally:
        for store in stores[1:]:
            await store.close()
        await stores[0].destroy()


@pytest.mark.anyio
async def test_newer_schema_is_refused(make_store: Callable[..., PostgresStorage]) -> None:
    store = make_store()
    await store.open()
    try:
        await store.pool.execute("INSERT INTO schema_version (version) VALUES ($1)", SCHEMA_VERSION + 1)
        newer = PostgresStorage(store.settings.dsn, schema=store.schema)
        with pytest.raises(BackendError, match="newer"):
            await newer.open()
        await newer.close()
    finally:
        await store.destroy()


@pytest.mark.anyio
async def test_missing_migration_is_applied_once(
    make_store: Callable[..., PostgresStorage], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store()
    await store.open()
    try:
        extra = (SCHEMA_VERSION + 1, "CREATE TABLE {s}.extra_probe (x integer);")
        monkeypatch.setattr(schema_module, "MIGRATIONS", (*MIGRATIONS, extra))
        monkeypatch.setattr(schema_module, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
        upgraded = [PostgresStorage(store.settings.dsn, schema=store.schema) for _ in range(4)]
        await asyncio.gather(*(s.open() for s in upgraded))  # racing upgraders
        for s in upgraded:
            await s.close()
        assert (await _versions(store))[-2:] == [SCHEMA_VERSION, SCHEMA_VERSION + 1]
        assert await store.pool.fetchval("SELECT to_regclass('extra_probe') IS NOT NULL")
    finally:
        await store.destroy()


@pytest.mark.anyio
async def test_destroy_drops_the_schema_and_nothing_else(make_store: Callable[..., PostgresStorage]) -> None:
    store, other = make_store(), make_store()
    await store.open()
    await other.open()
    await other.save_thread(Thread("t1", "r1"))
    await store.destroy()
    conn = await asyncpg.connect(other.settings.dsn)
    try:
        assert await conn.fetchval("SELECT count(*) FROM pg_namespace WHERE nspname = $1", store.schema) == 0
    finally:
        await conn.close()
    assert await other.get_thread("t1") is not None
    await other.destroy()


@pytest.mark.anyio
async def test_counters_migration_backfills_an_old_store(
    make_store: Callable[..., PostgresStorage], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store written by version 1 (no counters), opened by this version: the
    # migration counts every thread's and resource's messages once, and the
    # writes keep the counters from there.
    old = make_store()
    with monkeypatch.context() as patch:
        patch.setattr(schema_module, "MIGRATIONS", MIGRATIONS[:1])
        patch.setattr(schema_module, "SCHEMA_VERSION", 1)
        await old.open()
        for tid, rid, n in (("t1", "r1", 7), ("t2", "r1", 3), ("u1", "r2", 5), ("empty", "r3", 0)):
            await old.save_thread(Thread(tid, rid))
            if n:
                await old.save_messages([Message(f"{tid}-{i}", tid, "user", f"m{i}") for i in range(n)])
        assert await _versions(old) == [1]
    try:
        upgraded = [PostgresStorage(old.settings.dsn, schema=old.schema) for _ in range(3)]
        await asyncio.gather(*(s.open() for s in upgraded))  # racing upgraders backfill once
        store = upgraded[0]
        assert await _versions(store) == [number for number, _ in MIGRATIONS]
        counts = dict(await store.pool.fetch("SELECT id, message_count FROM threads"))
        assert counts == {"t1": 7, "t2": 3, "u1": 5, "empty": 0}
        resources = dict(await store.pool.fetch("SELECT resource_id, messages FROM resource_counters"))
        assert resources == {"r1": 10, "r2": 5}
        assert (await store.list_messages(["t1", "t2"], "r1", per_page=0)).total == 10
        assert (await store.list_messages_by_resource("r1", per_page=0)).total == 10
        await store.save_messages([Message("t2-0", "t1", "user", "moved"), Message("new", "u1", "user", "x")])
        await store.delete_messages(["t1-0"])
        assert [(await store.list_messages(t, per_page=0)).total for t in ("t1", "t2", "u1")] == [7, 2, 6]
        assert (await store.list_messages_by_resource("r2", per_page=0)).total == 6
        await store.delete_resource("r2")
        assert await store.pool.fetchval("SELECT count(*) FROM resource_counters WHERE resource_id = 'r2'") == 0
        for s in upgraded[1:]:
            await s.close()
    finally:
        await old.destroy()

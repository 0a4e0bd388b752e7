"""Behaviour that exists only in the PostgreSQL adapter: the full-text
column, the jsonb filter projection, injection-shaped input as data, driver
errors, and many processes writing one schema."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import anyio
import asyncpg
import pytest
from memory_core import BackendError, Message, Thread
from memory_core.errors import ValidationError

from memory_core_postgres import PostgresStorage
from memory_core_postgres._sql import meta_document

INJECTION = "x'); DROP TABLE messages; --"


@pytest.mark.anyio
async def test_full_text_column_follows_saves_and_updates(make_store: Callable[..., PostgresStorage]) -> None:
    store = make_store()
    await store.open()
    try:
        await store.save_thread(Thread("t1", "r1"))
        parts = {"format": 2, "parts": [{"type": "text", "text": "penguins swim"}, {"type": "image"}]}
        await store.save_messages(
            [Message("m1", "t1", "user", "Lisbon in April\x00!"), Message("m2", "t1", "assistant", parts)]
        )

        async def matching(words: str) -> list[str]:
            rows = await store.pool.fetch(
                "SELECT id FROM messages WHERE search @@ plainto_tsquery('simple', $1) ORDER BY id", words
            )
            return [row[0] for row in rows]

        assert await matching("lisbon april") == ["m1"]
        assert await matching("penguins") == ["m2"]
        await store.update_messages([{"id": "m1", "content": "Porto in May"}])
        assert await matching("lisbon") == [] and await matching("porto") == ["m1"]
        await store.save_messages([Message("m2", "t1", "assistant", "no birds")])
        assert await matching("penguins") == []
    finally:
        await store.destroy()


def test_meta_projection_is_exact_and_keeps_only_filterable_scalars() -> None:
    document = meta_document(
        {"n": 5, "f": 0.1, "big": 1e16, "b": True, "z": None, "s": "a\x00b\x01", "a.b": 1, "l": [1], "d": {}}
    )
    assert document == (
        '{"n":5,"f":0.1000000000000000055511151231257827021181583404541015625,"big":10000000000000000,'
        '"b":true,"z":null,"s":"a\\u0001\\u0002b\\u0001\\u0001"}'
    )


@pytest.mark.anyio
async def test_injection_shaped_keys_and_values_are_data(make_store: Callable[..., PostgresStorage]) -> None:
    store = make_store()
    await store.open()
    try:
        odd = {INJECTION: INJECTION, "k": INJECTION, "$where": "1", "a.b": {"$ne": ""}}
        await store.save_thread(Thread(INJECTION, INJECTION, INJECTION, odd))
        await store.save_messages([Message(INJECTION, INJECTION, "user", INJECTION, metadata=odd)])
        found = await store.list_threads({"resource_id": INJECTION, "metadata": {"k": INJECTION}})
        assert [t.metadata for t in found.items] == [odd]
        page = await store.list_messages(INJECTION, INJECTION, filter={"metadata": {"k": INJECTION}})
        assert [m.content for m in page.items] == [INJECTION]
        for bad in ({"k": {"$ne": ""}}, {INJECTION: 1}, {"a.b": 1}):
            with pytest.raises(ValidationError):
                await store.list_threads({"metadata": bad})
        tables = await store.pool.fetchval("SELECT count(*) FROM pg_tables WHERE schemaname = $1", store.schema)
        assert tables == 5  # threads, messages, resources, resource_counters, schema_version
    finally:
        await store.destroy()


@pytest.mark.anyio
async def test_unreachable_server_is_a_retryable_backend_error() -> None:
    store = PostgresStorage.from_url("postgresql://nobody@127.0.0.1:1/none")
    with pytest.raises(BackendError) as caught:
        await store.open()
    assert caught.value.retryable and caught.value.backend == "postgresql"
    await store.close()


def _end_session(url: str, pid: int) -> None:
    """Terminate backend ``pid`` from another connection and return once the
    backend has exited, without letting the caller's event loop run: the
    server's last ErrorResponse and the end of the stream then wait, unread,
    in the pooled connection's socket."""

    async def terminate() -> None:
        admin = await asyncpg.connect(url)
        try:
            # With a timeout, pg_terminate_backend waits for the backend to exit.
            assert await admin.fetchval("SELECT pg_terminate_backend($1, 10000)", pid)
        finally:
            await admin.close()

    with ThreadPoolExecutor(1) as worker:
        worker.submit(asyncio.run, terminate()).result()


@pytest.mark.anyio
async def test_a_session_ended_while_pooled_is_retryable_and_its_connection_replaced(
    make_store: Callable[..., PostgresStorage], pg_target: str
) -> None:
    """Issue 25: a session the server ends while its connection is idle in
    the pool, when the next call starts after asyncpg read the server's
    error but before it read the end of the stream, failed with
    ``InternalClientError`` (see ``storage._ended_while_idle``) that was not
    retryable. Each number of loop turns between the end and the call meets
    one of the ways asyncpg reports it; every one is a retryable
    BackendError, and the retry succeeds on a new connection (a pool of one:
    the broken one was not kept)."""
    store = make_store(min_size=1, max_size=1)
    await store.open()
    try:
        await store.save_thread(Thread("t1", "r1"))
        causes: list[str] = []
        for turns in range(5):
            pid = await store.pool.fetchval("SELECT pg_backend_pid()")
            _end_session(pg_target, pid)
            for _ in range(turns):
                await asyncio.sleep(0)
            batch = [Message(f"m{turns}", "t1", "user", "x")]
            with anyio.fail_after(30):
                try:
                    await store.save_messages(batch)
                    causes.append("none")
                except BackendError as exc:
                    causes.append(type(exc.original).__name__)
                    assert exc.retryable, f"a session the server ended is transient: {exc!r}"
                    await store.save_messages(batch)
        assert "InternalClientError" in causes, f"the race was not met: {causes}"
        saved = (await store.list_messages("t1")).items
        assert [m.id for m in saved] == [f"m{turns}" for turns in range(5)]
    finally:
        await store.destroy()


WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from memory_core import Message, Thread
    from memory_core_postgres import PostgresStorage

    async def main(url, schema, index):
        store = PostgresStorage.from_url(url, schema=schema)
        await store.open()
        thread = f"t{index}"
        await store.save_thread(Thread(thread, "r1"))
        for start in range(0, 1000, 10):
            batch = [Message(f"{thread}-m{n:04d}", thread, "user", f"message {n}") for n in range(start, start + 10)]
            await store.save_messages(batch)
        await store.close()

    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
    """
)


def _run_writers(url: str, schema: str) -> list[tuple[int, bytes]]:
    """Run eight WRITER processes at once; their (exit code, stderr)."""
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, url, schema, str(index)], stderr=subprocess.PIPE)
        for index in range(8)
    ]
    return [(w.wait(300), w.communicate()[1]) for w in writers]


@pytest.mark.anyio
async def test_eight_processes_times_1000_messages_lose_nothing(make_store: Callable[..., PostgresStorage]) -> None:
    store = make_store()  # not opened: the eight processes race to create the schema
    schema = store.schema
    codes = await anyio.to_thread.run_sync(_run_writers, store.settings.dsn, schema)
    assert [code for code, _ in codes] == [0] * 8, codes
    await store.open()
    try:
        rows = await store.pool.fetch("SELECT thread_id, count(*), count(DISTINCT seq) FROM messages GROUP BY 1")
        assert sorted((r[0], r[1], r[2]) for r in rows) == [(f"t{i}", 1000, 1000) for i in range(8)]
        assert await store.pool.fetchval("SELECT count(DISTINCT seq) FROM messages") == 8000
        for index in (0, 7):
            page = await store.list_messages(f"t{index}", per_page=False)
            assert [m.id for m in page.items] == [f"t{index}-m{n:04d}" for n in range(1000)]
    finally:
        await store.destroy()

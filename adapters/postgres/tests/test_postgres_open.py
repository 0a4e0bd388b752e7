"""The one-line setup on PostgreSQL: ``Memory.open`` with the same URL for
the storage and for pgvector round-trips a conversation through a restart."""

from __future__ import annotations

import asyncio
import gc
import uuid

import asyncpg
import pytest
from memory_core import Memory
from memory_core.vector import BaseVectorStore

pytestmark = pytest.mark.anyio


async def test_memory_open_round_trips_a_conversation_through_a_restart(vector_url: str) -> None:
    storage_namespace, vector_namespace = f"t{uuid.uuid4().hex[:16]}", f"v{uuid.uuid4().hex[:16]}"

    async def open_memory() -> Memory:
        return await Memory.open(
            vector_url,
            vector=vector_url,
            embedder="lexical",
            storage_options={"namespace": storage_namespace},
            vector_options={"namespace": vector_namespace},
        )

    async with await open_memory() as memory:
        thread, _ = await memory.get_or_create_thread("user-1", "trip")
        await memory.append_messages(thread.id, [("user", "I fly to Lisbon in April"), ("assistant", "Noted!")])
    memory = await open_memory()  # a restart
    try:
        result = await memory.recall("trip", "user-1", vector_search_string="when is the Lisbon trip?", per_page=0)
        texts = {m.id: m.content for m in result.messages}
        assert texts[result.semantic_hits[0]] == "I fly to Lisbon in April" and not result.warnings
        assert not (await memory.check_index(resource_id="user-1")).behind
    finally:
        assert isinstance(memory.vector, BaseVectorStore)
        await memory.vector.destroy()
        await memory.storage.destroy()


@pytest.mark.parametrize("seconds", [0.0, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2])
async def test_memory_open_cancelled_midway_leaves_no_connection_and_nothing_unretrieved(
    vector_url: str, seconds: float
) -> None:
    """``Memory.open`` (the store's pool, then pgvector's) cancelled at any
    point: no connection of it stays on the server (``pg_stat_activity``)
    and asyncio reports no failure that nobody retrieved (asyncpg's TLS
    negotiation, cut, used to leave one)."""
    application = f"mc{uuid.uuid4().hex[:12]}"
    namespace = f"t{uuid.uuid4().hex[:16]}"
    url = f"{vector_url}{'&' if '?' in vector_url else '?'}application_name={application}"
    loop = asyncio.get_running_loop()
    reported: list[dict[str, object]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        opening = asyncio.ensure_future(
            Memory.open(
                url,
                vector=url,
                embedder="lexical",
                storage_options={"namespace": namespace},
                vector_options={"namespace": namespace},
            )
        )
        await asyncio.sleep(seconds)
        opening.cancel()
        try:
            memory = await opening
        except asyncio.CancelledError:
            pass
        else:  # it was open before the cancellation arrived
            await memory.close()
        await asyncio.sleep(0.2)  # a connection the server drops reports to its protocol
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    conn = await asyncpg.connect(vector_url)
    try:
        left = await conn.fetchval("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", application)
        for (schema,) in await conn.fetch("SELECT nspname FROM pg_namespace WHERE nspname LIKE '%' || $1", namespace):
            await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    finally:
        await conn.close()
    assert left == 0, f"{left} connections of the cancelled open are still on the server"
    assert not reported, [context.get("message") for context in reported]

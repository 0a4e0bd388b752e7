"""The one-line setup on PostgreSQL: ``Memory.open`` with the same URL for
the storage and for pgvector round-trips a conversation through a restart."""

from __future__ import annotations

import uuid

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

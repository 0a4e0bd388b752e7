"""Vectors and lexical documents of messages storage no longer holds (a
prune without the vector store, a delete through the storage alone):
``check_index`` reports them as ``orphaned`` and ``reindex`` of the scope
drops them."""

from __future__ import annotations

from pathlib import Path

import pytest

import memory_core
from memory_core import Memory
from memory_core.embedders import get_embedder

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("scope", ["resource", "thread"])
async def test_reindex_drops_the_vectors_of_messages_storage_no_longer_holds(tmp_path: Path, scope: str) -> None:
    """Before: after 4 of 10 messages went from storage alone, check_index
    said indexed=10 for stored=6 with nothing to flag, and
    reindex(resource_id=...) left the 4 messages' vectors (indexed stayed 10)."""
    storage = await memory_core.connect(f"sqlite:///{tmp_path}/s.db")
    vectors = await memory_core.connect_vector("memory://")
    memory = Memory(storage, vectors, get_embedder("lexical"), owns_stores=False, allow_volatile_vectors=True)
    try:
        await memory.get_or_create_thread("r1", "t1")
        saved = await memory.append_messages("t1", [("user", f"turn number {i}") for i in range(10)])
        where = {"resource_id": "r1"} if scope == "resource" else {"thread_id": "t1"}
        assert (await memory.check_index(**where)).in_step
        assert await storage.delete_messages([m.id for m in saved[:4]]) == 4  # storage alone
        status = await memory.check_index(**where)
        assert (status.stored, status.indexed, status.orphaned, status.behind) == (6, 10, 4, False)
        assert not status.in_step
        assert await memory.reindex(**where) == 6
        status = await memory.check_index(**where)
        assert (status.stored, status.indexed, status.orphaned, status.in_step) == (6, 6, 0, True)
        if status.documents is not None:
            assert status.documents == 6
    finally:
        await memory.close()
        await storage.destroy()
        await vectors.close()

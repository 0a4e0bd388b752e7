"""Bug cases C15 and C16 (``memory_core_conformance.rules``) through :class:`memory_core.Memory` on every mode,
with the reference storage and the lexical embedder."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import pytest
from memory_core import InMemoryStorage, ManualClock, Memory, MemoryConfig, Message
from memory_core.embedders import LexicalHashEmbedder
from memory_core.memory import SemanticRecall
from memory_core.vector import BaseVectorStore

pytestmark = pytest.mark.anyio

T0 = datetime(2025, 1, 1, tzinfo=UTC)
StoreFactory = Callable[..., BaseVectorStore]


@pytest.fixture
async def memory(store_factory: StoreFactory) -> AsyncIterator[Memory]:
    vectors = store_factory()
    # The vectors are destroyed after each test, so the in-memory storage may pair with them.
    async with Memory(
        InMemoryStorage(clock=ManualClock(T0)), vectors, LexicalHashEmbedder(), allow_volatile_vectors=True
    ) as memory:
        try:
            yield memory
        finally:
            await vectors.destroy()


def msg(message_id: str, thread_id: str, text: str, seconds: int = 0) -> Message:
    return Message(message_id, thread_id, "user", text, created_at=T0 + timedelta(seconds=seconds))


def semantic(top_k: int, scope: str) -> MemoryConfig:
    return MemoryConfig(last_messages=False, semantic_recall=SemanticRecall(top_k, 0, scope))  # type: ignore[arg-type]


async def test_c15_deletes_reach_the_vectors(memory: Memory) -> None:
    assert memory.vector is not None
    await memory.create_thread("r1", thread_id="t1")
    await memory.save_messages([msg("mB", "t1", "my favourite colour is blue")])
    await memory.delete_messages(["mB"])
    await memory.save_messages([msg("mR", "t1", "my favourite colour is red", 1)])
    result = await memory.recall("t1", "r1", "blue", thread_config=semantic(1, "thread"))
    assert result.semantic_hits == ["mR"]
    assert [m.id for m in result.messages] == ["mR"]

    await memory.delete_thread("t1")
    assert await memory.vector.count(resource_id="r1") == 0
    await memory.create_thread("r1", thread_id="t1")
    await memory.save_messages([msg("mG", "t1", "green", 2)])
    result = await memory.recall("t1", "r1", "blue", thread_config=semantic(3, "resource"))
    assert result.semantic_hits == ["mG"]
    page = await memory.list_messages("t1")
    assert ([m.id for m in page.items], page.total) == (["mG"], 1)
    assert await memory.vector.count(resource_id="r1") == 1


async def test_c16_vector_scope(memory: Memory) -> None:
    await memory.create_thread("r1", thread_id="t1")
    await memory.create_thread("r1", thread_id="t2")
    await memory.create_thread("r2", thread_id="t3")
    await memory.create_thread("r1", thread_id="t4")
    await memory.save_messages(
        [
            msg("a1", "t1", "apples are red"),
            msg("a2", "t1", "bananas are yellow", 1),
            msg("b1", "t2", "apples are green", 2),
            msg("b2", "t2", "cars are fast", 3),
            msg("c1", "t3", "apples are tasty", 4),
        ]
    )
    hits = (await memory.recall("t1", "r1", "apples", thread_config=semantic(4, "thread"))).semantic_hits
    assert set(hits) <= {"a1", "a2"} and hits[0] == "a1"
    hits = (await memory.recall("t1", "r1", "apples", thread_config=semantic(4, "resource"))).semantic_hits
    assert set(hits) <= {"a1", "a2", "b1", "b2"} and "c1" not in hits
    assert (await memory.recall("t4", "r1", "apples", thread_config=semantic(4, "thread"))).semantic_hits == []
    assert (await memory.recall("t3", "r2", "apples", thread_config=semantic(4, "resource"))).semantic_hits == ["c1"]


async def test_resaving_a_shorter_text_leaves_no_stale_chunks(memory: Memory) -> None:
    assert memory.vector is not None and memory.embedder is not None
    await memory.create_thread("r1", thread_id="t1")
    long_text = " ".join(f"word{i}" for i in range(2000))  # several chunks
    await memory.save_messages([msg("m1", "t1", long_text)])
    chunks = await memory.vector.count_points(thread_id="t1")
    assert chunks > 1
    assert await memory.vector.count(thread_id="t1") == 1
    await memory.save_messages([msg("m1", "t1", "short now")])
    assert await memory.vector.count_points(thread_id="t1") == 1

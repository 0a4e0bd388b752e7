"""A clone's copies get their vectors by copying their sources' points in
the vector store (the embedder is not called), and are embedded only where
a source has no point (or the store cannot copy points)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from memory_core import Memory, Message
from memory_core.embedders import LexicalHashEmbedder, Matrix
from memory_core.reference import InMemoryStorage
from memory_core.reference_vector import InMemoryVectorStore

pytestmark = pytest.mark.anyio

T0 = datetime(2025, 1, 1, tzinfo=UTC)


class CountingEmbedder:
    """LexicalHashEmbedder that records every text it embeds."""

    def __init__(self) -> None:
        self.inner = LexicalHashEmbedder()
        self.name, self.dimension, self.max_input_chars = "counting", self.inner.dimension, 40
        self.texts: list[str] = []

    async def embed(self, texts: Sequence[str]) -> Matrix:
        self.texts += texts
        return await self.inner.embed(texts)


class NoCopyStore(InMemoryVectorStore):
    """A vector store that cannot copy points (the primitive's default)."""

    async def _copy_points(
        self, name: str, mapping: dict[str, str], thread_id: str, resource_id: str
    ) -> set[str] | None:
        return None


async def _memory(vector: InMemoryVectorStore) -> tuple[Memory, CountingEmbedder]:
    embedder = CountingEmbedder()
    memory = Memory(InMemoryStorage(), vector, embedder, allow_volatile_vectors=True)
    await memory.create_thread("r1", thread_id="t1")
    long = "a long text that the embedder splits into more than one chunk of forty characters"
    texts = ["apples and pears", long, "", "the weather in spring"]
    messages = [
        Message(f"m{i}", "t1", "user", text, created_at=T0 + timedelta(seconds=i)) for i, text in enumerate(texts)
    ]
    await memory.save_messages(messages)
    return memory, embedder


async def test_clone_copies_points_without_embedding() -> None:
    vector = InMemoryVectorStore()
    memory, embedder = await _memory(vector)
    before = len(embedder.texts)
    points = await vector.count_points(thread_id="t1")
    made = await memory.clone_thread("t1", "c1", resource_id="r2", source_resource_id="r1")
    assert len(embedder.texts) == before  # nothing embedded again
    assert await vector.count_points(thread_id="c1") == points > 3  # every chunk, the long text's too
    assert await vector.count(resource_id="r2") == 3  # the empty message has no point
    hits = await memory.vector.search((await embedder.embed(["apples"]))[0], 1, thread_id="c1")  # type: ignore[union-attr]
    assert [h.message_id for h in hits] == [made.message_ids["m0"]]
    assert hits[0].resource_id == "r2" and hits[0].thread_id == "c1"
    assert await vector.count(thread_id="t1") == 3  # the source keeps its points


async def test_copies_without_source_points_are_embedded() -> None:
    vector = InMemoryVectorStore()
    memory, embedder = await _memory(vector)
    await vector.delete_messages(["m3"])  # never indexed, as far as the clone can tell
    embedder.texts.clear()
    made = await memory.branch_thread("t1", "m3", "b1")
    assert embedder.texts == ["the weather in spring"]
    assert await vector.count(thread_id="b1") == 3
    assert made.message_ids["m3"] in {
        h.message_id for h in await vector.search((await embedder.inner.embed(["weather"]))[0], 3, thread_id="b1")
    }


async def test_a_store_that_cannot_copy_gets_the_copies_embedded() -> None:
    vector = NoCopyStore()
    memory, embedder = await _memory(vector)
    embedder.texts.clear()
    await memory.clone_thread("t1", "c1")
    assert len(embedder.texts) == await vector.count_points(thread_id="c1") > 3
    assert await vector.count(thread_id="c1") == 3


async def test_a_clone_is_found_by_lexical_recall_and_its_index_is_in_step() -> None:
    """The copies' lexical documents are copied with their points: lexical
    recall in the clone's thread finds them, check-index is in step."""
    vector = InMemoryVectorStore()
    memory, _ = await _memory(vector)
    made = await memory.clone_thread("t1", "c1", resource_id="r2", source_resource_id="r1")
    config = {"semantic_recall": {"mode": "lexical", "scope": "thread", "top_k": 1, "message_range": 0}}
    got = await memory.recall("c1", vector_search_string="pears", thread_config=config)
    assert got.semantic_hits == [made.message_ids["m0"]]
    assert (await memory.check_index(thread_id="c1")).in_step
    assert (await memory.check_index(thread_id="t1")).in_step  # the sources keep theirs

"""``SemanticRecall.min_score``: semantic recall's relevance floor (cosine
similarity), applied in the core's vector search path for every store."""

from __future__ import annotations

import pytest

from memory_core import InMemoryStorage, Memory, MemoryConfig, Message, SemanticRecall, ValidationError
from memory_core.embedders import LexicalHashEmbedder, relevance_floor
from memory_core.reference_vector import InMemoryVectorStore


def _config(min_score: float | None, exclude_recent: bool = False) -> MemoryConfig:
    semantic = SemanticRecall(top_k=3, message_range=0, min_score=min_score, exclude_recent=exclude_recent)
    return MemoryConfig(last_messages=0, semantic_recall=semantic)


async def _memory() -> Memory:
    memory = Memory(InMemoryStorage(), InMemoryVectorStore(), LexicalHashEmbedder(), allow_volatile_vectors=True)
    await memory.create_thread("r1", thread_id="t1")
    await memory.save_messages(
        [
            Message("a", "t1", "user", "my cat is called Miso"),
            Message("b", "t1", "assistant", "Miso is a fine name for a cat"),
            Message("c", "t1", "user", "the train leaves at nine"),
        ]
    )
    return memory


@pytest.mark.anyio
@pytest.mark.parametrize("exclude_recent", [False, True])
async def test_hits_under_the_floor_are_left_out(exclude_recent: bool) -> None:
    memory = await _memory()
    everything = await memory.recall("t1", "r1", vector_search_string="cat Miso", thread_config=_config(None))
    assert len(everything.semantic_hits) == 3  # top_k, however unrelated the last one
    floored = await memory.recall(
        "t1", "r1", vector_search_string="cat Miso", thread_config=_config(0.2, exclude_recent)
    )
    assert set(floored.semantic_hits) == {"a", "b"}
    assert floored.warnings == []
    nothing = await memory.recall("t1", "r1", vector_search_string="pears", thread_config=_config(0.2))
    assert nothing.semantic_hits == [] and nothing.messages == []
    assert nothing.warnings == []  # all under the floor is not an index that is behind


@pytest.mark.anyio
async def test_an_empty_index_still_warns_under_a_floor() -> None:
    memory = Memory(InMemoryStorage(), InMemoryVectorStore(), LexicalHashEmbedder(), allow_volatile_vectors=True)
    await memory.create_thread("r1", thread_id="t1")
    await memory.storage.save_messages([Message("a", "t1", "user", "my cat is called Miso", "r1")])  # not indexed
    result = await memory.recall("t1", "r1", vector_search_string="cat", thread_config=_config(0.2))
    assert result.semantic_hits == [] and "reindex" in result.warnings[0]


def test_measured_floors() -> None:
    assert relevance_floor(LexicalHashEmbedder()) == 0.15
    assert relevance_floor(LexicalHashEmbedder(dimension=64)) is None  # not measured: no floor
    assert relevance_floor(None) is None


@pytest.mark.anyio
async def test_auto_is_the_floor_the_embedder_declares_in_the_core_as_in_the_tools() -> None:
    """Issue 26: ``min_score="auto"`` was refused by the core ("must be a
    number") while the recall tools default to it; now both read it as the
    embedder's declared floor (none for an embedder that declares none)."""
    configured = Memory(
        InMemoryStorage(),
        InMemoryVectorStore(),
        allow_volatile_vectors=True,
        config={"semantic_recall": {"min_score": "auto"}},
    )
    semantic = configured.config.semantic()
    assert semantic is not None and semantic.min_score == "auto"
    memory = await _memory()
    auto = MemoryConfig(last_messages=0, semantic_recall=SemanticRecall(top_k=3, message_range=0, min_score="auto"))
    floored = await memory.recall("t1", "r1", vector_search_string="cat Miso", thread_config=auto)
    measured = await memory.recall("t1", "r1", vector_search_string="cat Miso", thread_config=_config(0.15))
    assert floored.semantic_hits == measured.semantic_hits and len(floored.semantic_hits) < 3
    nothing = await memory.recall("t1", "r1", vector_search_string="pears", thread_config=auto)
    assert nothing.semantic_hits == []
    unmeasured = Memory(
        InMemoryStorage(), InMemoryVectorStore(), LexicalHashEmbedder(dimension=64), allow_volatile_vectors=True
    )
    await unmeasured.create_thread("r1", thread_id="t1")
    await unmeasured.save_messages([Message("a", "t1", "user", "my cat"), Message("b", "t1", "user", "the train")])
    unfloored = await unmeasured.recall("t1", "r1", vector_search_string="pears", thread_config=auto)
    assert len(unfloored.semantic_hits) == 2  # no declared floor: no floor, as in the tools
    with pytest.raises(ValidationError, match='"auto" or None'):
        SemanticRecall(min_score="high")  # type: ignore[arg-type]

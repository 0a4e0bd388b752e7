"""R-HYBRID cases: lexical and hybrid recall (``SemanticRecall.mode``, issue 23).

:class:`HybridRecallCases` is mixed into
:class:`~memory_core_conformance.vector.VectorConformance`, so every
storage + vector pairing that runs the vector suite also checks that its
lexical and hybrid answers are the reference pairing's (``memory://`` storage
with the reference vector store and the same embedder), that neither ranking
reaches another resource, and that no deleted, moved-away, rewritten or
pruned message is a hit. The lexical ranking over every storage backend
alone (no vector store) is also a step of the storage state machine.
"""

from __future__ import annotations

from typing import ClassVar

import pytest

from memory_core import InMemoryStorage
from memory_core.clock import ManualClock
from memory_core.lexical_index import LexicalIndex
from memory_core.memory import Memory, MemoryConfig, SemanticRecall
from memory_core.reference_vector import InMemoryVectorStore
from memory_core.retention import RetentionPolicy
from memory_core_conformance.harness import T0, at, message, thread

__all__ = ["HYBRID_CORPUS", "HybridRecallCases"]

HYBRID_CORPUS: tuple[tuple[str, str, str], ...] = (
    ("h01", "t1", "Caroline went to the LGBTQ support group on 7 May 2023"),
    ("h02", "t1", "Melanie painted a sunrise over the lake last year"),
    ("h03", "t1", "I adopted two dogs, Rex and Luna, from the shelter"),
    ("h04", "t1", "We talked about pottery classes and clay bowls"),
    ("h05", "t1", "The concert in Boston was loud but wonderful"),
    ("h06", "t2", "Caroline is researching adoption agencies"),
    ("h07", "t2", "My dog Rex loves the beach in summer"),
    ("h08", "t2", "Melanie's kids went camping near the mountains"),
    ("h09", "t2", "A quiet evening reading a book about transgender history"),
    ("h10", "t2", "Pottery helps me relax after work"),
    ("h11", "t3", "Caroline adopted dogs and painted pottery in Boston"),
)
"""``(message id, thread, text)``: threads t1 and t2 belong to r1, t3 to r2 (a
message of another resource that matches every query below)."""

_QUERIES = ("When did Caroline go to the support group?", "dogs Rex", "pottery Boston", "Melanie painting")


def _config(mode: str, scope: str, top_k: int = 3) -> MemoryConfig:
    return MemoryConfig(last_messages=False, semantic_recall=SemanticRecall(top_k, 0, scope, mode=mode))  # type: ignore[arg-type]


async def _load(memory: Memory) -> None:
    for thread_id, resource_id in (("t1", "r1"), ("t2", "r1"), ("t3", "r2")):
        await memory.storage.save_thread(thread(thread_id, resource_id))
    await memory.save_messages(
        [message(mid, tid, text, created_at=at(n)) for n, (mid, tid, text) in enumerate(HYBRID_CORPUS)]
    )


class HybridRecallCases:
    """R-HYBRID through :class:`memory_core.Memory` (uses the ``memory`` fixture
    of the class it is mixed into)."""

    pytestmark: ClassVar[list[pytest.MarkDecorator]] = [pytest.mark.conformance, pytest.mark.anyio]

    async def test_r_hybrid_lexical_and_hybrid_answers_equal_the_reference(self, memory: Memory) -> None:
        await _load(memory)
        assert memory.embedder is not None
        reference = Memory(
            InMemoryStorage(clock=ManualClock(T0)), InMemoryVectorStore(), memory.embedder, owns_stores=True
        )
        async with reference:
            await _load(reference)
            for mode in ("lexical", "hybrid"):
                for scope, thread_id in (("resource", "t1"), ("thread", "t2")):
                    for query in _QUERIES:
                        config = _config(mode, scope)
                        got = await memory.recall(thread_id, "r1", query, thread_config=config)
                        want = await reference.recall(thread_id, "r1", query, thread_config=config)
                        assert got.semantic_hits == want.semantic_hits, (mode, scope, query)
                        assert "h11" not in got.semantic_hits
                        assert got.sources == ["semantic"] * len(got.messages)

    async def test_r_hybrid_hits_follow_deletes_moves_rewrites_and_prunes(self, memory: Memory) -> None:
        await _load(memory)
        for mode in ("lexical", "hybrid"):
            found = await memory.recall("t1", "r1", "dogs Rex", thread_config=_config(mode, "resource", 5))
            assert {"h03", "h07"} <= set(found.semantic_hits) and "h11" not in found.semantic_hits
        await memory.delete_messages(["h07"])
        await memory.update_messages([{"id": "h03", "content": "I adopted two cats from the shelter"}])
        gone = await memory.recall("t1", "r1", "dogs Rex", thread_config=_config("lexical", "resource", 5))
        assert not {"h03", "h07", "h11"} & set(gone.semantic_hits)
        fused = await memory.recall("t1", "r1", "dogs Rex", thread_config=_config("hybrid", "resource", 5))
        assert not {"h07", "h11"} & set(fused.semantic_hits)  # h03 may still be near in vector space
        await memory.update_messages([{"id": "h04", "thread_id": "t2"}])
        moved = await memory.recall("t1", "r1", "pottery clay", thread_config=_config("lexical", "thread"))
        assert moved.semantic_hits == []
        there = await memory.recall("t2", "r1", "pottery clay", thread_config=_config("lexical", "thread"))
        assert there.semantic_hits[0] == "h04"
        await memory.prune(RetentionPolicy(before=at(5), resource_id="r1"))
        for mode in ("lexical", "hybrid"):
            pruned = await memory.recall("t2", "r1", "Caroline Melanie", thread_config=_config(mode, "resource", 10))
            assert pruned.semantic_hits and all(hit in {"h06", "h08", "h09", "h10"} for hit in pruned.semantic_hits)
        await memory.delete_resource("r2")
        other = await memory.recall("t3", "r2", "Caroline", thread_config=_config("lexical", "resource"))
        assert other.semantic_hits == []

    async def test_r_hybrid_lexical_index_is_checked_and_rebuilt_with_the_vectors(self, memory: Memory) -> None:
        store = memory.vector
        if not isinstance(store, LexicalIndex) or not store.lexical_index:
            pytest.skip(f"{store!r} declares no lexical index (the core composes the lexical ranking)")
        await _load(memory)
        status = await memory.check_index(resource_id="r1")
        assert (status.documents, status.behind) == (status.stored, False)
        # Written around Memory: in storage, not yet in the index (nor a hit).
        await memory.storage.save_messages(
            [message("h12", "t2", "a zeppelin over Caroline's house", created_at=at(20))]
        )
        config = _config("lexical", "resource")
        assert "h12" not in (await memory.recall("t1", "r1", "zeppelin", thread_config=config)).semantic_hits
        status = await memory.check_index(resource_id="r1")
        assert status.behind and status.documents == status.stored - 1
        await memory.reindex(resource_id="r1")
        assert not (await memory.check_index(resource_id="r1")).behind
        assert (await memory.recall("t1", "r1", "zeppelin", thread_config=config)).semantic_hits == ["h12"]

"""``VectorConformance``: the Memory-level layer (R-RECALL, R-VEC, C15, C16).

Semantic recall involves three parts: a storage, a vector store and an
embedder, joined by :class:`memory_core.Memory`. A vector adapter's test
module subclasses :class:`VectorConformance` and provides two fixtures:

- ``storage_factory``: as for :class:`~memory_core_conformance.StorageConformance`
  (``factory(clock=None) -> BaseStorage``, unopened, fresh namespace);
- ``vector_factory``: ``factory() -> VectorStore``, unopened, in a fresh,
  empty namespace (collection prefix). If the store has ``destroy()``, the
  suite calls it afterwards; otherwise ``close()``.

The ``embedder`` fixture defaults to
:class:`~memory_core.embedders.LexicalHashEmbedder` (deterministic; word
overlap decides similarity, which is all C15 and C16 need); override it to
run the cases with a real model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, ClassVar

import pytest

from memory_core.clock import ManualClock
from memory_core.embedders import Embedder, LexicalHashEmbedder
from memory_core.errors import NotFoundError, OwnershipError, ValidationError
from memory_core.memory import Memory, MemoryConfig, SemanticRecall
from memory_core.models import Message
from memory_core.vector import VectorStore, chunk_text, message_text
from memory_core_conformance.harness import T0, StorageFactory, at, message, thread
from memory_core_conformance.hybrid import HybridRecallCases

__all__ = ["VectorConformance", "VectorFactory"]

VectorFactory = Callable[[], VectorStore]
"""``factory() -> VectorStore``: a new, unopened store in a fresh namespace."""


def _semantic(top_k: int, scope: str, message_range: int | tuple[int, int] = 0) -> MemoryConfig:
    return MemoryConfig(last_messages=False, semantic_recall=SemanticRecall(top_k, message_range, scope))  # type: ignore[arg-type]


class VectorConformance(HybridRecallCases):
    """Memory + storage + vector store: C15, C16, R-VEC, R-RECALL and R-HYBRID.

    Fixtures to override: ``storage_factory`` and ``vector_factory`` (both
    required), ``embedder`` (optional).
    """

    pytestmark: ClassVar[list[pytest.MarkDecorator]] = [pytest.mark.conformance, pytest.mark.anyio]

    @pytest.fixture
    def storage_factory(self) -> StorageFactory:
        """Override: ``factory(clock=None) -> BaseStorage``."""
        raise NotImplementedError(f"{type(self).__name__} must define the fixture storage_factory")

    @pytest.fixture
    def vector_factory(self) -> VectorFactory:
        """Override: ``factory() -> VectorStore`` (unopened, fresh namespace)."""
        raise NotImplementedError(f"{type(self).__name__} must define the fixture vector_factory")

    @pytest.fixture
    def embedder(self) -> Embedder:
        """The embedder Memory uses (default: the lexical hashing embedder)."""
        return LexicalHashEmbedder()

    @pytest.fixture
    def anyio_backend(self) -> str:
        """Adapters run on asyncio."""
        return "asyncio"

    @pytest.fixture
    async def memory(
        self, storage_factory: StorageFactory, vector_factory: VectorFactory, embedder: Embedder
    ) -> AsyncIterator[Memory]:
        """A Memory over a fresh storage (clock at T0) and a fresh vector store;
        both are destroyed afterwards."""
        storage = storage_factory(ManualClock(T0))
        vectors = vector_factory()
        memory = Memory(
            storage,
            vectors,
            embedder,
            MemoryConfig(last_messages=10, semantic_recall=False),
            owns_stores=False,
            allow_volatile_vectors=True,  # the reference storage may pair with any vectors: both are destroyed after
        )
        async with memory:
            try:
                yield memory
            finally:
                destroy = getattr(vectors, "destroy", None)
                await (destroy() if destroy is not None else vectors.close())
                await storage.destroy()

    @staticmethod
    def _points(memory: Memory, *messages: Message) -> int:
        assert memory.embedder is not None
        return sum(len(chunk_text(message_text(m), memory.embedder.max_input_chars)) for m in messages)

    @staticmethod
    async def _count(memory: Memory, **scope: Any) -> int:
        """Points (chunks) stored under ``scope``."""
        assert memory.vector is not None
        return await memory.vector.count_points(**scope)

    @staticmethod
    async def _messages(memory: Memory, **scope: Any) -> int:
        """Distinct messages with points under ``scope``."""
        assert memory.vector is not None
        return await memory.vector.count(**scope)

    # ------------------------------------------------------------------ bug cases

    async def test_c15_deletes_reach_the_vectors_and_recreated_ids_have_no_ghosts(self, memory: Memory) -> None:
        await memory.storage.save_thread(thread("t1"))
        await memory.save_messages([message("mB", content="my favourite colour is blue", created_at=at(0))])
        await memory.delete_messages(["mB"])
        await memory.save_messages([message("mR", content="my favourite colour is red", created_at=at(1))])
        result = await memory.recall("t1", "r1", "blue", thread_config=_semantic(1, "thread"))
        assert result.semantic_hits == ["mR"]
        # B: the thread deleted and created again shows none of the old messages.
        await memory.delete_thread("t1")
        assert await self._count(memory, resource_id="r1") == 0
        await memory.storage.save_thread(thread("t1"))
        await memory.save_messages([message("mG", content="green", created_at=at(2))])
        result = await memory.recall("t1", "r1", "blue", thread_config=_semantic(3, "resource"))
        assert result.semantic_hits == ["mG"]
        page = await memory.list_messages("t1")
        assert [m.id for m in page.items] == ["mG"] and page.total == 1
        assert await self._count(memory, resource_id="r1") == 1

    async def test_c16_vector_scope(self, memory: Memory) -> None:
        await memory.storage.save_thread(thread("t1", "r1"))
        await memory.storage.save_thread(thread("t2", "r1"))
        await memory.storage.save_thread(thread("t3", "r2"))
        await memory.storage.save_thread(thread("t4", "r1"))
        await memory.save_messages(
            [
                message("a1", "t1", "apples are red", created_at=at(1)),
                message("a2", "t1", "bananas are yellow", created_at=at(2)),
                message("b1", "t2", "apples are green", created_at=at(3)),
                message("b2", "t2", "cars are fast", created_at=at(4)),
                message("c1", "t3", "apples are tasty", created_at=at(5)),
            ]
        )
        in_thread = await memory.recall("t1", "r1", "apples", thread_config=_semantic(4, "thread"))
        assert set(in_thread.semantic_hits) <= {"a1", "a2"} and in_thread.semantic_hits[0] == "a1"
        in_resource = await memory.recall("t1", "r1", "apples", thread_config=_semantic(4, "resource"))
        assert set(in_resource.semantic_hits) <= {"a1", "a2", "b1", "b2"} and "c1" not in in_resource.semantic_hits
        assert in_resource.semantic_hits and in_resource.semantic_hits[0] in {"a1", "b1"}
        empty = await memory.recall("t4", "r1", "apples", thread_config=_semantic(4, "thread"))
        assert empty.semantic_hits == [] and empty.messages == []
        other = await memory.recall("t3", "r2", "apples", thread_config=_semantic(4, "resource"))
        assert other.semantic_hits == ["c1"]

    # ------------------------------------------------------------------ R-VEC

    async def test_r_vec_resaving_replaces_never_duplicates(self, memory: Memory) -> None:
        await memory.storage.save_thread(thread("t1"))
        first = message("m1", content="short text about tea")
        await memory.save_messages([first])
        await memory.save_messages([first])
        assert await self._count(memory, thread_id="t1") == self._points(memory, first)
        long_text = " ".join(f"word{n} about coffee" for n in range(1500))
        (longer,) = await memory.update_messages([{"id": "m1", "content": long_text}])
        assert self._points(memory, longer) > 1
        assert await self._count(memory, thread_id="t1") == self._points(memory, longer)
        assert await self._messages(memory, thread_id="t1") == 1 == await self._messages(memory, resource_id="r1")
        (short,) = await memory.update_messages([{"id": "m1", "content": "tea again"}])
        assert await self._count(memory, thread_id="t1") == 1 == self._points(memory, short)
        result = await memory.recall("t1", "r1", "tea", thread_config=_semantic(5, "thread"))
        assert result.semantic_hits == ["m1"]

    async def test_r_vec_embeds_text_parts_and_skips_empty_text(self, memory: Memory) -> None:
        await memory.storage.save_thread(thread("t1"))
        parts = {"format": 2, "parts": [{"type": "text", "text": "penguins"}, {"type": "text", "text": "swim"}]}
        await memory.save_messages(
            [
                message("structured", content=parts, created_at=at(1)),
                message("empty", content="", created_at=at(2)),
                message("blank", content={"format": 2, "parts": []}, created_at=at(3)),
            ]
        )
        assert await self._count(memory, thread_id="t1") == 1
        result = await memory.recall("t1", "r1", "penguins swim", thread_config=_semantic(3, "thread"))
        assert result.semantic_hits == ["structured"]

    async def test_r_vec_deletes_and_moves_keep_vectors_in_step(self, memory: Memory) -> None:
        await memory.storage.save_thread(thread("t1"))
        await memory.storage.save_thread(thread("t2"))
        await memory.save_messages(
            [message(f"m{n}", "t1" if n % 2 else "t2", f"note {n} about rivers", created_at=at(n)) for n in range(6)]
        )
        assert await self._count(memory, resource_id="r1") == 6 == await self._messages(memory)
        await memory.delete_messages(["m1", "ghost"])
        assert await self._count(memory, thread_id="t1") == 2 == await self._messages(memory, thread_id="t1")
        await memory.update_messages([{"id": "m3", "thread_id": "t2"}])
        assert await self._count(memory, thread_id="t1") == 1 and await self._count(memory, thread_id="t2") == 4
        moved = await memory.recall("t2", "r1", "note 3 rivers", thread_config=_semantic(1, "thread"))
        assert moved.semantic_hits == ["m3"]
        await memory.delete_thread("t2")
        assert await self._count(memory, thread_id="t2") == 0
        assert await self._count(memory, resource_id="r1") == 1

    # ------------------------------------------------------------------ R-RECALL

    async def test_r_recall_newest_page_returned_oldest_first(self, memory: Memory) -> None:
        await memory.storage.save_thread(thread("t1"))
        await memory.save_messages([message(f"m{n:02}", created_at=at(n)) for n in range(1, 21)])
        result = await memory.recall("t1", "r1", per_page=5)
        assert [m.id for m in result.messages] == ["m16", "m17", "m18", "m19", "m20"]
        assert result.total == 20 and result.has_more
        older = await memory.recall("t1", "r1", per_page=5, page=1)
        assert [m.id for m in older.messages] == ["m11", "m12", "m13", "m14", "m15"]
        default = await memory.recall("t1", "r1")
        assert [m.id for m in default.messages] == [f"m{n:02}" for n in range(11, 21)]
        nothing = await memory.recall("t1", "r1", thread_config={"last_messages": False})
        assert nothing.messages == [] and nothing.total == 20

    async def test_r_recall_checks_ownership_and_missing_threads(self, memory: Memory) -> None:
        await memory.storage.save_thread(thread("t1", "r1"))
        with pytest.raises(OwnershipError):
            await memory.recall("t1", "r2")
        with pytest.raises(NotFoundError):
            await memory.recall("ghost", "r1")
        with pytest.raises(ValidationError):
            await memory.recall("t1", "r1", per_page=-1)
        resource_scope = await memory.recall("ghost", "r1", "anything", thread_config=_semantic(2, "resource"))
        assert resource_scope.messages == [] and resource_scope.semantic_hits == []

    async def test_r_recall_warns_of_a_missing_thread_under_resource_scope(self, memory: Memory) -> None:
        """A missing thread is no error under resource scope (R-RECALL step 1),
        and recall still returns the resource's hits; the warning tells a
        mistyped thread id from an empty thread (it returned 8 hits and no
        warning, issue 26)."""
        await memory.storage.save_thread(thread("t1", "r1"))
        texts = ["my passport expires in May", "renew the passport soon", "dinner at eight"]
        await memory.save_messages([message(f"m{n}", content=t, created_at=at(n)) for n, t in enumerate(texts)])
        resource = _semantic(2, "resource")
        ghost = await memory.recall("ghost", "r1", "passport", thread_config=resource)
        assert len(ghost.semantic_hits) == 2  # what is returned is unchanged
        assert len(ghost.warnings) == 1 and "thread 'ghost' does not exist" in ghost.warnings[0], ghost.warnings
        assert "thread 'ghost'" in (await memory.recall("ghost", "r1", thread_config=resource)).warnings[0]
        assert (await memory.recall("t1", "r1", "passport", thread_config=resource)).warnings == []
        assert (await memory.recall("t1", "r1", thread_config=resource)).warnings == []

    async def test_r_recall_hits_become_include_windows(self, memory: Memory) -> None:
        await memory.storage.save_thread(thread("t1"))
        texts = ["hello there", "I love sailing boats", "what about dinner", "pasta tonight", "sounds good", "bye"]
        await memory.save_messages([message(f"m{n}", content=t, created_at=at(n)) for n, t in enumerate(texts)])
        config = MemoryConfig(last_messages=1, semantic_recall=SemanticRecall(1, (1, 1), "thread"))
        result = await memory.recall("t1", "r1", "sailing boats", thread_config=config)
        assert result.semantic_hits == ["m1"]
        assert [m.id for m in result.messages] == ["m0", "m1", "m2", "m5"]
        assert result.total == 6 and result.has_more

    async def test_r_source_marks_semantic_hits_and_their_context(self, memory: Memory) -> None:
        await memory.storage.save_thread(thread("t1"))
        texts = ["hello there", "I love sailing boats", "what about dinner", "pasta tonight", "sounds good", "bye"]
        await memory.save_messages([message(f"m{n}", content=t, created_at=at(n)) for n, t in enumerate(texts)])
        config = MemoryConfig(last_messages=1, semantic_recall=SemanticRecall(1, (1, 1), "thread"))
        result = await memory.recall("t1", "r1", "sailing boats", thread_config=config)
        assert [m.id for m in result.messages] == ["m0", "m1", "m2", "m5"]
        assert result.sources == ["context", "semantic", "context", "recent"]
        assert result.gaps == [("m2", "m5")] and result.warnings == []
        # The window reaches the page: one run, no gap.
        wide = MemoryConfig(last_messages=2, semantic_recall=SemanticRecall(1, (0, 2), "thread"))
        joined = await memory.recall("t1", "r1", "sailing boats", thread_config=wide)
        assert [m.id for m in joined.messages] == ["m1", "m2", "m3", "m4", "m5"]
        assert joined.sources == ["semantic", "context", "context", "recent", "recent"] and joined.gaps == []

    async def test_r_recall_exclude_recent_spends_top_k_outside_the_page(self, memory: Memory) -> None:
        await memory.storage.save_thread(thread("t1"))
        texts = ["we went sailing on boats last summer", "dinner plans", "pasta tonight", "sailing boats", "bye"]
        await memory.save_messages([message(f"m{n}", content=t, created_at=at(n)) for n, t in enumerate(texts)])
        search = {"top_k": 1, "message_range": 0, "scope": "thread"}
        plain = await memory.recall(
            "t1", "r1", "sailing boats", thread_config={"last_messages": 2, "semantic_recall": search}
        )
        assert plain.semantic_hits == ["m3"] and plain.sources == ["recent", "recent"]
        outside = await memory.recall(
            "t1",
            "r1",
            "sailing boats",
            thread_config={"last_messages": 2, "semantic_recall": {**search, "exclude_recent": True}},
        )
        assert outside.semantic_hits == ["m0"]
        assert [m.id for m in outside.messages] == ["m0", "m3", "m4"]
        assert outside.sources == ["semantic", "recent", "recent"] and outside.gaps == [("m0", "m3")]

    async def test_r_recall_warns_when_the_index_is_behind_its_storage(self, memory: Memory) -> None:
        await memory.storage.save_thread(thread("t1"))
        # Written past Memory (as after a restart with an in-memory vector store): no vectors.
        await memory.storage.save_messages(
            [message(f"m{n}", content=f"note {n} about rivers", created_at=at(n)) for n in range(3)]
        )
        result = await memory.recall("t1", "r1", "rivers", thread_config=_semantic(2, "thread"))
        assert result.semantic_hits == [] and len(result.warnings) == 1
        assert "reindex(thread_id='t1')" in result.warnings[0] and "3 messages" in result.warnings[0]
        across = await memory.recall("t1", "r1", "rivers", thread_config=_semantic(2, "resource"))
        assert "reindex(resource_id='r1')" in across.warnings[0]
        status = await memory.check_index(thread_id="t1")
        assert (status.stored, status.embeddable, status.indexed, status.behind) == (3, 3, 0, True)
        assert status.repair == "await memory.reindex(thread_id='t1')"
        assert await memory.reindex(resource_id="r1") == 3
        assert not (await memory.check_index(resource_id="r1")).behind
        repaired = await memory.recall("t1", "r1", "rivers", thread_config=_semantic(2, "thread"))
        assert len(repaired.semantic_hits) == 2 and repaired.warnings == []

    async def test_r_recall_refuses_misconfiguration_before_io(self, memory: Memory) -> None:
        with pytest.raises(ValidationError, match="semantic_recall"):
            Memory(memory.storage, config=MemoryConfig(semantic_recall=True), owns_stores=False)
        with pytest.raises(ValidationError, match="embedder"):
            Memory(memory.storage, embedder=memory.embedder, owns_stores=False)
        with pytest.raises(ValidationError, match="semantic recall is off"):
            await memory.recall("t1", "r1", "rivers")
        no_vectors = Memory(memory.storage, owns_stores=False)
        with pytest.raises(ValidationError, match="vector store"):
            await no_vectors.recall("t1", "r1", "rivers", thread_config=_semantic(2, "thread"))
        with pytest.raises(ValidationError, match="vector store"):
            await no_vectors.check_index(thread_id="t1")
        with pytest.raises(ValidationError, match="exclude_recent"):
            SemanticRecall(exclude_recent="yes")  # type: ignore[arg-type]

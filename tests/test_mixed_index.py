"""No write of a Memory leaves a vector index mixing two embedders (issue
26): its searches with either miss the other's vectors. An index built by
one embedder refuses another's vectors before anything is written, with an
``EmbedderMismatchError`` naming ``embedder`` and the way out. Before, a
clone or branch embedded its copies with the Memory's embedder, and
``reindex`` of one resource re-embedded it alone, beside the other
resources' vectors of the old embedder."""

from __future__ import annotations

import pytest

from memory_core import EmbedderMismatchError, Memory, connect, connect_vector
from memory_core.embedders import LexicalHashEmbedder

pytestmark = pytest.mark.anyio

BUILT = LexicalHashEmbedder()
OTHER = LexicalHashEmbedder(dimension=256)  # another embedder: another dimension


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _two_resources() -> tuple[Memory, dict[int, int]]:
    """Storage and an index built by :data:`BUILT` with resources r1 (thread
    t1) and r2 (thread t2); then a Memory over them with :data:`OTHER`, and
    the index's points per dimension."""
    storage, vectors = await connect("memory://"), await connect_vector("memory://")
    built = Memory(storage, vectors, BUILT, owns_stores=False)
    for resource, thread in (("r1", "t1"), ("r2", "t2")):
        await built.create_thread(resource, thread)
        await built.append_messages(thread, [("user", f"words of {thread}"), ("assistant", "more words")])
    counts = await vectors.dimension_counts()
    assert counts == {BUILT.dimension: 4}
    return Memory(storage, vectors, OTHER), counts


async def test_a_clone_or_branch_with_another_embedder_is_refused_before_anything_is_written() -> None:
    memory, counts = await _two_resources()
    async with memory:
        first = (await memory.list_messages("t1")).items[0]
        for call in (
            memory.clone_thread("t1", "copy"),
            memory.branch_thread("t1", first.id, "branch"),
        ):
            with pytest.raises(EmbedderMismatchError) as refused:
                await call
            assert refused.value.field == "embedder" and "embedder=" in refused.value.reason
            assert "reindex" in refused.value.reason, refused.value.reason
            assert await memory.get_thread("copy") is None and await memory.get_thread("branch") is None
        assert memory.vector is not None and await memory.vector.dimension_counts() == counts


async def test_reindex_of_one_scope_with_another_embedder_is_refused_while_the_rest_is_the_old_ones() -> None:
    memory, counts = await _two_resources()
    async with memory:
        assert memory.vector is not None
        for scope in ({"resource_id": "r1"}, {"thread_id": "t2"}):
            with pytest.raises(EmbedderMismatchError) as refused:
                await memory.reindex(**scope)
            reason = refused.value.reason
            assert refused.value.field == "embedder" and "embedder=" in reason and "new vector store" in reason
            assert await memory.vector.dimension_counts() == counts  # nothing written
        # A scope holding every vector of the old embedder is the repair: one embedder's index after it.
        await memory.vector.delete_resource("r2")
        assert await memory.reindex(resource_id="r1") == 2
        assert await memory.vector.dimension_counts() == {OTHER.dimension: 2}

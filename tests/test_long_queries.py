"""Long semantic-recall queries: the lexical embedder moves large input off
the event loop, and a long query still finds its hit."""

from __future__ import annotations

import importlib.util
import threading
from typing import Any

import numpy as np
import pytest

from memory_core import (
    Memory,
    MemoryConfig,
    Message,
    SemanticRecall,
    connect,
)
from memory_core.embedders import LEXICAL_INLINE_CHARS, LexicalHashEmbedder

pytestmark = pytest.mark.anyio

HAS_QDRANT = importlib.util.find_spec("memory_core_qdrant") is not None


class _ThreadRecordingEmbedder(LexicalHashEmbedder):
    """The real lexical embedder, noting which thread did the CPU work."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[int] = []

    def _embed_checked(self, items: list[str]) -> Any:
        self.threads.append(threading.get_ident())
        return super()._embed_checked(items)


async def test_lexical_embedder_runs_large_input_off_the_event_loop() -> None:
    embedder = _ThreadRecordingEmbedder()
    small = ["short query"]
    large = ["word " * (LEXICAL_INLINE_CHARS // 5 + 1)]
    assert np.array_equal(await embedder.embed(small), LexicalHashEmbedder().embed_sync(small))
    assert np.array_equal(await embedder.embed(large), LexicalHashEmbedder().embed_sync(large))
    loop_thread = threading.get_ident()
    assert embedder.threads[0] == loop_thread
    assert embedder.threads[1] != loop_thread


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
async def test_recall_with_a_long_query_still_finds_the_hit() -> None:
    from memory_core import connect_vector

    config = MemoryConfig(semantic_recall=SemanticRecall(top_k=1, message_range={"before": 1}))  # type: ignore[arg-type]
    storage = await connect("memory://")
    async with Memory(storage, await connect_vector("qdrant::memory:"), config=config) as memory:
        await memory.create_thread("r1", thread_id="t1")
        await memory.save_messages(
            [Message("a", "t1", "user", "tea with milk"), Message("b", "t1", "user", "zebra crossing")]
        )
        query = "zebra " + "filler " * 20_000  # ~140,000 characters: embedded off the loop
        result = await memory.recall("t1", "r1", vector_search_string=query, per_page=0)
        assert result.semantic_hits == ["b"]
        assert [m.id for m in result.messages] == ["a", "b"]

"""A Memory given no embedder searches an index with the embedder that built
it, not with whatever the default is today: installing MiniLM must not break
an app whose index the lexical embedder built (a fresh-user trial found the
unchanged app failing with ``EmbedderMismatchError`` after the install)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import Memory
from memory_core.embedders import LexicalHashEmbedder, embedder_of_index, get_embedder, minilm_available

pytestmark = pytest.mark.anyio

needs_minilm = pytest.mark.skipif(not minilm_available(), reason="the MiniLM extra is not installed")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_index_tells_its_built_in_embedder_only_when_it_holds_one() -> None:
    lexical = LexicalHashEmbedder().dimension
    assert embedder_of_index({}) is None
    assert embedder_of_index({lexical: 0}) is None
    found = embedder_of_index({lexical: 3})
    assert found is not None and found.name == LexicalHashEmbedder().name
    assert embedder_of_index({lexical: 3, 384: 1}) is None  # mixed: check_embedder says what to do
    assert embedder_of_index({7: 3}) is None  # another embedder's: nothing to guess


@needs_minilm
async def test_an_index_built_by_the_lexical_embedder_stays_searchable_once_minilm_is_the_default(
    tmp_path: Path,
) -> None:
    storage, vectors = f"sqlite:///{tmp_path / 'app.db'}", f"qdrant+path:///{tmp_path / 'vectors'}"
    async with await Memory.open(storage, vectors, embedder=get_embedder("lexical")) as first:
        await first.create_thread("alice", thread_id="chat")
        await first.append_messages("chat", [("user", "my cat is called zorblax")], resource_id="alice")
    async with await Memory.open(storage, vectors) as later:  # no embedder: the default is MiniLM here
        assert later.embedder is not None and later.embedder.name == LexicalHashEmbedder().name
        result = await later.recall("chat", "alice", vector_search_string="zorblax cat")
        assert [m.content for m in result.messages if m.id in result.semantic_hits]
        await later.append_messages("chat", [("user", "and a dog")], resource_id="alice")  # no EmbedderMismatchError
        assert (await later.check_index(resource_id="alice")).in_step


@needs_minilm
async def test_a_given_embedder_is_kept_and_refused_as_before(tmp_path: Path) -> None:
    storage, vectors = f"sqlite:///{tmp_path / 'app.db'}", f"qdrant+path:///{tmp_path / 'vectors'}"
    async with await Memory.open(storage, vectors, embedder="lexical") as first:
        await first.create_thread("alice", thread_id="chat")
        await first.append_messages("chat", [("user", "hello")], resource_id="alice")
    async with await Memory.open(storage, vectors, embedder="minilm") as chosen:
        assert chosen.embedder is not None and chosen.embedder.dimension == 384
        with pytest.raises(ValueError, match="embedder"):
            await chosen.append_messages("chat", [("user", "again")], resource_id="alice")

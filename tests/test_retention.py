"""Memory.prune removes vectors with their messages (R-PRUNE with R-VEC); the
storage-level rule tests live in the conformance suite (``test_r_prune_*``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from memory_core import InMemoryStorage, InMemoryVectorStore, ManualClock, Memory, RetentionPolicy, Thread
from memory_core.embedders import LexicalHashEmbedder

pytestmark = pytest.mark.anyio

T0 = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def memory() -> AsyncIterator[Memory]:
    storage = InMemoryStorage(clock=ManualClock(T0 + timedelta(days=40)))
    async with Memory(storage, InMemoryVectorStore(), LexicalHashEmbedder()) as memory:
        for thread_id in ("old", "live"):
            await memory.storage.save_thread(Thread(thread_id, "r1", created_at=T0))
        await memory.save_messages(
            [
                {"id": f"o{i}", "thread_id": "old", "role": "user", "content": f"tea {i}", "created_at": T0}
                for i in range(3)
            ]
            + [
                {"id": "l0", "thread_id": "live", "role": "user", "content": "tea old", "created_at": T0},
                {"id": "l1", "thread_id": "live", "role": "user", "content": "tea new"},
            ]
        )
        yield memory


async def test_prune_messages_removes_their_vectors(memory: Memory) -> None:
    assert memory.vector is not None
    report = await memory.prune(RetentionPolicy(older_than=timedelta(days=30), batch_size=2))
    assert report.messages == {"old": 3, "live": 1} and report.cutoff == T0 + timedelta(days=10)
    assert await memory.vector.count() == 1  # only l1 keeps a point
    assert [h.message_id for h in await memory.vector.search((await memory.embedder.embed(["tea"]))[0], 5)] == [  # type: ignore[union-attr]
        "l1"
    ]


async def test_prune_threads_removes_their_vectors_and_dry_run_keeps_them(memory: Memory) -> None:
    assert memory.vector is not None
    policy = RetentionPolicy("threads", older_than=timedelta(days=30))
    dry = await memory.prune(policy, dry_run=True)
    assert dry.threads == ("old",) and await memory.vector.count() == 5
    report = await memory.prune(policy)
    assert report.threads == ("old",) and report.messages == {"old": 3}
    assert await memory.vector.count(thread_id="old") == 0 and await memory.vector.count() == 2


@pytest.mark.parametrize("cut", ["storage", "vector"])
async def test_an_interrupted_prune_never_leaves_a_stored_message_without_vectors(
    memory: Memory, cut: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Messages go first, then their vectors: a run cut off at either step
    leaves every stored message indexed (before, vectors went first, and a
    run cut off between the two left stored messages recall could not
    find). A cut after the messages went leaves their vectors behind:
    orphans that recall skips, ``check_index`` reports and ``reindex``
    drops."""
    assert memory.vector is not None
    target = memory.storage if cut == "storage" else memory.vector
    seen: list[list[str]] = []

    async def cut_off(ids: list[str]) -> int:
        seen.append(ids)
        raise RuntimeError("cut off")

    monkeypatch.setattr(target, "delete_messages", cut_off)
    policy = RetentionPolicy(before=T0 + timedelta(seconds=1), batch_size=2)
    with pytest.raises(Exception, match="cut off"):
        await memory.prune(policy)
    monkeypatch.undo()
    assert seen == [["l0"]]  # threads in created_at order, ties by id
    status = await memory.check_index(resource_id="r1")
    assert not status.behind, status
    if cut == "storage":
        assert status.in_step and len(await memory.get_messages(["l0"])) == 1
    else:
        assert status.orphaned == 1 and await memory.get_messages(["l0"]) == []
        recalled = await memory.recall("live", vector_search_string="tea old", thread_config={"semantic_recall": True})
        assert "l1" in [m.id for m in recalled.messages], recalled.messages
        assert "l0" not in [m.id for m in recalled.messages] and "l0" not in recalled.semantic_hits
    report = await memory.prune(policy)
    assert report.message_count == (4 if cut == "storage" else 3)
    await memory.reindex(resource_id="r1")
    assert await memory.vector.count() == 1 and (await memory.check_index(resource_id="r1")).in_step

"""The in-process engine's erasure (R-ERASE): after ``delete_resource`` or
``delete_thread`` no file under the store's folder holds the erased ids or
words; the rest of the data is intact, on reopen too."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from memory_core import InMemoryStorage, ManualClock, Memory, MemoryConfig, Message
from memory_core.embedders import LexicalHashEmbedder
from memory_core.lexical import document_terms
from memory_core.lexical_index import LexicalDocument
from memory_core.memory import SemanticRecall
from memory_core.testing import folder_bytes
from memory_core.vector import VectorPoint

from memory_core_qdrant import QdrantEdgeStore, _rebuild, edge
from memory_core_qdrant._rebuild import ERASED, REBUILD

pytestmark = pytest.mark.anyio

ERASED_RESOURCE = "ZZerasemeRID"
ERASED_THREADS = ("ZZerasemeT1", "ZZerasemeT2")
ERASED_WORDS = "xylophonequark zebrawombat"
KEPT = "keptthreadQQ"
T0 = datetime(2025, 1, 1, tzinfo=UTC)
SEMANTIC = MemoryConfig(last_messages=False, semantic_recall=SemanticRecall(3, 0, "thread"))


def vector(seed: int, dim: int) -> np.ndarray:
    return np.random.default_rng(seed).random(dim).astype(np.float32)


async def fill(store: QdrantEdgeStore) -> None:
    """Two erased threads and one kept one, in two dimensions, with documents."""
    points, documents = [], []
    owners = [(ERASED_THREADS[0], ERASED_RESOURCE), (ERASED_THREADS[1], ERASED_RESOURCE), (KEPT, "keptRR")]
    for n, (thread, resource) in enumerate(owners * 4):
        message = f"{thread}-m{n}"
        text = f"{ERASED_WORDS} number {n}" if resource == ERASED_RESOURCE else f"kept words {n}"
        for dim in (8, 16):
            points.append(VectorPoint(message, 0, vector(n, dim), thread, resource, n))
        documents.append(LexicalDocument(message, thread, resource, *document_terms(text)))
    await store.upsert(points)
    await store.index_documents(documents)


def traces(blob: bytes, *needles: str) -> list[str]:
    return [needle for needle in needles if needle.encode() in blob]


@pytest.mark.parametrize("in_memory", [False, True], ids=["path", "memory"])
async def test_delete_resource_leaves_no_trace_in_any_file(tmp_path: Path, in_memory: bool) -> None:
    store = QdrantEdgeStore(None if in_memory else tmp_path / "vectors")
    async with store:
        await fill(store)
        assert store._root is not None
        folder = store._root
        assert traces(folder_bytes(folder), ERASED_RESOURCE, *ERASED_THREADS)  # the scan sees them
        assert await store.lexical_search("kept", 10, resource_id="keptRR")  # the mirror is loaded
        await store.delete_resource(ERASED_RESOURCE)
        blob = folder_bytes(folder)
        assert traces(blob, ERASED_RESOURCE, *ERASED_THREADS, *ERASED_WORDS.split()) == []
        assert not [name for name in os.listdir(folder) if name.endswith((REBUILD, ERASED))]
        assert await store.count_points() == 8
        assert await store.count_documents() == 4
        hits = await store.lexical_search("kept words", 10, resource_id="keptRR")
        assert len(hits) == 4
        assert await store.lexical_search("xylophonequark", 10, resource_id=ERASED_RESOURCE) == []
        assert [h.message_id for h in await store.search(vector(2, 8), 1, thread_id=KEPT)] == [f"{KEPT}-m2"]
        await store.upsert([VectorPoint("later", 0, vector(99, 8), KEPT, "keptRR", 99)])  # still writable
        assert await store.count_points(thread_id=KEPT) == 9
    if not in_memory:
        async with QdrantEdgeStore(tmp_path / "vectors") as again:
            assert await again.count_points() == 9
            assert len(await again.lexical_search("kept words", 10, resource_id="keptRR")) == 4
            await again.destroy()


async def test_delete_thread_leaves_no_trace_of_the_thread(tmp_path: Path) -> None:
    async with QdrantEdgeStore(tmp_path / "vectors") as store:
        await fill(store)
        await store.delete_thread(ERASED_THREADS[0])
        blob = folder_bytes(str(tmp_path / "vectors"))
        assert traces(blob, ERASED_THREADS[0]) == []
        assert traces(blob, ERASED_THREADS[1], ERASED_RESOURCE) == [ERASED_THREADS[1], ERASED_RESOURCE]
        assert await store.count_points(thread_id=ERASED_THREADS[1]) == 8


async def test_an_unknown_id_rebuilds_nothing(tmp_path: Path) -> None:
    async with QdrantEdgeStore(tmp_path / "vectors") as store:
        await fill(store)
        before = {name: os.stat(tmp_path / "vectors" / name).st_ino for name in os.listdir(tmp_path / "vectors")}
        await store.delete_resource("never")
        after = {name: os.stat(tmp_path / "vectors" / name).st_ino for name in os.listdir(tmp_path / "vectors")}
        assert after == before


@pytest.mark.parametrize("stage", ["copying", "swapped"])
async def test_an_interrupted_rebuild_is_finished_or_undone_on_open(tmp_path: Path, stage: str) -> None:
    where = tmp_path / "vectors"
    async with QdrantEdgeStore(where) as store:
        await fill(store)
    shard = where / "memory_messages_8"
    if stage == "copying":  # a half-made copy beside the shard: deleted
        (where / f"memory_messages_8{REBUILD}").mkdir()
    else:  # the copy complete, the old shard moved away: the copy takes its place
        shutil.copytree(shard, where / f"memory_messages_8{REBUILD}")
        os.rename(shard, where / f"memory_messages_8{ERASED}")
    async with QdrantEdgeStore(where) as store:
        assert sorted(os.listdir(where)) == ["memory_documents", "memory_messages_16", "memory_messages_8"]
        assert await store.count_points() == 24


async def test_memory_delete_resource_leaves_no_trace_in_the_folder(tmp_path: Path) -> None:
    """The operator's trial: ``Memory.delete_resource`` over a ``qdrant+path`` store."""
    where = tmp_path / "vectors"
    vectors = QdrantEdgeStore(where)
    async with Memory(
        InMemoryStorage(clock=ManualClock(T0)), vectors, LexicalHashEmbedder(), allow_volatile_vectors=True
    ) as memory:
        for n, thread in enumerate(ERASED_THREADS):
            await memory.create_thread(ERASED_RESOURCE, thread_id=thread)
            await memory.save_messages([Message(f"{thread}-m", thread, "user", f"{ERASED_WORDS} {n}", created_at=T0)])
        await memory.create_thread("keptRR", thread_id=KEPT)
        await memory.save_messages([Message("kept-m", KEPT, "user", "kept words", created_at=T0)])
        await memory.delete_resource(ERASED_RESOURCE)
        assert traces(folder_bytes(str(where)), ERASED_RESOURCE, *ERASED_THREADS, *ERASED_WORDS.split()) == []
        result = await memory.recall(KEPT, "keptRR", "kept words", thread_config=SEMANTIC)
        assert result.semantic_hits == ["kept-m"]


async def test_memory_delete_resource_rebuilds_each_touched_shard_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resource of 5 threads whose points share the shards: each shard is
    rebuilt once. Before: ``Memory.delete_resource`` deleted the vectors
    thread by thread, so each shard was rebuilt 5 times (3-4 s each)."""
    rebuilt: list[str] = []
    real = _rebuild.copy_shard

    def counted(shard: object, where: str, *args: object, **kwargs: object) -> object:
        rebuilt.append(os.path.basename(where))
        return real(shard, where, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(edge, "copy_shard", counted)
    threads = [f"{ERASED_THREADS[0]}-{n}" for n in range(5)]
    async with Memory(
        InMemoryStorage(clock=ManualClock(T0)),
        QdrantEdgeStore(tmp_path / "vectors"),
        LexicalHashEmbedder(),
        allow_volatile_vectors=True,  # a test folder: removed with tmp_path
    ) as memory:
        for n, thread in enumerate(threads):
            await memory.create_thread(ERASED_RESOURCE, thread_id=thread)
            await memory.save_messages([Message(f"{thread}-m", thread, "user", f"{ERASED_WORDS} {n}", created_at=T0)])
        await memory.create_thread("keptRR", thread_id=KEPT)
        await memory.save_messages([Message("kept-m", KEPT, "user", "kept words", created_at=T0)])
        # The embedder's record (memory_embedder_<dim>) holds no point of any resource: never rebuilt.
        folders = os.listdir(tmp_path / "vectors")
        touched = sorted(name for name in folders if not name.startswith((".", "memory_embedder_")))
        await memory.delete_resource(ERASED_RESOURCE)
        assert sorted(rebuilt) == touched, rebuilt  # every shard held some of the resource's points
        assert traces(folder_bytes(str(tmp_path / "vectors")), ERASED_RESOURCE, *threads) == []
        assert (await memory.recall(KEPT, "keptRR", "kept words", thread_config=SEMANTIC)).semantic_hits == ["kept-m"]

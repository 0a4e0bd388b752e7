"""The in-process engine (qdrant-edge-py): persistence, files, locking, URLs."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import qdrant_edge as qe
from memory_core import connect_vector
from memory_core.errors import BackendError, ValidationError
from memory_core.lexical import bm25_rank, document_terms
from memory_core.lexical_index import LexicalDocument
from memory_core.vector import VectorPoint, point_id
from memory_core_conformance.vector_store import axis, point

from memory_core_qdrant import QdrantEdgeStore, QdrantServerStore, from_url

pytestmark = pytest.mark.anyio


def vec(*values: float) -> np.ndarray:
    out = np.zeros(8, dtype=np.float32)
    out[: len(values)] = values
    return out


def points() -> list[VectorPoint]:
    return [
        VectorPoint("m1", 0, vec(1.0), "t1", "r1", 10),
        VectorPoint("m1", 1, vec(1.0, 1.0), "t1", "r1", 10),
        VectorPoint("ñandú-1", 0, vec(0.0, 1.0), "t2", "r1", 20),
        VectorPoint("m3", 0, vec(0.0, 0.0, 1.0), "t3", "r2", 30),
    ]


def url_of(path: Path) -> str:
    """``qdrant+path:////absolute/dir`` (four slashes for an absolute path)."""
    return f"qdrant+path:///{path}"


async def test_data_persists_across_reopen(tmp_path: Path) -> None:
    where = tmp_path / "vectors"
    async with await connect_vector(url_of(where)) as store:
        await store.upsert(points())
        await store.upsert([VectorPoint("wide", 0, np.ones(16, dtype=np.float32), "t9", "r9", 1)])
        await store.delete_messages(["m3"])
    # One shard per dimension, and the lexical index's.
    assert sorted(os.listdir(where)) == ["memory_documents", "memory_messages_16", "memory_messages_8"]
    async with await connect_vector(url_of(where)) as again:
        assert isinstance(again, QdrantEdgeStore)  # dimensions() is BaseVectorStore's, not the protocol's
        assert await again.dimensions() == [8, 16]
        assert await again.count_points() == 4
        hits = await again.search(vec(0.0, 1.0), 5, resource_id="r1")
        assert [h.message_id for h in hits] == ["ñandú-1", "m1"]
        assert hits[1].score == pytest.approx(float(np.sqrt(0.5)), abs=1e-5)
        await again.delete_thread("t1")
    async with await connect_vector(url_of(where)) as third:
        assert isinstance(third, QdrantEdgeStore)
        assert await third.count() == 2
        await third.destroy()
    assert os.listdir(where) == []


async def test_lexical_search_reads_a_mirror_that_follows_writes_and_is_read_again_on_reopen(
    tmp_path: Path,
) -> None:
    where = tmp_path / "vectors"
    texts = {"m1": "dogs ran on the beach", "m2": "the dog Rex sleeps", "m3": "Rex dogs dogs pottery"}

    def documents(*ids: str) -> list[LexicalDocument]:
        return [LexicalDocument(m, "t1", "r1", *document_terms(texts[m])) for m in ids]

    def reference(*ids: str) -> list[tuple[str, float]]:
        return bm25_rank("dogs Rex", [(m, texts[m]) for m in ids], 10)

    async with await connect_vector(url_of(where)) as store:
        assert isinstance(store, QdrantEdgeStore)  # index_documents is BaseVectorStore's, not the protocol's
        await store.index_documents(documents("m1", "m2"))
        assert await store.lexical_search("dogs Rex", 10, resource_id="r1") == reference("m1", "m2")  # loads it
        await store.index_documents(documents("m3"))
        await store.delete_messages(["m1"])
        assert await store.lexical_search("dogs Rex", 10, thread_id="t1") == reference("m2", "m3")
    async with await connect_vector(url_of(where)) as again:
        assert isinstance(again, QdrantEdgeStore)
        assert await again.lexical_search("dogs Rex", 10, resource_id="r1") == reference("m2", "m3")
        await again.destroy()


async def test_a_shard_with_the_engines_default_config_opens_and_is_reconfigured(tmp_path: Path) -> None:
    # As made by earlier versions: the engine's defaults (HNSW m=16, a WAL).
    where = tmp_path / "memory_messages_8"
    shard = qe.EdgeShard.create(
        str(where), qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=8, distance=qe.Distance.Cosine))
    )
    payload = {"message_id": "old", "thread_id": "t1", "resource_id": "r1", "created_at": 5, "chunk": 0}
    shard.update(
        qe.UpdateOperation.upsert_points([qe.Point(uuid.UUID(point_id("old", 0)), vec(1.0).tolist(), payload)])
    )
    shard.close()
    async with await connect_vector(url_of(tmp_path)) as store:
        await store.upsert(points())
        hits = await store.search(vec(1.0), 2, thread_id="t1")
        assert [(h.message_id, h.resource_id) for h in hits] == [("m1", "r1"), ("old", "r1")]
        assert hits[1].score == pytest.approx(1.0, abs=1e-5)
    config = json.loads((where / "edge_config.json").read_text())
    assert config["hnsw_config"]["m"] == 0  # optimize() never builds a graph
    assert config["payload_memory"] == "cached"
    assert config["max_search_threads"] >= 1


async def test_relative_path_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rel").mkdir()
    store = from_url("qdrant+path:///rel/vectors")
    assert isinstance(store, QdrantEdgeStore)
    assert store.path == str(tmp_path / "rel" / "vectors")
    async with store:
        await store.upsert(points())
    assert (tmp_path / "rel" / "vectors" / "memory_messages_8").is_dir()


async def test_memory_mode_removes_its_directory_on_close() -> None:
    store = from_url("qdrant::memory:")
    assert isinstance(store, QdrantEdgeStore) and store.in_memory
    async with store:
        await store.upsert(points())
        root = store._root
        assert root is not None
        assert Path(root).is_dir()  # noqa: ASYNC240 - a test's quick stat
    assert not Path(root).exists()  # noqa: ASYNC240


async def test_a_second_opener_of_the_same_directory_gets_a_backend_error(tmp_path: Path) -> None:
    async with await connect_vector(url_of(tmp_path)) as first:
        await first.upsert(points())
        second = from_url(url_of(tmp_path))
        with pytest.raises(BackendError) as caught:
            await second.open()
        assert caught.value.backend == "qdrant"
        assert caught.value.operation == "open"
        assert caught.value.retryable is False
        assert caught.value.__cause__ is caught.value.original is not None
        await second.close()
        assert await first.count_points() == 4


async def test_namespaces_share_a_directory(tmp_path: Path) -> None:
    async with (
        await connect_vector(url_of(tmp_path), namespace="a") as first,
        await connect_vector(url_of(tmp_path), namespace="b") as second,
        await connect_vector(url_of(tmp_path)) as plain,
    ):
        assert isinstance(plain, QdrantEdgeStore)
        await first.upsert(points())
        await second.upsert(points()[:1])
        await plain.upsert(points()[:2])
        assert (await first.count_points(), await second.count_points(), await plain.count_points()) == (4, 1, 2)
        assert (await first.count(), await second.count(), await plain.count()) == (3, 1, 1)
        shards = ["a_memory_documents", "a_memory_messages_8", "b_memory_documents", "b_memory_messages_8"]
        assert sorted(os.listdir(tmp_path)) == [*shards, "memory_documents", "memory_messages_8"]
        await plain.destroy()  # its vectors and its lexical index, not the other namespaces'
        assert sorted(os.listdir(tmp_path)) == shards


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("qdrant::memory:", QdrantEdgeStore),
        ("QDRANT::memory:", QdrantEdgeStore),
        ("qdrant+path:///data/v", QdrantEdgeStore),
        ("qdrant+path:////abs/v?batch_size=10", QdrantEdgeStore),
        ("qdrant://localhost:6333", QdrantServerStore),
        ("qdrant+http://localhost", QdrantServerStore),
        ("qdrant+https://cloud.example:6333/prefix?api_key=k&prefer_grpc=true&timeout=5", QdrantServerStore),
        ("qdrant+path://:memory:", QdrantEdgeStore),
    ],
)
def test_from_url_picks_the_backend(url: str, kind: type) -> None:
    assert type(from_url(url)) is kind


def test_from_url_options() -> None:
    edge = from_url("qdrant+path:////abs/v?batch_size=10&overfetch=2", namespace="n1")
    assert (edge.batch_size, edge.overfetch, edge.namespace) == (10, 2, "n1")
    server = from_url("qdrant+https://h:1234/p?exact=true", overfetch=3)
    assert isinstance(server, QdrantServerStore)
    assert (server.url, server.exact, server.overfetch) == ("https://h:1234/p", True, 3)
    assert QdrantServerStore.from_url("qdrant://h").url == "http://h"  # type: ignore[attr-defined]
    in_memory = from_url("qdrant+path://:memory:")
    assert isinstance(in_memory, QdrantEdgeStore) and in_memory.in_memory
    inexact = from_url("qdrant://h?exact=off")
    assert isinstance(inexact, QdrantServerStore) and inexact.exact is False


def test_repr_names_the_place_and_namespace(tmp_path: Path) -> None:
    assert repr(from_url("qdrant::memory:", namespace="n1")) == "QdrantEdgeStore(':memory:', namespace='n1')"
    assert repr(from_url(url_of(tmp_path))) == f"QdrantEdgeStore({str(tmp_path)!r}, namespace=None)"
    assert repr(from_url("qdrant://h:1234")) == "QdrantServerStore('http://h:1234', namespace=None)"


@pytest.mark.parametrize(
    ("url", "options"),
    [
        ("qdrant:", {}),
        ("localhost", {}),
        ("qdrant+path:/dir", {}),
        ("qdrant://h", {"api_key": 5}),
        ("qdrant://h", {"exact": 1}),
        ("qdrant://", {}),
        ("redis://localhost", {}),
        ("qdrant+path://host/dir", {}),
        ("qdrant+path:///", {}),
        ("qdrant://user:pw@host", {}),
        ("qdrant://host:notaport", {}),
        ("qdrant::memory:?api_key=x", {}),
        ("qdrant::memory:", {"prefer_grpc": True}),
        ("qdrant::memory:?batch_size=0", {}),
        ("qdrant::memory:?overfetch=-1", {}),
        ("qdrant::memory:?batch_size=1&batch_size=2", {}),
        ("qdrant://h?prefer_grpc=maybe", {}),
        ("qdrant://h?client=x", {}),
        ("qdrant::memory:", {"namespace": "bad name"}),
        ("qdrant::memory:", {"namespace": "x" * 49}),
        ("qdrant::memory:", {"unknown": 1}),
    ],
)
def test_bad_urls_and_options_are_rejected(url: str, options: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        from_url(url, **options)


def test_a_subclass_only_accepts_its_own_urls() -> None:
    with pytest.raises(ValidationError, match="QdrantServerStore"):
        QdrantEdgeStore.from_url("qdrant://localhost")
    with pytest.raises(ValidationError, match="QdrantEdgeStore"):
        QdrantServerStore.from_url("qdrant::memory:")


async def test_strict_preflight_before_open_creates_nothing(tmp_path: Path) -> None:
    """``preflight(must_exist=True)`` before ``open``: an in-memory store and
    a missing or empty folder hold no vectors (ValidationError, field url),
    and nothing is created; a folder the store wrote to passes."""
    with pytest.raises(ValidationError, match="holds no memory-core vectors"):
        await from_url("qdrant::memory:").preflight(must_exist=True)
    missing = tmp_path / "missing"
    with pytest.raises(ValidationError, match="holds no memory-core vectors"):
        await from_url(url_of(missing)).preflight(must_exist=True)
    assert not missing.exists()
    async with await connect_vector(url_of(tmp_path / "v")) as written:
        await written.upsert(points())
    await from_url(url_of(tmp_path / "v")).preflight(must_exist=True)


async def test_a_folder_another_store_holds_is_refused_saying_so(tmp_path: Path) -> None:
    """The engine serves one open store per folder (it locks each shard's
    write-ahead log, for other processes and this one alike): the second
    gets a typed error naming the cause and the way out, not the engine's
    "failed to open WAL ... WouldBlock" (a fresh-user trial ran two app
    processes on one ``qdrant+path`` folder)."""
    url = f"qdrant+path:///{tmp_path / 'vectors'}"
    async with from_url(url) as holder:
        await holder.upsert([point("m1", axis(0))])
        with pytest.raises(BackendError, match="open in another process or store") as refused:
            async with from_url(url) as second:
                await second.count()
        assert "qdrant://" in str(refused.value) and not refused.value.retryable
    async with from_url(url) as store:  # the holder closed: the folder opens again
        assert await store.count() == 1

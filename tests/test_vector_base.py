"""What :class:`memory_core.vector.BaseVectorStore` does before and around its
primitives: validation before any primitive runs, the over-fetch widening,
driver errors wrapped, and the ``memory://`` vector scheme."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_core import InMemoryStorage, connect_vector
from memory_core.errors import BackendError, ValidationError
from memory_core.reference_vector import InMemoryVectorStore
from memory_core.registry import build_storage
from memory_core.transfer import check_persistent, reembedder
from memory_core.vector import BaseVectorStore, PointFilter, RawHit, Vector, VectorPoint

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class RecordingStore(InMemoryVectorStore):
    """The reference store, recording each primitive call (name, detail)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.calls: list[tuple[str, Any]] = []
        self.fail_search = False

    async def _connect(self) -> None:
        self.calls.append(("_connect", None))

    async def _upsert(self, name: str, ids: list[str], vectors: Vector, payloads: list[dict[str, Any]]) -> None:
        self.calls.append(("_upsert", len(ids)))
        await super()._upsert(name, ids, vectors, payloads)

    async def _search(self, name: str, vector: Vector, limit: int, flt: PointFilter) -> list[RawHit]:
        self.calls.append(("_search", limit))
        if self.fail_search:
            raise OSError("disk on fire")
        return await super()._search(name, vector, limit, flt)


def vec(*values: float) -> np.ndarray:
    out = np.zeros(4, dtype=np.float32)
    out[: len(values)] = values
    return out


async def test_bad_input_reaches_no_primitive() -> None:
    store = RecordingStore()
    bad = [
        store.upsert([VectorPoint("m1", 0, vec(1.0), "t1", "r1", 0), VectorPoint("m2", 0, vec(), "t1", "r1", 0)]),
        store.upsert(["not a point"]),  # type: ignore[list-item]
        store.search(vec(1.0), -1),
        store.search(vec(1.0), 1, resource_id=""),
        store.delete_messages("m1"),
        store.delete_resource(" "),
        store.count(thread_id=3),  # type: ignore[arg-type]
    ]
    for call in bad:
        with pytest.raises(ValidationError):
            await call
    assert store.calls == []  # not even a connect: validation comes before any I/O
    await store.close()


async def test_search_widens_until_top_k_distinct_messages() -> None:
    async with RecordingStore(overfetch=1) as store:
        chunks = [VectorPoint("long", c, vec(1.0, 0.01 * (c + 1)), "t1", "r1", 0) for c in range(10)]
        await store.upsert([*chunks, VectorPoint("other", 0, vec(1.0, 1.0), "t1", "r1", 0)])
        store.calls.clear()
        hits = await store.search(vec(1.0), 2)
        assert [h.message_id for h in hits] == ["long", "other"]
        assert store.calls == [("_search", 2), ("_search", 8), ("_search", 32)]


async def test_upsert_is_sent_in_batches() -> None:
    async with RecordingStore(batch_size=3) as store:
        await store.upsert([VectorPoint(f"m{i}", 0, vec(1.0, i), "t1", "r1", 0) for i in range(7)])
        assert [c for c in store.calls if c[0] == "_upsert"] == [("_upsert", 3), ("_upsert", 3), ("_upsert", 1)]


async def test_driver_errors_are_wrapped() -> None:
    async with RecordingStore() as store:
        await store.upsert([VectorPoint("m1", 0, vec(1.0), "t1", "r1", 0)])
        store.fail_search = True
        with pytest.raises(BackendError) as caught:
            await store.search(vec(1.0), 1)
        assert (caught.value.backend, caught.value.operation) == ("memory", "search")
        assert isinstance(caught.value.__cause__, OSError)


@pytest.mark.parametrize("options", [{"overfetch": 0}, {"batch_size": True}, {"namespace": "a b"}])
def test_bad_options_are_rejected(options: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        InMemoryVectorStore(**options)


async def test_memory_scheme_opens_the_reference_vector_store() -> None:
    store = await connect_vector("memory://", namespace="n1")
    assert isinstance(store, InMemoryVectorStore) and store.namespace == "n1"
    await store.upsert([VectorPoint("m1", 0, vec(1.0), "t1", "r1", 0)])
    assert await store.count() == 1
    await store.close()
    with pytest.raises(ValidationError):
        await connect_vector("memory://somewhere")


def test_transfers_re_embed_only_into_a_persistent_store(tmp_path: Path) -> None:
    """The reference store keeps its points in the object: a transfer's
    re-embedding into it would vanish with the process (refused, no I/O)."""
    store = InMemoryVectorStore()
    assert store.persistent is False
    with pytest.raises(ValidationError) as caught:
        reembedder(InMemoryStorage(), store, "--vector")
    assert caught.value.field == "--vector" and "in memory" in caught.value.reason
    store.persistent = True  # what a store on disk or on a server says
    check_persistent(store)
    persistent_storage = build_storage(f"sqlite:///{tmp_path / 'agent.db'}")
    assert callable(reembedder(persistent_storage, store))  # the pairing a transfer may re-embed into


async def test_preflight_must_exist_wants_a_collection_of_this_namespace() -> None:
    store = RecordingStore(namespace="app")
    await store.preflight()  # a store a command writes into: nothing checked
    with pytest.raises(
        ValidationError, match=r"holds no memory-core vectors \(no index of any dimension in namespace 'app'\)"
    ):
        await store.preflight(must_exist=True)
    await store.upsert([VectorPoint("m1", 0, vec(1, 0), "t1", "r1", 0)])
    await store.preflight(must_exist=True)  # open: its own listing answers
    await store.close()


@pytest.mark.skipif(
    importlib.util.find_spec("memory_core_qdrant") is None, reason="memory-core-qdrant is not installed"
)
async def test_edge_preflight_creates_no_folder(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "vectors"
    with pytest.raises(ValidationError, match="holds no memory-core vectors"):
        await _unopened(f"qdrant+path:///{missing}").preflight(must_exist=True)
    assert not (tmp_path / "typo").exists()
    made = tmp_path / "vectors"
    async with await connect_vector(f"qdrant+path:///{made}") as index:
        await index.upsert([VectorPoint("m1", 0, vec(1, 0), "t1", "r1", 0)])
    await _unopened(f"qdrant+path:///{made}").preflight(must_exist=True)
    with pytest.raises(ValidationError, match="no index of any dimension in namespace 'other'"):
        await _unopened(f"qdrant+path:///{made}", namespace="other").preflight(must_exist=True)


def _unopened(url: str, **options: Any) -> BaseVectorStore:
    from memory_core.registry import build_vector

    store = build_vector(url, **options)
    assert isinstance(store, BaseVectorStore)
    return store

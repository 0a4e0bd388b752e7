"""R-VEC on the vector-store level, on every mode (see conftest): point ids,
re-upserts, counts, deletes, filtered search, best-chunk de-duplication,
collection naming, namespaces, destroy, validation and life cycle."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import numpy as np
import pytest
from memory_core.errors import AdapterClosedError, ValidationError
from memory_core.vector import VectorPoint, point_id

from memory_core_qdrant import QdrantVectorStore

StoreFactory = Callable[..., QdrantVectorStore]

pytestmark = pytest.mark.anyio

DIM = 8


def unit(*values: float, dim: int = DIM) -> np.ndarray:
    """A unit vector whose first entries are ``values`` (rest zero)."""
    vector = np.zeros(dim, dtype=np.float32)
    vector[: len(values)] = values
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def axis(index: int, dim: int = DIM) -> np.ndarray:
    """The unit vector along ``index``."""
    vector = np.zeros(dim, dtype=np.float32)
    vector[index] = 1.0
    return vector


def point(
    message_id: str,
    vector: np.ndarray,
    thread_id: str = "t1",
    resource_id: str = "r1",
    chunk: int = 0,
    created_at_us: int = 1_735_689_600_000_000,
) -> VectorPoint:
    return VectorPoint(message_id, chunk, vector, thread_id, resource_id, created_at_us)


async def test_collection_is_named_by_dimension_with_namespace_prefix(store: QdrantVectorStore) -> None:
    await store.upsert([point("m1", axis(0)), point("m2", axis(1, dim=16))])
    assert await store.dimensions() == [DIM, 16]
    assert store.collection(DIM) == f"{store.namespace}_memory_messages_{DIM}"
    assert await store.count() == 2


async def test_collection_without_namespace_is_exactly_r_vec_name() -> None:
    async with QdrantVectorStore.from_url("qdrant::memory:") as store:
        assert store.collection(384) == "memory_messages_384"
        await store.upsert([point("m1", axis(0))])
        assert await store.dimensions() == [DIM]


@pytest.mark.parametrize(
    "message_id",
    ["msg_01", "42", "ñandú-1", "a b", "🧵 plan", "x" * 256, "T-1", "t-1", "00000000-0000-0000-0000-000000000000"],
)
async def test_any_message_id_round_trips(store: QdrantVectorStore, message_id: str) -> None:
    thread_id, resource_id = f"th {message_id}"[:256], f"res {message_id}"[:256]
    await store.upsert([point(message_id, axis(0), thread_id=thread_id, resource_id=resource_id)])
    hits = await store.search(axis(0), 3)
    assert [(h.message_id, h.thread_id, h.resource_id) for h in hits] == [(message_id, thread_id, resource_id)]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert await store.count(thread_id=thread_id) == 1
    assert await store.count(resource_id=resource_id) == 1
    await store.delete_messages([message_id])
    assert await store.count() == 0


async def test_ids_are_compared_exactly(store: QdrantVectorStore) -> None:
    await store.upsert([point("T-1", axis(0)), point("t-1", axis(1)), point("t-1 ", axis(2))])
    assert await store.count() == 3
    await store.delete_messages(["t-1"])
    assert sorted(h.message_id for h in await store.search(axis(0), 5)) == ["T-1", "t-1 "]


async def test_point_ids_are_uuid5_of_message_and_chunk() -> None:
    assert point_id("m1", 0) != point_id("m1", 1) != point_id("m10", 0)
    assert point_id("m1", 0) == point_id("m1", 0)


async def test_reupsert_replaces_and_never_duplicates(store: QdrantVectorStore) -> None:
    await store.upsert([point("m1", axis(0)), point("m2", axis(1))])
    await store.upsert([point("m1", axis(2)), point("m2", axis(1))])
    assert await store.count() == 2
    hits = await store.search(axis(2), 1)
    assert [h.message_id for h in hits] == ["m1"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)


async def test_same_point_twice_in_one_call_keeps_the_last(store: QdrantVectorStore) -> None:
    await store.upsert([point("m1", axis(0)), point("m1", axis(3))])
    assert await store.count() == 1
    hits = await store.search(axis(3), 1)
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)


async def test_counts_by_thread_and_resource(store: QdrantVectorStore) -> None:
    await store.upsert(
        [
            point("a1", axis(0), "t1", "r1"),
            point("a1", axis(1), "t1", "r1", chunk=1),
            point("a2", axis(1), "t1", "r1"),
            point("b1", axis(2), "t2", "r1"),
            point("c1", axis(3), "t3", "r2"),
        ]
    )
    assert await store.count() == 5
    assert await store.count(thread_id="t1") == 3
    assert await store.count(resource_id="r1") == 4
    assert await store.count(thread_id="t3", resource_id="r1") == 0
    assert await store.count(thread_id="t3", resource_id="r2") == 1
    assert await store.count(thread_id="nope") == 0


async def test_delete_messages_removes_every_chunk_and_dimension(store: QdrantVectorStore) -> None:
    await store.upsert(
        [point("m1", axis(0), chunk=c) for c in range(3)] + [point("m1", axis(0, dim=16)), point("m2", axis(1))]
    )
    assert await store.count() == 5
    await store.delete_messages(["m1", "unknown"])
    assert await store.count() == 1
    assert [h.message_id for h in await store.search(axis(0), 5)] == ["m2"]
    assert await store.search(axis(0, dim=16), 5) == []
    await store.delete_messages([])
    assert await store.count() == 1


async def test_delete_thread_removes_only_that_thread(store: QdrantVectorStore) -> None:
    await store.upsert(
        [
            point("a1", axis(0), "t1"),
            point("a2", axis(1), "t1", chunk=1),
            point("b1", axis(2), "t2"),
            point("a3", axis(0, dim=16), "t1"),
        ]
    )
    await store.delete_thread("t1")
    assert await store.count() == 1
    assert await store.count(thread_id="t2") == 1
    await store.delete_thread("never-existed")
    assert await store.count() == 1


async def test_search_filters_by_thread_and_resource(store: QdrantVectorStore) -> None:
    # C16's layout with explicit vectors: axis 0 means "apples".
    await store.upsert(
        [
            point("a1", unit(1.0, 0.1), "t1", "r1"),
            point("a2", unit(0.1, 1.0), "t1", "r1"),
            point("b1", unit(1.0, 0.3), "t2", "r1"),
            point("b2", unit(0.0, 0.2, 1.0), "t2", "r1"),
            point("c1", unit(1.0), "t3", "r2"),
        ]
    )
    query = axis(0)
    in_thread = await store.search(query, 4, thread_id="t1")
    assert [h.message_id for h in in_thread] == ["a1", "a2"]
    in_resource = await store.search(query, 4, resource_id="r1")
    assert [h.message_id for h in in_resource] == ["a1", "b1", "a2", "b2"]
    assert [h.message_id for h in await store.search(query, 4, resource_id="r2")] == ["c1"]
    assert await store.search(query, 4, thread_id="t4") == []
    assert await store.search(query, 4, thread_id="t3", resource_id="r1") == []
    everywhere = await store.search(query, 2)
    assert [h.message_id for h in everywhere] == ["c1", "a1"]
    assert [h.score for h in in_resource] == sorted((h.score for h in in_resource), reverse=True)


async def test_one_hit_per_message_with_its_best_chunk(store_factory: StoreFactory) -> None:
    store = store_factory(overfetch=1)  # forces the widening loop
    await store.open()
    try:
        # m-long has 40 chunks all closer to the query than any other message.
        chunks = [point("m-long", unit(1.0, 0.01 * (c + 1)), chunk=c) for c in range(40)]
        others = [point(f"m{i}", unit(1.0, 1.0 + i)) for i in range(5)]
        await store.upsert(chunks + others)
        hits = await store.search(axis(0), 3)
        assert [h.message_id for h in hits] == ["m-long", "m0", "m1"]
        assert hits[0].score == pytest.approx(float(unit(1.0, 0.01)[0]), abs=1e-5)
        all_hits = await store.search(axis(0), 10)
        assert [h.message_id for h in all_hits] == ["m-long", "m0", "m1", "m2", "m3", "m4"]
    finally:
        await store.destroy()


async def test_top_k_zero_and_missing_collection(store: QdrantVectorStore) -> None:
    assert await store.search(axis(0), 5) == []  # no collection yet
    await store.upsert([point("m1", axis(0))])
    assert await store.search(axis(0), 0) == []
    assert await store.search(axis(0, dim=32), 5) == []  # no collection of that dimension


async def test_namespaces_isolate_stores(store_factory: StoreFactory) -> None:
    first, second = store_factory(), store_factory()
    async with first, second:
        await first.upsert([point("m1", axis(0))])
        await second.upsert([point("m1", axis(1)), point("m2", axis(2))])
        assert await first.count() == 1
        assert await second.count() == 2
        await first.delete_thread("t1")
        assert await second.count() == 2
        assert [h.message_id for h in await first.search(axis(2), 5)] == []
        await first.destroy()
        assert await second.count() == 2
        assert [h.message_id for h in await second.search(axis(2), 1)] == ["m2"]
        await second.destroy()


async def test_destroy_removes_the_collections(store_factory: StoreFactory, mode: str) -> None:
    store = store_factory()
    namespace = store.namespace
    await store.open()
    await store.upsert([point("m1", axis(0)), point("m2", axis(0, dim=16))])
    await store.destroy()
    with pytest.raises(AdapterClosedError):
        await store.count()
    if mode == "edge-memory":
        return  # a new in-memory store never sees the old one anyway
    again = store_factory(namespace=namespace)
    async with again:
        assert await again.dimensions() == []
        assert await again.count() == 0
        await again.destroy()


async def test_collection_creation_is_idempotent_and_concurrent(store_factory: StoreFactory) -> None:
    store = store_factory()
    async with store:
        async with anyio.create_task_group() as group:
            for i in range(8):
                group.start_soon(store.upsert, [point(f"m{i}", axis(i % DIM))])
        assert await store.count() == 8
        assert await store.dimensions() == [DIM]
        await store.destroy()


async def test_large_upsert_is_batched(store_factory: StoreFactory) -> None:
    rng = np.random.default_rng(3)
    store = store_factory(batch_size=7)
    async with store:
        vectors = rng.standard_normal((50, DIM)).astype(np.float32)
        await store.upsert([point(f"m{i}", vectors[i], thread_id=f"t{i % 3}") for i in range(50)])
        assert await store.count() == 50
        assert await store.count(thread_id="t0") == 17
        await store.delete_messages([f"m{i}" for i in range(0, 50, 2)])
        assert await store.count() == 25
        await store.destroy()


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros(DIM, dtype=np.float32),
        np.array([np.nan] + [0.0] * (DIM - 1), dtype=np.float32),
        np.array([np.inf] + [0.0] * (DIM - 1), dtype=np.float32),
        np.ones((2, DIM), dtype=np.float32),
        np.array([], dtype=np.float32),
    ],
    ids=["zero", "nan", "inf", "2d", "empty"],
)
async def test_bad_vectors_are_rejected_before_any_write(store: QdrantVectorStore, bad: np.ndarray) -> None:
    with pytest.raises(ValidationError):
        await store.upsert([point("ok", axis(0)), point("bad", bad)])
    assert await store.count() == 0
    with pytest.raises(ValidationError):
        await store.search(bad, 3)


@pytest.mark.parametrize(
    "kwargs",
    [{"message_id": ""}, {"thread_id": "  "}, {"resource_id": "a\x00b"}, {"chunk": -1}, {"created_at_us": 1.5}],
)
async def test_bad_points_are_rejected(store: QdrantVectorStore, kwargs: dict[str, Any]) -> None:
    fields: dict[str, Any] = {
        "message_id": "m1",
        "chunk": 0,
        "vector": axis(0),
        "thread_id": "t1",
        "resource_id": "r1",
        "created_at_us": 0,
    }
    fields.update(kwargs)
    with pytest.raises(ValidationError):
        await store.upsert([VectorPoint(**fields)])
    assert await store.count() == 0


async def test_bad_arguments_are_rejected(store: QdrantVectorStore) -> None:
    for top_k in (-1, True, 2.0):
        with pytest.raises(ValidationError, match="top_k"):
            await store.search(axis(0), top_k)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="thread_id"):
        await store.search(axis(0), 1, thread_id="")
    with pytest.raises(ValidationError, match="message_ids"):
        await store.delete_messages("m1")
    with pytest.raises(ValidationError):
        await store.delete_thread("")
    with pytest.raises(ValidationError):
        await store.count(resource_id=5)  # type: ignore[arg-type]


async def test_life_cycle(store_factory: StoreFactory) -> None:
    store = store_factory()
    await store.open()
    await store.open()
    await store.upsert([point("m1", axis(0))])
    await store.destroy()
    await store.close()  # idempotent
    with pytest.raises(AdapterClosedError):
        await store.upsert([point("m1", axis(0))])
    with pytest.raises(AdapterClosedError):
        await store.open()


async def test_public_methods_open_lazily(store_factory: StoreFactory) -> None:
    store = store_factory()
    await store.upsert([point("m1", axis(0))])
    assert await store.count() == 1
    await store.destroy()

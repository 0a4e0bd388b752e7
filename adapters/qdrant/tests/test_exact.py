"""The engine's answers equal exact brute force (numpy) on random data.

For random unit vectors spread over resources and threads, every filtered
top-k from the store must equal numpy's exact cosine top-k over the same
points: the same message ids in the same order, where two neighbours may
swap only when their exact scores tie (within float32 rounding). The same
holds after ``QdrantEdgeStore.optimize()`` has rewritten the segments.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from memory_core.vector import BaseVectorStore, VectorHit, VectorPoint

from memory_core_qdrant import QdrantEdgeStore, from_url

pytestmark = pytest.mark.anyio

StoreFactory = Callable[..., BaseVectorStore]

COUNT, DIM, RESOURCES, THREADS, TOP_K = 1500, 48, 6, 30, 10
TIE = 1e-5


def brute_force(
    vectors: npt.NDArray[np.float32], ids: list[str], query: npt.NDArray[np.float32], top_k: int, mask: np.ndarray
) -> list[tuple[str, float]]:
    """Exact cosine top-k over the rows where ``mask`` is true."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    scores = unit @ (query / np.linalg.norm(query))
    rows = np.flatnonzero(mask)
    order = rows[np.argsort(-scores[rows], kind="stable")][:top_k]
    return [(ids[i], float(scores[i])) for i in order]


def assert_same_ranking(got: list[VectorHit], expected: list[tuple[str, float]]) -> None:
    """Same ids in the same order, allowing swaps only between tied scores."""
    assert len(got) == len(expected)
    exact = dict(expected)
    for hit, (want_id, want_score) in zip(got, expected, strict=True):
        assert hit.score == pytest.approx(want_score, abs=TIE)
        if hit.message_id != want_id:
            assert hit.message_id in exact and abs(exact[hit.message_id] - want_score) <= TIE
    if len(expected) == TOP_K and len(got) == TOP_K:
        # Nothing outside the exact top-k (beyond ties at the boundary) may appear.
        boundary = expected[-1][1]
        for hit in got:
            assert hit.message_id in exact or abs(hit.score - boundary) <= TIE


def assert_owners(got: list[VectorHit], threads: np.ndarray, resources: np.ndarray) -> None:
    """Each hit names its message's own thread and resource (ids ``m<row>``)."""
    for hit in got:
        row = int(hit.message_id[1:])
        assert (hit.thread_id, hit.resource_id) == (f"t{threads[row]}", f"r{resources[row]}")


async def test_engine_equals_numpy_brute_force(store: BaseVectorStore) -> None:
    rng = np.random.default_rng(20250101)
    vectors = rng.standard_normal((COUNT, DIM)).astype(np.float32)
    ids = [f"m{i:05d}" for i in range(COUNT)]
    resources = rng.integers(0, RESOURCES, COUNT)
    threads = rng.integers(0, THREADS, COUNT)
    await store.upsert(
        [
            VectorPoint(ids[i], 0, vectors[i], f"t{threads[i]}", f"r{resources[i]}", 1_700_000_000_000_000 + i)
            for i in range(COUNT)
        ]
    )
    queries = rng.standard_normal((12, DIM)).astype(np.float32)
    for number, query in enumerate(queries):
        resource, thread = number % RESOURCES, number % THREADS
        cases: list[tuple[dict[str, str], np.ndarray]] = [
            ({}, np.ones(COUNT, dtype=bool)),
            ({"resource_id": f"r{resource}"}, resources == resource),
            ({"thread_id": f"t{thread}"}, threads == thread),
        ]
        for filters, mask in cases:
            got = await store.search(query, TOP_K, **filters)
            assert_same_ranking(got, brute_force(vectors, ids, query, TOP_K, mask))
            assert_owners(got, threads, resources)


# Enough 384-d vectors to pass the engine's indexing threshold (10 MB), so
# that optimize() really rewrites the segment.
BIG, BIG_DIM = 8000, 384


@pytest.mark.parametrize("url", ["qdrant::memory:", "qdrant+path:///{tmp}/vectors"])
async def test_optimized_engine_equals_numpy_brute_force(url: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((BIG, BIG_DIM)).astype(np.float32)
    ids = [f"m{i:05d}" for i in range(BIG)]
    resources = rng.integers(0, 40, BIG)
    threads = resources * 10 + rng.integers(0, 10, BIG)
    store = from_url(url.format(tmp=tmp_path))
    assert isinstance(store, QdrantEdgeStore)
    async with store:
        for start in range(0, BIG, 2000):
            await store.upsert(
                [
                    VectorPoint(ids[i], 0, vectors[i], f"t{threads[i]}", f"r{resources[i]}", i)
                    for i in range(start, min(BIG, start + 2000))
                ]
            )
        assert await store.optimize() is True
        assert await store.optimize() is False  # nothing left to rewrite
        queries = rng.standard_normal((6, BIG_DIM)).astype(np.float32)
        for number, query in enumerate(queries):
            resource, thread = number * 7, number * 70 + 3
            for filters, mask in (
                ({}, np.ones(BIG, dtype=bool)),
                ({"resource_id": f"r{resource}"}, resources == resource),
                ({"thread_id": f"t{thread}"}, threads == thread),
                (
                    {"thread_id": f"t{thread}", "resource_id": f"r{resource}"},
                    (threads == thread) & (resources == resource),
                ),
            ):
                got = await store.search(query, TOP_K, **filters)
                assert_same_ranking(got, brute_force(vectors, ids, query, TOP_K, mask))
                assert_owners(got, threads, resources)
        # Writes after the rewrite land in a new segment and are searched with it.
        best = (await store.search(queries[0], 1, resource_id="r0"))[0]
        await store.delete_messages([best.message_id])
        await store.upsert([VectorPoint("fresh", 0, queries[0], "t0", "r0", 1)])
        hits = await store.search(queries[0], 3, resource_id="r0")
        assert hits[0].message_id == "fresh" and hits[0].score == pytest.approx(1.0, abs=1e-5)
        assert best.message_id not in [h.message_id for h in hits]
        assert await store.count() == BIG

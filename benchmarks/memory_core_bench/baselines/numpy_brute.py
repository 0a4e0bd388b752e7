"""Exact top-k by numpy brute force: the floor for filtered semantic recall.

Vectors are kept per resource in one contiguous float32 matrix (rows unit
length), so a search filtered by resource is one matrix-vector product over
that resource's rows and an ``argpartition``: the least work any engine can
do without an index.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memory_core_bench.dataset import BenchMessage
from memory_core_bench.subjects import Answer, Kind, Vector, VectorSubject

__all__ = ["NumpyBruteForce"]


class NumpyBruteForce(VectorSubject):
    """Exact cosine top-k over one resource's vectors with numpy.

    Args:
        backend: the group it is compared in.
    """

    kind: Kind = "raw"

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.label = "numpy brute force"
        self._pending: dict[str, list[tuple[list[str], Vector]]] = {}
        self._index: dict[str, tuple[list[str], Vector]] = {}

    async def close(self) -> None:
        """Drop the vectors."""
        self._pending.clear()
        self._index.clear()

    async def add(self, messages: Sequence[BenchMessage], vectors: Vector) -> None:
        """Append rows to their resources' matrices (built on first search)."""
        by_resource: dict[str, list[int]] = {}
        for row, message in enumerate(messages):
            by_resource.setdefault(message.resource_id, []).append(row)
        for resource, rows in by_resource.items():
            chunk = (
                [messages[r].id for r in rows],
                np.ascontiguousarray(vectors[rows], dtype=np.float32),
            )
            self._pending.setdefault(resource, []).append(chunk)

    def _matrix(self, resource_id: str) -> tuple[list[str], Vector]:
        pending = self._pending.pop(resource_id, None)
        if pending:
            ids, matrix = self._index.get(resource_id, ([], np.empty((0, pending[0][1].shape[1]), np.float32)))
            ids = ids + [i for chunk_ids, _ in pending for i in chunk_ids]
            matrix = np.ascontiguousarray(np.vstack([matrix, *(m for _, m in pending)]), dtype=np.float32)
            self._index[resource_id] = (ids, matrix)
        return self._index.get(resource_id, ([], np.empty((0, 0), np.float32)))

    async def search(self, query: Vector, top_k: int, resource_id: str) -> Answer:
        """Exact top-k by dot product (= cosine on unit vectors), best first."""
        ids, matrix = self._matrix(resource_id)
        if not ids:
            return Answer(-1, ())
        scores: npt.NDArray[np.float32] = matrix @ query
        k = min(top_k, len(ids))
        top = np.argpartition(-scores, k - 1)[:k]
        best = top[np.argsort(-scores[top], kind="stable")]
        return Answer(-1, tuple(ids[int(i)] for i in best))

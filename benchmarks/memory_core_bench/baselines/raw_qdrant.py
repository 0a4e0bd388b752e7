"""Raw Qdrant engine (qdrant-edge-py) for the in-process vector URLs.

The ceiling for ``qdrant::memory:`` and ``qdrant+path:///dir``: the same
engine the adapter embeds, driven by hand with the same shard config
(``memory_core_qdrant.edge.shard_config``: cosine, no graph, payloads in
memory; no WAL for the in-memory case), the same keyword payload indexes
(``message_id``, ``thread_id``, ``resource_id`` as the tenant field), the
same point ids (:func:`memory_core.vector.point_id`) and payloads, and the
same ``optimize()`` after the load. Writes run in a worker thread; a search
runs on the calling thread and is exact, like the adapter's (the binding
holds the GIL, so a worker thread would free nothing). A search asks for
exactly ``top_k`` points (one point per message here, so no over-fetch or
de-duplication is needed).

Server URLs (``qdrant://host``) have no raw baseline yet: the benchmark
machine has no Qdrant server.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as qe
from memory_core.vector import collection_name, point_id
from memory_core_qdrant.edge import shard_config

from memory_core_bench.dataset import BenchMessage
from memory_core_bench.subjects import Answer, Kind, Vector, VectorSubject

__all__ = ["RawQdrantEdge", "make"]

_EDGE_SCHEMES = ("qdrant", "qdrant+path")
_BATCH = 512


def make(backend: str, url: str, workdir: Path) -> RawQdrantEdge | None:
    """The raw engine for an in-process vector URL (None for server URLs)."""
    scheme = url.split(":", 1)[0].lower()
    if scheme not in _EDGE_SCHEMES or (scheme == "qdrant" and "://" in url):
        return None
    return RawQdrantEdge(backend, workdir / "raw-qdrant-edge", in_memory=scheme == "qdrant")


class RawQdrantEdge(VectorSubject):
    """qdrant-edge-py by hand, in its own shard directory.

    Args:
        backend: group name.
        folder: where the shard lives (deleted on close).
        in_memory: configure like ``qdrant::memory:`` (no WAL).
    """

    kind: Kind = "raw"

    def __init__(self, backend: str, folder: Path, *, in_memory: bool) -> None:
        self.backend = backend
        self.label = "qdrant-edge (raw)"
        self.folder = folder
        self.in_memory = in_memory
        self._shard: Any = None

    async def close(self) -> None:
        """Close the shard and delete its folder."""
        if self._shard is not None:
            await asyncio.to_thread(self._shard.close)
            self._shard = None
        await asyncio.to_thread(shutil.rmtree, self.folder, True)

    async def _ensure(self, dimension: int) -> Any:
        if self._shard is None:
            where = self.folder / collection_name(dimension)
            where.parent.mkdir(parents=True, exist_ok=True)
            # The adapter's engine settings (same indexes and memory layout).
            config = shard_config(dimension, wal_enabled=False if self.in_memory else None)
            shard = await asyncio.to_thread(qe.EdgeShard.create, str(where), config)
            for field in ("message_id", "thread_id", "resource_id"):
                schema = (
                    qe.KeywordIndexParams(is_tenant=True) if field == "resource_id" else qe.PayloadSchemaType.Keyword
                )
                await asyncio.to_thread(shard.update, qe.UpdateOperation.create_field_index(field, schema))
            self._shard = shard
        return self._shard

    async def add(self, messages: Sequence[BenchMessage], vectors: Vector) -> None:
        """Upsert one point per message, in batches of 512."""
        shard = await self._ensure(int(vectors.shape[1]))
        rows = vectors.tolist()
        for start in range(0, len(messages), _BATCH):
            points = [
                qe.Point(
                    uuid.UUID(point_id(m.id, 0)),
                    rows[start + k],
                    {
                        "message_id": m.id,
                        "thread_id": m.thread_id,
                        "resource_id": m.resource_id,
                        "created_at": m.created_at_us,
                        "chunk": 0,
                    },
                )
                for k, m in enumerate(messages[start : start + _BATCH])
            ]
            await asyncio.to_thread(shard.update, qe.UpdateOperation.upsert_points(points))

    async def after_load(self) -> None:
        """Group the points by resource, as the adapter's ``optimize()``."""
        await asyncio.to_thread(self._shard.optimize)

    async def search(self, query: Vector, top_k: int, resource_id: str) -> Answer:
        """One filtered exact ``query`` of ``top_k`` on the engine, on the
        calling thread (the binding holds the GIL: a worker thread frees nothing)."""
        request = qe.QueryRequest(
            query=qe.Query.Nearest(query.tolist()),
            limit=top_k,
            filter=qe.Filter(must=[qe.FieldCondition(key="resource_id", match=qe.MatchValue(resource_id))]),
            with_payload=["message_id"],
            params=qe.SearchParams(exact=True),
        )
        found = self._shard.query(request)
        return Answer(-1, tuple(str((p.payload or {})["message_id"]) for p in found))

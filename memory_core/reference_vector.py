"""The reference vector store (``memory://``): R-VEC by exact brute force.

Every primitive of :class:`~memory_core.vector.BaseVectorStore` in its most
direct reading: a collection is a dict of point id -> (unit vector,
payload); a search scores every selected point with one numpy matrix
product. Data lives as long as the object; instances never share data. It
is the vector side's executable specification (the vector conformance suite
runs on it) and a real, exact store for tests and small single-process use:
a search costs O(points of the collection).

Its lexical index (:mod:`memory_core.lexical_index`) is an inverted index
in dicts (:class:`memory_core.inverted_index.InvertedIndex`), kept up to
date on every write and delete; a lexical search reads the postings of the
query's terms in its scope only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from memory_core.errors import ValidationError
from memory_core.inverted_index import InvertedIndex
from memory_core.lexical_index import LexicalDocument, LexicalPostings, LexicalStatistics
from memory_core.vector import DEFAULT_BATCH_SIZE, DEFAULT_OVERFETCH, BaseVectorStore, PointFilter, RawHit, Vector
from memory_core.vector_layout import copied_point

__all__ = ["InMemoryVectorStore"]

_Collection = dict[str, tuple[Vector, dict[str, Any]]]


class InMemoryVectorStore(BaseVectorStore):
    """The reference vector store. URL: ``memory://`` (each connect is a new store).

    Args:
        namespace: collection-name prefix (see
            :class:`~memory_core.vector.BaseVectorStore`).
        overfetch: search over-fetch factor (int >= 1).
        batch_size: points per ``_upsert`` call (int >= 1).

    Raises:
        ValidationError: a bad namespace or option.
    """

    backend_name = "memory"
    shares_collections = False
    lexical_index = True
    persistent = False
    """The points live in this object: gone when it is."""

    def __init__(
        self,
        *,
        namespace: str | None = None,
        overfetch: int = DEFAULT_OVERFETCH,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        super().__init__(namespace=namespace, overfetch=overfetch, batch_size=batch_size)
        self._data: dict[str, _Collection] = {}
        self._lexicon = InvertedIndex()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> InMemoryVectorStore:
        """Build from ``memory://`` exactly (no I/O). Options: ``namespace``,
        ``overfetch``, ``batch_size``; ``clock`` is accepted and ignored
        (payloads carry the messages' own ``created_at``).

        Raises:
            ValidationError: the URL has a path or query, or a bad option.
        """
        scheme, _, rest = url.partition("://")
        if not scheme or rest.strip("/"):
            raise ValidationError("url", f"{scheme or 'memory'}:// takes no path or options, got {url!r}")
        options.pop("clock", None)
        return cls(**options)

    def __repr__(self) -> str:
        return f"InMemoryVectorStore(namespace={self.namespace!r})"

    # ------------------------------------------------------------------ primitives

    async def _connect(self) -> None:
        return None

    async def _disconnect(self) -> None:
        self._data.clear()
        await self._drop_documents()

    async def _list_collections(self) -> Iterable[str]:
        return list(self._data)

    async def _create_collection(self, name: str, dimension: int) -> None:
        self._data.setdefault(name, {})

    async def _drop(self, name: str) -> None:
        self._data.pop(name, None)

    async def _upsert(self, name: str, ids: list[str], vectors: Vector, payloads: list[dict[str, Any]]) -> None:
        points = self._data[name]
        for pid, row, payload in zip(ids, vectors, payloads, strict=True):
            points[pid] = (row.copy(), dict(payload))

    async def _delete(self, name: str, flt: PointFilter) -> None:
        if flt.is_empty():
            raise ValidationError("filter", "an unfiltered delete would empty the collection; refused", "R-VEC")
        points = self._data[name]
        for pid in [pid for pid, (_, payload) in points.items() if flt.matches(payload)]:
            del points[pid]

    async def _search(self, name: str, vector: Vector, limit: int, flt: PointFilter) -> list[RawHit]:
        selected = flt.select(self._data[name].values())
        if not selected:
            return []
        scores = np.stack([row for row, _ in selected]) @ vector
        # Best first; equal scores by message id, so answers never depend on insertion order.
        order = sorted(range(len(selected)), key=lambda i: (-float(scores[i]), selected[i][1]["message_id"]))
        return flt.hits([(selected[i][1], float(scores[i])) for i in order[:limit]])

    async def _count(self, name: str, flt: PointFilter) -> int:
        return len(flt.select(self._data[name].values()))

    async def _message_ids(self, name: str, flt: PointFilter) -> set[str]:
        return {payload["message_id"] for _, payload in flt.select(self._data[name].values())}

    async def _copy_points(
        self, name: str, mapping: dict[str, str], thread_id: str, resource_id: str
    ) -> set[str] | None:
        points = self._data[name]
        found = [(row, payload) for row, payload in points.values() if payload["message_id"] in mapping]
        for row, payload in found:
            pid, copy = copied_point(payload, mapping, thread_id, resource_id)
            points[pid] = (row.copy(), copy)
        return {payload["message_id"] for _, payload in found}

    # ------------------------------------------------------------------ lexical index

    async def _write_documents(self, documents: Sequence[LexicalDocument]) -> None:
        self._lexicon.write(documents)

    async def _copy_documents(self, mapping: dict[str, str], thread_id: str, resource_id: str) -> None:
        self._lexicon.copy(mapping, thread_id, resource_id)

    async def _delete_documents(self, flt: PointFilter) -> None:
        if flt.is_empty():
            raise ValidationError("filter", "an unfiltered delete would empty the index; refused", "R-VEC")
        self._lexicon.delete(flt)

    async def _read_statistics(self, terms: tuple[str, ...], flt: PointFilter) -> LexicalStatistics:
        return self._lexicon.statistics(terms, flt)

    async def _read_postings(
        self, selecting: tuple[str, ...], counted: tuple[str, ...], flt: PointFilter
    ) -> LexicalPostings:
        return self._lexicon.postings(selecting, counted, flt)

    async def _count_documents(self, flt: PointFilter) -> int:
        return self._lexicon.count(flt)

    async def _document_ids(self, flt: PointFilter) -> dict[str, str]:
        return self._lexicon.owners(flt)

    async def _drop_documents(self) -> None:
        self._lexicon.clear()

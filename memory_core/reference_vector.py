"""The reference vector store (``memory://``): R-VEC by exact brute force.

Every primitive of :class:`~memory_core.vector.BaseVectorStore` in its most
direct reading: a collection is a dict of point id -> (unit vector,
payload); a search scores every selected point with one numpy matrix
product. Data lives as long as the object; instances never share data. It
is the vector side's executable specification (the vector conformance suite
runs on it) and a real, exact store for tests and small single-process use:
a search costs O(points of the collection).

Its lexical index (:mod:`memory_core.lexical_index`) is an inverted index
in dicts: per scope (each thread, each resource, the whole store) term ->
message id -> count and the scope's document count and total length, and
each message's document, kept up to date on every write and delete; a
lexical search reads the postings of the query's terms in its scope only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from memory_core.errors import ValidationError
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
        self._documents: dict[str, LexicalDocument] = {}
        self._postings: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
        self._sizes: dict[tuple[str, str], list[int]] = {}
        self._lengths: dict[str, int] = {}

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

    def _remove(self, message_id: str) -> None:
        document = self._documents.pop(message_id, None)
        if document is None:
            return
        del self._lengths[message_id]
        for key in _keys(document):
            size = self._sizes[key]
            size[0] -= 1
            size[1] -= document.length
            postings = self._postings[key]
            for term in document.counts:
                posting = postings[term]
                del posting[message_id]
                if not posting:
                    del postings[term]
            if size[0] == 0:
                del self._sizes[key], self._postings[key]

    async def _write_documents(self, documents: Sequence[LexicalDocument]) -> None:
        for document in documents:
            self._remove(document.message_id)
            self._documents[document.message_id] = document
            self._lengths[document.message_id] = document.length
            for key in _keys(document):
                size = self._sizes.setdefault(key, [0, 0])
                size[0] += 1
                size[1] += document.length
                postings = self._postings.setdefault(key, {})
                for term, count in document.counts.items():
                    postings.setdefault(term, {})[document.message_id] = count

    def _selected(self, flt: PointFilter) -> list[str]:
        return [mid for mid, document in self._documents.items() if flt.matches(_fields(document))]

    async def _delete_documents(self, flt: PointFilter) -> None:
        if flt.is_empty():
            raise ValidationError("filter", "an unfiltered delete would empty the index; refused", "R-VEC")
        for message_id in self._selected(flt):
            self._remove(message_id)

    def _view(self, flt: PointFilter) -> tuple[list[int], dict[str, dict[str, int]]]:
        """``([documents, total length], term -> posting)`` of a search scope."""
        if flt.thread_id is not None and flt.resource_id is not None:  # not a search scope: count them
            selected = [self._documents[mid] for mid in self._selected(flt)]
            postings: dict[str, dict[str, int]] = {}
            for document in selected:
                for term, count in document.counts.items():
                    postings.setdefault(term, {})[document.message_id] = count
            return [len(selected), sum(document.length for document in selected)], postings
        key = ("thread", flt.thread_id) if flt.thread_id is not None else ("resource", flt.resource_id or "")
        key = ("all", "") if flt.thread_id is None and flt.resource_id is None else key
        return self._sizes.get(key, [0, 0]), self._postings.get(key, {})

    async def _read_statistics(self, terms: tuple[str, ...], flt: PointFilter) -> LexicalStatistics:
        size, postings = self._view(flt)
        return LexicalStatistics(size[0], size[1], {term: len(postings.get(term, {})) for term in terms})

    async def _read_postings(
        self, selecting: tuple[str, ...], counted: tuple[str, ...], flt: PointFilter
    ) -> LexicalPostings:
        _, scope = self._view(flt)
        matches = []
        for message_id in {mid for term in selecting for mid in scope.get(term, {})}:
            document = self._documents[message_id]
            counts = {term: document.counts[term] for term in counted if term in document.counts}
            matches.append((message_id, document.length, counts))
        return LexicalPostings(matches)

    async def _count_documents(self, flt: PointFilter) -> int:
        return len(self._selected(flt))

    async def _drop_documents(self) -> None:
        self._documents.clear()
        self._postings.clear()
        self._sizes.clear()
        self._lengths.clear()


def _keys(document: LexicalDocument) -> tuple[tuple[str, str], ...]:
    """The scopes a document counts in: its thread, its resource, the store."""
    return (("thread", document.thread_id), ("resource", document.resource_id), ("all", ""))


def _fields(document: LexicalDocument) -> dict[str, Any]:
    """A document's ids as a point payload (for :meth:`PointFilter.matches`)."""
    return {"message_id": document.message_id, "thread_id": document.thread_id, "resource_id": document.resource_id}

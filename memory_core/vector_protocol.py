"""The :class:`VectorStore` Protocol: what :class:`memory_core.Memory` and
other callers of a vector store type against (rule R-VEC). Every vector
adapter gets it by subclassing :class:`memory_core.vector.BaseVectorStore`,
which re-exports it."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from memory_core.vector_points import Vector, VectorHit, VectorPoint

__all__ = ["VectorStore"]


@runtime_checkable
class VectorStore(Protocol):
    """What :class:`memory_core.Memory` needs from a vector store.

    Every method is async and atomic per call from the caller's view; after
    it returns, searches and counts see the change. Bad input raises
    :class:`~memory_core.errors.ValidationError` before any I/O; driver errors
    are raised as :class:`~memory_core.errors.BackendError`; any call after
    ``close()`` raises :class:`~memory_core.errors.AdapterClosedError`.
    :class:`BaseVectorStore` implements all of it.
    """

    async def __aenter__(self) -> Self:
        """Open and return the store (``async with await connect_vector(url)``)."""

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the store."""

    @property
    def persistent(self) -> bool:
        """Whether the points outlive this store object (a server, a
        directory): False for a store whose points go when it is closed or
        its process exits (``memory://``, ``qdrant::memory:``)."""

    async def open(self) -> None:
        """Connect (idempotent). Collections are created lazily per dimension."""

    async def close(self) -> None:
        """Release what this store created (idempotent)."""

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace these points (same message id and chunk replaces)."""

    async def delete_messages(self, message_ids: Sequence[str]) -> None:
        """Remove every point (all chunks) of these messages."""

    async def delete_thread(self, thread_id: str) -> None:
        """Remove every point whose payload ``thread_id`` is this thread."""

    async def delete_resource(self, resource_id: str) -> None:
        """Remove every point whose payload ``resource_id`` is this resource."""

    async def search(
        self,
        vector: Vector,
        top_k: int,
        *,
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` most similar messages (cosine), best first, at most one
        hit per message (its best chunk), filtered by thread and/or resource."""

    async def search_checked(
        self, vector: Vector, top_k: int, thread_id: str | None, resource_id: str | None
    ) -> list[VectorHit]:
        """:meth:`search` with ids the caller has checked (the core's recall)."""

    async def count(self, resource_id: str | None = None, thread_id: str | None = None) -> int:
        """How many distinct messages have points under the filter (all when
        both are None)."""

    async def count_points(self, resource_id: str | None = None, thread_id: str | None = None) -> int:
        """How many points (chunks) match the filter (all when both are None)."""

    async def dimensions(self) -> list[int]:
        """The vector dimensions the store holds collections for, ascending:
        the record of which embedder (by its dimension) built the index."""

    async def dimension_counts(self) -> dict[int, int]:
        """Points per vector dimension, for the dimensions holding any: which
        embedders (by dimension) the index's vectors came from, and how many."""

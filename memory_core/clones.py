"""The :class:`~memory_core.memory.Memory` calls for conversations as a tree:
clones and branches with their copies' vectors, and the lineage queries
(:mod:`memory_core.lineage` holds the rules; these calls add the vector
index, which the storage half cannot see)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memory_core import lineage
from memory_core.index_calls import IndexCalls
from memory_core.models import DateRange, OrderBy, Page, PerPage, Thread
from memory_core.outbox import paired
from memory_core.telemetry import traced

__all__ = ["CloneCalls"]


class CloneCalls(IndexCalls):
    """Clone, branch and lineage calls of :class:`~memory_core.memory.Memory`
    (a base class of it, sharing its ``storage``, ``vector`` and vector index
    through :class:`~memory_core.index_calls.IndexCalls`)."""

    @traced("create_memory")
    @paired
    async def clone_thread(
        self,
        source_id: str,
        new_id: str | None = None,
        *,
        resource_id: str | None = None,
        source_resource_id: str | None = None,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        message_ids: Sequence[str] | None = None,
        message_limit: int | None = None,
        date_range: DateRange | Mapping[str, Any] | None = None,
    ) -> lineage.Clone:
        """Copy a thread (or a selection of its messages) into a new thread
        and embed the copies: see :func:`memory_core.lineage.clone_thread`
        (options, ownership, lineage, errors). Returns a
        :class:`~memory_core.lineage.Clone`: the thread and the id mapping.

        Raises:
            EmbedderMismatchError: the vector index holds vectors of another
                embedder (checked as by :meth:`save_messages`); nothing is
                written.
            BackendError: the vector write failed after the copy was saved
                (repair with :meth:`reindex`); else as the function.
        """
        await self._check_embedder()
        made = await lineage.clone_thread(
            self.storage,
            source_id,
            new_id,
            resource_id=resource_id,
            source_resource_id=source_resource_id,
            title=title,
            metadata=metadata,
            message_ids=message_ids,
            date_range=date_range,
            message_limit=message_limit,
        )
        await self._index_copies(made)
        return made

    @traced("create_memory")
    @paired
    async def branch_thread(
        self,
        thread_id: str,
        at_message_id: str,
        new_id: str | None = None,
        *,
        resource_id: str | None = None,
        source_resource_id: str | None = None,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> lineage.Clone:
        """A new thread holding ``thread_id``'s messages up to and including
        ``at_message_id``, with the copies embedded: see
        :func:`memory_core.lineage.branch_thread`.

        Raises:
            EmbedderMismatchError: as :meth:`clone_thread`; nothing is written.
            BackendError: the vector write failed after the copy was saved
                (repair with :meth:`reindex`); else as the function.
        """
        await self._check_embedder()
        made = await lineage.branch_thread(
            self.storage,
            thread_id,
            at_message_id,
            new_id,
            resource_id=resource_id,
            source_resource_id=source_resource_id,
            title=title,
            metadata=metadata,
        )
        await self._index_copies(made)
        return made

    async def _index_copies(self, made: lineage.Clone) -> None:
        """Give a clone's copies their vectors when there is a vector store:
        copied in the store from their sources' points, embedded only where
        a source has none (:meth:`VectorIndex.copy
        <memory_core.indexing.VectorIndex.copy>`)."""
        await self._vectors.copy(made.message_ids, made.thread.id, made.thread.resource_id)

    async def get_lineage(self, thread_id: str, resource_id: str | None = None) -> lineage.Lineage | None:
        """See :func:`memory_core.lineage.get_lineage` (Mastra's ``getCloneMetadata``)."""
        return await lineage.get_lineage(self.storage, thread_id, resource_id)

    async def is_clone(self, thread_id: str, resource_id: str | None = None) -> bool:
        """Whether the thread has a lineage record (Mastra's ``isClone``);
        False for a missing thread or another resource's."""
        return await lineage.get_lineage(self.storage, thread_id, resource_id) is not None

    async def source_thread(self, thread_id: str, resource_id: str | None = None) -> Thread | None:
        """See :func:`memory_core.lineage.source_thread` (Mastra's ``getSourceThread``)."""
        return await lineage.source_thread(self.storage, thread_id, resource_id)

    async def list_clones(
        self,
        thread_id: str,
        resource_id: str,
        *,
        page: int = 0,
        per_page: PerPage = 100,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        cursor: str | None = None,
    ) -> Page[Thread]:
        """See :func:`memory_core.lineage.list_clones` (Mastra's ``listClones``)."""
        return await lineage.list_clones(
            self.storage, thread_id, resource_id, page=page, per_page=per_page, order_by=order_by, cursor=cursor
        )

    async def clone_history(self, thread_id: str, resource_id: str | None = None) -> list[Thread]:
        """See :func:`memory_core.lineage.clone_history` (Mastra's ``getCloneHistory``)."""
        return await lineage.clone_history(self.storage, thread_id, resource_id)

"""Erasure: deleting a thread or a whole resource.

``delete_resource`` is the adapter's one erasure primitive (all-or-nothing
or resumable). Retention pruning (``BaseStorage.prune``) is composed from
public calls by :mod:`memory_core.retention`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from memory_core import lineage
from memory_core.models import ResourceErasure
from memory_core.storage.lifecycle import Lifecycle
from memory_core.telemetry import traced
from memory_core.validation import check_id

if TYPE_CHECKING:
    from memory_core.storage.protocol import Storage

__all__ = ["Erasure"]


class Erasure(Lifecycle):
    """The deletes of :class:`~memory_core.storage.BaseStorage` beyond single messages."""

    @traced("delete_memory")
    async def delete_thread(self, thread_id: str) -> None:
        """Delete the thread and all its messages; unknown id: no error."""
        check_id(thread_id, "thread_id")
        await self._ready()
        with self._guard("delete_thread"):
            await self._delete_thread(thread_id)

    @traced("delete_memory")
    async def delete_resource(self, resource_id: str) -> ResourceErasure:
        """Erase a resource: every thread it owns, their messages, and its
        record (working memory, metadata). No id stays reserved: the resource,
        thread and message ids can all be used again, by any resource. An
        unknown id is no error (an empty :class:`ResourceErasure`).

        Threads of other resources cloned from this one's lose their lineage
        (:func:`memory_core.lineage.forget_resource`). Not a single
        transaction on every backend, but resumable: a call that
        fails half-way leaves a state that a repeated call erases to
        completion. Vectors are removed by :meth:`memory_core.Memory.delete_resource`.

        Last, the adapter removes what the deletes left in its files beyond
        the live data where it can (``_finish_erasure``; SQLite rebuilds the
        database file: see docs/operators.md, "Erasure"). Every call does
        that step, one for an unknown id too, so a repeat finishes what a
        failed call left.

        Returns:
            :class:`ResourceErasure`: the deleted thread ids, the number of
            messages deleted, whether a resource record existed.

        Raises:
            ValidationError: bad id (R-ID).
            BackendError: a backend failure; ``retryable`` when calling again
                may succeed (SQLite: another connection held the lock the
                file's rebuild needs for longer than the busy timeout; the
                rows are erased, and a repeat call rebuilds).
        """
        check_id(resource_id, "resource_id")
        await self._ready()
        with self._guard("delete_resource"):
            thread_ids, messages, existed = await self._delete_resource(resource_id)
        await lineage.forget_resource(cast("Storage", self), resource_id)  # clones elsewhere stop naming it (R-LINEAGE)
        with self._guard("delete_resource"):
            await self._finish_erasure()  # after the lineage updates: their old copies go too
        return ResourceErasure(resource_id, sorted(thread_ids), messages, existed)

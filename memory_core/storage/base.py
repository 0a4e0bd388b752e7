"""``BaseStorage``: the class every adapter subclasses, assembled from one
mixin per concern over the adapter contract, plus the operations composed
from its public calls (prune; a thread copy when the adapter does not copy
inside its backend).

Its public async methods validate every input once
(:mod:`memory_core.validation`), resolve defaults, ownership and conflicts,
and then call the contract's primitives
(:class:`~memory_core.storage.contract.AdapterContract`), which an adapter
writes for its backend. Adapters implement primitives; the core composes
semantics.
"""

from __future__ import annotations

from dataclasses import replace

from memory_core.clock import to_us
from memory_core.errors import ConflictError, StaleStateError, ValidationError
from memory_core.lineage import CopyPlan, writing_lineage
from memory_core.models import Thread
from memory_core.retention import BatchRunner, PruneHook, PruneReport, RetentionPolicy, apply_policy
from memory_core.storage.erasure import Erasure
from memory_core.storage.paging import Reads, message_key
from memory_core.storage.working_memory import WorkingMemory
from memory_core.storage.writes import Writes
from memory_core.telemetry import traced
from memory_core.validation import check_message

__all__ = ["BaseStorage"]


class BaseStorage(Reads, Writes, WorkingMemory, Erasure):
    """Base class of every storage adapter (and of the reference store).

    An adapter subclasses it, sets ``backend_name`` and implements the
    abstract methods of :class:`~memory_core.storage.contract.AdapterContract`
    (14: one read of a plan, conditional writes, erasure, ``_destroy``).
    To build those from small queries instead, subclass
    :class:`~memory_core.storage.composed.ComposedStorage`.

    Construction does no I/O. ``open()`` (or ``async with``) connects and
    creates the schema idempotently; public methods open lazily on first
    use. ``close()`` is idempotent; any call after it raises
    :class:`~memory_core.errors.AdapterClosedError`.

    Threads and event loops: a store may be used from any thread and any
    event loop, several at once (``asyncio.run`` per call; threads each
    running their own loop). The first open runs once per store however many
    loops race to it (the others wait for it, and try themselves if it
    failed); an adapter whose connections belong to the loop that made them
    (``loop_bound``) connects again in each further loop, keeping one
    connection (pool, client) per loop, closed in that loop when
    ``asyncio.run`` ends it at the latest
    (:class:`memory_core.loops.LoopConnections`).

    Args:
        clock: where "now" comes from (R-CLOCK, R-BUMP); defaults to the
            process-wide system clock. Tests inject a
            :class:`~memory_core.clock.ManualClock`.
    """

    @traced("delete_memory")
    async def prune(
        self,
        policy: RetentionPolicy,
        *,
        dry_run: bool = False,
        before_delete: PruneHook | None = None,
        after_delete: PruneHook | None = None,
        each_batch: BatchRunner | None = None,
    ) -> PruneReport:
        """Delete messages or threads older than ``policy`` allows (R-PRUNE),
        in batches, composed from public calls (see
        :mod:`memory_core.retention` for the exact semantics). Vectors are
        removed by :meth:`memory_core.Memory.prune`.

        Args:
            policy: a :class:`~memory_core.retention.RetentionPolicy`.
            dry_run: report what would be removed, write nothing.
            before_delete: awaited before each delete with its
                :class:`~memory_core.retention.PruneBatch`.
            after_delete: awaited after each delete with its batch
                (``Memory`` drops the batch's vectors there).
            each_batch: runs each batch, hooks and delete
                (:data:`~memory_core.retention.BatchRunner`; ``Memory``
                runs each whole, whatever happens to its caller); None:
                awaited directly.

        Returns:
            :class:`~memory_core.retention.PruneReport`.

        Raises:
            ValidationError: bad ``policy`` or ``dry_run`` (before any I/O).
        """
        now = self.clock.now()
        return await apply_policy(
            self,
            policy,
            now,
            dry_run=dry_run,
            before_delete=before_delete,
            after_delete=after_delete,
            each_batch=each_batch,
        )

    @traced("create_memory")
    async def copy_thread(self, plan: CopyPlan) -> tuple[Thread, list[str]]:
        """Create ``plan.thread`` holding copies of the source messages the
        plan selects (:class:`~memory_core.lineage.CopyPlan`), all or nothing:
        the storage half of :func:`memory_core.lineage.clone_thread`, which
        builds and checks the plan.

        Returns:
            ``(thread, copied)``: the new thread as stored and the ids of the
            source messages copied, in R-ORDER (the k-th got
            ``plan.new_ids[k]``).

        Raises:
            ValidationError: a bad thread (R-ID, R-JSON, R-TIME, R-SIZE), or a
                copy over R-SIZE (nothing written).
            ConflictError: a thread with the new id exists (nothing written).
        """
        stored = self._thread_to_store(plan.thread)
        plan = replace(plan, thread=stored)
        await self._ready()
        with self._guard("copy_thread"):
            try:
                copied = await self._copy_thread(plan, to_us(self.clock.now()))
            except StaleStateError:
                raise ConflictError(f"thread {stored.id!r} already exists") from None
        if copied is None:
            copied = await self._compose_copy(plan)
        return stored, copied

    async def _compose_copy(self, plan: CopyPlan) -> list[str]:
        """The copy from public calls (see the module); the thread is
        removed again when saving the copies fails."""
        listing = await self.list_messages(plan.source_id, per_page=False, total=False)
        low, high = plan.created_from_us, plan.created_to_us
        keys = [(m, message_key(m)[0]) for m in listing.items]
        bounded = [m for m, at in keys if (low is None or at >= low) and (high is None or at <= high)]
        originals = plan.select(bounded)[: len(plan.new_ids)]
        copies = plan.copies(originals)
        for original, copy in zip(originals, copies, strict=True):
            try:  # longer ids or another resource id can push a copy over R-SIZE
                check_message(copy, "copy")
            except ValidationError as exc:
                raise ValidationError(f"copy of message {original.id!r}", exc.reason, exc.rule) from None
        with writing_lineage():  # a copy records its lineage itself (R-LINEAGE), as _copy_thread does
            await self.insert_thread(plan.thread)
        try:
            if copies:
                await self.save_messages(copies)
        except BaseException:
            await self.delete_thread(plan.thread.id)
            raise
        return [m.id for m in originals]

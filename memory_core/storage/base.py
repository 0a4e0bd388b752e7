"""``BaseStorage``: the class every adapter subclasses, assembled from one
mixin per concern over the adapter contract.

Its public async methods validate every input once
(:mod:`memory_core.validation`), resolve defaults, ownership and conflicts,
and then call the contract's primitives
(:class:`~memory_core.storage.contract.AdapterContract`), which an adapter
writes for its backend. Adapters implement primitives; the core composes
semantics.
"""

from __future__ import annotations

from memory_core.retention import PruneHook, PruneReport, RetentionPolicy, apply_policy
from memory_core.storage.erasure import Erasure
from memory_core.storage.paging import Reads
from memory_core.storage.working_memory import WorkingMemory
from memory_core.storage.writes import Writes
from memory_core.telemetry import traced

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
    connection (pool, client) per loop (:class:`memory_core.loops.LoopLocal`).

    Args:
        clock: where "now" comes from (R-CLOCK, R-BUMP); defaults to the
            process-wide system clock. Tests inject a
            :class:`~memory_core.clock.ManualClock`.
    """

    @traced("delete_memory")
    async def prune(
        self, policy: RetentionPolicy, *, dry_run: bool = False, before_delete: PruneHook | None = None
    ) -> PruneReport:
        """Delete messages or threads older than ``policy`` allows (R-PRUNE),
        in batches, composed from public calls (see
        :mod:`memory_core.retention` for the exact semantics). Vectors are
        removed by :meth:`memory_core.Memory.prune`.

        Args:
            policy: a :class:`~memory_core.retention.RetentionPolicy`.
            dry_run: report what would be removed, write nothing.
            before_delete: awaited before each delete with its
                :class:`~memory_core.retention.PruneBatch` (``Memory`` drops
                vectors there).

        Returns:
            :class:`~memory_core.retention.PruneReport`.

        Raises:
            ValidationError: bad ``policy`` or ``dry_run`` (before any I/O).
        """
        return await apply_policy(self, policy, self.clock.now(), dry_run=dry_run, before_delete=before_delete)

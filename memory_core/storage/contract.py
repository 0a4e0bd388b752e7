"""The adapter contract: every method an adapter writes, in one block.

:class:`AdapterContract` is the one tier an adapter implements. Reads are
one typed primitive, :meth:`~AdapterContract._read` of a
:class:`~memory_core.plan.ReadPlan` (thread and message pages with their
keys and counts, include windows, threads, resources and their owners, the
state a write's checks read, resource-id pages). Writes are a small set of
conditional primitives, each atomic and each re-verifying what the core
read (a stale read raises :class:`~memory_core.errors.StaleStateError` and
the core retries). Everything public derives from these in
:class:`~memory_core.storage.BaseStorage`.

Required (abstract): :meth:`_destroy`, :meth:`_read`, the thread writes
(:meth:`_insert_thread`, :meth:`_save_thread_checked`, :meth:`_patch_thread`,
:meth:`_delete_thread`), the message writes (:meth:`_save_checked`,
:meth:`_patch_checked`, :meth:`_delete_found`), the resource writes
(:meth:`_put_resource`, :meth:`_patch_resource`), the working-memory swaps
(:meth:`_swap_resource_memory`, :meth:`_swap_thread_memory`) and the erasure
(:meth:`_delete_resource`): 14. Optional, with defaults: :meth:`_open`,
:meth:`_close`, :meth:`_write_memory` (whose default
:class:`~memory_core.storage.BaseStorage` supplies) and :meth:`_finish_erasure`
(default: nothing).

An author who would rather write small queries (get one thread, list,
count, one window ...) subclasses
:class:`~memory_core.storage.composed.ComposedStorage` instead, which builds
this tier from them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from memory_core.lineage import CopyPlan
from memory_core.models import Message, Resource, Thread
from memory_core.plan import ReadParts, ReadPlan
from memory_core.retry import FaultPoint
from memory_core.storage.decisions import PatchDecision, SaveDecision
from memory_core.workmem import MemoryDecision, MemoryWrite

__all__ = ["AdapterContract"]


class AdapterContract(ABC):
    """The methods and class attributes an adapter provides (see the module docstring).

    Class attributes for adapters:
        backend_name: short name used in errors (``"sqlite"``).
        capabilities: optional capabilities the conformance suite may test
            (:class:`memory_core.capabilities.Capability` members); an
            instance may narrow them (an in-memory SQLite database is not
            persistent).
    """

    backend_name: ClassVar[str] = "base"
    backend_address: str = ""
    """Where the backend is (a server's ``host:port``), named in the
    :class:`~memory_core.errors.BackendError` of a failed call when the
    driver's message does not; empty when the error names it already."""
    capabilities: frozenset[str] = frozenset()
    chunk_limits: ClassVar[frozenset[int]] = frozenset()
    """Every batch or chunk size the adapter splits work at (ids per script
    call, rows per statement ...): the conformance suite runs saves, deletes,
    erasures and listings at one below, at and one above each."""
    fault_points: frozenset[FaultPoint] = frozenset()
    """The recovery paths a test can trigger through ``faults``
    (:class:`memory_core.retry.Faults`); the conformance suite arms each. A
    class attribute, which a store may narrow in ``__init__`` (as
    ``capabilities``) before building its ``faults`` again."""
    loop_bound: ClassVar[bool] = False
    """Whether the adapter's connections belong to the event loop that made
    them (asyncpg, redis-py, PyMongo's async client). Then ``_open`` runs in
    every event loop that uses the store: first once for the store (schema
    included), then once in each further loop, where it must only connect
    (the schema is there: idempotent setup costs a check); the adapter keeps
    its connections in a :class:`~memory_core.loops.LoopConnections`
    (``keep(connection, close)``: closed in its loop when ``asyncio.run``
    ends that loop, at the latest) and its ``_close`` closes them all
    (``close_all()``).
    False (memory://, SQLite's worker thread): ``_open`` runs once."""

    # ------------------------------------------------------------------ lifecycle

    async def _open(self) -> None:
        """Connect and create schema/indexes idempotently (default: nothing)."""

    async def _close(self) -> None:
        """Release what ``_open`` acquired (default: nothing)."""

    @abstractmethod
    async def _destroy(self) -> None:
        """Delete all data of this store's namespace (file, database, key
        prefix), leaving nothing behind; called before ``_close``."""

    # ------------------------------------------------------------------ the read

    @abstractmethod
    async def _read(self, plan: ReadPlan) -> ReadParts:
        """Answer every part of ``plan`` (see :class:`~memory_core.plan.ReadPlan`
        for each part and :class:`~memory_core.plan.ReadParts` for each
        answer), ideally in one backend call and from one snapshot. Return
        raw parts: no ownership checks, merging or paging arithmetic (the
        core does those).

        Parts and their rules:

        - ``threads`` / ``resources`` (by id; with ``owner_resources`` also
          the record of each found thread's resource). Every thread returned
          has ``last_message_at``: the largest ``created_at`` of its
          messages, or None; stored with the thread and set by every write
          that changes a thread's messages, or computed when read.
        - ``messages`` (a :class:`~memory_core.query.MessageQuery`): when
          ``query.count``, the count of its filter (no offset, limit or
          after) in ``message_total``; its window in ``messages``: ordered by
          (created_at µs, sequence) in its direction (R-ORDER), strictly
          after ``query.after`` if set,
          skipping ``offset``, at most ``limit`` (None = all; 0 = none).
        - ``thread_page`` (a :class:`~memory_core.query.ThreadQuery`): count
          and window as ``messages``, ordered by ``query.key`` (order field
          µs, id); a thread without messages sorts last for
          ``last_message_at`` (:data:`~memory_core.query.NO_MESSAGE_ASC_US`,
          :data:`~memory_core.query.NO_MESSAGE_DESC_US`).
        - ``windows``: per ``(id, before, after)`` the message plus up to
          ``before`` preceding and ``after`` following it in its own thread,
          R-ORDER ascending; ``[]`` for an unknown id.
        - ``message_ids``: the stored messages among these ids
          (``found_messages``, any order, ``sequence`` filled).
        - ``resource_ids`` (a :class:`~memory_core.plan.ResourceIdQuery`):
          ids with a record or at least one thread, each once, ascending by
          code point, after ``after``, at most ``limit``; consistent with
          the deletes (an id with neither is not returned).

        The core never raises from a plan part; an adapter raises only
        backend errors (:class:`~memory_core.errors.BackendGuard` types them)."""

    # ------------------------------------------------------------------ thread writes

    @abstractmethod
    async def _insert_thread(self, thread: Thread) -> None:
        """Insert a thread (all fields set; ``last_message_at`` None) only if no
        thread has its id; otherwise raise
        :class:`~memory_core.errors.StaleStateError` and write nothing
        (checked atomically with the write)."""

    @abstractmethod
    async def _save_thread_checked(self, thread: Thread) -> Thread | None:
        """:meth:`~memory_core.storage.BaseStorage.save_thread`'s write: insert
        or wholly replace ``thread`` (every field but ``last_message_at``)
        unless its id is stored under another resource, checked atomically
        with the write (a conditional upsert: ``ON CONFLICT ... WHERE
        resource_id = ...``; a filter on the resource; a check in the
        script). Messages of a replaced thread are kept.

        Returns:
            ``thread`` with ``last_message_at`` set to the stored thread's
            (None for a new thread or one without messages), or None when
            the id belongs to another resource (nothing written; the core
            raises ConflictError)."""

    @abstractmethod
    async def _patch_thread(
        self, thread_id: str, title: str | None, metadata: dict[str, Any] | None, now_us: int
    ) -> Thread | None:
        """Atomically: set ``title`` if not None; merge ``metadata`` one level if
        not None; set ``updated_at`` to :func:`~memory_core.clock.bump_us`
        (old, now_us). Returns the updated thread, or None if missing (then
        nothing is written). No read-modify-write of the whole record outside
        a transaction."""

    @abstractmethod
    async def _delete_thread(self, thread_id: str) -> int | None:
        """Delete the thread and every message in it (atomically; an unknown
        thread is no error). The return value is informational: how many
        messages this call deleted, or None from an adapter that does not
        count (no public call reports it)."""

    # ------------------------------------------------------------------ message writes

    @abstractmethod
    async def _save_checked(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], decide: SaveDecision, now_us: int
    ) -> tuple[list[Message], list[int]]:
        """A message save with its checks: read the threads (by id) and the
        messages found among these ids, call ``decide(threads, messages)``
        (it raises the typed error of a failed check, or returns the records
        to write and the threads to bump), write them and return
        ``(records, their sequences)``. Whatever ``decide`` raises must leave
        nothing written.

        The write is one atomic batch (all or nothing) that first verifies,
        atomically with the writes, what was read (else raise
        :class:`~memory_core.errors.StaleStateError`, writing nothing: the
        core retries): each record's thread exists under
        ``record.resource_id``; a record with ``sequence`` None is not
        stored; one with a ``sequence`` is stored under the same
        ``resource_id``, in a thread among those to bump. Then for each
        record in order: if its id exists, set thread_id, role, type,
        content and metadata (keep resource_id, created_at, sequence);
        otherwise insert it as given with the next store-wide sequence
        number. Then bump ``updated_at`` of each thread to bump to
        bump_us(old, now_us). ``decide`` is synchronous (it may run on an
        adapter's worker thread; the built-in clocks are thread-safe)."""

    @abstractmethod
    async def _patch_checked(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], decide: PatchDecision, now_us: int
    ) -> list[Message]:
        """A message update with its checks: read the threads (by id: the
        move targets) and the messages found among these ids, call
        ``decide(threads, messages)`` (it raises the typed error of a failed
        check, or returns the patches and the threads to bump), apply each
        patch (:meth:`~memory_core.query.MessagePatch.apply` is the reference
        result) and bump; return the patched messages as stored (any order;
        ``[]`` and no write when ``decide`` returns no patch). Whatever
        ``decide`` raises must leave nothing written.

        A move target missing or under another resource than the message, or
        a message whose thread (at the write) is not among those to bump,
        raises :class:`~memory_core.errors.StaleStateError`, writing
        nothing; a patch for an id that vanished meanwhile is skipped."""

    @abstractmethod
    async def _delete_found(self, ids: Sequence[str], now_us: int) -> int:
        """:meth:`~memory_core.storage.BaseStorage.delete_messages`' write:
        delete the stored messages among these distinct ids, bump the
        threads of those deleted (R-BUMP, :func:`~memory_core.clock.bump_us`
        of ``now_us``, ``last_message_at`` recomputed) and return how many
        this call removed, counted atomically with the delete (of racing
        deletes of one id exactly one counts it). Unknown ids are ignored."""

    # ------------------------------------------------------------------ resource writes

    @abstractmethod
    async def _put_resource(self, resource: Resource) -> None:
        """Insert or wholly replace a resource."""

    @abstractmethod
    async def _patch_resource(
        self, resource_id: str, working_memory: Any, metadata: dict[str, Any] | None, now_us: int
    ) -> Resource:
        """Atomically create-or-update: set ``working_memory`` unless it is
        ``NOT_GIVEN`` (None clears it); merge ``metadata`` one level if not
        None; bump ``updated_at`` (a new resource gets created_at = updated_at
        = now_us). Returns the stored resource."""

    @abstractmethod
    async def _swap_resource_memory(self, resource_id: str, expected: str | None, value: str, now_us: int) -> bool:
        """Compare-and-set of a resource's working memory, atomically: if the
        stored ``working_memory`` equals ``expected`` (None: the resource is
        missing or its working memory is None), set it to ``value`` and bump
        ``updated_at`` as :meth:`_patch_resource` does (a missing resource is
        created with created_at = updated_at = now_us) and return True;
        otherwise write nothing and return False."""

    @abstractmethod
    async def _swap_thread_memory(
        self, thread_id: str, expected: str | None, value: str, now_us: int, metadata: dict[str, Any] | None = None
    ) -> bool | None:
        """Compare-and-set of ``metadata["working_memory"]`` of a thread,
        atomically: if its current value equals ``expected`` (None: the key is
        absent or holds a non-str), set the key to ``value`` (other metadata
        keys unchanged; ``metadata``, when given, merged one level in the same
        write) and bump ``updated_at`` as :meth:`_patch_thread` does,
        returning True; otherwise write nothing and return False. None: no
        such thread."""

    @abstractmethod
    async def _write_memory(self, write: MemoryWrite, decide: MemoryDecision, now_us: int) -> None:
        """A working-memory write with its checks (see :class:`~memory_core.workmem.MemoryWrite`
        for where it writes): read the thread (when ``write.thread_id`` is
        set) and the stored value, call ``decide(thread, value)`` (it raises
        the typed error of a failed check) and write ``write.value`` (a thread:
        the ``working_memory`` metadata key, as :meth:`_patch_thread` merges
        it; a resource: as :meth:`_patch_resource` sets it, creating the
        record), bumping ``updated_at``.

        Optional: :class:`~memory_core.storage.BaseStorage` supplies the
        default (:class:`~memory_core.storage.working_memory.WorkingMemory`),
        which reads with :meth:`_read`, then writes with :meth:`_patch_thread` /
        :meth:`_patch_resource`, or, when ``write.conditional``, swaps from
        the value read (:meth:`_swap_thread_memory` /
        :meth:`_swap_resource_memory`); a thread or value that changed in
        between raises :class:`~memory_core.errors.StaleStateError` and the
        core retries. An adapter with transactions may override it to run
        the read, ``decide`` and the write in one. ``decide`` refuses only a
        missing thread, a thread of another resource than
        ``write.resource_id`` and (when ``write.conditional``) a stored value
        of another version. Whatever ``decide`` raises must leave nothing
        written."""

    async def _copy_thread(self, plan: CopyPlan, now_us: int) -> list[str] | None:
        """Optional: copy inside the backend. Insert ``plan.thread``
        (create-if-absent: an existing id raises
        :class:`~memory_core.errors.StaleStateError`, nothing written) and a
        copy of each message :meth:`CopyPlan.select
        <memory_core.lineage.CopyPlan.select>` picks, the k-th as
        ``plan.copies`` makes it (id ``new_ids[k]``, the new thread and its
        resource, created_at and the rest kept, the next store-wide
        sequences in order), keeping the new thread's and resource's
        counters, in one statement or script, all or nothing, without
        message bodies leaving the server; a copy over ``plan.size_limit``
        raises ``ValidationError("copy of message '<id>'", ..., "R-SIZE")``
        with nothing written. Returns the copied source ids in R-ORDER.

        The default returns None: the core then composes the copy from public
        calls (:meth:`~memory_core.storage.BaseStorage.copy_thread`)."""
        return None

    # ------------------------------------------------------------------ erasure

    @abstractmethod
    async def _delete_resource(self, resource_id: str) -> tuple[list[str], int, bool]:
        """Delete every thread of the resource with its messages, then its
        record; returns ``(deleted thread ids, deleted message count, record
        existed)``. Must be all-or-nothing or resumable (a repeat after a
        failure finishes the job) and must leave no id reserved."""

    async def _finish_erasure(self) -> None:
        """Remove what deletes left in the backend's own files beyond the
        live data (old copies of deleted rows that its ordinary deletes
        keep), where the backend can. The core
        calls it at the end of every
        :meth:`~memory_core.storage.BaseStorage.delete_resource`, after
        :meth:`_delete_resource` and the clearing of clones' lineage, also
        for a resource that is no longer there: a repeat after a failure
        must finish the job (so the adapter remembers, durably, that one is
        pending, and makes a call with nothing pending cheap). Raises a
        retryable :class:`~memory_core.errors.BackendError` when it cannot
        finish now; the erasure's deletes stand.

        The default does nothing (the SQLite adapter rebuilds its file)."""

"""Retention: delete messages or threads older than an age (R-PRUNE).

:class:`RetentionPolicy` says what to remove; :func:`apply_policy` removes it by
composing public storage calls (``list_threads`` by cursor,
``list_messages`` with a date filter by cursor, ``delete_messages``,
``delete_thread``), in batches, so every backend behaves exactly alike and
needs no new primitive. :meth:`memory_core.storage.BaseStorage.prune` and
:meth:`memory_core.Memory.prune` (which also removes vectors) call it.

Semantics (the conformance rule R-PRUNE, stated in
``memory_core_conformance.rules``):

* The cutoff is ``policy.before``, or the store clock's now minus
  ``policy.older_than``, fixed once when the run starts. "Older" is strict:
  a record exactly at the cutoff stays.
* ``target="messages"``: every message in scope whose ``created_at`` is
  before the cutoff is deleted; threads stay, even when emptied, and are
  bumped as by ``delete_messages`` (R-BUMP).
* ``target="threads"``: a thread's age is its ``last_message_at`` (the
  ``created_at`` of its newest message, R-LAST), or its ``created_at`` when it
  has no message. A thread older than the cutoff is deleted with every
  message in it. ``updated_at`` is not used: every write bumps it, including
  the deletes of a message prune, so it measures writes, not the age of the
  conversation; with ``last_message_at`` a thread prune after a message prune
  with the same cutoff removes exactly the threads that prune emptied (and
  threads created before the cutoff that never had a message).
* Resource records (working memory) are never pruned; ``delete_resource``
  erases a resource.

A run is resumable and cancellable: its unit is a batch, one
``delete_messages`` or ``delete_thread`` call (atomic on every adapter,
``delete_thread`` with its messages), so a run cancelled (a timeout,
Ctrl-C: ``memory-core prune`` exits 130 and prints the ``--before`` that
resumes it) at any await point has deleted whole batches and no part of
one (checked by :mod:`memory_core_conformance.cancellation`; ``Memory``
runs each batch with its vectors' delete as one job that finishes even when
the run is cancelled: ``each_batch``), and running the same
policy again with ``before=report.cutoff`` finishes an interrupted run with
the same result. Writers racing a prune on the same thread may lose a
message saved between the age check and the delete of its thread.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from memory_core.clock import TIME_MIN
from memory_core.errors import ValidationError
from memory_core.models import DateRange, Message, MessageFilter, OrderBy, Page, PerPage, Thread, ThreadFilter
from memory_core.validation import check_bool, check_datetime, check_id

__all__ = [
    "MAX_BATCH",
    "BatchRunner",
    "PruneBatch",
    "PruneHook",
    "PruneReport",
    "Prunable",
    "RetentionPolicy",
    "apply_policy",
]


class Prunable(Protocol):
    """The public storage calls :func:`apply_policy` composes (every
    :class:`~memory_core.storage.Storage` has them): declared here so
    retention does not import the storage package that calls it."""

    async def list_threads(
        self,
        filter: ThreadFilter | None = ...,
        page: int = ...,
        per_page: PerPage = ...,
        *,
        order_by: OrderBy,
        cursor: str | None,
    ) -> Page[Thread]: ...
    async def list_messages(
        self, thread_id: str, *, filter: MessageFilter | None = ..., per_page: PerPage = ..., cursor: str | None = ...
    ) -> Page[Message]: ...
    async def delete_messages(self, ids: list[str]) -> int: ...
    async def delete_thread(self, thread_id: str) -> None: ...


PruneTarget = Literal["messages", "threads"]
MAX_BATCH = 10_000
"""Largest ``batch_size``: one delete call's ids stay far below every
backend's request limits."""


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """What a prune removes.

    Attributes:
        target: ``"messages"`` (messages older than the cutoff; threads stay)
            or ``"threads"`` (threads older than the cutoff, with their
            messages). Default ``"messages"``.
        older_than: age as a positive ``timedelta``; the cutoff is the store
            clock's now minus this. Give this or ``before``.
        before: an absolute cutoff (aware or UTC datetime, R-TIME); use the
            ``cutoff`` of an interrupted run's report to resume it exactly.
        resource_id: only this resource's threads and messages; None: the
            whole store.
        batch_size: records read and deleted per call (1 to
            :data:`MAX_BATCH`, default 500).

    Raises:
        ValidationError: a bad field (named, rule R-PRUNE), on construction,
            before any I/O.
    """

    target: PruneTarget = "messages"
    older_than: timedelta | None = None
    before: datetime | None = None
    resource_id: str | None = None
    batch_size: int = 500

    def __post_init__(self) -> None:
        if self.target not in ("messages", "threads"):
            raise ValidationError("target", f"must be 'messages' or 'threads', got {self.target!r}", "R-PRUNE")
        if (self.older_than is None) == (self.before is None):
            raise ValidationError("older_than", "give exactly one of older_than or before", "R-PRUNE")
        if self.older_than is not None:
            if not isinstance(self.older_than, timedelta) or self.older_than <= timedelta(0):
                raise ValidationError("older_than", f"must be a positive timedelta, got {self.older_than!r}", "R-PRUNE")
        else:
            object.__setattr__(self, "before", check_datetime(self.before, "before"))
        if self.resource_id is not None:
            check_id(self.resource_id, "resource_id")
        size = self.batch_size
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_BATCH:
            raise ValidationError("batch_size", f"must be an int from 1 to {MAX_BATCH}, got {size!r}", "R-PRUNE")

    def cutoff(self, now: datetime) -> datetime:
        """The cutoff for a run starting at ``now``: records strictly before it go."""
        if self.before is not None:
            return self.before
        if self.older_than is None:
            raise ValidationError("older_than", "a policy needs before or older_than", "R-PRUNE")
        # An age beyond the R-TIME range reaches before every storable time: nothing is that old.
        return now - self.older_than if now - TIME_MIN > self.older_than else TIME_MIN


@dataclass(frozen=True, slots=True)
class PruneBatch:
    """One delete a prune makes (what a :data:`PruneHook` sees, before or
    after it).

    Attributes:
        thread_id: the thread concerned.
        message_ids: the messages deleted, or None when the whole thread
            (with every message in it) is deleted.
    """

    thread_id: str
    message_ids: tuple[str, ...] | None


PruneHook = Callable[[PruneBatch], Awaitable[None]]
"""Called before (``before_delete``) or after (``after_delete``) each delete,
not in a dry run. ``Memory`` removes the batch's vectors after its messages,
so an interrupted run never leaves a stored message without its vectors (it
may leave the last batch's vectors: orphans that recall skips, since it
reads every hit from storage, and that ``check_index`` reports and
``reindex`` drops)."""

BatchRunner = Callable[[Coroutine[Any, Any, None]], Awaitable[None]]
"""How each batch runs: awaited with the coroutine of one batch (its
``before_delete`` hook, its delete, its ``after_delete`` hook) and awaits
it. ``Memory`` passes its outbox's ``run``, so a batch, once started, is
carried out whole even when the prune is cancelled (a batch's vectors never
outlive its messages in a store no rerun finds them in). Default: the
batch is awaited directly."""


async def _direct(batch: Coroutine[Any, Any, None]) -> None:
    await batch


async def _delete_batch(storage: Prunable, batch: PruneBatch, hooks: tuple[PruneHook | None, PruneHook | None]) -> None:
    """One batch: ``before_delete``, the delete, ``after_delete``."""
    before, after = hooks
    if before is not None:
        await before(batch)
    if batch.message_ids is None:
        await storage.delete_thread(batch.thread_id)
    else:
        await storage.delete_messages(list(batch.message_ids))
    if after is not None:
        await after(batch)


@dataclass(frozen=True, slots=True)
class PruneReport:
    """What a prune removed (or, with ``dry_run``, would remove).

    Attributes:
        target: the policy's target.
        cutoff: the cutoff used (pass it as ``before`` to resume).
        resource_id: the policy's scope (None: the whole store).
        dry_run: True when nothing was written.
        threads: ids of the deleted threads, in the order they were deleted
            (``target="threads"``; empty for messages).
        messages: deleted messages per thread id (for a deleted thread, every
            message it held).
    """

    target: PruneTarget
    cutoff: datetime
    resource_id: str | None
    dry_run: bool
    threads: tuple[str, ...] = ()
    messages: dict[str, int] = field(default_factory=dict)

    @property
    def message_count(self) -> int:
        """Messages removed in all."""
        return sum(self.messages.values())


async def apply_policy(
    storage: Prunable,
    policy: RetentionPolicy,
    now: datetime,
    *,
    dry_run: bool = False,
    before_delete: PruneHook | None = None,
    after_delete: PruneHook | None = None,
    each_batch: BatchRunner | None = None,
) -> PruneReport:
    """Apply ``policy`` to ``storage`` (see the module docstring for the
    semantics), in batches of ``policy.batch_size``.

    Args:
        storage: any storage.
        policy: what to remove.
        now: the store clock's time at the start (for ``older_than``).
        dry_run: report what would go, write nothing.
        before_delete: awaited before each delete with what it removes.
        after_delete: awaited after each delete with what it removed.
        each_batch: runs each batch (hooks and delete; see
            :data:`BatchRunner`); None: awaited directly.

    Returns:
        :class:`PruneReport`.

    Raises:
        ValidationError: ``policy`` is not a RetentionPolicy or ``dry_run``
            not a bool (before any I/O).
        BackendError: a backend failed; what was deleted stays deleted, and a
            rerun with ``before=`` the cutoff finishes the job.
    """
    if not isinstance(policy, RetentionPolicy):
        raise ValidationError("policy", f"must be a RetentionPolicy, got {type(policy).__name__}", "R-PRUNE")
    check_bool(dry_run, "dry_run")
    cutoff = policy.cutoff(now)
    run = each_batch or _direct
    hooks = (before_delete, after_delete)
    threads: list[str] = []
    counts: dict[str, int] = {}
    if cutoff <= TIME_MIN:  # nothing storable is older (R-TIME)
        return PruneReport(policy.target, cutoff, policy.resource_id, dry_run)
    scope = ThreadFilter(resource_id=policy.resource_id)
    order = OrderBy("created_at", "ASC")
    cursor: str | None = None
    while True:
        page = await storage.list_threads(scope, per_page=policy.batch_size, order_by=order, cursor=cursor)
        for thread in page.items:
            if thread.created_at is None:
                raise ValidationError("thread.created_at", "a stored thread has its times; this one has none", "R-TIME")
            if policy.target == "threads":
                if (thread.last_message_at or thread.created_at) >= cutoff:
                    continue
                held = (await storage.list_messages(thread.id, per_page=0)).counted_total
                if not dry_run:
                    await run(_delete_batch(storage, PruneBatch(thread.id, None), hooks))
                threads.append(thread.id)
                counts[thread.id] = held
            elif thread.last_message_at is not None:
                removed = await _prune_messages(storage, thread.id, cutoff, policy.batch_size, dry_run, hooks, run)
                if removed:
                    counts[thread.id] = removed
        cursor = page.next_cursor
        if cursor is None:
            break
    return PruneReport(policy.target, cutoff, policy.resource_id, dry_run, tuple(threads), counts)


async def _prune_messages(
    storage: Prunable,
    thread_id: str,
    cutoff: datetime,
    batch: int,
    dry_run: bool,
    hooks: tuple[PruneHook | None, PruneHook | None],
    run: BatchRunner,
) -> int:
    """Delete (or count) the messages of one thread created before ``cutoff``
    (``hooks``: before and after each delete; ``run``: runs each batch)."""
    older = MessageFilter(date_range=DateRange(end=cutoff, end_exclusive=True))
    removed = 0
    cursor: str | None = None
    while True:
        # Keyset paging stays exact while the rows behind the cursor are deleted.
        page = await storage.list_messages(thread_id, filter=older, per_page=batch, cursor=cursor)
        found = tuple(m.id for m in page.items)
        if found and not dry_run:
            await run(_delete_batch(storage, PruneBatch(thread_id, found), hooks))
        removed += len(found)
        cursor = page.next_cursor
        if cursor is None:
            return removed

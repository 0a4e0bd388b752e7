"""``ComposedStorage``: the adapter contract built from small queries.

For an author who would rather write simple primitives (get one thread,
list, count, one include window, one-step writes) than the contract's plan
read and checked writes: subclass :class:`ComposedStorage` and implement
its abstract methods; it answers every contract method from them (reads
concurrently, at most :data:`CONCURRENT_READS` at a time; checked writes in
steps whose last one re-verifies the reads, raising
:class:`~memory_core.errors.StaleStateError` so the core retries). The
reference store (``memory://``) and the conformance suite's toy adapter
use it. A production adapter implements the contract directly, in as few
round trips as its backend allows.

An adapter written against the pre-0.x contract (the fine-grained
primitives on :class:`~memory_core.storage.BaseStorage`) keeps working by
changing its base class to :class:`ComposedStorage`.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, Protocol, TypeVar

from memory_core.models import Message, Resource, Thread
from memory_core.plan import ReadParts, ReadPlan
from memory_core.query import MessagePatch, MessageQuery, ThreadQuery
from memory_core.storage.base import BaseStorage
from memory_core.storage.decisions import PatchDecision, SaveDecision

__all__ = [
    "CONCURRENT_READS",
    "ComposedStorage",
    "SimpleReads",
    "bounded_gather",
    "compose_read",
    "compose_read_state",
    "erase_threads",
]

T = TypeVar("T")
Q = TypeVar("Q", ThreadQuery, MessageQuery)


class SimpleReads(Protocol):
    """The simple reads :func:`compose_read` composes (see
    :class:`ComposedStorage` for each one's contract)."""

    async def _get_thread(self, thread_id: str) -> Thread | None: ...
    async def _list_threads(self, query: ThreadQuery) -> list[Thread]: ...
    async def _count_threads(self, query: ThreadQuery) -> int: ...
    async def _get_messages(self, ids: Sequence[str]) -> list[Message]: ...
    async def _list_messages(self, query: MessageQuery) -> list[Message]: ...
    async def _count_messages(self, query: MessageQuery) -> int: ...
    async def _message_window(self, message_id: str, before: int, after: int) -> list[Message]: ...
    async def _get_resource(self, resource_id: str) -> Resource | None: ...
    async def _list_resource_ids(self, after: str | None, limit: int | None) -> list[str]: ...


class ComposedStorage(BaseStorage):
    """:class:`~memory_core.storage.BaseStorage` whose contract is composed
    from the fine-grained primitives below (see the module docstring).

    Required: ``_destroy`` and the abstract methods here, plus the
    contract's write primitives that have no composition (``_insert_thread``,
    ``_patch_thread``, ``_delete_thread``, ``_put_resource``,
    ``_patch_resource``, ``_swap_resource_memory``, ``_swap_thread_memory``).
    """

    # ------------------------------------------------------------------ simple reads

    @abstractmethod
    async def _get_thread(self, thread_id: str) -> Thread | None:
        """The stored thread or None, ``last_message_at`` filled.

        ``last_message_at`` (every primitive returning threads fills it): the
        largest ``created_at`` of the thread's messages, or None when it has
        none. An adapter stores it with the thread and sets it in the same
        transaction as every write that changes a thread's set of messages
        (``_save_messages``, ``_patch_messages``, ``_delete_messages``: the
        threads in their ``bump`` lists are exactly those), or computes it
        when reading; either way it is exact after every write."""

    @abstractmethod
    async def _list_threads(self, query: ThreadQuery) -> list[Thread]:
        """Threads matching ``query`` (resource, metadata), ordered by
        ``query.key`` (order_field µs, id) in its direction, strictly after
        ``query.after`` if set, skipping ``offset``, at most ``limit`` (None =
        all). For ``last_message_at`` a thread without messages sorts at
        :data:`~memory_core.query.NO_MESSAGE_ASC_US` (ASC) or
        :data:`~memory_core.query.NO_MESSAGE_DESC_US` (DESC), i.e. last."""

    @abstractmethod
    async def _count_threads(self, query: ThreadQuery) -> int:
        """How many threads match ``query``'s filter (called with no offset, limit or after)."""

    @abstractmethod
    async def _get_messages(self, ids: Sequence[str]) -> list[Message]:
        """Stored messages with these ids (any order), ``sequence`` filled."""

    @abstractmethod
    async def _list_messages(self, query: MessageQuery) -> list[Message]:
        """Messages matching ``query``, ordered by (created_at, sequence) in its
        direction, strictly after ``query.after`` if set, skipping ``offset``,
        at most ``limit`` (None = all); ``sequence`` filled."""

    @abstractmethod
    async def _count_messages(self, query: MessageQuery) -> int:
        """How many messages match ``query``'s filter (called with no offset, limit or after)."""

    @abstractmethod
    async def _message_window(self, message_id: str, before: int, after: int) -> list[Message]:
        """The message with this id plus up to ``before`` messages preceding it
        and ``after`` following it in its own thread, in R-ORDER ascending;
        ``[]`` if the id is unknown."""

    @abstractmethod
    async def _get_resource(self, resource_id: str) -> Resource | None:
        """The stored resource or None."""

    @abstractmethod
    async def _list_resource_ids(self, after: str | None, limit: int | None) -> list[str]:
        """Ids of the resources that have a record or own at least one
        thread, each once, ascending by exact comparison (code point order:
        UTF-8 byte order), strictly greater than ``after`` if set, at most
        ``limit`` (None = all). Consistent with :meth:`_delete_resource`,
        :meth:`_delete_resource_record` and :meth:`_delete_thread`: an id
        with neither a record nor a thread is not returned."""

    # ------------------------------------------------------------------ one-step writes

    @abstractmethod
    async def _put_thread(self, thread: Thread) -> None:
        """Insert or wholly replace a thread (all fields set but
        ``last_message_at``, which is ignored). Messages of a replaced thread
        are kept, and so is its ``last_message_at``. If the id is stored under
        another resource, raise :class:`~memory_core.errors.StaleStateError`
        and write nothing (checked atomically with the write)."""

    @abstractmethod
    async def _save_messages(self, messages: Sequence[Message], bump: Sequence[str], now_us: int) -> list[int]:
        """One atomic batch (all or nothing). Returns each message's stored
        sequence, in input order.

        First verify, atomically with the writes, what the core read (else
        raise :class:`~memory_core.errors.StaleStateError`, writing nothing):
        each message's thread exists under ``message.resource_id``; a message
        with ``sequence`` None is not stored; one with a ``sequence`` is
        stored under the same ``resource_id``. Then for each message in order:
        if its id exists, set thread_id, role, type, content and metadata (keep
        resource_id, created_at, sequence); otherwise insert it as given
        (every field set) with the next store-wide sequence number. Then bump
        ``updated_at`` of each thread in ``bump`` to bump_us(old, now_us).

        A stored message whose thread (now, at the write) is not in ``bump``
        moved after the core read it: raise StaleStateError, writing nothing
        (else that thread would keep a ``last_message_at`` it no longer has)."""

    @abstractmethod
    async def _patch_messages(self, patches: Sequence[MessagePatch], bump: Sequence[str], now_us: int) -> None:
        """Apply each patch atomically (see :meth:`MessagePatch.apply` for the
        reference result) to existing messages, then bump the threads in
        ``bump``. A patch for an id that vanished meanwhile is skipped. A move
        (``thread_id`` set) whose target thread is missing or under another
        resource than the message, or a message whose thread (now, at the
        write) is not in ``bump`` (it moved after the core read it), raises
        :class:`~memory_core.errors.StaleStateError`, writing nothing."""

    @abstractmethod
    async def _delete_messages(self, ids: Sequence[str], bump: Sequence[str], now_us: int) -> int:
        """Delete these messages (distinct ids) and bump, of the threads in
        ``bump``, those that held a message this call removed; returns how
        many of them this call removed, counted atomically with the delete
        (an id a concurrent writer removed first does not count, and its
        thread is not bumped). A message whose thread (now, at the write) is
        not in ``bump`` moved after the core read it: raise
        :class:`~memory_core.errors.StaleStateError`, writing nothing."""

    @abstractmethod
    async def _delete_resource_record(self, resource_id: str) -> bool:
        """Delete the resource record (working memory, metadata) only; True if
        it existed. Threads and messages are not touched."""

    # ------------------------------------------------------------------ the contract, composed

    async def _read(self, plan: ReadPlan) -> ReadParts:
        """The plan from the simple reads (:func:`compose_read`)."""
        return await compose_read(self, plan)

    async def _read_state(
        self, thread_ids: Sequence[str], message_ids: Sequence[str]
    ) -> tuple[dict[str, Thread], list[Message]]:
        """The threads (by id) and the messages found among these ids, for a
        write's checks (:func:`compose_read_state`)."""
        return await compose_read_state(self, thread_ids, message_ids)

    async def _save_thread_checked(self, thread: Thread) -> Thread | None:
        """:meth:`save_thread`'s write with its check: upsert ``thread`` as
        :meth:`_put_thread` does unless its id is stored under another
        resource. Returns ``thread`` with ``last_message_at`` set to the
        stored thread's (None for a new thread or one without messages), or
        None when the id belongs to another resource (then nothing is
        written; the core raises ConflictError).

        Here two steps (:meth:`_get_thread`, then :meth:`_put_thread`, whose
        own check raises :class:`~memory_core.errors.StaleStateError` when
        the id changed hands in between, so the core retries)."""
        existing = await self._get_thread(thread.id)
        if existing is not None and existing.resource_id != thread.resource_id:
            return None
        await self._put_thread(thread)
        return thread if existing is None else replace(thread, last_message_at=existing.last_message_at)

    async def _save_checked(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], decide: SaveDecision, now_us: int
    ) -> tuple[list[Message], list[int]]:
        """A message save with its checks: read the threads (by id) and the
        messages found among these ids, call ``decide(threads, messages)``
        (it raises the typed error of a failed check, or returns the records
        to write and the threads to bump), write them as :meth:`_save_messages`
        does and return ``(records, their sequences)``.

        Here three steps (:meth:`_read_state`, ``decide``,
        :meth:`_save_messages`, which re-verifies the reads and raises
        :class:`~memory_core.errors.StaleStateError` when a writer got in
        between, so the core retries)."""
        threads, stored = await self._read_state(thread_ids, message_ids)
        records, bump = decide(threads, stored)
        return records, await self._save_messages(records, bump, now_us)

    async def _patch_checked(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], decide: PatchDecision, now_us: int
    ) -> list[Message]:
        """A message update with its checks: read the threads (by id: the
        move targets) and the messages found among these ids, call
        ``decide(threads, messages)`` (it raises the typed error of a failed
        check, or returns the patches to apply and the threads to bump),
        apply them as :meth:`_patch_messages` does and return the patched
        messages as stored (any order; ``[]`` and no write when ``decide``
        returns no patch).

        Here four steps (:meth:`_read_state`, ``decide``,
        :meth:`_patch_messages`, which re-verifies the move targets and
        raises :class:`~memory_core.errors.StaleStateError` when a writer got
        in between, so the core retries; then :meth:`_get_messages`)."""
        targets, stored = await self._read_state(thread_ids, message_ids)
        patches, bump = decide(targets, stored)
        if not patches:
            return []
        await self._patch_messages(patches, bump, now_us)
        return await self._get_messages([p.id for p in patches])

    async def _delete_found(self, ids: Sequence[str], now_us: int) -> int:
        """:meth:`delete_messages`' write: delete the stored messages among
        these distinct ids, bump the threads of those deleted (R-BUMP,
        :func:`~memory_core.clock.bump_us` of ``now_us``, ``last_message_at``
        recomputed) and return how many this call removed, counted
        atomically with the delete (of racing deletes of one id exactly one
        counts it). Unknown ids are ignored.

        Here two steps (:meth:`_get_messages` for the threads to bump, then
        :meth:`_delete_messages`, which counts)."""
        found = await self._get_messages(ids)
        if not found:
            return 0
        bump = list(dict.fromkeys(m.thread_id for m in found))
        return await self._delete_messages([m.id for m in found], bump, now_us)

    async def _delete_resource(self, resource_id: str) -> tuple[list[str], int, bool]:
        """Delete every thread of the resource with its messages, then its
        record; returns ``(deleted thread ids, deleted message count, record
        existed)``. Must be all-or-nothing or resumable (a repeat after a
        failure finishes the job) and must leave no id reserved.

        Here :meth:`_count_messages`, :meth:`_list_threads`,
        :func:`erase_threads` of :meth:`_delete_thread` and
        :meth:`_delete_resource_record` (resumable: each step is idempotent);
        the message count is the sum of what each ``_delete_thread`` deleted
        (a message a racing delete took first counts there, not here), or
        the count read first when one returns None."""
        counted_first = await self._count_messages(MessageQuery(None, resource_id))
        thread_ids = [thread.id for thread in await self._list_threads(ThreadQuery(resource_id))]
        deleted = await erase_threads(thread_ids, self._delete_thread)
        existed = await self._delete_resource_record(resource_id)
        return thread_ids, counted_first if deleted is None else deleted, existed


CONCURRENT_READS = 8
"""How many primitive reads one composite default runs at once: enough to
overlap round trips, few enough not to drain a driver's connection pool
(a 1,000-hit recall must not open 1,000 connections)."""


async def compose_read(store: SimpleReads, plan: ReadPlan) -> ReadParts:
    """``plan`` answered by ``store``'s simple reads, run concurrently, at
    most :data:`CONCURRENT_READS` at a time per part (what
    :meth:`ComposedStorage._read` does; an adapter whose own plan read
    cannot answer a plan, such as Redis Cluster's across slots, falls back
    to it)."""
    calls: dict[str, Awaitable[Any]] = {}
    if plan.threads:
        calls["threads"] = bounded_gather([partial(store._get_thread, thread_id) for thread_id in plan.threads])
    if plan.resources:
        calls["resources"] = bounded_gather([partial(store._get_resource, rid) for rid in plan.resources])
    if plan.messages is not None:
        calls["messages"] = _count_and_list(
            store._count_messages, store._list_messages, plan.messages, plan.messages.count
        )
    if plan.thread_page is not None:
        calls["thread_page"] = _count_and_list(store._count_threads, store._list_threads, plan.thread_page)
    if plan.windows:
        calls["windows"] = bounded_gather([partial(store._message_window, *target) for target in plan.windows])
    if plan.message_ids:
        calls["found_messages"] = store._get_messages(plan.message_ids)
    if plan.resource_ids is not None:
        calls["resource_ids"] = store._list_resource_ids(plan.resource_ids.after, plan.resource_ids.limit)
    # Tasks cost event-loop turns: gather only when there is something to overlap.
    if len(calls) == 1:
        name, call = calls.popitem()
        results = {name: await call}
    else:
        results = dict(zip(calls, await asyncio.gather(*calls.values()), strict=True))
    threads = results.get("threads", [])
    resources = results.get("resources", [])
    messages, thread_page, windows = results.get("messages"), results.get("thread_page"), results.get("windows", [])
    found = {t.id: t for t in threads if t is not None}
    stored = {r.id: r for r in resources if r is not None}
    if plan.owner_resources:
        owners = dict.fromkeys(t.resource_id for t in found.values() if t.resource_id not in stored)
        for resource in await bounded_gather([partial(store._get_resource, rid) for rid in owners]):
            if resource is not None:
                stored[resource.id] = resource
    message_total, message_items = messages if messages is not None else (0, [])
    thread_total, thread_items = thread_page if thread_page is not None else (0, [])
    return ReadParts(
        found,
        stored,
        message_total,
        message_items,
        thread_total,
        thread_items,
        windows,
        results.get("found_messages", []),
        results.get("resource_ids", []),
    )


async def compose_read_state(
    store: SimpleReads, thread_ids: Sequence[str], message_ids: Sequence[str]
) -> tuple[dict[str, Thread], list[Message]]:
    """The threads (by id) and the messages found among these ids, from
    ``store``'s ``_get_thread`` and ``_get_messages``, concurrently."""
    threads, messages = await asyncio.gather(
        bounded_gather([partial(store._get_thread, thread_id) for thread_id in thread_ids]),
        store._get_messages(message_ids),
    )
    return {t.id: t for t in threads if t is not None}, messages


async def erase_threads(thread_ids: Sequence[str], delete_thread: Callable[[str], Awaitable[int | None]]) -> int | None:
    """Delete each thread with ``delete_thread`` (at most
    :data:`CONCURRENT_READS` at once; each idempotent, so an erasure built
    on it is resumable); the messages they deleted, or None when one did
    not count."""
    deleted = await bounded_gather([partial(delete_thread, thread_id) for thread_id in thread_ids])
    return None if None in deleted else sum(n or 0 for n in deleted)


async def bounded_gather(calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """``asyncio.gather`` of ``call()`` for each of ``calls`` (results in
    order), at most :data:`CONCURRENT_READS` running at a time.

    Each call is made only once its turn comes (inside the gate), so a
    cancellation before then leaves no coroutine created and never awaited
    (``RuntimeWarning: coroutine ... was never awaited``): pass callables
    (``functools.partial(store._get_thread, thread_id)``), not coroutines."""
    gate = asyncio.Semaphore(CONCURRENT_READS)

    async def gated(call: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await call()

    return list(await asyncio.gather(*(gated(call) for call in calls)))


async def _count_and_list(
    count: Callable[[Q], Awaitable[int]], fetch: Callable[[Q], Awaitable[list[T]]], query: Q, counted: bool = True
) -> tuple[int, list[T]]:
    """The default composite page read: count (unpaged; 0 unless ``counted``)
    and list concurrently."""
    if not counted:
        return 0, (await fetch(query) if query.limit != 0 else [])
    unpaged = replace(query, offset=0, limit=None, after=None)
    if query.limit == 0:
        return await count(unpaged), []
    total, items = await asyncio.gather(count(unpaged), fetch(query))
    return total, items

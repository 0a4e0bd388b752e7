"""Writes: threads, messages and resources saved, updated and deleted
through the adapter's conditional write primitives.

Each public write validates its whole input first (nothing is written on a
bad value), then runs one read-check-write attempt
(:class:`~memory_core.storage.lifecycle.Lifecycle`'s ``_optimistic`` repeats
it while the adapter reports a stale read). The checks themselves are the
pure functions of :mod:`memory_core.storage.decisions`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from memory_core.clock import to_us
from memory_core.errors import ConflictError, NotFoundError, StaleStateError
from memory_core.lineage import check_hand_set_lineage
from memory_core.models import Message, Resource, Thread
from memory_core.query import NOT_GIVEN, MessagePatch
from memory_core.storage.decisions import WriteTimes, as_stored, check_patch, combine, decide_patch, decide_save
from memory_core.storage.lifecycle import Lifecycle
from memory_core.storage.parts import order_key
from memory_core.telemetry import traced
from memory_core.validation import (
    CheckedMessages,
    check_id,
    check_id_list,
    check_json_object,
    check_list,
    check_message,
    check_record_size,
    check_resource,
    check_text,
    check_thread,
)

if TYPE_CHECKING:
    from memory_core.storage import Storage

__all__ = ["Writes"]


class Writes(Lifecycle):
    """The public writes of :class:`~memory_core.storage.BaseStorage`."""

    @traced("update_memory")
    async def save_thread(self, thread: Thread | Mapping[str, Any]) -> Thread:
        """Upsert a whole thread (every field replaced); returns it as stored.

        ``created_at``/``updated_at`` None mean now; ``updated_at`` is stored as
        given otherwise. ``last_message_at`` is the store's (ignored on input;
        the returned thread carries the value read before the write). A thread
        id saved again under another resource is a ConflictError (its messages
        belong to the first resource).

        Raises:
            ValidationError: bad field (R-ID, R-JSON, R-TIME); metadata
                setting a lineage key by hand (``metadata.cloned_from`` ...,
                R-LINEAGE: :func:`~memory_core.lineage.check_hand_set_lineage`).
            ConflictError: the id belongs to another resource.
        """
        stored = self._thread_to_store(thread)
        await check_hand_set_lineage(cast("Storage", self), stored.id, stored.metadata)

        async def attempt() -> Thread:
            saved = await self._save_thread_checked(stored)
            if saved is None:
                # Never name the other tenant's resource (issue 12, point 14).
                raise ConflictError(f"thread {stored.id!r} belongs to another resource")
            return saved

        return await self._optimistic("save_thread", attempt)

    @traced("create_memory")
    async def insert_thread(self, thread: Thread | Mapping[str, Any]) -> Thread:
        """Save a new thread, never replacing one (as :meth:`save_thread`
        otherwise). Atomic: of two racing inserts of one id, one fails.

        Raises:
            ValidationError: bad field (R-ID, R-JSON, R-TIME, R-SIZE); a
                lineage key set by hand (R-LINEAGE, as :meth:`save_thread`).
            ConflictError: a thread with this id exists (under any resource).
        """
        stored = self._thread_to_store(thread)
        await check_hand_set_lineage(cast("Storage", self), stored.id, stored.metadata)

        await self._ready()
        with self._guard("insert_thread"):
            try:  # no read first: the insert itself checks, atomically
                await self._insert_thread(stored)
            except StaleStateError:
                raise ConflictError(f"thread {stored.id!r} already exists") from None
        return stored

    def _thread_to_store(self, thread: Thread | Mapping[str, Any]) -> Thread:
        """The validated thread with its times resolved (None: now)."""
        valid = check_thread(thread)
        created = valid.created_at or self.clock.now()
        return replace(valid, created_at=created, updated_at=valid.updated_at or created)

    @traced("update_memory")
    async def update_thread(
        self, thread_id: str, *, title: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Thread:
        """Partial, atomic update: only given fields change; ``metadata`` is
        merged one level (shallow); ``updated_at`` is bumped (R-BUMP).

        Raises:
            ValidationError: bad id, title not a str, metadata not JSON, or
                a lineage key set or changed by hand (R-LINEAGE, as
                :meth:`save_thread`).
            NotFoundError: no such thread.
        """
        check_id(thread_id, "thread_id")
        if title is not None:
            check_text(title, "title")
        patch = None if metadata is None else check_json_object(metadata, "metadata")
        check_record_size("thread update", {"title": title, "metadata": patch})
        await check_hand_set_lineage(cast("Storage", self), thread_id, patch)
        await self._ready()
        with self._guard("update_thread"):
            updated = await self._patch_thread(thread_id, title, patch, to_us(self.clock.now()))
        if updated is None:
            raise NotFoundError(f"thread {thread_id!r} does not exist")
        return updated

    @traced("update_memory")
    async def save_messages(self, messages: Sequence[Message | Mapping[str, Any]]) -> list[Message]:
        """Upsert messages by id; returns them as stored, in input order.

        The whole batch is validated before anything is written, and written
        all or nothing (a backend that cannot write several resources at
        once, Redis Cluster, is atomic per resource and says so in its
        README); ``[]`` is a no-op. New ids get ``created_at`` (now when absent, R-CLOCK) and the
        next sequence numbers in list order (R-ORDER). An existing id keeps
        ``created_at`` and sequence; content, role, type and metadata are
        replaced, and a new ``thread_id`` of the same resource moves it. The
        same id twice: the last wins (at the first one's place). Every thread
        touched (old and new on a move) has ``updated_at`` bumped. A
        :class:`~memory_core.validation.CheckedMessages` batch is taken as
        already checked (``Memory`` passes one).

        Raises:
            ValidationError: any bad message (named by id); nothing is written.
            NotFoundError: a thread does not exist.
            OwnershipError: ``resource_id`` differs from the thread's.
            ConflictError: an existing id is saved under another resource.
            StaleStateError: (a ConflictError) concurrent writers changed
                these messages or threads under every attempt (rare: see
                ``memory_core.retry.STALE_WRITES``); retrying later is safe.
        """
        if type(messages) is CheckedMessages:  # each one checked by the caller (Memory) a moment ago
            batch = {message.id: message for message in messages}
        else:
            messages = check_list(messages, "messages", "Message", "[message, ...]")
            batch = {}
            for index, raw in enumerate(messages):
                message = check_message(raw, f"messages[{index}]")
                batch[message.id] = message
        if not batch:
            return []
        times = WriteTimes(self.clock)
        return await self._optimistic("save_messages", lambda: self._save_batch(batch, times))

    async def _save_batch(self, batch: dict[str, Message], times: WriteTimes) -> list[Message]:
        """One read-check-write attempt of :meth:`save_messages`, at the
        call's ``times``."""
        wanted = list(dict.fromkeys(m.thread_id for m in batch.values()))

        def decide(threads: dict[str, Thread], stored: list[Message]) -> tuple[list[Message], list[str]]:
            return decide_save(batch, threads, stored, times)

        records, sequences = await self._save_checked(wanted, list(batch), decide, times.now_us)
        return [
            m if m.sequence == seq else as_stored(m, m.resource_id, m.created_at, seq)
            for m, seq in zip(records, sequences, strict=True)
        ]

    @traced("update_memory")
    async def update_messages(self, updates: Sequence[Mapping[str, Any]]) -> list[Message]:
        """Partial updates, one mapping per message: ``{"id", "role"?, "type"?,
        "content"?, "metadata"?, "thread_id"?}``.

        Scalars overwrite; a dict ``content`` is merged one level into stored
        dict content (and replaces str content); ``metadata`` is merged one
        level; ``thread_id`` moves the message within its resource;
        ``created_at`` cannot change. A key given as None keeps its field, as
        an absent key does. Unknown ids are skipped. The threads of every
        updated message are bumped, even by an update that changes nothing.
        Returns the updated messages as stored, in R-ORDER.

        Raises:
            ValidationError: bad field, ``created_at`` given, or a result over
                R-SIZE; nothing is written.
            NotFoundError: the target thread of a move does not exist.
            ConflictError: a move to another resource's thread; or (its
                subclass StaleStateError) every retry found another writer
                between the store's check and its write (a store re-verifies
                what it read and retries; under bursts it ends holding row
                locks, so this is rare).
        """
        updates = check_list(updates, "updates", "mappings", '[{"id": "<id>", "content": ...}, ...]')
        patches: dict[str, MessagePatch] = {}
        for index, update in enumerate(updates):
            patch = check_patch(update, f"updates[{index}]")
            previous = patches.get(patch.id)
            patches[patch.id] = patch if previous is None else combine(previous, patch)
        if not patches:
            return []
        now_us = to_us(self.clock.now())
        return await self._optimistic("update_messages", lambda: self._patch_batch(patches, now_us))

    async def _patch_batch(self, patches: dict[str, MessagePatch], now_us: int) -> list[Message]:
        """One read-check-write attempt of :meth:`update_messages`, bumping at the call's ``now_us``."""
        wanted = list(dict.fromkeys(p.thread_id for p in patches.values() if p.thread_id is not None))

        def decide(targets: dict[str, Thread], stored: list[Message]) -> tuple[list[MessagePatch], list[str]]:
            return decide_patch(patches, targets, stored)

        updated = await self._patch_checked(wanted, list(patches), decide, now_us)
        return sorted(updated, key=order_key)

    @traced("delete_memory")
    async def delete_messages(self, ids: Sequence[str]) -> int:
        """Delete known ids, ignore unknown ones; bump their threads. The
        remaining order is unchanged; an emptied thread remains.

        Returns how many messages this call removed (distinct ids): of racing
        deletes of one id exactly one counts it, so ``delete_messages([id]) ==
        1`` is an atomic "I took it" (the integrations' pop uses this).

        Raises:
            ValidationError: a bad id list (R-ID).
            StaleStateError: (a ConflictError) concurrent moves of these
                messages under every attempt (rare); retrying is safe.
        """
        wanted = check_id_list(ids, "ids")
        if not wanted:
            return 0
        distinct = list(dict.fromkeys(wanted))
        # A message moved between the default path's read and its delete is stale: read again.
        now_us = to_us(self.clock.now())  # one bump time for every attempt
        return await self._optimistic("delete_messages", lambda: self._delete_found(distinct, now_us))

    @traced("update_memory")
    async def save_resource(self, resource: Resource | Mapping[str, Any]) -> Resource:
        """Upsert a whole resource; None datetimes mean now. Returns it."""
        valid = check_resource(resource)
        created = valid.created_at or self.clock.now()
        stored = replace(valid, created_at=created, updated_at=valid.updated_at or created)
        await self._ready()
        with self._guard("save_resource"):
            await self._put_resource(stored)
        return stored

    @traced("update_memory")
    async def update_resource(
        self, resource_id: str, *, working_memory: Any = NOT_GIVEN, metadata: Mapping[str, Any] | None = None
    ) -> Resource:
        """Partial, atomic update; creates the resource when missing.

        ``working_memory``: a str (``""`` is a value) or None to clear; omit to
        keep. ``metadata`` is merged one level. ``updated_at`` is bumped.

        Raises:
            ValidationError: bad id, working memory not str/None, bad metadata.
        """
        check_id(resource_id, "resource_id")
        if working_memory is not NOT_GIVEN and working_memory is not None:
            check_text(working_memory, "working_memory")
        patch = None if metadata is None else check_json_object(metadata, "metadata")
        memory = None if working_memory is NOT_GIVEN else working_memory
        check_record_size("resource update", {"working_memory": memory, "metadata": patch})
        await self._ready()
        with self._guard("update_resource"):
            return await self._patch_resource(resource_id, working_memory, patch, to_us(self.clock.now()))

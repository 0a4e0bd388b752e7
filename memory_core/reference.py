"""The reference store (``memory://``): the contract in plain Python, in memory.

Every primitive is the most direct reading of its contract in
:class:`~memory_core.storage.composed.ComposedStorage` (which composes the
adapter contract from them), using the reference predicates of
:mod:`memory_core.query`. The conformance suite compares every adapter with
this store. It is also a real, fast store for tests and single-process use
(data lives as long as the object; instances never share data).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from itertools import count
from typing import Any

from memory_core.clock import Clock, bump_us, from_us, to_us
from memory_core.errors import StaleStateError, ValidationError
from memory_core.models import Message, Resource, Thread
from memory_core.query import NOT_GIVEN, MessagePatch, MessageQuery, ThreadQuery
from memory_core.storage import ComposedStorage, message_key, order_key

__all__ = ["InMemoryStorage"]


class InMemoryStorage(ComposedStorage):
    """The reference store. URL: ``memory://`` (each connect is a new store).

    Args:
        clock: injectable clock (see :class:`~memory_core.storage.BaseStorage`).
    """

    backend_name = "memory"

    def __init__(self, *, clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        self._threads: dict[str, Thread] = {}
        self._messages: dict[str, Message] = {}
        self._resources: dict[str, Resource] = {}
        self._sequence = count(1)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> InMemoryStorage:
        """Build from ``memory://`` exactly. Options: ``clock``; ``namespace``
        is accepted and ignored (every instance is its own namespace).

        Raises:
            ValidationError: the URL has a path or query (nothing to configure).
        """
        scheme, _, rest = url.partition("://")
        if not scheme or rest.strip("/"):
            raise ValidationError("url", f"{scheme or 'memory'}:// takes no path or options, got {url!r}")
        options.pop("namespace", None)
        return cls(**options)

    async def _destroy(self) -> None:
        self._threads.clear()
        self._messages.clear()
        self._resources.clear()

    # Values are deep-copied in and out so callers never alias stored state.

    async def _get_thread(self, thread_id: str) -> Thread | None:
        return copy.deepcopy(self._threads.get(thread_id))

    async def _put_thread(self, thread: Thread) -> None:
        old = self._threads.get(thread.id)
        if old is not None and old.resource_id != thread.resource_id:
            raise StaleStateError(f"thread {thread.id!r} moved to resource {old.resource_id!r}")
        last = None if old is None else old.last_message_at  # kept: its messages stay
        self._threads[thread.id] = replace(copy.deepcopy(thread), last_message_at=last)

    async def _insert_thread(self, thread: Thread) -> None:
        if thread.id in self._threads:
            raise StaleStateError(f"thread {thread.id!r} exists")
        self._threads[thread.id] = replace(copy.deepcopy(thread), last_message_at=None)

    async def _patch_thread(
        self, thread_id: str, title: str | None, metadata: dict[str, Any] | None, now_us: int
    ) -> Thread | None:
        thread = self._threads.get(thread_id)
        if thread is None:
            return None
        if thread.updated_at is None:
            raise ValidationError("thread.updated_at", "a stored thread has its times; this one has none", "R-TIME")
        thread = replace(
            thread,
            title=thread.title if title is None else title,
            metadata=thread.metadata if metadata is None else {**thread.metadata, **copy.deepcopy(metadata)},
            updated_at=from_us(bump_us(to_us(thread.updated_at), now_us)),
        )
        self._threads[thread_id] = thread
        return copy.deepcopy(thread)

    async def _delete_thread(self, thread_id: str) -> int:
        self._threads.pop(thread_id, None)
        gone = [m.id for m in self._messages.values() if m.thread_id == thread_id]
        for message_id in gone:
            del self._messages[message_id]
        return len(gone)

    async def _list_threads(self, query: ThreadQuery) -> list[Thread]:
        found = [t for t in self._threads.values() if query.matches(t) and query.is_after(query.key(t))]
        found.sort(key=query.key, reverse=query.descending)
        return copy.deepcopy(_window(found, query.offset, query.limit))

    async def _count_threads(self, query: ThreadQuery) -> int:
        return sum(1 for t in self._threads.values() if query.matches(t))

    async def _get_messages(self, ids: Sequence[str]) -> list[Message]:
        return [copy.deepcopy(self._messages[i]) for i in dict.fromkeys(ids) if i in self._messages]

    async def _save_messages(self, messages: Sequence[Message], bump: Sequence[str], now_us: int) -> list[int]:
        for message in messages:
            thread = self._threads.get(message.thread_id)
            old = self._messages.get(message.id)
            if thread is None or thread.resource_id != message.resource_id:
                raise StaleStateError(f"thread {message.thread_id!r} changed")
            if (old is None) != (message.sequence is None) or (old and old.resource_id != message.resource_id):
                raise StaleStateError(f"message {message.id!r} changed")
        self._check_threads([m.id for m in messages], bump)
        sequences = []
        for message in messages:
            old = self._messages.get(message.id)
            if old is None:
                stored = replace(copy.deepcopy(message), sequence=next(self._sequence))
            else:
                stored = replace(
                    old,
                    thread_id=message.thread_id,
                    role=message.role,
                    type=message.type,
                    content=copy.deepcopy(message.content),
                    metadata=copy.deepcopy(message.metadata),
                )
            self._messages[message.id] = stored
            if stored.sequence is None:
                raise ValidationError(
                    "message.sequence", "a stored message has its sequence (R-ORDER); this one has none", "R-ORDER"
                )
            sequences.append(stored.sequence)
        self._bump(bump, now_us)
        return sequences

    async def _patch_messages(self, patches: Sequence[MessagePatch], bump: Sequence[str], now_us: int) -> None:
        self._check_threads([p.id for p in patches], bump)
        for patch in patches:
            old, target = self._messages.get(patch.id), self._threads.get(patch.thread_id or "")
            if old and patch.thread_id and (target is None or target.resource_id != old.resource_id):
                raise StaleStateError(f"thread {patch.thread_id!r} changed")
        for patch in patches:
            old = self._messages.get(patch.id)
            if old is not None:
                self._messages[patch.id] = copy.deepcopy(patch.apply(old))
        self._bump(bump, now_us)

    async def _delete_messages(self, ids: Sequence[str], bump: Sequence[str], now_us: int) -> int:
        self._check_threads(ids, bump)
        removed = [m for m in (self._messages.pop(message_id, None) for message_id in ids) if m is not None]
        touched = {m.thread_id for m in removed}
        self._bump([tid for tid in bump if tid in touched], now_us)
        return len(removed)

    def _check_threads(self, ids: Sequence[str], bump: Sequence[str]) -> None:
        """StaleStateError when a stored message among ``ids`` is in a thread
        not in ``bump``: it moved after the core's read."""
        expected = set(bump)
        for message_id in ids:
            stored = self._messages.get(message_id)
            if stored is not None and stored.thread_id not in expected:
                raise StaleStateError(f"message {message_id!r} moved to thread {stored.thread_id!r}")

    def _bump(self, thread_ids: Sequence[str], now_us: int) -> None:
        """Bump ``updated_at`` and recompute ``last_message_at`` of these threads
        (every message write bumps each thread whose messages it changed)."""
        wanted = set(thread_ids)
        last: dict[str, Any] = {}
        for message in self._messages.values():
            if message.thread_id in wanted:
                seen = last.get(message.thread_id)
                if seen is None or message.created_at > seen:
                    last[message.thread_id] = message.created_at
        for thread_id in thread_ids:
            thread = self._threads.get(thread_id)
            if thread is not None:
                if thread.updated_at is None:
                    raise ValidationError(
                        "thread.updated_at", "a stored thread has its times; this one has none", "R-TIME"
                    )
                updated = from_us(bump_us(to_us(thread.updated_at), now_us))
                self._threads[thread_id] = replace(thread, updated_at=updated, last_message_at=last.get(thread_id))

    async def _list_messages(self, query: MessageQuery) -> list[Message]:
        found = [m for m in self._messages.values() if query.matches(m) and query.is_after(message_key(m))]
        found.sort(key=order_key, reverse=query.descending)
        return copy.deepcopy(_window(found, query.offset, query.limit))

    async def _count_messages(self, query: MessageQuery) -> int:
        return sum(1 for m in self._messages.values() if query.matches(m))

    async def _message_window(self, message_id: str, before: int, after: int) -> list[Message]:
        target = self._messages.get(message_id)
        if target is None:
            return []
        thread = sorted((m for m in self._messages.values() if m.thread_id == target.thread_id), key=order_key)
        index = thread.index(target)
        return copy.deepcopy(thread[max(0, index - before) : index + after + 1])

    async def _get_resource(self, resource_id: str) -> Resource | None:
        return copy.deepcopy(self._resources.get(resource_id))

    async def _put_resource(self, resource: Resource) -> None:
        self._resources[resource.id] = copy.deepcopy(resource)

    async def _list_resource_ids(self, after: str | None, limit: int | None) -> list[str]:
        owners = set(self._resources).union(t.resource_id for t in self._threads.values())
        return _window(sorted(rid for rid in owners if after is None or rid > after), 0, limit)

    async def _swap_resource_memory(self, resource_id: str, expected: str | None, value: str, now_us: int) -> bool:
        old = self._resources.get(resource_id)
        if (None if old is None else old.working_memory) != expected:
            return False
        await self._patch_resource(resource_id, value, None, now_us)
        return True

    async def _swap_thread_memory(
        self, thread_id: str, expected: str | None, value: str, now_us: int, metadata: dict[str, Any] | None = None
    ) -> bool | None:
        thread = self._threads.get(thread_id)
        if thread is None:
            return None
        current = thread.metadata.get("working_memory")
        if (current if isinstance(current, str) else None) != expected:
            return False
        await self._patch_thread(thread_id, None, {**(metadata or {}), "working_memory": value}, now_us)
        return True

    async def _delete_resource_record(self, resource_id: str) -> bool:
        return self._resources.pop(resource_id, None) is not None

    async def _patch_resource(
        self, resource_id: str, working_memory: Any, metadata: dict[str, Any] | None, now_us: int
    ) -> Resource:
        old = self._resources.get(resource_id)
        if old is None:
            now = from_us(now_us)
            old = Resource(resource_id, created_at=now, updated_at=now)
            updated_at = now
        else:
            if old.updated_at is None:
                raise ValidationError(
                    "resource.updated_at", "a stored resource has its times; this one has none", "R-TIME"
                )
            updated_at = from_us(bump_us(to_us(old.updated_at), now_us))
        resource = replace(
            old,
            working_memory=old.working_memory if working_memory is NOT_GIVEN else working_memory,
            metadata=old.metadata if metadata is None else {**old.metadata, **copy.deepcopy(metadata)},
            updated_at=updated_at,
        )
        self._resources[resource_id] = resource
        return copy.deepcopy(resource)


def _window(items: list[Any], offset: int, limit: int | None) -> list[Any]:
    return items[offset:] if limit is None else items[offset : offset + limit]

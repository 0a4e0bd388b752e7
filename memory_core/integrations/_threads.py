"""Thread operations every integration shares: ids, ownership-checked reads,
create-on-first-write saves and an atomic pop of the newest message.

Built only on public :class:`~memory_core.Memory` and storage calls, so every
backend gets the same semantics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from typing import Any

from memory_core.errors import ConflictError, NotFoundError, OwnershipError, ValidationError
from memory_core.ids import new_message_id
from memory_core.memory import Memory
from memory_core.models import Message, MessagePageRequest, PerPage, Thread
from memory_core.validation import check_id

__all__ = [
    "context_resource",
    "delete_conversation",
    "new_message_id",
    "newest_messages",
    "newest_until",
    "owner_of",
    "pop_newest",
    "save_to",
]


async def newest_messages(memory: Memory, thread_id: str, resource_id: str, limit: int | None) -> list[Message]:
    """The newest ``limit`` messages of a thread (all when None), oldest first.

    One storage read of the ``limit`` rows returned, however long the thread
    (no total is asked for), when the thread has messages: the page is
    filtered by ``resource_id``, so every message returned is the owner's. Only an empty
    page costs a second read, telling "no thread" (``[]``) from "another
    resource's thread".

    Raises:
        OwnershipError: the thread belongs to another resource.
        ValidationError: bad ids or limit.
    """
    per_page: PerPage = False if limit is None else limit
    page = await memory.storage.page_messages(
        MessagePageRequest(
            thread_ids=(thread_id,), resource_id=resource_id, per_page=per_page, newest=True, total=False
        )
    )
    if not page.items:
        await _check_owner(memory, thread_id, resource_id)
    return page.items


_WALK_PAGE = 100
"""Messages per read when walking back through a thread to a stop."""


async def newest_until(
    memory: Memory, thread_id: str, resource_id: str, limit: int | None, stop: Callable[[Message], bool]
) -> tuple[Thread | None, list[Message]]:
    """The thread and its newest messages down to a stop, oldest first.

    Walks back from the newest message, at most ``limit`` messages (None:
    no limit), and ends before the first (newest) message for which
    ``stop`` is true. Reads pages of up to 100 newest first, with the thread
    row in the first read, so the cost follows what is returned, not the
    thread's length.

    Returns:
        ``(thread, messages)``; ``(None, [])`` when the thread is missing or
        belongs to another resource.

    Raises:
        ValidationError: bad ids or limit.
    """
    taken: list[Message] = []  # newest first
    thread: Thread | None = None
    cursor: str | None = None
    while True:
        want = _WALK_PAGE if limit is None else min(limit - len(taken), _WALK_PAGE)
        request = MessagePageRequest(
            thread_ids=(thread_id,), resource_id=resource_id, per_page=want, newest=True, total=False, cursor=cursor
        )
        parts = await memory.storage.message_parts(request, threads=() if thread else (thread_id,))
        if thread is None:
            thread = parts.threads.get(thread_id)
            if thread is None or thread.resource_id != resource_id:
                return None, []
        for message in parts.main:  # newest first: the query runs DESC
            if stop(message):
                return thread, taken[::-1]
            taken.append(message)
        cursor = parts.next_cursor
        if cursor is None or (limit is not None and len(taken) >= limit):
            return thread, taken[::-1]


async def _check_owner(memory: Memory, thread_id: str, resource_id: str) -> Thread | None:
    thread = await memory.storage.get_thread(thread_id)
    if thread is not None and thread.resource_id != resource_id:
        raise OwnershipError(f"thread {thread_id!r} does not belong to resource {resource_id!r}")
    return thread


async def save_to(
    memory: Memory,
    thread_id: str,
    resource_id: str,
    messages: Sequence[Message],
    *,
    metadata: Mapping[str, Any] | None = None,
) -> list[Message]:
    """Save messages into a thread, creating the thread (owned by
    ``resource_id``, with ``metadata``) on first write; one write when it
    exists. Vectors are indexed through :meth:`Memory.save_messages`; items
    are stored exactly, ``system`` ones included (``persist_system``).

    Raises:
        OwnershipError: the thread belongs to another resource.
        ValidationError: a bad message; nothing is written.
    """
    if not messages:
        return []
    try:
        return await memory.save_messages(messages, persist_system=True)
    except NotFoundError:
        pass
    with suppress(ConflictError):  # created meanwhile by a concurrent writer: save into it
        await memory.storage.insert_thread(Thread(thread_id, resource_id, metadata=dict(metadata or {})))
    return await memory.save_messages(messages, persist_system=True)


async def pop_newest(memory: Memory, thread_id: str, resource_id: str) -> Message | None:
    """Remove and return the thread's newest message; None when empty.

    Atomic under concurrent poppers on every backend: read the newest
    message, then delete it; ``delete_messages`` counts only what this call
    removed, so of racing poppers exactly one gets 1 and returns the message.
    A popper that lost the race reads again. Nothing is left behind.

    Raises:
        OwnershipError: the thread belongs to another resource.
    """
    while True:
        newest = await newest_messages(memory, thread_id, resource_id, 1)
        if not newest:
            return None
        if await memory.delete_messages([newest[0].id]) == 1:
            return newest[0]


async def delete_conversation(memory: Memory, thread_id: str, resource_id: str) -> None:
    """Delete a thread with its messages and their vectors (missing: no-op).

    Raises:
        OwnershipError: the thread belongs to another resource.
    """
    if await _check_owner(memory, thread_id, resource_id) is not None:
        await memory.delete_thread(thread_id)


def context_resource(context: Any, key: str = "resource_id") -> str | None:
    """The resource id a framework's run context carries: ``context[key]``
    for a mapping, else attribute ``key``; None when absent."""
    if context is None:
        return None
    value = context.get(key) if isinstance(context, Mapping) else getattr(context, key, None)
    return None if value is None else check_id(value, f"context.{key}")


def owner_of(explicit: str | None, context: Any) -> str:
    """The run context's resource id, else the one given at construction.

    Raises:
        ValidationError: neither gives one.
    """
    owner = context_resource(context)
    if owner is not None:
        return owner
    if explicit is None:
        raise ValidationError("resource_id", "give one at construction or in the run context ('resource_id')")
    return explicit

"""Thread operations composed from storage primitives: create, get-or-create
and the ``generate_title`` hook (clones and branches: :mod:`memory_core.lineage`).

:class:`~memory_core.memory.Memory` documents each (its ``create_thread``,
``get_or_create_thread``); the functions here check their
inputs before any I/O and raise the same typed errors.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from memory_core.arguments import check_metadata_arg
from memory_core.config import TitleGenerator
from memory_core.errors import ConflictError, OwnershipError
from memory_core.models import Message, Thread
from memory_core.storage import Storage
from memory_core.validation import (
    check_bool,
    check_id,
    check_text,
)

__all__ = ["create", "generate_titles", "get_or_create"]

log = logging.getLogger("memory_core")


async def create(
    storage: Storage, resource_id: str, thread_id: str | None, title: str, metadata: Any, replace_existing: bool
) -> Thread:
    """A new thread (``thread_id`` None: a UUID4); with ``replace_existing``
    a thread of the same resource is replaced (Mastra's ``saveThread``).

    Raises:
        ValidationError: bad id, title or metadata (before any I/O).
        ConflictError: the id exists (not replacing) or is another resource's.
    """
    check_id(resource_id, "resource_id")
    new_id = str(uuid.uuid4()) if thread_id is None else check_id(thread_id, "thread_id")
    check_bool(replace_existing, "replace")
    thread = Thread(new_id, resource_id, check_text(title, "title"), check_metadata_arg(metadata, "metadata"))
    if replace_existing:
        return await storage.save_thread(thread)
    return await storage.insert_thread(thread)


async def get_or_create(
    storage: Storage, resource_id: str, thread_id: str, title: str, metadata: Any
) -> tuple[Thread, bool]:
    """``(thread, created)``: the existing thread, or a new one; safe under races.

    Raises:
        ValidationError: bad id, title or metadata (before any I/O).
        OwnershipError: the thread belongs to another resource.
        ConflictError: the thread is created and deleted concurrently, twice.
    """
    check_id(resource_id, "resource_id")
    check_id(thread_id, "thread_id")
    thread = Thread(thread_id, resource_id, check_text(title, "title"), check_metadata_arg(metadata, "metadata"))
    for _ in range(2):
        found = await storage.get_thread(thread_id)
        if found is not None:
            if found.resource_id != resource_id:
                raise OwnershipError(f"thread {thread_id!r} belongs to another resource")
            return found, False
        try:
            return await storage.insert_thread(thread), True
        except ConflictError:
            continue  # created meanwhile (or deleted again): read it
    raise ConflictError(f"thread {thread_id!r} is being created and deleted concurrently")


async def generate_titles(storage: Storage, generate_title: TitleGenerator, saved: list[Message]) -> None:
    """Run ``generate_title`` for each thread in ``saved`` that received
    a user message and has an empty title; store the title. A failing
    hook is logged, never raised (the save it follows succeeded).

    Raises:
        ValidationError: the hook returned something that is not a str.
    """
    by_thread: dict[str, list[Message]] = {}
    for message in saved:
        by_thread.setdefault(message.thread_id, []).append(message)
    for thread_id, new in by_thread.items():
        if not any(m.role == "user" for m in new):
            continue
        thread = await storage.get_thread(thread_id)
        if thread is None or thread.title:
            continue
        try:
            title = await generate_title(thread, new)
        except Exception:
            # A failing hook must not undo or fail a save that succeeded.
            log.exception("generate_title failed for thread %r", thread_id)
            continue
        await storage.update_thread(thread_id, title=check_text(title, "generate_title result"))

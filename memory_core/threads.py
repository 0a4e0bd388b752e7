"""Thread operations composed from storage primitives: create, get-or-create,
clone, and the ``generate_title`` hook.

:class:`~memory_core.memory.Memory` documents each (its ``create_thread``,
``get_or_create_thread``, ``clone_thread``); the functions here check their
inputs before any I/O and raise the same typed errors.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from memory_core.arguments import check_metadata_arg
from memory_core.config import TitleGenerator
from memory_core.errors import ConflictError, NotFoundError, OwnershipError, ValidationError
from memory_core.models import DateRange, Message, MessageFilter, MessagePageRequest, Thread
from memory_core.storage import Storage
from memory_core.validation import (
    MAX_ID_LENGTH,
    MAX_PER_PAGE,
    check_bool,
    check_date_range,
    check_id,
    check_message,
    check_non_negative_int,
    check_text,
    coerce_model,
)

__all__ = ["MAX_CLONE_ID_LENGTH", "clone", "create", "generate_titles", "get_or_create"]

log = logging.getLogger("memory_core")

MAX_CLONE_ID_LENGTH = MAX_ID_LENGTH - 33
"""The longest ``new_id`` :func:`clone` accepts (223): copies are named
``<new_id>:<32 hex digits>`` and must fit R-ID's 256 characters."""


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


async def clone(
    storage: Storage,
    source_id: str,
    new_id: str | None,
    title: str | None,
    metadata: Mapping[str, Any] | None,
    message_limit: int | None,
    date_range: DateRange | Mapping[str, Any] | None,
) -> tuple[Thread, list[Message]]:
    """Insert the clone of ``source_id`` and return it with the copies of its
    messages, checked and not yet saved (the caller saves them, so they are
    indexed like any save). The rules are ``Memory.clone_thread``'s.

    Raises:
        ValidationError: bad ids, title, metadata, limit or range; a copy
            over R-SIZE. Before any write.
        NotFoundError: no source thread.
        ConflictError: a thread ``new_id`` already exists.
    """
    check_id(source_id, "source_id")
    if new_id is None:
        new_id = str(uuid.uuid4())
    else:
        check_id(new_id, "new_id")
        if len(new_id) > MAX_CLONE_ID_LENGTH:
            raise ValidationError(
                "new_id",
                f"must be at most {MAX_CLONE_ID_LENGTH} characters: copies are named '<new_id>:<32 hex>' "
                f"and ids are at most {MAX_ID_LENGTH}",
                "R-ID",
            )
        if new_id == source_id:
            raise ValidationError("new_id", "must differ from source_id", "R-ID")
    if title is not None:
        check_text(title, "title")
    extra = check_metadata_arg(metadata, "metadata")
    if message_limit is not None:
        message_limit = check_non_negative_int(message_limit, "message_limit")
    check_date_range(date_range, "date_range")
    source = await storage.get_thread(source_id)
    if source is None:
        raise NotFoundError(f"thread {source_id!r} does not exist")
    flt = None if date_range is None else MessageFilter(date_range=coerce_model(date_range, DateRange, "date_range"))
    if message_limit is None or message_limit > MAX_PER_PAGE:  # more than any page: all of them
        page = await storage.list_messages(source_id, filter=flt, per_page=False)
        originals = page.items
    else:
        page = await storage.page_messages(
            MessagePageRequest(thread_ids=(source_id,), filter=flt, per_page=message_limit, newest=True)
        )
        originals = page.items
    clone = Thread(
        new_id,
        source.resource_id,
        (f"Clone of {source.title}" if source.title else "") if title is None else title,
        {**source.metadata, **extra, "cloned_from": source_id},
    )
    copies = [replace(m, id=f"{new_id}:{uuid.uuid4().hex}", thread_id=new_id, sequence=None) for m in originals]
    # A longer id can push a copy over R-SIZE: check every copy before the
    # thread is written, so a failure leaves no half-made clone behind.
    for original, copy in zip(originals, copies, strict=True):
        try:
            check_message(copy, "copy")
        except ValidationError as exc:
            raise ValidationError(f"copy of message {original.id!r}", exc.reason, exc.rule) from None
    return await storage.insert_thread(clone), copies  # atomic: a racing clone or create loses


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

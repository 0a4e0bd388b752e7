"""Streaming export: a store's records as ``memory-core/jsonl`` lines, read
page by page through the public cursor API, so memory does not grow with the
number of messages."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from memory_core.errors import ValidationError
from memory_core.models import OrderBy, ThreadFilter
from memory_core.storage import Storage
from memory_core.transfer.digest import Summary
from memory_core.transfer.records import encode, header, message_record, resource_record, thread_record
from memory_core.validation import check_id

__all__ = ["PAGE_SIZE", "count_messages", "export_lines", "resource_ids", "summarize"]

PAGE_SIZE = 1000
"""Records read per listing call."""

_OLDEST_FIRST = OrderBy("created_at", "ASC")


async def resource_ids(storage: Storage, page_size: int = PAGE_SIZE) -> list[str]:
    """Every resource the store holds (a record, threads or both), in
    resource-id order: :meth:`~memory_core.storage.BaseStorage.list_resource_ids`
    walked by cursor, ``page_size`` ids per call (every adapter answers it
    from its records and its threads: R-RESOURCES)."""
    found: list[str] = []
    cursor: str | None = None
    while True:
        page = await storage.list_resource_ids(per_page=page_size, cursor=cursor)
        found += page.items
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


async def count_messages(storage: Storage, resources: list[str]) -> int:
    """How many messages ``resources`` own (one counting query each)."""
    total = 0
    for resource in resources:
        total += (await storage.list_messages_by_resource(resource, per_page=0)).counted_total
    return total


async def _records(storage: Storage, resource: str, page_size: int) -> AsyncIterator[dict[str, Any]]:
    stored = await storage.get_resource(resource)
    if stored is not None:
        yield resource_record(stored)
    cursor: str | None = None
    while True:
        threads = await storage.list_threads(
            ThreadFilter(resource_id=resource), per_page=page_size, order_by=_OLDEST_FIRST, cursor=cursor
        )
        for thread in threads.items:
            yield thread_record(thread)
        if threads.next_cursor is None:
            break
        cursor = threads.next_cursor
    cursor = None
    while True:
        messages = await storage.list_messages_by_resource(resource, per_page=page_size, cursor=cursor)
        for message in messages.items:
            yield message_record(message)
        if messages.next_cursor is None:
            return
        cursor = messages.next_cursor


async def export_lines(
    storage: Storage, resource_id: str | None = None, *, page_size: int = PAGE_SIZE
) -> AsyncIterator[str]:
    """The export of ``storage`` (or of one resource) as lines without their
    newline: header, records, trailer (see :mod:`memory_core.transfer`).

    Not a snapshot: writes made while it runs may or may not be included.
    Memory: one page of records, plus the trailer's digest per thread and
    the list of resource ids (read first, so the header can count messages).

    Args:
        storage: an opened store.
        resource_id: export only this resource (an id the store does not
            hold gives a valid export with no records: check the trailer's
            counts); None: every resource the store holds, with a record,
            threads or both (R-RESOURCES).
        page_size: records per listing call (default :data:`PAGE_SIZE`).

    Raises:
        ValidationError: a bad ``resource_id`` or ``page_size`` (before any read).
        BackendError: the store failed.
    """
    if resource_id is not None:
        check_id(resource_id, "resource_id")
    if type(page_size) is not int or page_size < 1:
        raise ValidationError("page_size", f"must be an int >= 1, got {page_size!r}")
    resources = [resource_id] if resource_id is not None else await resource_ids(storage, page_size)
    yield encode(header(await count_messages(storage, resources)))
    summary = Summary()
    for resource in resources:
        async for record in _records(storage, resource, page_size):
            line = encode(record)
            summary.add(record["kind"], record, line)
            yield line
    yield encode(summary.trailer())


async def summarize(storage: Storage, resource_id: str | None = None, *, page_size: int = PAGE_SIZE) -> dict[str, Any]:
    """The trailer an export of ``storage`` (or one resource) would end with:
    what :func:`memory_core.transfer.copy_store` compares on both sides."""
    last = ""
    async for line in export_lines(storage, resource_id, page_size=page_size):
        last = line
    trailer: dict[str, Any] = json.loads(last)
    return trailer

"""A verified copy between two stores: the export of one piped into an import
into the other, then both sides summarised and compared."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from memory_core.errors import ValidationError
from memory_core.identity import check_distinct
from memory_core.models import ThreadFilter
from memory_core.storage import Storage
from memory_core.transfer.digest import Difference, first_difference
from memory_core.transfer.export import PAGE_SIZE, export_lines, resource_ids, summarize
from memory_core.transfer.importer import BATCH_SIZE, ImportReport, import_lines

__all__ = ["CopyReport", "check_copy_target", "copy_store"]

_MERGE_HINT = (
    "a copy goes into an empty store (a new SQLite file, PostgreSQL schema, Redis prefix or MongoDB database) "
    "or one an interrupted copy of the same source began; to merge into a store that holds other data, "
    "export the source and import the file"
)
"""The way out :func:`check_copy_target`'s error names."""


@dataclass(frozen=True)
class CopyReport:
    """What :func:`copy_store` did and found.

    Attributes:
        imported: the import's report (written and skipped records).
        difference: the first difference between the source's export trailer
            and a fresh summary of the destination, None when they are equal
            (counts and every thread and resource digest).
    """

    imported: ImportReport
    difference: Difference | None

    @property
    def verified(self) -> bool:
        """Both sides hold the same records."""
        return self.difference is None


async def copy_store(
    source: Storage,
    destination: Storage,
    resource_id: str | None = None,
    *,
    page_size: int = PAGE_SIZE,
    batch_size: int = BATCH_SIZE,
    on_total: Callable[[int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
    on_resource: Callable[[str], Awaitable[None]] | None = None,
    report: ImportReport | None = None,
) -> CopyReport:
    """Copy ``source`` (or one resource of it) into ``destination`` and verify.

    The copy is :func:`~memory_core.transfer.export_lines` fed to
    :func:`~memory_core.transfer.import_lines` without a file in between, so
    it has their guarantees: validated, idempotent by id, resumable (run it
    again after an interruption), nothing in the destination replaced. Then
    the destination is exported to a summary (same resource scope) and
    compared with the source's trailer.

    A destination that holds what the source does not (a resource or a
    thread, within ``resource_id`` when given) is refused before anything is
    written (:func:`check_copy_target`): the verification compares the whole
    destination with the source, so it would fail after writing everything.
    A destination an interrupted copy left holds only the source's, and the
    copy resumes.

    A copy of a store into itself is refused before any I/O: the two stores'
    :attr:`~memory_core.storage.BaseStorage.store_identity` values are
    compared (:func:`memory_core.identity.check_distinct`), so one store
    reached through two spellings of its URL is caught too (the import would
    skip every record as already there, and the verification would compare
    the store with itself).

    Args:
        source, destination: opened stores.
        resource_id: copy only this resource; None: every resource the source
            holds (a record, threads or both).
        page_size, batch_size: as for export and import.
        on_total: called once with the number of messages to copy.
        on_progress: called with messages handled so far.
        on_resource: per-resource hook, as for import (re-embedding).
        report: filled as records are written, as for import (what an
            interrupted copy wrote).

    Returns:
        :class:`CopyReport`; check ``verified``.

    Raises:
        ValidationError: field ``destination``: it is the same store as
            ``source``, or it holds a resource or thread the source does not
            (nothing written).
        others: as :func:`~memory_core.transfer.export_lines` and
            :func:`~memory_core.transfer.import_lines`.
    """
    check_distinct(source, destination)
    await check_copy_target(source, destination, resource_id, page_size=page_size)
    lines = export_lines(source, resource_id, page_size=page_size)
    imported = await import_lines(
        destination,
        lines,
        batch_size=batch_size,
        on_total=on_total,
        on_progress=on_progress,
        on_resource=on_resource,
        report=report,
    )
    found = await summarize(destination, resource_id, page_size=page_size)
    return CopyReport(imported, first_difference(imported.trailer, found))


async def check_copy_target(
    source: Storage, destination: Storage, resource_id: str | None = None, *, page_size: int = PAGE_SIZE
) -> None:
    """Refuse a copy's ``destination`` that holds a resource or a thread
    ``source`` does not (within ``resource_id`` when given), reading only:
    the copy's verification would find it after writing everything. A
    destination holding part of the source (an interrupted copy) passes.

    Raises:
        ValidationError: field ``destination``, naming the first such
            resource or thread and :data:`_MERGE_HINT`.
        BackendError: a store failed.
    """
    if resource_id is not None:
        scope = [resource_id]
    else:
        scope = await resource_ids(destination, page_size)
        known = set(await resource_ids(source, page_size))
        for resource in scope:
            if resource not in known:
                raise ValidationError(
                    "destination", f"holds resource {resource!r}, which the source does not; {_MERGE_HINT}"
                )
    for resource in scope:
        held = await _thread_ids(destination, resource, page_size)
        if not held:
            continue
        extra = sorted(held - await _thread_ids(source, resource, page_size))
        if extra:
            raise ValidationError(
                "destination",
                f"holds thread {extra[0]!r} (resource {resource!r}), which the source does not; {_MERGE_HINT}",
            )


async def _thread_ids(storage: Storage, resource: str, page_size: int) -> set[str]:
    found: set[str] = set()
    cursor: str | None = None
    while True:
        page = await storage.list_threads(ThreadFilter(resource_id=resource), per_page=page_size, cursor=cursor)
        found.update(thread.id for thread in page.items)
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor

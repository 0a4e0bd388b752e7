"""A verified copy between two stores: the export of one piped into an import
into the other, then both sides summarised and compared."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from memory_core.identity import check_distinct
from memory_core.storage import Storage
from memory_core.transfer.digest import Difference, first_difference
from memory_core.transfer.export import PAGE_SIZE, export_lines, summarize
from memory_core.transfer.importer import BATCH_SIZE, ImportReport, import_lines

__all__ = ["CopyReport", "copy_store"]


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
) -> CopyReport:
    """Copy ``source`` (or one resource of it) into ``destination`` and verify.

    The copy is :func:`~memory_core.transfer.export_lines` fed to
    :func:`~memory_core.transfer.import_lines` without a file in between, so
    it has their guarantees: validated, idempotent by id, resumable (run it
    again after an interruption), nothing in the destination replaced. Then
    the destination is exported to a summary (same resource scope) and
    compared with the source's trailer.

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

    Returns:
        :class:`CopyReport`; check ``verified``.

    Raises:
        ValidationError: field ``destination``: it is the same store as
            ``source``.
        others: as :func:`~memory_core.transfer.export_lines` and
            :func:`~memory_core.transfer.import_lines`.
    """
    check_distinct(source, destination)
    lines = export_lines(source, resource_id, page_size=page_size)
    imported = await import_lines(
        destination,
        lines,
        batch_size=batch_size,
        on_total=on_total,
        on_progress=on_progress,
        on_resource=on_resource,
    )
    found = await summarize(destination, resource_id, page_size=page_size)
    return CopyReport(imported, first_difference(imported.trailer, found))

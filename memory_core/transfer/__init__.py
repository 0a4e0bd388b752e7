"""Moving data between stores: a portable JSON Lines export format, a
streaming exporter, an idempotent and resumable importer, and a verified copy.

The format (``memory-core/jsonl`` version 1) is one JSON object per line:

1. a header ``{"kind": "header", "format": "memory-core/jsonl", "version": 1,
   "messages": N}`` (``messages``: how many message records follow, for
   progress only);
2. per resource (every one the store lists, R-RESOURCES, or the one asked
   for), in resource-id order: its ``resource`` record (when the store
   holds one), its ``thread`` records (``created_at`` ascending, ties by id),
   then its ``message`` records in R-ORDER across those threads;
3. a ``trailer`` with the record counts and a sha256 digest per thread and per
   resource (:mod:`memory_core.transfer.digest`).

Every record line is the canonical encoding of its record
(:func:`~memory_core.transfer.records.encode`). Start with
:func:`export_lines`, :func:`verify_lines`, :func:`import_lines` and :func:`copy_store`;
:func:`reembedder` is the ``on_resource`` hook that re-embeds what they write.
"""

from memory_core.transfer.copy import CopyReport, check_copy_target, copy_store
from memory_core.transfer.digest import Difference, Summary, first_difference
from memory_core.transfer.export import count_messages, export_lines, summarize
from memory_core.transfer.importer import ImportReport, import_lines, verify_lines
from memory_core.transfer.records import FORMAT, VERSION, TransferError
from memory_core.transfer.reembed import Reembedder, check_fits, check_persistent, reembedder

__all__ = [
    "Reembedder",
    "FORMAT",
    "VERSION",
    "CopyReport",
    "Difference",
    "ImportReport",
    "Summary",
    "TransferError",
    "check_fits",
    "check_persistent",
    "check_copy_target",
    "copy_store",
    "count_messages",
    "export_lines",
    "first_difference",
    "import_lines",
    "reembedder",
    "summarize",
    "verify_lines",
]

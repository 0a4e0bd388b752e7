"""Rebuilding an engine shard so that deleted points leave no bytes on disk.

The engine (qdrant-edge-py 0.9) deletes a point by marking it: its payload
stays in the segment's ``payload_storage`` and ``payload_index`` files, and
the upsert that wrote it in the shard's write-ahead log, until the segment is
rewritten; :meth:`EdgeShard.optimize` leaves a small segment alone, and the
binding offers no call that drops the marked points' bytes. An erasure
(R-ERASE) must leave no trace of the erased ids, so :func:`copy_shard`
copies the surviving points into a fresh shard beside the old one
(``<dir>.rebuild``) and :func:`swap_shard` swaps the two directories and
deletes the old one with its WAL. :func:`recover_shard` finishes or undoes a
swap a crash interrupted. The cost is in
:meth:`memory_core_qdrant.edge.QdrantEdgeStore.delete_resource`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from typing import Any

import qdrant_edge as qe

from memory_core_qdrant._layout import PAGE

__all__ = ["ERASED", "REBUILD", "copy_shard", "recover_shard", "swap_shard"]

REBUILD = ".rebuild"
"""Suffix of the fresh shard's directory while it is filled."""

ERASED = ".erased"
"""Suffix of the old shard's directory between the swap and its removal."""


def recover_shard(where: str) -> None:
    """Finish or undo an interrupted :func:`rebuild_shard` of the shard at
    ``where`` (a directory path); nothing to do leaves the folder as it is.

    A complete fresh shard (``where`` moved away already) takes ``where``'s
    place; an incomplete one (``where`` still there) is deleted; the old
    shard's moved directory is deleted in either case.
    """
    fresh, old = where + REBUILD, where + ERASED
    if os.path.isdir(fresh):
        if os.path.exists(where):
            shutil.rmtree(fresh)
        else:
            os.rename(fresh, where)
    if os.path.isdir(old):
        shutil.rmtree(old)


def copy_shard(
    shard: qe.EdgeShard,
    where: str,
    config: qe.EdgeConfig,
    indexes: Sequence[tuple[str, Any]],
    *,
    with_vector: bool = True,
) -> None:
    """Copy the surviving points of ``shard`` (stored at ``where``) into a
    fresh shard at ``where + REBUILD``, closed when this returns; ``shard``
    stays open and unchanged.

    Blocking (run it in a worker thread); the caller is the shard's only
    writer meanwhile. Points are copied a :data:`PAGE` at a time in id order,
    so an :meth:`~memory_core_qdrant.edge.QdrantEdgeStore.optimize`'s
    grouping is lost until the next one.

    Args:
        shard: the open shard.
        where: its directory.
        config: the configuration to create the copy with (the shard's own).
        indexes: the payload indexes to create, ``(field, schema)`` pairs as
            ``UpdateOperation.create_field_index`` takes them.
        with_vector: False for a shard whose points carry no dense vector
            (the lexical index's): the copies get an empty vector.

    Raises:
        Exception: the engine's or the file system's error; the copy is
            deleted.
    """
    fresh_dir = where + REBUILD
    shutil.rmtree(fresh_dir, ignore_errors=True)
    try:
        fresh = qe.EdgeShard.create(fresh_dir, config)
        try:
            for field, schema in indexes:
                fresh.update(qe.UpdateOperation.create_field_index(field, schema))
            offset = None
            while True:
                request = qe.ScrollRequest(offset=offset, limit=PAGE, with_payload=True, with_vector=with_vector)
                records, offset = shard.scroll(request)
                if records:
                    copies = [qe.Point(r.id, r.vector or {}, r.payload or {}) for r in records]
                    fresh.update(qe.UpdateOperation.upsert_points(copies))
                if offset is None:
                    break
            fresh.flush()
        finally:
            fresh.close()
    except BaseException:
        shutil.rmtree(fresh_dir, ignore_errors=True)
        raise


def swap_shard(where: str) -> None:
    """Put the copy :func:`copy_shard` made in place of the shard at
    ``where`` (closed, as the copy), and delete the old directory with its
    WAL. Whatever happens, a complete shard is at ``where`` afterwards
    (:func:`recover_shard`).

    Raises:
        OSError: the file system's error.
    """
    try:
        os.rename(where, where + ERASED)
        os.rename(where + REBUILD, where)
    finally:
        recover_shard(where)

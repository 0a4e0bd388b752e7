"""What the Qdrant stores add to the core's R-VEC layout: payload indexes.

Both stores (:mod:`~memory_core_qdrant.edge`, :mod:`~memory_core_qdrant.server`)
create the same collections, point ids and payloads
(:class:`memory_core.vector.BaseVectorStore`), so the data of one can be read
by the other; this module holds the Qdrant-only part they share.
"""

from __future__ import annotations

__all__ = ["INDEXED_FIELDS", "TENANT_FIELD"]

INDEXED_FIELDS = ("message_id", "thread_id", "resource_id")
"""Payload fields with a keyword index: every :class:`memory_core.vector.PointFilter`
condition, and ``message_id`` for the distinct-message count (a facet)."""

TENANT_FIELD = "resource_id"
"""The keyword index marked as Qdrant's tenant field, so Qdrant co-locates
each resource's points (resource-filtered searches read less memory)."""

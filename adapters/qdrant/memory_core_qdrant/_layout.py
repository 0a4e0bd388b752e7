"""What the Qdrant stores add to the core's R-VEC layout: payload indexes
and the lexical index's collection (:data:`DOCUMENTS`).

Both stores (:mod:`~memory_core_qdrant.edge`, :mod:`~memory_core_qdrant.server`)
create the same collections, point ids and payloads
(:class:`memory_core.vector.BaseVectorStore`), so the data of one can be read
by the other; this module holds the Qdrant-only part they share.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from memory_core.lexical_index import LexicalDocument
from memory_core.vector import POINT_NAMESPACE

__all__ = [
    "DOCUMENTS",
    "DOCUMENT_KEYWORDS",
    "INDEXED_FIELDS",
    "LENGTH_FIELD",
    "NO_VECTOR",
    "PAGE",
    "TENANT_FIELD",
    "document_payload",
    "document_point_id",
    "posting",
    "posting_fields",
    "stored_document",
    "total_length",
]

INDEXED_FIELDS = ("message_id", "thread_id", "resource_id")
"""Payload fields with a keyword index: every :class:`memory_core.vector.PointFilter`
condition, and ``message_id`` for the distinct-message count (a facet)."""

TENANT_FIELD = "resource_id"
"""The keyword index marked as Qdrant's tenant field, so Qdrant co-locates
each resource's points (resource-filtered searches read less memory)."""

DOCUMENTS = "memory_documents"
"""The collection of the lexical index (``<namespace>_memory_documents`` with
a namespace): one point per message, no dense vector (an empty sparse
vector, :data:`NO_VECTOR`, as Qdrant requires one vector config), the
document in its payload (:func:`document_payload`)."""

NO_VECTOR = "none"
"""The name of the documents collection's (always empty) sparse vector."""

DOCUMENT_KEYWORDS = ("message_id", "thread_id", "resource_id", "terms")
"""Keyword-indexed payload fields of a document point: the scope filters and
``terms`` (a posting list per term: a ``MatchAny`` over the query's terms
selects the documents holding one)."""

LENGTH_FIELD = "length"
"""The integer-indexed document length: a facet over it gives a scope's
total length (sum of value x count) without reading its documents."""


def posting_fields(terms: tuple[str, ...]) -> list[str]:
    """The payload a lexical search reads of each matching document: its id,
    length and ``tf.<term>`` of the query's terms only (a term is letters
    and digits, so it is a safe payload key)."""
    return ["message_id", LENGTH_FIELD, *(f"tf.{term}" for term in terms)]


PAGE = 4096
"""Documents per scroll request of a lexical search."""


def document_point_id(message_id: str) -> str:
    """The point id of a message's document: UUIDv5 of ``"<message_id>:document"``
    in R-VEC's namespace (never a chunk's id, which ends in a number)."""
    return str(uuid.uuid5(POINT_NAMESPACE, f"{message_id}:document"))


def document_payload(document: LexicalDocument) -> dict[str, Any]:
    """A document point's payload: the ids, ``length``, ``terms`` (sorted:
    the keyword-indexed posting lists) and ``tf`` (term -> count)."""
    return {
        "message_id": document.message_id,
        "thread_id": document.thread_id,
        "resource_id": document.resource_id,
        LENGTH_FIELD: document.length,
        "terms": sorted(document.counts),
        "tf": dict(document.counts),
    }


def stored_document(payload: dict[str, Any]) -> LexicalDocument:
    """The document a document point's payload (:func:`document_payload`) holds."""
    counts = {term: int(count) for term, count in payload.get("tf", {}).items()}
    ids = payload["message_id"], payload["thread_id"], payload["resource_id"]
    return LexicalDocument(*ids, int(payload[LENGTH_FIELD]), counts)


def posting(payload: dict[str, Any]) -> tuple[str, int, dict[str, int]]:
    """A scrolled document (payload of :func:`posting_fields`) as a match of
    :class:`~memory_core.lexical_index.LexicalPostings`."""
    counts = {term: int(count) for term, count in payload.get("tf", {}).items()}
    return payload["message_id"], int(payload[LENGTH_FIELD]), counts


def total_length(hits: Iterable[tuple[Any, int]]) -> int:
    """A scope's total document length from the ``(length, documents)`` facet
    hits of :data:`LENGTH_FIELD`."""
    return sum(int(value) * count for value, count in hits)

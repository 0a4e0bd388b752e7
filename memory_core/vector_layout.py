"""The R-VEC layout: what of a message is embedded (:func:`message_text`,
cut by :func:`chunk_text`) and where its vectors are stored (one collection
per dimension, :func:`collection_name`; one point per chunk,
:func:`point_id`; payloads of :data:`PAYLOAD_FIELDS`), and which points a
vector primitive acts on (:class:`PointFilter`, its hits :class:`RawHit`). Shared by every
vector store (:mod:`memory_core.vector`) and by the core's indexing."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from memory_core.models import Message

__all__ = [
    "COLLECTION_PREFIX",
    "EMBEDDER_PREFIX",
    "PAYLOAD_FIELDS",
    "POINT_NAMESPACE",
    "PointFilter",
    "RawHit",
    "chunk_text",
    "collection_name",
    "copied_point",
    "message_text",
    "point_id",
]

T = TypeVar("T")

POINT_NAMESPACE = uuid.UUID("6f1c1f4e-4a8e-5d0b-9a44-6d656d6f7279")
"""UUIDv5 namespace of memory-core point ids (fixed forever: changing it
would orphan every stored point)."""


COLLECTION_PREFIX = "memory_messages_"
"""R-VEC: what every collection's name starts with (after a store's namespace
prefix), before its dimension."""


EMBEDDER_PREFIX = "memory_embedder_"
"""What the name of the collection recording which embedder built the
index of one dimension starts with (after a store's namespace prefix), before
that dimension: ``memory_embedder_<dim>`` holds one point whose payload
``message_id`` is the embedder's name (:attr:`~memory_core.embedders.Embedder.name`).
As long as :data:`COLLECTION_PREFIX`, so any backend's name limit that fits
a store's collections fits its records too (PostgreSQL's 63 bytes)."""


def collection_name(dimension: int) -> str:
    """R-VEC: ``memory_messages_<dim>``."""
    return f"{COLLECTION_PREFIX}{dimension}"


def point_id(message_id: str, chunk: int) -> str:
    """R-VEC: UUIDv5 of ``"<message_id>:<chunk>"`` in :data:`POINT_NAMESPACE`, as str."""
    return str(uuid.uuid5(POINT_NAMESPACE, f"{message_id}:{chunk}"))


def message_text(message: Message) -> str:
    """The text of a message that gets embedded (R-VEC): the content string,
    or the ``text`` of the content's text parts joined with newlines (falling
    back to a ``content`` string field); ``""`` when there is none."""
    content: Any = message.content
    if isinstance(content, str):
        return content
    parts = content.get("parts")
    texts: list[str] = []
    if isinstance(parts, list):
        for part in parts:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
    if texts:
        return "\n".join(texts)
    inner = content.get("content")
    return inner if isinstance(inner, str) else ""


def chunk_text(text: str, max_chars: int) -> list[str]:
    """Split ``text`` into chunks of at most ``max_chars`` characters on word
    boundaries (a single word longer than the limit is cut). Blank text gives
    ``[]``."""
    if max_chars < 1:
        raise ValueError("max_chars must be >= 1")
    words = text.split()
    chunks: list[str] = []
    current = ""
    for word in words:
        while len(word) > max_chars:
            if current:
                chunks.append(current)
                current = ""
            chunks.append(word[:max_chars])
            word = word[max_chars:]
        if not word:
            continue
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= max_chars:
            current = f"{current} {word}"
        else:
            chunks.append(current)
            current = word
    if current:
        chunks.append(current)
    return chunks


PAYLOAD_FIELDS = ("message_id", "thread_id", "resource_id", "created_at", "chunk")
"""Payload keys of every point (R-VEC): ids (str), ``created_at`` (int µs
since the epoch, UTC) and ``chunk`` (int, the chunk number)."""


@dataclass(frozen=True, slots=True)
class RawHit:
    """One scored chunk as a backend's ``_search`` returns it (before the base
    keeps each message's best chunk)."""

    message_id: str
    thread_id: str
    resource_id: str
    score: float


@dataclass(frozen=True, slots=True)
class PointFilter:
    """Which points a primitive acts on: all conditions ANDed; empty = all.

    Attributes:
        message_ids: payload ``message_id`` is one of these (empty: any).
        thread_id: payload ``thread_id`` equals it (None: any).
        resource_id: payload ``resource_id`` equals it (None: any).
    """

    message_ids: tuple[str, ...] = ()
    thread_id: str | None = None
    resource_id: str | None = None

    def is_empty(self) -> bool:
        """True when the filter selects every point (deletes refuse that)."""
        return not self.message_ids and self.thread_id is None and self.resource_id is None

    def matches(self, payload: dict[str, Any]) -> bool:
        """Whether a point with this ``payload`` is selected: the reference
        reading of the filter (a backend translates it to its own query)."""
        return (
            (not self.message_ids or payload["message_id"] in self.message_ids)
            and (self.thread_id is None or payload["thread_id"] == self.thread_id)
            and (self.resource_id is None or payload["resource_id"] == self.resource_id)
        )

    def hit_fields(self) -> list[str]:
        """The payload fields a search under this filter reads to build its
        hits: ``message_id``, plus ``thread_id`` / ``resource_id`` unless the
        filter pins them (a backend may skip reading pinned fields)."""
        fields = ["message_id"]
        if self.thread_id is None:
            fields.append("thread_id")
        if self.resource_id is None:
            fields.append("resource_id")
        return fields

    def select(self, points: Iterable[tuple[T, dict[str, Any]]]) -> list[tuple[T, dict[str, Any]]]:
        """The ``(row, payload)`` pairs whose payload :meth:`matches`, in order."""
        return [(row, payload) for row, payload in points if self.matches(payload)]

    def hits(self, found: Iterable[tuple[dict[str, Any] | None, float]]) -> list[RawHit]:
        """:meth:`hit` of each ``(payload, score)`` found, in order."""
        return [self.hit(payload, score) for payload, score in found]

    def hit(self, payload: dict[str, Any] | None, score: float) -> RawHit:
        """The :class:`RawHit` of a point found under this filter, from its
        payload (holding at least :meth:`hit_fields`) and its score; a pinned
        id comes from the filter, which matched it exactly."""
        fields = payload or {}
        return RawHit(
            fields["message_id"],
            fields["thread_id"] if self.thread_id is None else self.thread_id,
            fields["resource_id"] if self.resource_id is None else self.resource_id,
            score,
        )


def copied_point(
    payload: dict[str, Any], mapping: Mapping[str, str], thread_id: str, resource_id: str
) -> tuple[str, dict[str, Any]]:
    """The point id and payload of the copy of a point (payload ``payload``)
    for a clone: its message ``mapping[payload["message_id"]]`` in
    ``thread_id`` of ``resource_id``, ``created_at`` and ``chunk`` kept."""
    new = mapping[payload["message_id"]]
    return point_id(new, payload["chunk"]), {
        **payload,
        "message_id": new,
        "thread_id": thread_id,
        "resource_id": resource_id,
    }

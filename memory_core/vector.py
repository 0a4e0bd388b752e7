"""The vector-store contract for semantic recall (rule R-VEC).

A vector store keeps one point per (message, chunk) in the collection
``memory_messages_<dim>``; the point id is the UUIDv5 of the message id and
chunk number (:func:`point_id`), so saving a message again replaces its
points and never duplicates them. Payloads hold ``message_id``,
``thread_id``, ``resource_id`` and ``created_at`` (µs since the epoch).
:class:`memory_core.Memory` keeps the store in step with storage.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, Self, runtime_checkable

import numpy as np
import numpy.typing as npt

from memory_core.models import Message

__all__ = [
    "POINT_NAMESPACE",
    "VectorHit",
    "VectorPoint",
    "VectorStore",
    "chunk_text",
    "collection_name",
    "message_text",
    "point_id",
]

POINT_NAMESPACE = uuid.UUID("6f1c1f4e-4a8e-5d0b-9a44-6d656d6f7279")
"""UUIDv5 namespace of memory-core point ids (fixed forever: changing it
would orphan every stored point)."""

Vector = npt.NDArray[np.float32]


def collection_name(dimension: int) -> str:
    """R-VEC: ``memory_messages_<dim>``."""
    return f"memory_messages_{dimension}"


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


@dataclass(frozen=True, slots=True)
class VectorPoint:
    """One embedded chunk of one message."""

    message_id: str
    chunk: int
    vector: Vector
    thread_id: str
    resource_id: str
    created_at_us: int


@dataclass(frozen=True, slots=True)
class VectorHit:
    """A search hit: the message and its best chunk's cosine score."""

    message_id: str
    thread_id: str
    resource_id: str
    score: float


@runtime_checkable
class VectorStore(Protocol):
    """What :class:`memory_core.Memory` needs from a vector backend.

    Every method is async and atomic per call from the caller's view; after
    it returns, searches see the change. Driver errors are raised as
    :class:`~memory_core.errors.BackendError`.
    """

    async def __aenter__(self) -> Self:
        """Open and return the store (``async with await connect_vector(url)``)."""

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the store."""

    async def open(self) -> None:
        """Connect (idempotent). Collections are created lazily per dimension."""

    async def close(self) -> None:
        """Release what this store created (idempotent)."""

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace these points (same point id replaces)."""

    async def delete_messages(self, message_ids: Sequence[str]) -> None:
        """Remove every point (all chunks) of these messages."""

    async def delete_thread(self, thread_id: str) -> None:
        """Remove every point whose payload ``thread_id`` is this thread."""

    async def search(
        self,
        vector: Vector,
        top_k: int,
        *,
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` most similar messages (cosine), best first, at most one
        hit per message (its best chunk), filtered by thread and/or resource."""

    async def count(self, *, thread_id: str | None = None, resource_id: str | None = None) -> int:
        """How many points match the filter (all when both are None)."""

"""The R-VEC layout: what of a message is embedded (:func:`message_text`,
cut by :func:`chunk_text`) and where its vectors are stored (one collection
per dimension, :func:`collection_name`; one point per chunk,
:func:`point_id`; payloads of :data:`PAYLOAD_FIELDS`). Shared by every
vector store (:mod:`memory_core.vector`) and by the core's indexing."""

from __future__ import annotations

import uuid
from typing import Any

from memory_core.models import Message

__all__ = ["PAYLOAD_FIELDS", "POINT_NAMESPACE", "chunk_text", "collection_name", "message_text", "point_id"]

POINT_NAMESPACE = uuid.UUID("6f1c1f4e-4a8e-5d0b-9a44-6d656d6f7279")
"""UUIDv5 namespace of memory-core point ids (fixed forever: changing it
would orphan every stored point)."""


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


PAYLOAD_FIELDS = ("message_id", "thread_id", "resource_id", "created_at", "chunk")
"""Payload keys of every point (R-VEC): ids (str), ``created_at`` (int µs
since the epoch, UTC) and ``chunk`` (int, the chunk number)."""

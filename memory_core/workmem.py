"""Working memory writes: where a value lives, its version, and the checks of a write.

:meth:`memory_core.storage.BaseStorage.write_working_memory` hands an adapter
one :class:`MemoryWrite` and a :data:`MemoryDecision` (the core's checks);
the adapter reads what the checks need, calls the decision and writes, in
one transaction when it can (:meth:`~memory_core.storage.BaseStorage._write_memory`).
The rules (ownership, the version of a text) stay here, in the core.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from memory_core.errors import ConflictError, NotFoundError, OwnershipError, ValidationError
from memory_core.models import Thread
from memory_core.query import NOT_GIVEN
from memory_core.validation import check_text

__all__ = [
    "MemoryDecision",
    "MemoryWrite",
    "Scope",
    "check_version",
    "memory_decision",
    "thread_memory",
    "working_memory_version",
]

Scope = Literal["resource", "thread"]

MemoryDecision = Callable[[Thread | None, str | None], None]
"""``decide(thread or None, stored working memory)``: raises the typed error
of a failed check (NotFoundError, OwnershipError, ConflictError), else
returns and the write goes ahead. ``thread`` is the write's thread as stored
(None when missing, or when the write names no thread)."""


def working_memory_version(text: str | None) -> str | None:
    """The version (an etag) of a stored working memory: the first 32 hex
    digits of the SHA-256 of its UTF-8 text; None when nothing is stored.

    Equal texts have equal versions, so a compare-and-set by version never
    loses an update: a write succeeds only while the text it was computed
    from is still the stored one."""
    if text is None:
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


_VERSION_FORM = re.compile(r"[0-9a-f]{32}")


def check_version(value: object, field: str = "if_version") -> str:
    """A version as :func:`working_memory_version` writes it.

    Raises:
        ValidationError: not a str, or not 32 lower-case hex digits (such a
            value can never match a stored version).
    """
    text = check_text(value, field)
    if _VERSION_FORM.fullmatch(text) is None:
        raise ValidationError(field, "must be a version from read_working_memory (32 lower-case hex digits) or None")
    return text


def thread_memory(thread: Thread) -> str | None:
    """A thread's working memory: ``metadata["working_memory"]`` when a str."""
    value = thread.metadata.get("working_memory")
    return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class MemoryWrite:
    """One checked working-memory write (ids already validated).

    Attributes:
        scope: ``"thread"``: ``metadata["working_memory"]`` of ``thread_id``;
            ``"resource"``: the working memory of the resource owning
            ``thread_id``, or of ``resource_id`` when ``thread_id`` is None.
        thread_id: the thread (None only with resource scope).
        resource_id: with ``thread_id``, the resource the thread must
            belong to (None: any); without, the resource written.
        value: the text to store.
        conditional: the write is a compare-and-set: the decision compares
            the stored value's version, so the write must happen only while
            that value is still stored (a default built on the swap
            primitives swaps from the value read).
    """

    scope: Scope
    thread_id: str | None
    resource_id: str | None
    value: str
    conditional: bool


def memory_decision(write: MemoryWrite, if_version: str | None) -> MemoryDecision:
    """The checks of ``write`` as a :data:`MemoryDecision`: the thread exists
    (NotFoundError) and belongs to ``write.resource_id`` when both are given
    (OwnershipError); with ``if_version`` (NOT_GIVEN: unconditional) the
    stored version is that one (ConflictError). The messages are those
    :meth:`memory_core.Memory.update_working_memory` has always raised."""

    def decide(thread: Thread | None, current: str | None) -> None:
        if write.thread_id is not None:
            if thread is None:
                raise NotFoundError(f"thread {write.thread_id!r} does not exist")
            if write.resource_id is not None and thread.resource_id != write.resource_id:
                raise OwnershipError(f"thread {write.thread_id!r} does not belong to resource {write.resource_id!r}")
        if if_version is not NOT_GIVEN and working_memory_version(current) != if_version:
            if if_version is None:
                raise ConflictError("working memory is stored already (if_version=None writes only when none is)")
            raise ConflictError(f"working memory changed: version {if_version!r} is no longer the stored one")

    return decide

"""Write decisions: the core's checks of a save or update against the stored state.

Pure, synchronous functions (the clock aside): an adapter may run them
inside its own transaction, on its own thread, through the ``decide``
callbacks that :meth:`~memory_core.storage.contract.AdapterContract._save_checked`
and :meth:`~memory_core.storage.contract.AdapterContract._patch_checked`
receive. Each raises the typed error of a failed check before anything is
written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from memory_core.builders import build_message
from memory_core.clock import Clock, to_us
from memory_core.errors import ConflictError, NotFoundError, OwnershipError, ValidationError
from memory_core.models import ROLES, Message, Thread
from memory_core.query import MessagePatch
from memory_core.validation import MAX_MESSAGE_BYTES, check_id, check_message, message_size

__all__ = [
    "PatchDecision",
    "SaveDecision",
    "WriteTimes",
    "as_stored",
    "check_patch",
    "combine",
    "decide_patch",
    "decide_save",
]

SaveDecision = Callable[[dict[str, Thread], list[Message]], tuple[list[Message], list[str]]]
"""``decide(threads by id, stored messages) -> (records, threads to bump)``:
the core's checks of a save, run by
:meth:`~memory_core.storage.contract.AdapterContract._save_checked`. Of
each thread it reads only ``id`` and ``resource_id``, so an adapter may call
it on a guess (threads holding only those) whose write then verifies it."""

PatchDecision = Callable[[dict[str, Thread], list[Message]], tuple[list[MessagePatch], list[str]]]
"""``decide(target threads by id, stored messages) -> (patches, threads to bump)``:
the core's checks of a message update, run by
:meth:`~memory_core.storage.contract.AdapterContract._patch_checked`.
It raises the typed error of a failed check (a missing or foreign move
target, a result over R-SIZE) or returns the patches of the stored ids, in
the order to apply them (``[]``: nothing to write)."""

PATCH_FIELDS = frozenset({"id", "role", "type", "content", "metadata", "thread_id", "threadId"})
"""The keys an update mapping may hold."""


class WriteTimes:
    """The times of one write call, decided once for all its attempts (a
    write whose reads went stale runs again, possibly in an adapter's own
    retry after a stale hint: it must write the same times, R-CLOCK).

    Attributes:
        now_us: the call's "now" (µs since the epoch, UTC): the bump time of
            every attempt (R-BUMP).
    """

    __slots__ = ("_assigned", "_clock", "now_us")

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.now_us = to_us(clock.now())
        self._assigned: dict[str, datetime] = {}

    def created_at(self, message_id: str) -> datetime:
        """The ``created_at`` of the new message ``message_id`` given none:
        ``clock.assign()`` the first time an attempt asks (a save that fails
        its checks takes no time from the clock), the same time afterwards."""
        found = self._assigned.get(message_id)
        if found is None:
            found = self._assigned[message_id] = self._clock.assign()
        return found


def decide_save(
    batch: dict[str, Message], threads: dict[str, Thread], stored: list[Message], times: WriteTimes
) -> tuple[list[Message], list[str]]:
    """The checks of ``save_messages`` against the stored state, and the
    records to write with the threads to bump (synchronous and pure but for
    ``times``, which dates new messages once per call: it may run inside an
    adapter's transaction).

    Raises:
        NotFoundError: a message's thread is not among ``threads``.
        OwnershipError: a message names another resource than its thread's.
        ConflictError: a stored id belongs to another resource.
    """
    for message in batch.values():
        if message.thread_id not in threads:
            raise NotFoundError(f"message {message.id!r}: thread {message.thread_id!r} does not exist")
    existing = {m.id: m for m in stored}
    bump: dict[str, None] = {}
    for message in batch.values():
        owner = threads[message.thread_id].resource_id
        if message.resource_id is not None and message.resource_id != owner:
            raise OwnershipError(
                f"message {message.id!r}: thread {message.thread_id!r} belongs to another resource, "
                f"not {message.resource_id!r}"
            )
        old = existing.get(message.id)
        if old is not None:
            if old.resource_id != owner:
                raise ConflictError(f"message {message.id!r} belongs to another resource")
            bump[old.thread_id] = None
        bump[message.thread_id] = None
    # Times are assigned only after the whole batch passed every check.
    records = []
    for message in batch.values():
        old = existing.get(message.id)
        owner = threads[message.thread_id].resource_id
        if old is not None:
            records.append(as_stored(message, owner, old.created_at, old.sequence))
        else:
            records.append(as_stored(message, owner, message.created_at or times.created_at(message.id), None))
    return records, list(bump)


def decide_patch(
    patches: dict[str, MessagePatch], targets: dict[str, Thread], stored: list[Message]
) -> tuple[list[MessagePatch], list[str]]:
    """The checks of ``update_messages`` against the stored state
    (synchronous and pure: it may run inside an adapter's transaction):
    the patches of stored ids, with the threads to bump.

    Raises:
        NotFoundError: a move target is not among ``targets``.
        ConflictError: a move to another resource's thread.
        ValidationError: a patched message over R-SIZE (15 MiB).
    """
    existing = {m.id: m for m in stored}
    for patch in patches.values():
        if patch.id in existing and patch.thread_id is not None and patch.thread_id not in targets:
            raise NotFoundError(f"message {patch.id!r}: thread {patch.thread_id!r} does not exist")
    live = [p for p in patches.values() if p.id in existing]
    bump: dict[str, None] = {}
    for patch in live:
        old = existing[patch.id]
        if patch.thread_id is not None and targets[patch.thread_id].resource_id != old.resource_id:
            raise ConflictError(f"message {patch.id!r} cannot move to another resource's thread {patch.thread_id!r}")
        size = message_size(patch.apply(old))
        if size > MAX_MESSAGE_BYTES:
            raise ValidationError(f"message {patch.id!r}", f"would serialise to {size} bytes, over 15 MiB", "R-SIZE")
        bump[old.thread_id] = None
        if patch.thread_id is not None:
            bump[patch.thread_id] = None
    return live, list(bump)


def check_patch(update: Any, field: str) -> MessagePatch:
    """One update mapping of ``update_messages`` checked (``field`` names it
    in errors) as a :class:`~memory_core.query.MessagePatch`.

    Raises:
        ValidationError: not a mapping, an unknown or read-only key
            (``created_at``), a bad id, role, type, content or metadata.
    """
    if not isinstance(update, Mapping):
        raise ValidationError(field, f"must be a mapping, got {type(update).__name__}")
    for key in update:
        if key in ("created_at", "createdAt"):
            raise ValidationError(f"{field}.created_at", "cannot be changed")
        if key not in PATCH_FIELDS:
            raise ValidationError(f"{field}.{key}", "unknown field for a message update")
    msg_id = check_id(update.get("id"), f"{field}.id")
    where = f"message {msg_id!r}"
    role = update.get("role")
    if role is not None and (type(role) is not str or role not in ROLES):
        raise ValidationError(f"{where}.role", f"must be one of {sorted(ROLES)}, got {role!r}")
    kind = update.get("type")
    if kind is not None and type(kind) is not str:
        raise ValidationError(f"{where}.type", "must be a str")
    content = update.get("content")
    probe: dict[str, Any] = {
        "id": msg_id,
        "thread_id": "x",
        "role": role or "user",
        "content": "" if content is None else content,
    }
    if kind is not None:
        probe["type"] = kind
    metadata = update.get("metadata")
    if metadata is not None:
        probe["metadata"] = metadata
    check_message(probe, field)
    if "thread_id" in update and "threadId" in update:
        raise ValidationError(f"{where}.thread_id", "given twice (thread_id and threadId)")
    thread_id = update.get("thread_id", update.get("threadId"))
    if thread_id is not None:
        check_id(thread_id, f"{where}.thread_id")
    return MessagePatch(msg_id, role, kind, content, metadata, thread_id)


def as_stored(message: Message, resource_id: str | None, created_at: datetime | None, sequence: int | None) -> Message:
    """``message`` (already checked) with the fields the store decides, built
    by :func:`~memory_core.builders.build_message` (``dataclasses.replace``
    was a tenth of a 100-message save; the dataclass constructor still
    costs twice the builder)."""
    return build_message(
        message.id,
        message.thread_id,
        message.role,
        message.content,
        resource_id,
        message.type,
        message.metadata,
        created_at,
        sequence,
    )


def combine(first: MessagePatch, second: MessagePatch) -> MessagePatch:
    """Two patches for one id in a batch: later fields win, dicts merge."""

    def merged(a: Any, b: Any) -> Any:
        if isinstance(a, dict) and isinstance(b, dict):
            return {**a, **b}
        return b if b is not None else a

    return MessagePatch(
        first.id,
        second.role or first.role,
        second.type if second.type is not None else first.type,
        merged(first.content, second.content),
        merged(first.metadata, second.metadata),
        second.thread_id or first.thread_id,
    )

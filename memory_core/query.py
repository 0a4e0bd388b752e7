"""Normalised queries: what the core hands to adapter primitives.

The core validates user input once (:mod:`memory_core.validation`) and turns
it into these frozen objects. Times are integer microseconds since the epoch
(:func:`memory_core.clock.to_us`), date bounds are already inclusive, metadata
conditions are typed. Each object also carries the reference predicate
(``matches``): the executable form of R-DATE / R-META that the reference
store uses and every adapter's native translation must agree with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from memory_core.clock import to_us
from memory_core.errors import ValidationError
from memory_core.models import Message, PerPage, Thread

__all__ = [
    "MessageKey",
    "MessagePage",
    "MessagePatch",
    "MessageQuery",
    "MetaCondition",
    "MetaKind",
    "NO_MESSAGE_ASC_US",
    "NO_MESSAGE_DESC_US",
    "ThreadKey",
    "ThreadOrderField",
    "ThreadQuery",
    "NOT_GIVEN",
    "meta_kind",
]

MetaKind = Literal["str", "number", "bool", "null"]
"""JSON type of a filter value. ``number`` covers int and float (5 == 5.0);
``bool`` is never a number (R-META)."""

ThreadOrderField = Literal["created_at", "updated_at", "last_message_at"]

NO_MESSAGE_ASC_US = 9_000_000_000_000_000
"""Keyset value of a thread without messages when ordering by
``last_message_at`` ASC: later than any R-TIME time, so such threads come
last. Below 2**53, so exact in a double (Redis Lua)."""
NO_MESSAGE_DESC_US = -9_000_000_000_000_000
"""The same for DESC: earlier than any R-TIME time, so such threads come last."""

MessageKey = tuple[int, int]
"""Keyset position of a message: (created_at µs, sequence) (R-ORDER)."""

ThreadKey = tuple[int, str]
"""Keyset position of a thread: (order field µs, id)."""


def meta_kind(value: Any) -> MetaKind | None:
    """The R-META kind of a stored JSON value, or None for list/dict."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "str"
    return None


@dataclass(frozen=True, slots=True)
class MetaCondition:
    """``metadata[key]`` exists, has JSON type ``kind`` and equals ``value``.

    ``key`` matches ``^[A-Za-z_][A-Za-z0-9_]*$`` (checked by the core), so it is
    safe in a JSON path or field name; adapters still pass it as a parameter
    where the driver allows.
    """

    key: str
    kind: MetaKind
    value: str | int | float | bool | None

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        """Reference semantics of R-META for one stored metadata object."""
        if self.key not in metadata:
            return False
        stored = metadata[self.key]
        if meta_kind(stored) != self.kind:
            return False
        # Same kind; Python compares int/float numerically and exactly.
        return bool(stored == self.value)


def _all_match(conditions: tuple[MetaCondition, ...], metadata: Mapping[str, Any]) -> bool:
    return all(c.matches(metadata) for c in conditions)


@dataclass(frozen=True, slots=True)
class MessagePage:
    """A message page request once checked
    (:func:`memory_core.validation.check_message_page`): the typed input of
    the storage's checked read
    (:meth:`~memory_core.storage.BaseStorage.read_message_parts`), which
    checks nothing again.

    Attributes:
        thread_ids: the threads (checked ids), or None for every thread of
            ``resource_id``.
        resource_id: only this resource's messages and windows, or None.
        created_from_us / created_to_us / metadata: the filter, as in
            :class:`MessageQuery`.
        page / per_page / offset: the page bounds (R-PAGE); ``offset`` is
            ``page * per_page``.
        descending: the read order (R-ORDER); ``output_descending`` the order
            of the merged page.
        cursor: the caller's cursor text, decoded by the read against the
            query's identity (R-CURSOR), or None.
        total: whether the caller asked for ``total``.
    """

    thread_ids: tuple[str, ...] | None
    resource_id: str | None
    created_from_us: int | None
    created_to_us: int | None
    metadata: tuple[MetaCondition, ...]
    page: int
    per_page: PerPage
    offset: int
    descending: bool
    output_descending: bool
    cursor: str | None
    total: bool


@dataclass(frozen=True, slots=True)
class MessageQuery:
    """A message listing, normalised.

    Attributes:
        thread_ids: the threads to read, or None for every thread of
            ``resource_id`` (``list_messages_by_resource``).
        resource_id: only messages of this resource, or None.
        created_from_us / created_to_us: inclusive bounds on ``created_at`` in
            µs, or None (exclusive input bounds are already shifted by 1 µs).
        metadata: conditions ANDed together.
        descending: order by (created_at, sequence) DESC instead of ASC.
        offset: items to skip (0 when ``after`` is set).
        limit: items to return at most, or None for all.
        after: return only messages strictly after this key in the order's
            direction (keyset paging), or None.
        count: whether the adapter must report the number of the query's
            matches (``ReadParts.message_total``). When False it reports 0 and
            counts nothing: the core read one row past the page instead.
    """

    thread_ids: tuple[str, ...] | None
    resource_id: str | None = None
    created_from_us: int | None = None
    created_to_us: int | None = None
    metadata: tuple[MetaCondition, ...] = ()
    descending: bool = False
    offset: int = 0
    limit: int | None = None
    after: MessageKey | None = None
    count: bool = True

    @property
    def unfiltered(self) -> bool:
        """No date bound and no metadata condition: the query's count is the
        sum of the message counters its threads (or its resource) keep, an
        O(1) read (R-PAGE), not a count of rows."""
        return self.created_from_us is None and self.created_to_us is None and not self.metadata

    def matches(self, message: Message) -> bool:
        """Whether ``message`` is in the main query (ignores window/after)."""
        if self.thread_ids is not None and message.thread_id not in self.thread_ids:
            return False
        if self.resource_id is not None and message.resource_id != self.resource_id:
            return False
        if message.created_at is None:
            raise ValidationError("message.created_at", "a stored message has its time; this one has none", "R-TIME")
        at = to_us(message.created_at)
        if self.created_from_us is not None and at < self.created_from_us:
            return False
        if self.created_to_us is not None and at > self.created_to_us:
            return False
        return _all_match(self.metadata, message.metadata)

    def is_after(self, key: MessageKey) -> bool:
        """Whether ``key`` lies strictly beyond ``after`` in this order."""
        if self.after is None:
            return True
        return key < self.after if self.descending else key > self.after


@dataclass(frozen=True, slots=True)
class ThreadQuery:
    """A thread listing, normalised. Fields as in :class:`MessageQuery`;
    ordering is by (``order_field`` µs, id). For ``last_message_at`` a thread
    without messages sorts as :data:`NO_MESSAGE_ASC_US` (ASC) or
    :data:`NO_MESSAGE_DESC_US` (DESC): last in either direction."""

    resource_id: str | None = None
    metadata: tuple[MetaCondition, ...] = ()
    order_field: ThreadOrderField = "created_at"
    descending: bool = True
    offset: int = 0
    limit: int | None = None
    after: ThreadKey | None = None

    def matches(self, thread: Thread) -> bool:
        """Whether ``thread`` is in the main query."""
        if self.resource_id is not None and thread.resource_id != self.resource_id:
            return False
        return _all_match(self.metadata, thread.metadata)

    def key(self, thread: Thread) -> ThreadKey:
        """The keyset position of ``thread`` under this order."""
        if self.order_field == "last_message_at":
            if thread.last_message_at is None:
                return (NO_MESSAGE_DESC_US if self.descending else NO_MESSAGE_ASC_US, thread.id)
            return (to_us(thread.last_message_at), thread.id)
        value = thread.created_at if self.order_field == "created_at" else thread.updated_at
        if value is None:
            raise ValidationError(
                f"thread.{self.order_field}", "a stored thread has its times; this one has none", "R-TIME"
            )
        return (to_us(value), thread.id)

    def is_after(self, key: ThreadKey) -> bool:
        """Whether ``key`` lies strictly beyond ``after`` in this order."""
        if self.after is None:
            return True
        return key < self.after if self.descending else key > self.after


class _NotGiven:
    """Sentinel type: "leave this field as it is" (distinct from None)."""

    _instance: _NotGiven | None = None

    def __new__(cls) -> _NotGiven:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_GIVEN"

    def __bool__(self) -> bool:
        return False


NOT_GIVEN: Any = _NotGiven()
"""Marks an omitted optional argument where None is a real value."""


@dataclass(frozen=True, slots=True)
class MessagePatch:
    """A validated partial update of one message (``update_messages``).

    None means "unchanged" for every field. ``content``: a str replaces; a
    dict is merged one level into a stored dict and replaces a stored str.
    ``metadata`` is merged one level. ``thread_id`` moves the message (same
    resource, checked by the core).
    """

    id: str
    role: str | None = None
    type: str | None = None
    content: str | dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    thread_id: str | None = None

    def apply(self, message: Message) -> Message:
        """The reference result of applying this patch to ``message``."""
        from dataclasses import replace

        content = message.content
        if isinstance(self.content, dict) and isinstance(content, dict):
            content = {**content, **self.content}
        elif self.content is not None:
            content = self.content
        return replace(
            message,
            role=self.role if self.role is not None else message.role,  # type: ignore[arg-type]
            type=self.type if self.type is not None else message.type,
            content=content,
            metadata=({**message.metadata, **self.metadata} if self.metadata is not None else message.metadata),
            thread_id=self.thread_id if self.thread_id is not None else message.thread_id,
        )

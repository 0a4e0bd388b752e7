"""Typed records, requests and results.

All models are frozen, slotted dataclasses. Datetimes on stored records are
aware UTC with microsecond precision. ``metadata`` and dict ``content`` are
plain JSON objects (see R-JSON). Inputs may also be given as mappings, with
Mastra-style camelCase keys accepted where an interface takes them
(``threadId``, ``resourceId``, ``createdAt`` ...): see
:mod:`memory_core.validation`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from memory_core.clock import from_us

__all__ = [
    "ROLES",
    "DateRange",
    "IdPage",
    "Include",
    "JSONObject",
    "Message",
    "MessageContent",
    "MessageFilter",
    "MessagePageRequest",
    "OrderBy",
    "Page",
    "PerPage",
    "RecallResult",
    "RecallSource",
    "Resource",
    "ResourceErasure",
    "Role",
    "StoredTime",
    "Thread",
    "ThreadFilter",
    "WorkingMemoryState",
]

JSONObject = dict[str, Any]
"""A JSON object: str keys; values str/int/float/bool/None/list/dict."""

Role = Literal["user", "assistant", "system", "tool"]
ROLES: frozenset[str] = frozenset({"user", "assistant", "system", "tool"})

MessageContent = str | JSONObject
"""A message body: plain text, or a structured object such as
``{"format": 2, "parts": [{"type": "text", "text": "..."}], "content": "..."}``."""

PerPage = int | Literal[False]
"""Items per page: an int >= 0, or ``False`` for "all" (R-PAGE)."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Thread:
    """A conversation owned by one resource (a user, an agent ...).

    ``created_at``/``updated_at`` are None only on input, meaning "now";
    every thread a store returns has both set (aware UTC).
    ``last_message_at`` is kept by the store, never set by callers (ignored
    on input): the largest ``created_at`` among the thread's messages, or
    None while it has none; exact through saves, moves and deletes.
    """

    id: str
    resource_id: str
    title: str = ""
    metadata: JSONObject = field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    last_message_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a thread.

    ``resource_id`` None on input means "the thread's resource";
    ``created_at`` None on input means "now" (R-CLOCK). Stored messages have
    both set. ``sequence`` is the store-wide insertion counter of R-ORDER,
    filled by the store (None on input and where not known); it does not
    take part in equality, since counters are per store.
    """

    id: str
    thread_id: str
    role: Role
    content: MessageContent
    resource_id: str | None = None
    type: str = "v2"
    metadata: JSONObject = field(default_factory=dict)
    created_at: datetime | None = None
    sequence: int | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Resource:
    """Whatever owns threads (usually a user), with its working memory.

    ``working_memory`` is free text (or JSON text when a schema is used);
    None means "never set", ``""`` is a value.
    """

    id: str
    working_memory: str | None = None
    metadata: JSONObject = field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None


class StoredTime(int):
    """A stored time as integer microseconds since the epoch, held by a
    record an adapter decoded (:func:`memory_core.builders.stored_time`)
    until the field is first read: the read returns the aware UTC datetime
    (:func:`memory_core.clock.from_us`) and keeps it.

    Building a datetime costs about 0.5 µs, three of them a thread; a
    listing that never reads a time (most of an agent's reads) skips that.
    Only this type is decoded: an int given by a caller stays an int, and
    validation refuses it as before.
    """

    __slots__ = ()


class _DecodedOnRead:
    """The descriptor of a datetime field of :class:`Thread`,
    :class:`Message` and :class:`Resource`, wrapping the field's slot: a
    :class:`StoredTime` in the slot becomes a datetime on the first read.
    Equality, repr, ``dataclasses.replace``/``asdict``, copy and pickle all
    read fields through it, so they see datetimes."""

    __slots__ = ("_slot",)

    def __init__(self, slot: Any) -> None:
        self._slot = slot

    def __get__(self, record: Any, owner: type | None = None) -> Any:
        if record is None:
            return self
        value = self._slot.__get__(record, owner)
        if type(value) is StoredTime:
            value = from_us(value)
            self._slot.__set__(record, value)  # the same value for every reader
        return value

    def __set__(self, record: Any, value: Any) -> None:
        self._slot.__set__(record, value)  # frozen: only __init__ and unpickling get here

    def __delete__(self, record: Any) -> None:
        self._slot.__delete__(record)


for _cls, _names in (
    (Thread, ("created_at", "updated_at", "last_message_at")),
    (Message, ("created_at",)),
    (Resource, ("created_at", "updated_at")),
):
    for _name in _names:
        setattr(_cls, _name, _DecodedOnRead(_cls.__dict__[_name]))


@dataclass(frozen=True, slots=True)
class WorkingMemoryState:
    """What :meth:`memory_core.Memory.read_working_memory` returns.

    Attributes:
        text: the stored working memory, or the configured template (possibly
            None) while nothing is stored.
        stored: whether ``text`` is a stored value (False: the template).
        version: the stored value's version
            (:func:`memory_core.memory.working_memory_version`), None while
            nothing is stored; pass it as ``if_version`` to update only if
            nobody wrote in between.
    """

    text: str | None
    stored: bool
    version: str | None


@dataclass(frozen=True, slots=True)
class ResourceErasure:
    """What :meth:`~memory_core.storage.BaseStorage.delete_resource` removed.

    Attributes:
        resource_id: the erased resource.
        thread_ids: the ids of its threads that were deleted (with their
            messages and working memory), sorted.
        messages: how many messages were deleted with them.
        resource: whether a resource record (working memory, metadata) was
            deleted.
    """

    resource_id: str
    thread_ids: list[str] = field(default_factory=list)
    messages: int = 0
    resource: bool = False


@dataclass(frozen=True, slots=True)
class DateRange:
    """Bounds on ``created_at`` (R-DATE): both optional, inclusive unless the
    ``*_exclusive`` flag is set, compared to the microsecond. Datetimes or
    ISO-8601 strings; naive values are read as UTC."""

    start: datetime | str | None = None
    end: datetime | str | None = None
    start_exclusive: bool = False
    end_exclusive: bool = False


@dataclass(frozen=True, slots=True)
class MessageFilter:
    """Filter for message listings: a date range on ``created_at`` and/or
    top-level metadata equality (R-DATE, R-META), ANDed together."""

    date_range: DateRange | None = None
    metadata: JSONObject | None = None


@dataclass(frozen=True, slots=True)
class ThreadFilter:
    """Filter for thread listings: owning resource and/or top-level metadata
    equality (R-META)."""

    resource_id: str | None = None
    metadata: JSONObject | None = None


@dataclass(frozen=True, slots=True)
class OrderBy:
    """Sort order (R-SORT). ``field``: ``created_at`` (messages, threads),
    ``updated_at`` or ``last_message_at`` (threads); camelCase spellings are
    accepted. ``direction``: ``ASC`` or ``DESC``, case-insensitive; None (the
    default) takes the listing's default direction: threads ``DESC``,
    messages ``ASC``."""

    field: str = "created_at"
    direction: str | None = None


@dataclass(frozen=True, slots=True)
class Include:
    """Ask for a window of context around one message (R-INCLUDE).

    Up to ``with_previous`` messages before it and ``with_next`` after it, from
    its own thread. ``thread_id`` is accepted for Mastra compatibility and
    does not change where the window comes from.
    """

    id: str
    with_previous: int = 0
    with_next: int = 0
    thread_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MessagePageRequest:
    """One request for a page of messages, as one object (keywords only).

    The arguments of ``list_messages`` / ``list_messages_by_resource`` and of
    ``Memory.recall``'s listing, for
    :meth:`~memory_core.storage.BaseStorage.page_messages`. Nothing is checked
    here: ``page_messages`` validates every field (R-ID, R-DATE, R-META,
    R-PAGE, R-SORT, R-INCLUDE, R-CURSOR) before any I/O.
    """

    thread_ids: Sequence[str] | None = None
    """The threads to read (at least one); None: every thread of ``resource_id``."""
    resource_id: str | None = None
    """Only this resource's messages count (R-OWN); required when ``thread_ids`` is None."""
    include: Sequence[Include | Mapping[str, Any]] | None = None
    """Context windows merged into the page (R-INCLUDE); they never count in ``total``."""
    filter: MessageFilter | Mapping[str, Any] | None = None
    """Date range and metadata equality, ANDed (R-DATE, R-META)."""
    page: int = 0
    """Page number from 0 (R-PAGE); 0 when ``cursor`` is given."""
    per_page: PerPage = 40
    """Messages per page, or ``False`` for all (R-PAGE)."""
    order_by: OrderBy | Mapping[str, Any] | None = None
    """``created_at`` ASC (the default) or DESC, ties by insertion sequence (R-SORT, R-ORDER)."""
    cursor: str | None = None
    """A previous page's ``next_cursor`` (R-CURSOR)."""
    newest: bool = False
    """With no ``order_by``: page 0 is the newest ``per_page`` messages, page 1
    the next older block, each returned oldest first (R-RECALL step 3)."""
    total: bool = True
    """Whether the page needs its ``total`` (R-PAGE). ``False``: ``Page.total``
    is None and ``has_more`` comes from reading one row past the page, so the
    read costs what it returns even with a date or metadata filter (an
    unfiltered thread's or resource's count is a counter read either way)."""


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing (R-PAGE, R-CURSOR).

    Attributes:
        items: the window in the requested order (plus included messages).
        total: matches of the main query, filters applied, includes excluded;
            None when the request said it needs none (``total=False``).
        page: echoed page number (0 when paging by cursor).
        per_page: echoed page size (``False`` stays ``False``).
        has_more: whether more main-query matches lie beyond this page;
            for ``per_page=0`` (a count-only page, no items) whether any
            match exists (R-PAGE), on every listing alike.
        next_cursor: opaque keyset cursor for the next window, None at the end.
    """

    items: list[T]
    total: int | None
    page: int
    per_page: PerPage
    has_more: bool
    next_cursor: str | None = None

    @property
    def counted_total(self) -> int:
        """``total`` as an int, for a page read with a total (the default).

        Raises:
            ValueError: the page was read with ``total=False``.
        """
        if self.total is None:
            raise ValueError("total: this page was read with total=False, so it has no total")
        return self.total


@dataclass(frozen=True, slots=True)
class IdPage:
    """One page of a keyset-only listing of ids (R-RESOURCES, R-CURSOR):
    :meth:`~memory_core.storage.BaseStorage.list_resource_ids`.

    Unlike :class:`Page` it has no ``total`` and no page number: counting
    every id would cost a full scan on every backend for each page, and the
    listing is walked by cursor only.

    Attributes:
        items: the ids, ascending by exact (code point) comparison.
        per_page: echoed page size (``False`` stays ``False``).
        has_more: whether more ids follow this page.
        next_cursor: opaque keyset cursor for the next page, None at the end.
    """

    items: list[str]
    per_page: PerPage
    has_more: bool
    next_cursor: str | None = None


RecallSource = Literal["recent", "semantic", "context", "include"]
"""Why a message is in a recall result: ``"recent"`` (the history page),
``"semantic"`` (a vector-search hit), ``"context"`` (in the
``message_range`` window around a hit) or ``"include"`` (asked for through
``include``). A message that is several is marked by the first of recent,
semantic, include, context."""


@dataclass(frozen=True, slots=True)
class RecallResult:
    """What :meth:`memory_core.Memory.recall` returns (R-RECALL, R-SOURCE, R-BUDGET).

    Attributes:
        messages: in the requested order (oldest first by default).
        total: messages of the history query (filters applied); None when
            recall was asked for none (``total=False``).
        page: echoed page number.
        per_page: echoed page size.
        has_more: more history beyond this page.
        next_cursor: keyset cursor of the next history page, or None.
        semantic_hits: message ids the vector search matched, best first
            (empty without semantic recall); a vector whose message storage
            no longer holds (an orphan) is no hit.
        sources: one :data:`RecallSource` per message, aligned with
            ``messages``.
        gaps: ``(before_id, after_id)`` for each pair of neighbours in
            ``messages`` between which the conversation is not contiguous:
            they are from different threads, or their thread has messages
            between them that were not returned.
        warnings: problems recall noticed but did not raise, e.g. an empty
            vector index while storage holds messages (repair: ``reindex``).
        tokens: tokens of ``messages`` when ``max_tokens`` was given, else None.
        dropped: messages left out to fit ``max_tokens`` (0 without a budget).
    """

    messages: list[Message]
    total: int | None
    page: int
    per_page: PerPage
    has_more: bool
    next_cursor: str | None = None
    semantic_hits: list[str] = field(default_factory=list)
    sources: list[RecallSource] = field(default_factory=list)
    gaps: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    tokens: int | None = None
    dropped: int = 0

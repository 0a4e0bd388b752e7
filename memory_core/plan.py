"""Read plans: every read one public operation needs, asked of the adapter at once.

The core builds one :class:`ReadPlan` per operation (``recall``,
``list_messages``, ``list_threads``, working-memory reads) and hands it to
:meth:`memory_core.storage.BaseStorage._read`, which an adapter answers in
one backend call (one SQLite job, one Lua script, one MongoDB round trip)
and returns as raw :class:`ReadParts`. Validation, ownership errors,
include merging, de-duplication, final order, ``has_more`` and cursors stay
in the core: a plan carries no semantics beyond "read these".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_core.models import Message, Resource, Thread
from memory_core.query import MessageQuery, ThreadQuery

__all__ = ["ReadParts", "ReadPlan", "ResourceIdQuery", "Window"]

Window = tuple[str, int, int]
"""An include window: ``(message id, before, after)``."""


@dataclass(frozen=True, slots=True)
class ResourceIdQuery:
    """A page of resource ids (R-RESOURCES): the ids that have a resource
    record or own at least one thread, each once, ascending by exact
    comparison (code point order: UTF-8 byte order), strictly greater than
    ``after`` if set, at most ``limit`` (None = all)."""

    after: str | None = None
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """What one operation reads. Every part is optional; an empty plan reads nothing.

    Attributes:
        threads: thread ids to fetch (an ownership check, working memory).
        resources: resource ids to fetch.
        owner_resources: also fetch the resource owning each fetched thread
            (working memory of a thread's user, read by thread id).
        messages: a message page: count of the query's filter (no offset,
            limit or after) and its window (none when ``limit`` is 0).
        thread_page: a thread page: count and window, as ``messages``.
        windows: include windows, ``(message id, before, after)`` each.
        message_ids: messages to fetch by id (``get_messages``; the state a
            write's checks read, with ``threads``).
        resource_ids: a page of resource ids (``list_resource_ids``).
    """

    threads: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    owner_resources: bool = False
    messages: MessageQuery | None = None
    thread_page: ThreadQuery | None = None
    windows: tuple[Window, ...] = ()
    message_ids: tuple[str, ...] = ()
    resource_ids: ResourceIdQuery | None = None


@dataclass(frozen=True, slots=True)
class ReadParts:
    """The raw answer to a :class:`ReadPlan`, for the core to compose.

    Attributes:
        threads: the fetched threads found, by id (``last_message_at`` filled).
        resources: the fetched resources found, by id (with ``owner_resources``,
            the owners of the found threads too).
        message_total: matches of ``plan.messages``' filter (0 without it).
        messages: ``plan.messages``' window, in the query's order.
        thread_total: matches of ``plan.thread_page``'s filter (0 without it).
        thread_items: ``plan.thread_page``'s window, in the query's order.
        windows: one list per ``plan.windows`` entry, R-ORDER ascending
            (``[]`` for an unknown id).
        found_messages: the stored messages among ``plan.message_ids``, any
            order, ``sequence`` filled.
        resource_ids: ``plan.resource_ids``' page of ids, ascending.
    """

    threads: dict[str, Thread] = field(default_factory=dict)
    resources: dict[str, Resource] = field(default_factory=dict)
    message_total: int = 0
    messages: list[Message] = field(default_factory=list)
    thread_total: int = 0
    thread_items: list[Thread] = field(default_factory=list)
    windows: list[list[Message]] = field(default_factory=list)
    found_messages: list[Message] = field(default_factory=list)
    resource_ids: list[str] = field(default_factory=list)

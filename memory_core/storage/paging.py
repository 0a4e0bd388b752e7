"""Reads, paging and cursors: every public read, composed from one
:meth:`~memory_core.storage.contract.AdapterContract._read` per call.

The core validates the call, builds one :class:`~memory_core.plan.ReadPlan`
(the page window, keyset position, include windows, ownership rows) and
turns the raw :class:`~memory_core.plan.ReadParts` into pages: include
merging, de-duplication, final order, ``has_more`` arithmetic and cursors
live here, once (R-PAGE, R-CURSOR, R-INCLUDE).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from memory_core.builders import builder
from memory_core.clock import to_us
from memory_core.cursor import decode_cursor, encode_cursor, fingerprint
from memory_core.errors import OwnershipError, ValidationError
from memory_core.models import (
    IdPage,
    Include,
    Message,
    MessageFilter,
    MessagePageRequest,
    OrderBy,
    Page,
    PerPage,
    Resource,
    Thread,
    ThreadFilter,
)
from memory_core.plan import ReadPlan, ResourceIdQuery, Window
from memory_core.query import MessageKey, MessagePage, MessageQuery, MetaCondition, ThreadQuery
from memory_core.storage.lifecycle import Lifecycle
from memory_core.storage.parts import MessageParts, order_key
from memory_core.telemetry import traced
from memory_core.validation import (
    MESSAGE_ORDER_DEFAULT,
    check_id,
    check_id_list,
    check_includes,
    check_page,
    check_page_request,
    check_per_page,
    check_thread_filter,
    check_thread_ids,
    check_thread_order,
)

__all__ = ["MESSAGE_ORDER_DEFAULT", "WINDOW_SIDE_MAX", "MessageParts", "Reads", "message_key", "order_key"]

T = TypeVar("T")


def message_key(message: Message) -> MessageKey:
    """R-ORDER position of a stored message: (created_at µs, sequence).

    Raises:
        ValidationError: ``message`` is not a stored one (no ``created_at``
            or ``sequence``).
    """
    if message.created_at is None or message.sequence is None:
        raise ValidationError(f"message {message.id!r}", "has no stored position (created_at and sequence)")
    return (to_us(message.created_at), message.sequence)


class Reads(Lifecycle):
    """The public reads of :class:`~memory_core.storage.BaseStorage` (threads,
    messages, resources, resource ids), each one ``_read`` of a plan."""

    @traced("search_memory")
    async def get_thread(self, thread_id: str, resource_id: str | None = None) -> Thread | None:
        """The thread, or None if missing or (with ``resource_id``) owned by
        another resource.

        Raises:
            ValidationError: bad id (R-ID).
        """
        check_id(thread_id, "thread_id")
        if resource_id is not None:
            check_id(resource_id, "resource_id")
        thread = (await self._read_plan("get_thread", ReadPlan(threads=(thread_id,)))).threads.get(thread_id)
        if thread is None or (resource_id is not None and thread.resource_id != resource_id):
            return None
        return thread

    async def get_thread_with_owner(self, thread_id: str) -> tuple[Thread | None, Resource | None]:
        """The thread and the resource record owning it, read in one round
        trip: ``(None, None)`` if the thread is missing, ``(thread, None)``
        if its resource has no record (no working memory or metadata saved).

        Raises:
            ValidationError: bad id (R-ID).
        """
        check_id(thread_id, "thread_id")
        parts = await self._read_plan("get_thread", ReadPlan(threads=(thread_id,), owner_resources=True))
        thread = parts.threads.get(thread_id)
        return thread, None if thread is None else parts.resources.get(thread.resource_id)

    @traced("search_memory")
    async def list_threads(
        self,
        filter: ThreadFilter | Mapping[str, Any] | None = None,
        page: int = 0,
        per_page: PerPage = 100,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        cursor: str | None = None,
    ) -> Page[Thread]:
        """A page of threads (R-PAGE), default order ``created_at DESC``, ties by id.

        ``order_by`` fields: ``created_at``, ``updated_at``, ``last_message_at``
        (threads without messages come last in either direction); a field
        without a direction is sorted DESC (R-SORT).

        Returns:
            ``Page[Thread]`` with ``total`` counted under the filter.

        Raises:
            ValidationError: bad filter (R-META), page bounds (R-PAGE), order
                (R-SORT) or cursor (R-CURSOR).
        """
        resource_id, conditions = check_thread_filter(filter)
        page, per_page, offset = check_page(page, per_page)
        order_field, descending = check_thread_order(order_by)
        identity = fingerprint(
            "threads", resource_id, [(c.key, c.kind, c.value) for c in conditions], order_field, descending
        )
        after = self._cursor_position(cursor, page, identity, (int, str))
        window = _Window.of(offset, per_page, after)
        query = _new_thread_query(resource_id, conditions, order_field, descending, window.offset, window.limit, after)
        # threads, resources, owner_resources, messages, thread_page, windows, message_ids, resource_ids
        parts = await self._read_plan("list_threads", _new_plan((), (), False, None, query, (), (), None))
        items, has_more = window.cut(parts.thread_items, parts.thread_total)
        next_cursor = encode_cursor(identity, query.key(items[-1])) if has_more and items else None
        return Page(items, parts.thread_total, page, per_page, has_more, next_cursor)

    # ------------------------------------------------------------------ messages

    @traced("search_memory")
    async def get_messages(self, ids: Sequence[str]) -> list[Message]:
        """The messages found among ``ids``, in R-ORDER ascending."""
        wanted = check_id_list(ids, "ids")
        if not wanted:
            return []
        plan = ReadPlan(message_ids=tuple(dict.fromkeys(wanted)))
        found = (await self._read_plan("get_messages", plan)).found_messages
        return sorted(found, key=order_key)

    @traced("search_memory")
    async def list_messages(
        self,
        thread_id: str | Sequence[str],
        resource_id: str | None = None,
        include: Sequence[Include | Mapping[str, Any]] | None = None,
        filter: MessageFilter | Mapping[str, Any] | None = None,
        page: int = 0,
        per_page: PerPage = 40,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        cursor: str | None = None,
        total: bool = True,
    ) -> Page[Message]:
        """A page of one or more threads' messages (R-PAGE, R-INCLUDE).

        Order: ``created_at ASC`` by default, ties by insertion sequence
        (R-ORDER). With ``resource_id``, every thread named must be that
        resource's (R-OWN, as for ``Memory.recall``); a missing thread is an
        empty part of the page. ``include`` windows are merged in, de-duplicated and sorted in
        the requested order; they never count in ``total``.

        ``total=False`` asks for no count: ``Page.total`` is None and
        ``has_more`` comes from one row read past the page. An unfiltered
        thread's total is a counter the writes keep (O(1)); a date or metadata
        filter's total is a count of the matches, which ``total=False`` skips.

        Raises:
            ValidationError: empty/blank ``thread_id``, bad filter, page bounds,
                order, include, cursor or a ``total`` that is not a bool.
            OwnershipError: with ``resource_id``, a thread named belongs to
                another resource (nothing is returned; check a thread's owner
                without raising with ``get_thread(thread_id, resource_id)``,
                which answers None).
        """
        # The public field is ``thread_id``: check it here, so errors name it.
        thread_ids = (check_id(thread_id, "thread_id"),) if isinstance(thread_id, str) else check_thread_ids(thread_id)
        request = MessagePageRequest(
            thread_ids=thread_ids,
            resource_id=resource_id,
            include=include,
            filter=filter,
            page=page,
            per_page=per_page,
            order_by=order_by,
            cursor=cursor,
            total=total,
        )
        if resource_id is None:
            return await self.page_messages(request)
        # The threads are read in the page's round trip: another resource's
        # thread is an OwnershipError, as Memory.recall gives it (R-OWN).
        parts = await self.message_parts(request, threads=thread_ids)
        for found in parts.threads.values():
            if found.resource_id != resource_id:
                raise OwnershipError(f"thread {found.id!r} does not belong to resource {resource_id!r}")
        return parts.merge(parts.windows)

    @traced("search_memory")
    async def list_messages_by_resource(
        self,
        resource_id: str,
        include: Sequence[Include | Mapping[str, Any]] | None = None,
        filter: MessageFilter | Mapping[str, Any] | None = None,
        page: int = 0,
        per_page: PerPage = 40,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        cursor: str | None = None,
        total: bool = True,
    ) -> Page[Message]:
        """Like :meth:`list_messages`, across every thread of one resource
        (its unfiltered total is the resource's message counter)."""
        check_id(resource_id, "resource_id")
        return await self.page_messages(
            MessagePageRequest(
                resource_id=resource_id,
                include=include,
                filter=filter,
                page=page,
                per_page=per_page,
                order_by=order_by,
                cursor=cursor,
                total=total,
            )
        )

    @traced("search_memory")
    async def page_messages(self, request: MessagePageRequest) -> Page[Message]:
        """The shared message-page composition behind every listing.

        ``list_messages``, ``list_messages_by_resource`` and ``Memory.recall``
        all come here. With ``request.newest`` and no ``order_by``
        (``Memory.recall``), the window is the newest ``per_page`` messages
        (page 1 = the next older block), returned oldest first (R-RECALL
        step 3).

        Returns:
            a :class:`~memory_core.models.Page` of messages, as for
            :meth:`list_messages`.

        Raises:
            ValidationError: ``request`` is not a
                :class:`~memory_core.models.MessagePageRequest`; ``thread_ids``
                empty, a bare str or with a bad id; neither ``thread_ids`` nor
                ``resource_id`` given; or any field that
                :meth:`list_messages` refuses.
        """
        parts = await self.message_parts(request)
        return parts.merge(parts.windows)

    @traced("search_memory")
    async def message_parts(self, request: MessagePageRequest, *, threads: Sequence[str] = ()) -> MessageParts:
        """:meth:`page_messages` before the merge: the main page and each
        include's window apart (one read, as ``page_messages``), for callers
        that need to know where each message came from.

        Args:
            request: the page, as for :meth:`page_messages`.
            threads: thread ids to read in the same round trip (an ownership
                check); found ones come back in :attr:`MessageParts.threads`.

        Raises:
            ValidationError: as :meth:`page_messages`; a bad id in ``threads``.
        """
        page, includes, fetched = check_page_request(request, threads)
        return await self._message_parts(page, includes, fetched)

    @traced("search_memory")
    async def read_message_parts(
        self, request: MessagePage, include: Sequence[Include] = (), threads: tuple[str, ...] = ()
    ) -> MessageParts:
        """:meth:`message_parts` of a request checked already (the core's
        read, ``Memory.recall``'s: it checks its whole call once, with
        :func:`~memory_core.validation.check_recall`, and this read checks
        nothing again but the cursor, which belongs to the query).

        Args:
            request: the checked page (:func:`~memory_core.validation.check_message_page`).
            include: checked includes, each side at most
                :data:`WINDOW_SIDE_MAX`.
            threads: checked thread ids to read in the same round trip.

        Raises:
            ValidationError: ``request`` is not a
                :class:`~memory_core.query.MessagePage`; a bad ``cursor``
                (R-CURSOR).
        """
        if not isinstance(request, MessagePage):
            raise ValidationError("request", f"must be a MessagePage, got {type(request).__name__}")
        return await self._message_parts(request, include, threads)

    async def _message_parts(
        self, request: MessagePage, includes: Sequence[Include], threads: tuple[str, ...]
    ) -> MessageParts:
        """One read of a checked page, its include windows and ``threads``."""
        thread_ids, resource_id, descending = request.thread_ids, request.resource_id, request.descending
        created_from, created_to, conditions = request.created_from_us, request.created_to_us, request.metadata
        identity = None  # the query's fingerprint (R-CURSOR), made only for a cursor in or out
        after = None
        if request.cursor is not None:
            identity = _message_identity(thread_ids, resource_id, created_from, created_to, conditions, descending)
            after = self._cursor_position(request.cursor, request.page, identity, (int, int))
        # has_more with includes asks whether every match is already among the
        # items, which only the count tells: such a page counts even without total.
        counted = request.total or bool(includes)
        window = _Window.of(request.offset, request.per_page, after, counted)
        query = _new_message_query(
            thread_ids, resource_id, created_from, created_to, conditions, descending, window.offset, window.limit,
            after, counted
        )  # fmt: skip
        # threads, resources, owner_resources, messages, thread_page, windows, message_ids, resource_ids
        plan = _new_plan(threads, (), False, query, None, _windows(includes), (), None)
        parts = await self._read_plan("list_messages", plan)
        main, has_more = window.cut(parts.messages, parts.message_total)
        next_cursor = None
        if has_more and main:
            if identity is None:
                identity = _message_identity(thread_ids, resource_id, created_from, created_to, conditions, descending)
            next_cursor = encode_cursor(identity, message_key(main[-1]))
        return _new_parts(
            main,
            parts.message_total if counted else None,
            request.total,
            request.page,
            request.per_page,
            has_more,
            next_cursor,
            self._owned_windows(parts.windows, resource_id),
            query,
            request.output_descending,
            parts.threads,
        )

    @traced("search_memory")
    async def include_windows(
        self, include: Sequence[Include | Mapping[str, Any]], resource_id: str | None = None
    ) -> list[list[Message]]:
        """Each include's window (R-INCLUDE), in the includes' order: the
        message and its neighbours in its own thread, R-ORDER ascending;
        ``[]`` for an unknown id or, with ``resource_id``, another resource's
        message.

        Raises:
            ValidationError: a bad include or ``resource_id``.
        """
        if resource_id is not None:
            check_id(resource_id, "resource_id")
        windows, _ = await self.read_windows(check_includes(include), resource_id)
        return windows

    async def read_windows(
        self, include: Sequence[Include], resource_id: str | None = None, threads: tuple[str, ...] = ()
    ) -> tuple[list[list[Message]], dict[str, Thread]]:
        """:meth:`include_windows` of includes checked already, with
        ``threads`` read in the same round trip (the core's read: ``recall``
        checks its whole call once and reads its hits' windows, or a thread's
        owner, here without checking again).

        Args:
            include: checked includes, each side at most :data:`WINDOW_SIDE_MAX`.
            resource_id: a checked resource id: another resource's windows are
                empty (R-OWN); None: no ownership filter.
            threads: checked thread ids to read too.

        Returns:
            ``(windows, threads)``: one window per include, R-ORDER ascending;
            the found threads by id. No round trip when both are empty.
        """
        if not include and not threads:
            return [], {}
        plan = ReadPlan(threads=threads, windows=_windows(include))
        parts = await self._read_plan("list_messages", plan)
        return self._owned_windows(parts.windows, resource_id), parts.threads

    @staticmethod
    def _owned_windows(windows: list[list[Message]], resource_id: str | None) -> list[list[Message]]:
        """Windows with those of another resource's message emptied (R-OWN)."""
        if resource_id is None:
            return windows
        return [window if not window or window[0].resource_id == resource_id else [] for window in windows]

    @staticmethod
    def _cursor_position(cursor: Any, page: int, identity: str, types: tuple[type, ...]) -> Any:
        if cursor is None:
            return None
        if page != 0:
            raise ValidationError("cursor", "cannot be combined with page > 0", "R-CURSOR")
        return decode_cursor(cursor, identity, types)

    # ------------------------------------------------------------------ resources

    @traced("search_memory")
    async def get_resource(self, resource_id: str) -> Resource | None:
        """The resource, or None."""
        check_id(resource_id, "resource_id")
        return (await self._read_plan("get_resource", ReadPlan(resources=(resource_id,)))).resources.get(resource_id)

    @traced("search_memory")
    async def list_resource_ids(self, per_page: PerPage = 100, cursor: str | None = None) -> IdPage:
        """A page of the ids of every resource the store holds: each id that
        has a resource record (working memory, metadata) or owns at least one
        thread, ascending by exact comparison (code point order, as Python
        sorts str), each once (R-RESOURCES).

        A resource whose last thread was deleted stays listed while its
        record exists; :meth:`delete_resource` (record and threads) removes
        it. Walk the listing with ``next_cursor`` (a keyset position: ids
        written or deleted meanwhile cause no gaps or repeats among the rest).

        Args:
            per_page: ids per page, an int from 0 to
                :data:`~memory_core.validation.MAX_PER_PAGE`, or ``False``
                for all of them in one page (default 100).
            cursor: a previous page's ``next_cursor``; None: from the start.

        Returns:
            :class:`~memory_core.models.IdPage` (no ``total``: counting would
            cost a full scan per page).

        Raises:
            ValidationError: bad ``per_page`` (R-PAGE) or ``cursor``
                (R-CURSOR), before any I/O.
        """
        size: PerPage = False if per_page is False else check_per_page(per_page, "per_page")
        after = None if cursor is None else decode_cursor(cursor, _RESOURCE_IDS, (str,))[0]
        plan = ReadPlan(resource_ids=ResourceIdQuery(after, None if size is False else size + 1))
        found = (await self._read_plan("list_resource_ids", plan)).resource_ids
        if size is False:
            return IdPage(found, size, False)
        items, has_more = found[:size], len(found) > size
        return IdPage(items, size, has_more, encode_cursor(_RESOURCE_IDS, (items[-1],)) if has_more and items else None)


_RESOURCE_IDS = fingerprint("resource_ids")
"""The query identity of :meth:`BaseStorage.list_resource_ids` cursors."""


def _message_identity(
    thread_ids: tuple[str, ...] | None,
    resource_id: str | None,
    created_from: int | None,
    created_to: int | None,
    conditions: tuple[MetaCondition, ...],
    descending: bool,
) -> str:
    """The fingerprint a message page's cursors carry (R-CURSOR)."""
    metadata = [(c.key, c.kind, c.value) for c in conditions]
    return fingerprint("messages", thread_ids, resource_id, created_from, created_to, metadata, descending)


WINDOW_SIDE_MAX = 2**53 - 1
"""The widest window side an adapter is handed: valid includes go up to
2**63 - 1, which no thread holds, and a side this wide is exact in every
backend's number type (a double in Redis Lua, int64 in BSON and SQL, where
the core's ``+ 1`` to read a neighbour must not overflow)."""


def _windows(includes: Sequence[Include]) -> tuple[Window, ...]:
    """The plan's windows of validated includes, each side at most
    :data:`WINDOW_SIDE_MAX`."""
    return tuple(
        (inc.id, min(inc.with_previous, WINDOW_SIDE_MAX), min(inc.with_next, WINDOW_SIDE_MAX)) for inc in includes
    )


@dataclass(frozen=True, slots=True)
class _Window:
    """Which rows a page fetches (``offset``, ``limit``; None = all) and how
    its ``has_more`` follows."""

    offset: int
    limit: int | None
    per_page: PerPage
    probe: bool  # one row past the page was read: has_more is whether it came

    @classmethod
    def of(cls, offset: int, per_page: PerPage, after: Any, counted: bool = True) -> _Window:
        """The rows to fetch for a page at ``offset`` (or after the keyset
        ``after``); ``counted``: the read also reports the total."""
        if per_page is False:
            return _new_window(0, None, per_page, False)
        if after is None and counted:
            return _new_window(offset, per_page, per_page, False)
        # Keyset page, or no total: one extra row tells whether anything lies beyond.
        return _new_window(0 if after is not None else offset, per_page + 1, per_page, True)

    def cut(self, items: list[T], total: int) -> tuple[list[T], bool]:
        """The page's items and ``has_more``."""
        if self.per_page is False:
            return items, False
        if self.probe:
            return items[: self.per_page], len(items) > self.per_page
        return items, self.offset + self.per_page < total


# The read path builds these frozen records once per call from values it has
# just checked: builders skip the dataclass __init__'s object.__setattr__ per
# field (every field positionally, in field order).
_new_window: Callable[..., _Window] = builder(_Window)
_new_parts: Callable[..., MessageParts] = builder(MessageParts)
_new_plan: Callable[..., ReadPlan] = builder(ReadPlan)
_new_message_query: Callable[..., MessageQuery] = builder(MessageQuery)
_new_thread_query: Callable[..., ThreadQuery] = builder(ThreadQuery)

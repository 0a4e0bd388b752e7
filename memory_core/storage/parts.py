"""A message page before its merge (:class:`MessageParts`) and the merge
itself (R-INCLUDE): the main window and each include's window, read in one
plan by :class:`~memory_core.storage.paging.Reads`, become one page here,
de-duplicated and in the output order, with ``has_more`` settled. Pure: no
I/O, no checks (the read checked its request).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from memory_core.models import Message, Page, PerPage, Thread
from memory_core.query import MessageQuery

__all__ = ["MessageParts", "order_key"]

order_key: Callable[[Message], tuple[Any, ...]] = attrgetter("created_at", "sequence")
"""Sort key of stored messages in R-ORDER: the order of :func:`message_key`
without converting each time to µs (sorting pages is on every read's path)."""


@dataclass(frozen=True, slots=True)
class MessageParts:
    """A message page with its include windows not yet merged (see
    :meth:`BaseStorage.message_parts`).

    Attributes:
        main: the main query's window, in the query's order.
        total: main-query matches (R-PAGE); None when the page was read
            without a count.
        wants_total: whether the request asked for ``total`` (the merged
            page's ``total`` is None otherwise, even where a count was read).
        page: echoed page number.
        per_page: echoed page size.
        has_more: before includes are merged (see :meth:`merge`).
        next_cursor: as :attr:`Page.next_cursor`.
        windows: one list per include, R-ORDER ascending (``[]`` when skipped).
        query: the normalised main query (its filter decides ``has_more``).
        descending: output order of the merged items.
        threads: the threads asked for with ``message_parts(threads=...)``,
            found ones by id, read in the same round trip.
    """

    main: list[Message]
    total: int | None
    wants_total: bool
    page: int
    per_page: PerPage
    has_more: bool
    next_cursor: str | None
    windows: list[list[Message]]
    query: MessageQuery
    descending: bool
    threads: dict[str, Thread] = field(default_factory=dict)

    def merge(self, windows: Sequence[Sequence[Message]]) -> Page[Message]:
        """The page: :attr:`main` plus these windows, de-duplicated by id and
        sorted in the output order (R-INCLUDE); ``has_more`` turns False when
        every main-query match is already among the items."""
        items, has_more = self.merged(windows)
        return Page(
            items, self.total if self.wants_total else None, self.page, self.per_page, has_more, self.next_cursor
        )

    def merged(self, windows: Sequence[Sequence[Message]]) -> tuple[list[Message], bool]:
        """:meth:`merge`'s ``(items, has_more)``, for a caller that builds
        its own result from them and the echoed fields (``Memory.recall``)."""
        if not any(windows):  # the main window alone, read in the query's order
            return (self.main[::-1] if self.query.descending != self.descending else self.main[:]), self.has_more
        merged = {m.id: m for m in self.main}
        extras = []  # merged in, not in main
        for window in windows:
            for message in window:
                if message.id not in merged:
                    merged[message.id] = message
                    extras.append(message)
        items = sorted(merged.values(), key=order_key, reverse=self.descending)
        has_more = self.has_more
        # Every main item matches the main query; only the extras need checking.
        # A page with windows is always counted (see message_parts).
        if has_more and extras and self.total is not None:
            in_items = len(self.main) + sum(1 for m in extras if self.query.matches(m))
            has_more = in_items < self.total  # False: every main-query match is already in items
        return items, has_more

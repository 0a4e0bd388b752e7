"""Deliberately broken storage adapters: each must FAIL the conformance suite.

Every class is the reference store with one bug a real adapter could have,
written where such a bug lives (a primitive's query, its encoding, or a
public method an adapter overrode for a native fast path). The kill test
(tests/test_conformance_kills.py) runs the suite against each and requires at
least one failure per class. :data:`BROKEN` maps a short name to each class.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from memory_core import codec
from memory_core.clock import to_us
from memory_core.models import Message, MessagePageRequest, Page, Resource, Thread
from memory_core.query import MessageQuery, MetaCondition, ThreadQuery, meta_kind
from memory_core.reference import InMemoryStorage
from memory_core.storage import message_key

__all__ = ["BROKEN"]


def _window(items: list[Any], offset: int, limit: int | None) -> list[Any]:
    return items[offset:] if limit is None else items[offset : offset + limit]


class _PredicateStorage(InMemoryStorage):
    """The reference store with its listing predicates and sort key exposed
    as hooks, so a subclass can get exactly one of them wrong."""

    def meta_match(self, condition: MetaCondition, metadata: dict[str, Any]) -> bool:
        """R-META for one condition (reference: ``condition.matches``)."""
        return condition.matches(metadata)

    def message_order(self, message: Message, descending: bool) -> Any:
        """Sort key of a message (reference: (created_at, sequence))."""
        return message_key(message)

    def message_after(self, query: MessageQuery, message: Message) -> bool:
        """Keyset condition (reference: strictly after ``query.after``)."""
        return query.is_after(message_key(message))

    def message_matches(self, query: MessageQuery, message: Message) -> bool:
        if query.thread_ids is not None and message.thread_id not in query.thread_ids:
            return False
        if query.resource_id is not None and message.resource_id != query.resource_id:
            return False
        assert message.created_at is not None
        at = to_us(message.created_at)
        if query.created_from_us is not None and at < query.created_from_us:
            return False
        if query.created_to_us is not None and at > query.created_to_us:
            return False
        return all(self.meta_match(c, message.metadata) for c in query.metadata)

    def thread_matches(self, query: ThreadQuery, thread: Thread) -> bool:
        if query.resource_id is not None and thread.resource_id != query.resource_id:
            return False
        return all(self.meta_match(c, thread.metadata) for c in query.metadata)

    async def _list_messages(self, query: MessageQuery) -> list[Message]:
        found = [m for m in self._messages.values() if self.message_matches(query, m) and self.message_after(query, m)]
        found.sort(key=lambda m: self.message_order(m, query.descending), reverse=query.descending)
        return copy.deepcopy(_window(found, query.offset, query.limit))

    async def _count_messages(self, query: MessageQuery) -> int:
        return sum(1 for m in self._messages.values() if self.message_matches(query, m))

    async def _list_threads(self, query: ThreadQuery) -> list[Thread]:
        found = [t for t in self._threads.values() if self.thread_matches(query, t) and query.is_after(query.key(t))]
        found.sort(key=query.key, reverse=query.descending)
        return copy.deepcopy(_window(found, query.offset, query.limit))

    async def _count_threads(self, query: ThreadQuery) -> int:
        return sum(1 for t in self._threads.values() if self.thread_matches(query, t))


class TiesByIdStorage(_PredicateStorage):
    """Breaks R-ORDER: ``ORDER BY created_at, id`` (ties by id, not by insertion)."""

    def message_order(self, message: Message, descending: bool) -> Any:
        assert message.created_at is not None
        return (to_us(message.created_at), message.id)

    async def _message_window(self, message_id: str, before: int, after: int) -> list[Message]:
        target = self._messages.get(message_id)
        if target is None:
            return []
        thread = sorted(
            (m for m in self._messages.values() if m.thread_id == target.thread_id),
            key=lambda m: self.message_order(m, False),
        )
        index = thread.index(target)
        return copy.deepcopy(thread[max(0, index - before) : index + after + 1])


class NullMatchesMissingStorage(_PredicateStorage):
    """Breaks R-META: ``{k: None}`` also matches a missing key (SQL
    ``json_extract(...) IS NULL``)."""

    def meta_match(self, condition: MetaCondition, metadata: dict[str, Any]) -> bool:
        if condition.kind == "null" and condition.key not in metadata:
            return True
        return condition.matches(metadata)


class BoolMatchesOneStorage(_PredicateStorage):
    """Breaks R-META: compares values without their JSON type, so ``true``
    matches ``1`` (SQLite stores JSON true as integer 1)."""

    def meta_match(self, condition: MetaCondition, metadata: dict[str, Any]) -> bool:
        if condition.key not in metadata:
            return False
        stored = metadata[condition.key]
        if meta_kind(stored) not in ("number", "bool") or condition.kind not in ("number", "bool"):
            return condition.matches(metadata)
        return bool(stored == condition.value)


class HasMoreOffByOneStorage(InMemoryStorage):
    """Breaks R-PAGE has_more: an adapter that overrode the listings for a native
    fast path and wrote ``offset + per_page <= total``."""

    @staticmethod
    def _fix(page: Page[Any]) -> Page[Any]:
        if page.per_page is False:
            return page
        offset = page.page * page.per_page
        return replace(page, has_more=offset + page.per_page <= page.counted_total)

    async def page_messages(self, request: MessagePageRequest) -> Page[Message]:
        return self._fix(await super().page_messages(request))

    async def list_threads(self, *args: Any, **kwargs: Any) -> Page[Thread]:
        return self._fix(await super().list_threads(*args, **kwargs))


class IncludeIgnoresResourceStorage(InMemoryStorage):
    """Breaks R-INCLUDE/R-OWN: include windows are fetched without the
    caller's ``resource_id`` scope (another user's messages leak in)."""

    @staticmethod
    def _owned_windows(windows: list[list[Message]], resource_id: str | None) -> list[list[Message]]:
        return windows


def _ms(value: datetime | None) -> datetime | None:
    return None if value is None else value.replace(microsecond=value.microsecond // 1000 * 1000)


class MillisecondTimestampsStorage(InMemoryStorage):
    """Breaks R-TIME: stores datetimes with millisecond precision (BSON dates,
    JavaScript ``Date``)."""

    async def _put_thread(self, thread: Thread) -> None:
        await super()._put_thread(replace(thread, created_at=_ms(thread.created_at), updated_at=_ms(thread.updated_at)))

    async def _save_messages(self, messages: Sequence[Message], bump: Sequence[str], now_us: int) -> list[int]:
        return await super()._save_messages([replace(m, created_at=_ms(m.created_at)) for m in messages], bump, now_us)

    async def _put_resource(self, resource: Resource) -> None:
        await super()._put_resource(
            replace(resource, created_at=_ms(resource.created_at), updated_at=_ms(resource.updated_at))
        )


class PerPageFalseAsZeroStorage(InMemoryStorage):
    """Breaks R-PAGE: "no limit" (``limit=None``, from ``per_page=False``)
    becomes ``LIMIT 0``."""

    async def _list_messages(self, query: MessageQuery) -> list[Message]:
        return [] if query.limit is None else await super()._list_messages(query)

    async def _list_threads(self, query: ThreadQuery) -> list[Thread]:
        return [] if query.limit is None else await super()._list_threads(query)


class SwallowedErrorStorage(InMemoryStorage):
    """Breaks C09 / R-SIZE: a driver error (the response of a big page
    exceeds a 16 MiB document limit, like a MongoDB ``$facet``) is caught and
    returned as an empty page."""

    LIMIT = 16 * 1024 * 1024

    async def _list_messages(self, query: MessageQuery) -> list[Message]:
        try:
            found = await super()._list_messages(query)
            if sum(len(codec.dumps(m.content).encode()) for m in found) > self.LIMIT:
                raise RuntimeError("BSONObjectTooLarge: the result document exceeds 16 MiB")
            return found
        except Exception:
            return []


class ExclusiveBoundInclusiveStorage(InMemoryStorage):
    """Breaks R-DATE: compares date bounds at millisecond precision, so an
    exclusive bound (moved 1 µs inwards by the core) snaps back onto the bound
    and becomes inclusive."""

    @staticmethod
    def _snap(query: MessageQuery) -> MessageQuery:
        lo, hi = query.created_from_us, query.created_to_us
        return replace(
            query,
            created_from_us=None if lo is None else lo // 1000 * 1000,
            created_to_us=None if hi is None else -(-hi // 1000) * 1000,
        )

    async def _list_messages(self, query: MessageQuery) -> list[Message]:
        return await super()._list_messages(self._snap(query))

    async def _count_messages(self, query: MessageQuery) -> int:
        return await super()._count_messages(self._snap(query))


class CursorSkipsTiesStorage(_PredicateStorage):
    """Breaks R-CURSOR: the keyset condition compares ``created_at`` only, so
    a message saved at the same instant after the page was read is skipped."""

    def message_after(self, query: MessageQuery, message: Message) -> bool:
        if query.after is None:
            return True
        assert message.created_at is not None
        at = to_us(message.created_at)
        return at < query.after[0] if query.descending else at > query.after[0]


class DescendingTiesAscendingStorage(_PredicateStorage):
    """Breaks R-ORDER: ``ORDER BY created_at DESC, seq ASC`` (the tie-breaker
    keeps its ascending direction)."""

    def message_order(self, message: Message, descending: bool) -> Any:
        assert message.created_at is not None and message.sequence is not None
        return (to_us(message.created_at), -message.sequence if descending else message.sequence)


class MetadataReplacedStorage(InMemoryStorage):
    """Breaks update_thread: metadata is replaced instead of merged."""

    async def _patch_thread(
        self, thread_id: str, title: str | None, metadata: dict[str, Any] | None, now_us: int
    ) -> Thread | None:
        updated = await super()._patch_thread(thread_id, title, metadata, now_us)
        if updated is not None and metadata is not None:
            updated = replace(updated, metadata=copy.deepcopy(metadata))
            self._threads[thread_id] = copy.deepcopy(updated)
        return updated


class DeleteThreadKeepsMessagesStorage(InMemoryStorage):
    """Breaks delete_thread: messages stay behind and reappear when the
    thread id is created again (ghosts)."""

    async def _delete_thread(self, thread_id: str) -> int:
        self._threads.pop(thread_id, None)
        return 0


class CountIgnoresFilterStorage(InMemoryStorage):
    """Breaks R-PAGE total: the count query forgets the metadata conditions."""

    async def _count_messages(self, query: MessageQuery) -> int:
        return await super()._count_messages(replace(query, metadata=()))


class WindowCrossesThreadsStorage(InMemoryStorage):
    """Breaks R-INCLUDE: the context window is taken from every thread of the
    resource instead of the message's own thread."""

    async def _message_window(self, message_id: str, before: int, after: int) -> list[Message]:
        target = self._messages.get(message_id)
        if target is None:
            return []
        scope = sorted((m for m in self._messages.values() if m.resource_id == target.resource_id), key=message_key)
        index = scope.index(target)
        return copy.deepcopy(scope[max(0, index - before) : index + after + 1])


class UpsertResetsSequenceStorage(InMemoryStorage):
    """Breaks R-ORDER: an upsert is ``INSERT OR REPLACE`` and gets a new
    insertion sequence, so an edited message jumps behind its ties."""

    async def _save_messages(self, messages: Sequence[Message], bump: Sequence[str], now_us: int) -> list[int]:
        sequences = []
        for item in messages:
            old = self._messages.pop(item.id, None)
            if old is not None:
                item = replace(item, created_at=old.created_at)
            sequences.append(next(self._sequence))
            self._messages[item.id] = replace(copy.deepcopy(item), sequence=sequences[-1])
        self._bump(bump, now_us)
        return sequences


class NoBumpOnSaveStorage(InMemoryStorage):
    """Breaks R-BUMP: saving messages does not touch the threads' ``updated_at``."""

    async def _save_messages(self, messages: Sequence[Message], bump: Sequence[str], now_us: int) -> list[int]:
        return await super()._save_messages(messages, [], now_us)


def _integral_floats(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral_floats(v) for v in value]
    return value


class FloatBecomesIntStorage(InMemoryStorage):
    """Breaks R-JSON: a JSON encoder that writes ``1.0`` as ``1`` (JavaScript
    numbers), so floats come back as ints."""

    async def _put_thread(self, thread: Thread) -> None:
        await super()._put_thread(replace(thread, metadata=_integral_floats(thread.metadata)))

    async def _save_messages(self, messages: Sequence[Message], bump: Sequence[str], now_us: int) -> list[int]:
        fixed = [
            replace(m, metadata=_integral_floats(m.metadata), content=_integral_floats(m.content)) for m in messages
        ]
        return await super()._save_messages(fixed, bump, now_us)


class DeleteCountsLastChunkStorage(InMemoryStorage):
    """Breaks OPS: deletes in chunks of 100 ids (declared) but returns only
    the last chunk's count, as a loop that assigns instead of adding would."""

    chunk_limits = frozenset({100})

    async def _delete_messages(self, ids: Sequence[str], bump: Sequence[str], now_us: int) -> int:
        removed = 0
        for start in range(0, len(ids), 100):
            removed = await super()._delete_messages(ids[start : start + 100], bump, now_us)
        return removed


class ThreadOwnersOnlyStorage(InMemoryStorage):
    """A resource listing that finds resources through their threads only
    (the pre-contract-tier default: records without threads are missed,
    R-RESOURCES)."""

    async def _list_resource_ids(self, after: str | None, limit: int | None) -> list[str]:
        owners = {thread.resource_id for thread in await self._list_threads(ThreadQuery(None))}
        return _window(sorted(rid for rid in owners if after is None or rid > after), 0, limit)


class ListingKeepsErasedStorage(InMemoryStorage):
    """A resource listing kept as an index of every id ever written, never
    cleaned by delete_resource or a last thread's delete (R-RESOURCES)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._seen: set[str] = set()

    async def _put_thread(self, thread: Thread) -> None:
        await super()._put_thread(thread)
        self._seen.add(thread.resource_id)

    async def _put_resource(self, resource: Resource) -> None:
        await super()._put_resource(resource)
        self._seen.add(resource.id)

    async def _list_resource_ids(self, after: str | None, limit: int | None) -> list[str]:
        found = sorted({*self._seen, *await super()._list_resource_ids(None, None)})
        return _window([rid for rid in found if after is None or rid > after], 0, limit)


class ListingInUtf16OrderStorage(InMemoryStorage):
    """A resource listing sorted by UTF-16 code units (a driver's default
    string order), not code points: astral ids come too early (R-RESOURCES)."""

    async def _list_resource_ids(self, after: str | None, limit: int | None) -> list[str]:
        def key(rid: str) -> bytes:
            return rid.encode("utf-16-be")

        found = sorted(await super()._list_resource_ids(None, None), key=key)
        return _window([rid for rid in found if after is None or key(rid) > key(after)], 0, limit)


BROKEN: dict[str, type[InMemoryStorage]] = {
    "ties_by_id": TiesByIdStorage,
    "null_matches_missing": NullMatchesMissingStorage,
    "bool_matches_one": BoolMatchesOneStorage,
    "has_more_off_by_one": HasMoreOffByOneStorage,
    "include_ignores_resource": IncludeIgnoresResourceStorage,
    "millisecond_timestamps": MillisecondTimestampsStorage,
    "per_page_false_as_zero": PerPageFalseAsZeroStorage,
    "swallowed_backend_error": SwallowedErrorStorage,
    "exclusive_bound_inclusive": ExclusiveBoundInclusiveStorage,
    "cursor_skips_ties": CursorSkipsTiesStorage,
    "descending_ties_ascending": DescendingTiesAscendingStorage,
    "metadata_replaced_not_merged": MetadataReplacedStorage,
    "delete_thread_keeps_messages": DeleteThreadKeepsMessagesStorage,
    "count_ignores_filter": CountIgnoresFilterStorage,
    "window_crosses_threads": WindowCrossesThreadsStorage,
    "upsert_resets_sequence": UpsertResetsSequenceStorage,
    "no_bump_on_save": NoBumpOnSaveStorage,
    "float_becomes_int": FloatBecomesIntStorage,
    "delete_counts_last_chunk": DeleteCountsLastChunkStorage,
    "thread_owners_only": ThreadOwnersOnlyStorage,
    "listing_keeps_erased": ListingKeepsErasedStorage,
    "listing_in_utf16_order": ListingInUtf16OrderStorage,
}
"""Short name -> broken adapter class (each must fail the suite)."""

"""Rule tests of pagination: R-PAGE, R-CURSOR (stated in
:data:`memory_core_conformance.rules.RULES`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import pytest

from memory_core.models import DateRange, Message, MessageFilter, OrderBy, Page, ThreadFilter
from memory_core.storage import BaseStorage
from memory_core.validation import INT64_MAX
from memory_core_conformance.cases._base import SuiteBase, ids, unchanged_after
from memory_core_conformance.harness import at, message, thread

__all__ = ["PagingRules"]

BAD_BOUNDS: list[tuple[Any, Any]] = [
    (True, 2),
    (False, 2),
    (-1, 2),
    (1.0, 2),
    ("1", 2),
    (None, 2),
    (0, True),
    (0, -1),
    (0, 2.5),
    (0, "3"),
    (0, None),
    (1, False),
    (2**62, 4),
    (0, INT64_MAX + 1),
]
BAD_BOUND_NAMES = [
    "bool-page",
    "false-page",
    "negative-page",
    "float-page",
    "str-page",
    "none-page",
    "true-per-page",
    "negative-per-page",
    "float-per-page",
    "str-per-page",
    "none-per-page",
    "all-with-page-1",
    "offset-overflow",
    "per-page-overflow",
]

DESC = OrderBy("created_at", "DESC")


async def _fill(store: BaseStorage, count: int, thread_id: str = "t1", resource_id: str = "r1") -> list[str]:
    await store.save_thread(thread(thread_id, resource_id))
    names = [f"{thread_id}-m{i:02}" for i in range(1, count + 1)]
    await store.save_messages([message(n, thread_id, created_at=at(i)) for i, n in enumerate(names, 1)])
    return names


class PagingRules(SuiteBase):
    """R-PAGE, R-CURSOR."""

    # ------------------------------------------------------------------ R-PAGE

    @pytest.mark.parametrize(("page", "per_page"), BAD_BOUNDS, ids=BAD_BOUND_NAMES)
    async def test_r_page_rejects_bad_bounds(self, store: BaseStorage, page: Any, per_page: Any) -> None:
        await _fill(store, 5)
        for call in (
            lambda: store.list_messages("t1", page=page, per_page=per_page),
            lambda: store.list_messages_by_resource("r1", page=page, per_page=per_page),
            lambda: store.list_threads(page=page, per_page=per_page),
        ):
            error = await unchanged_after(store, call)
            assert "R-PAGE" in str(error)

    async def test_r_page_per_page_zero_counts_total(self, store: BaseStorage) -> None:
        await _fill(store, 5)
        page = await store.list_messages("t1", per_page=0)
        assert (page.items, page.total, page.has_more, page.per_page) == ([], 5, True, 0)
        threads = await store.list_threads(per_page=0, page=3)
        assert (threads.items, threads.total, threads.has_more, threads.page) == ([], 1, True, 3)

    async def test_r_page_per_page_zero_is_a_count_only_page(self, store: BaseStorage) -> None:
        """``per_page=0``, on every listing alike: no items, ``total`` every
        match (None with ``total=False``), ``has_more`` True exactly when a
        match exists (a page of any size would hold one), ``next_cursor``
        None, whatever the page number."""
        await store.save_thread(thread("t0", "r0"))  # a thread and resource with no messages
        await _fill(store, 3)
        none = MessageFilter(date_range=DateRange(start=at(50)))
        listings: dict[str, Callable[..., Awaitable[Page[Any]]]] = {
            "messages": lambda **kw: store.list_messages("t1", **kw),
            "empty thread": lambda **kw: store.list_messages("t0", **kw),
            "filtered to none": lambda **kw: store.list_messages("t1", filter=none, **kw),
            "by resource": lambda **kw: store.list_messages_by_resource("r1", **kw),
            "empty resource": lambda **kw: store.list_messages_by_resource("r0", **kw),
            "threads": lambda **kw: store.list_threads(ThreadFilter(resource_id="r1"), **kw),
            "no threads": lambda **kw: store.list_threads(ThreadFilter(resource_id="r9"), **kw),
        }
        expected = {"messages": 3, "by resource": 3, "threads": 1}
        for name, listing in listings.items():
            matches = expected.get(name, 0)
            for page_number in (0, 3):
                page = await listing(per_page=0, page=page_number)
                got = (page.items, page.total, page.has_more, page.next_cursor, page.page)
                assert got == ([], matches, matches > 0, None, page_number), name
            if "threads" not in name:  # list_threads always counts
                uncounted = await listing(per_page=0, total=False)
                assert (uncounted.items, uncounted.total, uncounted.has_more) == ([], None, matches > 0), name
        resources = await store.list_resource_ids(per_page=0)
        assert (resources.items, resources.has_more, resources.next_cursor) == ([], True, None)

    async def test_r_page_per_page_false_means_all(self, store: BaseStorage) -> None:
        names = await _fill(store, 45)
        page = await store.list_messages("t1", per_page=False)
        assert ids(page) == names
        assert (page.total, page.has_more, page.page, page.per_page, page.next_cursor) == (45, False, 0, False, None)
        assert page.per_page is False
        threads = await store.list_threads(per_page=False)
        assert threads.per_page is False and threads.total == 1 and not threads.has_more

    async def test_r_page_offset_windows_walk_the_whole_listing(self, store: BaseStorage) -> None:
        names = await _fill(store, 11)
        for per_page in (1, 3, 4, 11, 12):
            seen: list[str] = []
            for number in range(13):
                page = await store.list_messages("t1", page=number, per_page=per_page)
                assert page.total == 11 and page.page == number and page.per_page == per_page
                assert page.has_more == ((number + 1) * per_page < 11)
                seen += ids(page)
            assert seen == names, f"per_page={per_page}"
        desc = await store.list_messages("t1", page=1, per_page=4, order_by=DESC)
        assert ids(desc) == names[::-1][4:8] and desc.has_more

    async def test_r_page_threads_windows(self, store: BaseStorage) -> None:
        for i in range(7):
            await store.save_thread(thread(f"t{i}", created_at=at(i)))
        flt = ThreadFilter(resource_id="r1")
        pages = [await store.list_threads(flt, page=n, per_page=3) for n in range(4)]
        assert [ids(p) for p in pages] == [["t6", "t5", "t4"], ["t3", "t2", "t1"], ["t0"], []]
        assert [p.has_more for p in pages] == [True, True, False, False]
        assert {p.total for p in pages} == {7}

    async def test_r_page_huge_page_numbers_are_empty(self, store: BaseStorage) -> None:
        await _fill(store, 3)
        page = await store.list_messages("t1", page=2**40, per_page=8)
        assert (page.items, page.total, page.has_more, page.page) == ([], 3, False, 2**40)
        last = await store.list_messages("t1", page=INT64_MAX // 8, per_page=8)
        assert last.items == [] and last.total == 3

    async def test_r_page_without_total_pages_alike(self, store: BaseStorage) -> None:
        """``total=False``: the same items, ``has_more`` and cursors as the
        counted page, ``total`` None; offset, newest, keyset, filtered and
        resource-wide pages alike (the read stops one row past the page)."""
        names = await _fill(store, 9)
        await _fill(store, 2, "t2")
        late = MessageFilter(date_range=DateRange(start=at(3)))
        shapes: list[dict[str, Any]] = [
            {"per_page": 4},
            {"per_page": 4, "page": 1},
            {"per_page": 4, "page": 2},
            {"per_page": 3, "page": 2},
            {"per_page": 0},
            {"per_page": False},
            {"per_page": 2, "order_by": DESC},
            {"per_page": 3, "filter": late},
            {"per_page": 3, "page": 2, "filter": late},
        ]
        listings = (partial(store.list_messages, "t1"), partial(store.list_messages_by_resource, "r1"))
        for shape in shapes:
            for listing in listings:
                counted, bare = await listing(**shape), await listing(**shape, total=False)
                assert bare.total is None and counted.total is not None, shape
                assert (ids(bare), bare.has_more, bare.next_cursor) == (
                    ids(counted),
                    counted.has_more,
                    counted.next_cursor,
                ), shape
        walked: list[str] = []
        cursor = None
        for _ in range(10):
            page = await store.list_messages("t1", per_page=4, cursor=cursor, total=False)
            assert page.total is None
            walked += ids(page)
            cursor = page.next_cursor
            if cursor is None:
                break
        assert walked == names
        with_window = await store.list_messages(
            "t1", per_page=2, include=[{"id": names[0], "with_next": 8}], total=False
        )
        assert with_window.total is None and not with_window.has_more  # every match is among the items
        bad_total: Any = "no"
        error = await unchanged_after(store, lambda: store.list_messages("t1", total=bad_total))
        assert "total" in str(error)

    # ------------------------------------------------------------------ R-CURSOR

    @staticmethod
    async def _walk(store: BaseStorage, per_page: int, **query: Any) -> tuple[list[str], list[Page[Any]]]:
        pages: list[Page[Any]] = []
        seen: list[str] = []
        cursor = None
        for _ in range(200):
            page: Page[Any]
            if "filter_threads" in query:
                page = await store.list_threads(
                    query["filter_threads"], per_page=per_page, order_by=query.get("order_by"), cursor=cursor
                )
            else:
                page = await store.list_messages(
                    query.get("thread_id", "t1"),
                    filter=query.get("filter"),
                    per_page=per_page,
                    order_by=query.get("order_by"),
                    cursor=cursor,
                )
            pages.append(page)
            seen += ids(page)
            cursor = page.next_cursor
            if cursor is None:
                return seen, pages
        raise AssertionError("the cursor walk never ended")

    async def test_r_cursor_walk_equals_the_full_listing(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        batch = [message(f"m{i:02}", created_at=at(i // 3), metadata={"even": i % 2 == 0}) for i in range(20)]
        await store.save_messages(batch)
        for order in (None, DESC):
            for flt in (None, MessageFilter(metadata={"even": True})):
                full = ids(await store.list_messages("t1", filter=flt, per_page=False, order_by=order))
                for per_page in (1, 3, 7, 50):
                    seen, pages = await self._walk(store, per_page, filter=flt, order_by=order)
                    assert seen == full, f"order={order} filter={flt} per_page={per_page}"
                    assert all(p.total == len(full) for p in pages)
                    assert pages[-1].next_cursor is None and not pages[-1].has_more

    async def test_r_cursor_walks_threads(self, store: BaseStorage) -> None:
        for i in range(9):
            await store.save_thread(thread(f"t{i}", created_at=at(i // 2), updated_at=at(-i // 3)))
        for field in ("created_at", "updated_at"):
            for direction in ("ASC", "DESC"):
                order = OrderBy(field, direction)
                flt = ThreadFilter(resource_id="r1")
                full = ids(await store.list_threads(flt, per_page=False, order_by=order))
                for per_page in (1, 2, 4):
                    seen, _ = await self._walk(store, per_page, filter_threads=flt, order_by=order)
                    assert seen == full, f"{field} {direction} per_page={per_page}"

    async def test_r_cursor_no_gaps_or_repeats_under_concurrent_writes(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages([message(f"a{i}", created_at=at(i)) for i in range(6)])
        for order in (None, DESC):
            descending = order is not None
            first = await store.list_messages("t1", per_page=2, order_by=order)
            last: Message = first.items[-1]
            assert last.created_at is not None
            # Concurrent writers: a tie at the boundary (saved later, so after it in
            # R-ORDER), one far beyond, one already passed; a delete ahead.
            tag = "d" if descending else "a"
            await store.save_messages(
                [
                    message(f"tie-{tag}", created_at=last.created_at),
                    message(f"passed-{tag}", created_at=at(100) if descending else at(-100)),
                    message(f"beyond-{tag}", created_at=at(-100) if descending else at(100)),
                ]
            )
            ahead = await store.list_messages("t1", per_page=False, order_by=order)
            position = ids(ahead).index(last.id)
            doomed = ids(ahead)[position + 2]
            await store.delete_messages([doomed])
            expected_rest = [m for m in ids(ahead)[position + 1 :] if m != doomed]
            if descending:  # a tie saved later sorts *before* the boundary item in DESC
                expected_rest = [m for m in expected_rest if m != f"tie-{tag}"]
            seen = ids(first)
            cursor = first.next_cursor
            while cursor is not None:
                page = await store.list_messages("t1", per_page=2, order_by=order, cursor=cursor)
                seen += ids(page)
                cursor = page.next_cursor
            assert seen == ids(first) + expected_rest, f"order={order}"
            assert len(seen) == len(set(seen))
            await store.delete_messages([m for m in ids(ahead) if not m.startswith("a")])

    async def test_r_cursor_ignores_page_size_changes(self, store: BaseStorage) -> None:
        names = await _fill(store, 10)
        first = await store.list_messages("t1", per_page=3)
        second = await store.list_messages("t1", per_page=5, cursor=first.next_cursor)
        assert ids(second) == names[3:8] and second.page == 0 and second.has_more
        rest = await store.list_messages("t1", per_page=False, cursor=second.next_cursor)
        assert ids(rest) == names[8:] and rest.next_cursor is None and not rest.has_more

    async def test_r_cursor_is_none_at_the_end(self, store: BaseStorage) -> None:
        await _fill(store, 4)
        assert (await store.list_messages("t1", per_page=4)).next_cursor is None
        assert (await store.list_messages("t1", per_page=5)).next_cursor is None
        assert (await store.list_messages("t1", per_page=3)).next_cursor is not None
        assert (await store.list_threads(per_page=1)).next_cursor is None

    async def test_r_cursor_rejects_foreign_or_malformed_cursors(self, store: BaseStorage) -> None:
        await _fill(store, 6)
        await _fill(store, 6, "t2")
        cursor = (await store.list_messages("t1", per_page=2)).next_cursor
        thread_cursor = (await store.list_threads(per_page=1)).next_cursor
        assert cursor is not None and thread_cursor is not None
        rejected = [
            lambda: store.list_messages("t2", per_page=2, cursor=cursor),
            lambda: store.list_messages("t1", per_page=2, order_by=DESC, cursor=cursor),
            lambda: store.list_messages("t1", filter=MessageFilter(metadata={"a": 1}), cursor=cursor),
            lambda: store.list_messages("t1", resource_id="r1", cursor=cursor),
            lambda: store.list_messages_by_resource("r1", cursor=cursor),
            lambda: store.list_messages("t1", page=1, per_page=2, cursor=cursor),
            lambda: store.list_threads(cursor=cursor),
            lambda: store.list_messages("t1", cursor=thread_cursor),
            lambda: store.list_threads(ThreadFilter(resource_id="r1"), cursor=thread_cursor),
            lambda: store.list_messages("t1", cursor="not-a-cursor"),
            lambda: store.list_messages("t1", cursor=""),
            lambda: store.list_messages("t1", cursor=5),  # type: ignore[arg-type]
            lambda: store.list_messages("t1", cursor=cursor[:-2]),
        ]
        for call in rejected:
            error = await unchanged_after(store, call)
            assert "R-CURSOR" in str(error)

"""Rule tests of the resource listing: R-RESOURCES (stated in
:data:`memory_core_conformance.rules.RULES`)."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.errors import ValidationError
from memory_core.models import IdPage
from memory_core.storage import BaseStorage
from memory_core.validation import MAX_PER_PAGE
from memory_core_conformance.cases._base import SuiteBase, unchanged_after
from memory_core_conformance.harness import message, thread

__all__ = ["ResourceListingRules"]

# Code point order differs from case-folded, locale and UTF-16 orders here:
# "B" < "a", "z" < "é" < "ü" < "中" < "𝄞" (astral: after U+FFFF in code points,
# before U+E000..U+FFFF in UTF-16), and a prefix sorts before its extensions.
ORDERED_IDS = ["B", "a", "a b", "a-", "aa", "z", "é", "ü", "中", "\ufb01", "𝄞"]

BAD_PER_PAGE: list[Any] = [True, -1, 1.0, "2", None, MAX_PER_PAGE + 1]
BAD_PER_PAGE_NAMES = ["true", "negative", "float", "str", "none", "overflow"]


async def _walk(store: BaseStorage, per_page: int) -> tuple[list[str], list[IdPage]]:
    """Every id, following ``next_cursor`` from the first page."""
    pages = [await store.list_resource_ids(per_page=per_page)]
    while pages[-1].next_cursor is not None:
        assert len(pages) < 200, "the cursor walk never ended"
        pages.append(await store.list_resource_ids(per_page=per_page, cursor=pages[-1].next_cursor))
    return [rid for page in pages for rid in page.items], pages


class ResourceListingRules(SuiteBase):
    """R-RESOURCES."""

    async def test_r_resources_lists_records_threads_and_both(self, store: BaseStorage) -> None:
        assert await store.list_resource_ids() == IdPage([], 100, False, None)
        await store.update_resource("only-record", working_memory="# notes")
        await store.save_thread(thread("t1", "only-threads"))
        await store.save_thread(thread("t2", "only-threads"))
        await store.save_resource({"id": "both", "metadata": {"plan": "pro"}})
        await store.save_thread(thread("t3", "both"))
        await store.save_messages([message("m1", "t3")])
        page = await store.list_resource_ids()
        assert page == IdPage(["both", "only-record", "only-threads"], 100, False, None)

    async def test_r_resources_ascend_by_exact_comparison(self, store: BaseStorage) -> None:
        for index, rid in enumerate(reversed(ORDERED_IDS)):
            if index % 2:
                await store.save_thread(thread(f"t{index}", rid))
            else:
                await store.save_resource({"id": rid})
        assert (await store.list_resource_ids(per_page=False)).items == ORDERED_IDS
        assert (await _walk(store, 2))[0] == ORDERED_IDS

    async def test_r_resources_after_deletes(self, store: BaseStorage) -> None:
        await store.update_resource("kept", working_memory="wm")
        await store.save_thread(thread("t1", "kept"))
        await store.save_thread(thread("t2", "threads"))
        await store.save_thread(thread("t3", "erased"))
        await store.update_resource("erased", metadata={"k": 1})
        await store.update_resource("record", working_memory="x")
        await store.delete_thread("t1")  # its last thread: the record keeps it listed
        await store.delete_thread("t2")  # no record: gone with its last thread
        await store.delete_resource("erased")
        assert (await store.delete_resource("record")).resource
        assert (await store.list_resource_ids()).items == ["kept"]
        await store.delete_resource("kept")
        assert await store.list_resource_ids(per_page=False) == IdPage([], False, False, None)
        await store.save_thread(thread("t2", "threads"))  # every id is free again
        assert (await store.list_resource_ids()).items == ["threads"]

    @pytest.mark.parametrize("per_page", [1, 2, 3, 7, 8])
    async def test_r_resources_cursor_walk_has_no_gaps_or_repeats(self, store: BaseStorage, per_page: int) -> None:
        expected = [f"r{i:02}" for i in range(7)]
        for index, rid in enumerate(expected):
            if index % 3 != 1:
                await store.save_resource({"id": rid})
            if index % 3 != 0:
                await store.save_thread(thread(f"t{index}", rid))
        seen, pages = await _walk(store, per_page)
        assert seen == expected
        assert all(len(page.items) == per_page and page.has_more for page in pages[:-1])
        assert not pages[-1].has_more and pages[-1].next_cursor is None
        assert len(pages) == max(1, -(-len(expected) // per_page))

    @pytest.mark.parametrize("per_page", [1, 2, 3])
    async def test_r_resources_pages_pass_over_resources_emptied_by_deletes(
        self, store: BaseStorage, per_page: int
    ) -> None:
        """Resources whose last thread was just deleted (no record) sort
        between the listed ones, more of them than a page holds: every page
        is full of listed ids, none twice (an adapter that keeps such ids
        as candidates must resume after the last one it looked at)."""
        listed = ["b", "d", "f", "h"]
        for index, rid in enumerate(["a0", "a1", "a2", "b", "c0", "c1", "c2", "c3", "d", "e0", "f", "g0", "g1", "h"]):
            await store.save_thread(thread(f"t{index}", rid))
            if rid not in listed:
                await store.delete_thread(f"t{index}")
        seen, pages = await _walk(store, per_page)
        assert seen == listed
        assert all(len(page.items) == per_page for page in pages[:-1])
        assert (await store.list_resource_ids(per_page=False)).items == listed

    async def test_r_resources_cursor_resumes_after_writes(self, store: BaseStorage) -> None:
        for rid in ("a", "c", "e", "g"):
            await store.save_resource({"id": rid})
        first = await store.list_resource_ids(per_page=2)
        assert first.items == ["a", "c"] and first.has_more and first.next_cursor
        await store.delete_resource("c")  # the cursor's own position may vanish
        await store.delete_resource("e")
        await store.save_resource({"id": "b"})  # before the position: not seen again
        await store.save_thread(thread("t1", "d"))
        rest = await store.list_resource_ids(per_page=False, cursor=first.next_cursor)
        assert rest == IdPage(["d", "g"], False, False, None)

    async def test_r_resources_per_page_zero_and_all(self, store: BaseStorage) -> None:
        await store.save_resource({"id": "r1"})
        assert await store.list_resource_ids(per_page=0) == IdPage([], 0, True, None)
        assert await store.list_resource_ids(per_page=MAX_PER_PAGE) == IdPage(["r1"], MAX_PER_PAGE, False, None)
        page = await store.list_resource_ids(per_page=False)
        assert page.per_page is False and page.items == ["r1"]

    @pytest.mark.parametrize("per_page", BAD_PER_PAGE, ids=BAD_PER_PAGE_NAMES)
    async def test_r_resources_rejects_bad_per_page(self, store: BaseStorage, per_page: Any) -> None:
        await store.save_resource({"id": "r1"})
        error = await unchanged_after(store, lambda: store.list_resource_ids(per_page=per_page))
        assert isinstance(error, ValidationError) and error.field == "per_page" and "R-PAGE" in str(error)

    async def test_r_resources_rejects_foreign_or_malformed_cursors(self, store: BaseStorage) -> None:
        for rid in ("r1", "r2"):
            await store.save_thread(thread(f"t-{rid}", rid))
        thread_cursor = (await store.list_threads(per_page=1)).next_cursor
        assert thread_cursor is not None
        for bad in (thread_cursor, "", "not-a-cursor", 7, "W10"):

            async def listing(cursor: Any = bad) -> IdPage:
                return await store.list_resource_ids(per_page=1, cursor=cursor)

            error = await unchanged_after(store, listing)
            assert isinstance(error, ValidationError) and error.field == "cursor" and "R-CURSOR" in str(error)
        cursor = (await store.list_resource_ids(per_page=1)).next_cursor
        assert cursor is not None
        with pytest.raises(ValidationError, match="R-CURSOR"):
            await store.list_threads(per_page=1, cursor=cursor)

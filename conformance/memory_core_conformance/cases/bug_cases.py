"""Bug cases: faults real users hit in other memory stores, with the right answers.

One test per case (``test_cNN_*``); each right value of the case is an
assertion. C15 and C16 (vectors) live in :mod:`memory_core_conformance.vector`.
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from memory_core.capabilities import Capability
from memory_core.clock import ManualClock
from memory_core.errors import ValidationError
from memory_core.models import DateRange, Include, MessageFilter, MessagePageRequest, OrderBy, ThreadFilter
from memory_core.storage import BaseStorage
from memory_core_conformance.cases._base import SuiteBase, ids, requires, unchanged_after
from memory_core_conformance.harness import T0, StorageFactory, StorageReopener, at, message, thread
from memory_core_conformance.profiles import active_profile

__all__ = ["BugCases"]

ASC = OrderBy("created_at", "ASC")
DESC = OrderBy("created_at", "DESC")


class BugCases(SuiteBase):
    """Bug cases C01-C14 and C17 on storage (stated in :data:`memory_core_conformance.rules.RULES`)."""

    async def test_c01_equal_timestamps_in_one_batch(self, store: BaseStorage) -> None:
        order = ["q", "c", "x", "a", "m", "e", "w", "b", "s", "f", "z"]
        await store.save_thread(thread("t1"))
        await store.save_messages([message(m, "t1", created_at=T0) for m in order])
        page = await store.list_messages("t1", "r1", per_page=10, order_by=DESC)
        assert ids(page) == ["z", "f", "s", "b", "w", "e", "m", "a", "x", "c"]
        assert page.total == 11 and page.has_more
        assert ids(await store.list_messages("t1", "r1", per_page=False)) == order
        # Step 4: the same in a new thread with created_at left unset on all 11.
        await store.save_thread(thread("t2"))
        unset = [f"{m}2" for m in order]
        await store.save_messages([message(m, "t2") for m in unset])
        page = await store.list_messages("t2", "r1", per_page=10, order_by=DESC)
        assert ids(page) == [f"{m}2" for m in ["z", "f", "s", "b", "w", "e", "m", "a", "x", "c"]]
        assert page.total == 11 and page.has_more
        everything = await store.list_messages("t2", "r1", per_page=False)
        assert ids(everything) == unset
        times = [m.created_at for m in everything.items]
        assert all(a is not None and b is not None and a < b for a, b in itertools.pairwise(times))

    async def test_c02_user_assistant_tool_in_the_same_instant(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages([message("zz-user", role="user", created_at=T0)])
        await store.save_messages([message("mm-asst", role="assistant", created_at=T0)])
        await store.save_messages([message("aa-tool", role="tool", created_at=T0)])
        assert ids(await store.list_messages("t1", per_page=False)) == ["zz-user", "mm-asst", "aa-tool"]
        assert ids(await store.list_messages("t1", per_page=False, order_by=DESC)) == ["aa-tool", "mm-asst", "zz-user"]
        page = await store.list_messages("t1", per_page=1, order_by=DESC, include=[Include("mm-asst", with_previous=1)])
        assert ids(page) == ["aa-tool", "mm-asst", "zz-user"]
        assert page.total == 3 and not page.has_more

    async def test_c03_saved_out_of_order(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        for n in (7, 2, 9, 1, 10, 4, 6, 3, 8, 5):
            await store.save_messages([message(f"m{n:02}", created_at=at(n))])
        page = await store.list_messages("t1", per_page=3, order_by=DESC)
        assert ids(page) == ["m10", "m09", "m08"] and page.total == 10 and page.has_more
        page = await store.list_messages("t1", per_page=3, order_by=DESC, include=[Include("m02", with_next=1)])
        assert ids(page) == ["m10", "m09", "m08", "m03", "m02"] and page.total == 10 and page.has_more

    async def test_c04_threads_by_updated_at_and_ties_across_pages(
        self, store: BaseStorage, clock: ManualClock
    ) -> None:
        for offset, name in enumerate("ABC"):
            clock.set(at(offset))
            await store.save_thread(thread(name, "r1"))
        clock.set(at(3))
        await store.update_thread("A", title="A2")
        r1 = ThreadFilter(resource_id="r1")
        up_asc = await store.list_threads(r1, per_page=False, order_by=OrderBy("updated_at", "ASC"))
        assert ids(up_asc) == ["B", "C", "A"]
        up_desc = await store.list_threads(r1, per_page=False, order_by=OrderBy("updated_at", "DESC"))
        assert ids(up_desc) == ["A", "C", "B"]
        clock.set(T0)
        for name in "kdpbh":
            await store.save_thread(thread(name, "r2"))
        r2 = ThreadFilter(resource_id="r2")
        runs = []
        for _ in range(2):
            pages = [await store.list_threads(r2, page=n, per_page=2, order_by=DESC) for n in range(3)]
            seen = [i for p in pages for i in ids(p)]
            assert sorted(seen) == sorted("kdpbh") and len(seen) == 5
            assert [p.total for p in pages] == [5, 5, 5]
            assert [p.has_more for p in pages] == [True, True, False]
            assert seen == list("pkhdb")  # ties by id, in the requested direction
            runs.append(seen)
        assert runs[0] == runs[1]

    async def test_c05_last_n_is_the_newest_n(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages([message(f"m{n:02}", created_at=at(n)) for n in range(1, 21)])
        newest = MessagePageRequest(thread_ids=("t1",), resource_id="r1", per_page=5, newest=True)
        recall = await store.page_messages(newest)
        assert ids(recall) == ["m16", "m17", "m18", "m19", "m20"] and recall.total == 20 and recall.has_more
        older = await store.page_messages(replace(newest, page=1))
        assert ids(older) == ["m11", "m12", "m13", "m14", "m15"]
        pages = {n: await store.list_messages("t1", "r1", page=n, per_page=5, order_by=DESC) for n in (0, 1, 3)}
        assert ids(pages[0]) == [f"m{n:02}" for n in range(20, 15, -1)]
        assert ids(pages[1]) == [f"m{n:02}" for n in range(15, 10, -1)]
        assert ids(pages[3]) == [f"m{n:02}" for n in range(5, 0, -1)] and not pages[3].has_more

    async def test_c06_per_page_false_means_all(self, store: BaseStorage) -> None:
        for n in range(150):
            await store.save_thread(thread("t1" if n == 0 else f"x{n:03}", "r1", created_at=at(n)))
        await store.save_messages([message(f"m{n:03}", created_at=at(n)) for n in range(150)])
        page = await store.list_messages("t1", "r1", per_page=False)
        assert len(page.items) == 150 and page.total == 150 and not page.has_more
        assert page.per_page is False and page.page == 0
        threads = await store.list_threads(ThreadFilter(resource_id="r1"), per_page=False)
        assert len(threads.items) == 150 and threads.total == 150 and not threads.has_more

    async def test_c07_bad_page_bounds_rejected_alike(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages([message(f"m{n}", created_at=at(n)) for n in range(1, 6)])
        bounds: list[tuple[Any, Any]] = [(0, -1), (0, 2.5), (0, "3"), (0, True), (-1, 40), (True, 40), (1, False)]
        for page, per_page in bounds:
            await unchanged_after(
                store, partial(store.list_messages, "t1", page=page, per_page=per_page), ValidationError
            )
        zero = await store.list_messages("t1", per_page=0)
        assert zero.items == [] and zero.total == 5 and zero.has_more
        two = await store.list_messages("t1", per_page=2, page=2)
        assert ids(two) == ["m5"] and not two.has_more
        three = await store.list_messages("t1", per_page=2, page=3)
        assert three.items == [] and three.total == 5 and not three.has_more

    async def test_c08_big_messages_never_truncated(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_thread(thread("t2"))
        bodies = {f"m{n:02}": "x" * 49990 + f"|id=m{n:02}" for n in range(1, 41)}
        await store.save_messages([message(k, content=v, created_at=at(n)) for n, (k, v) in enumerate(bodies.items())])
        big = "".join(chr(0x41 + (n % 26)) for n in range(26)) * (3_000_000 // 26) + "z" * (3_000_000 % 26)
        await store.save_messages([message("big", "t2", big)])
        page = await store.list_messages("t1", per_page=False)
        assert len(page.items) == 40 and page.total == 40
        assert {m.id: m.content for m in page.items} == bodies
        desc = await store.list_messages("t1", per_page=5, order_by=DESC)
        assert ids(desc) == [f"m{n:02}" for n in range(40, 35, -1)] and desc.total == 40 and desc.has_more
        (found,) = await store.get_messages(["big"])
        assert found.content == big and len(found.content) == 3_000_000

    async def test_c09_many_threads(self, store: BaseStorage) -> None:
        for n in range(1200):
            await store.save_thread(thread(f"a{n:04}", "r1", created_at=at(n)))
        for n in range(30):
            await store.save_thread(thread(f"b{n:02}", "r2", created_at=at(n)))
        r1 = ThreadFilter(resource_id="r1")
        everything = await store.list_threads(r1, per_page=False)
        assert len(everything.items) == 1200 and everything.total == 1200
        last = await store.list_threads(r1, page=11, per_page=100, order_by=DESC)
        assert len(last.items) == 100 and not last.has_more
        assert ids(last) == [f"a{n:04}" for n in range(99, -1, -1)]
        beyond = await store.list_threads(r1, page=12, per_page=100, order_by=DESC)
        assert beyond.items == [] and beyond.total == 1200
        r2 = await store.list_threads(ThreadFilter(resource_id="r2"), per_page=False)
        assert len(r2.items) == 30 and all(t.resource_id == "r2" for t in r2.items)

    async def test_c10_typing_5_vs_str_true_vs_1_null_vs_missing(self, store: BaseStorage) -> None:
        a_meta = {"n": 5, "b": True, "s": "5", "one": 1, "f": 1.5, "z": 0, "nul": None}
        b_meta = {"n": "5", "b": "true", "s": 5, "one": True, "f": "1.5", "z": False}
        await store.save_thread(thread("tA", "r1", metadata=a_meta))
        await store.save_thread(thread("tB", "r1", metadata=b_meta))
        await store.save_thread(thread("tM", "r1"))
        await store.save_messages([message("mA", "tM", metadata=a_meta), message("mB", "tM", metadata=b_meta)])
        expectations: list[tuple[dict[str, object], list[str]]] = [
            ({"n": 5}, ["A"]),
            ({"n": "5"}, ["B"]),
            ({"n": 5.0}, ["A"]),
            ({"b": True}, ["A"]),
            ({"b": "true"}, ["B"]),
            ({"b": 1}, []),
            ({"one": 1}, ["A"]),
            ({"one": True}, ["B"]),
            ({"s": "5"}, ["A"]),
            ({"f": 1.5}, ["A"]),
            ({"z": 0}, ["A"]),
            ({"z": False}, ["B"]),
            ({"n": 5, "b": True}, ["A"]),
            ({"missing": 1}, []),
            ({"nul": None}, ["A"]),
        ]
        for condition, expected in expectations:
            threads = await store.list_threads(ThreadFilter(resource_id="r1", metadata=condition), per_page=False)
            assert ids(threads) == [f"t{x}" for x in expected], f"threads {condition}"
            assert threads.total == len(expected)
            msgs = await store.list_messages("tM", filter=MessageFilter(metadata=condition), per_page=False)
            assert ids(msgs) == [f"m{x}" for x in expected], f"messages {condition}"
            assert msgs.total == len(expected)

    async def test_c11_injection_operator_objects_and_odd_keys(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1", "r1", metadata={"owner": "alice"}))
        await store.save_thread(thread("t2", "r2", metadata={"owner": "bob"}))
        await store.save_messages([message("m1", "t1", metadata={"tag": "x"})])
        hostile = [
            lambda: store.list_threads(ThreadFilter(metadata={"owner": {"$ne": ""}})),
            lambda: store.list_threads(ThreadFilter(metadata={"$where": "1"})),
            lambda: store.list_messages("t1", filter=MessageFilter(metadata={"tag": {"$regex": ".*"}})),
            lambda: store.list_threads(ThreadFilter(resource_id={"$ne": ""})),  # type: ignore[arg-type]
            lambda: store.list_messages("t1", resource_id={"$ne": ""}),  # type: ignore[arg-type]
            lambda: store.list_messages_by_resource({"$ne": ""}),  # type: ignore[arg-type]
            lambda: store.list_threads(ThreadFilter(metadata={"a.b": 1})),
            lambda: store.list_threads(ThreadFilter(metadata={"k') OR 1=1 --": "x"})),
            lambda: store.list_threads(ThreadFilter(metadata={'k"]': 1})),
            lambda: store.list_threads(ThreadFilter(metadata={"user-id": 1})),
            lambda: store.list_threads(order_by=OrderBy("created_at; DROP TABLE threads", "ASC")),
            lambda: store.list_messages("t1", order_by=OrderBy("created_at; DROP TABLE threads", "ASC")),
            lambda: store.list_threads(order_by=OrderBy("created_at", "ASC, 1")),
            lambda: store.list_messages("t1", order_by=OrderBy("created_at", "ASC, 1")),
        ]
        for call in hostile:
            await unchanged_after(store, call, ValidationError)
        assert ids(await store.list_threads(ThreadFilter(metadata={"owner": "alice"}))) == ["t1"]
        assert (await store.list_threads()).total == 2
        assert ids(await store.list_messages("t1")) == ["m1"]

    @requires(Capability.SHARED_NAMESPACE)
    async def test_c12_many_openers_and_writers_on_one_new_namespace(
        self, storage_factory: StorageFactory, storage_reopener: StorageReopener
    ) -> None:
        for _ in range(active_profile().repeats):
            first = storage_factory(None)
            stores = [first] + [storage_reopener(first, None) for _ in range(7)]
            try:
                await self._c12_round(stores)
            finally:
                for other in stores[1:]:
                    await other.close()
                await first.destroy()

    @staticmethod
    async def _c12_round(stores: list[BaseStorage]) -> None:
        writers_done = anyio.Event()
        reads = [0]

        async def writer(index: int, store: BaseStorage) -> None:
            await store.open()
            await store.save_thread(thread(f"t{index + 1}", "r1"))
            for n in range(20):
                await store.save_messages([message(f"t{index + 1}-m{n:02}", f"t{index + 1}")])

        async def reader(index: int, store: BaseStorage) -> None:
            await store.open()
            while not writers_done.is_set():
                await store.list_messages([f"t{i}" for i in range(1, 9)], per_page=False)
                reads[0] += 1
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as readers:
            for index, store in enumerate(stores):
                readers.start_soon(reader, index, store)
            async with anyio.create_task_group() as writers:
                for index, store in enumerate(stores):
                    writers.start_soon(writer, index, store)
            writers_done.set()
        check = stores[-1]
        threads = await check.list_threads(ThreadFilter(resource_id="r1"), per_page=False)
        assert sorted(ids(threads)) == [f"t{i}" for i in range(1, 9)]
        for i in range(1, 9):
            page = await check.list_messages(f"t{i}", per_page=False)
            assert ids(page) == [f"t{i}-m{n:02}" for n in range(20)]

    async def test_c13_zones_naive_input_and_exclusive_bounds(self, store: BaseStorage) -> None:
        if not hasattr(time, "tzset"):
            pytest.skip("the host cannot change its time zone at run time (no time.tzset)")
        previous = os.environ.get("TZ")
        os.environ["TZ"] = "America/Los_Angeles"
        time.tzset()
        try:
            await store.save_thread(thread("t1", created_at="2025-03-09T10:30:00.123456+02:00"))
            got = await store.get_thread("t1")
            assert got is not None and got.created_at == datetime(2025, 3, 9, 8, 30, 0, 123456, tzinfo=UTC)
            assert got.created_at.tzinfo is not None and got.created_at.utcoffset() is not None
            assert got.created_at.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
            await store.save_messages([message("m1", created_at=datetime(2025, 3, 9, 8, 30, 0))])
            (m1,) = await store.get_messages(["m1"])
            assert m1.created_at == datetime(2025, 3, 9, 8, 30, tzinfo=UTC)
            assert m1.created_at.isoformat() == "2025-03-09T08:30:00+00:00"
            start = datetime(2025, 3, 9, 8, 30, tzinfo=UTC)
            excl = MessageFilter(date_range=DateRange(start=start, start_exclusive=True))
            incl = MessageFilter(date_range=DateRange(start=start))
            assert ids(await store.list_messages("t1", filter=excl)) == []
            assert ids(await store.list_messages("t1", filter=incl)) == ["m1"]
        finally:
            if previous is None:
                os.environ.pop("TZ", None)
            else:
                os.environ["TZ"] = previous
            time.tzset()

    async def test_c14_updated_at_bumps(self, store: BaseStorage, clock: ManualClock) -> None:
        order = OrderBy("updated_at", "DESC")
        r1 = ThreadFilter(resource_id="r1")

        async def listing() -> list[tuple[str, datetime | None]]:
            page = await store.list_threads(r1, per_page=False, order_by=order)
            return [(t.id, t.updated_at) for t in page.items]

        clock.set(at(0))
        await store.save_thread(thread("t1"))
        clock.set(at(1))
        await store.save_thread(thread("t2"))
        clock.set(at(2))
        await store.save_messages([message("m1", "t1")])
        assert await listing() == [("t1", at(2)), ("t2", at(1))]
        clock.set(at(3))
        await store.update_thread("t2", title="x")
        assert await listing() == [("t2", at(3)), ("t1", at(2))]
        clock.set(at(4))
        await store.save_messages([message("m2", "t1"), message("m3", "t2")])
        assert await listing() == [("t2", at(4)), ("t1", at(4))]
        clock.set(at(5))
        await store.update_messages([{"id": "m1", "content": "edit"}])
        assert await listing() == [("t1", at(5)), ("t2", at(4))]
        created = {t.id: t.created_at for t in (await store.list_threads(r1, per_page=False)).items}
        assert created == {"t1": at(0), "t2": at(1)}
        (m1,) = await store.get_messages(["m1"])
        assert m1.created_at == at(2) and m1.content == "edit"

    async def test_c17_unicode(self, store: BaseStorage) -> None:
        text1 = "héllo 👋🏽 世界 مرحبا a\u200db"
        text2 = "tab\tline\nend"
        meta = {"emoji": "🔥", "clé": "välue"}
        await store.save_thread(thread("t1", title="🧵 plan", metadata=meta))
        await store.save_messages([message("m1", content=text1, metadata=meta), message("m2", content=text2)])
        error = await unchanged_after(
            store, lambda: store.save_messages([message("m3", content="bad \ud83d end")]), ValidationError
        )
        assert "m3" in str(error)
        await store.save_messages([message("m4", content="after")])
        page = await store.list_messages("t1", per_page=False)
        assert ids(page) == ["m1", "m2", "m4"]
        assert page.items[0].content == text1 and page.items[0].metadata == meta
        assert page.items[1].content == text2 and page.items[2].content == "after"
        got = await store.get_thread("t1")
        assert got is not None and got.title == "🧵 plan" and got.metadata == meta

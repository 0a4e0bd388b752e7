"""Rule tests of filters, ordering, include and ownership: R-DATE, R-META,
R-SORT, R-INCLUDE, R-OWN (stated in :data:`memory_core_conformance.rules.RULES`)."""

from __future__ import annotations

from datetime import timedelta, timezone
from functools import partial
from typing import Any

import pytest

from memory_core.errors import ConflictError, NotFoundError, OwnershipError
from memory_core.memory import Memory
from memory_core.models import DateRange, Include, MessageFilter, OrderBy, ThreadFilter
from memory_core.storage import BaseStorage
from memory_core.validation import INT64_MAX, INT64_MIN
from memory_core_conformance.cases._base import SuiteBase, ids, paired_stores, unchanged_after
from memory_core_conformance.compare import assert_same, capture
from memory_core_conformance.harness import StorageFactory, at, message, thread
from memory_core_conformance.strategies import FILTER_KEYS

__all__ = ["MANY_WINDOWS", "FilterRules"]

MANY_WINDOWS = [
    Include("a2", 1, 1),
    Include("b7", 2, 0),
    Include("c4", 0, 3),
    Include("a6", 3, 3),
    Include("d3", 1, 1),
    Include("b1", 0, 2),
    Include("c8", 4, 0),
    Include("a4", 0, 0),
    Include("nope", 2, 2),
    Include("b5", 1, 2),
    Include("c1", 2, 1, "t1"),
    Include("a8", 9, 9),
]
"""Twelve include windows asked for in one call: three threads of r1, one
of r2, an unknown id, overlaps and every width from 0 to the whole thread.
An adapter that tells a plan's windows apart by a small tag or slot number
(a compound statement's arm, a pipeline's slot) must keep all twelve apart."""

DESC = OrderBy("created_at", "DESC")

BAD_META: list[Any] = [
    {"owner": {"$ne": ""}},
    {"$where": "1"},
    {"tag": {"$regex": ".*"}},
    {"a.b": 1},
    {"k') OR 1=1 --": "x"},
    {'k"]': 1},
    {"user-id": 1},
    {"": 1},
    {"1a": 1},
    {"__proto__": 1},
    {"constructor": 1},
    {"prototype": 1},
    {"x" * 129: 1},
    {"k": [1]},
    {"k": {}},
    {"k": float("nan")},
    {"k": float("inf")},
    {"k": INT64_MAX + 1},
    {"k": b"x"},
    {"k": "\ud800"},
    {1: 1},
    [("k", 1)],
    "k=1",
]
BAD_META_NAMES = [
    "op-ne",
    "op-where",
    "op-regex",
    "dotted",
    "sql-quote",
    "json-path",
    "dash",
    "empty-key",
    "digit-first",
    "__proto__",
    "constructor",
    "prototype",
    "129-chars",
    "list",
    "dict",
    "nan",
    "inf",
    "int64-overflow",
    "bytes",
    "lone-surrogate",
    "int-key",
    "pairs",
    "str",
]

BAD_ORDERS: list[Any] = [
    OrderBy("id", "ASC"),
    OrderBy("created_at; DROP TABLE threads", "ASC"),
    OrderBy("CREATED_AT", "ASC"),
    OrderBy("", "ASC"),
    OrderBy("created_at", "ASC, 1"),
    OrderBy("created_at", "ascending"),
    OrderBy("created_at", ""),
    {"field": "created_at", "direction": "ASC", "nulls": "first"},
    "created_at",
]
BAD_ORDER_NAMES = [
    "id",
    "injected-field",
    "upper-field",
    "empty-field",
    "injected-direction",
    "ascending",
    "empty-direction",
    "extra-key",
    "bare-str",
]


class FilterRules(SuiteBase):
    """R-DATE, R-META, R-SORT, R-INCLUDE, R-OWN."""

    # ------------------------------------------------------------------ R-DATE

    async def test_r_date_bounds_inclusive_unless_exclusive(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        times = {"m0": at(0), "m1": at(0, us=1), "m2": at(0, us=2), "m3": at(1)}
        await store.save_messages([message(k, created_at=v) for k, v in times.items()])

        async def between(**bounds: Any) -> list[str]:
            flt = MessageFilter(date_range=DateRange(**bounds))
            page = await store.list_messages("t1", filter=flt, per_page=False)
            assert page.total == len(page.items)
            return ids(page)

        lo, hi = at(0), at(0, us=2)
        assert await between(start=lo, end=hi) == ["m0", "m1", "m2"]
        assert await between(start=lo, end=hi, start_exclusive=True) == ["m1", "m2"]
        assert await between(start=lo, end=hi, end_exclusive=True) == ["m0", "m1"]
        assert await between(start=lo, end=hi, start_exclusive=True, end_exclusive=True) == ["m1"]
        assert await between(start=hi) == ["m2", "m3"]
        assert await between(start=hi, start_exclusive=True) == ["m3"]
        assert await between(end=at(0, us=1)) == ["m0", "m1"]
        assert await between(end=at(0, us=1), end_exclusive=True) == ["m0"]
        assert await between(start=at(0, us=1), end=at(0, us=1), end_exclusive=True) == []
        assert await between() == ["m0", "m1", "m2", "m3"]
        assert await between(start="2025-01-01T00:00:00.000001Z", end="2025-01-01T00:00:00.000002") == ["m1", "m2"]
        plus1 = timezone(timedelta(hours=1))
        assert await between(start=at(0).astimezone(plus1), start_exclusive=True) == ["m1", "m2", "m3"]

    async def test_r_date_compares_to_the_microsecond(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages(
            [
                message("before", created_at=at(0, us=999)),
                message("ms", created_at=at(0, us=1000)),
                message("after", created_at=at(0, us=1001)),
            ]
        )
        exclusive = MessageFilter(date_range=DateRange(start=at(0, us=1000), start_exclusive=True))
        assert ids(await store.list_messages("t1", filter=exclusive)) == ["after"]
        upto = MessageFilter(date_range=DateRange(end=at(0, us=1000), end_exclusive=True))
        assert ids(await store.list_messages("t1", filter=upto)) == ["before"]
        window = MessageFilter(date_range=DateRange(start=at(0, us=1000), end=at(0, us=1000)))
        page = await store.list_messages_by_resource("r1", filter=window)
        assert ids(page) == ["ms"] and page.total == 1

    async def test_r_date_filters_by_resource_listing_and_counts(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_thread(thread("t2"))
        await store.save_messages([message(f"a{i}", "t1", created_at=at(i)) for i in range(5)])
        await store.save_messages([message(f"b{i}", "t2", created_at=at(i)) for i in range(5)])
        flt = MessageFilter(date_range=DateRange(start=at(1), end=at(3), end_exclusive=True))
        page = await store.list_messages_by_resource("r1", filter=flt, per_page=3, order_by=DESC)
        assert ids(page) == ["b2", "a2", "b1"] and page.total == 4 and page.has_more

    # ------------------------------------------------------------------ R-META

    async def test_r_meta_null_matches_explicit_null_only(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t-null", metadata={"k": None}))
        await store.save_thread(thread("t-missing", metadata={"other": 1}))
        await store.save_thread(thread("t-empty", metadata={"k": ""}))
        await store.save_thread(thread("t-false", metadata={"k": False}))
        await store.save_thread(thread("t-nested", metadata={"x": {"k": None}}))
        page = await store.list_threads(ThreadFilter(metadata={"k": None}), per_page=False)
        assert ids(page) == ["t-null"] and page.total == 1
        await store.save_messages(
            [
                message("m-null", "t-null", metadata={"k": None}),
                message("m-missing", "t-null", metadata={}),
                message("m-zero", "t-null", metadata={"k": 0}),
            ]
        )
        msgs = await store.list_messages("t-null", filter=MessageFilter(metadata={"k": None}))
        assert ids(msgs) == ["m-null"] and msgs.total == 1

    async def test_r_meta_empty_filter_means_no_filter(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1", metadata={"a": 1}))
        await store.save_thread(thread("t2"))
        await store.save_messages([message("m1", metadata={"a": 1}), message("m2")])
        assert (await store.list_threads(ThreadFilter(metadata={}))).total == 2
        assert (await store.list_threads(ThreadFilter(resource_id="r1", metadata={}))).total == 2
        assert (await store.list_messages("t1", filter=MessageFilter(metadata={}))).total == 2
        assert (await store.list_messages("t1", filter=MessageFilter())).total == 2

    async def test_r_meta_matches_top_level_keys_only_and_exactly(self, store: BaseStorage) -> None:
        await store.save_thread(thread("nested", metadata={"x": {"k": 1}, "a.b": 1, "arr": [1]}))
        await store.save_thread(thread("flat", metadata={"k": 1, "arr": 1, "Key": "v"}))
        await store.save_thread(thread("big", metadata={"k": INT64_MAX, "m": INT64_MIN, "p": 2**53 + 1}))
        assert ids(await store.list_threads(ThreadFilter(metadata={"k": 1}))) == ["flat"]
        assert ids(await store.list_threads(ThreadFilter(metadata={"arr": 1}))) == ["flat"]
        assert ids(await store.list_threads(ThreadFilter(metadata={"key": "v"}))) == []
        assert ids(await store.list_threads(ThreadFilter(metadata={"Key": "V"}))) == []
        assert ids(await store.list_threads(ThreadFilter(metadata={"k": INT64_MAX}))) == ["big"]
        assert ids(await store.list_threads(ThreadFilter(metadata={"k": INT64_MAX - 1}))) == []
        assert ids(await store.list_threads(ThreadFilter(metadata={"m": INT64_MIN}))) == ["big"]
        assert ids(await store.list_threads(ThreadFilter(metadata={"p": 2**53 + 1}))) == ["big"]
        assert ids(await store.list_threads(ThreadFilter(metadata={"p": 2**53}))) == []
        assert ids(await store.list_threads(ThreadFilter(metadata={"p": float(2**53)}))) == []

    async def test_r_meta_and_across_keys_with_resource(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1", "r1", metadata={"a": 1, "b": "x"}))
        await store.save_thread(thread("t2", "r1", metadata={"a": 1, "b": "y"}))
        await store.save_thread(thread("t3", "r2", metadata={"a": 1, "b": "x"}))
        both = ThreadFilter(metadata={"a": 1, "b": "x"})
        assert ids(await store.list_threads(both, order_by=OrderBy("created_at", "ASC"))) == ["t1", "t3"]
        scoped = ThreadFilter(resource_id="r1", metadata={"a": 1.0, "b": "x"})
        page = await store.list_threads(scoped)
        assert ids(page) == ["t1"] and page.total == 1

    @pytest.mark.parametrize("bad", BAD_META, ids=BAD_META_NAMES)
    async def test_r_meta_rejects_bad_filters(self, store: BaseStorage, bad: Any) -> None:
        await store.save_thread(thread("t1", metadata={"owner": "alice"}))
        await store.save_messages([message("m1", metadata={"tag": "x"})])
        for call in (
            lambda: store.list_threads(ThreadFilter(metadata=bad)),
            lambda: store.list_threads({"resource_id": "r1", "metadata": bad}),
            lambda: store.list_messages("t1", filter=MessageFilter(metadata=bad)),
            lambda: store.list_messages_by_resource("r1", filter={"metadata": bad}),
        ):
            error = await unchanged_after(store, call)
            assert "R-META" in str(error) or "filter" in str(error)

    async def test_r_meta_resource_id_in_filter_must_be_a_str(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        bads: list[Any] = [{"$ne": ""}, 5, ["r1"], "", " "]
        for bad in bads:
            await unchanged_after(store, partial(store.list_threads, ThreadFilter(resource_id=bad)))
        await unchanged_after(store, lambda: store.list_threads({"resource_id": "r1", "owner": "x"}))

    async def test_r_meta_keys_allowed_at_the_limit(self, store: BaseStorage) -> None:
        key = "_" + "a" * 127
        await store.save_thread(thread("t1", metadata={key: "v", **{k: k for k in FILTER_KEYS}}))
        assert ids(await store.list_threads(ThreadFilter(metadata={key: "v"}))) == ["t1"]
        assert ids(await store.list_threads(ThreadFilter(metadata=dict.fromkeys(FILTER_KEYS, "x")))) == []
        assert ids(await store.list_threads(ThreadFilter(metadata={k: k for k in FILTER_KEYS}))) == ["t1"]

    # ------------------------------------------------------------------ R-SORT

    @pytest.mark.parametrize("bad", BAD_ORDERS, ids=BAD_ORDER_NAMES)
    async def test_r_sort_rejects_bad_orders(self, store: BaseStorage, bad: Any) -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages([message("m1")])
        for call in (
            lambda: store.list_messages("t1", order_by=bad),
            lambda: store.list_messages_by_resource("r1", order_by=bad),
            lambda: store.list_threads(order_by=bad),
        ):
            await unchanged_after(store, call)

    async def test_r_sort_messages_cannot_order_by_updated_at(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        error = await unchanged_after(store, lambda: store.list_messages("t1", order_by=OrderBy("updated_at")))
        assert "R-SORT" in str(error)

    async def test_r_sort_directions_any_case_and_defaults(self, store: BaseStorage) -> None:
        await store.save_thread(thread("old", created_at=at(0), updated_at=at(9)))
        await store.save_thread(thread("new", created_at=at(5), updated_at=at(5)))
        await store.save_messages([message(m, "old", created_at=at(i)) for i, m in enumerate(("x", "y", "z"))])
        assert ids(await store.list_threads()) == ["new", "old"]
        assert ids(await store.list_messages("old")) == ["x", "y", "z"]
        for direction in ("desc", "Desc", "DESC"):
            assert ids(await store.list_messages("old", order_by=OrderBy("created_at", direction))) == ["z", "y", "x"]
            order = {"field": "updatedAt", "direction": direction}
            assert ids(await store.list_threads(order_by=order)) == ["old", "new"]
        assert ids(await store.list_threads(order_by=OrderBy("createdAt", "asc"))) == ["old", "new"]
        # a field without a direction takes the threads' default, DESC
        assert ids(await store.list_threads(order_by={"field": "updated_at"})) == ["old", "new"]

    # ------------------------------------------------------------------ R-INCLUDE

    async def _two_threads(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_thread(thread("t2"))
        await store.save_thread(thread("u1", "r2"))
        await store.save_messages(
            [message(f"a{i}", "t1", created_at=at(i), metadata={"tag": i % 2}) for i in range(1, 7)]
        )
        await store.save_messages([message(f"b{i}", "t2", created_at=at(i + 0.5)) for i in range(1, 4)])
        await store.save_messages([message(f"c{i}", "u1", created_at=at(i)) for i in range(1, 4)])

    async def test_r_include_windows_come_from_the_messages_own_thread(self, store: BaseStorage) -> None:
        await self._two_threads(store)
        page = await store.list_messages("t2", include=[Include("a3", with_previous=1, with_next=1, thread_id="t2")])
        assert ids(page) == ["b1", "a2", "b2", "a3", "b3", "a4"]
        assert page.total == 3 and not page.has_more
        desc = await store.list_messages("t2", include=[Include("a3", 1, 1)], order_by=DESC)
        assert ids(desc) == ["a4", "b3", "a3", "b2", "a2", "b1"]

    async def test_r_include_clamped_unknown_skipped_and_deduplicated(self, store: BaseStorage) -> None:
        await self._two_threads(store)
        page = await store.list_messages(
            "t1",
            per_page=2,
            include=[
                Include("a1", with_previous=5, with_next=1),
                Include("nope", 3, 3),
                Include("a6", 1, 9),
                Include("a2", 0, 0),
            ],
        )
        assert ids(page) == ["a1", "a2", "a5", "a6"] and page.total == 6 and page.has_more
        mastra = await store.list_messages(
            "t2", include=[{"id": "a1", "withPreviousMessages": 0, "withNextMessages": 2}], per_page=1
        )
        assert ids(mastra) == ["a1", "b1", "a2", "a3"] and mastra.total == 3 and mastra.has_more

    async def test_r_include_windows_take_64_bit_ranges(self, store: BaseStorage) -> None:
        # with_previous / with_next are valid up to 2**63 - 1: a window wider
        # than 32 bits is the whole thread on that side, never a driver error.
        await self._two_threads(store)
        before = await store.list_messages("t1", per_page=0, include=[Include("a4", with_previous=2**40)])
        assert ids(before) == ["a1", "a2", "a3", "a4"] and before.total == 6
        both = await store.list_messages("t1", per_page=0, include=[Include("a4", 2**31, 2**63 - 1)])
        assert ids(both) == ["a1", "a2", "a3", "a4", "a5", "a6"]

    async def test_r_include_ignores_filters_and_never_counts(self, store: BaseStorage) -> None:
        await self._two_threads(store)
        flt = MessageFilter(metadata={"tag": 0}, date_range=DateRange(start=at(4)))
        page = await store.list_messages("t1", filter=flt, include=[Include("a2", with_previous=1)])
        assert ids(page) == ["a1", "a2", "a4", "a6"] and page.total == 2 and not page.has_more
        partial = await store.list_messages("t1", filter=flt, per_page=0, include=[Include("a5", 0, 1)])
        assert ids(partial) == ["a5", "a6"] and partial.total == 2 and partial.has_more
        only = await store.list_messages("t1", filter=flt, per_page=0, include=[Include("a4", 0, 2)])
        assert ids(only) == ["a4", "a5", "a6"] and only.total == 2 and not only.has_more

    async def test_r_include_has_more_false_once_every_match_is_present(self, store: BaseStorage) -> None:
        await self._two_threads(store)
        page = await store.list_messages("t2", per_page=1, include=[Include("b3", with_previous=2)])
        assert ids(page) == ["b1", "b2", "b3"] and page.total == 3 and not page.has_more
        partial = await store.list_messages("t2", per_page=1, include=[Include("b3", with_previous=0)])
        assert ids(partial) == ["b1", "b3"] and partial.has_more

    async def test_r_include_skips_other_resources_with_resource_id(self, store: BaseStorage) -> None:
        await self._two_threads(store)
        include = [Include("c2", 1, 1), Include("a1", 0, 1)]
        scoped = await store.list_messages("t2", resource_id="r1", include=include)
        assert ids(scoped) == ["a1", "b1", "a2", "b2", "b3"]
        by_resource = await store.list_messages_by_resource("r1", per_page=1, include=include)
        assert ids(by_resource) == ["a1", "a2"] and by_resource.total == 9
        unscoped = await store.list_messages("t2", include=include)
        assert ids(unscoped) == ["a1", "c1", "b1", "a2", "c2", "b2", "c3", "b3"]

    async def test_r_include_many_windows_in_one_call_match_the_reference(
        self, storage_factory: StorageFactory
    ) -> None:
        """Twelve include windows (:data:`MANY_WINDOWS`) in one call, over
        three threads and another resource's: each window apart
        (``include_windows``), merged into pages of one thread, of the
        resource and under its owner, and composed by ``Memory.recall``,
        all as the reference store answers."""
        async with paired_stores(storage_factory) as (sut, reference, _):
            answers: list[list[Any]] = []
            for store in (sut, reference):
                for thread_id, owner in (("t1", "r1"), ("t2", "r1"), ("t3", "r1"), ("u1", "r2")):
                    await store.save_thread(thread(thread_id, owner))
                for prefix, thread_id, offset in (
                    ("a", "t1", 0.0),
                    ("b", "t2", 0.25),
                    ("c", "t3", 0.5),
                    ("d", "u1", 0.75),
                ):
                    await store.save_messages(
                        [message(f"{prefix}{n}", thread_id, created_at=at(n + offset)) for n in range(1, 9)]
                    )
                memory = Memory(store, owns_stores=False)
                answers.append(
                    [
                        await capture(store.include_windows(MANY_WINDOWS)),
                        await capture(store.include_windows(MANY_WINDOWS, resource_id="r1")),
                        await capture(store.list_messages("t1", per_page=2, include=MANY_WINDOWS)),
                        await capture(store.list_messages("t2", resource_id="r1", per_page=0, include=MANY_WINDOWS)),
                        await capture(store.list_messages("t3", include=MANY_WINDOWS, order_by=DESC)),
                        await capture(store.list_messages_by_resource("r1", per_page=3, include=MANY_WINDOWS)),
                        await capture(memory.recall("t1", "r1", per_page=2, include=MANY_WINDOWS)),
                    ]
                )
            calls = [
                "include_windows(MANY_WINDOWS)",
                "include_windows(MANY_WINDOWS, resource_id='r1')",
                "list_messages('t1', per_page=2, include=MANY_WINDOWS)",
                "list_messages('t2', resource_id='r1', per_page=0, include=MANY_WINDOWS)",
                "list_messages('t3', include=MANY_WINDOWS, order_by=DESC)",
                "list_messages_by_resource('r1', per_page=3, include=MANY_WINDOWS)",
                "Memory.recall('t1', 'r1', per_page=2, include=MANY_WINDOWS)",
            ]
            for call, got, want in zip(calls, *answers, strict=True):
                assert_same(got, want, call)

    # ------------------------------------------------------------------ R-OWN

    async def test_r_own_get_thread_checks_the_owner(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1", "r1"))
        assert await store.get_thread("t1", "r2") is None
        assert await store.get_thread("t1", "R1") is None
        got = await store.get_thread("t1", "r1")
        assert got is not None and got.resource_id == "r1"

    async def test_r_own_message_resource_must_be_the_threads(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1", "r1"))
        await unchanged_after(store, lambda: store.save_messages([message("m1", resource_id="r2")]), OwnershipError)
        saved = await store.save_messages([message("m1", resource_id="r1"), message("m2")])
        assert [m.resource_id for m in saved] == ["r1", "r1"]
        assert [m.resource_id for m in await store.get_messages(["m1", "m2"])] == ["r1", "r1"]

    async def test_r_own_existing_id_under_another_resource_conflicts(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1", "r1"))
        await store.save_thread(thread("t3", "r2"))
        await store.save_messages([message("m1", "t1")])
        await unchanged_after(
            store, lambda: store.save_messages([message("m0", "t3"), message("m1", "t3")]), ConflictError
        )
        await unchanged_after(store, lambda: store.update_messages([{"id": "m1", "thread_id": "t3"}]), ConflictError)
        (m1,) = await store.get_messages(["m1"])
        assert m1.thread_id == "t1" and m1.resource_id == "r1"

    async def test_r_own_thread_id_of_another_resource_conflicts_and_writes_nothing(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1", "r1", title="mine", metadata={"a": 1}))
        await store.save_messages([message("m1", "t1")])
        error = await unchanged_after(
            store, lambda: store.save_thread(thread("t1", "r2", title="theirs")), ConflictError
        )
        assert "r1" not in str(error), "the error must not name the other resource"
        # the owner's replace returns the thread as stored, last_message_at kept
        replaced = await store.save_thread(thread("t1", "r1", title="again"))
        assert replaced == await store.get_thread("t1") and replaced.last_message_at is not None

    async def test_r_own_an_update_batch_with_a_refused_move_writes_nothing(self, store: BaseStorage) -> None:
        """A batch of updates whose last one moves a message to another
        resource's thread (ConflictError) or to no thread (NotFoundError)
        writes none of them: the checks come before any write."""
        await store.save_thread(thread("t1", "r1"))
        await store.save_thread(thread("t2", "r1"))
        await store.save_thread(thread("t3", "r2"))
        await store.save_messages([message("m1", "t1"), message("m2", "t1")])
        for target, error in (("t3", ConflictError), ("ghost", NotFoundError)):
            batch = [{"id": "m1", "content": "changed", "thread_id": "t2"}, {"id": "m2", "thread_id": target}]
            await unchanged_after(store, partial(store.update_messages, batch), error)
        assert [(m.thread_id, m.content) for m in await store.get_messages(["m1", "m2"])] == [
            ("t1", "m1 text"),
            ("t1", "m2 text"),
        ]

    async def test_r_own_missing_thread_is_not_found(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await unchanged_after(
            store, lambda: store.save_messages([message("m1"), message("m2", "ghost")]), NotFoundError
        )
        await store.save_messages([message("m1")])
        await unchanged_after(store, lambda: store.update_messages([{"id": "m1", "thread_id": "ghost"}]), NotFoundError)
        await unchanged_after(store, lambda: store.update_thread("ghost", title="x"), NotFoundError)

    async def test_r_own_listing_another_resources_thread_is_an_ownership_error(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1", "r1"))
        await store.save_thread(thread("t2", "r2"))
        await store.save_messages([message("a", "t1", created_at=at(1)), message("b", "t2", created_at=at(2))])
        for named in ("t2", ["t1", "t2"]):
            with pytest.raises(OwnershipError, match="'t2' does not belong to resource 'r1'"):
                await store.list_messages(named, resource_id="r1")
        with pytest.raises(OwnershipError):
            await store.list_messages("t2", resource_id="r1", per_page=0, total=False)
        assert ids(await store.list_messages("t2", resource_id="r2")) == ["b"]
        assert ids(await store.list_messages("missing", resource_id="r1")) == []

    async def test_r_own_threads_of_one_resource_list_together_under_it(self, store: BaseStorage) -> None:
        for tid in ("t1", "t2", "t3"):
            await store.save_thread(thread(tid, "r1"))
        pairs = [("a", "t1"), ("b", "t2"), ("c", "t3")]
        await store.save_messages([message(mid, tid, created_at=at(n)) for n, (mid, tid) in enumerate(pairs, 1)])
        for named, want in ((["t1", "t2"], ["a", "b"]), (["t3", "t1", "t2"], ["a", "b", "c"])):
            page = await store.list_messages(named, resource_id="r1")
            assert (ids(page), page.total) == (want, len(want)), f"threads {named} of resource r1"

    async def test_r_own_listings_are_scoped_by_resource(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1", "r1"))
        await store.save_thread(thread("t2", "r2"))
        await store.save_messages([message("a", "t1", created_at=at(1)), message("b", "t2", created_at=at(2))])
        page = await store.list_messages(["t1", "missing"], resource_id="r1")
        assert ids(page) == ["a"] and page.total == 1
        assert ids(await store.list_messages(["t1", "t2"])) == ["a", "b"]
        assert ids(await store.list_messages_by_resource("r2")) == ["b"]
        assert ids(await store.list_threads(ThreadFilter(resource_id="r2"))) == ["t2"]

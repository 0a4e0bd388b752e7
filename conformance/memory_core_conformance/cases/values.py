"""Rule tests of values: R-ID, R-TIME, R-JSON, R-SIZE (stated in
:data:`memory_core_conformance.rules.RULES`)."""

from __future__ import annotations

import math
import os
import time
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from enum import IntEnum
from typing import Any

import pytest

from memory_core.memory import Memory
from memory_core.models import DateRange, Include, MessageFilter, MessagePageRequest, Resource, ThreadFilter
from memory_core.storage import BaseStorage
from memory_core.validation import INT64_MAX, INT64_MIN, MAX_MESSAGE_BYTES, message_size
from memory_core_conformance.cases._base import SuiteBase, ids, unchanged_after
from memory_core_conformance.compare import json_identical
from memory_core_conformance.harness import at, message, thread
from memory_core_conformance.strategies import BAD_IDS, EDGE_DATETIMES, ODD_IDS

__all__ = ["ValueRules"]

BAD_ID_NAMES = [
    "empty",
    "space",
    "blank",
    "nul",
    "newline",
    "escape",
    "del",
    "c1-nel",
    "257-chars",
    "lone-surrogate",
    "int",
    "none",
]

BAD_JSON: list[Any] = [
    math.nan,
    math.inf,
    -math.inf,
    INT64_MAX + 1,
    INT64_MIN - 1,
    (1, 2),
    {1, 2},
    b"x",
    Decimal("1.5"),
    datetime(2025, 1, 1, tzinfo=UTC),
    "lone \ud800",
    {"deep": [math.nan]},
    {1: "int key"},
]
BAD_JSON_NAMES = [
    "nan",
    "inf",
    "-inf",
    "int64-max+1",
    "int64-min-1",
    "tuple",
    "set",
    "bytes",
    "decimal",
    "datetime",
    "lone-surrogate",
    "nested-nan",
    "int-key",
]

EXACT_JSON: dict[str, Any] = {
    "int": 1,
    "float": 1.0,
    "bool": True,
    "zero": 0,
    "false": False,
    "negzero": -0.0,
    "null": None,
    "": "empty key",
    "a.b": {"$x": [1, 1.0, True, None, "1", [], {}]},
    "$where": "literal",
    "__proto__": {"constructor": "prototype"},
    "int64": [INT64_MAX, INT64_MIN, 2**53 + 1],
    "floats": [0.1, 1e-300, 5e-324, 1.7976931348623157e308, 1e16],
    "text": "héllo 👋🏽 世界 مرحبا a\u200db \x00 \\ \" '",
    "deep": {"a": {"b": {"c": {"d": {"e": [[[["bottom"]]]]}}}}},
}

OUT_OF_RANGE: list[Any] = [
    datetime(1899, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2200, 1, 1, tzinfo=UTC),
    datetime(1900, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1))),
    "2200-01-01T00:00:00Z",
    "yesterday",
    12345,
]
OUT_OF_RANGE_NAMES = ["1899", "2200", "1900-in-+01:00", "iso-2200", "not-iso", "int"]


class Count(IntEnum):
    """Ints a caller may pass where the API takes an int (an ``IntEnum`` of
    page sizes, window widths ...): they must answer exactly as plain ints."""

    ZERO = 0
    ONE = 1
    TWO = 2
    THREE = 3
    FIVE = 5


class ValueRules(SuiteBase):
    """R-ID, R-TIME, R-JSON, R-SIZE."""

    # ------------------------------------------------------------------ R-ID

    async def test_r_id_ids_compare_exactly(self, store: BaseStorage) -> None:
        for tid in ("team-a", "TEAM-A", "team a"):
            await store.save_thread(thread(tid, tid, title=f"title of {tid}"))
            await store.save_messages([message(f"m-{tid}", tid)])
        for tid in ("team-a", "TEAM-A", "team a"):
            got = await store.get_thread(tid)
            assert got is not None and got.title == f"title of {tid}" and got.resource_id == tid
            page = await store.list_threads(ThreadFilter(resource_id=tid), per_page=False)
            assert ids(page) == [tid]
            assert ids(await store.list_messages(tid, per_page=False)) == [f"m-{tid}"]
        assert await store.get_thread("Team-A") is None
        assert (await store.list_threads(ThreadFilter(resource_id="team-A"))).total == 0

    @pytest.mark.parametrize("bad", BAD_IDS, ids=BAD_ID_NAMES)
    async def test_r_id_rejects_bad_ids(self, store: BaseStorage, bad: Any) -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages([message("m1")])
        calls = [
            lambda: store.save_thread(thread(bad)),
            lambda: store.save_thread(thread("t2", bad)),
            lambda: store.save_messages([message("m2"), message(bad)]),
            lambda: store.save_messages([message("m2", bad)]),
            lambda: store.get_thread(bad),
            lambda: store.update_thread(bad, title="x"),
            lambda: store.delete_thread(bad),
            lambda: store.list_messages(bad),
            lambda: store.list_messages(["t1", bad]),
            lambda: store.list_messages_by_resource(bad),
            lambda: store.get_messages([bad]),
            lambda: store.delete_messages(["m1", bad]),
            lambda: store.update_messages([{"id": bad, "content": "x"}]),
            lambda: store.update_resource(bad, working_memory="x"),
            lambda: store.save_resource(Resource(bad)),
        ]
        if bad is not None:  # None means "absent" for these two arguments
            calls.append(lambda: store.save_messages([message("m2", resource_id=bad)]))
            calls.append(lambda: store.list_threads(ThreadFilter(resource_id=bad)))
        for call in calls:
            await unchanged_after(store, call)

    async def test_r_id_rejects_empty_thread_list_and_bare_str_lists(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await unchanged_after(store, lambda: store.list_messages([]))
        await unchanged_after(store, lambda: store.get_messages("m1"))  # type: ignore[arg-type]
        await unchanged_after(store, lambda: store.delete_messages("m1"))  # type: ignore[arg-type]

    async def test_r_id_accepts_odd_ids(self, store: BaseStorage) -> None:
        for index, odd in enumerate(ODD_IDS):
            await store.save_thread(thread(odd, odd))
            await store.save_messages([message(odd, odd, created_at=at(index))])
        for odd in ODD_IDS:
            got = await store.get_thread(odd, odd)
            assert got is not None and got.id == odd and got.resource_id == odd
            page = await store.list_messages(odd, odd, per_page=False)
            assert ids(page) == [odd] and page.items[0].resource_id == odd
            assert ids(await store.list_messages_by_resource(odd)) == [odd]
            assert ids(await store.list_threads(ThreadFilter(resource_id=odd))) == [odd]
        assert ids(await store.get_messages(list(ODD_IDS))) == list(ODD_IDS)
        assert (await store.list_threads(per_page=False)).total == len(ODD_IDS)

    async def test_r_id_message_ids_are_global(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_thread(thread("t2"))
        await store.save_messages([message("m1", "t1", "first")])
        await store.save_messages([message("m1", "t2", "second")])
        assert ids(await store.list_messages("t1")) == []
        page = await store.list_messages("t2")
        assert ids(page) == ["m1"] and page.items[0].content == "second"
        assert len(await store.get_messages(["m1", "m1"])) == 1
        assert (await store.list_messages_by_resource("r1")).total == 1

    # ------------------------------------------------------------------ R-TIME

    async def test_r_time_aware_input_converted_to_utc_with_microseconds(self, store: BaseStorage) -> None:
        plus2 = timezone(timedelta(hours=2))
        created = datetime(2025, 3, 9, 10, 30, 0, 123456, tzinfo=plus2)
        await store.save_thread(thread("t1", created_at=created, updated_at=created + timedelta(microseconds=1)))
        got = await store.get_thread("t1")
        assert got is not None and got.created_at is not None and got.updated_at is not None
        assert got.created_at == datetime(2025, 3, 9, 8, 30, 0, 123456, tzinfo=UTC)
        assert got.created_at.utcoffset() == timedelta(0) and got.created_at.microsecond == 123456
        assert got.updated_at == datetime(2025, 3, 9, 8, 30, 0, 123457, tzinfo=UTC)
        assert got.updated_at.utcoffset() == timedelta(0)

    async def test_r_time_naive_and_iso_input_read_as_utc(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1", created_at="2025-03-09T10:30:00.000007+02:00"))
        await store.save_messages(
            [
                message("naive", created_at=datetime(2025, 3, 9, 8, 30, 0, 1)),
                message("iso", created_at="2025-03-09T08:30:00.000002Z"),
                message("iso-naive", created_at="2025-03-09T08:30:00.000003"),
            ]
        )
        await store.save_resource(Resource("r1", created_at=datetime(2025, 3, 9, 8, 30), updated_at="2025-03-09"))  # type: ignore[arg-type]
        got = await store.get_thread("t1")
        assert got is not None and got.created_at == datetime(2025, 3, 9, 8, 30, 0, 7, tzinfo=UTC)
        page = await store.list_messages("t1")
        assert [m.created_at for m in page.items] == [
            datetime(2025, 3, 9, 8, 30, 0, us, tzinfo=UTC) for us in (1, 2, 3)
        ]
        assert all(m.created_at is not None and m.created_at.utcoffset() == timedelta(0) for m in page.items)
        resource = await store.get_resource("r1")
        assert resource is not None and resource.created_at == datetime(2025, 3, 9, 8, 30, tzinfo=UTC)
        assert resource.updated_at == datetime(2025, 3, 9, tzinfo=UTC)

    async def test_r_time_range_edges_round_trip(self, store: BaseStorage) -> None:
        await store.save_thread(thread("tm"))
        for index, when in enumerate(EDGE_DATETIMES):
            await store.save_thread(thread(f"t{index}", created_at=when, updated_at=when))
            await store.save_messages([message(f"m{index}", "tm", created_at=when)])
        for index, when in enumerate(EDGE_DATETIMES):
            got = await store.get_thread(f"t{index}")
            assert got is not None and got.created_at == when and got.updated_at == when
            assert got.created_at is not None and got.created_at.utcoffset() == timedelta(0)
            (found,) = await store.get_messages([f"m{index}"])
            assert found.created_at == when
        ordered = await store.list_messages_by_resource("r1", per_page=False)
        assert [m.created_at for m in ordered.items] == sorted(EDGE_DATETIMES)

    @pytest.mark.parametrize("bad", OUT_OF_RANGE, ids=OUT_OF_RANGE_NAMES)
    async def test_r_time_rejects_out_of_range(self, store: BaseStorage, bad: Any) -> None:
        await store.save_thread(thread("t1"))
        await unchanged_after(store, lambda: store.save_thread(thread("t2", created_at=bad)))
        await unchanged_after(store, lambda: store.save_thread(thread("t2", updated_at=bad)))
        await unchanged_after(store, lambda: store.save_messages([message("m1"), message("m2", created_at=bad)]))
        await unchanged_after(store, lambda: store.save_resource(Resource("r1", created_at=bad)))
        flt = MessageFilter(date_range=DateRange(start=bad))
        await unchanged_after(store, lambda: store.list_messages("t1", filter=flt))
        flt = MessageFilter(date_range=DateRange(end=bad))
        await unchanged_after(store, lambda: store.list_messages_by_resource("r1", filter=flt))

    async def test_r_time_results_do_not_depend_on_host_tz(self, store: BaseStorage) -> None:
        if not hasattr(time, "tzset"):
            pytest.skip("the host cannot change its time zone at run time (no time.tzset)")
        previous = os.environ.get("TZ")
        os.environ["TZ"] = "America/Los_Angeles"
        time.tzset()
        try:
            await store.save_thread(thread("t1", created_at=datetime(2025, 3, 9, 10, 30, 0, 123456)))
            await store.save_messages([message("m1", created_at=datetime(2025, 3, 9, 8, 30))])
            got = await store.get_thread("t1")
            assert got is not None and got.created_at == datetime(2025, 3, 9, 10, 30, 0, 123456, tzinfo=UTC)
            (m1,) = await store.get_messages(["m1"])
            assert m1.created_at == datetime(2025, 3, 9, 8, 30, tzinfo=UTC)
            start = datetime(2025, 3, 9, 8, 30)
            inclusive = await store.list_messages("t1", filter=MessageFilter(DateRange(start=start)))
            exclusive = await store.list_messages("t1", filter=MessageFilter(DateRange(start, start_exclusive=True)))
            assert ids(inclusive) == ["m1"] and ids(exclusive) == []
        finally:
            if previous is None:
                os.environ.pop("TZ", None)
            else:
                os.environ["TZ"] = previous
            time.tzset()

    # ------------------------------------------------------------------ R-JSON

    async def test_r_json_round_trips_types_exactly(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1", metadata=EXACT_JSON))
        await store.save_messages(
            [
                message(
                    "m1",
                    content={"format": 2, "parts": [{"type": "text", "text": "hi"}], **EXACT_JSON},
                    metadata=EXACT_JSON,
                ),
                message("m2", content="plain", metadata={"one": 1, "one_f": 1.0, "yes": True}),
            ]
        )
        await store.save_resource(Resource("r1", working_memory="# notes", metadata=EXACT_JSON))
        got = await store.get_thread("t1")
        assert got is not None and json_identical(got.metadata, EXACT_JSON)
        m1, m2 = await store.get_messages(["m1", "m2"])
        assert json_identical(m1.metadata, EXACT_JSON)
        assert json_identical(m1.content, {"format": 2, "parts": [{"type": "text", "text": "hi"}], **EXACT_JSON})
        assert json_identical(m2.metadata, {"one": 1, "one_f": 1.0, "yes": True})
        listed = await store.list_messages("t1")
        assert json_identical(listed.items[0].metadata, EXACT_JSON)
        resource = await store.get_resource("r1")
        assert resource is not None and json_identical(resource.metadata, EXACT_JSON)
        listed_threads = await store.list_threads(ThreadFilter(resource_id="r1"))
        assert json_identical(listed_threads.items[0].metadata, EXACT_JSON)

    @pytest.mark.parametrize("bad", BAD_JSON, ids=BAD_JSON_NAMES)
    async def test_r_json_rejects_non_json_and_names_the_message(self, store: BaseStorage, bad: Any) -> None:
        await store.save_thread(thread("t1", metadata={"keep": 1}))
        await store.save_messages([message("m0")])
        error = await unchanged_after(
            store, lambda: store.save_messages([message("m1"), message("m2", metadata={"k": {"v": [bad]}})])
        )
        assert "m2" in str(error)
        error = await unchanged_after(store, lambda: store.save_messages([message("m3", content={"x": bad})]))
        assert "m3" in str(error)
        await unchanged_after(store, lambda: store.save_thread(thread("t2", metadata={"k": bad})))
        await unchanged_after(store, lambda: store.update_thread("t1", metadata={"k": bad}))
        await unchanged_after(store, lambda: store.update_messages([{"id": "m0", "metadata": {"k": bad}}]))
        await unchanged_after(store, lambda: store.update_resource("r1", metadata={"k": bad}))
        await unchanged_after(store, lambda: store.save_resource(Resource("r1", metadata={"k": bad})))

    # ------------------------------------------------------------------ R-SIZE

    @staticmethod
    def _sized(message_id: str, target: int, thread_id: str = "t1") -> Any:
        """A message whose R-SIZE serialisation is exactly ``target`` bytes,
        made of 4-byte emoji (so bytes and characters differ)."""
        empty = message(message_id, thread_id, "", resource_id="r1")
        budget = target - message_size(empty)
        content = "👋" * (budget // 4) + "x" * (budget % 4)
        sized = message(message_id, thread_id, content, resource_id="r1")
        assert message_size(sized) == target
        return sized

    async def test_r_size_stores_and_lists_15_mib_messages_intact(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        big = self._sized("big", MAX_MESSAGE_BYTES)
        second = self._sized("second", MAX_MESSAGE_BYTES - 1)
        await store.save_messages([big])
        await store.save_messages([second])
        found = await store.get_messages(["big", "second"])
        assert [m.content == src.content for m, src in zip(found, (big, second), strict=True)] == [True, True]
        page = await store.list_messages("t1", per_page=False)
        assert page.total == 2 and ids(page) == ["big", "second"]
        assert page.items[0].content == big.content and page.items[1].content == second.content
        by_resource = await store.list_messages_by_resource("r1", per_page=1, order_by={"direction": "DESC"})
        assert ids(by_resource) == ["second"] and by_resource.items[0].content == second.content

    async def test_r_size_rejects_over_15_mib(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages([message("small", content={"text": "x"})])
        over = self._sized("over", MAX_MESSAGE_BYTES + 1)
        error = await unchanged_after(store, lambda: store.save_messages([message("ok"), over]))
        assert "over" in str(error)
        grow = "x" * MAX_MESSAGE_BYTES
        await unchanged_after(store, lambda: store.update_messages([{"id": "small", "content": {"pad": grow}}]))
        # each patch fits, the merged result of the second does not: the batch writes nothing
        await store.save_messages([message("half", content={"a": "x" * (MAX_MESSAGE_BYTES // 2)})])
        merged: list[dict[str, Any]] = [
            {"id": "small", "content": "changed"},
            {"id": "half", "content": {"b": "y" * (MAX_MESSAGE_BYTES // 2)}},
        ]
        error = await unchanged_after(store, lambda: store.update_messages(merged))
        assert "half" in str(error)

    async def test_r_size_rejects_threads_and_resources_over_15_mib(self, store: BaseStorage) -> None:
        """Threads and resources have the messages' 15 MiB limit, so no backend
        (a document store may cap a record near 16 MiB) accepts what another refuses."""
        await store.save_thread(thread("t1"))
        await store.update_resource("r1", working_memory="wm")
        big = {"pad": "x" * MAX_MESSAGE_BYTES}
        for call in (
            lambda: store.save_thread(thread("t2", metadata=big)),
            lambda: store.update_thread("t1", metadata=big),
            lambda: store.update_thread("t1", title="x" * (MAX_MESSAGE_BYTES + 1)),
            lambda: store.save_resource(Resource("r2", "x" * (MAX_MESSAGE_BYTES + 1))),
            lambda: store.update_resource("r1", working_memory="x" * (MAX_MESSAGE_BYTES + 1)),
            lambda: store.update_resource("r1", metadata=big),
        ):
            await unchanged_after(store, call, resource_ids=("r1", "r2"))

    async def test_r_page_and_r_include_int_subclasses_answer_like_plain_ints(self, store: BaseStorage) -> None:
        # An IntEnum passes the core's int checks; every backend must get the
        # checked plain int, never the enum object itself.
        await store.save_thread(thread("t1"))
        await store.save_messages([message(f"m{n:02}", created_at=at(n)) for n in range(10)])

        def request(page: int, per_page: int, before: int, after: int, total: bool) -> MessagePageRequest:
            window: list[Include | dict[str, Any]] = [
                Include("m05", with_previous=before, with_next=after),
                {"id": "m01", "withNextMessages": after},
            ]
            return MessagePageRequest(
                thread_ids=("t1",), resource_id="r1", include=window, page=page, per_page=per_page, total=total
            )

        for total in (True, False):
            plain = await store.page_messages(request(1, 3, 2, 1, total))
            enum = await store.page_messages(request(Count.ONE, Count.THREE, Count.TWO, Count.ONE, total))
            assert ids(enum) == ids(plain) and (enum.total, enum.has_more) == (plain.total, plain.has_more)
            assert (type(enum.page), type(enum.per_page)) == (int, int) and (enum.page, enum.per_page) == (1, 3)
        threads = await store.list_threads(page=Count.ZERO, per_page=Count.ONE)
        assert [t.id for t in threads.items] == ["t1"] and threads.total == 1
        memory = Memory(store, owns_stores=False)
        for budget in (None, 5):
            plain_recall = await memory.recall(
                "t1", "r1", per_page=3, include=[Include("m02", 1, 2)], max_tokens=budget
            )
            enum_recall = await memory.recall(
                "t1",
                "r1",
                per_page=Count.THREE,
                include=[Include("m02", Count.ONE, Count.TWO)],
                max_tokens=None if budget is None else Count.FIVE,
            )
            assert ids(enum_recall.messages) == ids(plain_recall.messages)
            if budget is None:
                assert ids(plain_recall.messages) == ["m01", "m02", "m03", "m04", "m07", "m08", "m09"]
            assert (enum_recall.total, enum_recall.tokens) == (plain_recall.total, plain_recall.tokens)
        copy = await memory.clone_thread("t1", "t2", message_limit=Count.TWO)
        copied = await store.list_messages(copy.thread.id, per_page=False)
        assert ids(copied) == list(copy.message_ids.values()) and len(copied.items) == 2

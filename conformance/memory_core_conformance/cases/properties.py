"""Property tests (Hypothesis): round-trips, and adapter vs reference on
generated data, filters, orders, pages, includes and cursors.

Each test runs its examples in one anyio portal (a private event loop), with
a fresh store (or a fresh adapter/reference pair) per example. Settings come
from the active profile at run time (``MEMORY_CORE_HYPOTHESIS_PROFILE``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import given
from hypothesis import strategies as st

from memory_core.clock import ManualClock
from memory_core.errors import ValidationError
from memory_core.models import Message, MessageFilter, Resource, Thread, ThreadFilter
from memory_core.storage import BaseStorage
from memory_core_conformance import strategies as mst
from memory_core_conformance.cases._base import SuiteBase, ids, paired_stores
from memory_core_conformance.compare import assert_same, capture, json_identical
from memory_core_conformance.harness import T0, StorageFactory, load_dataset, message, open_store, snapshot, thread
from memory_core_conformance.profiles import active_profile, shrink_time_limit

__all__ = ["PropertyCases", "run_examples"]


def run_examples(name: str, body: Callable[[Any], Awaitable[None]], strategy: st.SearchStrategy[Any]) -> None:
    """Run ``await body(example)`` for Hypothesis examples of ``strategy``.

    Args:
        name: distinguishes the test's derandomised seed from other tests'.
        body: the async check of one example.
        strategy: what to generate.
    """
    with start_blocking_portal("asyncio") as portal:

        def check(example: Any) -> None:
            portal.call(body, example)

        check._hypothesis_internal_add_digest = name.encode()  # type: ignore[attr-defined]
        profile = active_profile()
        with shrink_time_limit(profile.shrink_seconds):
            profile.property_settings()(given(strategy)(check))()


def _expected_utc(value: datetime | str) -> datetime:
    parsed = datetime.fromisoformat(value) if isinstance(value, str) else value
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


async def _compare(adapter: BaseStorage, reference: BaseStorage, operation: str, *args: Any, **kwargs: Any) -> Any:
    """Call ``operation(*args, **kwargs)`` on both stores; require the same answer."""
    actual = await capture(getattr(adapter, operation)(*args, **kwargs))
    expected = await capture(getattr(reference, operation)(*args, **kwargs))
    shown = ", ".join([*(repr(a) for a in args), *(f"{k}={v!r}" for k, v in kwargs.items())])
    assert_same(actual, expected, f"{operation}({shown})")
    return actual


_bounds_or_bad = st.one_of(mst.page_bounds(max_page=4, max_per_page=5), mst.bad_page_bounds())
_orders_or_bad = st.one_of(mst.orders(), mst.bad_orders())


class PropertyCases(SuiteBase):
    """Hypothesis properties, one per rule they exercise (``test_r_*_property``)."""

    # ------------------------------------------------------------------ round-trips

    @pytest.mark.conformance_property
    def test_r_json_round_trip_property(self, storage_factory: StorageFactory) -> None:
        strategy = st.tuples(
            mst.json_objects(),
            mst.contents(),
            mst.texts(long=True),
            st.none() | mst.texts(long=True),
            mst.json_objects(),
        )
        run_examples("r_json", partial(self._json_round_trip, storage_factory), strategy)

    @staticmethod
    async def _json_round_trip(factory: StorageFactory, example: tuple[Any, ...]) -> None:
        metadata, content, title, working_memory, other = example
        async with open_store(factory, ManualClock(T0)) as store:
            await store.save_thread(thread("t1", title=title, metadata=metadata))
            await store.save_messages(
                [message("m1", content=content, metadata=metadata), message("m2", content=title, metadata=other)]
            )
            await store.save_resource(Resource("r1", working_memory, metadata))
            got = await store.get_thread("t1")
            assert got is not None and got.title == title and json_identical(got.metadata, metadata)
            m1, m2 = await store.get_messages(["m1", "m2"])
            assert json_identical(m1.content, content) and json_identical(m1.metadata, metadata)
            assert m2.content == title and json_identical(m2.metadata, other)
            listed = await store.list_messages("t1")
            assert json_identical([m.content for m in listed.items], [content, title])
            resource = await store.get_resource("r1")
            assert resource is not None and resource.working_memory == working_memory
            assert json_identical(resource.metadata, metadata)
            updated = await store.update_thread("t1", metadata=other)
            assert json_identical(updated.metadata, {**metadata, **other})
            again = await store.get_thread("t1")
            assert again is not None and json_identical(again.metadata, {**metadata, **other})

    @pytest.mark.conformance_property
    def test_r_id_round_trip_property(self, storage_factory: StorageFactory) -> None:
        strategy = st.tuples(mst.ids(), mst.ids(), mst.ids(), mst.ids())
        run_examples("r_id", partial(self._id_round_trip, storage_factory), strategy)

    @staticmethod
    async def _id_round_trip(factory: StorageFactory, example: tuple[str, str, str, str]) -> None:
        thread_id, resource_id, message_id, other = example
        async with open_store(factory, ManualClock(T0)) as store:
            await store.save_thread(thread(thread_id, resource_id))
            await store.save_messages([message(message_id, thread_id)])
            await store.update_resource(resource_id, working_memory=message_id)
            got = await store.get_thread(thread_id, resource_id)
            assert got is not None and (got.id, got.resource_id) == (thread_id, resource_id)
            page = await store.list_messages_by_resource(resource_id)
            assert ids(page) == [message_id] and page.items[0].thread_id == thread_id
            assert ids(await store.list_threads(ThreadFilter(resource_id=resource_id))) == [thread_id]
            resource = await store.get_resource(resource_id)
            assert resource is not None and resource.working_memory == message_id
            if other != thread_id:
                assert await store.get_thread(other) is None
                assert (await store.list_messages(other)).total == 0
            if other != resource_id:
                assert await store.get_thread(thread_id, other) is None
                assert (await store.list_messages_by_resource(other)).total == 0
            if other != message_id:
                assert await store.get_messages([other]) == []

    @pytest.mark.conformance_property
    def test_r_time_round_trip_property(self, storage_factory: StorageFactory) -> None:
        strategy = st.tuples(mst.datetimes() | mst.iso_datetimes(), mst.datetimes())
        run_examples("r_time", partial(self._time_round_trip, storage_factory), strategy)

    @staticmethod
    async def _time_round_trip(factory: StorageFactory, example: tuple[Any, datetime]) -> None:
        created, updated = example
        want_created, want_updated = _expected_utc(created), _expected_utc(updated)
        async with open_store(factory, ManualClock(T0)) as store:
            await store.save_thread(thread("t1", created_at=created, updated_at=updated))
            got = await store.get_thread("t1")  # before saving messages bumps updated_at
            await store.save_messages([message("m1", created_at=created), message("m2", created_at=updated)])
            assert got is not None and got.created_at == want_created and got.updated_at == want_updated
            for value in (got.created_at, got.updated_at):
                assert value is not None and value.utcoffset() is not None and value.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
            m1, m2 = sorted(await store.get_messages(["m1", "m2"]), key=lambda m: m.id)
            assert (m1.created_at, m2.created_at) == (want_created, want_updated)
            assert m1.created_at is not None and m1.created_at.microsecond == want_created.microsecond
            order = await store.list_messages("t1", per_page=False)
            expected = sorted([("m1", want_created, 0), ("m2", want_updated, 1)], key=lambda x: (x[1], x[2]))
            assert ids(order) == [x[0] for x in expected]

    # ------------------------------------------------------------------ adapter vs reference

    @pytest.mark.conformance_property
    def test_r_meta_filters_match_reference_property(self, storage_factory: StorageFactory) -> None:
        strategy = st.tuples(mst.datasets(), st.lists(mst.meta_filters(), min_size=1, max_size=4))
        run_examples("r_meta", partial(self._meta_filters, storage_factory), strategy)

    @staticmethod
    async def _meta_filters(factory: StorageFactory, example: tuple[mst.Dataset, list[Any]]) -> None:
        dataset, filters = example
        async with paired_stores(factory) as (adapter, reference, leader):
            await load_dataset((adapter, reference), dataset, leader)
            every = dataset.thread_ids
            for condition in filters:
                for owner in (None, "r1", "r2"):
                    flt = ThreadFilter(owner, condition)
                    await _compare(adapter, reference, "list_threads", flt, per_page=False)
                mflt = MessageFilter(metadata=condition)
                await _compare(adapter, reference, "list_messages", every, filter=mflt, per_page=False)
                await _compare(adapter, reference, "list_messages_by_resource", "r1", filter=mflt, per_page=2)

    @pytest.mark.conformance_property
    def test_r_date_filters_match_reference_property(self, storage_factory: StorageFactory) -> None:
        strategy = st.tuples(mst.datasets(), st.lists(mst.date_ranges(mst.pooled_times()), min_size=1, max_size=4))
        run_examples("r_date", partial(self._date_filters, storage_factory), strategy)

    @staticmethod
    async def _date_filters(factory: StorageFactory, example: tuple[mst.Dataset, list[Any]]) -> None:
        dataset, ranges = example
        async with paired_stores(factory) as (adapter, reference, leader):
            await load_dataset((adapter, reference), dataset, leader)
            every = dataset.thread_ids
            for date_range in ranges:
                flt = MessageFilter(date_range=date_range)
                await _compare(adapter, reference, "list_messages", every, filter=flt, per_page=False)
                await _compare(
                    adapter,
                    reference,
                    "list_messages_by_resource",
                    "r2",
                    filter=flt,
                    per_page=3,
                    order_by={"direction": "DESC"},
                )

    @pytest.mark.conformance_property
    def test_r_page_and_r_sort_match_reference_property(self, storage_factory: StorageFactory) -> None:
        strategy = st.tuples(
            mst.datasets(),
            st.lists(
                st.tuples(_bounds_or_bad, _orders_or_bad, mst.message_filters(mst.pooled_times())),
                min_size=1,
                max_size=4,
            ),
            st.lists(
                st.tuples(
                    _bounds_or_bad,
                    st.one_of(mst.orders(("created_at", "updated_at")), mst.bad_orders()),
                    mst.thread_filters(st.sampled_from(["r1", "r2"])),
                ),
                min_size=1,
                max_size=3,
            ),
        )
        run_examples("r_page", partial(self._pages, storage_factory), strategy)

    @staticmethod
    async def _pages(factory: StorageFactory, example: tuple[mst.Dataset, list[Any], list[Any]]) -> None:
        dataset, message_queries, thread_queries = example
        async with paired_stores(factory) as (adapter, reference, leader):
            await load_dataset((adapter, reference), dataset, leader)
            every = dataset.thread_ids
            for (page, per_page), order, flt in message_queries:
                kwargs = {"filter": flt, "page": page, "per_page": per_page, "order_by": order}
                await _compare(adapter, reference, "list_messages", every, **kwargs)
                await _compare(adapter, reference, "list_messages_by_resource", "r1", **kwargs)
            for (page, per_page), order, flt in thread_queries:
                kwargs = {"filter": flt, "page": page, "per_page": per_page, "order_by": order}
                await _compare(adapter, reference, "list_threads", **kwargs)

    @pytest.mark.conformance_property
    def test_r_include_matches_reference_property(self, storage_factory: StorageFactory) -> None:
        message_ids = st.sampled_from([f"m{i}" for i in range(13)])
        strategy = st.tuples(
            mst.datasets(),
            st.lists(
                st.tuples(
                    mst.includes(message_ids),
                    st.none() | st.sampled_from(["r1", "r2"]),
                    mst.page_bounds(max_page=2, max_per_page=3),
                    mst.orders(),
                    mst.message_filters(mst.pooled_times()),
                ),
                min_size=1,
                max_size=3,
            ),
        )
        run_examples("r_include", partial(self._includes, storage_factory), strategy)

    @staticmethod
    async def _includes(factory: StorageFactory, example: tuple[mst.Dataset, list[Any]]) -> None:
        dataset, queries = example
        async with paired_stores(factory) as (adapter, reference, leader):
            await load_dataset((adapter, reference), dataset, leader)
            for include, owner, (page, per_page), order, flt in queries:
                for thread_id in dataset.thread_ids[:2]:
                    kwargs = {
                        "resource_id": owner,
                        "include": include,
                        "filter": flt,
                        "page": page,
                        "per_page": per_page,
                        "order_by": order,
                    }
                    await _compare(adapter, reference, "list_messages", thread_id, **kwargs)

    @pytest.mark.conformance_property
    def test_r_cursor_walk_property(self, storage_factory: StorageFactory) -> None:
        strategy = st.tuples(
            mst.datasets(),
            mst.message_filters(mst.pooled_times()),
            mst.orders(),
            st.integers(1, 4),
            mst.orders(("created_at", "updated_at")),
        )
        run_examples("r_cursor", partial(self._cursor_walk, storage_factory), strategy)

    @staticmethod
    async def _cursor_walk(factory: StorageFactory, example: tuple[Any, ...]) -> None:
        dataset, flt, order, per_page, thread_order = example
        async with paired_stores(factory) as (adapter, reference, leader):
            await load_dataset((adapter, reference), dataset, leader)
            every = dataset.thread_ids
            full = await _compare(
                adapter, reference, "list_messages", every, filter=flt, per_page=False, order_by=order
            )
            seen: list[Message] = []
            cursor = None
            for _ in range(100):
                page = await adapter.list_messages(every, filter=flt, per_page=per_page, order_by=order, cursor=cursor)
                assert page.total == full.total
                seen += page.items
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert ids(seen) == ids(full), "walking by cursor must list every message once, in order"
            threads_full = await _compare(adapter, reference, "list_threads", per_page=False, order_by=thread_order)
            walked: list[Thread] = []
            cursor = None
            for _ in range(100):
                tpage = await adapter.list_threads(per_page=per_page, order_by=thread_order, cursor=cursor)
                walked += tpage.items
                cursor = tpage.next_cursor
                if cursor is None:
                    break
            assert ids(walked) == ids(threads_full)

    # ------------------------------------------------------------------ bad input

    @pytest.mark.conformance_property
    def test_r_page_r_meta_r_sort_r_date_reject_bad_queries_property(self, storage_factory: StorageFactory) -> None:
        strategy = st.one_of(
            st.tuples(st.just("page"), mst.bad_page_bounds()),
            st.tuples(st.just("metadata"), mst.bad_meta_filters()),
            st.tuples(st.just("order"), mst.bad_orders()),
            st.tuples(st.just("date_range"), mst.bad_date_ranges()),
            st.tuples(st.just("json"), mst.bad_json_values()),
            st.tuples(st.just("id"), mst.bad_ids()),
            st.tuples(st.just("time"), mst.out_of_range_datetimes()),
        )
        run_examples("bad_queries", partial(self._bad_query, storage_factory), strategy)

    @staticmethod
    async def _bad_query(factory: StorageFactory, example: tuple[str, Any]) -> None:
        kind, bad = example
        async with open_store(factory, ManualClock(T0)) as store:
            await store.save_thread(thread("t1", metadata={"owner": "alice"}))
            await store.save_messages([message("m1", metadata={"tag": 1})])
            before = await snapshot(store, ["r1"])
            calls: list[Callable[[], Awaitable[Any]]]
            if kind == "page":
                calls = [
                    lambda: store.list_messages("t1", page=bad[0], per_page=bad[1]),
                    lambda: store.list_threads(page=bad[0], per_page=bad[1]),
                ]
            elif kind == "metadata":
                calls = [
                    lambda: store.list_messages("t1", filter={"metadata": bad}),
                    lambda: store.list_threads({"metadata": bad}),
                ]
            elif kind == "order":
                calls = [
                    lambda: store.list_messages_by_resource("r1", order_by=bad),
                    lambda: store.list_threads(order_by=bad),
                ]
            elif kind == "date_range":
                calls = [lambda: store.list_messages("t1", filter={"date_range": bad})]
            elif kind == "json":
                calls = [
                    lambda: store.save_messages([message("m2"), message("m3", metadata={"a": [bad]})]),
                    lambda: store.update_thread("t1", metadata={"k": bad}),
                    lambda: store.update_resource("r1", metadata={"": {"x": bad}}),
                ]
            elif kind == "id":
                calls = [
                    lambda: store.save_messages([message("m2"), message(bad)]),
                    lambda: store.list_messages(bad),
                    lambda: store.get_thread(bad),
                ]
            else:
                calls = [
                    lambda: store.save_thread(thread("t2", created_at=bad)),
                    lambda: store.save_messages([message("m2", created_at=bad)]),
                ]
            for call in calls:
                with pytest.raises(ValidationError):
                    await call()
            assert_same(
                await snapshot(store, ["r1"]),
                before,
                f"rejected {kind} calls",
                sides=("store after them", "store before"),
            )

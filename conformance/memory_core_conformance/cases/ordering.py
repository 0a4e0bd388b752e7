"""Rule tests of the model: R-ORDER, R-CLOCK, R-BUMP (stated in
:data:`memory_core_conformance.rules.RULES`)."""

from __future__ import annotations

import itertools
from datetime import timedelta

import anyio

from memory_core.clock import ManualClock
from memory_core.models import OrderBy, Resource, ThreadFilter
from memory_core.storage import BaseStorage
from memory_core_conformance.cases._base import SuiteBase, ids
from memory_core_conformance.harness import StorageFactory, at, message, open_store, thread

__all__ = ["OrderingRules"]

ASC = OrderBy("created_at", "ASC")
DESC = OrderBy("created_at", "DESC")
US = timedelta(microseconds=1)


class OrderingRules(SuiteBase):
    """R-ORDER, R-CLOCK, R-BUMP."""

    # ------------------------------------------------------------------ R-ORDER

    async def test_r_order_equal_times_keep_save_order_across_calls(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        for mid in ("zz", "aa", "mm", "bb"):
            await store.save_messages([message(mid, created_at=at(0))])
        assert ids(await store.list_messages("t1", per_page=False)) == ["zz", "aa", "mm", "bb"]
        assert ids(await store.list_messages("t1", per_page=False, order_by=DESC)) == ["bb", "mm", "aa", "zz"]
        assert ids(await store.get_messages(["bb", "zz", "mm", "aa"])) == ["zz", "aa", "mm", "bb"]

    async def test_r_order_time_first_then_sequence(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages([message("late", created_at=at(2)), message("early", created_at=at(1))])
        await store.save_messages(
            [message("tie-late", created_at=at(1)), message("first", created_at=at(0, us=999999))]
        )
        assert ids(await store.list_messages("t1", per_page=False)) == ["first", "early", "tie-late", "late"]

    async def test_r_order_upsert_keeps_created_at_and_position(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages([message(mid, created_at=at(0)) for mid in ("a", "b", "c")])
        edit = message("a", content="edited", role="assistant", created_at=at(99), metadata={"v": 2})
        await store.save_messages([edit])
        page = await store.list_messages("t1", per_page=False)
        assert ids(page) == ["a", "b", "c"]
        edited = page.items[0]
        assert edited.content == "edited" and edited.role == "assistant" and edited.metadata == {"v": 2}
        assert edited.created_at == at(0)

    async def test_r_order_same_id_twice_in_a_batch_last_wins_at_first_place(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        saved = await store.save_messages(
            [
                message("x", content="one", created_at=at(0)),
                message("y", created_at=at(0)),
                message("x", content="two", created_at=at(0)),
            ]
        )
        assert [(m.id, m.content) for m in saved] == [("x", "two"), ("y", "y text")]
        page = await store.list_messages("t1", per_page=False)
        assert [(m.id, m.content) for m in page.items] == [("x", "two"), ("y", "y text")]

    async def test_r_order_move_keeps_sequence(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_thread(thread("t2"))
        await store.save_messages([message("a", "t1", created_at=at(0)), message("b", "t1", created_at=at(0))])
        await store.save_messages([message("c", "t2", created_at=at(0))])
        await store.save_messages([message("b", "t2", created_at=at(0))])
        assert ids(await store.list_messages("t2", per_page=False)) == ["b", "c"]
        await store.update_messages([{"id": "a", "thread_id": "t2"}])
        assert ids(await store.list_messages("t2", per_page=False)) == ["a", "b", "c"]
        assert ids(await store.list_messages("t1", per_page=False)) == []

    async def test_r_order_delete_keeps_remaining_order(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages([message(m, created_at=at(0)) for m in ("e", "d", "c", "b", "a")])
        await store.delete_messages(["d", "b", "unknown"])
        assert ids(await store.list_messages("t1", per_page=False)) == ["e", "c", "a"]
        await store.save_messages([message("d", created_at=at(0))])
        assert ids(await store.list_messages("t1", per_page=False)) == ["e", "c", "a", "d"]

    async def test_r_order_threads_tie_by_id(self, store: BaseStorage) -> None:
        for tid in ("k", "d", "p", "b", "h"):
            await store.save_thread(thread(tid, created_at=at(0), updated_at=at(5)))
        await store.save_thread(thread("z-old", created_at=at(-1), updated_at=at(9)))
        flt = ThreadFilter(resource_id="r1")
        assert ids(await store.list_threads(flt, per_page=False)) == ["p", "k", "h", "d", "b", "z-old"]
        asc = await store.list_threads(flt, per_page=False, order_by=OrderBy("created_at", "ASC"))
        assert ids(asc) == ["z-old", "b", "d", "h", "k", "p"]
        by_update = await store.list_threads(flt, per_page=False, order_by=OrderBy("updated_at", "ASC"))
        assert ids(by_update) == ["b", "d", "h", "k", "p", "z-old"]

    async def test_r_order_holds_across_threads_and_resource_listings(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_thread(thread("t2"))
        await store.save_messages([message("x2", "t2", created_at=at(0))])
        await store.save_messages([message("x1", "t1", created_at=at(0))])
        await store.save_messages([message("y2", "t2", created_at=at(0)), message("w1", "t1", created_at=at(-1))])
        expected = ["w1", "x2", "x1", "y2"]
        assert ids(await store.list_messages(["t1", "t2"], per_page=False)) == expected
        assert ids(await store.list_messages_by_resource("r1", per_page=False)) == expected
        assert ids(await store.list_messages_by_resource("r1", per_page=False, order_by=DESC)) == expected[::-1]

    # ------------------------------------------------------------------ R-CLOCK

    async def test_r_clock_batch_without_times_keeps_order(self, storage_factory: StorageFactory) -> None:
        async with open_store(storage_factory) as store:  # the system clock
            await store.save_thread(thread("t1"))
            batch = [message(f"m{i:02}") for i in range(40)]
            saved = await store.save_messages(batch)
            times = [m.created_at for m in saved]
            assert all(a is not None and b is not None and b - a >= US for a, b in itertools.pairwise(times))
            page = await store.list_messages("t1", per_page=False)
            assert ids(page) == [m.id for m in batch]
            assert [m.created_at for m in page.items] == times

    async def test_r_clock_injected_clock_assigns_strictly_later_times(
        self, store: BaseStorage, clock: ManualClock
    ) -> None:
        await store.save_thread(thread("t1"))
        for mid in ("c", "a", "b"):
            await store.save_messages([message(mid)])
        page = await store.list_messages("t1", per_page=False)
        assert ids(page) == ["c", "a", "b"]
        assert [m.created_at for m in page.items] == [at(0), at(0, us=1), at(0, us=2)]
        clock.advance(1)
        (later,) = await store.save_messages([message("d")])
        assert later.created_at == at(1)
        assert (await store.get_messages(["d"]))[0].created_at == at(1)

    # ------------------------------------------------------------------ R-BUMP

    async def test_r_bump_update_thread_is_strictly_later(self, store: BaseStorage, clock: ManualClock) -> None:
        await store.save_thread(thread("t1", title="a", metadata={"x": 1, "y": 1}))
        first = await store.update_thread("t1", title="b")
        second = await store.update_thread("t1", metadata={"y": 2, "z": 3})
        assert first.updated_at == at(0, us=1) and second.updated_at == at(0, us=2)
        clock.advance(5)
        third = await store.update_thread("t1")
        assert third.updated_at == at(5)
        got = await store.get_thread("t1")
        assert got is not None and got.created_at == at(0) and got.updated_at == at(5)
        assert got.title == "b" and got.metadata == {"x": 1, "y": 2, "z": 3}

    async def test_r_bump_message_writes_bump_their_threads(self, store: BaseStorage, clock: ManualClock) -> None:
        await store.save_thread(thread("t1"))
        await store.save_thread(thread("t2"))
        clock.set(at(10))
        await store.save_messages([message("m1", "t1")])
        assert await self._updated(store) == {"t1": at(10), "t2": at(0)}
        clock.set(at(20))
        await store.update_messages([{"id": "m1", "content": "edit"}])
        assert await self._updated(store) == {"t1": at(20), "t2": at(0)}
        clock.set(at(30))
        await store.update_messages([{"id": "m1", "thread_id": "t2"}])
        assert await self._updated(store) == {"t1": at(30), "t2": at(30)}
        clock.set(at(40))
        await store.save_messages([message("m1", "t1")])
        assert await self._updated(store) == {"t1": at(40), "t2": at(40)}
        await store.delete_messages(["m1"])
        assert await self._updated(store) == {"t1": at(40, us=1), "t2": at(40)}
        await store.delete_messages(["m1", "never"])
        assert await self._updated(store) == {"t1": at(40, us=1), "t2": at(40)}
        created = {t.id: t.created_at for t in (await store.list_threads(per_page=False)).items}
        assert created == {"t1": at(0), "t2": at(0)}

    @staticmethod
    async def _updated(store: BaseStorage) -> dict[str, object]:
        return {t.id: t.updated_at for t in (await store.list_threads(per_page=False)).items}

    async def test_r_bump_update_resource_creates_then_bumps(self, store: BaseStorage, clock: ManualClock) -> None:
        created = await store.update_resource("r1", working_memory="")
        assert created.created_at == at(0) and created.updated_at == at(0) and created.working_memory == ""
        again = await store.update_resource("r1", metadata={"a": 1})
        assert again.updated_at == at(0, us=1) and again.working_memory == "" and again.metadata == {"a": 1}
        clock.advance(2)
        cleared = await store.update_resource("r1", working_memory=None, metadata={"b": 2})
        assert cleared.updated_at == at(2) and cleared.created_at == at(0)
        assert await store.get_resource("r1") == Resource("r1", None, {"a": 1, "b": 2}, at(0), at(2))

    async def test_r_bump_concurrent_updates_never_revert_each_other(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1", metadata={"base": True}))
        await store.update_resource("r1", metadata={"base": True})

        async def update_thread(i: int) -> None:
            await store.update_thread("t1", metadata={f"k{i}": i})

        async def save(i: int) -> None:
            await store.save_messages([message(f"m{i}", created_at=at(i))])

        async def update_resource(i: int) -> None:
            await store.update_resource("r1", metadata={f"k{i}": i})

        async with anyio.create_task_group() as group:
            for i in range(12):
                group.start_soon(update_thread, i)
                group.start_soon(save, i)
                group.start_soon(update_resource, i)
        got = await store.get_thread("t1")
        assert got is not None
        assert got.metadata == {"base": True, **{f"k{i}": i for i in range(12)}}
        assert (await store.list_messages("t1", per_page=False)).total == 12
        resource = await store.get_resource("r1")
        assert resource is not None and resource.metadata == {"base": True, **{f"k{i}": i for i in range(12)}}

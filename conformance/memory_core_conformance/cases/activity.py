"""Thread activity, erasure and working memory: ``last_message_at``
(R-LAST), the default direction of an order field (R-SORT),
``delete_resource`` (R-ERASE) and working-memory compare-and-set (R-WM)."""

from __future__ import annotations

import asyncio
from functools import partial

import pytest

from memory_core.clock import ManualClock
from memory_core.errors import ConflictError, NotFoundError, OwnershipError
from memory_core.memory import Memory, MemoryConfig, WorkingMemory
from memory_core.models import OrderBy, Resource, ResourceErasure, ThreadFilter
from memory_core.storage import BaseStorage
from memory_core.validation import MAX_MESSAGE_BYTES
from memory_core_conformance.cases._base import SuiteBase, ids, unchanged_after
from memory_core_conformance.harness import at, message, thread

__all__ = ["ActivityRules"]


class ActivityRules(SuiteBase):
    """R-LAST, R-SORT default directions, R-ERASE, R-WM."""

    async def test_r_last_follows_saves_moves_and_deletes(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_thread(thread("t2"))
        assert (await store.get_thread("t1")).last_message_at is None  # type: ignore[union-attr]
        await store.save_messages([message("a", created_at=at(5)), message("b", created_at=at(9))])
        assert (await store.get_thread("t1")).last_message_at == at(9)  # type: ignore[union-attr]
        await store.update_messages([{"id": "b", "thread_id": "t2"}])  # a move takes its time along
        t1, t2 = await store.get_thread("t1"), await store.get_thread("t2")
        assert t1 is not None and t2 is not None
        assert (t1.last_message_at, t2.last_message_at) == (at(5), at(9))
        await store.save_messages([message("b", "t1", content="back")])  # an upsert-move back
        assert (await store.get_thread("t1")).last_message_at == at(9)  # type: ignore[union-attr]
        assert (await store.get_thread("t2")).last_message_at is None  # type: ignore[union-attr]
        await store.delete_messages(["b"])  # the newest goes: the next newest counts
        assert (await store.get_thread("t1")).last_message_at == at(5)  # type: ignore[union-attr]
        await store.save_thread(thread("t1", title="replaced"))  # a replaced thread keeps its messages
        assert (await store.get_thread("t1")).last_message_at == at(5)  # type: ignore[union-attr]
        await store.delete_messages(["a"])
        assert (await store.get_thread("t1")).last_message_at is None  # type: ignore[union-attr]

    async def test_r_last_and_r_bump_one_delete_across_threads_and_resources(
        self, store: BaseStorage, clock: ManualClock
    ) -> None:
        for thread_id, resource_id in (("t1", "r1"), ("t2", "r1"), ("t3", "r2"), ("idle", "r1")):
            await store.save_thread(thread(thread_id, resource_id))
        clock.set(at(10))
        await store.save_messages([message("a1", "t1", created_at=at(1)), message("a2", "t1", created_at=at(2))])
        await store.save_messages([message("b1", "t2", created_at=at(3))])
        await store.save_messages([message("c1", "t3", created_at=at(5)), message("c2", "t3", created_at=at(4))])
        clock.set(at(50))
        assert await store.delete_messages(["a2", "b1", "c1", "ghost", "a2"]) == 3
        threads = {t.id: (t.updated_at, t.last_message_at) for t in (await store.list_threads(per_page=False)).items}
        # each thread a message left is bumped, its last_message_at the newest message left
        assert threads == {"t1": (at(50), at(1)), "t2": (at(50), None), "t3": (at(50), at(4)), "idle": (at(0), None)}

    async def test_r_last_orders_threads_with_no_message_last(self, store: BaseStorage) -> None:
        for thread_id, created in (("old", 1), ("mid", 2), ("new", 3), ("empty", 4)):
            await store.save_thread(thread(thread_id, created_at=at(created)))
        await store.save_messages(
            [
                message("x", "old", created_at=at(30)),
                message("y", "new", created_at=at(10)),
                message("z", "mid", created_at=at(20)),
            ]
        )
        desc = await store.list_threads(order_by=OrderBy("last_message_at", "DESC"))
        asc = await store.list_threads(order_by={"field": "lastMessageAt", "direction": "asc"})
        assert ids(desc) == ["old", "mid", "new", "empty"]
        assert ids(asc) == ["new", "mid", "old", "empty"]
        # keyset paging walks the same order, the thread without messages included
        first = await store.list_threads(per_page=2, order_by=OrderBy("last_message_at", "ASC"))
        rest = await store.list_threads(
            per_page=2, order_by=OrderBy("last_message_at", "ASC"), cursor=first.next_cursor
        )
        assert ids(first) + ids(rest) == ids(asc) and rest.next_cursor is None
        scoped = await store.list_threads(ThreadFilter(resource_id="r1"), order_by=OrderBy("last_message_at"))
        assert ids(scoped) == ids(desc)

    async def test_r_sort_field_without_direction_takes_the_kind_default(self, store: BaseStorage) -> None:
        await store.save_thread(thread("a", created_at=at(1), updated_at=at(5)))
        await store.save_thread(thread("b", created_at=at(2), updated_at=at(2)))
        await store.save_messages([message("m1", "a", created_at=at(3)), message("m2", "a", created_at=at(4))])
        # threads default to DESC (the Mastra seed's listThreads), messages to ASC
        assert ids(await store.list_threads(order_by={"field": "updated_at"})) == ["a", "b"]
        assert ids(await store.list_threads(order_by=OrderBy("created_at"))) == ["b", "a"]
        assert ids(await store.list_messages("a", order_by={"field": "created_at"})) == ["m1", "m2"]

    async def test_r_erase_removes_threads_messages_and_record(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_thread(thread("t2"))
        await store.save_thread(thread("k1", "r2"))
        await store.save_messages([message("m1"), message("m2", "t2"), message("k", "k1")])
        await store.update_resource("r1", working_memory="# likes tea")
        await store.update_resource("r2", working_memory="# other")
        erased = await store.delete_resource("r1")
        assert erased == ResourceErasure("r1", ["t1", "t2"], 2, True)
        assert await store.get_resource("r1") is None
        assert await store.get_thread("t1") is None and await store.get_messages(["m1", "m2"]) == []
        assert (await store.list_messages_by_resource("r1")).total == 0
        # the other tenant is untouched
        assert ids(await store.list_threads(per_page=False)) == ["k1"]
        assert ids(await store.get_messages(["k"])) == ["k"]
        assert (await store.get_resource("r2")) is not None
        # again, or an unknown id: nothing to do, no error
        assert await store.delete_resource("r1") == ResourceErasure("r1")
        assert await store.delete_resource("never") == ResourceErasure("never")

    async def test_r_erase_leaves_no_id_reserved(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages([message("m1")])
        await store.delete_resource("r1")
        # every id is free again, for any resource
        await store.save_thread(thread("t1", "r2"))
        saved = await store.save_messages([message("m1")])
        assert saved[0].resource_id == "r2"
        await store.save_resource(Resource("r1", "fresh"))
        assert (await store.get_resource("r1")).working_memory == "fresh"  # type: ignore[union-attr]

    async def test_r_erase_refuses_a_bad_id_before_io(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        for bad in ("", " ", 5, None, "x\x00"):
            await unchanged_after(store, lambda bad=bad: store.delete_resource(bad))  # type: ignore[misc]

    async def test_r_wm_compare_and_set_writes_only_over_the_expected_value(self, store: BaseStorage) -> None:
        assert await store.swap_working_memory("r1", "old", "new") is False  # nothing stored yet
        assert await store.get_resource("r1") is None
        assert await store.swap_working_memory("r1", None, "first") is True  # creates the resource
        assert await store.swap_working_memory("r1", None, "again") is False
        assert await store.swap_working_memory("r1", "first", "second") is True
        assert (await store.get_resource("r1")).working_memory == "second"  # type: ignore[union-attr]
        await store.save_thread(thread("t1", metadata={"topic": "x"}))
        assert await store.swap_thread_working_memory("t1", "x", "y") is False
        assert await store.swap_thread_working_memory("t1", None, "# notes") is True
        assert await store.swap_thread_working_memory("t1", None, "lost") is False
        assert await store.swap_thread_working_memory("t1", "# notes", "# more") is True
        got = await store.get_thread("t1")
        assert got is not None and got.metadata == {"topic": "x", "working_memory": "# more"}
        await store.update_thread("t1", metadata={"working_memory": 5})  # not a str: counts as nothing stored
        assert await store.swap_thread_working_memory("t1", "5", "no") is False
        assert await store.swap_thread_working_memory("t1", None, "text") is True
        with pytest.raises(NotFoundError):
            await store.swap_thread_working_memory("missing", None, "x")
        await unchanged_after(store, lambda: store.swap_working_memory("r1", None, 5))  # type: ignore[arg-type]

    async def test_r_wm_thread_swap_writes_its_metadata_only_with_the_expected_value(self, store: BaseStorage) -> None:
        """``swap_thread_working_memory(..., metadata=...)`` merges the
        metadata in the same compare-and-set (the ADK append's final write:
        a late writer holding an old revision writes nothing)."""
        await store.save_thread(thread("t1", metadata={"topic": "x", "state": {"a": 1}}))
        assert await store.swap_thread_working_memory("t1", None, "rev1", metadata={"state": {"a": 2}}) is True
        assert await store.swap_thread_working_memory("t1", None, "late", metadata={"state": {"a": 0}}) is False
        got = await store.get_thread("t1")
        assert got is not None and got.metadata == {"topic": "x", "state": {"a": 2}, "working_memory": "rev1"}
        refused = {"working_memory": "x"}
        await unchanged_after(store, lambda: store.swap_thread_working_memory("t1", "rev1", "y", metadata=refused))
        await unchanged_after(
            store, lambda: store.swap_thread_working_memory("t1", "rev1", "y", metadata={"n": float("nan")})
        )

    async def test_r_wm_updates_check_the_thread_owner_and_version_before_writing(self, store: BaseStorage) -> None:
        """Memory.update_working_memory in either scope: a missing thread is a
        NotFoundError, another resource's an OwnershipError, a stale
        if_version a ConflictError, each writing nothing, and in that order
        before an oversized value's ValidationError (R-SIZE)."""
        await store.save_thread(thread("t1", "r1"))
        await store.save_thread(thread("t2", "r2"))
        for scope in ("resource", "thread"):
            config = MemoryConfig(working_memory=WorkingMemory(enabled=True, scope=scope))
            await self._memory_refusals(store, Memory(store, config=config, owns_stores=False))

    @staticmethod
    async def _memory_refusals(store: BaseStorage, memory: Memory) -> None:
        huge = "x" * (MAX_MESSAGE_BYTES + 1)
        assert await memory.update_working_memory("t1", "kept", "r1") == "kept"
        version = (await memory.read_working_memory("t1", "r1")).version
        for value in ("new", huge):
            update = memory.update_working_memory
            await unchanged_after(store, partial(update, "ghost", value), NotFoundError)
            await unchanged_after(store, partial(update, "t1", value, "r2"), OwnershipError)
            for stale in (None, "0" * 32):
                await unchanged_after(store, partial(update, "t1", value, "r1", if_version=stale), ConflictError)
        await unchanged_after(store, lambda: memory.update_working_memory("t1", huge, "r1", if_version=version))
        await unchanged_after(store, lambda: memory.update_working_memory("t1", huge))
        assert await memory.update_working_memory("t1", "again", if_version=version) == "again"
        assert (await memory.read_working_memory("t1")).text == "again"
        assert (await memory.read_working_memory("t2")).stored is False

    async def test_r_wm_concurrent_appends_lose_no_update(self, store: BaseStorage) -> None:
        config = MemoryConfig(working_memory=WorkingMemory(enabled=True))
        thread_config = MemoryConfig(working_memory=WorkingMemory(enabled=True, scope="thread"))
        memory = Memory(store, config=config, owns_stores=False)
        await store.save_thread(thread("t1"))
        lines = [f"fact {n}" for n in range(8)]
        await asyncio.gather(*(memory.append_working_memory(None, line, resource_id="r1") for line in lines))
        await asyncio.gather(*(memory.append_working_memory("t1", line, thread_config=thread_config) for line in lines))
        for state in (
            await memory.read_working_memory(resource_id="r1"),
            await memory.read_working_memory("t1", thread_config=thread_config),
        ):
            assert state.stored and state.text is not None
            assert sorted(state.text.split("\n")) == sorted(lines)
        # two writers from one version: exactly one wins
        version = (await memory.read_working_memory(resource_id="r1")).version
        results = await asyncio.gather(
            *(memory.update_working_memory(None, f"v{n}", "r1", if_version=version) for n in range(2)),
            return_exceptions=True,
        )
        assert sorted(type(r).__name__ for r in results) == ["ConflictError", "str"]

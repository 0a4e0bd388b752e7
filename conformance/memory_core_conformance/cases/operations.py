"""Storage operations without a rule id of their own (``test_ops_*``) and the
store lifecycle (``test_lifecycle_*``)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from memory_core.clock import TIME_MAX, ManualClock
from memory_core.errors import AdapterClosedError, ValidationError
from memory_core.models import Resource, Thread, ThreadFilter
from memory_core.query import NOT_GIVEN
from memory_core.storage import BaseStorage
from memory_core_conformance.cases._base import SuiteBase, ids, unchanged_after
from memory_core_conformance.harness import StorageFactory, at, message, open_store, thread

__all__ = ["BIG_BATCH", "ChunkCases", "OperationCases", "chunk_sizes"]


class OperationCases(SuiteBase):
    """Threads, messages and resources operations (OPS); lifecycle (LIFECYCLE)."""

    async def test_ops_save_thread_replaces_the_whole_record(self, store: BaseStorage) -> None:
        first = await store.save_thread(thread("t1", title="one", metadata={"a": 1, "b": 2}))
        assert first.created_at == at(0) and first.updated_at == at(0)
        await store.save_messages([message("m1")])
        await store.save_thread(thread("t1", title="two", metadata={"c": 3}, created_at=at(-5), updated_at=at(-4)))
        got = await store.get_thread("t1")
        # last_message_at is the store's: a replaced thread keeps its messages
        assert got == Thread("t1", "r1", "two", {"c": 3}, at(-5), at(-4), at(0))
        assert ids(await store.list_messages("t1")) == ["m1"]

    async def test_ops_update_thread_is_partial(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1", title="keep", metadata={"a": {"x": 1}, "b": 2}))
        updated = await store.update_thread("t1", metadata={"a": {"y": 2}, "c": None})
        assert updated.title == "keep" and updated.metadata == {"a": {"y": 2}, "b": 2, "c": None}
        titled = await store.update_thread("t1", title="")
        assert titled.title == "" and titled.metadata == updated.metadata
        assert await store.get_thread("t1") == titled
        await unchanged_after(store, lambda: store.update_thread("t1", title=5))  # type: ignore[arg-type]
        await unchanged_after(store, lambda: store.update_thread("t1", metadata=[("a", 1)]))  # type: ignore[arg-type]

    async def test_ops_delete_thread_takes_its_messages_and_leaves_no_ghosts(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_thread(thread("t2"))
        await store.save_messages([message("m1", "t1"), message("m2", "t1"), message("k1", "t2")])
        await store.delete_thread("t1")
        await store.delete_thread("t1")
        await store.delete_thread("never-existed")
        assert await store.get_thread("t1") is None
        assert await store.get_messages(["m1", "m2"]) == []
        await store.save_thread(thread("t1"))
        await store.save_messages([message("g1", "t1")])
        page = await store.list_messages("t1", per_page=False)
        assert ids(page) == ["g1"] and page.total == 1
        assert ids(await store.list_messages_by_resource("r1", per_page=False)) == ["k1", "g1"]
        await store.save_messages([message("m1", "t1")])
        (again,) = await store.get_messages(["m1"])
        assert again.thread_id == "t1"

    async def test_ops_update_messages_merges_one_level(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages(
            [
                message(
                    "d",
                    content={"format": 2, "parts": [{"type": "text", "text": "a"}], "meta": {"x": 1}},
                    metadata={"a": {"x": 1}, "b": 1},
                    created_at=at(1),
                ),
                message("s", content="plain", created_at=at(2)),
            ]
        )
        updated = await store.update_messages(
            [
                {"id": "s", "content": {"format": 2, "parts": []}, "role": "assistant", "type": "v3"},
                {"id": "d", "content": {"meta": {"y": 2}}, "metadata": {"a": {"y": 2}, "c": 3}},
                {"id": "unknown", "content": "skipped"},
            ]
        )
        assert ids(updated) == ["d", "s"]
        d, s = await store.get_messages(["d", "s"])
        assert d.content == {"format": 2, "parts": [{"type": "text", "text": "a"}], "meta": {"y": 2}}
        assert d.metadata == {"a": {"y": 2}, "b": 1, "c": 3} and d.created_at == at(1) and d.role == "user"
        assert s.content == {"format": 2, "parts": []} and s.role == "assistant" and s.type == "v3"
        assert [d, s] == updated
        text = await store.update_messages([{"id": "d", "content": "now text"}])
        assert text[0].content == "now text"
        assert await store.update_messages([]) == []
        assert await store.update_messages([{"id": "ghost", "role": "tool"}]) == []

    async def test_ops_update_messages_rejects_bad_updates(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages([message("m1")])
        bads: list[Any] = [
            [{"id": "m1", "created_at": at(5)}],
            [{"id": "m1", "createdAt": at(5)}],
            [{"id": "m1", "role": "robot"}],
            [{"id": "m1", "content": 5}],
            [{"id": "m1", "content": 0}],
            [{"id": "m1", "content": 0.0}],
            [{"id": "m1", "content": False}],
            [{"id": "m1", "content": []}],
            [{"id": "m1", "role": ["user"]}],
            [{"id": "m1", "thread_id": "t1", "threadId": "t1"}],
            [{"id": "m1", "type": 2}],
            [{"id": "m1", "sequence": 9}],
            [{"id": "m1", "content": "ok"}, {"id": "", "content": "x"}],
            [{"content": "no id"}],
            ["m1"],
            {"id": "m1"},
        ]
        for bad in bads:
            await unchanged_after(store, partial(store.update_messages, bad), ValidationError)

    async def test_ops_delete_messages_ignores_unknown_and_leaves_the_thread(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages([message("m1"), message("m2")])
        assert await store.delete_messages(["m1", "ghost", "m1"]) == 1  # distinct ids removed
        assert await store.delete_messages([]) == 0
        assert await store.delete_messages(["m1"]) == 0  # already gone
        assert ids(await store.list_messages("t1")) == ["m2"]
        assert await store.delete_messages(["m2"]) == 1
        page = await store.list_messages("t1")
        assert page.items == [] and page.total == 0 and not page.has_more
        assert await store.get_thread("t1") is not None

    async def test_ops_save_messages_empty_batch_is_a_no_op(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        assert await store.save_messages([]) == []
        got = await store.get_thread("t1")
        assert got is not None and got.updated_at == at(0)
        await unchanged_after(store, lambda: store.save_messages("m1"))  # type: ignore[arg-type]
        await unchanged_after(store, lambda: store.save_messages([{"id": "m1", "thread_id": "t1"}]))
        await unchanged_after(store, lambda: store.save_messages([message("m1", role="robot")]))

    async def test_ops_save_messages_accepts_mastra_mappings(self, store: BaseStorage) -> None:
        await store.save_thread({"id": "t1", "resourceId": "r1", "title": "x", "createdAt": "2025-01-01T00:00:00Z"})
        await store.save_messages(
            [{"id": "m1", "threadId": "t1", "role": "user", "content": "hi", "createdAt": "2025-01-01T00:00:01Z"}]
        )
        (m1,) = await store.get_messages(["m1"])
        assert m1.resource_id == "r1" and m1.created_at == at(1) and m1.type == "v2" and m1.metadata == {}

    async def test_ops_save_messages_returns_records_as_stored(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_thread(thread("t2"))
        batches = [[message("a"), message("b", created_at=at(5))], [message("c"), message("a", "t2", "edited")]]
        returned = []
        for batch in batches:
            returned.append(await store.save_messages(batch))
            stored = {m.id: m for m in await store.get_messages([m.id for m in batch])}
            assert returned[-1] == [stored[m.id] for m in batch], "save_messages must return what get_messages reads"
        first, again = returned
        assert again[1].sequence == first[0].sequence and again[1].created_at == first[0].created_at

    async def test_ops_bump_saturates_at_the_end_of_time(self, storage_factory: StorageFactory) -> None:
        """R-BUMP at the top of R-TIME: updated_at stays 2199-12-31T23:59:59.999999Z
        (clock.bump_us) instead of leaving the range, for every bump path."""
        async with open_store(storage_factory, ManualClock(TIME_MAX)) as store:
            await store.save_thread(thread("t1", created_at=TIME_MAX, updated_at=TIME_MAX))
            await store.save_messages([message("m1", created_at=TIME_MAX)])  # bump by save
            await store.update_messages([{"id": "m1", "content": "x"}])  # bump by update
            await store.update_thread("t1", title="t")  # bump by patch
            await store.delete_messages(["m1"])  # bump by delete
            got = await store.get_thread("t1")
            assert got is not None and got.updated_at == TIME_MAX
            await store.update_resource("r1", working_memory="a")
            resource = await store.update_resource("r1", working_memory="b")
            assert resource.updated_at == TIME_MAX
            stored = await store.get_resource("r1")
            assert stored is not None and stored.updated_at == TIME_MAX

    async def test_ops_get_messages_in_order_without_duplicates(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_thread(thread("t2"))
        await store.save_messages(
            [
                message("b", "t2", created_at=at(2)),
                message("a", "t1", created_at=at(2)),
                message("c", "t1", created_at=at(1)),
            ]
        )
        assert ids(await store.get_messages(["a", "ghost", "b", "c", "a"])) == ["c", "b", "a"]
        assert await store.get_messages([]) == []

    async def test_ops_resources_save_get_update(self, store: BaseStorage) -> None:
        assert await store.get_resource("r1") is None
        saved = await store.save_resource(Resource("r1", "# wm", {"a": 1}))
        assert saved == Resource("r1", "# wm", {"a": 1}, at(0), at(0))
        assert await store.get_resource("r1") == saved
        await store.update_resource("r1", metadata={"b": 2})
        kept = await store.get_resource("r1")
        assert kept is not None and kept.working_memory == "# wm" and kept.metadata == {"a": 1, "b": 2}
        emptied = await store.update_resource("r1", working_memory="", metadata=None)
        assert emptied.working_memory == "" and emptied.metadata == {"a": 1, "b": 2}
        unchanged = await store.update_resource("r1", working_memory=NOT_GIVEN)
        assert unchanged.working_memory == ""
        await store.save_resource(Resource("r1", None, {}, at(-1), at(-1)))
        assert await store.get_resource("r1") == Resource("r1", None, {}, at(-1), at(-1))
        await unchanged_after(store, lambda: store.update_resource("r1", working_memory=5))
        await unchanged_after(store, lambda: store.save_resource(Resource("r2", working_memory=b"x")))  # type: ignore[arg-type]

    async def test_ops_list_threads_filters_by_resource(self, store: BaseStorage) -> None:
        for i in range(3):
            await store.save_thread(thread(f"a{i}", "r1", created_at=at(i)))
            await store.save_thread(thread(f"b{i}", "r2", created_at=at(i)))
        page = await store.list_threads(ThreadFilter(resource_id="r2"))
        assert ids(page) == ["b2", "b1", "b0"] and page.total == 3 and page.per_page == 100
        everything = await store.list_threads()
        assert ids(everything) == ["b2", "a2", "b1", "a1", "b0", "a0"]

    # ------------------------------------------------------------------ lifecycle

    async def test_lifecycle_open_and_close_are_idempotent(self, storage_factory: StorageFactory) -> None:
        store = storage_factory(None)
        async with store as entered:
            assert entered is store
            await store.open()
            await store.save_thread(thread("t1"))
            assert await store.get_thread("t1") is not None
            await store.destroy()
        await store.close()
        with pytest.raises(AdapterClosedError):
            await store.get_thread("t1")
        with pytest.raises(AdapterClosedError):
            await store.open()

    async def test_lifecycle_calls_after_destroy_raise_closed(self, storage_factory: StorageFactory) -> None:
        async with open_store(storage_factory) as store:
            await store.save_thread(thread("t1"))
            await store.destroy()
            for call in (
                lambda: store.list_threads(),
                lambda: store.save_messages([message("m1")]),
                lambda: store.get_resource("r1"),
                lambda: store.destroy(),
            ):
                with pytest.raises(AdapterClosedError):
                    await call()

    async def test_lifecycle_opens_lazily_on_first_use(self, storage_factory: StorageFactory) -> None:
        store = storage_factory(None)
        try:
            assert await store.get_thread("t1") is None
            await store.save_thread(thread("t1"))
            assert (await store.list_threads()).total == 1
        finally:
            await store.destroy()


BIG_BATCH = 5_001
"""A batch above 5,000 ids, run whatever the adapter declares."""
SMALL_LIMIT = 1_000
"""Chunk limits up to this run at one below, at and one above; larger ones
(rare, slow to fill) only one above."""


def chunk_sizes(store: BaseStorage) -> list[int]:
    """Batch sizes crossing every chunk limit the store declares
    (``chunk_limits``: one below, at and one above each small limit, one
    above each large one) and :data:`BIG_BATCH` (unless a larger size runs)."""
    sizes: set[int] = set()
    for limit in store.chunk_limits:
        around = (limit - 1, limit, limit + 1) if limit <= SMALL_LIMIT else (limit + 1,)
        sizes.update(n for n in around if n > 0)
    if max(sizes, default=0) < BIG_BATCH:
        sizes.add(BIG_BATCH)
    return sorted(sizes)


class ChunkCases(SuiteBase):
    """Batches at the adapter's chunk limits (OPS)."""

    async def test_ops_batches_cross_every_chunk_limit(self, store: BaseStorage) -> None:
        """Save, list, delete_messages, delete_thread and delete_resource at
        sizes one below, at and one above each declared chunk limit: totals
        stay exact and every id is released (saved again elsewhere)."""
        for n in chunk_sizes(store):
            mine, theirs = f"r{n}", f"x{n}"
            await store.save_thread(thread(f"t{n}", mine))
            await store.save_thread(thread(f"o{n}", theirs))
            batch = [f"m{n}-{i}" for i in range(n)]
            await store.save_messages([message(m, f"t{n}") for m in batch])
            assert ids(await store.list_messages(f"t{n}", per_page=False)) == batch
            assert (await store.list_messages_by_resource(mine, per_page=0)).total == n
            assert await store.delete_messages(batch) == n, "a chunked delete must count every chunk"
            assert (await store.list_messages_by_resource(mine, per_page=0)).total == 0
            # Released: another resource may take every id now.
            await store.save_messages([message(m, f"o{n}") for m in batch])
            await store.delete_thread(f"o{n}")
            page = await store.list_messages_by_resource(theirs, per_page=0)
            assert page.total == 0, f"{page.total} messages left in the resource after delete_thread"
            await store.save_messages([message(m, f"t{n}") for m in batch])
            erased = await store.delete_resource(mine)
            assert erased.messages == n and erased.thread_ids == [f"t{n}"]
            assert (await store.list_threads({"resource_id": mine}, per_page=0)).total == 0
            await store.save_thread(thread(f"o{n}", theirs))
            assert len(await store.save_messages([message(m, f"o{n}") for m in batch])) == n
            await store.delete_resource(theirs)

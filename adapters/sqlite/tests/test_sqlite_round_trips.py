"""One aiosqlite job per read operation and per save (issue 14, item 1).

The count is taken at aiosqlite's job queue (``Connection._execute``, the
one door every call to the worker thread goes through) on a real database
file: each job is one hop to the worker thread and back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from memory_core import ConflictError, Memory, MemoryConfig, Message, OwnershipError, WorkingMemory
from memory_core.models import MessagePageRequest
from memory_core.validation import check_message

from memory_core_sqlite import SQLiteStorage

pytestmark = pytest.mark.anyio


class JobCounter:
    """Counts the jobs a store hands its aiosqlite worker thread (every job,
    the adapter's own and aiosqlite's, goes through the connection's queue)."""

    def __init__(self, store: SQLiteStorage) -> None:
        assert store._db is not None
        self.jobs = 0
        db = store._db
        queue = db._tx
        counter = self

        class Counted:
            def put_nowait(self, item: Any) -> None:
                counter.jobs += 1
                queue.put_nowait(item)

        db._tx = Counted()  # type: ignore[assignment]

    def take(self) -> int:
        jobs, self.jobs = self.jobs, 0
        return jobs


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[tuple[Memory, JobCounter]]:
    store = SQLiteStorage(tmp_path / "trips.db")
    async with Memory(store) as memory:
        await memory.create_thread("r1", thread_id="t1")
        await memory.create_thread("r1", thread_id="t2")
        await memory.save_messages([Message(f"m{n}", "t1" if n % 2 else "t2", "user", f"text {n}") for n in range(60)])
        yield memory, JobCounter(store)


async def test_recall_with_ownership_and_includes_is_one_job(memory: tuple[Memory, JobCounter]) -> None:
    mem, counter = memory
    result = await mem.recall("t1", "r1", per_page=20, include=[{"id": "m2", "with_previous": 1}])
    assert len(result.messages) == 22 and result.total == 30
    assert counter.take() == 1


async def test_listings_are_one_job_each(memory: tuple[Memory, JobCounter]) -> None:
    mem, counter = memory
    page = await mem.list_messages("t1", "r1", include=[{"id": "m2", "with_next": 2}], per_page=5)
    assert page.total == 30 and page.has_more
    assert counter.take() == 1
    threads = await mem.list_threads({"resource_id": "r1"}, per_page=1)
    assert threads.total == 2 and threads.has_more
    assert counter.take() == 1
    parts = await mem.storage.message_parts(MessagePageRequest(thread_ids=("t2",)), threads=("t1", "t2", "zz"))
    assert set(parts.threads) == {"t1", "t2"} and parts.total == 30
    assert counter.take() == 1


@pytest.mark.parametrize("scope", ["resource", "thread"])
async def test_working_memory_read_is_one_job(memory: tuple[Memory, JobCounter], scope: Any) -> None:
    mem, counter = memory
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, scope=scope, template="tpl"))
    assert await mem.get_working_memory("t1", "r1", thread_config=config) == "tpl"
    assert counter.take() == 1
    await mem.update_working_memory("t1", "notes", "r1", thread_config=config)
    counter.take()
    assert await mem.get_working_memory("t1", "r1", thread_config=config) == "notes"
    assert counter.take() == 1


async def test_thread_with_owner_is_one_job(memory: tuple[Memory, JobCounter]) -> None:
    mem, counter = memory
    assert await mem.storage.get_thread_with_owner("nope") == (None, None)
    thread, owner = await mem.storage.get_thread_with_owner("t1")
    assert thread is not None and thread.resource_id == "r1" and owner is None
    await mem.storage.update_resource("r1", working_memory="w")
    counter.take()
    thread, owner = await mem.storage.get_thread_with_owner("t1")
    assert owner is not None and owner.working_memory == "w"
    assert counter.take() == 1


async def test_writes_check_inside_their_one_job(memory: tuple[Memory, JobCounter]) -> None:
    """No read before a write: a save's checks and an insert's run in the
    write's own transaction, and a failed check writes nothing."""
    mem, counter = memory
    saved = await mem.storage.save_messages([Message("new", "t1", "user", "hi"), Message("m1", "t1", "user", "re")])
    assert [m.sequence for m in saved][1] == 2 and saved[0].sequence == 61
    assert counter.take() == 1
    await mem.storage.insert_thread({"id": "t3", "resource_id": "r1"})
    assert counter.take() == 1
    with pytest.raises(OwnershipError):
        await mem.storage.save_messages([Message("x1", "t1", "user", "a"), Message("x2", "t1", "user", "b", "r2")])
    with pytest.raises(ConflictError):
        await mem.storage.insert_thread({"id": "t3", "resource_id": "r2"})
    assert counter.take() == 2
    assert await mem.storage.get_messages(["x1", "x2"]) == []


async def test_memory_save_is_one_job_checked_once(
    memory: tuple[Memory, JobCounter], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory checks a batch and hands it over as CheckedMessages: the store
    does not check it a second time, and the save is one job (its checks and
    the write in one transaction). A direct call is checked by the store."""
    mem, counter = memory
    checked: list[str] = []

    def counted(value: Any, field: str, *, by_id: bool = True) -> Message:
        checked.append(field)
        return check_message(value, field, by_id=by_id)

    monkeypatch.setattr("memory_core.storage.writes.check_message", counted)
    saved = await mem.save_messages([Message("one", "t1", "user", "hi")])
    assert [m.id for m in saved] == ["one"] and saved[0].sequence == 61
    assert counter.take() == 1 and checked == []
    await mem.storage.save_messages([Message("two", "t1", "user", "hi")])
    assert counter.take() == 1 and checked == ["messages[0]"]


async def test_delete_messages_and_save_thread_are_one_job_each(memory: tuple[Memory, JobCounter]) -> None:
    """No read before these writes either: a delete learns the threads to
    bump from the rows it deletes, a thread save checks the owner in its
    upsert; a foreign thread id writes nothing."""
    mem, counter = memory
    store = mem.storage
    before = {t.id: t.updated_at for t in (await store.list_threads(per_page=False)).items}
    counter.take()
    assert await store.delete_messages(["m1", "m2", "m3", "gone"]) == 3
    assert counter.take() == 1
    t1, t2 = await store.get_thread("t1"), await store.get_thread("t2")
    assert t1 is not None and t2 is not None
    assert t1.updated_at != before["t1"] and t2.updated_at != before["t2"]  # both bumped
    assert t1.last_message_at is not None and t2.last_message_at is not None
    assert await store.delete_messages(["gone"]) == 0
    counter.take()
    saved = await store.save_thread({"id": "t1", "resource_id": "r1", "title": "new"})
    assert saved.title == "new" and saved.last_message_at == t1.last_message_at
    assert counter.take() == 1
    fresh = await store.save_thread({"id": "t9", "resource_id": "r1"})
    assert fresh.last_message_at is None
    assert counter.take() == 1
    with pytest.raises(ConflictError):
        await store.save_thread({"id": "t1", "resource_id": "r2", "title": "theirs"})
    assert counter.take() == 1
    assert await store.get_thread("t1") == saved


async def test_update_messages_is_one_job(memory: tuple[Memory, JobCounter]) -> None:
    """An update's checks (move target, R-SIZE of the merged result), its
    write and the records it returns come from one transaction: one job, no
    read before and none after; a failed check writes nothing."""
    mem, counter = memory
    updated = await mem.storage.update_messages(
        [{"id": "m1", "content": "moved", "thread_id": "t2", "metadata": {"k": 1}}, {"id": "gone"}]
    )
    assert [(m.id, m.thread_id, m.content, m.metadata, m.sequence) for m in updated] == [
        ("m1", "t2", "moved", {"k": 1}, 2)
    ]
    assert counter.take() == 1
    assert await mem.storage.get_messages(["m1"]) == updated
    await mem.storage.save_thread({"id": "other", "resource_id": "r2"})
    counter.take()
    with pytest.raises(ConflictError):
        await mem.storage.update_messages([{"id": "m3", "content": "x"}, {"id": "m1", "thread_id": "other"}])
    assert counter.take() == 1
    assert (await mem.storage.get_messages(["m3"]))[0].content == "text 3"


@pytest.mark.parametrize("scope", ["resource", "thread"])
async def test_working_memory_write_is_one_job(memory: tuple[Memory, JobCounter], scope: Any) -> None:
    """An update of working memory checks the thread's owner (and, with
    ``if_version``, the stored version) inside its write: one job."""
    mem, counter = memory
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, scope=scope))
    await mem.update_working_memory("t1", "v1", "r1", thread_config=config)
    assert counter.take() == 1
    version = (await mem.read_working_memory("t1", "r1", thread_config=config)).version
    counter.take()
    await mem.update_working_memory("t1", "v2", "r1", thread_config=config, if_version=version)
    assert counter.take() == 1
    with pytest.raises(ConflictError):
        await mem.update_working_memory("t1", "v3", "r1", thread_config=config, if_version=version)
    with pytest.raises(OwnershipError):
        await mem.update_working_memory("t1", "v3", "r2", thread_config=config)
    assert counter.take() == 2
    assert await mem.get_working_memory("t1", "r1", thread_config=config) == "v2"

"""Server commands per operation (issue 14): one ``aggregate`` per read plan,
a message save with its checks inside one transaction, a delete of messages
that reads nothing before its transaction, and a thread save in one
``findAndModify``.

Counted on the client with PyMongo's command monitoring
(:class:`pymongo.monitoring.CommandListener`): every command the adapter
sends, ``getMore`` and ``commitTransaction`` included (each is one round
trip); server monitoring's heartbeats are not commands and are not counted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from memory_core_mongodb import MongoStorage
from pymongo import AsyncMongoClient, monitoring

from memory_core import ConflictError, Memory, MemoryConfig, Message, NotFoundError, OwnershipError, WorkingMemory

pytestmark = pytest.mark.anyio

Doc = dict[str, Any]


class CommandCounter(monitoring.CommandListener):
    """The names of the commands a client started since the last :meth:`take`."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.names.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    def take(self) -> list[str]:
        names, self.names = self.names, []
        return names


@pytest.fixture
async def memory(
    mongodb_url: str, store_factory: Callable[..., MongoStorage]
) -> AsyncIterator[tuple[Memory, CommandCounter]]:
    """A seeded store (threads t1, t2 of r1; 30 messages each) on a counted client."""
    counter = CommandCounter()
    client: AsyncMongoClient[Doc] = AsyncMongoClient(
        mongodb_url, event_listeners=[counter], serverSelectionTimeoutMS=10_000
    )
    store = store_factory(client=client)
    try:
        async with Memory(store) as memory:
            await memory.create_thread("r1", thread_id="t1")
            await memory.create_thread("r1", thread_id="t2")
            await memory.save_messages(
                [Message(f"m{n}", "t1" if n % 2 else "t2", "user", f"text {n}", "r1") for n in range(60)]
            )
            counter.take()
            yield memory, counter
            await store.destroy()
    finally:
        await client.close()


async def _commands(counter: CommandCounter, call: Callable[[], Any]) -> list[str]:
    counter.take()
    await call()
    return counter.take()


async def test_reads_are_one_aggregate_each(memory: tuple[Memory, CommandCounter]) -> None:
    mem, counter = memory
    result = await mem.recall("t1", "r1", per_page=20)
    assert len(result.messages) == 20 and result.total == 30
    assert await _commands(counter, lambda: mem.recall("t1", "r1", per_page=20)) == ["aggregate"]

    include = [{"id": "m2", "with_previous": 1, "with_next": 1}]
    result = await mem.recall("t1", "r1", per_page=20, include=include)
    assert len(result.messages) == 23 and result.total == 30
    assert await _commands(counter, lambda: mem.recall("t1", "r1", per_page=20, include=include)) == ["aggregate"]

    page = await mem.list_messages("t1", "r1", include=[{"id": "m2", "with_next": 2}], per_page=5)
    assert page.total == 30 and page.has_more and len(page.items) == 8
    assert await _commands(counter, lambda: mem.list_messages("t1", "r1", per_page=5)) == ["aggregate"]

    threads = await mem.list_threads({"resource_id": "r1"}, per_page=1)
    assert threads.total == 2 and threads.has_more
    assert await _commands(counter, lambda: mem.list_threads({"resource_id": "r1"}, per_page=1)) == ["aggregate"]


async def test_a_large_page_comes_in_its_first_batch(memory: tuple[Memory, CommandCounter]) -> None:
    """A page larger than the server's default first batch (101 documents)
    still costs one command: the adapter sizes the first batch to the plan."""
    mem, counter = memory
    await mem.save_messages([Message(f"x{n}", "t1", "user", "x", "r1") for n in range(120)])
    page = await mem.list_messages("t1", "r1", per_page=150)
    assert page.total == 150 and len(page.items) == 150
    assert await _commands(counter, lambda: mem.list_messages("t1", "r1", per_page=150)) == ["aggregate"]


@pytest.mark.parametrize("scope", ["resource", "thread"])
async def test_working_memory_read_is_one_command(memory: tuple[Memory, CommandCounter], scope: Any) -> None:
    """A resource's working memory: the thread (ownership) and its owner's
    record in one plan; a thread's: the thread alone. Either is one read
    plan, so one ``aggregate``."""
    mem, counter = memory
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, scope=scope, template="tpl"))
    assert await mem.get_working_memory("t1", "r1", thread_config=config) == "tpl"
    await mem.update_working_memory("t1", "notes", "r1", thread_config=config)

    async def read() -> str | None:
        return await mem.get_working_memory("t1", "r1", thread_config=config)

    assert await read() == "notes"
    assert await _commands(counter, read) == ["aggregate"]


async def test_thread_with_owner_is_one_aggregate(memory: tuple[Memory, CommandCounter]) -> None:
    mem, counter = memory
    await mem.storage.update_resource("r1", working_memory="w")
    counter.take()
    thread, owner = await mem.storage.get_thread_with_owner("t1")
    assert thread is not None and owner is not None and owner.working_memory == "w"
    assert await mem.storage.get_thread_with_owner("nope") == (None, None)
    assert counter.take() == ["aggregate", "aggregate"]


@pytest.mark.parametrize("client_bulk", [True, False], ids=["client-bulkWrite", "collection-bulk_write"])
async def test_a_save_checks_inside_its_transaction(memory: tuple[Memory, CommandCounter], client_bulk: bool) -> None:
    """Saving messages: the state read, the sequence ``$inc`` (beside it,
    outside the transaction), one write of the messages and their threads'
    bumps and counters (one client ``bulkWrite`` on MongoDB 8.0+, else one
    ``update`` per collection), and the commit. Both write paths run on every server: the
    older one by turning the detected capability off."""
    mem, counter = memory
    store = mem.storage
    assert isinstance(store, MongoStorage)
    if not client_bulk:
        store._client_bulk = False
    elif not store._client_bulk:
        pytest.skip("the server has no client bulkWrite (MongoDB before 8.0)")
    # Per collection: messages, and threads (with their counters).
    writes = ["bulkWrite"] if client_bulk else ["update", "update"]
    expected = sorted(["aggregate", "findAndModify", *writes, *(["commitTransaction"] if store.transactions else [])])
    saved = await store.save_messages([Message("new", "t1", "user", "hi")])
    assert saved[0].sequence is not None and saved[0].resource_id == "r1"
    assert sorted(counter.take()) == expected
    thread = await store.get_thread("t1")
    assert thread is not None and thread.last_message_at == saved[0].created_at
    counter.take()
    # An update of a stored message and a new one, in two threads: still one write.
    again = await store.save_messages([Message("m1", "t1", "user", "edited"), Message("new2", "t2", "user", "b")])
    assert again[0].sequence == 2 and again[0].created_at is not None
    assert sorted(counter.take()) == expected
    assert [m.content for m in await store.get_messages(["m1"])] == ["edited"]


async def test_a_failed_check_writes_nothing(memory: tuple[Memory, CommandCounter]) -> None:
    mem, counter = memory
    store = mem.storage
    before = await store.get_thread("t1")
    with pytest.raises(OwnershipError):
        await store.save_messages([Message("x1", "t1", "user", "a"), Message("x2", "t1", "user", "b", "r2")])
    with pytest.raises(NotFoundError):
        await store.save_messages([Message("x1", "t1", "user", "a"), Message("x2", "nope", "user", "b")])
    await store.save_thread({"id": "t9", "resource_id": "r2"})
    with pytest.raises(ConflictError):
        await store.save_messages([Message("m1", "t9", "user", "moved to r2")])
    assert await store.get_messages(["x1", "x2"]) == []
    assert await store.get_thread("t1") == before
    counter.take()


@pytest.mark.parametrize("client_bulk", [True, False], ids=["client-bulkWrite", "collection-bulk_write"])
async def test_a_delete_finds_its_threads_inside_its_transaction(
    memory: tuple[Memory, CommandCounter], client_bulk: bool
) -> None:
    """Deleting messages of two threads: one ``aggregate`` (the messages by
    thread, each thread's newest message left), one write of the deletes and
    the bumps and counters (one client ``bulkWrite``, else ``delete`` and an
    ``update`` of the threads), and
    the commit; no read before the transaction, no probe per thread."""
    mem, counter = memory
    store = mem.storage
    assert isinstance(store, MongoStorage)
    if not client_bulk:
        store._client_bulk = False
    elif not store._client_bulk:
        pytest.skip("the server has no client bulkWrite (MongoDB before 8.0)")
    # Per collection: messages, and threads (with their counters).
    writes = ["bulkWrite"] if client_bulk else ["delete", "update"]
    expected = sorted(["aggregate", *writes, *(["commitTransaction"] if store.transactions else [])])
    newest = {m.id: m for m in await store.get_messages(["m56", "m57"])}
    before = {t: await store.get_thread(t) for t in ("t1", "t2")}
    counter.take()
    assert await store.delete_messages(["m58", "m59", "m1", "gone"]) == 3
    assert sorted(counter.take()) == expected
    for thread_id, kept in (("t1", "m57"), ("t2", "m56")):
        thread, old = await store.get_thread(thread_id), before[thread_id]
        assert thread is not None and old is not None and thread.updated_at != old.updated_at  # bumped
        assert thread.last_message_at == newest[kept].created_at  # the newest message left
    counter.take()
    assert await store.delete_messages(["gone"]) == 0
    assert sorted(counter.take()) == sorted(["aggregate", *(["commitTransaction"] if store.transactions else [])])


async def test_a_thread_save_is_one_find_and_modify(memory: tuple[Memory, CommandCounter]) -> None:
    """The upsert checks the owner (its filter holds the resource) and returns
    the kept ``last_message_at``; only a collision on ``_id`` reads the
    thread (another resource's id: ConflictError, nothing written)."""
    mem, counter = memory
    store = mem.storage
    old = await store.get_thread("t1")
    assert old is not None and old.last_message_at is not None
    counter.take()
    saved = await store.save_thread({"id": "t1", "resource_id": "r1", "title": "new"})
    assert saved.title == "new" and saved.last_message_at == old.last_message_at
    assert counter.take() == ["findAndModify"]
    fresh = await store.save_thread({"id": "t9", "resource_id": "r1"})
    assert fresh.last_message_at is None
    assert counter.take() == ["findAndModify"]
    with pytest.raises(ConflictError):
        await store.save_thread({"id": "t1", "resource_id": "r2", "title": "theirs"})
    assert counter.take() == ["findAndModify", "find"]
    assert await store.get_thread("t1") == saved


async def test_update_messages_checks_inside_its_transaction(memory: tuple[Memory, CommandCounter]) -> None:
    """An update: one ``aggregate`` (move targets and stored messages), one
    ``update`` of the messages, a newest-message ``find`` per bumped thread,
    one ``update`` of the threads and the commit; no move re-check and no
    read after (eight commands before, with a move)."""
    mem, counter = memory
    store = mem.storage
    assert isinstance(store, MongoStorage)
    store._client_bulk = False
    updated = await store.update_messages(
        [{"id": "m1", "content": "moved", "thread_id": "t2", "metadata": {"k": 1}}, {"id": "gone"}]
    )
    assert [(m.id, m.thread_id, m.content, m.metadata, m.sequence) for m in updated] == [
        ("m1", "t2", "moved", {"k": 1}, 2)
    ]
    commit = ["commitTransaction"] if store.transactions else []
    assert sorted(counter.take()) == sorted(["aggregate", "update", "find", "find", "update", *commit])
    assert await store.get_messages(["m1"]) == updated


async def test_a_thread_working_memory_write_checks_its_owner_in_the_filter(
    memory: tuple[Memory, CommandCounter],
) -> None:
    """Thread scope: the owner is part of the update's filter, one
    ``findAndModify`` (a read and a write before); a miss reads to report it."""
    mem, counter = memory
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, scope="thread"))
    await mem.update_working_memory("t1", "notes", "r1", thread_config=config)
    assert counter.take() == ["findAndModify"]
    with pytest.raises(OwnershipError):
        await mem.update_working_memory("t1", "x", "r2", thread_config=config)
    assert counter.take() == ["findAndModify", "aggregate"]
    assert await mem.get_working_memory("t1", "r1", thread_config=config) == "notes"

"""One statement per read operation (issue 14, item 1), and per
``delete_messages`` and ``save_thread`` (item 2); a pgvector lexical search
in two round trips whatever its terms (issue 23).

Every statement a read sends goes through the store's asyncpg pool; the
count is taken there (``fetch``, ``fetchrow``, ``fetchval``, ``execute`` and
``acquire``, each at least one round trip), on a real server.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from memory_core import ConflictError, Memory, MemoryConfig, Message, NotFoundError, OwnershipError, WorkingMemory
from memory_core.lexical import bm25_rank, document_terms
from memory_core.lexical_index import LexicalDocument
from memory_core.models import MessagePageRequest

from memory_core_postgres import PgVectorStore, PostgresStorage

pytestmark = pytest.mark.anyio

_DOORS = ("fetch", "fetchrow", "fetchval", "execute", "acquire")


class StatementCounter:
    """Counts the calls a store makes on its pool (the real pool behind a
    counting front: asyncpg's Pool has slots, so its methods cannot be
    wrapped in place)."""

    def __init__(self, store: PostgresStorage | PgVectorStore) -> None:
        self.calls = 0
        pool = store.pool
        counter = self

        class CountingPool:
            def __getattr__(self, name: str) -> Any:
                found = getattr(pool, name)
                if name not in _DOORS:
                    return found

                def counted(*args: Any, **kwargs: Any) -> Any:
                    counter.calls += 1
                    return found(*args, **kwargs)

                return counted

        self.store, self.pool = store, pool
        store._pools.set(CountingPool())  # type: ignore[arg-type]  # this loop's pool, counted

    def restore(self) -> None:
        """Put the store's own pool back."""
        self.store._pools.set(self.pool)

    def take(self) -> int:
        calls, self.calls = self.calls, 0
        return calls


@pytest.fixture
async def memory(make_store: Callable[..., PostgresStorage]) -> AsyncIterator[tuple[Memory, StatementCounter]]:
    store = make_store()
    async with Memory(store) as memory:
        await memory.create_thread("r1", thread_id="t1")
        await memory.create_thread("r1", thread_id="t2")
        await memory.save_messages([Message(f"m{n}", "t1" if n % 2 else "t2", "user", f"text {n}") for n in range(60)])
        counter = StatementCounter(store)
        yield memory, counter
        counter.restore()
        await store.destroy()


async def test_recall_with_ownership_and_includes_is_one_statement(memory: tuple[Memory, StatementCounter]) -> None:
    mem, counter = memory
    result = await mem.recall("t1", "r1", per_page=20, include=[{"id": "m2", "with_previous": 1}])
    assert len(result.messages) == 22 and result.total == 30
    assert [m.id for m in result.messages][-2:] == ["m57", "m59"]
    assert counter.take() == 1


async def test_listings_are_one_statement_each(memory: tuple[Memory, StatementCounter]) -> None:
    mem, counter = memory
    page = await mem.list_messages("t1", "r1", include=[{"id": "m2", "with_next": 2}], per_page=5)
    assert page.total == 30 and page.has_more and len(page.items) == 8
    assert counter.take() == 1
    threads = await mem.list_threads({"resource_id": "r1"}, per_page=1)
    assert threads.total == 2 and threads.has_more and len(threads.items) == 1
    assert counter.take() == 1
    empty = await mem.list_threads({"resource_id": "r1"}, per_page=0)
    assert empty.total == 2 and empty.items == []
    assert counter.take() == 1
    parts = await mem.storage.message_parts(MessagePageRequest(thread_ids=("t2",)), threads=("t1", "t2", "zz"))
    assert set(parts.threads) == {"t1", "t2"} and parts.total == 30
    assert counter.take() == 1


@pytest.mark.parametrize("scope", ["resource", "thread"])
async def test_working_memory_read_is_one_statement(memory: tuple[Memory, StatementCounter], scope: Any) -> None:
    mem, counter = memory
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, scope=scope, template="tpl"))
    assert await mem.get_working_memory("t1", "r1", thread_config=config) == "tpl"
    assert counter.take() == 1
    await mem.update_working_memory("t1", "notes", "r1", thread_config=config)
    counter.take()
    assert await mem.get_working_memory("t1", "r1", thread_config=config) == "notes"
    assert counter.take() == 1


async def test_delete_messages_and_save_thread_are_one_statement_each(memory: tuple[Memory, StatementCounter]) -> None:
    """No read before these writes: a delete bumps the threads of the rows it
    deleted, a thread save checks the owner in its upsert (a foreign id
    writes nothing) and reads the kept last_message_at in the same statement."""
    mem, counter = memory
    store = mem.storage
    before = {t.id: t.updated_at for t in (await store.list_threads(per_page=False)).items}
    counter.take()
    assert await store.delete_messages(["m1", "m2", "m3", "gone"]) == 3
    assert counter.take() == 1
    t1, t2 = await store.get_thread("t1"), await store.get_thread("t2")
    assert t1 is not None and t2 is not None
    assert t1.updated_at != before["t1"] and t2.updated_at != before["t2"]  # both bumped
    assert await store.delete_messages(["gone"]) == 0
    counter.take()
    saved = await store.save_thread({"id": "t1", "resource_id": "r1", "title": "new"})
    assert saved.title == "new" and saved.last_message_at == t1.last_message_at is not None
    assert counter.take() == 1
    fresh = await store.save_thread({"id": "t9", "resource_id": "r1"})
    assert fresh.last_message_at is None
    assert counter.take() == 1
    with pytest.raises(ConflictError):
        await store.save_thread({"id": "t1", "resource_id": "r2", "title": "theirs"})
    assert counter.take() == 1
    assert await store.get_thread("t1") == saved


async def test_update_messages_reads_once_and_writes_once(memory: tuple[Memory, StatementCounter]) -> None:
    """An update reads the state with each row's version in one statement,
    checks in Python, and writes with a compare-and-set on those versions
    that returns nothing to read again: two statements (four before)."""
    mem, counter = memory
    updated = await mem.storage.update_messages(
        [{"id": "m1", "content": "moved", "thread_id": "t2", "metadata": {"k": 1}}, {"id": "gone"}]
    )
    assert [(m.id, m.thread_id, m.content, m.metadata, m.sequence) for m in updated] == [
        ("m1", "t2", "moved", {"k": 1}, 2)
    ]
    assert counter.take() == 2
    assert await mem.storage.get_messages(["m1"]) == updated


@pytest.mark.parametrize(("thread_id", "resource_id"), [("t1", "r1"), (None, "r1")])
async def test_a_resource_working_memory_write_is_one_statement(
    memory: tuple[Memory, StatementCounter], thread_id: str | None, resource_id: str
) -> None:
    """Resource scope: by thread, the owner check is inside the upsert; by
    resource id there is nothing to check. One statement (two before); a
    refused write reports what it found."""
    mem, counter = memory
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True))
    await mem.update_working_memory(thread_id, "notes", resource_id, thread_config=config)
    assert counter.take() == 1
    assert await mem.get_working_memory(thread_id, resource_id, thread_config=config) == "notes"
    counter.take()
    with pytest.raises(OwnershipError):
        await mem.update_working_memory("t1", "x", "r2", thread_config=config)
    with pytest.raises(NotFoundError):
        await mem.update_working_memory("nope", "x", thread_config=config)
    assert counter.take() == 2
    assert await mem.get_working_memory(None, "r2", thread_config=config) is None


async def test_a_pgvector_lexical_search_is_two_round_trips_whatever_its_terms(vector_url: str) -> None:
    """The scope's statistics, then one statement scoring every document
    holding a query term (a MaxScore loop read one term per statement: a
    query of many terms of similar frequency cost a round trip per term).
    The answers are bm25_rank's to the last bit, ties at the cut included."""
    store = PgVectorStore.from_url(vector_url, namespace=f"v{uuid.uuid4().hex[:16]}")
    await store.open()
    try:
        texts = {f"m{n:03}": " ".join(f"w{(n * 7 + j) % 40}" for j in range(n % 9 + 1)) for n in range(200)}
        texts |= {f"t{n}": "w1 w2 w3" for n in range(6)}  # equal scores
        texts["m999"] = ""  # a document without terms counts in the statistics
        await store.index_documents([LexicalDocument(m, "t1", "r1", *document_terms(t)) for m, t in texts.items()])
        counter = StatementCounter(store)
        many = " ".join(f"w{n}" for n in range(0, 40, 3))
        for query, top_k in ((many, 10), (many, 1), ("w1 w2 w3", 3), ("w1 w2 w3", 7), ("w1 nothing", 50)):
            got = await store.lexical_search(query, top_k, resource_id="r1")
            assert counter.take() == 2, query
            assert got == bm25_rank(query, texts.items(), top_k), (query, top_k)
        assert await store.lexical_search("nothing at all", 5, resource_id="r1") == []
        assert await store.lexical_search("w1", 5, resource_id="r2") == []
        counter.restore()
    finally:
        await store.destroy()

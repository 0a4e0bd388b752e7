"""The Memory facade (R-RECALL, R-VEC) on every installed embedded storage:
recall windows, ownership, config overrides, working memory, titles, clones."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_core import (
    ConflictError,
    ManualClock,
    Memory,
    MemoryConfig,
    Message,
    NotFoundError,
    OwnershipError,
    Thread,
    ValidationError,
    WorkingMemory,
    connect,
)
from memory_core.embedders import LexicalHashEmbedder, Matrix
from memory_core.reference_vector import InMemoryVectorStore

pytestmark = pytest.mark.anyio

T0 = datetime(2025, 1, 1, tzinfo=UTC)
URLS = ["memory://"] + (["sqlite"] if importlib.util.find_spec("memory_core_sqlite") else [])


@pytest.fixture(params=URLS)
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    url = f"sqlite:///{tmp_path / 'memory.db'}" if request.param == "sqlite" else request.param
    storage = await connect(url, clock=ManualClock(T0))
    async with Memory(storage, config=MemoryConfig(last_messages=5)) as memory:
        yield memory


async def _thread_with_messages(
    memory: Memory, count: int = 20, thread_id: str = "t1", resource_id: str = "r1"
) -> None:
    await memory.create_thread(resource_id, thread_id=thread_id)
    await memory.save_messages(
        [
            Message(f"m{i:02d}", thread_id, "user", f"m{i:02d} text", created_at=T0 + timedelta(seconds=i))
            for i in range(1, count + 1)
        ]
    )


def _ids(messages: list[Message]) -> list[str]:
    return [m.id for m in messages]


async def test_recall_returns_newest_page_oldest_first(memory: Memory) -> None:
    await _thread_with_messages(memory)
    result = await memory.recall("t1", "r1")
    assert _ids(result.messages) == ["m16", "m17", "m18", "m19", "m20"]
    assert (result.total, result.has_more, result.per_page) == (20, True, 5)
    older = await memory.recall("t1", "r1", page=1)
    assert _ids(older.messages) == ["m11", "m12", "m13", "m14", "m15"]
    last = await memory.recall("t1", "r1", page=3)
    assert _ids(last.messages) == ["m01", "m02", "m03", "m04", "m05"]
    assert last.has_more is False


async def test_recall_cursor_walks_back_in_time(memory: Memory) -> None:
    await _thread_with_messages(memory, 12)
    seen: list[str] = []
    cursor = None
    while True:
        result = await memory.recall("t1", "r1", per_page=5, cursor=cursor)
        seen = _ids(result.messages) + seen
        cursor = result.next_cursor
        if cursor is None:
            break
    assert seen == [f"m{i:02d}" for i in range(1, 13)]


async def test_recall_with_order_by_is_a_plain_page(memory: Memory) -> None:
    await _thread_with_messages(memory)
    result = await memory.recall("t1", "r1", per_page=3, order_by={"field": "createdAt", "direction": "DESC"})
    assert _ids(result.messages) == ["m20", "m19", "m18"]


async def test_recall_ownership_and_missing_thread(memory: Memory) -> None:
    await _thread_with_messages(memory, 3)
    with pytest.raises(OwnershipError):
        await memory.recall("t1", "someone-else")
    with pytest.raises(NotFoundError):
        await memory.recall("missing", "r1")


async def test_recall_last_messages_false_gives_no_history(memory: Memory) -> None:
    await _thread_with_messages(memory, 4)
    result = await memory.recall("t1", "r1", thread_config={"lastMessages": False})
    assert result.messages == []
    assert result.total == 4
    with_include = await memory.recall(
        "t1", "r1", thread_config={"last_messages": False}, include=[{"id": "m02", "withNextMessages": 1}]
    )
    assert _ids(with_include.messages) == ["m02", "m03"]


async def test_recall_rejects_bad_config_and_arguments(memory: Memory) -> None:
    await _thread_with_messages(memory, 2)
    for bad in ({"last_messages": -1}, {"last_messages": True}, {"nope": 1}, {"semantic_recall": {"top_k": 0}}):
        with pytest.raises(ValidationError):
            await memory.recall("t1", "r1", thread_config=bad)
    with pytest.raises(ValidationError):
        await memory.recall("t1", "r1", per_page=-1)
    with pytest.raises(ValidationError):
        await memory.recall("t1", "r1", vector_search_string=b"bytes")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        await memory.recall("", "r1")


async def test_working_memory_resource_scope_with_template(memory: Memory) -> None:
    await memory.create_thread("r1", thread_id="t1")
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, template="# Notes\n"))
    assert await memory.get_working_memory("t1", thread_config=config) == "# Notes\n"
    await memory.update_working_memory("t1", "likes tea", thread_config=config)
    assert await memory.get_working_memory("t1", thread_config=config) == "likes tea"
    resource = await memory.storage.get_resource("r1")
    assert resource is not None and resource.working_memory == "likes tea"
    await memory.update_working_memory("t1", "", thread_config=config)
    assert await memory.get_working_memory("t1", thread_config=config) == ""


async def test_working_memory_thread_scope_keeps_other_metadata(memory: Memory) -> None:
    await memory.create_thread("r1", thread_id="t1", metadata={"topic": "x"})
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, scope="thread"))
    await memory.update_working_memory("t1", "thread notes", thread_config=config)
    thread = await memory.get_thread("t1")
    assert thread is not None
    assert thread.metadata == {"topic": "x", "working_memory": "thread notes"}
    with pytest.raises(OwnershipError):
        await memory.update_working_memory("t1", "x", resource_id="r2", thread_config=config)


async def test_working_memory_schema_validates_before_writing(memory: Memory) -> None:
    await memory.create_thread("r1", thread_id="t1")
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, schema=schema))
    assert await memory.update_working_memory("t1", {"name": "Ada"}, thread_config=config) == '{"name":"Ada"}'
    too_deep = "[" * 200_000 + "]" * 200_000  # raw json.loads: RecursionError
    not_json = ('{"name": NaN}', '{"name": "x", "n": Infinity}', '{"name": "x", "n": 1e400}', too_deep)
    for bad in ({"name": 5}, "not json", "{}", *not_json):
        with pytest.raises(ValidationError):
            await memory.update_working_memory("t1", bad, thread_config=config)
    assert await memory.get_working_memory("t1", thread_config=config) == '{"name":"Ada"}'
    with pytest.raises(ValidationError, match="schema"):
        Memory(memory.storage, config=MemoryConfig(working_memory=WorkingMemory(schema={"type": "nonsense"})))


async def test_working_memory_disabled_is_an_error_that_says_how_to_enable_it(memory: Memory) -> None:
    await memory.create_thread("r1", thread_id="t1")
    calls = (
        memory.get_working_memory("t1"),
        memory.read_working_memory(resource_id="r1"),
        memory.update_working_memory(None, "x", resource_id="r1"),
        memory.append_working_memory(None, "x", resource_id="r1"),
    )
    for call in calls:
        with pytest.raises(ValidationError, match=r'MemoryConfig\(working_memory=\{"enabled": True\}\)'):
            await call
    assert (await memory.storage.get_resource("r1")) is None


async def test_generate_title_runs_once_and_failures_do_not_fail_saves(memory: Memory) -> None:
    calls: list[str] = []

    async def title(thread: Thread, messages: list[Message]) -> str:
        calls.append(thread.id)
        if thread.id == "t2":
            raise RuntimeError("model offline")
        return f"About {messages[0].content}"

    titled = Memory(memory.storage, config=MemoryConfig(generate_title=title), owns_stores=False)
    await titled.create_thread("r1", thread_id="t1")
    await titled.save_messages([Message("a1", "t1", "assistant", "hello")])
    assert calls == []
    await titled.save_messages([Message("u1", "t1", "user", "tea")])
    await titled.save_messages([Message("u2", "t1", "user", "coffee")])
    thread = await titled.get_thread("t1")
    assert thread is not None and thread.title == "About tea"
    assert calls == ["t1"]
    await titled.create_thread("r1", thread_id="t2")
    saved = await titled.save_messages([Message("u3", "t2", "user", "x")])
    assert _ids(saved) == ["u3"]
    assert _ids(await titled.get_messages(["u3"])) == ["u3"]


async def test_clone_thread_copies_messages_in_order(memory: Memory) -> None:
    await _thread_with_messages(memory, 6)
    originals_last = (await memory.list_messages("t1", per_page=False)).items[-1].id
    made = await memory.clone_thread("t1", "t1-copy", title="copy", metadata={"k": 1})
    source = await memory.get_thread("t1")
    assert source is not None and source.created_at is not None
    thread = made.thread
    assert thread.title == "copy" and thread.metadata == {
        "k": 1,
        "cloned_from": "t1",
        "cloned_from_resource": "r1",
        "cloned_last_message_id": originals_last,
        "cloned_from_created_at": source.created_at.isoformat(timespec="microseconds"),
    }
    listed = await memory.list_messages("t1-copy", per_page=False)
    originals = await memory.list_messages("t1", per_page=False)
    assert [m.created_at for m in listed.items] == [m.created_at for m in originals.items]
    assert [m.content for m in listed.items] == [m.content for m in originals.items]
    assert not set(_ids(listed.items)) & set(_ids(originals.items))
    assert list(made.message_ids) == _ids(originals.items)
    assert list(made.message_ids.values()) == _ids(listed.items)

    async def contents(thread_id: str) -> list[Any]:
        return [m.content for m in (await memory.list_messages(thread_id, per_page=False)).items]

    await memory.clone_thread("t1", "t1-newest", message_limit=2)
    assert await contents("t1-newest") == ["m05 text", "m06 text"]
    every = await memory.clone_thread("t1", "t1-every", message_limit=2**63 - 1)  # beyond any page size
    assert len(every.message_ids) == 6
    await memory.clone_thread(
        "t1", "t1-dated", date_range={"start": T0 + timedelta(seconds=2), "end": T0 + timedelta(seconds=3)}
    )
    assert await contents("t1-dated") == ["m02 text", "m03 text"]
    with pytest.raises(NotFoundError):
        await memory.clone_thread("nope")


async def test_delete_thread_then_recreate_shows_no_ghosts(memory: Memory) -> None:
    await _thread_with_messages(memory, 3)
    await memory.delete_thread("t1")
    await memory.create_thread("r1", thread_id="t1")
    assert (await memory.recall("t1", "r1")).total == 0
    await memory.delete_thread("never-existed")


async def test_bad_saves_write_nothing(memory: Memory) -> None:
    await memory.create_thread("r1", thread_id="t1")
    await memory.create_thread("r2", thread_id="t2")
    batches: list[list[Any]] = [
        [Message("ok1", "t1", "user", "fine"), Message("bad", "t1", "user", "lone \ud83d")],
        [Message("ok1", "t1", "user", "fine"), {"id": "x", "thread_id": "t1", "role": "robot", "content": "?"}],
        [Message("ok1", "t1", "user", "fine"), Message("m", "t1", "user", {"v": float("nan")})],
        [Message("ok1", "t1", "user", "fine"), Message("m", "missing", "user", "x")],
        [Message("ok1", "t1", "user", "fine"), Message("m", "t1", "user", "x", resource_id="r2")],
        [Message("ok1", "t1", "user", "fine"), Message("m", "t1", "user", "x", created_at="2300-01-01T00:00:00Z")],  # type: ignore[arg-type]
        [{"id": "ok1", "threadId": "t1", "role": "user", "content": "x", "extra": 1}],
    ]
    for batch in batches:
        with pytest.raises((ValidationError, NotFoundError, OwnershipError)):
            await memory.save_messages(batch)
    assert (await memory.list_messages("t1", per_page=False)).total == 0
    await memory.save_messages([Message("m1", "t1", "user", "x")])
    with pytest.raises(ConflictError):
        await memory.save_messages([Message("m1", "t2", "user", "moved to another resource")])
    assert _ids((await memory.list_messages("t1")).items) == ["m1"]


class _CountingEmbedder(LexicalHashEmbedder):
    """The lexical embedder, counting its calls (a recall's first I/O)."""

    calls = 0

    async def embed(self, texts: Sequence[str]) -> Matrix:
        self.calls += 1
        return await super().embed(texts)


@pytest.mark.parametrize(
    "bad", [{"filter": {"metadata": {"": 1}}}, {"page": -1}, {"per_page": "5"}, {"order_by": {"field": "x"}}]
)
async def test_recall_checks_its_history_page_before_the_vector_search(bad: dict[str, Any]) -> None:
    """Issue 29: ``Memory.recall`` checks its whole call once, up front: a bad
    history page argument is refused before the search embeds anything."""
    embedder = _CountingEmbedder()
    config = MemoryConfig(semantic_recall=True)
    async with Memory(await connect("memory://"), InMemoryVectorStore(), embedder, config) as memory:
        await memory.create_thread(resource_id="r1", thread_id="t1")
        await memory.save_messages([{"thread_id": "t1", "resource_id": "r1", "role": "user", "content": "tea"}])
        embedder.calls = 0
        with pytest.raises(ValidationError):
            await memory.recall("t1", "r1", vector_search_string="tea", **bad)
        assert embedder.calls == 0
        await memory.recall("t1", "r1", vector_search_string="tea")
        assert embedder.calls == 1


async def test_create_thread_takes_its_ids_as_get_or_create_thread_does(memory: Memory) -> None:
    """Issue 26: ``create_thread("r1", "t1")`` was a TypeError (``thread_id``
    keyword-only) while ``get_or_create_thread("r1", "t1")`` took it by
    position. Both take the ids either way; the rest is keyword-only in both."""
    created = await memory.create_thread("r1", "pos", title="by position")
    assert (created.id, created.resource_id, created.title) == ("pos", "r1", "by position")
    keyword = await memory.create_thread("r1", thread_id="kw")
    assert keyword.id == "kw"
    same, made = await memory.get_or_create_thread("r1", "pos")
    assert same.id == created.id and not made
    generated = await memory.create_thread("r1")
    assert generated.id and generated.resource_id == "r1"
    for call in (
        lambda: memory.create_thread("r1", "t9", "a title"),  # type: ignore[misc]
        lambda: memory.get_or_create_thread("r1", "t9", "a title"),  # type: ignore[misc]
    ):
        with pytest.raises(TypeError):
            await call()
    assert await memory.get_thread("t9") is None

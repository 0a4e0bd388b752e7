"""Bad input and limits, from a fresh-user probe, on the reference store and a
real SQLite file: every bad input raises the documented error type naming the
field before anything is written (the store is compared before and after),
and values at a limit are accepted."""

from __future__ import annotations

import base64
import importlib.util
import json
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import pytest

from memory_core import (
    ConflictError,
    Memory,
    MemoryConfig,
    Message,
    SemanticRecall,
    Thread,
    ValidationError,
    WorkingMemory,
    connect,
)
from memory_core.clock import TIME_MAX, TIME_MAX_US, TIME_MIN_US
from memory_core.cursor import MAX_CURSOR_CHARS, encode_cursor
from memory_core.validation import MAX_MESSAGE_BYTES, MAX_PER_PAGE, MAX_SEARCH_CHARS, MAX_TOP_K, message_size

pytestmark = pytest.mark.anyio

URLS = ["memory"] + (["sqlite"] if importlib.util.find_spec("memory_core_sqlite") else [])

Snapshot = tuple[list[Thread], dict[str, list[Message]]]


@pytest.fixture(params=URLS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'x.db'}" if request.param == "sqlite" else "memory://"


@pytest.fixture
async def memory(url: str) -> AsyncIterator[Memory]:
    """A store with thread t1 (5 messages) of r1 and an empty thread t2 of r2."""
    async with Memory(await connect(url)) as memory:
        await memory.create_thread("r1", thread_id="t1")
        await memory.create_thread("r2", thread_id="t2")
        await memory.save_messages([Message(f"m{i}", "t1", "user", f"hello {i}") for i in range(5)])
        yield memory


async def snapshot(memory: Memory) -> Snapshot:
    threads = (await memory.list_threads(per_page=False)).items
    return threads, {t.id: (await memory.list_messages(t.id, per_page=False)).items for t in threads}


async def rejected(memory: Memory, call: Awaitable[Any], field: str, kind: type[Exception] = ValidationError) -> None:
    """``call`` raises ``kind`` (a ValidationError naming ``field``) and the
    store is exactly as it was."""
    before = await snapshot(memory)
    with pytest.raises(kind) as info:
        await call
    if isinstance(info.value, ValidationError):
        assert info.value.field == field, str(info.value)
    assert await snapshot(memory) == before


def real_cursor_fingerprint(cursor: str) -> str:
    raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    assert isinstance(raw[1], str)
    return raw[1]


# ---------------------------------------------------------------- clone_thread, create_thread


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"new_id": "x" * 257}, "new_id"),
        ({"new_id": ""}, "new_id"),
        ({"new_id": "t1"}, "new_id"),
        ({"new_id": 5}, "new_id"),
        ({"new_id": "c", "title": 5}, "title"),
        ({"new_id": "c", "metadata": [1]}, "metadata"),
        ({"new_id": "c", "metadata": "k=v"}, "metadata"),
        ({"new_id": "c", "metadata": {"k": float("nan")}}, "metadata['k']"),
        ({"new_id": "c", "message_limit": -1}, "message_limit"),
        ({"new_id": "c", "metadata": {"cloned_from": "x"}}, "metadata"),
        ({"new_id": "c", "message_ids": "m1"}, "message_ids"),
        ({"new_id": "c", "resource_id": ""}, "resource_id"),
        ({"new_id": "c", "date_range": {"start": "nope"}}, "date_range.start"),
    ],
)
async def test_clone_thread_rejects_bad_input_before_writing(
    memory: Memory, options: dict[str, Any], field: str
) -> None:
    await rejected(memory, memory.clone_thread("t1", **options), field)


async def test_clone_thread_never_overwrites_a_thread(memory: Memory) -> None:
    await memory.create_thread("r1", thread_id="t1-copy")
    await rejected(memory, memory.clone_thread("t1", "t1-copy"), "", ConflictError)
    await rejected(memory, memory.clone_thread("t1", "t2"), "", ConflictError)  # another resource's thread


async def test_clone_thread_longest_new_id_is_any_id(memory: Memory) -> None:
    new_id = "n" * 256  # copies get UUIDv7 ids, so the thread id has the whole of R-ID
    made = await memory.clone_thread("t1", new_id)
    assert made.thread.id == new_id
    assert [len(m) for m in made.message_ids.values()] == [36] * 5
    assert [m.content for m in (await memory.list_messages(new_id, per_page=False)).items] == [
        f"hello {i}" for i in range(5)
    ]


async def test_clone_thread_copy_over_r_size_writes_nothing(memory: Memory) -> None:
    # Near 15 MiB, the copy's longer ids and resource id push it over R-SIZE.
    probe = Message("big", "t1", "user", "")
    body = "a" * (MAX_MESSAGE_BYTES - message_size(probe) - 10)
    await memory.save_messages([Message("big", "t1", "user", body)])
    into = memory.clone_thread("t1", "n" * 256, resource_id="r" * 256, source_resource_id="r1")
    await rejected(memory, into, "copy of message 'big'")


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"thread_id": ""}, "thread_id"),
        ({"thread_id": " "}, "thread_id"),
        ({"thread_id": 7}, "thread_id"),
        ({"thread_id": "n", "title": None}, "title"),
        ({"thread_id": "n", "metadata": 5}, "metadata"),
        ({"thread_id": "n", "metadata": [("k", 1)]}, "metadata"),
    ],
)
async def test_create_thread_rejects_bad_input(memory: Memory, options: dict[str, Any], field: str) -> None:
    await rejected(memory, memory.create_thread("r1", **options), field)
    await rejected(memory, memory.create_thread("", thread_id="n"), "resource_id")


async def test_create_thread_generates_an_id_only_for_none(memory: Memory) -> None:
    thread = await memory.create_thread("r1")
    assert len(thread.id) == 36 and await memory.get_thread(thread.id) == thread


# ---------------------------------------------------------------- recall query text


async def test_recall_rejects_an_oversized_or_invalid_query(memory: Memory) -> None:
    await rejected(
        memory, memory.recall("t1", "r1", vector_search_string="a" * (MAX_SEARCH_CHARS + 1)), "vector_search_string"
    )
    await rejected(memory, memory.recall("t1", "r1", vector_search_string="lone \ud800"), "vector_search_string")


# ---------------------------------------------------------------- pagination, cursors and top_k


@pytest.mark.parametrize("per_page", [MAX_PER_PAGE + 1, 2**63 - 1, 2**63])
async def test_per_page_over_the_maximum_is_rejected(memory: Memory, per_page: int) -> None:
    page = await memory.list_messages("t1", per_page=2)
    assert page.next_cursor is not None
    await rejected(memory, memory.list_messages("t1", per_page=per_page), "per_page")
    await rejected(memory, memory.list_messages("t1", per_page=per_page, cursor=page.next_cursor), "per_page")
    await rejected(memory, memory.list_threads(per_page=per_page), "per_page")
    await rejected(memory, memory.recall("t1", "r1", per_page=per_page, cursor=page.next_cursor), "per_page")
    await rejected(memory, memory.recall("t1", "r1", thread_config={"last_messages": per_page}), "last_messages")


async def test_per_page_at_the_maximum_pages_by_cursor(memory: Memory) -> None:
    first = await memory.list_messages("t1", per_page=2)
    assert first.next_cursor is not None
    rest = await memory.list_messages("t1", per_page=MAX_PER_PAGE, cursor=first.next_cursor)
    assert [m.id for m in rest.items] == ["m2", "m3", "m4"]
    assert (rest.has_more, rest.next_cursor) == (False, None)


@pytest.mark.parametrize(
    "key",
    [
        (TIME_MAX_US + 1, 1),
        (TIME_MIN_US - 1, 1),
        (2**80, 1),
        (0, -1),
        (0, 2**63),
        (0, 2**64),
        (0, "m1"),
        (0.5, 1),
        (True, 1),
    ],
)
async def test_forged_message_cursor_keys_are_rejected(memory: Memory, key: tuple[Any, ...]) -> None:
    page = await memory.list_messages("t1", per_page=2)
    assert page.next_cursor is not None
    forged = encode_cursor(real_cursor_fingerprint(page.next_cursor), key)
    await rejected(memory, memory.list_messages("t1", per_page=2, cursor=forged), "cursor")


@pytest.mark.parametrize("key", [(0, ""), (0, "x" * 257), (0, "a\x00"), (0, 5), (TIME_MAX_US + 1, "t1")])
async def test_forged_thread_cursor_keys_are_rejected(memory: Memory, key: tuple[Any, ...]) -> None:
    page = await memory.list_threads(per_page=1)
    assert page.next_cursor is not None
    forged = encode_cursor(real_cursor_fingerprint(page.next_cursor), key)
    await rejected(memory, memory.list_threads(per_page=1, cursor=forged), "cursor")


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        _b64("[" * 1000 + "]" * 1000),  # short enough, nested past the JSON parser's recursion limit
        _b64("[" * 100_000 + "]" * 100_000),
        _b64('{"a":' * 500 + "1" + "}" * 500),
        "A" * (MAX_CURSOR_CHARS + 1),
        _b64('[1, "abc", [1, 2]]'),  # not the exact shape this library writes
        _b64('[1,"abc",[1,2],3]'),
        _b64('[1,"abc",[' + "9" * 5000 + ",1]]"),
        "!!!!",
        base64.urlsafe_b64encode('[1,"é",[1,1]]'.encode()).decode(),
        "",
    ],
)
async def test_malformed_cursors_are_rejected(memory: Memory, cursor: str) -> None:
    await rejected(memory, memory.list_messages("t1", per_page=2, cursor=cursor), "cursor")
    await rejected(memory, memory.list_threads(per_page=1, cursor=cursor), "cursor")


async def test_longest_real_cursor_is_accepted(memory: Memory) -> None:
    # A 256-character id of astral characters: 12 JSON characters each.
    longest = "\U0001f600" * 256
    await memory.storage.save_thread(Thread(longest, "r1", created_at=TIME_MAX))
    first = await memory.list_threads(per_page=1)
    assert [t.id for t in first.items] == [longest] and first.next_cursor is not None
    assert len(first.next_cursor) <= MAX_CURSOR_CHARS
    rest = await memory.list_threads(per_page=10, cursor=first.next_cursor)
    assert sorted(t.id for t in rest.items) == ["t1", "t2"]


@pytest.mark.parametrize("top_k", [0, MAX_TOP_K + 1, 2**63, True, 2.0, "4"])
async def test_top_k_out_of_range_is_rejected(memory: Memory, top_k: Any) -> None:
    with pytest.raises(ValidationError) as info:
        SemanticRecall(top_k=top_k)
    assert info.value.field == "semantic_recall.top_k"
    await rejected(
        memory, memory.recall("t1", "r1", thread_config={"semantic_recall": {"topK": top_k}}), "semantic_recall.top_k"
    )
    assert SemanticRecall(top_k=MAX_TOP_K).top_k == MAX_TOP_K


# ---------------------------------------------------------------- raw exceptions become ValidationError


@pytest.mark.parametrize("role", [["user"], {"user": 1}, {"user"}, None, 1])
async def test_unhashable_or_non_str_role_is_rejected(memory: Memory, role: Any) -> None:
    bad = {"id": "z", "thread_id": "t1", "role": role, "content": "x"}
    await rejected(memory, memory.save_messages([Message("ok", "t1", "user", "fine"), bad]), "message 'z'.role")


async def test_bad_thread_config_fields_are_rejected_in_recall(memory: Memory) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"lastMessages": -1}, "last_messages"),
        ({"semanticRecall": "on"}, "semantic_recall"),
        ({"workingMemory": {"scope": "user"}}, "working_memory.scope"),
        ({"generateTitle": 3}, "generate_title"),
        ({"nope": 1}, "thread_config.nope"),
    ]
    for config, field in cases:
        await rejected(memory, memory.recall("t1", "r1", thread_config=config), field)
    assert Memory(memory.storage, config={"last_messages": 5}).config.last_messages == 5  # a mapping is checked in
    with pytest.raises(ValidationError) as info:
        Memory(memory.storage, config={"last_messagez": 5})
    assert info.value.field == "config.last_messagez"
    with pytest.raises(ValidationError) as info:
        Memory(memory.storage, config=5)  # type: ignore[arg-type]
    assert info.value.field == "config"


async def test_unknown_or_bad_connect_options_are_rejected(url: str) -> None:
    with pytest.raises(ValidationError) as info:
        await connect(url, bogus=1)
    assert info.value.field == "option 'bogus'"
    with pytest.raises(ValidationError) as info:
        await connect(url, clock="now")
    assert info.value.field == "option 'clock'"


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/missing"},
        {"type": "object", "properties": {"name": {"$ref": "https://example.invalid/schema.json"}}},
    ],
)
async def test_working_memory_schema_with_unresolvable_ref(memory: Memory, schema: dict[str, Any]) -> None:
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, schema=schema, template="none yet"))
    call = memory.update_working_memory("t1", {"name": "Ada"}, thread_config=config)
    await rejected(memory, call, "working_memory.schema")
    assert await memory.get_working_memory("t1", thread_config=config) == "none yet"
    assert await memory.storage.get_resource("r1") is None


async def test_message_range_with_unknown_keys_is_rejected_in_recall(memory: Memory) -> None:
    config = {"semanticRecall": {"messageRange": {"before": 1, "afterr": 2}}}
    await rejected(memory, memory.recall("t1", "r1", thread_config=config), "semantic_recall.message_range.afterr")

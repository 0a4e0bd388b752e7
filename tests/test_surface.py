"""The app developer's surface of ``Memory`` (issue 12): generated ids,
append-style saves, explicit thread creation, working memory by resource
with versions, erasure with vectors, chat formats, and inputs refused before
any I/O. Storage-level rules (R-LAST, R-ERASE, R-WM) live in the conformance
suite; these tests cover what the facade composes, on every embedded store."""

from __future__ import annotations

import importlib.util
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from enum import IntEnum
from pathlib import Path
from typing import Any

import pytest

from memory_core import (
    ConflictError,
    ManualClock,
    Memory,
    MemoryConfig,
    Message,
    OwnershipError,
    ResourceErasure,
    ValidationError,
    WorkingMemory,
    connect,
    connect_vector,
    new_message_id,
)
from memory_core.chat import from_openai_chat, from_responses_items, to_openai_chat, to_responses_items
from memory_core.registry import register_vector
from memory_core.validation import MAX_MESSAGE_BYTES

pytestmark = pytest.mark.anyio

T0 = datetime(2025, 1, 1, tzinfo=UTC)
URLS = ["memory://"] + (["sqlite"] if importlib.util.find_spec("memory_core_sqlite") else [])
WM = MemoryConfig(working_memory=WorkingMemory(enabled=True, template="# empty"))


@pytest.fixture(params=URLS)
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    url = f"sqlite:///{tmp_path / 'memory.db'}" if request.param == "sqlite" else request.param
    storage = await connect(url, clock=ManualClock(T0))
    async with Memory(storage, config=WM) as memory:
        yield memory


async def test_generated_message_ids_are_time_ordered_uuid7() -> None:
    ids = [new_message_id() for _ in range(50)]
    assert ids == sorted(ids) and len(set(ids)) == 50
    assert all(uuid.UUID(i).version == 7 for i in ids)


async def test_append_messages_generates_ids_and_keeps_order(memory: Memory) -> None:
    await memory.create_thread("u1", thread_id="t1")
    saved = await memory.append_messages("t1", [("user", "hi"), {"role": "assistant", "content": "hello"}])
    assert [m.content for m in saved] == ["hi", "hello"]
    assert all(uuid.UUID(m.id).version == 7 for m in saved)
    again = await memory.append_messages("t1", [("user", "hi")])  # the snippet run twice: a new message
    page = await memory.list_messages("t1")
    assert [m.id for m in page.items] == [*(m.id for m in saved), again[0].id]
    with pytest.raises(OwnershipError):
        await memory.append_messages("t1", [("user", "x")], resource_id="u2")
    for bad in ([("user",)], [{"role": "user", "content": "x", "colour": 1}], "hi", [("developer", "x")]):
        with pytest.raises(ValidationError):
            await memory.append_messages("t1", bad)  # type: ignore[arg-type]
    assert (await memory.list_messages("t1")).total == 3


async def test_errors_name_a_turn_by_position_when_its_id_was_generated(memory: Memory) -> None:
    await memory.create_thread("u1", thread_id="t1")
    cases: list[tuple[list[Any], str]] = [
        ([("user", "ok"), ("wizard", "x")], "turns[1].role"),
        ([("user", None)], "turns[0].content"),
        ([("user", {"n": float("nan")})], "turns[0].content['n']"),
        ([("user", "x" * (16 * 2**20))], "turns[0]"),
        ([{"role": "user", "content": "x", "id": "mine", "created_at": "bad"}], "message 'mine'.created_at"),
    ]
    for turns, field in cases:
        with pytest.raises(ValidationError) as caught:
            await memory.append_messages("t1", turns)
        assert caught.value.field == field
    with pytest.raises(ValidationError) as caught:
        await memory.save_messages([{"thread_id": "t1", "role": "wizard", "content": "x"}])
    assert caught.value.field == "messages[0].role"
    assert (await memory.list_messages("t1")).total == 0


async def test_append_messages_keeps_system_turns_when_asked(memory: Memory) -> None:
    await memory.create_thread("u1", thread_id="t1")
    turns = [("system", "Be terse."), ("user", "hi")]
    assert [m.role for m in await memory.append_messages("t1", turns)] == ["user"]
    assert [m.role for m in await memory.append_messages("t1", turns, persist_system=True)] == ["system", "user"]
    assert [m.role for m in (await memory.list_messages("t1")).items] == ["user", "system", "user"]
    with pytest.raises(ValidationError):
        await memory.append_messages("t1", turns, persist_system="yes")  # type: ignore[arg-type]


async def test_save_messages_fills_missing_ids_and_skips_system(memory: Memory) -> None:
    await memory.create_thread("u1", thread_id="t1")
    saved = await memory.save_messages(
        [
            {"thread_id": "t1", "role": "system", "content": "You are terse."},
            {"thread_id": "t1", "role": "user", "content": "hi"},
            {"id": None, "thread_id": "t1", "role": "assistant", "content": "yo"},
        ]
    )
    assert [m.role for m in saved] == ["user", "assistant"]
    assert [m.role for m in (await memory.list_messages("t1")).items] == ["user", "assistant"]
    assert await memory.save_messages([Message("s", "t1", "system", "only system")]) == []
    # the storage itself still keeps system messages when asked
    await memory.storage.save_messages([Message("s", "t1", "system", "kept")])
    assert (await memory.list_messages("t1")).total == 3


async def test_create_thread_is_explicit_and_get_or_create_reuses(memory: Memory) -> None:
    first = await memory.create_thread("u1", thread_id="t1", title="trip", metadata={"a": 1})
    with pytest.raises(ConflictError):
        await memory.create_thread("u1", thread_id="t1", title="other")
    assert await memory.get_thread("t1") == first
    thread, created = await memory.get_or_create_thread("u1", "t1", title="ignored")
    assert (thread, created) == (first, False)
    fresh, created = await memory.get_or_create_thread("u1", "t2", title="new")
    assert created and fresh.title == "new"
    with pytest.raises(OwnershipError, match="another resource"):
        await memory.get_or_create_thread("u2", "t1")
    replaced = await memory.create_thread("u1", thread_id="t1", title="reset", replace=True)
    assert replaced.title == "reset" and replaced.metadata == {}


async def test_clone_title_defaults_to_clone_of(memory: Memory) -> None:
    await memory.create_thread("u1", thread_id="t1", title="trip")
    clone = (await memory.clone_thread("t1")).thread
    named = (await memory.clone_thread("t1", title="mine")).thread
    assert (clone.title, named.title) == ("Clone of trip", "mine")


async def test_working_memory_by_resource_with_stored_flag_and_versions(memory: Memory) -> None:
    state = await memory.read_working_memory(resource_id="u1")  # no thread needed
    assert (state.text, state.stored, state.version) == ("# empty", False, None)
    await memory.update_working_memory(None, "# empty", resource_id="u1")  # the template's text, stored
    state = await memory.read_working_memory(resource_id="u1")
    assert state.stored and state.text == "# empty" and state.version is not None
    await memory.update_working_memory(None, "v2", "u1", if_version=state.version)
    with pytest.raises(ConflictError):  # that version is gone
        await memory.update_working_memory(None, "v3", "u1", if_version=state.version)
    with pytest.raises(ConflictError, match="stored already"):  # something is stored
        await memory.update_working_memory(None, "v3", "u1", if_version=None)
    for bad in (None, 5, ["x"]):
        with pytest.raises(ValidationError, match="must be a str or a dict"):
            await memory.update_working_memory(None, bad, "u1")  # type: ignore[arg-type]
    assert await memory.get_working_memory(resource_id="u1") == "v2"
    await memory.create_thread("u1", thread_id="t1")
    assert await memory.get_working_memory("t1") == "v2"  # through the thread, as before
    assert await memory.append_working_memory("t1", "likes tea") == "v2\nlikes tea"
    with pytest.raises(ValidationError):
        await memory.read_working_memory()
    with pytest.raises(ValidationError):
        await memory.read_working_memory(resource_id="u1", thread_config={"working_memory": {"scope": "thread"}})


async def test_append_refused_with_a_schema(memory: Memory) -> None:
    config = {"working_memory": {"enabled": True, "schema": {"type": "object"}}}
    with pytest.raises(ValidationError, match="schema"):
        await memory.append_working_memory(None, "x", resource_id="u1", thread_config=config)


async def test_delete_resource_removes_vectors_too(tmp_path: Path) -> None:
    pytest.importorskip("memory_core_qdrant")
    storage = await connect("memory://", clock=ManualClock(T0))
    vectors = await connect_vector("qdrant::memory:")
    async with Memory(storage, vectors, config=WM) as memory:
        await memory.create_thread("u1", thread_id="t1")
        await memory.create_thread("u2", thread_id="k1")
        await memory.append_messages("t1", [("user", "I fly to Lisbon"), ("assistant", "noted")])
        await memory.append_messages("k1", [("user", "other user")])
        await memory.update_working_memory(None, "# u1", resource_id="u1")
        erased = await memory.delete_resource("u1")
        assert erased == ResourceErasure("u1", ["t1"], 2, True)
        assert await vectors.count(resource_id="u1") == 0 and await vectors.count(resource_id="u2") == 1
        assert not (await memory.read_working_memory(resource_id="u1")).stored


async def test_inputs_refused_before_io(memory: Memory) -> None:
    class Size(IntEnum):
        SMALL = 2

    await memory.create_thread("u1", thread_id="t1")
    await memory.append_messages("t1", [("user", "a"), ("user", "b"), ("user", "c")])
    page = await memory.list_messages("t1", per_page=Size.SMALL)
    assert type(page.per_page) is int and len(page.items) == 2
    for bad in (["t1"], 5, ""):
        with pytest.raises(ValidationError):
            await memory.reindex(thread_id=bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="Message needs the field"):
        await memory.storage.save_messages([{"role": "user", "content": "hi"}])


async def test_connect_errors_name_the_option_and_the_url_kind() -> None:
    pytest.importorskip("memory_core_redis")
    with pytest.raises(ValidationError, match="option 'namesapce'"):
        await connect("redis://127.0.0.1:1/0", namesapce="x")  # nothing listens on port 1: no I/O happened
    register_vector("vectorish", object())
    with pytest.raises(ValidationError, match="vector store URL"):
        await connect("vectorish://x")
    pytest.importorskip("memory_core_sqlite")
    with pytest.raises(ValidationError, match="storage URL"):
        await connect_vector("sqlite:///x.db")


async def test_an_unknown_option_lists_every_keyword_and_the_one_meant(tmp_path: Path) -> None:
    pytest.importorskip("memory_core_sqlite")
    with pytest.raises(ValidationError) as caught:
        await connect(f"sqlite:///{tmp_path / 'x.db'}", namesapce="x")
    assert "did you mean 'namespace'?" in str(caught.value)
    assert "sqlite accepts create_dirs, namespace, synchronous, timeout" in str(caught.value)  # clock: a test hook
    assert not (tmp_path / "x.db").exists()


def _chat() -> list[dict[str, Any]]:
    return [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "weather?"}, {"type": "image_url", "image_url": {}}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny.", "refusal": None},
    ]


def _responses() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "weather?"},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "brief"}]},
        {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
    ]


async def test_chat_formats_round_trip_losslessly_through_a_store() -> None:
    storage = await connect("memory://", clock=ManualClock(T0))
    async with storage:
        await storage.save_thread({"id": "t1", "resource_id": "u1"})
        chat = from_openai_chat(_chat(), "t1")
        assert [m.role for m in chat] == ["system", "user", "assistant", "tool", "assistant"]
        items = from_responses_items(_responses(), "t1")
        assert [m.role for m in items] == ["user", "system", "assistant", "tool", "assistant"]
        await storage.save_messages(chat + items)
        stored = (await storage.list_messages("t1", per_page=False)).items
        assert to_openai_chat(stored[:5]) == _chat()
        assert to_responses_items(stored[5:]) == _responses()
        # other messages convert by text
        assert to_openai_chat([Message("x", "t1", "user", "plain")]) == [{"role": "user", "content": "plain"}]
    for bad in ([{"role": "critic", "content": "x"}], [{"content": "x"}], ["hi"], {"role": "user"}):
        with pytest.raises(ValidationError):
            from_openai_chat(bad, "t1")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        from_responses_items([{"type": "message", "role": "tool", "content": "x"}], "t1")


async def test_tool_calls_survive_a_conversion_to_the_other_format() -> None:
    # A conversation stored as Responses items (the Agents SDK's shape) read
    # back for a Chat Completions call must keep its calls and their results:
    # an API refuses a tool message that answers no tool_calls.
    parallel: list[dict[str, Any]] = [
        {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "t", "arguments": '{"tz": "UTC"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "noon"}]},
        {"type": "function_call", "call_id": "c3", "name": "w", "arguments": "{}"},
    ]
    storage = await connect("memory://", clock=ManualClock(T0))
    async with storage:
        await storage.save_thread({"id": "t1", "resource_id": "u1"})
        await storage.save_messages(from_responses_items(parallel, "t1") + from_openai_chat(_chat(), "t1"))
        stored = (await storage.list_messages("t1", per_page=False)).items
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "t", "arguments": '{"tz": "UTC"}'}},
    ]
    assert to_openai_chat(stored[:5]) == [
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": "noon"},
        {"role": "assistant", "content": None, "tool_calls": [{**calls[0], "id": "c3"}]},
    ]
    assert to_responses_items(stored[5:]) == [
        {"type": "message", "role": "system", "content": "Be brief."},
        {"type": "message", "role": "user", "content": "weather?"},
        {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"type": "message", "role": "assistant", "content": "Sunny."},
    ]


async def test_working_memory_refuses_a_malformed_version_and_names_its_field_over_r_size(memory: Memory) -> None:
    await memory.update_working_memory(None, "v1", "u1")
    for bad in ("", "ABCDEF0123456789ABCDEF0123456789", "v1", "0" * 31, "0" * 64):
        with pytest.raises(ValidationError) as caught:
            await memory.update_working_memory(None, "v2", "u1", if_version=bad)
        assert caught.value.field == "if_version"
    with pytest.raises(ValidationError) as caught:
        await memory.update_working_memory(None, "x" * (MAX_MESSAGE_BYTES + 1), "u1")
    assert caught.value.field == "working_memory" and caught.value.rule == "R-SIZE"
    assert (await memory.read_working_memory(None, "u1")).text == "v1"

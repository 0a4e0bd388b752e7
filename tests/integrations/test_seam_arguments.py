"""Every seam's constructor checks its ``memory`` as ``Memory(...)`` checks
its stores (one checker, :func:`memory_core.arguments.check_memory`): a URL,
a storage or None is a ValidationError naming ``memory`` and the fix, before
any I/O."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memory_core import InMemoryStorage, Memory, ValidationError


def _seams() -> dict[str, Callable[[Any], object]]:
    """Each seam's constructor, given only the memory argument."""
    found: dict[str, Callable[[Any], object]] = {}
    try:
        from memory_core.integrations.openai_agents import MemoryCoreSession
    except ImportError:
        pass
    else:
        found["openai-session"] = lambda memory: MemoryCoreSession("s1", memory, resource_id="u1")
    try:
        from memory_core.integrations.pydantic_ai import MessageHistory
    except ImportError:
        pass
    else:
        found["pydantic-history"] = lambda memory: MessageHistory(memory, "u1")
    try:
        from memory_core.integrations.google_adk import MemoryCoreMemoryService, MemoryCoreSessionService
    except ImportError:
        pass
    else:
        found["adk-sessions"] = MemoryCoreSessionService
        found["adk-memory"] = MemoryCoreMemoryService
    return found


SEAMS = _seams()
WRONG: dict[str, tuple[Callable[[], Any], str]] = {
    "url": (lambda: "sqlite:///app.db", "Memory.open('sqlite:///app.db'"),
    "storage": (InMemoryStorage, "wrap the store: Memory(storage, vector)"),
    "none": (lambda: None, "Memory.open(url"),
}


@pytest.mark.parametrize("seam", sorted(SEAMS))
@pytest.mark.parametrize("wrong", sorted(WRONG))
def test_a_seam_refuses_what_is_not_a_memory(seam: str, wrong: str) -> None:
    make, fix = WRONG[wrong]
    with pytest.raises(ValidationError) as caught:
        SEAMS[seam](make())
    assert caught.value.field == "memory" and fix in caught.value.reason, caught.value


@pytest.mark.skipif(
    not {"openai-session", "adk-sessions"} <= set(SEAMS), reason="openai-agents or google-adk is not installed"
)
def test_tool_factories_and_id_helpers_name_a_wrong_argument() -> None:
    """Issue 26: ``memory_tools("chat")`` raised ``AttributeError: 'str' object
    has no attribute 'memory'`` (a Memory or None in place of the session
    too), and ADK's id helpers ``user_resource``, ``app_resource`` and
    ``session_thread`` raised ``AttributeError`` for a non-str id; each is a
    ValidationError naming the argument, as the seam constructors give."""
    from memory_core import MemoryConfig, WorkingMemory
    from memory_core.integrations.google_adk import app_resource, session_thread, user_resource
    from memory_core.integrations.openai_agents import memory_tools

    memory = Memory(InMemoryStorage(), config=MemoryConfig(working_memory=WorkingMemory(enabled=True)))
    for wrong in ("chat", memory, None):
        with pytest.raises(ValidationError) as caught:
            memory_tools(wrong)  # type: ignore[arg-type]
        assert caught.value.field == "session", caught.value
        assert "memory_tools(MemoryCoreSession(session_id, memory))" in caught.value.reason, caught.value
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: user_resource(1, "u"), "app_name"),  # type: ignore[arg-type]
        (lambda: user_resource("a", None), "user_id"),  # type: ignore[arg-type]
        (lambda: app_resource(None), "app_name"),  # type: ignore[arg-type]
        (lambda: session_thread("a", "u", 5), "session_id"),  # type: ignore[arg-type]
    ]
    for build, field in cases:
        with pytest.raises(ValidationError) as caught:
            build()
        assert caught.value.field == field, caught.value


@pytest.mark.skipif("adk-memory" not in SEAMS, reason="google-adk is not installed")
def test_the_adk_memory_service_needs_vectors() -> None:
    with pytest.raises(ValidationError) as caught:
        SEAMS["adk-memory"](Memory(InMemoryStorage()))
    assert caught.value.field == "memory.vector"


@pytest.mark.skipif(
    not {"openai-session", "pydantic-history", "adk-memory"} <= set(SEAMS), reason="a framework is missing"
)
def test_scope_and_floor_options_are_checked_in_the_callers_words() -> None:
    from agents import RunContextWrapper

    from memory_core import InMemoryVectorStore
    from memory_core.embedders import LexicalHashEmbedder
    from memory_core.integrations.openai_agents import MemoryCoreSession, memory_tools
    from memory_core.integrations.pydantic_ai import MessageHistory

    memory = Memory(InMemoryStorage(), InMemoryVectorStore(), LexicalHashEmbedder(), allow_volatile_vectors=True)
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: MemoryCoreSession("s", memory, scope_ids=1), "scope_ids"),  # type: ignore[arg-type]
        (lambda: MessageHistory(memory, "u", scope_ids="yes"), "scope_ids"),  # type: ignore[arg-type]
        (lambda: memory_tools(MemoryCoreSession("s", memory), min_score="high"), "min_score"),  # type: ignore[arg-type]
        (lambda: MessageHistory(memory, "u").tools("c", min_score=1.5), "min_score"),
        (lambda: SEAMS["adk-memory"](memory, min_score=True), "min_score"),  # type: ignore[call-arg]
        (lambda: SEAMS["adk-memory"](memory, top_k=0), "top_k"),  # type: ignore[call-arg]
        # 256 characters once scoped: the caller's own id is named
        (lambda: MemoryCoreSession("s" * 250, memory, resource_id="u").thread_id(), "session_id"),
        (lambda: MessageHistory(memory, "u").thread_id("c" * 250), "conversation_id"),
    ]
    for build, field in cases:
        with pytest.raises(ValidationError) as caught:
            build()
        assert caught.value.field == field, caught.value
    # the length is the composed id's, said as such (was "session_id: must be 1-256 characters, got 515")
    composed: list[tuple[Callable[[], object], str, str]] = [
        (lambda: MemoryCoreSession("s" * 250, memory, resource_id="u" * 250).thread_id(), "session_id", "resource_id"),
        (lambda: MessageHistory(memory, "u" * 250).thread_id("c" * 250), "conversation_id", "resource_id"),
    ]
    for build, field, owner in composed:
        with pytest.raises(
            ValidationError, match=rf"{field} with {owner} makes a thread id of 5\d\d characters"
        ) as caught:
            build()
        assert caught.value.field == field, caught.value
    session = MemoryCoreSession("a:b", memory)  # the owner from the run context (F3: never over a given one)
    assert session.thread_id(RunContextWrapper({"resource_id": "x:y"})) == "openai-agents:x%3Ay:a%3Ab"


@pytest.mark.anyio
@pytest.mark.skipif("adk-memory" not in SEAMS, reason="google-adk is not installed")
async def test_adk_ids_too_long_once_composed_are_named_in_the_callers_words() -> None:
    from memory_core.integrations.google_adk import MemoryCoreSessionService

    service = MemoryCoreSessionService(Memory(InMemoryStorage()))
    cases = [
        (
            {"app_name": "a", "user_id": "u" * 253, "session_id": "s"},
            "user_id",
            "user_id with app_name makes a resource id",
        ),
        (
            {"app_name": "a", "user_id": "u", "session_id": "s" * 250},
            "session_id",
            "session_id with app_name and user_id",
        ),
        ({"app_name": ":" * 100, "user_id": "u", "session_id": "s"}, "app_name", "app_name makes a resource id"),
    ]
    for ids, field, words in cases:
        app_name, user_id, session_id = ids["app_name"], ids["user_id"], ids["session_id"]
        with pytest.raises(ValidationError, match=words) as caught:
            await service.create_session(app_name=app_name, user_id=user_id, session_id=session_id)
        assert caught.value.field == field, caught.value
        with pytest.raises(ValidationError) as caught:
            await service.get_session(app_name=app_name, user_id=user_id, session_id=session_id)
        assert caught.value.field == field, caught.value


@pytest.mark.anyio
@pytest.mark.skipif("openai-session" not in SEAMS, reason="openai-agents is not installed")
async def test_a_bad_item_is_named_by_its_index_and_path_not_an_internal_id() -> None:
    """Before: ``message '01a2…'.content['item']['content']``, an id the
    session generated and the caller never saw."""
    from memory_core.integrations.openai_agents import MemoryCoreSession

    session = MemoryCoreSession("s", Memory(InMemoryStorage()), resource_id="u")
    bad: Any = [{"role": "user", "content": "ok"}, {"role": "user", "content": [{"type": "x", "v": float("nan")}]}]
    with pytest.raises(ValidationError) as caught:
        await session.add_items(bad)
    assert caught.value.field == "items[1]['content'][0]['v']" and caught.value.rule == "R-JSON", caught.value
    huge: Any = [{"role": "user", "content": "x" * (16 * 2**20)}]
    with pytest.raises(ValidationError) as caught:
        await session.add_items(huge)
    assert caught.value.field.startswith("items[0]"), caught.value
    assert await session.get_items() == []


@pytest.mark.anyio
@pytest.mark.skipif("adk-sessions" not in SEAMS, reason="google-adk is not installed")
@pytest.mark.parametrize("state", [[1], "k=v", {1: "v"}])
async def test_adk_state_that_is_not_a_dict_is_named(state: Any) -> None:
    """Before: ``create_session(state=[1])`` raised a raw TypeError."""
    memory = Memory(InMemoryStorage())
    with pytest.raises(ValidationError) as caught:
        await SEAMS["adk-sessions"](memory).create_session(app_name="a", user_id="u", session_id="s", state=state)  # type: ignore[attr-defined]
    assert caught.value.field == "state", caught.value
    assert await memory.list_threads() is not None and (await memory.list_threads()).items == []


@pytest.mark.anyio
@pytest.mark.skipif("adk-sessions" not in SEAMS, reason="google-adk is not installed")
async def test_adk_careless_arguments_are_named_before_any_write() -> None:
    """Issue 26: ``create_session(session_id=5)`` and ``append_event`` with
    None raised AttributeError, and ``search_memory(query=None)`` returned
    nothing; each is now a ValidationError naming the argument."""
    from google.adk.events.event import Event

    from memory_core import MemoryConfig, SemanticRecall

    config = MemoryConfig(semantic_recall=SemanticRecall(mode="lexical"))
    async with Memory(InMemoryStorage(), config=config) as memory:
        sessions, search = SEAMS["adk-sessions"](memory), SEAMS["adk-memory"](memory)
        with pytest.raises(ValidationError) as caught:
            await sessions.create_session(app_name="a", user_id="u", session_id=5)  # type: ignore[attr-defined]
        assert caught.value.field == "session_id" and "int 5" in caught.value.reason
        assert (await memory.list_threads()).items == []
        session = await sessions.create_session(app_name="a", user_id="u", session_id="s")  # type: ignore[attr-defined]
        with pytest.raises(ValidationError) as caught:
            await sessions.append_event(session, None)  # type: ignore[attr-defined]
        assert caught.value.field == "event", caught.value
        with pytest.raises(ValidationError) as caught:
            await sessions.append_event(None, Event(author="user"))  # type: ignore[attr-defined]
        assert caught.value.field == "session", caught.value
        assert (await memory.list_messages("adk:a:u:s", "adk:a:u")).items == []
        with pytest.raises(ValidationError) as caught:
            await search.search_memory(app_name="a", user_id="u", query=None)  # type: ignore[attr-defined]
        assert caught.value.field == "query", caught.value


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("control", ["\x00", "\n", "\x1b", "\x85"])
async def test_every_seam_refuses_an_id_with_a_control_character(control: str, anyio_backend: str) -> None:
    """Issue 26: R-ID refuses control characters in the core check, so every
    seam's id arguments refuse them too, named by the seam's own field
    (before, only NUL was refused; ``"chat\\n"`` was a session id)."""
    from memory_core.integrations.google_adk import MemoryCoreSessionService
    from memory_core.integrations.openai_agents import MemoryCoreSession
    from memory_core.integrations.pydantic_ai import MessageHistory

    bad = f"chat{control}x"
    async with Memory(InMemoryStorage()) as memory:
        adk = MemoryCoreSessionService(memory)
        calls: list[tuple[Callable[[], Any], str]] = [
            (lambda: MemoryCoreSession(bad, memory, resource_id="u1"), "session_id"),
            (lambda: MemoryCoreSession("s1", memory, resource_id=bad), "resource_id"),
            (lambda: MessageHistory(memory, bad), "resource_id"),
            (lambda: MessageHistory(memory, "u1").thread_id(bad), "conversation_id"),
            (lambda: adk.create_session(app_name="a", user_id=bad, session_id="s"), "user_id"),
            (lambda: adk.create_session(app_name=bad, user_id="u", session_id="s"), "app_name"),
            (lambda: adk.create_session(app_name="a", user_id="u", session_id=bad), "session_id"),
        ]
        for call, field in calls:
            with pytest.raises(ValidationError) as caught:
                result = call()
                if hasattr(result, "__await__"):
                    await result
            assert caught.value.field == field and caught.value.rule == "R-ID", caught.value
            assert "control character" in caught.value.reason, caught.value
        assert (await memory.list_threads()).total == 0

"""One meaning of a history limit in every seam
(:func:`memory_core.integrations._threads.check_limit`, the Agents SDK's
``SQLiteSession`` rule): None, a negative int and an int larger than any
thread (over 2**31-1) read everything, 0 nothing, n the newest n; anything
else (a bool, a float, a str) is a ValidationError naming the caller's own
parameter (``limit``, ``session_settings.limit``, ``num_recent_events``).
ADK's ``num_recent_events`` is the one exception:
ADK's own ``GetSessionConfig`` refuses a negative count, and so does the
seam, whose hints then never offer a negative count."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from memory_core import InMemoryStorage, Memory, ValidationError

Reader = Callable[[Any], Awaitable[list[str]]]
"""``read(limit)``: the texts of the newest ``limit`` records, oldest first."""
TEXTS = ["one", "two", "three"]


async def _openai(memory: Memory) -> tuple[Reader, str]:
    from memory_core.integrations.openai_agents import MemoryCoreSession

    session = MemoryCoreSession("s", memory, resource_id="u")
    await session.add_items([{"role": "user", "content": text} for text in TEXTS])  # type: ignore[misc]

    async def read(limit: Any) -> list[str]:
        return [str(item.get("content")) for item in await session.get_items(limit)]

    return read, "limit"


async def _pydantic(memory: Memory) -> tuple[Reader, str]:
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    from memory_core.integrations.pydantic_ai import MessageHistory

    history = MessageHistory(memory, "u")
    await history.append("c", [ModelRequest(parts=[UserPromptPart(text)]) for text in TEXTS])

    async def read(limit: Any) -> list[str]:
        return [str(getattr(m.parts[0], "content", "")) for m in await history.load("c", limit=limit)]

    return read, "limit"


async def _adk(memory: Memory) -> tuple[Reader, str]:
    from google.adk.events.event import Event
    from google.adk.sessions.base_session_service import GetSessionConfig
    from google.genai import types

    from memory_core.integrations.google_adk import MemoryCoreSessionService

    service = MemoryCoreSessionService(memory)
    session = await service.create_session(app_name="a", user_id="u", session_id="s")
    for n, text in enumerate(TEXTS):
        content = types.Content(role="user", parts=[types.Part(text=text)])
        await service.append_event(session, Event(author="user", invocation_id=f"i{n}", content=content))

    async def read(limit: Any) -> list[str]:
        # model_construct: past ADK's own validator (which refuses a negative), as a caller may build it
        config = GetSessionConfig.model_construct(num_recent_events=limit, after_timestamp=None)
        found = await service.get_session(app_name="a", user_id="u", session_id="s", config=config)
        assert found is not None
        return [str(e.content.parts[0].text) for e in found.events if e.content and e.content.parts]

    return read, "num_recent_events"


def _seams() -> dict[str, Callable[[Memory], Awaitable[tuple[Reader, str]]]]:
    found: dict[str, Callable[[Memory], Awaitable[tuple[Reader, str]]]] = {}
    for name, module, make in (
        ("openai", "agents", _openai),
        ("pydantic", "pydantic_ai", _pydantic),
        ("adk", "google.adk", _adk),
    ):
        try:
            __import__(module)
        except ImportError:
            continue
        found[name] = make
    return found


SEAMS = _seams()


@pytest.mark.anyio
@pytest.mark.parametrize("seam", sorted(SEAMS))
async def test_every_seam_reads_a_limit_the_same_way(seam: str) -> None:
    read, field = await SEAMS[seam](Memory(InMemoryStorage()))
    assert await read(None) == TEXTS
    for negative in (-1, -5):
        if seam == "adk":  # ADK's GetSessionConfig refuses it; its services disagree past the validator
            with pytest.raises(ValidationError, match=r"num_recent_events: must be an int >= 0 \(the newest n\)"):
                await read(negative)
        else:  # the SDK's rule: was a "per_page" error (Pydantic)
            assert await read(negative) == TEXTS
    assert await read(0) == []
    assert await read(2) == TEXTS[1:]
    assert await read(10) == TEXTS
    for wrong in (True, False, 2.0, "2", 10.0**12):
        with pytest.raises(ValidationError) as caught:
            await read(wrong)
        assert caught.value.field == field, caught.value  # the caller's own word, never "per_page"
        # Each seam's hint says what that seam reads: ADK refuses negatives (was "(negative: all)" there too).
        assert ("negative" in str(caught.value)) is (seam != "adk"), caught.value
    for large in (2**31 - 1, 2**31, 10**12, 2**63 - 1, 10**30):  # issue 26: more than a thread holds is all
        assert await read(large) == TEXTS  # was "limit: must be at most 2147483647" past 2**31-1


@pytest.mark.anyio
@pytest.mark.skipif("openai" not in SEAMS, reason="openai-agents is not installed")
@pytest.mark.parametrize("limit", [None, -1, 0, 1, 2, 3, 4, 2**31 - 1, 2**31, 10**12, 2**63 - 1])
async def test_get_items_reads_a_limit_as_the_sdks_sqlite_session(limit: int | None) -> None:
    """The oracle is the SDK's own ``SQLiteSession``: before, ``2**31`` and
    ``2**63-1`` were a ValidationError here while it returned every item."""
    from agents import SQLiteSession

    from memory_core.integrations.openai_agents import MemoryCoreSession

    items: Any = [{"role": "user", "content": text} for text in TEXTS]
    reference = SQLiteSession("s")
    ours = MemoryCoreSession("s", Memory(InMemoryStorage()), resource_id="u")
    try:
        await reference.add_items(items)
        await ours.add_items(items)
        assert await ours.get_items(limit) == await reference.get_items(limit)
    finally:
        reference.close()


@pytest.mark.anyio
@pytest.mark.skipif("openai" not in SEAMS, reason="openai-agents is not installed")
@pytest.mark.parametrize("wrong", [True, False, "2", 2.0])
async def test_a_bad_default_limit_names_the_session_setting(wrong: Any) -> None:
    """Before: the SDK's coercion read True as 1, False as 0, "2" and 2.0 as
    2, and the session returned that many items."""
    from memory_core.integrations.openai_agents import MemoryCoreSession

    memory = Memory(InMemoryStorage())
    with pytest.raises(ValidationError) as caught:
        MemoryCoreSession("s", memory, resource_id="u", session_settings={"limit": wrong})
    assert caught.value.field == "session_settings.limit", caught.value
    session = MemoryCoreSession("s", memory, resource_id="u", session_settings={"limit": 2})
    assert session.session_settings is not None
    session.session_settings.limit = wrong  # set after construction, unchecked by the SDK
    with pytest.raises(ValidationError) as caught:
        await session.get_items()
    assert caught.value.field == "session_settings.limit"
    assert await session.get_items(0) == []  # an explicit limit wins over the setting


def test_check_limit() -> None:
    from memory_core.integrations._threads import check_limit

    assert [check_limit(v) for v in (None, 0, 3, -1)] == [None, 0, 3, None]
    with pytest.raises(ValidationError, match="num_recent_events"):
        check_limit(False, "num_recent_events")

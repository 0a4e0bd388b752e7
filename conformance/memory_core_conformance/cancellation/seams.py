"""The framework seams' cases (each imports its framework inside its own
functions, so only the installed frameworks are needed): each sets up on
:func:`~memory_core_conformance.cancellation.cases.base_store` and views the
store through the seam's own reads, as the next caller does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory_core import Memory

from . import WriteCase
from .cases import T0, base_store

__all__ = ["adk_append_event", "openai_add_items", "openai_pop_item", "pydantic_ai_append"]


if TYPE_CHECKING:
    from google.adk.events.event import Event

    from memory_core.integrations.google_adk import MemoryCoreSessionService
    from memory_core.integrations.openai_agents import MemoryCoreSession


def _event(i: int, delta: dict[str, Any]) -> Event:
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.genai import types

    return Event(
        id=f"e{i}",
        invocation_id="inv",
        author="user" if i % 2 else "agent",
        content=types.Content(role="user", parts=[types.Part(text=f"event {i}")]),
        actions=EventActions(state_delta=delta),
        timestamp=T0.timestamp() + i,
    )


def _adk_service(memory: Memory) -> MemoryCoreSessionService:
    from memory_core.integrations.google_adk import MemoryCoreSessionService

    return MemoryCoreSessionService(memory)


async def _adk_setup(memory: Memory) -> None:
    await base_store(memory)
    service = _adk_service(memory)
    session = await service.create_session(
        app_name="app", user_id="u1", session_id="s1", state={"a": 1, "app:x": 1, "user:y": 1}
    )
    await service.append_event(session, _event(1, {"a": 2}))


async def _adk_append(memory: Memory) -> None:
    service = _adk_service(memory)
    session = await service.get_session(app_name="app", user_id="u1", session_id="s1")
    if session is None:
        raise LookupError("the case's session is missing")
    await service.append_event(session, _event(2, {"a": 3, "b": [1, 2], "app:x": 2, "user:y": 2, "temp:z": 1}))


async def _adk_view(memory: Memory) -> Any:
    service = _adk_service(memory)
    session = await service.get_session(app_name="app", user_id="u1", session_id="s1")
    if session is None:
        return None
    events = [(e.id, e.author, e.actions.state_delta if e.actions else None) for e in session.events]
    user = await service.get_user_state(app_name="app", user_id="u1")
    return events, dict(session.state), session.last_update_time, user


def adk_append_event() -> WriteCase:
    """ADK ``append_event`` of an event with session, ``app:``, ``user:``
    and ``temp:`` deltas, to a session holding one event."""
    return WriteCase("adk append_event", _adk_setup, _adk_append, _adk_view)


def _openai(memory: Memory) -> MemoryCoreSession:
    from memory_core.integrations.openai_agents import MemoryCoreSession

    return MemoryCoreSession("chat", memory, resource_id="r1")


async def _openai_setup(memory: Memory) -> None:
    await base_store(memory)
    await _openai(memory).add_items([{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}])


async def _openai_view(memory: Memory) -> Any:
    return await _openai(memory).get_items()


def openai_add_items() -> WriteCase:
    """OpenAI Agents ``add_items`` of two items to a session holding two."""

    async def add(memory: Memory) -> None:
        await _openai(memory).add_items([{"role": "user", "content": "three"}, {"role": "assistant", "content": "4"}])

    return WriteCase("openai add_items", _openai_setup, add, _openai_view)


def openai_pop_item() -> WriteCase:
    """OpenAI Agents ``pop_item`` of a session holding two items."""

    async def pop(memory: Memory) -> None:
        await _openai(memory).pop_item()

    return WriteCase("openai pop_item", _openai_setup, pop, _openai_view)


def pydantic_ai_append() -> WriteCase:
    """Pydantic AI ``MessageHistory.append`` of two requests to a
    conversation holding one."""
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    from memory_core.integrations.pydantic_ai import MessageHistory

    def history(memory: Memory) -> MessageHistory:
        return MessageHistory(memory, "r1")

    def request(text: str) -> ModelRequest:
        return ModelRequest(parts=[UserPromptPart(content=text, timestamp=T0)])

    async def setup(memory: Memory) -> None:
        await base_store(memory)
        await history(memory).append("c1", [request("one")])

    async def append(memory: Memory) -> None:
        await history(memory).append("c1", [request("two"), request("three")])

    async def view(memory: Memory) -> Any:
        return [m.parts[0].content for m in await history(memory).load("c1")]  # type: ignore[union-attr]

    return WriteCase("pydantic_ai append", setup, append, view)

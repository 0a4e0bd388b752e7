"""The framework seams' cases (each imports its framework inside its own
functions, so only the installed frameworks are needed): each sets up on
:func:`~memory_core_conformance.cancellation.cases.base_store` and views the
store through the seam's own reads, as the next caller does (every id, the
ADK app, user and session and the events' ids included, in the run's
:class:`~memory_core_conformance.cancellation.Scope`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory_core import Memory

from . import Scope, WriteCase
from .cases import T0, base_store

__all__ = ["adk_append_event", "openai_add_items", "openai_pop_item", "pydantic_ai_append"]


if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session

    from memory_core.integrations.google_adk import MemoryCoreSessionService
    from memory_core.integrations.openai_agents import MemoryCoreSession


def _event(scope: Scope, i: int, delta: dict[str, Any]) -> Event:
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.genai import types

    return Event(
        id=scope.id(f"e{i}"),
        invocation_id="inv",
        author="user" if i % 2 else "agent",
        content=types.Content(role="user", parts=[types.Part(text=f"event {i}")]),
        actions=EventActions(state_delta=delta),
        timestamp=T0.timestamp() + i,
    )


def _adk_service(memory: Memory) -> MemoryCoreSessionService:
    from memory_core.integrations.google_adk import MemoryCoreSessionService

    return MemoryCoreSessionService(memory)


def _adk_names(scope: Scope) -> tuple[str, str, str]:
    """The case's app, user and session ids in ``scope``."""
    return scope.id("app"), scope.id("u1"), scope.id("s1")


async def _adk_session(memory: Memory, scope: Scope) -> Session | None:
    app, user, session = _adk_names(scope)
    return await _adk_service(memory).get_session(app_name=app, user_id=user, session_id=session)


async def _adk_setup(memory: Memory, scope: Scope) -> None:
    await base_store(memory, scope)
    service = _adk_service(memory)
    app, user, sid = _adk_names(scope)
    session = await service.create_session(
        app_name=app, user_id=user, session_id=sid, state={"a": 1, "app:x": 1, "user:y": 1}
    )
    await service.append_event(session, _event(scope, 1, {"a": 2}))


async def _adk_append(memory: Memory, scope: Scope) -> None:
    session = await _adk_session(memory, scope)
    if session is None:
        raise LookupError("the case's session is missing")
    delta = {"a": 3, "b": [1, 2], "app:x": 2, "user:y": 2, "temp:z": 1}
    await _adk_service(memory).append_event(session, _event(scope, 2, delta))


async def _adk_view(memory: Memory, scope: Scope) -> Any:
    session = await _adk_session(memory, scope)
    if session is None:
        return None
    events = [(e.id, e.author, e.actions.state_delta if e.actions else None) for e in session.events]
    app, user_id, _ = _adk_names(scope)
    user = await _adk_service(memory).get_user_state(app_name=app, user_id=user_id)
    return events, dict(session.state), session.last_update_time, user


def adk_append_event() -> WriteCase:
    """ADK ``append_event`` of an event with session, ``app:``, ``user:``
    and ``temp:`` deltas, to a session holding one event."""
    return WriteCase("adk append_event", _adk_setup, _adk_append, _adk_view)


def _openai(memory: Memory, scope: Scope) -> MemoryCoreSession:
    from memory_core.integrations.openai_agents import MemoryCoreSession

    return MemoryCoreSession(scope.id("chat"), memory, resource_id=scope.id("r1"))


async def _openai_setup(memory: Memory, scope: Scope) -> None:
    await base_store(memory, scope)
    items = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]
    await _openai(memory, scope).add_items(items)  # type: ignore[arg-type]


async def _openai_view(memory: Memory, scope: Scope) -> Any:
    return await _openai(memory, scope).get_items()


def openai_add_items() -> WriteCase:
    """OpenAI Agents ``add_items`` of two items to a session holding two."""

    async def add(memory: Memory, scope: Scope) -> None:
        items = [{"role": "user", "content": "three"}, {"role": "assistant", "content": "4"}]
        await _openai(memory, scope).add_items(items)  # type: ignore[arg-type]

    return WriteCase("openai add_items", _openai_setup, add, _openai_view)


def openai_pop_item() -> WriteCase:
    """OpenAI Agents ``pop_item`` of a session holding two items."""

    async def pop(memory: Memory, scope: Scope) -> None:
        await _openai(memory, scope).pop_item()

    return WriteCase("openai pop_item", _openai_setup, pop, _openai_view)


def pydantic_ai_append() -> WriteCase:
    """Pydantic AI ``MessageHistory.append`` of two requests to a
    conversation holding one."""
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    from memory_core.integrations.pydantic_ai import MessageHistory

    def history(memory: Memory, scope: Scope) -> MessageHistory:
        return MessageHistory(memory, scope.id("r1"))

    def request(text: str) -> ModelRequest:
        return ModelRequest(parts=[UserPromptPart(content=text, timestamp=T0)])

    async def setup(memory: Memory, scope: Scope) -> None:
        await base_store(memory, scope)
        await history(memory, scope).append(scope.id("c1"), [request("one")])

    async def append(memory: Memory, scope: Scope) -> None:
        await history(memory, scope).append(scope.id("c1"), [request("two"), request("three")])

    async def view(memory: Memory, scope: Scope) -> Any:
        return [m.parts[0].content for m in await history(memory, scope).load(scope.id("c1"))]  # type: ignore[union-attr]

    return WriteCase("pydantic_ai append", setup, append, view)

"""Google ADK: the session service against ADK's InMemorySessionService,
stale appends, state scopes and the memory service, on every backend."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types
from memory_core_conformance.integrations.google_adk import run_session_service_machine

from memory_core import Memory, ValidationError
from memory_core.integrations.google_adk import (
    STALE_SESSION_MESSAGE,
    MemoryCoreMemoryService,
    MemoryCoreSessionService,
    session_thread,
    user_resource,
)

from .conftest import OpenMemory


def said(author: str, text: str, **delta: object) -> Event:
    role = "user" if author == "user" else "model"
    return Event(
        invocation_id="inv",
        author=author,
        content=types.Content(role=role, parts=[types.Part(text=text)]),
        actions=EventActions(state_delta=dict(delta)),
    )


def _texts(events: list[Event]) -> list[str]:
    return [e.content.parts[0].text or "" for e in events if e.content and e.content.parts]


def test_differential_against_in_memory_session_service(open_memory: OpenMemory) -> None:
    @asynccontextmanager
    async def service() -> AsyncIterator[MemoryCoreSessionService]:
        async with open_memory() as memory:
            yield MemoryCoreSessionService(memory)

    run_session_service_machine(service)


@pytest.mark.anyio
async def test_stale_appends_are_rejected_and_write_nothing(open_memory: OpenMemory) -> None:
    async with open_memory() as memory:
        service = MemoryCoreSessionService(memory)
        created = await service.create_session(app_name="a", user_id="u", session_id="s")
        first = await service.get_session(app_name="a", user_id="u", session_id="s")
        second = await service.get_session(app_name="a", user_id="u", session_id="s")
        assert first is not None and second is not None
        await service.append_event(first, said("user", "hello", k=1))
        await service.append_event(first, said("assistant", "hi"))  # the appender's own copy stays current
        for stale in (second, created):
            with pytest.raises(StaleSessionError, match="modified in storage since it was loaded") as raised:
                await service.append_event(stale, said("user", "lost", k=2))
            # Issue 26: ADK's text first, then what to do, naming the call and the session.
            text = str(raised.value)
            assert text.startswith(STALE_SESSION_MESSAGE), text
            assert "get_session(app_name='a', user_id='u', session_id='s')" in text and "timed out" in text, text
        stored = await service.get_session(app_name="a", user_id="u", session_id="s")
        assert stored is not None
        assert [e.content.parts[0].text for e in stored.events if e.content and e.content.parts] == ["hello", "hi"]
        assert stored.state == {"k": 1}
        await service.append_event(stored, said("user", "reloaded"))  # a reloaded copy may append again


@pytest.mark.anyio
async def test_state_scopes_live_in_resources_and_temp_is_never_stored(open_memory: OpenMemory) -> None:
    async with open_memory() as memory:
        service = MemoryCoreSessionService(memory)
        state = {"k": "session", "app:theme": "dark", "user:name": "Ada", "temp:scratch": 1}
        session = await service.create_session(app_name="a", user_id="u", state=state, session_id="s")
        assert session.state == {"k": "session", "app:theme": "dark", "user:name": "Ada"}
        await service.append_event(session, said("user", "x", **{"temp:step": 2, "user:name": "Bob"}))
        assert session.state["temp:step"] == 2  # in memory for the invocation ...
        stored = await service.get_session(app_name="a", user_id="u", session_id="s")
        assert stored is not None and "temp:step" not in stored.state  # ... never stored
        assert stored.events[0].actions.state_delta == {"user:name": "Bob"}
        other = await service.create_session(app_name="a", user_id="u", session_id="s2")
        assert other.state == {"app:theme": "dark", "user:name": "Bob"}  # shared across the user's sessions
        resource = await memory.storage.get_resource(user_resource("a", "u"))
        assert resource is not None and resource.metadata == {"name": "Bob"}
        assert await service.get_user_state(app_name="a", user_id="u") == {"name": "Bob"}
        with pytest.raises(AlreadyExistsError):
            await service.create_session(app_name="a", user_id="u", session_id="s")
        with pytest.raises(ValidationError, match="R-JSON"):
            await service.create_session(app_name="a", user_id="u", session_id="s3", state={"k": float("nan")})
        assert await service.get_session(app_name="a", user_id="u", session_id="s3") is None
        generated = await service.create_session(app_name="a", user_id="u")
        assert generated.id and await service.get_session(app_name="a", user_id="u", session_id=generated.id)


@pytest.mark.anyio
async def test_memory_service_searches_the_users_events_only(open_memory: OpenMemory) -> None:
    async with open_memory() as memory:
        sessions, recall = MemoryCoreSessionService(memory), MemoryCoreMemoryService(memory, top_k=2)
        alice = await sessions.create_session(app_name="a", user_id="alice", session_id="s")
        await sessions.append_event(alice, said("user", "my cat is called Miso"))
        await sessions.append_event(alice, said("user", "I like trains"))
        bob = await sessions.create_session(app_name="a", user_id="bob", session_id="s")
        await sessions.append_event(bob, said("user", "my cat is called Rex"))
        await recall.add_session_to_memory(alice)  # already stored: nothing added twice
        assert len((await sessions.get_session(app_name="a", user_id="alice", session_id="s")).events) == 2  # type: ignore[union-attr]
        found = await recall.search_memory(app_name="a", user_id="alice", query="cat Miso")
        texts = [m.content.parts[0].text for m in found.memories if m.content.parts]
        assert texts[0] == "my cat is called Miso" and "my cat is called Rex" not in texts
        assert found.memories[0].author == "user" and found.memories[0].id == alice.events[0].id
        with pytest.raises(ValidationError, match="session_id"):
            await recall.add_events_to_memory(app_name="a", user_id="alice", events=alice.events)


@pytest.mark.anyio
async def test_after_timestamp_walks_back_across_pages_like_adk(open_memory: OpenMemory) -> None:
    """A 130-event session (more than one read page): ``after_timestamp``
    with and without ``num_recent_events`` returns what ADK's own in-memory
    service returns, events out of timestamp order included."""
    from google.adk.sessions.base_session_service import GetSessionConfig
    from google.adk.sessions.in_memory_session_service import InMemorySessionService

    stamps = [1_000.0 + i for i in range(130)]
    stamps[110], stamps[20] = 900.0, 1_500.0  # an old event late, a future one early
    async with open_memory() as memory:
        # Storage alone: the walk is what is tested, embedding 130 events is not.
        ours, theirs = MemoryCoreSessionService(Memory(memory.storage, owns_stores=False)), InMemorySessionService()
        for service in (ours, theirs):
            session = await service.create_session(app_name="a", user_id="u", session_id="s")
            for i, stamp in enumerate(stamps):
                event = said("user", f"e{i}")
                event.timestamp = stamp
                await service.append_event(session, event)
        for after in (899.0, 1_000.0, 1_015.5, 1_120.0, 1_600.0):
            for recent in (None, 0, 5, 120):
                config = GetSessionConfig(num_recent_events=recent, after_timestamp=after)
                mine = await ours.get_session(app_name="a", user_id="u", session_id="s", config=config)
                oracle = await theirs.get_session(app_name="a", user_id="u", session_id="s", config=config)
                assert mine is not None and oracle is not None
                assert _texts(mine.events) == _texts(oracle.events), (after, recent)


@pytest.mark.anyio
async def test_get_session_config_through_the_runner_matches_adks_own_services(
    open_memory: OpenMemory, tmp_path: Path
) -> None:
    """``RunConfig.get_session_config`` (the Runner passes it to
    ``get_session``): what the model is given, for each ``num_recent_events``
    and ``after_timestamp``, is what it is given over ADK's own in-memory and
    SQLite services (the oracles); a negative count is refused as ADK's
    ``GetSessionConfig`` refuses it (before: read as "all", which neither of
    ADK's services gives past the validator: in-memory drops the first
    events, SQLite reads all)."""
    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
    from google.adk.sessions.in_memory_session_service import InMemorySessionService
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    class Seen(BaseLlm):
        """Answers with the texts of the contents it was given, joined."""

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            seen = "|".join(p.text or "" for c in llm_request.contents for p in (c.parts or []))
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=seen)]))

    async def conversation(service: BaseSessionService) -> list[str]:
        runner = Runner(app_name="a", agent=LlmAgent(name="m", model=Seen(model="seen")), session_service=service)
        await service.create_session(app_name="a", user_id="u", session_id="s")
        answers: list[str] = []
        stamps: list[float] = []
        configs = [None, None, None, (0, None), (1, None), (3, None), (None, 2), (2, 3), (10, 0.0), (0, 1)]
        for turn, config in enumerate(configs):
            run_config = RunConfig()
            if config is not None:
                recent, stamp = config
                after = None if stamp is None else stamps[int(stamp)]
                run_config = RunConfig(
                    get_session_config=GetSessionConfig(num_recent_events=recent, after_timestamp=after)
                )
            message = types.Content(role="user", parts=[types.Part(text=f"q{turn}")])
            async for event in runner.run_async(
                user_id="u", session_id="s", new_message=message, run_config=run_config
            ):
                stamps.append(event.timestamp)
                if event.author == "m" and event.content and event.content.parts:
                    answers.append(event.content.parts[0].text or "")
        return answers

    async with open_memory() as memory:
        ours = await conversation(MemoryCoreSessionService(memory))
        in_memory = await conversation(InMemorySessionService())
        sqlite = await conversation(SqliteSessionService(str(tmp_path / "adk.db")))
        assert ours == in_memory == sqlite, (ours, in_memory, sqlite)
        negative = GetSessionConfig.model_construct(num_recent_events=-1, after_timestamp=None)
        with pytest.raises(
            ValidationError, match=r"num_recent_events: must be an int >= 0 \(the newest n\) or None \(all\), got -1$"
        ):
            await MemoryCoreSessionService(memory).get_session(
                app_name="a", user_id="u", session_id="s", config=negative
            )
    with pytest.raises(ValueError, match="num_recent_events must be greater than or equal to 0"):
        GetSessionConfig(num_recent_events=-1)  # ADK's own rule, which the seam keeps


def test_the_stale_session_text_is_adks_own() -> None:
    """ADK's database-backed services all raise this text; code matching on it
    must match ours too (it is private in ADK, so compared here, not imported)."""
    adk = pytest.importorskip("google.adk.sessions.database_session_service", reason="needs sqlalchemy")
    assert STALE_SESSION_MESSAGE == adk._STALE_SESSION_ERROR_MESSAGE


@pytest.mark.anyio
async def test_a_session_branched_through_memory_is_a_session(open_memory: OpenMemory) -> None:
    """ADK has no branch call: ``Memory.branch_thread`` on the session's
    thread, into the thread of a new session id of the same app and user
    (the session id kept in the thread's metadata, ``adk_session``,
    overridden: the session service reads the id from there), gives a
    session holding the events up to the cut, with the state, that appends
    like any other; the original keeps every event."""
    async with open_memory() as memory:
        service = MemoryCoreSessionService(memory)
        await service.create_session(app_name="a", user_id="u", session_id="s")
        session = await service.get_session(app_name="a", user_id="u", session_id="s")
        assert session is not None
        for event in (said("user", "hello", k=1), said("assistant", "hi"), said("user", "never mind")):
            await service.append_event(session, event)
        thread = session_thread("a", "u", "s")
        stored = (await memory.storage.list_messages(thread, per_page=False)).items
        new = session_thread("a", "u", "s2")
        await memory.branch_thread(thread, stored[1].id, new, metadata={"adk_session": "s2"})
        branch = await service.get_session(app_name="a", user_id="u", session_id="s2")
        assert branch is not None and branch.id == "s2" and branch.state == {"k": 1}
        assert [e.content.parts[0].text for e in branch.events if e.content and e.content.parts] == ["hello", "hi"]
        await service.append_event(branch, said("user", "edited"))
        again = await service.get_session(app_name="a", user_id="u", session_id="s2")
        assert again is not None and len(again.events) == 3
        listed = await service.list_sessions(app_name="a", user_id="u")
        assert sorted(s.id for s in listed.sessions) == ["s", "s2"]
        original = await service.get_session(app_name="a", user_id="u", session_id="s")
        assert original is not None and len(original.events) == 3


@pytest.mark.anyio
async def test_search_outside_a_run_finds_every_session_as_adks_in_memory_service(open_memory: OpenMemory) -> None:
    """Issue 26: ``search_memory`` left out the user's newest message (and
    what followed it) on every call, though only a run's own question is the
    turn being answered: here the last message of a finished session, added
    to memory from ADK's own session service, was never found. ADK's
    ``InMemoryMemoryService`` (keyword matching) is the oracle: every event
    it finds, memory-core finds."""
    from google.adk.memory import InMemoryMemoryService
    from google.adk.sessions import InMemorySessionService

    adk_sessions, oracle = InMemorySessionService(), InMemoryMemoryService()
    pets = await adk_sessions.create_session(app_name="a", user_id="alice", session_id="pets")
    for event in (said("user", "my cat is called Miso"), said("model", "Miso is a lovely name")):
        await adk_sessions.append_event(pets, event)
    trip = await adk_sessions.create_session(app_name="a", user_id="alice", session_id="trip")
    await adk_sessions.append_event(trip, said("user", "I fly to Lisbon in April"))  # its last message
    async with open_memory() as memory:
        search = MemoryCoreMemoryService(memory, top_k=10, min_score=None)
        for session in (pets, trip):
            await oracle.add_session_to_memory(session)
            await search.add_session_to_memory(session)
        for query in ("Lisbon April", "cat Miso"):
            expected = {m.id for m in (await oracle.search_memory(app_name="a", user_id="alice", query=query)).memories}
            found = await search.search_memory(app_name="a", user_id="alice", query=query)
            assert expected and expected <= {m.id for m in found.memories}, query


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_reload_then_append_again_after_a_cancelled_append_stores_the_event_once(
    open_memory: OpenMemory, anyio_backend: str
) -> None:
    """What the docs say to do after a timed-out or cancelled
    ``append_event`` (reload the session, append the event again) stores
    the event once, whether or not the cancelled append landed: cancelled
    at each of its await points in turn (and once after its last), then
    reloaded and appended again (reloaded again on StaleSessionError: a
    write the server had already received may land after the cancel), the
    session holds the event exactly once with its state. Before: a cancelled append that had landed was stored
    twice (trial 25: 23 of 200 on SQLite)."""
    from memory_core_conformance.cancellation import cancel_at, count_suspensions

    async with open_memory() as memory:
        service = MemoryCoreSessionService(memory)
        first = await service.create_session(app_name="app", user_id="u", session_id="count")
        points, _ = await count_suspensions(service.append_event(first, said("user", "hello", mood="good")))
        landed = 0
        for k in range(1, points + 2):
            session = await service.create_session(app_name="app", user_id="u", session_id=f"s{k}")
            event = said("user", f"hello {k}", mood="good")
            await cancel_at(service.append_event(session, event), k)
            reloaded = await service.get_session(app_name="app", user_id="u", session_id=f"s{k}")
            assert reloaded is not None
            landed += any(e.id == event.id for e in reloaded.events)
            for _ in range(3):  # as the docs say: reload, append; stale (the cut append landing just now): again
                try:
                    await service.append_event(reloaded, event)
                    break
                except StaleSessionError:
                    reloaded = await service.get_session(app_name="app", user_id="u", session_id=f"s{k}")
                    assert reloaded is not None
            again = await service.get_session(app_name="app", user_id="u", session_id=f"s{k}")
            assert again is not None
            assert [e.id for e in again.events] == [event.id] and again.state == {"mood": "good"}, k
        assert 0 < landed < points + 1  # both ways were tried

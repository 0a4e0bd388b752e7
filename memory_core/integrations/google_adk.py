"""Google ADK integration: a session service and a memory service backed by
any memory-core storage (``pip install "memory-core[google-adk]"``).

Mapping (ADK keys sessions by app, user and session id; memory-core ids are
global, so each key is one id; ``%`` and ``:`` inside a part are escaped):

- the user ``(app_name, user_id)`` is the resource ``adk:<app>:<user>``; its
  ``metadata`` holds the ``user:`` state (keys without the prefix);
- the app is the resource ``adk-app:<app>``; its ``metadata`` holds the
  ``app:`` state;
- a session is the thread ``adk:<app>:<user>:<session>`` owned by the user's
  resource; its ``metadata`` holds ``adk_app``, ``adk_user``, ``adk_session``,
  the session ``state`` and ``last_update_time`` (seconds, the last event's
  timestamp as ADK keeps it), and its working-memory slot the session's
  revision (a fresh uuid at creation and per append, compared and set atomically:
  :meth:`~memory_core.storage.BaseStorage.swap_thread_working_memory`; while an
  append is being carried out, its intent: see
  :meth:`MemoryCoreSessionService.append_event`);
- each event is one message: ``type`` :data:`EVENT_TYPE`, ``content``
  ``{"event": <ADK's own JSON of it>, "content": <its text>}``
  (``Event.model_dump(mode="json", exclude_none=True)``, as ADK's
  ``DatabaseSessionService`` stores it, read back with
  ``Event.model_validate``), role per :func:`event_role`.

``temp:`` state is never stored (ADK's base service trims it from the event
and keeps it in the in-memory session only). Semantics follow ADK's
``InMemorySessionService`` (the reference of
``memory_core_conformance.integrations.google_adk``), except that an append
through a session object older than the stored session raises ADK's
``StaleSessionError``, as ADK's ``DatabaseSessionService`` does, and that
state must be JSON (R-JSON: ``ValidationError`` before any write).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.memory._utils import format_timestamp
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.platform import time as platform_time
from google.adk.platform import uuid as platform_uuid
from google.adk.sessions import _session_util
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig, ListSessionsResponse
from google.adk.sessions.session import Session
from google.adk.sessions.state import State
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from memory_core.arguments import check_memory
from memory_core.codec import dumps, loads
from memory_core.errors import ConflictError, ValidationError
from memory_core.memory import Memory
from memory_core.models import Message, Role, Thread, ThreadFilter
from memory_core.validation import check_id, check_json_object, check_record_size, check_search_text

from ._threads import (
    check_limit,
    check_names,
    check_record,
    composed_id,
    delete_conversation,
    new_message_id,
    newest_matching,
    newest_messages,
    save_to,
    scoped_key,
    session_thread,
)
from ._tools import (
    DEFAULT_HIT_CHARS,
    DEFAULT_TOTAL_CHARS,
    MinScore,
    bound_texts,
    check_hit_bounds,
    check_recall_options,
    check_recallable,
    read_working_memory,
    recall_hits,
    write_working_memory,
)

__all__ = [
    "EVENT_TYPE",
    "STALE_SESSION_MESSAGE",
    "MemoryCoreMemoryService",
    "MemoryCoreSessionService",
    "app_resource",
    "event_role",
    "event_text",
    "session_thread",
    "user_resource",
    "working_memory_tools",
]

EVENT_TYPE = "google-adk/event"
"""``Message.type`` of a stored ADK ``Event``."""

STALE_SESSION_MESSAGE = (
    "The session has been modified in storage since it was loaded. "
    "Please reload the session before appending more events."
)
"""How the ``StaleSessionError`` an append through a stale session raises
begins: word for word what ADK's own database-backed services
(``DatabaseSessionService``, the MongoDB and Firestore services) say, so code
that matches on ADK's text matches ours (a test compares it with ADK's). The
error goes on to say what to do (:func:`_stale`): reload with
``get_session`` (naming the session), including after an append that timed
out or was cancelled."""


def _stale(session: Session) -> StaleSessionError:
    """The error of an append through the stale ``session``: ADK's text
    (:data:`STALE_SESSION_MESSAGE`), then the call that reloads it."""
    reload = f"get_session(app_name={session.app_name!r}, user_id={session.user_id!r}, session_id={session.id!r})"
    return StaleSessionError(
        f"{STALE_SESSION_MESSAGE} Call {reload} and append to the session it returns; if an append through "
        "this session object timed out or was cancelled, it may have been stored: the reloaded session's events "
        "show whether it was."
    )


_LIST_PAGE = 100

_RUN_TURN: ContextVar[tuple[str, str, str, str] | None] = ContextVar("memory_core_adk_run_turn", default=None)
"""The question of the ADK run in progress in this context, as
:meth:`MemoryCoreSessionService.append_event` stored it: ``(owner,
thread_id, invocation_id, message_id)``. Set when a run's user message (an
event with an ``invocation_id``, author ``user``, text and no function
response) is stored; cleared when that invocation's final response is. A
tool's search (``load_memory``, ``preload_memory``) runs in the run's
context and sees it; a search outside any run sees None."""
_PENDING = "pending"
"""The key of an append's intent in the session's revision slot
(:meth:`MemoryCoreSessionService._settle`)."""


def user_resource(app_name: str, user_id: str) -> str:
    """The resource id of an ADK user: ``adk:<app>:<user>``.

    Raises:
        ValidationError: ``app_name`` or ``user_id`` is not a str, named.
    """
    check_names(app_name=app_name, user_id=user_id)
    return "adk:" + scoped_key(app_name, user_id)


def app_resource(app_name: str) -> str:
    """The resource id holding an ADK app's ``app:`` state: ``adk-app:<app>``.

    Raises:
        ValidationError: ``app_name`` is not a str.
    """
    check_names(app_name=app_name)
    return "adk-app:" + scoped_key(app_name)


def event_role(event: Event) -> Role:
    """``tool`` for an event carrying function responses, ``user`` for one
    the user wrote (``author == "user"``), else ``assistant``."""
    parts = event.content.parts if event.content and event.content.parts else []
    if any(part.function_response is not None for part in parts):
        return "tool"
    return "user" if event.author == "user" else "assistant"


def event_text(event: Event) -> str:
    """The text semantic recall embeds: the event's text parts, newline-joined."""
    parts = event.content.parts if event.content and event.content.parts else []
    return "\n".join(part.text for part in parts if part.text)


def _split_state(state: Mapping[str, Any] | None, field: str) -> dict[str, dict[str, Any]]:
    """ADK's split of a state (delta) into ``app``, ``user`` and ``session``
    parts (``temp:`` dropped), each checked as JSON (R-JSON).

    Raises:
        ValidationError: ``field``: ``state`` is neither None nor a mapping
            with str keys, or a part is not JSON.
    """
    if state is not None and not (isinstance(state, Mapping) and all(isinstance(k, str) for k in state)):
        got = type(state).__name__ if not isinstance(state, Mapping) else "a mapping with a key that is not a str"
        raise ValidationError(field, f"must be a dict of str keys (the state) or None, got {got}", "R-JSON")
    deltas: dict[str, dict[str, Any]] = _session_util.extract_state_delta(dict(state or {}))
    for scope, delta in deltas.items():
        check_json_object(delta, f"{field} ({scope} state)")
    return deltas


_EVENT_IDS = uuid.UUID("6f1d2c3a-8e4b-5a7c-9d0e-1f2a3b4c5d6e")
"""The UUIDv5 namespace of the message ids of events (:func:`_event_message`)."""


def _event_message(event: Event, thread_id: str, owner: str, where: str = "event") -> Message:
    """The message an event is stored as, checked (:func:`check_record`),
    errors named by ``where`` (``"event"``, ``"events[2]"``). Its id follows
    from the session's thread and the event's id (UUIDv5), so the same event
    appended again names the same message; an event without an id gets a
    new one."""
    record = {"event": event.model_dump(mode="json", exclude_none=True), "content": event_text(event)}
    message_id = str(uuid.uuid5(_EVENT_IDS, f"{thread_id}\n{event.id}")) if event.id else new_message_id()
    return check_record(Message(message_id, thread_id, event_role(event), record, owner, EVENT_TYPE), where)


def _event_of(message: Message) -> Event | None:
    if message.type != EVENT_TYPE or not isinstance(message.content, dict):
        return None
    return Event.model_validate(message.content["event"])


def _revision(thread: Thread) -> str | None:
    value = thread.metadata.get("working_memory")
    return value if isinstance(value, str) else None


def _pending(thread: Thread) -> str | None:
    """The intent of an unfinished append the thread carries (its revision
    slot holding JSON, not a revision), or None."""
    value = thread.metadata.get("working_memory")
    return value if isinstance(value, str) and value.startswith("{") else None


def _check_names(app_name: Any, user_id: Any) -> None:
    check_id(app_name, "app_name")
    check_id(user_id, "user_id")
    composed_id(app_resource(app_name), "app_name", "app_name", "resource id")
    composed_id(user_resource(app_name, user_id), "user_id", "user_id with app_name", "resource id")


def _recent_events(config: GetSessionConfig | None) -> int | None:
    """``config.num_recent_events`` as ADK reads it: None (or no config):
    every event; n >= 0: the newest n (over 2**31-1: every event, as ADK's
    own services read it).

    Raises:
        ValidationError: field ``num_recent_events``: not an int or None
            (:func:`check_limit`), or negative: ADK's ``GetSessionConfig``
            refuses it, and its two services disagree on one built past the
            validator (in-memory: all but the first n; SQLite: all).
    """
    recent = None if config is None else config.num_recent_events
    return check_limit(recent, "num_recent_events", negative_reads_all=False)


def _note_turn(event: Event, owner: str, thread_id: str, message: Message) -> None:
    """Keep :data:`_RUN_TURN` on the run's question: set it when ``event``
    (just stored as ``message``) is a run's user message, clear it when it is
    the final response of that run's invocation."""
    if event.invocation_id and message.role == "user" and event_text(event):
        _RUN_TURN.set((owner, thread_id, event.invocation_id, message.id))
        return
    turn = _RUN_TURN.get()
    if turn is not None and turn[2] == event.invocation_id and event.author != "user" and event.is_final_response():
        _RUN_TURN.set(None)


class MemoryCoreSessionService(BaseSessionService):  # type: ignore[misc]  # Any when ADK is absent (core-only mypy)
    """An ADK ``BaseSessionService`` over a :class:`~memory_core.Memory`.

    Args:
        memory: a :class:`~memory_core.Memory` (storage and optional vector
            store, which indexes every event's text for
            :class:`MemoryCoreMemoryService`); shared, not closed here.

    Raises:
        ValidationError: ``memory`` is not a Memory, at construction
            (:func:`~memory_core.arguments.check_memory`).

    Raises (every method):
        ValidationError: a bad id (R-ID, at most 256 characters once mapped)
            or non-JSON state, before any write.
    """

    def __init__(self, memory: Memory) -> None:
        self.memory = check_memory(memory)

    async def _merged(self, app_name: str, user_id: str, session_state: Mapping[str, Any]) -> dict[str, Any]:
        app = await self.memory.storage.get_resource(app_resource(app_name))
        user = await self.memory.storage.get_resource(user_resource(app_name, user_id))
        merged = dict(session_state)
        merged.update({State.APP_PREFIX + k: v for k, v in (app.metadata if app else {}).items()})
        merged.update({State.USER_PREFIX + k: v for k, v in (user.metadata if user else {}).items()})
        return merged

    async def _apply_scoped(self, app_name: str, user_id: str, deltas: Mapping[str, dict[str, Any]]) -> None:
        if deltas["app"]:
            await self.memory.storage.update_resource(app_resource(app_name), metadata=deltas["app"])
        if deltas["user"]:
            await self.memory.storage.update_resource(user_resource(app_name, user_id), metadata=deltas["user"])

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """Create a session (id stripped of surrounding blanks as ADK does;
        a new uuid when None or blank); ``app:``/``user:`` keys of ``state``
        update the shared state, ``temp:`` keys are dropped.

        Raises:
            AlreadyExistsError: the user already has a session with this id.
            ValidationError: ``session_id`` neither a str nor None (or a
                bad id, R-ID), ``state`` not JSON, before any write.
        """
        _check_names(app_name, user_id)
        deltas = _split_state(state, "state")
        if session_id is not None and not isinstance(session_id, str):
            got = f"{type(session_id).__name__} {session_id!r}"
            raise ValidationError("session_id", f"must be a str (R-ID) or None for a new uuid, got {got}", "R-ID")
        session_id = (session_id.strip() if session_id else None) or platform_uuid.new_uuid()
        thread_id = session_thread(app_name, user_id, session_id)
        now = platform_time.get_time()
        revision = uuid.uuid4().hex  # the first revision: a copy from before a delete and re-create is stale
        metadata = {
            "adk_app": app_name,
            "adk_user": user_id,
            "adk_session": session_id,
            "state": deltas["session"],
            "last_update_time": now,
            "working_memory": revision,
        }
        try:
            await self.memory.storage.insert_thread(
                Thread(thread_id, user_resource(app_name, user_id), metadata=metadata)
            )
        except ConflictError:
            raise AlreadyExistsError(f"Session with id {session_id} already exists.") from None
        await self._apply_scoped(app_name, user_id, deltas)
        merged = await self._merged(app_name, user_id, deltas["session"])
        session = Session(id=session_id, app_name=app_name, user_id=user_id, state=merged, last_update_time=now)
        session._storage_update_marker = revision
        return session

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """The session with its events (oldest first) and merged state, or
        None. ``config`` (ADK's ``GetSessionConfig``, also what the Runner
        passes from ``RunConfig.get_session_config``) means what ADK's own
        services make of it: ``num_recent_events`` keeps the newest n (0:
        none; None: all; negative: refused, as ADK's ``GetSessionConfig``
        refuses it, also when built past its validator, where ADK's
        in-memory and SQLite services disagree); with ``after_timestamp``,
        of the events whose timestamp is at or after it (in append order,
        as ADK's in-memory service since ADK 2.15, and its SQLite and
        database services, filter them). Reads the thread row and the
        events back from the newest to the oldest one returned (with
        ``after_timestamp``: to the oldest one kept, or the whole session
        when fewer than ``num_recent_events`` qualify).

        ADK's ``GetSessionConfig`` is a pydantic model that turns ``True``
        into 1 and ``2.0`` or ``"2"`` into 2 when it is built, before the
        service sees it; what reaches the service unconverted (a value set
        on the config afterwards, or one built with ``model_construct``) is
        refused.

        Raises:
            ValidationError: field ``num_recent_events``: not an int or None
                (a bool, float or str), or negative.
        """
        _check_names(app_name, user_id)
        session_id = check_id(session_id.strip() if isinstance(session_id, str) else session_id, "session_id")
        thread_id = session_thread(app_name, user_id, session_id)
        owner = user_resource(app_name, user_id)
        limit = _recent_events(config)
        after = config.after_timestamp if config else None
        thread, stored = await self._read_events(thread_id, owner, limit, after)
        if thread is not None and _pending(thread):
            await self._settle(thread)
            thread, stored = await self._read_events(thread_id, owner, limit, after)
        if thread is None:
            return None
        events = [e for e in map(_event_of, stored) if e is not None] if limit != 0 else []
        return self._session(thread, await self._merged(app_name, user_id, thread.metadata["state"]), events)

    async def _read_events(
        self, thread_id: str, owner: str, limit: int | None, after: float | None
    ) -> tuple[Thread | None, list[Message]]:
        """The session's thread and the event messages ``get_session`` returns."""
        await self.memory.wait_for_writes()  # a cancelled append still in flight is seen whole
        if after is None:
            thread = await self.memory.storage.get_thread(thread_id, owner)
            return thread, [] if thread is None else await newest_messages(self.memory, thread_id, owner, limit)

        def at_or_after(message: Message) -> bool:
            event = _event_of(message)
            return event is not None and event.timestamp >= after

        return await newest_matching(self.memory, thread_id, owner, limit, at_or_after)

    @staticmethod
    def _session(thread: Thread, state: dict[str, Any], events: list[Event]) -> Session:
        meta = thread.metadata
        session = Session(
            id=meta["adk_session"],
            app_name=meta["adk_app"],
            user_id=meta["adk_user"],
            state=state,
            events=events,
            last_update_time=meta["last_update_time"],
        )
        session._storage_update_marker = _revision(thread)
        return session

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        """Every session of the app (of ``user_id`` when given), without
        events, with merged state, ordered by (last_update_time, user_id,
        id); read page by page (100 threads a read)."""
        check_id(app_name, "app_name")
        owner = None if user_id is None else user_resource(app_name, check_id(user_id, "user_id"))
        where = ThreadFilter(resource_id=owner, metadata={"adk_app": app_name})
        threads: list[Thread] = []
        cursor: str | None = None
        await self.memory.wait_for_writes()
        while True:
            page = await self.memory.storage.list_threads(where, per_page=_LIST_PAGE, cursor=cursor)
            threads += page.items
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        threads = [await self._settle(thread) for thread in threads]
        app = await self.memory.storage.get_resource(app_resource(app_name))
        app_state = {State.APP_PREFIX + k: v for k, v in (app.metadata if app else {}).items()}
        user_states: dict[str, dict[str, Any]] = {}
        sessions = []
        for thread in threads:
            user = thread.metadata["adk_user"]
            if user not in user_states:
                found = await self.memory.storage.get_resource(thread.resource_id)
                user_states[user] = {State.USER_PREFIX + k: v for k, v in (found.metadata if found else {}).items()}
            sessions.append(self._session(thread, {**thread.metadata["state"], **app_state, **user_states[user]}, []))
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete the session, its events and their vectors (missing: no-op)."""
        _check_names(app_name, user_id)
        session_id = check_id(session_id.strip() if isinstance(session_id, str) else session_id, "session_id")
        await delete_conversation(
            self.memory, session_thread(app_name, user_id, session_id), user_resource(app_name, user_id)
        )

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The user's ``user:`` state, keys without the prefix (``{}`` when none)."""
        _check_names(app_name, user_id)
        found = await self.memory.storage.get_resource(user_resource(app_name, user_id))
        return dict(found.metadata) if found else {}

    async def append_event(self, session: Session, event: Event) -> Event:
        """Store a (non-partial) event and apply its state delta: ``temp:``
        keys to the in-memory ``session`` only, ``app:``/``user:`` keys to the
        shared state, the rest to the session's state.

        Atomic against other appenders: the session's stored revision must
        be the one ``session`` was created or loaded at, and is replaced by
        compare-and-set (a ``Session`` built by hand carries none: load it).

        All or nothing under cancellation (a timeout, Ctrl-C) and failure:
        the compare-and-set writes the whole append as an intent (the event
        as stored, the new session state, the ``app:``/``user:`` deltas and
        the next revision, see :meth:`_settle`) into the revision slot, and
        the writes that follow only carry it out. Cancelled before the
        compare-and-set, nothing is stored; after it, the append is
        complete for every later caller of this service: the next
        ``get_session``, ``list_sessions`` or ``append_event`` on the
        session first
        completes it (every step is idempotent); until then the session's
        state, its events and the ``app:``/``user:`` state read directly
        (``get_user_state``, other sessions) may show part of it. The
        session object of the cancelled call keeps its old revision: reload
        it. An event already stored in the session (the same ``id``: the
        retry of an append that landed, after reloading the session) is not
        stored again, nor its state delta applied again: the call returns
        it (ADK's database service refuses it with its database's
        ``IntegrityError``), so "reload, then append again" is safe whether
        or not the cancelled append landed.

        Raises:
            SessionNotFoundError: the session is not stored.
            StaleSessionError: the stored session changed since ``session``
                was loaded (reload it with ``get_session``, as with ADK's
                database service), also by an earlier append through this
                very object that timed out or was cancelled after its
                compare-and-set; its text begins with ADK's own
                (:data:`STALE_SESSION_MESSAGE`) and names the
                ``get_session`` call that reloads it.
            ValidationError: ``session`` not a ``Session`` or ``event`` not
                an ``Event`` (nothing written), a non-JSON state delta or event, or a session
                record (its state, with the pending event while it is carried
                out) or ``app:``/``user:`` state over 15 MiB (R-SIZE), before
                any write.
        """
        if not isinstance(session, Session):
            got = type(session).__name__
            raise ValidationError("session", f"must be an ADK Session (from create_session or get_session), got {got}")
        if not isinstance(event, Event):
            raise ValidationError("event", f"must be an ADK Event, got {type(event).__name__}")
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        field = "event.actions.state_delta"
        deltas = _split_state(event.actions.state_delta if event.actions else None, field)
        thread_id = session_thread(session.app_name, session.user_id, session.id)
        owner = user_resource(session.app_name, session.user_id)
        message = _event_message(event, thread_id, owner)
        thread = await self.memory.storage.get_thread(thread_id, owner)
        if thread is None:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        thread = await self._settle(thread)
        revision = _revision(thread)
        if session._storage_update_marker != revision:
            raise _stale(session)
        if event.id and await self.memory.storage.get_messages([message.id]):
            return event  # stored already: a retry of an append that landed (ADK's database service refuses it)
        fresh = uuid.uuid4().hex
        pending = {"revision": fresh, "id": message.id, "role": message.role, "content": message.content}
        state = {**thread.metadata["state"], **deltas["session"]}
        intent = dumps({_PENDING: pending})
        check_record_size(field, {"metadata": {**thread.metadata, "state": state, "working_memory": intent}})
        await self._check_scoped(session.app_name, session.user_id, deltas, field)
        if not await self.memory.storage.swap_thread_working_memory(thread_id, revision, intent):
            raise _stale(session)
        await self._carry_out(thread, intent, pending)  # lost: a reader completed it first, the same way
        session.last_update_time = event.timestamp
        session._storage_update_marker = fresh
        _note_turn(event, owner, thread_id, message)
        return self._commit_event_to_session(session, event)

    async def _check_scoped(
        self, app_name: str, user_id: str, deltas: Mapping[str, dict[str, Any]], field: str
    ) -> None:
        """R-SIZE of the ``app:`` and ``user:`` state records as ``deltas``
        leave them (read now; checked before any write)."""
        for scope, resource_id in (("app", app_resource(app_name)), ("user", user_resource(app_name, user_id))):
            if deltas[scope]:
                found = await self.memory.storage.get_resource(resource_id)
                merged = {**(found.metadata if found else {}), **deltas[scope]}
                check_record_size(
                    field, {"working_memory": found.working_memory if found else None, "metadata": merged}
                )

    async def _settle(self, thread: Thread) -> Thread:
        """``thread`` with the append it carries (if any) completed.

        An append's compare-and-set stores ``{"pending": {...}}`` (JSON) in
        the session's revision slot: the event message as stored (``id``,
        ``role``, ``content``, which holds the event and so its state delta
        and timestamp) and the next ``revision``. Completing it saves the
        message (an upsert of the same record), merges the deltas, writes the
        state and last-update time, and swaps the intent for the revision;
        each step is idempotent, so an append cancelled anywhere after its
        compare-and-set, or a completion cancelled in turn, is finished by
        whichever caller comes next."""
        text = _pending(thread)
        if text is None:
            return thread
        pending = loads(text)[_PENDING]
        state, time, won = await self._carry_out(thread, text, pending)
        if not won:  # another caller finished it (and maybe appended since): read what it left
            found = await self.memory.storage.get_thread(thread.id, thread.resource_id)
            if found is None:
                raise SessionNotFoundError(f"Session {thread.metadata.get('adk_session')} not found.")
            return await self._settle(found)
        metadata = {**thread.metadata, "state": state, "last_update_time": time, "working_memory": pending["revision"]}
        return replace(thread, metadata=metadata)

    async def _still_pending(self, thread: Thread, intent: str) -> bool:
        """Whether the session's revision slot still holds ``intent`` (read
        now): the ``app:``/``user:`` deltas of an append are merged only
        while it is the one being committed. Shared state has no revision of
        its own, so a caller that finishes an append late (it read the
        intent, then another caller completed it and a newer append wrote the
        same keys) would otherwise write the older values back over the
        newer ones."""
        found = await self.memory.storage.get_thread(thread.id, thread.resource_id)
        return found is not None and _pending(found) == intent

    async def _carry_out(
        self, thread: Thread, intent: str, pending: Mapping[str, Any]
    ) -> tuple[dict[str, Any], float, bool]:
        """The writes of the append ``pending`` to ``thread`` as read with it
        (see :meth:`_settle`); returns the session's new state, its last
        update time, and whether this call's final write landed.

        The final write is one compare-and-set on the revision slot: the
        state, the last-update time and the next revision are written only
        while the slot still holds ``intent``, so a caller that finishes
        late (cancelled, slow) never overwrites what a later append wrote.
        The ``app:``/``user:`` deltas (other records, with no revision)
        are merged only after a read finds the slot still holding
        ``intent`` (:meth:`_still_pending`); a late caller skips them and
        reports its final write lost. What this cannot fence: a caller
        suspended between that read and its merge for as long as another
        caller takes to complete the append and a newer one to merge the
        same keys."""
        meta = thread.metadata
        owner = thread.resource_id
        message = Message(pending["id"], thread.id, pending["role"], pending["content"], owner, EVENT_TYPE)
        event = _event_of(message)
        if event is None:
            raise ValidationError("working_memory", "an unfinished append that holds no ADK event")
        deltas = _split_state(event.actions.state_delta if event.actions else None, "event.actions.state_delta")
        state = {**meta["state"], **deltas["session"]}
        await save_to(self.memory, thread.id, owner, [message])
        if (deltas["app"] or deltas["user"]) and not await self._still_pending(thread, intent):
            return state, event.timestamp, False  # finished by another caller: its deltas may be old now
        await self._apply_scoped(meta["adk_app"], meta["adk_user"], deltas)
        won = await self.memory.storage.swap_thread_working_memory(
            thread.id, intent, pending["revision"], metadata={"state": state, "last_update_time": event.timestamp}
        )
        return state, event.timestamp, won


class MemoryCoreMemoryService(BaseMemoryService):  # type: ignore[misc]  # Any when ADK is absent (core-only mypy)
    """An ADK ``BaseMemoryService``: search is memory-core recall under the
    Memory's semantic-recall settings (mode, weights, scope:
    :func:`~memory_core.integrations._tools.tool_recall`) over the user's
    sessions, of what the user and the agent said (events carrying function
    responses, ``load_memory``'s own among them, are left out).

    Args:
        memory: a Memory with a vector store, or whose semantic recall is in
            ``"lexical"`` mode (the one the session service writes to, so
            events stored there are searchable at once).
        top_k: at most this many memories per search, 1-1000 (default 5).
        min_score: the relevance floor, a cosine similarity from -1 to 1:
            events scoring under it are left out, so an unrelated query finds
            few or none (as ADK's own keyword-matching services find none).
            ``"auto"`` (default): the Memory's ``semantic_recall.min_score``
            when set, else the floor measured for the Memory's embedder
            (:func:`~memory_core.embedders.relevance_floor`); None: no
            floor, always ``top_k`` when the user has that many events.
        max_hit_chars: at most this many characters of text per memory
            (default 2000), cut with a visible ``[cut: ...]`` marker; None:
            no bound.
        max_total_chars: at most this many characters of text in one
            search's memories together (default 8000): later memories are
            cut, then left out, the last kept one saying how many
            (:func:`~memory_core.integrations._tools.bound_texts`); None: no
            bound. A memory whose text was cut carries that text as its
            content's one part (its other parts, such as function calls, are
            dropped with it).

    Raises:
        ValidationError: ``memory`` is not a Memory
            (:func:`~memory_core.arguments.check_memory`) or cannot be
            searched (field ``memory.vector``:
            :func:`~memory_core.integrations._tools.check_recallable`), or a
            bad ``top_k`` or ``min_score``, or a bound that is neither None
            nor an int >= 100.
    """

    def __init__(
        self,
        memory: Memory,
        *,
        top_k: int = 5,
        min_score: MinScore = "auto",
        max_hit_chars: int | None = DEFAULT_HIT_CHARS,
        max_total_chars: int | None = DEFAULT_TOTAL_CHARS,
    ) -> None:
        self.memory = check_recallable(memory)
        self.top_k, self.min_score = check_recall_options(top_k, min_score)
        self.max_hit_chars, self.max_total_chars = check_hit_bounds(max_hit_chars, max_total_chars)

    async def add_session_to_memory(self, session: Session) -> None:
        """Store (and index) the session's events that its thread does not
        hold yet, matched by event id; a session kept by
        :class:`MemoryCoreSessionService` in the same memory is already there."""
        await self.add_events_to_memory(
            app_name=session.app_name, user_id=session.user_id, events=session.events, session_id=session.id
        )

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Store the events not stored yet in the session's thread (created
        on first write, owned by the user); ``custom_metadata`` is ignored.

        Raises:
            ValidationError: no ``session_id``, or a bad id or event.
        """
        _check_names(app_name, user_id)
        if session_id is None:
            raise ValidationError("session_id", "memory-core keeps events by session: give one")
        thread_id = session_thread(app_name, user_id, session_id)
        owner = user_resource(app_name, user_id)
        stored = await newest_messages(self.memory, thread_id, owner, None)
        known = {e.id for e in map(_event_of, stored) if e is not None}
        new = [
            _event_message(e, thread_id, owner, f"events[{index}]")
            for index, e in enumerate(events)
            if e.id not in known and not e.partial
        ]
        metadata: dict[str, Any] = {"adk_app": app_name, "adk_user": user_id, "adk_session": session_id, "state": {}}
        metadata["last_update_time"] = max((e.timestamp for e in events), default=platform_time.get_time())
        await save_to(self.memory, thread_id, owner, new, metadata=metadata)

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """Up to ``top_k`` stored events of the user (any session) nearest to
        ``query`` that carry content, best first, as ``MemoryEntry`` (id,
        content, author, ISO-8601 local timestamp, as ADK's in-memory service).

        Left out: events under ``min_score``, events carrying function
        responses (tool results), agent replies that merely repeat one
        (:func:`~memory_core.integrations._tools.echoed_replies`), memories
        past the size bounds (``max_hit_chars``, ``max_total_chars``), and, when called during a run (a tool
        such as ``load_memory`` or ``preload_memory``), the turn that run is
        answering: the question the run stored through
        :class:`MemoryCoreSessionService` (the runner stores it before a tool
        searches, and ``preload_memory`` searches with its very text) and
        the events after it in its session. Nothing else is left out: a
        search outside a run (the app calling it), or a user's newest message
        in another session or a finished run, finds what ADK's
        ``InMemoryMemoryService`` finds. A run is known from the context
        the session service stored its question in, until it stores that
        invocation's final response (a run stopped before one leaves its
        question left out of searches made later in the same task). With the
        Memory's ``semantic_recall.scope`` ``"thread"``, only the run's
        session is searched (outside a run: the session of the user's newest
        message); see :func:`~memory_core.integrations._tools.recall_hits`.

        Raises:
            ValidationError: a bad ``app_name`` or ``user_id``, or a
                ``query`` that is not a str (None included: it searched
                nothing and returned no memory) or is over
                :data:`~memory_core.query_checks.MAX_SEARCH_CHARS` characters
                (R-RECALL), named ``query``, before any read.
        """
        _check_names(app_name, user_id)
        check_search_text(query, "query")
        owner = user_resource(app_name, user_id)
        turn = _RUN_TURN.get()
        if turn is not None and turn[0] == owner:  # a tool of the run answering turn[3]
            thread_id, start = turn[1], turn[3]
            hits = await recall_hits(
                self.memory, owner, query, self.top_k, thread_id=thread_id, min_score=self.min_score, turn_start=start
            )
        else:
            hits = await recall_hits(
                self.memory, owner, query, self.top_k, min_score=self.min_score, leave_out_turn=False
            )
        events = [(e, event_text(e)) for e in map(_event_of, hits) if e is not None and e.content is not None]
        texts = bound_texts([text for _, text in events], self.max_hit_chars, self.max_total_chars)
        memories = []
        for (event, said), text in zip(events, texts, strict=False):
            if event.content is not None:
                content = event.content
                if text != said:  # cut by the size bounds: the cut text is the memory's content
                    content = types.Content(role=content.role, parts=[types.Part(text=text)])
                memories.append(
                    MemoryEntry(
                        id=event.id,
                        content=content,
                        author=event.author,
                        timestamp=format_timestamp(event.timestamp),
                    )
                )
        return SearchMemoryResponse(memories=memories)


def working_memory_tools(memory: Memory) -> list[FunctionTool]:
    """ADK tools over the run's user's working memory, the notes the other
    seams' tools keep (one implementation,
    :mod:`memory_core.integrations._tools`): ``get_working_memory`` reads
    them (the Memory's template while none are stored) and
    ``update_working_memory(notes)`` replaces them as
    :meth:`~memory_core.Memory.update_working_memory` does (checked against
    the config's JSON Schema), refusing notes that hold nothing (no letter
    or digit, or only fillers such as ``null``, ``N/A``, ``{}``), the
    unfilled template however reworded
    (:func:`~memory_core.integrations._tools.notes_refusal`), or notes the schema refuses (nothing written; the model is
    told why and what to send). The notes belong to the session's user: the
    resource ``adk:<app>:<user>`` (:func:`user_resource`), whose
    ``metadata`` holds the ``user:`` state; they are not part of any
    session's state.

    Args:
        memory: the Memory the session service writes to, with working
            memory on (``MemoryConfig(working_memory={"enabled": True})``)
            in resource scope (the default).

    Raises:
        ValidationError: field ``memory``: not a Memory, working memory off
            in its config (naming how to turn it on), or in thread scope (a
            session's thread keeps the session's revision in its
            working-memory slot, :class:`MemoryCoreSessionService`).
    """
    checked = check_memory(memory)
    settings = checked.config.working_memory
    if not settings.enabled:
        raise ValidationError(
            "memory", 'working memory is off: turn it on with MemoryConfig(working_memory={"enabled": True})'
        )
    if settings.scope == "thread":
        raise ValidationError(
            "memory",
            "working memory has scope \"thread\", but an ADK session's thread keeps the session's revision in "
            "its working-memory slot: keep the notes per user with the default scope "
            '(MemoryConfig(working_memory={"enabled": True, "scope": "resource"}))',
        )

    def owner(tool_context: ToolContext) -> str:
        session = tool_context.session
        return user_resource(session.app_name, session.user_id)

    async def get_working_memory(tool_context: ToolContext) -> str:
        """Read the notes kept about this user (empty when none)."""
        return await read_working_memory(checked, owner(tool_context))

    async def update_working_memory(notes: str, tool_context: ToolContext) -> str:
        """Replace the notes kept about this user (empty notes, the
        unfilled template or notes the schema refuses are not saved: the
        stored notes stay, and the answer says why).

        Args:
            notes: the complete new notes (Markdown).
        """
        return await write_working_memory(checked, owner(tool_context), notes)

    return [FunctionTool(get_working_memory), FunctionTool(update_working_memory)]

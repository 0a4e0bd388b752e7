"""Google ADK ``BaseSessionService``: a candidate against ADK's own
``InMemorySessionService``, operation by operation.

Operations, over one app, two users and three session ids:
``create_session`` (state with session, ``app:``, ``user:`` and ``temp:``
keys), ``get_session`` (all events, the newest n, after a timestamp),
``append_event`` through a session just loaded (events by the user, the
model's function calls, tool responses, text; state deltas in every scope;
random timestamps), ``append_event`` through a session object held since an
earlier step, ``list_sessions`` (one user, every user), ``delete_session``
and ``get_user_state``. Sessions and events compare as their JSON dumps
(every public field; the private storage revision is the implementation's
own). Both sides read ADK's clock (``google.adk.platform.time``), set by the
machine to the step number, so creation and update times agree.

One deliberate difference is checked instead of compared: an append through
a held session that is stale (the stored session changed since it was
loaded) is accepted by ``InMemorySessionService`` but must raise
``StaleSessionError`` in the candidate, as ADK's ``DatabaseSessionService``
does, writing nothing; the reference is then not called.

Use :func:`run_session_service_machine`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import rule

from memory_core_conformance.integrations._machine import DifferentialMachine, run_machine

__all__ = ["APP", "SESSION_IDS", "USERS", "SessionServiceMachine", "events", "run_session_service_machine"]

APP = "app"
USERS = ("u1", "u2")
SESSION_IDS = ("s1", "s2", "s3")

_text = st.text(st.characters(codec="utf-8"), max_size=10)
_values = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), _text, st.lists(st.integers(0, 9), max_size=2))
_state = st.dictionaries(
    st.sampled_from(["k", "n", "app:theme", "app:k", "user:name", "user:k", "temp:scratch"]), _values, max_size=3
)
_when = st.sampled_from([10.0, 20.0, 20.0, 30.0, 1.5e9])


@st.composite
def events(draw: st.DrawFn) -> Any:
    """One ADK ``Event``: user text, a model function call, a tool response
    or model text, with a random state delta and timestamp."""
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.genai import types

    kind = draw(st.sampled_from(["user", "call", "response", "text"]))
    call_id = draw(st.sampled_from(["call_1", "call_2"]))
    if kind == "user":
        author, content = "user", types.Content(role="user", parts=[types.Part(text=draw(_text))])
    elif kind == "call":
        call = types.FunctionCall(id=call_id, name="get_weather", args={"city": draw(_text)})
        author, content = "assistant", types.Content(role="model", parts=[types.Part(function_call=call)])
    elif kind == "response":
        answer = types.FunctionResponse(id=call_id, name="get_weather", response={"result": draw(_text)})
        author, content = "assistant", types.Content(role="user", parts=[types.Part(function_response=answer)])
    else:
        author, content = "assistant", types.Content(role="model", parts=[types.Part(text=draw(_text))])
    return Event(
        invocation_id=draw(st.sampled_from(["inv-1", "inv-2"])),
        author=author,
        content=content,
        actions=EventActions(state_delta=draw(_state)),
        timestamp=draw(_when),
    )


def _dump(value: Any) -> Any:
    """A session, event, listing or plain value as comparable JSON."""
    if value is None or isinstance(value, dict):
        return value
    return value.model_dump(mode="json")


class SessionServiceMachine(DifferentialMachine[Any]):
    """The session-service seam, ``InMemorySessionService`` vs candidate."""

    def __init__(self) -> None:
        super().__init__()
        self.step = 0
        # Session objects held by each side since a create or get, with the
        # number of appends stored in that session when it was loaded.
        self.held: dict[tuple[str, str], tuple[Any, Any, int]] = {}
        self.appends: dict[tuple[str, str], int] = {}

    def timed(self, call: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
        """``call`` with ADK's clock set to this step (both sides see one time)."""
        self.step += 1
        now = 1000.0 + self.step

        async def run(side: Any) -> Any:
            from google.adk.platform import time as platform_time

            platform_time.set_time_provider(lambda: now)
            return await call(side)

        return run

    def hold(self, key: tuple[str, str], pair: tuple[Any, Any]) -> None:
        if pair[0] is not None and pair[1] is not None:
            self.held[key] = (pair[0].value, pair[1].value, self.appends.get(key, 0))

    @rule(user=st.sampled_from(USERS), session_id=st.sampled_from(SESSION_IDS), state=_state)
    def create_session(self, user: str, session_id: str, state: dict[str, Any]) -> None:
        label = f"create_session({user!r}, {session_id!r}, state={state!r})"
        call = self.timed(
            lambda side: side.create_session(app_name=APP, user_id=user, state=dict(state), session_id=session_id)
        )
        expected, actual = self.both(label, call)
        self._agree(label, expected, actual)
        if expected.error is None:
            self.appends[(user, session_id)] = 0
            self.held[(user, session_id)] = (expected.value, actual.value, 0)

    @rule(
        user=st.sampled_from(USERS),
        session_id=st.sampled_from(SESSION_IDS),
        recent=st.sampled_from([None, None, 0, 1, 2]),
        after=st.sampled_from([None, None, 15.0, 20.0, 1e9]),
    )
    def get_session(self, user: str, session_id: str, recent: int | None, after: float | None) -> None:
        from google.adk.sessions.base_session_service import GetSessionConfig

        config = (
            None
            if recent is None and after is None
            else GetSessionConfig(num_recent_events=recent, after_timestamp=after)
        )
        label = f"get_session({user!r}, {session_id!r}, {config!r})"
        expected, actual = self.both(
            label,
            self.timed(lambda side: side.get_session(app_name=APP, user_id=user, session_id=session_id, config=config)),
        )
        self._agree(label, expected, actual)
        if config is None and expected.value is not None:
            self.hold((user, session_id), (expected, actual))

    @rule(user=st.sampled_from(USERS), session_id=st.sampled_from(SESSION_IDS), event=events())
    def append_event(self, user: str, session_id: str, event: Any) -> None:
        """Load the session on each side, then append a copy of ``event``."""

        async def load_and_append(side: Any) -> Any:
            session = await side.get_session(app_name=APP, user_id=user, session_id=session_id)
            if session is None:
                return None
            appended = await side.append_event(session, event.model_copy(deep=True))
            return appended, session

        label = f"append_event({user!r}, {session_id!r}, {event!r})"
        expected, actual = self.both(label, self.timed(load_and_append))
        self._agree(label, expected, actual)
        if expected.error is None and expected.value is not None:
            self.appends[(user, session_id)] = self.appends.get((user, session_id), 0) + 1
            key = (user, session_id)
            self.held[key] = (expected.value[1], actual.value[1], self.appends[key])

    @rule(user=st.sampled_from(USERS), session_id=st.sampled_from(SESSION_IDS), event=events())
    def append_to_held(self, user: str, session_id: str, event: Any) -> None:
        """Append through the session object held since an earlier step."""
        key = (user, session_id)
        if key not in self.held:
            return
        reference, candidate, seen = self.held[key]
        if seen != self.appends.get(key):  # stale (or the session was deleted): the candidate must refuse
            note(f"append_to_held({user!r}, {session_id!r}) on a stale session: candidate must raise")
            from google.adk.errors._stale_session_error import StaleSessionError
            from google.adk.errors.session_not_found_error import SessionNotFoundError

            outcome = self.portal.call(_raises, self.candidate.append_event(candidate, event.model_copy(deep=True)))
            assert isinstance(outcome, StaleSessionError | SessionNotFoundError), f"stale append gave {outcome!r}"
            del self.held[key]
            return
        label = f"append_to_held({user!r}, {session_id!r}, {event!r})"
        expected, actual = self.both(
            label,
            self.timed(
                lambda side: side.append_event(
                    reference if side is self.reference else candidate, event.model_copy(deep=True)
                )
            ),
        )
        self._agree(label, expected, actual)
        if expected.error is None:
            self.appends[key] = self.appends.get(key, 0) + 1
            self.held[key] = (reference, candidate, self.appends[key])
            assert _dump(reference) == _dump(candidate), "held sessions differ after the append"

    @rule(user=st.sampled_from([*USERS, None]))
    def list_sessions(self, user: str | None) -> None:
        self.compare(
            f"list_sessions(user_id={user!r})",
            self.timed(lambda side: side.list_sessions(app_name=APP, user_id=user)),
            _dump,
        )

    @rule(user=st.sampled_from(USERS), session_id=st.sampled_from(SESSION_IDS))
    def delete_session(self, user: str, session_id: str) -> None:
        self.compare(
            f"delete_session({user!r}, {session_id!r})",
            self.timed(lambda side: side.delete_session(app_name=APP, user_id=user, session_id=session_id)),
        )
        self.appends[(user, session_id)] = -1  # any held copy is now stale

    @rule(user=st.sampled_from(USERS))
    def get_user_state(self, user: str) -> None:
        self.compare(
            f"get_user_state({user!r})", self.timed(lambda side: side.get_user_state(app_name=APP, user_id=user))
        )

    def _agree(self, label: str, expected: Any, actual: Any) -> None:
        if expected.error is not None or actual.error is not None:
            assert (expected.error is None) == (actual.error is None), (
                f"{label}: reference {expected!r}, candidate {actual!r}"
            )
            return
        want, got = expected.value, actual.value
        if isinstance(want, tuple):
            want, got = [_dump(v) for v in want], [_dump(v) for v in got]
        else:
            want, got = _dump(want), _dump(got)
        assert got == want, f"{label}:\n  reference: {want!r}\n  candidate: {got!r}"


async def _raises(call: Awaitable[Any]) -> BaseException | None:
    try:
        await call
    except Exception as exc:
        return exc
    return None


@asynccontextmanager
async def in_memory_service() -> AsyncIterator[Any]:
    """The reference: a fresh ADK ``InMemorySessionService``."""
    from google.adk.sessions import InMemorySessionService

    yield InMemorySessionService()


def run_session_service_machine(
    open_service: Callable[[], AbstractAsyncContextManager[Any]], machine_settings: settings | None = None
) -> None:
    """Compare a session service with ADK's ``InMemorySessionService``.

    Args:
        open_service: returns an async context manager yielding the
            candidate ``BaseSessionService`` (fresh and empty).
        machine_settings: Hypothesis settings (default: the active profile's, capped).

    Raises:
        AssertionError: an answer differed from the reference's, or a stale
            append was accepted.
    """
    run_machine(SessionServiceMachine, in_memory_service, open_service, machine_settings)

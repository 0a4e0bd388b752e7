"""OpenAI Agents SDK ``Session``: a candidate against the SDK's own
``SQLiteSession`` (in memory), operation by operation.

Operations: ``add_items`` (batches of every item type the SDK emits: user,
assistant, system and developer messages with text or part lists, function
calls and outputs, reasoning, computer calls, custom tool items, with random
JSON payloads), ``get_items`` (limits None, 0, positive, negative),
``pop_item``, ``clear_session``, over two session ids. Answers must be equal
(items compare as JSON values).

Use :func:`run_session_machine` with an ``open_sessions`` callable: it
returns an async context manager yielding ``session_for(session_id) ->
Session``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import rule

from memory_core_conformance.integrations._machine import DifferentialMachine, run_machine

__all__ = ["SESSION_IDS", "SessionMachine", "input_items", "run_session_machine", "sqlite_sessions"]

SESSION_IDS = ("s1", "s2")
SessionFor = Callable[[str], Any]

_text = st.text(st.characters(codec="utf-8"), max_size=12)
_json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False, allow_infinity=False), _text
)
_json = st.recursive(
    _json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=3)),
    max_leaves=6,
)
_parts = st.lists(
    st.fixed_dictionaries({"type": st.sampled_from(["input_text", "output_text"]), "text": _text}), max_size=3
)
_call_id = st.sampled_from(["call_1", "call_2", "fc_x"])
_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "developer"]), "content": st.one_of(_text, _parts)},
    optional={"type": st.just("message")},
)
_function_call = st.fixed_dictionaries(
    {
        "type": st.just("function_call"),
        "call_id": _call_id,
        "name": st.sampled_from(["get_weather", "recall_memory"]),
        "arguments": _json.map(lambda v: json.dumps({"v": v})),
    },
    optional={"id": st.just("fc_1"), "status": st.just("completed")},
)
_function_output = st.fixed_dictionaries(
    {"type": st.just("function_call_output"), "call_id": _call_id, "output": _text}
)
_reasoning = st.fixed_dictionaries(
    {
        "type": st.just("reasoning"),
        "id": st.just("rs_1"),
        "summary": st.lists(st.fixed_dictionaries({"type": st.just("summary_text"), "text": _text}), max_size=2),
    }
)
_computer_call = st.fixed_dictionaries(
    {
        "type": st.just("computer_call"),
        "id": st.just("cu_1"),
        "call_id": _call_id,
        "action": st.fixed_dictionaries({"type": st.just("click"), "x": st.integers(0, 99), "y": st.integers(0, 99)}),
        "pending_safety_checks": st.just([]),
        "status": st.just("completed"),
    }
)
_custom = st.fixed_dictionaries(
    {"type": st.sampled_from(["custom_tool_call", "mcp_call", "item_reference"]), "payload": _json}
)

input_items = st.one_of(_message, _function_call, _function_output, _reasoning, _computer_call, _custom)
"""One input item of any type the SDK emits (JSON object)."""


@asynccontextmanager
async def sqlite_sessions() -> AsyncIterator[SessionFor]:
    """The reference: one SDK ``SQLiteSession`` per session id, in memory."""
    from agents import SQLiteSession

    sessions: dict[str, Any] = {}

    def session_for(session_id: str) -> Any:
        if session_id not in sessions:
            sessions[session_id] = SQLiteSession(session_id)
        return sessions[session_id]

    try:
        yield session_for
    finally:
        for session in sessions.values():
            session.close()


class SessionMachine(DifferentialMachine[SessionFor]):
    """The Session seam, reference vs candidate."""

    @rule(session_id=st.sampled_from(SESSION_IDS), items=st.lists(input_items, max_size=4))
    def add_items(self, session_id: str, items: list[dict[str, Any]]) -> None:
        self.compare(f"add_items({session_id!r}, {items!r})", lambda side: side(session_id).add_items(items))

    @rule(session_id=st.sampled_from(SESSION_IDS), limit=st.sampled_from([None, None, 0, 1, 2, 3, 5, -1]))
    def get_items(self, session_id: str, limit: int | None) -> None:
        self.compare(f"get_items({session_id!r}, limit={limit})", lambda side: side(session_id).get_items(limit))

    @rule(session_id=st.sampled_from(SESSION_IDS))
    def pop_item(self, session_id: str) -> None:
        self.compare(f"pop_item({session_id!r})", lambda side: side(session_id).pop_item())

    @rule(session_id=st.sampled_from(SESSION_IDS))
    def clear_session(self, session_id: str) -> None:
        self.compare(f"clear_session({session_id!r})", lambda side: side(session_id).clear_session())


def run_session_machine(
    open_sessions: Callable[[], AbstractAsyncContextManager[SessionFor]], machine_settings: settings | None = None
) -> None:
    """Compare a Session implementation with the SDK's ``SQLiteSession``.

    Args:
        open_sessions: returns an async context manager yielding
            ``session_for(session_id)``, the candidate's session for an id
            (the same object each time or a new one over the same store).
        machine_settings: Hypothesis settings (default: the active profile's,
            capped; see :func:`~memory_core_conformance.integrations._machine.integration_settings`).

    Raises:
        AssertionError: an answer differed from the reference's.
    """
    run_machine(SessionMachine, sqlite_sessions, open_sessions, machine_settings)

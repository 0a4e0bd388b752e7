"""Pydantic AI message history: a candidate store against the in-memory
list Pydantic AI's own docs keep (``message_history`` plus
``result.new_messages()``; a message held already is not appended again),
operation by operation.

Operations: ``append(conversation_id, messages)`` with random requests
(user prompts, system prompts, tool returns; not the deprecated
``RetryPromptPart``, which Pydantic AI's own type adapter loads back as a
``ToolReturnPart`` with ``outcome='retried'``) and responses
(text, tool calls, thinking, model names, usage), ``load(conversation_id)``
(all, or the newest ``limit``; negative: all) and ``clear(conversation_id)``, over two
conversations. Loaded histories must be equal message for message
(dataclass equality: every field, timestamps included).

A candidate has ``load(conversation_id, *, limit=None)``,
``append(conversation_id, messages)`` and ``clear(conversation_id)``; use
:func:`run_history_machine`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import rule

from memory_core_conformance.integrations._machine import DifferentialMachine, run_machine

__all__ = ["CONVERSATION_IDS", "HistoryMachine", "InMemoryHistory", "model_messages", "run_history_machine"]

CONVERSATION_IDS = ("c1", "c2")


class InMemoryHistory:
    """The reference: Pydantic AI's documented pattern, a list of
    ``ModelMessage`` per conversation (``message_history=`` in, extended with
    ``result.new_messages()`` out)."""

    def __init__(self) -> None:
        self.conversations: dict[str, list[Any]] = {}

    async def load(self, conversation_id: str, *, limit: int | None = None) -> list[Any]:
        """The messages, oldest first (the newest ``limit`` when given; a
        negative limit reads all, the Agents SDK's ``SQLiteSession`` rule
        every memory-core seam follows). A window read with ``limit`` never
        starts with a tool return whose call it cut off (model APIs refuse
        one): the first request's tool-return and retry-prompt parts are
        dropped, and the request with them when nothing else is left."""
        messages = self.conversations.get(conversation_id, [])
        if limit is None or limit < 0:
            return list(messages)
        window = list(messages[-limit:]) if limit else []
        if window and window[0].kind == "request":
            kept = [p for p in window[0].parts if p.part_kind not in ("tool-return", "retry-prompt")]
            if not kept:
                window = window[1:]
            elif len(kept) < len(window[0].parts):
                window[0] = replace(window[0], parts=kept)
        return window

    async def append(self, conversation_id: str, messages: Sequence[Any]) -> None:
        """Extend the conversation's list with the messages it does not hold
        yet (equal in every field, timestamps included: the same message), so
        appending ``result.all_messages()`` stores what
        ``result.new_messages()`` would, and appending again stores nothing."""
        held = self.conversations.setdefault(conversation_id, [])
        for message in messages:
            if message not in held:
                held.append(message)

    async def clear(self, conversation_id: str) -> None:
        """Forget the conversation."""
        self.conversations.pop(conversation_id, None)


def model_messages() -> st.SearchStrategy[list[Any]]:
    """Lists of 0-3 random ``ModelMessage`` values."""
    from pydantic_ai import messages as pm
    from pydantic_ai.usage import RequestUsage

    text = st.text(st.characters(codec="utf-8"), max_size=12)
    when = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC))
    call_id = st.sampled_from(["call_1", "call_2"])
    args = st.dictionaries(st.sampled_from(["city", "n"]), st.one_of(text, st.integers(-5, 5)), max_size=2)
    request_part: st.SearchStrategy[Any] = st.one_of(
        st.builds(pm.UserPromptPart, content=text, timestamp=when),
        st.builds(pm.SystemPromptPart, content=text, timestamp=when),
        st.builds(
            pm.ToolReturnPart, tool_name=st.just("get_weather"), content=text, tool_call_id=call_id, timestamp=when
        ),
    )
    response_part: st.SearchStrategy[Any] = st.one_of(
        st.builds(pm.TextPart, content=text),
        st.builds(pm.ToolCallPart, tool_name=st.just("get_weather"), args=args, tool_call_id=call_id),
        st.builds(pm.ThinkingPart, content=text),
    )
    request = st.builds(pm.ModelRequest, parts=st.lists(request_part, min_size=1, max_size=3), timestamp=when)
    response = st.builds(
        pm.ModelResponse,
        parts=st.lists(response_part, min_size=1, max_size=3),
        model_name=st.sampled_from(["test", "function:scripted"]),
        timestamp=when,
        usage=st.builds(RequestUsage, input_tokens=st.integers(0, 99), output_tokens=st.integers(0, 99)),
    )
    return st.lists(st.one_of(request, response), max_size=3)


class HistoryMachine(DifferentialMachine[Any]):
    """The history seam, reference list vs candidate."""

    @rule(conversation_id=st.sampled_from(CONVERSATION_IDS), messages=st.deferred(model_messages))
    def append(self, conversation_id: str, messages: list[Any]) -> None:
        self.compare(f"append({conversation_id!r}, {messages!r})", lambda side: side.append(conversation_id, messages))

    @rule(conversation_id=st.sampled_from(CONVERSATION_IDS), limit=st.sampled_from([None, None, 0, 1, 3, -1]))
    def load(self, conversation_id: str, limit: int | None) -> None:
        self.compare(f"load({conversation_id!r}, limit={limit})", lambda side: side.load(conversation_id, limit=limit))

    @rule(conversation_id=st.sampled_from(CONVERSATION_IDS))
    def clear(self, conversation_id: str) -> None:
        self.compare(f"clear({conversation_id!r})", lambda side: side.clear(conversation_id))


@asynccontextmanager
async def _reference() -> AsyncIterator[InMemoryHistory]:
    yield InMemoryHistory()


def run_history_machine(
    open_history: Callable[[], AbstractAsyncContextManager[Any]], machine_settings: settings | None = None
) -> None:
    """Compare a history store with :class:`InMemoryHistory`.

    Args:
        open_history: returns an async context manager yielding the
            candidate store (fresh and empty).
        machine_settings: Hypothesis settings (default: the active profile's, capped).

    Raises:
        AssertionError: an answer differed from the reference's.
    """
    run_machine(HistoryMachine, _reference, open_history, machine_settings)

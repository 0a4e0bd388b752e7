"""Errors a seam raises locate the input in the caller's words (issue 26):
a message too large is ``messages[0]``, ``items[0]`` or ``event``, never the
id the seam generated for it, and the size error states how much text fits
(the text is stored twice); a session id of another resource is named by
that id. Through each framework's own runner with its scripted model."""

from __future__ import annotations

from typing import Any

import pytest
from agents import Agent, Runner, set_tracing_disabled
from google.adk.agents import LlmAgent
from google.adk.runners import Runner as AdkRunner
from google.genai import types
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

from memory_core import InMemoryStorage, Memory, OwnershipError, ValidationError
from memory_core.integrations.google_adk import MemoryCoreSessionService
from memory_core.integrations.openai_agents import MemoryCoreSession
from memory_core.integrations.pydantic_ai import MessageHistory

from .test_google_adk_run import ScriptedLlm
from .test_openai_agents_run import ScriptedModel

set_tracing_disabled(True)
pytestmark = pytest.mark.anyio

LARGE = "word " * (8 * 2**20 // 5)  # 8 MiB of text: under 15 MiB once, over it twice


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio."""
    return "asyncio"


def _says_the_effective_limit(error: ValidationError) -> None:
    assert error.rule == "R-SIZE", error
    assert "7.5 MiB of text" in error.reason and "twice" in error.reason, error.reason


async def test_pydantic_ai_names_a_large_message_by_its_index() -> None:
    """Before: ``message '01a2...'`` (a generated id), and 15 MiB as the limit."""
    async with Memory(InMemoryStorage()) as memory:
        history = MessageHistory(memory, "alice")
        run = await PydanticAgent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("ok")]))).run(LARGE)
        with pytest.raises(ValidationError) as caught:
            await history.append("chat", run.new_messages())
        assert caught.value.field == "messages[0]", caught.value
        _says_the_effective_limit(caught.value)
        assert await history.load("chat") == []


async def test_openai_agents_names_a_large_item_and_another_owners_session_in_the_callers_words() -> None:
    async with Memory(InMemoryStorage()) as memory:
        agent = Agent(name="assistant", model=ScriptedModel())
        with pytest.raises(ValidationError) as caught:
            await Runner.run(agent, LARGE, session=MemoryCoreSession("chat", memory, resource_id="alice"))
        assert caught.value.field == "items[0]", caught.value
        _says_the_effective_limit(caught.value)
        await Runner.run(
            agent, "Hello", session=MemoryCoreSession("shared", memory, resource_id="alice", scope_ids=False)
        )
        with pytest.raises(OwnershipError) as owned:  # before: named by the generated message id
            await Runner.run(
                agent, "Hi", session=MemoryCoreSession("shared", memory, resource_id="bob", scope_ids=False)
            )
        assert "'shared'" in str(owned.value) and "message" not in str(owned.value), owned.value


async def test_adk_names_a_large_event_not_its_generated_id() -> None:
    async with Memory(InMemoryStorage()) as memory:
        sessions = MemoryCoreSessionService(memory)
        runner = AdkRunner(
            agent=LlmAgent(name="a", model=ScriptedLlm(model="s")), app_name="app", session_service=sessions
        )
        await sessions.create_session(app_name="app", user_id="alice", session_id="s")
        message = types.Content(role="user", parts=[types.Part(text=LARGE)])
        with pytest.raises(ValidationError) as caught:
            _: Any = [e async for e in runner.run_async(user_id="alice", session_id="s", new_message=message)]
        assert caught.value.field == "event", caught.value
        _says_the_effective_limit(caught.value)

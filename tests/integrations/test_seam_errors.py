"""Errors a seam raises locate the input in the caller's words (issue 26):
a message too large is ``messages[0]``, ``items[0]`` or ``event``, never the
id the seam generated for it, and the size error states how much text fits
(the text is stored twice); a session id of another resource is named by
that id. Through each framework's own runner with its scripted model."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent, Model, Runner, Usage, set_tracing_disabled
from agents import ModelResponse as AgentsResponse
from agents.exceptions import UserError
from agents.tool import set_function_tool_failure_error_function
from google.adk.agents import LlmAgent
from google.adk.events.event import Event
from google.adk.runners import Runner as AdkRunner
from google.genai import types
from openai.types.responses import ResponseFunctionToolCall
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel

from memory_core import (
    InMemoryStorage,
    Memory,
    MemoryConfig,
    OwnershipError,
    SemanticRecall,
    ValidationError,
    WorkingMemory,
)
from memory_core.integrations.google_adk import MemoryCoreMemoryService, MemoryCoreSessionService
from memory_core.integrations.openai_agents import MemoryCoreSession, memory_tools
from memory_core.integrations.pydantic_ai import MessageHistory
from memory_core.query_checks import MAX_SEARCH_CHARS

from .test_google_adk_run import ScriptedLlm
from .test_openai_agents_run import ScriptedModel, _said

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


class _CallsTool(Model):
    """Calls ``tool`` with ``arguments``, then answers with the tool's output
    (no network)."""

    def __init__(self, tool: str, arguments: dict[str, Any]) -> None:
        self.tool, self.arguments = tool, arguments

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> AgentsResponse:
        last = input[-1] if isinstance(input, list) else {}
        if last.get("type") == "function_call_output":
            return AgentsResponse(output=[_said(str(last["output"]))], usage=Usage(), response_id=None)
        call = ResponseFunctionToolCall(
            type="function_call", call_id="c", name=self.tool, arguments=json.dumps(self.arguments), id="fc"
        )
        return AgentsResponse(output=[call], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


async def test_a_tools_oversized_argument_is_named_as_the_caller_passed_it() -> None:
    """Issue 26: an oversized ``query`` was refused as ``vector_search_string``
    (the core's parameter, which no seam's caller passes) and oversized
    ``notes`` as ``resource update``. Each seam's call and tools name the
    caller's own argument."""
    query = "apricot " * (MAX_SEARCH_CHARS // 8 + 1)
    notes = "x" * (16 * 2**20)  # over a resource's 15 MiB
    config = MemoryConfig(semantic_recall=SemanticRecall(mode="lexical"), working_memory=WorkingMemory(enabled=True))
    async with Memory(InMemoryStorage(), config=config) as memory:
        sessions = MemoryCoreSessionService(memory)
        adk = await sessions.create_session(app_name="a", user_id="alice", session_id="s")
        said = types.Content(role="user", parts=[types.Part(text="I like apricots")])
        await sessions.append_event(adk, Event(author="user", content=said))  # a search then reaches recall
        with pytest.raises(ValidationError) as caught:
            await MemoryCoreMemoryService(memory).search_memory(app_name="a", user_id="alice", query=query)
        assert caught.value.field == "query" and "vector_search_string" not in str(caught.value), caught.value
        assert str(MAX_SEARCH_CHARS) in str(caught.value)

        session = MemoryCoreSession("chat", memory, resource_id="alice")
        tools: list[Any] = memory_tools(session)
        for each in tools:  # the SDK's default hides a tool's error from the model: let it raise
            set_function_tool_failure_error_function(each, None)
        for tool, arguments, field in (
            ("recall_memory", {"query": query}, "query"),
            ("update_working_memory", {"notes": notes}, "notes"),
        ):
            with pytest.raises(UserError) as wrapped:  # the SDK's wrapper of a tool's error
                await Runner.run(Agent(name="a", model=_CallsTool(tool, arguments), tools=tools), "go")
            error = wrapped.value.__cause__
            assert isinstance(error, ValidationError) and error.field == field, wrapped.value
            assert "vector_search_string" not in str(error) and "resource update" not in str(error), error

        history = MessageHistory(memory, "alice")
        for tool, arguments, field in (
            ("recall_memory", {"query": query}, "query"),
            ("update_working_memory", {"notes": notes}, "notes"),
        ):

            def calls(
                messages: list[Any], info: Any, tool: str = tool, arguments: dict[str, Any] = arguments
            ) -> ModelResponse:
                return ModelResponse(parts=[ToolCallPart(tool, arguments)])

            with pytest.raises(ValidationError) as caught:
                await PydanticAgent(FunctionModel(calls), tools=history.tools("chat")).run("go")
            assert caught.value.field == field and "resource update" not in str(caught.value), caught.value
        assert (await memory.read_working_memory(resource_id="alice")).stored is False  # nothing written

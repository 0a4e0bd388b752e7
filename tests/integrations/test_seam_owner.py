"""Who a seam acts for (issue 26 F3): the ``resource_id`` given at
construction is never overridden by a run's context; a context naming
another resource is a ValidationError naming both, before any read or
write. Through the frameworks' own runners with scripted models."""

from __future__ import annotations

from typing import Any

import pytest
from agents import Agent, RunContextWrapper, Runner
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from memory_core import Memory, ValidationError
from memory_core.integrations.openai_agents import MemoryCoreSession
from memory_core.integrations.pydantic_ai import MessageHistory
from memory_core.reference import InMemoryStorage

from .test_openai_agents_run import ScriptedModel

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio."""
    return "asyncio"


async def test_an_openai_session_built_for_a_user_refuses_another_users_context() -> None:
    """Before: the context's ``bob`` silently replaced ``resource_id="alice"``."""
    agent = Agent(name="assistant", model=ScriptedModel())
    async with Memory(InMemoryStorage()) as memory:
        session = MemoryCoreSession("chat", memory, resource_id="alice")
        with pytest.raises(ValidationError) as caught:
            await Runner.run(agent, "Hello", session=session, context={"resource_id": "bob"})
        assert caught.value.field == "context.resource_id", caught.value
        assert "'bob'" in caught.value.reason and "resource_id='alice'" in caught.value.reason
        assert "MemoryCoreSession(session_id, memory)" in caught.value.reason  # a fix this seam allows
        assert (await memory.list_threads()).items == []  # refused before any write
        await Runner.run(agent, "Hello", session=session)  # no context: the construction's owner
        await Runner.run(agent, "Again", session=session, context={"resource_id": "alice"})  # agreeing
        threads = {t.id: t.resource_id for t in (await memory.list_threads()).items}
        assert threads == {"openai-agents:alice:chat": "alice"}
        shared = MemoryCoreSession("chat", memory)  # no resource_id: each run's context names the owner
        assert shared.thread_id(RunContextWrapper({"resource_id": "bob"})) == "openai-agents:bob:chat"


def _reads_notes(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls ``get_working_memory``, then answers with what it returned."""
    last: Any = messages[-1].parts[-1]
    if last.part_kind == "tool-return":
        return ModelResponse(parts=[TextPart(f"notes: {last.content}")])
    return ModelResponse(parts=[ToolCallPart("get_working_memory", {}, tool_call_id="w1")])


async def test_pydantic_ai_tools_refuse_deps_naming_another_resource() -> None:
    """Before: the tools ignored ``deps`` and acted for the history's owner
    whatever the run said; now a conflicting pair is an error, as above."""
    config = {"working_memory": {"enabled": True}}
    async with Memory(InMemoryStorage(), config=config) as memory:
        await memory.update_working_memory(None, "likes tea", resource_id="alice")
        history = MessageHistory(memory, "alice")
        agent = PydanticAgent(FunctionModel(_reads_notes), tools=history.tools("chat"))
        with pytest.raises(ValidationError, match=r"deps\.resource_id: is 'bob' but .*resource_id='alice'") as caught:
            await agent.run("What do you know?", deps={"resource_id": "bob"})
        # Issue 26: the caller's words (deps, not context) and a fix MessageHistory allows
        # (it has no constructor without resource_id).
        assert caught.value.field == "deps.resource_id"
        assert "without resource_id" not in caught.value.reason
        assert "MessageHistory(memory, resource_id)" in caught.value.reason
        assert (await agent.run("What do you know?")).output == "notes: likes tea"
        agreeing = await agent.run("What do you know?", deps={"resource_id": "alice"})
        assert agreeing.output == "notes: likes tea"

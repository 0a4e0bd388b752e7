"""Pydantic AI: the history store against an in-memory list, and real agent
runs with FunctionModel, on every backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from memory_core_conformance.integrations.pydantic_ai import run_history_machine
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from memory_core import OwnershipError, ValidationError
from memory_core.integrations.pydantic_ai import MessageHistory

from .conftest import OpenMemory


def test_differential_against_an_in_memory_list(open_memory: OpenMemory) -> None:
    @asynccontextmanager
    async def history() -> AsyncIterator[MessageHistory]:
        async with open_memory() as memory:
            yield MessageHistory(memory, "user-1")

    run_history_machine(history)


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Turn 1: call the weather tool, then report it; turn 2: quote the
    first prompt from the loaded history."""
    last = messages[-1].parts[-1]
    if last.part_kind == "tool-return":
        return ModelResponse(parts=[TextPart(f"The weather: {last.content}")])
    prompts = [p.content for m in messages for p in m.parts if p.part_kind == "user-prompt"]
    if "weather" in str(prompts[-1]):
        return ModelResponse(parts=[ToolCallPart("get_weather", {"city": "Paris"}, tool_call_id="call_1")])
    return ModelResponse(parts=[TextPart(f"You said first: {prompts[0]}" if len(prompts) > 1 else "Nothing before.")])


@pytest.mark.anyio
async def test_two_turns_through_the_agent(open_memory: OpenMemory) -> None:
    agent = Agent(FunctionModel(scripted))

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    async with open_memory() as memory:
        alice, bob = MessageHistory(memory, "alice"), MessageHistory(memory, "bob")
        first = await agent.run("What is the weather in Paris?", message_history=await alice.load("c-alice"))
        assert first.output == "The weather: sunny in Paris"
        await alice.append("c-alice", first.new_messages())
        history = await alice.load("c-alice")
        assert history == first.new_messages()  # lossless, tool call and return included
        assert [p.part_kind for m in history for p in m.parts] == [
            "user-prompt",
            "tool-call",
            "tool-return",
            "text",
        ]
        second = await agent.run("What did I ask?", message_history=history)
        assert second.output == "You said first: What is the weather in Paris?"
        await alice.append("c-alice", second.new_messages())
        assert len(await alice.load("c-alice")) == 6

        third = await agent.run("What did I ask?", message_history=await bob.load("c-bob"))
        assert third.output == "Nothing before."
        with pytest.raises(OwnershipError):
            await bob.load("c-alice")


@pytest.mark.anyio
async def test_bad_input_is_rejected_before_any_write(open_memory: OpenMemory) -> None:
    async with open_memory() as memory:
        history = MessageHistory(memory, "u")
        with pytest.raises(ValidationError, match="messages"):
            await history.append("c", ["not a message"])  # type: ignore[list-item]
        with pytest.raises(ValidationError, match="conversation_id"):
            await history.load("")
        assert await memory.get_thread("c") is None

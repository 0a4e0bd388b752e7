"""A real Agents SDK run through ``Runner`` with a scripted model: two turns
over a MemoryCoreSession, on every backend."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent, Model, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from memory_core import OwnershipError
from memory_core.integrations.openai_agents import MemoryCoreSession

from .conftest import OpenMemory

set_tracing_disabled(True)  # no exporter, no network


def _said(text: str) -> ResponseOutputMessage:
    part = ResponseOutputText(type="output_text", text=text, annotations=[])
    return ResponseOutputMessage(id="msg", type="message", role="assistant", status="completed", content=[part])


class ScriptedModel(Model):
    """Turn 1 asks the weather tool, then answers from its output; turn 2
    answers from the history the session loaded (no network)."""

    def __init__(self) -> None:
        self.inputs: list[list[Any]] = []

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        items: list[Any] = [input] if isinstance(input, str) else list(input)
        self.inputs.append(items)
        last = items[-1]
        output: list[Any]
        if last.get("type") == "function_call_output":
            output = [_said(f"The weather: {last['output']}")]
        elif "weather" in str(last.get("content")):
            arguments = json.dumps({"city": "Paris"})
            output = [
                ResponseFunctionToolCall(
                    type="function_call", call_id="call_1", name="get_weather", arguments=arguments, id="fc_1"
                )
            ]
        else:
            earlier = [i for i in items[:-1] if i.get("role") == "user"]
            output = [_said(f"You said first: {earlier[0]['content']}" if earlier else "Nothing before.")]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.mark.anyio
async def test_two_turns_tool_calls_survive_and_users_stay_isolated(open_memory: OpenMemory) -> None:
    model = ScriptedModel()
    agent = Agent(name="assistant", model=model, tools=[get_weather])
    async with open_memory() as memory:
        session = MemoryCoreSession("conv-alice", memory)
        alice = {"resource_id": "alice"}
        first = await Runner.run(agent, "What is the weather in Paris?", session=session, context=alice)
        assert first.final_output == "The weather: sunny in Paris"
        second = await Runner.run(agent, "What did I ask?", session=session, context=alice)
        assert second.final_output == "You said first: What is the weather in Paris?"
        seen = model.inputs[-1]  # the second turn's input: the first turn loaded from memory-core
        kinds = [item.get("type", "message") for item in seen]
        assert kinds == ["message", "function_call", "function_call_output", "message", "message"]
        assert seen[1]["name"] == "get_weather" and seen[2]["output"] == "sunny in Paris"
        stored = await memory.list_messages("conv-alice")
        assert [m.role for m in stored.items] == ["user", "assistant", "tool", "assistant", "user", "assistant"]

        bob_session = MemoryCoreSession("conv-bob", memory)
        third = await Runner.run(agent, "What did I ask?", session=bob_session, context={"resource_id": "bob"})
        assert third.final_output == "Nothing before."
        with pytest.raises(OwnershipError):
            await Runner.run(agent, "What did I ask?", session=session, context={"resource_id": "bob"})

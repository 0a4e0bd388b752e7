"""A real ADK run through ``Runner`` with a scripted ``BaseLlm``: two turns
over MemoryCoreSessionService, on every backend."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, ClassVar

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools.load_memory_tool import load_memory_tool
from google.genai import types

from memory_core.integrations.google_adk import MemoryCoreMemoryService, MemoryCoreSessionService, session_thread

from .conftest import OpenMemory


def _text(text: str) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


class ScriptedLlm(BaseLlm):
    """Turn 1 calls the weather tool, then answers from its result; turn 2
    quotes the first user prompt from the history ADK loaded (no network)."""

    seen: ClassVar[list[list[types.Content]]] = []

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        contents = list(llm_request.contents)
        self.seen.append(contents)
        last = contents[-1].parts[-1] if contents[-1].parts else types.Part()
        prompts = [p.text for c in contents if c.role == "user" for p in c.parts or [] if p.text]
        if last.function_response is not None:
            yield _text(f"The weather: {(last.function_response.response or {})['result']}")
        elif "weather" in (last.text or ""):
            call = types.FunctionCall(id="call_1", name="get_weather", args={"city": "Paris"})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))
        else:
            yield _text(f"You said first: {prompts[0]}" if len(prompts) > 1 else "Nothing before.")


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


async def ask(runner: Runner, user_id: str, session_id: str, text: str) -> tuple[str, list[Any]]:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    events = [e async for e in runner.run_async(user_id=user_id, session_id=session_id, new_message=message)]
    finals = [p.text for e in events if e.is_final_response() and e.content for p in e.content.parts or [] if p.text]
    return finals[-1], events


@pytest.mark.anyio
async def test_two_turns_tool_calls_survive_and_users_stay_isolated(open_memory: OpenMemory) -> None:
    llm = ScriptedLlm(model="scripted")
    llm.seen.clear()
    agent = LlmAgent(name="assistant", model=llm, tools=[get_weather])
    async with open_memory() as memory:
        service = MemoryCoreSessionService(memory)
        runner = Runner(app_name="weather", agent=agent, session_service=service)
        await service.create_session(app_name="weather", user_id="alice", session_id="c1")
        answer, _ = await ask(runner, "alice", "c1", "What is the weather in Paris?")
        assert answer == "The weather: sunny in Paris"
        answer, _ = await ask(runner, "alice", "c1", "What did I ask?")
        assert answer == "You said first: What is the weather in Paris?"
        history = llm.seen[-1]  # the second turn's request: the first turn loaded from memory-core
        kinds = [
            ("call" if p.function_call else "result" if p.function_response else p.text)
            for c in history
            for p in c.parts or []
        ]
        assert kinds == [
            "What is the weather in Paris?",
            "call",
            "result",
            "The weather: sunny in Paris",
            "What did I ask?",
        ]

        stored = await service.get_session(app_name="weather", user_id="alice", session_id="c1")
        assert stored is not None and len(stored.events) == 6
        call = stored.events[1].get_function_calls()[0]
        result = stored.events[2].get_function_responses()[0]
        assert (call.name, call.args, result.response) == (
            "get_weather",
            {"city": "Paris"},
            {"result": "sunny in Paris"},
        )
        roles = [m.role for m in (await memory.list_messages(session_thread("weather", "alice", "c1"))).items]
        assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]

        await service.create_session(app_name="weather", user_id="bob", session_id="c1")  # same id, other user
        answer, _ = await ask(runner, "bob", "c1", "What did I ask?")
        assert answer == "Nothing before."
        bob = await service.get_session(app_name="weather", user_id="bob", session_id="c1")
        assert bob is not None and len(bob.events) == 2


class MemoryLlm(BaseLlm):
    """Calls ADK's own ``load_memory`` tool with the user's words, then
    answers with the texts of the memories it got, ``|``-joined (no network)."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1].parts[-1] if llm_request.contents[-1].parts else types.Part()
        if last.function_response is not None:
            response: Any = (last.function_response.response or {}).get("result")  # the tool's LoadMemoryResponse
            memories = response.model_dump()["memories"]
            texts = [p["text"] for m in memories for p in m["content"]["parts"] if p.get("text")]
            yield _text(" | ".join(texts) or "(none)")
        else:
            call = types.FunctionCall(id="call_m", name="load_memory", args={"query": last.text or ""})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


@pytest.mark.anyio
async def test_load_memory_finds_memories_not_the_question_and_nothing_for_pears(open_memory: OpenMemory) -> None:
    agent = LlmAgent(name="assistant", model=MemoryLlm(model="scripted"), tools=[load_memory_tool])
    async with open_memory() as memory:
        service = MemoryCoreSessionService(memory)
        runner = Runner(
            app_name="pets",
            agent=agent,
            session_service=service,
            memory_service=MemoryCoreMemoryService(memory, top_k=1),
        )
        await service.create_session(app_name="pets", user_id="alice", session_id="before")
        answer, _ = await ask(runner, "alice", "before", "My cat is called Miso.")
        await service.create_session(app_name="pets", user_id="alice", session_id="now")
        answer, _ = await ask(runner, "alice", "now", "What is my cat called?")
        # The runner stored the question before the tool searched: it was the one memory (score 1.0).
        assert answer == "My cat is called Miso.", answer
        answer, _ = await ask(runner, "alice", "now", "pears")
        assert answer == "(none)"  # as ADK's InMemoryMemoryService: nothing about pears

        unfloored = Runner(
            app_name="pets",
            agent=agent,
            session_service=service,
            memory_service=MemoryCoreMemoryService(memory, top_k=1, min_score=None),
        )
        answer, _ = await ask(unfloored, "alice", "now", "apricots")
        assert answer != "(none)"  # without a floor: top_k memories, however unrelated
        # Issue 26: that run has ended; its question is no longer the turn being answered.
        after = await MemoryCoreMemoryService(memory, top_k=1).search_memory(
            app_name="pets", user_id="alice", query="apricots"
        )
        assert [p.text for m in after.memories for p in m.content.parts or []] == ["apricots"]

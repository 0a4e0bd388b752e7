"""The recall tools bound what they return (issue 26 re-probe): each hit's
text and the hits' texts together, cut with a visible marker, in every seam;
and a reply that merely repeats a tool result is not recalled. Through each
framework's runner with a scripted model."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agents import Agent, RunContextWrapper, Runner, set_tracing_disabled
from google.adk.events.event import Event
from google.genai import types
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from memory_core import ValidationError
from memory_core.integrations.google_adk import MemoryCoreMemoryService, MemoryCoreSessionService
from memory_core.integrations.openai_agents import MemoryCoreSession, memory_tools
from memory_core.integrations.pydantic_ai import MessageHistory
from memory_core.vector import message_text

from .test_openai_agents_run import RecallingModel
from .test_recall_tools import vector_memory

set_tracing_disabled(True)  # no exporter, no network
pytestmark = pytest.mark.anyio

ALICE = {"resource_id": "alice"}
LONG = "My cat is called Miso. " + "She sleeps on the warm windowsill all afternoon. " * 120  # ~6000 characters


def quoting(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Recalls "cat Miso", then answers by quoting the whole hit list among
    words of its own (a new text each time, so it is stored and recalled)."""
    last: Any = messages[-1].parts[-1]
    if last.part_kind == "tool-return":
        return ModelResponse(parts=[TextPart(f"From memory: {last.content}")])
    return ModelResponse(parts=[ToolCallPart("recall_memory", {"query": "cat Miso"}, tool_call_id="r1")])


async def test_a_model_quoting_its_hits_does_not_grow_the_next_hit_list() -> None:
    """Before: each answer quoted the previous hit list (escaped once more),
    was stored, and was recalled and quoted again, so the tool's result grew
    without bound; now every result stays within the bounds."""
    async with vector_memory() as memory:
        history = MessageHistory(memory, "alice")
        noted = PydanticAgent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("Noted.")])))
        await history.append("before", (await noted.run("My cat is called Miso.")).new_messages())
        tools = history.tools("chat", top_k=4, min_score=None, max_hit_chars=300, max_total_chars=900)
        agent = PydanticAgent(FunctionModel(quoting), tools=tools)
        sizes = []
        for _ in range(6):
            result = await agent.run("What is my cat called?", message_history=await history.load("chat"))
            await history.append("chat", result.new_messages())
            returned = [str(p.content) for m in result.new_messages() for p in m.parts if p.part_kind == "tool-return"]
            texts = [hit["text"] for hit in json.loads(returned[0])]
            assert all(len(text) <= 300 for text in texts), [len(t) for t in texts]
            sizes.append(sum(map(len, texts)))
        assert max(sizes) <= 900, sizes
        assert "[cut: " in returned[0]  # the quoted lists were cut, visibly


async def test_every_seam_cuts_a_long_hit_with_a_visible_marker() -> None:
    """Before: a 6000-character message came back whole from every seam."""
    async with vector_memory() as memory:
        earlier = MemoryCoreSession("first", memory)
        await earlier.add_items([{"role": "user", "content": LONG}], wrapper=RunContextWrapper(ALICE))  # type: ignore[list-item]
        session = MemoryCoreSession("chat", memory)
        agent = Agent(name="a", model=RecallingModel(), tools=[*memory_tools(session, min_score=None)])
        answer = await Runner.run(agent, "what is my cat called?", session=session, context=ALICE)
        [hit] = [h for h in json.loads(answer.final_output) if h["text"].startswith("My cat")]
        assert len(hit["text"]) == 2000 and hit["text"].endswith(" more characters]"), hit["text"][-60:]
        assert hit["text"].startswith(LONG[:1900])
        small = Agent(
            name="a", model=RecallingModel(), tools=[*memory_tools(session, min_score=None, max_hit_chars=500)]
        )
        answer = await Runner.run(small, "what is my cat called?", session=session, context=ALICE)
        assert all(len(h["text"]) <= 500 for h in json.loads(answer.final_output))
        unbounded = memory_tools(session, min_score=None, max_hit_chars=None, max_total_chars=None)
        answer = await Runner.run(
            Agent(name="a", model=RecallingModel(), tools=[*unbounded]), "cat?", session=session, context=ALICE
        )
        assert LONG in [h["text"] for h in json.loads(answer.final_output)]

        history = MessageHistory(memory, "alice")
        recaller = PydanticAgent(FunctionModel(quoting), tools=history.tools("p", min_score=None, max_hit_chars=400))
        result = await recaller.run("cat?")
        returned = [str(p.content) for m in result.new_messages() for p in m.parts if p.part_kind == "tool-return"]
        assert max(len(hit["text"]) for hit in json.loads(returned[0])) <= 400

        sessions = MemoryCoreSessionService(memory)
        search = MemoryCoreMemoryService(memory, min_score=None, max_hit_chars=1000, max_total_chars=1500)
        adk = await sessions.create_session(app_name="a", user_id="carol", session_id="s")
        for text in (LONG, LONG.replace("Miso", "Zorro")):
            said = types.Content(role="user", parts=[types.Part(text=text)])
            await sessions.append_event(adk, Event(author="user", content=said))
        found = await search.search_memory(app_name="a", user_id="carol", query="cat called Miso")
        texts = [p.text or "" for m in found.memories for p in m.content.parts or []]
        assert [len(t) for t in texts] == [1000, 500], [len(t) for t in texts]
        assert texts[0].endswith(" more characters]") and "[cut: " in texts[1]


def test_bound_texts_keeps_its_bounds_markers_included() -> None:
    from memory_core.integrations._tools import bound_texts, cut_marker

    texts = ["a" * 5000, "b" * 300, "c" * 50, "d" * 400]
    bounded = bound_texts(texts, 2000, 2400)
    assert [len(t) for t in bounded] == [2000, 300, 50 + len(cut_marker(0, 1))]
    assert bounded[0].endswith(cut_marker(5000 - 2000 + len(cut_marker(5000, 0)), 0))
    assert bounded[2].endswith("[cut: 1 more hit]")  # "d" did not fit: left out, and said so
    assert sum(map(len, bounded)) <= 2400
    assert bound_texts(texts, None, None) == texts
    assert bound_texts(["x" * 50] * 3, 100, 110) == ["x" * 50 + " [cut: 2 more hits]"]


async def test_the_bounds_are_checked_when_the_tools_are_built() -> None:
    async with vector_memory() as memory:
        session = MemoryCoreSession("chat", memory)
        bad: list[tuple[str, Any]] = [("max_hit_chars", 99), ("max_total_chars", True), ("max_hit_chars", 1000.0)]
        for field, value in bad:
            with pytest.raises(ValidationError) as caught:
                memory_tools(session, **{field: value})
            assert caught.value.field == field and ">= 100" in str(caught.value)
            with pytest.raises(ValidationError):
                MessageHistory(memory, "alice").tools("c", **{field: value})
            with pytest.raises(ValidationError):
                MemoryCoreMemoryService(memory, **{field: value})


async def test_a_reply_repeating_the_tool_result_is_not_recalled() -> None:
    """Before: the model's answer, the tool's JSON word for word, was stored
    as an assistant message and came back as a hit of the next recall (the
    tool result itself is left out; its copy was not)."""
    async with vector_memory() as memory:
        earlier = MemoryCoreSession("first", memory)
        fact: Any = [{"role": "user", "content": "My cat is called Miso."}]
        await earlier.add_items(fact, wrapper=RunContextWrapper(ALICE))
        session = MemoryCoreSession("chat", memory)
        agent = Agent(name="a", model=RecallingModel(), tools=[*memory_tools(session, top_k=10, min_score=None)])
        first = await Runner.run(agent, "recall: cat Miso", session=session, context=ALICE)
        echo = first.final_output
        answer = await Runner.run(agent, "recall: cat Miso again", session=session, context=ALICE)
        texts = [hit["text"] for hit in json.loads(answer.final_output)]
        assert "My cat is called Miso." in texts
        assert echo not in texts, texts
        stored = await memory.list_messages(session.thread_id(RunContextWrapper(ALICE)), per_page=False)
        replies = [message_text(m) for m in stored.items if m.role == "assistant"]
        assert echo in replies  # kept in the conversation, just not recalled

"""The recall tools (``recall_memory``, ADK's ``search_memory``) search under
the Memory's own semantic-recall settings and rank only what the user and
the assistant said (issue 26), through each framework's runner with a
scripted model where the behaviour is a tool's."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from agents import Agent, RunContextWrapper, Runner, set_tracing_disabled
from google.adk.events.event import Event
from google.genai import types
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import memory_core
from memory_core import InMemoryStorage, Memory, MemoryConfig, SemanticRecall, ValidationError
from memory_core.embedders import CallableEmbedder, Embedder, get_embedder
from memory_core.integrations.google_adk import MemoryCoreMemoryService, MemoryCoreSessionService
from memory_core.integrations.openai_agents import MemoryCoreSession, memory_tools
from memory_core.integrations.pydantic_ai import MessageHistory

from .test_openai_agents_run import RecallingModel
from .test_pydantic_ai import recalling

set_tracing_disabled(True)  # no exporter, no network
pytestmark = pytest.mark.anyio

ALICE = {"resource_id": "alice"}
SAID = [
    "We talked about the garden and the tomatoes.",
    "The train to Lyon leaves at nine.",
    "The wifi password is the word blorptangle.",
    "I like long walks by the river, and the longer the walk, the better the day feels to me.",
]


def by_length(texts: list[str]) -> list[list[float]]:
    """A poor embedder: a text's direction follows its length alone, so its
    vectors miss a made-up word that BM25 finds (the longest text wins)."""
    return [[float(len(text)), 1.0] for text in texts]


@asynccontextmanager
async def vector_memory(
    semantic: SemanticRecall | None = None, embedder: Embedder | None = None
) -> AsyncIterator[Memory]:
    """An in-memory store and vector store, semantic recall as given; the
    lexical-hash embedder (fast, deterministic) unless another is given."""
    vectors = await memory_core.connect_vector("memory://")
    config = MemoryConfig(semantic_recall=semantic)
    chosen = get_embedder("lexical") if embedder is None else embedder
    async with Memory(InMemoryStorage(), vectors, chosen, config=config, allow_volatile_vectors=True) as memory:
        yield memory


async def test_pydantic_recall_memory_follows_the_memorys_hybrid_settings() -> None:
    """Before: the tool searched vector-only whatever the config said, and
    missed the message ``memory.recall`` found by its rare word."""
    hybrid = SemanticRecall(mode="hybrid", lexical_weight=3)
    async with vector_memory(hybrid, CallableEmbedder(by_length, 2, name="length", in_thread=False)) as memory:
        history = MessageHistory(memory, "alice")
        for number, text in enumerate(SAID):
            run = await PydanticAgent(FunctionModel(lambda m, i: _answer("Noted."))).run(text)
            await history.append(f"before-{number}", run.new_messages())
        recalled = await memory.recall(
            history.thread_id("before-0"),
            "alice",
            vector_search_string="blorptangle",
            thread_config={"last_messages": 0},
        )
        assert any("blorptangle" in str(m.content) for m in recalled.messages)
        agent = PydanticAgent(FunctionModel(recalling), tools=history.tools("chat", top_k=1))
        result = await agent.run("blorptangle")
        assert json.loads(result.output) == ["The wifi password is the word blorptangle."]


def _answer(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])


async def test_lexical_recall_needs_no_vector_store_in_every_seam() -> None:
    """Before: every seam refused a Memory without a vector store
    (``offered_tools``: no tool to offer; ADK: field ``memory.vector``)."""
    config = MemoryConfig(semantic_recall=SemanticRecall(mode="lexical"))
    async with Memory(InMemoryStorage(), config=config) as memory:
        history = MessageHistory(memory, "alice")
        await history.append(
            "before", (await PydanticAgent(FunctionModel(lambda m, i: _answer("ok"))).run(SAID[2])).new_messages()
        )
        result = await PydanticAgent(FunctionModel(recalling), tools=history.tools("chat")).run("blorptangle")
        assert json.loads(result.output) == ["The wifi password is the word blorptangle."]

        session = MemoryCoreSession("chat", memory)
        agent = Agent(name="a", model=RecallingModel(), tools=[*memory_tools(session)])
        answer = await Runner.run(agent, "wifi password?", session=session, context=ALICE)
        # Issue 26: JSON text in every seam (before: Python's repr here, quoted with ').
        hits = json.loads(answer.final_output)
        assert [hit["text"] for hit in hits] == [SAID[2]]
        assert set(hits[0]) == {"thread_id", "role", "text", "created_at"}
        returned = [
            part.content
            for message in result.all_messages()
            for part in message.parts
            if part.part_kind == "tool-return"
        ]
        assert isinstance(returned[0], str) and set(json.loads(returned[0])[0]) == set(hits[0])

        sessions, search = MemoryCoreSessionService(memory), MemoryCoreMemoryService(memory)
        adk = await sessions.create_session(app_name="a", user_id="alice", session_id="s")
        said = types.Content(role="user", parts=[types.Part(text=SAID[2])])
        await sessions.append_event(adk, Event(author="user", content=said))
        await sessions.append_event(
            adk, Event(author="user", content=types.Content(role="user", parts=[types.Part(text="hi")]))
        )
        found = await search.search_memory(app_name="a", user_id="alice", query="blorptangle")
        assert [p.text for m in found.memories for p in m.content.parts or []] == [SAID[2]]

    async with Memory(InMemoryStorage()) as memory:  # vector mode, no vector store: still refused
        with pytest.raises(ValidationError) as caught:
            MemoryCoreMemoryService(memory)
        assert caught.value.field == "memory.vector" and "lexical" in str(caught.value)


async def test_a_branch_with_thread_scope_does_not_recall_the_edited_away_message() -> None:
    """Before: the tool searched every thread of the owner, so the branch
    recalled the message its turn 2 was edited away from."""
    async with vector_memory(SemanticRecall(scope="thread")) as memory:
        wrapper = RunContextWrapper(ALICE)
        session = MemoryCoreSession("trip", memory)
        said: Any = [
            {"role": "user", "content": "My cat is called Miso."},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "No wait, my cat is called Zorro."},
            {"role": "assistant", "content": "Noted again."},
        ]
        await session.add_items(said, wrapper=wrapper)
        await session.branch_from_turn(2, "trip-edit", wrapper=wrapper)
        agent = Agent(name="a", model=RecallingModel(), tools=[*memory_tools(session, min_score=None)])
        answer = await Runner.run(agent, "What is my cat called?", session=session, context=ALICE)
        texts = [hit["text"] for hit in json.loads(answer.final_output)]
        assert "My cat is called Miso." in texts
        assert all("Zorro" not in text for text in texts), texts
        await session.switch_to("trip", wrapper=wrapper)  # the source thread still recalls its own turn 2
        answer = await Runner.run(agent, "What is my cat called?", session=session, context=ALICE)
        assert any("Zorro" in hit["text"] for hit in json.loads(answer.final_output))


async def test_recall_never_returns_its_own_earlier_answers_after_a_restart() -> None:
    """Before: the first recall's function-call output (its result list) was
    indexed, and the next recall returned it as a memory."""
    async with vector_memory() as memory:
        earlier = MemoryCoreSession("trip", memory)
        await earlier.add_items(
            [{"role": "user", "content": "My cat is called Miso."}],  # type: ignore[list-item]
            wrapper=RunContextWrapper(ALICE),
        )
        session = MemoryCoreSession("chat", memory)
        agent = Agent(name="a", model=RecallingModel(), tools=[*memory_tools(session, top_k=10, min_score=None)])
        await Runner.run(agent, "recall: what is my cat called?", session=session, context=ALICE)
        # A restart: a new session object on the same store, the same question.
        again = MemoryCoreSession("chat", memory)
        agent = Agent(name="a", model=RecallingModel(), tools=[*memory_tools(again, top_k=10, min_score=None)])
        answer = await Runner.run(agent, "recall: what is my cat called?", session=again, context=ALICE)
        hits = json.loads(answer.final_output)
        assert {hit["role"] for hit in hits} <= {"user", "assistant"}, hits
        assert "My cat is called Miso." in [hit["text"] for hit in hits]
        stored = await memory.list_messages(again.thread_id(RunContextWrapper(ALICE)), per_page=False)
        assert "tool" in [m.role for m in stored.items]  # the outputs are kept, just not recalled


def noting(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls ``read_notes`` once, then says it is done."""
    if messages[-1].parts[-1].part_kind == "tool-return":
        return ModelResponse(parts=[TextPart("Done.")])
    return ModelResponse(parts=[ToolCallPart("read_notes", {}, tool_call_id="n1")])


async def test_pydantic_recall_memory_leaves_out_tool_returns() -> None:
    """Before: a tool's text return (role ``tool``) was a hit like any message."""
    async with vector_memory() as memory:
        history = MessageHistory(memory, "alice")
        agent = PydanticAgent(FunctionModel(noting))

        @agent.tool_plain
        def read_notes() -> str:
            """The notes."""
            return "Notes: the cat is Miso."

        first = await agent.run("My cat is called Miso.")
        await history.append("before", first.new_messages())
        recaller = PydanticAgent(FunctionModel(recalling), tools=history.tools("chat", top_k=10, min_score=None))
        texts = json.loads((await recaller.run("what is my cat called?")).output)
        assert "My cat is called Miso." in texts
        assert "Notes: the cat is Miso." not in texts, texts


async def test_adk_search_memory_leaves_out_function_responses() -> None:
    async with vector_memory() as memory:
        sessions, search = MemoryCoreSessionService(memory), MemoryCoreMemoryService(memory, top_k=10, min_score=None)
        session = await sessions.create_session(app_name="a", user_id="alice", session_id="s")
        said = types.Content(role="user", parts=[types.Part(text="My cat is called Miso.")])
        await sessions.append_event(session, Event(author="user", content=said))
        response = types.FunctionResponse(id="r", name="load_memory", response={"memories": ["My cat is called Miso."]})
        part = types.Part(function_response=response, text="My cat is called Miso.")
        await sessions.append_event(
            session, Event(author="assistant", content=types.Content(role="user", parts=[part]))
        )
        await sessions.append_event(
            session, Event(author="user", content=types.Content(role="user", parts=[types.Part(text="hi")]))
        )
        found = await search.search_memory(app_name="a", user_id="alice", query="what is my cat called?")
        texts = sorted(p.text or "" for m in found.memories for p in m.content.parts or [])
        assert texts == ["My cat is called Miso.", "hi"]  # outside a run: no turn left out (issue 26)
        assert [m.author for m in found.memories] == ["user", "user"]
        assert all(p.function_response is None for m in found.memories for p in m.content.parts or [])


QUESTION = "recall: what is my pet called?"


def recalling_briefly(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls ``recall_memory`` with the prompt, then answers in a word (a
    reply quoting the hits would be a new text each time, not a copy)."""
    last: Any = messages[-1].parts[-1]
    if last.part_kind == "tool-return":
        return _answer("Done.")
    return ModelResponse(parts=[ToolCallPart("recall_memory", {"query": last.content}, tool_call_id="r1")])


async def test_a_question_asked_in_every_restart_does_not_crowd_out_the_fact() -> None:
    """Issue 26: the same question asked again after each restart was stored
    each time, and its copies (scoring alike, above the fact) filled every
    slot: ``recall_memory`` returned four copies of the question and lost
    "My cat is called Miso.". Now one hit per distinct text, the slots
    filled from further candidates; the same in the three seams."""
    async with vector_memory() as memory:
        earlier = MemoryCoreSession("first", memory)
        fact: Any = [{"role": "user", "content": "My cat is called Miso."}]
        await earlier.add_items(fact, wrapper=RunContextWrapper(ALICE))
        openai_texts: list[list[str]] = []
        for _ in range(5):  # a restart each: a new session object on the store, the same question
            session = MemoryCoreSession("chat", memory)
            agent = Agent(name="a", model=RecallingModel(), tools=[*memory_tools(session, top_k=4, min_score=None)])
            answer = await Runner.run(agent, QUESTION, session=session, context=ALICE)
            openai_texts.append([hit["text"] for hit in json.loads(answer.final_output)])
        for texts in openai_texts:
            assert "My cat is called Miso." in texts, texts
            assert len(texts) == len({" ".join(t.casefold().split()) for t in texts}), texts
        # The copies' slots go to further candidates: all there are, as the
        # model's replies repeat the tool's output word for word (not recalled).
        assert sorted(openai_texts[-1]) == sorted([QUESTION, "My cat is called Miso."])

        history = MessageHistory(memory, "bob")
        noted = PydanticAgent(FunctionModel(lambda m, i: _answer("Noted.")))
        await history.append("first", (await noted.run("My dog is called Rex.")).new_messages())
        for _ in range(4):
            tools = history.tools("chat", top_k=3, min_score=None)
            recaller = PydanticAgent(FunctionModel(recalling_briefly), tools=tools)
            result = await recaller.run(QUESTION, message_history=await history.load("chat"))
            await history.append("chat", result.new_messages())
        returned = [str(p.content) for m in result.new_messages() for p in m.parts if p.part_kind == "tool-return"]
        texts = [hit["text"] for hit in json.loads(returned[0])]
        assert "My dog is called Rex." in texts and len(texts) == len(set(texts)), texts

        sessions, search = MemoryCoreSessionService(memory), MemoryCoreMemoryService(memory, top_k=2, min_score=None)
        trip = types.Content(role="user", parts=[types.Part(text="I fly to Lisbon in April.")])
        adk = await sessions.create_session(app_name="a", user_id="carol", session_id="s0")
        await sessions.append_event(adk, Event(author="user", content=trip))
        for n in range(1, 4):
            adk = await sessions.create_session(app_name="a", user_id="carol", session_id=f"s{n}")
            asked = types.Content(role="user", parts=[types.Part(text=f"recall:  Lisbon trip{' ' * n}")])
            await sessions.append_event(adk, Event(author="user", content=asked))
        found = await search.search_memory(app_name="a", user_id="carol", query="Lisbon")
        texts = [p.text or "" for m in found.memories for p in m.content.parts or []]
        assert len(texts) == 2 and "I fly to Lisbon in April." in texts, texts  # was the question twice


def test_distinct_hits_keeps_the_best_ranked_copy_of_each_text() -> None:
    from memory_core import Message
    from memory_core.integrations._tools import distinct_hits

    def said(id: str, content: Any) -> Message:
        return Message(id=id, thread_id="t", resource_id="u", role="user", content=content)

    hits = [
        said("a", "What is my  pet called?"),
        said("b", "what is my pet called?\n"),  # case and whitespace alone differ: a copy
        said("c", "My cat is called Miso."),
        said("d", {"format": 2, "parts": []}),  # no text: its own, never another's copy
        said("e", {"format": 2, "parts": []}),
        said("f", "\uff57\uff48\uff41\uff54 is my pet called?"),  # NFKC: full-width letters are the same words
    ]
    assert [m.id for m in distinct_hits(hits)] == ["a", "c", "d", "e"]


async def test_a_hit_sharing_no_word_with_the_query_never_clears_the_floor() -> None:
    """Issue 26 re-probe: with the lexical embedder a hit sharing no word
    with the query scored above the floor ("lisbon3929" and "I work in
    Oslo." land in the same hash slot: cosine 0.65, floor 0.15), so the
    floor let an unrelated message through; now a floored hit must share a
    feature. Without a floor, the hit is still returned."""
    async with vector_memory() as memory:
        history = MessageHistory(memory, "alice")
        noted = PydanticAgent(FunctionModel(lambda m, i: _answer("Noted.")))
        for text in ("I work in Oslo.", "I fly to Lisbon in April."):
            await history.append("before", (await noted.run(text)).new_messages())
        floored = PydanticAgent(FunctionModel(recalling), tools=history.tools("chat"))
        assert json.loads((await floored.run("lisbon3929")).output) == []
        assert json.loads((await floored.run("Lisbon")).output) == ["I fly to Lisbon in April."]
        unfloored = PydanticAgent(FunctionModel(recalling), tools=history.tools("chat", top_k=1, min_score=None))
        assert json.loads((await unfloored.run("lisbon3929")).output) == ["I work in Oslo."]
        thread = history.thread_id("before")
        config = {"last_messages": 0, "semantic_recall": {"min_score": "auto", "mode": "hybrid"}}
        found = await memory.recall(thread, "alice", vector_search_string="lisbon3929", thread_config=config)
        assert found.semantic_hits == []  # the same rule in the core's recall, before fusion too

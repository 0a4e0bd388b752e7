"""Pydantic AI: the history store against an in-memory list, and real agent
runs with FunctionModel, on every backend."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from memory_core_conformance.integrations.pydantic_ai import run_history_machine
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from memory_core import Message, OwnershipError, ValidationError
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
        assert await bob.load("c-alice") == []  # bob's own "c-alice": ids are scoped per owner

        old_alice = MessageHistory(memory, "alice", scope_ids=False)  # ids global across owners
        await old_alice.append("c-old", first.new_messages())
        assert old_alice.thread_id("c-old") == "c-old"
        with pytest.raises(OwnershipError):
            await MessageHistory(memory, "bob", scope_ids=False).load("c-old")


@pytest.mark.anyio
async def test_bad_input_is_rejected_before_any_write(open_memory: OpenMemory) -> None:
    async with open_memory() as memory:
        history = MessageHistory(memory, "u")
        with pytest.raises(ValidationError, match="messages"):
            await history.append("c", ["not a message"])  # type: ignore[list-item]
        with pytest.raises(ValidationError, match="conversation_id"):
            await history.load("")
        assert await memory.get_thread("c") is None


@pytest.mark.anyio
async def test_a_limited_window_never_starts_with_an_orphan_tool_return(open_memory: OpenMemory) -> None:
    """Issue 26: ``load(limit=2)`` after a tool exchange returned the
    request holding only the ``ToolReturnPart`` whose ``ToolCallPart`` it
    cut off, a history real model APIs refuse; now that return is dropped."""
    agent = Agent(FunctionModel(scripted))

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    async with open_memory() as memory:
        history = MessageHistory(memory, "alice")
        first = await agent.run("What is the weather in Paris?")
        await history.append("chat", first.new_messages())  # prompt, tool call, tool return, answer
        window = await history.load("chat", limit=2)
        assert [p.part_kind for m in window for p in m.parts] == ["text"], window
        assert [p.part_kind for m in await history.load("chat", limit=3) for p in m.parts] == [
            "tool-call",
            "tool-return",
            "text",
        ]  # the call is in the window: its return stays
        second = await agent.run("What did I ask?", message_history=await history.load("chat", limit=2))
        assert second.output == "Nothing before."  # the runner accepts the window


def recalling(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls ``recall_memory`` with the prompt, then answers with exactly what it returned."""
    last: Any = messages[-1].parts[-1]
    if last.part_kind == "tool-return":
        return ModelResponse(parts=[TextPart(json.dumps([hit["text"] for hit in json.loads(last.content)]))])
    return ModelResponse(parts=[ToolCallPart("recall_memory", {"query": last.content}, tool_call_id="r1")])


@pytest.mark.anyio
async def test_recall_tool_through_the_agent_has_a_relevance_floor(open_memory: OpenMemory) -> None:
    async with open_memory() as memory:
        history = MessageHistory(memory, "alice")
        agent = Agent(FunctionModel(recalling), tools=history.tools("chat", top_k=1))
        first = await agent.run("My cat is called Miso.", message_history=await history.load("before"))
        await history.append("before", first.new_messages())
        result = await agent.run("What is my cat called?", message_history=await history.load("chat"))
        assert json.loads(result.output) == ["My cat is called Miso."]
        await history.append("chat", result.new_messages())
        result = await agent.run("pears", message_history=await history.load("chat"))
        assert json.loads(result.output) == []  # nothing about pears: the floor leaves every hit out
        unfloored = Agent(FunctionModel(recalling), tools=history.tools("chat", top_k=1, min_score=None))
        result = await unfloored.run("apricots", message_history=await history.load("chat"))
        assert len(json.loads(result.output)) == 1  # without a floor: top_k hits, however unrelated


@pytest.mark.anyio
async def test_edit_an_earlier_prompt_through_memory_branch_thread(open_memory: OpenMemory) -> None:
    """Pydantic AI has no branch call: ``Memory.branch_thread`` on the
    history's thread, at the message before the edited prompt, gives a new
    conversation holding the turns before it; the original keeps all."""
    agent = Agent(FunctionModel(scripted))
    async with open_memory() as memory:
        alice = MessageHistory(memory, "alice")
        first = await agent.run("Hello", message_history=await alice.load("chat"))
        await alice.append("chat", first.new_messages())
        second = await agent.run("What did I ask?", message_history=await alice.load("chat"))
        await alice.append("chat", second.new_messages())
        stored = (await memory.storage.list_messages(alice.thread_id("chat"), per_page=False)).items
        assert len(stored) == 4
        branch = await memory.branch_thread(alice.thread_id("chat"), stored[1].id, alice.thread_id("chat-edit"))
        assert list(branch.message_ids) == [m.id for m in stored[:2]]
        assert await memory.get_lineage(alice.thread_id("chat-edit")) is not None
        edited = await agent.run("Say again?", message_history=await alice.load("chat-edit"))
        assert edited.output == "You said first: Hello"
        await alice.append("chat-edit", edited.new_messages())
        assert await alice.load("chat-edit") == [*first.new_messages(), *edited.new_messages()]
        assert await alice.load("chat") == [*first.new_messages(), *second.new_messages()]


def _text(message: Message) -> object:
    """The text a stored Pydantic AI message carries (``content["content"]``)."""
    assert isinstance(message.content, dict)
    return message.content["content"]


def _answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("Booked.")])


@pytest.mark.anyio
async def test_a_system_prompt_is_kept_byte_for_byte_and_never_stored_as_the_users_words(
    open_memory: OpenMemory,
) -> None:
    """Pydantic AI puts the system prompt in the first request, beside the
    user's prompt. ``ModelMessagesTypeAdapter`` is the oracle: what ``load``
    gives back is byte for byte the framework's own JSON of the run's
    messages. Before, that request's stored text (what recall embeds and
    returns, what ``list_messages`` shows) was "<system prompt>\\n<prompt>",
    role user: the system prompt read as words the user said."""
    agent = Agent(FunctionModel(_answer), system_prompt="You are a terse travel agent.", instructions="Be brief.")
    async with open_memory() as memory:
        history = MessageHistory(memory, "alice")
        first = await agent.run("Book Lisbon", message_history=await history.load("trip"))
        await history.append("trip", first.new_messages())
        second = await agent.run("And Porto?", message_history=await history.load("trip"))
        await history.append("trip", second.new_messages())
        sent = first.new_messages() + second.new_messages()
        loaded = await history.load("trip")
        assert ModelMessagesTypeAdapter.dump_json(loaded) == ModelMessagesTypeAdapter.dump_json(sent)
        assert [p.part_kind for p in loaded[0].parts] == ["system-prompt", "user-prompt"]

        stored = (await memory.list_messages(history.thread_id("trip"), per_page=False)).items
        assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
        assert [_text(m) for m in stored] == ["Book Lisbon", "Booked.", "And Porto?", "Booked."]
        assert stored[0].metadata == {"parts": ["system-prompt", "user-prompt"]}
        assert [m.metadata for m in stored[1:]] == [{}, {}, {}]

        only_system = ModelRequest(parts=[SystemPromptPart("Speak French.")])
        await history.append("rules", [only_system])
        (rules,) = (await memory.list_messages(history.thread_id("rules"), per_page=False)).items
        assert (rules.role, _text(rules), rules.metadata) == ("system", "Speak French.", {})
        assert ModelMessagesTypeAdapter.dump_json(await history.load("rules")) == ModelMessagesTypeAdapter.dump_json(
            [only_system]
        )


@pytest.mark.anyio
async def test_appending_all_messages_or_again_stores_each_message_once(open_memory: OpenMemory) -> None:
    """Before: an app that persists ``result.all_messages()`` (as Pydantic
    AI's docs do) stored the whole history again each turn, and a retried
    append stored its messages twice."""
    agent = Agent(FunctionModel(scripted))
    async with open_memory() as memory:
        history = MessageHistory(memory, "alice")
        first = await agent.run("hello", message_history=await history.load("c"))
        await history.append("c", first.all_messages())
        await history.append("c", first.new_messages())  # a retry: nothing new
        second = await agent.run("and now?", message_history=await history.load("c"))
        await history.append("c", second.all_messages())  # the history so far, plus the new turn
        loaded = await history.load("c")
        assert loaded == second.all_messages()  # each once, in order
        assert len(loaded) == 4
        third = await agent.run("once more", message_history=loaded)
        await history.append("c", [*third.new_messages(), *third.new_messages()])  # the same twice in a batch
        assert await history.load("c") == third.all_messages()
        await history.append("other", third.new_messages())  # another conversation holds its own copy
        assert len(await history.load("other")) == 2


@pytest.mark.anyio
async def test_a_first_turn_recall_logs_no_missing_thread_warning(
    open_memory: OpenMemory, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: the conversation's thread is stored only after its first run,
    so that run's ``recall_memory`` logged "thread ... does not exist"
    though nothing was wrong; a hand-made recall of a missing thread still
    warns, where it informs."""
    async with open_memory() as memory:
        if memory.vector is None:
            pytest.skip("recall needs a vector store")
        history = MessageHistory(memory, "alice")
        noted = Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("Noted.")])))
        await history.append("before", (await noted.run("My cat is called Miso.")).new_messages())
        agent = Agent(FunctionModel(recalling), tools=history.tools("new-chat", min_score=None))
        with caplog.at_level("WARNING", logger="memory_core"):
            result = await agent.run("What is my cat called?")
        assert "My cat is called Miso." in json.loads(result.output)  # the other conversation is searched
        assert not [r for r in caplog.records if "does not exist" in r.getMessage()], caplog.text
        with caplog.at_level("WARNING", logger="memory_core"):
            await memory.recall("typo", "alice", vector_search_string="cat")
        assert "thread 'typo' does not exist" in caplog.text

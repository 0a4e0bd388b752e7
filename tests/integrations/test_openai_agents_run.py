"""A real Agents SDK run through ``Runner`` with a scripted model: two turns
over a MemoryCoreSession, on every backend."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent, Model, ModelResponse, RunContextWrapper, Runner, Usage, function_tool, set_tracing_disabled
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from memory_core import OwnershipError, ValidationError
from memory_core.integrations.openai_agents import MemoryCoreSession, memory_tools

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
        stored = await memory.list_messages(session.thread_id(RunContextWrapper(alice)))
        assert [m.role for m in stored.items] == ["user", "assistant", "tool", "assistant", "user", "assistant"]

        bob_session = MemoryCoreSession("conv-bob", memory)
        third = await Runner.run(agent, "What did I ask?", session=bob_session, context={"resource_id": "bob"})
        assert third.final_output == "Nothing before."
        unscoped = MemoryCoreSession("conv-global", memory, scope_ids=False)
        await Runner.run(agent, "What did I ask?", session=unscoped, context=alice)
        with pytest.raises(OwnershipError):  # an unscoped id is global: bob may not use alice's
            await Runner.run(agent, "What did I ask?", session=unscoped, context={"resource_id": "bob"})


@pytest.mark.anyio
async def test_two_users_who_both_name_their_session_chat_each_see_their_own(open_memory: OpenMemory) -> None:
    model = ScriptedModel()
    agent = Agent(name="assistant", model=model, tools=[get_weather])
    async with open_memory() as memory:
        session = MemoryCoreSession("chat", memory)  # one session object for every user, as in a web app
        alice, bob = {"resource_id": "alice"}, {"resource_id": "bob"}
        await Runner.run(agent, "What is the weather in Paris?", session=session, context=alice)
        first = await Runner.run(agent, "What did I ask?", session=session, context=bob)
        assert first.final_output == "Nothing before."  # was OwnershipError: "chat" was alice's
        await Runner.run(agent, "Hello from Bob", session=session, context=bob)
        answer = await Runner.run(agent, "What did I ask?", session=session, context=alice)
        assert answer.final_output == "You said first: What is the weather in Paris?"
        assert not any("Bob" in str(item.get("content")) for item in model.inputs[-1])
        answer = await Runner.run(agent, "What did I ask?", session=bob_copy(session), context=bob)
        assert answer.final_output == "You said first: What did I ask?"
        threads = {t.id: t.resource_id for t in (await memory.list_threads()).items}
        assert threads == {"openai-agents:alice:chat": "alice", "openai-agents:bob:chat": "bob"}


def bob_copy(session: MemoryCoreSession) -> MemoryCoreSession:
    """A second session object over the same id (another request of the app)."""
    return MemoryCoreSession(session.session_id, session.memory)


@pytest.mark.anyio
async def test_stores_from_before_scoped_ids_stay_readable_and_can_move(open_memory: OpenMemory) -> None:
    agent = Agent(name="assistant", model=ScriptedModel())
    async with open_memory() as memory:
        alice = {"resource_id": "alice"}
        old = MemoryCoreSession("chat", memory, scope_ids=False)  # how every store was written before
        await Runner.run(agent, "My cat is called Miso.", session=old, context=alice)
        assert [t.id for t in (await memory.list_threads()).items] == ["chat"]
        new = MemoryCoreSession("chat", memory)
        assert await new.get_items(wrapper=RunContextWrapper(alice)) == []  # the scoped thread is another one
        answer = await Runner.run(agent, "What did I say?", session=old, context=alice)
        assert answer.final_output == "You said first: My cat is called Miso."
        # Moving a conversation to its scoped id: copy the thread, then drop the old one.
        await memory.clone_thread("chat", new.thread_id(RunContextWrapper(alice)))
        await memory.delete_thread("chat")
        answer = await Runner.run(agent, "And now?", session=new, context=alice)
        assert answer.final_output == "You said first: My cat is called Miso."


class RecallingModel(Model):
    """Calls ``recall_memory`` with the user's words, then answers with
    exactly what the tool returned (no network)."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        items: list[Any] = [input] if isinstance(input, str) else list(input)
        last = items[-1]
        output: list[Any]
        if last.get("type") == "function_call_output":
            output = [_said(str(last["output"]))]
        else:
            arguments = json.dumps({"query": last["content"]})
            output = [
                ResponseFunctionToolCall(
                    type="function_call", call_id="call_r", name="recall_memory", arguments=arguments, id="fc_r"
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


@pytest.mark.anyio
async def test_recall_memory_spends_its_slots_on_memory_not_on_the_question(open_memory: OpenMemory) -> None:
    async with open_memory() as memory:
        alice = {"resource_id": "alice"}
        earlier = MemoryCoreSession("trip", memory)
        said = [
            {"role": "user", "content": "My cat is called Miso."},
            {"role": "assistant", "content": "Miso is a lovely name."},
        ]
        await earlier.add_items(said, wrapper=RunContextWrapper(alice))  # type: ignore[arg-type]
        session = MemoryCoreSession("chat", memory)
        agent = Agent(name="assistant", model=RecallingModel(), tools=[*memory_tools(session, top_k=1)])
        result = await Runner.run(agent, "What is my cat called?", session=session, context=alice)
        # The runner stored the question before the tool ran: it was the one hit (score 1.0).
        assert "My cat is called Miso." in result.final_output, result.final_output
        assert "What is my cat called?" not in result.final_output
        result = await Runner.run(agent, "pears", session=session, context=alice)
        assert result.final_output == "[]"  # nothing about pears: the floor leaves every hit out
        unfloored = Agent(name="a", model=RecallingModel(), tools=[*memory_tools(session, top_k=1, min_score=None)])
        result = await Runner.run(unfloored, "apricots", session=session, context=alice)
        assert result.final_output != "[]"  # without a floor: top_k hits, however unrelated


@pytest.mark.anyio
async def test_branch_from_a_turn_edits_an_earlier_message_and_continues(open_memory: OpenMemory) -> None:
    """AdvancedSQLiteSession's create_branch_from_turn on memory-core: redo
    turn 2 with another question; the branch holds turn 1, the original
    session keeps all three turns, and switching back reads them."""
    model = ScriptedModel()
    agent = Agent(name="assistant", model=model, tools=[get_weather])
    async with open_memory() as memory:
        alice = {"resource_id": "alice"}
        wrapper = RunContextWrapper(alice)
        session = MemoryCoreSession("trip", memory)
        await Runner.run(agent, "What is the weather in Paris?", session=session, context=alice)
        await Runner.run(agent, "Shall I pack a coat?", session=session, context=alice)
        await Runner.run(agent, "Thanks!", session=session, context=alice)
        original = await session.get_items(wrapper=wrapper)
        branch = await session.branch_from_turn(2, "trip-edit", wrapper=wrapper)
        assert branch == session.current_session_id(wrapper) == "trip-edit" and session.session_id == "trip"
        assert await session.get_items(wrapper=wrapper) == original[:4]  # turn 1: question, tool call, output, answer
        answer = await Runner.run(agent, "What did I ask first?", session=session, context=alice)
        assert answer.final_output == "You said first: What is the weather in Paris?"
        edited = await session.get_items(wrapper=wrapper)
        assert [i.get("content") for i in edited[4:5]] == ["What did I ask first?"] and len(edited) == 6
        lineage = await memory.get_lineage(session.thread_id(wrapper), "alice")
        assert lineage is not None and lineage.source_thread_id == "openai-agents:alice:trip"
        await session.switch_to("trip", wrapper=wrapper)
        assert await session.get_items(wrapper=wrapper) == original
        with pytest.raises(ValidationError, match="turn: "):  # a ValueError, as the SDK's
            await session.branch_from_turn(4, wrapper=wrapper)
        first = await session.branch_from_turn(1, wrapper=wrapper)
        assert first.startswith("trip.branch-1-") and await session.get_items(wrapper=wrapper) == []
        with pytest.raises(ValidationError, match="branch_id: 'trip-edit' is taken"):
            await MemoryCoreSession("trip", memory).branch_from_turn(1, "trip-edit", wrapper=wrapper)
        with pytest.raises(ValidationError):
            await session.branch_from_turn(0, wrapper=wrapper)


@pytest.mark.anyio
async def test_one_users_branch_leaves_every_other_user_of_a_shared_session_where_they_were(
    open_memory: OpenMemory,
) -> None:
    """Issue 26: one session object serves every user (as a web app holds
    one); alice's ``branch_from_turn`` and ``switch_to`` move alice alone.
    Before, they changed the object's ``session_id``, so bob's next run read
    and wrote ``bob:<alice's branch id>``: an empty conversation."""
    model = ScriptedModel()
    agent = Agent(name="assistant", model=model, tools=[get_weather])
    async with open_memory() as memory:
        session = MemoryCoreSession("trip", memory)  # shared by every user
        alice, bob = {"resource_id": "alice"}, {"resource_id": "bob"}
        await Runner.run(agent, "What is the weather in Paris?", session=session, context=alice)
        await Runner.run(agent, "Shall I pack a coat?", session=session, context=alice)
        await Runner.run(agent, "Bob here: hello", session=session, context=bob)
        branch = await session.branch_from_turn(2, "trip-edit", wrapper=RunContextWrapper(alice))
        answer = await Runner.run(agent, "What did I ask?", session=session, context=bob)
        assert answer.final_output == "You said first: Bob here: hello"  # bob still on his "trip"
        assert branch == session.current_session_id(RunContextWrapper(alice)) == "trip-edit"
        assert session.session_id == session.current_session_id(RunContextWrapper(bob)) == "trip"
        answer = await Runner.run(agent, "What did I ask?", session=session, context=alice)
        assert answer.final_output == "You said first: What is the weather in Paris?"
        assert [i.get("content") for i in model.inputs[-1] if i.get("role") == "user"] == [
            "What is the weather in Paris?",
            "What did I ask?",
        ]  # alice's branch: turn 1 and the edited turn 2
        threads = {t.id for t in (await memory.list_threads()).items}
        assert threads == {"openai-agents:alice:trip", "openai-agents:alice:trip-edit", "openai-agents:bob:trip"}
        with pytest.raises(ValidationError, match="'trip-edit'"):  # bob has no such session
            await session.switch_to("trip-edit", wrapper=RunContextWrapper(bob))
        await session.switch_to("trip", wrapper=RunContextWrapper(alice))
        assert session.current_session_id(RunContextWrapper(alice)) == "trip"
        bound = MemoryCoreSession("trip", memory, resource_id="alice")  # one user: no wrapper needed
        assert await bound.branch_from_turn(1, "fresh") == bound.current_session_id() == "fresh"
        assert bound.session_id == "trip" and await bound.get_items() == []

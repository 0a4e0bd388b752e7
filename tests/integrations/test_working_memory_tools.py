"""The working-memory tools refuse to overwrite stored notes with the unfilled
template or a blank value (the data loss Mastra guards against, its issue
#12253), through each framework's own runner with a scripted model."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from agents import Agent as OpenAIAgent
from agents import Model, ModelResponse, RunContextWrapper, Runner, Usage, set_tracing_disabled
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner as AdkRunner
from google.genai import types
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelMessage, TextPart, ToolCallPart
from pydantic_ai.messages import ModelResponse as PydanticResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from memory_core import InMemoryStorage, Memory, MemoryConfig, ValidationError
from memory_core.integrations._tools import REFUSED_BLANK, REFUSED_TEMPLATE, read_working_memory
from memory_core.integrations.google_adk import MemoryCoreSessionService, user_resource, working_memory_tools
from memory_core.integrations.openai_agents import MemoryCoreSession, memory_tools
from memory_core.integrations.pydantic_ai import MessageHistory
from memory_core.memory import WorkingMemory

set_tracing_disabled(True)  # no exporter, no network

TEMPLATE = "# User\n- **Name**:\n- **Likes**:\n"
STORED = "# User\n- **Name**: Alice\n- **Likes**: dogs\n"
REFUSED = [
    (TEMPLATE, REFUSED_TEMPLATE),
    ("  # User\n\n- **Name**:   \n- **Likes**:", REFUSED_TEMPLATE),  # the template, spaced differently
    ("", REFUSED_BLANK),
    (" \n\t ", REFUSED_BLANK),
    # Issue 25: these overwrote the notes.
    ("```markdown\n" + TEMPLATE + "```", REFUSED_TEMPLATE),  # the template in a code fence
    ("# User\n- Name:\n- Likes:\n", REFUSED_TEMPLATE),  # without its bold markers
    ("# User\r\n* __Name__:\u200b\r\n* Likes:\r\n", REFUSED_TEMPLATE),  # other bullets and emphasis, CRLF
    ("\u200b", REFUSED_BLANK),  # zero-width space (format characters, Unicode category Cf)
    ("\u3164\u115f\uffa0", REFUSED_BLANK),  # Hangul fillers: letters drawn as blank space
    ("\u034f\ufe0f", REFUSED_BLANK),  # combining grapheme joiner, variation selector: marks with no letter
    ("\u2800", REFUSED_BLANK),  # Braille blank
    ("\ufeff", REFUSED_BLANK),  # byte-order mark
    ("\u2060\u00a0\u3000", REFUSED_BLANK),  # word joiner, no-break and ideographic spaces
    ("null", REFUSED_BLANK),
    ("{}", REFUSED_BLANK),
    ("[]", REFUSED_BLANK),
    ('""', REFUSED_BLANK),
    ("None", REFUSED_BLANK),
    ('{"name": null, "likes": [""]}', REFUSED_BLANK),  # JSON whose every value is empty
    ("```json\n{}\n```", REFUSED_BLANK),
]
REFUSED_IDS = [
    "template",
    "template-spaced",
    "empty",
    "blank",
    "template-fenced",
    "template-unbold",
    "template-restyled",
    "zero-width-space",
    "hangul-fillers",
    "marks-alone",
    "braille-blank",
    "bom",
    "word-joiner",
    "null",
    "empty-object",
    "empty-array",
    "empty-string",
    "None",
    "empty-values-json",
    "fenced-empty-json",
]


@asynccontextmanager
async def alice_memory() -> AsyncIterator[Memory]:
    """A Memory with a working-memory template, Alice's notes stored."""
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, template=TEMPLATE))
    async with Memory(InMemoryStorage(), config=config) as memory:
        await memory.storage.update_resource("alice", working_memory=STORED)
        yield memory


async def notes_of(memory: Memory) -> str | None:
    resource = await memory.storage.get_resource("alice")
    return None if resource is None else resource.working_memory


class UpdatingModel(Model):
    """Calls ``update_working_memory`` with the prompt as the notes, then
    answers with exactly what the tool returned (no network)."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        items: list[Any] = [input] if isinstance(input, str) else list(input)
        last = items[-1]
        output: list[Any]
        if last.get("type") == "function_call_output":
            text = ResponseOutputText(type="output_text", text=str(last["output"]), annotations=[])
            output = [
                ResponseOutputMessage(id="m", type="message", role="assistant", status="completed", content=[text])
            ]
        else:
            arguments = json.dumps({"notes": json.loads(last["content"])})
            call = ResponseFunctionToolCall(
                type="function_call", call_id="c1", name="update_working_memory", arguments=arguments, id="f1"
            )
            output = [call]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def updating(messages: list[ModelMessage], info: AgentInfo) -> PydanticResponse:
    """Pydantic AI's twin of :class:`UpdatingModel`."""
    last: Any = messages[-1].parts[-1]
    if last.part_kind == "tool-return":
        return PydanticResponse(parts=[TextPart(str(last.content))])
    notes = json.loads(last.content)
    return PydanticResponse(parts=[ToolCallPart("update_working_memory", {"notes": notes}, tool_call_id="u1")])


@pytest.mark.anyio
@pytest.mark.parametrize(("notes", "answer"), REFUSED, ids=REFUSED_IDS)
async def test_openai_agents_update_refuses_template_and_blank(notes: str, answer: str) -> None:
    async with alice_memory() as memory:
        session = MemoryCoreSession("another-thread", memory)
        agent = OpenAIAgent(name="a", model=UpdatingModel(), tools=[*memory_tools(session)])
        result = await Runner.run(agent, json.dumps(notes), session=session, context={"resource_id": "alice"})
        assert result.final_output == answer
        assert await notes_of(memory) == STORED
        result = await Runner.run(agent, json.dumps(STORED + "- Pet: Rex\n"), context={"resource_id": "alice"})
        assert await notes_of(memory) == STORED + "- Pet: Rex\n"  # a real update still lands


@pytest.mark.anyio
@pytest.mark.parametrize(("notes", "answer"), REFUSED, ids=REFUSED_IDS)
async def test_pydantic_ai_update_refuses_template_and_blank(notes: str, answer: str) -> None:
    async with alice_memory() as memory:
        agent = PydanticAgent(FunctionModel(updating), tools=MessageHistory(memory, "alice").tools("another-thread"))
        result = await agent.run(json.dumps(notes))
        assert result.output == answer
        assert await notes_of(memory) == STORED
        await agent.run(json.dumps(STORED + "- Pet: Rex\n"))
        assert await notes_of(memory) == STORED + "- Pet: Rex\n"  # a real update still lands


@pytest.mark.anyio
async def test_reading_shows_the_template_until_notes_are_stored() -> None:
    """The model sees the template it is asked to fill (and may not send back
    unfilled) while nothing is stored; then the stored notes."""
    async with alice_memory() as memory:
        assert await read_working_memory(memory, "bob") == TEMPLATE
        assert await read_working_memory(memory, "alice") == STORED


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio."""
    return "asyncio"


class ToolListingModel(Model):
    """Answers with the names of the tools the runner offered it."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        tools = kwargs.get("tools", args[2] if len(args) > 2 else [])
        text = ResponseOutputText(type="output_text", text=",".join(t.name for t in tools), annotations=[])
        reply = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed", content=[text])
        return ModelResponse(output=[reply], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def listing_tools(messages: list[ModelMessage], info: AgentInfo) -> PydanticResponse:
    """Pydantic AI's twin of :class:`ToolListingModel`."""
    return PydanticResponse(parts=[TextPart(",".join(t.name for t in info.function_tools))])


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("working_memory", "vectors", "offered"),
    [
        (False, True, "recall_memory"),
        (True, False, "get_working_memory,update_working_memory"),
        (True, True, "get_working_memory,update_working_memory,recall_memory"),
    ],
)
async def test_working_memory_tools_are_offered_only_while_working_memory_is_on(
    working_memory: bool, vectors: bool, offered: str
) -> None:
    """Before: both seams offered ``get_working_memory`` and
    ``update_working_memory`` while the config turned working memory off
    (the default), and the tools read and wrote it anyway."""
    from memory_core import InMemoryVectorStore
    from memory_core.embedders import LexicalHashEmbedder

    config = MemoryConfig(working_memory=WorkingMemory(enabled=working_memory))
    vector, embedder = (InMemoryVectorStore(), LexicalHashEmbedder()) if vectors else (None, None)
    async with Memory(InMemoryStorage(), vector, embedder, config=config) as memory:
        session = MemoryCoreSession("chat", memory)
        agent = OpenAIAgent(name="a", model=ToolListingModel(), tools=[*memory_tools(session)])
        result = await Runner.run(agent, "which tools?", session=session, context={"resource_id": "alice"})
        assert result.final_output == offered
        tools = MessageHistory(memory, "alice").tools("chat")
        assert (await PydanticAgent(FunctionModel(listing_tools), tools=tools).run("which tools?")).output == offered


@pytest.mark.anyio
async def test_a_memory_with_no_tool_to_offer_is_refused_naming_both_fixes() -> None:
    async with Memory(InMemoryStorage()) as memory:  # working memory off, no vector store
        for make in (
            lambda: memory_tools(MemoryCoreSession("chat", memory)),
            lambda: MessageHistory(memory, "a").tools("c"),
        ):
            with pytest.raises(ValidationError) as caught:
                make()
            assert caught.value.field == "memory", caught.value
            assert '{"enabled": True}' in caught.value.reason and "vector=" in caught.value.reason, caught.value


class UpdatingLlm(BaseLlm):
    """Calls ``update_working_memory`` with the JSON-decoded user text as the
    notes, then answers with exactly what the tool returned (no network)."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1].parts[-1]  # type: ignore[index]
        if last.function_response is not None:
            result = str((last.function_response.response or {})["result"])
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=result)]))
        else:
            call = types.FunctionCall(
                id="u1", name="update_working_memory", args={"notes": json.loads(last.text or "")}
            )
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


@pytest.mark.anyio
@pytest.mark.parametrize(("notes", "answer"), REFUSED, ids=REFUSED_IDS)
async def test_adk_update_refuses_template_and_blank(notes: str, answer: str) -> None:
    """Issue 26: ADK had no working-memory tool while the other seams did;
    it gets the same one, with the same refusals, for the session's user."""
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, template=TEMPLATE))
    async with Memory(InMemoryStorage(), config=config) as memory:
        owner = user_resource("app", "alice")
        await memory.storage.update_resource(owner, working_memory=STORED)
        sessions = MemoryCoreSessionService(memory)
        agent = LlmAgent(name="a", model=UpdatingLlm(model="scripted"), tools=[*working_memory_tools(memory)])
        runner = AdkRunner(agent=agent, app_name="app", session_service=sessions)
        await sessions.create_session(app_name="app", user_id="alice", session_id="s")

        async def ask(text: str) -> str:
            message = types.Content(role="user", parts=[types.Part(text=text)])
            events = [e async for e in runner.run_async(user_id="alice", session_id="s", new_message=message)]
            return [p.text for e in events if e.is_final_response() and e.content for p in e.content.parts or []][
                -1
            ] or ""

        assert await ask(json.dumps(notes)) == answer
        assert await read_working_memory(memory, owner) == STORED
        assert await ask(json.dumps(STORED + "- Pet: Rex\n")) == STORED + "- Pet: Rex\n"  # a real update lands
        assert await read_working_memory(memory, owner) == STORED + "- Pet: Rex\n"
        assert await read_working_memory(memory, user_resource("app", "bob")) == TEMPLATE  # per user
    async with Memory(InMemoryStorage()) as memory:  # working memory off: no tool to offer
        with pytest.raises(ValidationError, match="working memory is off"):
            working_memory_tools(memory)


SEAMS = ["openai-agents", "pydantic-ai", "google-adk"]
OWNERS = {"openai-agents": "alice", "pydantic-ai": "alice", "google-adk": user_resource("app", "alice")}
"""The resource each seam's tools act for when alice runs them."""


async def tool_answer(seam: str, memory: Memory, notes: str, conversation: str = "chat") -> str:
    """What ``update_working_memory`` answered ``notes``, called by the
    seam's own runner (scripted model) in alice's ``conversation``."""
    prompt = json.dumps(notes)
    if seam == "openai-agents":
        session = MemoryCoreSession(conversation, memory)
        agent = OpenAIAgent(name="a", model=UpdatingModel(), tools=[*memory_tools(session)])
        result = await Runner.run(agent, prompt, session=session, context={"resource_id": "alice"})
        return str(result.final_output)
    if seam == "pydantic-ai":
        tools = MessageHistory(memory, "alice").tools(conversation)
        return (await PydanticAgent(FunctionModel(updating), tools=tools).run(prompt)).output
    sessions = MemoryCoreSessionService(memory)
    if await sessions.get_session(app_name="app", user_id="alice", session_id=conversation) is None:
        await sessions.create_session(app_name="app", user_id="alice", session_id=conversation)
    adk_agent = LlmAgent(name="a", model=UpdatingLlm(model="scripted"), tools=[*working_memory_tools(memory)])
    runner = AdkRunner(agent=adk_agent, app_name="app", session_service=sessions)
    message = types.Content(role="user", parts=[types.Part(text=prompt)])
    events = [e async for e in runner.run_async(user_id="alice", session_id=conversation, new_message=message)]
    return [p.text for e in events if e.is_final_response() and e.content for p in e.content.parts or []][-1] or ""


SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "food": {"type": "string"}},
    "required": ["name"],
}
JSON_STORED = '{"name": "Ana", "food": "figs"}'


@pytest.mark.anyio
@pytest.mark.parametrize("seam", SEAMS)
async def test_the_tools_check_notes_against_the_schema_as_memory_does(seam: str) -> None:
    """Issue 25: with a schema the tools wrote through the storage, past
    ``Memory.update_working_memory``'s check: non-JSON notes, notes missing a
    required field, ``{}`` and ``null`` all replaced valid notes."""
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, schema=SCHEMA))
    async with Memory(InMemoryStorage(), config=config) as memory:
        owner = OWNERS[seam]
        await memory.update_working_memory(None, JSON_STORED, owner)
        for notes in ("{}", "null"):
            assert await tool_answer(seam, memory, notes) == REFUSED_BLANK
        for notes, why in (("Ana likes figs", "must be JSON"), ('{"food": "x"}', "'name' is a required property")):
            answer = await tool_answer(seam, memory, notes)
            assert answer.startswith("Not saved (working memory") and why in answer, answer
            assert json.dumps(SCHEMA) in answer, answer  # what to send: the schema itself
            with pytest.raises(ValidationError):  # the tools refuse what Memory refuses
                await memory.update_working_memory(None, notes, owner)
        assert await memory.get_working_memory(None, owner) == JSON_STORED
        assert await tool_answer(seam, memory, '{"name": "Bo"}') == '{"name": "Bo"}'  # a valid update lands
        assert await memory.get_working_memory(None, owner) == '{"name": "Bo"}'


@pytest.mark.anyio
@pytest.mark.parametrize("seam", ["openai-agents", "pydantic-ai"])
async def test_the_tools_keep_thread_scoped_notes_in_the_conversation(seam: str) -> None:
    """Issue 25: with scope "thread" the tools wrote the resource record, so
    ``Memory.get_working_memory`` on the conversation still gave the
    template. Pydantic AI stores the run after it: the tool creates the
    conversation's thread to keep the notes in."""
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, scope="thread", template=TEMPLATE))
    async with Memory(InMemoryStorage(), config=config) as memory:

        def thread_of(conversation: str) -> str:
            if seam == "openai-agents":
                return MemoryCoreSession(conversation, memory).thread_id(RunContextWrapper({"resource_id": "alice"}))
            return MessageHistory(memory, "alice").thread_id(conversation)

        assert await tool_answer(seam, memory, STORED) == STORED
        assert await memory.get_working_memory(thread_of("chat"), "alice") == STORED
        assert await read_working_memory(memory, "alice", thread_of("chat")) == STORED  # get_working_memory
        assert await read_working_memory(memory, "alice", thread_of("other")) == TEMPLATE  # another conversation's
        assert await notes_of(memory) is None  # the resource record is not written
        assert await tool_answer(seam, memory, "```\n" + TEMPLATE + "```") == REFUSED_TEMPLATE
        assert await memory.get_working_memory(thread_of("chat"), "alice") == STORED


def test_adk_tools_refuse_thread_scope_naming_why() -> None:
    """A session's thread keeps the ADK session's revision in its
    working-memory slot: thread-scoped notes would break the session."""
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, scope="thread"))
    with pytest.raises(ValidationError) as caught:
        working_memory_tools(Memory(InMemoryStorage(), config=config))
    assert caught.value.field == "memory" and '"scope": "resource"' in caught.value.reason, caught.value


NEAR_COPIES = [
    # Issue 25, a fresh trial: each of these replaced "Alice / likes dogs" in every seam.
    ("# User\n• **Name**:\n• **Likes**:\n", REFUSED_TEMPLATE),  # bullets other than Markdown's
    ("## User\n- **Name**:\n- **Likes**:\n", REFUSED_TEMPLATE),  # a deeper heading
    (TEMPLATE.lower(), REFUSED_TEMPLATE),
    ("- **Name**:\n- **Likes**:\n", REFUSED_TEMPLATE),  # the heading dropped
    (json.dumps(TEMPLATE), REFUSED_TEMPLATE),  # the template as a JSON string literal
    (json.dumps(json.dumps(TEMPLATE)), REFUSED_TEMPLATE),  # ... twice
    (TEMPLATE + "<!-- -->", REFUSED_TEMPLATE),
    ("# User\n- **Name**: N/A\n- **Likes**: N/A\n", REFUSED_TEMPLATE),
    ('# User\n- **Name**: ""\n- **Likes**: ""\n', REFUSED_TEMPLATE),
    ("# User\n- **Name**: -\n- **Likes**: -\n", REFUSED_TEMPLATE),
    ("# User\n- **Name**: none\n- **Likes**: none\n", REFUSED_TEMPLATE),
    ("# User\n- **Name**: unknown\n- **Likes**: Unknown\n", REFUSED_TEMPLATE),
    ("# User\n- **Name**: TBD\n- **Likes**: t.b.d.\n", REFUSED_TEMPLATE),
    ("# User\n- **Name**: ?\n- **Likes**: null\n", REFUSED_TEMPLATE),
    ("# User\n- **Name**\uff1a\n- **Likes**\uff1a\n", REFUSED_TEMPLATE),  # fullwidth colons
    (
        "# \uff35\uff53\uff45\uff52\n- **\uff2e\uff41\uff4d\uff45**:\n- **\uff2c\uff49\uff4b\uff45\uff53**:\n",
        REFUSED_TEMPLATE,
    ),
    ("# User\n1. Name:\n2. Likes:\n", REFUSED_TEMPLATE),  # a numbered list
    ("<b>Name</b>: <br/>\n<i>Likes</i>:", REFUSED_TEMPLATE),  # HTML markup
    ("- \n- ", REFUSED_BLANK),  # markup with no content
    ("** **", REFUSED_BLANK),
    ("\ufffc", REFUSED_BLANK),  # object replacement character
    ("\ufffd", REFUSED_BLANK),  # replacement character
    ("\U0001f436\U0001f44d", REFUSED_BLANK),  # emoji alone: no letter or digit
    ("N/A", REFUSED_BLANK),
    ("unknown", REFUSED_BLANK),
    ('"null"', REFUSED_BLANK),  # a JSON string literal holding a "no value" word
    ('{"name": "N/A", "likes": "unknown"}', REFUSED_BLANK),  # JSON whose every value is a filler
]
NEAR_COPY_IDS = [
    "bullet-dots",
    "heading-h2",
    "lower-case",
    "heading-dropped",
    "json-string",
    "json-string-twice",
    "html-comment",
    "filled-n/a",
    "filled-empty-quotes",
    "filled-dash",
    "filled-none",
    "filled-unknown",
    "filled-tbd",
    "filled-question-null",
    "fullwidth-colons",
    "fullwidth-letters",
    "numbered",
    "html-tags",
    "empty-bullets",
    "empty-bold",
    "U+FFFC",
    "U+FFFD",
    "emoji-only",
    "n/a-alone",
    "unknown-alone",
    "json-string-null",
    "json-fillers",
]
FILLED = [
    "Name: Alice",  # one field of the template, filled
    "- **Name**: Alice\n- **Likes**:\n",  # the template with one field filled
    "# User\n- **Name**: N/A\n- **Likes**: dogs\n",
    "# User\n- **Name**: \uff21\uff4c\uff49\uff43\uff45\n- **Likes**: none\n",  # fullwidth, still a name
    "# User\n- Name: User\n- Likes:\n",  # a template word used as a value
    "- Likes: \U0001f436 and cats",
    "42",
    "\u540d\u524d: \u30a2\u30ea\u30b9",  # Japanese: letters of another script
    "1\ufe0f\u20e3",  # keycap emoji: holds a digit
    json.dumps("# User\n- Name: Alice\n"),  # a JSON string literal holding real notes
]


@pytest.mark.anyio
@pytest.mark.parametrize("seam", SEAMS)
@pytest.mark.parametrize(("notes", "answer"), NEAR_COPIES, ids=NEAR_COPY_IDS)
async def test_near_copies_of_the_template_and_contentless_notes_are_refused(
    seam: str, notes: str, answer: str
) -> None:
    """Issue 25, a fresh trial: near-copies of the template (other bullets,
    headings or case, the heading dropped, a JSON string literal, an HTML
    comment, fields "filled" with N/A, none, unknown or "", fullwidth forms)
    and notes without a letter or digit (markup alone, U+FFFC, U+FFFD)
    replaced Alice's notes: the unfilled template is now told by its words,
    not its form (Mastra issue #12253)."""
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, template=TEMPLATE))
    async with Memory(InMemoryStorage(), config=config) as memory:
        owner = OWNERS[seam]
        await memory.update_working_memory(None, STORED, owner)
        assert await tool_answer(seam, memory, notes) == answer
        assert await memory.get_working_memory(None, owner) == STORED


@pytest.mark.anyio
@pytest.mark.parametrize("seam", SEAMS)
@pytest.mark.parametrize("notes", FILLED)
async def test_notes_with_a_field_really_filled_are_saved(seam: str, notes: str) -> None:
    """A template with at least one field really filled is stored as sent."""
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, template=TEMPLATE))
    async with Memory(InMemoryStorage(), config=config) as memory:
        owner = OWNERS[seam]
        await memory.update_working_memory(None, STORED, owner)
        assert await tool_answer(seam, memory, notes) == notes
        assert await memory.get_working_memory(None, owner) == notes

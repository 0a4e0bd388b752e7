"""Pydantic AI integration: a message-history store keyed by conversation,
plus recall and working-memory tools (``pip install "memory-core[pydantic-ai]"``).

Use: ``history = await store.load(conversation_id)`` before a run, pass it as
``message_history``, then ``await store.append(conversation_id,
result.new_messages())``.

Mapping: conversation = thread, owned by the store's ``resource_id``, with
the id ``pydantic-ai:<resource_id>:<conversation_id>`` (:data:`THREAD_NAMESPACE`;
``scope_ids=False``: ``conversation_id`` itself, as stores made before ids
were scoped hold it). Each
``ModelMessage`` is one message: ``type`` is :data:`MESSAGE_TYPE`, ``content``
is ``{"message": <the framework's own JSON of it>, "content": <its text>}``
(Pydantic AI's ``ModelMessagesTypeAdapter``, so the round trip is lossless);
``role`` follows :func:`message_role`.

System prompts: Pydantic AI sends them in the first ``ModelRequest``, beside
the user's prompt (one message, as ``ModelMessagesTypeAdapter`` has it: the
framework's JSON, stored whole, is what :meth:`MessageHistory.load` gives
back, byte for byte). Such a request is stored as one message with role
``user`` (the turn is the user's), its text (``content["content"]``, what
recall embeds and returns) the user's prompt only, never the system prompt
as words the user said, and ``metadata["parts"]`` listing its part kinds
(``["system-prompt", "user-prompt"]``) so a reader of ``list_messages`` sees
the system part. A request of system prompts only is role ``system`` with
their text.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pydantic_ai import RunContext, Tool
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelRequest, ModelResponse

from memory_core.arguments import check_memory
from memory_core.errors import ValidationError
from memory_core.memory import Memory
from memory_core.models import Message, Role
from memory_core.validation import check_bool, check_id, check_list

from ._threads import (
    check_limit,
    check_record,
    conversation_thread,
    delete_conversation,
    newest_messages,
    owner_of,
    save_to,
)
from ._tools import (
    DEFAULT_HIT_CHARS,
    DEFAULT_TOTAL_CHARS,
    MinScore,
    check_hit_bounds,
    check_recall_options,
    offered_tools,
    read_working_memory,
    recall_json,
    write_working_memory,
)

__all__ = ["MESSAGE_TYPE", "THREAD_NAMESPACE", "MessageHistory", "message_id", "message_role", "message_text"]

MESSAGE_TYPE = "pydantic-ai/message"
"""``Message.type`` of a stored Pydantic AI ``ModelMessage``."""

THREAD_NAMESPACE = "pydantic-ai"
"""First part of a scoped conversation's thread id: ``pydantic-ai:<resource_id>:<conversation_id>``."""

_OTHER_OWNER = (
    "build a MessageHistory for that resource (MessageHistory(memory, resource_id)) and give the agent its "
    "tools, or leave resource_id out of deps"
)
"""The fix a ``deps`` naming another resource than the store's is told."""

_TEXT_PARTS = frozenset({"user-prompt", "text", "tool-return", "system-prompt", "thinking"})


def message_role(message: ModelMessage) -> Role:
    """``ModelResponse`` -> ``assistant``; a ``ModelRequest`` -> ``tool`` when
    it carries only tool returns or retry prompts, ``system`` when only system
    prompts, else ``user``."""
    if not isinstance(message, ModelRequest):
        return "assistant"
    kinds = {part.part_kind for part in message.parts}
    if kinds and kinds <= {"tool-return", "retry-prompt"}:
        return "tool"
    if kinds == {"system-prompt"}:
        return "system"
    return "user"


_MESSAGE_IDS = uuid.UUID("0c9f6a52-3d1e-5b7a-8c4f-7079646e7469")
"""The UUIDv5 namespace of stored Pydantic AI messages' ids (:func:`message_id`;
fixed forever: changing it would store every message appended again twice)."""


def message_id(thread_id: str, data: Any) -> str:
    """The id a Pydantic AI message is stored under in ``thread_id``: the
    UUIDv5 (in :data:`_MESSAGE_IDS`) of the thread id and ``data``, the
    message's JSON (``ModelMessagesTypeAdapter.dump_python(..., mode="json")``
    of it) written with sorted keys, so the same message appended again names
    the same stored message (:meth:`MessageHistory.append` skips it)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return str(uuid.uuid5(_MESSAGE_IDS, f"{thread_id}\n{text}"))


def message_text(message: ModelMessage) -> str:
    """The text semantic recall embeds: the message's text parts (user
    prompts, model text, tool returns, system prompts), newline-joined; the
    system prompts of a request that also holds other parts (the first
    request of a run) are left out: they are not the user's words."""
    texts = []
    kinds = {part.part_kind for part in message.parts}
    skipped = {"system-prompt"} if isinstance(message, ModelRequest) and kinds != {"system-prompt"} else set()
    for part in message.parts:
        if part.part_kind in skipped:
            continue
        content = getattr(part, "content", None)
        if part.part_kind in _TEXT_PARTS and isinstance(content, str):
            texts.append(content)
    return "\n".join(texts)


def _parts_note(message: ModelMessage) -> dict[str, Any]:
    """``{"parts": [part kinds]}`` for a request whose system prompts share
    it with other parts (its role and text are the user's); else ``{}``."""
    kinds = [part.part_kind for part in message.parts]
    if isinstance(message, ModelRequest) and "system-prompt" in kinds and set(kinds) != {"system-prompt"}:
        return {"parts": kinds}
    return {}


_ANSWERS = frozenset({"tool-return", "retry-prompt"})
"""Request parts that answer a model response (its tool calls or output)."""


def _without_orphan_returns(messages: list[ModelMessage]) -> list[ModelMessage]:
    """``messages`` (a window of the newest of a history) without the tool
    returns and retry prompts its first request holds: the response they
    answer was cut off. The request goes too when nothing else is left."""
    if not messages or not isinstance(messages[0], ModelRequest):
        return messages
    first = messages[0]
    kept = [part for part in first.parts if part.part_kind not in _ANSWERS]
    if not kept:
        return messages[1:]
    return messages if len(kept) == len(first.parts) else [replace(first, parts=kept), *messages[1:]]


class MessageHistory:
    """Conversation histories of one resource (a user) in a :class:`~memory_core.Memory`.

    Args:
        memory: a :class:`~memory_core.Memory` (storage and optional vector
            store); shared, not closed here.
        resource_id: the owner of every conversation this store touches (R-ID).
        scope_ids: True (default): conversation ids are the owner's own, the
            thread being ``pydantic-ai:<resource_id>:<conversation_id>`` (see
            :meth:`thread_id`), so two users' ``"chat"`` are two threads.
            False: the thread id is ``conversation_id`` itself, global across
            owners (another owner's gives ``OwnershipError``): the setting
            that keeps reading and writing stores made before ids were scoped.

    Raises:
        ValidationError: a bad id, or (at construction) a ``memory`` that is
            not a Memory (:func:`~memory_core.arguments.check_memory`) or a
            ``scope_ids`` that is not a bool.
        OwnershipError: a conversation belongs to another resource (only
            with ``scope_ids=False``).
    """

    def __init__(self, memory: Memory, resource_id: str, *, scope_ids: bool = True) -> None:
        self.memory = check_memory(memory)
        self.resource_id = check_id(resource_id, "resource_id")
        self.scope_ids = check_bool(scope_ids, "scope_ids")

    def thread_id(self, conversation_id: str) -> str:
        """The thread a conversation is kept in (see ``scope_ids``).

        Raises:
            ValidationError: a bad ``conversation_id``, or one longer than
                256 characters once mapped.
        """
        check_id(conversation_id, "conversation_id")
        return conversation_thread(
            THREAD_NAMESPACE, self.resource_id, conversation_id, scoped=self.scope_ids, field="conversation_id"
        )

    async def load(self, conversation_id: str, *, limit: int | None = None) -> list[ModelMessage]:
        """The conversation's messages, oldest first: every one (``limit``
        None, negative, or over 2**31-1: more than a conversation holds), or
        the newest ``limit`` (0: none); ``[]`` for a
        new conversation. ``limit`` means what it means in every seam, the
        Agents SDK's ``SQLiteSession`` rule
        (:func:`~memory_core.integrations._threads.check_limit`).

        A window read with ``limit`` never starts with a tool return whose
        ``ToolCallPart`` it cut off (model APIs refuse such a history): the
        first message's tool-return and retry-prompt parts are dropped, and
        the message with them when it holds nothing else, so the window may
        hold one message fewer than ``limit``. It may still start with the
        model's response to those returns; pass ``limit=None`` (or trim
        with a history processor) when the model needs whole exchanges.

        Raises:
            ValidationError: a bad ``conversation_id``, or a ``limit`` that is
                not an int or None (a bool included), naming ``limit``.
        """
        thread = self.thread_id(conversation_id)
        limit = check_limit(limit, "limit")
        stored = await newest_messages(self.memory, thread, self.resource_id, limit)
        messages = ModelMessagesTypeAdapter.validate_python(
            [m.content["message"] for m in stored if isinstance(m.content, dict)]
        )
        return messages if limit is None else _without_orphan_returns(messages)

    async def append(self, conversation_id: str, messages: Sequence[ModelMessage]) -> None:
        """Append messages in order, in one batch; a message the
        conversation holds already is skipped, so appending is idempotent:
        ``result.new_messages()`` and ``result.all_messages()`` (the whole
        history, as Pydantic AI's own docs persist it) store the same, and a
        retried append stores nothing twice.

        A message is known by its content: its id is a UUIDv5 of the
        conversation's thread and Pydantic AI's JSON of it
        (:func:`message_id`), which carries the parts' and the response's
        timestamps, so the same words said in two turns are two messages.
        Not recognised, hence stored again: messages stored before ids were
        derived (random ids), and the first message of a window read with
        ``load(limit=n)`` when its orphaned tool returns were dropped (it is
        no longer the stored message): with a window, append
        ``new_messages()``.

        Raises:
            ValidationError: not a list of ModelMessage, or one too large
                (R-SIZE: its text is stored twice, so about 7.5 MiB of text
                fits), named ``messages[i]``, before any write.
        """
        thread = self.thread_id(conversation_id)
        messages = check_list(messages, "messages", "ModelMessage", "result.new_messages()")
        for index, message in enumerate(messages):
            if not isinstance(message, ModelRequest | ModelResponse):
                raise ValidationError(f"messages[{index}]", f"must be a ModelMessage, got {type(message).__name__}")
        encoded = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
        ids = [message_id(thread, data) for data in encoded]
        records = [
            check_record(
                Message(
                    ids[index],
                    thread,
                    message_role(message),
                    {"message": data, "content": message_text(message)},
                    self.resource_id,
                    MESSAGE_TYPE,
                    metadata=_parts_note(message),
                ),
                f"messages[{index}]",
            )
            for index, (message, data) in enumerate(zip(messages, encoded, strict=True))
        ]
        await self.memory.wait_for_writes()  # a cancelled append still in flight is seen whole
        seen = {m.id for m in await self.memory.storage.get_messages(ids)}
        fresh = []
        for record in records:  # the same message twice in one batch: stored once
            if record.id not in seen:
                seen.add(record.id)
                fresh.append(record)
        await save_to(self.memory, thread, self.resource_id, fresh)

    async def clear(self, conversation_id: str) -> None:
        """Delete the conversation, its messages and their vectors."""
        await delete_conversation(self.memory, self.thread_id(conversation_id), self.resource_id)

    def tools(
        self,
        conversation_id: str,
        *,
        top_k: int = 4,
        min_score: MinScore = "auto",
        max_hit_chars: int | None = DEFAULT_HIT_CHARS,
        max_total_chars: int | None = DEFAULT_TOTAL_CHARS,
    ) -> list[Tool[Any]]:
        """Agent tools for this resource: with working memory on in the
        Memory's config (off by default: then these two are not offered)
        ``get_working_memory`` and
        ``update_working_memory(notes)``, over the working memory as
        :meth:`~memory_core.Memory.update_working_memory` keeps it (the
        resource's, or with scope ``"thread"`` this conversation's thread,
        created if not stored yet; checked against the config's JSON
        Schema), refusing notes that hold nothing (no letter or
        digit, or only fillers such as ``null``, ``N/A``, ``{}``), the
        unfilled template however reworded
        (:func:`~memory_core.integrations._tools.notes_refusal`), or notes
        the schema refuses, nothing written and the model told why (see
        :func:`~memory_core.integrations._tools.write_working_memory`) and,
        when the Memory can be searched (a vector store, or lexical semantic
        recall), ``recall_memory(query)``: up to ``top_k`` best user and
        assistant messages under the Memory's semantic-recall settings
        (``mode``, weights, ``scope``: the resource's conversations, or with
        scope ``"thread"`` this conversation's), tool returns left out (its
        own earlier answers among them; the run being answered is not
        searched either: its messages are stored by :meth:`append` after
        it), and hits under ``min_score`` (cosine similarity; ``"auto"``, the
        default: the Memory's ``semantic_recall.min_score`` when set, else
        the floor measured for its embedder; None: no floor) and replies
        that merely repeat a tool return; see
        :func:`~memory_core.integrations._tools.recall_hits`. Each hit's
        text holds at most ``max_hit_chars`` characters (default 2000) and
        the hits' texts together at most ``max_total_chars`` (default
        8000), cut with a visible ``[cut: ...]`` marker
        (:func:`~memory_core.integrations._tools.bound_texts`; None: no
        bound).

        The tools act for the store's ``resource_id``. A run whose ``deps``
        carry a ``resource_id`` (``deps.resource_id`` or
        ``deps["resource_id"]``) must name the same one: the construction
        argument is never overridden, as in the OpenAI Agents seam
        (:func:`~memory_core.integrations._threads.owner_of`).

        Raises:
            ValidationError: ``top_k`` is not an int from 1 to 1000, a bad
                ``min_score`` or ``conversation_id``, or a bound that is
                neither None nor an int >= 100; no tool to offer
                (working memory off and no recall, field ``memory``:
                :func:`~memory_core.integrations._tools.offered_tools`); when a tool runs, a
                ``deps`` naming another resource (field
                ``deps.resource_id``, nothing read or written).
        """
        thread = self.thread_id(conversation_id)
        top_k, min_score = check_recall_options(top_k, min_score)
        max_hit_chars, max_total_chars = check_hit_bounds(max_hit_chars, max_total_chars)
        working, recall = offered_tools(self.memory)
        memory = self.memory

        def owner(deps: Any) -> str:
            return owner_of(self.resource_id, deps, where="deps", fix=_OTHER_OWNER)

        async def get_working_memory(ctx: RunContext[Any]) -> str:
            """Read the notes kept about this user (empty when none)."""
            return await read_working_memory(memory, owner(ctx.deps), thread)

        async def update_working_memory(ctx: RunContext[Any], notes: str) -> str:
            """Replace the notes kept about this user (empty notes, the
            unfilled template or notes the schema refuses are not saved: the
            stored notes stay, and the answer says why).

            Args:
                notes: the complete new notes (Markdown).
            """
            return await write_working_memory(memory, owner(ctx.deps), notes, thread)

        async def recall_memory(ctx: RunContext[Any], query: str) -> str:
            """Search this user's past conversations for messages about `query`;
            a JSON array of {thread_id, role, text, created_at}, best first.

            Args:
                query: what to look for.
            """
            # The run's messages are stored by append() after it: no turn of it to leave out.
            return await recall_json(
                memory,
                owner(ctx.deps),
                query,
                top_k,
                thread_id=thread,
                min_score=min_score,
                leave_out_turn=False,
                max_hit_chars=max_hit_chars,
                max_total_chars=max_total_chars,
            )

        tools: list[Tool[Any]] = []
        if working:
            tools += [Tool(get_working_memory, takes_ctx=True), Tool(update_working_memory, takes_ctx=True)]
        if recall:
            tools.append(Tool(recall_memory, takes_ctx=True))
        return tools

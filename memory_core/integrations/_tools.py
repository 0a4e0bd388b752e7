"""What the integrations' agent tools do, once: recall under the Memory's
semantic-recall settings (of what the user and the assistant said, leaving
out the turn being answered, under a relevance floor) and working memory."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from memory_core.arguments import check_memory
from memory_core.errors import NotFoundError, ValidationError
from memory_core.memory import Memory, MemoryConfig, SemanticRecall
from memory_core.models import Message
from memory_core.validation import MAX_TOP_K, MinScore, check_min_score, check_search_text, check_text
from memory_core.vector import message_text

from ._threads import current_turn

__all__ = [
    "REFUSED_BLANK",
    "REFUSED_TEMPLATE",
    "RECALLED_ROLES",
    "MinScore",
    "can_recall",
    "check_recall_options",
    "check_recallable",
    "offered_tools",
    "read_working_memory",
    "recall_hits",
    "recall_json",
    "recall_texts",
    "tool_recall",
    "write_working_memory",
]

REFUSED_BLANK = (
    "Not saved: the notes were empty, and the stored notes were kept. To change them, "
    "call get_working_memory and send the complete notes with your changes."
)
"""What :func:`write_working_memory` answers to a blank value."""
REFUSED_TEMPLATE = (
    "Not saved: that is the unfilled template, and the stored notes were kept. Call "
    "get_working_memory and send the complete notes: what is stored plus what you learned."
)
"""What :func:`write_working_memory` answers to the configured template."""


def check_recall_options(top_k: Any, min_score: Any) -> tuple[int, MinScore]:
    """A seam's recall settings, checked at construction.

    Raises:
        ValidationError: ``top_k`` is not an int from 1 to 1000, or
            ``min_score`` is not ``"auto"``, None or a number from -1 to 1.
    """
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise ValidationError("top_k", f"must be an int from 1 to {MAX_TOP_K}, got {top_k!r}", "R-RECALL")
    return int(top_k), check_min_score(min_score, "min_score")


RECALLED_ROLES = frozenset({"user", "assistant"})
"""The roles the recall tools search: what the user and the assistant said.
Tool results are left out (the recall tools' own among them: their text is
earlier hits, so a recall would find its own past answers and feed on them),
and so are system instructions."""

_GROWTH = 4
"""How much deeper a recall tool searches again when tool results took
slots (:func:`recall_hits`)."""


def tool_recall(memory: Memory, top_k: int, min_score: MinScore) -> SemanticRecall:
    """The semantic-recall settings a recall tool searches ``memory`` with:
    the Memory's own (``memory.config.semantic_recall``: ``mode``, the
    fusion weights, ``scope``; :class:`SemanticRecall` defaults while it is
    off, as a tool call is an explicit search), with the tool's ``top_k``,
    no context around hits (``message_range=0``), the turn being answered
    left out (``exclude_recent``) and the floor the tool's ``min_score``
    names: a number or None as given; ``"auto"``: the Memory's
    ``min_score`` when it sets one, else ``"auto"``, which recall reads as
    the floor measured for its embedder
    (:func:`~memory_core.embedders.relevance_floor`), the meaning it has in
    :class:`~memory_core.config.SemanticRecall`."""
    base = memory.config.semantic() or SemanticRecall()
    floor = min_score if min_score != "auto" or base.min_score is None else base.min_score
    return replace(base, top_k=top_k, message_range=0, exclude_recent=True, min_score=floor)


def can_recall(memory: Memory) -> bool:
    """Whether the recall tools can search ``memory``: it has a vector
    store, or its semantic recall runs in ``"lexical"`` mode (BM25 over
    storage, no vectors needed)."""
    semantic = memory.config.semantic()
    return memory.vector is not None or (semantic is not None and semantic.mode == "lexical")


def check_recallable(memory: Any, field: str = "memory") -> Memory:
    """``memory`` if the recall tools can search it (:func:`can_recall`).

    Raises:
        ValidationError: not a Memory (:func:`~memory_core.arguments.check_memory`),
            or (field ``<field>.vector``) a Memory without a vector store
            whose semantic recall is not in ``"lexical"`` mode, naming both fixes.
    """
    checked = check_memory(memory, field)
    if not can_recall(checked):
        raise ValidationError(
            f"{field}.vector",
            "recall needs a vector store (Memory(storage, vector) or Memory.open(url, vector=url)) or lexical "
            'semantic recall (MemoryConfig(semantic_recall=SemanticRecall(mode="lexical")))',
        )
    return checked


async def recall_hits(
    memory: Memory,
    resource_id: str,
    query: str,
    top_k: int,
    *,
    thread_id: str | None = None,
    min_score: MinScore = "auto",
    leave_out_turn: bool = True,
    turn_start: str | None = None,
) -> list[Message]:
    """The ``top_k`` best user and assistant messages for ``query``
    (:data:`RECALLED_ROLES`), best first, searched under the Memory's
    semantic-recall settings (:func:`tool_recall`: its mode, weights and
    scope, resource or thread), leaving out the turn being answered and
    those under the floor.

    The turn being answered is the newest ``user`` message (of ``thread_id``,
    or of any thread of the resource when None) and what follows it in its
    thread (:func:`~memory_core.integrations._threads.current_turn`): a
    runner stores the question before the model calls the tool, and it
    would otherwise be the first hit. The search asks for ``top_k`` more
    hits than that turn holds, so all ``top_k`` slots go to memory; when
    tool results or system messages took slots, it searches again
    :data:`_GROWTH` times deeper (up to 1000 hits) until ``top_k`` remain or
    the scope holds no more.

    With scope ``"thread"`` only the thread is searched: ``thread_id``, or
    (None) the thread of the turn being answered; a thread not stored yet
    holds nothing (``[]``).

    Args:
        thread_id: the conversation the tool runs in (None: any of the
            resource's, as ADK's memory service is asked without one).
        min_score: the tool's floor (:func:`tool_recall`); ``"auto"``
            (default): the Memory's, else the one measured for its embedder.
        leave_out_turn: False for a seam whose runs are stored only after
            they end (Pydantic AI's :meth:`MessageHistory.append`), or for a
            search made outside any run (ADK's ``search_memory`` called by
            the app): the newest stored turn is then a finished one, and
            stays searchable.
        turn_start: the id of the message the turn being answered begins
            with, when the seam knows it (ADK: the question the run stored,
            in ``thread_id``); the turn is that message and what follows it
            in ``thread_id``, whatever is newer elsewhere. None (default):
            the newest ``user`` message, as above.

    Raises:
        ValidationError: ``memory`` cannot be searched
            (:func:`check_recallable`), or a bad top_k or ``query`` (field
            ``query``, the tools' own argument, never the core's
            ``vector_search_string``: not a str, where None would search
            nothing, or over :data:`~memory_core.query_checks.MAX_SEARCH_CHARS`
            characters, R-RECALL), before any read.
        OwnershipError: ``thread_id`` belongs to another resource.
    """
    check_recallable(memory)
    check_search_text(query, "query")
    settings = tool_recall(memory, top_k, min_score)
    turn_thread: str | None = None
    turn = 0
    if leave_out_turn or thread_id is None:  # without a thread, the turn's thread anchors a thread-scope search
        starts = None if turn_start is None else (lambda message: message.id == turn_start)
        turn_thread, turn = await current_turn(memory, resource_id, thread_id, starts=starts)
        turn = turn if leave_out_turn else 0
    anchor = thread_id if thread_id is not None else turn_thread
    if anchor is None:  # the resource holds no message: nothing to find
        return []
    # With exclude_recent the history page (the newest `turn` messages of the
    # turn's thread, i.e. the turn itself) is left out of the hits.
    where = turn_thread if turn_thread is not None and turn else anchor
    want = top_k
    while True:
        config = MemoryConfig(last_messages=0, semantic_recall=replace(settings, top_k=want))
        try:
            result = await memory.recall(
                where, resource_id, vector_search_string=query, per_page=turn, thread_config=config, total=False
            )
        except NotFoundError:  # thread scope, and the conversation is not stored yet
            return []
        found = {m.id: m for m in result.messages}
        hits = [found[hit] for hit in result.semantic_hits if hit in found]
        kept = [m for m in hits if m.role in RECALLED_ROLES]
        if len(kept) >= top_k or len(hits) < want or want >= MAX_TOP_K:
            return kept[:top_k]
        want = min(want * _GROWTH, MAX_TOP_K)


async def recall_texts(
    memory: Memory,
    resource_id: str,
    query: str,
    top_k: int,
    *,
    thread_id: str | None = None,
    min_score: MinScore = "auto",
    leave_out_turn: bool = True,
) -> list[dict[str, Any]]:
    """:func:`recall_hits` as the tools return it: ``{"thread_id", "role",
    "text", "created_at"}`` (ISO-8601 UTC) per hit, best first.

    Raises:
        As :func:`recall_hits`.
    """
    hits = await recall_hits(
        memory, resource_id, query, top_k, thread_id=thread_id, min_score=min_score, leave_out_turn=leave_out_turn
    )
    return [
        {
            "thread_id": m.thread_id,
            "role": m.role,
            "text": message_text(m),
            "created_at": m.created_at.isoformat() if m.created_at else "",
        }
        for m in hits
    ]


async def recall_json(
    memory: Memory,
    resource_id: str,
    query: str,
    top_k: int,
    *,
    thread_id: str | None = None,
    min_score: MinScore = "auto",
    leave_out_turn: bool = True,
) -> str:
    """What every seam's ``recall_memory`` tool returns: :func:`recall_texts`
    as one JSON text (an array of ``{"thread_id", "role", "text",
    "created_at"}``, best first; ``"[]"`` when nothing clears the floor,
    non-ASCII kept as it is), so the model reads the same format whichever
    framework runs it (a list returned by a tool would reach an OpenAI
    Agents model as Python's repr, quoted with ``'``).

    Raises:
        As :func:`recall_hits`.
    """
    hits = await recall_texts(
        memory, resource_id, query, top_k, thread_id=thread_id, min_score=min_score, leave_out_turn=leave_out_turn
    )
    return json.dumps(hits, ensure_ascii=False)


def offered_tools(memory: Memory) -> tuple[bool, bool]:
    """Which tools a seam offers over ``memory``: ``(working_memory,
    recall)``. The working-memory tools only when the Memory's config turns
    working memory on (``MemoryConfig(working_memory={"enabled": True})``; off
    by default, and then :meth:`~memory_core.memory.Memory.read_working_memory`
    refuses too); ``recall_memory`` only when the Memory can be searched
    (:func:`can_recall`: a vector store, or lexical semantic recall).

    Raises:
        ValidationError: field ``memory``: neither (no tool to offer), naming
            both ways to turn one on.
    """
    working, recall = memory.config.working_memory.enabled, can_recall(memory)
    if not working and not recall:
        raise ValidationError(
            "memory",
            "no memory tool to offer: working memory is off (turn it on with "
            'MemoryConfig(working_memory={"enabled": True})) and the Memory has no vector store for recall_memory '
            '(Memory.open(url, vector="qdrant+path:///app.vectors")) nor lexical semantic recall '
            '(MemoryConfig(semantic_recall=SemanticRecall(mode="lexical")))',
        )
    return working, recall


async def read_working_memory(memory: Memory, resource_id: str) -> str:
    """The resource's working memory; while none is stored, the configured
    template (``memory.config.working_memory.template``, the notes the model
    is asked to fill in, as Mastra's tool shows it), else ``""``."""
    resource = await memory.storage.get_resource(resource_id)
    if resource is None or resource.working_memory is None:
        return memory.config.working_memory.template or ""
    return resource.working_memory


def _words(text: str) -> str:
    return " ".join(text.split())


async def write_working_memory(memory: Memory, resource_id: str, text: str) -> str:
    """Replace the resource's working memory atomically, unless ``text`` is
    blank or the unfilled template (``memory.config.working_memory.template``,
    compared with runs of whitespace as one space): a model that calls the
    tool with either would erase the notes it was meant to keep (Mastra
    issue #12253), so the tool writes nothing and says what to send instead.

    Returns:
        ``text`` when it was stored; otherwise the refusal, one sentence the
        model reads as the tool's result (the stored notes unchanged).

    Raises:
        ValidationError: field ``notes`` (the tools' argument): ``text`` is
            not a str, or the notes are over the 15 MiB a resource record
            holds (R-SIZE); nothing is written.
    """
    check_text(text, "notes")
    if not text.strip():
        return REFUSED_BLANK
    template = memory.config.working_memory.template
    if template is not None and _words(text) == _words(template):
        return REFUSED_TEMPLATE
    try:
        await memory.storage.update_resource(resource_id, working_memory=text)
    except ValidationError as error:  # storage names its record ("resource update"), not the tool's argument
        if error.rule != "R-SIZE":
            raise
        raise ValidationError(
            "notes", f"{error.reason}: the notes are {len(text.encode())} bytes of UTF-8; keep them shorter", "R-SIZE"
        ) from None
    return text

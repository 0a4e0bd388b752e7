"""What the integrations' agent tools do, once: semantic recall across a
resource's conversations (leaving out the turn being answered, under a
relevance floor) and its working memory."""

from __future__ import annotations

from typing import Any, Literal

from memory_core.arguments import check_memory
from memory_core.embedders import relevance_floor
from memory_core.errors import ValidationError
from memory_core.memory import Memory, MemoryConfig, SemanticRecall
from memory_core.models import Message
from memory_core.validation import MAX_TOP_K, check_min_score, check_text
from memory_core.vector import message_text

from ._threads import current_turn

__all__ = [
    "REFUSED_BLANK",
    "REFUSED_TEMPLATE",
    "MinScore",
    "check_recall_options",
    "offered_tools",
    "read_working_memory",
    "recall_hits",
    "recall_texts",
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

MinScore = float | None | Literal["auto"]
"""A tool's relevance floor: a cosine similarity from -1 to 1, None for no
floor, or ``"auto"``: the floor measured for the Memory's embedder
(:func:`~memory_core.embedders.relevance_floor`)."""


def check_recall_options(top_k: Any, min_score: Any) -> tuple[int, MinScore]:
    """A seam's recall settings, checked at construction.

    Raises:
        ValidationError: ``top_k`` is not an int from 1 to 1000, or
            ``min_score`` is not ``"auto"``, None or a number from -1 to 1.
    """
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise ValidationError("top_k", f"must be an int from 1 to {MAX_TOP_K}, got {top_k!r}", "R-RECALL")
    if min_score == "auto":
        return int(top_k), "auto"
    return int(top_k), check_min_score(min_score, "min_score")


async def recall_hits(
    memory: Memory,
    resource_id: str,
    query: str,
    top_k: int,
    *,
    thread_id: str | None = None,
    min_score: MinScore = "auto",
    leave_out_turn: bool = True,
) -> list[Message]:
    """The ``top_k`` stored messages of the resource nearest to ``query``
    (semantic recall with resource scope, no context window), best first,
    leaving out the turn being answered and those under the floor.

    The turn being answered is the newest ``user`` message (of ``thread_id``,
    or of any thread of the resource when None) and what follows it in its
    thread (:func:`~memory_core.integrations._threads.current_turn`): a
    runner stores the question before the model calls the tool, and it
    would otherwise be the first hit. The search asks for ``top_k`` more
    hits than that turn holds, so all ``top_k`` slots go to memory.

    Args:
        thread_id: the conversation the tool runs in (None: any of the
            resource's, as ADK's memory service is asked without one).
        min_score: hits under this cosine similarity are dropped
            (:attr:`SemanticRecall.min_score`); ``"auto"`` (default) is the
            floor measured for the Memory's embedder, none for an embedder
            not measured.
        leave_out_turn: False for a seam whose runs are stored only after
            they end (Pydantic AI's :meth:`MessageHistory.append`): the
            newest stored turn is then a finished one, and stays searchable.

    Raises:
        ValidationError: ``memory`` has no vector store, or a bad query/top_k.
        OwnershipError: ``thread_id`` belongs to another resource.
    """
    check_memory(memory, needs_vectors=True)
    floor = relevance_floor(memory.embedder) if min_score == "auto" else min_score
    turn_thread, turn = await current_turn(memory, resource_id, thread_id) if leave_out_turn else (None, 0)
    anchor = thread_id if thread_id is not None else turn_thread
    if anchor is None:  # the resource holds no message: nothing to find
        return []
    semantic = SemanticRecall(top_k=top_k, message_range=0, exclude_recent=True, min_score=floor)
    config = MemoryConfig(last_messages=0, semantic_recall=semantic)
    # With exclude_recent the history page (the newest `turn` messages of the
    # turn's thread, i.e. the turn itself) is left out of the hits.
    where = turn_thread if turn_thread is not None and turn else anchor
    result = await memory.recall(
        where, resource_id, vector_search_string=query, per_page=turn, thread_config=config, total=False
    )
    found = {m.id: m for m in result.messages}
    return [found[hit] for hit in result.semantic_hits if hit in found]


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


def offered_tools(memory: Memory) -> tuple[bool, bool]:
    """Which tools a seam offers over ``memory``: ``(working_memory,
    recall)``. The working-memory tools only when the Memory's config turns
    working memory on (``MemoryConfig(working_memory={"enabled": True})``; off
    by default, and then :meth:`~memory_core.memory.Memory.read_working_memory`
    refuses too); ``recall_memory`` only with a vector store.

    Raises:
        ValidationError: field ``memory``: neither (no tool to offer), naming
            both ways to turn one on.
    """
    working, recall = memory.config.working_memory.enabled, memory.vector is not None
    if not working and not recall:
        raise ValidationError(
            "memory",
            "no memory tool to offer: working memory is off (turn it on with "
            'MemoryConfig(working_memory={"enabled": True})) and the Memory has no vector store for recall_memory '
            '(Memory.open(url, vector="qdrant+path:///app.vectors"))',
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
        ValidationError: ``text`` is not a str.
    """
    check_text(text, "working_memory")
    if not text.strip():
        return REFUSED_BLANK
    template = memory.config.working_memory.template
    if template is not None and _words(text) == _words(template):
        return REFUSED_TEMPLATE
    await memory.storage.update_resource(resource_id, working_memory=text)
    return text

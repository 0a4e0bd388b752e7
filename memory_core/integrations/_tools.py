"""What the integrations' agent tools do, once: semantic recall across a
resource's conversations and its working memory."""

from __future__ import annotations

from typing import Any

from memory_core.arguments import check_memory
from memory_core.memory import Memory, MemoryConfig, SemanticRecall
from memory_core.validation import check_text
from memory_core.vector import message_text

__all__ = ["read_working_memory", "recall_texts", "write_working_memory"]


async def recall_texts(
    memory: Memory, thread_id: str, resource_id: str, query: str, top_k: int
) -> list[dict[str, Any]]:
    """The ``top_k`` stored messages of the resource nearest to ``query``
    (semantic recall with resource scope, no context window), best first, as
    ``{"thread_id", "role", "text", "created_at"}`` (ISO-8601 UTC).

    Raises:
        ValidationError: ``memory`` has no vector store, or a bad query/top_k.
        OwnershipError: ``thread_id`` belongs to another resource.
    """
    check_memory(memory, needs_vectors=True)
    config = MemoryConfig(last_messages=0, semantic_recall=SemanticRecall(top_k=top_k, message_range=0))
    result = await memory.recall(thread_id, resource_id, vector_search_string=query, thread_config=config)
    found = {m.id: m for m in result.messages}
    hits = [found[hit] for hit in result.semantic_hits if hit in found]
    return [
        {
            "thread_id": m.thread_id,
            "role": m.role,
            "text": message_text(m),
            "created_at": m.created_at.isoformat() if m.created_at else "",
        }
        for m in hits
    ]


async def read_working_memory(memory: Memory, resource_id: str) -> str:
    """The resource's working memory (``""`` while none is stored)."""
    resource = await memory.storage.get_resource(resource_id)
    return "" if resource is None or resource.working_memory is None else resource.working_memory


async def write_working_memory(memory: Memory, resource_id: str, text: str) -> str:
    """Replace the resource's working memory atomically; returns it.

    Raises:
        ValidationError: ``text`` is not a str.
    """
    check_text(text, "working_memory")
    await memory.storage.update_resource(resource_id, working_memory=text)
    return text

"""The small store the command tests (erase, destroy) act on."""

from __future__ import annotations

import asyncio

from memory_core import Memory, Thread, connect, connect_vector
from memory_core.embedders import LexicalHashEmbedder


def seed_two_users(url: str, vector: str | None = None, working_memory: str | None = None) -> None:
    """Write into the store at ``url``: resource u1 with threads t1 (3
    messages) and t2 (2), resource u2 with t3 (2); message ids
    ``<thread>-<i>``, texts ``words <i>``. With ``vector`` (a vector store
    URL), their vectors (lexical embedder); with ``working_memory``, u1's
    resource record holds it."""

    async def seed() -> None:
        storage = await connect(url)
        index = None if vector is None else await connect_vector(vector)
        async with Memory(storage, index, LexicalHashEmbedder() if index is not None else None) as memory:
            for thread, resource, count in (("t1", "u1", 3), ("t2", "u1", 2), ("t3", "u2", 2)):
                await storage.save_thread(Thread(thread, resource))
                await memory.save_messages(
                    [
                        {"id": f"{thread}-{i}", "thread_id": thread, "role": "user", "content": f"words {i}"}
                        for i in range(count)
                    ]
                )
            if working_memory is not None:
                await storage.save_resource({"id": "u1", "working_memory": working_memory})

    asyncio.run(seed())

"""Seeded generated stores for the transfer tests, and a comparison of two
stores through the public API (independent of the digests under test)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from memory_core import Message, Resource, Storage, Thread, ThreadFilter
from memory_core.models import Role

_TEXTS = ["hello", "héllo wörld", "日本語のテキスト", "emoji 🧠🔁", "tab\tand\nnewline", "", 'quote " back \\ slash']
_VALUES: list[Any] = [0, -1, 2**63 - 1, -(2**63), 1.5, 1.0, -0.25, 1e-7, True, False, None, "s", "ü", [], {}]


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 2 and roll < 0.15:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 2 and roll < 0.3:
        return {f"k{i}": _value(rng, depth + 1) for i in range(rng.randint(0, 3))}
    return rng.choice(_VALUES)


def _metadata(rng: random.Random) -> dict[str, Any]:
    return {f"m{i}": _value(rng) for i in range(rng.randint(0, 4))}


async def fill(storage: Storage, seed: int, *, resources: int = 4, messages: int = 120) -> None:
    """Write a seeded store: resources with and without a record (and with
    ``""``, text and no working memory), threads with thread working memory,
    unicode and dict content, every metadata value type, times before 1970,
    and groups of messages with equal ``created_at`` spread over threads."""
    rng = random.Random(seed)
    base = datetime(1969, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC)
    threads: list[Thread] = []
    for r in range(resources):
        resource_id = f"res-{seed}-{r}-ü"
        if r % 3 != 2:  # every third resource owns threads but has no record
            memory = [None, "", f"# notes {r}\n- likes {rng.choice(_TEXTS)}"][r % 3]
            created = base + timedelta(seconds=r)
            await storage.save_resource(
                Resource(resource_id, memory, _metadata(rng), created, created + timedelta(minutes=5))
            )
        for t in range(rng.randint(1, 3)):
            created = base + timedelta(seconds=rng.randint(0, 3))  # equal thread times too
            metadata = _metadata(rng)
            if t == 0:
                metadata["working_memory"] = f"thread memory {rng.choice(_TEXTS)}"
            thread = Thread(f"th-{seed}-{r}-{t}", resource_id, rng.choice(_TEXTS), metadata, created, created)
            threads.append(await storage.save_thread(thread))
    batch: list[Message] = []
    for n in range(messages):
        thread = rng.choice(threads)
        # A few distinct instants: many messages share one, across threads.
        created = base + timedelta(microseconds=rng.randint(0, 12) * 250)
        content: Any = rng.choice(_TEXTS) if rng.random() < 0.7 else {"parts": [{"type": "text", "text": "x"}], "n": n}
        role: Role = rng.choice(["user", "assistant", "system", "tool"])
        batch.append(
            Message(f"msg-{seed}-{n}", thread.id, role, content, thread.resource_id, "v2", _metadata(rng), created)
        )
        if len(batch) == 17:
            await storage.save_messages(batch)
            batch = []
    await storage.save_messages(batch)


async def snapshot(storage: Storage) -> dict[str, Any]:
    """Everything a store holds, read through listings: per resource its
    record, threads (all fields, ``last_message_at`` included) and messages
    in R-ORDER (``list_messages_by_resource``)."""
    threads = (await storage.list_threads(per_page=False)).items
    state: dict[str, Any] = {}
    for resource in sorted({t.resource_id for t in threads}):
        owned = (await storage.list_threads(ThreadFilter(resource_id=resource), per_page=False)).items
        state[resource] = {
            "resource": await storage.get_resource(resource),
            "threads": sorted(owned, key=lambda t: t.id),
            "messages": (await storage.list_messages_by_resource(resource, per_page=False)).items,
        }
    return state

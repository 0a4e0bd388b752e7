"""The OpenAI Agents SDK session: differential against the SDK's
SQLiteSession, concurrent pops, and real agent runs, on every backend."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from memory_core_conformance.integrations.openai_agents import run_session_machine

from memory_core import OwnershipError, ValidationError
from memory_core.integrations.openai_agents import MemoryCoreSession

from .conftest import OpenMemory


def test_differential_against_sqlite_session(open_memory: OpenMemory) -> None:
    @asynccontextmanager
    async def sessions() -> AsyncIterator[Callable[[str], MemoryCoreSession]]:
        async with open_memory() as memory:
            yield lambda session_id: MemoryCoreSession(session_id, memory, resource_id="user-1")

    run_session_machine(sessions)


@pytest.mark.anyio
async def test_pop_item_is_atomic_under_concurrent_poppers(open_memory: OpenMemory) -> None:
    async with open_memory() as memory:
        writer = MemoryCoreSession("s", memory, resource_id="u")
        items: list[Any] = [{"role": "user", "content": f"item {n}"} for n in range(12)]
        await writer.add_items(items)
        poppers = [MemoryCoreSession("s", memory, resource_id="u") for _ in range(4)]

        async def drain(session: MemoryCoreSession) -> list[Any]:
            popped = []
            while (item := await session.pop_item()) is not None:
                popped.append(item)
            return popped

        results = await asyncio.gather(*(drain(s) for s in poppers))
        popped = [item["content"] for result in results for item in result]
        assert sorted(popped) == sorted(i["content"] for i in items)  # each item exactly once
        for result in results:  # each popper saw newest first
            numbers = [int(item["content"].split()[1]) for item in result]
            assert numbers == sorted(numbers, reverse=True)
        assert await writer.get_items() == []
        assert [t.id for t in (await memory.list_threads()).items] == ["s"]  # pops leave nothing behind


@pytest.mark.anyio
async def test_owner_comes_from_the_run_context_and_users_are_isolated(open_memory: OpenMemory) -> None:
    from agents import RunContextWrapper

    async with open_memory() as memory:
        session = MemoryCoreSession("shared-id", memory)
        alice = RunContextWrapper(context={"resource_id": "alice"})
        await session.add_items([{"role": "user", "content": "hi"}], wrapper=alice)
        assert await session.get_items(wrapper=alice) == [{"role": "user", "content": "hi"}]
        bob = RunContextWrapper(context={"resource_id": "bob"})
        with pytest.raises(OwnershipError):
            await session.get_items(wrapper=bob)
        with pytest.raises(OwnershipError):
            await session.add_items([{"role": "user", "content": "mine"}], wrapper=bob)
        with pytest.raises(ValidationError, match="resource_id"):
            await session.get_items()  # no owner anywhere


@pytest.mark.anyio
async def test_bad_items_are_rejected_before_any_write(open_memory: OpenMemory) -> None:
    async with open_memory() as memory:
        session = MemoryCoreSession("s", memory, resource_id="u")
        with pytest.raises(ValidationError, match=r"items\[1\]"):
            await session.add_items([{"role": "user", "content": "ok"}, "not an item"])  # type: ignore[list-item]
        with pytest.raises(ValidationError, match="R-JSON"):
            await session.add_items([{"role": "user", "content": "ok"}, {"type": "x", "v": float("nan")}])  # type: ignore[list-item]
        assert await session.get_items() == []
        assert await memory.get_thread("s") is None


@pytest.mark.anyio
async def test_clear_session_removes_vectors_too(open_memory: OpenMemory) -> None:
    async with open_memory() as memory:
        session = MemoryCoreSession("s", memory, resource_id="u")
        await session.add_items([{"role": "user", "content": "my cat is called Miso"}])
        assert memory.vector is not None and memory.embedder is not None
        query = (await memory.embedder.embed(["cat Miso"]))[0]
        assert await memory.vector.search(query, 4, resource_id="u")
        await session.clear_session()
        assert await memory.vector.search(query, 4, resource_id="u") == []
        assert await session.get_items() == []

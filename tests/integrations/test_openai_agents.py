"""The OpenAI Agents SDK session: differential against the SDK's
SQLiteSession, concurrent pops, and real agent runs, on every backend."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from memory_core_conformance.integrations.openai_agents import run_session_machine

from memory_core import InMemoryStorage, Memory, OwnershipError, ValidationError
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
        assert [t.id for t in (await memory.list_threads()).items] == [writer.thread_id()]  # pops leave nothing behind


@pytest.mark.anyio
async def test_owner_comes_from_the_run_context_and_users_are_isolated(open_memory: OpenMemory) -> None:
    from agents import RunContextWrapper

    async with open_memory() as memory:
        session = MemoryCoreSession("shared-id", memory)
        alice = RunContextWrapper(context={"resource_id": "alice"})
        await session.add_items([{"role": "user", "content": "hi"}], wrapper=alice)
        assert await session.get_items(wrapper=alice) == [{"role": "user", "content": "hi"}]
        bob = RunContextWrapper(context={"resource_id": "bob"})
        assert await session.get_items(wrapper=bob) == []  # ids are scoped per owner: bob's own "shared-id"
        await session.add_items([{"role": "user", "content": "mine"}], wrapper=bob)
        assert await session.get_items(wrapper=alice) == [{"role": "user", "content": "hi"}]
        assert session.thread_id(alice) == "openai-agents:alice:shared-id"
        with pytest.raises(ValidationError, match="resource_id"):
            await session.get_items()  # no owner anywhere

        unscoped = MemoryCoreSession("global-id", memory, scope_ids=False)  # ids global across owners
        await unscoped.add_items([{"role": "user", "content": "hi"}], wrapper=alice)
        assert unscoped.thread_id(alice) == "global-id"
        with pytest.raises(OwnershipError):
            await unscoped.get_items(wrapper=bob)
        with pytest.raises(OwnershipError):
            await unscoped.add_items([{"role": "user", "content": "mine"}], wrapper=bob)


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


def test_session_settings_dict_is_normalised_as_the_sdk_does() -> None:
    from agents.memory import SessionSettings

    memory = Memory(InMemoryStorage())
    session = MemoryCoreSession("s", memory, resource_id="u", session_settings={"limit": 0})
    assert isinstance(session.session_settings, SessionSettings)
    assert session.session_settings.limit == 0
    assert session.session_settings.resolve({"limit": 4}).limit == 4
    assert MemoryCoreSession("s", memory, resource_id="u").session_settings == SessionSettings()
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        MemoryCoreSession("s", memory, resource_id="u", session_settings={"limitt": 1})
    with pytest.raises(TypeError):
        MemoryCoreSession("s", memory, resource_id="u", session_settings=5)  # type: ignore[arg-type]


@pytest.mark.anyio
@pytest.mark.timeout(120)
async def test_one_session_from_threads_each_with_its_own_loop(open_memory: OpenMemory) -> None:
    """The SDK's ``test_sqlite_session_concurrent_access``: 10 single-item
    ``add_items`` from 5 threads, each with its own event loop, on one session
    (its Memory, vector store included, opened in this loop). Was a hang."""
    async with open_memory() as memory:
        session = MemoryCoreSession("s", memory, resource_id="u")
        await session.add_items([{"role": "user", "content": "first"}])
        errors: list[BaseException] = []

        def add(n: int) -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(session.add_items([{"role": "user", "content": f"Message {n}"}]))
            except BaseException as exc:
                errors.append(exc)
            finally:
                loop.close()

        def run_all() -> None:
            with concurrent.futures.ThreadPoolExecutor(max_workers=5) as pool:
                list(pool.map(add, range(10)))

        worker = threading.Thread(target=run_all, daemon=True)
        worker.start()
        await asyncio.to_thread(worker.join, 90)
        assert not worker.is_alive(), "a session shared by threads with their own loops hangs"
        assert errors == []
        contents = {item.get("content") for item in await session.get_items()}
        assert contents == {"first"} | {f"Message {n}" for n in range(10)}

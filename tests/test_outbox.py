"""A Memory write that pairs storage and vectors is carried out whole under
cancellation (memory_core.outbox, issue 25): the next caller finds the
messages and their vectors."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from memory_core_conformance.cancellation import OpenMemory, cancel_at, check_case
from memory_core_conformance.cancellation.cases import all_cases, append_turns, base_store

import memory_core
from memory_core import Memory
from memory_core.embedders import get_embedder
from memory_core.outbox import Outbox

pytestmark = pytest.mark.anyio


def paired_stores(folder: Path) -> OpenMemory:
    """Fresh SQLite files in ``folder``, each with a fresh reference vector store."""
    counter = iter(range(10**6))

    @asynccontextmanager
    async def opened() -> AsyncIterator[Memory]:
        storage = await memory_core.connect(f"sqlite:///{folder}/s{next(counter)}.db")
        vectors = await memory_core.connect_vector("memory://")
        memory = Memory(storage, vectors, get_embedder("lexical"), owns_stores=False, allow_volatile_vectors=True)
        try:
            yield memory
        finally:
            await memory.close()
            await storage.destroy()
            await vectors.close()

    return opened


async def test_append_messages_cancelled_leaves_no_message_without_vectors(tmp_path: Path) -> None:
    """Before: cancelled as SQLite wrote the turns (suspension 1 of 1), the
    turns stayed stored with no vectors: a semantic recall never found them
    (5 of 5 trials)."""
    (case,) = [c for c in all_cases() if c.name == "append_messages"]
    result = await check_case(paired_stores(tmp_path), case, trials=6)
    assert result.failures == [], result.failures
    assert result.after


async def test_every_paired_write_is_whole_on_sqlite(tmp_path: Path) -> None:
    """Every storage case with a vector store paired (the view counts each
    thread's vectors and the store's)."""
    for case in all_cases():
        result = await check_case(paired_stores(tmp_path), case, trials=2)
        assert result.failures == [], result.failures


async def test_recall_after_a_cancelled_append_finds_the_turns(tmp_path: Path) -> None:
    async with paired_stores(tmp_path)() as memory:
        await base_store(memory)
        assert await cancel_at(append_turns(memory), 1)
        found = await memory.recall("t1", "r1", vector_search_string="zebra crossing", per_page=0)
        texts = {m.content for m in found.messages if m.id in found.semantic_hits}
        assert {"the zebra crossing at noon", "a zebra crossed the road"} <= texts
        status = await memory.check_index(thread_id="t1")
        assert (status.stored, status.indexed, status.behind) == (5, 5, False)


async def test_a_job_whose_caller_was_cancelled_finishes_and_its_error_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outbox = Outbox()
    gate = asyncio.Event()
    done: list[str] = []

    async def work(fail: bool) -> str:
        await gate.wait()
        done.append("ran")
        if fail:
            raise RuntimeError("vector store down")
        return "ok"

    caller = asyncio.create_task(outbox.run(work(fail=True)))
    await asyncio.sleep(0)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert outbox.pending == 1
    gate.set()
    with caplog.at_level(logging.WARNING, logger="memory_core"):
        assert await outbox.run(work(fail=False)) == "ok"  # waits for the first job first
    assert done == ["ran", "ran"]
    assert outbox.pending == 0
    assert "vector store down" in caplog.text


async def test_a_waiting_caller_gets_the_error_unlogged(caplog: pytest.LogCaptureFixture) -> None:
    async def work() -> None:
        raise RuntimeError("boom")

    with caplog.at_level(logging.WARNING, logger="memory_core"), pytest.raises(RuntimeError, match="boom"):
        await Outbox().run(work())
    await asyncio.sleep(0)
    assert "boom" not in caplog.text

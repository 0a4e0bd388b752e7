"""A composed read cancelled at any point leaves no coroutine created and
never awaited (``RuntimeWarning: coroutine 'RedisStorage._get_thread' was
never awaited``, seen under cancellation on Redis): the bounded fan-out of
:func:`memory_core.storage.composed.bounded_gather` makes each call only once
its turn comes, so a cancellation before then drops no coroutine."""

from __future__ import annotations

import asyncio
import gc
import warnings

import pytest

from memory_core.models import Thread
from memory_core.plan import ReadPlan
from memory_core.reference import InMemoryStorage
from memory_core.storage.composed import CONCURRENT_READS, compose_read, compose_read_state

pytestmark = pytest.mark.anyio

_THREADS = 3 * CONCURRENT_READS  # more than the gate lets run at once: some calls wait their turn


async def _cancel_after(steps: int, work: asyncio.Future[object]) -> None:
    for _ in range(steps):
        await asyncio.sleep(0)
    work.cancel()
    await asyncio.gather(work, return_exceptions=True)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_read_cancelled_at_any_step_leaves_no_unawaited_coroutine(anyio_backend: str) -> None:
    store = InMemoryStorage()
    await store.open()
    ids = tuple(f"t{i}" for i in range(_THREADS))
    for thread_id in ids:
        await store.insert_thread(Thread(thread_id, "alice"))

    async def read_plan() -> object:
        return await compose_read(store, ReadPlan(threads=ids, resources=("alice",), owner_resources=True))

    async def read_state() -> object:
        return await compose_read_state(store, ids, ())

    cancelled = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for read in (read_plan, read_state):
            for steps in range(12):  # before the first call, inside the gate, and after the last
                work = asyncio.ensure_future(read())
                await _cancel_after(steps, work)
                cancelled += work.cancelled()
            gc.collect()
    unawaited = [str(w.message) for w in caught if "was never awaited" in str(w.message)]
    assert unawaited == []
    assert cancelled > 0  # the cancellations reached the reads (else the test proves nothing)

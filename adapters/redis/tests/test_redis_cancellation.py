"""Cancellation is never swallowed (issue 25): on Python 3.11 redis-py's
default ``socket_timeout`` wraps each send in ``asyncio.wait_for``, which
returns the inner result when the cancellation arrives as the send completes;
a task writing through the store then ran on after ``task.cancel()``.

A writer task is cancelled after a seeded number of loop turns, 100 times:
every time it must end cancelled within a second."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

import pytest
from memory_core.models import Message, Thread

from memory_core_redis import RedisStorage

pytestmark = pytest.mark.anyio

TRIALS = 100


async def test_a_cancelled_writer_always_stops(make_store: Callable[..., RedisStorage]) -> None:
    rng = random.Random(25)
    async with make_store() as store:
        await store.save_thread(Thread("t", "r"))

        async def writer(trial: int) -> None:
            n = 0
            while True:
                n += 1
                await store.save_messages([Message(f"m{trial}-{n}", "t", "user", "hi", "r")])

        swallowed = 0
        for trial in range(TRIALS):
            task = asyncio.create_task(writer(trial))
            for _ in range(rng.randrange(1, 40)):
                await asyncio.sleep(0)
            task.cancel()
            done, _ = await asyncio.wait([task], timeout=1)
            if not done or not task.cancelled():
                swallowed += 1
                task.cancel()
                await asyncio.wait([task], timeout=1)
        assert swallowed == 0, f"{swallowed} of {TRIALS} cancelled writers ran on"

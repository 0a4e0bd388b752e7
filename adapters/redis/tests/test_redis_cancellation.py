"""Cancellation is never swallowed (issue 25): on Python 3.11 redis-py's
default ``socket_timeout`` wraps each send in ``asyncio.wait_for``, which
returns the inner result when the cancellation arrives as the send completes;
a task writing through the store then ran on after ``task.cancel()``.

A writer task is cancelled after a seeded number of loop turns, 100 times:
every time it must end cancelled within a second. A Ctrl-C's cancellation
can also be requested while the task runs (``asyncio.Runner``'s SIGINT
handler runs between two bytecodes of the main task): it is then delivered
at the task's next suspension, which could be that ``wait_for``, so no call
may start with a cancellation pending (``memory-core copy`` into Redis ran
to its end after 11 of 28 Ctrl-Cs)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable

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


CALLS: dict[str, Callable[[RedisStorage], Awaitable[object]]] = {
    "save_messages": lambda store: store.save_messages([Message("m2", "t", "user", "hi", "r")]),
    "save_thread": lambda store: store.save_thread(Thread("t2", "r")),
    "delete_thread (read without socket_timeout)": lambda store: store.delete_thread("t"),
    "get_messages": lambda store: store.get_messages(["m1"]),
    "get_resource": lambda store: store.get_resource("r"),
    "list_resource_ids": lambda store: store.list_resource_ids(),
    "preflight": lambda store: store.preflight(must_exist=True),
}


@pytest.mark.parametrize("call", list(CALLS))
async def test_a_cancellation_requested_while_the_task_runs_stops_the_next_call(
    make_store: Callable[..., RedisStorage], call: str
) -> None:
    """The task cancels itself and then calls the store, as the main task
    does when a Ctrl-C's handler ran in its code just before a call: the
    call raises CancelledError having written nothing (the cancellation
    came before it)."""
    async with make_store() as store:
        await store.save_thread(Thread("t", "r"))
        await store.save_messages([Message("m1", "t", "user", "hi", "r")])

        async def cancelled_then_called() -> object:
            task = asyncio.current_task()
            assert task is not None
            task.cancel()  # pending: delivered at the task's next suspension
            return await CALLS[call](store)

        task = asyncio.create_task(cancelled_then_called())
        await asyncio.wait([task])
        assert task.cancelled(), f"{call} returned {task.result()!r} through a cancellation"
        assert await store.get_thread("t") is not None
        assert await store.get_thread("t2") is None
        assert [m.id for m in await store.get_messages(["m1", "m2"])] == ["m1"]

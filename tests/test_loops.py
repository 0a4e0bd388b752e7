"""``memory_core.loops``: per-event-loop state, closing it where it belongs,
and the loop a caller-given client is bound to; and ``BaseStorage.open``
running the first open once when loops in several threads race to it."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from memory_core import InMemoryStorage
from memory_core.errors import ValidationError
from memory_core.loops import GivenClientLoop, LoopLocal, close_at_loop_end, close_everywhere, running_loop

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def test_each_loop_sees_its_own_value_and_closed_loops_are_dropped() -> None:
    local: LoopLocal[str] = LoopLocal()
    assert local.get() is None  # no running loop
    assert local.pop() is None

    async def put(value: str) -> str | None:
        local.set(value)
        return local.get()

    assert asyncio.run(put("first")) == "first"
    assert len(local) == 1  # the first loop is closed now, but nothing dropped it yet
    assert asyncio.run(put("second")) == "second"
    assert len(local) == 1  # setting in a new loop dropped the closed loop's value
    assert [value for _, value in local.drain()] == ["second"]
    assert len(local) == 0


def test_close_at_loop_end_closes_in_its_loop_when_asyncio_run_ends_and_only_once() -> None:
    closed: list[tuple[str, asyncio.AbstractEventLoop]] = []

    async def use(name: str, close_now: bool) -> asyncio.AbstractEventLoop:
        async def close() -> None:
            closed.append((name, asyncio.get_running_loop()))

        closer = await close_at_loop_end(close)
        if close_now:
            await closer()
            await closer()
        assert len(closed) == int(close_now)
        return asyncio.get_running_loop()

    for name, close_now in (("dropped", False), ("closed", True)):
        closed.clear()
        loop = asyncio.run(use(name, close_now))
        assert closed == [(name, loop)]  # once, in the loop that made it, before the loop closed


async def test_close_everywhere_closes_here_hands_over_to_live_loops_and_drops_closed_ones() -> None:
    local: LoopLocal[str] = LoopLocal()
    closed: list[tuple[str, bool]] = []
    closed_in_other = threading.Event()

    async def close(value: str) -> None:
        closed.append((value, running_loop() is here))
        if value == "other":
            closed_in_other.set()

    here = asyncio.get_running_loop()
    local.set("here")
    # a loop still running in another thread
    other = asyncio.new_event_loop()
    runner = threading.Thread(target=other.run_forever, daemon=True)
    runner.start()
    asyncio.run_coroutine_threadsafe(_set(local, "other"), other).result(10)
    # a loop that has been closed
    await asyncio.to_thread(asyncio.run, _set(local, "gone"))
    assert len(local) == 3
    await close_everywhere(local, close)
    assert await asyncio.to_thread(closed_in_other.wait, 10)
    other.call_soon_threadsafe(other.stop)
    await asyncio.to_thread(runner.join, 10)
    other.close()
    assert sorted(closed) == [("here", True), ("other", False)]  # "gone" could not run anywhere
    assert len(local) == 0


async def _set(local: LoopLocal[str], value: str) -> None:
    local.set(value)


async def test_a_given_client_belongs_to_the_first_loop_that_claims_it() -> None:
    owner = GivenClientLoop("redis")
    owner.claim()
    owner.claim()  # the same loop again: fine

    async def elsewhere() -> None:
        owner.claim()

    with pytest.raises(ValidationError) as raised:
        await asyncio.to_thread(asyncio.run, elsewhere())
    assert raised.value.field == "client"
    assert raised.value.rule == "LIFECYCLE"
    assert "another event loop" in str(raised.value)


class _CountingStorage(InMemoryStorage):
    """The reference store, counting opens and slow to open."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.opens = 0

    async def _open(self) -> None:
        self.opens += 1
        await asyncio.sleep(0.05)  # every other thread arrives while this open runs
        await super()._open()


def test_the_first_open_runs_once_when_loops_in_several_threads_race_to_it() -> None:
    store = _CountingStorage()
    start = threading.Barrier(6)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            start.wait(10)
            asyncio.run(store.get_thread("t1"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, daemon=True) for _ in range(6)]
    for worker in threads:
        worker.start()
    for worker in threads:
        worker.join(30)
    assert not any(worker.is_alive() for worker in threads), "an open waiting in another loop hung"
    assert errors == []
    assert store.opens == 1


class _FailingOnceStorage(InMemoryStorage):
    """Its first open fails; the threads waiting for it must then try again."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.opens = 0

    async def _open(self) -> None:
        self.opens += 1
        await asyncio.sleep(0.05)
        if self.opens == 1:
            raise ConnectionError("refused")
        await super()._open()


def test_a_failed_first_open_lets_the_waiting_loops_try_again() -> None:
    store = _FailingOnceStorage()
    start = threading.Barrier(4)
    outcomes: list[str] = []

    def run() -> None:
        start.wait(10)
        try:
            asyncio.run(store.get_thread("t1"))
            outcomes.append("ok")
        except Exception as exc:
            outcomes.append(type(exc).__name__)

    threads = [threading.Thread(target=run, daemon=True) for _ in range(4)]
    for worker in threads:
        worker.start()
    for worker in threads:
        worker.join(30)
    assert not any(worker.is_alive() for worker in threads)
    assert sorted(outcomes) == ["BackendError", "ok", "ok", "ok"]
    assert store.opens == 2


@pytest.mark.parametrize("vector_url", ["memory://", "qdrant::memory:"])
def test_vectors_are_set_up_once_when_threads_with_their_own_loops_write_first(vector_url: str) -> None:
    """One Memory with a vector store none of whose collections exist yet,
    written from five threads, each with its own ``asyncio.run`` loop, at
    once: every write lands and no thread hangs (an ``anyio.Lock`` around
    the collection's creation left a waiter in another loop asleep forever)."""
    from memory_core import Memory, connect_vector

    vectors = asyncio.run(connect_vector(vector_url))
    memory = Memory(InMemoryStorage(), vectors, embedder=_lexical())
    asyncio.run(memory.create_thread("r", thread_id="t"))

    def write(k: int) -> None:
        for j in range(3):
            asyncio.run(memory.append_messages("t", [("user", f"writer {k} note {j}")]))

    threads = [threading.Thread(target=write, args=(k,), daemon=True) for k in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not any(t.is_alive() for t in threads), "a writer never returned"
    assert asyncio.run(memory.list_messages("t", per_page=0)).total == 15
    status = asyncio.run(memory.check_index(thread_id="t"))
    assert (status.stored, status.indexed) == (15, 15)


def _lexical() -> Any:
    from memory_core.embedders import get_embedder

    return get_embedder("lexical")

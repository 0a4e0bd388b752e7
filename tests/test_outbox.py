"""A Memory write that pairs storage and vectors is carried out whole under
cancellation (memory_core.outbox, issue 25): the next caller finds the
messages and their vectors."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sys
import threading
import warnings
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


def _cut_off_write_then_read(folder: Path, vector: str) -> tuple[int, int]:
    """The operator's sequence, one ``asyncio.run`` per call: a write cut
    off by its loop's shutdown, then a read in a new loop. Returns the
    read's message count and the stored count ``check_index`` sees."""
    memory = asyncio.run(
        Memory.open(f"sqlite:///{folder}/h.db", vector=vector, embedder="lexical", allow_volatile_vectors=True)
    )
    asyncio.run(memory.get_or_create_thread("r", "t"))

    async def cancelled() -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(memory.append_messages("t", [("user", "hello")]), 1e-4)

    asyncio.run(cancelled())

    async def after() -> tuple[int, int]:
        try:
            listed = await memory.list_messages("t")
            status = await memory.check_index(thread_id="t")
            return listed.counted_total, status.stored
        finally:
            await memory.close()

    return asyncio.run(after())


@pytest.mark.parametrize("vector", ["memory://", "qdrant+path"])
def test_a_write_cut_off_by_asyncio_run_never_hangs_the_next_loop(
    tmp_path: Path, vector: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: aiosqlite's worker thread died posting the cut-off write's
    outcome to the closed loop ("Event loop is closed"), and the next
    ``asyncio.run`` waited forever for it (3 of 4 runs)."""
    outcomes: list[tuple[int, int]] = []
    errors: list[BaseException] = []

    def trials() -> None:
        try:
            for trial in range(4):
                folder = tmp_path / str(trial)
                folder.mkdir()
                url = f"qdrant+path:///{folder}/h.vec" if vector == "qdrant+path" else vector
                outcomes.append(_cut_off_write_then_read(folder, url))
        except BaseException as error:  # handed to the test's thread
            errors.append(error)

    with caplog.at_level(logging.WARNING, logger="memory_core"):
        runner = threading.Thread(target=trials, daemon=True)
        runner.start()
        runner.join(timeout=60)
    assert not runner.is_alive(), f"hung after {len(outcomes)} of 4 trials"
    assert errors == []
    assert all(total == stored for total, stored in outcomes)  # the read sees what the write stored


def test_a_job_cut_off_by_its_loops_shutdown_is_logged_and_never_awaited_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before: a job ``asyncio.run`` cancelled at its end vanished silently."""
    outbox = Outbox()

    async def work() -> None:
        await asyncio.Event().wait()  # still writing when the loop ends

    async def cancelled() -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(outbox.run(work()), 0.01)

    with caplog.at_level(logging.WARNING, logger="memory_core"):
        asyncio.run(cancelled())
    assert "cut off by its event loop's shutdown" in caplog.text

    async def later() -> int:
        await asyncio.wait_for(outbox.settle(), 5)
        return outbox.pending

    assert asyncio.run(later()) == 0


def test_one_outbox_serves_loops_in_several_threads_at_once() -> None:
    """Threads each running their own event loop share one Memory's outbox
    (the README: a Memory may be used from several threads at once). Its
    book of jobs was read while another thread changed it: a fresh user's
    trial saw ``RuntimeError: Set changed size during iteration`` from
    ``append_messages`` in 3 of 21 runs."""
    outbox = Outbox()
    errors: list[BaseException] = []

    async def job() -> int:
        await asyncio.sleep(0)
        return 1

    async def rounds() -> int:
        done = 0
        for _ in range(150):
            done += sum(await asyncio.gather(*(outbox.run(job()) for _ in range(30))))
        return done

    def thread_main() -> None:
        try:
            assert asyncio.run(rounds()) == 150 * 30
        except BaseException as exc:  # handed to the test's thread
            errors.append(exc)

    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, as a loaded machine does
    try:
        threads = [threading.Thread(target=thread_main) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(previous)
    assert errors == []


def test_a_job_its_loop_cancels_before_it_starts_is_closed_and_not_called_cut_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``asyncio.run`` ending just after a write made its job cancels the job
    before its first step: nothing was written. Before, its work coroutine
    was left unawaited (``RuntimeWarning: coroutine ... was never awaited``)
    and a warning said the write was cut off and may lack vectors (a fresh
    user's trial)."""
    outbox = Outbox()
    ran: list[bool] = []

    async def work() -> None:
        ran.append(True)

    async def main() -> None:
        # Returning at once: the caller's first step (which makes the job) runs
        # in the loop's last turn, so the job's first step never does.
        asyncio.get_running_loop().create_task(outbox.run(work()))

    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING, logger="memory_core"):
        warnings.simplefilter("always")
        asyncio.run(main())
        gc.collect()
    assert ran == []
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []
    assert "cut off" not in caplog.text

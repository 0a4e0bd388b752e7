"""Cancellation safety of the public writes (issue 25), through the shared
helper :mod:`memory_core_conformance.cancellation`: a small seeded run in
CI; ``python -m memory_core_conformance.cancellation --trials 1000`` runs
the 1,000-trial version."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from memory_core_conformance.cancellation import OpenMemory, Scope, WriteCase, cancel_at, check_case, snapshot
from memory_core_conformance.cancellation.__main__ import opened
from memory_core_conformance.cancellation.cases import all_cases, base_store
from memory_core_conformance.cancellation.seams import adk_append_event

import memory_core
from memory_core import Memory
from memory_core.embedders import CallableEmbedder, get_embedder
from memory_core.errors import ValidationError
from memory_core.integrations.google_adk import MemoryCoreSessionService, session_thread
from memory_core.integrations.openai_agents import MemoryCoreSession
from memory_core.models import Thread
from memory_core.validation import MAX_MESSAGE_BYTES

pytestmark = pytest.mark.anyio


def opener(url: str) -> OpenMemory:
    """Fresh stores at ``url`` paired with ``memory://`` vectors (the cases
    check that messages and their vectors stay in step)."""

    @asynccontextmanager
    async def opened() -> AsyncIterator[Memory]:
        storage = await memory_core.connect(url)
        vectors = await memory_core.connect_vector("memory://")
        memory = Memory(storage, vectors, get_embedder("lexical"), owns_stores=False, allow_volatile_vectors=True)
        try:
            yield memory
        finally:
            await memory.close()
            await storage.destroy()
            await storage.close()
            await vectors.close()

    return opened


async def test_every_write_is_all_or_nothing_in_memory() -> None:
    for case in all_cases():
        result = await check_case(opener("memory://"), case, trials=3)
        assert result.failures == [], result.failures


def sqlite_stores(folder: Path) -> OpenMemory:
    """Fresh SQLite files in ``folder``."""
    counter = iter(range(10**6))

    def fresh() -> AbstractAsyncContextManager[Memory]:
        return opener(f"sqlite:///{folder}/s{next(counter)}.db")()

    return fresh


async def test_adk_append_is_all_or_nothing_at_every_await_point(tmp_path: Path) -> None:
    """Before: cancelled after the event was saved, the event stayed without
    its state delta (sqlite, suspensions 7-9 of 10)."""
    result = await check_case(sqlite_stores(tmp_path), adk_append_event(), trials=16)
    assert result.failures == [], result.failures
    assert result.before and result.after


async def test_an_interrupted_import_resumes(tmp_path: Path) -> None:
    """Before: cancelled between a batch and putting back its thread's
    ``updated_at``, a second import refused the thread (ConflictError)."""
    (case,) = [c for c in all_cases() if c.name == "import batch"]
    result = await check_case(sqlite_stores(tmp_path), case, trials=12)
    assert result.failures == [], result.failures
    assert result.resumed


async def test_adk_state_over_the_limit_is_refused_before_any_write() -> None:
    """Before: the event was stored and the revision swapped, then the
    state's update raised ValidationError."""
    storage = await memory_core.connect("memory://")
    async with Memory(storage) as memory:
        service = MemoryCoreSessionService(memory)
        session = await service.create_session(app_name="a", user_id="u", session_id="s", state={"k": "v"})
        first, second = "x" * (MAX_MESSAGE_BYTES // 3), "y" * (MAX_MESSAGE_BYTES * 3 // 4)
        await service.append_event(session, Event(author="user", actions=EventActions(state_delta={"big1": first})))
        before = await service.get_session(app_name="a", user_id="u", session_id="s")
        assert before is not None
        with pytest.raises(ValidationError):
            await service.append_event(before, Event(author="user", actions=EventActions(state_delta={"big2": second})))
        after = await service.get_session(app_name="a", user_id="u", session_id="s")
        assert after is not None
        assert [e.id for e in after.events] == [e.id for e in before.events]
        assert after.state == before.state
        assert after._storage_update_marker == before._storage_update_marker


async def test_trials_share_one_store_each_in_its_own_scope(tmp_path: Path) -> None:
    """The command line opens the storage once per run: every trial (and
    the uncancelled run) leaves its own scope's resources in it, and the
    trials still pass. Before: a fresh store per trial (1-3 s on a server)."""
    (case,) = [c for c in all_cases() if c.name == "save_messages"]
    async with opened("memory", str(tmp_path)) as open_memory:
        result = await check_case(open_memory, case, trials=4, full_every=2)
        assert result.failures == [], result.failures
        assert result.trials == 4
        async with open_memory() as memory:
            ids = (await memory.storage.list_resource_ids(per_page=False)).items
    assert len(ids) == 2 * 5  # r1 and r2 of 1 + 4 scopes
    assert len({rid.rsplit("-", 1)[0] for rid in ids}) == 5


LATE: list[Callable[[], Awaitable[Any]]] = []
"""Writes of :func:`_late_case` that land when the next trial sets up."""


def _late_case() -> WriteCase:
    """A write that changes its scope again after the trial was viewed (as a
    write a driver sent that lands late would)."""

    async def setup(memory: Memory, scope: Scope) -> None:
        while LATE:
            await LATE.pop()()
        await base_store(memory, scope)

    async def operation(memory: Memory, scope: Scope) -> None:
        await memory.storage.update_resource(scope.id("r2"), metadata={"k": 1})
        LATE.append(lambda: memory.storage.update_resource(scope.id("r2"), metadata={"k": 2}))

    return WriteCase("late", setup, operation, snapshot)


async def test_the_full_check_finds_a_write_that_lands_after_its_trial(tmp_path: Path) -> None:
    """Each trial's scope is viewed again at the full check: a trial's write
    that landed during the next trial's setup is reported for that trial
    (the last trial's never lands). Before: no full check."""
    LATE.clear()
    async with opened("memory", str(tmp_path)) as open_memory:
        result = await check_case(open_memory, _late_case(), trials=4, full_every=4)
    LATE.clear()
    changed = [line for line in result.failures if "changed after the trial" in line]
    assert [line.split(", ")[1] for line in changed] == ["trial 0", "trial 1", "trial 2"], result.failures


async def test_cancel_at_passes_on_its_callers_own_cancellation() -> None:
    """Before: the caller's cancellation (Ctrl-C under ``asyncio.run``)
    reached the write's task, and ``cancel_at`` took it for the trial's own
    and returned True: the run went on."""
    caller = asyncio.create_task(cancel_at(asyncio.sleep(10), 5))
    await asyncio.sleep(0.01)
    caller.cancel()
    done, _ = await asyncio.wait([caller], timeout=5)
    assert done and caller.cancelled()


async def _cancel_while_the_job_runs(memory: Memory, write: Coroutine[Any, Any, Any]) -> None:
    """Start ``write``, cancel its caller once its outbox job runs, and
    wait for the job to end."""
    await _cancel_once_the_job_runs(memory, write)
    await memory._outbox.settle()


async def _cancel_once_the_job_runs(memory: Memory, write: Coroutine[Any, Any, Any]) -> None:
    """Start ``write`` and cancel its caller once its outbox job runs (the
    job goes on)."""
    task = asyncio.get_running_loop().create_task(write)
    for _ in range(10_000):  # a few loop turns: the caller reaches its outbox job
        if memory._outbox.pending or task.done():
            break
        await asyncio.sleep(0)
    assert not task.done(), "the write ended before it could be cancelled"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancelled_first_write_that_stored_nothing_names_no_repair(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: the cancelled first write to a new session (refused: its
    thread did not exist yet) was logged as "failed: NotFoundError(...)
    (repair: Memory.reindex)" although nothing was stored."""
    async with opener(f"sqlite:///{tmp_path}/s.db")() as memory:
        session = MemoryCoreSession("chat", memory, resource_id="alice")
        with caplog.at_level(logging.DEBUG, logger="memory_core"):
            await _cancel_while_the_job_runs(memory, session.add_items([{"role": "user", "content": "hi"}]))
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
        assert "refused, nothing stored: NotFoundError" in caplog.text
        assert await memory.list_threads() is not None and (await memory.list_threads()).items == []


async def test_a_cancelled_write_that_failed_after_storing_names_the_repair(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A refusal after the storage write (here the embedder's bad output, a
    ValidationError) may leave messages without vectors: the repair is named."""

    def broken(texts: list[str]) -> list[list[float]]:
        return [[float("nan"), 1.0] for _ in texts]

    storage = await memory_core.connect(f"sqlite:///{tmp_path}/s.db")
    vectors = await memory_core.connect_vector("memory://")
    embedder = CallableEmbedder(broken, 2, name="broken")
    async with Memory(storage, vectors, embedder, owns_stores=False, allow_volatile_vectors=True) as memory:
        await memory.storage.insert_thread(Thread("t", "alice"))
        with caplog.at_level(logging.DEBUG, logger="memory_core"):
            await _cancel_while_the_job_runs(memory, memory.append_messages("t", [("user", "hi")], resource_id="alice"))
        warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any("ValidationError" in m and "repair: Memory.reindex" in m for m in warned), caplog.text
        assert len((await memory.list_messages("t")).items) == 1  # stored, without its vector
    await storage.close()
    await vectors.close()


async def test_a_seam_read_after_a_cancelled_write_waits_for_it(tmp_path: Path) -> None:
    """The OpenAI Agents seam's ``get_items`` right after a cancelled
    ``add_items`` whose write goes on in the background: before, it read
    storage at once, so on a backend with several connections (PostgreSQL,
    a Valkey cluster: the cancellation trials) it showed the old items and
    the new ones a moment later. Now no seam read starts while a write of
    its Memory is in flight (checked where the read starts: SQLite's single
    connection would hide the overtaking itself)."""
    async with opener(f"sqlite:///{tmp_path}/s.db")() as memory:
        session = MemoryCoreSession("chat", memory, resource_id="alice")
        await session.add_items([{"role": "user", "content": "first"}])
        in_flight_at_read: list[int] = []
        read = memory.storage.page_messages

        async def watched(request: Any) -> Any:
            in_flight_at_read.append(memory._outbox.pending)
            return await read(request)

        memory.storage.page_messages = watched  # type: ignore[method-assign]
        await _cancel_once_the_job_runs(
            memory,
            session.add_items([{"role": "assistant", "content": "second"}, {"role": "user", "content": "third"}]),
        )
        assert [item.get("content") for item in await session.get_items()] == ["first", "second", "third"]
        assert in_flight_at_read == [0], in_flight_at_read


async def test_a_late_finish_of_a_cancelled_adk_append_keeps_newer_shared_state(tmp_path: Path) -> None:
    """An ADK append cancelled after its compare-and-set is finished by the
    next reader; a second reader that had read the session before (another
    process listing sessions, a slow ``get_session``) finishes it late,
    after a newer append set the same ``app:``/``user:`` keys. The final
    state is ADK's own (InMemorySessionService, the same appends in order).
    Before: the late finish merged the older deltas again, unconditionally
    (``app:x`` and ``user:y`` back to 2)."""
    from google.adk.sessions.in_memory_session_service import InMemorySessionService

    older = {"app:x": 2, "user:y": 2, "s": 2}
    newer = {"app:x": 3, "user:y": 3, "s": 3}

    def event(n: int, delta: dict[str, Any]) -> Event:
        return Event(id=f"e{n}", invocation_id="inv", author="user", actions=EventActions(state_delta=delta))

    oracle = InMemorySessionService()  # type: ignore[no-untyped-call]
    base = await oracle.create_session(app_name="a", user_id="u", session_id="s", state={"app:x": 1, "user:y": 1})
    await oracle.append_event(base, event(1, older))
    await oracle.append_event(base, event(2, newer))
    expected = await oracle.get_session(app_name="a", user_id="u", session_id="s")
    assert expected is not None

    async with opener(f"sqlite:///{tmp_path}/s.db")() as memory:
        service = MemoryCoreSessionService(memory)
        session = await service.create_session(
            app_name="a", user_id="u", session_id="s", state={"app:x": 1, "user:y": 1}
        )
        await _cancel_once_the_job_runs(memory, service.append_event(session, event(1, older)))
        await memory._outbox.settle()
        thread = await memory.storage.get_thread(session_thread("a", "u", "s"))
        assert thread is not None and str(thread.metadata["working_memory"]).startswith("{")  # the intent
        current = await service.get_session(app_name="a", user_id="u", session_id="s")  # finishes it
        assert current is not None
        await service.append_event(current, event(2, newer))
        await service._settle(thread)  # the late reader finishes what it read
        final = await service.get_session(app_name="a", user_id="u", session_id="s")
        assert final is not None
        assert final.state == expected.state
        assert await service.get_user_state(app_name="a", user_id="u") == {"y": 3}
        assert [e.id for e in final.events] == [e.id for e in expected.events]


async def test_a_cancelled_prune_is_finished_by_a_second_run(tmp_path: Path) -> None:
    """Every await point of a prune on SQLite (k = 1..n: the first n trials).
    Before: cancelled after a batch's messages were deleted and before its
    vectors were, the vectors stayed, and a second run (which finds only
    what storage still holds) never dropped them (suspension 3 of 5 here; 212 of 1,000 seeded
    trials of the command line)."""
    (case,) = [c for c in all_cases() if c.name == "prune"]
    async with opened("sqlite", str(tmp_path)) as open_memory:  # as the command line: one store, many scopes
        result = await check_case(open_memory, case, trials=8)
    assert result.suspensions == 5
    assert result.failures == [], result.failures
    assert result.resumed


async def test_store_every_opens_the_storage_again_in_a_fresh_namespace(tmp_path: Path) -> None:
    """``--store-every 2``: the uncancelled run and four trials use three
    storages (2 + 2 + 1 uses), each trial still passes, every storage holds
    only its own trials' scopes, and one no longer in use is destroyed (a
    server would hold every client's connections). Before: one storage per
    write, so on secantusdb (reads walk a hinted index whole) each trial
    cost more than the one before."""
    (case,) = [c for c in all_cases() if c.name == "save_messages"]
    storages: list[Any] = []
    held: dict[Any, int] = {}

    def recording(open_memory: Any) -> Any:
        @asynccontextmanager
        async def open_and_note() -> AsyncIterator[Memory]:
            async with open_memory() as memory:
                storages.append(memory.storage)
                yield memory
                held[memory.storage] = len((await memory.storage.list_resource_ids(per_page=False)).items)

        return open_and_note

    async with opened("sqlite", str(tmp_path), store_every=2) as open_memory:
        result = await check_case(recording(open_memory), case, trials=4, full_every=2)
        assert result.failures == [], result.failures
        assert len(_databases(tmp_path)) == 1  # the current one only
    assert _databases(tmp_path) == []
    distinct = list(dict.fromkeys(storages))
    assert [storages.count(s) for s in distinct] == [2, 2, 1]
    assert [held[s] for s in distinct] == [2 * 2, 2 * 2, 2 * 1]  # r1 and r2 of each scope


def _databases(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.db"))

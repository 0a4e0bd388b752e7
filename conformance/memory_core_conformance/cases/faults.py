"""Recovery paths on demand (``test_faults_*``) and what a store leaves behind
(``test_lifecycle_leaves_*``).

A retry path runs only when a real fault happens: a deadlock, a write whose
reads went stale, a lost connection. An adapter declares each such path as a
fault point (``fault_points``, :mod:`memory_core.retry`) and fires it where
the real fault would surface; these cases arm every declared point, so each
path runs every time the suite does, and check that the adapter absorbs what
it must (the answers equal the reference store's) and gives up, typed, after
a bounded number of attempts.

The leak case opens and closes stores, cancels calls, and compares the
server-side resources the adapter's test says how to count (its
``resource_counter`` fixture: connections in ``pg_stat_activity``, clients
in ``CLIENT LIST``, the server's connection count, open files) and the
event loop's tasks, before and after.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import anyio
import pytest

from memory_core.errors import BackendError, MemoryCoreError
from memory_core.retry import FaultPoint
from memory_core.storage import BaseStorage
from memory_core_conformance.cases._base import SuiteBase, paired_stores
from memory_core_conformance.compare import describe_difference
from memory_core_conformance.harness import StorageFactory, message, open_store, snapshot, thread

__all__ = ["FaultCases", "ResourceCounter"]

ResourceCounter = Callable[[], Awaitable[int]]
"""``async () -> int``: how many server-side resources (connections, clients,
open files) the process holds on the adapter's target right now."""

ABSORBED = (FaultPoint.STALE_WRITE, FaultPoint.ROLLED_BACK, FaultPoint.BUSY, FaultPoint.SCRIPTS_LOST)
"""Fault points whose retry must absorb a fault that happens twice in a row."""
BOUNDED = (FaultPoint.STALE_WRITE, FaultPoint.ROLLED_BACK)
"""Fault points whose retry must give up, typed, when the fault never ends
(``busy`` ends by itself: each pass holds the lock only for a moment;
``scripts_lost`` is repaired by the pass that meets it)."""
CYCLES = 5
"""Open/close cycles of the leak case."""
SETTLE_SECONDS = 10.0
"""How long the leak case waits for the server to see a closed connection
go: a client's close returns before the server's side of the socket ends
(secantusdb's connection thread, a PostgreSQL backend exiting), so one
count read at once may still hold it on a loaded machine; a leak never
goes."""
LOCK_ROUNDS = 2
"""Writes in a row that each meet the ``lock_timeout`` fault (armed once per
write): an adapter that produces its kinds of held lock in turn shows two."""


async def _settled(resource_counter: ResourceCounter, before: int) -> int:
    """How many more resources than ``before`` the target holds, read again
    until none more or :data:`SETTLE_SECONDS` pass."""
    deadline = anyio.current_time() + SETTLE_SECONDS
    leaked = await resource_counter() - before
    for _ in range(int(SETTLE_SECONDS / 0.05)):
        if leaked <= 0 or anyio.current_time() > deadline:
            break
        await asyncio.sleep(0.05)  # the server's side of a closed socket ends on its own time
        leaked = await resource_counter() - before
    return leaked


async def _writes(store: BaseStorage) -> None:
    """One of each write kind, on threads t1 and t2 of r1."""
    await store.save_thread(thread("t1", metadata={"k": 1}))
    await store.save_thread(thread("t2"))
    await store.save_messages([message(f"m{i}", "t1", f"m{i}", created_at=f"2025-01-02T00:00:0{i}Z") for i in range(3)])
    await store.update_messages([{"id": "m1", "content": "changed", "thread_id": "t2"}])
    await store.update_thread("t1", title="renamed", metadata={"j": 2})
    await store.update_resource("r1", working_memory="notes", metadata={"a": 1})
    await store.delete_messages(["m0"])
    await store.delete_thread("t2")


def _declared(store: BaseStorage, point: FaultPoint) -> None:
    if point not in store.fault_points:
        pytest.skip(f"the adapter declares no {point.value!r} fault point (fault_points)")


class FaultCases(SuiteBase):
    """Fault points armed on demand, and leaks after open/close cycles."""

    @pytest.fixture
    def resource_counter(self) -> ResourceCounter | None:
        """Override: ``async () -> int``, the server-side resources this
        process holds on the target (see :data:`ResourceCounter`). None (the
        default) skips the leak case."""
        return None

    @pytest.mark.parametrize("point", ABSORBED, ids=[p.value for p in ABSORBED])
    async def test_faults_a_fault_twice_in_a_row_is_absorbed(
        self, storage_factory: StorageFactory, point: FaultPoint
    ) -> None:
        async with paired_stores(storage_factory) as (sut, reference, _):
            _declared(sut, point)
            sut.faults.arm(point, times=2)
            await _writes(sut)
            await _writes(reference)
            assert sut.faults.fired(point) == 2, (
                f"the adapter declares the fault point {point.value!r} but no write passed through it"
            )
            got, want = await snapshot(sut, ["r1"]), await snapshot(reference, ["r1"])
            changes = describe_difference(got, want, ("adapter", "reference"), root="store")
            assert not changes, f"after a {point.value} fault twice:\n" + "\n".join(changes)

    @pytest.mark.parametrize("point", BOUNDED, ids=[p.value for p in BOUNDED])
    async def test_faults_a_fault_that_never_ends_gives_up_typed(
        self, storage_factory: StorageFactory, point: FaultPoint
    ) -> None:
        async with open_store(storage_factory) as store:
            _declared(store, point)
            await store.save_thread(thread("t1"))
            store.faults.arm(point, times=10_000)
            with anyio.fail_after(30), pytest.raises(MemoryCoreError):
                await store.save_messages([message("m1")])
            fired = store.faults.fired(point)
            assert 1 < fired < 1_000, f"{point.value}: {fired} attempts (no retry, or no bound on the loop)"
            store.faults.arm(point, times=0)
            assert (await store.list_messages("t1")).items == [], "a write that gave up left a message"
            await store.save_messages([message("m1")])

    async def test_faults_every_write_meets_what_a_dead_writer_left(self, storage_factory: StorageFactory) -> None:
        """Armed for every write, ``dead_write`` leaves ids reserved for
        another resource and each write's last step undone (leases run out):
        the writes and the reads after them must answer as the reference."""
        async with paired_stores(storage_factory) as (sut, reference, _):
            _declared(sut, FaultPoint.DEAD_WRITE)
            sut.faults.arm(FaultPoint.DEAD_WRITE, times=1_000)
            await _writes(sut)
            await _writes(reference)
            assert sut.faults.fired(FaultPoint.DEAD_WRITE) > 0, "the adapter declares dead_write but no write met it"
            for store in (sut, reference):  # the ids deleted and never saved are free for another resource
                await store.save_thread(thread("t9", "r2"))
                await store.save_messages([message("m0", "t9"), message("m7", "t9")])
                # more ids reserved by dead writes in one write than a write is retried
                await store.save_messages([message(f"n{i}", "t9") for i in range(12)])
            sut.faults.arm(FaultPoint.DEAD_WRITE, times=0)
            got, want = await snapshot(sut, ["r1", "r2"]), await snapshot(reference, ["r1", "r2"])
            changes = describe_difference(got, want, ("adapter", "reference"), root="store")
            assert not changes, "after writes that met dead writers:\n" + "\n".join(changes)

    async def test_faults_a_lock_held_too_long_is_typed_and_writes_nothing(
        self, storage_factory: StorageFactory
    ) -> None:
        """Armed once, :data:`LOCK_ROUNDS` times over (an adapter may report
        a lock held elsewhere in more than one way and produce them in
        turn: SQLite's SQLITE_BUSY and SQLITE_LOCKED), each write that meets
        the lock is a retryable ``BackendError`` that writes nothing, and
        the store then writes."""
        async with open_store(storage_factory) as store:
            _declared(store, FaultPoint.LOCK_TIMEOUT)
            await store.save_thread(thread("t1"))
            for attempt in range(1, LOCK_ROUNDS + 1):
                store.faults.arm(FaultPoint.LOCK_TIMEOUT)
                with pytest.raises(BackendError) as caught:
                    await store.save_messages([message("m1")])
                assert caught.value.retryable, (
                    f"a lock held elsewhere is transient (pass {attempt}): {caught.value!r}, {caught.value.original!r}"
                )
                assert store.faults.fired(FaultPoint.LOCK_TIMEOUT) == attempt
                assert (await store.list_messages("t1")).items == [], "a write that met a held lock left a message"
            await store.save_messages([message("m1")])
            assert [m.id for m in (await store.list_messages("t1")).items] == ["m1"]

    async def test_faults_a_lost_connection_is_typed_and_the_store_recovers(
        self, storage_factory: StorageFactory
    ) -> None:
        async with open_store(storage_factory) as store:
            _declared(store, FaultPoint.CONNECTION_LOST)
            await store.save_thread(thread("t1"))
            store.faults.arm(FaultPoint.CONNECTION_LOST)
            try:
                await store.save_messages([message("m1")])
            except BackendError as exc:
                assert exc.retryable, f"a lost connection is transient: {exc!r}"
            assert store.faults.fired(FaultPoint.CONNECTION_LOST) == 1
            for _ in range(3):  # every pooled connection is usable again
                await store.save_messages([message("m2"), message("m1")])
            assert sorted(m.id for m in (await store.list_messages("t1")).items) == ["m1", "m2"]

    async def test_lifecycle_leaves_no_connections_or_tasks(
        self, storage_factory: StorageFactory, resource_counter: ResourceCounter | None
    ) -> None:
        if resource_counter is None:
            pytest.skip("no resource_counter fixture: the adapter's test does not say how to count its resources")
        before, tasks = await resource_counter(), len(asyncio.all_tasks())
        for cycle in range(CYCLES):
            store = storage_factory(None)
            await store.open()
            await store.save_thread(thread("t1"))
            call = asyncio.ensure_future(store.save_messages([message(f"m{i}") for i in range(50)]))
            await asyncio.sleep(0)
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)
            await store.list_messages("t1")
            await store.destroy()
            await store.close()
            leaked = await _settled(resource_counter, before)
            assert leaked <= 0, f"after {cycle + 1} open/close cycles the store holds {leaked} more resources"
        assert len(asyncio.all_tasks()) <= tasks, f"tasks left running: {asyncio.all_tasks()}"

"""Two OS processes on one namespace (``test_ops_procs_*``,
``test_stateful_two_processes_*``): the racing cases and the state machine
with half of the writes made by a second instance of the adapter in a child
process (:mod:`memory_core_conformance.processes`); and a program that ends
without closing its store (``test_lifecycle_a_process_that_never_closes_*``):
it must exit, its writes kept.

They need the optional fixture ``storage_address``. The full set runs only
in two-process mode (``MEMORY_CORE_TWO_PROCESSES=1`` or
``--memory-core-two-processes``); the smoke case runs whenever the fixture
is defined.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import cast

import anyio
import pytest

from memory_core.storage import BaseStorage
from memory_core_conformance.cases._base import SuiteBase
from memory_core_conformance.cases.concurrency import (
    erasure_and_deletes,
    erasure_and_writers,
    merge_burst,
    move_races,
    overlapping_batches,
    ownership_races,
)
from memory_core_conformance.harness import StorageFactory, open_store, thread
from memory_core_conformance.processes import (
    ENV_VAR,
    EXIT_SECONDS,
    OPTION,
    ChildProcess,
    RemoteStore,
    StoreAddresser,
    run_two_process_machine,
    run_unclosed_writer,
    two_process_mode,
)

__all__ = ["TwoProcessCases"]

_OFF = f"two-process mode is off (set {ENV_VAR}=1 or pass {OPTION})"
_NO_ADDRESS = "the test class defines no storage_address fixture (a picklable address of a store's namespace)"

Race = Callable[[BaseStorage, BaseStorage], Awaitable[None]]


class TwoProcessCases(SuiteBase):
    """Racing writes and the state machine across two OS processes."""

    @pytest.fixture
    def storage_address(self) -> StoreAddresser | None:
        """Override to run these cases: return ``address(store) ->
        StoreAddress`` (see :class:`~memory_core_conformance.processes.StoreAddress`);
        None (the default) skips them."""
        return None

    @pytest.fixture
    def full_two_process_mode(self, request: pytest.FixtureRequest, storage_address: StoreAddresser | None) -> None:
        """Skip unless the mode is on and the adapter gives addresses."""
        if not two_process_mode(request.config):
            pytest.skip(_OFF)
        if storage_address is None:
            pytest.skip(_NO_ADDRESS)

    @pytest.fixture(scope="class")
    def child_process(self) -> Iterator[ChildProcess]:
        """One child process for the class's two-process tests."""
        with ChildProcess() as child:
            yield child

    @pytest.fixture
    async def two_stores(
        self, storage_factory: StorageFactory, storage_address: StoreAddresser | None, request: pytest.FixtureRequest
    ) -> AsyncIterator[tuple[BaseStorage, BaseStorage]]:
        """An opened store and a second instance on its namespace in the
        child process; the namespace is destroyed afterwards."""
        if storage_address is None:
            pytest.skip(_NO_ADDRESS)
        child: ChildProcess = request.getfixturevalue("child_process")
        async with open_store(storage_factory) as store, RemoteStore(child, storage_address(store)) as remote:
            yield store, cast(BaseStorage, remote)

    async def test_ops_procs_smoke_two_processes_race(self, two_stores: tuple[BaseStorage, BaseStorage]) -> None:
        """One round of the ownership races and of the erasure racing
        writers, the second writer in another OS process."""
        store, child = two_stores
        await ownership_races(store, child, rounds=1)
        await erasure_and_writers(store, child, rounds=1)

    async def test_lifecycle_a_process_that_never_closes_its_store_exits_with_its_writes_kept(
        self, storage_factory: StorageFactory, storage_address: StoreAddresser | None
    ) -> None:
        """A program that opens a store, writes and ends without closing it
        (a script, a worker killed by its supervisor's normal shutdown)
        exits within :data:`EXIT_SECONDS` of its last call: no thread or
        task of the store keeps the interpreter alive. Every write it was
        told of is kept: a store opened here reads it."""
        if storage_address is None:
            pytest.skip(_NO_ADDRESS)
        async with open_store(storage_factory) as store:
            await store.save_thread(thread("t0"))
            ended = await anyio.to_thread.run_sync(run_unclosed_writer, storage_address(store), "t1", "m1")
            assert ended.error is None, f"the child could not write through the store: {ended.error}"
            assert ended.exit_code is not None, (
                f"a process that never closed its store was still running {ended.seconds:.0f} s after its last "
                f"call (killed after {EXIT_SECONDS} s): a thread or task of the store keeps it from exiting"
            )
            assert ended.exit_code == 0, f"the child exited with code {ended.exit_code}"
            found = await store.list_messages("t1", per_page=False)
            assert [m.id for m in found.items] == ["m1"], "the write of a process that never closed its store is lost"

    @pytest.mark.usefixtures("full_two_process_mode")
    @pytest.mark.parametrize(
        "race",
        [ownership_races, move_races, merge_burst, overlapping_batches, erasure_and_deletes, erasure_and_writers],
        ids=lambda race: race.__name__,
    )
    async def test_ops_procs_race(self, race: Race, two_stores: tuple[BaseStorage, BaseStorage]) -> None:
        """Each ``test_ops_race_*`` race with its second writer in another
        OS process."""
        await race(*two_stores)

    @pytest.mark.usefixtures("full_two_process_mode")
    @pytest.mark.conformance_stateful
    def test_stateful_two_processes_match_reference(
        self, storage_factory: StorageFactory, storage_address: StoreAddresser, child_process: ChildProcess
    ) -> None:
        """The state machine with every other step run in another OS process."""
        run_two_process_machine(storage_factory, storage_address, child_process)

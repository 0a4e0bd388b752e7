"""The shared conformance suite against MongoStorage: on secantusdb, and on
the server at MONGODB_URL when that is set (the ``mongodb_url`` fixture)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import anyio
import pytest
from memory_core_conformance import StorageConformance, run_storage_machine
from memory_core_conformance.cases.faults import ResourceCounter
from memory_core_conformance.processes import StoreAddress
from memory_core_conformance.profiles import PROFILES
from memory_core_mongodb import MongoStorage
from memory_core_mongodb.testing import unique_namespace
from pymongo import AsyncMongoClient

from memory_core.clock import Clock
from memory_core.storage import BaseStorage
from memory_core.testing import free_port


class TestMongoConformance(StorageConformance):
    """Every conformance test, each store in a fresh database on the server under test."""

    @pytest.fixture
    def conformance_profile(self, is_secantus: bool) -> str | None:
        """secantusdb is a pure-Python stand-in where one write costs ~40 ms
        (10-100x MongoDB): run the shared suite with the ``stand-in`` profile
        there, and with the environment's profile on a real MONGODB_URL."""
        return "stand-in" if is_secantus else None

    async def test_ops_batches_cross_every_chunk_limit(self, store: BaseStorage, is_secantus: bool) -> None:  # type: ignore[override]
        """Runs on a real MONGODB_URL only: secantusdb (pure Python) aborts a
        5,001-message transaction (NoSuchTransaction) before it commits."""
        if is_secantus:
            pytest.skip("secantusdb aborts a 5,001-message transaction before it commits; real MongoDB only")
        await super().test_ops_batches_cross_every_chunk_limit(store)

    async def test_ops_clone_and_branch_cross_every_chunk_limit(  # type: ignore[override]
        self, store: BaseStorage, is_secantus: bool
    ) -> None:
        """Runs on a real MONGODB_URL only, for the reason above."""
        if is_secantus:
            pytest.skip("secantusdb aborts a 5,001-message transaction before it commits; real MongoDB only")
        await super().test_ops_clone_and_branch_cross_every_chunk_limit(store)

    @pytest.fixture
    def storage_factory(self, mongodb_url: str) -> Callable[[Clock | None], BaseStorage]:
        def factory(clock: Clock | None = None) -> BaseStorage:
            return MongoStorage.from_url(
                mongodb_url, clock=clock, namespace=unique_namespace(), serverSelectionTimeoutMS=10_000
            )

        return factory

    @pytest.fixture
    def resource_counter(self, mongodb_url: str) -> ResourceCounter:
        """Open connections on the server (``serverStatus``'s
        ``connections.current``), read by a client of its own each time (so
        its own connections add the same number to every count)."""

        async def count() -> int:
            client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(mongodb_url)
            try:
                status = await client.admin.command("serverStatus")
                return int(status["connections"]["current"])
            finally:
                await client.close()

        return count

    @pytest.fixture
    def storage_reopener(self) -> Callable[..., BaseStorage]:
        def reopen(store: BaseStorage, clock: Clock | None = None) -> BaseStorage:
            assert isinstance(store, MongoStorage)
            return MongoStorage(store.url, database=store.database_name, clock=clock, serverSelectionTimeoutMS=10_000)

        return reopen

    @pytest.fixture
    def storage_address(self) -> Callable[[BaseStorage], StoreAddress]:
        """Where a child process opens a second store on the same database as ``store``."""

        def address(store: BaseStorage) -> StoreAddress:
            if not isinstance(store, MongoStorage):
                raise TypeError(f"not a store this module's factory built: {store!r}")
            options = {"database": store.database_name, "serverSelectionTimeoutMS": 10_000}
            return StoreAddress(MongoStorage, (store.url,), options)

        return address

    @pytest.fixture
    def unopenable_storage_factory(self) -> Callable[[Clock | None], BaseStorage]:
        """Stores on a loopback port where no server listens: their open fails
        (after a short server selection: with the adapter's default
        ``timeoutMS`` of 60 s PyMongo selects a server for that long, ignoring
        ``serverSelectionTimeoutMS``, and each of the case's three opens took
        a minute)."""

        def factory(clock: Clock | None = None) -> BaseStorage:
            return MongoStorage.from_url(
                f"mongodb://127.0.0.1:{free_port()}/",
                clock=clock,
                namespace=unique_namespace(),
                serverSelectionTimeoutMS=300,
                timeoutMS=300,
            )

        return factory


async def _uses_transactions(factory: Callable[[], MongoStorage]) -> bool:
    store = factory()
    await store.open()
    try:
        return bool(store.transactions)
    finally:
        await store.destroy()


@pytest.mark.heavy  # a state machine: run first (the repository's conftest.py)
def test_state_machine_with_the_ordered_write_plan(mongodb_url: str, is_secantus: bool) -> None:
    """The conformance state machine with ``transactions=False`` forced.

    On a server with transactions the suite above runs the transactional
    write plan; the ordered plan (what standalone servers get) must answer
    like the reference store too. Without transactions the suite already ran
    the ordered plan, so this is skipped. On secantusdb the run is sized by
    the ``stand-in`` profile, as the suite's is.
    """

    def factory(clock: Clock | None = None, *, transactions: bool | None = False) -> MongoStorage:
        return MongoStorage.from_url(
            mongodb_url,
            clock=clock,
            namespace=unique_namespace(),
            transactions=transactions,
            serverSelectionTimeoutMS=10_000,
        )

    if not anyio.run(_uses_transactions, partial(factory, transactions=None)):
        pytest.skip("this server has no transactions: the conformance suite already ran the ordered plan")
    run_storage_machine(factory, machine_settings=PROFILES["stand-in"].stateful_settings() if is_secantus else None)


class _PerCollectionWrites(MongoStorage):
    """A store that writes a save as on MongoDB before 8.0 (one bulk_write
    per collection), whatever the server's wire version."""

    async def _open(self) -> None:
        await super()._open()
        self._client_bulk = False


@pytest.mark.heavy  # a state machine: run first (the repository's conftest.py)
def test_state_machine_with_per_collection_writes(mongodb_url: str, is_secantus: bool) -> None:
    """The conformance state machine with the client ``bulkWrite`` turned off.

    On MongoDB 8.0+ (and secantusdb) the suite above writes a save's messages
    and thread bumps in one client ``bulkWrite``; servers before 8.0 get one
    ``bulk_write`` per collection, which must answer like the reference store
    too. Skipped where the suite already ran that path.
    """

    def factory(clock: Clock | None = None) -> MongoStorage:
        return _PerCollectionWrites.from_url(
            mongodb_url, clock=clock, namespace=unique_namespace(), serverSelectionTimeoutMS=10_000
        )

    async def has_client_bulk() -> bool:
        store = MongoStorage.from_url(mongodb_url, namespace=unique_namespace(), serverSelectionTimeoutMS=10_000)
        await store.open()
        try:
            return store._client_bulk
        finally:
            await store.destroy()

    if not anyio.run(has_client_bulk):
        pytest.skip("this server has no client bulkWrite: the conformance suite already ran per-collection writes")
    run_storage_machine(factory, machine_settings=PROFILES["stand-in"].stateful_settings() if is_secantus else None)

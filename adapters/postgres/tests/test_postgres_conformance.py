"""The shared memory-core conformance suite, run against PostgresStorage on
every target server (pgserver's PostgreSQL 16 and, when set, POSTGRES_URL).

Each store is its own schema; the suite opens it and ``destroy()`` drops it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import asyncpg
import pytest
from memory_core.clock import Clock
from memory_core.storage import BaseStorage
from memory_core.testing import free_port
from memory_core_conformance import StorageConformance
from memory_core_conformance.cases.faults import ResourceCounter
from memory_core_conformance.processes import StoreAddress

from memory_core_postgres import PostgresStorage
from memory_core_postgres._schema import _VERSION_TABLE, MIGRATIONS, SCHEMA_VERSION
from memory_core_postgres._url import quote_ident


class TestPostgresConformance(StorageConformance):
    """Every conformance test, on PostgreSQL."""

    @pytest.fixture
    def storage_factory(self, make_store: Callable[..., PostgresStorage]) -> Callable[..., BaseStorage]:
        """A new, unopened store in a fresh schema per call."""
        return make_store

    @pytest.fixture
    def storage_reopener(self, make_store: Callable[..., PostgresStorage]) -> Callable[..., BaseStorage]:
        """A new, unopened store on the same schema as ``store``."""

        def reopen(store: BaseStorage, clock: Clock | None = None) -> BaseStorage:
            assert isinstance(store, PostgresStorage)
            return PostgresStorage(store.settings.dsn, schema=store.schema, clock=clock)

        return reopen

    @pytest.fixture
    def storage_address(self) -> Callable[[BaseStorage], StoreAddress]:
        """Where a child process opens a second store on the same schema as ``store``."""

        def address(store: BaseStorage) -> StoreAddress:
            if not isinstance(store, PostgresStorage):
                raise TypeError(f"not a store this module's factory built: {store!r}")
            return StoreAddress(PostgresStorage, (store.settings.dsn,), {"schema": store.schema})

        return address

    @pytest.fixture
    def unopenable_storage_factory(self) -> Callable[..., BaseStorage]:
        """Stores on a loopback port where no server listens: their open fails."""

        def factory(clock: Clock | None = None) -> BaseStorage:
            return PostgresStorage(f"postgresql://postgres@127.0.0.1:{free_port()}/test", clock=clock)

        return factory

    @pytest.fixture
    async def release_storage_factory(
        self, make_store: Callable[..., PostgresStorage]
    ) -> AsyncIterator[Callable[[int], BaseStorage]]:
        """Stores on schemas another release left: step -1 every migration
        but the last, +1 a version past :data:`SCHEMA_VERSION`; both schemas
        are made first and dropped after the test."""
        schemas = {step: make_store().schema for step in (-1, 1)}
        dsn = make_store().settings.dsn
        conn = await asyncpg.connect(dsn)
        try:
            for step, schema in schemas.items():
                quoted = quote_ident(schema)
                await conn.execute(f"CREATE SCHEMA {quoted}; " + _VERSION_TABLE.format(s=quoted))
                for number, script in MIGRATIONS[:-1] if step < 0 else MIGRATIONS:
                    await conn.execute(script.format(s=quoted))
                    await conn.execute(f"INSERT INTO {quoted}.schema_version (version) VALUES ($1)", number)
                if step > 0:
                    await conn.execute(
                        f"INSERT INTO {quoted}.schema_version (version) VALUES ($1)", SCHEMA_VERSION + step
                    )

            def factory(step: int) -> BaseStorage:
                return PostgresStorage(dsn, schema=schemas[step])

            yield factory
        finally:
            for schema in schemas.values():
                await conn.execute(f"DROP SCHEMA IF EXISTS {quote_ident(schema)} CASCADE")
            await conn.close()

    @pytest.fixture
    async def foreign_storage_factory(
        self, make_store: Callable[..., PostgresStorage]
    ) -> AsyncIterator[Callable[..., BaseStorage]]:
        """Stores on a schema holding another application's table (no
        ``schema_version``); the schema is dropped after the test."""
        schema = make_store().schema
        conn = await asyncpg.connect(make_store().settings.dsn)
        try:
            await conn.execute(f"CREATE SCHEMA {quote_ident(schema)}")
            await conn.execute(f"CREATE TABLE {quote_ident(schema)}.notes (id int PRIMARY KEY, body text)")

            def factory(clock: Clock | None = None) -> BaseStorage:
                return PostgresStorage(make_store().settings.dsn, schema=schema, clock=clock)

            yield factory
        finally:
            await conn.execute(f"DROP SCHEMA IF EXISTS {quote_ident(schema)} CASCADE")
            await conn.close()

    @pytest.fixture
    def resource_counter(self, pg_target: str) -> ResourceCounter:
        """Client connections to the target's database (``pg_stat_activity``),
        the counting connection left out."""

        async def count() -> int:
            conn = await asyncpg.connect(pg_target)
            try:
                return int(
                    await conn.fetchval(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                        " AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
                    )
                )
            finally:
                await conn.close()

        return count

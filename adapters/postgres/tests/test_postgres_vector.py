"""The vector conformance layer (C15, C16, R-VEC, R-RECALL) on PostgreSQL:
PostgresStorage with PgVectorStore (exact and HNSW), on pgserver's
PostgreSQL 16 + pgvector. POSTGRES_URL's server is skipped when it has no
pgvector (the machines' PostgreSQL 15)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import asyncpg
import numpy as np
import pytest
from memory_core.errors import ValidationError
from memory_core.storage import BaseStorage
from memory_core.testing import free_port
from memory_core.vector import BaseVectorStore, VectorPoint, VectorStore, collection_name
from memory_core_conformance.vector import VectorConformance, VectorFactory
from memory_core_conformance.vector_store import IndexKinds, VectorStoreConformance, VectorStoreFactory

from memory_core_postgres import PgVectorStore, PostgresStorage


class TestPostgresWithPgVector(VectorConformance):
    """Storage and vectors both in PostgreSQL (exact search)."""

    index = "exact"

    @pytest.fixture
    def storage_factory(self, make_store: Callable[..., PostgresStorage]) -> Callable[..., BaseStorage]:
        return make_store

    @pytest.fixture
    def vector_factory(self, vector_url: str) -> VectorFactory:
        def factory() -> VectorStore:
            return PgVectorStore.from_url(vector_url, namespace=f"v{uuid.uuid4().hex[:16]}", index=self.index)

        return factory


class TestPostgresWithPgVectorHnsw(TestPostgresWithPgVector):
    """The same cases with an HNSW index (small collections: exact answers)."""

    index = "hnsw"


class TestPgVectorStore(VectorStoreConformance):
    """The store-level vector suite (rule VECTOR-STORE) on pgvector, exact search."""

    @pytest.fixture
    def vector_store_factory(self, vector_url: str) -> VectorStoreFactory:
        def factory(**options: Any) -> PgVectorStore:
            options.setdefault("namespace", f"v{uuid.uuid4().hex[:16]}")
            return PgVectorStore.from_url(vector_url, **options)

        return factory

    @pytest.fixture
    def index_kinds(self, vector_url: str) -> IndexKinds:
        """``exact`` builds no approximate index, ``hnsw`` an HNSW one on
        each collection (read from ``pg_indexes``)."""

        async def probe(store: BaseVectorStore, dimension: int) -> frozenset[str]:
            assert isinstance(store, PgVectorStore)
            conn = await asyncpg.connect(vector_url)
            try:
                rows = await conn.fetch(
                    "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = $2",
                    store.schema,
                    f"{store.namespace}_{collection_name(dimension)}",
                )
            finally:
                await conn.close()
            return frozenset("hnsw" for row in rows if "USING hnsw" in row["indexdef"])

        variants = {"exact": ({"index": "exact"}, frozenset()), "hnsw": ({"index": "hnsw"}, frozenset({"hnsw"}))}
        return variants, probe

    @pytest.fixture
    def integer_option_ranges(self) -> dict[str, tuple[int, int]]:
        """``ef_search``: HNSW's search breadth, 1 to 1000."""
        return {"ef_search": (1, 1000)}

    @pytest.fixture
    def unreachable_vector_store(self) -> PgVectorStore:
        """A store for a port nobody listens on."""
        return PgVectorStore.from_url(f"postgresql://postgres@127.0.0.1:{free_port()}/test", namespace="unreachable")


def test_namespace_longer_than_the_identifier_limit_allows_is_refused() -> None:
    """``<namespace>_memory_messages_<dim>_h`` must fit 63 bytes: PostgreSQL
    would silently truncate longer names and merge two stores' tables."""
    assert PgVectorStore("postgresql://h/db", namespace="n" * 39).namespace == "n" * 39
    with pytest.raises(ValidationError, match="namespace"):
        PgVectorStore("postgresql://h/db", namespace="n" * 40)


@pytest.mark.anyio
async def test_strict_preflight_before_open_reads_without_creating(vector_url: str) -> None:
    """``preflight(must_exist=True)`` before ``open`` (``prune --vector``): a
    schema without this store's tables is a ValidationError (field url) and
    is not created; once a collection is written, the check passes."""
    schema = f"v{uuid.uuid4().hex[:16]}"
    with pytest.raises(ValidationError, match="holds no memory-core vectors") as caught:
        await PgVectorStore(vector_url, schema=schema).preflight(must_exist=True)
    assert caught.value.field == "url"
    conn = await asyncpg.connect(vector_url)
    try:
        assert await conn.fetchval("SELECT 1 FROM pg_namespace WHERE nspname = $1", schema) is None
        writer = PgVectorStore(vector_url, schema=schema)
        await writer.open()
        await writer.upsert([VectorPoint("m1", 0, np.ones(4, dtype=np.float32), "t1", "r1", 1)])
        await writer.close()
        await PgVectorStore(vector_url, schema=schema).preflight(must_exist=True)
    finally:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await conn.close()

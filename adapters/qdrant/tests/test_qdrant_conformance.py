"""The shared vector conformance suites on the engine in memory and on the
qdrant-client code path (qdrant-client's local mode, or the server at
``QDRANT_URL`` when set): C15, C16, R-VEC, R-RECALL through
``memory_core.Memory`` with the reference storage (``VectorConformance``),
and the store on its own (``VectorStoreConformance``: layout, counts,
deletes, search, URLs and their options, life cycle), the latter on the
engine on disk too (its preflight reads the folder, its erasures rebuild
files). This module is what the mutation script runs for this adapter
(docs: the shared suite alone)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from memory_core import InMemoryStorage
from memory_core.clock import Clock
from memory_core.testing import folder_bytes, free_port
from memory_core.vector import BaseVectorStore, VectorStore
from memory_core_conformance import StorageFactory
from memory_core_conformance.vector import VectorConformance, VectorFactory
from memory_core_conformance.vector_store import (
    IndexKinds,
    RawScan,
    VectorStoreConformance,
    VectorStoreFactory,
    VectorUrls,
)

from memory_core_qdrant import QdrantEdgeStore, QdrantServerStore, from_url

StoreFactory = Callable[..., BaseVectorStore]


class TestQdrantVectorConformance(VectorConformance):
    """InMemoryStorage + the engine in memory, and + the qdrant-client path."""

    @pytest.fixture(params=["edge-memory", "server"])
    def mode(self, request: pytest.FixtureRequest) -> str:
        """The conftest's modes, without the engine on disk."""
        return str(request.param)

    @pytest.fixture
    def storage_factory(self) -> StorageFactory:
        def factory(clock: Clock | None = None) -> InMemoryStorage:
            return InMemoryStorage(clock=clock)

        return factory

    @pytest.fixture
    def vector_factory(self, store_factory: StoreFactory) -> VectorFactory:
        def factory() -> VectorStore:
            return store_factory()

        return factory


class TestQdrantVectorStore(VectorStoreConformance):
    """The store-level shared suite on each mode of the conftest."""

    @pytest.fixture
    def vector_store_factory(self, store_factory: VectorStoreFactory) -> VectorStoreFactory:
        return store_factory

    @pytest.fixture
    def unreachable_vector_store(self, mode: str) -> BaseVectorStore | None:
        """A server store making its own client for a port nobody listens on."""
        if mode != "server":
            return None
        return from_url(f"qdrant://127.0.0.1:{free_port()}?timeout=2", namespace="unreachable")

    @pytest.fixture
    def raw_scan(self, mode: str) -> RawScan | None:
        """The engine's folder, every file (its erasures rebuild the shards);
        a server keeps deleted bytes until its optimizer runs (README)."""
        if mode == "server":
            return None

        async def scan(store: BaseVectorStore) -> bytes:
            assert isinstance(store, QdrantEdgeStore) and store._root is not None
            return folder_bytes(store._root)

        return scan

    @pytest.fixture
    def index_kinds(self, mode: str) -> IndexKinds | None:
        """The payload indexes of each collection: one per filter field, the
        tenant field's (``resource_id``) marked as Qdrant's tenant, which
        groups a resource's points (the engine's shard info; a real server's
        collection info). qdrant-client's local mode keeps no payload
        indexes: None there (the case skips)."""
        if mode == "server" and not os.environ.get("QDRANT_URL"):
            return None

        async def probe(store: BaseVectorStore, dimension: int) -> frozenset[str]:
            name = store.collection(dimension)
            schema: dict[str, Any]
            if isinstance(store, QdrantEdgeStore):
                schema = store._shards[name].info().payload_schema
            else:
                assert isinstance(store, QdrantServerStore)
                schema = (await store.client.get_collection(name)).payload_schema
            tenant = {field for field, info in schema.items() if getattr(info.params, "is_tenant", None)}
            return frozenset(f"{'tenant' if field in tenant else 'index'}:{field}" for field in schema)

        kinds = frozenset({"index:message_id", "index:thread_id", "tenant:resource_id"})
        return {"default": ({}, kinds)}, probe

    @pytest.fixture
    def vector_urls(self, mode: str) -> VectorUrls | None:
        """Every URL form (once, on the in-memory mode: building does no I/O)."""
        if mode != "edge-memory":
            return None
        return VectorUrls(
            accepted=(
                "qdrant::memory:",
                "qdrant+path:///never-made/vectors",
                "qdrant+path:////never-made/vectors",
                "qdrant+path:///:memory:",
                "qdrant://localhost:6333",
                "qdrant+https://localhost:6333/prefix",
            ),
            refused=(
                "qdrant+path://host/vectors",
                "qdrant+path:///",
                "qdrant+path:vectors",
                "qdrant://",
                "qdrant://:6333",
                "qdrant:localhost",
                "qdrant://user@localhost:6333",
                "qdrant://:secret@localhost:6333",
                "qdrant://user:secret@localhost:6333",
                "qdrant://localhost:port",
                "qdrant+ftp://localhost",
            ),
            bool_options={"create_dirs": "qdrant+path:///never-made/vectors", "exact": "qdrant://localhost:6333"},
        )

"""The shared vector conformance suite (C15, C16, R-VEC, R-RECALL through
``memory_core.Memory``) on the engine in memory and on the qdrant-client
code path (qdrant-client's local mode, or the server at ``QDRANT_URL`` when
set), with the reference storage. The engine on disk answers as in memory
(test_vector_store and test_edge cover its files), so it is left out here to
keep the suite lean."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from memory_core import InMemoryStorage
from memory_core.clock import Clock
from memory_core.vector import BaseVectorStore, VectorStore
from memory_core_conformance import StorageFactory
from memory_core_conformance.vector import VectorConformance, VectorFactory

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

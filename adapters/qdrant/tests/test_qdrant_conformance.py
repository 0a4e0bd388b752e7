"""The shared vector conformance suite (C15, C16, R-VEC, R-RECALL through
``memory_core.Memory``) on every mode of the conftest: the engine in memory
and on disk, and the qdrant-client code path (qdrant-client's local mode, or
the server at ``QDRANT_URL`` when set), with the reference storage."""

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
    """InMemoryStorage + each Qdrant mode."""

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

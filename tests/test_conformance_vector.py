"""The Memory-level conformance layer (C15, C16, R-VEC, R-RECALL) on the
reference storage and Qdrant's in-process engine (``qdrant::memory:``)."""

from __future__ import annotations

import uuid

import pytest
from memory_core_conformance import StorageFactory
from memory_core_conformance.vector import VectorConformance, VectorFactory

from memory_core import InMemoryStorage
from memory_core.clock import Clock
from memory_core.vector import VectorStore

qdrant = pytest.importorskip("memory_core_qdrant", reason="memory-core-qdrant is not installed")


class TestReferenceWithQdrantEdge(VectorConformance):
    """InMemoryStorage + QdrantVectorStore in local in-memory mode."""

    @pytest.fixture
    def storage_factory(self) -> StorageFactory:
        def factory(clock: Clock | None = None) -> InMemoryStorage:
            return InMemoryStorage(clock=clock)

        return factory

    @pytest.fixture
    def vector_factory(self) -> VectorFactory:
        def factory() -> VectorStore:
            store: VectorStore = qdrant.QdrantVectorStore.from_url(
                "qdrant::memory:", namespace=f"c{uuid.uuid4().hex[:12]}"
            )
            return store

        return factory

"""The vector conformance suites on the core's reference vector store
(``memory://``, exact brute force): the Memory-level layer (C15, C16, R-VEC,
R-RECALL, also on Qdrant's in-process engine ``qdrant::memory:``) and the
store-level layer (VECTOR-STORE). The Qdrant adapter's own tests run both on
each of its modes."""

from __future__ import annotations

import importlib.util
import uuid
from typing import Any

import pytest
from memory_core_conformance import StorageFactory
from memory_core_conformance.vector import VectorConformance, VectorFactory
from memory_core_conformance.vector_store import VectorStoreConformance, VectorStoreFactory

from memory_core import InMemoryStorage
from memory_core.clock import Clock
from memory_core.reference_vector import InMemoryVectorStore
from memory_core.vector import VectorStore

HAS_QDRANT = importlib.util.find_spec("memory_core_qdrant") is not None


def _namespace() -> str:
    return f"c{uuid.uuid4().hex[:12]}"


class _ReferenceStorage(VectorConformance):
    @pytest.fixture
    def storage_factory(self) -> StorageFactory:
        def factory(clock: Clock | None = None) -> InMemoryStorage:
            return InMemoryStorage(clock=clock)

        return factory


class TestReferenceWithReferenceVectors(_ReferenceStorage):
    """InMemoryStorage + InMemoryVectorStore: the suite's self-test."""

    @pytest.fixture
    def vector_factory(self) -> VectorFactory:
        def factory() -> VectorStore:
            return InMemoryVectorStore(namespace=_namespace())

        return factory


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
class TestReferenceWithQdrantEdge(_ReferenceStorage):
    """InMemoryStorage + Qdrant's engine in memory (``qdrant::memory:``)."""

    @pytest.fixture
    def vector_factory(self) -> VectorFactory:
        import memory_core_qdrant

        def factory() -> VectorStore:
            return memory_core_qdrant.from_url("qdrant::memory:", namespace=_namespace())

        return factory


class TestReferenceVectorStore(VectorStoreConformance):
    """The store-level suite on the reference vector store (its self-test)."""

    @pytest.fixture
    def vector_store_factory(self) -> VectorStoreFactory:
        def factory(**options: Any) -> InMemoryVectorStore:
            options.setdefault("namespace", _namespace())
            return InMemoryVectorStore(**options)

        return factory

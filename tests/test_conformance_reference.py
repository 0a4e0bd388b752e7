"""The conformance suite against the reference store (``memory://``).

This is the suite's self-test: the reference store *is* the contract, so every
test must pass here; tests/test_conformance_kills.py shows the suite fails
deliberately broken adapters.
"""

from __future__ import annotations

import pytest
from memory_core_conformance import StorageConformance, StorageFactory

from memory_core import InMemoryStorage
from memory_core.clock import Clock


class TestReferenceConformance(StorageConformance):
    """InMemoryStorage declares no optional capability: each instance is its
    own namespace, so PERSISTENT and SHARED_NAMESPACE tests are skipped."""

    @pytest.fixture
    def storage_factory(self) -> StorageFactory:
        def factory(clock: Clock | None = None) -> InMemoryStorage:
            return InMemoryStorage(clock=clock)

        return factory

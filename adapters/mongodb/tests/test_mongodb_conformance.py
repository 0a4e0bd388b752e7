"""The shared conformance suite against MongoStorage: on secantusdb, and on
the server at MONGODB_URL when that is set (the ``mongodb_url`` fixture)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from memory_core_conformance import StorageConformance
from memory_core_mongodb import MongoStorage
from memory_core_mongodb.testing import unique_namespace

from memory_core.clock import Clock
from memory_core.storage import BaseStorage


class TestMongoConformance(StorageConformance):
    """Every conformance test, each store in a fresh database on the server under test."""

    @pytest.fixture
    def conformance_profile(self, is_secantus: bool) -> str | None:
        """secantusdb is a pure-Python stand-in where one write costs ~40 ms
        (10-100x MongoDB): run the shared suite with the ``stand-in`` profile
        there, and with the environment's profile on a real MONGODB_URL."""
        return "stand-in" if is_secantus else None

    @pytest.fixture
    def storage_factory(self, mongodb_url: str) -> Callable[[Clock | None], BaseStorage]:
        def factory(clock: Clock | None = None) -> BaseStorage:
            return MongoStorage.from_url(
                mongodb_url, clock=clock, namespace=unique_namespace(), serverSelectionTimeoutMS=10_000
            )

        return factory

    @pytest.fixture
    def storage_reopener(self) -> Callable[..., BaseStorage]:
        def reopen(store: BaseStorage, clock: Clock | None = None) -> BaseStorage:
            assert isinstance(store, MongoStorage)
            return MongoStorage(store.url, database=store.database_name, clock=clock, serverSelectionTimeoutMS=10_000)

        return reopen

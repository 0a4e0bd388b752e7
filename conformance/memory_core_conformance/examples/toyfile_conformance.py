"""The whole test module an adapter needs, here for
:class:`~memory_core_conformance.examples.toyfile.ToyFileStorage`
(conformance/README.md shows it; conformance/tests runs it)."""

import itertools
from pathlib import Path

import pytest

from memory_core.clock import Clock
from memory_core.storage import BaseStorage
from memory_core_conformance import StorageConformance, StorageFactory, StorageReopener
from memory_core_conformance.examples.toyfile import ToyFileStorage


class TestToyFileConformance(StorageConformance):
    """Every conformance test on ToyFileStorage, one file per namespace."""

    @pytest.fixture
    def storage_factory(self, tmp_path: Path) -> StorageFactory:
        """New, unopened stores, each in a fresh namespace of its own."""
        numbers = itertools.count()

        def factory(clock: Clock | None = None) -> ToyFileStorage:
            return ToyFileStorage(tmp_path, namespace=f"conformance{next(numbers)}", clock=clock)

        return factory

    @pytest.fixture
    def storage_reopener(self) -> StorageReopener:
        """A second, unopened instance on the namespace of a store the factory built."""

        def reopen(store: BaseStorage, clock: Clock | None = None) -> ToyFileStorage:
            if not isinstance(store, ToyFileStorage):  # built by the factory above
                raise TypeError(f"not a store this module's factory built: {store!r}")
            return ToyFileStorage(store.folder, namespace=store.namespace, clock=clock)

        return reopen

    @pytest.fixture
    def unopenable_storage_factory(self, tmp_path: Path) -> StorageFactory:
        """Stores whose namespace file is not a pickle: their open fails."""
        numbers = itertools.count()

        def factory(clock: Clock | None = None) -> ToyFileStorage:
            namespace = f"garbage{next(numbers)}"
            (tmp_path / f"{namespace}.pickle").write_bytes(b"not a pickle")
            return ToyFileStorage(tmp_path, namespace=namespace, clock=clock)

        return factory

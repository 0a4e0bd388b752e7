"""The state-machine layer as a test (``test_stateful_*``)."""

from __future__ import annotations

import pytest

from memory_core_conformance.cases._base import SuiteBase
from memory_core_conformance.harness import StorageFactory
from memory_core_conformance.stateful import run_storage_machine

__all__ = ["StatefulCases"]


class StatefulCases(SuiteBase):
    """Random operation sequences, adapter vs reference store."""

    @pytest.mark.conformance_stateful
    def test_stateful_adapter_matches_reference(self, storage_factory: StorageFactory) -> None:
        run_storage_machine(storage_factory)

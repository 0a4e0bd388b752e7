"""memory-core's shared conformance suite.

Subclass :class:`StorageConformance` in one test module and provide the
``storage_factory`` fixture; the pytest plugin (loaded automatically) only
registers markers and Hypothesis profiles. See ``conformance/README.md``.
"""

from memory_core.capabilities import Capability
from memory_core_conformance import strategies
from memory_core_conformance.compare import assert_same, canonical, json_identical
from memory_core_conformance.harness import (
    T0,
    FollowerClock,
    StorageFactory,
    StorageReopener,
    open_store,
    snapshot,
)
from memory_core_conformance.profiles import PROFILES, active_profile
from memory_core_conformance.stateful import StorageStateMachine, run_storage_machine
from memory_core_conformance.suite import StorageConformance

__all__ = [
    "PROFILES",
    "T0",
    "Capability",
    "FollowerClock",
    "StorageConformance",
    "StorageFactory",
    "StorageReopener",
    "StorageStateMachine",
    "active_profile",
    "assert_same",
    "canonical",
    "json_identical",
    "open_store",
    "run_storage_machine",
    "snapshot",
    "strategies",
]

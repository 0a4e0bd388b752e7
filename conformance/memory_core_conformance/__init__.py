"""memory-core's shared conformance suite.

Subclass :class:`StorageConformance` in one test module and provide the
``storage_factory`` fixture; the pytest plugin (loaded automatically) only
registers markers and Hypothesis profiles. See ``conformance/README.md``.

Where each part lives:

- the rules: :mod:`~memory_core_conformance.rules` (every rule's statement;
  a test's name decides its rule) and the reference store they are checked
  against, ``memory_core.reference``;
- the suite: :mod:`~memory_core_conformance.suite` (``StorageConformance``)
  built from the mixins in :mod:`~memory_core_conformance.cases`, the state
  machine :mod:`~memory_core_conformance.stateful`, inputs
  :mod:`~memory_core_conformance.strategies`, exact answers
  :mod:`~memory_core_conformance.compare`, store life cycle
  :mod:`~memory_core_conformance.harness`, effort
  :mod:`~memory_core_conformance.profiles`, the pytest
  :mod:`~memory_core_conformance.plugin`, and what undeclared capabilities
  cost (:mod:`~memory_core_conformance.undeclared`, with the probes of
  :mod:`~memory_core_conformance.probes`);
- vector stores: :mod:`~memory_core_conformance.vector` (with Memory and an
  embedder), :mod:`~memory_core_conformance.vector_store` (on its own) and
  :mod:`~memory_core_conformance.hybrid` (lexical and hybrid recall on a
  pairing, R-HYBRID);
- framework seams: :mod:`~memory_core_conformance.integrations`;
- index plans: :mod:`~memory_core_conformance.query_shapes` (the queries an
  adapter's EXPLAIN tests render) and :mod:`~memory_core_conformance.plans`
  (a long thread's read plans and the verdict on their query plans);
- cancellation: :mod:`~memory_core_conformance.cancellation` (every write
  cancelled at each await point and at seeded random ones: all or nothing);
- mutation testing: :mod:`~memory_core_conformance.mutation` (Cosmic Ray
  mutants of an adapter, sampled with a seed, run against the suite; not CI);
- two OS processes: :mod:`~memory_core_conformance.processes` (a second
  store in a child process for the races and the state-machine variant);
- a live deployment: ``memory-core check URL``
  (:mod:`~memory_core_conformance.cli`, :mod:`~memory_core_conformance.check`,
  :mod:`~memory_core_conformance.live`, the per-rule table
  :mod:`~memory_core_conformance.report` and
  :mod:`~memory_core_conformance.progress`);
- a worked adapter: :mod:`~memory_core_conformance.examples` (the toy file
  store and its test module).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Loaded on first use (PEP 562), so that importing a light submodule (the
# ``memory-core check`` command's registration, every CLI start) does not pull
# in pytest and Hypothesis.
_HOMES = {
    "Capability": "memory_core.capabilities",
    "strategies": "memory_core_conformance.strategies",
    "assert_same": "memory_core_conformance.compare",
    "canonical": "memory_core_conformance.compare",
    "json_identical": "memory_core_conformance.compare",
    "T0": "memory_core_conformance.harness",
    "FollowerClock": "memory_core_conformance.harness",
    "StorageFactory": "memory_core_conformance.harness",
    "StorageReopener": "memory_core_conformance.harness",
    "open_store": "memory_core_conformance.harness",
    "snapshot": "memory_core_conformance.harness",
    "PROFILES": "memory_core_conformance.profiles",
    "active_profile": "memory_core_conformance.profiles",
    "StorageStateMachine": "memory_core_conformance.stateful",
    "run_storage_machine": "memory_core_conformance.stateful",
    "StorageConformance": "memory_core_conformance.suite",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'memory_core_conformance' has no attribute {name!r}")
    module = importlib.import_module(home)
    value = module if name == "strategies" else getattr(module, name)
    globals()[name] = value
    return value


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

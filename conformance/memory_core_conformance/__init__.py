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

"""``StorageConformance``: the whole shared suite in one base class.

An adapter's test module subclasses it (the subclass name must start with
``Test``) and provides one fixture, ``storage_factory``::

    import pytest
    from memory_core_conformance import StorageConformance
    from memory_core_sqlite import SQLiteStorage

    class TestSQLiteConformance(StorageConformance):
        @pytest.fixture
        def storage_factory(self, tmp_path):
            counter = iter(range(10**9))
            return lambda clock=None: SQLiteStorage(tmp_path / f"s{next(counter)}.db", clock=clock)

The base class itself is never collected (its name does not start with
``Test``). See ``conformance/README.md`` for capabilities, running, reading
failures and overriding a case.
"""

from __future__ import annotations

import pytest

from memory_core_conformance.cases import (
    ActivityRules,
    BugCases,
    CapabilityCases,
    ChunkCases,
    ConcurrencyCases,
    FaultCases,
    FilterRules,
    LineageRules,
    OpeningCases,
    OperationCases,
    OrderingRules,
    PagingRules,
    PropertyCases,
    RecallCases,
    ResourceListingRules,
    RetentionRules,
    StatefulCases,
    TwoProcessCases,
    ValueRules,
)
from memory_core_conformance.profiles import ENV_VAR, PROFILES

__all__ = ["StorageConformance"]


class StorageConformance(  # pytest runs the last base's tests first: cheap layers last here
    TwoProcessCases,
    StatefulCases,
    PropertyCases,
    RecallCases,
    ChunkCases,
    CapabilityCases,
    ConcurrencyCases,
    FaultCases,
    BugCases,
    LineageRules,
    RetentionRules,
    ActivityRules,
    OpeningCases,
    OperationCases,
    FilterRules,
    ResourceListingRules,
    PagingRules,
    OrderingRules,
    ValueRules,
):
    """Every storage conformance test: rules (``test_r_*``), operations
    (``test_ops_*``, ``test_lifecycle_*``), bug cases (``test_cNN_*``), optional
    capabilities (``test_cap_*``), properties (``test_r_*_property``) and the
    state machine (``test_stateful_*``).

    Fixtures to override:
        storage_factory: required. Returns ``factory(clock=None) ->
            BaseStorage``: a new, unopened store in a fresh, empty namespace.
        storage_reopener: only with ``Capability.PERSISTENT`` or
            ``Capability.SHARED_NAMESPACE``. Returns ``reopen(store,
            clock=None) -> BaseStorage`` on the same namespace as ``store``.
        unopenable_storage_factory: optional. Returns ``factory(clock=None)
            -> BaseStorage`` on a target that cannot be opened (its ``open``
            raises); without it the failed-open case is skipped.
        foreign_storage_factory: optional. Returns ``factory(clock=None)
            -> BaseStorage`` on a target that exists but holds no
            memory-core store (another application's file or schema); without
            it the strict-preflight refusal case is skipped.
        storage_address: optional. Returns ``address(store) ->
            StoreAddress``, a picklable recipe for a second instance on
            ``store``'s namespace; runs the two-process cases
            (:mod:`memory_core_conformance.processes`) and the case of a
            process that ends without closing its store.
        options_storage_factory: optional. Returns ``factory(options) ->
            BaseStorage``: a new, unopened store on the usual target built
            with ``options`` as extra keyword options; runs the
            unknown-option case (and builds ``option_effects``' variants).
        option_effects: optional. Returns ``(variants, probe)``: name ->
            (options, settings they must put in effect) and ``await
            probe(store)`` reading the settings in effect from the backend;
            runs the options-that-must-show case.
        resource_counter: optional. Returns ``async () -> int``, the
            server-side resources (connections, clients, open files) this
            process holds on the target; without it the leak case is skipped.
        conformance_profile: optional. A profile name (see
            :mod:`memory_core_conformance.profiles`) this class runs with
            instead of ``MEMORY_CORE_HYPOTHESIS_PROFILE``; default None (the
            environment's). Meant for slow stand-in test servers.
    """

    @pytest.fixture
    def conformance_profile(self) -> str | None:
        """Override to run this adapter with another profile; None keeps the
        environment's choice."""
        return None

    @pytest.fixture(autouse=True)
    def _apply_conformance_profile(self, conformance_profile: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
        if conformance_profile is not None:
            if conformance_profile not in PROFILES:
                raise ValueError(f"conformance_profile {conformance_profile!r} is not one of {sorted(PROFILES)}")
            monkeypatch.setenv(ENV_VAR, conformance_profile)

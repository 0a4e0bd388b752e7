"""The pytest plugin (entry point ``pytest11: memory_core_conformance``).

It loads wherever the package is installed, so it stays inert: it registers
the suite's markers (so ``--strict-markers`` works downstream) and the
Hypothesis profiles ``memory-core-<name>`` (without loading any), and does
nothing else. The suite itself only runs in a module that subclasses
:class:`memory_core_conformance.StorageConformance`.
"""

from __future__ import annotations

import pytest

from memory_core_conformance.profiles import register_hypothesis_profiles

__all__ = ["MARKERS", "pytest_configure"]

MARKERS: dict[str, str] = {
    "conformance": "a test of the memory-core conformance suite",
    "conformance_capability(name)": "the test needs an optional adapter capability (skipped when undeclared)",
    "conformance_property": "a Hypothesis property test of the conformance suite",
    "conformance_stateful": "the conformance state machine (adapter vs reference store)",
}
"""Marker name (with signature) -> description."""


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers and the Hypothesis profiles."""
    for name, description in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")
    register_hypothesis_profiles()

"""What a run skipped because the adapter left capabilities undeclared.

The suite skips the tests of an undeclared capability (the skip reason is
:func:`skip_reason`), and probes the store for it
(:mod:`memory_core_conformance.probes`, the ``test_cap_*_probe_*`` tests
attach a :data:`PROBE_PROPERTY` user property to their report). A
:class:`CapabilityTally` reads a run's reports and words, per test class, each
undeclared capability with the number of tests it skipped, what declaring it
needs and what the probe saw. The pytest plugin prints it at the end of a
run (terminal summary), ``memory-core check`` after its table; an adapter
that declares everything gets no lines.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import cast

import pytest

from memory_core.capabilities import Capability
from memory_core_conformance.probes import ProbeResult

__all__ = ["DECLARING_NEEDS", "PROBE_PROPERTY", "TITLE", "CapabilityTally", "skip_reason"]

TITLE = "memory-core conformance: undeclared capabilities"
"""Heading of the summary."""

PROBE_PROPERTY = "memory_core_capability_probe"
"""Name of the user property a probe test records: ``(capability value,
seems_present, evidence)``."""

DECLARING_NEEDS: dict[Capability, str] = {
    Capability.PERSISTENT: (
        "add Capability.PERSISTENT to the class's capabilities and define the fixture storage_reopener "
        "(a new, unopened instance on a closed store's namespace that reads its data back)"
    ),
    Capability.SHARED_NAMESPACE: (
        "add Capability.SHARED_NAMESPACE to the class's capabilities and define the fixture storage_reopener "
        "(a new, unopened instance on an open store's namespace; both see each other's writes, no lock errors)"
    ),
}
"""What declaring each capability takes (conformance/README.md, "Declaring
optional capabilities")."""

_SKIP = "capability {!r} not declared by the adapter"
_SKIPPED = re.compile(r"capability '([a-z_]+)' not declared by the adapter")


def skip_reason(capability: Capability) -> str:
    """The reason a test of an undeclared ``capability`` is skipped with."""
    return _SKIP.format(capability.value)


@dataclass
class _ClassTally:
    skipped: dict[Capability, set[str]] = field(default_factory=lambda: defaultdict(set))
    probes: dict[Capability, ProbeResult] = field(default_factory=dict)


class CapabilityTally:
    """Counts, per suite test class, the tests each undeclared capability
    skipped, and keeps the probes' findings. Usable as a pytest plugin
    (``pytest.main(args, plugins=[tally])``) or fed reports with :meth:`add`.

    Only reports of suite tests (marker ``conformance``) count.
    """

    def __init__(self) -> None:
        self._classes: dict[str, _ClassTally] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Plugin hook: :meth:`add` each report."""
        self.add(report)

    def add(self, report: pytest.TestReport) -> None:
        """Take one phase's report (setup / call / teardown) of one test."""
        if "conformance" not in report.keywords:
            return
        owner = "::".join(report.nodeid.split("::")[:-1]) or report.nodeid
        for name, value in report.user_properties:
            if name == PROBE_PROPERTY:
                capability, seems_present, evidence = cast(tuple[str, bool | None, str], value)
                result = ProbeResult(Capability(capability), seems_present, evidence)
                self._classes.setdefault(owner, _ClassTally()).probes[result.capability] = result
        longrepr = report.longrepr
        if report.skipped and isinstance(longrepr, tuple) and (found := _SKIPPED.search(str(longrepr[2]))):
            self._classes.setdefault(owner, _ClassTally()).skipped[Capability(found.group(1))].add(report.nodeid)

    def lines(self) -> list[str]:
        """The summary: for each test class with an undeclared capability, one
        line per capability, in :class:`Capability` order; empty when every
        capability was declared (or no suite test ran)."""
        out: list[str] = []
        for owner, tally in self._classes.items():
            undeclared = [c for c in Capability if c in tally.skipped or c in tally.probes]
            if not undeclared:
                continue
            out.append(f"{owner}:")
            out.extend(f"  {_line(c, len(tally.skipped.get(c, ())), tally.probes.get(c))}" for c in undeclared)
        return out


def _line(capability: Capability, skipped: int, probe: ProbeResult | None) -> str:
    tests = f"{skipped} test{'s' if skipped != 1 else ''}"
    head = f"{capability.value}: not declared, {tests} skipped; declaring it needs: {DECLARING_NEEDS[capability]}."
    if probe is None:
        return f"{head} Not probed in this run."
    if probe.seems_present is None:
        return f"{head} Not probed: {probe.evidence}."
    if probe.seems_present:
        return (
            f"{head} Probe: your store seems to have {capability.value} ({probe.evidence}); "
            f"declare it to run {skipped} more test{'s' if skipped != 1 else ''}."
        )
    return f"{head} Probe: no sign of {capability.value} ({probe.evidence})."

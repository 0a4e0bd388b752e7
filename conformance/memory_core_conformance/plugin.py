"""The pytest plugin (entry point ``pytest11: memory_core_conformance``).

It loads wherever the package is installed, so it stays inert: it registers
the suite's markers (so ``--strict-markers`` works downstream) and the
Hypothesis profiles ``memory-core-<name>`` (without loading any), adds the
option ``--memory-core-url`` (the deployment :mod:`memory_core_conformance.live`
checks), names the Hypothesis profile in pytest's header (and stops the run
at once, naming the valid ones, when ``MEMORY_CORE_HYPOTHESIS_PROFILE``
names none), and adds to
the report of a *failing* suite test (marker ``conformance``) a "conformance
rule" section stating the rules it checks. At the end of a run in which suite
tests were skipped for an undeclared capability, or probed one, it adds a
terminal summary section listing them
(:class:`~memory_core_conformance.undeclared.CapabilityTally`). It touches no
other test. The
suite itself only runs in a module that subclasses
:class:`memory_core_conformance.StorageConformance`.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from memory_core_conformance.processes import ENV_VAR as TWO_PROCESS_ENV
from memory_core_conformance.processes import OPTION as TWO_PROCESS_OPTION
from memory_core_conformance.profiles import ENV_VAR, active_profile, register_hypothesis_profiles
from memory_core_conformance.rules import explain
from memory_core_conformance.undeclared import TITLE, CapabilityTally

__all__ = [
    "MARKERS",
    "RULE_SECTION",
    "URL_OPTION",
    "pytest_addoption",
    "pytest_configure",
    "pytest_report_header",
    "pytest_runtest_makereport",
    "pytest_terminal_summary",
]

MARKERS: dict[str, str] = {
    "conformance": "a test of the memory-core conformance suite",
    "conformance_capability(name)": "the test needs an optional adapter capability (skipped when undeclared)",
    "conformance_property": "a Hypothesis property test of the conformance suite",
    "conformance_stateful": "the conformance state machine (adapter vs reference store)",
}
"""Marker name (with signature) -> description."""

RULE_SECTION = "conformance rule"
"""Title of the report section a failing suite test gets."""

URL_OPTION = "--memory-core-url"
"""Command-line option naming the storage URL :mod:`memory_core_conformance.live` checks."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add :data:`URL_OPTION` (default: none; only the live module reads it)
    and the two-process switch (default off; only the two-process cases read it)."""
    group = parser.getgroup("memory-core")
    group.addoption(
        URL_OPTION,
        dest="memory_core_url",
        default=None,
        metavar="URL",
        help="storage URL of a deployment for memory_core_conformance.live (its own namespaces, cleaned up)",
    )
    group.addoption(
        TWO_PROCESS_OPTION,
        dest="memory_core_two_processes",
        action="store_true",
        default=False,
        help=f"run the conformance races and state machine across two OS processes (or set {TWO_PROCESS_ENV}=1)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers and the Hypothesis profiles; check the profile
    the environment names.

    Raises:
        pytest.UsageError: ``MEMORY_CORE_HYPOTHESIS_PROFILE`` names no
            profile (the message lists the valid ones): the run stops before
            collecting, once, instead of failing every property test.
    """
    for name, description in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")
    register_hypothesis_profiles()
    try:
        active_profile()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_report_header(config: pytest.Config) -> str:
    """The header line naming the conformance profile this run uses (a test
    class's ``conformance_profile`` fixture may pick another for itself)."""
    profile = active_profile()
    return f"memory-core conformance: profile {profile.name!r} ({ENV_VAR}): {profile.describe()}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """On a failing suite test, add the statements of the rules it checks
    (and the test's own docstring, if any) as a report section, printed
    under the failure."""
    report = yield
    if report.failed and item.get_closest_marker("conformance") is not None:
        text = explain(item.name)
        doc = getattr(getattr(item, "function", None), "__doc__", None)
        if doc:
            text += f"\nthis test: {' '.join(doc.split())}"
        report.sections.append((RULE_SECTION, text))
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print what undeclared capabilities skipped and what their probes saw
    (nothing when every capability was declared or no suite test ran)."""
    tally = CapabilityTally()
    for reports in terminalreporter.stats.values():
        for report in reports:
            if isinstance(report, pytest.TestReport):
                tally.add(report)
    lines = tally.lines()
    if lines:
        terminalreporter.section(TITLE, sep="-", yellow=True)
        for line in lines:
            terminalreporter.line(line)

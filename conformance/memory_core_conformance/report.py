"""Turn pytest outcomes of the suite into a per-rule conformance table.

Tests are named after what they check, and the name decides the row
(:func:`~memory_core_conformance.rules.rules_of`: ``test_r_page_*`` -> R-PAGE,
``test_c07_*`` -> C07, ``test_ops_*`` -> OPS ...). Use :class:`OutcomeRecorder` as a
pytest plugin (``pytest.main(args, plugins=[recorder])``), then
:func:`summarize` and :func:`render`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from rich.console import Console
from rich.table import Table

from memory_core_conformance.rules import RULES, rules_of

__all__ = [
    "NOT_RUN_DESELECTED",
    "NOT_RUN_OTHER_SUITE",
    "RULE_TITLES",
    "OutcomeRecorder",
    "RuleRow",
    "TestOutcome",
    "add_not_run",
    "render",
    "rules_of",
    "summarize",
    "verdict",
]

RULE_TITLES: dict[str, str] = {rule.id: rule.title for rule in RULES.values()}
"""Row id -> short description (from :data:`~memory_core_conformance.rules.RULES`)."""

NOT_RUN_DESELECTED = "deselected"
"""Note of a rule with tests in the suite that ran, none of them run (``-k``)."""

NOT_RUN_OTHER_SUITE = "not in this suite"
"""Note of a rule with no test in the suite that ran (vector rules, in a
storage check: they run in VectorConformance / VectorStoreConformance)."""

Outcome = Literal["passed", "failed", "skipped"]


@dataclass
class TestOutcome:
    """One test's result.

    Attributes:
        nodeid: pytest node id.
        name: the test function's name with parameters (``test_x[a]``).
        outcome: passed, failed or skipped (a failure in any phase wins).
        detail: skip reason, or the first line of the failure.
        report: a failure's full text (pytest's short traceback, then its
            report sections, such as the conformance rule); empty otherwise.
    """

    __test__ = False  # not a pytest test class

    nodeid: str
    name: str
    outcome: Outcome = "passed"
    detail: str = ""
    report: str = ""


@dataclass
class RuleRow:
    """One row of the report.

    Attributes:
        rule: row id (``R-PAGE``, ``C07``, ``MODEL`` ...).
        title: what it covers.
        passed / failed / skipped: test counts.
        notes: failing test names, skip reasons, or why the rule did not run.
        ran: False for a rule none of whose tests ran (see :func:`add_not_run`).
    """

    rule: str
    title: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    notes: list[str] = field(default_factory=list)
    ran: bool = True

    @property
    def status(self) -> str:
        """``FAIL`` if any test failed, else ``pass``, ``skipped`` if every
        test was skipped, or ``not run``."""
        if not self.ran:
            return "not run"
        if self.failed:
            return "FAIL"
        return "pass" if self.passed else "skipped"


class OutcomeRecorder:
    """A pytest plugin object that records each test's outcome.

    Attributes:
        outcomes: node id -> :class:`TestOutcome`, in run order.
    """

    def __init__(self) -> None:
        self.outcomes: dict[str, TestOutcome] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Record one phase (setup / call / teardown) of one test."""
        name = report.nodeid.rsplit("::", 1)[-1]
        entry = self.outcomes.setdefault(report.nodeid, TestOutcome(report.nodeid, name))
        if report.failed:
            if entry.outcome != "failed":
                entry.detail = _first_line(report.longreprtext) or f"failed in {report.when}"
                sections = "".join(f"\n--- {title} ---\n{text}" for title, text in report.sections)
                entry.report = report.longreprtext + sections
            entry.outcome = "failed"
        elif report.skipped and entry.outcome != "failed":
            entry.outcome = "skipped"
            entry.detail = _skip_reason(report.longrepr)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("E "):
            return line[1:].strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _skip_reason(longrepr: Any) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def summarize(outcomes: Iterable[TestOutcome]) -> list[RuleRow]:
    """Group outcomes into rows, in the order of :data:`RULE_TITLES` (others last)."""
    rows: dict[str, RuleRow] = {}
    for outcome in outcomes:
        for rule in rules_of(outcome.name):
            row = rows.setdefault(rule, RuleRow(rule, RULE_TITLES.get(rule, "")))
            if outcome.outcome == "failed":
                row.failed += 1
                row.notes.append(f"{outcome.name}: {outcome.detail}"[:200])
            elif outcome.outcome == "skipped":
                row.skipped += 1
                if outcome.detail and outcome.detail not in row.notes:
                    row.notes.append(outcome.detail)
            else:
                row.passed += 1
    order = {rule: index for index, rule in enumerate(RULE_TITLES)}
    return sorted(rows.values(), key=lambda r: (order.get(r.rule, len(order)), r.rule))


def add_not_run(rows: list[RuleRow], suite: type | None = None) -> list[RuleRow]:
    """``rows`` plus a ``not run`` row for every rule of :data:`RULE_TITLES`
    that has none, noting why: :data:`NOT_RUN_DESELECTED` when ``suite`` (the
    test class that ran) has tests of it, else :data:`NOT_RUN_OTHER_SUITE`.
    Returned in the order of :func:`summarize`."""
    present = {row.rule for row in rows}
    names = [name for name in dir(suite) if name.startswith("test_")] if suite is not None else []
    in_suite = {rule for name in names for rule in rules_of(name)}
    missing = [
        RuleRow(rule, title, notes=[NOT_RUN_DESELECTED if rule in in_suite else NOT_RUN_OTHER_SUITE], ran=False)
        for rule, title in RULE_TITLES.items()
        if rule not in present
    ]
    order = {rule: index for index, rule in enumerate(RULE_TITLES)}
    return sorted([*rows, *missing], key=lambda r: (order.get(r.rule, len(order)), r.rule))


def verdict(rows: list[RuleRow]) -> str:
    """The one-line verdict (rich markup) on a finished run's rows:
    ``NOT CONFORMANT`` on any failure, else ``CONFORMANT`` on the rules that
    ran, naming how many did not run."""
    failed = sum(r.failed for r in rows)
    if failed:
        return f"[bold red]NOT CONFORMANT[/]: {failed} failing test(s) in {sum(1 for r in rows if r.failed)} rule(s)"
    not_run = sum(1 for r in rows if not r.ran)
    text = "[bold green]CONFORMANT[/]: every test that ran passed"
    return f"{text}; {not_run} rule(s) not run (see the table)" if not_run else text


def render(rows: list[RuleRow], console: Console, *, title: str = "memory-core conformance") -> None:
    """Print the per-rule table (and the one-line :func:`verdict`) with rich."""
    table = Table(title=title, show_lines=False)
    table.add_column("rule", style="bold")
    table.add_column("covers")
    table.add_column("status")
    table.add_column("pass", justify="right")
    table.add_column("fail", justify="right")
    table.add_column("skip", justify="right")
    table.add_column("notes", overflow="fold")
    styles = {"pass": "green", "FAIL": "bold red", "skipped": "yellow", "not run": "dim"}
    for row in rows:
        status = f"[{styles[row.status]}]{row.status}[/]"
        table.add_row(
            row.rule, row.title, status, str(row.passed), str(row.failed), str(row.skipped), "\n".join(row.notes[:3])
        )
    console.print(table)
    console.print(verdict(rows), highlight=False)

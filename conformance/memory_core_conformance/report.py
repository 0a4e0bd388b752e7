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

__all__ = ["RULE_TITLES", "OutcomeRecorder", "RuleRow", "TestOutcome", "render", "rules_of", "summarize"]

RULE_TITLES: dict[str, str] = {rule.id: rule.title for rule in RULES.values()}
"""Row id -> short description (from :data:`~memory_core_conformance.rules.RULES`)."""

Outcome = Literal["passed", "failed", "skipped"]


@dataclass
class TestOutcome:
    """One test's result.

    Attributes:
        nodeid: pytest node id.
        name: the test function's name with parameters (``test_x[a]``).
        outcome: passed, failed or skipped (a failure in any phase wins).
        detail: skip reason, or the first line of the failure.
    """

    __test__ = False  # not a pytest test class

    nodeid: str
    name: str
    outcome: Outcome = "passed"
    detail: str = ""


@dataclass
class RuleRow:
    """One row of the report.

    Attributes:
        rule: row id (``R-PAGE``, ``C07``, ``MODEL`` ...).
        title: what it covers.
        passed / failed / skipped: test counts.
        notes: failing test names, or skip reasons.
    """

    rule: str
    title: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        """``FAIL`` if any test failed, else ``pass``, or ``skipped`` if none ran."""
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


def render(rows: list[RuleRow], console: Console, *, title: str = "memory-core conformance") -> None:
    """Print the per-rule table (and a one-line verdict) with rich."""
    table = Table(title=title, show_lines=False)
    table.add_column("rule", style="bold")
    table.add_column("covers")
    table.add_column("status")
    table.add_column("pass", justify="right")
    table.add_column("fail", justify="right")
    table.add_column("skip", justify="right")
    table.add_column("notes", overflow="fold")
    styles = {"pass": "green", "FAIL": "bold red", "skipped": "yellow"}
    for row in rows:
        status = f"[{styles[row.status]}]{row.status}[/]"
        table.add_row(
            row.rule, row.title, status, str(row.passed), str(row.failed), str(row.skipped), "\n".join(row.notes[:3])
        )
    console.print(table)
    failed = sum(r.failed for r in rows)
    if failed:
        console.print(
            f"[bold red]NOT CONFORMANT[/]: {failed} failing test(s) in {sum(1 for r in rows if r.failed)} rule(s)"
        )
    else:
        console.print("[bold green]CONFORMANT[/]: every test that ran passed")

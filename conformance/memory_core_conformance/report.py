"""Turn pytest outcomes of the suite into a per-rule conformance table.

Tests are named after what they check, and the name decides the row:
``test_r_page_*`` -> R-PAGE (a name may cite several rules, e.g.
``test_r_page_and_r_sort_*``), ``test_c07_*`` -> C07, ``test_ops_*`` -> OPS,
``test_lifecycle_*`` -> LIFECYCLE, ``test_cap_<capability>_*`` -> the
capability, ``test_stateful_*`` -> MODEL. Use :class:`OutcomeRecorder` as a
pytest plugin (``pytest.main(args, plugins=[recorder])``), then
:func:`summarize` and :func:`render`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from rich.console import Console
from rich.table import Table

from memory_core.capabilities import Capability

__all__ = ["RULE_TITLES", "OutcomeRecorder", "RuleRow", "TestOutcome", "render", "rules_of", "summarize"]

RULE_TITLES: dict[str, str] = {
    "R-ID": "ids: exact, 1-256 chars, global message ids",
    "R-TIME": "datetimes: aware UTC, microseconds, 1900-2199",
    "R-JSON": "JSON round-trips with types kept",
    "R-SIZE": "15 MiB messages, never truncated",
    "R-ORDER": "(created_at, insertion sequence) order",
    "R-CLOCK": "assigned times strictly increasing",
    "R-BUMP": "updated_at bumps, strictly later",
    "R-PAGE": "page / per_page bounds, total, has_more",
    "R-CURSOR": "keyset cursors, no gaps or repeats",
    "R-DATE": "date ranges, inclusive / exclusive, to the µs",
    "R-META": "typed metadata equality filters",
    "R-SORT": "order_by fields and directions",
    "R-INCLUDE": "include windows from the message's own thread",
    "R-OWN": "resource ownership and conflicts",
    "R-RECALL": "Memory.recall composition",
    "R-VEC": "vectors kept in step with messages",
    "OPS": "SPEC §3 operations",
    "LIFECYCLE": "open / close / destroy",
    "MODEL": "state machine: adapter == reference store",
    "C01": "equal timestamps in one batch",
    "C02": "user / assistant / tool in one instant",
    "C03": "saved out of order",
    "C04": "threads by updated_at, ties across pages",
    "C05": '"last N" is the newest N',
    "C06": "per_page=False means all",
    "C07": "bad page bounds rejected alike",
    "C08": "big messages never truncated",
    "C09": "many threads",
    "C10": '5 vs "5", true vs 1, null vs missing',
    "C11": "operator objects and odd keys",
    "C12": "many openers and writers",
    "C13": "zones, naive input, exclusive bounds",
    "C14": "updated_at bumps",
    "C15": "deletes reach the vectors",
    "C16": "vector scope",
    "C17": "unicode",
    **{f"CAP:{c.value}": f"optional capability {c.value}" for c in Capability},
}
"""Row id -> short description."""

_RULE_WORDS = "id|time|json|size|order|clock|bump|page|cursor|date|meta|sort|include|own|recall|vec"
_RULE = re.compile(rf"(?:^|_)r_({_RULE_WORDS})(?=_|$)")
_CASE = re.compile(r"^test_c(\d\d)_")
_CAPABILITY_WORDS = "|".join(sorted((c.value for c in Capability), key=len, reverse=True))
_CAPABILITY = re.compile(rf"^test_cap_({_CAPABILITY_WORDS})_")

Outcome = Literal["passed", "failed", "skipped"]


def rules_of(test_name: str) -> list[str]:
    """The report rows a test counts for, from its name (parameters ignored).

    Args:
        test_name: e.g. ``"test_r_page_rejects_bad_bounds[bool-page]"``.

    Returns:
        Row ids such as ``["R-PAGE"]``; ``["OTHER"]`` when the name follows no
        convention.
    """
    name = test_name.split("[", 1)[0]
    if match := _CASE.match(name):
        return [f"C{match.group(1)}"]
    if match := _CAPABILITY.match(name):
        return [f"CAP:{match.group(1)}"]
    if name.startswith("test_ops_"):
        return ["OPS"]
    if name.startswith("test_lifecycle_"):
        return ["LIFECYCLE"]
    if name.startswith("test_stateful_"):
        return ["MODEL"]
    found = list(dict.fromkeys(f"R-{m.upper()}" for m in _RULE.findall(name.removeprefix("test"))))
    return found or ["OTHER"]


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
        table.add_row(row.rule, row.title, status, str(row.passed), str(row.failed), str(row.skipped),
                      "\n".join(row.notes[:3]))
    console.print(table)
    failed = sum(r.failed for r in rows)
    if failed:
        console.print(f"[bold red]NOT CONFORMANT[/]: {failed} failing test(s) in "
                      f"{sum(1 for r in rows if r.failed)} rule(s)")
    else:
        console.print("[bold green]CONFORMANT[/]: every test that ran passed")

"""The suite's own tooling: the per-rule report and ``memory-core check``."""

from __future__ import annotations

import io
import re
import signal
from collections.abc import Sequence
from pathlib import Path

import pytest
from memory_core_conformance.check import LiveStorages, run_check
from memory_core_conformance.report import TestOutcome, rules_of, summarize
from rich.console import Console

from memory_core import InMemoryStorage
from memory_core.query import MessageQuery
from memory_core.registry import register_storage

FAST = ["-k", "test_c07 or test_r_page_per_page"]


def _console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=200, color_system=None), out


class _LimitNoneIsZero(InMemoryStorage):
    """per_page=False answered with nothing (a real adapter bug: LIMIT 0)."""

    async def _list_messages(self, query: MessageQuery) -> list:  # type: ignore[type-arg]
        return [] if query.limit is None else await super()._list_messages(query)


def test_rules_of_reads_the_test_names() -> None:
    assert rules_of("test_r_page_rejects_bad_bounds[bool-page]") == ["R-PAGE"]
    assert rules_of("test_r_page_and_r_sort_match_reference_property") == ["R-PAGE", "R-SORT"]
    assert rules_of("test_c07_bad_page_bounds_rejected_alike") == ["C07"]
    assert rules_of("test_cap_shared_namespace_instances_see_each_others_writes") == ["CAP:shared_namespace"]
    assert rules_of("test_stateful_adapter_matches_reference") == ["MODEL"]
    assert rules_of("test_ops_update_thread_is_partial") == ["OPS"]
    assert rules_of("test_something_else") == ["OTHER"]


def test_summarize_counts_failures_and_skip_reasons() -> None:
    outcomes: Sequence[TestOutcome] = [
        TestOutcome("a", "test_r_page_x", "passed"),
        TestOutcome("b", "test_r_page_y[1]", "failed", "assert 1 == 2"),
        TestOutcome("c", "test_cap_persistent_z", "skipped", "capability 'persistent' not declared"),
        TestOutcome("d", "test_c01_w", "passed"),
    ]
    rows = {row.rule: row for row in summarize(outcomes)}
    assert (rows["R-PAGE"].passed, rows["R-PAGE"].failed, rows["R-PAGE"].status) == (1, 1, "FAIL")
    assert rows["R-PAGE"].notes == ["test_r_page_y[1]: assert 1 == 2"]
    assert rows["CAP:persistent"].status == "skipped"
    assert rows["CAP:persistent"].notes == ["capability 'persistent' not declared"]
    assert rows["C01"].status == "pass"
    assert [row.rule for row in summarize(outcomes)] == ["R-PAGE", "C01", "CAP:persistent"]


def test_live_storages_build_fresh_namespaces_and_reopen() -> None:
    live = LiveStorages("memory://")
    first, second = live.build(), live.build()
    assert first is not second and isinstance(first, InMemoryStorage)
    assert isinstance(live.reopen(first), InMemoryStorage)


def test_check_passes_the_reference_store() -> None:
    console, out = _console()
    code = run_check("memory://", profile="quick", console=console, pytest_args=FAST)
    text = out.getvalue()
    assert code == 0, text
    assert "R-PAGE" in text and "C07" in text and "CONFORMANT" in text and "NOT CONFORMANT" not in text


def test_check_fails_a_broken_deployment_with_a_per_rule_report() -> None:
    register_storage("brokenlimit", _LimitNoneIsZero)
    console, out = _console()
    code = run_check("brokenlimit://", profile="quick", console=console, pytest_args=FAST)
    text = out.getvalue()
    assert code == 1, text
    assert "NOT CONFORMANT" in text and "FAIL" in text and "R-PAGE" in text


def test_check_reports_an_unknown_scheme_on_its_error_console() -> None:
    console, out = _console()
    errors, said = _console()
    assert run_check("nosuchdb://x", console=console, errors=errors) == 2
    assert "nosuchdb" in said.getvalue() and out.getvalue() == ""


_LOST_INTERRUPT = '''
import gc
import signal

fired = []


def pytest_runtest_call(item):
    """In the first test: a Ctrl-C whose KeyboardInterrupt Python drops (it
    is raised while a gc callback runs, as Hypothesis's can be)."""
    if fired:
        return
    fired.append(item.nodeid)

    def callback(phase, info):
        gc.callbacks.remove(callback)
        signal.getsignal(signal.SIGINT)(signal.SIGINT, None)

    gc.callbacks.append(callback)
    gc.collect()
'''


def test_a_ctrl_c_whose_keyboard_interrupt_was_lost_still_stops_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the suite ran all its tests, then printed "interrupted after
    N of N tests" (a Ctrl-C at the wrong moment cost the whole run)."""
    (tmp_path / "lost_interrupt.py").write_text(_LOST_INTERRUPT)
    monkeypatch.syspath_prepend(str(tmp_path))
    console, out = _console()
    errors, said = _console()
    args = ["-p", "lost_interrupt", "-k", "test_r_page"]
    # SIGINT as a terminal's process has it (a test runner's may ignore it: then the check keeps it ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = run_check("memory://", profile="quick", console=console, errors=errors, pytest_args=args)
    finally:
        signal.signal(signal.SIGINT, previous)
    line = said.getvalue().strip().splitlines()[-1]
    assert code == 130, said.getvalue()
    found = re.fullmatch(r"interrupted after (\d+) of (\d+) tests: no verdict", line)
    assert found is not None, line
    done, total = (int(n) for n in found.groups())
    assert done <= 2 < total, line
    assert "CONFORMANT" not in out.getvalue()

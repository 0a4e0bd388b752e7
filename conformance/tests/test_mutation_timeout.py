"""The mutation script reports a mutant whose test run outlasts the time
limit as ``timeout``: neither killed nor survived, and out of the kill rate
(Cosmic Ray itself counts a timeout as a kill)."""

from __future__ import annotations

from pathlib import Path

import pytest
from memory_core_conformance.mutation import MutantResult, outcome_of, run, summary

pytest.importorskip("cosmic_ray")

_TOY = "def step():\n    return 1\n"
_TEST = """from toy import step


def test_three_steps_make_three():
    n = 0
    while n < 3:
        n += step()
    assert n == 3
"""


def _result(outcome: str, kills: int = 0) -> MutantResult:
    return MutantResult("j", "toy.py", 1, "core/NumberReplacer", 0, outcome, kills, 1, "")


def test_a_run_stopped_at_the_limit_is_a_timeout_and_a_failed_run_a_kill() -> None:
    assert outcome_of("killed", "timeout") == "timeout"
    assert outcome_of("killed", "FAILED test_x.py::test_y") == "killed"
    assert outcome_of("survived", "1 passed") == "survived"


def test_timeouts_are_out_of_the_rate_and_counted_apart() -> None:
    outcomes = ("survived", "timeout", "timeout", "incompetent")
    results = [_result("killed", 1), *(_result(outcome) for outcome in outcomes)]
    line = summary(results, 28)
    assert "killed 1/2 (50%)" in line
    assert "timeout 2 (not in the rate)" in line
    assert "incompetent 1" in line


def test_a_mutant_that_hangs_the_tests_is_a_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "toy.py").write_text(_TOY)
    (tmp_path / "test_toy.py").write_text(_TEST)
    monkeypatch.setenv("PYTHONPATH", "")  # run() points it at its scratch copy
    # NumberReplacer makes ``return 1`` return 2 (n overshoots: the assertion
    # fails) and 0 (the loop never ends: the run hits the limit)
    results = run(tmp_path, ["toy.py"], ["test_toy.py"], sample=10, confirm=2, timeout_s=15, operators=["core/Number"])
    by_diff = {("return 2" in r.diff, "return 0" in r.diff): r for r in results}
    assert len(results) == 2
    killed, hung = by_diff[(True, False)], by_diff[(False, True)]
    assert (killed.outcome, killed.kills, killed.runs) == ("killed", 2, 2)
    assert (hung.outcome, hung.kills, hung.runs) == ("timeout", 0, 1)

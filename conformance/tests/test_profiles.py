"""The Hypothesis profiles are visible and checked: conformance/README.md
carries their sizes, pytest's header names the one a run uses, and a
misspelt ``MEMORY_CORE_HYPOTHESIS_PROFILE`` stops the run once, early."""

from __future__ import annotations

from pathlib import Path

import pytest
from memory_core_conformance.profiles import ENV_VAR, PROFILES, profile_table

pytest_plugins = ("pytester",)

README = Path(__file__).resolve().parents[1] / "README.md"
_START = "<!-- profile-table: memory_core_conformance.profiles.profile_table() -->"
_END = "<!-- profile-table: end -->"

_PROPERTY_TESTS = """
import pytest

@pytest.mark.parametrize("n", range(3))
def test_property(n):
    pass
"""


def test_readme_profile_table_matches_the_profiles() -> None:
    text = README.read_text(encoding="utf-8")
    assert _START in text and _END in text, "conformance/README.md lost its profile table"
    in_readme = text.split(_START + "\n", 1)[1].split(_END, 1)[0].strip()
    assert in_readme == profile_table()
    for profile in PROFILES.values():
        assert f"| `{profile.name}` | {profile.property_examples} | {profile.stateful_runs} |" in in_readme


def test_the_header_names_the_profile_in_use(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "ci")
    pytester.makepyfile(_PROPERTY_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:asyncio")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([f"memory-core conformance: profile 'ci' ({ENV_VAR}): 40 examples per property, *"])


def test_a_misspelt_profile_stops_the_run_once_naming_the_valid_ones(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, "cl")
    pytester.makepyfile(_PROPERTY_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:asyncio")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    assert output.count(f"{ENV_VAR}='cl' is not a profile") == 1
    assert "choose one of quick, dev, ci, deep" in output
    assert "passed" not in output  # stopped before collecting: no test ran

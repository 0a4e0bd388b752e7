"""The frameworks' own session tests on our seams
(``python -m memory_core_conformance.integrations.framework_suites``).

The OpenAI Agents SDK's source distribution at the installed version is
downloaded from the package index and its session tests run with
``MemoryCoreSession`` in ``SQLiteSession``'s place: every case passes except
the listed ones that test ``SQLiteSession``'s internals. Skipped, saying why,
when the distribution cannot be downloaded (no index) or pytest-asyncio (the
SDK's test runner) is missing. ADK ships no tests in its distribution: run
the ``google-adk --checkout DIR`` form by hand (conformance/README.md).
"""

from __future__ import annotations

import importlib.util

import pytest
from memory_core_conformance.integrations.framework_suites.__main__ import main


@pytest.mark.timeout(900)
def test_openai_agents_session_suite_passes_on_memory_core_session(capsys: pytest.CaptureFixture[str]) -> None:
    if importlib.util.find_spec("pytest_asyncio") is None:
        pytest.skip("pytest-asyncio (the SDK's test runner) is not installed")
    code = main(["openai-agents"])
    out, err = capsys.readouterr()
    if code == 2:
        pytest.skip(f"the openai-agents source distribution could not be fetched or run: {err.strip()[-500:]}")
    assert code == 0, out
    assert "test_sqlite_session_concurrent_access" in out
    assert "test_session_settings_rejects_unknown_dictionary_fields" in out
    assert " 0 failed of " in out

"""Run an agent framework's own session tests against memory-core's seam.

The framework's maintainers test their sessions with their own suite; here
that suite runs unchanged, with memory-core's seam put in the place of the
framework's reference implementation by a pytest plugin, and the outcome is
printed as a table in which the cases that test the reference's own
internals (its tables, file locks, worker-thread connections) are listed
apart, each with the reason it cannot apply to another implementation.
Nothing of the framework is copied into this repository: the OpenAI Agents
SDK's tests come from its published source distribution at the installed
version (``pip download --no-binary :all: --no-deps``), ADK's from a checkout
of its repository (its source distribution ships no tests).

Usage (``python -m memory_core_conformance.integrations.framework_suites``):

- ``openai-agents [--version V] [--keep DIR]``: downloads
  ``openai-agents==V`` (default: the installed version), runs its
  ``test_session.py`` and ``test_session_limit.py`` (its memory tests) with
  ``agents.SQLiteSession`` replaced by :class:`.openai_agents.SeamSession`
  (a ``MemoryCoreSession`` over a SQLite store at the test's ``db_path``).
- ``google-adk --checkout DIR``: runs the checkout's
  ``unittests/sessions/test_session_service.py`` of a checkout of github.com/google/adk-python at
  the installed version's tag (``git clone --depth 1 --branch vX.Y.Z``), its
  ``DATABASE`` service replaced by ``MemoryCoreSessionService`` over SQLite
  (:mod:`.google_adk`); the other services' cases are deselected.

Both need pytest-asyncio (the frameworks' tests are ``pytest.mark.asyncio``
tests) and exit 0 when every case passed apart from the listed
reference-internal ones, else 1 (2: the suite could not be fetched or run).
"""

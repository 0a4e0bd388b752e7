"""pytest plugin: the OpenAI Agents SDK's session tests on ``MemoryCoreSession``.

Loaded with ``-p memory_core_conformance.integrations.framework_suites.openai_agents``
before the SDK's test modules are imported, it replaces ``agents.SQLiteSession``
(which those modules import by name) with :class:`SeamSession`: the same
constructor, building a ``MemoryCoreSession`` over a memory-core SQLite store
at the test's ``db_path``. :data:`REFERENCE_INTERNAL` lists the cases that
test ``SQLiteSession``'s own internals, with the reason each cannot apply.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path, PurePosixPath
from typing import Any

import agents
from agents.memory import SessionSettings

from memory_core.integrations.openai_agents import MemoryCoreSession
from memory_core.memory import Memory
from memory_core.registry import build_storage

__all__ = ["REFERENCE_INTERNAL", "SUITE_FILES", "SeamSession"]

SUITE_FILES = tuple(
    PurePosixPath("tests", "memory", name).as_posix() for name in ("test_session.py", "test_session_limit.py")
)
"""The SDK's session test files (paths inside its source distribution)."""

_TABLES = "reads or writes SQLiteSession's own tables (agent_sessions/agent_messages) with sqlite3"
_CONNECTIONS = "inspects SQLiteSession's per-thread sqlite3 connections (_connections, _local)"
REFERENCE_INTERNAL: dict[str, str] = {
    "test_await_mutation_cancellation_hides_later_failure_without_loop_error": (
        "tests the private helper agents.memory.sqlite_session._await_mutation, not a session"
    ),
    "test_sqlite_session_close_closes_worker_thread_connections": _CONNECTIONS,
    "test_sqlite_session_reaps_connections_from_exited_worker_threads": _CONNECTIONS,
    "test_sqlite_session_closes_retired_connections_before_the_next_allocation": _CONNECTIONS,
    "test_sqlite_session_keeps_connections_of_live_worker_threads": _CONNECTIONS,
    "test_sqlite_session_pop_item_skips_corrupt_most_recent": _TABLES + " (plants a corrupt JSON row)",
    "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows": _TABLES + " (corrupt rows)",
    "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows": _TABLES + " (corrupt rows)",
    "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows": _TABLES + " (corrupt rows)",
    "test_sqlite_session_file_lock_is_shared_across_instances": (
        "inspects SQLiteSession's class-level file locks (_lock, _file_lock_counts)"
    ),
    "test_sqlite_session_failed_add_items_releases_write_lock": (
        _TABLES + "; its failing item (an object() in content) is refused by memory-core's validation "
        "(R-JSON) before any write, a ValidationError, not the TypeError json.dumps raises mid-transaction"
    ),
    "test_sqlite_session_closed_rejects_empty_add_items": (
        "matches SQLiteSession's own message ('SQLiteSession is closed'); the seam raises AdapterClosedError "
        "(a RuntimeError) saying the storage is closed"
    ),
    "test_sqlite_session_failed_clear_session_rolls_back": "patches SQLiteSession's private methods to fail",
    "test_sqlite_session_failed_pop_item_releases_write_lock": "patches SQLiteSession's private methods to fail",
    "test_sqlite_session_rollback_failure_evicts_connection": _CONNECTIONS + " and patches rollback",
    "test_sqlite_session_close_retries_quarantined_connection": _CONNECTIONS + " (quarantined connections)",
    "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome": (
        "patches SQLiteSession's private commit step to cancel after it"
    ),
}
"""SDK test function -> why it tests ``SQLiteSession`` itself (a failure of
one of these says nothing about the seam)."""

_OWNER = "sdk-tests"


class SeamSession(MemoryCoreSession):
    """``MemoryCoreSession`` with ``SQLiteSession``'s constructor and ``close``.

    Args:
        session_id: the thread id.
        db_path: the SQLite file (``":memory:"``, the default: an in-memory
            database private to this session, as the SDK's).
        sessions_table: ignored (memory-core's schema is its own).
        messages_table: ignored.
        session_settings: as ``MemoryCoreSession`` (a dict is normalised).
    """

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        path = os.fspath(db_path)
        url = "sqlite://:memory:" if path == ":memory:" else "sqlite:///" + os.path.abspath(path)
        self._storage = build_storage(url)
        super().__init__(session_id, Memory(self._storage), resource_id=_OWNER, session_settings=session_settings)

    def close(self) -> None:
        """Close the store (synchronously, as ``SQLiteSession.close``; from a
        thread of its own, since the caller's loop may be running)."""
        worker = threading.Thread(target=asyncio.run, args=(self._storage.close(),), daemon=True)
        worker.start()
        worker.join(30)


def pytest_configure() -> None:
    """Put the seam where the SDK's tests look for ``SQLiteSession``."""
    agents.SQLiteSession = SeamSession  # type: ignore[misc, assignment]

"""Opening a file another connection holds locked: the open retry loop.

A new store switches its file to WAL (``PRAGMA journal_mode = WAL``), which
needs SQLite's exclusive lock. While another connection holds the file's
write lock (``BEGIN IMMEDIATE``, rollback journal), SQLite answers that
pragma ``SQLITE_BUSY`` at once, without its busy handler (waiting could
deadlock), so only :func:`memory_core_sqlite._schema.prepare`'s own retry
loop (backoff up to the store's ``timeout``) gets the store open. These
tests count the loop's backoff sleeps through a spy: without the loop the
first test fails (the open raises), and the second sees no retry.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from memory_core import Thread
from memory_core.errors import BackendError

from memory_core_sqlite import SQLiteStorage, _schema

pytestmark = pytest.mark.anyio

SHORT_TIMEOUT = 0.2
"""Store timeout (seconds) of the test that never releases the lock: the
retry budget it spends before giving up."""


@pytest.fixture
def blocker(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """A connection holding the write lock of ``tmp_path / "busy.db"`` (a new
    rollback-journal file) in ``BEGIN IMMEDIATE``; rolled back and closed at
    the end. It may be used from another thread (the store's worker)."""
    connection = sqlite3.connect(tmp_path / "busy.db", isolation_level=None, check_same_thread=False)
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
    finally:
        if connection.in_transaction:
            connection.rollback()
        connection.close()


def _spy_on_backoff(monkeypatch: pytest.MonkeyPatch, on_retry: Callable[[], None]) -> list[float]:
    """Replace the retry loop's ``time.sleep`` by a spy that runs ``on_retry``
    before sleeping (only ``_schema``'s view of ``time`` changes).

    Returns:
        The delays the loop slept, in order (one per retry).
    """
    delays: list[float] = []

    def sleep(delay: float) -> None:
        delays.append(delay)
        on_retry()
        time.sleep(delay)

    monkeypatch.setattr(_schema, "time", SimpleNamespace(monotonic=time.monotonic, sleep=sleep))
    return delays


async def test_open_retries_while_the_file_is_locked_and_succeeds_once_released(
    tmp_path: Path, blocker: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    delays = _spy_on_backoff(monkeypatch, lambda: blocker.rollback() if blocker.in_transaction else None)
    store = SQLiteStorage(tmp_path / "busy.db")
    try:
        await store.open()  # the first attempt meets the lock; the spy releases it on the first retry
        assert delays, "the open never went through the busy retry loop"
        assert store.journal_mode == "wal"
        await store.save_thread(Thread("t1", "r1"))
        found = await store.get_thread("t1")
        assert found is not None and found.resource_id == "r1"
    finally:
        await store.destroy()


async def test_open_gives_up_after_its_timeout_with_a_retryable_backend_error(
    tmp_path: Path, blocker: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    delays = _spy_on_backoff(monkeypatch, lambda: None)
    store = SQLiteStorage(tmp_path / "busy.db", timeout=SHORT_TIMEOUT)
    with pytest.raises(BackendError) as raised:
        await store.open()
    assert (raised.value.backend, raised.value.operation, raised.value.retryable) == ("sqlite", "open", True)
    assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
    assert len(delays) > 1, "the open gave up without retrying"
    assert store._db is None, "a failed open left its connection behind"

    blocker.rollback()
    await store.open()  # nothing half-open: the same store opens once the lock is gone
    try:
        await store.save_thread(Thread("t1", "r1"))
        async with SQLiteStorage(tmp_path / "busy.db") as other:
            assert await other.get_thread("t1") is not None
    finally:
        await store.destroy()

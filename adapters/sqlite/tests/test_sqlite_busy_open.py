"""Opening a file another connection holds locked: the open retry loop.

A new store switches its file to WAL (``PRAGMA journal_mode = WAL``), which
needs SQLite's exclusive lock. While another connection (of this process or
of a second one) holds the file's write lock (``BEGIN IMMEDIATE``, rollback
journal), SQLite answers that
pragma ``SQLITE_BUSY`` at once, without its busy handler (waiting could
deadlock), so only :func:`memory_core_sqlite._schema.prepare`'s own retry
loop (backoff up to the store's ``timeout``) gets the store open. These
tests count the loop's backoff sleeps through a spy: without the loop the
first test fails (the open raises), and the second sees no retry.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
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


class _Holder:
    """Holds the write lock of a new rollback-journal file (``BEGIN
    IMMEDIATE``) until :meth:`release`, from a connection of this process or
    from a second process. ``release`` may be called from any thread (the
    store's worker) and more than once; it returns once the lock is gone."""

    _SCRIPT = (
        "import sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE')\n"
        "print('locked', flush=True)\n"
        "sys.stdin.readline()\n"
        "c.rollback()\n"
    )

    def __init__(self, path: Path, kind: str) -> None:
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._process: subprocess.Popen[str] | None = None
        if kind == "connection":
            self._connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._connection.execute("BEGIN IMMEDIATE")
        else:
            command = [sys.executable, "-c", self._SCRIPT, str(path)]
            self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            assert self._process.stdout is not None and self._process.stdout.readline() == "locked\n"

    def release(self) -> None:
        with self._lock:
            if self._connection is not None:
                if self._connection.in_transaction:
                    self._connection.rollback()
                self._connection.close()
                self._connection = None
            if self._process is not None:
                self._process.communicate("release\n", timeout=60)
                self._process = None


@pytest.fixture(params=["connection", "process"])
def holder(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[_Holder]:
    """The write lock of ``tmp_path / "busy.db"``, held by another connection
    of this process or by a second process; released at the end."""
    held = _Holder(tmp_path / "busy.db", request.param)
    try:
        yield held
    finally:
        held.release()


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
    tmp_path: Path, holder: _Holder, monkeypatch: pytest.MonkeyPatch
) -> None:
    delays = _spy_on_backoff(monkeypatch, holder.release)
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
    tmp_path: Path, holder: _Holder, monkeypatch: pytest.MonkeyPatch
) -> None:
    delays = _spy_on_backoff(monkeypatch, lambda: None)
    store = SQLiteStorage(tmp_path / "busy.db", timeout=SHORT_TIMEOUT)
    with pytest.raises(BackendError) as raised:
        await store.open()
    assert (raised.value.backend, raised.value.operation, raised.value.retryable) == ("sqlite", "open", True)
    assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
    assert len(delays) > 1, "the open gave up without retrying"
    assert store._db is None, "a failed open left its connection behind"

    holder.release()
    await store.open()  # nothing half-open: the same store opens once the lock is gone
    try:
        await store.save_thread(Thread("t1", "r1"))
        async with SQLiteStorage(tmp_path / "busy.db") as other:
            assert await other.get_thread("t1") is not None
    finally:
        await store.destroy()

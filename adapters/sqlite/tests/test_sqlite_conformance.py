"""The shared memory-core conformance suite, run against SQLiteStorage.

Each store is its own database file (a namespace beside ``conformance.db``
in the test's temporary folder); the suite opens and destroys it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from memory_core.clock import Clock
from memory_core.storage import BaseStorage
from memory_core_conformance import StorageConformance
from memory_core_conformance.cases.faults import ResourceCounter
from memory_core_conformance.cases.opening import OptionEffects
from memory_core_conformance.processes import StoreAddress

from memory_core_sqlite import SQLiteStorage
from memory_core_sqlite._schema import MIGRATIONS, SCHEMA_VERSION

_SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
"""``PRAGMA synchronous`` values by name."""


async def _settings_in_effect(store: BaseStorage) -> dict[str, Any]:
    """The journal mode, ``synchronous`` and busy timeout (ms) of the store's
    own connection, read with ``PRAGMA``s on its worker thread."""
    if not isinstance(store, SQLiteStorage):
        raise TypeError(f"not a store this module's factory built: {store!r}")

    def read(conn: sqlite3.Connection) -> dict[str, Any]:
        (journal_mode,) = conn.execute("PRAGMA journal_mode").fetchone()
        (synchronous,) = conn.execute("PRAGMA synchronous").fetchone()
        (busy_ms,) = conn.execute("PRAGMA busy_timeout").fetchone()
        return {"journal_mode": journal_mode, "synchronous": _SYNCHRONOUS[synchronous], "busy_timeout_ms": busy_ms}

    return await store._run(read)


class TestSQLiteConformance(StorageConformance):
    """Every conformance test, on SQLite files."""

    @pytest.fixture
    def storage_factory(self, tmp_path: Path) -> Callable[..., BaseStorage]:
        """A new, unopened store in a fresh namespace (file) per call."""
        numbers = count()

        def factory(clock: Clock | None = None) -> BaseStorage:
            return SQLiteStorage(tmp_path / "conformance.db", namespace=f"s{next(numbers)}", clock=clock)

        return factory

    @pytest.fixture
    def storage_reopener(self) -> Callable[..., BaseStorage]:
        """A new, unopened store on the same file as ``store``."""

        def reopen(store: BaseStorage, clock: Clock | None = None) -> BaseStorage:
            assert isinstance(store, SQLiteStorage)
            return SQLiteStorage(store.path, clock=clock)

        return reopen

    @pytest.fixture
    def storage_address(self) -> Callable[[BaseStorage], StoreAddress]:
        """Where a child process opens a second store on the same file as ``store``."""

        def address(store: BaseStorage) -> StoreAddress:
            if not isinstance(store, SQLiteStorage):
                raise TypeError(f"not a store this module's factory built: {store!r}")
            return StoreAddress(SQLiteStorage, (store.path,))

        return address

    @pytest.fixture
    def options_storage_factory(self, tmp_path: Path) -> Callable[[dict[str, Any]], BaseStorage]:
        """A new, unopened store from the file's URL with extra keyword options."""
        numbers = count()

        def factory(options: dict[str, Any]) -> BaseStorage:
            return SQLiteStorage.from_url(f"sqlite:///{tmp_path}/options.db", namespace=f"o{next(numbers)}", **options)

        return factory

    @pytest.fixture
    def option_effects(self) -> OptionEffects:
        """Defaults (WAL, ``synchronous`` NORMAL, 30 s), FULL with a short
        timeout, and the URL's spellings (lower case, seconds as text)."""
        variants: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
            "defaults": ({}, {"journal_mode": "wal", "synchronous": "NORMAL", "busy_timeout_ms": 30_000}),
            "full": (
                {"synchronous": "FULL", "timeout": 5},
                {"journal_mode": "wal", "synchronous": "FULL", "busy_timeout_ms": 5_000},
            ),
            "url-spelling": (
                {"synchronous": "normal", "timeout": "2.5"},
                {"journal_mode": "wal", "synchronous": "NORMAL", "busy_timeout_ms": 2_500},
            ),
        }
        return variants, _settings_in_effect

    @pytest.fixture
    def unopenable_storage_factory(self, tmp_path: Path) -> Callable[..., BaseStorage]:
        """Stores on files that are not SQLite databases: their open fails."""
        numbers = count()

        def factory(clock: Clock | None = None) -> BaseStorage:
            path = tmp_path / f"not-a-database{next(numbers)}.db"
            path.write_bytes(b"this is not an SQLite database file, " * 100)
            return SQLiteStorage(path, clock=clock)

        return factory

    @pytest.fixture
    def release_storage_factory(self, tmp_path: Path) -> Callable[[int], BaseStorage]:
        """Stores on files another release's schema left: step -1 every
        migration but the last, +1 a version past :data:`SCHEMA_VERSION`."""
        numbers = count()

        def factory(step: int) -> BaseStorage:
            path = tmp_path / f"release{step:+d}-{next(numbers)}.db"
            applied = MIGRATIONS[:-1] if step < 0 else MIGRATIONS
            with contextlib.closing(sqlite3.connect(path)) as conn, conn:
                conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY NOT NULL, applied_at INTEGER)")
                for number, statements in applied:
                    for statement in statements:
                        conn.execute(statement)
                    conn.execute("INSERT INTO schema_version VALUES (?, 0)", (number,))
                if step > 0:
                    conn.execute("INSERT INTO schema_version VALUES (?, 0)", (SCHEMA_VERSION + step,))
            return SQLiteStorage(path)

        return factory

    @pytest.fixture
    def foreign_storage_factory(self, tmp_path: Path) -> Callable[..., BaseStorage]:
        """Stores on another program's SQLite database (a table of its own,
        no ``schema_version``)."""
        numbers = count()

        def factory(clock: Clock | None = None) -> BaseStorage:
            path = tmp_path / f"another-program{next(numbers)}.db"
            with contextlib.closing(sqlite3.connect(path)) as conn, conn:
                conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
            return SQLiteStorage(path, clock=clock)

        return factory

    @pytest.fixture
    def resource_counter(self, tmp_path: Path) -> ResourceCounter:
        """This process's open files in the test's folder (the databases,
        their WAL and shared-memory files), read from ``/proc/self/fd``."""
        if not Path("/proc/self/fd").is_dir():
            pytest.skip("no /proc/self/fd to count open files with")

        async def count() -> int:
            opened = 0
            for fd in os.listdir("/proc/self/fd"):
                try:
                    opened += os.readlink(f"/proc/self/fd/{fd}").startswith(str(tmp_path))
                except OSError:  # closed since the listing
                    continue
            return opened

        return count

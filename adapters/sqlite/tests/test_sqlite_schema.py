"""Schema creation, versioning and connection settings."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from memory_core import BackendError

from memory_core_sqlite import SQLiteStorage
from memory_core_sqlite._schema import MIGRATIONS, SCHEMA_VERSION

PRAGMAS = ("journal_mode", "foreign_keys", "synchronous", "busy_timeout")


def _pragma(conn: sqlite3.Connection, name: str) -> object:
    return conn.execute(f"PRAGMA {name}").fetchone()[0]


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as db:
        return db.execute(sql).fetchall()


@pytest.mark.anyio
async def test_open_twice_applies_each_migration_once(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    for _ in range(3):
        store = SQLiteStorage(path)
        await store.open()
        await store.open()  # idempotent on one instance too
        await store.save_thread({"id": f"t{_}", "resource_id": "r1"})
        await store.close()
    versions = _rows(path, "SELECT version FROM schema_version ORDER BY version")
    assert versions == [(number,) for number, _ in MIGRATIONS]
    assert versions[-1] == (SCHEMA_VERSION,)
    tables = {row[0] for row in _rows(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"threads", "messages", "resources", "counters", "schema_version"} <= tables
    assert _rows(path, "SELECT COUNT(*) FROM threads") == [(3,)]


@pytest.mark.anyio
async def test_expected_indexes_exist(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "m.db")
    await store.open()
    await store.close()
    query = "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
    found = {row[0]: row[1] for row in _rows(tmp_path / "m.db", query)}
    assert "(thread_id, created_at, seq, resource_id)" in found["messages_thread_order"]
    assert "(resource_id, created_at, seq)" in found["messages_resource_order"]
    assert "(resource_id, created_at, id)" in found["threads_resource_created"]
    assert "(resource_id, updated_at, id)" in found["threads_resource_updated"]
    assert "(created_at, id)" in found["threads_created"]
    assert "(updated_at, id)" in found["threads_updated"]


@pytest.mark.anyio
async def test_connection_pragmas(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "m.db", timeout=4)
    await store.open()
    try:
        values = {name: await store._run(_pragma, name) for name in PRAGMAS}
        assert values == {"journal_mode": "wal", "foreign_keys": 1, "synchronous": 1, "busy_timeout": 4000}
    finally:
        await store.close()
    full = SQLiteStorage(tmp_path / "m.db", synchronous="FULL")
    await full.open()
    try:
        assert await full._run(_pragma, "synchronous") == 2
    finally:
        await full.close()
    memory = SQLiteStorage()
    await memory.open()
    try:
        assert {name: await memory._run(_pragma, name) for name in ("journal_mode", "foreign_keys")} == {
            "journal_mode": "memory",
            "foreign_keys": 1,
        }
    finally:
        await memory.close()


@pytest.mark.anyio
async def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SQLiteStorage(path)
    await store.open()
    await store.close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, 0)", (SCHEMA_VERSION + 1,))
    newer = SQLiteStorage(path)
    with pytest.raises(BackendError, match="newer"):
        await newer.open()
    await newer.close()


@pytest.mark.anyio
async def test_missing_migration_is_applied_to_an_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import memory_core_sqlite._schema as schema

    path = tmp_path / "m.db"
    store = SQLiteStorage(path)
    await store.open()
    await store.close()
    extra = (SCHEMA_VERSION + 1, ("CREATE TABLE extra_probe (x INTEGER)",))
    monkeypatch.setattr(schema, "MIGRATIONS", (*MIGRATIONS, extra))
    monkeypatch.setattr(schema, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    for _ in range(2):
        upgraded = SQLiteStorage(path)
        await upgraded.open()
        await upgraded.close()
    assert _rows(path, "SELECT version FROM schema_version ORDER BY version")[-2:] == [
        (SCHEMA_VERSION,),
        (SCHEMA_VERSION + 1,),
    ]
    assert _rows(path, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'extra_probe'") == [(1,)]


def _old_store(path: Path) -> None:
    """A schema-1 file (before the message counters) holding two resources:
    r1 with threads a (3 messages), b (1) and empty c; r2 with thread d (2)."""
    (number, statements) = MIGRATIONS[0]
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY NOT NULL, applied_at INTEGER NOT NULL)")
        for statement in statements:
            db.execute(statement)
        db.execute("INSERT INTO schema_version VALUES (?, 0)", (number,))
        owners = {"a": "r1", "b": "r1", "c": "r1", "d": "r2"}
        db.executemany("INSERT INTO threads VALUES (?, ?, '', '{}', 0, 0)", owners.items())
        held = ["a", "a", "a", "b", "d", "d"]
        db.executemany(
            "INSERT INTO messages VALUES (?, ?, ?, ?, 'user', 'text', '\"hi\"', '{}', ?)",
            [(f"m{i}", i + 1, tid, owners[tid], 1_000_000 * i) for i, tid in enumerate(held)],
        )
        db.execute("UPDATE counters SET value = ? WHERE name = 'message_sequence'", (len(held),))


_OPEN_AND_CLOSE = (
    "import asyncio, sys\n"
    "from memory_core_sqlite import SQLiteStorage\n"
    "async def main():\n"
    "    store = SQLiteStorage(sys.argv[1])\n"
    "    await store.open()\n"
    "    await store.close()\n"
    "asyncio.run(main())\n"
)


@pytest.mark.anyio
async def test_the_counter_migration_backfills_an_old_store_once_under_racing_openers(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_store(path)
    # Three processes and this one open the old file at once: one migrates.
    openers = [await asyncio.create_subprocess_exec(sys.executable, "-c", _OPEN_AND_CLOSE, str(path)) for _ in range(3)]
    store = SQLiteStorage(path)
    await store.open()
    try:
        assert [await opener.wait() for opener in openers] == [0, 0, 0]
        assert _rows(path, "SELECT version FROM schema_version ORDER BY version") == [(1,), (2,)]
        totals = {tid: (await store.list_messages(tid, per_page=0)).total for tid in "abcd"}
        assert totals == {"a": 3, "b": 1, "c": 0, "d": 2}
        assert (await store.list_messages_by_resource("r1", per_page=0)).total == 4
        assert (await store.list_messages_by_resource("r2", per_page=0)).total == 2
        assert (await store.list_messages(["a", "b"], resource_id="r1", per_page=0)).total == 4
        # The writes keep the backfilled counters.
        await store.save_messages([{"id": "new", "thread_id": "c", "role": "user", "content": "x"}])
        await store.update_messages([{"id": "m0", "thread_id": "c"}])
        await store.delete_messages(["m4"])
        totals = {tid: (await store.list_messages(tid, per_page=0)).total for tid in "abcd"}
        assert totals == {"a": 2, "b": 1, "c": 2, "d": 1}
        assert _rows(path, "SELECT * FROM resource_message_counts ORDER BY 1") == [("r1", 5), ("r2", 1)]
    finally:
        await store.close()


@pytest.mark.anyio
async def test_a_resource_counter_leaves_no_trace(tmp_path: Path) -> None:
    """A resource's counter row lives only while it holds a message: erasure,
    deleting its threads or its last messages all remove it."""
    store = SQLiteStorage(tmp_path / "c.db")
    await store.open()
    try:
        for rid in ("r1", "r2", "r3"):
            await store.save_thread({"id": f"t-{rid}", "resource_id": rid})
            await store.save_messages([{"id": f"m-{rid}", "thread_id": f"t-{rid}", "role": "user", "content": "x"}])
        assert _rows(tmp_path / "c.db", "SELECT * FROM resource_message_counts ORDER BY 1") == [
            ("r1", 1),
            ("r2", 1),
            ("r3", 1),
        ]
        await store.delete_resource("r1")
        await store.delete_thread("t-r2")
        await store.delete_messages(["m-r3"])
        assert _rows(tmp_path / "c.db", "SELECT * FROM resource_message_counts") == []
        assert _rows(tmp_path / "c.db", "SELECT id, message_count FROM threads") == [("t-r3", 0)]
    finally:
        await store.close()

"""C12: many openers, writers and readers on one new SQLite file."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from memory_core import Message, Thread

from memory_core_sqlite import SQLiteStorage
from memory_core_sqlite._schema import MIGRATIONS

WRITERS = 8
READERS = 8
MESSAGES = 20
FILES = 20


async def _one_file(path: Path) -> int:
    """Run C12 once on a new file; returns how many reads the readers made."""
    writers = [SQLiteStorage(path) for _ in range(WRITERS)]
    readers = [SQLiteStorage(path) for _ in range(READERS)]
    done = asyncio.Event()
    reads = 0

    async def write(index: int, store: SQLiteStorage) -> None:
        await store.open()
        thread_id = f"t{index + 1}"
        await store.save_thread(Thread(thread_id, "r1"))
        for n in range(MESSAGES):
            await store.save_messages([Message(f"{thread_id}-m{n:02d}", thread_id, "user", f"message {n}")])

    async def read(index: int, store: SQLiteStorage) -> None:
        nonlocal reads
        await store.open()
        thread_id = f"t{index + 1}"
        while not done.is_set():
            page = await store.list_messages(thread_id, "r1", per_page=5, order_by={"direction": "DESC"})
            assert page.counted_total <= MESSAGES
            reads += 1
            await asyncio.sleep(0)

    async def all_writers() -> None:
        try:
            await asyncio.gather(*(write(i, s) for i, s in enumerate(writers)))
        finally:
            done.set()

    try:
        await asyncio.gather(all_writers(), *(read(i, s) for i, s in enumerate(readers)))
    finally:
        for store in writers + readers:
            await store.close()

    check = SQLiteStorage(path)
    await check.open()
    try:
        threads = await check.list_threads({"resource_id": "r1"}, per_page=False, order_by={"direction": "ASC"})
        assert sorted(t.id for t in threads.items) == sorted(f"t{i + 1}" for i in range(WRITERS))
        for thread in threads.items:
            page = await check.list_messages(thread.id, "r1", per_page=False)
            assert [m.id for m in page.items] == [f"{thread.id}-m{n:02d}" for n in range(MESSAGES)]
    finally:
        await check.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT version FROM schema_version ORDER BY version").fetchall() == [
            (number,) for number, _ in MIGRATIONS
        ]
        assert db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'messages'").fetchone() == (1,)
    return reads


@pytest.mark.anyio
async def test_c12_many_openers_writers_and_readers_on_new_files(tmp_path: Path) -> None:
    total_reads = 0
    for index in range(FILES):
        total_reads += await _one_file(tmp_path / f"c12-{index}.db")
    assert total_reads >= FILES * READERS  # every reader read at least once per file

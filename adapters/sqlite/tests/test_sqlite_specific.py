"""Behaviour that exists only in the SQLite adapter: files, durability,
locking, transactions, sequences and large values."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from memory_core import BackendError, Message, Thread
from memory_core.capabilities import Capability, declared_capabilities
from memory_core.errors import NotFoundError

from memory_core_sqlite import SQLiteStorage

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.anyio
async def test_destroy_removes_the_files_and_only_them(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("x")
    store = SQLiteStorage(tmp_path / "m.db", namespace="ns1")
    other = SQLiteStorage(tmp_path / "m.db", namespace="ns2")
    await store.open()
    await other.open()
    await store.save_thread(Thread("t1", "r1"))
    await other.save_thread(Thread("t1", "r1"))
    assert (tmp_path / "m-ns1.db").exists() and (tmp_path / "m-ns1.db-wal").exists()
    await store.destroy()
    assert [name for name in _names(tmp_path) if "ns1" in name] == []
    assert (tmp_path / "keep.txt").exists()
    assert await other.get_thread("t1") is not None
    await other.destroy()
    assert _names(tmp_path) == ["keep.txt"]


@pytest.mark.anyio
async def test_data_survives_close_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "durable.db"
    store = SQLiteStorage(path)
    await store.open()
    await store.save_thread(Thread("t1", "r1", "title", {"k": [1, 2.0, None]}, T0, T0))
    saved = await store.save_messages([Message(f"m{n}", "t1", "user", f"text {n}", created_at=T0) for n in range(5)])
    await store.update_resource("r1", working_memory="# notes", metadata={"a": 1})
    await store.close()
    assert not (tmp_path / "durable.db-wal").exists()  # checkpointed on the last close

    again = SQLiteStorage(f"{path}")
    await again.open()
    try:
        thread = await again.get_thread("t1")
        assert thread is not None and thread.metadata == {"k": [1, 2.0, None]}
        assert thread.updated_at is not None and thread.updated_at > T0  # bumped by the save
        page = await again.list_messages("t1", per_page=False)
        assert page.items == saved
        assert [m.sequence for m in page.items] == [1, 2, 3, 4, 5]
        resource = await again.get_resource("r1")
        assert resource is not None and (resource.working_memory, resource.metadata) == ("# notes", {"a": 1})
        more = await again.save_messages([Message("m5", "t1", "user", "later", created_at=T0)])
        assert more[0].sequence == 6  # save_messages returns the stored sequence
        assert (await again.get_messages(["m5"]))[0].sequence == 6  # the counter persisted
    finally:
        await again.destroy()


@pytest.mark.anyio
async def test_sequence_is_never_reused_and_kept_on_upsert_and_move(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "seq.db")
    await store.open()
    try:
        await store.save_thread(Thread("t1", "r1"))
        await store.save_thread(Thread("t2", "r1"))
        await store.save_messages([Message(i, "t1", "user", i, created_at=T0) for i in ("a", "b", "c")])
        await store.delete_messages(["c"])
        await store.save_messages([Message("d", "t1", "user", "d", created_at=T0)])
        await store.save_messages([Message("a", "t2", "assistant", "moved", created_at=T0)])
        found = {m.id: m for m in await store.get_messages(["a", "b", "d"])}
        assert {k: m.sequence for k, m in found.items()} == {"a": 1, "b": 2, "d": 4}
        assert found["a"].thread_id == "t2" and found["a"].content == "moved"
    finally:
        await store.destroy()


@pytest.mark.anyio
async def test_a_failing_batch_writes_nothing(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "atomic.db")
    await store.open()
    try:
        await store.save_thread(Thread("t1", "r1", created_at=T0, updated_at=T0))
        good = Message("ok", "t1", "user", "fine", "r1", created_at=T0)
        orphan = Message("orphan", "no-such-thread", "user", "x", "r1", created_at=T0)
        with pytest.raises(NotFoundError):  # checked inside the write's transaction
            await store.save_messages([good, orphan])
        assert await store.get_messages(["ok", "orphan"]) == []
        thread = await store.get_thread("t1")
        assert thread is not None and thread.updated_at == T0  # the bump was rolled back too
        await store.save_messages([good])
        assert [m.sequence for m in await store.get_messages(["ok"])] == [1]  # counter rolled back
    finally:
        await store.destroy()


@pytest.mark.anyio
async def test_deleted_thread_cannot_gain_ghost_messages(tmp_path: Path) -> None:
    path = tmp_path / "ghost.db"
    first, second = SQLiteStorage(path), SQLiteStorage(path)
    await first.open()
    await second.open()
    try:
        await first.save_thread(Thread("t1", "r1"))
        await second.delete_thread("t1")
        # A second connection's writer: its checks run inside its own write transaction.
        with pytest.raises(NotFoundError):
            await first.save_messages([Message("m1", "t1", "user", "x", "r1", created_at=T0)])
        await first.save_thread(Thread("t1", "r1"))
        assert (await second.list_messages("t1")).total == 0
    finally:
        await first.close()
        await second.destroy()


@pytest.mark.anyio
async def test_locked_database_raises_a_retryable_backend_error(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    store = SQLiteStorage(path, timeout=0.2)
    await store.open()
    await store.save_thread(Thread("t1", "r1"))
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(BackendError) as caught:
            await store.save_messages([Message("m1", "t1", "user", "x")])
        assert caught.value.retryable
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
        assert (await store.list_messages("t1")).total == 0  # reads still work under a writer (WAL)
        holder.execute("ROLLBACK")
        await store.save_messages([Message("m1", "t1", "user", "x")])  # the retry succeeds
        assert (await store.list_messages("t1")).total == 1
    finally:
        holder.close()
        await store.destroy()


def _raised(error: type[sqlite3.Error], text: str, code: int) -> sqlite3.Error:
    """An error as SQLite raises it: its text and (extended) result code."""
    exc = error(text)
    exc.sqlite_errorcode = code
    return exc


def test_is_retryable_classifies_sqlite_errors() -> None:
    store = SQLiteStorage()
    assert store.is_retryable(_raised(sqlite3.OperationalError, "database is locked", 5))
    assert store.is_retryable(_raised(sqlite3.OperationalError, "database table is locked", 6))
    assert store.is_retryable(_raised(sqlite3.OperationalError, "database is locked", 5 | 2 << 8))  # BUSY_SNAPSHOT
    assert not store.is_retryable(_raised(sqlite3.OperationalError, "no such table: threads", 1))
    assert not store.is_retryable(_raised(sqlite3.IntegrityError, "UNIQUE constraint failed", 2067))
    assert not store.is_retryable(sqlite3.OperationalError("database is locked"))  # made by hand, not by SQLite
    assert store.is_retryable(TimeoutError())


@pytest.mark.anyio
async def test_a_15_mib_message_round_trips(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "big.db")
    await store.open()
    try:
        await store.save_thread(Thread("t1", "r1"))
        text = ("0123456789abcdé👋" * (15 * 1024 * 1024 // 40))[: 15 * 1024 * 1024 // 3]
        body = {"format": 2, "parts": [{"type": "text", "text": text}], "content": text}
        await store.save_messages([Message("big", "t1", "user", body)])
        await store.save_messages([Message("small", "t1", "user", "after")])
        [found] = await store.get_messages(["big"])
        assert found.content == body
        page = await store.list_messages("t1", per_page=1)
        assert page.items[0].content == body and page.total == 2
    finally:
        await store.destroy()


@pytest.mark.anyio
async def test_string_filters_compare_exactly_with_nul_and_unicode() -> None:
    store = SQLiteStorage()
    await store.open()
    try:
        values = {"a": "x\x00y", "b": "x", "c": "x\x00", "d": "é", "e": "e\u0301", "f": '"q"'}
        for key, value in values.items():
            await store.save_thread(Thread(key, "r1", metadata={"v": value}))
        for key, value in values.items():
            page = await store.list_threads({"metadata": {"v": value}}, per_page=False)
            assert [t.id for t in page.items] == [key], value
    finally:
        await store.destroy()


def test_an_unclosed_store_does_not_keep_the_process_alive(tmp_path: Path) -> None:
    """A script that forgets close() still exits, and its acknowledged writes
    are on disk (the aiosqlite worker is a daemon thread)."""
    path = tmp_path / "forgotten.db"
    script = textwrap.dedent(
        f"""
        import asyncio
        from memory_core_sqlite import SQLiteStorage

        async def main():
            store = SQLiteStorage({str(path)!r})
            await store.save_thread({{"id": "t1", "resource_id": "r1"}})
            await store.save_messages([{{"id": "m1", "thread_id": "t1", "role": "user", "content": "kept"}}])

        asyncio.run(main())
        """
    )
    # The timeout only guards against a hang; it is not a speed assertion.
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr

    async def read_back() -> list[Message]:
        async with SQLiteStorage(path) as store:
            return await store.get_messages(["m1"])

    [kept] = anyio.run(read_back)
    assert kept.content == "kept"


def test_destroy_removes_the_folders_open_created(tmp_path: Path) -> None:
    """destroy() leaves nothing behind: not the file, nor folders open() made
    for it (a folder that held other files stays)."""
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "other.txt").write_text("x")

    async def use_and_destroy(path: Path) -> None:
        store = SQLiteStorage(path, create_dirs=True)
        await store.open()
        await store.save_thread(Thread("t1", "r1"))
        await store.destroy()

    for path in (tmp_path / "new" / "deeper" / "x.db", tmp_path / "kept" / "y.db"):
        anyio.run(use_and_destroy, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]
    assert [p.name for p in (tmp_path / "kept").iterdir()] == ["other.txt"]


def test_an_in_memory_database_declares_no_persistence(tmp_path: Path) -> None:
    """`memory-core check sqlite://:memory:` must not run the reopen tests: the
    database is private to its connection and gone on close."""
    assert declared_capabilities(SQLiteStorage(":memory:")) == frozenset()
    on_disk = declared_capabilities(SQLiteStorage(tmp_path / "x.db"))
    assert on_disk == {Capability.PERSISTENT, Capability.SHARED_NAMESPACE}


@pytest.mark.anyio
async def test_wal_mode_is_set_in_the_file(tmp_path: Path) -> None:
    """WAL is a setting of the database file: another connection, not the
    store's own report, reads it there (and the -wal file exists)."""
    store = SQLiteStorage(tmp_path / "w.db")
    await store.open()
    try:
        await store.save_thread(Thread("t1", "r1"))
        with sqlite3.connect(tmp_path / "w.db") as other:
            assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert (tmp_path / "w.db-wal").exists()
    finally:
        await store.close()


SECRET = "zebra-erase-me-4417"
"""Text of the messages an erasure must leave no trace of."""

ERASED_RESOURCE = "resource-erase-me-2291"


def _traces(path: Path) -> dict[str, tuple[int, int]]:
    """For the database file and its ``-wal``/``-shm`` files (those there):
    how often :data:`SECRET` and :data:`ERASED_RESOURCE` occur in their raw bytes."""
    found = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        file = Path(f"{path}{suffix}")
        if file.exists():
            data = file.read_bytes()
            found[file.name] = (data.count(SECRET.encode()), data.count(ERASED_RESOURCE.encode()))
    return found


async def _write_erasable(store: SQLiteStorage, thread_id: str, at: datetime) -> None:
    await store.save_thread(Thread(thread_id, ERASED_RESOURCE, "erasable", created_at=at, updated_at=at))
    # Short messages live in table pages; long ones in overflow pages, freed whole.
    await store.save_messages(
        [
            Message(f"{thread_id}-m{n}", thread_id, "user", f"{SECRET} " + "x" * (5000 if n % 2 else 20), created_at=at)
            for n in range(12)
        ]
    )


async def _erase(store: SQLiteStorage, how: str) -> bool:
    """Erase everything :func:`_write_erasable` wrote, as ``how`` says; whether
    the resource id goes too (a message prune keeps the threads)."""
    from memory_core.retention import RetentionPolicy

    if how == "delete_resource":
        await store.delete_resource(ERASED_RESOURCE)
    elif how == "delete_thread":
        await store.delete_thread("old")
        await store.delete_thread("new")
    elif how == "delete_messages":
        await store.delete_messages([f"{t}-m{n}" for t in ("old", "new") for n in range(12)])
        return False
    else:
        cutoff = datetime(2025, 6, 1, tzinfo=UTC)
        policy = RetentionPolicy("threads" if how == "prune_threads" else "messages", before=cutoff, batch_size=5)
        await store.prune(policy)
        return how == "prune_threads"
    return True


@pytest.mark.anyio
@pytest.mark.parametrize(
    "how", ["delete_resource", "delete_thread", "delete_messages", "prune_messages", "prune_threads"]
)
async def test_an_erasure_leaves_no_trace_in_the_database_files(how: str, tmp_path: Path) -> None:
    """Issue "erasure that leaves no trace": before, the erased rows stayed in
    the WAL (and, in SQLite builds without SECURE_DELETE, in the database
    file's freed pages) until a checkpoint: readable from the files while
    the store was open. Both halves are erased: data checkpointed into the
    database file (written before a reopen) and data still in the WAL."""
    path = tmp_path / "erase.db"
    store = SQLiteStorage(path)
    await store.open()
    await store.save_thread(Thread("keep", "resource-kept", "kept"))
    await store.save_messages([Message(f"k{n}", "keep", "user", "kept " * 100) for n in range(40)])
    await _write_erasable(store, "old", T0)
    await store.close()  # the last close checkpoints: "old" is in the database file now
    assert _traces(path)[path.name] != (0, 0)
    store = SQLiteStorage(path)
    await store.open()
    await _write_erasable(store, "new", T0)
    assert _traces(path)[f"{path.name}-wal"] != (0, 0)
    whole = await _erase(store, how)
    try:
        left = _traces(path)
        assert all(found[0] == 0 for found in left.values()), (how, left)
        if whole:
            assert all(found[1] == 0 for found in left.values()), (how, left)
        assert len((await store.list_messages("keep", per_page=False)).items) == 40  # the rest is untouched
    finally:
        await store.close()
    after = _traces(path)
    assert all(found[0] == 0 for found in after.values()), (how, after)
    if whole:
        assert all(found[1] == 0 for found in after.values()), (how, after)


GONE = "eve.0123456789ab+x@example.com"
"""The erased resource of the page-rebuild tests (an email, as resource ids often are)."""


def _left_behind(path: Path, needles: list[str]) -> dict[str, dict[str, int]]:
    """For each of the database's files there (``-wal``, ``-shm``, ``-journal``
    too): the ``needles`` found in its raw bytes, with how often."""
    found = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        file = Path(f"{path}{suffix}")
        if file.exists():
            data = file.read_bytes()
            hits = {needle: data.count(needle.encode()) for needle in needles}
            found[file.name] = {needle: n for needle, n in hits.items() if n}
    return found


async def _write_rebuilt_pages(url: str) -> list[str]:
    """Three resources with three threads each and a clone of each one's first
    thread (the clone's insert, then more messages, make SQLite split and
    rebuild pages of the tables and indexes, leaving old copies of cells in
    the pages' unallocated gaps), a clone of one of :data:`GONE`'s threads
    into another resource (its lineage names :data:`GONE` until the erasure
    clears it), then a write into :data:`GONE`'s thread. Returns what the
    erasure of :data:`GONE` must leave no copy of: the resource id, its
    thread ids, the text of its messages (short and long: overflow pages)."""
    from memory_core import Memory

    async with await Memory.open(url) as memory:
        for user, tag in ((GONE, "gone-7731"), ("keeper", "keep"), ("third", "third")):
            text = "erasable-words-5521" if user == GONE else "kept words"
            for t in range(3):
                thread = f"{tag}-thr{t}"
                await memory.get_or_create_thread(user, thread)
                long = " " + "y" * 6000
                turns = [("user", f"{text} {k}{long if k % 10 == 9 else ''}") for k in range(30)]
                await memory.append_messages(thread, turns)
            await memory.clone_thread(f"{tag}-thr0", f"{tag}-clone")
        await memory.clone_thread(
            "gone-7731-thr2", "keeper-copy", resource_id="keeper", source_resource_id=GONE, message_ids=[]
        )
        await memory.append_messages("gone-7731-thr1", [("user", "erasable-words-5521 one more")])
    return [GONE, "gone-7731-thr", "gone-7731-clone", "erasable-words-5521"]


@pytest.mark.anyio
@pytest.mark.parametrize("threads_first", [False, True])
async def test_a_resource_erasure_leaves_no_old_copy_of_a_rebuilt_page_cell(
    threads_first: bool, tmp_path: Path
) -> None:
    """Issue 25 ("erasure that leaves no trace", a fresh-user trial): after
    ``delete_resource`` and close, the erased user's id was still readable
    in the database file, in the unallocated gap of a live page of the
    ``messages_thread_order`` index: old copies of cells SQLite leaves when
    it rebuilds a b-tree page, which ``secure_delete`` does not zero. The
    erasure now rebuilds the database (VACUUM) and truncates the WAL, also
    when thread deletes removed the resource's rows before (``threads_first``:
    the erasure itself then finds nothing; the deletes marked the rebuild)."""
    path = tmp_path / "rebuilt.db"
    needles = await _write_rebuilt_pages(f"sqlite:///{path}")
    assert _left_behind(path, needles)[path.name]  # there to be erased
    store = SQLiteStorage(path)
    await store.open()
    try:
        if threads_first:
            for thread in ("gone-7731-thr0", "gone-7731-thr1", "gone-7731-thr2", "gone-7731-clone"):
                await store.delete_thread(thread)
        erased = await store.delete_resource(GONE)
        assert len(erased.thread_ids) == (0 if threads_first else 4)
        assert erased.messages == (0 if threads_first else 4 * 30 + 1)
        assert not any(_left_behind(path, needles).values()), _left_behind(path, needles)  # while open, too
        assert (await store.get_thread("keeper-copy")) is not None
        assert len((await store.list_messages("keep-clone", per_page=False)).items) == 30  # the rest is kept
    finally:
        await store.close()
    assert not any(_left_behind(path, needles).values()), _left_behind(path, needles)


@pytest.mark.anyio
async def test_a_rebuild_kept_from_finishing_raises_retryably_and_the_next_erasure_finishes_it(
    tmp_path: Path,
) -> None:
    """A reader of an older snapshot keeps the rebuilt file from being
    checkpointed past the busy timeout: the call raises a retryable
    BackendError saying so, the rows are erased all the same, and the next
    ``delete_resource`` (of an id the store does not hold: no erasure of its
    own) finishes the rebuild."""
    path = tmp_path / "held.db"
    needles = await _write_rebuilt_pages(f"sqlite:///{path}")
    store = SQLiteStorage(path, timeout=0.2)
    await store.open()
    reader = sqlite3.connect(path, isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM messages").fetchone()  # a snapshot from before the erasure
        with pytest.raises(BackendError, match="call delete_resource again") as raised:
            await store.delete_resource(GONE)
        assert raised.value.retryable and raised.value.operation == "delete_resource"
        assert (await store.get_thread("gone-7731-thr0")) is None  # the erasure stands
        reader.execute("COMMIT")
        assert any(_left_behind(path, needles).values())
        erased = await store.delete_resource("nobody")
        assert erased.thread_ids == [] and erased.messages == 0
        assert not any(_left_behind(path, needles).values()), _left_behind(path, needles)
        assert _wal_size(path) == 0
    finally:
        reader.close()
        await store.close()


def test_a_rebuild_that_cannot_take_the_write_lock_raises_retryably(tmp_path: Path) -> None:
    """``VACUUM`` waits up to the busy timeout for another connection's
    write, then the erasure's last step fails retryably, its mark kept."""
    from memory_core_sqlite import _ops

    path = tmp_path / "locked.db"
    conn = sqlite3.connect(path, isolation_level=None)
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA busy_timeout = 100")
        conn.execute("CREATE TABLE counters (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL)")
        conn.execute("INSERT INTO counters VALUES ('erasure_rebuild', 1)")
        writer.execute("BEGIN IMMEDIATE")
        with pytest.raises(BackendError, match="held the write lock") as raised:
            _ops.finish_erasure(conn)
        assert raised.value.retryable
        writer.execute("ROLLBACK")
        _ops.finish_erasure(conn)
        assert conn.execute("SELECT count(*) FROM counters").fetchone() == (0,)
    finally:
        writer.close()
        conn.close()


def _wal_size(path: Path) -> int:
    return Path(f"{path}-wal").stat().st_size


@pytest.mark.anyio
async def test_an_erasure_that_removes_nothing_leaves_the_wal_alone(tmp_path: Path) -> None:
    """Its truncating checkpoint (and sync, ~10 ms) is only for an erasure that removed something."""
    path = tmp_path / "nothing.db"
    async with SQLiteStorage(path) as store:
        await store.save_thread(Thread("t1", "r1"))
        await store.save_messages([Message("m1", "t1", "user", "kept")])
        wal = _wal_size(path)
        assert wal > 0
        await store.delete_thread("missing")
        assert await store.delete_messages(["missing"]) == 0
        await store.delete_resource("missing")
        assert _wal_size(path) == wal
        await store.delete_messages(["m1"])
        assert _wal_size(path) == 0

"""The primitives as synchronous functions of one ``sqlite3.Connection``.

Each function is one whole unit of work that runs on the store's aiosqlite
worker thread in a single hop (see ``SQLiteStorage._run``): a write is one
``BEGIN IMMEDIATE`` transaction from start to commit, so SQLite's write lock
is held only while SQLite works, never across event-loop turns, and a
failure rolls the whole batch back. Reads are single statements (one
snapshot each). Rows are decoded here too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Concatenate, NamedTuple, ParamSpec, TypeVar, cast

from memory_core import codec
from memory_core.builders import StoredTime, build_message, build_resource, build_thread
from memory_core.clock import TIME_MAX_US, TIME_MIN_US, bump_us, from_us, to_us
from memory_core.errors import BackendError, StaleStateError, ValidationError
from memory_core.lineage import CopyPlan
from memory_core.models import Message, Resource, Role, Thread
from memory_core.plan import ReadParts, ReadPlan
from memory_core.query import NOT_GIVEN, MessagePatch
from memory_core.storage import PatchDecision, SaveDecision, order_key
from memory_core.workmem import MemoryDecision, MemoryWrite, thread_memory

from memory_core_sqlite import _sql
from memory_core_sqlite._counters import Deltas, apply
from memory_core_sqlite._errors import is_busy

__all__ = [
    "delete_found",
    "delete_resource",
    "delete_thread",
    "erasing",
    "finish_erasure",
    "marking_deletes",
    "get_messages",
    "list_resource_ids",
    "get_thread",
    "insert_thread",
    "patch_checked",
    "patch_resource",
    "patch_resource_in",
    "patch_thread",
    "patch_thread_in",
    "put_resource",
    "read",
    "read_state",
    "save_checked",
    "save_thread_checked",
    "snapshot",
    "swap_resource_memory",
    "swap_thread_memory",
    "transaction",
    "without_waiting",
    "write_memory",
]

P = ParamSpec("P")
T = TypeVar("T")

_BUMP = "UPDATE threads SET updated_at = min(max(?, updated_at + 1), ?) WHERE id = ?"  # clock.bump_us
# A thread never changes resource: the WHERE makes the upsert a no-op then.
_INSERT_THREAD = (
    "INSERT INTO threads (id, resource_id, title, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)"
)
_UPSERT_THREAD = (
    _INSERT_THREAD + " ON CONFLICT (id) DO UPDATE SET title = excluded.title, metadata = excluded.metadata,"
    " created_at = excluded.created_at, updated_at = excluded.updated_at"
    " WHERE threads.resource_id = excluded.resource_id"
)
_UPSERT_MESSAGE = (
    "INSERT INTO messages (id, seq, thread_id, resource_id, role, type, content, metadata, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id, role = excluded.role,"
    " type = excluded.type, content = excluded.content, metadata = excluded.metadata"
)
_UPSERT_RESOURCE = (
    "INSERT INTO resources (id, working_memory, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (id) DO UPDATE SET working_memory = excluded.working_memory,"
    " metadata = excluded.metadata, created_at = excluded.created_at, updated_at = excluded.updated_at"
)


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``; ``ROLLBACK`` if the body raises.

    The connection must be in autocommit mode (``isolation_level=None``).
    ``BEGIN IMMEDIATE`` takes the write lock up front (waiting up to the busy
    timeout), so a transaction never fails half-way for lack of it.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def erasing(
    conn: sqlite3.Connection,
    erase: Callable[Concatenate[sqlite3.Connection, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """``erase(conn, *args, **kwargs)`` (a committed deletion), then a
    truncating WAL checkpoint, so the deleted rows themselves are gone from
    the database files while the store stays open (a thread or message
    delete; a resource erasure goes further: :func:`finish_erasure`).

    ``PRAGMA secure_delete`` (set on every connection) zeroes the deleted
    cells and freed pages, but in WAL mode those zeroed pages go to the WAL:
    the database file keeps its old pages, and the WAL the frames that
    wrote the data, until a checkpoint. ``wal_checkpoint(TRUNCATE)`` copies
    the zeroed pages into the database file and cuts the WAL to zero bytes.
    The checkpoint does not wait: a truncating checkpoint waiting for
    another connection's write or older read snapshot would hold every new
    writer back meanwhile (up to the busy timeout, 30 s by default). If one
    is under way, the checkpoint copies what it can, the erasure stands,
    and the old frames stay in the WAL until the next erasure's checkpoint
    or the last connection's close. Skipped when ``erase`` changed no row
    (nothing erased: the checkpoint and its sync cost ~10 ms); a no-op for
    an in-memory database.

    What it leaves: old copies of cells (ids, message text) that SQLite
    left in a live page's unallocated gap when it rebuilt that page earlier
    (a b-tree page of a table or of any index, on a split or rebalance):
    ``secure_delete`` zeroes deleted cells and freed pages, not those
    copies. Only a rebuild of the file (``VACUUM``) removes them: the
    delete marks one pending (:func:`marking_deletes`), which the next
    resource erasure does (:func:`finish_erasure`).

    Returns:
        What ``erase`` returned.
    """
    changes = conn.total_changes
    result = erase(conn, *args, **kwargs)
    if conn.total_changes != changes:
        without_waiting(conn, lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
    return result


_REBUILD_PENDING = "erasure_rebuild"
"""The ``counters`` row every delete that removed a row writes in its own
transaction (:func:`marking_deletes`), and :func:`finish_erasure` deletes
once the file is rebuilt: the file may hold old copies of deleted rows' cells
until then. The next call of ``delete_resource``, whatever its id, rebuilds:
so a rebuild that a failure or a crash cut off is done, and so is one for a
resource whose rows thread and message deletes or a prune removed before
its erasure."""


@contextmanager
def marking_deletes(conn: sqlite3.Connection) -> Iterator[None]:
    """Inside a delete's transaction: if the body changed a row, mark the
    file's rebuild pending (:data:`_REBUILD_PENDING`) in the same transaction."""
    changes = conn.total_changes
    yield
    if conn.total_changes != changes:
        conn.execute(
            "INSERT INTO counters (name, value) VALUES (?, 1) ON CONFLICT (name) DO NOTHING", (_REBUILD_PENDING,)
        )


def finish_erasure(conn: sqlite3.Connection) -> None:
    """If a delete left the file's rebuild pending: ``VACUUM``, then a
    truncating WAL checkpoint, then the pending mark deleted (and the WAL
    truncated again, without waiting: it holds only that mark's page).

    ``VACUUM`` writes a fresh copy of the database through the WAL: no free
    page, no freed cell, and no old copy of a cell that SQLite left in a
    page's unallocated gap when it rebuilt the page (tables and indexes
    alike; ``secure_delete`` does not zero those), so no byte of the erased
    rows. The checkpoint copies it into the database file, which it
    truncates to the new size, and cuts the WAL to zero bytes. ``VACUUM``
    waits up to the busy timeout for another connection's write; the
    checkpoint waits up to the busy timeout for readers of an older
    snapshot (new writers wait behind it meanwhile). Nothing pending: one
    indexed read.

    Raises:
        BackendError: retryable, operation ``delete_resource``: another
            connection held the lock (or an older snapshot) past the busy
            timeout; the erasure's deletes stand, the mark stays, and the
            next ``delete_resource`` call rebuilds.
    """
    if conn.execute("SELECT 1 FROM counters WHERE name = ?", (_REBUILD_PENDING,)).fetchone() is None:
        return
    try:
        conn.execute("VACUUM")
        busy, *_ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.OperationalError as exc:
        if not is_busy(exc):
            raise
        raise _unfinished("another connection held the write lock", exc) from exc
    if busy:
        raise _unfinished("another connection kept reading an older snapshot of it", None)
    conn.execute("DELETE FROM counters WHERE name = ?", (_REBUILD_PENDING,))
    without_waiting(conn, lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())


def _unfinished(why: str, original: BaseException | None) -> BackendError:
    return BackendError(
        "sqlite",
        "delete_resource",
        f"the rows are erased, but the rebuild that removes their old copies from the database file"
        f" could not finish within the busy timeout: {why}; call delete_resource again"
        " (any resource id) to finish it",
        retryable=True,
        original=original,
    )


def without_waiting(conn: sqlite3.Connection, call: Callable[[sqlite3.Connection], T]) -> T:
    """``call(conn)`` with the connection's busy timeout 0 (restored after)."""
    (waited,) = conn.execute("PRAGMA busy_timeout").fetchone()
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        return call(conn)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(waited)}")


class ThreadRow(NamedTuple):
    """A ``threads`` row as :data:`_sql.THREAD_COLUMNS` selects it (times in
    microseconds; JSON columns as text). Plan rows carry more columns after."""

    id: str
    resource_id: str
    title: str
    metadata: str
    created_at: int
    updated_at: int
    last_message_at: int | None


class MessageRow(NamedTuple):
    """A ``messages`` row as :data:`_sql.MESSAGE_COLUMNS` selects it."""

    id: str
    thread_id: str
    resource_id: str
    role: Role
    type: str
    content: str
    metadata: str
    created_at: int
    seq: int


class ResourceRow(NamedTuple):
    """A ``resources`` row as :data:`_sql.RESOURCE_COLUMNS` selects it."""

    id: str
    working_memory: str | None
    metadata: str
    created_at: int
    updated_at: int


# The decoders unpack a driver row by name through its typed shape (rows of a
# plan carry more columns after): no NamedTuple is built, so a row costs
# what a tuple unpack costs.


def _thread(row: Sequence[Any]) -> Thread:
    id, resource_id, title, metadata, created_us, updated_us, last_us = cast(ThreadRow, row[:7])
    last = None if last_us is None else StoredTime(last_us)
    return build_thread(
        id, resource_id, title, codec.loads(metadata), StoredTime(created_us), StoredTime(updated_us), last
    )


def _message(row: Sequence[Any]) -> Message:
    id, thread_id, resource_id, role, type, content, metadata, created_us, seq = cast(MessageRow, row[:9])
    return build_message(
        id,
        thread_id,
        role,
        codec.loads(content),
        resource_id,
        type,
        codec.loads(metadata),
        StoredTime(created_us),
        seq,
    )


def _resource(row: Sequence[Any]) -> Resource:
    id, working_memory, metadata, created_us, updated_us = cast(ResourceRow, row[:5])
    return build_resource(id, working_memory, codec.loads(metadata), StoredTime(created_us), StoredTime(updated_us))


def _bump(conn: sqlite3.Connection, thread_ids: Iterable[str], now_us: int) -> None:
    conn.executemany(_BUMP, [(now_us, TIME_MAX_US, thread_id) for thread_id in thread_ids])


# ---------------------------------------------------------------------- threads


def get_thread(conn: sqlite3.Connection, thread_id: str) -> Thread | None:
    """The stored thread or None."""
    row = conn.execute(f"SELECT {_sql.THREAD_COLUMNS} FROM threads WHERE id = ?", (thread_id,)).fetchone()
    return None if row is None else _thread(row)


def _thread_row(thread: Thread) -> tuple[Any, ...]:
    if thread.created_at is None or thread.updated_at is None:
        raise ValidationError(
            "thread.created_at", "the core gives a thread to store its times; this one has none", "R-TIME"
        )
    created, updated = to_us(thread.created_at), to_us(thread.updated_at)
    return (thread.id, thread.resource_id, thread.title, codec.dumps(thread.metadata), created, updated)


def save_thread_checked(conn: sqlite3.Connection, thread: Thread) -> Thread | None:
    """Insert or wholly replace a thread unless its id is stored under another
    resource (then write nothing and return None), in one transaction;
    returns ``thread`` with its stored ``last_message_at`` (the upsert keeps
    the messages, so it is the same before and after)."""
    with transaction(conn):
        if conn.execute(_UPSERT_THREAD, _thread_row(thread)).rowcount != 1:
            return None
        (last,) = conn.execute("SELECT MAX(created_at) FROM messages WHERE thread_id = ?", (thread.id,)).fetchone()
    return thread if last is None else replace(thread, last_message_at=from_us(last))


def insert_thread(conn: sqlite3.Connection, thread: Thread) -> None:
    """Insert a thread only if its id is free (StaleStateError otherwise)."""
    with transaction(conn):
        if conn.execute(_INSERT_THREAD + " ON CONFLICT (id) DO NOTHING", _thread_row(thread)).rowcount != 1:
            raise StaleStateError(f"thread {thread.id!r} exists")


SEQ_MAX = 2**63 - 1
_COPY_SELECTION = f"""SELECT id, k FROM (
    SELECT id, ROW_NUMBER() OVER (ORDER BY created_at, seq) - 1 AS k FROM (
        SELECT id, created_at, seq FROM messages
        WHERE thread_id = ?1 AND created_at >= ?2 AND created_at <= ?3 AND (created_at, seq) <= (?4, ?5)
            AND (?6 IS NULL OR id {_sql.BY_IDS.replace("?", "?6")})
        ORDER BY created_at DESC, seq DESC LIMIT ?7
    )
) WHERE k < ?8 ORDER BY k"""
_COPY_OVERSIZE = """SELECT m.id FROM copy_sel AS s JOIN messages AS m ON m.id = s.src
WHERE length(CAST(json_quote(m.role) AS BLOB)) + length(CAST(json_quote(m.type) AS BLOB))
    + length(CAST(m.content AS BLOB)) + length(CAST(m.metadata AS BLOB)) > ? LIMIT 1"""
# The copy: the selection's k-th row under the k-th new id, the next sequences in order.
_COPY_INSERT = """INSERT INTO messages (id, seq, thread_id, resource_id, role, type, content, metadata, created_at)
SELECT n.id, ? + s.k, ?, ?, m.role, m.type, m.content, m.metadata, m.created_at
FROM copy_sel AS s JOIN copy_ids AS n ON n.k = s.k JOIN messages AS m ON m.id = s.src"""


def copy_thread(conn: sqlite3.Connection, plan: CopyPlan, now_us: int) -> list[str]:
    """Insert the plan's thread and copy its selection inside the database
    (INSERT ... SELECT: no body leaves SQLite), one transaction; returns
    the copied source ids in order. StaleStateError if the thread exists."""
    with transaction(conn):
        if conn.execute(_INSERT_THREAD + " ON CONFLICT (id) DO NOTHING", _thread_row(plan.thread)).rowcount != 1:
            raise StaleStateError(f"thread {plan.thread.id!r} exists")
        until = plan.until or (TIME_MAX_US, SEQ_MAX)
        selection = (
            plan.source_id,
            TIME_MIN_US if plan.created_from_us is None else plan.created_from_us,
            TIME_MAX_US if plan.created_to_us is None else plan.created_to_us,
            *until,
            None if plan.message_ids is None else _sql.id_list(plan.message_ids),
            -1 if plan.newest is None else plan.newest,
            len(plan.new_ids),
        )
        # the selection once, and the new ids, by position in keyed temp tables
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS copy_sel (k INTEGER PRIMARY KEY, src TEXT NOT NULL)")
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS copy_ids (k INTEGER PRIMARY KEY, id TEXT NOT NULL)")
        try:
            conn.execute(f"INSERT INTO copy_sel (k, src) SELECT k, id FROM ({_COPY_SELECTION})", selection)
            copied = [row[0] for row in conn.execute("SELECT src FROM copy_sel ORDER BY k")]
            if not copied:
                return []
            over = conn.execute(_COPY_OVERSIZE, (plan.size_limit,)).fetchone()
            if over is not None:
                raise plan.too_large(over[0])
            (last,) = conn.execute(
                "UPDATE counters SET value = value + ? WHERE name = 'message_sequence' RETURNING value",
                (len(copied),),
            ).fetchone()
            owner = plan.thread.resource_id
            conn.execute(
                "INSERT INTO copy_ids (k, id) SELECT key, value FROM json_each(?)", (_sql.id_list(plan.new_ids),)
            )
            conn.execute(_COPY_INSERT, (int(last) - len(copied) + 1, plan.thread.id, owner))
        finally:
            conn.execute("DELETE FROM copy_sel")
            conn.execute("DELETE FROM copy_ids")
        deltas = Deltas()
        deltas.add(plan.thread.id, owner, len(copied))
        apply(conn, deltas)
        _bump(conn, [plan.thread.id], now_us)
        return copied


def patch_thread(
    conn: sqlite3.Connection, thread_id: str, title: str | None, metadata: dict[str, Any] | None, now_us: int
) -> Thread | None:
    """Set the title, merge metadata one level, bump; None if missing.

    Read and write happen under one write lock: a one-level merge of
    arbitrary keys (SQLite's ``json_patch`` merges recursively and drops
    nulls, so it is not used).
    """
    with transaction(conn):
        return patch_thread_in(conn, thread_id, title, metadata, now_us)


def patch_thread_in(
    conn: sqlite3.Connection, thread_id: str, title: str | None, metadata: dict[str, Any] | None, now_us: int
) -> Thread | None:
    """:func:`patch_thread` inside the caller's transaction."""
    row = conn.execute(f"SELECT {_sql.THREAD_COLUMNS} FROM threads WHERE id = ?", (thread_id,)).fetchone()
    if row is None:
        return None
    old = ThreadRow._make(row)
    new = old._replace(
        title=old.title if title is None else title,
        metadata=old.metadata if metadata is None else codec.dumps({**codec.loads(old.metadata), **metadata}),
        updated_at=bump_us(old.updated_at, now_us),
    )
    conn.execute(
        "UPDATE threads SET title = ?, metadata = ?, updated_at = ? WHERE id = ?",
        (new.title, new.metadata, new.updated_at, thread_id),
    )
    return _thread(new)


def delete_thread(conn: sqlite3.Connection, thread_id: str) -> int:
    """Delete the thread and its messages in one transaction, taking them off
    the resource's counter (the thread's goes with its row); how many
    messages it deleted."""
    with transaction(conn), marking_deletes(conn):
        deleted = conn.execute("DELETE FROM messages WHERE thread_id = ?", (thread_id,)).rowcount
        owner = conn.execute("DELETE FROM threads WHERE id = ? RETURNING resource_id", (thread_id,)).fetchone()
        if owner is not None and deleted:
            deltas = Deltas()
            deltas.add(thread_id, owner[0], -deleted)  # the thread's own row is gone: a no-op there
            apply(conn, deltas)
    return deleted


# ---------------------------------------------------------------------- messages


def get_messages(conn: sqlite3.Connection, ids: Iterable[str]) -> list[Message]:
    """Stored messages with these ids, any order."""
    sql = f"SELECT {_sql.MESSAGE_COLUMNS} FROM messages WHERE id {_sql.BY_IDS}"
    return [_message(row) for row in conn.execute(sql, (_sql.id_list(ids),))]


def _owners(conn: sqlite3.Connection, table: str, ids: Iterable[str]) -> dict[str, str]:
    """id -> resource_id of the stored rows among ``ids``."""
    sql = f"SELECT id, resource_id FROM {table} WHERE id {_sql.BY_IDS}"
    return dict(conn.execute(sql, (_sql.id_list(ids),)).fetchall())


def save_checked(
    conn: sqlite3.Connection,
    thread_ids: Sequence[str],
    message_ids: Sequence[str],
    decide: SaveDecision,
    now_us: int,
) -> tuple[list[Message], list[int]]:
    """Read, decide and write a save in one transaction (the core's checks
    run inside it: what they read cannot change before the write)."""
    with transaction(conn):
        records, bump = decide(*read_state(conn, thread_ids, message_ids))
        return records, _write_messages(conn, records, bump, now_us)


def _write_messages(
    conn: sqlite3.Connection, messages: Sequence[Message], bump: Sequence[str], now_us: int
) -> list[int]:
    """Upsert checked messages, count them in and bump threads (inside the
    caller's transaction); returns the stored sequences. New ids take the
    next values of the store-wide counter in list order; existing ids keep
    seq, created_at and resource_id (the caller checked which ids are new)."""
    fresh = sum(1 for m in messages if m.sequence is None)
    deltas = Deltas()
    known = [m.id for m in messages if m.sequence is not None]
    homes = _homes(conn, known) if known else {}
    (last,) = conn.execute(
        "UPDATE counters SET value = value + ? WHERE name = 'message_sequence' RETURNING value", (fresh,)
    ).fetchone()
    next_seq = int(last) - fresh + 1
    rows = []
    sequences = []
    for message in messages:
        if message.created_at is None or message.resource_id is None:
            raise ValidationError(
                f"message {message.id!r}", "the core gives a message to store its resource_id and time", "R-TIME"
            )
        seq = message.sequence
        if seq is None:
            seq, next_seq = next_seq, next_seq + 1
            deltas.add(message.thread_id, message.resource_id)
        elif homes.get(message.id, message.thread_id) != message.thread_id:  # a move
            deltas.move(homes[message.id], message.thread_id)
            homes[message.id] = message.thread_id
        sequences.append(seq)
        rows.append(
            (
                message.id,
                seq,
                message.thread_id,
                message.resource_id,
                message.role,
                message.type,
                codec.dumps(message.content),
                codec.dumps(message.metadata),
                to_us(message.created_at),
            )
        )
    conn.executemany(_UPSERT_MESSAGE, rows)
    apply(conn, deltas)
    _bump(conn, bump, now_us)
    return sequences


def _homes(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, str]:
    """id -> thread_id of the stored messages among ``ids``."""
    sql = f"SELECT id, thread_id FROM messages WHERE id {_sql.BY_IDS}"
    return dict(conn.execute(sql, (_sql.id_list(ids),)).fetchall())


def patch_checked(
    conn: sqlite3.Connection,
    thread_ids: Sequence[str],
    message_ids: Sequence[str],
    decide: PatchDecision,
    now_us: int,
) -> list[Message]:
    """Read, decide and apply an update in one transaction; returns the
    patched messages as written (decoded from the rows stored)."""
    with transaction(conn):
        patches, bump = decide(*read_state(conn, thread_ids, message_ids))
        return _write_patches(conn, patches, bump, now_us) if patches else []


def _write_patches(
    conn: sqlite3.Connection, patches: Sequence[MessagePatch], bump: Sequence[str], now_us: int
) -> list[Message]:
    """:func:`patch_messages` inside the caller's transaction; returns the
    patched messages as stored."""
    stored = {m.id: m for m in get_messages(conn, (p.id for p in patches))}
    targets = _owners(conn, "threads", {p.thread_id for p in patches if p.thread_id})
    homes = {mid: m.thread_id for mid, m in stored.items()}  # as the rows stand after each patch
    deltas = Deltas()
    rows = []
    written = []
    for patch in patches:
        old = stored.get(patch.id)
        if old is None:
            continue
        if patch.thread_id and targets.get(patch.thread_id) != old.resource_id:
            raise StaleStateError(f"thread {patch.thread_id!r} changed")
        new = patch.apply(old)
        if new.thread_id != homes[new.id]:
            deltas.move(homes[new.id], new.thread_id)
            homes[new.id] = new.thread_id
        content, metadata = codec.dumps(new.content), codec.dumps(new.metadata)
        rows.append((new.thread_id, new.role, new.type, content, metadata, new.id))
        # decoded from the text written: as stored, sharing nothing with the caller's patch
        written.append(
            build_message(
                new.id,
                new.thread_id,
                new.role,
                codec.loads(content),
                new.resource_id,
                new.type,
                codec.loads(metadata),
                new.created_at,
                new.sequence,
            )
        )
    conn.executemany(
        "UPDATE messages SET thread_id = ?, role = ?, type = ?, content = ?, metadata = ? WHERE id = ?", rows
    )
    apply(conn, deltas)
    _bump(conn, bump, now_us)
    return written


def delete_found(conn: sqlite3.Connection, ids: Sequence[str], now_us: int) -> int:
    """Delete the stored messages among ``ids`` and bump the threads they
    were in, in one transaction; returns how many rows it removed."""
    with transaction(conn), marking_deletes(conn):
        removed = _delete_counted(conn, ids)
        _bump(conn, dict.fromkeys(thread_id for thread_id, _ in removed), now_us)
    return len(removed)


def _delete_counted(conn: sqlite3.Connection, ids: Sequence[str]) -> list[tuple[str, str]]:
    """Delete the stored messages among ``ids`` and take them off the
    counters (inside the caller's transaction); their (thread_id, resource_id)."""
    sql = f"DELETE FROM messages WHERE id {_sql.BY_IDS} RETURNING thread_id, resource_id"
    removed: list[tuple[str, str]] = conn.execute(sql, (_sql.id_list(ids),)).fetchall()
    deltas = Deltas()
    deltas.removed(removed)
    apply(conn, deltas)
    return removed


# ---------------------------------------------------------------------- composite reads


@contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A read transaction: the statements inside see one snapshot."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        conn.execute("COMMIT")


def read_state(
    conn: sqlite3.Connection, thread_ids: Sequence[str], message_ids: Sequence[str]
) -> tuple[dict[str, Thread], list[Message]]:
    """The threads (by id) and messages found among these ids (one
    statement: one snapshot)."""
    sql, params = _sql.write_state(thread_ids, message_ids)
    threads: dict[str, Thread] = {}
    messages: list[Message] = []
    for row in conn.execute(sql, params):
        if row[_sql.TAG_AT] == _sql.THREAD:
            thread = _thread(row)
            threads[thread.id] = thread
        else:
            messages.append(_message(row))
    return threads, messages


def read(conn: sqlite3.Connection, plan: ReadPlan) -> ReadParts:
    """Every part of ``plan`` in this one job: one compound statement (see
    :func:`_sql.read_plan`), or several in a read transaction (one
    snapshot); messages by id and resource ids, which the core asks for
    alone, one statement each."""
    statements = _sql.read_plan(plan)
    if not statements:  # a plan of messages by id or of resource ids alone (the core never mixes those in)
        rows: list[Any] = []
    elif len(statements) == 1:
        rows = conn.execute(*statements[0]).fetchall()  # one statement: one snapshot
    else:
        with snapshot(conn):
            rows = [row for statement in statements for row in conn.execute(*statement)]
    threads: dict[str, Thread] = {}
    resources: dict[str, Resource] = {}
    messages: list[Message] = []
    thread_items: list[Thread] = []
    windows: list[list[Message]] = [[] for _ in plan.windows]
    message_total = thread_total = 0
    for row in rows:
        tag = row[_sql.TAG_AT]
        if tag == _sql.MESSAGE:
            messages.append(_message(row))
        elif tag == _sql.THREAD:
            thread = _thread(row)
            threads[thread.id] = thread
        elif tag == _sql.RESOURCE:
            resource = _resource(row)
            resources[resource.id] = resource
        elif tag == _sql.MESSAGE_TOTAL:
            message_total, *_ = row
        elif tag == _sql.THREAD_TOTAL:
            thread_total, *_ = row
        elif tag == _sql.THREAD_ITEM:
            thread_items.append(_thread(row))
        else:
            windows[tag - _sql.WINDOW].append(_message(row))
    for window in windows:
        window.sort(key=order_key)
    found = get_messages(conn, plan.message_ids) if plan.message_ids else []
    rids = (
        [] if plan.resource_ids is None else list_resource_ids(conn, plan.resource_ids.after, plan.resource_ids.limit)
    )
    return ReadParts(threads, resources, message_total, messages, thread_total, thread_items, windows, found, rids)


# ---------------------------------------------------------------------- resources


def list_resource_ids(conn: sqlite3.Connection, after: str | None, limit: int | None) -> list[str]:
    """Ids with a resource row or a thread, ascending (BINARY: UTF-8 bytes,
    i.e. code point order), after ``after``, at most ``limit``: a merge of
    the ``resources`` primary key and an index led by ``threads.resource_id``."""
    sql, params = _sql.resource_ids(after, limit)
    return [row[0] for row in conn.execute(sql, params)]


def put_resource(conn: sqlite3.Connection, resource: Resource) -> None:
    """Insert or wholly replace a resource."""
    if resource.created_at is None or resource.updated_at is None:
        raise ValidationError(
            "resource.created_at", "the core gives a resource to store its times; this one has none", "R-TIME"
        )
    row = (
        resource.id,
        resource.working_memory,
        codec.dumps(resource.metadata),
        to_us(resource.created_at),
        to_us(resource.updated_at),
    )
    with transaction(conn):
        conn.execute(_UPSERT_RESOURCE, row)


def patch_resource(
    conn: sqlite3.Connection, resource_id: str, working_memory: Any, metadata: dict[str, Any] | None, now_us: int
) -> Resource:
    """Create or update: working memory unless NOT_GIVEN, metadata merged one
    level, ``updated_at`` bumped (a new resource: both times now)."""
    with transaction(conn):
        return patch_resource_in(conn, resource_id, working_memory, metadata, now_us)


def patch_resource_in(
    conn: sqlite3.Connection, resource_id: str, working_memory: Any, metadata: dict[str, Any] | None, now_us: int
) -> Resource:
    """:func:`patch_resource` inside the caller's transaction."""
    row = conn.execute(f"SELECT {_sql.RESOURCE_COLUMNS} FROM resources WHERE id = ?", (resource_id,)).fetchone()
    if row is None:
        old = ResourceRow(resource_id, None, "{}", now_us, now_us)
        updated_us = now_us
    else:
        old = ResourceRow._make(row)
        updated_us = bump_us(old.updated_at, now_us)
    new = old._replace(
        working_memory=old.working_memory if working_memory is NOT_GIVEN else working_memory,
        metadata=old.metadata if metadata is None else codec.dumps({**codec.loads(old.metadata), **metadata}),
        updated_at=updated_us,
    )
    conn.execute(_UPSERT_RESOURCE, new)
    return _resource(new)


def delete_resource(conn: sqlite3.Connection, resource_id: str) -> tuple[list[str], int, bool]:
    """Erase the resource's threads, their messages, its record and its
    message counter in one transaction; returns (thread ids, message count,
    record existed). An erasure that deleted a row marks the file's rebuild
    pending in the same transaction (:func:`finish_erasure` does it)."""
    with transaction(conn), marking_deletes(conn):
        thread_ids = [row[0] for row in conn.execute("SELECT id FROM threads WHERE resource_id = ?", (resource_id,))]
        messages = conn.execute("DELETE FROM messages WHERE resource_id = ?", (resource_id,)).rowcount
        conn.execute("DELETE FROM threads WHERE resource_id = ?", (resource_id,))
        conn.execute("DELETE FROM resource_message_counts WHERE resource_id = ?", (resource_id,))
        existed = conn.execute("DELETE FROM resources WHERE id = ?", (resource_id,)).rowcount == 1
    return thread_ids, messages, existed


def swap_resource_memory(
    conn: sqlite3.Connection, resource_id: str, expected: str | None, value: str, now_us: int
) -> bool:
    """Compare-and-set of a resource's working memory under one write lock:
    write (as :func:`patch_resource`) only if the stored value is ``expected``."""
    with transaction(conn):
        row = conn.execute("SELECT working_memory FROM resources WHERE id = ?", (resource_id,)).fetchone()
        if (None if row is None else row[0]) != expected:
            return False
        patch_resource_in(conn, resource_id, value, None, now_us)
    return True


def swap_thread_memory(
    conn: sqlite3.Connection,
    thread_id: str,
    expected: str | None,
    value: str,
    now_us: int,
    metadata: dict[str, Any] | None = None,
) -> bool | None:
    """Compare-and-set of ``metadata["working_memory"]`` of a thread (with
    ``metadata`` merged in the same write) under one write lock; None if the
    thread is missing."""
    with transaction(conn):
        row = conn.execute("SELECT metadata FROM threads WHERE id = ?", (thread_id,)).fetchone()
        if row is None:
            return None
        current = codec.loads(row[0]).get("working_memory")
        if (current if isinstance(current, str) else None) != expected:
            return False
        patch_thread_in(conn, thread_id, None, {**(metadata or {}), "working_memory": value}, now_us)
    return True


def write_memory(conn: sqlite3.Connection, write: MemoryWrite, decide: MemoryDecision, now_us: int) -> None:
    """Read the thread and the stored value, decide and write, in one
    transaction (the core's checks cannot be overtaken by another writer)."""
    with transaction(conn):
        thread = None if write.thread_id is None else get_thread(conn, write.thread_id)
        resource_id = write.resource_id if thread is None else thread.resource_id
        current = None
        if write.scope == "thread":
            current = None if thread is None else thread_memory(thread)
        elif resource_id is not None and (thread is not None or write.thread_id is None):
            row = conn.execute("SELECT working_memory FROM resources WHERE id = ?", (resource_id,)).fetchone()
            current = None if row is None else row[0]
        decide(thread, current)
        if write.scope == "thread":
            if write.thread_id is None:
                raise ValidationError("thread_id", "a thread-scoped working memory write names its thread", "R-WM")
            patch_thread_in(conn, write.thread_id, None, {"working_memory": write.value}, now_us)
        else:
            if resource_id is None:
                raise ValidationError(
                    "resource_id", "a resource-scoped working memory write names its resource", "R-WM"
                )
            patch_resource_in(conn, resource_id, write.value, None, now_us)

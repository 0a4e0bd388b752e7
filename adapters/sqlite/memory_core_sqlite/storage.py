"""``SQLiteStorage``: memory-core's SQLite adapter (aiosqlite, WAL).

One aiosqlite connection (one worker thread) per store. Every primitive is
one synchronous unit of work (:mod:`._ops`) handed to that thread in a
single hop, so a write transaction runs from ``BEGIN IMMEDIATE`` to
``COMMIT`` without yielding to the event loop: SQLite's write lock is held
only while SQLite works, a failed batch rolls back whole, and calls on one
store never interleave (the worker runs them one at a time, in order).
Times are INTEGER microseconds since the epoch; metadata and content are
JSON text written by :mod:`memory_core.codec`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import sqlite3
import urllib.parse
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

import aiosqlite
from memory_core.capabilities import Capability
from memory_core.clock import Clock, to_us
from memory_core.errors import AdapterClosedError, BackendError, ValidationError
from memory_core.lineage import CopyPlan
from memory_core.models import Message, Resource, Thread
from memory_core.options import ensure_folder, option_bool
from memory_core.plan import ReadParts, ReadPlan
from memory_core.retry import FaultPoint, Faults
from memory_core.storage import BaseStorage, PatchDecision, SaveDecision, foreign_data, listed, no_store
from memory_core.workmem import MemoryDecision, MemoryWrite

from memory_core_sqlite import _faults, _ops
from memory_core_sqlite._errors import is_busy
from memory_core_sqlite._locks import file_lock
from memory_core_sqlite._schema import prepare, schema_version
from memory_core_sqlite._url import (
    DEFAULT_TIMEOUT,
    MEMORY,
    SQLiteSettings,
    check_options,
    check_path_length,
    namespaced_path,
    parse_url,
)

__all__ = ["SQLiteStorage"]

P = ParamSpec("P")
T = TypeVar("T")

_FILE_SUFFIXES = ("", "-wal", "-shm", "-journal")
_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every non-empty database file


def _inspect_file(path: str, must_exist: bool, writes: bool, create_dirs: bool = False) -> None:
    """:meth:`SQLiteStorage.preflight` on a database file path (blocking);
    a missing folder passes when ``open`` would create it (``create_dirs``,
    and the file is not required to exist)."""
    check_path_length(path)
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        if must_exist:
            raise ValidationError(
                "url", f"folder {folder!r} does not exist, so neither does {path}; check the path for a typo"
            )
        if create_dirs:
            return
        # the message open() gives, naming both fixes (mkdir -p, create_dirs)
        ensure_folder(folder, create_dirs=False, url_example=f"sqlite:///{path}?create_dirs=true")
    if os.path.isdir(path):  # a file beside it: inside, it would land among the folder's own files (vectors)
        example = f"{path.rstrip(os.sep)}.db"
        raise ValidationError(
            "url", f"{path!r} is a folder, not a database file: name a file beside it, e.g. sqlite:///{example}"
        )
    try:
        with open(path, "rb") as file:
            header = file.read(len(_HEADER))
    except FileNotFoundError:
        if must_exist:
            raise ValidationError(
                "url",
                f"{path} does not exist; check the path for a typo (a command that reads a store never creates one)",
            ) from None
        return  # a new database: open() would create it
    except OSError as exc:
        raise BackendError(SQLiteStorage.backend_name, "open", f"{type(exc).__name__}: {exc}", original=exc) from exc
    if header and header != _HEADER:
        raise BackendError(SQLiteStorage.backend_name, "open", f"{path} is not an SQLite database file")
    if not (must_exist or writes):
        return
    ours, tables = _tables(path, bool(header))
    if must_exist and not ours:
        raise no_store("url", path, "file")
    if writes and not ours and tables:
        raise foreign_data("url", path, listed("table", tables))


def _tables(path: str, has_header: bool) -> tuple[bool, list[str]]:
    """Whether the SQLite file at ``path`` has memory-core's schema (a
    ``schema_version`` table with a migration), and the names of its tables,
    read without writing: an empty file (``has_header`` false) holds
    nothing. Without a ``-wal`` file
    (no writer, or all checkpointed) it is opened ``immutable`` so not even a
    ``-shm`` file is made; with one, ``mode=ro`` reads the WAL as well.

    Raises:
        BackendError: SQLite cannot read the file (corrupt, locked, no access).
    """
    if not has_header:
        return False, []
    flags = "mode=ro" if os.path.exists(path + "-wal") else "immutable=1"
    uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?" + flags
    try:
        conn = sqlite3.connect(uri, uri=True)
        try:
            tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            return schema_version(conn) > 0, tables
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise BackendError(SQLiteStorage.backend_name, "open", f"{type(exc).__name__}: {exc}", original=exc) from exc


def _no_sync(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA synchronous = OFF")


class SQLiteStorage(BaseStorage):
    """memory-core storage in one SQLite database file (or in memory).

    Construction does no I/O; ``open()`` connects, switches a file to WAL and
    creates or migrates the schema (safe when many stores and processes open
    one new file at once). See the package README for the schema.

    Args:
        path: database file (relative paths are resolved against the current
            directory at construction), or ``":memory:"`` for a private
            in-memory database. Its folder must exist (``open`` raises a
            ValidationError naming it otherwise: a misspelt path must not
            become a new, empty store), unless ``create_dirs``. The path,
            symlinks resolved, must be at most 504 bytes (SQLite's limit;
            ``open`` and ``preflight`` refuse a longer one with a
            ValidationError, field ``url``, before anything is created).
        namespace: isolates a store: ``memory.db`` with namespace ``ns`` uses
            the file ``memory-ns.db`` beside it (1-128 of ``[A-Za-z0-9_.-]``).
            In memory, every instance is already its own store.
        clock: injectable clock (see :class:`~memory_core.storage.BaseStorage`).
        timeout: seconds to wait for another connection's lock (SQLite busy
            timeout; also the retry budget while opening). Default 30.
        synchronous: ``"NORMAL"`` (default: durable against process crashes,
            may lose the last commits on power loss) or ``"FULL"``.
        create_dirs: make the file's missing folders on open (default
            False; ``?create_dirs=true`` in a URL). ``destroy`` removes the
            folders it made again, when empty.

    Raises:
        ValidationError: a bad namespace or option.
    """

    backend_name = "sqlite"
    capabilities = frozenset({Capability.PERSISTENT, Capability.SHARED_NAMESPACE})
    fault_points = frozenset({FaultPoint.BUSY, FaultPoint.LOCK_TIMEOUT, FaultPoint.STALE_WRITE})
    """File databases are persistent and shareable between instances and
    processes; a ``:memory:`` store is neither (it lives in one instance)."""

    def __init__(
        self,
        path: str | os.PathLike[str] = MEMORY,
        *,
        namespace: str | None = None,
        clock: Clock | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        synchronous: str = "NORMAL",
        create_dirs: bool = False,
    ) -> None:
        super().__init__(clock=clock)
        options = check_options({"timeout": timeout, "synchronous": synchronous})
        self.create_dirs = option_bool(create_dirs, "create_dirs")
        self.settings = SQLiteSettings(namespaced_path(os.fspath(path), namespace), **options)
        if self.settings.in_memory:  # private to this connection: gone on close, unseen by others
            self.capabilities = frozenset()
            self.fault_points = frozenset({FaultPoint.STALE_WRITE})  # no second connection can lock it
            self.faults = Faults(self.fault_points)
        self.journal_mode: str | None = None
        self._db: aiosqlite.Connection | None = None
        self._made_dirs: list[str] = []  # folders open() created, removed again by destroy()

    @classmethod
    def from_url(
        cls, url: str, *, clock: Clock | None = None, namespace: str | None = None, **options: Any
    ) -> SQLiteStorage:
        """Build a store from a URL (no I/O).

        Args:
            url: ``sqlite:///relative.db``, ``sqlite:////absolute/path.db``,
                ``sqlite://:memory:`` (also ``sqlite:///:memory:``,
                ``sqlite://``); query options ``timeout``, ``synchronous``.
            clock: injectable clock.
            namespace: see the class (a separate file beside the URL's).
            **options: ``timeout``, ``synchronous`` and ``create_dirs``;
                override the URL's.

        Raises:
            ValidationError: a malformed URL, unknown option or bad value.
        """
        path, query = parse_url(url)
        merged = check_options({**query, **options})
        return cls(path, namespace=namespace, clock=clock, **merged)

    @property
    def path(self) -> str:
        """Absolute path of the database file, or ``":memory:"``."""
        return self.settings.path

    @property
    def store_identity(self) -> Hashable:
        """``("sqlite", real path)``: the database file with every symlink
        resolved (``sqlite:///a.db``, ``sqlite:////abs/a.db``, ``./a.db`` and a
        link to it are one store). An in-memory database is this instance
        alone (the base class's identity): it equals no other store.
        """
        if self.settings.in_memory:
            return super().store_identity
        return (self.backend_name, os.path.realpath(self.settings.path))

    @property
    def store_place(self) -> str:
        """``SQLite file /abs/m.db (with its -wal, -shm and -journal files)``
        (``a SQLite database in memory`` for ``:memory:``)."""
        if self.settings.in_memory:
            return "a SQLite database in memory"
        return f"SQLite file {os.path.abspath(self.settings.path)} (with its -wal, -shm and -journal files)"

    def __repr__(self) -> str:
        return f"SQLiteStorage({self.settings.path!r})"

    def is_retryable(self, exc: Exception) -> bool:
        """SQLite "database is locked"/busy errors are transient."""
        return is_busy(exc) or super().is_retryable(exc)

    # ------------------------------------------------------------------ plumbing

    def _file_lock(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """This process's opening lock for the file (no-op for a memory db)."""
        if self.settings.in_memory:
            return contextlib.nullcontext()
        return file_lock(self.settings.path)

    async def _run(self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn(connection, *args)`` on the store's worker thread, in one hop.

        The job goes on aiosqlite's queue (``Connection._tx``, which every
        aiosqlite call goes through; one job keeps a transaction whole) with
        its outcome in a ``concurrent.futures.Future`` the running loop
        awaits. aiosqlite's own ``_execute`` hands the worker a future of the
        caller's loop instead, and the worker thread dies when that loop has
        closed before the job ends (a write cut off by ``asyncio.run``'s
        shutdown): every later call, from any loop, would then wait forever.
        A job cancelled before the worker reaches it is skipped; one already
        running ends, its outcome dropped.

        Raises:
            AdapterClosedError: the store is closed.
        """
        db = self._db
        if db is None or not db._running:
            raise AdapterClosedError("sqlite storage is closed")
        outcome: concurrent.futures.Future[T] = concurrent.futures.Future()

        def job() -> None:
            if not outcome.set_running_or_notify_cancel():
                return
            try:
                outcome.set_result(fn(db._conn, *args, **kwargs))
            except BaseException as error:  # handed to the awaiting caller
                outcome.set_exception(error)

        db._tx.put_nowait((None, job))
        return await asyncio.wrap_future(outcome)

    async def _write(self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """:meth:`_run` for a write: it passes the store's fault points first
        (a test hook, :mod:`memory_core.retry`; :mod:`._faults`): an armed
        ``busy`` makes a second connection hold the write lock for a moment,
        an armed ``lock_timeout`` makes the write meet that lock without
        waiting (SQLITE_BUSY; every second pass a table lock instead,
        SQLITE_LOCKED), an armed ``stale_write`` makes the write's
        transaction find its reads stale, each then handled as the real one
        is."""
        if not self.settings.in_memory and self.faults.take(FaultPoint.BUSY):
            await asyncio.to_thread(_faults.hold_write_lock, self.settings.path)
        if not self.settings.in_memory and self.faults.take(FaultPoint.LOCK_TIMEOUT):
            if self.faults.fired(FaultPoint.LOCK_TIMEOUT) % 2 == 0:  # every second pass: a table lock (SQLITE_LOCKED)
                await self._run(_faults.table_locked)
            await asyncio.to_thread(_faults.hold_write_lock, self.settings.path)
            return await self._run(_ops.without_waiting, lambda conn: fn(conn, *args, **kwargs))
        if self.faults.take(FaultPoint.STALE_WRITE):
            await self._run(_faults.stale_write)
        return await self._run(fn, *args, **kwargs)

    # ------------------------------------------------------------------ lifecycle

    async def preflight(self, *, must_exist: bool = False, writes: bool = False) -> None:
        """Check, creating nothing, that the database file can be opened: its
        folder exists, and the file, if there, is empty or has the SQLite
        header (a file SQLite would refuse fails here with the message
        ``open`` gives: "file is not a database"); with ``must_exist`` the
        file must be there and hold memory-core's schema (its
        ``schema_version`` table), read without writing, so ``export`` of a
        0-byte file or of another application's database is refused instead
        of ``open`` adding memory-core's tables to it; with ``writes`` an
        existing file with tables must hold that schema (``import`` into
        another application's database is refused the same way, with
        :func:`~memory_core.storage.foreign_data`). An in-memory database
        always passes.

        Raises:
            ValidationError: field ``url``: the path is longer than SQLite
                opens (:func:`~memory_core_sqlite._url.check_path_length`),
                the folder is missing, the path is a folder, or (``must_exist``) the file is missing or holds no
                memory-core store (:func:`~memory_core.storage.no_store`), or
                (``writes``) it holds another application's tables.
            BackendError: the file is not a SQLite database.
        """
        if not self.settings.in_memory:
            await asyncio.to_thread(_inspect_file, self.settings.path, must_exist, writes, self.create_dirs)

    async def _open(self) -> None:
        settings = self.settings
        if not settings.in_memory:
            await asyncio.to_thread(check_path_length, settings.path)
            folder = os.path.dirname(settings.path)
            self._made_dirs = await asyncio.to_thread(
                ensure_folder,
                folder,
                create_dirs=self.create_dirs,
                url_example=f"sqlite:///{settings.path}?create_dirs=true",
            )
        async with self._file_lock():
            connection = aiosqlite.connect(settings.path, isolation_level=None, timeout=settings.timeout)
            # aiosqlite's worker thread is not a daemon, so a store never closed
            # would keep the interpreter from exiting. A daemon loses nothing:
            # every acknowledged write was committed by its own job.
            connection._thread.daemon = True
            try:
                db = await connection
            except BaseException:
                # aiosqlite stops its worker without waiting; the worker would
                # then report to an event loop that may be closed by now.
                await asyncio.to_thread(connection._thread.join, 5)
                raise
            self._db = db
            try:
                self.journal_mode = await self._run(
                    prepare, settings.in_memory, settings.timeout, settings.synchronous, to_us(self.clock.now())
                )
            except BaseException:
                self._db = None
                await db.close()
                raise

    async def _close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            await db.close()  # after the calls already queued

    async def _destroy(self) -> None:
        if self._db is not None and not self.settings.in_memory:
            # The file is about to go: skip the fsyncs of the closing checkpoint.
            await self._run(_no_sync)
        await self._close()
        if self.settings.in_memory:
            return
        for suffix in _FILE_SUFFIXES:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.settings.path + suffix)
        for folder in self._made_dirs:  # deepest first; only what open() created, only if empty
            with contextlib.suppress(OSError):
                os.rmdir(folder)

    # ------------------------------------------------------------------ threads

    async def _insert_thread(self, thread: Thread) -> None:
        await self._write(_ops.insert_thread, thread)

    async def _copy_thread(self, plan: CopyPlan, now_us: int) -> list[str]:
        return await self._write(_ops.copy_thread, plan, now_us)

    async def _save_thread_checked(self, thread: Thread) -> Thread | None:
        return await self._write(_ops.save_thread_checked, thread)

    async def _patch_thread(
        self, thread_id: str, title: str | None, metadata: dict[str, Any] | None, now_us: int
    ) -> Thread | None:
        return await self._write(_ops.patch_thread, thread_id, title, metadata, now_us)

    async def _delete_thread(self, thread_id: str) -> int:
        return await self._write(_ops.erasing, _ops.delete_thread, thread_id)

    # ------------------------------------------------------------------ messages

    async def _save_checked(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], decide: SaveDecision, now_us: int
    ) -> tuple[list[Message], list[int]]:
        return await self._write(_ops.save_checked, thread_ids, message_ids, decide, now_us)

    async def _patch_checked(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], decide: PatchDecision, now_us: int
    ) -> list[Message]:
        return await self._write(_ops.patch_checked, thread_ids, message_ids, decide, now_us)

    async def _delete_found(self, ids: Sequence[str], now_us: int) -> int:
        return await self._write(_ops.erasing, _ops.delete_found, ids, now_us)

    # ------------------------------------------------------------------ composite reads (one hop each)

    async def _read(self, plan: ReadPlan) -> ReadParts:
        return await self._run(_ops.read, plan)

    # ------------------------------------------------------------------ resources

    async def _put_resource(self, resource: Resource) -> None:
        await self._write(_ops.put_resource, resource)

    async def _patch_resource(
        self, resource_id: str, working_memory: Any, metadata: dict[str, Any] | None, now_us: int
    ) -> Resource:
        return await self._write(_ops.patch_resource, resource_id, working_memory, metadata, now_us)

    async def _swap_resource_memory(self, resource_id: str, expected: str | None, value: str, now_us: int) -> bool:
        return await self._write(_ops.swap_resource_memory, resource_id, expected, value, now_us)

    async def _swap_thread_memory(
        self, thread_id: str, expected: str | None, value: str, now_us: int, metadata: dict[str, Any] | None = None
    ) -> bool | None:
        return await self._write(_ops.swap_thread_memory, thread_id, expected, value, now_us, metadata)

    async def _write_memory(self, write: MemoryWrite, decide: MemoryDecision, now_us: int) -> None:
        await self._write(_ops.write_memory, write, decide, now_us)

    async def _delete_resource(self, resource_id: str) -> tuple[list[str], int, bool]:
        return await self._write(_ops.delete_resource, resource_id)

    async def _finish_erasure(self) -> None:
        """Rebuild the database file when a delete left that pending
        (:func:`~memory_core_sqlite._ops.finish_erasure`: ``VACUUM`` and a
        truncating checkpoint); an in-memory database has no file (its
        deletes' marks are never read)."""
        if not self.settings.in_memory:
            await self._run(_ops.finish_erasure)

"""``PostgresStorage``: memory-core's PostgreSQL adapter (asyncpg, pooled).

Each primitive is one statement, so one round trip and one snapshot, and
atomic on its own (a statement that fails changes nothing). Writes that
must re-verify what the core read (``save_messages``, ``patch_messages``)
are calls of PL/pgSQL functions the migrations install: they lock the
threads they write to (``FOR KEY SHARE``, so a concurrent ``delete_thread``
waits), check, write and bump in one call, and raise SQLSTATE ``MC409`` ->
:class:`~memory_core.errors.StaleStateError` when the state moved.

One-level metadata merges (``update_thread``, ``update_resource``,
``update_messages``) run in Python with the reference semantics, written back
as a compare-and-set on the row's ``xmin``: PostgreSQL's JSON functions
refuse ``\\u0000`` anywhere in a document, which R-JSON allows.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, NamedTuple, TypeVar, cast

import asyncpg
from memory_core import codec
from memory_core.builders import build_message, build_resource, build_thread
from memory_core.capabilities import Capability
from memory_core.clock import TIME_MAX_US, Clock, from_us
from memory_core.errors import AdapterClosedError, StaleStateError, ValidationError
from memory_core.lineage import CopyPlan
from memory_core.loops import LoopConnections, connect_through_cancel
from memory_core.models import Message, Resource, Role, Thread
from memory_core.plan import ReadParts, ReadPlan
from memory_core.query import NOT_GIVEN, MessagePatch
from memory_core.retry import COMPARE_AND_SET, ROLLED_BACK, FaultPoint, RetryPolicy
from memory_core.storage import BaseStorage, PatchDecision, SaveDecision, foreign_data, listed, no_store, order_key
from memory_core.vector import message_text
from memory_core.workmem import MemoryDecision, MemoryWrite

from memory_core_postgres import _sql
from memory_core_postgres._schema import migrate, schema_version
from memory_core_postgres._url import (
    DEFAULT_SCHEMA,
    VECTOR_OPTIONS,
    PostgresSettings,
    check_options,
    parse_url,
    quote_ident,
    schema_name,
    server_identity,
)

__all__ = ["PostgresStorage", "is_transient", "keep_session"]

T = TypeVar("T")

STALE = "MC409"
"""SQLSTATE the schema's functions raise when the core's reads are stale."""
_STALE_STATES = frozenset({STALE, "23503"})  # 23503: a thread vanished under an insert (foreign key)
_RETRYABLE_STATES = ("40001", "40P01", "53300", "57P01", "57P02", "57P03", "08")
_ERROR_CONSUME = "another operation (2) is in progress"
"""How asyncpg's ``InternalClientError`` says a statement met its protocol in
``PROTOCOL_ERROR_CONSUME`` (see :func:`_ended_while_idle`)."""
_MAX_AT = from_us(TIME_MAX_US)
_ONCE = RetryPolicy(attempts=1)
_ROLLED_BACK_STATES = frozenset({"40P01", "40001"})  # deadlock victim, serialization failure
_FAULT_STATES = ((FaultPoint.STALE_WRITE, STALE), (FaultPoint.ROLLED_BACK, "40P01"))
_RAISE_STATE = "DO $$BEGIN RAISE EXCEPTION 'memory-core fault injection' USING ERRCODE = '{}'; END$$"
_BUMP = _sql.bump_sql("$2", "$3")
_UPSERT_THREAD = (
    "INSERT INTO threads (id, resource_id, title, metadata, meta, created_at, updated_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO UPDATE SET title = excluded.title,"
    " metadata = excluded.metadata, meta = excluded.meta, created_at = excluded.created_at,"
    " updated_at = excluded.updated_at WHERE threads.resource_id = excluded.resource_id"
)
"""Insert or wholly replace a thread; an id stored under another resource is left alone."""


def _rolled_back(exc: Exception) -> bool:
    """Whether PostgreSQL rolled the failed transaction back whole (deadlock
    victim, serialization failure): then it can run again."""
    return isinstance(exc, asyncpg.PostgresError) and exc.sqlstate in _ROLLED_BACK_STATES


async def keep_session(conn: asyncpg.Connection) -> None:
    """Pool ``reset`` hook: nothing to undo. asyncpg's default runs ``RESET
    ALL; CLOSE ALL; UNLISTEN *; ...`` on every release, a second round trip per
    statement; these stores never change session state (no ``SET`` outside a
    transaction, no LISTEN, cursors or session advisory locks), and asyncpg
    still rolls back a transaction left open before calling this."""


def _ended_while_idle(exc: Exception) -> bool:
    """Whether asyncpg refused to start a statement on a connection whose
    session the server had ended while the connection sat idle in the pool.

    Ending a session (``pg_terminate_backend``, a fast or immediate server
    shutdown, a restart) makes the server send an ErrorResponse and then
    close the socket (PostgreSQL manual, "Message Flow", "Termination").
    asyncpg reads the two on separate passes of the event loop: an
    ErrorResponse that arrives while no operation runs is one its protocol
    cannot place, so it enters its error-consuming state (``ProtocolState``
    2, ``PROTOCOL_ERROR_CONSUME`` in ``asyncpg/protocol/coreproto.pyx``,
    ``_read_server_messages``), and only a later pass reads the end of the
    stream and marks the connection closed. A pool that hands the
    connection out in between gets ``InternalClientError: cannot switch to
    state 11 (prepare) or 12 (bind and execute); another operation (2) is
    in progress`` (MagicStack/asyncpg#1069, #784). Nothing else puts an
    idle connection in that state: the only other messages a server sends
    unprompted (notices, parameter status, notifications) asyncpg reads in
    any state. The check runs before anything is written, so the statement never
    reached the server, and asyncpg then aborts the connection, which its pool
    terminates on release instead of reusing, so a retry runs on a new
    connection (asyncpg >= 0.32; 0.31's pool never gave that slot back, and a
    pool of one connection then waited forever: MagicStack/asyncpg#1307).
    Other InternalClientErrors stay not retryable: they are asyncpg's own
    faults, which a retry does not cure."""
    return isinstance(exc, asyncpg.exceptions.InternalClientError) and _ERROR_CONSUME in str(exc)


def is_transient(exc: Exception) -> bool:
    """Whether an asyncpg/socket error is worth retrying: serialization
    failures, deadlocks, too many connections, server shutdown, lost or
    refused connections, and a connection whose session the server ended
    while it was idle in the pool (:func:`_ended_while_idle`)."""
    state = getattr(exc, "sqlstate", None) or ""
    return (
        state.startswith(_RETRYABLE_STATES)
        or isinstance(exc, asyncpg.exceptions.InterfaceError | OSError)
        or _ended_while_idle(exc)
    )


class ThreadRow(NamedTuple):
    """A ``threads`` row as :data:`_sql.THREAD_COLUMNS` selects it (JSON
    columns as text); a plan row holds one from a column offset on."""

    id: str
    resource_id: str
    title: str
    metadata: str
    created_at: datetime
    updated_at: datetime
    last_message_at: datetime | None


class MessageRow(NamedTuple):
    """A ``messages`` row as :data:`_sql.MESSAGE_COLUMNS` selects it."""

    id: str
    thread_id: str
    resource_id: str
    role: Role
    type: str
    content: str
    metadata: str
    created_at: datetime
    seq: int


class ResourceRow(NamedTuple):
    """A ``resources`` row as :data:`_sql.RESOURCE_COLUMNS` selects it."""

    id: str
    working_memory: str | None
    metadata: str
    created_at: datetime
    updated_at: datetime


class PlanHead(NamedTuple):
    """The first columns of a read-plan row (:func:`_sql.read_plan`) and of
    a state row (:func:`_sql.read_state`, where ``ord`` holds a message's
    ``xmin``)."""

    kind: int
    """_sql.THREAD, RESOURCE, MESSAGE_PAGE, THREAD_PAGE or WINDOW."""
    ord: int | None
    """A window's 1-based number; a state row's message version."""
    total: int | None
    """A page's count (on every row of the page)."""


# The decoders unpack a row by name through its typed shape (a slice of the
# record, no NamedTuple built: a row costs what a tuple unpack costs).


def _thread(row: Any, offset: int = 0) -> Thread:
    id, resource_id, title, metadata, created_at, updated_at, last = cast(ThreadRow, row[offset : offset + 7])
    return build_thread(id, resource_id, codec.loads(title), codec.loads(metadata), created_at, updated_at, last)


def _message(row: Any, offset: int = 0) -> Message:
    id, thread_id, resource_id, role, type, content, metadata, created_at, seq = cast(
        MessageRow, row[offset : offset + 9]
    )
    return build_message(
        id,
        thread_id,
        role,
        codec.loads(content),
        resource_id,
        codec.loads(type),
        codec.loads(metadata),
        created_at,
        seq,
    )


def _resource(row: Any, offset: int = 0) -> Resource:
    id, working_memory, metadata, created_at, updated_at = cast(ResourceRow, row[offset : offset + 5])
    memory = None if working_memory is None else codec.loads(working_memory)
    return build_resource(id, memory, codec.loads(metadata), created_at, updated_at)


def _search_text(message: Message) -> str:
    """What the full-text column indexes (NUL is not text in PostgreSQL)."""
    return message_text(message).replace("\x00", " ")


class PostgresStorage(BaseStorage):
    """memory-core storage in one PostgreSQL schema.

    Construction does no I/O; ``open()`` creates the connection pool and
    creates or migrates the schema (safe when many processes open one new
    database at once). See the package README for the layout.

    Args:
        dsn: a libpq URL, ``postgresql://user:password@host:5432/database``
            (this adapter's options already removed; see :meth:`from_url`).
        schema: the schema holding the tables (default ``memory_core``).
        namespace: isolates a store: the schema ``<schema>_<namespace>``.
        clock: injectable clock (see :class:`~memory_core.storage.BaseStorage`).
        min_size / max_size: connection pool bounds (default 1 and 10).
        text_search_config: text search configuration of the full-text
            column (default ``simple``).

    Raises:
        ValidationError: a bad schema, namespace or option.
    """

    backend_name = "postgresql"
    loop_bound = True
    capabilities = frozenset({Capability.PERSISTENT, Capability.SHARED_NAMESPACE})
    fault_points = frozenset({FaultPoint.STALE_WRITE, FaultPoint.ROLLED_BACK, FaultPoint.CONNECTION_LOST})

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        namespace: str | None = None,
        clock: Clock | None = None,
        min_size: int = 1,
        max_size: int = 10,
        text_search_config: str = "simple",
    ) -> None:
        super().__init__(clock=clock)
        options = check_options(
            {"schema": schema, "min_size": min_size, "max_size": max_size, "text_search_config": text_search_config}
        )
        options["schema"] = schema_name(options["schema"], namespace)
        self.settings = PostgresSettings(dsn, **options)
        self._pools: LoopConnections[asyncpg.Pool] = LoopConnections()

    @classmethod
    def from_url(
        cls, url: str, *, clock: Clock | None = None, namespace: str | None = None, **options: Any
    ) -> PostgresStorage:
        """Build a store from a URL (no I/O).

        Args:
            url: ``postgresql://`` or ``postgres://`` URL; query options
                ``schema``, ``min_size``, ``max_size``, ``text_search_config``
                (others go to asyncpg, e.g. ``sslmode``).
            clock: injectable clock.
            namespace: see the class.
            **options: the same options; they override the URL's.

        Raises:
            ValidationError: a malformed URL, unknown option or bad value.
        """
        dsn, query = parse_url(url)
        shared = {k: v for k, v in query.items() if k not in VECTOR_OPTIONS}
        merged = check_options({**shared, **options})
        return cls(dsn, namespace=namespace, clock=clock, **merged)

    @property
    def schema(self) -> str:
        """The schema this store's tables live in (unquoted)."""
        return self.settings.schema

    @property
    def store_identity(self) -> Hashable:
        """``("postgresql", servers, database, schema)``: the servers and the
        database the URL reaches (:func:`memory_core_postgres._url.server_identity`:
        loopback spellings are one host, libpq's defaults fill what the URL
        leaves out) and the schema (namespace included).
        """
        return (self.backend_name, *server_identity(self.settings.dsn), self.settings.schema)

    @property
    def store_place(self) -> str:
        """``PostgreSQL schema 'memory_core' (every table in it)``: what
        :meth:`destroy` drops."""
        return f"PostgreSQL schema {self.settings.schema!r} (every table in it)"

    def __repr__(self) -> str:
        return f"PostgresStorage(schema={self.settings.schema!r})"

    def is_retryable(self, exc: Exception) -> bool:
        """Serialization failures, deadlocks, lost or refused connections."""
        return is_transient(exc) or super().is_retryable(exc)

    # ------------------------------------------------------------------ plumbing

    @property
    def pool(self) -> asyncpg.Pool:
        """The running event loop's connection pool (each connection's
        search_path is the schema). asyncpg connections belong to the loop
        that made them, so each loop using the store has its own pool
        (``loop_bound``): a pool is never used from a loop that did not make
        it (a closed loop's connections are dropped, not reused mid-statement).

        Raises:
            AdapterClosedError: no pool in this loop (the store is closed, or
                not opened in this loop: public methods open it first).
        """
        pool = self._pools.get()
        if pool is None:
            raise AdapterClosedError("postgresql storage is closed")
        return pool

    async def _write(self, call: Callable[[], Awaitable[T]], *, retry: bool = True) -> T:
        """Run a write; the schema's stale-state errors become StaleStateError.
        A write PostgreSQL chose as a deadlock's victim (40P01) or could not
        serialize (40001) was rolled back whole, so ``call`` (one statement,
        or a whole transaction) runs again under
        :data:`memory_core.retry.ROLLED_BACK` (10 attempts, full-jitter
        pauses; PostgreSQL manual, "Deadlocks": retry the aborted
        transaction); ``retry`` False inside a caller's transaction, which
        must start over whole.

        Every write passes the store's fault points first (a test hook,
        :mod:`memory_core.retry`): an armed ``stale_write`` or
        ``rolled_back`` makes the server raise MC409 or 40P01, an armed
        ``connection_lost`` makes the server end the pooled connection's
        session, each then handled as the real one is."""

        async def once() -> T:
            try:
                await self._fire_faults()
                return await call()
            except asyncpg.PostgresError as exc:
                if exc.sqlstate in _STALE_STATES:
                    raise StaleStateError(str(exc)) from exc
                raise

        return await (ROLLED_BACK if retry else _ONCE).run(once, _rolled_back)

    async def _fire_faults(self) -> None:
        """Produce each armed fault of ``fault_points`` as the server's own error."""
        for point, state in _FAULT_STATES:
            if self.faults.take(point):
                await self.pool.execute(_RAISE_STATE.format(state))
        if self.faults.take(FaultPoint.CONNECTION_LOST):
            await self.pool.execute("SELECT pg_terminate_backend(pg_backend_pid())")

    # ------------------------------------------------------------------ lifecycle

    async def preflight(self, *, must_exist: bool = False, writes: bool = False) -> None:
        """Check, creating nothing, that the store is there when it must be.

        With ``must_exist`` (a command that reads or deletes existing data:
        ``export``, ``copy``'s source, ``prune``), one connection checks that
        the store's schema exists and holds memory-core's tables (its
        ``schema_version``), so a misspelt ``?schema=`` is an error instead
        of an empty export; with ``writes`` (``import``, ``copy``'s
        destination) a schema that exists must hold no tables or
        memory-core's. Nothing is written. Without either nothing is
        checked: ``open`` creates the schema.

        Raises:
            ValidationError: field ``schema``, with ``must_exist``: the schema
                does not exist, or holds no memory-core store; with
                ``writes``: it holds another application's tables
                (:func:`~memory_core.storage.foreign_data`).
            BackendError: the server could not be reached or refused the login.
        """
        if not (must_exist or writes):
            return
        schema = self.settings.schema
        with self._guard("open"):
            exists, version, tables = await connect_through_cancel(self._find_store)
        if must_exist and not exists:
            raise ValidationError("schema", f"{schema!r} does not exist in the database; check ?schema= in the URL")
        if must_exist and not version:
            raise no_store("schema", schema, "schema")
        if writes and not version and tables:
            raise foreign_data("schema", schema, listed("table", tables))

    async def _find_store(self) -> tuple[bool, int, list[str]]:
        """Whether the schema exists, its schema version (0: none) and its tables."""
        schema = self.settings.schema
        conn = await asyncpg.connect(self.settings.dsn)
        try:
            exists = await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema)
            version = await schema_version(conn, schema) if exists else 0
            tables = [
                row[0] for row in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = $1", schema)
            ]
            return bool(exists), version, tables
        finally:
            await conn.close()

    async def _open(self) -> None:
        # asyncpg cut mid-connect leaves a future behind: a cancelled open
        # lets the pool come up, then closes it (connect_through_cancel).
        pool = await connect_through_cancel(self._new_pool, asyncpg.Pool.close)
        # closed in its loop by the loop's end at the latest: a pool dropped with a loop
        # that asyncio.run ended left its connections unclosed (ResourceWarning)
        await self._pools.keep(pool, pool.close)

    async def _new_pool(self) -> asyncpg.Pool:
        """A pool on the store's schema, migrated (closed again if that fails)."""
        settings = self.settings
        pool = await asyncpg.create_pool(
            settings.dsn,
            min_size=settings.min_size,
            max_size=settings.max_size,
            server_settings={"search_path": quote_ident(settings.schema)},
            reset=keep_session,
        )
        try:
            async with pool.acquire() as conn:
                await migrate(conn, settings.schema)
        except BaseException:
            await pool.close()
            raise
        return pool

    async def _close(self) -> None:
        await self._pools.close_all()

    async def _destroy(self) -> None:
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute("SET LOCAL synchronous_commit = off")  # the data is being thrown away
            await conn.execute(f"DROP SCHEMA IF EXISTS {quote_ident(self.settings.schema)} CASCADE")

    # ------------------------------------------------------------------ threads

    @staticmethod
    def _thread_args(thread: Thread) -> tuple[Any, ...]:
        return (
            thread.id,
            thread.resource_id,
            codec.dumps(thread.title),
            codec.dumps(thread.metadata),
            _sql.meta_document(thread.metadata),
            thread.created_at,
            thread.updated_at,
        )

    async def _save_thread_checked(self, thread: Thread) -> Thread | None:
        # One statement: the upsert (a no-op for an id of another resource)
        # and the thread's newest message, which a replace keeps.
        row = await self.pool.fetchrow(
            f"WITH saved AS ({_UPSERT_THREAD} RETURNING 1)"
            " SELECT EXISTS (SELECT 1 FROM saved), (SELECT max(created_at) FROM messages WHERE thread_id = $1)",
            *self._thread_args(thread),
        )
        saved, last_message_at = row
        if not saved:
            return None
        return thread if last_message_at is None else replace(thread, last_message_at=last_message_at)

    async def _insert_thread(self, thread: Thread) -> None:
        status = await self.pool.execute(
            "INSERT INTO threads (id, resource_id, title, metadata, meta, created_at, updated_at)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
            *self._thread_args(thread),
        )
        if status != "INSERT 0 1":
            raise StaleStateError(f"thread {thread.id!r} exists")

    async def _copy_thread(self, plan: CopyPlan, now_us: int) -> list[str]:
        # One statement (:func:`_sql.copy_thread`): one round trip, one
        # snapshot of the source (a racing append is wholly in or out).
        sql, params = _sql.copy_thread(plan, self._thread_args(plan.thread), from_us(now_us), _MAX_AT)
        row = await self._write(lambda: self.pool.fetchrow(sql, *params))
        if row[1] is not None:
            raise plan.too_large(row[1])
        if not row[0]:
            raise StaleStateError(f"thread {plan.thread.id!r} exists")
        return list(row[2])

    async def _patch_thread(
        self, thread_id: str, title: str | None, metadata: dict[str, Any] | None, now_us: int
    ) -> Thread | None:
        now = from_us(now_us)
        new_title = None if title is None else codec.dumps(title)
        if metadata is None:
            row = await self.pool.fetchrow(
                f"UPDATE threads SET title = COALESCE($4::json, title), updated_at = {_BUMP}"
                f" WHERE id = $1 RETURNING {_sql.THREAD_COLUMNS}",
                thread_id,
                now,
                _MAX_AT,
                new_title,
            )
            return None if row is None else _thread(row)
        thread = await self._merge_thread_metadata(thread_id, new_title, metadata, now, lambda _: True)
        return thread if isinstance(thread, Thread) else None

    async def _merge_thread_metadata(
        self,
        thread_id: str,
        title: str | None,
        metadata: dict[str, Any],
        now: datetime,
        accept: Callable[[dict[str, Any]], bool],
    ) -> Thread | bool | None:
        """Set ``title`` (JSON text or None: keep), merge ``metadata`` one level
        and bump, if ``accept(stored metadata)``: the updated thread, False
        when refused, None when missing. A compare-and-set on ``xmin``, retried
        while the row keeps changing (the merge cannot run in SQL: see the
        module docstring)."""
        for _ in COMPARE_AND_SET.tries():
            old = await self.pool.fetchrow("SELECT metadata, xmin FROM threads WHERE id = $1", thread_id)
            if old is None:
                return None
            stored = codec.loads(old[0])
            if not accept(stored):
                return False
            merged = {**stored, **metadata}
            row = await self.pool.fetchrow(
                f"UPDATE threads SET title = COALESCE($4::json, title), metadata = $5, meta = $6,"
                f" updated_at = {_BUMP} WHERE id = $1 AND xmin = $7 RETURNING {_sql.THREAD_COLUMNS}",
                thread_id,
                now,
                _MAX_AT,
                title,
                codec.dumps(merged),
                _sql.meta_document(merged),
                old[1],
            )
            if row is not None:
                return _thread(row)
        raise StaleStateError(f"thread {thread_id!r} kept changing under a metadata update")

    async def _swap_thread_memory(
        self, thread_id: str, expected: str | None, value: str, now_us: int, metadata: dict[str, Any] | None = None
    ) -> bool | None:
        def holds_expected(metadata: dict[str, Any]) -> bool:
            current = metadata.get("working_memory")
            return (current if isinstance(current, str) else None) == expected

        patch = {**(metadata or {}), "working_memory": value}
        done = await self._merge_thread_metadata(thread_id, None, patch, from_us(now_us), holds_expected)
        return None if done is None else done is not False

    async def _delete_thread(self, thread_id: str) -> int:
        # One call of the schema's delete_thread: the thread row first (writers
        # into it lock it too), its messages by cascade, its message counter
        # off its resource's. A deadlock with a racing write is retried (_write).
        return int(await self._write(lambda: self.pool.fetchval("SELECT delete_thread($1)", thread_id)))

    # ------------------------------------------------------------------ messages

    async def _save_checked(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], decide: SaveDecision, now_us: int
    ) -> tuple[list[Message], list[int]]:
        """Two statements: the state (:meth:`_state`, one snapshot),
        ``decide`` in Python, then :meth:`_write_saves`, whose
        ``save_messages`` re-verifies the read (MC409 -> StaleStateError:
        the core retries)."""
        threads, stored, _ = await self._state(thread_ids, message_ids)
        records, bump = decide(threads, stored)
        return records, await self._write_saves(records, bump, now_us)

    async def _write_saves(self, messages: Sequence[Message], bump: Sequence[str], now_us: int) -> list[int]:
        """One ``save_messages`` call: verify what was read (each record's
        thread under its resource; new ids absent, known ids under the same
        resource, in a thread to bump; else MC409), upsert the records with
        new ids taking the next sequences, bump; returns the sequences."""
        owners = {m.thread_id: m.resource_id for m in messages}
        args = (
            [m.id for m in messages],
            [m.sequence for m in messages],
            [m.thread_id for m in messages],
            [m.resource_id for m in messages],
            [m.role for m in messages],
            [codec.dumps(m.type) for m in messages],
            [codec.dumps(m.content) for m in messages],
            [codec.dumps(m.metadata) for m in messages],
            [_sql.meta_document(m.metadata) for m in messages],
            [m.created_at for m in messages],
            [_search_text(m) for m in messages],
            self.settings.text_search_config,
            list(owners),
            list(owners.values()),
            list(bump),
            from_us(now_us),
            _MAX_AT,
        )
        sql = (
            "SELECT save_messages($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[],"
            " $7::text[], $8::text[], $9::text[], $10::timestamptz[], $11::text[], $12::text::regconfig,"
            " $13::text[], $14::text[], $15::text[], $16::timestamptz, $17::timestamptz)"
        )
        sequences = await self._write(lambda: self.pool.fetchval(sql, *args))
        return [int(seq) for seq in sequences]

    async def _patch_checked(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], decide: PatchDecision, now_us: int
    ) -> list[Message]:
        """Two statements: the state with each message's ``xmin`` (one
        snapshot), ``decide`` in Python (the merge and R-SIZE run here: see the
        module docstring), then ``patch_messages``, whose compare-and-set on
        those ``xmin`` re-verifies the read (MC409 -> StaleStateError: the
        core retries). The records returned are the ones written, so nothing
        is read after. asyncpg runs one statement per round trip, so a
        transaction holding the read and the write would cost four.

        When that compare-and-set finds a row changed (writers updating the
        same messages at once), the attempt is repeated once holding the
        messages' row locks from the read to the write (a transaction: five
        round trips), which no other writer can get in between, so a burst of
        updates to one message all land instead of running out of retries."""
        try:
            return await self._patch_attempt(self.pool, thread_ids, message_ids, decide, now_us)
        except StaleStateError:
            return await self._write(lambda: self._patch_locked(thread_ids, message_ids, decide, now_us))

    async def _patch_locked(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], decide: PatchDecision, now_us: int
    ) -> list[Message]:
        """:meth:`_patch_attempt` in a transaction holding the messages' row
        locks (taken in id order) from the read to the write."""
        async with self.pool.acquire() as conn, conn.transaction():
            # Threads before messages, each by id, as every write locks them.
            await conn.execute(
                "SELECT 1 FROM threads WHERE id IN (SELECT thread_id FROM messages WHERE id = ANY($1::text[]))"
                " OR id = ANY($2::text[]) ORDER BY id FOR NO KEY UPDATE",
                list(message_ids),
                list(thread_ids),
            )
            await conn.execute(
                "SELECT 1 FROM messages WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE", sorted(message_ids)
            )
            return await self._patch_attempt(conn, thread_ids, message_ids, decide, now_us)

    async def _patch_attempt(
        self,
        db: Any,
        thread_ids: Sequence[str],
        message_ids: Sequence[str],
        decide: PatchDecision,
        now_us: int,
    ) -> list[Message]:
        """One read, ``decide`` and compare-and-set write on ``db`` (the pool
        or a connection inside a transaction)."""
        targets, stored, versions = await self._state(thread_ids, message_ids, db)
        patches, bump = decide(targets, stored)
        if not patches:
            return []
        return await self._write_patches(patches, {m.id: (m, versions[m.id]) for m in stored}, bump, now_us, db)

    async def _write_patches(
        self,
        patches: Sequence[MessagePatch],
        stored: dict[str, tuple[Message, int]],
        bump: Sequence[str],
        now_us: int,
        db: Any,
    ) -> list[Message]:
        """Apply ``patches`` (``decide``'s, so of stored ids only) to the
        stored messages (``id -> (message, xmin)``) with one
        ``patch_messages`` call on ``db`` (the pool, or a connection in a
        transaction); returns the patched messages as written."""
        new: list[Message] = []
        versions: list[int] = []
        owners: dict[str, str] = {}
        for patch in patches:
            old, version = stored[patch.id]
            if patch.thread_id is not None:
                if old.resource_id is None:
                    raise ValidationError("message.resource_id", f"stored message {old.id!r} has no resource", "R-OWN")
                owners[patch.thread_id] = old.resource_id
            new.append(patch.apply(old))
            versions.append(version)
        contents = [codec.dumps(m.content) for m in new]
        metadatas = [codec.dumps(m.metadata) for m in new]
        args = (
            [m.id for m in new],
            versions,
            [m.thread_id for m in new],
            [m.role for m in new],
            [codec.dumps(m.type) for m in new],
            contents,
            metadatas,
            [_sql.meta_document(m.metadata) for m in new],
            [_search_text(m) for m in new],
            self.settings.text_search_config,
            list(owners),
            list(owners.values()),
            list(bump),
            from_us(now_us),
            _MAX_AT,
        )
        sql = (
            "SELECT patch_messages($1::text[], $2::xid[], $3::text[], $4::text[], $5::text[], $6::text[],"
            " $7::text[], $8::text[], $9::text[], $10::text::regconfig, $11::text[], $12::text[], $13::text[],"
            " $14::timestamptz, $15::timestamptz)"
        )
        await self._write(lambda: db.execute(sql, *args), retry=db is self.pool)
        # decoded from the text written: as stored, sharing nothing with the caller's patch
        return [
            build_message(
                m.id,
                m.thread_id,
                m.role,
                codec.loads(c),
                m.resource_id,
                m.type,
                codec.loads(d),
                m.created_at,
                m.sequence,
            )
            for m, c, d in zip(new, contents, metadatas, strict=True)
        ]

    async def _delete_found(self, ids: Sequence[str], now_us: int) -> int:
        # One call of the schema's delete_messages: the threads bumped and
        # counted down are those of the rows it deleted; a racing delete of the
        # same row waits for ours and then counts nothing.
        removed = await self._write(
            lambda: self.pool.fetchval(
                "SELECT delete_messages($1::text[], $2::timestamptz, $3::timestamptz)",
                list(ids),
                from_us(now_us),
                _MAX_AT,
            )
        )
        return int(removed)

    async def _read(self, plan: ReadPlan) -> ReadParts:
        """The whole plan in one statement (:func:`_sql.read_plan`): one round
        trip, one snapshot. Messages by id and resource ids, which the core
        asks for alone, are one statement each."""
        if plan.message_ids or plan.resource_ids is not None:
            return await self._read_by_id(plan)
        sql, params = _sql.read_plan(plan)
        if not sql:
            return ReadParts()
        threads: dict[str, Thread] = {}
        resources: dict[str, Resource] = {}
        messages: list[Message] = []
        thread_items: list[Thread] = []
        windows: list[list[Message]] = [[] for _ in plan.windows]
        message_total = thread_total = 0
        for row in await self.pool.fetch(sql, *params):
            kind, number, total = cast(PlanHead, row[:3])
            if kind == _sql.MESSAGE_PAGE:
                message_total = int(total or 0)
                if row[_sql.PLAN_MESSAGE_AT] is not None:  # NULL columns: the page is empty
                    messages.append(_message(row, _sql.PLAN_MESSAGE_AT))
            elif kind == _sql.THREAD:
                thread = _thread(row, _sql.PLAN_THREAD_AT)
                threads[thread.id] = thread
            elif kind == _sql.RESOURCE:
                resource = _resource(row, _sql.PLAN_RESOURCE_AT)
                resources[resource.id] = resource
            elif kind == _sql.THREAD_PAGE:
                thread_total = int(total or 0)
                if row[_sql.PLAN_THREAD_AT] is not None:  # NULL columns: the page is empty
                    thread_items.append(_thread(row, _sql.PLAN_THREAD_AT))
            else:
                windows[int(number or 0) - 1].append(_message(row, _sql.PLAN_MESSAGE_AT))
        messages.sort(key=order_key, reverse=plan.messages is not None and plan.messages.descending)
        if plan.thread_page is not None:
            thread_items.sort(key=plan.thread_page.key, reverse=plan.thread_page.descending)
        for window in windows:
            window.sort(key=order_key)
        return ReadParts(threads, resources, message_total, messages, thread_total, thread_items, windows)

    async def _read_by_id(self, plan: ReadPlan) -> ReadParts:
        """``plan.message_ids`` and ``plan.resource_ids`` (one statement each)."""
        found: list[Message] = []
        ids: list[str] = []
        if plan.message_ids:
            sql = f"SELECT {_sql.MESSAGE_COLUMNS} FROM messages WHERE id = ANY($1::text[])"
            found = [_message(row) for row in await self.pool.fetch(sql, list(plan.message_ids))]
        if plan.resource_ids is not None:
            sql, params = _sql.resource_ids(plan.resource_ids.after, plan.resource_ids.limit)
            ids = [row[0] for row in await self.pool.fetch(sql, *params)]
        return ReadParts(found_messages=found, resource_ids=ids)

    async def _state(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], db: Any = None
    ) -> tuple[dict[str, Thread], list[Message], dict[str, int]]:
        """The threads (by id) and the messages found among these ids, for a
        write's checks, in one statement on ``db`` (default the pool), with
        each message's ``xmin``."""
        sql, params = _sql.read_state(list(thread_ids), list(message_ids))
        threads: dict[str, Thread] = {}
        messages: list[Message] = []
        versions: dict[str, int] = {}
        for row in await (self.pool if db is None else db).fetch(sql, *params):
            kind, version, _ = cast(PlanHead, row[:3])
            if kind == _sql.THREAD:
                thread = _thread(row, _sql.PLAN_THREAD_AT)
                threads[thread.id] = thread
            else:
                message = _message(row, _sql.PLAN_MESSAGE_AT)
                versions[message.id] = int(version or 0)
                messages.append(message)
        return threads, messages, versions

    # ------------------------------------------------------------------ resources

    async def _put_resource(self, resource: Resource) -> None:
        await self.pool.execute(
            "INSERT INTO resources (id, working_memory, metadata, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)"
            " ON CONFLICT (id) DO UPDATE SET working_memory = excluded.working_memory, metadata = excluded.metadata,"
            " created_at = excluded.created_at, updated_at = excluded.updated_at",
            resource.id,
            None if resource.working_memory is None else codec.dumps(resource.working_memory),
            codec.dumps(resource.metadata),
            resource.created_at,
            resource.updated_at,
        )

    async def _patch_resource(
        self, resource_id: str, working_memory: Any, metadata: dict[str, Any] | None, now_us: int
    ) -> Resource:
        now = from_us(now_us)
        keep = working_memory is NOT_GIVEN
        memory = None if keep or working_memory is None else codec.dumps(working_memory)
        for _ in COMPARE_AND_SET.tries():
            old = None
            if metadata is not None:
                old = await self.pool.fetchrow(
                    f"SELECT {_sql.RESOURCE_COLUMNS}, xmin FROM resources WHERE id = $1", resource_id
                )
            merged = None if metadata is None else codec.dumps({**(codec.loads(old[2]) if old else {}), **metadata})
            # Insert, or update the row as read (xmin) when metadata is merged.
            row = await self.pool.fetchrow(
                "INSERT INTO resources AS r (id, working_memory, metadata, created_at, updated_at)"
                " VALUES ($1, $4::json, COALESCE($6::json, '{}'), $2, $2) ON CONFLICT (id) DO UPDATE SET"
                " working_memory = CASE WHEN $5 THEN r.working_memory ELSE excluded.working_memory END,"
                " metadata = COALESCE($6::json, r.metadata),"
                " updated_at = LEAST(GREATEST($2, r.updated_at + interval '1 microsecond'), $3)"
                " WHERE $7::xid IS NULL AND NOT $8 OR r.xmin = $7::xid"
                f" RETURNING {_sql.RESOURCE_COLUMNS}",
                resource_id,
                now,
                _MAX_AT,
                memory,
                keep,
                merged,
                None if old is None else old[5],
                metadata is not None,
            )
            if row is not None:
                return _resource(row)
        raise StaleStateError(f"resource {resource_id!r} kept changing under update_resource")

    async def _swap_resource_memory(self, resource_id: str, expected: str | None, value: str, now_us: int) -> bool:
        now = from_us(now_us)
        if expected is None:  # missing, or holding no working memory
            status = await self.pool.execute(
                "INSERT INTO resources AS r (id, working_memory, metadata, created_at, updated_at)"
                " VALUES ($1, $4::json, '{}', $2, $2) ON CONFLICT (id) DO UPDATE SET"
                " working_memory = excluded.working_memory,"
                " updated_at = LEAST(GREATEST($2, r.updated_at + interval '1 microsecond'), $3)"
                " WHERE r.working_memory IS NULL",
                resource_id,
                now,
                _MAX_AT,
                codec.dumps(value),
            )
            return bool(status == "INSERT 0 1")
        # codec.dumps is deterministic, so equal strings have equal stored text.
        status = await self.pool.execute(
            f"UPDATE resources SET working_memory = $4::json, updated_at = {_BUMP}"
            " WHERE id = $1 AND working_memory::text = $5",
            resource_id,
            now,
            _MAX_AT,
            codec.dumps(value),
            codec.dumps(expected),
        )
        return bool(status == "UPDATE 1")

    async def _write_memory(self, write: MemoryWrite, decide: MemoryDecision, now_us: int) -> None:
        """An unconditional write to the working memory of a thread's
        resource is one statement: it finds the thread's owner and upserts
        its record only when the owner is the one asked for, returning the
        owner it found (no thread: NULL) so a refused write becomes the
        core's typed error. Other writes: the core's default (a
        thread's metadata merge runs in Python: see the module docstring)."""
        if write.scope != "resource" or write.conditional or write.thread_id is None:
            return await super()._write_memory(write, decide, now_us)
        row = await self.pool.fetchrow(
            "WITH t AS (SELECT resource_id FROM threads WHERE id = $1),"
            " w AS (INSERT INTO resources AS r (id, working_memory, metadata, created_at, updated_at)"
            " SELECT t.resource_id, $4::json, '{}', $2, $2 FROM t WHERE $5::text IS NULL OR t.resource_id = $5"
            " ON CONFLICT (id) DO UPDATE SET working_memory = excluded.working_memory,"
            " updated_at = LEAST(GREATEST($2, r.updated_at + interval '1 microsecond'), $3) RETURNING 1)"
            " SELECT (SELECT resource_id FROM t), (SELECT count(*) FROM w)",
            write.thread_id,
            from_us(now_us),
            _MAX_AT,
            codec.dumps(write.value),
            write.resource_id,
        )
        owner, written = row
        if written:
            return None
        decide(None if owner is None else Thread(write.thread_id, owner), None)
        raise StaleStateError(f"thread {write.thread_id!r} changed while writing its working memory")

    async def _delete_resource(self, resource_id: str) -> tuple[list[str], int, bool]:
        # One call of the schema's delete_resource, so one transaction: the
        # threads locked by id, deleted (their messages cascade, counted by
        # their counters), the record, the resource's counter. A deadlock with
        # a racing message write is retried (_write).
        row = await self._write(lambda: self.pool.fetchrow("SELECT * FROM delete_resource($1)", resource_id))
        thread_ids, messages, existed = row
        return list(thread_ids), int(messages), bool(existed)

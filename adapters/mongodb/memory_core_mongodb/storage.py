"""``MongoStorage``: memory-core primitives on MongoDB (PyMongo's ``AsyncMongoClient``).

The core (:class:`memory_core.storage.BaseStorage`) validates input and
composes semantics; this class answers each primitive with MongoDB queries
and single atomic updates, a whole read plan with one ``aggregate``
(:mod:`memory_core_mongodb._plan`) and a message save with its checks inside
its own transaction. See the package README for the layout, the indexes,
shard keys, round trips and the batch-atomicity choice.

Cancellation: every write (a single-document command, a transaction, the
ordered plan of a store without transactions) runs through
:func:`_settled`, so a cancelled caller waits for the write's outcome
(within the client's ``timeoutMS``) before ``CancelledError`` propagates:
a command PyMongo has sent is applied by the server even when the call is
cut, so the caller would otherwise hear "cancelled" while the write could
still land. The next caller sees the write completely or not at all.
Reads are cut at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple, TypeVar

import pymongo
from pymongo import ASCENDING, AsyncMongoClient, DeleteMany, ReturnDocument, UpdateOne
from pymongo import common as pymongo_common
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError, ClientBulkWriteException, DuplicateKeyError, PyMongoError

from memory_core.capabilities import Capability
from memory_core.clock import TIME_MAX_US, Clock, bump_us, from_us, to_us
from memory_core.errors import AdapterClosedError, StaleStateError
from memory_core.lineage import CopyPlan
from memory_core.loops import GivenClientLoop, LoopConnections, connect_through_cancel
from memory_core.models import Message, Resource, Thread
from memory_core.options import check_option_names, hide_password
from memory_core.plan import ReadParts, ReadPlan, ResourceIdQuery
from memory_core.query import NOT_GIVEN, MessagePatch
from memory_core.retry import FaultPoint, RetryPolicy
from memory_core.storage import BaseStorage, PatchDecision, SaveDecision, foreign_data, listed, no_store
from memory_core.storage.composed import erase_threads
from memory_core.workmem import MemoryDecision, MemoryWrite
from memory_core_mongodb._copy import copy_pipeline, staging_id, stale_staging
from memory_core_mongodb._counters import CountDeltas, backfill_counters, thread_count_expr
from memory_core_mongodb._errors import is_transient
from memory_core_mongodb._layout import (
    LAST_ASC,
    LAST_DESC,
    MESSAGE_COUNT,
    content_set_expr,
    last_fields,
    last_message_at,
    merge_expr,
    message_doc,
    message_from_doc,
    new_thread_fields,
    resource_doc,
    resource_from_doc,
    thread_doc,
    thread_from_doc,
    us,
)
from memory_core_mongodb._plan import (
    Aggregate,
    doomed_aggregate,
    doomed_parts,
    read_aggregate,
    read_parts,
    state_aggregate,
    state_parts,
)
from memory_core_mongodb._schema import (
    COUNTER_ID,
    COUNTERS,
    MESSAGES,
    MESSAGES_THREAD_ORDER,
    RESOURCES,
    THREADS,
    THREADS_RESOURCE_CREATED,
    ensure_schema,
)
from memory_core_mongodb._sockets import close_cut_off_connects
from memory_core_mongodb._url import database_name, url_hosts, url_options

__all__ = ["MongoStorage", "supports_transactions"]

log = logging.getLogger(__name__)

Doc = dict[str, Any]
Session = AsyncClientSession | None

T = TypeVar("T")

close_cut_off_connects()  # a connect cut off by asyncio.run's end left its socket open

_URI_OPTIONS = frozenset(pymongo_common.URI_OPTIONS_VALIDATOR_MAP)
"""PyMongo's URI options, lower-cased (it reads them case-insensitively)."""
TIMEOUT_MS = 60_000
"""The bound of every MongoDB call when the URL and options set none
(PyMongo's ``timeoutMS``, client-side operation timeout, and
``socketTimeoutMS``, which also bounds the handshake of a connection a call
opens, where ``timeoutMS`` does not reach): a call the server never answers fails as a retryable
``BackendError`` instead of hanging; ``timeoutMS=0`` in the URL or options lifts
it."""
FIRST_CONTACT_MS = 5_000
"""The bound of a store's first call to its server (the open's ``hello``,
the preflight's ``listCollections``) when the URL and options set no
``serverSelectionTimeoutMS`` (given, that bounds it): an unreachable server
is an error within seconds, not after :data:`TIMEOUT_MS`. Needed because
PyMongo's ``timeoutMS`` replaces ``serverSelectionTimeoutMS`` (it selects a
server for as long as ``timeoutMS`` allows), so the URL's own bound went
unheard while :data:`TIMEOUT_MS` was added."""
_SELECTION = "serverselectiontimeoutms"
_BOUNDS = frozenset({"timeoutms", "sockettimeoutms", "connecttimeoutms"})
"""Options that already bound each call (given, :data:`TIMEOUT_MS` is not added)."""
_RACED_UPSERTS = RetryPolicy(attempts=5)
"""Upserts tried again at once while a racing upsert or delete hides the
result (the sequence counter's first upsert, a resource record)."""
_WRITE_COMMANDS = ("insert", "update", "delete", "findAndModify", "bulkWrite")
"""The server commands the ``connection_lost`` fault point fails."""

CLIENT_BULK_WRITE_WIRE = 25
"""The wire version of MongoDB 8.0, whose ``bulkWrite`` command writes to
several collections in one command (:meth:`AsyncMongoClient.bulk_write`)."""


def supports_transactions(hello: Mapping[str, Any]) -> bool:
    """Whether a server's ``hello`` reply describes a deployment with
    multi-document transactions: a replica-set member or a ``mongos`` (and
    sessions, ``logicalSessionTimeoutMinutes``). A standalone ``mongod`` has none.
    """
    if hello.get("logicalSessionTimeoutMinutes") is None:
        return False
    return "setName" in hello or hello.get("msg") == "isdbgrid"


def _bumped(now_us: int) -> Doc:
    """Expression ``min(max(now, updated_at + 1), TIME_MAX_US)`` (R-BUMP,
    :func:`memory_core.clock.bump_us`); a missing updated_at gives now."""
    return {"$min": [{"$max": [us(now_us), {"$add": ["$updated_at", 1]}]}, us(TIME_MAX_US)]}


def _bump(now_us: int) -> list[Doc]:
    """Pipeline setting ``updated_at`` to :func:`_bumped`, atomically."""
    return [{"$set": {"updated_at": _bumped(now_us)}}]


class _Update(NamedTuple):
    """One update of an ordered write (:meth:`MongoStorage._write`)."""

    collection: str
    filter: Doc
    update: Doc | list[Doc]
    upsert: bool = False


class _Delete(NamedTuple):
    """One ``deleteMany`` of an ordered write (:meth:`MongoStorage._write`)."""

    collection: str
    filter: Doc


def _model(write: _Update | _Delete, namespace: str | None) -> UpdateOne | DeleteMany:
    """The bulk-write model of one write (``namespace``: a client bulkWrite's target)."""
    if isinstance(write, _Delete):
        return DeleteMany(write.filter, namespace=namespace)
    return UpdateOne(write.filter, write.update, upsert=write.upsert, namespace=namespace)


class _Connection(NamedTuple):
    """One event loop's client and the store's database through it."""

    client: AsyncMongoClient[Doc]
    db: AsyncDatabase[Doc]


async def _transaction(client: AsyncMongoClient[Doc], work: Callable[[Session], Awaitable[T]]) -> T:
    """``work`` in a transaction of a new session (retried on transient
    transaction errors), bounded by the client's ``timeoutMS`` (PyMongo's
    own limit for ``with_transaction`` is 120 s); the session is ended
    (a transaction still open aborted) whatever happens.

    A commit that failed (a timeout, a lost connection) is sent once more
    before the session ends: PyMongo marks a transaction committed as soon
    as its commit starts, so ending the session would not abort it, and a
    commit that never reached the server would leave the transaction open
    there, holding its documents' locks until the server expires it.
    Retrying a commit is safe (the drivers' transactions specification)."""
    session = client.start_session()
    committing = False  # the work is done: what follows is the commit

    async def run(session: Session) -> T:
        nonlocal committing
        committing = False  # with_transaction may run the work again
        answer = await work(session)
        committing = True
        return answer

    try:
        with pymongo.timeout(client.options.timeout):
            return await session.with_transaction(run)
    except BaseException:
        if committing and not session.in_transaction:
            with pymongo.timeout(client.options.timeout), contextlib.suppress(PyMongoError):
                await session.commit_transaction()
        raise
    finally:
        await session.end_session()


async def _settled(command: Callable[[], Awaitable[T]]) -> T:
    """``await command()``, one write (a command, a transaction, the ordered
    write plan), so that a cancellation of the caller waits for its outcome
    before ``CancelledError`` propagates
    (:func:`~memory_core.loops.connect_through_cancel`): the caller is told
    "cancelled" only once the write has happened or failed, never while the
    server may still apply it. Every write of the store goes through here;
    reads need not (a read cut off changes nothing).

    Why: PyMongo closes a connection cut mid-command, but the server still
    applies a command it had received (or had yet to read from the socket),
    later: cut, a cancelled ``insert`` left the thread absent to the next
    caller, then there (issue 25's trials). The wait is bounded by the client's ``timeoutMS`` (each command's,
    a transaction's whole); a further cancellation while waiting changes
    nothing, and the write's own failure is retrieved and dropped (the
    caller gets the cancellation)."""
    return await connect_through_cancel(command)


class MongoStorage(BaseStorage):
    """memory-core storage on MongoDB.

    URL: ``mongodb://[user:pass@]host[:port][,host...]/[database][?options]``
    or ``mongodb+srv://...``. The connection string goes to PyMongo as is.
    Construction does no I/O; ``open()`` connects, detects transaction
    support and creates collections and indexes idempotently. A cancelled
    write raises ``CancelledError`` once it has happened or failed (within
    ``timeoutMS``), never while the server may still apply it.

    Args:
        url: MongoDB connection string.
        database: database name; overrides the URL path (default: the URL
            path, else ``"memory_core"``).
        namespace: isolates this store in its own database
            ``<database>_<namespace>`` (1-48 characters of ``[A-Za-z0-9_-]``);
            :meth:`destroy` drops that database.
        clock: injectable clock (see :class:`~memory_core.storage.BaseStorage`).
        client: an existing ``AsyncMongoClient`` to use; it is not closed by
            :meth:`close` (the caller owns it), and it belongs to one event
            loop (the first that opens the store): a call from another loop
            raises ``ValidationError`` (field ``client``). Default: the store
            creates one from ``url`` in each event loop that uses it, and
            closes them with the store.
        transactions: True to write batches in multi-document transactions,
            False to use the ordered non-transactional plan, None (default)
            to decide from the server (replica set or mongos: True;
            standalone: False).
        **client_options: passed to ``AsyncMongoClient`` (e.g.
            ``serverSelectionTimeoutMS=2000``).

    Raises:
        ValidationError: bad URL scheme, namespace or database name.
    """

    backend_name = "mongodb"
    loop_bound = True
    capabilities = frozenset({Capability.PERSISTENT, Capability.SHARED_NAMESPACE})
    fault_points = frozenset({FaultPoint.CONNECTION_LOST})

    def __init__(
        self,
        url: str = "mongodb://localhost:27017",
        *,
        database: str | None = None,
        namespace: str | None = None,
        clock: Clock | None = None,
        client: AsyncMongoClient[Doc] | None = None,
        transactions: bool | None = None,
        **client_options: Any,
    ) -> None:
        super().__init__(clock=clock)
        self.url = url
        self.database_name = database_name(url, database, namespace)
        # PyMongo would only warn about an unknown URI option, and ignore it.
        check_option_names(
            "mongodb",
            [name for name in url_options(url) if name.lower() not in _URI_OPTIONS],
            (),
            driver=_URI_OPTIONS,
            driver_name="PyMongo",
        )
        self.transactions: bool | None = transactions
        given = {name.lower() for name in [*url_options(url), *client_options]}
        bound = {} if given & _BOUNDS else {"timeoutMS": TIMEOUT_MS, "socketTimeoutMS": TIMEOUT_MS}
        self._client_options: dict[str, Any] = {"appname": "memory-core", **bound, **client_options}
        self._selects = _SELECTION in given  # the URL or options bound server selection
        self._owns_client = client is None
        self._given = client
        self._given_loop = GivenClientLoop(self.backend_name)
        # PyMongo's async client belongs to the event loop that made it: one per loop
        self._conns: LoopConnections[_Connection] = LoopConnections()
        # Set at open from the server's wire version: writes to messages and
        # threads go in one client bulkWrite (MongoDB 8.0+), else one
        # collection bulk_write each.
        self._client_bulk = False
        self._sharded = False

    @classmethod
    def from_url(
        cls, url: str, *, clock: Clock | None = None, namespace: str | None = None, **options: Any
    ) -> MongoStorage:
        """Build from a ``mongodb://`` or ``mongodb+srv://`` URL (no I/O).

        Args:
            url: the connection string; its path names the database.
            clock: injectable clock.
            namespace: selects the separate database ``<database>_<namespace>``.
            **options: ``database``, ``client``, ``transactions`` and any
                ``AsyncMongoClient`` keyword (see :class:`MongoStorage`).

        Returns:
            An unopened store.

        Raises:
            ValidationError: bad scheme, namespace or database name.
        """
        return cls(url, clock=clock, namespace=namespace, **options)

    @property
    def store_identity(self) -> Hashable:
        """``("mongodb", hosts, database)``: the set of servers the connection
        string names (:func:`memory_core_mongodb._url.url_hosts`: order and
        loopback spellings do not matter, a missing port is 27017) and the
        database (namespace included). Two different seed lists of one replica
        set are not seen as one store. A store given its own ``client`` is
        named by that client object instead of the URL.
        """
        if not self._owns_client:
            return (self.backend_name, "client", id(self._given), self.database_name)
        return (self.backend_name, url_hosts(self.url), self.database_name)

    @property
    def store_place(self) -> str:
        """``MongoDB database 'memory_core' (every collection in it)``:
        what :meth:`destroy` drops."""
        return f"MongoDB database {self.database_name!r} (every collection in it)"

    def __repr__(self) -> str:
        return f"MongoStorage(url={hide_password(self.url)!r}, database={self.database_name!r})"

    # ------------------------------------------------------------------ lifecycle

    async def preflight(self, *, must_exist: bool = False, writes: bool = False) -> None:
        """Check, creating nothing, that the database holds a store when it must.

        With ``must_exist`` (``export``, ``copy``'s source, ``prune``) one
        ``listCollections`` (which never creates a database) checks that the
        database has memory-core's ``threads`` and ``messages`` collections,
        so a misspelt database name is an error instead of an empty export
        (``open`` would create the database, its collections and indexes);
        with ``writes`` (``import``, ``copy``'s destination) a database that
        has collections must have those two.
        The store's own client is used if it has one, else a client made for
        the check and closed after it. Without ``must_exist`` nothing is
        checked: ``open`` creates the database.

        Raises:
            ValidationError: field ``database``, with ``must_exist``: the
                database lacks those collections
                (:func:`~memory_core.storage.no_store`); with ``writes``: it
                holds another application's collections
                (:func:`~memory_core.storage.foreign_data`).
            BackendError: the server could not be reached or refused the call.
        """
        if not (must_exist or writes):
            return
        conn = self._conns.get()
        own = None if conn is None else conn.client
        client = own
        with self._guard("open"):
            if client is None:
                client = AsyncMongoClient(self.url, **self._client_options)
            try:
                with self._first_contact(client):
                    names = set(await client[self.database_name].list_collection_names())
            finally:
                if client is not own:
                    await client.close()
        lacking = [name for name in (THREADS, MESSAGES) if name not in names]
        others = [name for name in names if not name.startswith("system.")]
        if writes and lacking and others:
            raise foreign_data("database", self.database_name, listed("collection", others))
        if must_exist and lacking:
            raise no_store("database", self.database_name, "database")

    async def _open(self) -> None:
        """Connect in the running loop (once per loop: ``loop_bound``); the
        first open also detects the deployment and creates the indexes
        (idempotent, so a further loop's open only checks them)."""
        if self._given is not None:
            self._given_loop.claim()
            client = self._given
        else:
            client = AsyncMongoClient(self.url, **self._client_options)
        # ours is closed in its loop by the loop's end at the latest: a client dropped with a
        # loop that asyncio.run ended reported "Unclosed AsyncMongoClient" (and its sockets)
        db = client[self.database_name]
        await self._conns.keep(_Connection(client, db), client.close if self._owns_client else None)
        try:
            with self._first_contact(client):
                hello = await client.admin.command("hello")
            if self.transactions is None:
                self.transactions = supports_transactions(hello)
            if not self.transactions:
                log.info("memory-core mongodb: %s without transactions (ordered write plan)", self.database_name)
            self._client_bulk = int(hello.get("maxWireVersion", 0)) >= CLIENT_BULK_WRITE_WIRE
            self._sharded = hello.get("msg") == "isdbgrid"
            await ensure_schema(db)
            await backfill_counters(db, self._atomic)  # its transactions run on the kept client
        except BaseException:
            await self._conns.drop()  # a failed open may retry with a new client
            raise

    def _first_contact(self, client: AsyncMongoClient[Doc]) -> contextlib.AbstractContextManager[None]:
        """The bound of a first call to the server through ``client``
        (:data:`FIRST_CONTACT_MS`): the ``serverSelectionTimeoutMS`` the URL
        or options give, else the default; a client the caller gave keeps
        its own."""
        if self._given is not None:
            return contextlib.nullcontext()
        seconds = client.options.server_selection_timeout if self._selects else FIRST_CONTACT_MS / 1000
        return pymongo.timeout(seconds)

    async def _close(self) -> None:
        await self._conns.close_all()  # the caller's client is theirs to close

    async def _destroy(self) -> None:
        client = self._here().client
        await _settled(lambda: client.drop_database(self.database_name))

    def is_retryable(self, exc: Exception) -> bool:
        """Network errors, timeouts, step-downs and labelled transient server
        errors are retryable (see :func:`memory_core_mongodb._errors.is_transient`)."""
        return is_transient(exc) or super().is_retryable(exc)

    # ------------------------------------------------------------------ helpers

    def _here(self) -> _Connection:
        """The running loop's client and database.

        Raises:
            AdapterClosedError: none in this loop (closed, or not opened in
                this loop: public methods open it first).
        """
        conn = self._conns.get()
        if conn is None:
            raise AdapterClosedError("mongodb storage is closed")
        return conn

    def _collection(self, name: str) -> AsyncCollection[Doc]:
        return self._here().db[name]

    @property
    def _threads(self) -> AsyncCollection[Doc]:
        return self._collection(THREADS)

    @property
    def _messages(self) -> AsyncCollection[Doc]:
        return self._collection(MESSAGES)

    @property
    def _resources(self) -> AsyncCollection[Doc]:
        return self._collection(RESOURCES)

    async def _atomic(self, work: Callable[[Session], Awaitable[T]]) -> T:
        """Run ``work`` all-or-nothing and return its answer: in a transaction
        (retried on transient transaction errors) when the deployment has
        them; otherwise directly, as the ordered write plan described in the
        README.

        Every such write passes the store's fault points first (a test hook,
        :mod:`memory_core.retry`): an armed ``connection_lost`` sets the
        server's ``failCommand`` fail point (a test command: the server must
        run with ``enableTestCommands``) so that it closes the connection of
        this store's next write command, handled then as the real one is.
        The session is ended (its transaction aborted if still open) whatever
        happens, within the client's ``timeoutMS`` (:func:`_transaction`);
        a cancelled caller waits for that, and without transactions for the
        whole ordered plan (:func:`_settled`)."""
        if self.faults.take(FaultPoint.CONNECTION_LOST):
            await self._here().client.admin.command(
                "configureFailPoint",
                "failCommand",
                mode={"times": 1},
                data={
                    "failCommands": list(_WRITE_COMMANDS),
                    "closeConnection": True,
                    "appName": self._client_options["appname"],
                },
            )
        if not self.transactions:
            return await _settled(lambda: work(None))
        client = self._here().client
        # A cancelled caller waits for the transaction to end (bounded by
        # timeoutMS) instead of cutting it (_settled): a command the server
        # had not read yet could otherwise start or keep the transaction
        # after the abort was sent, holding its documents' locks until the
        # server expires it (60 s).
        return await _settled(lambda: _transaction(client, work))

    async def _allocate(self, count: int) -> int:
        """Reserve ``count`` consecutive R-ORDER sequence numbers; returns the
        first. One atomic ``$inc`` on the counter document, outside any
        transaction (no write conflicts; numbers of an aborted batch are
        skipped, which keeps the order)."""
        counters = self._collection(COUNTERS)
        for tried in _RACED_UPSERTS.tries():
            try:
                doc = await _settled(
                    lambda: counters.find_one_and_update(
                        {"_id": COUNTER_ID},
                        {"$inc": {"value": us(count)}},
                        upsert=True,
                        return_document=ReturnDocument.AFTER,
                    )
                )
            except DuplicateKeyError:  # two first upserts raced (servers before 4.2)
                if tried == _RACED_UPSERTS.attempts:
                    raise
                continue
            # Racing first upserts can also come back empty on some servers
            # (seen on secantusdb); the counter exists by then, so ask again.
            if doc is not None:
                return int(doc["value"]) - count + 1
        raise StaleStateError(f"the sequence counter came back empty {_RACED_UPSERTS.attempts} times")

    async def _aggregate(self, command: Aggregate, session: Session = None) -> list[Doc]:
        """Run one :class:`~memory_core_mongodb._plan.Aggregate`; all its documents
        (in the first batch when the plan is bounded, else in driver batches)."""
        options: Doc = {}
        if command.hint is not None:
            options["hint"] = command.hint
        if command.batch is not None:
            # One more than the answer can hold: a first batch that is not full
            # tells the server the cursor is exhausted (no getMore follows).
            options["batchSize"] = command.batch + 1
        cursor = await self._collection(command.collection).aggregate(command.pipeline, session=session, **options)
        return [doc async for doc in cursor]

    # ------------------------------------------------------------------ threads

    async def _save_thread_checked(self, thread: Thread) -> Thread | None:
        """One ``findAndModify``: :meth:`_put_thread`'s upsert, returning the
        stored ``last_message_at``. Only when the upsert's insert collides on
        ``_id`` is the thread read: another resource's id (None), or a racing
        first save of this one (StaleStateError: the core retries)."""
        fields = thread_doc(thread)
        del fields["_id"]
        try:
            doc = await _settled(
                lambda: self._threads.find_one_and_update(
                    {"_id": thread.id, "resource_id": thread.resource_id},
                    {"$set": fields, "$setOnInsert": new_thread_fields()},
                    projection={LAST_DESC: 1},
                    upsert=True,
                    return_document=ReturnDocument.AFTER,
                )
            )
        except DuplicateKeyError as exc:
            owner = await self._threads.find_one({"_id": thread.id}, {"resource_id": 1})
            if owner is not None and owner["resource_id"] != thread.resource_id:
                return None
            raise StaleStateError(f"thread {thread.id!r} changed while saving") from exc
        if doc is None:
            # A racing delete (delete_resource, delete_thread) removed the
            # document between the upsert and its read-back (seen on
            # secantusdb): not an error of the caller's, so the core saves again.
            raise StaleStateError(f"thread {thread.id!r} was deleted while saving")
        last = last_message_at(doc)
        return thread if last is None else replace(thread, last_message_at=from_us(last))

    async def _insert_thread(self, thread: Thread) -> None:
        try:
            await _settled(lambda: self._threads.insert_one({**thread_doc(thread), **new_thread_fields()}))
        except DuplicateKeyError as exc:
            raise StaleStateError(f"thread {thread.id!r} exists") from exc

    async def _copy_thread(self, plan: CopyPlan, now_us: int) -> list[str] | None:
        """A clone or branch inside the server, staged then committed
        (:mod:`memory_core_mongodb._copy`): one ``$merge`` pipeline writes
        the copies under a staging id, one read returns their source ids
        (no bodies), then one transaction inserts the thread and moves the
        copies into it, with the counters. Only messages whose BSON size
        could put their copy over R-SIZE are read, to check exactly.
        Constant round trips whatever the size; all or nothing. Through
        ``mongos`` the core composes the copy instead (None): moving the
        staged copies changes their shard key (``resource_id``), which a
        multi-document update may not."""
        if self._sharded:
            return None
        thread = plan.thread
        if await self._threads.find_one({"_id": thread.id}, {"_id": 1}) is not None:
            raise StaleStateError(f"thread {thread.id!r} exists")
        await _settled(lambda: self._messages.delete_many(stale_staging(now_us)))
        stage = staging_id()
        try:
            staged: list[Doc] = []
            if plan.new_ids and plan.newest != 0:
                first = await self._allocate(len(plan.new_ids))
                await _settled(lambda: self._messages.aggregate(copy_pipeline(plan, stage, first)))  # a $merge: a write
                found = self._messages.find(
                    {"thread_id": stage},
                    {"source": 1, "big": 1, "created_at": 1},
                    sort=[("created_at", ASCENDING), ("seq", ASCENDING)],
                    hint=MESSAGES_THREAD_ORDER,
                )
                staged = [doc async for doc in found]
                await self._check_sizes(plan, [doc["source"] for doc in staged if doc.get("big")])
            await self._atomic(lambda session: self._commit_copy(thread, stage, staged, now_us, session))
        except BaseException:
            await _settled(lambda: self._messages.delete_many({"thread_id": stage}))
            raise
        return [doc["source"] for doc in staged]

    async def _check_sizes(self, plan: CopyPlan, candidates: Sequence[str]) -> None:
        """Raise the R-SIZE error of the first of ``candidates`` (source ids,
        in R-ORDER) whose copy would be over ``plan.size_limit``."""
        if not candidates:
            return
        docs = {doc["_id"]: doc async for doc in self._messages.find({"_id": {"$in": list(candidates)}})}
        for source in candidates:
            if source in docs and plan.oversized(message_from_doc(docs[source])):
                raise plan.too_large(source)

    async def _commit_copy(
        self, thread: Thread, stage: str, staged: Sequence[Doc], now_us: int, session: Session
    ) -> None:
        """Insert ``thread`` (its counter and ``last_message_at`` from the
        staged copies; bumped when it has some) and move the staged copies
        into it and its resource, in the caller's transaction."""
        doc = {**thread_doc(thread), **last_fields(max((int(d["created_at"]) for d in staged), default=None))}
        doc[MESSAGE_COUNT] = us(len(staged))
        if staged:
            doc["updated_at"] = us(bump_us(int(doc["updated_at"]), now_us))
        try:
            await self._threads.insert_one(doc, session=session)
        except DuplicateKeyError as exc:
            raise StaleStateError(f"thread {thread.id!r} exists") from exc
        if not staged:
            return
        moved = await self._messages.update_many(
            {"thread_id": stage},
            {"$set": {"thread_id": thread.id, "resource_id": thread.resource_id}, "$unset": {"source": "", "big": ""}},
            session=session,
        )
        if moved.modified_count != len(staged):
            raise StaleStateError(f"the staged copies of thread {thread.id!r} changed")

    async def _patch_thread(
        self, thread_id: str, title: str | None, metadata: dict[str, Any] | None, now_us: int
    ) -> Thread | None:
        changes: Doc = {}
        if title is not None:
            changes["title"] = {"$literal": title}
        if metadata is not None:
            changes["meta"] = merge_expr("meta", metadata)
        pipeline = [{"$set": changes}, *_bump(now_us)] if changes else _bump(now_us)
        doc = await _settled(
            lambda: self._threads.find_one_and_update(
                {"_id": thread_id}, pipeline, return_document=ReturnDocument.AFTER
            )
        )
        return None if doc is None else thread_from_doc(doc)

    async def _delete_thread(self, thread_id: str) -> int:
        async def work(session: Session) -> int:
            # The thread first: without a transaction, a save racing with the
            # delete then fails the core's thread check instead of leaving orphans.
            await self._threads.delete_one({"_id": thread_id}, session=session)
            return (await self._messages.delete_many({"thread_id": thread_id}, session=session)).deleted_count

        return await self._atomic(work)

    async def _delete_resource(self, resource_id: str) -> tuple[list[str], int, bool]:
        """Resumable: every thread through :meth:`_delete_thread` (with its
        messages and counter; :func:`~memory_core.storage.composed.erase_threads`),
        then the record."""
        found = self._threads.find({"resource_id": resource_id}, {"_id": 1})
        thread_ids = [doc["_id"] async for doc in found]
        messages = await erase_threads(thread_ids, self._delete_thread)
        existed = (await _settled(lambda: self._resources.delete_one({"_id": resource_id}))).deleted_count == 1
        return thread_ids, messages or 0, existed

    # ------------------------------------------------------------------ messages

    async def _bump_threads(
        self,
        thread_ids: Sequence[str],
        now_us: int,
        owners: Mapping[str, str | None],
        session: Session,
        deltas: CountDeltas | None = None,
    ) -> None:
        """After a message write, in its transaction: bump ``updated_at`` of these
        threads, set their ``last_message_at`` fields from their newest
        message (one probe of the thread-order index each) and add ``deltas``
        to their message counters. Without transactions a racing writer of
        the same thread can leave them stale until that thread's next write
        (README: "without transactions")."""
        if not thread_ids:
            return
        newest = await asyncio.gather(
            *(
                self._messages.find_one(
                    {"thread_id": thread_id},
                    {"created_at": 1},
                    sort=[("created_at", -1)],
                    hint=MESSAGES_THREAD_ORDER,
                    session=session,
                )
                for thread_id in thread_ids
            )
        )
        ops = []
        for thread_id, doc in zip(thread_ids, newest, strict=True):
            key: Doc = {"_id": thread_id}
            owner = owners.get(thread_id)
            if owner is not None:
                key["resource_id"] = owner  # shard key: a targeted update
            changes = {"updated_at": _bumped(now_us), **last_fields(None if doc is None else int(doc["created_at"]))}
            if deltas is not None and deltas.of_thread(thread_id):
                changes[MESSAGE_COUNT] = thread_count_expr(deltas.of_thread(thread_id))
            ops.append(UpdateOne(key, [{"$set": changes}]))
        await self._threads.bulk_write(ops, ordered=True, session=session)

    async def _save_checked(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], decide: SaveDecision, now_us: int
    ) -> tuple[list[Message], list[int]]:
        """A save in one transaction: one ``aggregate`` reads the threads and
        the stored messages, ``decide`` checks them (its typed error aborts
        the transaction: nothing written), then one write of the messages
        and the thread bumps, and the commit. Beside the read, outside the
        transaction, one ``$inc`` reserves a sequence number per message
        (those of updated messages are skipped: gaps keep the order).

        Inside a transaction the read is the check: a concurrent writer of any
        document read here also writes it, so one of the two transactions
        fails with a write conflict and is retried. Without transactions
        (standalone server) the read and the writes follow each other, as in
        the ordered write plan (README)."""

        async def work(session: Session) -> tuple[list[Message], list[int]]:
            (threads, stored), first = await asyncio.gather(
                self._state(thread_ids, message_ids, session), self._allocate(len(message_ids))
            )
            records, bump = decide(threads, stored)
            return records, await self._write_saves(records, bump, stored, first, now_us, session)

        return await self._atomic(work)

    async def _state(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], session: Session
    ) -> tuple[dict[str, Thread], list[Message]]:
        """The threads (by id) and the stored messages among these ids: one ``aggregate``."""
        return state_parts(await self._aggregate(state_aggregate(list(thread_ids), list(message_ids)), session))

    async def _write_saves(
        self,
        messages: Sequence[Message],
        bump: Sequence[str],
        stored: Sequence[Message],
        first: int,
        now_us: int,
        session: Session,
    ) -> list[int]:
        """Write checked save records (see :meth:`_save_messages` for the
        fields) and bump the threads in ``bump``; returns each record's
        sequence (new ones ``first + index``).

        One ordered write: the message upserts, then each bumped thread's
        here)`` and its message counter in the same pipeline update (no read
        of the newest message). A thread that a
        message moved out of (``stored`` tells) may lose its newest message,
        so it is bumped after the write from a probe of its newest message
        instead (:meth:`_bump_threads`). The counters change by what
        ``stored`` says: new ids count in their thread, moves in both
        threads. Nothing here is shared with writers of other threads.

        Raises:
            StaleStateError: an id was taken under another resource meanwhile
                (the upsert's insert collides on ``_id``).
        """
        sequences = [first + i if m.sequence is None else m.sequence for i, m in enumerate(messages)]
        owners = {m.thread_id: m.resource_id for m in messages}
        moved = {m.id: m.thread_id for m in messages}
        left = {old.thread_id for old in stored if moved.get(old.id, old.thread_id) != old.thread_id}
        newest: dict[str, int] = {}
        writes: list[_Update] = []
        for index, message in enumerate(messages):
            if message.created_at is None or message.resource_id is None:
                raise ValueError(f"message {message.id!r} reached the write without created_at or resource_id")
            created = to_us(message.created_at)
            newest[message.thread_id] = max(created, newest.get(message.thread_id, created))
            # resource_id: the shard key prefix; an existing id under another
            # resource was refused by the core (ConflictError).
            key: Doc = {"_id": message.id, "resource_id": message.resource_id}
            inserted = {"created_at": us(created), "seq": us(first + index)}
            fields = {"$set": message_doc(message), "$setOnInsert": inserted}
            writes.append(_Update(MESSAGES, key, fields, upsert=True))
        deltas = _save_deltas(messages, stored)
        for thread_id in bump:
            if thread_id in left:
                continue
            changes: Doc = {"updated_at": _bumped(now_us)}
            if thread_id in newest:
                last = {"$max": ["$" + LAST_DESC, us(newest[thread_id])]}
                changes |= {LAST_ASC: last, LAST_DESC: last}
            if deltas.of_thread(thread_id):
                changes[MESSAGE_COUNT] = thread_count_expr(deltas.of_thread(thread_id))
            key = {"_id": thread_id}
            if thread_id in owners:
                key["resource_id"] = owners[thread_id]  # shard key: a targeted update
            writes.append(_Update(THREADS, key, [{"$set": changes}]))
        try:
            await self._write(writes, session)
        except (BulkWriteError, ClientBulkWriteException) as exc:
            if any(e.get("code") == 11000 for e in exc.details.get("writeErrors") or ()):
                raise StaleStateError("a message id was taken by another resource") from exc
            raise
        await self._bump_threads([t for t in bump if t in left], now_us, owners, session, deltas)
        return sequences

    async def _write(self, writes: Sequence[_Update | _Delete], session: Session) -> int:
        """Ordered updates and deletes: one client ``bulkWrite`` on MongoDB
        8.0+, else one collection ``bulk_write`` per run of one collection
        (stopping at the first failure either way). Returns how many
        documents the deletes removed.

        Raises:
            BulkWriteError | ClientBulkWriteException: a write failed (e.g. a
                duplicate key).
            PyMongoError: the command failed as a whole, labels kept.
        """
        if self._client_bulk:
            models = [_model(w, f"{self.database_name}.{w.collection}") for w in writes]
            try:
                result = await self._here().client.bulk_write(models, ordered=True, session=session)
            except ClientBulkWriteException as exc:
                # A command-level failure (a write conflict, a step-down) comes
                # wrapped; its labels (TransientTransactionError ...), which
                # with_transaction and is_transient read, are on the inner error.
                if isinstance(exc.error, PyMongoError):
                    raise exc.error from exc
                raise
            return result.deleted_count
        deleted = start = 0
        for end in range(1, len(writes) + 1):
            if end == len(writes) or writes[end].collection != writes[start].collection:
                ops = [_model(w, None) for w in writes[start:end]]
                collection = self._collection(writes[start].collection)
                deleted += (await collection.bulk_write(ops, ordered=True, session=session)).deleted_count
                start = end
        return deleted

    async def _patch_checked(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], decide: PatchDecision, now_us: int
    ) -> list[Message]:
        """An update in one transaction: one ``aggregate`` reads the move
        targets and the stored messages, ``decide`` checks them (its typed
        error aborts: nothing written), then one ``update`` of the messages
        (merged on the server), the thread bumps (a newest-message probe per
        thread and one ``update``) and the commit. The records returned are
        the reference merge of what the read found (inside a transaction,
        what was written: a concurrent writer of those documents makes one
        of the two transactions retry), so nothing is read after. Without
        transactions the read is the check, as for :meth:`_save_checked`."""

        async def work(session: Session) -> list[Message]:
            targets, stored = await self._state(thread_ids, message_ids, session)
            patches, bump = decide(targets, stored)
            if not patches:
                return []
            writes = _patch_writes(patches)
            if writes:
                await self._messages.bulk_write(writes, ordered=True, session=session)
            moves = {p.id: p.thread_id for p in patches if p.thread_id is not None}
            deltas = _move_deltas(moves, {m.id: m.thread_id for m in stored})
            await self._bump_threads(bump, now_us, {}, session, deltas)
            existing = {m.id: m for m in stored}
            return [copy.deepcopy(p.apply(existing[p.id])) for p in patches]

        return await self._atomic(work)

    async def _delete_found(self, ids: Sequence[str], now_us: int) -> int:
        """A delete in one transaction: one ``aggregate`` finds the stored
        messages among ``ids`` by thread with each thread's newest message
        left (:func:`~memory_core_mongodb._plan.doomed_aggregate`), one write
        deletes them and bumps those threads (``last_message_at`` from that
        newest message: no probe after the delete), then the commit. Inside
        a transaction the count is exact under races: a racing delete of the
        same message gets a write conflict and, retried, finds nothing. The
        thread updates take the deleted messages off the threads' counters.
        Without transactions the deletes still count only what they removed
        (README: "without transactions"; the counters' limits: README,
        "Counters")."""
        wanted = list(ids)

        async def work(session: Session) -> int:
            doomed = doomed_parts(await self._aggregate(doomed_aggregate(wanted), session))
            writes: list[_Update | _Delete] = [
                _Delete(MESSAGES, {"_id": {"$in": d.ids}, "resource_id": d.resource_id}) for d in doomed.values()
            ]
            for thread_id, d in doomed.items():
                # resource_id: the shard key, a targeted write
                changes = {
                    "updated_at": _bumped(now_us),
                    **last_fields(d.newest_us),
                    MESSAGE_COUNT: thread_count_expr(-len(d.ids)),
                }
                writes.append(_Update(THREADS, {"_id": thread_id, "resource_id": d.resource_id}, [{"$set": changes}]))
            return await self._write(writes, session) if writes else 0

        return await self._atomic(work)

    # ------------------------------------------------------------------ composite reads (one command each)

    async def _read(self, plan: ReadPlan) -> ReadParts:
        """The whole plan in one ``aggregate`` (:mod:`memory_core_mongodb._plan`);
        messages by id and resource ids, which the core asks for alone, in
        one ``find`` and :meth:`_resource_ids`."""
        if plan.message_ids or plan.resource_ids is not None:
            found: list[Message] = []
            if plan.message_ids:
                wanted = {"_id": {"$in": list(dict.fromkeys(plan.message_ids))}}
                found = [message_from_doc(doc) async for doc in self._messages.find(wanted)]
            ids = [] if plan.resource_ids is None else await self._resource_ids(plan.resource_ids)
            return ReadParts(found_messages=found, resource_ids=ids)
        command = read_aggregate(plan)
        if command is None:
            return ReadParts()
        return read_parts(plan, await self._aggregate(command))

    # ------------------------------------------------------------------ resources

    async def _resource_ids(self, query: ResourceIdQuery) -> list[str]:
        """A page of resource ids (see :class:`~memory_core.plan.ResourceIdQuery`)."""
        after, limit = query.after, query.limit
        if limit == 0:
            return []
        # Strings without a collation compare by UTF-8 bytes: code point order.
        # Records: a range of the _id index. Thread owners: distinct resource
        # ids from the threads_resource_created index, after the cursor (a
        # server may answer the sorted $group with a distinct scan; at worst
        # it reads the index entries after the cursor). Each side is cut at
        # the limit, then merged.
        start = {"$gt": "" if after is None else after}
        records = self._resources.find({"_id": start}, {"_id": 1}).sort("_id", ASCENDING).hint("_id_")
        owners: list[Doc] = [
            {"$match": {"resource_id": start}},
            {"$sort": {"resource_id": 1}},
            {"$group": {"_id": "$resource_id"}},
            {"$sort": {"_id": 1}},
        ]
        if limit is not None:
            records = records.limit(limit)
            owners.append({"$limit": limit})
        found = {doc["_id"] async for doc in records}
        cursor = await self._threads.aggregate(owners, hint=THREADS_RESOURCE_CREATED)
        found.update([doc["_id"] async for doc in cursor])
        ids = sorted(found)
        return ids if limit is None else ids[:limit]

    async def _put_resource(self, resource: Resource) -> None:
        await _settled(lambda: self._resources.replace_one({"_id": resource.id}, resource_doc(resource), upsert=True))

    async def _patch_resource(
        self, resource_id: str, working_memory: Any, metadata: dict[str, Any] | None, now_us: int
    ) -> Resource:
        now = us(now_us)
        changes: Doc = {
            "created_at": {"$ifNull": ["$created_at", now]},
            "updated_at": _bumped(now_us),
            "meta": merge_expr("meta", metadata) if metadata is not None else {"$ifNull": ["$meta", []]},
        }
        if working_memory is not NOT_GIVEN:
            changes["working_memory"] = {"$literal": working_memory}
        for _ in _RACED_UPSERTS.tries():
            doc = await _settled(
                lambda: self._resources.find_one_and_update(
                    {"_id": resource_id}, [{"$set": changes}], upsert=True, return_document=ReturnDocument.AFTER
                )
            )
            # None: a racing delete_resource removed it before the read-back
            # (seen on secantusdb); the upsert creates it again.
            if doc is not None:
                return resource_from_doc(doc)
        raise StaleStateError(f"resource {resource_id!r} was deleted while updating, {_RACED_UPSERTS.attempts} times")

    async def _swap_resource_memory(self, resource_id: str, expected: str | None, value: str, now_us: int) -> bool:
        changes: Doc = {
            "created_at": {"$ifNull": ["$created_at", us(now_us)]},
            "updated_at": _bumped(now_us),
            "meta": {"$ifNull": ["$meta", []]},
            "working_memory": {"$literal": value},
        }
        if expected is not None:
            doc = await _settled(
                lambda: self._resources.find_one_and_update(
                    {"_id": resource_id, "working_memory": expected}, [{"$set": changes}]
                )
            )
            return doc is not None
        # Nothing stored: the filter matches a null or missing field, or no
        # document (then the upsert inserts); a stored value makes the
        # upsert's insert collide on _id.
        try:
            await _settled(
                lambda: self._resources.find_one_and_update(
                    {"_id": resource_id, "working_memory": None}, [{"$set": changes}], upsert=True
                )
            )
        except DuplicateKeyError:
            return False
        return True

    async def _swap_thread_memory(
        self, thread_id: str, expected: str | None, value: str, now_us: int, metadata: dict[str, Any] | None = None
    ) -> bool | None:
        stored = {"meta": {"$elemMatch": {"k": "working_memory", "v": {"$type": "string"}}}}
        if expected is None:
            condition: Doc = {"$nor": [stored]}
        else:
            condition = {"meta": {"$elemMatch": {"k": "working_memory", "v": expected}}}
        patch = {**(metadata or {}), "working_memory": value}
        changes = {"meta": merge_expr("meta", patch), "updated_at": _bumped(now_us)}
        doc = await _settled(
            lambda: self._threads.find_one_and_update({"_id": thread_id, **condition}, [{"$set": changes}])
        )
        if doc is not None:
            return True
        return None if await self._threads.find_one({"_id": thread_id}, {"_id": 1}) is None else False

    async def _write_memory(self, write: MemoryWrite, decide: MemoryDecision, now_us: int) -> None:
        """An unconditional write to a thread's working memory checks the
        owner in the update's filter (one ``findAndModify``); only a miss
        costs the core's read and decision. Other writes: the core's default
        (the owner of a thread and its resource record are two documents)."""
        if write.scope == "thread" and not write.conditional and write.thread_id is not None:
            key: Doc = {"_id": write.thread_id}
            if write.resource_id is not None:
                key["resource_id"] = write.resource_id
            changes = {"meta": merge_expr("meta", {"working_memory": write.value}), "updated_at": _bumped(now_us)}
            written = await _settled(lambda: self._threads.find_one_and_update(key, [{"$set": changes}], {"_id": 1}))
            if written is not None:
                return
        await super()._write_memory(write, decide, now_us)


def _save_deltas(messages: Sequence[Message], stored: Sequence[Message]) -> CountDeltas:
    """The counter changes of a save: a new id adds one to its thread, a
    stored one saved into another thread moves one between them."""
    existing = {old.id: old.thread_id for old in stored}
    deltas = CountDeltas()
    for message in messages:
        if message.id not in existing:
            deltas.add(message.thread_id)
        else:
            deltas.move(existing[message.id], message.thread_id)
    return deltas


def _move_deltas(moves: Mapping[str, str], stored: Mapping[str, str]) -> CountDeltas:
    """The counter changes of moves (message id -> new thread) of stored
    messages (message id -> its thread now); unknown ids change nothing."""
    deltas = CountDeltas()
    for message_id, thread_id in moves.items():
        if message_id in stored:
            deltas.move(stored[message_id], thread_id)
    return deltas


def _patch_writes(patches: Sequence[MessagePatch]) -> list[UpdateOne]:
    """One pipeline update per patch that changes a field: merged on the
    server, atomic per message (see :meth:`MessagePatch.apply`)."""
    writes = []
    for patch in patches:
        changes: Doc = {}
        if patch.role is not None:
            changes["role"] = {"$literal": patch.role}
        if patch.type is not None:
            changes["type"] = {"$literal": patch.type}
        if patch.thread_id is not None:
            changes["thread_id"] = {"$literal": patch.thread_id}
        if patch.content is not None:
            changes["content"] = content_set_expr(patch.content)
        if patch.metadata is not None:
            changes["meta"] = merge_expr("meta", patch.metadata)
        if changes:
            writes.append(UpdateOne({"_id": patch.id}, [{"$set": changes}]))
    return writes

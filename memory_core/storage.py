"""The storage contract: a Protocol for callers and a base class for adapters.

Adapters implement primitives; the core composes semantics.
:class:`BaseStorage`'s public async methods validate every input once
(:mod:`memory_core.validation`), resolve defaults, ownership and conflicts,
and then call small underscore primitives that an adapter writes for its
backend. Merging ``include`` windows, de-duplication, final ordering,
``has_more`` arithmetic and cursors live here, once (R-PAGE, R-CURSOR,
R-INCLUDE; the rules are stated in ``memory_core_conformance.rules``).

An adapter subclasses :class:`BaseStorage`, sets ``backend_name``, and
implements the abstract ``_`` methods below. Each primitive's docstring is
its whole contract; the conformance suite checks the composed behaviour.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from operator import attrgetter
from types import TracebackType
from typing import Any, ClassVar, Protocol, Self, TypeVar, runtime_checkable

from memory_core import lineage
from memory_core.builders import build_message, builder
from memory_core.clock import Clock, system_clock, to_us
from memory_core.cursor import decode_cursor, encode_cursor, fingerprint
from memory_core.errors import (
    AdapterClosedError,
    BackendGuard,
    ConflictError,
    NotFoundError,
    OwnershipError,
    StaleStateError,
    ValidationError,
)
from memory_core.lineage import CopyPlan
from memory_core.loops import LoopLocal, OnceAcrossLoops
from memory_core.models import (
    ROLES,
    IdPage,
    Include,
    Message,
    MessageFilter,
    MessagePageRequest,
    OrderBy,
    Page,
    PerPage,
    Resource,
    ResourceErasure,
    Thread,
    ThreadFilter,
)
from memory_core.plan import ReadParts, ReadPlan, Window
from memory_core.query import NOT_GIVEN, MessageKey, MessagePatch, MessageQuery, ThreadQuery
from memory_core.retention import PruneHook, PruneReport, RetentionPolicy, apply_policy
from memory_core.retry import STALE_WRITES, FaultPoint, Faults
from memory_core.telemetry import traced
from memory_core.validation import (
    MAX_MESSAGE_BYTES,
    CheckedMessages,
    check_bool,
    check_id,
    check_id_list,
    check_includes,
    check_json_object,
    check_message,
    check_message_filter,
    check_order,
    check_page,
    check_per_page,
    check_record_size,
    check_resource,
    check_text,
    check_thread,
    check_thread_filter,
    check_thread_order,
    message_size,
)
from memory_core.workmem import MemoryDecision, MemoryWrite, Scope, memory_decision, thread_memory

__all__ = [
    "BaseStorage",
    "MessageParts",
    "PatchDecision",
    "SaveDecision",
    "Storage",
    "message_key",
    "no_store",
    "order_key",
]

T = TypeVar("T")
Q = TypeVar("Q", ThreadQuery, MessageQuery)

SaveDecision = Callable[[dict[str, Thread], list[Message]], tuple[list[Message], list[str]]]
"""``decide(threads by id, stored messages) -> (records, threads to bump)``:
the core's checks of a save, run by :meth:`BaseStorage._save_checked`. Of
each thread it reads only ``id`` and ``resource_id``, so an adapter may call
it on a guess (threads holding only those) whose write then verifies it."""

PatchDecision = Callable[[dict[str, Thread], list[Message]], tuple[list[MessagePatch], list[str]]]
"""``decide(target threads by id, stored messages) -> (patches, threads to bump)``:
the core's checks of a message update, run by :meth:`BaseStorage._patch_checked`.
It raises the typed error of a failed check (a missing or foreign move
target, a result over R-SIZE) or returns the patches of the stored ids, in
the order to apply them (``[]``: nothing to write)."""

MESSAGE_ORDER_DEFAULT = OrderBy("created_at", "ASC")
_PATCH_FIELDS = {"id", "role", "type", "content", "metadata", "thread_id", "threadId"}


def message_key(message: Message) -> MessageKey:
    """R-ORDER position of a stored message: (created_at µs, sequence)."""
    assert message.created_at is not None and message.sequence is not None
    return (to_us(message.created_at), message.sequence)


def no_store(field: str, where: str, missing: str) -> ValidationError:
    """The refusal of :meth:`BaseStorage.preflight` with ``must_exist`` when
    the place a URL names can be reached but holds no memory-core store (a
    misspelt database, schema or prefix; another application's data): one
    wording for every adapter, so the CLI's red line reads alike everywhere.

    Args:
        field: the URL part that names the place (``"url"``, ``"schema"``,
            ``"database"``, ``"prefix"``): :attr:`ValidationError.field`.
        where: the place as the user spelt it (shown with ``repr``).
        missing: what memory-core's own data would have there and is absent
            (``"no schema_version table"``), shown in parentheses.

    Returns:
        ``ValidationError(field, "'<where>' holds no memory-core store (<missing>)")``,
        for the caller to raise: a command that reads or deletes data must
        stop before ``open`` creates an empty store in its place.
    """
    return ValidationError(field, f"{where!r} holds no memory-core store ({missing})")


order_key: Callable[[Message], tuple[Any, ...]] = attrgetter("created_at", "sequence")
"""Sort key of stored messages in R-ORDER: the order of :func:`message_key`
without converting each time to µs (sorting pages is on every read's path)."""


@runtime_checkable
class Storage(Protocol):
    """What callers type against: every memory-core storage has these.

    :func:`memory_core.connect` returns one, :class:`~memory_core.Memory` takes
    one, and every :class:`BaseStorage` subclass (the reference store and
    each adapter) satisfies it structurally. See :class:`BaseStorage` for each
    method's full contract.
    """

    async def __aenter__(self) -> Self: ...
    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
    async def open(self) -> None: ...
    async def preflight(self, *, must_exist: bool = False) -> None: ...
    @property
    def store_identity(self) -> Hashable: ...
    async def get_thread(self, thread_id: str, resource_id: str | None = None) -> Thread | None: ...
    async def get_thread_with_owner(self, thread_id: str) -> tuple[Thread | None, Resource | None]: ...
    async def save_thread(self, thread: Thread | Mapping[str, Any]) -> Thread: ...
    async def insert_thread(self, thread: Thread | Mapping[str, Any]) -> Thread: ...
    async def copy_thread(self, plan: CopyPlan) -> tuple[Thread, list[str]]: ...
    async def update_thread(
        self, thread_id: str, *, title: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Thread: ...
    async def delete_thread(self, thread_id: str) -> None: ...
    async def list_threads(
        self,
        filter: ThreadFilter | Mapping[str, Any] | None = None,
        page: int = 0,
        per_page: PerPage = 100,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        cursor: str | None = None,
    ) -> Page[Thread]: ...
    async def save_messages(self, messages: Sequence[Message | Mapping[str, Any]]) -> list[Message]: ...
    async def update_messages(self, updates: Sequence[Mapping[str, Any]]) -> list[Message]: ...
    async def delete_messages(self, ids: Sequence[str]) -> int: ...
    async def get_messages(self, ids: Sequence[str]) -> list[Message]: ...
    async def list_messages(
        self,
        thread_id: str | Sequence[str],
        resource_id: str | None = None,
        include: Sequence[Include | Mapping[str, Any]] | None = None,
        filter: MessageFilter | Mapping[str, Any] | None = None,
        page: int = 0,
        per_page: PerPage = 40,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        cursor: str | None = None,
        total: bool = True,
    ) -> Page[Message]: ...
    async def list_messages_by_resource(
        self,
        resource_id: str,
        include: Sequence[Include | Mapping[str, Any]] | None = None,
        filter: MessageFilter | Mapping[str, Any] | None = None,
        page: int = 0,
        per_page: PerPage = 40,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        cursor: str | None = None,
        total: bool = True,
    ) -> Page[Message]: ...
    async def page_messages(self, request: MessagePageRequest) -> Page[Message]: ...
    async def message_parts(self, request: MessagePageRequest, *, threads: Sequence[str] = ()) -> MessageParts: ...
    async def include_windows(
        self, include: Sequence[Include | Mapping[str, Any]], resource_id: str | None = None
    ) -> list[list[Message]]: ...
    async def get_resource(self, resource_id: str) -> Resource | None: ...
    async def list_resource_ids(self, per_page: PerPage = 100, cursor: str | None = None) -> IdPage: ...
    async def save_resource(self, resource: Resource | Mapping[str, Any]) -> Resource: ...
    async def update_resource(
        self, resource_id: str, *, working_memory: Any = NOT_GIVEN, metadata: Mapping[str, Any] | None = None
    ) -> Resource: ...
    async def swap_working_memory(self, resource_id: str, expected: str | None, value: str) -> bool: ...
    async def swap_thread_working_memory(self, thread_id: str, expected: str | None, value: str) -> bool: ...
    async def write_working_memory(
        self,
        value: str,
        *,
        scope: Scope,
        thread_id: str | None,
        resource_id: str | None = None,
        if_version: str | None = NOT_GIVEN,
    ) -> None: ...
    async def delete_resource(self, resource_id: str) -> ResourceErasure: ...
    async def prune(
        self, policy: RetentionPolicy, *, dry_run: bool = False, before_delete: PruneHook | None = None
    ) -> PruneReport: ...
    async def close(self) -> None: ...
    async def destroy(self) -> None: ...


class BaseStorage(ABC):
    """Base class of every storage adapter (and of the reference store).

    Construction does no I/O. ``open()`` (or ``async with``) connects and
    creates the schema idempotently; public methods open lazily on first
    use. ``close()`` is idempotent; any call after it raises
    :class:`~memory_core.errors.AdapterClosedError`.

    Threads and event loops: a store may be used from any thread and any
    event loop, several at once (``asyncio.run`` per call; threads each
    running their own loop). The first open runs once per store however many
    loops race to it (the others wait for it, and try themselves if it
    failed); an adapter whose connections belong to the loop that made them
    (``loop_bound``) connects again in each further loop, keeping one
    connection (pool, client) per loop (:class:`memory_core.loops.LoopLocal`).

    Args:
        clock: where "now" comes from (R-CLOCK, R-BUMP); defaults to the
            process-wide system clock. Tests inject a
            :class:`~memory_core.clock.ManualClock`.

    Class attributes for adapters:
        backend_name: short name used in errors (``"sqlite"``).
        capabilities: optional capabilities the conformance suite may test
            (:class:`memory_core.capabilities.Capability` members); an
            instance may narrow them (an in-memory SQLite database is not
            persistent).
    """

    backend_name: ClassVar[str] = "base"
    capabilities: frozenset[str] = frozenset()
    chunk_limits: ClassVar[frozenset[int]] = frozenset()
    """Every batch or chunk size the adapter splits work at (ids per script
    call, rows per statement ...): the conformance suite runs saves, deletes,
    erasures and listings at one below, at and one above each."""
    fault_points: ClassVar[frozenset[FaultPoint]] = frozenset()
    """The recovery paths a test can trigger through ``faults``
    (:class:`memory_core.retry.Faults`); the conformance suite arms each."""
    loop_bound: ClassVar[bool] = False
    """Whether the adapter's connections belong to the event loop that made
    them (asyncpg, redis-py, PyMongo's async client). Then ``_open`` runs in
    every event loop that uses the store: first once for the store (schema
    included), then once in each further loop, where it must only connect
    (the schema is there: idempotent setup costs a check); the adapter keeps
    its connections in a :class:`~memory_core.loops.LoopLocal` and its
    ``_close`` closes them all (:func:`~memory_core.loops.close_everywhere`).
    False (memory://, SQLite's worker thread): ``_open`` runs once."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        self.clock: Clock = clock if clock is not None else system_clock
        self._opened = False
        self._closed = False
        self._open_locks: LoopLocal[asyncio.Lock] = LoopLocal()
        self._loops_open: LoopLocal[bool] = LoopLocal()
        self._first_open = OnceAcrossLoops()
        self.faults = Faults(self.fault_points)
        """Test hook: arm this store's ``fault_points`` (:mod:`memory_core.retry`)."""

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def open(self) -> None:
        """Connect and create the schema (idempotent, safe to call twice, from
        any thread and event loop: see the class docstring).

        Raises:
            AdapterClosedError: the store was closed.
            BackendError: the backend could not be reached (``operation``
                ``"open"``); nothing is remembered, the next call tries again.
            ValidationError: a setting the backend refuses (the field named).
        """
        if self._closed:
            raise AdapterClosedError(f"{self.backend_name} storage is closed")
        if self._open_here():
            return
        lock = self._open_locks.get()
        if lock is None:  # no await since get(): no other task of this loop can race here
            lock = asyncio.Lock()
            self._open_locks.set(lock)
        async with lock:
            if not self._opened:
                await self._open_first()
            if not self._open_here():  # a loop-bound store opened in another loop: connect in this one
                with BackendGuard(self, "open"):
                    await self._open()
                self._loops_open.set(True)

    def _open_here(self) -> bool:
        """Whether the store is open for the running loop."""
        return self._opened and (not self.loop_bound or self._loops_open.get() is not None)

    async def _open_first(self) -> None:
        """Run the store's first ``_open`` exactly once across threads and
        loops (:class:`~memory_core.loops.OnceAcrossLoops`): the others wait
        for its outcome without blocking their loops, and try themselves when
        it failed."""

        async def first() -> None:
            with BackendGuard(self, "open"):
                await self._open()
            if self.loop_bound:
                self._loops_open.set(True)
            self._opened = True

        await self._first_open.run("open", lambda: self._opened, first)

    async def close(self) -> None:
        """Release connections this store created (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._opened:
            with BackendGuard(self, "close"):
                await self._close()

    async def destroy(self) -> None:
        """Delete everything this store holds (its file, database or key
        namespace), then close. For tests and ``memory-core check``; the store
        cannot be used afterwards."""
        await self._ready()
        with BackendGuard(self, "destroy"):
            await self._destroy()
        await self.close()

    async def preflight(self, *, must_exist: bool = False) -> None:
        """Check, creating and writing nothing, that the store this instance
        names can be opened as it is (``memory-core check`` runs it before
        the suite, whose stores live in fresh namespaces beside the named one;
        the commands that move or prune data run it before any I/O).

        Args:
            must_exist: the store must already be there (a command that reads
                or deletes existing data: ``export``, ``copy``'s source,
                ``prune``): what the URL names must already hold a
                memory-core store, checked by reading only, so a misspelt
                name fails instead of ``open`` creating an empty store there
                (and an empty export succeeding). Without it (a destination,
                ``memory-core check``) a missing store passes: ``open``
                creates it.

        The default checks nothing (``memory://`` lives in its instance).
        Every persistent adapter overrides it: a file store's folder must
        exist and an existing file must be one of its databases; with
        ``must_exist`` each adapter looks for its own schema marker and
        raises :func:`no_store` when it is absent.

        Raises:
            ValidationError: the store cannot be where the URL says (e.g. a
                missing folder), or with ``must_exist`` it is not there
                (a missing file; :func:`no_store`: no memory-core store).
            BackendError: what is there cannot be opened (e.g. a file that is
                not a database), with the message ``open`` would give.
        """

    @property
    def store_identity(self) -> Hashable:
        """What names this store's data, computed without I/O: two stores with
        equal identities read and write the same data, so
        :func:`memory_core.identity.check_distinct` (``copy``) refuses them.

        The default is this instance alone (``(backend_name, "instance",
        id(self))``): right for a store whose data lives in its instance
        (``memory://``), and never wrong for one that does not say more. An
        adapter whose data outlives the instance overrides it with where the
        data is (a resolved file path; a server address, database and
        namespace), spelled one way per store (:mod:`memory_core.identity`).
        """
        return (self.backend_name, "instance", id(self))

    async def _ready(self) -> None:
        if self._closed:
            raise AdapterClosedError(f"{self.backend_name} storage is closed")
        if not self._open_here():
            await self.open()

    def is_retryable(self, exc: Exception) -> bool:
        """Whether a driver exception is transient (adapters override)."""
        return isinstance(exc, ConnectionError | TimeoutError)

    def _guard(self, operation: str) -> BackendGuard:
        return BackendGuard(self, operation)

    async def _optimistic(self, operation: str, attempt: Callable[[], Awaitable[T]]) -> T:
        """Run ``attempt`` (read, check, write) again while its write finds the
        reads stale (:class:`StaleStateError`), under
        :data:`memory_core.retry.STALE_WRITES` (8 attempts, full-jitter pauses
        of at most 50 ms)."""
        await self._ready()

        async def guarded() -> T:
            with self._guard(operation):
                return await attempt()

        return await STALE_WRITES.run(guarded, lambda exc: isinstance(exc, StaleStateError))

    # ------------------------------------------------------------------ threads

    @traced("search_memory")
    async def get_thread(self, thread_id: str, resource_id: str | None = None) -> Thread | None:
        """The thread, or None if missing or (with ``resource_id``) owned by
        another resource.

        Raises:
            ValidationError: bad id (R-ID).
        """
        check_id(thread_id, "thread_id")
        if resource_id is not None:
            check_id(resource_id, "resource_id")
        await self._ready()
        with self._guard("get_thread"):
            thread = await self._get_thread(thread_id)
        if thread is None or (resource_id is not None and thread.resource_id != resource_id):
            return None
        return thread

    async def get_thread_with_owner(self, thread_id: str) -> tuple[Thread | None, Resource | None]:
        """The thread and the resource record owning it, read in one round
        trip: ``(None, None)`` if the thread is missing, ``(thread, None)``
        if its resource has no record (no working memory or metadata saved).

        Raises:
            ValidationError: bad id (R-ID).
        """
        check_id(thread_id, "thread_id")
        await self._ready()
        with self._guard("get_thread"):
            parts = await self._read(ReadPlan(threads=(thread_id,), owner_resources=True))
        thread = parts.threads.get(thread_id)
        return thread, None if thread is None else parts.resources.get(thread.resource_id)

    @traced("update_memory")
    async def save_thread(self, thread: Thread | Mapping[str, Any]) -> Thread:
        """Upsert a whole thread (every field replaced); returns it as stored.

        ``created_at``/``updated_at`` None mean now; ``updated_at`` is stored as
        given otherwise. ``last_message_at`` is the store's (ignored on input;
        the returned thread carries the value read before the write). A thread
        id saved again under another resource is a ConflictError (its messages
        belong to the first resource).

        Raises:
            ValidationError: bad field (R-ID, R-JSON, R-TIME).
            ConflictError: the id belongs to another resource.
        """
        stored = self._thread_to_store(thread)

        async def attempt() -> Thread:
            saved = await self._save_thread_checked(stored)
            if saved is None:
                # Never name the other tenant's resource (issue 12, point 14).
                raise ConflictError(f"thread {stored.id!r} belongs to another resource")
            return saved

        return await self._optimistic("save_thread", attempt)

    @traced("create_memory")
    async def insert_thread(self, thread: Thread | Mapping[str, Any]) -> Thread:
        """Save a new thread, never replacing one (as :meth:`save_thread`
        otherwise). Atomic: of two racing inserts of one id, one fails.

        Raises:
            ValidationError: bad field (R-ID, R-JSON, R-TIME, R-SIZE).
            ConflictError: a thread with this id exists (under any resource).
        """
        stored = self._thread_to_store(thread)

        await self._ready()
        with self._guard("insert_thread"):
            try:  # no read first: the insert itself checks, atomically
                await self._insert_thread(stored)
            except StaleStateError:
                raise ConflictError(f"thread {stored.id!r} already exists") from None
        return stored

    @traced("create_memory")
    async def copy_thread(self, plan: CopyPlan) -> tuple[Thread, list[str]]:
        """Create ``plan.thread`` holding copies of the source messages the
        plan selects (:class:`~memory_core.lineage.CopyPlan`), all or nothing:
        the storage half of :func:`memory_core.lineage.clone_thread`, which
        builds and checks the plan.

        Returns:
            ``(thread, copied)``: the new thread as stored and the ids of the
            source messages copied, in R-ORDER (the k-th got
            ``plan.new_ids[k]``).

        Raises:
            ValidationError: a bad thread (R-ID, R-JSON, R-TIME, R-SIZE).
            ConflictError: a thread with the new id exists (nothing written).
        """
        stored = self._thread_to_store(plan.thread)
        await self._ready()
        with self._guard("copy_thread"):
            try:
                copied = await self._copy_thread(replace(plan, thread=stored), to_us(self.clock.now()))
            except StaleStateError:
                raise ConflictError(f"thread {stored.id!r} already exists") from None
        return stored, copied

    def _thread_to_store(self, thread: Thread | Mapping[str, Any]) -> Thread:
        """The validated thread with its times resolved (None: now)."""
        valid = check_thread(thread)
        created = valid.created_at or self.clock.now()
        return replace(valid, created_at=created, updated_at=valid.updated_at or created)

    @traced("update_memory")
    async def update_thread(
        self, thread_id: str, *, title: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Thread:
        """Partial, atomic update: only given fields change; ``metadata`` is
        merged one level (shallow); ``updated_at`` is bumped (R-BUMP).

        Raises:
            ValidationError: bad id, title not a str, metadata not JSON.
            NotFoundError: no such thread.
        """
        check_id(thread_id, "thread_id")
        if title is not None:
            check_text(title, "title")
        patch = None if metadata is None else check_json_object(metadata, "metadata")
        check_record_size("thread update", {"title": title, "metadata": patch})
        await self._ready()
        with self._guard("update_thread"):
            updated = await self._patch_thread(thread_id, title, patch, to_us(self.clock.now()))
        if updated is None:
            raise NotFoundError(f"thread {thread_id!r} does not exist")
        return updated

    @traced("delete_memory")
    async def delete_thread(self, thread_id: str) -> None:
        """Delete the thread and all its messages; unknown id: no error."""
        check_id(thread_id, "thread_id")
        await self._ready()
        with self._guard("delete_thread"):
            await self._delete_thread(thread_id)

    @traced("search_memory")
    async def list_threads(
        self,
        filter: ThreadFilter | Mapping[str, Any] | None = None,
        page: int = 0,
        per_page: PerPage = 100,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        cursor: str | None = None,
    ) -> Page[Thread]:
        """A page of threads (R-PAGE), default order ``created_at DESC``, ties by id.

        ``order_by`` fields: ``created_at``, ``updated_at``, ``last_message_at``
        (threads without messages come last in either direction); a field
        without a direction is sorted DESC (R-SORT).

        Returns:
            ``Page[Thread]`` with ``total`` counted under the filter.

        Raises:
            ValidationError: bad filter (R-META), page bounds (R-PAGE), order
                (R-SORT) or cursor (R-CURSOR).
        """
        resource_id, conditions = check_thread_filter(filter)
        page, per_page, offset = check_page(page, per_page)
        order_field, descending = check_thread_order(order_by)
        identity = fingerprint(
            "threads", resource_id, [(c.key, c.kind, c.value) for c in conditions], order_field, descending
        )
        after = self._cursor_position(cursor, page, identity, (int, str))
        window = _Window.of(offset, per_page, after)
        query = _new_thread_query(resource_id, conditions, order_field, descending, window.offset, window.limit, after)
        await self._ready()
        with self._guard("list_threads"):
            # threads, resources, owner_resources, messages, thread_page, windows
            parts = await self._read(_new_plan((), (), False, None, query, ()))
        items, has_more = window.cut(parts.thread_items, parts.thread_total)
        next_cursor = encode_cursor(identity, query.key(items[-1])) if has_more and items else None
        return Page(items, parts.thread_total, page, per_page, has_more, next_cursor)

    # ------------------------------------------------------------------ messages

    @traced("update_memory")
    async def save_messages(self, messages: Sequence[Message | Mapping[str, Any]]) -> list[Message]:
        """Upsert messages by id; returns them as stored, in input order.

        The whole batch is validated before anything is written, and written
        all or nothing (a backend that cannot write several resources at
        once, Redis Cluster, is atomic per resource and says so in its
        README); ``[]`` is a no-op. New ids get ``created_at`` (now when absent, R-CLOCK) and the
        next sequence numbers in list order (R-ORDER). An existing id keeps
        ``created_at`` and sequence; content, role, type and metadata are
        replaced, and a new ``thread_id`` of the same resource moves it. The
        same id twice: the last wins (at the first one's place). Every thread
        touched (old and new on a move) has ``updated_at`` bumped. A
        :class:`~memory_core.validation.CheckedMessages` batch is taken as
        already checked (``Memory`` passes one).

        Raises:
            ValidationError: any bad message (named by id); nothing is written.
            NotFoundError: a thread does not exist.
            OwnershipError: ``resource_id`` differs from the thread's.
            ConflictError: an existing id is saved under another resource.
            StaleStateError: (a ConflictError) concurrent writers changed
                these messages or threads under every attempt (rare: see
                ``memory_core.retry.STALE_WRITES``); retrying later is safe.
        """
        if type(messages) is CheckedMessages:  # each one checked by the caller (Memory) a moment ago
            batch = {message.id: message for message in messages}
        else:
            if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
                raise ValidationError("messages", "must be a list of Message")
            batch = {}
            for index, raw in enumerate(messages):
                message = check_message(raw, f"messages[{index}]")
                batch[message.id] = message
        if not batch:
            return []
        return await self._optimistic("save_messages", lambda: self._save_batch(batch))

    async def _save_batch(self, batch: dict[str, Message]) -> list[Message]:
        """One read-check-write attempt of :meth:`save_messages`."""
        wanted = list(dict.fromkeys(m.thread_id for m in batch.values()))

        def decide(threads: dict[str, Thread], stored: list[Message]) -> tuple[list[Message], list[str]]:
            return self._decide_save(batch, threads, stored)

        records, sequences = await self._save_checked(wanted, list(batch), decide, to_us(self.clock.now()))
        return [
            m if m.sequence == seq else _as_stored(m, m.resource_id, m.created_at, seq)
            for m, seq in zip(records, sequences, strict=True)
        ]

    def _decide_save(
        self, batch: dict[str, Message], threads: dict[str, Thread], stored: list[Message]
    ) -> tuple[list[Message], list[str]]:
        """The checks of :meth:`save_messages` against the stored state, and
        the records to write with the threads to bump (synchronous and pure
        but for the clock: it may run inside an adapter's transaction)."""
        for message in batch.values():
            if message.thread_id not in threads:
                raise NotFoundError(f"message {message.id!r}: thread {message.thread_id!r} does not exist")
        existing = {m.id: m for m in stored}
        bump: dict[str, None] = {}
        for message in batch.values():
            owner = threads[message.thread_id].resource_id
            if message.resource_id is not None and message.resource_id != owner:
                raise OwnershipError(
                    f"message {message.id!r}: thread {message.thread_id!r} belongs to another resource, "
                    f"not {message.resource_id!r}"
                )
            old = existing.get(message.id)
            if old is not None:
                if old.resource_id != owner:
                    raise ConflictError(f"message {message.id!r} belongs to another resource")
                bump[old.thread_id] = None
            bump[message.thread_id] = None
        # Times are assigned only after the whole batch passed every check.
        records = []
        for message in batch.values():
            old = existing.get(message.id)
            owner = threads[message.thread_id].resource_id
            if old is not None:
                records.append(_as_stored(message, owner, old.created_at, old.sequence))
            else:
                records.append(_as_stored(message, owner, message.created_at or self.clock.assign(), None))
        return records, list(bump)

    @traced("update_memory")
    async def update_messages(self, updates: Sequence[Mapping[str, Any]]) -> list[Message]:
        """Partial updates, one mapping per message: ``{"id", "role"?, "type"?,
        "content"?, "metadata"?, "thread_id"?}``.

        Scalars overwrite; a dict ``content`` is merged one level into stored
        dict content (and replaces str content); ``metadata`` is merged one
        level; ``thread_id`` moves the message within its resource;
        ``created_at`` cannot change. A key given as None keeps its field, as
        an absent key does. Unknown ids are skipped. The threads of every
        updated message are bumped, even by an update that changes nothing.
        Returns the updated messages as stored, in R-ORDER.

        Raises:
            ValidationError: bad field, ``created_at`` given, or a result over
                R-SIZE; nothing is written.
            NotFoundError: the target thread of a move does not exist.
            ConflictError: a move to another resource's thread; or (its
                subclass StaleStateError) every retry found another writer
                between the store's check and its write (a store re-verifies
                what it read and retries; under bursts it ends holding row
                locks, so this is rare).
        """
        if isinstance(updates, str | bytes | Mapping) or not isinstance(updates, Sequence):
            raise ValidationError("updates", "must be a list of mappings")
        patches: dict[str, MessagePatch] = {}
        for index, update in enumerate(updates):
            patch = self._check_patch(update, f"updates[{index}]")
            previous = patches.get(patch.id)
            patches[patch.id] = patch if previous is None else _combine(previous, patch)
        if not patches:
            return []
        return await self._optimistic("update_messages", lambda: self._patch_batch(patches))

    async def _patch_batch(self, patches: dict[str, MessagePatch]) -> list[Message]:
        """One read-check-write attempt of :meth:`update_messages`."""
        wanted = list(dict.fromkeys(p.thread_id for p in patches.values() if p.thread_id is not None))

        def decide(targets: dict[str, Thread], stored: list[Message]) -> tuple[list[MessagePatch], list[str]]:
            return self._decide_patch(patches, targets, stored)

        updated = await self._patch_checked(wanted, list(patches), decide, to_us(self.clock.now()))
        return sorted(updated, key=order_key)

    @staticmethod
    def _decide_patch(
        patches: dict[str, MessagePatch], targets: dict[str, Thread], stored: list[Message]
    ) -> tuple[list[MessagePatch], list[str]]:
        """The checks of :meth:`update_messages` against the stored state
        (synchronous and pure: it may run inside an adapter's transaction):
        the patches of stored ids, with the threads to bump."""
        existing = {m.id: m for m in stored}
        for patch in patches.values():
            if patch.id in existing and patch.thread_id is not None and patch.thread_id not in targets:
                raise NotFoundError(f"message {patch.id!r}: thread {patch.thread_id!r} does not exist")
        live = [p for p in patches.values() if p.id in existing]
        bump: dict[str, None] = {}
        for patch in live:
            old = existing[patch.id]
            if patch.thread_id is not None and targets[patch.thread_id].resource_id != old.resource_id:
                raise ConflictError(
                    f"message {patch.id!r} cannot move to another resource's thread {patch.thread_id!r}"
                )
            size = message_size(patch.apply(old))
            if size > MAX_MESSAGE_BYTES:
                raise ValidationError(
                    f"message {patch.id!r}", f"would serialise to {size} bytes, over 15 MiB", "R-SIZE"
                )
            bump[old.thread_id] = None
            if patch.thread_id is not None:
                bump[patch.thread_id] = None
        return live, list(bump)

    @staticmethod
    def _check_patch(update: Any, field: str) -> MessagePatch:
        if not isinstance(update, Mapping):
            raise ValidationError(field, f"must be a mapping, got {type(update).__name__}")
        for key in update:
            if key in ("created_at", "createdAt"):
                raise ValidationError(f"{field}.created_at", "cannot be changed")
            if key not in _PATCH_FIELDS:
                raise ValidationError(f"{field}.{key}", "unknown field for a message update")
        msg_id = check_id(update.get("id"), f"{field}.id")
        where = f"message {msg_id!r}"
        role = update.get("role")
        if role is not None and (type(role) is not str or role not in ROLES):
            raise ValidationError(f"{where}.role", f"must be one of {sorted(ROLES)}, got {role!r}")
        kind = update.get("type")
        if kind is not None and type(kind) is not str:
            raise ValidationError(f"{where}.type", "must be a str")
        content = update.get("content")
        probe: dict[str, Any] = {
            "id": msg_id,
            "thread_id": "x",
            "role": role or "user",
            "content": "" if content is None else content,
        }
        if kind is not None:
            probe["type"] = kind
        metadata = update.get("metadata")
        if metadata is not None:
            probe["metadata"] = metadata
        check_message(probe, field)
        if "thread_id" in update and "threadId" in update:
            raise ValidationError(f"{where}.thread_id", "given twice (thread_id and threadId)")
        thread_id = update.get("thread_id", update.get("threadId"))
        if thread_id is not None:
            check_id(thread_id, f"{where}.thread_id")
        return MessagePatch(msg_id, role, kind, content, metadata, thread_id)

    @traced("delete_memory")
    async def delete_messages(self, ids: Sequence[str]) -> int:
        """Delete known ids, ignore unknown ones; bump their threads. The
        remaining order is unchanged; an emptied thread remains.

        Returns how many messages this call removed (distinct ids): of racing
        deletes of one id exactly one counts it, so ``delete_messages([id]) ==
        1`` is an atomic "I took it" (the integrations' pop uses this).

        Raises:
            ValidationError: a bad id list (R-ID).
            StaleStateError: (a ConflictError) concurrent moves of these
                messages under every attempt (rare); retrying is safe.
        """
        wanted = check_id_list(ids, "ids")
        if not wanted:
            return 0
        distinct = list(dict.fromkeys(wanted))
        # A message moved between the default path's read and its delete is stale: read again.
        return await self._optimistic("delete_messages", lambda: self._delete_found(distinct, to_us(self.clock.now())))

    @traced("search_memory")
    async def get_messages(self, ids: Sequence[str]) -> list[Message]:
        """The messages found among ``ids``, in R-ORDER ascending."""
        wanted = check_id_list(ids, "ids")
        if not wanted:
            return []
        await self._ready()
        with self._guard("get_messages"):
            found = await self._get_messages(list(dict.fromkeys(wanted)))
        return sorted(found, key=order_key)

    @traced("search_memory")
    async def list_messages(
        self,
        thread_id: str | Sequence[str],
        resource_id: str | None = None,
        include: Sequence[Include | Mapping[str, Any]] | None = None,
        filter: MessageFilter | Mapping[str, Any] | None = None,
        page: int = 0,
        per_page: PerPage = 40,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        cursor: str | None = None,
        total: bool = True,
    ) -> Page[Message]:
        """A page of one or more threads' messages (R-PAGE, R-INCLUDE).

        Order: ``created_at ASC`` by default, ties by insertion sequence
        (R-ORDER). With ``resource_id``, every thread named must be that
        resource's (R-OWN, as for ``Memory.recall``); a missing thread is an
        empty part of the page. ``include`` windows are merged in, de-duplicated and sorted in
        the requested order; they never count in ``total``.

        ``total=False`` asks for no count: ``Page.total`` is None and
        ``has_more`` comes from one row read past the page. An unfiltered
        thread's total is a counter the writes keep (O(1)); a date or metadata
        filter's total is a count of the matches, which ``total=False`` skips.

        Raises:
            ValidationError: empty/blank ``thread_id``, bad filter, page bounds,
                order, include, cursor or a ``total`` that is not a bool.
            OwnershipError: with ``resource_id``, a thread named belongs to
                another resource (nothing is returned; check a thread's owner
                without raising with ``get_thread(thread_id, resource_id)``,
                which answers None).
        """
        # The public field is ``thread_id``: check it here, so errors name it.
        thread_ids = (check_id(thread_id, "thread_id"),) if isinstance(thread_id, str) else _thread_ids(thread_id)
        request = MessagePageRequest(
            thread_ids=thread_ids,
            resource_id=resource_id,
            include=include,
            filter=filter,
            page=page,
            per_page=per_page,
            order_by=order_by,
            cursor=cursor,
            total=total,
        )
        if resource_id is None:
            return await self.page_messages(request)
        # The threads are read in the page's round trip: another resource's
        # thread is an OwnershipError, as Memory.recall gives it (R-OWN).
        parts = await self.message_parts(request, threads=thread_ids)
        for found in parts.threads.values():
            if found.resource_id != resource_id:
                raise OwnershipError(f"thread {found.id!r} does not belong to resource {resource_id!r}")
        return parts.merge(parts.windows)

    @traced("search_memory")
    async def list_messages_by_resource(
        self,
        resource_id: str,
        include: Sequence[Include | Mapping[str, Any]] | None = None,
        filter: MessageFilter | Mapping[str, Any] | None = None,
        page: int = 0,
        per_page: PerPage = 40,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        cursor: str | None = None,
        total: bool = True,
    ) -> Page[Message]:
        """Like :meth:`list_messages`, across every thread of one resource
        (its unfiltered total is the resource's message counter)."""
        check_id(resource_id, "resource_id")
        return await self.page_messages(
            MessagePageRequest(
                resource_id=resource_id,
                include=include,
                filter=filter,
                page=page,
                per_page=per_page,
                order_by=order_by,
                cursor=cursor,
                total=total,
            )
        )

    @traced("search_memory")
    async def page_messages(self, request: MessagePageRequest) -> Page[Message]:
        """The shared message-page composition behind every listing.

        ``list_messages``, ``list_messages_by_resource`` and ``Memory.recall``
        all come here. With ``request.newest`` and no ``order_by``
        (``Memory.recall``), the window is the newest ``per_page`` messages
        (page 1 = the next older block), returned oldest first (R-RECALL
        step 3).

        Returns:
            a :class:`~memory_core.models.Page` of messages, as for
            :meth:`list_messages`.

        Raises:
            ValidationError: ``request`` is not a
                :class:`~memory_core.models.MessagePageRequest`; ``thread_ids``
                empty, a bare str or with a bad id; neither ``thread_ids`` nor
                ``resource_id`` given; or any field that
                :meth:`list_messages` refuses.
        """
        parts = await self.message_parts(request)
        return parts.merge(parts.windows)

    @traced("search_memory")
    async def message_parts(self, request: MessagePageRequest, *, threads: Sequence[str] = ()) -> MessageParts:
        """:meth:`page_messages` before the merge: the main page and each
        include's window apart (one read, as ``page_messages``), for callers
        that need to know where each message came from (``Memory.recall``).

        Args:
            request: the page, as for :meth:`page_messages`.
            threads: thread ids to read in the same round trip (an ownership
                check); found ones come back in :attr:`MessageParts.threads`.

        Raises:
            ValidationError: as :meth:`page_messages`; a bad id in ``threads``.
        """
        if not isinstance(request, MessagePageRequest):
            raise ValidationError("request", f"must be a MessagePageRequest, got {type(request).__name__}")
        fetched = tuple(check_id_list(threads, "threads"))
        thread_ids = None if request.thread_ids is None else _thread_ids(request.thread_ids)
        resource_id, filter, page, per_page = request.resource_id, request.filter, request.page, request.per_page
        order_by, cursor = request.order_by, request.cursor
        if resource_id is not None:
            check_id(resource_id, "resource_id")
        elif thread_ids is None:
            raise ValidationError("thread_ids", "give thread_ids or resource_id", "R-OWN")
        created_from, created_to, conditions = check_message_filter(filter)
        page, per_page, offset = check_page(page, per_page)
        includes = check_includes(request.include)
        wants_total = check_bool(request.total, "total")
        latest = request.newest and order_by is None
        if latest:
            descending, output_descending = True, False
        else:
            _, descending = check_order(order_by, ("created_at",), MESSAGE_ORDER_DEFAULT)
            output_descending = descending
        identity = fingerprint(
            "messages",
            thread_ids,
            resource_id,
            created_from,
            created_to,
            [(c.key, c.kind, c.value) for c in conditions],
            descending,
        )
        after = self._cursor_position(cursor, page, identity, (int, int))
        # has_more with includes asks whether every match is already among the
        # items, which only the count tells: such a page counts even without total.
        counted = wants_total or bool(includes)
        window = _Window.of(offset, per_page, after, counted)
        offset, limit = window.offset, window.limit
        query = _new_message_query(
            thread_ids, resource_id, created_from, created_to, conditions, descending, offset, limit, after, counted
        )
        # threads, resources, owner_resources, messages, thread_page, windows
        plan = _new_plan(fetched, (), False, query, None, _windows(includes))
        await self._ready()
        with self._guard("list_messages"):
            parts = await self._read(plan)
        main, has_more = window.cut(parts.messages, parts.message_total)
        next_cursor = encode_cursor(identity, message_key(main[-1])) if has_more and main else None
        return _new_parts(
            main,
            parts.message_total if counted else None,
            wants_total,
            page,
            per_page,
            has_more,
            next_cursor,
            self._owned_windows(parts.windows, resource_id),
            query,
            output_descending,
            parts.threads,
        )

    @traced("search_memory")
    async def include_windows(
        self, include: Sequence[Include | Mapping[str, Any]], resource_id: str | None = None
    ) -> list[list[Message]]:
        """Each include's window (R-INCLUDE), in the includes' order: the
        message and its neighbours in its own thread, R-ORDER ascending;
        ``[]`` for an unknown id or, with ``resource_id``, another resource's
        message.

        Raises:
            ValidationError: a bad include or ``resource_id``.
        """
        if resource_id is not None:
            check_id(resource_id, "resource_id")
        includes = check_includes(include)
        if not includes:
            return []
        await self._ready()
        with self._guard("list_messages"):
            parts = await self._read(ReadPlan(windows=_windows(includes)))
        return self._owned_windows(parts.windows, resource_id)

    @staticmethod
    def _owned_windows(windows: list[list[Message]], resource_id: str | None) -> list[list[Message]]:
        """Windows with those of another resource's message emptied (R-OWN)."""
        if resource_id is None:
            return windows
        return [window if not window or window[0].resource_id == resource_id else [] for window in windows]

    @staticmethod
    def _cursor_position(cursor: Any, page: int, identity: str, types: tuple[type, ...]) -> Any:
        if cursor is None:
            return None
        if page != 0:
            raise ValidationError("cursor", "cannot be combined with page > 0", "R-CURSOR")
        return decode_cursor(cursor, identity, types)

    # ------------------------------------------------------------------ resources

    @traced("search_memory")
    async def get_resource(self, resource_id: str) -> Resource | None:
        """The resource, or None."""
        check_id(resource_id, "resource_id")
        await self._ready()
        with self._guard("get_resource"):
            return await self._get_resource(resource_id)

    @traced("search_memory")
    async def list_resource_ids(self, per_page: PerPage = 100, cursor: str | None = None) -> IdPage:
        """A page of the ids of every resource the store holds: each id that
        has a resource record (working memory, metadata) or owns at least one
        thread, ascending by exact comparison (code point order, as Python
        sorts str), each once (R-RESOURCES).

        A resource whose last thread was deleted stays listed while its
        record exists; :meth:`delete_resource` (record and threads) removes
        it. Walk the listing with ``next_cursor`` (a keyset position: ids
        written or deleted meanwhile cause no gaps or repeats among the rest).

        Args:
            per_page: ids per page, an int from 0 to
                :data:`~memory_core.validation.MAX_PER_PAGE`, or ``False``
                for all of them in one page (default 100).
            cursor: a previous page's ``next_cursor``; None: from the start.

        Returns:
            :class:`~memory_core.models.IdPage` (no ``total``: counting would
            cost a full scan per page).

        Raises:
            ValidationError: bad ``per_page`` (R-PAGE) or ``cursor``
                (R-CURSOR), before any I/O.
        """
        size: PerPage = False if per_page is False else check_per_page(per_page, "per_page")
        after = None if cursor is None else decode_cursor(cursor, _RESOURCE_IDS, (str,))[0]
        await self._ready()
        with self._guard("list_resource_ids"):
            found = await self._list_resource_ids(after, None if size is False else size + 1)
        if size is False:
            return IdPage(found, size, False)
        items, has_more = found[:size], len(found) > size
        return IdPage(items, size, has_more, encode_cursor(_RESOURCE_IDS, (items[-1],)) if has_more and items else None)

    @traced("update_memory")
    async def save_resource(self, resource: Resource | Mapping[str, Any]) -> Resource:
        """Upsert a whole resource; None datetimes mean now. Returns it."""
        valid = check_resource(resource)
        created = valid.created_at or self.clock.now()
        stored = replace(valid, created_at=created, updated_at=valid.updated_at or created)
        await self._ready()
        with self._guard("save_resource"):
            await self._put_resource(stored)
        return stored

    @traced("update_memory")
    async def update_resource(
        self, resource_id: str, *, working_memory: Any = NOT_GIVEN, metadata: Mapping[str, Any] | None = None
    ) -> Resource:
        """Partial, atomic update; creates the resource when missing.

        ``working_memory``: a str (``""`` is a value) or None to clear; omit to
        keep. ``metadata`` is merged one level. ``updated_at`` is bumped.

        Raises:
            ValidationError: bad id, working memory not str/None, bad metadata.
        """
        check_id(resource_id, "resource_id")
        if working_memory is not NOT_GIVEN and working_memory is not None:
            check_text(working_memory, "working_memory")
        patch = None if metadata is None else check_json_object(metadata, "metadata")
        memory = None if working_memory is NOT_GIVEN else working_memory
        check_record_size("resource update", {"working_memory": memory, "metadata": patch})
        await self._ready()
        with self._guard("update_resource"):
            return await self._patch_resource(resource_id, working_memory, patch, to_us(self.clock.now()))

    @traced("update_memory")
    async def swap_working_memory(self, resource_id: str, expected: str | None, value: str) -> bool:
        """Compare-and-set of a resource's working memory: set it to ``value``
        only if it is ``expected`` now (None: nothing stored, or no resource);
        atomic on every backend. A missing resource is created. Bumps
        ``updated_at`` when it writes.

        Returns:
            True if it wrote, False if the stored value was not ``expected``
            (nothing written).

        Raises:
            ValidationError: bad id, ``expected`` not str/None, ``value`` not a
                str, or a record over R-SIZE.
        """
        check_id(resource_id, "resource_id")
        if expected is not None:
            check_text(expected, "expected")
        check_text(value, "working_memory")
        check_record_size("working_memory", {"working_memory": value})
        await self._ready()
        with self._guard("swap_working_memory"):
            return await self._swap_resource_memory(resource_id, expected, value, to_us(self.clock.now()))

    @traced("update_memory")
    async def swap_thread_working_memory(self, thread_id: str, expected: str | None, value: str) -> bool:
        """Compare-and-set of a thread's working memory
        (``metadata["working_memory"]``): set it to ``value`` only if it is
        ``expected`` now (None: the key is absent or not a str); atomic on
        every backend; other metadata keys are kept. Bumps ``updated_at`` when
        it writes.

        Returns:
            True if it wrote, False if the stored value was not ``expected``.

        Raises:
            ValidationError: bad id or values, or a record over R-SIZE.
            NotFoundError: no such thread.
        """
        check_id(thread_id, "thread_id")
        if expected is not None:
            check_text(expected, "expected")
        check_text(value, "working_memory")
        check_record_size("working_memory", {"metadata": {"working_memory": value}})
        await self._ready()
        with self._guard("swap_thread_working_memory"):
            swapped = await self._swap_thread_memory(thread_id, expected, value, to_us(self.clock.now()))
        if swapped is None:
            raise NotFoundError(f"thread {thread_id!r} does not exist")
        return swapped

    @traced("update_memory")
    async def write_working_memory(
        self,
        value: str,
        *,
        scope: Scope,
        thread_id: str | None,
        resource_id: str | None = None,
        if_version: str | None = NOT_GIVEN,
    ) -> None:
        """Set a working memory with its checks (what
        :meth:`memory_core.Memory.update_working_memory` stores through).

        ``scope="thread"``: ``metadata["working_memory"]`` of ``thread_id``
        (other keys kept); ``scope="resource"``: the working memory of the
        resource owning ``thread_id``, or of ``resource_id`` when
        ``thread_id`` is None (a missing record is created). With both ids,
        the thread must belong to ``resource_id``. ``if_version`` makes it a
        compare-and-set on :func:`~memory_core.workmem.working_memory_version`
        of the stored value (None: only while nothing is stored); omitted:
        unconditional. Bumps ``updated_at``. Where nothing needs checking (a
        resource by id; a thread of any resource) it is one plain write;
        otherwise :meth:`_write_memory`.

        Raises:
            ValidationError: bad ids or values, a record over R-SIZE, or
                thread scope without ``thread_id``.
            NotFoundError: ``thread_id`` names no thread.
            OwnershipError: the thread belongs to another resource.
            ConflictError: ``if_version`` is not the stored version (nothing
                written).
        """
        check_text(value, "working_memory")
        if thread_id is not None:
            check_id(thread_id, "thread_id")
        if resource_id is not None:
            check_id(resource_id, "resource_id")
        if if_version is not NOT_GIVEN and if_version is not None:
            check_text(if_version, "if_version")
        if thread_id is None and (scope == "thread" or resource_id is None):
            raise ValidationError("thread_id", f"a {scope} working memory write needs a thread_id")
        write = MemoryWrite(scope, thread_id, resource_id, value, if_version is not NOT_GIVEN)
        decide = memory_decision(write, if_version)
        # The record the write primitive's public twin checks (update_thread,
        # update_resource, swap_*): the same R-SIZE size; the error names the
        # field the caller gave.
        memory: dict[str, Any] = {"working_memory": value}
        record = {"metadata": memory} if scope == "thread" else memory
        if not write.conditional:
            record = {"title": None, **record} if scope == "thread" else {**memory, "metadata": None}
        try:
            check_record_size("working_memory", record)
        except ValidationError as exc:
            oversized: ValidationError | None = exc
        else:
            oversized = None
        if oversized is not None:
            # Refused only after the checks that read (a missing thread is a
            # NotFoundError first, as it always was): read, check, refuse.
            await self._ready()
            with self._guard("write_working_memory"):
                decide(*(await self._memory_state(write))[:2])
            raise oversized
        if not write.conditional and (thread_id is None or (scope == "thread" and resource_id is None)):
            now_us = to_us(self.clock.now())
            await self._ready()
            if thread_id is None:
                assert resource_id is not None
                with self._guard("update_resource"):
                    await self._patch_resource(resource_id, value, None, now_us)
                return
            with self._guard("update_thread"):
                found = await self._patch_thread(thread_id, None, {"working_memory": value}, now_us)
            if found is None:
                decide(None, None)
            return
        await self._optimistic(
            "write_working_memory", lambda: self._write_memory(write, decide, to_us(self.clock.now()))
        )

    @traced("delete_memory")
    async def delete_resource(self, resource_id: str) -> ResourceErasure:
        """Erase a resource: every thread it owns, their messages, and its
        record (working memory, metadata). No id stays reserved: the resource,
        thread and message ids can all be used again, by any resource. An
        unknown id is no error (an empty :class:`ResourceErasure`).

        Threads of other resources cloned from this one's lose their lineage
        (:func:`memory_core.lineage.forget_resource`). Not a single
        transaction on every backend, but resumable: a call that
        fails half-way leaves a state that a repeated call erases to
        completion. Vectors are removed by :meth:`memory_core.Memory.delete_resource`.

        Returns:
            :class:`ResourceErasure`: the deleted thread ids, the number of
            messages deleted, whether a resource record existed.

        Raises:
            ValidationError: bad id (R-ID).
        """
        check_id(resource_id, "resource_id")
        await self._ready()
        with self._guard("delete_resource"):
            thread_ids, messages, existed = await self._delete_resource(resource_id)
        await lineage.forget_resource(self, resource_id)  # clones elsewhere stop naming it (R-LINEAGE)
        return ResourceErasure(resource_id, sorted(thread_ids), messages, existed)

    @traced("delete_memory")
    async def prune(
        self, policy: RetentionPolicy, *, dry_run: bool = False, before_delete: PruneHook | None = None
    ) -> PruneReport:
        """Delete messages or threads older than ``policy`` allows (R-PRUNE),
        in batches, composed from public calls (see
        :mod:`memory_core.retention` for the exact semantics). Vectors are
        removed by :meth:`memory_core.Memory.prune`.

        Args:
            policy: a :class:`~memory_core.retention.RetentionPolicy`.
            dry_run: report what would be removed, write nothing.
            before_delete: awaited before each delete with its
                :class:`~memory_core.retention.PruneBatch` (``Memory`` drops
                vectors there).

        Returns:
            :class:`~memory_core.retention.PruneReport`.

        Raises:
            ValidationError: bad ``policy`` or ``dry_run`` (before any I/O).
        """
        return await apply_policy(self, policy, self.clock.now(), dry_run=dry_run, before_delete=before_delete)

    # ------------------------------------------------------------------ primitives

    async def _open(self) -> None:
        """Connect and create schema/indexes idempotently (default: nothing)."""

    async def _close(self) -> None:
        """Release what ``_open`` acquired (default: nothing)."""

    @abstractmethod
    async def _destroy(self) -> None:
        """Delete all data of this store's namespace (file, database, key
        prefix), leaving nothing behind; called before ``_close``."""

    @abstractmethod
    async def _get_thread(self, thread_id: str) -> Thread | None:
        """The stored thread or None, ``last_message_at`` filled.

        ``last_message_at`` (every primitive returning threads fills it): the
        largest ``created_at`` of the thread's messages, or None when it has
        none. An adapter stores it with the thread and sets it in the same
        transaction as every write that changes a thread's set of messages
        (``_save_messages``, ``_patch_messages``, ``_delete_messages``: the
        threads in their ``bump`` lists are exactly those), or computes it
        when reading; either way it is exact after every write."""

    @abstractmethod
    async def _put_thread(self, thread: Thread) -> None:
        """Insert or wholly replace a thread (all fields set but
        ``last_message_at``, which is ignored). Messages of a replaced thread
        are kept, and so is its ``last_message_at``. If the id is stored under
        another resource, raise :class:`~memory_core.errors.StaleStateError`
        and write nothing (checked atomically with the write)."""

    @abstractmethod
    async def _insert_thread(self, thread: Thread) -> None:
        """Insert a thread (all fields set; ``last_message_at`` None) only if no
        thread has its id; otherwise raise
        :class:`~memory_core.errors.StaleStateError` and write nothing
        (checked atomically with the write)."""

    @abstractmethod
    async def _patch_thread(
        self, thread_id: str, title: str | None, metadata: dict[str, Any] | None, now_us: int
    ) -> Thread | None:
        """Atomically: set ``title`` if not None; merge ``metadata`` one level if
        not None; set ``updated_at`` to :func:`~memory_core.clock.bump_us`
        (old, now_us). Returns the updated thread, or None if missing (then
        nothing is written). No read-modify-write of the whole record outside
        a transaction."""

    @abstractmethod
    async def _delete_thread(self, thread_id: str) -> int | None:
        """Delete the thread and every message in it (atomically); return how
        many messages this call deleted, counted with the delete (0 for an
        unknown thread), or None from an adapter that does not count (the
        default :meth:`_delete_resource` then reports the count it read
        before deleting, which racing deletes can make too high)."""

    @abstractmethod
    async def _list_threads(self, query: ThreadQuery) -> list[Thread]:
        """Threads matching ``query`` (resource, metadata), ordered by
        ``query.key`` (order_field µs, id) in its direction, strictly after
        ``query.after`` if set, skipping ``offset``, at most ``limit`` (None =
        all). For ``last_message_at`` a thread without messages sorts at
        :data:`~memory_core.query.NO_MESSAGE_ASC_US` (ASC) or
        :data:`~memory_core.query.NO_MESSAGE_DESC_US` (DESC), i.e. last."""

    @abstractmethod
    async def _count_threads(self, query: ThreadQuery) -> int:
        """How many threads match ``query``'s filter (called with no offset, limit or after)."""

    @abstractmethod
    async def _get_messages(self, ids: Sequence[str]) -> list[Message]:
        """Stored messages with these ids (any order), ``sequence`` filled."""

    @abstractmethod
    async def _save_messages(self, messages: Sequence[Message], bump: Sequence[str], now_us: int) -> list[int]:
        """One atomic batch (all or nothing). Returns each message's stored
        sequence, in input order.

        First verify, atomically with the writes, what the core read (else
        raise :class:`~memory_core.errors.StaleStateError`, writing nothing):
        each message's thread exists under ``message.resource_id``; a message
        with ``sequence`` None is not stored; one with a ``sequence`` is
        stored under the same ``resource_id``. Then for each message in order:
        if its id exists, set thread_id, role, type, content and metadata (keep
        resource_id, created_at, sequence); otherwise insert it as given
        (every field set) with the next store-wide sequence number. Then bump
        ``updated_at`` of each thread in ``bump`` to bump_us(old, now_us).

        A stored message whose thread (now, at the write) is not in ``bump``
        moved after the core read it: raise StaleStateError, writing nothing
        (else that thread would keep a ``last_message_at`` it no longer has)."""

    @abstractmethod
    async def _patch_messages(self, patches: Sequence[MessagePatch], bump: Sequence[str], now_us: int) -> None:
        """Apply each patch atomically (see :meth:`MessagePatch.apply` for the
        reference result) to existing messages, then bump the threads in
        ``bump``. A patch for an id that vanished meanwhile is skipped. A move
        (``thread_id`` set) whose target thread is missing or under another
        resource than the message, or a message whose thread (now, at the
        write) is not in ``bump`` (it moved after the core read it), raises
        :class:`~memory_core.errors.StaleStateError`, writing nothing."""

    @abstractmethod
    async def _delete_messages(self, ids: Sequence[str], bump: Sequence[str], now_us: int) -> int:
        """Delete these messages (distinct ids) and bump, of the threads in
        ``bump``, those that held a message this call removed; returns how
        many of them this call removed, counted atomically with the delete
        (an id a concurrent writer removed first does not count, and its
        thread is not bumped). A message whose thread (now, at the write) is
        not in ``bump`` moved after the core read it: raise
        :class:`~memory_core.errors.StaleStateError`, writing nothing."""

    @abstractmethod
    async def _list_messages(self, query: MessageQuery) -> list[Message]:
        """Messages matching ``query``, ordered by (created_at, sequence) in its
        direction, strictly after ``query.after`` if set, skipping ``offset``,
        at most ``limit`` (None = all); ``sequence`` filled."""

    @abstractmethod
    async def _count_messages(self, query: MessageQuery) -> int:
        """How many messages match ``query``'s filter (called with no offset, limit or after)."""

    @abstractmethod
    async def _message_window(self, message_id: str, before: int, after: int) -> list[Message]:
        """The message with this id plus up to ``before`` messages preceding it
        and ``after`` following it in its own thread, in R-ORDER ascending;
        ``[]`` if the id is unknown."""

    # Composites. The defaults compose the primitives above (reads run
    # concurrently); an adapter overrides them to answer each in a single
    # round trip.

    async def _save_checked(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], decide: SaveDecision, now_us: int
    ) -> tuple[list[Message], list[int]]:
        """A message save with its checks: read the threads (by id) and the
        messages found among these ids, call ``decide(threads, messages)``
        (it raises the typed error of a failed check, or returns the records
        to write and the threads to bump), write them as :meth:`_save_messages`
        does and return ``(records, their sequences)``.

        The default is three steps (:meth:`_read_state`, ``decide``,
        :meth:`_save_messages`, which re-verifies the reads and raises
        :class:`~memory_core.errors.StaleStateError` when a writer got in
        between, so the core retries). An adapter with transactions overrides
        it to run all three in one (SQLite: one job; ``decide`` then runs on
        the adapter's thread, and the built-in clocks are thread-safe).
        Whatever ``decide`` raises must leave nothing written."""
        threads, stored = await self._read_state(thread_ids, message_ids)
        records, bump = decide(threads, stored)
        return records, await self._save_messages(records, bump, now_us)

    async def _save_thread_checked(self, thread: Thread) -> Thread | None:
        """:meth:`save_thread`'s write with its check: upsert ``thread`` as
        :meth:`_put_thread` does unless its id is stored under another
        resource. Returns ``thread`` with ``last_message_at`` set to the
        stored thread's (None for a new thread or one without messages), or
        None when the id belongs to another resource (then nothing is
        written; the core raises ConflictError).

        The default is two steps (:meth:`_get_thread`, then
        :meth:`_put_thread`, whose own check raises
        :class:`~memory_core.errors.StaleStateError` when the id changed hands
        in between, so the core retries). An adapter overrides it with one
        conditional upsert that reports the foreign owner instead of writing
        (``ON CONFLICT ... WHERE resource_id = ...``; a filter on the
        resource; a check in the script), reading first only when the write
        reports a conflict."""
        existing = await self._get_thread(thread.id)
        if existing is not None and existing.resource_id != thread.resource_id:
            return None
        await self._put_thread(thread)
        return thread if existing is None else replace(thread, last_message_at=existing.last_message_at)

    async def _delete_found(self, ids: Sequence[str], now_us: int) -> int:
        """:meth:`delete_messages`' write: delete the stored messages among
        these distinct ids, bump the threads of those deleted (R-BUMP,
        :func:`~memory_core.clock.bump_us` of ``now_us``, ``last_message_at``
        recomputed) and return how many this call removed, counted
        atomically with the delete (of racing deletes of one id exactly one
        counts it). Unknown ids are ignored.

        The default is two steps (:meth:`_get_messages` for the threads to
        bump, then :meth:`_delete_messages`, which counts). An adapter
        overrides it with one transaction or script that learns the threads
        from the rows it deletes (``DELETE ... RETURNING thread_id``)."""
        found = await self._get_messages(ids)
        if not found:
            return 0
        bump = list(dict.fromkeys(m.thread_id for m in found))
        return await self._delete_messages([m.id for m in found], bump, now_us)

    async def _patch_checked(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], decide: PatchDecision, now_us: int
    ) -> list[Message]:
        """A message update with its checks: read the threads (by id: the
        move targets) and the messages found among these ids, call
        ``decide(threads, messages)`` (it raises the typed error of a failed
        check, or returns the patches to apply and the threads to bump),
        apply them as :meth:`_patch_messages` does and return the patched
        messages as stored (any order; ``[]`` and no write when ``decide``
        returns no patch).

        The default is four steps (:meth:`_read_state`, ``decide``,
        :meth:`_patch_messages`, which re-verifies the move targets and
        raises :class:`~memory_core.errors.StaleStateError` when a writer got
        in between, so the core retries; then :meth:`_get_messages`). An
        adapter with transactions overrides it to read, decide and write in
        one, and to return what it wrote instead of reading it again.
        Whatever ``decide`` raises must leave nothing written."""
        targets, stored = await self._read_state(thread_ids, message_ids)
        patches, bump = decide(targets, stored)
        if not patches:
            return []
        await self._patch_messages(patches, bump, now_us)
        return await self._get_messages([p.id for p in patches])

    async def _write_memory(self, write: MemoryWrite, decide: MemoryDecision, now_us: int) -> None:
        """A working-memory write with its checks (see :class:`~memory_core.workmem.MemoryWrite`
        for where it writes): read the thread (when ``write.thread_id`` is
        set) and the stored value, call ``decide(thread, value)`` (it raises
        the typed error of a failed check) and write ``write.value`` (a thread:
        the ``working_memory`` metadata key, as :meth:`_patch_thread` merges
        it; a resource: as :meth:`_patch_resource` sets it, creating the
        record), bumping ``updated_at``.

        The default reads with :meth:`_read` (the thread with its owner's
        record) or :meth:`_get_resource`, then writes with
        :meth:`_patch_thread` / :meth:`_patch_resource`, or, when
        ``write.conditional``, swaps from the value read
        (:meth:`_swap_thread_memory` / :meth:`_swap_resource_memory`); a
        thread or value that changed in between raises
        :class:`~memory_core.errors.StaleStateError` and the core retries.
        An adapter with transactions overrides it to run the read, ``decide``
        and the write in one. ``decide`` refuses only a missing thread, a
        thread of another resource than ``write.resource_id`` and (when
        ``write.conditional``) a stored value of another version, so an
        adapter that checks those inside its write may write first and call
        the default (read, ``decide``) only when its write reports a miss.
        Whatever ``decide`` raises must leave nothing written."""
        thread, current, key = await self._memory_state(write)
        decide(thread, current)
        if write.scope == "thread":
            if write.conditional:
                done = await self._swap_thread_memory(key, current, write.value, now_us)
            else:
                done = await self._patch_thread(key, None, {"working_memory": write.value}, now_us) is not None
        elif write.conditional:
            done = await self._swap_resource_memory(key, current, write.value, now_us)
        else:
            await self._patch_resource(key, write.value, None, now_us)
            done = True
        if not done:
            raise StaleStateError(f"working memory of {key!r} changed while writing")

    async def _memory_state(self, write: MemoryWrite) -> tuple[Thread | None, str | None, str]:
        """What ``write``'s checks read, from the simple reads: ``(thread or
        None, stored value, id of the record written)``."""
        if write.thread_id is None:
            assert write.resource_id is not None
            record = await self._get_resource(write.resource_id)
            return None, None if record is None else record.working_memory, write.resource_id
        resource_scope = write.scope == "resource"
        parts = await self._read(ReadPlan(threads=(write.thread_id,), owner_resources=resource_scope))
        thread = parts.threads.get(write.thread_id)
        if thread is None:
            return None, None, write.thread_id
        if not resource_scope:
            return thread, thread_memory(thread), thread.id
        owner = parts.resources.get(thread.resource_id)
        return thread, None if owner is None else owner.working_memory, thread.resource_id

    async def _read(self, plan: ReadPlan) -> ReadParts:
        """Answer every part of ``plan`` (see :class:`~memory_core.plan.ReadPlan`
        for each part's contract), ideally in one backend call and from one
        snapshot. Return raw parts: no ownership checks, merging or paging
        arithmetic (the core does those).

        The default runs the simple primitives (:meth:`_get_thread`,
        :meth:`_get_resource`, :meth:`_count_messages`, :meth:`_list_messages`,
        :meth:`_count_threads`, :meth:`_list_threads`, :meth:`_message_window`)
        concurrently, at most :data:`CONCURRENT_READS` at a time per part, so
        an adapter implementing only those keeps working."""

        calls: dict[str, Awaitable[Any]] = {}
        if plan.threads:
            calls["threads"] = _bounded_gather([self._get_thread(thread_id) for thread_id in plan.threads])
        if plan.resources:
            calls["resources"] = _bounded_gather([self._get_resource(rid) for rid in plan.resources])
        if plan.messages is not None:
            calls["messages"] = _count_and_list(
                self._count_messages, self._list_messages, plan.messages, plan.messages.count
            )
        if plan.thread_page is not None:
            calls["thread_page"] = _count_and_list(self._count_threads, self._list_threads, plan.thread_page)
        if plan.windows:
            calls["windows"] = _bounded_gather([self._message_window(*target) for target in plan.windows])
        # Tasks cost event-loop turns: gather only when there is something to overlap.
        if len(calls) == 1:
            name, call = calls.popitem()
            results = {name: await call}
        else:
            results = dict(zip(calls, await asyncio.gather(*calls.values()), strict=True))
        threads = results.get("threads", [])
        resources = results.get("resources", [])
        messages, thread_page, windows = results.get("messages"), results.get("thread_page"), results.get("windows", [])
        found = {t.id: t for t in threads if t is not None}
        stored = {r.id: r for r in resources if r is not None}
        if plan.owner_resources:
            owners = dict.fromkeys(t.resource_id for t in found.values() if t.resource_id not in stored)
            for resource in await _bounded_gather([self._get_resource(rid) for rid in owners]):
                if resource is not None:
                    stored[resource.id] = resource
        message_total, message_items = messages if messages is not None else (0, [])
        thread_total, thread_items = thread_page if thread_page is not None else (0, [])
        return ReadParts(found, stored, message_total, message_items, thread_total, thread_items, windows)

    async def _read_state(
        self, thread_ids: Sequence[str], message_ids: Sequence[str]
    ) -> tuple[dict[str, Thread], list[Message]]:
        """The threads (by id) and the messages found among these ids, for a
        write's checks."""
        threads, messages = await asyncio.gather(
            _bounded_gather([self._get_thread(thread_id) for thread_id in thread_ids]), self._get_messages(message_ids)
        )
        return {t.id: t for t in threads if t is not None}, messages

    async def _copy_thread(self, plan: CopyPlan, now_us: int) -> list[str]:
        """Insert ``plan.thread`` (create-if-absent: an existing id raises
        :class:`~memory_core.errors.StaleStateError`, nothing written) and a
        copy of each message :meth:`CopyPlan.select
        <memory_core.lineage.CopyPlan.select>` picks, the k-th as
        ``plan.copies`` makes it (id ``new_ids[k]``, the new thread and its
        resource, created_at and the rest kept, the next store-wide
        sequences in order), keeping the new thread's and resource's
        counters; at most ``len(new_ids)`` copies. Returns the copied source
        ids in R-ORDER.

        Composite: the default composes the primitives (a read of the
        selection, then an insert and a save, the thread removed again if
        the save fails). Override it to copy inside the backend in one
        statement or script, all or nothing, without message bodies leaving
        the server."""
        query = MessageQuery((plan.source_id,), None, plan.created_from_us, plan.created_to_us)
        originals = plan.select(await self._list_messages(query))[: len(plan.new_ids)]
        copies = plan.copies(originals)
        for original, copy in zip(originals, copies, strict=True):
            try:  # longer ids or resource id can push a copy over R-SIZE
                check_message(copy, "copy")
            except ValidationError as exc:
                raise ValidationError(f"copy of message {original.id!r}", exc.reason, exc.rule) from None
        await self._insert_thread(plan.thread)
        try:
            if originals:
                await self._save_messages(copies, [plan.thread.id], now_us)
        except BaseException:
            await self._delete_thread(plan.thread.id)
            raise
        return [m.id for m in originals]

    @abstractmethod
    async def _get_resource(self, resource_id: str) -> Resource | None:
        """The stored resource or None."""

    async def _list_resource_ids(self, after: str | None, limit: int | None) -> list[str]:
        """Ids of the resources that have a record or own at least one
        thread, each once, ascending by exact comparison (code point order:
        UTF-8 byte order), strictly greater than ``after`` if set, at most
        ``limit`` (None = all). Consistent with :meth:`_delete_resource`,
        :meth:`_delete_resource_record` and :meth:`_delete_thread`: an id
        with neither a record nor a thread is not returned.

        The default composes :meth:`_list_threads` (every thread of the
        store, on every call) so a third-party adapter that does not
        implement this keeps working, but it cannot see records: it misses
        every resource that has a record and owns no thread (whose working
        memory a whole-store export then leaves out). Every adapter should
        override it with a native, indexed query."""
        owners = {thread.resource_id for thread in await self._list_threads(ThreadQuery(None))}
        found = sorted(rid for rid in owners if after is None or rid > after)
        return found if limit is None else found[:limit]

    @abstractmethod
    async def _put_resource(self, resource: Resource) -> None:
        """Insert or wholly replace a resource."""

    @abstractmethod
    async def _swap_resource_memory(self, resource_id: str, expected: str | None, value: str, now_us: int) -> bool:
        """Compare-and-set of a resource's working memory, atomically: if the
        stored ``working_memory`` equals ``expected`` (None: the resource is
        missing or its working memory is None), set it to ``value`` and bump
        ``updated_at`` as :meth:`_patch_resource` does (a missing resource is
        created with created_at = updated_at = now_us) and return True;
        otherwise write nothing and return False."""

    @abstractmethod
    async def _swap_thread_memory(self, thread_id: str, expected: str | None, value: str, now_us: int) -> bool | None:
        """Compare-and-set of ``metadata["working_memory"]`` of a thread,
        atomically: if its current value equals ``expected`` (None: the key is
        absent or holds a non-str), set the key to ``value`` (other metadata
        keys unchanged) and bump ``updated_at`` as :meth:`_patch_thread` does,
        returning True; otherwise write nothing and return False. None: no
        such thread."""

    @abstractmethod
    async def _delete_resource_record(self, resource_id: str) -> bool:
        """Delete the resource record (working memory, metadata) only; True if
        it existed. Threads and messages are not touched."""

    async def _delete_resource(self, resource_id: str) -> tuple[list[str], int, bool]:
        """Delete every thread of the resource with its messages, then its
        record; returns ``(deleted thread ids, deleted message count, record
        existed)``. Must be all-or-nothing or resumable (a repeat after a
        failure finishes the job) and must leave no id reserved.

        The default composes :meth:`_count_messages`, :meth:`_list_threads`,
        :meth:`_delete_thread` and :meth:`_delete_resource_record` (resumable:
        each step is idempotent); the message count is the sum of what each
        ``_delete_thread`` deleted (a message a racing delete took first
        counts there, not here), or the count read first when one returns
        None. An adapter may override it with one transaction."""
        counted_first = await self._count_messages(MessageQuery(None, resource_id))
        threads = await self._list_threads(ThreadQuery(resource_id))
        deleted = await _bounded_gather([self._delete_thread(thread.id) for thread in threads])
        existed = await self._delete_resource_record(resource_id)
        messages = counted_first if None in deleted else sum(n or 0 for n in deleted)
        return [thread.id for thread in threads], messages, existed

    @abstractmethod
    async def _patch_resource(
        self, resource_id: str, working_memory: Any, metadata: dict[str, Any] | None, now_us: int
    ) -> Resource:
        """Atomically create-or-update: set ``working_memory`` unless it is
        ``NOT_GIVEN`` (None clears it); merge ``metadata`` one level if not
        None; bump ``updated_at`` (a new resource gets created_at = updated_at
        = now_us). Returns the stored resource."""


_RESOURCE_IDS = fingerprint("resource_ids")
"""The query identity of :meth:`BaseStorage.list_resource_ids` cursors."""

CONCURRENT_READS = 8
"""How many primitive reads one composite default runs at once: enough to
overlap round trips, few enough not to drain a driver's connection pool
(a 1,000-hit recall must not open 1,000 connections)."""


def _thread_ids(value: Any) -> tuple[str, ...]:
    """A non-empty list of thread ids (R-ID), as a tuple."""
    thread_ids = tuple(check_id_list(value, "thread_id"))
    if not thread_ids:
        raise ValidationError("thread_id", "must name at least one thread", "R-ID")
    return thread_ids


async def _bounded_gather(calls: list[Awaitable[T]]) -> list[T]:
    """``asyncio.gather`` of ``calls`` (results in order), at most
    :data:`CONCURRENT_READS` running at a time."""
    gate = asyncio.Semaphore(CONCURRENT_READS)

    async def gated(call: Awaitable[T]) -> T:
        async with gate:
            return await call

    return list(await asyncio.gather(*(gated(call) for call in calls)))


async def _count_and_list(
    count: Callable[[Q], Awaitable[int]], fetch: Callable[[Q], Awaitable[list[T]]], query: Q, counted: bool = True
) -> tuple[int, list[T]]:
    """The default composite page read: count (unpaged; 0 unless ``counted``)
    and list concurrently."""
    if not counted:
        return 0, (await fetch(query) if query.limit != 0 else [])
    unpaged = replace(query, offset=0, limit=None, after=None)
    if query.limit == 0:
        return await count(unpaged), []
    total, items = await asyncio.gather(count(unpaged), fetch(query))
    return total, items


WINDOW_SIDE_MAX = 2**53 - 1
"""The widest window side an adapter is handed: valid includes go up to
2**63 - 1, which no thread holds, and a side this wide is exact in every
backend's number type (a double in Redis Lua, int64 in BSON and SQL, where
the core's ``+ 1`` to read a neighbour must not overflow)."""


def _windows(includes: Sequence[Include]) -> tuple[Window, ...]:
    """The plan's windows of validated includes, each side at most
    :data:`WINDOW_SIDE_MAX`."""
    return tuple(
        (inc.id, min(inc.with_previous, WINDOW_SIDE_MAX), min(inc.with_next, WINDOW_SIDE_MAX)) for inc in includes
    )


@dataclass(frozen=True, slots=True)
class MessageParts:
    """A message page with its include windows not yet merged (see
    :meth:`BaseStorage.message_parts`).

    Attributes:
        main: the main query's window, in the query's order.
        total: main-query matches (R-PAGE); None when the page was read
            without a count.
        wants_total: whether the request asked for ``total`` (the merged
            page's ``total`` is None otherwise, even where a count was read).
        page: echoed page number.
        per_page: echoed page size.
        has_more: before includes are merged (see :meth:`merge`).
        next_cursor: as :attr:`Page.next_cursor`.
        windows: one list per include, R-ORDER ascending (``[]`` when skipped).
        query: the normalised main query (its filter decides ``has_more``).
        descending: output order of the merged items.
        threads: the threads asked for with ``message_parts(threads=...)``,
            found ones by id, read in the same round trip.
    """

    main: list[Message]
    total: int | None
    wants_total: bool
    page: int
    per_page: PerPage
    has_more: bool
    next_cursor: str | None
    windows: list[list[Message]]
    query: MessageQuery
    descending: bool
    threads: dict[str, Thread] = field(default_factory=dict)

    def merge(self, windows: Sequence[Sequence[Message]]) -> Page[Message]:
        """The page: :attr:`main` plus these windows, de-duplicated by id and
        sorted in the output order (R-INCLUDE); ``has_more`` turns False when
        every main-query match is already among the items."""
        total = self.total if self.wants_total else None
        if not any(windows):  # the main window alone, read in the query's order
            items = self.main[::-1] if self.query.descending != self.descending else self.main[:]
            return Page(items, total, self.page, self.per_page, self.has_more, self.next_cursor)
        merged = {m.id: m for m in self.main}
        extras = []  # merged in, not in main
        for window in windows:
            for message in window:
                if message.id not in merged:
                    merged[message.id] = message
                    extras.append(message)
        items = sorted(merged.values(), key=order_key, reverse=self.descending)
        has_more = self.has_more
        # Every main item matches the main query; only the extras need checking.
        # A page with windows is always counted (see message_parts).
        if has_more and extras and self.total is not None:
            in_items = len(self.main) + sum(1 for m in extras if self.query.matches(m))
            has_more = in_items < self.total  # False: every main-query match is already in items
        return Page(items, total, self.page, self.per_page, has_more, self.next_cursor)


@dataclass(frozen=True, slots=True)
class _Window:
    """Which rows a page fetches (``offset``, ``limit``; None = all) and how
    its ``has_more`` follows."""

    offset: int
    limit: int | None
    per_page: PerPage
    probe: bool  # one row past the page was read: has_more is whether it came

    @classmethod
    def of(cls, offset: int, per_page: PerPage, after: Any, counted: bool = True) -> _Window:
        """The rows to fetch for a page at ``offset`` (or after the keyset
        ``after``); ``counted``: the read also reports the total."""
        if per_page is False:
            return _new_window(0, None, per_page, False)
        if after is None and counted:
            return _new_window(offset, per_page, per_page, False)
        # Keyset page, or no total: one extra row tells whether anything lies beyond.
        return _new_window(0 if after is not None else offset, per_page + 1, per_page, True)

    def cut(self, items: list[T], total: int) -> tuple[list[T], bool]:
        """The page's items and ``has_more``."""
        if self.per_page is False:
            return items, False
        if self.probe:
            return items[: self.per_page], len(items) > self.per_page
        return items, self.offset + self.per_page < total


# The read path builds these frozen records once per call from values it has
# just checked: builders skip the dataclass __init__'s object.__setattr__ per
# field (every field positionally, in field order).
_new_window: Callable[..., _Window] = builder(_Window)
_new_parts: Callable[..., MessageParts] = builder(MessageParts)
_new_plan: Callable[..., ReadPlan] = builder(ReadPlan)
_new_message_query: Callable[..., MessageQuery] = builder(MessageQuery)
_new_thread_query: Callable[..., ThreadQuery] = builder(ThreadQuery)


def _as_stored(message: Message, resource_id: str | None, created_at: datetime | None, sequence: int | None) -> Message:
    """``message`` (already checked) with the fields the store decides, built
    by :func:`~memory_core.builders.build_message` (``dataclasses.replace``
    was a tenth of a 100-message save; the dataclass constructor still
    costs twice the builder)."""
    return build_message(
        message.id,
        message.thread_id,
        message.role,
        message.content,
        resource_id,
        message.type,
        message.metadata,
        created_at,
        sequence,
    )


def _combine(first: MessagePatch, second: MessagePatch) -> MessagePatch:
    """Two patches for one id in a batch: later fields win, dicts merge."""

    def merged(a: Any, b: Any) -> Any:
        if isinstance(a, dict) and isinstance(b, dict):
            return {**a, **b}
        return b if b is not None else a

    return MessagePatch(
        first.id,
        second.role or first.role,
        second.type if second.type is not None else first.type,
        merged(first.content, second.content),
        merged(first.metadata, second.metadata),
        second.thread_id or first.thread_id,
    )

"""Lifecycle and guard: opening once across threads and loops, closing,
destroying, preflight, and the retry loop of optimistic writes.

:class:`Lifecycle` is the base of every concern mixin of
:class:`~memory_core.storage.BaseStorage`; it adds to the adapter contract
(:class:`~memory_core.storage.contract.AdapterContract`) what each public
call runs first (``_ready``) and around its primitive (``_guard``:
driver errors become typed :class:`~memory_core.errors.BackendError`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from types import TracebackType
from typing import Self, TypeVar

from memory_core.clock import Clock, system_clock
from memory_core.errors import AdapterClosedError, BackendGuard, StaleStateError, ValidationError, guarded
from memory_core.loops import OpenInEachLoop
from memory_core.plan import ReadParts, ReadPlan
from memory_core.retry import STALE_WRITES, Faults
from memory_core.storage.contract import AdapterContract

__all__ = ["Lifecycle", "foreign_data", "no_store"]

T = TypeVar("T")


def no_store(field: str, where: str, place: str) -> ValidationError:
    """The refusal of :meth:`BaseStorage.preflight` with ``must_exist`` when
    the place a URL names can be reached but holds no memory-core store (a
    misspelt database, schema or prefix; another application's data): one
    wording for every adapter, so the CLI's red line reads alike everywhere,
    and in the words of the URL (the place, not the table or key memory-core
    would have written there, which the user never named).

    Args:
        field: the URL part that names the place (``"url"``, ``"schema"``,
            ``"database"``, ``"prefix"``): :attr:`ValidationError.field`.
        where: the place as the user spelt it (shown with ``repr``).
        place: what ``where`` is, as the URL says it (``"file"``,
            ``"schema"``, ``"key prefix"``).

    Returns:
        ``ValidationError(field, "the <place> '<where>' holds no
        memory-core store; <the next step>")``, for the caller to raise: a
        command that reads or deletes data must stop before ``open``
        creates an empty store in its place.
    """
    return ValidationError(
        field,
        f"the {place} {where!r} holds no memory-core store; check the URL for a typo "
        "(a command that reads a store never creates one: import, copy or Memory.open do)",
    )


def foreign_data(field: str, where: str, found: str) -> ValidationError:
    """The refusal of :meth:`BaseStorage.preflight` with ``writes`` when the
    place a URL names holds another application's data and no memory-core
    store (a SQLite file with other tables, a PostgreSQL schema or MongoDB
    database with other tables or collections): a command that writes
    (``import``, ``copy``'s destination, ``demo --storage``) must not add
    memory-core's tables beside them. One wording for every adapter.

    Args:
        field: the URL part that names the place (``"url"``, ``"schema"``,
            ``"database"``): :attr:`ValidationError.field`.
        where: the place as the user spelt it (shown with ``repr``).
        found: what is there instead (``"table 'foo'"``), in parentheses.

    Returns:
        ``ValidationError(field, "'<where>' is another application's
        database (<found>), not a memory-core store; ...")``, to raise.
    """
    return ValidationError(
        field,
        f"{where!r} is another application's database ({found}), not a memory-core store; memory-core never "
        "writes beside another application's data: name a new or a memory-core store",
    )


def listed(kind: str, names: list[str]) -> str:
    """``"table 'a'"`` / ``"tables 'a', 'b' and 3 more"``: what
    :func:`foreign_data` found, short."""
    shown = ", ".join(repr(name) for name in sorted(names)[:2])
    more = f" and {len(names) - 2} more" if len(names) > 2 else ""
    return f"{kind}{'s' if len(names) > 1 else ''} {shown}{more}"


class Lifecycle(AdapterContract):
    """Open, close, destroy and the guard every public call runs in (the
    first layer of :class:`~memory_core.storage.BaseStorage`; its class
    docstring tells the threading and event-loop rules).

    Args:
        clock: where "now" comes from (R-CLOCK, R-BUMP); defaults to the
            process-wide system clock. Tests inject a
            :class:`~memory_core.clock.ManualClock`.
    """

    def __init__(self, *, clock: Clock | None = None) -> None:
        self.clock: Clock = clock if clock is not None else system_clock
        self._closed = False
        self._opening = OpenInEachLoop(self.loop_bound)
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
        await self._opening.open(self._open_guarded)

    @property
    def _opened(self) -> bool:
        """Whether the first open has succeeded (in any loop)."""
        return self._opening.opened

    def _open_here(self) -> bool:
        """Whether the store is open for the running loop."""
        return self._opening.here()

    async def _open_guarded(self) -> None:
        with BackendGuard(self, "open"):
            await self._open()

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

    async def preflight(self, *, must_exist: bool = False, writes: bool = False) -> None:
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
            writes: the command will write into the store (``import``,
                ``copy``'s destination, ``demo --storage``): what the URL
                names must be absent, empty or a memory-core store; another
                application's data there is refused (:func:`foreign_data`)
                before ``open`` adds memory-core's tables beside it. The
                SQLite, PostgreSQL and MongoDB adapters check it; a Redis
                prefix is memory-core's own key space and is not scanned.

        The default checks nothing (``memory://`` lives in its instance).
        Every persistent adapter overrides it: a file store's folder must
        exist and an existing file must be one of its databases; with
        ``must_exist`` each adapter looks for its own schema marker and
        raises :func:`no_store` when it is absent.

        Raises:
            ValidationError: the store cannot be where the URL says (e.g. a
                missing folder), or with ``must_exist`` it is not there
                (a missing file; :func:`no_store`: no memory-core store), or
                with ``writes`` it holds another application's data.
            BackendError: what is there cannot be opened (e.g. a file that is
                not a database), with the message ``open`` would give.
        """

    @property
    def store_place(self) -> str:
        """Where this store's data is, in words, computed without I/O: what
        :meth:`destroy` removes (``memory-core destroy`` prints it before
        and after). The default names the backend alone; a persistent
        adapter overrides it with its kind and place (``SQLite file
        /srv/m.db (with its -wal, -shm and -journal files)``, ``PostgreSQL
        schema 'memory_core'``, ``Redis keys of prefix 'mc'``, ``MongoDB
        database 'memory_core'``)."""
        return f"the {self.backend_name} store"

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
        if not (self._opening.everywhere or self._open_here()):
            await self.open()

    def is_retryable(self, exc: Exception) -> bool:
        """Whether a driver exception is transient (adapters override)."""
        return isinstance(exc, ConnectionError | TimeoutError)

    def _guard(self, operation: str) -> BackendGuard:
        return BackendGuard(self, operation)

    async def _read_plan(self, operation: str, plan: ReadPlan) -> ReadParts:
        """``_read(plan)`` on the open store, driver errors wrapped as
        ``operation``'s (:func:`~memory_core.errors.guarded`): every public read."""
        await self._ready()
        return await guarded(self, operation, self._read, plan)

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

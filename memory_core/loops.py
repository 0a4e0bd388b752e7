"""Connections belong to the event loop that made them.

asyncpg pools, redis-py clients and PyMongo's ``AsyncMongoClient`` wait on
futures of the loop that created them, so one store used from several event
loops (``asyncio.run`` per call, as sync frameworks call async code, or
several threads each running its own loop, as the OpenAI Agents SDK's
``SQLiteSession`` allows) needs one connection (pool, client) per loop.
:class:`LoopLocal` holds that per-loop state for an adapter, thread-safely;
:func:`close_everywhere` closes it in the loops it belongs to, and
:class:`LoopConnections` holds per-loop connections that each close in their
own loop, at that loop's end at the latest.
:class:`~memory_core.storage.BaseStorage` uses it to open a store once per
store and once per loop (see ``BaseStorage.loop_bound``).

A loop that has been closed cannot run anything again: the connections it
made are dropped unclosed (the operating system closes their sockets when
they are collected), never used from another loop. A loop ended by
``asyncio.run`` (or ``asyncio.Runner``, or anyio on asyncio) first closes its
async generators: :func:`close_at_loop_end` closes a connection there, in its
own loop, before the loop is gone.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar

from memory_core.errors import ValidationError

__all__ = [
    "GivenClientLoop",
    "LoopConnections",
    "LoopLocal",
    "OnceAcrossLoops",
    "OpenInEachLoop",
    "close_at_loop_end",
    "close_everywhere",
    "connect_through_cancel",
    "running_loop",
]

T = TypeVar("T")


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The running event loop of this thread, or None outside one."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def connect_through_cancel(
    connect: Callable[[], Awaitable[T]], undo: Callable[[T], Awaitable[object]] | None = None
) -> T:
    """``await connect()``, run in its own task that a cancellation of the
    caller does not cut: the caller then waits for it to end, undoes what it
    made (``undo(result)``, e.g. ``asyncpg.Pool.close``) and the
    ``CancelledError`` propagates. For a driver whose connect leaves a future
    or a socket behind when cancelled mid-way (asyncpg: a cancelled TLS
    negotiation logs "Future exception was never retrieved" once the server
    drops the half-made connection), and for any call that must not be cut
    mid-way (a MongoDB write: the server applies a command it was sent even
    when the call is cut, later, and a transaction's command could start it
    after its abort).

    A cancelled caller waits at most as long as the connect itself takes
    (its own connect timeout bounds it); a further cancellation while it
    waits changes nothing. ``connect``'s or ``undo``'s failure after a
    cancellation is retrieved and dropped: the cancellation is what the
    caller gets.

    Returns:
        What ``connect`` returned (when not cancelled).

    Raises:
        Whatever ``connect`` raises; ``asyncio.CancelledError`` when the
        caller was cancelled (after ``undo``).
    """
    task = asyncio.ensure_future(connect())
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await _to_its_end(task)
        if undo is not None and not task.cancelled() and task.exception() is None:
            await _to_its_end(asyncio.ensure_future(undo(task.result())))
        raise


async def close_at_loop_end(close: Callable[[], Awaitable[object]]) -> Callable[[], Awaitable[None]]:
    """Have ``close()`` run in the running loop when that loop shuts down its
    async generators, unless it has run before; return the closer that runs
    it now (at most once in all).

    ``asyncio.run`` closes its loop after every call, as sync frameworks
    call async code: a connection made in it and never closed is dropped
    with the loop, and some drivers report it when it is collected, to
    whatever loop runs then (redis-py's ``RedisCluster``: "Unclosed
    RedisCluster client" and one "Unclosed ClusterNode object" per node, to
    that loop's exception handler). ``asyncio.run`` (``asyncio.Runner``,
    anyio on asyncio) closes the loop's async generators before the loop
    itself: ``close`` runs in the ``finally`` of one, still in its own loop.
    A loop closed without that step (``loop.close()`` alone) drops the
    connection as before.

    Keep the closer as long as the connection: once neither is referenced,
    the loop closes the generator when it collects it (``close()`` then runs
    in a task of that loop, if the loop still runs).

    Returns:
        An async callable (``async_generator.aclose``) running ``close()``
        now; later calls, and the loop's end after one, do nothing.

    Raises:
        RuntimeError: no event loop is running in this thread.
    """

    async def until_the_end() -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            await close()

    guard = until_the_end()
    await anext(guard)  # started: the running loop now tracks it
    return guard.aclose


async def _to_its_end(task: asyncio.Future[Any]) -> None:
    """Wait until ``task`` is done, through any cancellation of the caller,
    and retrieve its exception (nothing logs it as never retrieved)."""
    while not task.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait([task])
    if not task.cancelled():
        task.exception()


class LoopLocal(Generic[T]):
    """One value per event loop (a client, a pool, a semaphore), safe to use
    from several threads at once.

    Reads (:meth:`get`) take no lock; :meth:`set`, :meth:`pop` and
    :meth:`drain` take a ``threading.Lock`` for a few dictionary operations
    only, never across an ``await``. Values of loops that have been closed
    are dropped whenever a value is set (they can never be used again).
    """

    __slots__ = ("_guard", "_values")

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._values: dict[asyncio.AbstractEventLoop, T] = {}

    def get(self) -> T | None:
        """The running loop's value; None when it has none (or no loop runs)."""
        loop = running_loop()
        return None if loop is None else self._values.get(loop)

    def set(self, value: T) -> None:
        """Keep ``value`` for the running loop (replacing its previous one).

        Raises:
            RuntimeError: no event loop is running in this thread.
        """
        loop = asyncio.get_running_loop()
        with self._guard:
            for gone in [other for other in self._values if other.is_closed()]:
                del self._values[gone]
            self._values[loop] = value

    def pop(self) -> T | None:
        """Remove and return the running loop's value (None when it has none)."""
        loop = running_loop()
        if loop is None:
            return None
        with self._guard:
            return self._values.pop(loop, None)

    def drain(self) -> list[tuple[asyncio.AbstractEventLoop, T]]:
        """Remove and return every ``(loop, value)`` pair, closed loops included."""
        with self._guard:
            pairs = list(self._values.items())
            self._values.clear()
        return pairs

    def __len__(self) -> int:
        """How many loops hold a value (closed ones not yet dropped included)."""
        return len(self._values)


class LoopConnections(LoopLocal[T]):
    """One connection (pool, client) per event loop, each closed in its own
    loop: by :meth:`drop` or :meth:`close_all`, or when ``asyncio.run`` ends
    the loop (:func:`close_at_loop_end`), whichever comes first.

    A store used under one ``asyncio.run`` after another (as sync frameworks
    call async code) makes a connection in each loop; without this, each
    loop's connection was dropped unclosed with its loop (asyncpg:
    "unclosed connection", PyMongo: "Unclosed AsyncMongoClient", redis-py's
    cluster client: "Unclosed RedisCluster client" ResourceWarnings, and
    their sockets open until collected). Reads are :class:`LoopLocal`'s
    (:meth:`get`; ``set`` replaces the value only, keeping its closer).
    """

    __slots__ = ("_closers",)

    def __init__(self) -> None:
        super().__init__()
        self._closers: LoopLocal[Callable[[], Awaitable[None]]] = LoopLocal()

    async def keep(self, value: T, close: Callable[[], Awaitable[object]] | None) -> None:
        """Keep ``value`` for the running loop, with the call that closes it.
        Does not suspend (a cancellation cannot cut it).

        Args:
            value: the running loop's connection (or what holds it).
            close: closes it, once, in this loop (``asyncpg.Pool.close``
                bound to the pool); None when the value is not the store's
                to close (a client given by the caller).

        Raises:
            RuntimeError: no event loop is running in this thread.
        """
        if close is not None:
            self._closers.set(await close_at_loop_end(close))
        self.set(value)

    async def drop(self) -> None:
        """Forget the running loop's connection, closing it here (when it is
        the store's to close); nothing when the loop has none."""
        self.pop()
        closer = self._closers.pop()
        if closer is not None:
            await closer()

    async def close_all(self) -> None:
        """Forget every loop's connection and close each (that the store
        owns) in its own loop (:func:`close_everywhere`: the running loop's
        awaited, another running loop's handed to it, a closed loop's already
        closed at its end or dropped)."""
        self.drain()
        await close_everywhere(self._closers, _call)


async def _call(closer: Callable[[], Awaitable[None]]) -> None:
    await closer()


class OnceAcrossLoops:
    """Run a setup step (an open, a collection's creation) once per key
    however many threads and event loops ask at the same moment.

    One caller claims the key and runs the step in its own loop; the others
    wait for its outcome without blocking their loops (a
    ``concurrent.futures.Future``, which any loop can await), then look again
    and claim the key themselves when the step failed. An ``asyncio.Lock``
    cannot do this: it belongs to one loop, and a waiter in another loop is
    never woken.
    """

    __slots__ = ("_guard", "_pending")

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._pending: dict[Hashable, concurrent.futures.Future[None]] = {}

    async def run(self, key: Hashable, done: Callable[[], bool], step: Callable[[], Awaitable[object]]) -> None:
        """Run ``step`` unless ``done()`` says it has been done, once at a
        time for ``key``; return when ``done()`` is true or ``step`` raised
        (its exception propagates to the caller that ran it only).

        Args:
            key: what the step sets up (equal keys never run at once).
            done: whether the setup is already there (read before each try).
            step: the setup; it makes ``done()`` true when it succeeds.
        """
        while not done():
            with self._guard:
                pending = self._pending.get(key)
                mine = pending is None
                if pending is None:
                    pending = self._pending[key] = concurrent.futures.Future()
                    pending.set_running_or_notify_cancel()  # a waiter's cancellation cannot cancel it
            if not mine:
                await asyncio.wait([asyncio.wrap_future(pending)])
                continue
            try:
                if not done():
                    await step()
                return
            finally:
                with self._guard:
                    del self._pending[key]
                pending.set_result(None)


class OpenInEachLoop:
    """Whether a store is open, and its opening: once across threads and
    loops (:class:`OnceAcrossLoops`), then, for a store whose connections
    belong to a loop (``loop_bound``), once more in each further loop that
    uses it. The storage base and the vector-store base both open this way.

    Args:
        loop_bound: the store connects in each event loop that uses it
            (asyncpg, redis-py, PyMongo); False: one open serves every loop.
    """

    __slots__ = ("_first", "_here", "_locks", "everywhere", "loop_bound", "opened")

    def __init__(self, loop_bound: bool) -> None:
        self.loop_bound = loop_bound
        self.opened = False
        """True once the first open has succeeded (in any loop)."""
        self.everywhere = False
        """True once a store that is not loop-bound has opened: open for every
        loop, which a caller can read as an attribute on its hot path instead
        of calling :meth:`here`."""
        self._first = OnceAcrossLoops()
        self._here: LoopLocal[bool] = LoopLocal()
        self._locks: LoopLocal[asyncio.Lock] = LoopLocal()

    def here(self) -> bool:
        """Whether the store is open for the running loop."""
        return self.opened and (not self.loop_bound or self._here.get() is not None)

    async def open(
        self, first: Callable[[], Awaitable[object]], again: Callable[[], Awaitable[object]] | None = None
    ) -> None:
        """Open for the running loop unless it is open there already.

        Args:
            first: the store's first open (run once across threads and loops;
                its exception propagates and the next call tries again).
            again: a loop-bound store's open in a further loop (defaults to
                ``first``); its exception propagates, the loop stays unopened.
        """
        if self.here():
            return
        lock = self._locks.get()
        if lock is None:  # no await since get(): no other task of this loop can race here
            lock = asyncio.Lock()
            self._locks.set(lock)
        async with lock:
            if not self.opened:
                await self._first.run("open", lambda: self.opened, lambda: self._open_first(first))
            if not self.here():  # a loop-bound store opened in another loop: connect in this one
                await (again or first)()
                self._here.set(True)

    async def _open_first(self, first: Callable[[], Awaitable[object]]) -> None:
        await first()
        if self.loop_bound:
            self._here.set(True)
        self.opened = True
        self.everywhere = not self.loop_bound


class GivenClientLoop:
    """The event loop a client given by the caller belongs to: the first loop
    that opens the store with it. The store cannot make that client again in
    another loop, so it refuses the others (:meth:`claim`) instead of letting
    the driver fail mid-call (or hang).

    Args:
        backend: the adapter's name, for the message (``"redis"``).
    """

    __slots__ = ("_backend", "_guard", "_loop")

    def __init__(self, backend: str) -> None:
        self._backend = backend
        self._guard = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    def claim(self) -> None:
        """Bind the client to the running loop at its first use; later, check
        that the running loop is that one.

        Raises:
            ValidationError: field ``client``, rule ``LIFECYCLE``: the client
                belongs to another event loop (a store that makes its own
                clients makes one per loop instead).
            RuntimeError: no event loop is running in this thread.
        """
        loop = asyncio.get_running_loop()
        with self._guard:
            if self._loop is None:
                self._loop = loop
            if self._loop is loop:
                return
        raise ValidationError(
            "client",
            f"the {self._backend} client given to this store belongs to another event loop, and a driver's "
            "connections cannot move between loops: create the client in this loop, or let the store create "
            "its own (one per event loop)",
            "LIFECYCLE",
        )


async def close_everywhere(values: LoopLocal[T], close: Callable[[T], Awaitable[object]]) -> None:
    """Close every value of ``values``, each in the loop it belongs to, and
    forget them all.

    The running loop's value is closed here (awaited; its errors propagate).
    A value of another loop that is still open is handed to that loop
    (``asyncio.run_coroutine_threadsafe``) and not waited for: that loop may
    be busy, or blocked waiting for this one, and a close is no reason to
    hang. A value of a closed loop is dropped: nothing can run in that loop.
    """
    here = running_loop()
    mine: list[T] = []
    for loop, value in values.drain():
        if loop is here:
            mine.append(value)
        elif not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                asyncio.run_coroutine_threadsafe(_close(close, value), loop)
    for value in mine:
        await close(value)


async def _close(close: Callable[[T], Awaitable[object]], value: T) -> None:
    await close(value)

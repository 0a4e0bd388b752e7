"""Two OS processes on one namespace: what an in-process lock can hide.

Two stores in one process share its locks, caches and counters; two
processes share only the backend. The two-process mode runs the racing
cases and a state-machine variant with half of the writes made by a second
instance of the adapter in a child process (``multiprocessing`` with the
``spawn`` start method, so nothing is inherited but what is sent), on the
same namespace, and checks the combined result as the one-process cases do
(against the acknowledged writes, or the reference store).

The child builds its store from a :class:`StoreAddress` (the adapter's
``storage_address`` fixture gives one per store) and answers calls sent
over a pipe, several at once: :class:`RemoteStore` is the parent's handle,
an object with the store's public async methods. Values and errors travel
pickled; an error comes back as the same exception type with the same
attributes (a driver error left as ``original`` travels as its text).

The mode is off unless :data:`ENV_VAR` is ``1`` or pytest gets
:data:`OPTION`; a cheap smoke case runs whenever the adapter defines
``storage_address``.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any, ClassVar, Protocol, cast

import anyio
from anyio.abc import TaskGroup
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from memory_core.clock import ManualClock, from_us, to_us
from memory_core.errors import AdapterClosedError, BackendError
from memory_core.storage import BaseStorage
from memory_core_conformance.harness import T0, FollowerClock, StorageFactory, message, thread
from memory_core_conformance.profiles import active_profile, shrink_time_limit
from memory_core_conformance.stateful import StorageStateMachine

__all__ = [
    "CHILD_SECONDS",
    "EXIT_SECONDS",
    "ENV_VAR",
    "ChildProcess",
    "OPTION",
    "RemoteStore",
    "StoreAddress",
    "StoreAddresser",
    "TwoProcessStateMachine",
    "UnclosedExit",
    "run_two_process_machine",
    "run_unclosed_writer",
    "two_process_mode",
]

ENV_VAR = "MEMORY_CORE_TWO_PROCESSES"
"""Environment variable that turns the two-process mode on (value ``1``)."""
OPTION = "--memory-core-two-processes"
"""pytest option that turns the two-process mode on (same as :data:`ENV_VAR`)."""
CHILD_SECONDS = 60.0
"""How long, in seconds, the parent waits for the child to open its store,
and for it to close and exit, before it gives up (and kills it)."""

EXIT_SECONDS = 30.0
"""How long, in seconds, a child that wrote through a store it never closed
may take to exit once its work is done (:func:`run_unclosed_writer`)."""


def two_process_mode(config: Any | None = None) -> bool:
    """Whether the full two-process mode is on: :data:`ENV_VAR` is ``1``, or
    ``config`` (a ``pytest.Config``, optional) got :data:`OPTION`."""
    if os.environ.get(ENV_VAR, "") == "1":
        return True
    return bool(config is not None and config.getoption("memory_core_two_processes", default=False))


@dataclass(frozen=True)
class StoreAddress:
    """How another process builds a store on a given namespace.

    The child calls ``factory(*args, clock=clock, **kwargs)`` and opens the
    result, so every field must pickle: ``factory`` by reference (a class
    or a classmethod such as ``MyStorage.from_url``, importable at module
    level), ``args`` and ``kwargs`` by value (a URL, a path, a schema or key
    prefix, options).

    Attributes:
        factory: builds an unopened store; takes a keyword ``clock``.
        args: its positional arguments; default none.
        kwargs: its keyword arguments (not ``clock``); default none.
    """

    factory: Callable[..., BaseStorage]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def build(self, clock: FollowerClock | None) -> BaseStorage:
        """A new, unopened store at this address using ``clock`` (None: the
        system clock)."""
        return self.factory(*self.args, clock=clock, **self.kwargs)


class StoreAddresser(Protocol):
    """What the adapter's optional ``storage_address`` fixture returns:
    ``address(store)``, where ``store`` is a store its ``storage_factory``
    built (open), gives the :class:`StoreAddress` of a second instance on the
    same namespace (as ``storage_reopener`` would build, but picklable)."""

    def __call__(self, store: BaseStorage) -> StoreAddress: ...


@dataclass(frozen=True)
class _Raised:
    """An exception in transit: its type, ``args`` and attributes."""

    kind: type[BaseException]
    args: tuple[Any, ...]
    attributes: dict[str, Any]

    @classmethod
    def of(cls, exc: BaseException) -> _Raised:
        """``exc`` in a form that pickles (attributes that do not are sent as
        their text; a type that does not becomes a BackendError naming it)."""
        attributes = {}
        for name, value in vars(exc).items():
            try:
                pickle.dumps(value)
                attributes[name] = value
            except Exception:
                attributes[name] = repr(value)
        raised = cls(type(exc), exc.args, attributes)
        try:
            pickle.dumps(raised)
        except Exception:
            return cls.of(BackendError("child process", "call", f"{type(exc).__qualname__}: {exc}"))
        return raised

    def rebuild(self) -> BaseException:
        """The exception again (not through its ``__init__``)."""
        exc = self.kind.__new__(self.kind)
        exc.args = self.args
        exc.__dict__.update(self.attributes)
        return exc


def _serve(conn: Connection) -> None:
    """The child process: open the stores it is sent one at a time, answer
    their calls, until told to stop (None)."""
    asyncio.run(_serve_stores(conn))


async def _serve_stores(conn: Connection) -> None:
    lock = threading.Lock()

    def send(message: Any) -> None:
        with lock:
            conn.send(message)

    while (opening := await asyncio.to_thread(conn.recv)) is not None:
        address, synced = opening
        clock = FollowerClock(ManualClock(T0)) if synced else None
        store = address.build(clock)
        try:
            await store.open()
        except Exception as exc:
            send(("failed", _Raised.of(exc)))
            continue
        send(("ready", None))
        running: set[asyncio.Task[None]] = set()
        while (request := await asyncio.to_thread(conn.recv)) is not None:
            task = asyncio.create_task(_answer(store, clock, request, send))
            running.add(task)
            task.add_done_callback(running.discard)
        await asyncio.gather(*running)
        try:
            await store.close()
        finally:
            send(None)


async def _answer(
    store: BaseStorage, clock: FollowerClock | None, request: tuple[Any, ...], send: Callable[[Any], None]
) -> None:
    number, operation, args, kwargs, time = request
    if clock is not None and time is not None:
        now_us, last_us = time
        leader = clock.leader
        if isinstance(leader, ManualClock):
            leader.set(from_us(now_us))
        clock.last_us = last_us
    try:
        outcome: tuple[str, Any] = ("ok", await getattr(store, operation)(*args, **kwargs))
        pickle.dumps(outcome)
    except Exception as exc:
        outcome = ("error", _Raised.of(exc))
    send((number, outcome, None if clock is None else clock.last_us))


def _write_and_leave(address: StoreAddress, thread_id: str, message_id: str, conn: Connection) -> None:
    """The child of :func:`run_unclosed_writer`: open a store at ``address``,
    save one thread and one message, report, and return without closing it
    (the interpreter then shuts down as a program's does when it ends)."""

    async def work() -> None:
        store = address.build(None)
        await store.open()
        await store.save_thread(thread(thread_id))
        await store.save_messages([message(message_id, thread_id)])

    try:
        asyncio.run(work())
    except BaseException as exc:
        conn.send(f"{type(exc).__qualname__}: {exc}")
        raise
    conn.send(None)
    conn.close()


@dataclass(frozen=True)
class UnclosedExit:
    """How a child of :func:`run_unclosed_writer` ended.

    Attributes:
        error: what its work raised (type and text), or None when it wrote.
        exit_code: its exit code, or None when it was still running after
            :data:`EXIT_SECONDS` (it was then killed).
        seconds: from the end of its work (or its start, if it never
            reported) to its exit or to the kill.
    """

    error: str | None
    exit_code: int | None
    seconds: float


def run_unclosed_writer(
    address: StoreAddress, thread_id: str, message_id: str, *, seconds: float = EXIT_SECONDS
) -> UnclosedExit:
    """Run a child process (``spawn``) that opens a store at ``address``,
    saves the thread ``thread_id`` (resource ``r1``) and the message
    ``message_id`` in it, and ends without closing the store; wait for it to
    exit (blocking: call it from a worker thread).

    Args:
        address: where the child's store lives.
        thread_id: the thread the child saves.
        message_id: the message the child saves in it.
        seconds: how long the child may take to start and do its work, and
            again to exit after it; default :data:`EXIT_SECONDS`.

    Returns:
        How it ended (a child still running after ``seconds`` is killed and
        reported with ``exit_code`` None).
    """
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe(duplex=False)
    process = context.Process(target=_write_and_leave, args=(address, thread_id, message_id, child), daemon=True)
    process.start()
    child.close()
    error: str | None = "the child did not report within the time allowed"
    try:
        if parent.poll(seconds):
            error = parent.recv()
    except EOFError:
        error = "the child exited without reporting"
    finally:
        parent.close()
    started = time.monotonic()
    process.join(seconds)
    waited = time.monotonic() - started
    if process.is_alive():
        process.kill()
        process.join()
        return UnclosedExit(error, None, waited)
    return UnclosedExit(error, process.exitcode, waited)


class ChildProcess:
    """A second OS process (``spawn``: it inherits nothing but ``sys.path``)
    that serves one :class:`RemoteStore` at a time; start it once and open
    many stores through it (starting a Python process and importing the
    adapter costs about a second).

    ``with ChildProcess() as child:`` starts it; leaving the block stops it
    (killed after :data:`CHILD_SECONDS` if it does not exit).
    """

    def __init__(self) -> None:
        self.conn: Connection | None = None
        self._process: Any = None

    def __enter__(self) -> ChildProcess:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child,), daemon=True)
        self._process.start()
        child.close()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        process, conn = self._process, self.conn
        self._process = self.conn = None
        if conn is not None:
            with suppress(OSError):
                conn.send(None)
        if process is not None:
            process.join(CHILD_SECONDS)
            if process.is_alive():
                process.kill()
                process.join()
        if conn is not None:
            conn.close()


class RemoteStore:
    """A store in a :class:`ChildProcess`, called from this one.

    ``async with RemoteStore(child, address) as remote:`` has the child
    build ``address``'s store and open it; ``await remote.save_thread(...)``
    (any public method of the store) runs there, concurrently with other
    calls, and returns its value or raises its exception here. Leaving the
    block closes the child's store (it does not destroy the namespace); the
    child then serves the next one.

    Args:
        child: the started child process (one store at a time).
        address: where the child's store lives.
        clock: for runs compared with a reference store: the follower clock
            of this process's store. Each call then carries its leader's
            "now" and its last assignment, and brings back the child's, so
            the two stores assign times as one store would. Calls must then
            come one at a time. Default None: the child uses the system
            clock.

    Raises:
        BackendError: the child did not open its store within
            :data:`CHILD_SECONDS`, or exited (the store's own error, rebuilt,
            when its open raised one).
        AdapterClosedError: a call outside the block.
    """

    def __init__(self, child: ChildProcess, address: StoreAddress, *, clock: FollowerClock | None = None) -> None:
        self.child = child
        self.address = address
        self.clock = clock
        self._group: TaskGroup | None = None
        self._numbers = 0
        self._waiting: dict[int, tuple[anyio.Event, list[Any]]] = {}

    def _conn(self) -> Connection:
        if self.child.conn is None:
            raise AdapterClosedError("the child process is stopped")
        return self.child.conn

    def _recv(self) -> Any:
        try:
            return self._conn().recv()
        except EOFError:
            return None

    async def _send(self, message: Any) -> None:
        await anyio.to_thread.run_sync(self._conn().send, message)

    async def __aenter__(self) -> RemoteStore:
        await self._send((self.address, self.clock is not None))
        ready: Any = ("late", None)
        with anyio.move_on_after(CHILD_SECONDS):
            ready = await anyio.to_thread.run_sync(self._recv, abandon_on_cancel=True)
        if ready is None:
            raise BackendError("child process", "open", "the child exited before its store opened")
        if ready[0] == "late":
            raise BackendError("child process", "open", f"no store open within {CHILD_SECONDS} s")
        if ready[0] != "ready":
            raise ready[1].rebuild()
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        self._group.start_soon(self._read_answers)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        group, self._group = self._group, None
        if group is not None:
            await self._send(None)
            await group.__aexit__(None, None, None)

    async def _read_answers(self) -> None:
        while (answer := await anyio.to_thread.run_sync(self._recv)) is not None:
            number, outcome, last_us = answer
            done, slot = self._waiting.pop(number)
            slot.extend((outcome, last_us))
            done.set()
        for done, _ in self._waiting.values():
            done.set()

    async def call(self, operation: str, *args: Any, **kwargs: Any) -> Any:
        """Run ``store.<operation>(*args, **kwargs)`` in the child.

        Returns:
            Its value.

        Raises:
            Whatever it raised (rebuilt here); AdapterClosedError outside
            the block or when the child is gone.
        """
        if self._group is None:
            raise AdapterClosedError(f"{operation}: the child process's store is closed")
        self._numbers += 1
        number = self._numbers
        done, slot = anyio.Event(), list[Any]()
        self._waiting[number] = (done, slot)
        time = None if self.clock is None else (to_us(self.clock.leader.now()), self.clock.last_us)
        await self._send((number, operation, args, kwargs, time))
        await done.wait()
        if not slot:
            raise AdapterClosedError(f"{operation}: the child process exited before answering")
        (kind, value), last_us = slot
        if self.clock is not None:
            self.clock.last_us = last_us
        if kind == "error":
            raise value.rebuild()
        return value

    def __getattr__(self, operation: str) -> Callable[..., Awaitable[Any]]:
        if operation.startswith("_"):
            raise AttributeError(operation)

        async def remote(*args: Any, **kwargs: Any) -> Any:
            return await self.call(operation, *args, **kwargs)

        remote.__name__ = operation
        return remote


class TwoProcessStateMachine(StorageStateMachine):
    """:class:`~memory_core_conformance.stateful.StorageStateMachine` with
    every other operation run by a second instance of the adapter in a child
    process (``child`` in the script), on the same namespace; listings of
    one store's writes by the other, cursors handed across, counters and
    the whole-store comparison all run against the reference as before.

    Subclass with ``factory`` and ``addresser`` set (wrapped in
    ``staticmethod``), or use :func:`run_two_process_machine`.
    """

    addresser: ClassVar[StoreAddresser | None] = None
    process: ClassVar[ChildProcess | None] = None

    def __init__(self) -> None:
        super().__init__()
        addresser, process = type(self).addresser, type(self).process
        if addresser is None or process is None or self.adapter is None:
            self.teardown()
            raise TypeError("TwoProcessStateMachine needs an addresser and a child: use run_two_process_machine")
        self._steps = 0
        self._child_cm = self.portal.wrap_async_context_manager(
            RemoteStore(process, addresser(self.adapter), clock=self.follower)
        )
        try:
            self.child = self._child_cm.__enter__()
        except BaseException:
            self.teardown()
            raise

    def _target(self) -> tuple[BaseStorage, str]:
        self._steps += 1
        if self._steps % 2:
            return super()._target()
        return cast(BaseStorage, self.child), "child"

    def _both(self, operation: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        """:meth:`StorageStateMachine._both`, then the adapter's clock
        history is put back to the reference's: each step's times are
        checked from the same history, not the count of times drawn.

        R-CLOCK orders the times one process assigns; two processes have
        two histories, which the machine joins into one only to compare
        with one reference store. An instance that decides a save on its own
        view of the store (the Redis adapter on a standalone server skips
        the read when it has cached every thread and no message id: see
        ``RedisStorage._save_checked``) draws ``created_at`` for an id the
        other process stored, before its write finds that id stored (the
        save then keeps the stored time, or is refused): a time drawn and
        used nowhere, after which the joined history is 1 µs ahead of the
        reference's. One instance alone never guesses this way (its caches
        see its own writes); the single-process machine and
        ``tests/test_write_times.py`` keep counting the times drawn."""
        actual, expected = super()._both(operation, *args, **kwargs)
        if isinstance(self.reference.clock, FollowerClock):
            self.follower.last_us = self.reference.clock.last_us
        return actual, expected

    def teardown(self) -> None:
        try:
            if hasattr(self, "child"):
                self._child_cm.__exit__(None, None, None)
        finally:
            super().teardown()


def run_two_process_machine(
    factory: StorageFactory,
    addresser: StoreAddresser,
    child: ChildProcess,
    *,
    machine_settings: settings | None = None,
) -> None:
    """Run :class:`TwoProcessStateMachine` against ``factory``'s adapter.

    Args:
        factory: the adapter's storage factory.
        addresser: the adapter's ``storage_address`` fixture value.
        child: the started child process every example's second store opens in.
        machine_settings: Hypothesis settings; default: the active profile's
            state-machine settings.

    Raises:
        AssertionError: the stores answered differently from the reference
            store (the script names which process ran each step).
    """
    profile = active_profile()
    machine = type(
        "TwoProcessStateMachineRun",
        (TwoProcessStateMachine,),
        {"factory": staticmethod(factory), "addresser": staticmethod(addresser), "process": child},
    )
    with shrink_time_limit(profile.shrink_seconds):
        run_state_machine_as_test(machine, settings=machine_settings or profile.stateful_settings())

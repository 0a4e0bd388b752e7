"""Store lifecycle and small builders shared by every layer of the suite.

The adapter author's factory only *constructs* a store (no I/O) in a fresh,
empty namespace; :func:`open_store` opens it and always destroys it
afterwards, so a run against a live deployment leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from memory_core.capabilities import Capability, declared_capabilities
from memory_core.clock import Clock, ManualClock, from_us, to_us
from memory_core.errors import AdapterClosedError
from memory_core.models import Message, Resource, Thread
from memory_core.storage import BaseStorage

if TYPE_CHECKING:
    from memory_core_conformance.strategies import Dataset

__all__ = [
    "T0",
    "FollowerClock",
    "StorageFactory",
    "StorageReopener",
    "StoreSnapshot",
    "assert_counters",
    "at",
    "capabilities_of",
    "leaked_by_collection",
    "load_dataset",
    "message",
    "open_store",
    "snapshot",
    "thread",
]

T0 = datetime(2025, 1, 1, tzinfo=UTC)
"""The cases' origin of time: 2025-01-01T00:00:00Z."""


def leaked_by_collection() -> list[str]:
    """Collect garbage (in the running loop) and return what that reports:
    each message sent to the running loop's exception handler (redis-py's
    "Unclosed RedisCluster client"), then each ``ResourceWarning`` (an
    unclosed connection, client, transport or socket). An empty list: what
    was collected had been closed.

    Raises:
        RuntimeError: no event loop is running in this thread.
    """
    loop = asyncio.get_running_loop()
    reported: list[str] = []
    handler = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: reported.append(str(context.get("message"))))
    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            gc.collect()
    finally:
        loop.set_exception_handler(handler)
    return reported + [str(w.message) for w in warned if issubclass(w.category, ResourceWarning)]


def at(seconds: float = 0, *, us: int = 0) -> datetime:
    """``T0`` plus ``seconds`` and ``us`` microseconds (aware UTC)."""
    return T0 + timedelta(seconds=seconds, microseconds=us)


class StorageFactory(Protocol):
    """What the adapter's ``storage_factory`` fixture returns.

    Called as ``factory(clock)`` or ``factory()``; returns a new, *unopened*
    store (construction does no I/O) in a fresh, empty, unique namespace,
    using ``clock`` when given (else the system clock).
    """

    def __call__(self, clock: Clock | None = None) -> BaseStorage: ...


class StorageReopener(Protocol):
    """What the optional ``storage_reopener`` fixture returns.

    Needed only by adapters that declare
    :attr:`~memory_core.capabilities.Capability.PERSISTENT` or
    :attr:`~memory_core.capabilities.Capability.SHARED_NAMESPACE`.

    Called as ``reopen(store, clock)``:

    - ``store`` is an object the adapter's ``storage_factory`` returned,
      possibly open, closed or already destroyed (the suite reopens a closed
      store to read its data back, a destroyed one to find nothing, and an
      open one to share it);
    - ``clock`` is the clock the new instance must use, or None (the system
      clock).

    Returns a new, *unopened* instance (no I/O) on the *same* namespace as
    ``store``; the suite opens it and closes or destroys it. ``BaseStorage``
    has no ``url`` or ``namespace`` attribute: read the namespace from the
    adapter's own class, or have the factory remember it per store.
    """

    def __call__(self, store: BaseStorage, clock: Clock | None = None) -> BaseStorage: ...


class FollowerClock:
    """A clock whose "now" is another clock's, with its own ``assign()`` history.

    Two stores compared side by side must assign identical times to messages
    saved without ``created_at``. Sharing one clock would not do (each
    ``assign()`` moves it on), so each store gets a follower of one leader:
    the same "now", and the same strictly increasing assignments when both
    see the same calls.

    Args:
        leader: where "now" comes from (usually a
            :class:`~memory_core.clock.ManualClock`).
    """

    __slots__ = ("_last", "_lock", "leader")

    def __init__(self, leader: Clock) -> None:
        self.leader = leader
        self._last: int | None = None
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The leader's now (aware UTC)."""
        return self.leader.now()

    @property
    def last_us(self) -> int | None:
        """This follower's previous assignment in µs since the epoch (None:
        none yet). Settable: a store in another process hands its follower's
        history over (:class:`~memory_core_conformance.processes.RemoteStore`)."""
        with self._lock:
            return self._last

    @last_us.setter
    def last_us(self, value: int | None) -> None:
        with self._lock:
            self._last = value

    def assign(self) -> datetime:
        """Now, but at least 1 µs after this follower's previous assignment."""
        with self._lock:
            now_us = to_us(self.leader.now())
            if self._last is not None and now_us <= self._last:
                now_us = self._last + 1
            self._last = now_us
            return from_us(now_us)


def capabilities_of(factory: StorageFactory) -> frozenset[Capability]:
    """The optional capabilities the factory's stores declare.

    Builds one store (no I/O) to read them (an instance may narrow its
    class's), then discards it.
    """
    return declared_capabilities(factory(None))


@asynccontextmanager
async def open_store(factory: StorageFactory, clock: Clock | None = None) -> AsyncIterator[BaseStorage]:
    """Build, open, yield, and finally destroy one store.

    Args:
        factory: the adapter's storage factory.
        clock: clock for the store (None: the system clock).

    Yields:
        The opened store. If the body closes or destroys it, cleanup skips
        what is no longer possible.
    """
    store = factory(clock)
    await store.open()
    try:
        yield store
    finally:
        with suppress(AdapterClosedError):
            await store.destroy()


def thread(
    thread_id: str,
    resource_id: str = "r1",
    *,
    title: str = "",
    metadata: dict[str, Any] | None = None,
    created_at: datetime | str | None = None,
    updated_at: datetime | str | None = None,
) -> Thread:
    """A Thread to save (None times mean "now")."""
    return Thread(thread_id, resource_id, title, metadata or {}, created_at, updated_at)  # type: ignore[arg-type]


def message(
    message_id: str,
    thread_id: str = "t1",
    content: Any = None,
    *,
    role: str = "user",
    resource_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    created_at: datetime | str | None = None,
    type: str = "v2",
) -> Message:
    """A Message to save; ``content`` defaults to ``"<id> text"`` (as in the bug cases)."""
    return Message(
        id=message_id,
        thread_id=thread_id,
        role=role,  # type: ignore[arg-type]
        content=f"{message_id} text" if content is None else content,
        resource_id=resource_id,
        type=type,
        metadata=metadata or {},
        created_at=created_at,  # type: ignore[arg-type]
    )


@dataclass(frozen=True, slots=True)
class StoreSnapshot:
    """Everything a store holds, read through the public API.

    Attributes:
        threads: every thread, ``created_at DESC`` (ties by id).
        messages: every message of those threads, R-ORDER ascending.
        resources: the requested resources that exist.
        resource_ids: every resource id the store lists (R-RESOURCES).
    """

    threads: list[Thread]
    messages: list[Message]
    resources: list[Resource]
    resource_ids: list[str] = field(default_factory=list)


async def snapshot(store: BaseStorage, resource_ids: Iterable[str] = ()) -> StoreSnapshot:
    """Read the whole state of ``store`` (for "nothing was written" checks)."""
    threads = (await store.list_threads(per_page=False)).items
    messages: list[Message] = []
    if threads:
        messages = (await store.list_messages([t.id for t in threads], per_page=False)).items
    resources = []
    for resource_id in resource_ids:
        found = await store.get_resource(resource_id)
        if found is not None:
            resources.append(found)
    listed = (await store.list_resource_ids(per_page=False)).items
    return StoreSnapshot(threads, messages, resources, listed)


async def assert_counters(
    store: BaseStorage, thread_ids: Iterable[str], resource_ids: Iterable[str], where: str
) -> None:
    """Every unfiltered ``total`` (a thread's, a resource's) equals the
    messages that listing returns (R-PAGE: the counters the writes keep agree
    with the rows).

    Raises:
        AssertionError: naming the thread or resource and both numbers.
    """
    for tid in thread_ids:
        page = await store.list_messages(tid, per_page=False)
        assert page.total == len(page.items), (
            f"{where}: thread {tid!r} reports total {page.total} but holds {len(page.items)} messages"
        )
    for rid in resource_ids:
        page = await store.list_messages_by_resource(rid, per_page=False)
        assert page.total == len(page.items), (
            f"{where}: resource {rid!r} reports total {page.total} but holds {len(page.items)} messages"
        )


async def load_dataset(stores: Sequence[BaseStorage], dataset: Dataset, leader: ManualClock) -> None:
    """Apply a generated :class:`~memory_core_conformance.strategies.Dataset`
    to every store in ``stores``, moving the shared ``leader`` clock between
    batches (once, not once per store)."""
    for item in dataset.threads:
        for store in stores:
            await store.save_thread(item)
    for index, batch in enumerate(dataset.batches):
        step = dataset.clock_steps[index] if index < len(dataset.clock_steps) else 0.0
        leader.advance(step)
        for store in stores:
            await store.save_messages(batch)

"""Systems under test: the memory-core adapter, raw drivers and peers.

A :class:`Subject` answers the benchmark's operations on one backend. Every
read operation returns an :class:`Answer` (the main query's total and the ids
returned, in order), so the runner can check that a raw driver really does
the same work as the adapter before it times either. A subject that shares
its data with another (a raw driver reading the adapter's tables or keys)
says so with :attr:`Subject.shares_data`; it is then not populated again.

:class:`AdapterSubject` drives any storage URL through
:func:`memory_core.connect` and :class:`memory_core.Memory`, exactly as an
application would. :class:`VectorSubject` is the same idea for vector stores.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
from memory_core.clock import from_us
from memory_core.errors import AdapterClosedError
from memory_core.memory import Memory
from memory_core.models import DateRange, Include, Message, MessageFilter, Thread, ThreadFilter
from memory_core.registry import connect, connect_vector
from memory_core.storage import Storage
from memory_core.vector import VectorPoint, VectorStore

from memory_core_bench.dataset import BenchMessage, ThreadSpec

__all__ = [
    "ALL_STORAGE_OPS",
    "AdapterSubject",
    "AdapterVectorSubject",
    "Answer",
    "Kind",
    "Subject",
    "Vector",
    "VectorSubject",
    "remove_sqlite_files",
]

Kind = Literal["adapter", "raw", "peer"]

ALL_STORAGE_OPS: frozenset[str] = frozenset(
    {
        "save",
        "recall_newest",
        "page_offset",
        "page_cursor",
        "filter_meta",
        "filter_date",
        "include_windows",
        "list_threads",
    }
)
"""Operation names a storage subject may support (see :class:`Subject`)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What a read operation returned: the main query's ``total`` (-1 when
    the subject cannot count, None when the read asked for none) and the ids
    of the items, in returned order."""

    total: int | None
    ids: tuple[str, ...]


class Subject(ABC):
    """One system under test on one backend.

    Attributes:
        backend: the group it is compared in (``"sqlite"``, ``"redis"`` ...).
        kind: ``"adapter"``, ``"raw"`` (driver doing the adapter's work on its
            schema: the ceiling) or ``"peer"`` (another library).
        label: short display name, unique within the backend.
        ops: the operation names (:data:`ALL_STORAGE_OPS`) it supports.
        shares_data: it reads and writes the data another subject of the
            same backend populated (not populated again).
    """

    backend: str
    kind: Kind
    label: str
    ops: ClassVar[frozenset[str]] = ALL_STORAGE_OPS
    shares_data: ClassVar[bool] = False

    async def open(self) -> None:
        """Connect (and create schema) before anything else."""

    @abstractmethod
    async def close(self) -> None:
        """Delete what this subject created (its namespace, file, tables,
        unless it shares data) and disconnect."""

    def server_pid(self) -> int | None:
        """PID of a server process this subject's backend runs in, when known
        (for server RSS); None for in-process backends."""
        return None

    @abstractmethod
    async def create_threads(self, threads: Sequence[ThreadSpec]) -> None:
        """Create these threads (population and scratch threads; untimed)."""

    def prepare(self, messages: list[BenchMessage]) -> Any:
        """Convert messages to what :meth:`save` takes (untimed: callers build
        their own objects). Default: unchanged."""
        return messages

    @abstractmethod
    async def save(self, prepared: Any) -> None:
        """Save one prepared batch (one call, whatever its length)."""

    async def recall_newest(self, thread: ThreadSpec, n: int) -> Answer:
        """The newest ``n`` messages of ``thread`` (oldest first), with the
        thread's ownership checked and the thread's total counted: what an
        agent asks for before each turn."""
        raise NotImplementedError

    async def page_offset(self, thread: ThreadSpec, page: int, per_page: int) -> Answer:
        """Page ``page`` of ``per_page`` of ``thread`` in created_at ASC order,
        with the total."""
        raise NotImplementedError

    async def first_cursor(self, thread: ThreadSpec, per_page: int, depth: int) -> Any:
        """Walk ``thread`` by keyset pages (untimed) and return the cursor that
        starts at position ``depth`` (None when ``depth`` is 0)."""
        raise NotImplementedError

    async def page_cursor(self, thread: ThreadSpec, cursor: Any, per_page: int) -> Answer:
        """The ``per_page`` messages after ``cursor`` (from :meth:`first_cursor`),
        created_at ASC, with the total."""
        raise NotImplementedError

    async def filter_meta(self, thread: ThreadSpec, key: str, value: str, per_page: int) -> Answer:
        """First page of ``thread``'s messages whose ``metadata[key] == value``
        (a JSON string), created_at ASC, with the filtered total."""
        raise NotImplementedError

    async def filter_date(self, thread: ThreadSpec, start_us: int, end_us: int, per_page: int) -> Answer:
        """First page of ``thread``'s messages with ``start_us <= created_at
        <= end_us``, created_at ASC, with the filtered total."""
        raise NotImplementedError

    async def include_windows(
        self, thread: ThreadSpec, targets: Sequence[str], before: int, after: int, n: int
    ) -> Answer:
        """The newest ``n`` of ``thread`` plus, for each target message id, up to
        ``before``/``after`` neighbours in its own thread (R-INCLUDE), merged,
        de-duplicated, R-ORDER ascending; total of the main query."""
        raise NotImplementedError

    async def list_threads(self, resource_id: str, page: int, per_page: int) -> Answer:
        """Page ``page`` of ``resource_id``'s threads, created_at DESC (ties by
        id DESC), with the resource's thread count."""
        raise NotImplementedError


def remove_sqlite_files(path: Path) -> None:
    """Delete a SQLite database file and its ``-wal``, ``-shm`` and
    ``-journal`` companions (missing ones are fine)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _message(m: BenchMessage) -> Message:
    return Message(
        id=m.id,
        thread_id=m.thread_id,
        role=m.role,  # type: ignore[arg-type]
        content=m.content,
        resource_id=m.resource_id,
        metadata=m.metadata,
        created_at=from_us(m.created_at_us),
    )


class AdapterSubject(Subject):
    """A memory-core storage, reached by URL, used through :class:`Memory`.

    Args:
        backend: group name (usually the URL scheme).
        url: storage URL for :func:`memory_core.connect`.
        namespace: isolates the benchmark's data; destroyed on close.
        server_pid: PID of the server process, when the runner started it.
    """

    kind: Kind = "adapter"

    def __init__(self, backend: str, url: str, namespace: str, server_pid: int | None = None) -> None:
        self.backend = backend
        self.label = "memory-core"
        self.url = url
        self.namespace = namespace
        self._server_pid = server_pid
        self._storage: Storage | None = None
        self._memory: Memory | None = None

    @property
    def storage(self) -> Storage:
        """The opened storage (after :meth:`open`)."""
        if self._storage is None:
            raise AdapterClosedError("the subject's storage: open() first")
        return self._storage

    @property
    def memory(self) -> Memory:
        """The :class:`Memory` facade over :attr:`storage`."""
        if self._memory is None:
            raise AdapterClosedError("the subject's Memory: open() first")
        return self._memory

    def server_pid(self) -> int | None:
        """See :meth:`Subject.server_pid`."""
        return self._server_pid

    async def open(self) -> None:
        """Connect through the registry in a fresh namespace."""
        self._storage = await connect(self.url, namespace=self.namespace)
        self._memory = Memory(self._storage, owns_stores=False)

    async def close(self) -> None:
        """Destroy the namespace and close."""
        if self._storage is not None:
            await self._storage.destroy()
            await self._storage.close()

    async def create_threads(self, threads: Sequence[ThreadSpec]) -> None:
        """One ``save_thread`` per thread."""
        for spec in threads:
            await self.storage.save_thread(
                Thread(spec.id, spec.resource_id, spec.title, spec.metadata, from_us(spec.created_at_us))
            )

    def prepare(self, messages: list[BenchMessage]) -> list[Message]:
        """Build :class:`Message` objects, as a caller would."""
        return [_message(m) for m in messages]

    async def save(self, prepared: Any) -> None:
        """``Memory.save_messages``."""
        await self.memory.save_messages(prepared)

    async def recall_newest(self, thread: ThreadSpec, n: int) -> Answer:
        """``Memory.recall(thread, resource_id, per_page=n)``."""
        result = await self.memory.recall(thread.id, resource_id=thread.resource_id, per_page=n)
        return Answer(result.total, tuple(m.id for m in result.messages))

    async def page_offset(self, thread: ThreadSpec, page: int, per_page: int) -> Answer:
        """``list_messages(thread, page=, per_page=)``."""
        result = await self.storage.list_messages(thread.id, page=page, per_page=per_page)
        return Answer(result.total, tuple(m.id for m in result.items))

    async def first_cursor(self, thread: ThreadSpec, per_page: int, depth: int) -> Any:
        """Follow ``next_cursor`` ``depth // per_page`` times."""
        cursor: str | None = None
        for _ in range(depth // per_page):
            result = await self.storage.list_messages(thread.id, per_page=per_page, cursor=cursor)
            cursor = result.next_cursor
        return cursor

    async def page_cursor(self, thread: ThreadSpec, cursor: Any, per_page: int) -> Answer:
        """``list_messages(thread, per_page=, cursor=)``."""
        result = await self.storage.list_messages(thread.id, per_page=per_page, cursor=cursor)
        return Answer(result.total, tuple(m.id for m in result.items))

    async def filter_meta(self, thread: ThreadSpec, key: str, value: str, per_page: int) -> Answer:
        """``list_messages(thread, filter=MessageFilter(metadata={key: value}))``."""
        flt = MessageFilter(metadata={key: value})
        result = await self.storage.list_messages(thread.id, filter=flt, per_page=per_page)
        return Answer(result.total, tuple(m.id for m in result.items))

    async def filter_date(self, thread: ThreadSpec, start_us: int, end_us: int, per_page: int) -> Answer:
        """``list_messages(thread, filter=MessageFilter(date_range=...))``."""
        flt = MessageFilter(date_range=DateRange(from_us(start_us), from_us(end_us)))
        result = await self.storage.list_messages(thread.id, filter=flt, per_page=per_page)
        return Answer(result.total, tuple(m.id for m in result.items))

    async def include_windows(
        self, thread: ThreadSpec, targets: Sequence[str], before: int, after: int, n: int
    ) -> Answer:
        """``Memory.recall(thread, resource_id, per_page=n, include=[...])``."""
        include = [Include(target, before, after) for target in targets]
        result = await self.memory.recall(thread.id, resource_id=thread.resource_id, per_page=n, include=include)
        return Answer(result.total, tuple(m.id for m in result.messages))

    async def list_threads(self, resource_id: str, page: int, per_page: int) -> Answer:
        """``list_threads(ThreadFilter(resource_id=...), page=, per_page=)``."""
        result = await self.storage.list_threads(ThreadFilter(resource_id=resource_id), page=page, per_page=per_page)
        return Answer(result.total, tuple(t.id for t in result.items))


Vector = npt.NDArray[np.float32]


class VectorSubject(ABC):
    """One vector search system under test (semantic recall).

    Attributes:
        backend: group name (``"qdrant"``, ``"qdrant+path"`` ...).
        kind: ``"adapter"``, ``"raw"`` or ``"peer"``.
        label: display name, unique within the backend.
    """

    backend: str
    kind: Kind
    label: str

    async def open(self) -> None:
        """Connect / create the collection."""

    @abstractmethod
    async def close(self) -> None:
        """Delete what was created and disconnect."""

    @abstractmethod
    async def add(self, messages: Sequence[BenchMessage], vectors: Vector) -> None:
        """Store one vector per message (row ``i`` of ``vectors``, shape
        ``(len(messages), dim)``, unit length) with its thread and resource."""

    async def after_load(self) -> None:
        """Once the whole dataset is in, before searching: what a deployment
        does after a bulk load (default: nothing)."""

    @abstractmethod
    async def search(self, query: Vector, top_k: int, resource_id: str) -> Answer:
        """The ``top_k`` nearest messages of ``resource_id`` by cosine, best
        first (``total`` = -1)."""


class AdapterVectorSubject(VectorSubject):
    """A memory-core vector store reached by URL (:func:`connect_vector`).

    Args:
        backend: group name.
        url: vector URL.
        namespace: passed to ``from_url`` when the store accepts one.
    """

    kind: Kind = "adapter"

    def __init__(self, backend: str, url: str, namespace: str) -> None:
        self.backend = backend
        self.label = "memory-core"
        self.url = url
        self.namespace = namespace
        self._store: VectorStore | None = None

    @property
    def store(self) -> VectorStore:
        """The opened vector store (after :meth:`open`)."""
        if self._store is None:
            raise AdapterClosedError("the subject's vector store: open() first")
        return self._store

    async def open(self) -> None:
        """Connect (the collection appears with the first upsert)."""
        try:
            self._store = await connect_vector(self.url, namespace=self.namespace)
        except TypeError:
            self._store = await connect_vector(self.url)

    async def close(self) -> None:
        """Destroy (when supported) and close."""
        if self._store is not None:
            destroy = getattr(self._store, "destroy", None)
            if destroy is not None:
                await destroy()
            await self._store.close()

    async def after_load(self) -> None:
        """The store's ``optimize()`` when it has one (the embedded Qdrant
        engine groups points by resource; see adapters/qdrant/README.md)."""
        optimize = getattr(self._store, "optimize", None)
        if optimize is not None:
            await optimize()

    async def add(self, messages: Sequence[BenchMessage], vectors: Vector) -> None:
        """``VectorStore.upsert`` of one point per message."""
        if self._store is None:
            raise AdapterClosedError("the subject's vector store: open() first")
        points = [
            VectorPoint(m.id, 0, vectors[i], m.thread_id, m.resource_id, m.created_at_us)
            for i, m in enumerate(messages)
        ]
        await self._store.upsert(points)

    async def search(self, query: Vector, top_k: int, resource_id: str) -> Answer:
        """``VectorStore.search(query, top_k, resource_id=...)``."""
        if self._store is None:
            raise AdapterClosedError("the subject's vector store: open() first")
        hits = await self._store.search(query, top_k, resource_id=resource_id)
        return Answer(-1, tuple(h.message_id for h in hits))

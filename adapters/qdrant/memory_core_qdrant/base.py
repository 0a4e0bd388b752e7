"""What every Qdrant vector store shares: layout, validation and semantics.

:class:`QdrantVectorStore` implements the public
:class:`memory_core.vector.VectorStore` methods once: input validation,
collection naming (R-VEC ``memory_messages_<dim>``, behind an optional
namespace prefix), point ids (:func:`memory_core.vector.point_id`),
payloads, batching, lazy idempotent collection creation, the over-fetch that
keeps at most one hit per message (its best chunk), error wrapping and the
open/close life cycle. The two backends implement only small underscore
primitives that talk to their engine:

- :class:`~memory_core_qdrant.edge.QdrantEdgeStore`: Qdrant's engine
  in-process (qdrant-edge-py), one shard directory per collection;
- :class:`~memory_core_qdrant.server.QdrantServerStore`: a Qdrant server (or
  qdrant-client's local mode) through ``AsyncQdrantClient``.

Both store the same collections, point ids and payloads, so the data of one
can be read by the other.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar, Self

import anyio
import numpy as np
import numpy.typing as npt
from memory_core.errors import AdapterClosedError, BackendGuard, ValidationError
from memory_core.validation import check_id
from memory_core.vector import VectorHit, VectorPoint, collection_name, point_id

from memory_core_qdrant._url import Settings, check_options, check_positive_int, parse_url

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_OVERFETCH",
    "INDEXED_FIELDS",
    "PAYLOAD_FIELDS",
    "PointFilter",
    "QdrantVectorStore",
    "RawHit",
    "check_namespace",
    "collection_prefix",
]

Matrix = npt.NDArray[np.float32]

DEFAULT_OVERFETCH = 2
"""A search first asks the engine for ``top_k * overfetch`` chunks, then keeps
each message's best one; it asks again with a 4x larger limit while fewer than
``top_k`` distinct messages came back and more chunks exist. Most messages are
one chunk, so 2 rarely needs a second call; a larger first limit costs about
0.05 ms per extra 10 hits in the engine (payloads are read for each)."""

DEFAULT_BATCH_SIZE = 512
"""Points per engine upsert call (a larger upsert is split into batches)."""

DELETE_BATCH = 1024
"""Message ids per delete-by-filter call."""

PAYLOAD_FIELDS = ("message_id", "thread_id", "resource_id", "created_at", "chunk")
"""Payload keys of every point: ids (str), ``created_at`` (int µs since the
epoch, UTC) and ``chunk`` (int, the chunk number)."""

INDEXED_FIELDS = ("message_id", "thread_id", "resource_id")
"""Payload fields with a keyword index (``resource_id`` is also marked as the
tenant field, so Qdrant co-locates each resource's points)."""

_NAMESPACE = re.compile(r"[A-Za-z0-9_-]{1,48}")


def check_namespace(namespace: str | None) -> str | None:
    """A namespace: None, or 1-48 characters of ``[A-Za-z0-9_-]``.

    Raises:
        ValidationError: anything else.
    """
    if namespace is not None and (not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace)):
        raise ValidationError("namespace", f"must be 1-48 characters of [A-Za-z0-9_-], got {namespace!r}")
    return namespace


def collection_prefix(namespace: str | None) -> str:
    """``""`` without a namespace (collections are exactly R-VEC's
    ``memory_messages_<dim>``), else ``"<namespace>_"``."""
    return "" if namespace is None else f"{namespace}_"


@dataclass(frozen=True, slots=True)
class RawHit:
    """One scored chunk as an engine returns it (before de-duplication)."""

    message_id: str
    thread_id: str
    resource_id: str
    score: float


@dataclass(frozen=True, slots=True)
class PointFilter:
    """Which points a primitive acts on: all conditions ANDed; empty = all.

    Attributes:
        message_ids: payload ``message_id`` is one of these (empty: any).
        thread_id: payload ``thread_id`` equals it (None: any).
        resource_id: payload ``resource_id`` equals it (None: any).
    """

    message_ids: tuple[str, ...] = ()
    thread_id: str | None = None
    resource_id: str | None = None

    def hit_fields(self) -> list[str]:
        """The payload fields a search under this filter reads to build its
        hits: ``message_id``, plus ``thread_id`` / ``resource_id`` unless the
        filter pins them (each payload field read costs engine time per hit)."""
        fields = ["message_id"]
        if self.thread_id is None:
            fields.append("thread_id")
        if self.resource_id is None:
            fields.append("resource_id")
        return fields

    def hit(self, payload: dict[str, Any] | None, score: float) -> RawHit:
        """The :class:`RawHit` of a point found under this filter, from its
        payload (holding at least :meth:`hit_fields`) and its score; a pinned
        id comes from the filter, which matched it exactly."""
        fields = payload or {}
        return RawHit(
            fields["message_id"],
            fields["thread_id"] if self.thread_id is None else self.thread_id,
            fields["resource_id"] if self.resource_id is None else self.resource_id,
            score,
        )


def _batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _unit(vector: Any, field: str) -> Matrix:
    """Validate one vector and return it L2-normalised as float32."""
    try:
        array = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError):
        raise ValidationError(field, "must be a 1-D array of numbers") from None
    if array.ndim != 1 or array.size < 1:
        raise ValidationError(field, f"must be a non-empty 1-D array, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValidationError(field, "must hold finite numbers (no NaN or inf)")
    norm = float(np.linalg.norm(array))
    if norm == 0.0 or not np.isfinite(norm):
        raise ValidationError(field, "must not be the zero vector (cosine is undefined)")
    return array / np.float32(norm)


class QdrantVectorStore(ABC):
    """The memory-core vector store on Qdrant (rule R-VEC).

    Use :meth:`from_url` (``memory_core.connect_vector(url)`` does): it picks the
    in-process engine for ``qdrant::memory:`` / ``qdrant+path:///dir`` and the
    server client for ``qdrant://host:6333`` / ``qdrant+https://...``.

    Layout, the same in every mode: one collection per vector dimension,
    ``memory_messages_<dim>`` (``<namespace>_memory_messages_<dim>`` with a
    namespace), cosine distance, created lazily and idempotently on the first
    upsert of that dimension, with keyword payload indexes on
    :data:`INDEXED_FIELDS`. Point id: :func:`memory_core.vector.point_id`
    (UUIDv5 of message id and chunk). Payload: :data:`PAYLOAD_FIELDS`.

    Construction does no I/O. ``open()`` (or ``async with``) connects; public
    methods open lazily. ``close()`` is idempotent; any call after it raises
    :class:`~memory_core.errors.AdapterClosedError`. Driver errors are raised as
    :class:`~memory_core.errors.BackendError` (backend ``"qdrant"``, the
    operation, ``retryable`` for connection errors and timeouts, the driver
    exception as ``__cause__``).

    Args:
        namespace: collection-name prefix isolating this store (1-48 characters
            of ``[A-Za-z0-9_-]``); None uses R-VEC's names unprefixed.
        overfetch: see :data:`DEFAULT_OVERFETCH` (int >= 1).
        batch_size: points per engine upsert call (int >= 1).

    Raises:
        ValidationError: a bad namespace or option.
    """

    backend_name: ClassVar[str] = "qdrant"
    shares_collections: ClassVar[bool] = True
    """True when other processes may create or drop this store's collections
    while it is open (a server): the store then re-lists collections before
    operations that span every dimension. False for the in-process engine,
    which locks its files for one opener."""

    def __init__(
        self,
        *,
        namespace: str | None = None,
        overfetch: int = DEFAULT_OVERFETCH,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        self.namespace = check_namespace(namespace)
        self.overfetch = check_positive_int(overfetch, "overfetch")
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self._prefix = collection_prefix(self.namespace)
        self._pattern = re.compile(re.escape(self._prefix) + r"memory_messages_([1-9][0-9]*)")
        self._known: dict[str, int] = {}
        self._opened = False
        self._closed = False
        self._open_lock = anyio.Lock()
        self._schema_lock = anyio.Lock()

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_url(
        cls, url: str, *, clock: Any = None, namespace: str | None = None, **options: Any
    ) -> QdrantVectorStore:
        """Build the store for ``url`` (no I/O).

        Args:
            url: ``qdrant::memory:``, ``qdrant+path:///relative/dir``,
                ``qdrant+path:////absolute/dir``, ``qdrant://host:6333``,
                ``qdrant+http://...`` or ``qdrant+https://host[:port][/prefix]``;
                options may follow as ``?key=value``.
            clock: accepted for the registry's signature; unused (vector
                payloads carry the messages' own ``created_at``).
            namespace: collection-name prefix (see the class).
            **options: ``overfetch``, ``batch_size``; server only: ``api_key``,
                ``prefer_grpc``, ``grpc_port``, ``timeout`` (seconds),
                ``exact`` (bool: exact instead of HNSW search), ``client`` (an
                ``AsyncQdrantClient`` to use instead of making one; not closed
                by the store). Keyword options override the URL's.

        Returns:
            A :class:`~memory_core_qdrant.edge.QdrantEdgeStore` or
            :class:`~memory_core_qdrant.server.QdrantServerStore` (calling
            ``from_url`` on one of those classes requires its kind of URL).

        Raises:
            ValidationError: a malformed URL, an unknown option or a bad value.
        """
        settings = parse_url(url)
        merged = check_options(settings.mode, {**settings.options, **options})
        target = _store_class(settings)
        if not issubclass(target, cls):
            raise ValidationError("url", f"{url!r} is not a URL for {cls.__name__} (it opens a {target.__name__})")
        return target._from_settings(settings, namespace=namespace, **merged)

    @classmethod
    @abstractmethod
    def _from_settings(cls, settings: Settings, *, namespace: str | None, **options: Any) -> Self:
        """Build from parsed settings and checked options."""

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def open(self) -> None:
        """Connect (idempotent) and find this store's existing collections.

        Raises:
            AdapterClosedError: the store was closed.
            BackendError: the engine or server could not be reached or opened.
        """
        if self._closed:
            raise AdapterClosedError("qdrant vector store is closed")
        if self._opened:
            return
        async with self._open_lock:
            if self._opened:
                return
            with self._guard("open"):
                try:
                    await self._connect()
                    await self._refresh()
                except BaseException:
                    with anyio.CancelScope(shield=True):
                        await self._disconnect()  # whatever a partial connect made
                    raise
            self._opened = True

    async def close(self) -> None:
        """Release what this store created (idempotent): the client it made, the
        engine's open shards, the temporary directory of ``qdrant::memory:``.

        Raises:
            BackendError: releasing failed (the store counts as closed anyway).
        """
        if self._closed:
            return
        self._closed = True
        if self._opened:
            with self._guard("close"):
                await self._disconnect()

    async def destroy(self) -> None:
        """Drop every collection of this store (its namespace), then close.

        For tests and benchmarks; the store cannot be used afterwards. With no
        namespace this drops the unprefixed ``memory_messages_<dim>``
        collections (never namespaced ones).

        Raises:
            AdapterClosedError: the store was closed.
            BackendError: a drop failed.
        """
        await self._ready()
        with self._guard("destroy"):
            await self._refresh()
            for name in list(self._known):
                await self._drop(name)
                self._known.pop(name, None)
        await self.close()

    async def _ready(self) -> None:
        if self._closed:
            raise AdapterClosedError("qdrant vector store is closed")
        if not self._opened:
            await self.open()

    def is_retryable(self, exc: Exception) -> bool:
        """Whether a driver exception is transient (see ``_errors``)."""
        return isinstance(exc, ConnectionError | TimeoutError)

    def _guard(self, operation: str) -> BackendGuard:
        return BackendGuard(self, operation)

    # ------------------------------------------------------------------ layout

    def collection(self, dimension: int) -> str:
        """The collection of ``dimension``-sized vectors for this store:
        ``memory_messages_<dim>``, prefixed by ``<namespace>_`` when set."""
        return f"{self._prefix}{collection_name(dimension)}"

    def _dimension_of(self, name: str) -> int | None:
        found = self._pattern.fullmatch(name)
        return int(found.group(1)) if found else None

    async def _refresh(self) -> None:
        """Re-read which collections of this store exist."""
        names = await self._list_collections()
        self._known = {name: dim for name in names if (dim := self._dimension_of(name)) is not None}

    async def _collections(self) -> list[str]:
        """This store's collections (re-listed first when shared)."""
        if self.shares_collections:
            await self._refresh()
        return sorted(self._known)

    async def _ensure(self, name: str, dimension: int) -> None:
        if name in self._known:
            return
        async with self._schema_lock:
            if name not in self._known:
                await self._create_collection(name, dimension)
                self._known[name] = dimension

    # ------------------------------------------------------------------ VectorStore

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace these points; the same (message id, chunk) replaces.

        Points may have different dimensions (each goes to its own collection).
        Within one call, a repeated (message id, chunk) keeps the last point.
        Vectors are stored L2-normalised. Large calls are sent in batches of
        ``batch_size``; a failure part-way leaves earlier batches written
        (re-running the call is safe: it is idempotent).

        Raises:
            ValidationError: a point with a bad id, chunk, time or vector (zero,
                not finite, not 1-D); nothing is written.
            BackendError: the engine failed.
        """
        groups: dict[int, dict[str, tuple[Matrix, dict[str, Any]]]] = {}
        for index, point in enumerate(points):
            field = f"points[{index}]"
            if not isinstance(point, VectorPoint):
                raise ValidationError(field, f"must be a VectorPoint, got {type(point).__name__}")
            check_id(point.message_id, f"{field}.message_id")
            check_id(point.thread_id, f"{field}.thread_id")
            check_id(point.resource_id, f"{field}.resource_id")
            for name, value in (("chunk", point.chunk), ("created_at_us", point.created_at_us)):
                if isinstance(value, bool) or not isinstance(value, int) or (name == "chunk" and value < 0):
                    raise ValidationError(f"{field}.{name}", f"must be an int{' >= 0' if name == 'chunk' else ''}")
            vector = _unit(point.vector, f"{field}.vector")
            payload = {
                "message_id": point.message_id,
                "thread_id": point.thread_id,
                "resource_id": point.resource_id,
                "created_at": point.created_at_us,
                "chunk": point.chunk,
            }
            groups.setdefault(vector.shape[0], {})[point_id(point.message_id, point.chunk)] = (vector, payload)
        await self._ready()
        if not groups:
            return
        with self._guard("upsert"):
            for dimension, group in groups.items():
                name = self.collection(dimension)
                await self._ensure(name, dimension)
                ids = list(group)
                for batch in _batches(ids, self.batch_size):
                    matrix = np.stack([group[pid][0] for pid in batch])
                    await self._upsert(name, list(batch), matrix, [group[pid][1] for pid in batch])

    async def delete_messages(self, message_ids: Sequence[str]) -> None:
        """Remove every point (all chunks, every dimension) of these messages;
        unknown ids are ignored.

        Raises:
            ValidationError: ``message_ids`` is a str or holds a bad id.
            BackendError: the engine failed.
        """
        if isinstance(message_ids, str):
            raise ValidationError("message_ids", "must be a sequence of ids, not a str")
        ids = list(dict.fromkeys(check_id(m, f"message_ids[{i}]") for i, m in enumerate(message_ids)))
        await self._ready()
        if not ids:
            return
        with self._guard("delete_messages"):
            for name in await self._collections():
                for batch in _batches(ids, DELETE_BATCH):
                    await self._delete(name, PointFilter(message_ids=tuple(batch)))

    async def delete_thread(self, thread_id: str) -> None:
        """Remove every point whose payload ``thread_id`` is this thread.

        Raises:
            ValidationError: a bad id.
            BackendError: the engine failed.
        """
        check_id(thread_id, "thread_id")
        await self._ready()
        with self._guard("delete_thread"):
            for name in await self._collections():
                await self._delete(name, PointFilter(thread_id=thread_id))

    async def search(
        self,
        vector: npt.NDArray[np.float32],
        top_k: int,
        *,
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` messages most similar to ``vector`` (cosine), best first.

        At most one hit per message: its best chunk's score. Only points of
        the ``dimension``-sized collection are searched; filters are ANDed. Ties
        in score are ordered by message id.

        Args:
            vector: query vector, shape ``(dim,)``; normalised here.
            top_k: how many messages (int >= 0; 0 gives ``[]``).
            thread_id: only this thread's points.
            resource_id: only this resource's points.

        Returns:
            Up to ``top_k`` :class:`~memory_core.vector.VectorHit`; ``[]`` when no
            collection of that dimension exists.

        Raises:
            ValidationError: a bad vector, ``top_k`` or id.
            BackendError: the engine failed.
        """
        query = _unit(vector, "vector")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
            raise ValidationError("top_k", f"must be an int >= 0, got {top_k!r}")
        flt = self._filter(thread_id, resource_id)
        await self._ready()
        if top_k == 0:
            return []
        name = self.collection(query.shape[0])
        with self._guard("search"):
            if name not in self._known and self.shares_collections:
                await self._refresh()
            if name not in self._known:
                return []
            limit = top_k * self.overfetch
            while True:
                raw = await self._search(name, query, limit, flt)
                best: dict[str, RawHit] = {}
                for hit in raw:
                    best.setdefault(hit.message_id, hit)
                if len(best) >= top_k or len(raw) < limit:
                    break
                limit *= 4
        ranked = sorted(best.values(), key=lambda h: (-h.score, h.message_id))[:top_k]
        return [VectorHit(h.message_id, h.thread_id, h.resource_id, h.score) for h in ranked]

    async def count(self, *, thread_id: str | None = None, resource_id: str | None = None) -> int:
        """How many points (chunks, every dimension) match the filter; all of
        this store's points when both are None.

        Raises:
            ValidationError: a bad id.
            BackendError: the engine failed.
        """
        flt = self._filter(thread_id, resource_id)
        await self._ready()
        with self._guard("count"):
            total = 0
            for name in await self._collections():
                total += await self._count(name, flt)
            return total

    async def dimensions(self) -> list[int]:
        """The vector dimensions this store holds collections for, ascending.

        Raises:
            BackendError: the engine failed.
        """
        await self._ready()
        with self._guard("dimensions"):
            return sorted(self._known[name] for name in await self._collections())

    @staticmethod
    def _filter(thread_id: str | None, resource_id: str | None) -> PointFilter:
        if thread_id is not None:
            check_id(thread_id, "thread_id")
        if resource_id is not None:
            check_id(resource_id, "resource_id")
        return PointFilter(thread_id=thread_id, resource_id=resource_id)

    # ------------------------------------------------------------------ primitives

    @abstractmethod
    async def _connect(self) -> None:
        """Connect / prepare the engine (called once, from ``open``)."""

    @abstractmethod
    async def _disconnect(self) -> None:
        """Release what ``_connect`` made (from ``close``, or from ``open`` after
        a failed or partial ``_connect``)."""

    @abstractmethod
    async def _list_collections(self) -> Iterable[str]:
        """Names of every collection the engine holds (any prefix)."""

    @abstractmethod
    async def _create_collection(self, name: str, dimension: int) -> None:
        """Create collection ``name`` (cosine, ``dimension``-sized vectors) with
        keyword indexes on :data:`INDEXED_FIELDS`; a collection that already
        exists (made by a concurrent opener) is not an error."""

    @abstractmethod
    async def _drop(self, name: str) -> None:
        """Delete collection ``name`` and its data."""

    @abstractmethod
    async def _upsert(self, name: str, ids: list[str], vectors: Matrix, payloads: list[dict[str, Any]]) -> None:
        """Write points: ``ids[i]`` (UUID str) with row ``i`` of ``vectors``
        (shape ``(len(ids), dim)``, unit rows) and ``payloads[i]``; visible to
        searches when this returns."""

    @abstractmethod
    async def _delete(self, name: str, flt: PointFilter) -> None:
        """Delete every point of ``name`` matching ``flt``; visible when this returns."""

    @abstractmethod
    async def _search(self, name: str, vector: Matrix, limit: int, flt: PointFilter) -> list[RawHit]:
        """Up to ``limit`` points of ``name`` matching ``flt``, by cosine
        similarity to ``vector`` (unit, shape ``(dim,)``), best first."""

    @abstractmethod
    async def _count(self, name: str, flt: PointFilter) -> int:
        """Exact number of points of ``name`` matching ``flt``."""


def _store_class(settings: Settings) -> type[QdrantVectorStore]:
    if settings.mode == "edge":
        from memory_core_qdrant.edge import QdrantEdgeStore

        return QdrantEdgeStore
    from memory_core_qdrant.server import QdrantServerStore

    return QdrantServerStore

"""The vector side of semantic recall (rule R-VEC): contract and base class.

Adapters implement primitives; the core composes semantics, as on the
storage side (:mod:`memory_core.storage`):

- :class:`VectorStore` is the Protocol that :class:`memory_core.Memory` and
  other callers type against;
- :class:`BaseVectorStore` is the ABC every vector adapter subclasses. Its
  public methods do everything shared, once: the open/close life cycle
  (closed-store errors, driver errors wrapped by
  :class:`~memory_core.errors.BackendGuard`), validation of every input before
  any I/O, the R-VEC layout (one collection per dimension, point ids,
  payloads), batching, lazy idempotent collection creation, and the
  over-fetch that turns scored chunks into at most one hit per message;
- an adapter implements only the small underscore primitives: those of the
  collections' life cycle (connect, disconnect, create/list/drop a
  collection) at the end of its base
  :class:`~memory_core.vector_lifecycle.VectorLifecycle`, and the rest
  (upsert a batch, delete/search/count by a :class:`PointFilter`, list
  distinct message ids) at the end of :class:`BaseVectorStore`.

This module holds the data operations (upsert, deletes, copies, search and
its ranking, counts, the lexical index's public calls) and their
primitives; the open/close life cycle, preflight, error guard and
collection names are in :mod:`memory_core.vector_lifecycle`.

Layout (R-VEC): one point per (message, chunk) in the collection
``memory_messages_<dim>`` (behind an optional namespace prefix); the point id
is the UUIDv5 of the message id and chunk number (:func:`point_id`; the layout
lives in :mod:`memory_core.vector_layout`, re-exported here), so
saving a message again replaces its points and never duplicates them;
payloads hold :data:`PAYLOAD_FIELDS`. :class:`memory_core.Memory` keeps the
store in step with storage. The reference implementation is
:class:`memory_core.reference_vector.InMemoryVectorStore` (exact brute force).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from memory_core.errors import NotAListError, ValidationError, guarded
from memory_core.lexical import tokenize
from memory_core.lexical_index import LexicalDocument
from memory_core.telemetry import traced
from memory_core.validation import check_id
from memory_core.vector_checks import check_namespace, positive_int, unit_vector
from memory_core.vector_layout import (
    PAYLOAD_FIELDS,
    POINT_NAMESPACE,
    PointFilter,
    RawHit,
    chunk_text,
    collection_name,
    message_text,
    point_id,
)
from memory_core.vector_lifecycle import VectorLifecycle
from memory_core.vector_points import Vector, VectorHit, VectorPoint
from memory_core.vector_protocol import VectorStore

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_OVERFETCH",
    "DELETE_BATCH",
    "MAX_EMBEDDER_NAME",
    "PAYLOAD_FIELDS",
    "POINT_NAMESPACE",
    "SCORE_DIGITS",
    "BaseVectorStore",
    "PointFilter",
    "RawHit",
    "Vector",
    "VectorHit",
    "VectorPoint",
    "VectorStore",
    "check_namespace",
    "chunk_text",
    "collection_name",
    "message_text",
    "point_id",
    "unit_vector",
]

T = TypeVar("T")

DEFAULT_OVERFETCH = 2
"""A search first asks the backend for ``top_k * overfetch`` chunks, then keeps
each message's best one; it asks again with a 4x larger limit while fewer than
``top_k`` distinct messages came back and more chunks exist. Most messages are
one chunk, so 2 rarely needs a second call."""

SCORE_DIGITS = 6
"""Decimals a search hit's score is rounded to before ranking (R-VEC):
backends compute a cosine in float32 or float64 and in their own order, so
two messages of equal similarity differ in the last bits, by backend; rounded,
they tie exactly and the tie goes to the smaller message id on every backend."""


def _tie_at_cut(last: RawHit, best: dict[str, RawHit], top_k: int) -> bool:
    """Whether the backend's cut (its last returned chunk, ``last``) may fall
    inside a tie for the ``top_k``-th place (rounded scores equal): then the
    chunks beyond it must be read too, or backends keep different members
    of the tie."""
    kth = sorted((round(h.score, SCORE_DIGITS) for h in best.values()), reverse=True)[top_k - 1]
    return round(last.score, SCORE_DIGITS) >= kth


DEFAULT_BATCH_SIZE = 512
"""Points per ``_upsert`` call (a larger upsert is split into batches)."""

DELETE_BATCH = 1024
"""Message ids per ``_delete`` call."""

MAX_EMBEDDER_NAME = 512
"""Longest embedder name (characters) an index records
(:meth:`BaseVectorStore.record_embedder`)."""


def _batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class BaseVectorStore(VectorLifecycle):
    """Base class of every vector adapter (and of the reference vector store).

    Layout, the same on every backend: one collection per vector dimension,
    ``memory_messages_<dim>`` (``<namespace>_memory_messages_<dim>`` with a
    namespace), cosine similarity, created lazily and idempotently on the
    first upsert of that dimension. Point id: :func:`point_id`. Payload:
    :data:`PAYLOAD_FIELDS`.

    Construction does no I/O. ``open()`` (or ``async with``) connects; public
    methods open lazily. ``close()`` is idempotent; any call after it raises
    :class:`~memory_core.errors.AdapterClosedError`. Driver errors are raised
    as :class:`~memory_core.errors.BackendError` (``backend_name``, the
    operation, ``retryable`` per :meth:`is_retryable`, the driver exception as
    ``__cause__``).

    Args:
        namespace: collection-name prefix isolating this store (see
            :func:`check_namespace`); None uses R-VEC's names unprefixed.
        overfetch: see :data:`DEFAULT_OVERFETCH` (int >= 1).
        batch_size: points per ``_upsert`` call (int >= 1, default
            :data:`DEFAULT_BATCH_SIZE`).

    Raises:
        ValidationError: a bad namespace, ``overfetch`` or ``batch_size``.

    Class attributes for adapters:
        backend_name: short name used in errors (``"qdrant"``).
        shares_collections: True when other processes may create or drop this
            store's collections while it is open (a server): the store then
            re-lists collections before operations that span every dimension.
            False when the store owns its collections (in process, a locked
            directory).
        lexical_index: True when the store keeps a lexical index beside its
            points (:mod:`memory_core.lexical_index`) and implements the
            ``_*_documents`` / ``_read_*`` primitives; False (the
            default): the core composes the lexical ranking from storage.
        loop_bound: True when the store's connections belong to the event
            loop that made them (asyncpg): ``_connect`` then runs once more
            in each further loop that uses the store (making that loop's
            connections, see :mod:`memory_core.loops`), and ``_disconnect``
            releases every loop's. False (the default): one ``_connect``
            serves every loop.
        persistent: True (the default) when the points outlive the store
            object (a server, a directory); False for an in-process store
            whose points go on close (an instance may say False where its
            class says True). Transfers refuse to re-embed into a store that
            is not persistent (:mod:`memory_core.transfer.reembed`).

    Every public operation below (not ``open``/``close``/``destroy``) is an
    OpenTelemetry span when the application traces (:mod:`memory_core.telemetry`),
    a child of the Memory operation that made it.
    """

    persistent: bool = True

    def __init__(
        self,
        *,
        namespace: str | None = None,
        overfetch: int = DEFAULT_OVERFETCH,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        super().__init__(namespace=namespace)
        self.overfetch = positive_int(overfetch, "overfetch")
        self.batch_size = positive_int(batch_size, "batch_size")

    # ------------------------------------------------------------------ VectorStore

    @traced("update_memory", "vector")
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
            BackendError: the backend failed.
        """
        groups: dict[int, dict[str, tuple[Vector, dict[str, Any]]]] = {}
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
            vector = unit_vector(point.vector, f"{field}.vector")
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

    @traced("delete_memory", "vector")
    async def delete_messages(self, message_ids: Sequence[str]) -> None:
        """Remove every point (all chunks, every dimension) of these messages;
        unknown ids are ignored.

        Raises:
            ValidationError: ``message_ids`` is a str or holds a bad id.
            BackendError: the backend failed.
        """
        if isinstance(message_ids, str):
            raise NotAListError("message_ids", "ids", NotAListError.given(message_ids), '["<id>", ...]')
        ids = list(dict.fromkeys(check_id(m, f"message_ids[{i}]") for i, m in enumerate(message_ids)))
        await self._ready()
        if not ids:
            return
        with self._guard("delete_messages"):
            for name in await self._collections():
                for batch in _batches(ids, DELETE_BATCH):
                    await self._delete(name, PointFilter(message_ids=tuple(batch)))
            if self.lexical_index:
                for batch in _batches(ids, DELETE_BATCH):
                    await self._delete_documents(PointFilter(message_ids=tuple(batch)))

    @traced("delete_memory", "vector")
    async def delete_thread(self, thread_id: str) -> None:
        """Remove every point whose payload ``thread_id`` is this thread
        (unknown thread: no-op).

        Raises:
            ValidationError: a bad id.
            BackendError: the backend failed.
        """
        await self._delete_where("delete_thread", PointFilter(thread_id=check_id(thread_id, "thread_id")))

    @traced("delete_memory", "vector")
    async def delete_resource(self, resource_id: str) -> None:
        """Remove every point whose payload ``resource_id`` is this resource
        (unknown resource: no-op); ``delete_resource`` erases its
        vectors.

        Raises:
            ValidationError: a bad id.
            BackendError: the backend failed.
        """
        await self._delete_where("delete_resource", PointFilter(resource_id=check_id(resource_id, "resource_id")))

    async def _delete_where(self, operation: str, flt: PointFilter) -> None:
        await self._ready()
        with self._guard(operation):
            for name in await self._collections():
                await self._delete(name, flt)
            if self.lexical_index:
                await self._delete_documents(flt)

    @traced("create_memory", "vector")
    async def copy_messages(
        self, mapping: Mapping[str, str], thread_id: str, resource_id: str, dimension: int
    ) -> set[str] | None:
        """For each ``old -> new`` of ``mapping`` (a clone's copies), copy every
        point of ``old`` in the collection of ``dimension`` to :func:`point_id`
        ``(new, chunk)`` with ``message_id`` new, ``thread_id`` and
        ``resource_id`` these (``created_at``, ``chunk``, vector kept: never
        embedded again), and with a lexical index each ``old``'s document
        (inside the store). Returns the old ids that had points there, or
        None when the backend cannot copy (the caller indexes the copies).
        Raises ValidationError (a bad id or dimension) or BackendError."""
        pairs = {check_id(old, "mapping"): check_id(new, "mapping") for old, new in mapping.items()}
        owners = (check_id(thread_id, "thread_id"), check_id(resource_id, "resource_id"))
        name = self.collection(positive_int(dimension, "dimension"))
        await self._ready()
        copied: set[str] = set()
        with self._guard("copy_messages"):
            if not pairs or name not in await self._collections():
                return copied
            for batch in _batches(list(pairs.items()), DELETE_BATCH):
                got = await self._copy_points(name, dict(batch), *owners)
                if got is None:
                    return None
                if self.lexical_index:
                    await self._copy_documents(dict(batch), *owners)
                copied |= got
        return copied

    @traced("search_memory", "vector")
    async def search(
        self,
        vector: Vector,
        top_k: int,
        *,
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` messages most similar to ``vector`` (cosine), best first.

        At most one hit per message: its best chunk's score. Only points of
        the ``dim``-sized collection are searched; filters are ANDed. Scores are
        rounded to :data:`SCORE_DIGITS` decimals; ties are ordered by message id.

        Args:
            vector: query vector, shape ``(dim,)``; normalised here.
            top_k: how many messages (int >= 0; 0 gives ``[]``).
            thread_id: only this thread's points.
            resource_id: only this resource's points.

        Returns:
            Up to ``top_k`` :class:`VectorHit`; ``[]`` when no collection of
            that dimension exists.

        Raises:
            ValidationError: a bad vector, ``top_k`` or id.
            BackendError: the backend failed.
        """
        return await self._search_scope(vector, top_k, _scope(resource_id, thread_id))

    @traced("search_memory", "vector", name="search")
    async def search_checked(
        self, vector: Vector, top_k: int, thread_id: str | None, resource_id: str | None
    ) -> list[VectorHit]:
        """:meth:`search` with ids the caller has checked already (the core's
        recall checks its whole call once); its span is ``search``'s.

        Raises:
            ValidationError: a bad vector or ``top_k``.
            BackendError: the backend failed.
        """
        return await self._search_scope(vector, top_k, PointFilter(thread_id=thread_id, resource_id=resource_id))

    async def _search_scope(self, vector: Vector, top_k: int, flt: PointFilter) -> list[VectorHit]:
        query = unit_vector(vector, "vector")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
            raise ValidationError("top_k", f"must be an int >= 0, got {top_k!r}")
        await self._ready()
        if top_k == 0:
            return []
        name = self.collection(query.shape[0])
        if name not in self._known and self.shares_collections:
            await guarded(self, "search", self._refresh)
        if name not in self._known:
            return []
        limit = top_k * self.overfetch
        while True:
            raw = await guarded(self, "search", self._search, name, query, limit, flt)
            best: dict[str, RawHit] = {}
            for hit in raw:  # best first, so the first chunk of a message is its best
                best.setdefault(hit.message_id, hit)
            if len(raw) < limit or (len(best) >= top_k and not _tie_at_cut(raw[-1], best, top_k)):
                break
            limit *= 4
        scored = [(round(h.score, SCORE_DIGITS), h) for h in best.values()]
        ranked = sorted(scored, key=lambda pair: (-pair[0], pair[1].message_id))[:top_k]
        return [VectorHit(h.message_id, h.thread_id, h.resource_id, score) for score, h in ranked]

    @traced("search_memory", "vector")
    async def count(self, resource_id: str | None = None, thread_id: str | None = None) -> int:
        """How many distinct messages have at least one point under the filter
        (every dimension; all of this store's messages when both are None).

        Compare it with the storage's message count to find an index that is
        empty or behind its storage (messages whose text is empty have no
        point, R-VEC).

        Raises:
            ValidationError: a bad id.
            BackendError: the backend failed.
        """
        return len(await self._ids_of("count", resource_id, thread_id))

    @traced("search_memory", "vector")
    async def message_ids(self, resource_id: str | None = None, thread_id: str | None = None) -> set[str]:
        """The distinct message ids with at least one point under the filter
        (every dimension; all of this store's messages when both are None):
        what :meth:`count` counts, for a caller that compares them with
        storage (``memory-core reindex`` finds the messages storage no
        longer holds). One id per message, all in memory at once.

        Raises:
            ValidationError: a bad id.
            BackendError: the backend failed.
        """
        return await self._ids_of("message_ids", resource_id, thread_id)

    async def _ids_of(self, operation: str, resource_id: str | None, thread_id: str | None) -> set[str]:
        flt = _scope(resource_id, thread_id)
        await self._ready()
        with self._guard(operation):
            found: set[str] = set()
            for name in await self._collections():
                found.update(await self._message_ids(name, flt))
            return found

    @traced("search_memory", "vector")
    async def count_points(self, resource_id: str | None = None, thread_id: str | None = None) -> int:
        """How many points (chunks, every dimension) match the filter; all of
        this store's points when both are None.

        Raises:
            ValidationError: a bad id.
            BackendError: the backend failed.
        """
        flt = _scope(resource_id, thread_id)
        await self._ready()
        with self._guard("count_points"):
            total = 0
            for name in await self._collections():
                total += await self._count(name, flt)
            return total

    @traced("search_memory", "vector")
    async def dimensions(self) -> list[int]:
        """The vector dimensions this store holds collections for, ascending.

        Raises:
            AdapterClosedError: the store was closed.
            BackendError: the backend failed.
        """
        await self._ready()
        with self._guard("dimensions"):
            return sorted(self._known[name] for name in await self._collections())

    @traced("search_memory", "vector")
    async def dimension_counts(self) -> dict[int, int]:
        """``{dimension: points}`` for every dimension holding at least one
        point, ascending by dimension (``{}`` for an empty store): unlike
        :meth:`dimensions`, a collection emptied by a reindex does not count,
        and an index mixing embedders shows both (one ``_count`` per collection).

        Raises:
            AdapterClosedError: the store was closed.
            BackendError: the backend failed.
        """
        await self._ready()
        with self._guard("dimension_counts"):
            counts = {self._known[name]: await self._count(name, PointFilter()) for name in await self._collections()}
            return {dimension: counts[dimension] for dimension in sorted(counts) if counts[dimension]}

    @traced("search_memory", "vector")
    async def recorded_embedder(self, dimension: int) -> str | None:
        """The name of the embedder recorded as the builder of this store's
        index of ``dimension`` (:meth:`record_embedder`), or None when none
        is recorded (an index written before the record existed, or never
        written). One list of collections and one read of the record's
        point, then kept by this store object (a record is replaced only by
        :meth:`record_embedder` with ``replace``, or dropped by ``destroy``);
        a store that ``shares_collections`` reads again while none is found.

        Raises:
            ValidationError: ``dimension`` is not an int >= 1.
            AdapterClosedError: the store was closed.
            BackendError: the backend failed.
        """
        dimension = positive_int(dimension, "dimension")
        if dimension in self._embedders:
            return self._embedders[dimension]
        await self._ready()
        with self._guard("recorded_embedder"):
            return await self._read_embedder(dimension)

    @traced("update_memory", "vector")
    async def record_embedder(self, dimension: int, embedder: str, *, replace: bool = False) -> str:
        """Record ``embedder`` (an :attr:`~memory_core.embedders.Embedder.name`)
        as the builder of this store's index of ``dimension``, unless another
        is recorded (then nothing is written, unless ``replace``: a rebuild
        of the whole index with ``embedder``). The record is a collection of
        one point (:meth:`embedder_collection`; its payload ``message_id`` is
        the name), made with the primitives that make and fill the points'
        collections, so no adapter implements anything for it.

        Returns:
            The name recorded after the call: ``embedder``, or the other
            one already recorded (the caller compares them).

        Raises:
            ValidationError: a bad ``dimension``; field ``embedder``: not a
                non-empty str of at most :data:`MAX_EMBEDDER_NAME` characters
                without NUL.
            AdapterClosedError: the store was closed.
            BackendError: the backend failed.
        """
        dimension = positive_int(dimension, "dimension")
        if not isinstance(embedder, str) or not embedder or len(embedder) > MAX_EMBEDDER_NAME or "\0" in embedder:
            raise ValidationError(
                "embedder",
                f"an embedder's name must be a non-empty str of at most {MAX_EMBEDDER_NAME} characters "
                f"without NUL (it names the index's embedder), got {embedder!r}",
            )
        if self._embedders.get(dimension) == embedder:
            return embedder
        await self._ready()
        recorded: list[str] = []

        async def write() -> None:
            found = await self._read_embedder(dimension)
            if found is not None and (found == embedder or not replace):
                recorded.append(found)
                return
            name = self.embedder_collection(dimension)
            await self._create_collection(name, dimension)
            if found is not None:
                await self._delete(name, PointFilter(message_ids=(found,)))
            unit = np.zeros((1, dimension), dtype=np.float32)
            unit[0, 0] = 1.0
            payload = {"message_id": embedder, "thread_id": "embedder", "resource_id": "embedder", "created_at": 0}
            await self._upsert(name, [point_id(embedder, 0)], unit, [{**payload, "chunk": 0}])
            self._embedders[dimension] = embedder
            recorded.append(embedder)

        with self._guard("record_embedder"):
            await self._setup.run(("embedder", dimension), lambda: bool(recorded), write)
        return recorded[0]

    async def _read_embedder(self, dimension: int) -> str | None:
        """Read the record of ``dimension`` (kept once found); the smallest
        name when two writers raced to make it (the other's next check sees it)."""
        name = self.embedder_collection(dimension)
        if name not in await self._list_collections():
            if not self.shares_collections:
                self._embedders[dimension] = None
            return None
        names = sorted(await self._message_ids(name, PointFilter()))
        if names or not self.shares_collections:  # no other writer records one here
            self._embedders[dimension] = names[0] if names else None
        return names[0] if names else None

    # ------------------------------------------------------------------ lexical index

    @traced("update_memory", "vector")
    async def index_documents(self, documents: Sequence[LexicalDocument]) -> None:
        """Insert or replace these messages' lexical documents (a no-op when
        the store keeps no lexical index); within one call a repeated message
        id keeps the last. Sent in batches of ``batch_size``.

        Raises:
            ValidationError: a document that is not a LexicalDocument or has
                a bad id; nothing is written.
            BackendError: the backend failed.
        """
        latest: dict[str, LexicalDocument] = {}
        for index, document in enumerate(documents):
            field = f"documents[{index}]"
            if not isinstance(document, LexicalDocument):
                raise ValidationError(field, f"must be a LexicalDocument, got {type(document).__name__}")
            for name in ("message_id", "thread_id", "resource_id"):
                check_id(getattr(document, name), f"{field}.{name}")
            latest[document.message_id] = document
        await self._ready()
        if not self.lexical_index or not latest:
            return
        with self._guard("index_documents"):
            for batch in _batches(list(latest.values()), self.batch_size):
                await self._write_documents(batch)

    @traced("search_memory", "vector")
    async def lexical_search(
        self, query: str, top_k: int, *, thread_id: str | None = None, resource_id: str | None = None
    ) -> list[tuple[str, float]]:
        """The ``top_k`` (int >= 0) best ``(message_id, BM25 score)`` of one
        scope for ``query`` from the lexical index, by score descending, then
        id ascending: the store's ``_search_documents`` (by default
        :func:`memory_core.lexical_index.search_index`), exact.

        Raises:
            ValidationError: a bad ``top_k`` or id; field ``vector``: the
                store keeps no lexical index.
            BackendError: the backend failed.
        """
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
            raise ValidationError("top_k", f"must be an int >= 0, got {top_k!r}")
        flt = self._lexical_scope(resource_id, thread_id)
        terms = tuple(sorted(set(tokenize(query))))
        await self._ready()
        if not terms or top_k == 0:
            return []
        with self._guard("lexical_search"):
            return await self._search_documents(terms, top_k, flt)

    @traced("search_memory", "vector")
    async def count_documents(self, resource_id: str | None = None, thread_id: str | None = None) -> int:
        """How many lexical documents the index holds under the filter (all
        when both are None): compare with storage's message count.

        Raises:
            ValidationError: a bad id; field ``vector``: no lexical index.
            BackendError: the backend failed.
        """
        flt = self._lexical_scope(resource_id, thread_id)
        await self._ready()
        with self._guard("count_documents"):
            return await self._count_documents(flt)

    @traced("search_memory", "vector")
    async def document_ids(self, resource_id: str | None = None, thread_id: str | None = None) -> dict[str, str]:
        """``{message_id: resource_id}`` of every lexical document under the
        filter (all when both are None): what :meth:`count_documents`
        counts, by id, for a caller that compares them with storage (the
        whole-store ``memory-core reindex`` drops the documents of messages
        storage no longer holds, text-less ones included, which have no
        vector for :meth:`message_ids` to list; ``check-index`` names the
        resources that hold them). One entry per document, all in memory.

        Raises:
            ValidationError: a bad id; field ``vector``: no lexical index.
            BackendError: the backend failed.
        """
        flt = self._lexical_scope(resource_id, thread_id)
        await self._ready()
        with self._guard("document_ids"):
            return await self._document_ids(flt)

    # ------------------------------------------------------------------ primitives (with those of VectorLifecycle)

    @abstractmethod
    async def _upsert(self, name: str, ids: list[str], vectors: Vector, payloads: list[dict[str, Any]]) -> None:
        """Write points into ``name``: ``ids[i]`` (UUID str, distinct) with row
        ``i`` of ``vectors`` (shape ``(len(ids), dim)``, unit rows) and
        ``payloads[i]`` (:data:`PAYLOAD_FIELDS`); an existing id is replaced;
        visible to searches and counts when this returns."""

    @abstractmethod
    async def _delete(self, name: str, flt: PointFilter) -> None:
        """Delete every point of ``name`` matching ``flt`` (never empty);
        visible when this returns."""

    @abstractmethod
    async def _search(self, name: str, vector: Vector, limit: int, flt: PointFilter) -> list[RawHit]:
        """Up to ``limit`` points of ``name`` matching ``flt``, by cosine
        similarity to ``vector`` (unit, shape ``(dim,)``), best first, exact
        or as close as the backend's index gets. Build each hit with
        :meth:`PointFilter.hit`."""

    @abstractmethod
    async def _count(self, name: str, flt: PointFilter) -> int:
        """Exact number of points of ``name`` matching ``flt``."""

    async def _copy_points(
        self, name: str, mapping: dict[str, str], thread_id: str, resource_id: str
    ) -> set[str] | None:
        """Optional: copy the points of ``name`` whose ``message_id`` is a key of
        ``mapping`` as :meth:`copy_messages` says; returns the keys that had
        points. The default, None: not supported (the copies are embedded)."""
        return None

    @abstractmethod
    async def _message_ids(self, name: str, flt: PointFilter) -> set[str]:
        """The distinct payload ``message_id`` values of the points of ``name``
        matching ``flt`` (exact; the base unions them over dimensions)."""

    def _lexical_scope(self, resource_id: str | None, thread_id: str | None) -> PointFilter:
        if not self.lexical_index:
            raise ValidationError("vector", "the vector store keeps no lexical index")
        return _scope(resource_id, thread_id)


def _scope(resource_id: str | None, thread_id: str | None) -> PointFilter:
    """The validated thread/resource filter of a search or count."""
    if thread_id is not None:
        check_id(thread_id, "thread_id")
    if resource_id is not None:
        check_id(resource_id, "resource_id")
    return PointFilter(thread_id=thread_id, resource_id=resource_id)

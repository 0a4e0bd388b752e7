"""Qdrant's engine in-process (qdrant-edge-py): the embedded default.

``qdrant::memory:`` keeps the data in a private temporary directory (under
``TMPDIR``) that is deleted on close; ``qdrant+path:///dir`` keeps it in
``dir`` across runs. Each collection is one engine shard in its own
sub-directory ``<dir>/<collection name>``. The engine locks a shard's files,
so one directory serves one open store at a time (a second opener gets a
:class:`~memory_core.errors.BackendError`).

Why this engine and not qdrant-client's local mode: local mode scans every
point in Python (about 97 ms for a thread-filtered top-10 over 10^4 points on
the reference machine), while the engine answers from its payload index in
well under a millisecond (see the package README for measured figures). The
engine is Qdrant itself, so results match a Qdrant server's.

Threads: the engine's calls are synchronous, and qdrant-edge-py 0.9 holds
the GIL for their whole duration (measured: a pure-Python thread makes no
progress during a query, count, upsert or optimize), so no Python code,
the event loop included, runs meanwhile, whatever thread makes the call.
Searches, the latency-critical calls (0.1-0.5 ms when filtered), therefore
run on the calling thread: the hop to a worker thread and back cost 0.05-0.15
ms each and bought nothing. The other calls (upserts, deletes, counts,
optimize, file operations) still run in a worker thread
(``anyio.to_thread.run_sync``): they are rare or long, and would leave the
loop free under a binding that releases the GIL. The engine runs each search
on its own thread pool; the store sizes that pool to the usable CPUs (the
engine's default is 8 threads even on 2 cores, where a 100-point filtered
search measured 0.066 ms with it against 0.052 ms with 2 threads).

Search is exact: every query asks the engine for exact search (brute force
over the points the payload index selects). The engine has no background
optimizer, so points stay in insertion order in one growing segment until
:meth:`QdrantEdgeStore.optimize` rewrites them grouped by resource (the
tenant field), which about halves a resource-filtered search at 10^5 points
(a resource's vectors become contiguous in memory). Shards are configured
with an HNSW ``m`` of 0 so that optimizing never builds a graph (that takes
minutes per 10^5 points and would only serve approximate search).

The lexical index (:mod:`memory_core.lexical_index`) is one more shard,
``<dir>/[<namespace>_]memory_documents``: a point per message with the
document in its payload (the server's layout, :mod:`~memory_core_qdrant._layout`).
Searches do not read it: each document read through the binding costs
40-170 µs of payload conversion, and a Zipf query at depth 50 reads about
3,500 of them (over 13x a vector search). As this store is the shard's only
writer (the engine locks its files), it keeps an in-process mirror, a
:class:`memory_core.inverted_index.InvertedIndex`, read from the shard at
the first lexical search after opening (one scroll of every document) and
then updated after every document write and delete that succeeded (a failed
one drops the mirror, to be read again); a lexical search scores the
mirror's scope at once with numpy (:meth:`~memory_core.inverted_index.InvertedIndex.search`,
equal to the last bit to the core's BM25). Memory: every
document's ids, length and term counts, as the reference store holds them.
Qdrant's own sparse-vector BM25 (the IDF modifier) is not used: its IDF
counts the whole collection, not the searched scope, and length
normalisation would have to be frozen into the stored values, so it could
not rank like the core.

Erasure: the engine only marks a deleted point (its payload stays in the
segment files, its upsert in the WAL, and ``optimize`` leaves small segments
alone), so :meth:`QdrantEdgeStore.delete_thread` and
:meth:`~QdrantEdgeStore.delete_resource` rebuild every shard that held
deleted points (:mod:`memory_core_qdrant._rebuild`; cost in
``delete_resource``): afterwards no file of the folder holds the erased ids
or words (R-ERASE). The mirror's documents do not change, so it stays.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ParamSpec, Self, TypeVar

import anyio.to_thread
import qdrant_edge as qe
from memory_core.errors import AdapterClosedError, BackendError, ValidationError
from memory_core.inverted_index import InvertedIndex
from memory_core.lexical_index import LexicalDocument
from memory_core.options import ensure_folder, option_bool
from memory_core.vector import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_OVERFETCH,
    BaseVectorStore,
    PointFilter,
    RawHit,
    Vector,
)

from memory_core_qdrant._layout import (
    DOCUMENT_KEYWORDS,
    DOCUMENTS,
    INDEXED_FIELDS,
    LENGTH_FIELD,
    NO_VECTOR,
    PAGE,
    TENANT_FIELD,
    document_payload,
    document_point_id,
    stored_document,
)
from memory_core_qdrant._rebuild import ERASED, REBUILD, copy_shard, recover_shard, swap_shard
from memory_core_qdrant._url import MEMORY, resolve_url

try:
    import fcntl
except ImportError:  # Windows: the lock is found by open instead (_held_shard)
    fcntl = None  # type: ignore[assignment]

__all__ = ["QdrantEdgeStore", "edge_filter", "shard_config"]

P = ParamSpec("P")
T = TypeVar("T")

_CONFIG_FILE = "edge_config.json"
_WAL_FOLDER = "wal"  # a shard's write-ahead log, which the engine locks while the shard is open

_EXACT = qe.SearchParams(exact=True)
"""Every search is exact, whatever segments the shard holds."""


def edge_filter(flt: PointFilter, *extra: Any) -> qe.Filter | None:
    """The engine's filter for ``flt`` and ``extra`` conditions (None when it
    selects everything)."""
    must: list[Any] = list(extra)
    if flt.message_ids:
        must.append(qe.FieldCondition(key="message_id", match=qe.MatchAny(list(flt.message_ids))))
    if flt.thread_id is not None:
        must.append(qe.FieldCondition(key="thread_id", match=qe.MatchValue(flt.thread_id)))
    if flt.resource_id is not None:
        must.append(qe.FieldCondition(key="resource_id", match=qe.MatchValue(flt.resource_id)))
    return qe.Filter(must=must) if must else None


def _usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def shard_config(dimension: int, *, wal_enabled: bool | None = None) -> qe.EdgeConfig:
    """The engine configuration of a collection's shard, for creating or
    (re)opening it (opening rewrites the stored configuration with this one).

    Cosine ``dimension``-sized vectors; HNSW ``m`` 0 (no graph is ever built,
    see the module docstring); payloads kept in memory (``Cached``: reading
    the hits' payloads was most of a filtered search's time with the
    engine's default ``Cold``, and its slow tail); a search pool of
    :func:`_usable_cpus` threads.

    Args:
        dimension: the vector size (int >= 1).
        wal_enabled: False for a shard without a write-ahead log (temporary
            stores); None keeps the shard's own setting (True when creating).
            The engine fixes it at creation.
    """
    return qe.EdgeConfig(
        vectors=qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine),
        hnsw_config=qe.HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=10_000),
        payload_memory=qe.Memory.Cached,
        max_search_threads=_usable_cpus(),
        wal_enabled=wal_enabled,
    )


def _keyword(field: str) -> Any:
    """The keyword index schema of ``field`` (the tenant field's says so)."""
    return qe.KeywordIndexParams(is_tenant=True) if field == TENANT_FIELD else qe.PayloadSchemaType.Keyword


VECTOR_INDEXES: tuple[tuple[str, Any], ...] = tuple((field, _keyword(field)) for field in INDEXED_FIELDS)
"""The payload indexes of a collection's shard, ``(field, schema)``."""

DOCUMENT_INDEXES: tuple[tuple[str, Any], ...] = (
    *((field, _keyword(field)) for field in DOCUMENT_KEYWORDS),
    (LENGTH_FIELD, qe.PayloadSchemaType.Integer),
)
"""The payload indexes of the lexical index's shard, ``(field, schema)``."""


def _recover_folder(folder: str) -> None:
    """Finish or undo every shard rebuild a crash interrupted in ``folder``
    (:func:`~memory_core_qdrant._rebuild.recover_shard`)."""
    for name in os.listdir(folder):
        for suffix in (REBUILD, ERASED):
            if name.endswith(suffix):
                recover_shard(os.path.join(folder, name.removesuffix(suffix)))


def _is_shard(path: str) -> bool:
    """Whether ``path`` holds an engine shard (its config file exists)."""
    return os.path.isfile(os.path.join(path, _CONFIG_FILE))


def _shards_in(folder: str) -> list[str]:
    """The names of the engine shards in ``folder`` (none when it is missing)."""
    if not os.path.isdir(folder):
        return []
    return [name for name in os.listdir(folder) if _is_shard(os.path.join(folder, name))]


async def _run(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run a blocking engine call in a worker thread."""
    return await anyio.to_thread.run_sync(lambda: function(*args, **kwargs))


async def _open_shard(make: Callable[[str, Any], qe.EdgeShard], where: str, config: Any) -> qe.EdgeShard:
    """Load or create the shard at ``where`` (``EdgeShard.load``/``create``).

    Raises:
        BackendError: another process or store holds the shard (the engine
            locks its write-ahead log, and answers "WouldBlock"): said so,
            with the way out, instead of the engine's words.
    """
    try:
        return await _run(make, where, config)
    except Exception as exc:
        if "WouldBlock" not in str(exc):
            raise
        raise _held_elsewhere("open", os.path.dirname(where), exc) from exc


def _held_elsewhere(operation: str, folder: str, original: Exception | None = None) -> BackendError:
    """The error for a folder whose shard another process or store holds
    open, naming the way out (``open`` and ``preflight`` raise it alike)."""
    return BackendError(
        "qdrant",
        operation,
        f"{folder!r} is open in another process or store: the in-process Qdrant engine "
        "(qdrant+path) serves one open store per folder; close the other, or give each process its own "
        "folder, or use a Qdrant server (qdrant://host:6333) or pgvector for several processes",
        original=original,
    )


def _held_shard(folder: str, names: Iterable[str]) -> str | None:
    """The first of the shards ``names`` in ``folder`` that another opener
    holds, or None (reads only: takes and at once releases each shard's
    lock).

    The engine holds an exclusive ``flock`` on a shard's ``wal`` folder while
    the shard is open (in this process too: the lock belongs to the open
    file, not the process), and its ``load`` answers "WouldBlock" when that
    lock is taken. Without ``fcntl`` (Windows) nothing is found here and
    ``open`` still refuses. A missing ``wal`` folder: nothing to hold.
    """
    if fcntl is None:
        return None
    for name in names:
        try:
            handle = os.open(os.path.join(folder, name, _WAL_FOLDER), os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return name
        else:
            fcntl.flock(handle, fcntl.LOCK_UN)
        finally:
            os.close(handle)
    return None


class QdrantEdgeStore(BaseVectorStore):
    """Qdrant's engine in-process: ``qdrant::memory:`` or ``qdrant+path:///dir``.

    The public methods and the layout are :class:`memory_core.vector.BaseVectorStore`'s;
    this class implements its primitives on engine shards, plus :meth:`optimize`.

    Args:
        path: the data directory (created when missing, in a folder that
            must exist: ``open`` raises a ValidationError naming a missing
            one, so a misspelt path never becomes a new, empty index), or
            None / ``":memory:"`` for a temporary directory removed on close.
        namespace: collection-name prefix (see :class:`memory_core.vector.BaseVectorStore`).
        overfetch: search over-fetch factor (int >= 1).
        batch_size: points per engine upsert call (int >= 1).
        create_dirs: make the data directory's missing parent folders on
            open (default False; ``?create_dirs=true`` in a URL).

    Raises:
        ValidationError: a bad namespace or option.
    """

    backend_name = "qdrant"
    shares_collections = False
    lexical_index = True

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        namespace: str | None = None,
        overfetch: int = DEFAULT_OVERFETCH,
        batch_size: int = DEFAULT_BATCH_SIZE,
        create_dirs: bool = False,
    ) -> None:
        super().__init__(namespace=namespace, overfetch=overfetch, batch_size=batch_size)
        self.create_dirs = option_bool(create_dirs, "create_dirs")
        text = None if path is None else os.fspath(path)
        self.in_memory = text is None or text == MEMORY
        self.persistent = not self.in_memory  # a temporary directory, removed on close
        self.path: str | None = None if self.in_memory else os.path.abspath(str(text))
        self._root: str | None = None
        self._shards: dict[str, qe.EdgeShard] = {}
        self._documents: qe.EdgeShard | None = None
        self._mirror: InvertedIndex | None = None
        self._erased: set[str] = set()  # shards holding deleted points' bytes
        self._made_dirs: list[str] = []  # folders the first open created, deepest first

    @classmethod
    def from_url(cls, url: str, *, clock: Any = None, namespace: str | None = None, **options: Any) -> Self:
        """Build the store for ``qdrant::memory:`` or ``qdrant+path:///dir`` (no I/O).

        Args:
            url: ``qdrant::memory:``, ``qdrant+path:///relative/dir`` or
                ``qdrant+path:////absolute/dir``; ``?overfetch=``/``?batch_size=``
                may follow.
            clock: accepted for the registry's signature; unused (payloads
                carry the messages' own ``created_at``).
            namespace: collection-name prefix.
            **options: ``overfetch``, ``batch_size``, ``create_dirs``
                (override the URL's).

        Raises:
            ValidationError: a malformed URL, a server URL, an unknown option
                or a bad value.
        """
        settings, checked = resolve_url(url, options, mode="edge")
        return cls(settings.path, namespace=namespace, **checked)

    @property
    def store_place(self) -> str:
        """``Qdrant folder /abs/vectors: collections memory_messages_<dim>
        and the lexical documents (the folder itself stays)`` (namespaced
        names with a namespace): what :meth:`destroy` removes; the folder
        stays (it may hold other namespaces) unless this instance created
        it and it is left empty."""
        if self.in_memory:
            return f"Qdrant in memory: {self._collection_words()}"
        return f"Qdrant folder {self.path}: {self._collection_words()} (the folder itself stays)"

    def __repr__(self) -> str:
        where = MEMORY if self.in_memory else self.path
        return f"QdrantEdgeStore({where!r}, namespace={self.namespace!r})"

    # ------------------------------------------------------------------ maintenance

    async def optimize(self) -> bool:
        """Rewrite each collection's points grouped by resource (the tenant
        field); search results do not change.

        The engine appends points in arrival order, so one resource's vectors
        lie scattered over the whole segment and a resource-filtered search
        reads them from all over memory; afterwards they are contiguous, which
        about halves such a search at 10^5 points of 384 dimensions (see the
        package README). Points written later are appended unsorted again
        until the next call. A collection whose unsorted points hold less than
        the engine's indexing threshold (10 MB of vectors, about 6,500 points
        of 384 dimensions) is left alone.

        The rewrite takes seconds (1.5-4 s per 10^5 points of 384 dimensions
        on the 2-core reference machine) and, as qdrant-edge-py holds the GIL
        throughout, pauses every Python thread of the process, event loop
        included: call it at a quiet moment (after a bulk load, at startup).

        Returns:
            True when some collection was rewritten.

        Raises:
            AdapterClosedError: the store was closed.
            BackendError: the engine failed.
        """
        await self._ready()
        rewritten = False
        with self._guard("optimize"):
            for name in await self._collections():
                rewritten = await _run(self._shards[name].optimize) or rewritten
        return rewritten

    # ------------------------------------------------------------------ erasure

    async def delete_thread(self, thread_id: str) -> None:
        """Remove the thread's points, then rebuild every shard that held
        some, so that no byte of them stays on disk (see :meth:`delete_resource`).

        Raises:
            ValidationError: a bad id.
            AdapterClosedError: the store was closed.
            BackendError: the engine failed.
        """
        await super().delete_thread(thread_id)
        await self._purge("delete_thread")

    async def delete_resource(self, resource_id: str) -> None:
        """Remove the resource's points, then rebuild every shard that held
        some (R-ERASE: no trace of the ids or the words stays on disk).

        The engine only marks a deleted point: its payload stays in the
        segment files and its upsert in the write-ahead log, and ``optimize``
        leaves small segments alone. So each shard a delete touched since the
        last rebuild (deletes of messages included) is copied, surviving
        points and payload indexes, into a fresh shard that replaces it; the
        old directory is removed with its WAL (:mod:`memory_core_qdrant._rebuild`).
        An unknown id touches no shard and costs one count per shard.

        Cost: about 3-4 s per touched shard of 10^4 points of 384 dimensions
        on the 2-core reference machine under load (load average 9-15; 2.8 s
        copying, of which 1.1 s building the binding's points and 0.15 s
        reading them, 0.6 s swapping and reopening), linear in the surviving
        points, with the GIL held (the event loop pauses) during the copy.
        ``Memory.delete_resource`` calls it once (not :meth:`delete_thread`
        per thread), so each touched shard is rebuilt once. The copy loses :meth:`optimize`'s
        grouping by resource until the next ``optimize``.

        Raises:
            ValidationError: a bad id.
            AdapterClosedError: the store was closed.
            BackendError: the engine failed (the points may be deleted and the
                bytes not yet gone: call again).
        """
        await super().delete_resource(resource_id)
        await self._purge("delete_resource")

    async def _purge(self, operation: str) -> None:
        """Rebuild every shard in ``self._erased`` (see :meth:`delete_resource`)."""
        if self._root is None:
            raise AdapterClosedError("qdrant-edge store: open it first")
        documents = self._prefix + DOCUMENTS
        with self._guard(operation):
            for name in sorted(self._erased):
                where = os.path.join(self._root, name)
                dimension, found = self.dimension_of(name), self._shards.get(name)
                if name == documents and self._documents is not None:
                    config, indexes, shard = self._documents_config(), DOCUMENT_INDEXES, self._documents
                elif dimension is not None and found is not None:
                    config = shard_config(dimension, wal_enabled=False if self.in_memory else None)
                    indexes, shard = VECTOR_INDEXES, found
                else:  # dropped since its delete: nothing left to rebuild
                    self._erased.discard(name)
                    continue
                await _run(copy_shard, shard, where, config, indexes, with_vector=name != documents)
                await _run(shard.close)
                try:
                    await _run(swap_shard, where)
                finally:
                    fresh = await _open_shard(qe.EdgeShard.load, where, config)
                    if name == documents:
                        self._documents = fresh  # same points: the mirror stays
                    else:
                        self._shards[name] = fresh
                self._erased.discard(name)

    # ------------------------------------------------------------------ primitives

    async def _check_backend(self) -> None:
        """What ``_connect`` would refuse, refused here (reads only), so
        ``Memory.open`` refuses it before the storage is created: a missing
        parent folder (without ``create_dirs``), and a shard of this store
        that another process or store holds open (:meth:`_existing_collections`).
        In memory, or opened by this instance (it holds the locks itself):
        nothing to check."""
        if self.path is None or self._root is not None:
            return
        if not self.create_dirs:
            await _run(ensure_folder, os.path.dirname(self.path), create_dirs=False, url_example=self._url_example())
        await self._existing_collections()

    def _url_example(self) -> str:
        return f"qdrant+path:///{self.path}?create_dirs=true"

    async def _connect(self) -> None:
        if self.path is None:  # in memory
            self._root = await _run(tempfile.mkdtemp, prefix="memory-core-qdrant-")
        else:
            parents = await _run(
                ensure_folder, os.path.dirname(self.path), create_dirs=self.create_dirs, url_example=self._url_example()
            )
            if not await _run(os.path.isdir, self.path):
                await _run(os.makedirs, self.path, exist_ok=True)
                self._made_dirs = [self.path, *parents]
            self._root = self.path
        root = self._root
        await _run(_recover_folder, root)
        names = await _run(os.listdir, root)
        for name in sorted(names):
            dimension = self.collection_dimension(name)  # points, or the embedder's record
            if dimension is not None and await _run(_is_shard, os.path.join(root, name)):
                self._shards[name] = await _open_shard(
                    qe.EdgeShard.load, os.path.join(root, name), shard_config(dimension)
                )
        self._documents = await self._open_documents(root)

    def _documents_config(self) -> qe.EdgeConfig:
        """The lexical index's shard configuration (a point per message, no
        dense vector; no WAL in memory)."""
        return qe.EdgeConfig(
            sparse_vectors={NO_VECTOR: qe.EdgeSparseVectorParams()},
            payload_memory=qe.Memory.Cached,
            max_search_threads=_usable_cpus(),
            wal_enabled=False if self.in_memory else None,
        )

    async def _open_documents(self, root: str) -> qe.EdgeShard:
        """Load or create the lexical index's shard (see the module notes)."""
        where = os.path.join(root, self._prefix + DOCUMENTS)
        config = self._documents_config()
        if await _run(_is_shard, where):
            return await _open_shard(qe.EdgeShard.load, where, config)
        shard = await _open_shard(qe.EdgeShard.create, where, config)
        for field, schema in DOCUMENT_INDEXES:
            await _run(shard.update, qe.UpdateOperation.create_field_index(field, schema))
        return shard

    async def destroy(self) -> None:
        """Drop this store's collections and close (:meth:`BaseVectorStore.destroy`),
        then remove the folders its open created (the data folder, and with
        ``create_dirs`` its parents) when nothing else is left in them: a
        ``memory-core demo --vector qdrant+path:///new`` leaves no empty
        ``new/`` behind; a folder holding another namespace's shards stays."""
        await super().destroy()
        for folder in self._made_dirs:
            with contextlib.suppress(OSError):  # not empty: another namespace's data
                await _run(os.rmdir, folder)

    async def _existing_collections(self) -> Iterable[str]:
        """The shards in the folder, read without ``_connect`` (which would
        create the folder, and in memory a temporary one); like the default,
        it refuses what opening them would: a shard of this store that
        another process or store holds open (:func:`_held_shard`), so every
        command's ``preflight`` (``must_exist`` or not: ``check-index``,
        ``prune --vector`` before its cutoff line, ``import``) says so in
        the same words, before anything is opened or printed. Not checked
        once this instance opened the folder (it holds the locks itself).

        Raises:
            BackendError: a shard of this store is held elsewhere.
        """
        if self.path is None:
            return []
        names = await _run(_shards_in, self.path)
        documents = self._prefix + DOCUMENTS
        ours = [name for name in names if self.collection_dimension(name) is not None or name == documents]
        if self._root is None and await _run(_held_shard, self.path, ours) is not None:
            raise _held_elsewhere("preflight", self.path)
        return names

    async def _disconnect(self) -> None:
        shards, self._shards = self._shards, {}
        documents, self._documents, self._mirror = self._documents, None, None
        self._erased.clear()
        try:
            for shard in [*shards.values(), *([documents] if documents is not None else [])]:
                await _run(shard.close)
        finally:
            if self.in_memory and self._root is not None:
                await _run(shutil.rmtree, self._root, ignore_errors=True)

    async def _list_collections(self) -> Iterable[str]:
        return list(self._shards)

    async def _create_collection(self, name: str, dimension: int) -> None:
        if self._root is None:
            raise AdapterClosedError("qdrant-edge store: open it first")
        shard = self._shards.get(name)
        if shard is None:
            where = os.path.join(self._root, name)
            if await _run(_is_shard, where):
                shard = await _open_shard(qe.EdgeShard.load, where, shard_config(dimension))
            else:
                config = shard_config(dimension, wal_enabled=False if self.in_memory else None)
                shard = await _open_shard(qe.EdgeShard.create, where, config)
            self._shards[name] = shard
        for field, schema in VECTOR_INDEXES:  # creating an existing index is a no-op
            await _run(shard.update, qe.UpdateOperation.create_field_index(field, schema))

    async def _drop(self, name: str) -> None:
        if self._root is None:
            raise AdapterClosedError("qdrant-edge store: open it first")
        shard = self._shards.pop(name, None)
        if shard is not None:
            await _run(shard.close)
        await _run(shutil.rmtree, os.path.join(self._root, name), ignore_errors=True)

    async def _upsert(self, name: str, ids: list[str], vectors: Vector, payloads: list[dict[str, Any]]) -> None:
        shard = self._shards[name]

        def write() -> None:
            rows = vectors.tolist()
            points = [
                qe.Point(uuid.UUID(pid), row, payload) for pid, row, payload in zip(ids, rows, payloads, strict=True)
            ]
            shard.update(qe.UpdateOperation.upsert_points(points))

        await _run(write)

    async def _delete(self, name: str, flt: PointFilter) -> None:
        condition = edge_filter(flt)
        if condition is None:
            raise ValidationError("filter", "an unfiltered delete would empty the collection; refused", "R-VEC")
        shard = self._shards[name]
        if await _run(shard.count, qe.CountRequest(exact=True, filter=condition)):
            self._erased.add(name)
            await _run(shard.update, qe.UpdateOperation.delete_points_by_filter(condition))

    async def _search(self, name: str, vector: Vector, limit: int, flt: PointFilter) -> list[RawHit]:
        request = qe.QueryRequest(
            query=qe.Query.Nearest(vector.tolist()),
            limit=limit,
            filter=edge_filter(flt),
            with_payload=flt.hit_fields(),
            params=_EXACT,
        )
        # On the calling thread: the binding holds the GIL for the whole call,
        # so a worker thread would not free the event loop (module docstring).
        found = self._shards[name].query(request)
        return [flt.hit(point.payload, point.score) for point in found]

    async def _count(self, name: str, flt: PointFilter) -> int:
        return await _run(self._shards[name].count, qe.CountRequest(exact=True, filter=edge_filter(flt)))

    async def _message_ids(self, name: str, flt: PointFilter) -> set[str]:
        shard, condition = self._shards[name], edge_filter(flt)

        def distinct() -> set[str]:
            # A facet over the message_id index; its limit must cover every
            # distinct value, and the point count bounds them.
            points = shard.count(qe.CountRequest(exact=True, filter=condition))
            if points == 0:
                return set()
            answer = shard.facet(qe.FacetRequest("message_id", limit=points, exact=True, filter=condition))
            return {str(hit.value) for hit in answer.hits}

        return await _run(distinct)

    # ------------------------------------------------------------------ lexical index

    def _document_shard(self) -> qe.EdgeShard:
        if self._documents is None:
            raise AdapterClosedError("qdrant-edge store: open it first")
        return self._documents

    async def _write_documents(self, documents: Sequence[LexicalDocument]) -> None:
        points = [
            qe.Point(uuid.UUID(document_point_id(document.message_id)), {}, document_payload(document))
            for document in documents
        ]
        await self._update_documents(qe.UpdateOperation.upsert_points(points), lambda mirror: mirror.write(documents))

    async def _delete_documents(self, flt: PointFilter) -> None:
        condition = edge_filter(flt)
        if condition is None:
            raise ValidationError("filter", "an unfiltered delete would empty the index; refused", "R-VEC")
        if not await _run(self._document_shard().count, qe.CountRequest(exact=True, filter=condition)):
            return
        self._erased.add(self._prefix + DOCUMENTS)
        operation = qe.UpdateOperation.delete_points_by_filter(condition)
        await self._update_documents(operation, lambda mirror: mirror.delete(flt))

    # Reads on the calling thread, as searches (module notes), from the mirror.

    def _lexicon(self) -> InvertedIndex:
        """The in-process mirror of the documents shard, read from the shard
        on first use (module notes)."""
        if self._mirror is None:
            shard, offset = self._document_shard(), None
            documents: list[LexicalDocument] = []
            while True:
                request = qe.ScrollRequest(offset=offset, limit=PAGE, with_payload=True, with_vector=False)
                records, offset = shard.scroll(request)
                documents.extend(stored_document(record.payload or {}) for record in records)
                if offset is None:
                    break
            self._mirror = InvertedIndex(documents)
        return self._mirror

    async def _update_documents(self, operation: Any, mirror: Callable[[InvertedIndex], None]) -> None:
        """Apply ``operation`` to the documents shard, then ``mirror`` it to
        the mirror when one is loaded; a failed operation drops the mirror
        (the shard may hold part of it), so the next read reloads it."""
        try:
            await _run(self._document_shard().update, operation)
        except BaseException:
            self._mirror = None
            raise
        if self._mirror is not None:
            mirror(self._mirror)

    async def _search_documents(self, terms: tuple[str, ...], top_k: int, flt: PointFilter) -> list[tuple[str, float]]:
        return self._lexicon().search(terms, top_k, flt)

    async def _count_documents(self, flt: PointFilter) -> int:
        return await _run(self._document_shard().count, qe.CountRequest(exact=True, filter=edge_filter(flt)))

    async def _document_ids(self, flt: PointFilter) -> dict[str, str]:
        return self._lexicon().owners(flt)

    async def _drop_documents(self) -> None:
        if self._root is None:
            raise AdapterClosedError("qdrant-edge store: open it first")
        shard, self._documents, self._mirror = self._documents, None, None
        if shard is not None:
            await _run(shard.close)
        await _run(shutil.rmtree, os.path.join(self._root, self._prefix + DOCUMENTS), ignore_errors=True)

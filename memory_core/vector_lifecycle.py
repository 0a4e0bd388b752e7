"""The life cycle and collection layout of a vector store: the base of
:class:`memory_core.vector.BaseVectorStore` that opens it once across event
loops, closes, destroys and preflights it, wraps driver errors
(:class:`~memory_core.errors.BackendGuard`), and keeps the names of this
store's collections (one per dimension, behind the namespace prefix,
created lazily and idempotently), with the primitives these call
(connect, disconnect, list, create and drop a collection).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable
from types import TracebackType
from typing import ClassVar, Self

import anyio

from memory_core.errors import AdapterClosedError, BackendGuard, ValidationError
from memory_core.lexical_index import LexicalPrimitives
from memory_core.loops import OnceAcrossLoops, OpenInEachLoop
from memory_core.vector_checks import check_namespace
from memory_core.vector_layout import COLLECTION_PREFIX, EMBEDDER_PREFIX

__all__ = ["VectorLifecycle"]


class VectorLifecycle(LexicalPrimitives, ABC):
    """Open, close, destroy, preflight and the collection names of
    :class:`~memory_core.vector.BaseVectorStore` (its base; the class
    attributes are documented there).

    Args:
        namespace: collection-name prefix isolating this store (see
            :func:`~memory_core.vector_checks.check_namespace`); None uses
            R-VEC's names unprefixed.

    Raises:
        ValidationError: a bad namespace.
    """

    backend_name: ClassVar[str] = "vector"
    backend_address: str = ""
    """Where the backend is (a server's ``host:port``), named in the
    :class:`~memory_core.errors.BackendError` of a failed call when the
    driver's message does not; empty when the error names it already."""
    shares_collections: ClassVar[bool] = True
    loop_bound: ClassVar[bool] = False

    def __init__(self, *, namespace: str | None = None) -> None:
        self.namespace = check_namespace(namespace)
        self._prefix = "" if self.namespace is None else f"{self.namespace}_"
        self._collection_prefix = f"{self._prefix}{COLLECTION_PREFIX}"
        self._pattern = re.compile(re.escape(self._collection_prefix) + r"([1-9][0-9]*)")
        self._marker_pattern = re.compile(re.escape(f"{self._prefix}{EMBEDDER_PREFIX}") + r"([1-9][0-9]*)")
        self._known: dict[str, int] = {}
        self._embedders: dict[int, str | None] = {}  # dimension -> its record's embedder name, once read
        self._closed = False
        self._opening = OpenInEachLoop(self.loop_bound)
        # Not anyio/asyncio locks: a store may be used from several event loops at once.
        self._setup = OnceAcrossLoops()

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        """True once ``close()`` (or ``destroy()``) has been called."""
        return self._closed

    async def open(self) -> None:
        """Connect (idempotent) and find this store's existing collections.

        Raises:
            AdapterClosedError: the store was closed.
            BackendError: the backend could not be reached or opened.
        """
        if self._closed:
            raise AdapterClosedError(f"{self.backend_name} vector store is closed")
        await self._opening.open(self._open_first, self._open_again)

    @property
    def _opened(self) -> bool:
        """Whether the first open has succeeded (in any loop)."""
        return self._opening.opened

    async def _open_first(self) -> None:
        with self._guard("open"):
            try:
                await self._connect()
                await self._refresh()
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await self._disconnect()  # whatever a partial connect made
                raise

    async def _open_again(self) -> None:
        """A loop-bound store's connect in a further event loop (the loops
        already connected keep their connections when it fails)."""
        with self._guard("open"):
            await self._connect()

    async def close(self) -> None:
        """Release what this store created (idempotent).

        Raises:
            BackendError: releasing failed (the store counts as closed anyway).
        """
        if self._closed:
            return
        self._closed = True
        if self._opened:
            with self._guard("close"):
                await self._disconnect()

    @property
    def store_place(self) -> str:
        """Where this store's vectors are, in words, computed without I/O:
        what :meth:`destroy` removes (``memory-core destroy --vector``
        prints it). The default names the backend and the collections
        (``qdrant collections memory_messages_<dim> (and the lexical
        documents)``); an adapter with a place of its own (a folder, a
        server) overrides it."""
        return f"{self.backend_name} {self._collection_words()}"

    def _collection_words(self) -> str:
        """``collections memory_messages_<dim> and the lexical documents``
        (namespaced names with a namespace; no documents without a lexical
        index): the part of :attr:`store_place` every adapter shares."""
        documents = " and the lexical documents" if self.lexical_index else ""
        return f"collections {self._collection_prefix}<dim>{documents}"

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
            # The lexical documents first: a destroy cut short then still
            # leaves a collection, which preflight(must_exist=True) finds,
            # so running it again (memory-core destroy) finishes it.
            if self.lexical_index:
                await self._drop_documents()
            # The embedders' records next, for the same reason: the points' collections go last.
            for name in await self._list_collections():
                if self._marker_pattern.fullmatch(name):
                    await self._drop(name)
            self._embedders.clear()
            for name in list(self._known):
                await self._drop(name)
                self._known.pop(name, None)
        await self.close()

    async def preflight(self, *, must_exist: bool = False) -> None:
        """Check, creating and writing nothing, that the vectors this instance
        names are there when they must be (the vector counterpart of
        :meth:`memory_core.storage.BaseStorage.preflight`; the commands run it
        before they open the store).

        Args:
            must_exist: the store must already hold vectors (a command that
                reads or prunes them: ``prune --vector``): at least one of
                this store's collections (``[<namespace>_]memory_messages_<dim>``)
                must exist, read without creating anything, so a misspelt
                folder, server path or namespace fails instead of ``open``
                creating an empty index there while the real one keeps every
                point. Without it (a store written into, ``Memory.open``)
                only :meth:`_check_backend` runs: the backend is reached
                (a server answers, a folder is not held by another process
                or store) and can hold the store, so a refusal comes before
                either store is written.

        Raises:
            ValidationError: field ``url``: with ``must_exist``, no collection
                of this store is there (an in-memory store never has one).
            BackendError: the backend could not be reached or read (a server
                that does not answer, a folder another process or store holds
                open), or it cannot hold this store (what ``open`` would raise).
        """
        with self._guard("preflight"):
            if not must_exist:
                return await self._check_backend()
            names = await self._list_collections() if self._opening.here() else await self._existing_collections()
        if not any(self.dimension_of(name) is not None for name in names):
            scope = "" if self.namespace is None else f" in namespace {self.namespace!r}"
            raise ValidationError(
                "url",
                f"the vector store the URL names holds no memory-core vectors (no index of any dimension{scope}); "
                "check the URL for a typo (its folder, server or namespace)",
            )

    async def _check_backend(self) -> None:
        """Read-only, creating nothing: raise what ``open`` would for a
        backend that cannot be reached (a server that does not answer),
        is held by another opener (a locked folder) or cannot hold the store
        (pgvector: no extension), so ``Memory.open`` refuses it before the
        storage is created. Default: list the collections
        (:meth:`_existing_collections`), which reaches the backend; an
        adapter overrides it to check more, or in another way.
        """
        await self._existing_collections()

    async def _existing_collections(self) -> Iterable[str]:
        """The backend's collection names, read before ``open`` without
        creating anything (for :meth:`preflight`). The default connects, lists and disconnects: right for an adapter
        whose ``_connect`` only makes a client. One whose ``_connect``
        creates something (a folder, a schema) overrides this.
        """
        await self._connect()
        try:
            return list(await self._list_collections())
        finally:
            await self._disconnect()

    async def _ready(self) -> None:
        if self._closed:
            raise AdapterClosedError(f"{self.backend_name} vector store is closed")
        if not (self._opening.everywhere or self._opening.here()):
            await self.open()

    def is_retryable(self, exc: Exception) -> bool:
        """Whether a driver exception is transient (adapters override)."""
        return isinstance(exc, ConnectionError | TimeoutError)

    def _guard(self, operation: str) -> BackendGuard:
        return BackendGuard(self, operation)

    # ------------------------------------------------------------------ layout

    def collection(self, dimension: int) -> str:
        """The collection of ``dimension``-sized vectors for this store:
        ``memory_messages_<dim>``, prefixed by ``<namespace>_`` when set."""
        return f"{self._collection_prefix}{dimension}"

    def dimension_of(self, name: str) -> int | None:
        """The dimension of this store's collection ``name``; None when the
        name is not one of this store's collections (another namespace)."""
        found = self._pattern.fullmatch(name)
        return int(found.group(1)) if found else None

    def embedder_collection(self, dimension: int) -> str:
        """The collection recording which embedder built the index of
        ``dimension`` (:data:`~memory_core.vector_layout.EMBEDDER_PREFIX`):
        ``memory_embedder_<dim>``, prefixed by ``<namespace>_`` when set."""
        return f"{self._prefix}{EMBEDDER_PREFIX}{dimension}"

    def collection_dimension(self, name: str) -> int | None:
        """The vector size this store's collection ``name`` was created with:
        a collection of points (:meth:`dimension_of`) or an embedder record
        (:meth:`embedder_collection`, made with the dimension it records);
        None for any other name. An adapter that finds its collections on
        disk at open (and needs their size to load them) loads these."""
        found = self._pattern.fullmatch(name) or self._marker_pattern.fullmatch(name)
        return int(found.group(1)) if found else None

    async def _refresh(self) -> None:
        """Re-read which collections of this store exist."""
        names = await self._list_collections()
        self._known = {name: dim for name in names if (dim := self.dimension_of(name)) is not None}

    async def _collections(self) -> list[str]:
        """This store's collections (re-listed first when shared)."""
        if self.shares_collections:
            await self._refresh()
        return sorted(self._known)

    async def _ensure(self, name: str, dimension: int) -> None:
        if name in self._known:
            return

        async def create() -> None:
            await self._create_collection(name, dimension)
            self._known[name] = dimension

        await self._setup.run(("collection", name), lambda: name in self._known, create)

    # ------------------------------------------------------------------ primitives

    @abstractmethod
    async def _connect(self) -> None:
        """Connect / prepare the backend (called once from ``open``; a
        ``loop_bound`` store's also once in each further event loop)."""

    @abstractmethod
    async def _disconnect(self) -> None:
        """Release what ``_connect`` made (from ``close``, or from ``open`` after
        a failed or partial ``_connect``: must tolerate a half-made state)."""

    @abstractmethod
    async def _list_collections(self) -> Iterable[str]:
        """Names of every collection the backend holds (any prefix; the base
        keeps this store's)."""

    @abstractmethod
    async def _create_collection(self, name: str, dimension: int) -> None:
        """Create collection ``name`` for ``dimension``-sized vectors under
        cosine similarity (with whatever payload indexes the backend needs for
        :class:`PointFilter` fields); a collection that already exists (made by
        a concurrent opener) is not an error."""

    @abstractmethod
    async def _drop(self, name: str) -> None:
        """Delete collection ``name`` and its data."""

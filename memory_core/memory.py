"""The ``Memory`` facade: threads, messages, recall and working memory.

``Memory`` composes a storage (any :class:`~memory_core.storage.Storage`)
with an optional vector store and embedder for semantic recall (R-RECALL,
R-VEC).
It follows the public Mastra memory API (``recall()``, ``listThreads()``),
with snake_case names. The facade checks and routes; the work lives in one
module per concern: settings in :mod:`~memory_core.config`, recall
composition in :mod:`~memory_core.recall`, working memory in
:mod:`~memory_core.working_memory`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

from memory_core import threads
from memory_core import working_memory as wm
from memory_core.arguments import (
    check_config,
    check_embedder,
    check_message_list,
    check_pairing,
    check_storage,
    check_turns,
    check_urls,
    check_vector_store,
)
from memory_core.clones import CloneCalls
from memory_core.config import MemoryConfig, SemanticRecall, TitleGenerator, resolve
from memory_core.embedders import Embedder, default_embedder
from memory_core.errors import ValidationError, url_named
from memory_core.ids import new_message_id
from memory_core.index_calls import IndexCalls
from memory_core.indexing import IndexStatus
from memory_core.models import (
    Include,
    Message,
    MessageFilter,
    OrderBy,
    Page,
    PerPage,
    RecallResult,
    ResourceErasure,
    Thread,
    ThreadFilter,
    WorkingMemoryState,
)
from memory_core.opening import Opening
from memory_core.outbox import Outbox, paired, wrote
from memory_core.query import NOT_GIVEN
from memory_core.recall import Recaller
from memory_core.retention import PruneBatch, PruneHook, PruneReport, RetentionPolicy
from memory_core.storage import Storage
from memory_core.telemetry import traced
from memory_core.tokens import EstimateTokenCounter, TokenCounter, check_token_counter
from memory_core.validation import (
    CheckedMessages,
    check_bool,
    check_id,
    check_message,
)
from memory_core.vector import BaseVectorStore, VectorStore
from memory_core.working_memory import APPENDS, WorkingMemory
from memory_core.workmem import working_memory_version

__all__ = [
    "APPENDS",
    "IndexStatus",
    "Memory",
    "MemoryConfig",
    "SemanticRecall",
    "TitleGenerator",
    "WorkingMemory",
    "working_memory_version",
]

log = logging.getLogger("memory_core")


class Memory(CloneCalls, IndexCalls):
    """Conversation memory over one storage and an optional vector store.

    From URLs and names in one line: ``memory = await Memory.open(url,
    vector=url, embedder=name, config=...)`` (:meth:`open`). From objects
    already built: ``Memory(storage, vector, embedder, config)``.

    Args:
        storage: a storage object, opened or not (``await memory_core.connect(url)``).
        vector: optional vector store object for semantic recall (R-VEC)
            (``await memory_core.connect_vector(url)``). A persistent storage
            (a file, a server) needs a persistent vector store
            (``qdrant+path:///dir``, a server, pgvector): an in-memory one
            (``qdrant::memory:``, ``memory://``) starts empty after a restart.
            An in-memory storage (``memory://``) needs in-memory vectors:
            persistent ones would keep the vectors of messages gone after a
            restart, adding more on every run. Either pairing is refused
            unless ``allow_volatile_vectors``
            (:func:`~memory_core.arguments.check_pairing`).
        embedder: an embedder object (:func:`memory_core.embedders.get_embedder`
            turns a name into one); with a vector store and no embedder,
            the built-in embedder that built the index when it holds one
            embedder's vectors (:func:`~memory_core.embedders.embedder_of_index`,
            settled at the first recall or write: an index built by the lexical
            embedder stays searchable after MiniLM is installed), else
            :func:`~memory_core.embedders.default_embedder` (MiniLM when
            installed, else the lexical hashing embedder).
        config: defaults for recall and working memory: a
            :class:`MemoryConfig` or a mapping of its fields
            (``{"last_messages": 20, "semantic_recall": {"top_k": 8}}``;
            Mastra's camelCase names too), checked into one: an unknown key
            is an error naming it and the field meant. Semantic recall
            not set (None, or a config that does not name it): on with
            :class:`SemanticRecall`'s defaults when a vector store is given,
            else off; a config that sets it (``False`` included) keeps it.
        token_counter: counts tokens for ``recall(max_tokens=...)``; default
            :class:`~memory_core.tokens.EstimateTokenCounter`.
        owns_stores: close ``storage`` and ``vector`` on :meth:`close` (default
            True; pass False when they are shared).
        allow_volatile_vectors: accept a storage and a vector store of which
            only one keeps its data after a restart, either way round (tests,
            demos; default False).

    Raises:
        ValidationError: checked here, before any I/O, naming the argument:
            ``storage`` is not a storage object, ``vector`` not a vector store
            (a URL in either: use :meth:`open`), ``embedder`` not an embedder
            (a name: ``get_embedder(name)``); a persistent storage with an
            in-memory vector store, or an in-memory storage with a persistent
            one (field ``vector``); ``config`` is neither
            a MemoryConfig nor a mapping, or a key or value of the mapping
            is wrong (field ``config.<key>``); semantic recall is on without a vector store (field
            ``config.semantic_recall``); an embedder without a vector store
            (field ``embedder``); a bad ``token_counter``.

    With a vector store, ``save_messages``, ``update_messages``,
    ``delete_messages`` and ``delete_thread`` keep the vectors in step
    synchronously: when a call returns, the store holds exactly one point set
    per stored message. If the vector write fails after the storage write, the
    call raises :class:`~memory_core.errors.BackendError` and
    :meth:`reindex` repairs the thread or resource. Each such paired write
    (saves, updates, deletes, erasure, clones, :meth:`reindex`) is carried
    out whole once started, even when its caller is cancelled (a timeout,
    Ctrl-C): the caller gets ``CancelledError`` at once and the next call
    (a write, :meth:`recall`, :meth:`check_index`, :meth:`close`) waits for
    it first (:mod:`memory_core.outbox`).
    """

    def __init__(
        self,
        storage: Storage,
        vector: VectorStore | None = None,
        embedder: Embedder | None = None,
        config: MemoryConfig | Mapping[str, Any] | None = None,
        *,
        token_counter: TokenCounter | None = None,
        owns_stores: bool = True,
        allow_volatile_vectors: bool = False,
    ) -> None:
        storage = check_storage(storage)
        vector = check_vector_store(vector)
        embedder = check_embedder(embedder)
        check_pairing(storage, vector, allow_volatile_vectors=allow_volatile_vectors)
        self.config = check_config(config, vector, embedder)
        self._embedder_settled = embedder is not None or vector is None  # else: _settle_embedder
        if vector is not None and embedder is None:
            embedder = default_embedder()
        self.storage = storage
        self.vector = vector
        self.embedder = embedder
        self.token_counter = EstimateTokenCounter() if token_counter is None else check_token_counter(token_counter)
        self._owns_stores = owns_stores
        self._recaller = Recaller(storage, vector, embedder, self.token_counter)
        self._embedder_fits = False  # set by the first write that checked it (_check_embedder)
        self._outbox = Outbox()

    @classmethod
    def open(
        cls,
        storage: str,
        vector: str | None = None,
        *,
        embedder: str | Embedder | None = None,
        config: MemoryConfig | Mapping[str, Any] | None = None,
        token_counter: TokenCounter | None = None,
        allow_volatile_vectors: bool = False,
        storage_options: Mapping[str, Any] | None = None,
        vector_options: Mapping[str, Any] | None = None,
    ) -> Opening[Self]:
        """A ready Memory from URLs and an embedder name, owning (and closing
        on :meth:`close` or ``async with``) the stores it opened::

            memory = await Memory.open("sqlite:///app.db", vector="qdrant+path:///app.vectors", embedder="minilm")
            async with memory:  # or: try ... finally: await memory.close()
                ...

        Everything is checked before any I/O (the stores are built, not
        opened, until every check passed); then each store's ``preflight``
        checks, reading only, that it can be opened (a vector server that
        does not answer, a ``qdrant+path`` folder another process or store
        holds open, a missing folder, a PostgreSQL server without pgvector
        are refused before the storage file or schema is created); if
        opening the second store fails, the first is closed again.

        Args:
            storage: a storage URL (``sqlite:///app.db``, ``postgresql://...``,
                ``redis://``, ``mongodb://``, ``memory://``).
            vector: a vector store URL (``qdrant+path:///dir``, three slashes
                for a relative folder and four for an absolute one;
                ``qdrant://host:6333``; the PostgreSQL URL for pgvector), or
                None for no semantic recall.
            embedder: a name (``"minilm"``, ``"lexical"``, ``"minilm-torch"``:
                :func:`~memory_core.embedders.get_embedder`) or an embedder
                object; None: :func:`~memory_core.embedders.default_embedder`
                when ``vector`` is given (MiniLM when installed, else lexical).
            config: as for :class:`Memory` (None: semantic recall on with
                defaults when ``vector`` is given).
            token_counter: as for :class:`Memory`.
            allow_volatile_vectors: accept a persistent storage with
                in-memory vectors (``qdrant::memory:``, ``memory://``), which
                are gone after a restart, or an in-memory storage
                (``memory://``) with persistent vectors, which outlive its
                messages; default False (both refused).
            storage_options, vector_options: keywords for the adapter's
                ``from_url`` (``namespace``, ``clock`` ...), as
                :func:`memory_core.connect` takes them.

        Returns:
            Awaited, an opened Memory that owns both stores. The call itself
            is no context manager (the Memory it returns is): ``async with
            Memory.open(...)``, or an attribute read without ``await``,
            raises :class:`~memory_core.errors.AwaitError` naming the form
            ``memory = await Memory.open(...)``, then ``async with memory:``
            (:class:`~memory_core.opening.Opening`).

        Raises:
            ValidationError: a store object or anything but a str where a URL
                goes (field ``storage`` or ``vector``: build the Memory with
                ``Memory(store, ...)``), an unknown scheme or a bad option
                (field ``storage`` or ``vector``, or ``vector option 'x'``),
                an unknown embedder name, or any refusal of :class:`Memory`
                (the pairing rule included), all before any I/O; then a
                store's preflight or open refusing the place its URL names
                (a missing folder, a misspelt file: field ``storage`` or
                ``vector``, the argument that gave that URL).
            ImportError: the embedder named is not installed
                (``"minilm"`` without ``memory-core[minilm]``).
            BackendError: a store could not be opened.
            AwaitError: the call used without ``await`` (see Returns).
        """
        opening = cls._open(
            storage,
            vector,
            embedder=embedder,
            config=config,
            token_counter=token_counter,
            allow_volatile_vectors=allow_volatile_vectors,
            storage_options=storage_options,
            vector_options=vector_options,
        )
        return Opening(opening, "Memory.open(url, ...)", "memory", cls)

    @classmethod
    async def _open(
        cls,
        storage: str,
        vector: str | None,
        *,
        embedder: str | Embedder | None,
        config: MemoryConfig | Mapping[str, Any] | None,
        token_counter: TokenCounter | None,
        allow_volatile_vectors: bool,
        storage_options: Mapping[str, Any] | None,
        vector_options: Mapping[str, Any] | None,
    ) -> Self:
        """:meth:`open`'s work, as it describes."""
        from memory_core.embedders import get_embedder
        from memory_core.registry import build_storage, build_vector

        check_urls(storage, vector)
        if isinstance(embedder, str):
            embedder = get_embedder(embedder)
        built_storage = _built(build_storage, "storage", storage, storage_options)
        built_vector = None if vector is None else _built(build_vector, "vector", vector, vector_options)
        memory = cls(
            built_storage,
            built_vector,
            embedder,
            config,
            token_counter=token_counter,
            allow_volatile_vectors=allow_volatile_vectors,
        )
        # Every store is checked (reading only) before any is opened, so a
        # store that open would refuse leaves the other one unwritten. An
        # error about a URL names the argument that gave it (storage, vector).
        with url_named("storage"):
            await built_storage.preflight()
        if isinstance(built_vector, BaseVectorStore):
            with url_named("vector"):
                await built_vector.preflight()
        try:
            with url_named("storage"):
                await built_storage.open()
            with url_named("vector"):
                await memory.__aenter__()  # the storage is open: the vector store and the embedder
        except BaseException:
            await memory.close()
            raise
        return memory

    async def __aenter__(self) -> Self:
        """Open the stores (storage first). When that fails or is cancelled
        (Ctrl-C while the vector store loads), the stores this Memory owns
        are closed again before the exception propagates, so a SQLite
        store does not leave its ``-wal``/``-shm`` files behind."""
        try:
            await self.storage.open()
            if self.vector is not None:
                await self.vector.open()
                await self._settle_embedder()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Finish the paired writes in flight (see :mod:`memory_core.outbox`),
        then close the stores this Memory owns (idempotent)."""
        await self._outbox.settle()
        if self._owns_stores:
            await self.storage.close()
            if self.vector is not None:
                await self.vector.close()

    def _config(self, thread_config: MemoryConfig | Mapping[str, Any] | None) -> MemoryConfig:
        return resolve(self.config, thread_config)

    # ------------------------------------------------------------------ threads

    @traced("create_memory")
    async def create_thread(
        self,
        resource_id: str,
        thread_id: str | None = None,
        *,
        title: str = "",
        metadata: Mapping[str, Any] | None = None,
        replace: bool = False,
    ) -> Thread:
        """Create a thread.

        Takes its ids as :meth:`get_or_create_thread` does:
        ``create_thread("user-1", "trip-2026", title="trip")`` (positional or
        by keyword); the rest by keyword only.

        Args:
            resource_id: the owner (R-ID).
            thread_id: the id (R-ID); only None means "generate a UUID4" (``""``
                is an error like any other bad id).
            title: a str.
            metadata: a JSON object (R-JSON).
            replace: False (default): an existing ``thread_id`` is a
                ConflictError and nothing changes. True: an existing thread of
                the same resource is replaced, title, metadata and
                ``created_at`` reset (its messages stay; Mastra's
                ``saveThread``). See :meth:`get_or_create_thread` to reuse one.

        Raises:
            ValidationError: bad id, title or metadata; nothing is written.
            ConflictError: ``thread_id`` exists (``replace=False``), or
                belongs to another resource.
        """
        return await threads.create(self.storage, resource_id, thread_id, title, metadata, replace)

    @traced("create_memory")
    async def get_or_create_thread(
        self,
        resource_id: str,
        thread_id: str,
        *,
        title: str = "",
        metadata: Mapping[str, Any] | None = None,
    ) -> tuple[Thread, bool]:
        """The thread ``thread_id`` of ``resource_id``, created with ``title``
        and ``metadata`` if it does not exist (an existing one is returned
        unchanged). Safe under races: of two concurrent calls, one creates
        and both return the same thread. Its arguments are
        :meth:`create_thread`'s: the ids positional or by keyword, the rest
        by keyword only.

        Returns:
            ``(thread, created)``.

        Raises:
            ValidationError: bad id, title or metadata.
            OwnershipError: the thread belongs to another resource.
        """
        return await threads.get_or_create(self.storage, resource_id, thread_id, title, metadata)

    async def get_thread(self, thread_id: str, resource_id: str | None = None) -> Thread | None:
        """See :meth:`BaseStorage.get_thread`."""
        return await self.storage.get_thread(thread_id, resource_id)

    async def update_thread(
        self, thread_id: str, *, title: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Thread:
        """See :meth:`BaseStorage.update_thread`."""
        return await self.storage.update_thread(thread_id, title=title, metadata=metadata)

    @traced("delete_memory")
    @paired
    async def delete_thread(self, thread_id: str) -> None:
        """Delete the thread, its messages and their vectors (unknown: no-op)."""
        await self.storage.delete_thread(thread_id)
        wrote()
        if self.vector is not None:
            await self.vector.delete_thread(thread_id)

    @traced("delete_memory")
    @paired
    async def delete_resource(self, resource_id: str) -> ResourceErasure:
        """Forget a resource (a user): its threads, their messages and vectors,
        and its working memory. No id stays reserved; an unknown id is no
        error. Resumable: if a backend fails half-way, calling again finishes
        the erasure (see :meth:`BaseStorage.delete_resource`). The vectors go
        in one delete of the resource's points (every thread's, those of
        threads an earlier, failed call erased included).

        Returns:
            :class:`ResourceErasure`: what was removed.

        Raises:
            ValidationError: bad id (before any I/O).
            BackendError: a store failed (call again to finish).
        """
        erased = await self.storage.delete_resource(resource_id)
        wrote()
        await self._vectors.drop_resource("delete_resource", resource_id)
        return erased

    @traced("delete_memory")
    async def prune(
        self, policy: RetentionPolicy, *, dry_run: bool = False, after_batch: PruneHook | None = None
    ) -> PruneReport:
        """Delete messages or threads older than ``policy`` allows, with their
        vectors (R-PRUNE; semantics in :mod:`memory_core.retention`).

        Each batch's vectors are deleted just after its messages, so an
        interrupted run never leaves a stored message without its vectors
        (recall would miss it). Each batch (messages, then vectors) is one
        paired write, carried out whole once started even when the caller
        is cancelled (as :meth:`save_messages`), so a cancelled run leaves
        whole batches and a rerun finishes it. A batch whose vector delete
        fails leaves that batch's vectors, orphans that recall skips (every
        hit is read from storage) and that :meth:`check_index` reports and
        :meth:`reindex` drops. Running again with
        ``RetentionPolicy(before=report.cutoff, ...)`` finishes the messages.

        Args:
            policy: what to delete.
            dry_run: report what would be removed, write nothing.
            after_batch: awaited after each delete (its messages and their
                vectors gone) with its :class:`~memory_core.retention.PruneBatch`;
                never in a dry run (``memory-core prune`` reports progress so).

        Returns:
            :class:`~memory_core.retention.PruneReport`.

        Raises:
            ValidationError: bad ``policy`` or ``dry_run``, or an
                ``after_batch`` that is not callable (before any I/O).
            BackendError: a store failed (run again to finish).
        """
        if after_batch is not None and not callable(after_batch):
            raise ValidationError("after_batch", f"must be an async function or None, got {type(after_batch).__name__}")
        if self.vector is None and after_batch is None:
            return await self.storage.prune(policy, dry_run=dry_run)

        async def after(batch: PruneBatch) -> None:
            if self.vector is not None:
                await self._drop_batch(batch)
            if after_batch is not None:
                await after_batch(batch)

        each_batch = None if self.vector is None else self._outbox.run
        return await self.storage.prune(policy, dry_run=dry_run, after_delete=after, each_batch=each_batch)

    async def _drop_batch(self, batch: PruneBatch) -> None:
        """The prune hook: the batch's messages went (:func:`wrote`), drop its vectors."""
        wrote()
        await self._vectors.drop_batch(batch)

    async def list_threads(
        self,
        filter: ThreadFilter | Mapping[str, Any] | None = None,
        page: int = 0,
        per_page: PerPage = 100,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        cursor: str | None = None,
    ) -> Page[Thread]:
        """See :meth:`BaseStorage.list_threads` (Mastra's ``listThreads``)."""
        return await self.storage.list_threads(filter, page, per_page, order_by, cursor)

    # ------------------------------------------------------------------ messages

    @traced("update_memory")
    async def save_messages(
        self, messages: Sequence[Message | Mapping[str, Any]], *, persist_system: bool = False
    ) -> list[Message]:
        """Save messages (see :meth:`BaseStorage.save_messages`), then embed them
        into the vector store and run the ``generate_title`` hook.

        Message ids are global in a store (R-ID): saving an id that exists
        updates that message, and a new ``thread_id`` (same resource) MOVES it
        there. So never reuse ids across threads: a mapping without ``id``
        (or with ``id`` None) gets a new time-ordered id
        (:func:`memory_core.ids.new_message_id`, a UUIDv7), and
        :meth:`append_messages` takes plain role/content pairs.

        System messages (role ``system``) are validated but not persisted:
        they are instructions for one model call, not conversation (Mastra's
        memory does not store them either). Pass ``persist_system=True``
        (a session that must store items exactly does) to keep them. Returns
        the stored messages only.

        Raises:
            ValidationError: any bad message (nothing is written).
            NotFoundError / OwnershipError / ConflictError: as for
                :meth:`BaseStorage.save_messages`.
            EmbedderMismatchError: the vector index holds vectors of another
                embedder (another dimension, or the same one when the index
                records another embedder's name), checked at this Memory's
                first write; nothing is written (the message names the fix:
                the embedder that built it, or :meth:`reindex` every resource).
            BackendError: the vector write failed after the messages were saved
                (repair with :meth:`reindex`).
        """
        return await self._save(check_message_list(messages), "messages", persist_system)

    @paired
    async def _save(
        self, messages: Sequence[Message | Mapping[str, Any]], label: str, persist_system: bool
    ) -> list[Message]:
        """:meth:`save_messages` once the list's shape is checked; errors about
        a message whose id is generated here name it ``<label>[<index>]``."""
        check_bool(persist_system, "persist_system")
        batch: list[Message] = []
        for index, raw in enumerate(messages):
            generated = False
            if isinstance(raw, Mapping) and raw.get("id") is None:
                raw, generated = {**raw, "id": new_message_id()}, True
            message = check_message(raw, f"{label}[{index}]", by_id=not generated)
            if persist_system or message.role != "system":
                batch.append(message)
        if batch:
            await self._check_embedder()
        saved = await self.storage.save_messages(CheckedMessages(batch)) if batch else []
        wrote()
        await self._vectors.index(saved)
        if self.config.generate_title is not None and saved:
            await threads.generate_titles(self.storage, self.config.generate_title, saved)
        return saved

    @traced("update_memory")
    async def append_messages(
        self,
        thread_id: str,
        turns: Sequence[tuple[str, Any] | Mapping[str, Any]],
        *,
        resource_id: str | None = None,
        persist_system: bool = False,
    ) -> list[Message]:
        """Append turns to a thread, in order, with new time-ordered ids and
        "now" as ``created_at`` (R-CLOCK keeps their order).

        Args:
            thread_id: the thread (it must exist; see :meth:`get_or_create_thread`).
            turns: ``(role, content)`` pairs or mappings with ``role``,
                ``content`` and optionally ``metadata``, ``type``, ``id``,
                ``created_at``. Roles: ``user``, ``assistant``, ``tool``,
                ``system``.
            resource_id: when given, must own the thread (else OwnershipError).
            persist_system: store ``system`` turns too (default False: they
                are validated, not stored, as in :meth:`save_messages`).

        Returns:
            The stored messages, in order.

        Raises:
            ValidationError: a malformed turn (named by index), nothing written.
            NotFoundError: no such thread. OwnershipError: another resource's thread.
        """
        check_id(thread_id, "thread_id")
        batch = check_turns(turns, thread_id, resource_id)
        return await self._save(batch, "turns", persist_system)

    @traced("update_memory")
    @paired
    async def update_messages(self, updates: Sequence[Mapping[str, Any]]) -> list[Message]:
        """See :meth:`BaseStorage.update_messages`; changed text or moved
        messages are re-embedded (refused as by :meth:`save_messages` when
        the index holds another embedder's vectors)."""
        touched = {
            u.get("id")
            for u in updates
            if isinstance(u, Mapping) and ("content" in u or "thread_id" in u or "threadId" in u)
        }
        if touched:
            await self._check_embedder()
        updated = await self.storage.update_messages(updates)
        wrote()
        await self._vectors.index([m for m in updated if m.id in touched])
        return updated

    @traced("delete_memory")
    @paired
    async def delete_messages(self, ids: Sequence[str]) -> int:
        """Delete messages and their vectors (unknown ids ignored); returns
        how many messages this call removed (see :meth:`BaseStorage.delete_messages`)."""
        removed = await self.storage.delete_messages(ids)
        wrote()
        await self._vectors.drop_messages("delete_messages", ids)
        return removed

    async def get_messages(self, ids: Sequence[str]) -> list[Message]:
        """See :meth:`BaseStorage.get_messages`."""
        return await self.storage.get_messages(ids)

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
        """See :meth:`BaseStorage.list_messages`."""
        return await self.storage.list_messages(
            thread_id, resource_id, include, filter, page, per_page, order_by, cursor, total
        )

    # ------------------------------------------------------------------ recall

    @traced("search_memory")
    async def recall(
        self,
        thread_id: str,
        resource_id: str | None = None,
        vector_search_string: str | None = None,
        per_page: PerPage | None = None,
        page: int = 0,
        include: Sequence[Include | Mapping[str, Any]] | None = None,
        filter: MessageFilter | Mapping[str, Any] | None = None,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        thread_config: MemoryConfig | Mapping[str, Any] | None = None,
        cursor: str | None = None,
        max_tokens: int | None = None,
        total: bool = True,
    ) -> RecallResult:
        """The messages an agent should see for its next turn (R-RECALL).

        1. With ``resource_id`` the thread must belong to it. A missing thread
           is a NotFoundError unless semantic recall has resource scope.
        2. ``per_page`` defaults to ``last_messages`` (``False`` there and no
           ``per_page``: no history page, only recalled context).
        3. Without ``order_by`` the page is the newest ``per_page`` messages
           (page 1 = the next older block), returned oldest first.
        4. With ``vector_search_string`` (semantic recall must be on), the
           ``top_k`` nearest messages (in the thread, or across the resource;
           outside the page with ``exclude_recent``; those scoring at least
           ``min_score`` when it is set) become includes with
           ``message_range`` context around each. A blank string searches
           nothing.
        5. Everything is merged and de-duplicated (R-INCLUDE); each message is
           marked with its source and the gaps between non-contiguous
           neighbours are listed (R-SOURCE).
        6. With ``max_tokens``, only the newest messages whose tokens (counted
           by the Memory's ``token_counter``) add up to at most ``max_tokens``
           are kept; a tool call and its results are kept or dropped together
           (R-BUDGET).

        When the search finds nothing (before the floor) while storage holds
        messages in its scope, the vector index is empty or behind: ``warnings`` says so and
        names the repair (:meth:`reindex`); the same is logged.

        Args:
            max_tokens: a token budget (int >= 0), or None (default) for none.
            total: count the history query's matches (default True: an
                unfiltered thread's count is a counter read, O(1)); False:
                ``RecallResult.total`` is None and a filtered history page
                reads only the rows it returns (the framework seams ask for
                none).

        Returns:
            RecallResult; ``semantic_hits`` lists hit message ids, best first;
            ``sources`` and ``gaps`` describe ``messages``.

        Raises:
            ValidationError: bad arguments (``vector_search_string`` longer than
                :data:`~memory_core.validation.MAX_SEARCH_CHARS`, 2**20
                characters, included); ``vector_search_string`` while semantic
                recall is off, or on (through ``thread_config``) without a vector
                store; a bad ``filter``, ``page``, ``per_page``, ``order_by``
                or ``total``: all checked once, together, before any I/O;
                resource scope without a resource. A bad ``cursor`` is refused
                by the storage read, before it reads (it names the query it
                belongs to): with a search (not ``exclude_recent``) that read
                follows the vector search. Never after a write (recall writes
                nothing).
            NotFoundError: missing thread (unless resource scope).
            OwnershipError: the thread belongs to another resource.
            EmbedderMismatchError: a search over an index that records
                another embedder of this one's dimension (its vectors are
                of another space; :attr:`Embedder.name
                <memory_core.embedders.Embedder.name>`); the message names
                both and the fix.
        """
        await self._outbox.settle()
        await self._settle_embedder()
        return await self._recaller.recall(
            self.config,
            thread_config,
            thread_id,
            resource_id,
            vector_search_string,
            per_page,
            page,
            include,
            filter,
            order_by,
            cursor,
            max_tokens,
            total,
        )

    @traced("search_memory")
    async def read_working_memory(
        self,
        thread_id: str | None = None,
        resource_id: str | None = None,
        thread_config: MemoryConfig | Mapping[str, Any] | None = None,
    ) -> WorkingMemoryState:
        """The working memory, whether it is stored, and its version.

        Scope ``resource``: ``Resource.working_memory`` of ``resource_id``, or
        of the thread's resource when only ``thread_id`` is given (no thread
        is needed to read a user's memory by user id). Scope ``thread``:
        ``thread.metadata["working_memory"]`` of ``thread_id``.

        Returns:
            :class:`WorkingMemoryState`: ``text`` (the stored value, or the
            template while nothing is stored), ``stored`` and ``version``.

        Raises:
            ValidationError: working memory not enabled; neither id given (or
                no ``thread_id`` with thread scope); a bad id.
            NotFoundError: ``thread_id`` names no thread.
            OwnershipError: the thread belongs to another resource.
        """
        settings = self._config(thread_config).working_memory
        return await wm.read(self.storage, settings, thread_id, resource_id)

    async def get_working_memory(
        self,
        thread_id: str | None = None,
        resource_id: str | None = None,
        thread_config: MemoryConfig | Mapping[str, Any] | None = None,
    ) -> str | None:
        """The stored working memory, or the template while none is stored
        (:meth:`read_working_memory` tells the two apart).

        Raises:
            As :meth:`read_working_memory`.
        """
        return (await self.read_working_memory(thread_id, resource_id, thread_config)).text

    @traced("update_memory")
    async def update_working_memory(
        self,
        thread_id: str | None,
        working_memory: str | Mapping[str, Any],
        resource_id: str | None = None,
        thread_config: MemoryConfig | Mapping[str, Any] | None = None,
        *,
        if_version: str | None = NOT_GIVEN,
    ) -> str:
        """Replace the working memory atomically; returns the stored text.

        ``thread_id`` may be None with resource scope and a ``resource_id``.
        A dict ``working_memory`` is stored as its compact JSON text; with a
        schema, the dict or JSON text must validate against it (nothing is
        written otherwise). ``if_version``
        makes it a compare-and-set: write only if the stored version is still
        this one (a version from :meth:`read_working_memory`; None: only if
        nothing is stored). Omitted: the write is unconditional.

        Raises:
            ValidationError: not enabled, bad type, schema violation, bad ids,
                an ``if_version`` that is not a version (32 lower-case hex
                digits), or a value over R-SIZE.
            NotFoundError / OwnershipError: as for :meth:`read_working_memory`.
            ConflictError: ``if_version`` given and the stored version differs
                (nothing written).
        """
        settings = self._config(thread_config).working_memory
        return await wm.update(self.storage, settings, thread_id, working_memory, resource_id, if_version)

    @traced("update_memory")
    async def append_working_memory(
        self,
        thread_id: str | None,
        text: str,
        resource_id: str | None = None,
        thread_config: MemoryConfig | Mapping[str, Any] | None = None,
        *,
        separator: str = "\n",
    ) -> str:
        """Append ``text`` to the working memory atomically (``separator``
        between the old value and ``text``; nothing stored: ``text`` alone).
        Concurrent appends all land: each is a compare-and-set, retried until
        it wins (at most :data:`APPENDS` rounds). Returns the new
        stored value.

        Raises:
            ValidationError: not enabled; a schema is set (JSON cannot be
                appended to); ``text``/``separator`` not str; bad ids.
            NotFoundError / OwnershipError: as for :meth:`read_working_memory`.
            ConflictError: still losing after :data:`APPENDS` rounds.
        """
        settings = self._config(thread_config).working_memory
        return await wm.append(self.storage, settings, thread_id, text, resource_id, separator)


_Built = TypeVar("_Built")


def _built(build: Callable[..., _Built], name: str, url: str, options: Mapping[str, Any] | None) -> _Built:
    """``build(url, **options)`` (no I/O), its errors naming the argument
    (``vector``, ``vector option 'namespace'``) rather than ``url``."""
    try:
        return build(url, **dict(options or {}))
    except ValidationError as exc:
        raise exc.renamed(name if exc.field == "url" else f"{name} {exc.field}") from None

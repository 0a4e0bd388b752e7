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
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any, Self, TypeVar

from memory_core import working_memory as wm
from memory_core.arguments import check_embedder, check_pairing, check_storage, check_vector_store
from memory_core.clock import to_us
from memory_core.config import MemoryConfig, SemanticRecall, TitleGenerator, resolve
from memory_core.embedders import Embedder, default_embedder
from memory_core.errors import BackendError, ConflictError, NotFoundError, OwnershipError, ValidationError
from memory_core.ids import new_message_id
from memory_core.models import (
    DateRange,
    Include,
    Message,
    MessageFilter,
    MessagePageRequest,
    OrderBy,
    Page,
    PerPage,
    RecallResult,
    ResourceErasure,
    Thread,
    ThreadFilter,
    WorkingMemoryState,
)
from memory_core.query import NOT_GIVEN
from memory_core.recall import Recaller
from memory_core.retention import PruneBatch, PruneReport, RetentionPolicy
from memory_core.storage import Storage
from memory_core.telemetry import traced
from memory_core.tokens import EstimateTokenCounter, TokenCounter, check_token_counter
from memory_core.validation import (
    MAX_ID_LENGTH,
    MAX_PER_PAGE,
    CheckedMessages,
    check_bool,
    check_date_range,
    check_id,
    check_json_object,
    check_message,
    check_non_negative_int,
    check_text,
    coerce_model,
)
from memory_core.vector import VectorPoint, VectorStore, chunk_text, message_text
from memory_core.working_memory import APPEND_ATTEMPTS, WorkingMemory
from memory_core.workmem import working_memory_version

__all__ = [
    "APPEND_ATTEMPTS",
    "MAX_CLONE_ID_LENGTH",
    "IndexStatus",
    "Memory",
    "MemoryConfig",
    "SemanticRecall",
    "TitleGenerator",
    "WorkingMemory",
    "working_memory_version",
]

log = logging.getLogger("memory_core")

MAX_CLONE_ID_LENGTH = MAX_ID_LENGTH - 33
"""The longest ``new_id`` :meth:`Memory.clone_thread` accepts (223): copies are
named ``<new_id>:<32 hex digits>`` and must fit R-ID's 256 characters."""

_TURN_KEYS = frozenset({"role", "content", "metadata", "type", "id", "created_at", "createdAt"})


def _metadata_arg(value: Any, field: str) -> dict[str, Any]:
    """An optional metadata argument as a checked JSON object (None -> {})."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(field, f"must be a dict (JSON object), got {type(value).__name__}", "R-JSON")
    return check_json_object(dict(value), field)


class Memory:
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
            (``qdrant::memory:``, ``memory://``) starts empty after a restart,
            so that pairing is refused unless ``allow_volatile_vectors``.
        embedder: an embedder object (:func:`memory_core.embedders.get_embedder`
            turns a name into one); with a vector store and no embedder,
            :func:`~memory_core.embedders.default_embedder` (MiniLM when
            installed, else the lexical hashing embedder).
        config: defaults for recall and working memory. None: semantic recall
            on with :class:`SemanticRecall`'s defaults when a vector store is
            given, else off (``MemoryConfig()``). A config given is used as
            it is (its ``semantic_recall`` defaults to off).
        token_counter: counts tokens for ``recall(max_tokens=...)``; default
            :class:`~memory_core.tokens.EstimateTokenCounter`.
        owns_stores: close ``storage`` and ``vector`` on :meth:`close` (default
            True; pass False when they are shared).
        allow_volatile_vectors: accept a persistent storage with an in-memory
            vector store (tests, demos; default False).

    Raises:
        ValidationError: checked here, before any I/O, naming the argument:
            ``storage`` is not a storage object, ``vector`` not a vector store
            (a URL in either: use :meth:`open`), ``embedder`` not an embedder
            (a name: ``get_embedder(name)``); a persistent storage with an
            in-memory vector store (field ``vector``); ``config`` is not a
            MemoryConfig; semantic recall is on without a vector store (field
            ``config.semantic_recall``); an embedder without a vector store
            (field ``embedder``); a bad ``token_counter``.

    With a vector store, ``save_messages``, ``update_messages``,
    ``delete_messages`` and ``delete_thread`` keep the vectors in step
    synchronously: when a call returns, the store holds exactly one point set
    per stored message. If the vector write fails after the storage write, the
    call raises :class:`~memory_core.errors.BackendError` and
    :meth:`reindex` repairs the thread or resource.
    """

    def __init__(
        self,
        storage: Storage,
        vector: VectorStore | None = None,
        embedder: Embedder | None = None,
        config: MemoryConfig | None = None,
        *,
        token_counter: TokenCounter | None = None,
        owns_stores: bool = True,
        allow_volatile_vectors: bool = False,
    ) -> None:
        storage = check_storage(storage)
        vector = check_vector_store(vector)
        embedder = check_embedder(embedder)
        check_pairing(storage, vector, allow_volatile_vectors=allow_volatile_vectors)
        if config is not None and not isinstance(config, MemoryConfig):
            raise ValidationError("config", f"must be a MemoryConfig, got {type(config).__name__}")
        if config is None:
            config = MemoryConfig(semantic_recall=vector is not None)
        self.config = config
        if vector is None:
            if embedder is not None:
                raise ValidationError("embedder", "given without a vector store: pass vector= too, or no embedder")
            if self.config.semantic() is not None:
                raise ValidationError(
                    "config.semantic_recall",
                    "semantic recall is on but Memory has no vector store: pass "
                    "vector=await memory_core.connect_vector(url), or turn semantic_recall off",
                    "R-RECALL",
                )
        elif embedder is None:
            embedder = default_embedder()
        self.storage = storage
        self.vector = vector
        self.embedder = embedder
        self.token_counter = EstimateTokenCounter() if token_counter is None else check_token_counter(token_counter)
        self._owns_stores = owns_stores

    @classmethod
    async def open(
        cls,
        storage: str,
        vector: str | None = None,
        *,
        embedder: str | Embedder | None = None,
        config: MemoryConfig | None = None,
        token_counter: TokenCounter | None = None,
        allow_volatile_vectors: bool = False,
        storage_options: Mapping[str, Any] | None = None,
        vector_options: Mapping[str, Any] | None = None,
    ) -> Memory:
        """A ready Memory from URLs and an embedder name, owning (and closing
        on :meth:`close` or ``async with``) the stores it opened::

            memory = await Memory.open("sqlite:///app.db", vector="qdrant+path:///app.vectors", embedder="minilm")
            async with memory:  # or: try ... finally: await memory.close()
                ...

        Everything is checked before any I/O (the stores are built, not
        opened, until every check passed); if opening the second store fails,
        the first is closed again.

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
                are gone after a restart; default False (refused).
            storage_options, vector_options: keywords for the adapter's
                ``from_url`` (``namespace``, ``clock`` ...), as
                :func:`memory_core.connect` takes them.

        Returns:
            An opened Memory that owns both stores.

        Raises:
            ValidationError: a store object or anything but a str where a URL
                goes (field ``storage`` or ``vector``: build the Memory with
                ``Memory(store, ...)``), an unknown scheme or a bad option
                (field ``url`` or the option), an unknown embedder name, or
                any refusal of :class:`Memory` (the pairing rule included),
                all before any I/O.
            ImportError: the embedder named is not installed
                (``"minilm"`` without ``memory-core[minilm]``).
            BackendError: a store could not be opened.
        """
        from memory_core.embedders import get_embedder
        from memory_core.registry import build_storage, build_vector

        for name, url in (("storage", storage), ("vector", vector)):
            if not isinstance(url, str) and (name == "storage" or url is not None):
                raise ValidationError(
                    name,
                    f"Memory.open takes a URL (str), got {type(url).__name__}; "
                    f"for a {name} object already built use Memory(storage, vector, ...)",
                )
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
        try:
            await memory.__aenter__()
        except BaseException:
            await memory.close()
            raise
        return memory

    async def __aenter__(self) -> Self:
        await self.storage.open()
        if self.vector is not None:
            await self.vector.open()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the stores this Memory owns (idempotent)."""
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
        *,
        thread_id: str | None = None,
        title: str = "",
        metadata: Mapping[str, Any] | None = None,
        replace: bool = False,
    ) -> Thread:
        """Create a thread.

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
        check_id(resource_id, "resource_id")
        new_id = str(uuid.uuid4()) if thread_id is None else check_id(thread_id, "thread_id")
        check_bool(replace, "replace")
        thread = Thread(new_id, resource_id, check_text(title, "title"), _metadata_arg(metadata, "metadata"))
        if replace:
            return await self.storage.save_thread(thread)
        return await self.storage.insert_thread(thread)

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
        and both return the same thread.

        Returns:
            ``(thread, created)``.

        Raises:
            ValidationError: bad id, title or metadata.
            OwnershipError: the thread belongs to another resource.
        """
        check_id(resource_id, "resource_id")
        check_id(thread_id, "thread_id")
        thread = Thread(thread_id, resource_id, check_text(title, "title"), _metadata_arg(metadata, "metadata"))
        for _ in range(2):
            found = await self.storage.get_thread(thread_id)
            if found is not None:
                if found.resource_id != resource_id:
                    raise OwnershipError(f"thread {thread_id!r} belongs to another resource")
                return found, False
            try:
                return await self.storage.insert_thread(thread), True
            except ConflictError:
                continue  # created meanwhile (or deleted again): read it
        raise ConflictError(f"thread {thread_id!r} is being created and deleted concurrently")

    async def get_thread(self, thread_id: str, resource_id: str | None = None) -> Thread | None:
        """See :meth:`BaseStorage.get_thread`."""
        return await self.storage.get_thread(thread_id, resource_id)

    async def update_thread(
        self, thread_id: str, *, title: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Thread:
        """See :meth:`BaseStorage.update_thread`."""
        return await self.storage.update_thread(thread_id, title=title, metadata=metadata)

    @traced("delete_memory")
    async def delete_thread(self, thread_id: str) -> None:
        """Delete the thread, its messages and their vectors (unknown: no-op)."""
        await self.storage.delete_thread(thread_id)
        if self.vector is not None:
            await self.vector.delete_thread(thread_id)

    @traced("delete_memory")
    async def delete_resource(self, resource_id: str) -> ResourceErasure:
        """Forget a resource (a user): its threads, their messages and vectors,
        and its working memory. No id stays reserved; an unknown id is no
        error. Resumable: if a backend fails half-way, calling again finishes
        the erasure (see :meth:`BaseStorage.delete_resource`).

        Returns:
            :class:`ResourceErasure`: what was removed.

        Raises:
            ValidationError: bad id (before any I/O).
            BackendError: a store failed (call again to finish).
        """
        erased = await self.storage.delete_resource(resource_id)
        if self.vector is not None:
            for thread_id in erased.thread_ids:
                await self._vector_call("delete_resource", self.vector.delete_thread(thread_id))
        return erased

    @traced("delete_memory")
    async def prune(self, policy: RetentionPolicy, *, dry_run: bool = False) -> PruneReport:
        """Delete messages or threads older than ``policy`` allows, with their
        vectors (R-PRUNE; semantics in :mod:`memory_core.retention`).

        Each batch's vectors are deleted just before its messages, so an
        interrupted run leaves no vector without its message; running again
        with ``RetentionPolicy(before=report.cutoff, ...)`` finishes it.

        Returns:
            :class:`~memory_core.retention.PruneReport`.

        Raises:
            ValidationError: bad ``policy`` or ``dry_run`` (before any I/O).
            BackendError: a store failed (run again to finish).
        """
        hook = None if self.vector is None else self._drop_vectors
        return await self.storage.prune(policy, dry_run=dry_run, before_delete=hook)

    async def _drop_vectors(self, batch: PruneBatch) -> None:
        assert self.vector is not None
        if batch.message_ids is None:
            await self._vector_call("prune", self.vector.delete_thread(batch.thread_id))
        else:
            await self._vector_call("prune", self.vector.delete_messages(list(batch.message_ids)))

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

    @traced("create_memory")
    async def clone_thread(
        self,
        source_id: str,
        new_id: str | None = None,
        *,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        message_limit: int | None = None,
        date_range: DateRange | Mapping[str, Any] | None = None,
    ) -> tuple[Thread, list[Message]]:
        """Copy a thread and its messages under new ids.

        Copies keep ``created_at`` and order and are named ``<new_id>:<32 hex
        digits>``. ``new_id`` defaults to a new UUID4; given, it must be a new
        thread id of at most :data:`MAX_CLONE_ID_LENGTH` (223) characters, so
        every copy's id fits R-ID. ``message_limit`` keeps only the newest N;
        ``date_range`` only messages inside it. The clone's metadata is the
        source's, updated with ``metadata``, plus ``cloned_from`` naming the
        source; its title is ``title`` (a str) when given, else ``"Clone of
        <source title>"`` (Mastra's ``cloneThread``; ``""`` for an untitled
        source). Every input and every
        copy is checked before anything is written. Returns ``(thread,
        messages)``.

        Raises:
            ValidationError: bad ids (``new_id`` too long for its copies' ids,
                or equal to ``source_id``), title, metadata, limit or range.
            NotFoundError: no source thread.
            ConflictError: a thread ``new_id`` already exists (a clone never
                overwrites).
        """
        check_id(source_id, "source_id")
        if new_id is None:
            new_id = str(uuid.uuid4())
        else:
            check_id(new_id, "new_id")
            if len(new_id) > MAX_CLONE_ID_LENGTH:
                raise ValidationError(
                    "new_id",
                    f"must be at most {MAX_CLONE_ID_LENGTH} characters: copies are named '<new_id>:<32 hex>' "
                    f"and ids are at most {MAX_ID_LENGTH}",
                    "R-ID",
                )
            if new_id == source_id:
                raise ValidationError("new_id", "must differ from source_id", "R-ID")
        if title is not None:
            check_text(title, "title")
        extra = _metadata_arg(metadata, "metadata")
        if message_limit is not None:
            message_limit = check_non_negative_int(message_limit, "message_limit")
        check_date_range(date_range, "date_range")
        source = await self.storage.get_thread(source_id)
        if source is None:
            raise NotFoundError(f"thread {source_id!r} does not exist")
        flt = (
            None if date_range is None else MessageFilter(date_range=coerce_model(date_range, DateRange, "date_range"))
        )
        if message_limit is None or message_limit > MAX_PER_PAGE:  # more than any page: all of them
            page = await self.storage.list_messages(source_id, filter=flt, per_page=False)
            originals = page.items
        else:
            page = await self.storage.page_messages(
                MessagePageRequest(thread_ids=(source_id,), filter=flt, per_page=message_limit, newest=True)
            )
            originals = page.items
        clone = Thread(
            new_id,
            source.resource_id,
            (f"Clone of {source.title}" if source.title else "") if title is None else title,
            {**source.metadata, **extra, "cloned_from": source_id},
        )
        copies = [replace(m, id=f"{new_id}:{uuid.uuid4().hex}", thread_id=new_id, sequence=None) for m in originals]
        # A longer id can push a copy over R-SIZE: check every copy before the
        # thread is written, so a failure leaves no half-made clone behind.
        for original, copy in zip(originals, copies, strict=True):
            try:
                check_message(copy, "copy")
            except ValidationError as exc:
                raise ValidationError(f"copy of message {original.id!r}", exc.reason, exc.rule) from None
        thread = await self.storage.insert_thread(clone)  # atomic: a racing clone or create loses
        saved = await self.save_messages(copies)
        return thread, saved

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
            BackendError: the vector write failed after the messages were saved
                (repair with :meth:`reindex`).
        """
        if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
            raise ValidationError("messages", "must be a list of Message or mappings")
        return await self._save(messages, "messages", persist_system)

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
        saved = await self.storage.save_messages(CheckedMessages(batch)) if batch else []
        await self._index(saved)
        if self.config.generate_title is not None and saved:
            await self._generate_titles(saved)
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
        if isinstance(turns, str | bytes | Mapping) or not isinstance(turns, Sequence):
            raise ValidationError("turns", "must be a list of (role, content) pairs or mappings")
        batch: list[dict[str, Any]] = []
        for index, turn in enumerate(turns):
            field = f"turns[{index}]"
            if isinstance(turn, Mapping):
                unknown = sorted(map(str, set(turn) - _TURN_KEYS))
                if unknown:
                    raise ValidationError(f"{field}.{unknown[0]}", "unknown key of a turn")
                item = dict(turn)
            elif isinstance(turn, tuple | list) and len(turn) == 2:
                item = {"role": turn[0], "content": turn[1]}
            else:
                raise ValidationError(field, "must be a (role, content) pair or a mapping")
            item["thread_id"] = thread_id
            if resource_id is not None:
                item["resource_id"] = resource_id
            batch.append(item)
        return await self._save(batch, "turns", persist_system)

    @traced("update_memory")
    async def update_messages(self, updates: Sequence[Mapping[str, Any]]) -> list[Message]:
        """See :meth:`BaseStorage.update_messages`; changed text or moved
        messages are re-embedded."""
        updated = await self.storage.update_messages(updates)
        touched = {
            u.get("id")
            for u in updates
            if isinstance(u, Mapping) and ("content" in u or "thread_id" in u or "threadId" in u)
        }
        await self._index([m for m in updated if m.id in touched])
        return updated

    @traced("delete_memory")
    async def delete_messages(self, ids: Sequence[str]) -> int:
        """Delete messages and their vectors (unknown ids ignored); returns
        how many messages this call removed (see :meth:`BaseStorage.delete_messages`)."""
        removed = await self.storage.delete_messages(ids)
        if self.vector is not None and ids:
            await self._vector_call("delete_messages", self.vector.delete_messages(list(ids)))
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

    @traced("update_memory")
    async def reindex(self, *, thread_id: str | None = None, resource_id: str | None = None) -> int:
        """Re-embed every message of one thread or one resource, replacing their
        vectors: the repair path after a failed vector write. Returns the number
        of messages indexed.

        Raises:
            ValidationError: neither or both of ``thread_id``/``resource_id``,
                or a bad id (before any I/O).
        """
        if (thread_id is None) == (resource_id is None):
            raise ValidationError("reindex", "give exactly one of thread_id or resource_id")
        if thread_id is not None:
            check_id(thread_id, "thread_id")
        if resource_id is not None:
            check_id(resource_id, "resource_id")
        if thread_id is not None:
            page = await self.storage.list_messages(thread_id, per_page=False)
            if self.vector is not None:
                await self._vector_call("reindex", self.vector.delete_thread(thread_id))
        else:
            assert resource_id is not None
            page = await self.storage.list_messages_by_resource(resource_id, per_page=False)
        await self._index(page.items)
        return len(page.items)

    async def _index(self, messages: list[Message]) -> None:
        if self.vector is None or self.embedder is None or not messages:
            return
        chunks: list[tuple[Message, int, str]] = []
        for message in messages:
            for number, text in enumerate(chunk_text(message_text(message), self.embedder.max_input_chars)):
                chunks.append((message, number, text))
        # Replace, not merge: a shorter text must not leave stale chunks behind.
        await self._vector_call("save_messages", self.vector.delete_messages([m.id for m in messages]))
        if not chunks:
            return
        vectors = await self.embedder.embed([text for _, _, text in chunks])
        points = []
        for (message, number, _), vec in zip(chunks, vectors, strict=True):
            assert message.created_at is not None and message.resource_id is not None
            points.append(
                VectorPoint(message.id, number, vec, message.thread_id, message.resource_id, to_us(message.created_at))
            )
        await self._vector_call("save_messages", self.vector.upsert(points))

    @staticmethod
    async def _vector_call(operation: str, call: Awaitable[None]) -> None:
        try:
            await call
        except BackendError:
            raise
        except Exception as exc:
            raise BackendError("vector", operation, f"{type(exc).__name__}: {exc}", original=exc) from exc

    async def _generate_titles(self, saved: list[Message]) -> None:
        assert self.config.generate_title is not None
        by_thread: dict[str, list[Message]] = {}
        for message in saved:
            by_thread.setdefault(message.thread_id, []).append(message)
        for thread_id, new in by_thread.items():
            if not any(m.role == "user" for m in new):
                continue
            thread = await self.storage.get_thread(thread_id)
            if thread is None or thread.title:
                continue
            try:
                title = await self.config.generate_title(thread, new)
            except Exception:
                # A failing hook must not undo or fail a save that succeeded.
                log.exception("generate_title failed for thread %r", thread_id)
                continue
            await self.storage.update_thread(thread_id, title=check_text(title, "generate_title result"))

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
                store; resource scope without a resource. All before any I/O.
            NotFoundError: missing thread (unless resource scope).
            OwnershipError: the thread belongs to another resource.
        """
        recaller = Recaller(self.storage, self.vector, self.embedder, self.token_counter)
        return await recaller.recall(
            self._config(thread_config),
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

    async def check_index(self, *, thread_id: str | None = None, resource_id: str | None = None) -> IndexStatus:
        """Compare the vector index with storage for one thread or one resource.

        Reads every message of the scope (a diagnostic, not for each turn) and
        counts the vectors of the scope.

        Returns:
            :class:`IndexStatus`; ``behind`` is True when the index holds
            fewer vectors than storage has messages with text (repair:
            :meth:`reindex` with the same argument).

        Raises:
            ValidationError: neither or both of ``thread_id``/``resource_id``;
                Memory has no vector store.
        """
        if (thread_id is None) == (resource_id is None):
            raise ValidationError("check_index", "give exactly one of thread_id or resource_id")
        if self.vector is None or self.embedder is None:
            raise ValidationError("vector", "Memory has no vector store to check")
        if thread_id is not None:
            check_id(thread_id, "thread_id")
            listing = await self.storage.list_messages(thread_id, per_page=False)
            indexed = await self.vector.count(thread_id=thread_id)
        else:
            assert resource_id is not None
            check_id(resource_id, "resource_id")
            listing = await self.storage.list_messages_by_resource(resource_id, per_page=False)
            indexed = await self.vector.count(resource_id=resource_id)
        embeddable = sum(1 for m in listing.items if chunk_text(message_text(m), self.embedder.max_input_chars))
        return IndexStatus(thread_id, resource_id, listing.counted_total, embeddable, indexed)

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
        it wins (at most :data:`APPEND_ATTEMPTS` rounds). Returns the new
        stored value.

        Raises:
            ValidationError: not enabled; a schema is set (JSON cannot be
                appended to); ``text``/``separator`` not str; bad ids.
            NotFoundError / OwnershipError: as for :meth:`read_working_memory`.
            ConflictError: still losing after :data:`APPEND_ATTEMPTS` rounds.
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
        field = name if exc.field == "url" else f"{name} {exc.field}"
        raise ValidationError(field, exc.reason, exc.rule) from None


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """What :meth:`Memory.check_index` found for one thread or resource.

    Attributes:
        thread_id: the thread checked, or None.
        resource_id: the resource checked, or None.
        stored: messages in storage.
        embeddable: stored messages with text (empty text gets no vector, R-VEC).
        indexed: what the vector store counts for the scope (``count()``).
    """

    thread_id: str | None
    resource_id: str | None
    stored: int
    embeddable: int
    indexed: int

    @property
    def behind(self) -> bool:
        """True when messages with text have no vectors: run :attr:`repair`."""
        return self.indexed < self.embeddable

    @property
    def repair(self) -> str:
        """The call that rebuilds this scope's vectors."""
        if self.thread_id is not None:
            return f"await memory.reindex(thread_id={self.thread_id!r})"
        return f"await memory.reindex(resource_id={self.resource_id!r})"

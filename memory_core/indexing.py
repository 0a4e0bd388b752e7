"""The vector index kept in step with storage (R-VEC).

:class:`VectorIndex` embeds saved messages into the vector store (one point
per chunk of a message's text, replacing the message's old points, and,
where the store keeps a lexical index, the message's lexical document:
:mod:`memory_core.lexical_index`), drops
the points of deleted messages and threads, rebuilds a thread's or a
resource's points (:meth:`VectorIndex.reindex`) and compares the index with
storage (:meth:`VectorIndex.status`). A vector store's failure becomes a
:class:`~memory_core.errors.BackendError` naming the operation, after the
storage write it follows has happened: :meth:`VectorIndex.reindex` repairs it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from memory_core.arguments import check_one_scope
from memory_core.clock import to_us
from memory_core.embedders import Embedder, dimension_mismatch, identity_mismatch, partial_rebuild
from memory_core.errors import BackendError, EmbedderMismatchError, ValidationError
from memory_core.lexical_index import LexicalIndex, document_of
from memory_core.models import Message, Page
from memory_core.retention import PruneBatch
from memory_core.storage import Storage
from memory_core.vector import BaseVectorStore, VectorPoint, VectorStore, chunk_text, message_text

__all__ = ["IndexStatus", "VectorIndex", "check_recorded"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """What :meth:`~memory_core.memory.Memory.check_index` found for one
    thread or resource.

    Attributes:
        thread_id: the thread checked, or None.
        resource_id: the resource checked, or None.
        stored: messages in storage.
        embeddable: stored messages with text (empty text gets no vector, R-VEC).
        indexed: what the vector store counts for the scope (``count()``).
        documents: lexical documents the store holds for the scope
            (``count_documents()``), or None when it keeps no lexical index.
    """

    thread_id: str | None
    resource_id: str | None
    stored: int
    embeddable: int
    indexed: int
    documents: int | None = None

    @property
    def behind(self) -> bool:
        """True when messages with text have no vectors, or stored messages
        no lexical document: run :attr:`repair`."""
        return self.indexed < self.embeddable or (self.documents is not None and self.documents < self.stored)

    @property
    def orphaned(self) -> int:
        """At least how many messages storage no longer holds (pruned or
        deleted from storage alone) still have vectors or a lexical document
        in the scope (0 when none show): run :attr:`repair`, which drops them."""
        extra_documents = 0 if self.documents is None else self.documents - self.stored
        return max(self.indexed - self.embeddable, extra_documents, 0)

    @property
    def in_step(self) -> bool:
        """True when the index is neither :attr:`behind` nor holds
        :attr:`orphaned` messages."""
        return not self.behind and self.orphaned == 0

    @property
    def repair(self) -> str:
        """The call that rebuilds this scope's vectors and lexical documents
        (for the entries no resource of storage owns,
        :meth:`VectorIndex.unowned`: the whole-store reindex)."""
        if self.thread_id is None and self.resource_id is None:
            return "memory-core reindex STORAGE_URL --vector VECTOR_URL (no --resource: the whole store)"
        if self.thread_id is not None:
            return f"await memory.reindex(thread_id={self.thread_id!r})"
        return f"await memory.reindex(resource_id={self.resource_id!r})"


@dataclass(frozen=True, slots=True)
class VectorIndex:
    """The vectors of one storage's messages; without a vector store (or
    embedder) every write here does nothing.

    Attributes:
        storage: where the messages are.
        vector: the vector store, or None.
        embedder: turns message text into vectors (None exactly when
            ``vector`` is).
    """

    storage: Storage
    vector: VectorStore | None
    embedder: Embedder | None

    async def index(self, messages: Sequence[Message], *, claim: bool = False) -> None:
        """Replace the points of ``messages`` (stored ones: ``created_at`` and
        ``resource_id`` set) with their text's chunks, embedded. First, the
        index of the embedder's dimension records the embedder when it has
        no record yet (:meth:`~memory_core.vector.BaseVectorStore.record_embedder`;
        ``claim``: replace another's, the whole index being rebuilt with
        this one; then even with no messages).

        Raises:
            EmbedderMismatchError: the index records another embedder of
                this dimension (not ``claim``); nothing is written.
            BackendError: the embedder or vector store failed.
        """
        if self.vector is None or self.embedder is None or not (messages or claim):
            return
        if isinstance(self.vector, BaseVectorStore):
            record = self.vector.record_embedder(self.embedder.dimension, self.embedder.name, replace=claim)
            recorded = await _vector_call("save_messages", record)
            if recorded != self.embedder.name:
                reason = identity_mismatch(self.embedder, recorded)
                raise EmbedderMismatchError(reason, self.embedder.dimension, {}, recorded=recorded)
        if not messages:
            return
        chunks: list[tuple[Message, int, str]] = []
        for message in messages:
            for number, text in enumerate(chunk_text(message_text(message), self.embedder.max_input_chars)):
                chunks.append((message, number, text))
        # Replace, not merge: a shorter text must not leave stale chunks behind.
        await _vector_call("save_messages", self.vector.delete_messages([m.id for m in messages]))
        if isinstance(self.vector, LexicalIndex) and self.vector.lexical_index:
            documents = [document_of(message) for message in messages]
            await _vector_call("save_messages", self.vector.index_documents(documents))
        if not chunks:
            return
        vectors = await self.embedder.embed([text for _, _, text in chunks])
        points = []
        for (message, number, _), vec in zip(chunks, vectors, strict=True):
            created_at, resource_id = message.created_at, message.resource_id
            if created_at is None or resource_id is None:
                raise ValidationError("messages", f"message {message.id!r} is not a stored message (no created_at)")
            points.append(VectorPoint(message.id, number, vec, message.thread_id, resource_id, to_us(created_at)))
        await _vector_call("save_messages", self.vector.upsert(points))

    async def check_embedder(self) -> None:
        """Refuse an embedder whose vectors would mix with another's in the
        index (points of another dimension are there, or the index of its
        dimension records another embedder: :func:`check_recorded`); reads only.

        Raises:
            EmbedderMismatchError: the message names the embedders, how many
                vectors each holds, and the fix
                (:func:`~memory_core.embedders.dimension_mismatch`).
            BackendError: the vector store failed.
        """
        if self.vector is None or self.embedder is None:
            return
        counts = await self.vector.dimension_counts()
        mismatch = dimension_mismatch(self.embedder, counts)
        if mismatch is not None:
            raise EmbedderMismatchError(mismatch, self.embedder.dimension, counts)
        await check_recorded(self.vector, self.embedder, counts)

    async def check_rebuild(self, thread_id: str | None, resource_id: str | None) -> bool:
        """Refuse to re-embed one scope when the index holds vectors of
        another embedder (another dimension) outside it: they would stay,
        and the index would mix two embedders. A scope holding every such
        vector (the whole index is one resource, or a mixed index repaired
        scope by scope) is re-embedded: it leaves one embedder's. The same
        for an index whose record names another embedder of this dimension
        (:meth:`~memory_core.vector.BaseVectorStore.recorded_embedder`): a
        scope holding every point may be rebuilt, and the record becomes
        this embedder's. Reads only (one count per dimension, the record;
        the scope's points when they differ).

        Returns:
            True when the record names another embedder and the scope holds
            the whole index: the rebuild replaces the record (``claim``).

        Raises:
            EmbedderMismatchError: field ``embedder``; the message
                (:func:`~memory_core.embedders.partial_rebuild`, in
                Python's words) names the embedders and the fix.
            BackendError: the vector store failed.
        """
        if self.vector is None or self.embedder is None:
            return False
        counts = await _vector_call("reindex", self.vector.dimension_counts())
        recorded = None
        if isinstance(self.vector, BaseVectorStore):
            recorded = await _vector_call("reindex", self.vector.recorded_embedder(self.embedder.dimension))
        other = recorded is not None and recorded != self.embedder.name
        if dimension_mismatch(self.embedder, counts) is None and not other:
            return False
        inside = await _vector_call("reindex", self.vector.count_points(resource_id, thread_id))
        if inside < sum(counts.values()):
            scope = f"thread {thread_id!r}" if thread_id is not None else f"resource {resource_id!r}"
            if other and recorded is not None:
                reason = identity_mismatch(self.embedder, recorded)
                raise EmbedderMismatchError(reason, self.embedder.dimension, counts, recorded=recorded)
            reason = partial_rebuild(self.embedder, counts, scope)
            raise EmbedderMismatchError(reason, self.embedder.dimension, counts)
        return other

    async def copy(self, mapping: Mapping[str, str], thread_id: str, resource_id: str) -> None:
        """Give a clone's copies (``mapping``: source message id -> copy id,
        in ``thread_id`` of ``resource_id``) their vectors: the sources'
        points in the embedder's collection are copied inside the vector
        store (:meth:`~memory_core.vector.BaseVectorStore.copy_messages`: the
        store and embedder match when the sources were embedded at the
        embedder's dimension); only the copies whose source has no point
        there (never indexed, another dimension, no text) are read and
        embedded, and all of them when the store cannot copy points."""
        if self.vector is None or self.embedder is None or not mapping:
            return
        copied: set[str] | None = None  # a store that is not a BaseVectorStore cannot copy
        if isinstance(self.vector, BaseVectorStore):
            copy = self.vector.copy_messages(mapping, thread_id, resource_id, self.embedder.dimension)
            copied = await _vector_call("clone_thread", copy)
        rest = [new for old, new in mapping.items() if copied is None or old not in copied]
        if rest:
            await self.index(await self.storage.get_messages(rest))

    async def drop_threads(self, operation: str, thread_ids: Sequence[str]) -> None:
        """Delete every point of these threads (``operation`` names the
        caller in a BackendError)."""
        if self.vector is not None:
            for thread_id in thread_ids:
                await _vector_call(operation, self.vector.delete_thread(thread_id))

    async def drop_resource(self, operation: str, resource_id: str) -> None:
        """Delete every point of this resource, every thread's at once, in
        one :meth:`~memory_core.vector_protocol.VectorStore.delete_resource`
        call (``operation`` as for :meth:`drop_threads`): a store whose
        delete is costly per call (the in-process Qdrant engine rebuilds each
        shard a delete touched) pays once, not once per thread."""
        if self.vector is not None:
            await _vector_call(operation, self.vector.delete_resource(resource_id))

    async def drop_messages(self, operation: str, ids: Sequence[str]) -> None:
        """Delete every point of these messages (``operation`` as for
        :meth:`drop_threads`)."""
        if self.vector is not None and ids:
            await _vector_call(operation, self.vector.delete_messages(list(ids)))

    async def drop_batch(self, batch: PruneBatch) -> None:
        """The prune hook: drop one batch's points after its rows went."""
        if batch.message_ids is None:
            await self.drop_threads("prune", (batch.thread_id,))
        else:
            await self.drop_messages("prune", batch.message_ids)

    async def reindex(self, thread_id: str | None, resource_id: str | None) -> int:
        """Re-embed every message of one thread or one resource (exactly one
        given), replacing the scope's points and lexical documents: those of
        messages storage no longer holds go too. Returns the messages indexed.

        Raises:
            ValidationError: neither or both ids, or a bad one (before any I/O).
            EmbedderMismatchError: the index holds vectors of another
                embedder outside the scope (:meth:`check_rebuild`); nothing
                is written.
            BackendError: a store failed.
        """
        check_one_scope(thread_id, resource_id, "reindex")
        claim = await self.check_rebuild(thread_id, resource_id)
        page = await self._scope(thread_id, resource_id)
        if thread_id is not None:
            await self.drop_threads("reindex", (thread_id,))
        elif resource_id is not None:
            await self.drop_resource("reindex", resource_id)
        await self.index(page.items, claim=claim)
        return len(page.items)

    async def status(self, thread_id: str | None, resource_id: str | None) -> IndexStatus:
        """Compare the index with storage for one thread or one resource
        (reads every message of the scope: a diagnostic).

        Raises:
            ValidationError: neither or both ids, a bad one, or no vector store.
            EmbedderMismatchError: the index holds vectors of another
                dimension (built, wholly or partly, by another embedder)
                (:meth:`check_embedder`).
        """
        check_one_scope(thread_id, resource_id, "check_index")
        if self.vector is None or self.embedder is None:
            raise ValidationError("vector", "Memory has no vector store to check")
        await self.check_embedder()
        listing = await self._scope(thread_id, resource_id)
        if thread_id is not None:
            indexed = await self.vector.count(thread_id=thread_id)
        else:
            indexed = await self.vector.count(resource_id=resource_id)
        documents = None
        if isinstance(self.vector, LexicalIndex) and self.vector.lexical_index:
            documents = await self.vector.count_documents(resource_id=resource_id, thread_id=thread_id)
        embeddable = sum(1 for m in listing.items if chunk_text(message_text(m), self.embedder.max_input_chars))
        return IndexStatus(thread_id, resource_id, listing.counted_total, embeddable, indexed, documents)

    async def unowned(self, statuses: Sequence[IndexStatus]) -> IndexStatus:
        """What the whole index holds beyond ``statuses`` (the status of
        every resource storage holds): the vectors and lexical documents of
        resources storage no longer holds (erased through storage alone),
        which no per-resource check sees. Counts only (two whole-store
        counts); ``thread_id`` and ``resource_id`` are None, ``stored`` 0,
        so :attr:`IndexStatus.orphaned` is what is left over.

        Raises:
            BackendError: the vector store failed.
        """
        if self.vector is None:
            return IndexStatus(None, None, 0, 0, 0)
        indexed = await _vector_call("check_index", self.vector.count()) - sum(s.indexed for s in statuses)
        documents = None
        if isinstance(self.vector, LexicalIndex) and self.vector.lexical_index:
            total = await _vector_call("check_index", self.vector.count_documents())
            documents = total - sum(s.documents or 0 for s in statuses)
        return IndexStatus(None, None, 0, 0, indexed, documents)

    async def foreign_entries(self, batch: int = 500) -> int:
        """How many messages the index holds entries for when storage holds
        none of them (probably another store's index: a ``--vector`` naming
        the wrong folder or collection), else 0. An index that shares even
        one message id with storage, or holds nothing, is this store's; a
        store whose every indexed message was deleted through storage alone
        looks foreign too. Reads the index's message ids, then storage in
        batches of ``batch`` ids until one is found (at once for an index in
        use); 0 for a vector store that cannot list its ids.

        Raises:
            BackendError: a store failed.
        """
        held = sorted(await self.indexed_owners("check_index"))
        for start in range(0, len(held), batch):
            if await self.storage.get_messages(held[start : start + batch]):
                return 0
        return len(held)

    async def indexed_owners(self, operation: str) -> dict[str, str | None]:
        """Every message the index holds an entry of (a vector or a lexical
        document, text-less messages' documents included), with its
        resource id where the store's lexical index tells it (None where
        only a vector does); ``{}`` for a vector store that cannot list its
        ids. ``operation`` names the caller in a BackendError.

        Raises:
            BackendError: the vector store failed.
        """
        if not isinstance(self.vector, BaseVectorStore):
            return {}
        owners: dict[str, str | None] = dict.fromkeys(await _vector_call(operation, self.vector.message_ids()))
        if self.vector.lexical_index:
            owners.update(await _vector_call(operation, self.vector.document_ids()))
        return owners

    async def unowned_resources(self, held: Sequence[str]) -> list[str]:
        """The resources, sorted, whose index entries no resource of
        storage owns: those the lexical index names besides ``held`` (the
        resource ids storage holds), i.e. resources erased or pruned
        through storage alone, which ``memory-core erase --resource ID
        --vector URL`` removes from the index. ``[]`` for a store without a
        lexical index (its vectors' payloads are not listed by resource).

        Raises:
            BackendError: the vector store failed.
        """
        owners = await self.indexed_owners("check_index")
        return sorted({r for r in owners.values() if r is not None} - set(held))

    async def drop_unowned(self, batch: int = 500) -> int:
        """Drop the vectors and lexical documents of every message storage
        no longer holds, store-wide (the whole-store reindex's last step:
        resources erased through storage alone leave them, and no
        per-resource reindex reaches them), text-less messages' documents
        included (:meth:`indexed_owners`). Reads every message id the
        index holds, then storage in batches of ``batch`` ids. Returns how
        many messages' entries were dropped.

        Raises:
            BackendError: a store failed.
        """
        if self.vector is None:
            return 0
        held = sorted(await self.indexed_owners("reindex"))
        gone: list[str] = []
        for start in range(0, len(held), batch):
            ids = held[start : start + batch]
            found = {m.id for m in await self.storage.get_messages(ids)}
            gone += [i for i in ids if i not in found]
        if gone:
            await _vector_call("reindex", self.vector.delete_messages(gone))
        return len(gone)

    async def _scope(self, thread_id: str | None, resource_id: str | None) -> Page[Message]:
        if thread_id is not None:
            return await self.storage.list_messages(thread_id, per_page=False)
        if resource_id is None:  # check_one_scope refused this; narrows the type
            raise ValidationError("resource_id", "give exactly one of thread_id or resource_id")
        return await self.storage.list_messages_by_resource(resource_id, per_page=False)


async def check_recorded(vector: VectorStore, embedder: Embedder, counts: Mapping[int, int] | None = None) -> None:
    """Refuse ``embedder`` for an index whose record names another embedder
    of its dimension (:meth:`~memory_core.vector.BaseVectorStore.recorded_embedder`):
    same-dimension vectors of another space, which a search with it
    would rank as nonsense and a write would mix with. Reads only; an
    index with no record (written before records existed, or never
    written; the next write records it) and a store that is not a
    :class:`~memory_core.vector.BaseVectorStore` pass.

    Args:
        vector: the vector store.
        embedder: the embedder a write or search would use.
        counts: points per dimension, when the caller has read them (for
            :attr:`~memory_core.errors.EmbedderMismatchError.counts`).

    Raises:
        EmbedderMismatchError: field ``embedder``; ``recorded`` the other
            embedder's name; the message names both and the fix
            (:func:`~memory_core.embedders.identity_mismatch`).
        BackendError: the vector store failed.
    """
    if not isinstance(vector, BaseVectorStore):
        return
    recorded = await vector.recorded_embedder(embedder.dimension)
    if recorded is not None and recorded != embedder.name:
        reason = identity_mismatch(embedder, recorded)
        raise EmbedderMismatchError(reason, embedder.dimension, dict(counts or {}), recorded=recorded)


async def _vector_call(operation: str, call: Awaitable[T]) -> T:
    """Await a vector-store call (its answer), its failure a BackendError naming ``operation``."""
    try:
        return await call
    except BackendError:
        raise
    except Exception as exc:
        raise BackendError("vector", operation, f"{type(exc).__name__}: {exc}", original=exc) from exc

"""The vector-index calls of :class:`~memory_core.memory.Memory`: waiting
for paired writes in flight, the embedder a Memory given none settles on
(the one that built its index), the check before the first write of
vectors, and ``check_index``/``reindex``; a base class of ``Memory``, as
:class:`~memory_core.clones.CloneCalls` is."""

from __future__ import annotations

import logging
from dataclasses import replace

from memory_core.embedders import Embedder, embedder_of_index
from memory_core.indexing import IndexStatus, VectorIndex
from memory_core.outbox import Outbox, paired
from memory_core.recall import Recaller
from memory_core.storage import Storage
from memory_core.telemetry import traced
from memory_core.vector import VectorStore

__all__ = ["IndexCalls"]

log = logging.getLogger("memory_core")


class IndexCalls:
    """Vector-index calls of :class:`~memory_core.memory.Memory` (a base
    class of it, sharing its stores, embedder, recaller and outbox)."""

    storage: Storage
    vector: VectorStore | None
    embedder: Embedder | None
    _outbox: Outbox
    _recaller: Recaller
    _embedder_settled: bool
    _embedder_fits: bool

    @property
    def _vectors(self) -> VectorIndex:
        """The vector index over this Memory's stores (a no-op without vectors)."""
        return VectorIndex(self.storage, self.vector, self.embedder)

    async def wait_for_writes(self) -> None:
        """Wait until this event loop's paired writes in flight have
        finished: a write whose caller was cancelled completes in the
        background (see the class docstring), and a read of
        :attr:`storage` after this sees it. Recall, ``check_index`` and
        every write wait by themselves; the framework seams call this before
        they read :attr:`storage` directly. The writes' errors belong to
        their callers (logged), never raised here; cancelling the wait
        leaves the writes running."""
        await self._outbox.settle()

    async def _check_embedder(self) -> None:
        """Before this Memory's first write of vectors: refuse an index that
        holds another embedder's (EmbedderMismatchError, nothing written).
        Checked once per Memory, at the cost of one count per dimension;
        :meth:`reindex` checks its own rule (a scope holding every vector of
        another embedder may be re-embedded: it is the fix)."""
        if not self._embedder_fits:
            await self._settle_embedder()
            await self._vectors.check_embedder()
            self._embedder_fits = True
            if self.embedder is not None:  # the record was checked: recall need not again
                self._recaller.checked.add(self.embedder.name)

    async def _settle_embedder(self) -> None:
        """With no embedder given, use the built-in one whose vectors the
        index holds (:func:`~memory_core.embedders.embedder_of_index`) instead
        of the default, once, before the first recall or write: the default
        changes when MiniLM is installed, the index's embedder does not."""
        if self._embedder_settled or self.vector is None:
            return
        found = embedder_of_index(await self.vector.dimension_counts())
        if found is not None and self.embedder is not None and found.dimension != self.embedder.dimension:
            log.info("the vector index was built by %r: using it (pass embedder= to choose)", found.name)
            self.embedder = found
            self._recaller = replace(self._recaller, embedder=found)
        self._embedder_settled = True

    @traced("update_memory")
    @paired
    async def reindex(self, *, thread_id: str | None = None, resource_id: str | None = None) -> int:
        """Re-embed every message of one thread or one resource, replacing the
        scope's vectors (and lexical documents), those of messages storage no
        longer holds included: the repair path after a failed vector write or
        a prune without the vector store. Returns the number of messages
        indexed.

        With an embedder other than the one that built the index (vectors
        of another dimension), only a scope holding every such vector is
        re-embedded (the index is left one embedder's); otherwise the call
        is refused before anything is written: build a new index with this
        embedder instead (a Memory over a new vector store, then this call
        for each resource).

        Raises:
            ValidationError: neither or both of ``thread_id``/``resource_id``,
                or a bad id (before any I/O).
            EmbedderMismatchError: field ``embedder``: the index holds
                vectors of another embedder outside the scope; nothing is
                written.
        """
        await self._settle_embedder()  # with none given: the index's own, as every write
        return await self._vectors.reindex(thread_id, resource_id)

    async def check_index(self, *, thread_id: str | None = None, resource_id: str | None = None) -> IndexStatus:
        """Compare the vector index with storage for one thread or one resource.

        Reads every message of the scope (a diagnostic, not for each turn) and
        counts the vectors of the scope.

        Returns:
            :class:`IndexStatus`; ``behind`` is True when the index holds
            fewer vectors than storage has messages with text, or (a store
            with a lexical index) fewer lexical documents than messages;
            ``orphaned`` counts messages gone from storage whose vectors or
            documents remain (say after ``prune`` without the vector store);
            ``in_step`` is True when neither (repair: :meth:`reindex` with
            the same argument).

        Raises:
            ValidationError: neither or both of ``thread_id``/``resource_id``;
                Memory has no vector store.
            EmbedderMismatchError: the index holds vectors of another
                embedder (another dimension), mixed with this one's or not.
        """
        await self._outbox.settle()
        await self._settle_embedder()
        return await self._vectors.status(thread_id, resource_id)

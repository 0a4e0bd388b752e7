"""Re-embedding what a transfer wrote: the per-resource hook that
``memory-core import --vector`` and ``copy --vector`` hand to
:func:`~memory_core.transfer.import_lines` (``on_resource``).

A transfer re-embeds only into a persistent vector store. Re-embedding is
the slow part of an import, and its only effect is the index it leaves
behind; into a store whose points go when it closes (``memory://``,
``qdrant::memory:``: :attr:`~memory_core.vector.VectorStore.persistent` is
False) the command would run to the end and leave nothing. An operator who
names a vector store expects an index afterwards, so this is refused before
any I/O rather than warned about among the progress output; a test that
wants vectors in memory calls :meth:`memory_core.Memory.reindex` itself.
"""

from __future__ import annotations

from memory_core.arguments import check_persistent
from memory_core.embedders import Embedder, dimension_mismatch, identity_mismatch
from memory_core.errors import ValidationError
from memory_core.memory import Memory
from memory_core.storage import Storage
from memory_core.vector import BaseVectorStore, VectorStore

__all__ = [
    "Reembedder",
    "check_fits",
    "check_persistent",
    "reembedder",
]  # check_persistent: memory_core.arguments's, re-exported


class Reembedder:
    """The ``on_resource`` hook :func:`reembedder` returns: ``await
    hook(resource_id)`` re-embeds a resource; :meth:`settle` waits for a
    re-embedding whose caller was cancelled (a Ctrl-C) to finish before the
    stores close."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory

    async def __call__(self, resource: str) -> None:
        await self._memory.reindex(resource_id=resource)

    @property
    def embedder(self) -> Embedder:
        """The embedder it re-embeds with: the one given, else (once a
        resource was re-embedded) the built-in one the index shows, else
        the default (:meth:`memory_core.Memory.reindex` settles it)."""
        model = self._memory.embedder
        if model is None:  # Memory always has one when it has a vector store, as here
            raise ValidationError("embedder", "a re-embedding Memory has no embedder")
        return model

    async def settle(self) -> None:
        """Wait for the re-embedding in flight (:meth:`Memory.wait_for_writes`):
        a command interrupted mid-resource lets it finish, so closing the
        stores never cuts a write (no "store is closed" errors from it)."""
        await self._memory.wait_for_writes()


def reembedder(
    storage: Storage, vectors: VectorStore, field: str = "vector", embedder: Embedder | None = None
) -> Reembedder:
    """The ``on_resource`` hook that embeds every message of a resource of
    ``storage`` again into ``vectors`` (:meth:`memory_core.Memory.reindex`;
    the stores are not closed by it).

    Args:
        storage: the store the transfer writes into.
        vectors: a persistent vector store (see the module docstring).
        field: the name given in the error.
        embedder: the embedder; None: as Memory settles it, the built-in
            one the index shows (:func:`memory_core.embedders.embedder_of_index`),
            else the default (:func:`memory_core.embedders.default_embedder`:
            MiniLM when installed, else lexical). It must be the one the application
            recalls with: vectors of another model (or dimension) are never
            found by its queries.

    Returns:
        ``async hook(resource_id)``, a :class:`Reembedder` (its
        :meth:`~Reembedder.settle` before the stores close).

    Raises:
        ValidationError: ``vectors`` is not persistent (:func:`check_persistent`),
            before any I/O.
    """
    check_persistent(vectors, field)
    return Reembedder(Memory(storage, vectors, embedder, owns_stores=False))


async def check_fits(vectors: VectorStore, embedder: Embedder, field: str = "--embedder") -> None:
    """Refuse to re-embed into an index built by an embedder of another
    dimension (:func:`~memory_core.embedders.dimension_mismatch`), or
    recording another embedder of this dimension
    (:func:`~memory_core.embedders.identity_mismatch`): the
    application's recalls would find the old vectors or the new ones, never
    both. Reads the opened store's dimensions; writes nothing.

    Raises:
        ValidationError: field ``field``; the message names both embedders
            and the fixes, in the command line's words when ``field`` is an
            option (``--embedder``), else in Python's.
    """
    command_line = field.startswith("--")
    mismatch = dimension_mismatch(embedder, await vectors.dimension_counts(), command_line=command_line)
    if mismatch is None and isinstance(vectors, BaseVectorStore):
        recorded = await vectors.recorded_embedder(embedder.dimension)
        if recorded is not None and recorded != embedder.name:
            mismatch = identity_mismatch(embedder, recorded, command_line=command_line)
    if mismatch is not None:
        raise ValidationError(field, mismatch)

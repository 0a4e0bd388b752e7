"""memory-core vector store on Qdrant (semantic recall, rule R-VEC).

Two stores implement the primitives of the core's
:class:`memory_core.vector.BaseVectorStore` (which owns the life cycle,
validation, batching, over-fetch and de-duplication):

- :class:`QdrantEdgeStore`: Qdrant's engine in-process (qdrant-edge-py),
  ``qdrant::memory:`` (a temporary directory: the embedded default) or
  ``qdrant+path:///relative/dir`` / ``qdrant+path:////absolute/dir``;
- :class:`QdrantServerStore`: a Qdrant server through qdrant-client's
  ``AsyncQdrantClient``, ``qdrant://host:6333`` / ``qdrant+https://host:6333``
  (or any ``AsyncQdrantClient`` passed as ``client=``).

Both are registered under the entry-point group ``memory_core.vector``, so
``await memory_core.connect_vector(url)`` finds them: ``qdrant+path`` opens
the engine, ``qdrant+http``/``qdrant+https`` a server, and ``qdrant`` (used
by both ``qdrant::memory:`` and ``qdrant://host``) goes through this
package's :func:`from_url`. Every mode stores the same collections
(``memory_messages_<dim>``, cosine), point ids and payloads; see the package
README.
"""

from __future__ import annotations

from typing import Any

from memory_core_qdrant._layout import INDEXED_FIELDS, TENANT_FIELD
from memory_core_qdrant._url import MEMORY, parse_url
from memory_core_qdrant.edge import QdrantEdgeStore
from memory_core_qdrant.server import QdrantServerStore

__all__ = [
    "INDEXED_FIELDS",
    "MEMORY",
    "TENANT_FIELD",
    "QdrantEdgeStore",
    "QdrantServerStore",
    "from_url",
    "parse_url",
]


def from_url(
    url: str, *, clock: Any = None, namespace: str | None = None, **options: Any
) -> QdrantEdgeStore | QdrantServerStore:
    """Build the store a ``qdrant`` URL names (no I/O): the engine for
    ``qdrant::memory:`` and ``qdrant+path:``, a server client for
    ``qdrant://``, ``qdrant+http://`` and ``qdrant+https://``.

    This is the ``qdrant`` scheme's entry point (the registry calls
    ``from_url`` on what the entry point names: this module).

    Args:
        url: any URL of :func:`parse_url`.
        clock: accepted for the registry's signature; unused.
        namespace: collection-name prefix.
        **options: the chosen class's options (see its ``from_url``).

    Returns:
        A :class:`QdrantEdgeStore` or :class:`QdrantServerStore`, unopened.

    Raises:
        ValidationError: a malformed URL, an unknown option or a bad value.
    """
    store = QdrantEdgeStore if parse_url(url).mode == "edge" else QdrantServerStore
    return store.from_url(url, clock=clock, namespace=namespace, **options)

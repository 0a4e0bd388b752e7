"""memory-core vector store on Qdrant (semantic recall, rule R-VEC).

Registered under the entry-point group ``memory_core.vector``, so
``await memory_core.connect_vector(url)`` finds it:

- ``qdrant::memory:``: Qdrant's engine in-process (qdrant-edge-py), in a
  temporary directory: the embedded default;
- ``qdrant+path:///relative/dir`` / ``qdrant+path:////absolute/dir``: the
  same engine, persisted in that directory;
- ``qdrant://host:6333``, ``qdrant+https://host:6333``: a Qdrant server
  through qdrant-client's ``AsyncQdrantClient``.

Every mode stores the same collections (``memory_messages_<dim>``, cosine),
point ids and payloads; see the package README.
"""

from memory_core_qdrant._url import MEMORY, parse_url
from memory_core_qdrant.base import INDEXED_FIELDS, PAYLOAD_FIELDS, PointFilter, QdrantVectorStore, RawHit
from memory_core_qdrant.edge import QdrantEdgeStore
from memory_core_qdrant.server import QdrantServerStore

__all__ = [
    "INDEXED_FIELDS",
    "MEMORY",
    "PAYLOAD_FIELDS",
    "PointFilter",
    "QdrantEdgeStore",
    "QdrantServerStore",
    "QdrantVectorStore",
    "RawHit",
    "parse_url",
]

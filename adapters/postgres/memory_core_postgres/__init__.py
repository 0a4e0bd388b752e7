"""memory-core-postgres: the PostgreSQL storage adapter of memory-core, and a
pgvector vector store.

``memory_core.connect("postgresql://user@host/db")`` finds
:class:`PostgresStorage` and ``memory_core.connect_vector`` with the same URL
finds :class:`PgVectorStore`, through the ``memory_core.storage`` /
``memory_core.vector`` entry points (schemes ``postgresql`` and
``postgres``). See README.md for URLs, options, the schema and scale-out.
"""

from memory_core_postgres.storage import PostgresStorage
from memory_core_postgres.vector import PgVectorStore

__all__ = ["PgVectorStore", "PostgresStorage"]

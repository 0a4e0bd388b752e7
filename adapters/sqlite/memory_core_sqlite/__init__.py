"""memory-core-sqlite: the SQLite storage adapter of memory-core.

``memory_core.connect("sqlite:///memory.db")`` finds :class:`SQLiteStorage`
through the ``memory_core.storage`` entry point; it can also be built
directly. See README.md for URLs, options and the schema.
"""

from memory_core_sqlite.storage import SQLiteStorage

__all__ = ["SQLiteStorage"]

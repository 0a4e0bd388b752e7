"""memory-core storage adapter for MongoDB (``mongodb://``, ``mongodb+srv://``).

Registered under the entry-point group ``memory_core.storage``, so
``await memory_core.connect("mongodb://localhost:27017/app")`` finds it.
See the package README for the document layout, indexes, shard keys and
how batches stay atomic.
"""

from memory_core_mongodb._url import DEFAULT_DATABASE, database_name
from memory_core_mongodb.storage import MongoStorage, supports_transactions

__all__ = ["DEFAULT_DATABASE", "MongoStorage", "database_name", "supports_transactions"]

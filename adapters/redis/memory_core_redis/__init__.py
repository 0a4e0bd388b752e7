"""memory-core storage on Redis / Valkey (standalone or Cluster).

Register: entry points ``redis``, ``rediss``, ``unix``, ``redis+cluster`` and
``rediss+cluster`` in group ``memory_core.storage`` all name
:class:`RedisStorage`, so ``memory_core.connect("redis://…")`` finds it.
"""

from memory_core_redis.storage import RedisStorage

__all__ = ["RedisStorage"]

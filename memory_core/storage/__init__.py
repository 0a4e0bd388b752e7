"""The storage contract: a Protocol for callers and a base class for adapters.

Adapters implement primitives; the core composes semantics. One module per
concern:

- :mod:`~memory_core.storage.protocol`: :class:`Storage`, what callers
  (``Memory``, integrations, the CLI) type against;
- :mod:`~memory_core.storage.contract`: :class:`AdapterContract`, every
  method an adapter writes, in one block (one plan read, conditional
  writes, erasure);
- :mod:`~memory_core.storage.lifecycle`: open once across threads and
  loops, close, destroy, preflight, the guard and the optimistic-write
  retry loop;
- :mod:`~memory_core.storage.paging`: the public reads, paging and cursors
  (R-PAGE, R-CURSOR, R-INCLUDE);
- :mod:`~memory_core.storage.parts`: :class:`MessageParts`, a page before
  its include windows are merged, and the merge;
- :mod:`~memory_core.storage.decisions`: the pure checks of a save or an
  update (:data:`SaveDecision`, :data:`PatchDecision`);
- :mod:`~memory_core.storage.writes`: the public writes;
- :mod:`~memory_core.storage.working_memory`: working memory, the storage
  side (swaps, checked writes);
- :mod:`~memory_core.storage.erasure`: deleting threads and resources,
  retention pruning;
- :mod:`~memory_core.storage.base`: :class:`BaseStorage`, those concerns
  assembled: what an adapter subclasses;
- :mod:`~memory_core.storage.composed`: :class:`ComposedStorage`, the
  contract built from small queries, for authors who prefer writing those.

Every name below imports from ``memory_core.storage`` as before the split.
"""

from __future__ import annotations

from memory_core.storage.base import BaseStorage
from memory_core.storage.composed import CONCURRENT_READS, ComposedStorage
from memory_core.storage.contract import AdapterContract
from memory_core.storage.decisions import PatchDecision, SaveDecision
from memory_core.storage.lifecycle import foreign_data, listed, no_store
from memory_core.storage.paging import MESSAGE_ORDER_DEFAULT, WINDOW_SIDE_MAX, message_key
from memory_core.storage.parts import MessageParts, order_key
from memory_core.storage.protocol import Storage

__all__ = [
    "CONCURRENT_READS",
    "MESSAGE_ORDER_DEFAULT",
    "WINDOW_SIDE_MAX",
    "AdapterContract",
    "BaseStorage",
    "ComposedStorage",
    "MessageParts",
    "PatchDecision",
    "SaveDecision",
    "Storage",
    "foreign_data",
    "listed",
    "message_key",
    "no_store",
    "order_key",
]

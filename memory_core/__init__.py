"""memory-core: one async storage API for agent conversation memory.

Threads, messages, resources with working memory and semantic recall, over
interchangeable backends that behave exactly alike (SPEC.md). Start with
:func:`connect` and :class:`Memory`.
"""

from memory_core.clock import Clock, ManualClock, SystemClock, system_clock
from memory_core.errors import (
    AdapterClosedError,
    BackendError,
    ConflictError,
    MemoryCoreError,
    NotFoundError,
    OwnershipError,
    ValidationError,
)
from memory_core.ids import new_message_id
from memory_core.memory import Memory, MemoryConfig, SemanticRecall, WorkingMemory
from memory_core.models import (
    DateRange,
    Include,
    Message,
    MessageFilter,
    OrderBy,
    Page,
    RecallResult,
    Resource,
    ResourceErasure,
    Thread,
    ThreadFilter,
    WorkingMemoryState,
)
from memory_core.query import NOT_GIVEN
from memory_core.reference import InMemoryStorage
from memory_core.registry import connect, connect_vector, register_storage, register_vector
from memory_core.storage import BaseStorage, Storage

__all__ = [
    "NOT_GIVEN",
    "AdapterClosedError",
    "BackendError",
    "BaseStorage",
    "Clock",
    "ConflictError",
    "DateRange",
    "InMemoryStorage",
    "Include",
    "Memory",
    "MemoryConfig",
    "ManualClock",
    "MemoryCoreError",
    "Message",
    "MessageFilter",
    "NotFoundError",
    "OrderBy",
    "OwnershipError",
    "Page",
    "RecallResult",
    "Resource",
    "ResourceErasure",
    "SemanticRecall",
    "Storage",
    "SystemClock",
    "Thread",
    "ThreadFilter",
    "ValidationError",
    "WorkingMemory",
    "WorkingMemoryState",
    "connect",
    "connect_vector",
    "new_message_id",
    "register_storage",
    "register_vector",
    "system_clock",
]

"""memory-core: one async storage API for agent conversation memory.

Threads, messages, resources with working memory and semantic recall, over
interchangeable backends that behave exactly alike (the rules in
``memory_core_conformance.rules``). Start with
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
from memory_core.memory import IndexStatus, Memory, MemoryConfig, SemanticRecall, WorkingMemory
from memory_core.models import (
    DateRange,
    Include,
    Message,
    MessageFilter,
    MessagePageRequest,
    OrderBy,
    Page,
    RecallResult,
    RecallSource,
    Resource,
    ResourceErasure,
    Thread,
    ThreadFilter,
    WorkingMemoryState,
)
from memory_core.query import NOT_GIVEN
from memory_core.reference import InMemoryStorage
from memory_core.reference_vector import InMemoryVectorStore
from memory_core.registry import connect, connect_vector, register_storage, register_vector
from memory_core.retention import PruneReport, RetentionPolicy
from memory_core.storage import BaseStorage, Storage
from memory_core.tokens import EstimateTokenCounter, TokenCounter
from memory_core.vector import BaseVectorStore, VectorStore

__all__ = [
    "NOT_GIVEN",
    "AdapterClosedError",
    "BackendError",
    "BaseStorage",
    "BaseVectorStore",
    "Clock",
    "ConflictError",
    "DateRange",
    "EstimateTokenCounter",
    "InMemoryStorage",
    "InMemoryVectorStore",
    "Include",
    "IndexStatus",
    "Memory",
    "MemoryConfig",
    "ManualClock",
    "MemoryCoreError",
    "Message",
    "MessageFilter",
    "MessagePageRequest",
    "NotFoundError",
    "OrderBy",
    "OwnershipError",
    "Page",
    "PruneReport",
    "RecallResult",
    "RecallSource",
    "Resource",
    "ResourceErasure",
    "RetentionPolicy",
    "SemanticRecall",
    "Storage",
    "SystemClock",
    "Thread",
    "ThreadFilter",
    "TokenCounter",
    "ValidationError",
    "VectorStore",
    "WorkingMemory",
    "WorkingMemoryState",
    "connect",
    "connect_vector",
    "new_message_id",
    "register_storage",
    "register_vector",
    "system_clock",
]

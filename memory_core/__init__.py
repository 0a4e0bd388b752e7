"""memory-core: one async storage API for agent conversation memory.

Threads, messages, resources with working memory and semantic recall, over
interchangeable backends that behave exactly alike (the rules in
``memory_core_conformance.rules``). Start with
``await Memory.open(url, vector=url)`` (:class:`Memory`), or :func:`connect`
and ``Memory(storage, vector)``.

Where each part lives (one responsibility per module):

- records and errors: :mod:`~memory_core.models` (Thread, Message,
  Resource, filters, pages), :mod:`~memory_core.errors` (the error tree),
  :mod:`~memory_core.validation` (every public input, checked once: what
  is written; it re-exports :mod:`~memory_core.value_checks`, single values,
  and :mod:`~memory_core.query_checks`, read requests and recall),
  :mod:`~memory_core.options` (adapter URL options, a store's folder),
  :mod:`~memory_core.query` (normalised queries for adapters),
  :mod:`~memory_core.cursor`, :mod:`~memory_core.ids`,
  :mod:`~memory_core.clock`, :mod:`~memory_core.codec`,
  :mod:`~memory_core.capabilities`, :mod:`~memory_core.builders` (records
  built from stored rows);
- storage: :mod:`~memory_core.storage` (the Protocol callers use and
  ``BaseStorage``, which adapters subclass), :mod:`~memory_core.plan` (read
  plans), :mod:`~memory_core.reference` (the reference store,
  ``memory://``), :mod:`~memory_core.registry` (URL scheme to adapter,
  :func:`connect`), :mod:`~memory_core.opening` (the awaitable
  ``connect`` and ``Memory.open`` return, refusing ``async with``), :mod:`~memory_core.identity` (whether two stores are
  one), :mod:`~memory_core.loops` (a connection per event loop, so a store
  works from any thread and loop);
- vectors: :mod:`~memory_core.vector` (contract and ``BaseVectorStore``),
  :mod:`~memory_core.vector_lifecycle` (its open/close, preflight and
  collection names),
  :mod:`~memory_core.vector_layout` (what is embedded and where, R-VEC),
  :mod:`~memory_core.vector_points` (points and hits),
  :mod:`~memory_core.vector_protocol` (the VectorStore Protocol),
  :mod:`~memory_core.lexical_index` (the lexical index beside the vectors),
  :mod:`~memory_core.inverted_index` (a lexical index in dicts),
  :mod:`~memory_core.vector_checks` (namespaces and vectors checked),
  :mod:`~memory_core.reference_vector` (``memory://`` vectors),
  :mod:`~memory_core.embedders` and :mod:`~memory_core.minilm` (text to
  vectors);
- composition: :mod:`~memory_core.memory` (the :class:`Memory` facade;
  ``Memory.open(url, vector=url)``), :mod:`~memory_core.config`
  (:class:`MemoryConfig`, :class:`SemanticRecall`), :mod:`~memory_core.recall`
  (recall composition), :mod:`~memory_core.hybrid` and
  :mod:`~memory_core.lexical` (lexical and hybrid ranking: BM25, fusion),
  :mod:`~memory_core.working_memory` (working memory:
  settings, reads, writes), :mod:`~memory_core.threads` (create,
  titles), :mod:`~memory_core.lineage` (clones, branches and their
  lineage; :mod:`~memory_core.clones` the Memory calls),
  :mod:`~memory_core.indexing` (the vector index kept in step with
  storage; :mod:`~memory_core.index_calls` the Memory calls: waiting for
  writes in flight, the embedder, ``check_index``, ``reindex``),
  :mod:`~memory_core.outbox` (paired storage-and-vector writes
  carried out whole under cancellation), :mod:`~memory_core.arguments`
  (the stores, embedder and Memory handed to constructors, checked; the
  persistence pairing rule), :mod:`~memory_core.tokens` (token budgets),
  :mod:`~memory_core.chat` (agent message shapes),
  :mod:`~memory_core.workmem` (working memory versions and the storage's
  checked writes),
  :mod:`~memory_core.retention` (prune, R-PRUNE),
  :mod:`~memory_core.retry` (the one retry policy and the test fault points),
  :mod:`~memory_core.transfer` (export, import, copy),
  :mod:`~memory_core.json_text` (why user-given JSON is unreadable: truncated, not UTF-8),
  :mod:`~memory_core.wording` (counts and lists in words for command lines),
  :mod:`~memory_core.telemetry` (OpenTelemetry spans),
  :mod:`~memory_core.integrations` (agent frameworks);
- tools: :mod:`~memory_core.cli` (the ``memory-core`` command host and
  ``demo``; ``prune``, ``export``, ``import``, ``copy`` are its command
  modules, ``check`` lives in ``memory_core_conformance`` and ``bench`` in
  ``memory_core_bench``; :mod:`~memory_core.launch`, what the command
  line does first), :mod:`~memory_core.testing` (test support).

Storage adapters are separate distributions (``memory_core_sqlite``,
``memory_core_redis``, ``memory_core_mongodb``, ``memory_core_postgres``;
vectors: ``memory_core_qdrant``, pgvector in ``memory_core_postgres``).
"""

# ruff: noqa: E402

# First, for its effect: a Ctrl-C while the command line imports is one line, not a traceback
# (memory_core.launch). SIGINT is held back while that module itself loads (finding, compiling
# it: a millisecond or more), then delivered to the handler it installed. Hence code before the
# imports below (E402). (_signal: the C module under signal, loaded with the interpreter.)
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
else:
    import _signal

_held = _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT}) if hasattr(_signal, "pthread_sigmask") else None
try:
    import memory_core.launch  # noqa: F401
finally:
    if _held is not None:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, _held)
del _held, _signal, TYPE_CHECKING
from memory_core.clock import Clock, ManualClock, SystemClock, system_clock
from memory_core.errors import (
    AdapterClosedError,
    AwaitError,
    BackendError,
    BarePathError,
    ConflictError,
    EmbedderMismatchError,
    MemoryCoreError,
    MissingFolderError,
    NotAListError,
    NotFoundError,
    OwnershipError,
    URLKindError,
    ValidationError,
)
from memory_core.ids import new_message_id
from memory_core.memory import IndexStatus, Memory, MemoryConfig, SemanticRecall, WorkingMemory
from memory_core.models import (
    DateRange,
    IdPage,
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
    "AwaitError",
    "BackendError",
    "BarePathError",
    "BaseStorage",
    "BaseVectorStore",
    "Clock",
    "ConflictError",
    "DateRange",
    "EmbedderMismatchError",
    "MissingFolderError",
    "NotAListError",
    "IdPage",
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
    "URLKindError",
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

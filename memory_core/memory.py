"""The ``Memory`` facade: threads, messages, recall and working memory.

``Memory`` composes a storage (any :class:`~memory_core.storage.Storage`)
with an optional vector store and embedder for semantic recall (R-RECALL,
R-VEC).
It follows the public Mastra memory API (``recall()``, ``listThreads()``),
with snake_case names.
"""

from __future__ import annotations

import itertools
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from types import TracebackType
from typing import Any, Literal, Self, TypeVar

from memory_core import codec
from memory_core.arguments import check_embedder, check_pairing, check_storage, check_vector_store
from memory_core.builders import builder
from memory_core.clock import to_us
from memory_core.embedders import Embedder, default_embedder
from memory_core.errors import BackendError, ConflictError, NotFoundError, OwnershipError, ValidationError
from memory_core.hybrid import SEARCH_MODES, SearchMode, search_ids
from memory_core.ids import new_message_id
from memory_core.models import (
    DateRange,
    Include,
    Message,
    MessageFilter,
    MessagePageRequest,
    OrderBy,
    Page,
    PerPage,
    RecallResult,
    RecallSource,
    ResourceErasure,
    Thread,
    ThreadFilter,
    WorkingMemoryState,
)
from memory_core.query import NOT_GIVEN
from memory_core.retention import PruneBatch, PruneReport, RetentionPolicy
from memory_core.storage import WINDOW_SIDE_MAX, MessageParts, Storage, order_key
from memory_core.telemetry import traced
from memory_core.tokens import EstimateTokenCounter, TokenCounter, check_token_counter, newest_within
from memory_core.validation import (
    MAX_ID_LENGTH,
    MAX_PER_PAGE,
    MAX_TOP_K,
    CheckedMessages,
    check_bool,
    check_date_range,
    check_id,
    check_includes,
    check_json_object,
    check_json_value,
    check_message,
    check_min_score,
    check_non_negative_int,
    check_per_page,
    check_search_text,
    check_text,
    coerce_model,
)
from memory_core.vector import VectorPoint, VectorStore, chunk_text, message_text
from memory_core.workmem import Scope, check_version, thread_memory, working_memory_version

__all__ = [
    "APPEND_ATTEMPTS",
    "MAX_CLONE_ID_LENGTH",
    "IndexStatus",
    "Memory",
    "MemoryConfig",
    "SemanticRecall",
    "TitleGenerator",
    "WorkingMemory",
    "working_memory_version",
]

log = logging.getLogger("memory_core")

TitleGenerator = Callable[[Thread, list[Message]], Awaitable[str]]
"""``async (thread, new_messages) -> title``: called once a thread with an
empty title receives its first user message."""

MAX_CLONE_ID_LENGTH = MAX_ID_LENGTH - 33
"""The longest ``new_id`` :meth:`Memory.clone_thread` accepts (223): copies are
named ``<new_id>:<32 hex digits>`` and must fit R-ID's 256 characters."""

APPEND_ATTEMPTS = 100
"""Compare-and-set rounds :meth:`Memory.append_working_memory` tries before
giving up with a ConflictError: each round one of the racing writers wins, so
100 concurrent appends to one working memory all land."""

_SCOPES = ("resource", "thread")
# recall builds these once per call from checked values: builders skip the
# frozen dataclass __init__'s object.__setattr__ per field (positional, in field order).
_new_request: Callable[..., MessagePageRequest] = builder(MessagePageRequest)
_new_result: Callable[..., RecallResult] = builder(RecallResult)
_RANGE_KEYS = frozenset({"before", "after"})
_TURN_KEYS = frozenset({"role", "content", "metadata", "type", "id", "created_at", "createdAt"})


@dataclass(frozen=True, slots=True)
class SemanticRecall:
    """Semantic recall settings (R-RECALL step 4).

    Attributes:
        top_k: vector hits to fetch, 1 to
            :data:`~memory_core.validation.MAX_TOP_K` (1000). Default 4.
        message_range: messages of context around each hit (ints from 0 to
            2**63-1): an int for both sides, ``(before, after)`` (a list is
            accepted too) or Mastra's ``{"before": n, "after": m}`` (a missing
            side is 0; other keys are an error). Stored as an int or a tuple.
            Default 2.
        scope: ``"resource"`` searches every thread of the resource (needs a
            ``resource_id``); ``"thread"`` only the current thread.
        exclude_recent: when True, the ``top_k`` hits are the best messages
            outside the recall's history page (the search asks for ``top_k``
            plus the page's size, capped at ``MAX_TOP_K``, and drops hits in
            the page), so no slot is spent on a message the prompt already
            has. Default False: Mastra's behaviour (R-RECALL step 4), where a
            hit may be a recent message.
        min_score: a relevance floor: hits whose cosine similarity to the
            query (-1 to 1; the score of the message's best chunk, as
            :class:`~memory_core.vector.VectorHit` carries it) is below it
            are dropped, so an unrelated query returns fewer than ``top_k``
            hits, or none. None (the default): no floor, always ``top_k``
            hits when the scope holds that many (Mastra's behaviour). The
            agent-framework tools use the floor measured on LoCoMo for their
            Memory's embedder (:func:`~memory_core.embedders.relevance_floor`).
            Scores depend on the embedder: a floor chosen for one means
            little for another. In ``"hybrid"`` mode it filters the vector
            ranking before fusion.
        mode: how hits are ranked (issue 23; :mod:`memory_core.hybrid`):
            ``"vector"`` (the default, as before: cosine similarity of the
            embeddings), ``"lexical"`` (BM25 over the scope's message text,
            :mod:`memory_core.lexical`) or ``"hybrid"`` (both, fused by
            weighted reciprocal rank fusion, Cormack et al. 2009). Hits of
            every mode are marked ``"semantic"`` in ``sources``. Only
            ``"lexical"`` works without a vector store and embedder.
        vector_weight / lexical_weight: the fusion weights of the two
            rankings in ``"hybrid"`` mode (finite floats >= 0, not both 0).
            Defaults 1.0 and 1.0 (plain RRF, Cormack et al. 2009);
            ``docs/design.md`` ("Hybrid recall") reports the weights half
            of LoCoMo prefers per embedder.

    Raises:
        ValidationError: a field of the wrong type or out of range (at
            construction, field ``semantic_recall.<name>``).
    """

    top_k: int = 4
    message_range: int | tuple[int, int] = 2
    scope: Scope = "resource"
    exclude_recent: bool = False
    min_score: float | None = None
    mode: SearchMode = "vector"
    vector_weight: float = 1.0
    lexical_weight: float = 1.0

    def __post_init__(self) -> None:
        top_k = self.top_k
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
            raise ValidationError(
                "semantic_recall.top_k", f"must be an int from 1 to {MAX_TOP_K}, got {top_k!r}", "R-RECALL"
            )
        object.__setattr__(self, "top_k", int(top_k))  # an IntEnum becomes a plain int
        object.__setattr__(self, "message_range", _message_range(self.message_range))
        _check_scope(self.scope, "semantic_recall.scope")
        check_bool(self.exclude_recent, "semantic_recall.exclude_recent")
        object.__setattr__(self, "min_score", check_min_score(self.min_score, "semantic_recall.min_score"))
        if self.mode not in SEARCH_MODES:
            raise ValidationError("semantic_recall.mode", f"must be one of {SEARCH_MODES}, got {self.mode!r}")
        for name in ("vector_weight", "lexical_weight"):
            weight = getattr(self, name)
            if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight < float("inf"):
                raise ValidationError(f"semantic_recall.{name}", f"must be a finite number >= 0, got {weight!r}")
            object.__setattr__(self, name, float(weight))
        if self.vector_weight == self.lexical_weight == 0:
            raise ValidationError("semantic_recall.lexical_weight", "vector_weight and lexical_weight are both 0")

    def window(self) -> tuple[int, int]:
        """``(before, after)`` message counts around each hit."""
        if isinstance(self.message_range, tuple):
            return self.message_range
        return self.message_range, self.message_range


@dataclass(frozen=True, slots=True)
class WorkingMemory:
    """Working memory settings.

    Attributes:
        enabled: whether :meth:`Memory.get_working_memory` and updates are on.
        scope: ``"resource"`` keeps it in ``Resource.working_memory``;
            ``"thread"`` in ``thread.metadata["working_memory"]``.
        template: returned while nothing has been stored (Markdown text).
        schema: a JSON Schema (Draft 2020-12, a dict); when set, working memory
            is JSON text that must validate against it. The schema itself is
            checked against the meta-schema here; a ``$ref`` that cannot be
            resolved is reported when an update is validated.

    Raises:
        ValidationError: a field of the wrong type, an unknown scope or an
            invalid schema (at construction, field ``working_memory.<name>``).
    """

    enabled: bool = False
    scope: Scope = "resource"
    template: str | None = None
    schema: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        check_bool(self.enabled, "working_memory.enabled")
        _check_scope(self.scope, "working_memory.scope")
        if self.template is not None:
            check_text(self.template, "working_memory.template")
        if self.schema is not None:
            schema = self.schema
            if isinstance(schema, Mapping):
                schema = dict(schema)
            check_json_object(schema, "working_memory.schema")
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(schema)
            except SchemaError as exc:
                raise ValidationError("working_memory.schema", f"not a valid JSON Schema: {exc.message}") from None
            object.__setattr__(self, "schema", schema)


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """Memory behaviour (R-RECALL, R-VEC); per-call ``thread_config`` overrides it.

    Attributes:
        last_messages: default history page size for :meth:`Memory.recall`
            (an int from 0 to :data:`~memory_core.validation.MAX_PER_PAGE`,
            as R-PAGE), or ``False`` for no history page. Default 10.
        semantic_recall: ``False`` (off), ``True`` (defaults),
            :class:`SemanticRecall`, or a mapping of its fields (``topK``,
            ``messageRange`` accepted).
        working_memory: :class:`WorkingMemory` settings, or a mapping of its
            fields.
        generate_title: optional :data:`TitleGenerator` hook (a callable).

    Raises:
        ValidationError: a field of the wrong type or out of range (at
            construction), naming the field.
    """

    last_messages: int | Literal[False] = 10
    semantic_recall: SemanticRecall | bool = False
    working_memory: WorkingMemory = field(default_factory=WorkingMemory)
    generate_title: TitleGenerator | None = None

    def __post_init__(self) -> None:
        if self.last_messages is not False:
            check_per_page(self.last_messages, "last_messages")
        semantic: Any = self.semantic_recall
        if isinstance(semantic, Mapping):
            semantic = coerce_model(semantic, SemanticRecall, "semantic_recall")
        elif not isinstance(semantic, bool | SemanticRecall):
            raise ValidationError(
                "semantic_recall", f"must be a bool, a SemanticRecall or a mapping, got {type(semantic).__name__}"
            )
        object.__setattr__(self, "semantic_recall", semantic)
        wm: Any = self.working_memory
        if isinstance(wm, Mapping):
            wm = coerce_model(wm, WorkingMemory, "working_memory")
        elif not isinstance(wm, WorkingMemory):
            raise ValidationError("working_memory", f"must be a WorkingMemory or a mapping, got {type(wm).__name__}")
        object.__setattr__(self, "working_memory", wm)
        if self.generate_title is not None and not callable(self.generate_title):
            raise ValidationError("generate_title", "must be an async callable (thread, messages) -> str, or None")

    def semantic(self) -> SemanticRecall | None:
        """The effective semantic-recall settings, or None when off."""
        if self.semantic_recall is True:
            return SemanticRecall()
        return self.semantic_recall or None


def _check_scope(value: Any, field: str) -> None:
    if not isinstance(value, str) or value not in _SCOPES:
        raise ValidationError(field, f"must be 'resource' or 'thread', got {value!r}")


def _message_range(value: Any) -> int | tuple[int, int]:
    """``message_range`` as an int or ``(before, after)``; see SemanticRecall."""
    field = "semantic_recall.message_range"
    if isinstance(value, Mapping):
        unknown = sorted(map(str, set(value) - _RANGE_KEYS))
        if unknown:
            raise ValidationError(f"{field}.{unknown[0]}", "unknown key; use 'before' and 'after'", "R-RECALL")
        value = (value.get("before", 0), value.get("after", 0))
    if isinstance(value, tuple | list):
        if len(value) != 2:
            raise ValidationError(field, f"must be (before, after), got {len(value)} items", "R-RECALL")
        before = check_non_negative_int(value[0], f"{field}.before", "R-RECALL")
        return before, check_non_negative_int(value[1], f"{field}.after", "R-RECALL")
    return check_non_negative_int(value, field, "R-RECALL")


def _metadata_arg(value: Any, field: str) -> dict[str, Any]:
    """An optional metadata argument as a checked JSON object (None -> {})."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(field, f"must be a dict (JSON object), got {type(value).__name__}", "R-JSON")
    return check_json_object(dict(value), field)


def _wider(side: int) -> int:
    """A window side read one message wider (to tell touching runs from
    gaps), at most :data:`~memory_core.storage.WINDOW_SIDE_MAX`: a side of
    2**63 - 1 is valid, and one more is not an int64."""
    return min(side + 1, WINDOW_SIDE_MAX)


class Memory:
    """Conversation memory over one storage and an optional vector store.

    From URLs and names in one line: ``memory = await Memory.open(url,
    vector=url, embedder=name, config=...)`` (:meth:`open`). From objects
    already built: ``Memory(storage, vector, embedder, config)``.

    Args:
        storage: a storage object, opened or not (``await memory_core.connect(url)``).
        vector: optional vector store object for semantic recall (R-VEC)
            (``await memory_core.connect_vector(url)``). A persistent storage
            (a file, a server) needs a persistent vector store
            (``qdrant+path:///dir``, a server, pgvector): an in-memory one
            (``qdrant::memory:``, ``memory://``) starts empty after a restart,
            so that pairing is refused unless ``allow_volatile_vectors``.
        embedder: an embedder object (:func:`memory_core.embedders.get_embedder`
            turns a name into one); with a vector store and no embedder,
            :func:`~memory_core.embedders.default_embedder` (MiniLM when
            installed, else the lexical hashing embedder).
        config: defaults for recall and working memory. None: semantic recall
            on with :class:`SemanticRecall`'s defaults when a vector store is
            given, else off (``MemoryConfig()``). A config given is used as
            it is (its ``semantic_recall`` defaults to off).
        token_counter: counts tokens for ``recall(max_tokens=...)``; default
            :class:`~memory_core.tokens.EstimateTokenCounter`.
        owns_stores: close ``storage`` and ``vector`` on :meth:`close` (default
            True; pass False when they are shared).
        allow_volatile_vectors: accept a persistent storage with an in-memory
            vector store (tests, demos; default False).

    Raises:
        ValidationError: checked here, before any I/O, naming the argument:
            ``storage`` is not a storage object, ``vector`` not a vector store
            (a URL in either: use :meth:`open`), ``embedder`` not an embedder
            (a name: ``get_embedder(name)``); a persistent storage with an
            in-memory vector store (field ``vector``); ``config`` is not a
            MemoryConfig; semantic recall is on without a vector store (field
            ``config.semantic_recall``); an embedder without a vector store
            (field ``embedder``); a bad ``token_counter``.

    With a vector store, ``save_messages``, ``update_messages``,
    ``delete_messages`` and ``delete_thread`` keep the vectors in step
    synchronously: when a call returns, the store holds exactly one point set
    per stored message. If the vector write fails after the storage write, the
    call raises :class:`~memory_core.errors.BackendError` and
    :meth:`reindex` repairs the thread or resource.
    """

    def __init__(
        self,
        storage: Storage,
        vector: VectorStore | None = None,
        embedder: Embedder | None = None,
        config: MemoryConfig | None = None,
        *,
        token_counter: TokenCounter | None = None,
        owns_stores: bool = True,
        allow_volatile_vectors: bool = False,
    ) -> None:
        storage = check_storage(storage)
        vector = check_vector_store(vector)
        embedder = check_embedder(embedder)
        check_pairing(storage, vector, allow_volatile_vectors=allow_volatile_vectors)
        if config is not None and not isinstance(config, MemoryConfig):
            raise ValidationError("config", f"must be a MemoryConfig, got {type(config).__name__}")
        if config is None:
            config = MemoryConfig(semantic_recall=vector is not None)
        self.config = config
        if vector is None:
            if embedder is not None:
                raise ValidationError("embedder", "given without a vector store: pass vector= too, or no embedder")
            semantic = self.config.semantic()
            if semantic is not None and semantic.mode != "lexical":
                raise ValidationError(
                    "config.semantic_recall",
                    "semantic recall is on but Memory has no vector store: pass "
                    "vector=await memory_core.connect_vector(url), or turn semantic_recall off",
                    "R-RECALL",
                )
        elif embedder is None:
            embedder = default_embedder()
        self.storage = storage
        self.vector = vector
        self.embedder = embedder
        self.token_counter = EstimateTokenCounter() if token_counter is None else check_token_counter(token_counter)
        self._owns_stores = owns_stores

    @classmethod
    async def open(
        cls,
        storage: str,
        vector: str | None = None,
        *,
        embedder: str | Embedder | None = None,
        config: MemoryConfig | None = None,
        token_counter: TokenCounter | None = None,
        allow_volatile_vectors: bool = False,
        storage_options: Mapping[str, Any] | None = None,
        vector_options: Mapping[str, Any] | None = None,
    ) -> Memory:
        """A ready Memory from URLs and an embedder name, owning (and closing
        on :meth:`close` or ``async with``) the stores it opened::

            memory = await Memory.open("sqlite:///app.db", vector="qdrant+path:///app.vectors", embedder="minilm")
            async with memory:  # or: try ... finally: await memory.close()
                ...

        Everything is checked before any I/O (the stores are built, not
        opened, until every check passed); if opening the second store fails,
        the first is closed again.

        Args:
            storage: a storage URL (``sqlite:///app.db``, ``postgresql://...``,
                ``redis://``, ``mongodb://``, ``memory://``).
            vector: a vector store URL (``qdrant+path:///dir``, three slashes
                for a relative folder and four for an absolute one;
                ``qdrant://host:6333``; the PostgreSQL URL for pgvector), or
                None for no semantic recall.
            embedder: a name (``"minilm"``, ``"lexical"``, ``"minilm-torch"``:
                :func:`~memory_core.embedders.get_embedder`) or an embedder
                object; None: :func:`~memory_core.embedders.default_embedder`
                when ``vector`` is given (MiniLM when installed, else lexical).
            config: as for :class:`Memory` (None: semantic recall on with
                defaults when ``vector`` is given).
            token_counter: as for :class:`Memory`.
            allow_volatile_vectors: accept a persistent storage with
                in-memory vectors (``qdrant::memory:``, ``memory://``), which
                are gone after a restart; default False (refused).
            storage_options, vector_options: keywords for the adapter's
                ``from_url`` (``namespace``, ``clock`` ...), as
                :func:`memory_core.connect` takes them.

        Returns:
            An opened Memory that owns both stores.

        Raises:
            ValidationError: a store object or anything but a str where a URL
                goes (field ``storage`` or ``vector``: build the Memory with
                ``Memory(store, ...)``), an unknown scheme or a bad option
                (field ``url`` or the option), an unknown embedder name, or
                any refusal of :class:`Memory` (the pairing rule included),
                all before any I/O.
            ImportError: the embedder named is not installed
                (``"minilm"`` without ``memory-core[minilm]``).
            BackendError: a store could not be opened.
        """
        from memory_core.embedders import get_embedder
        from memory_core.registry import build_storage, build_vector

        for name, url in (("storage", storage), ("vector", vector)):
            if not isinstance(url, str) and (name == "storage" or url is not None):
                raise ValidationError(
                    name,
                    f"Memory.open takes a URL (str), got {type(url).__name__}; "
                    f"for a {name} object already built use Memory(storage, vector, ...)",
                )
        if isinstance(embedder, str):
            embedder = get_embedder(embedder)
        built_storage = _built(build_storage, "storage", storage, storage_options)
        built_vector = None if vector is None else _built(build_vector, "vector", vector, vector_options)
        memory = cls(
            built_storage,
            built_vector,
            embedder,
            config,
            token_counter=token_counter,
            allow_volatile_vectors=allow_volatile_vectors,
        )
        try:
            await memory.__aenter__()
        except BaseException:
            await memory.close()
            raise
        return memory

    async def __aenter__(self) -> Self:
        await self.storage.open()
        if self.vector is not None:
            await self.vector.open()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the stores this Memory owns (idempotent)."""
        if self._owns_stores:
            await self.storage.close()
            if self.vector is not None:
                await self.vector.close()

    def _config(self, thread_config: MemoryConfig | Mapping[str, Any] | None) -> MemoryConfig:
        if thread_config is None:
            return self.config
        if isinstance(thread_config, MemoryConfig):
            return thread_config  # validated when it was built
        if not isinstance(thread_config, Mapping):
            raise ValidationError("thread_config", "must be a MemoryConfig or a mapping of its fields")
        names = {f.name for f in fields(MemoryConfig)}
        aliases = {
            "lastMessages": "last_messages",
            "semanticRecall": "semantic_recall",
            "workingMemory": "working_memory",
            "generateTitle": "generate_title",
        }
        overrides: dict[str, Any] = {}
        for key, value in thread_config.items():
            name = aliases.get(key, key)
            if name not in names:
                raise ValidationError(f"thread_config.{key}", "unknown MemoryConfig field")
            overrides[name] = value
        # MemoryConfig checks (and converts mappings of) every field it is given.
        return replace(self.config, **overrides)

    # ------------------------------------------------------------------ threads

    @traced("create_memory")
    async def create_thread(
        self,
        resource_id: str,
        *,
        thread_id: str | None = None,
        title: str = "",
        metadata: Mapping[str, Any] | None = None,
        replace: bool = False,
    ) -> Thread:
        """Create a thread.

        Args:
            resource_id: the owner (R-ID).
            thread_id: the id (R-ID); only None means "generate a UUID4" (``""``
                is an error like any other bad id).
            title: a str.
            metadata: a JSON object (R-JSON).
            replace: False (default): an existing ``thread_id`` is a
                ConflictError and nothing changes. True: an existing thread of
                the same resource is replaced, title, metadata and
                ``created_at`` reset (its messages stay; Mastra's
                ``saveThread``). See :meth:`get_or_create_thread` to reuse one.

        Raises:
            ValidationError: bad id, title or metadata; nothing is written.
            ConflictError: ``thread_id`` exists (``replace=False``), or
                belongs to another resource.
        """
        check_id(resource_id, "resource_id")
        new_id = str(uuid.uuid4()) if thread_id is None else check_id(thread_id, "thread_id")
        check_bool(replace, "replace")
        thread = Thread(new_id, resource_id, check_text(title, "title"), _metadata_arg(metadata, "metadata"))
        if replace:
            return await self.storage.save_thread(thread)
        return await self.storage.insert_thread(thread)

    @traced("create_memory")
    async def get_or_create_thread(
        self,
        resource_id: str,
        thread_id: str,
        *,
        title: str = "",
        metadata: Mapping[str, Any] | None = None,
    ) -> tuple[Thread, bool]:
        """The thread ``thread_id`` of ``resource_id``, created with ``title``
        and ``metadata`` if it does not exist (an existing one is returned
        unchanged). Safe under races: of two concurrent calls, one creates
        and both return the same thread.

        Returns:
            ``(thread, created)``.

        Raises:
            ValidationError: bad id, title or metadata.
            OwnershipError: the thread belongs to another resource.
        """
        check_id(resource_id, "resource_id")
        check_id(thread_id, "thread_id")
        thread = Thread(thread_id, resource_id, check_text(title, "title"), _metadata_arg(metadata, "metadata"))
        for _ in range(2):
            found = await self.storage.get_thread(thread_id)
            if found is not None:
                if found.resource_id != resource_id:
                    raise OwnershipError(f"thread {thread_id!r} belongs to another resource")
                return found, False
            try:
                return await self.storage.insert_thread(thread), True
            except ConflictError:
                continue  # created meanwhile (or deleted again): read it
        raise ConflictError(f"thread {thread_id!r} is being created and deleted concurrently")

    async def get_thread(self, thread_id: str, resource_id: str | None = None) -> Thread | None:
        """See :meth:`BaseStorage.get_thread`."""
        return await self.storage.get_thread(thread_id, resource_id)

    async def update_thread(
        self, thread_id: str, *, title: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Thread:
        """See :meth:`BaseStorage.update_thread`."""
        return await self.storage.update_thread(thread_id, title=title, metadata=metadata)

    @traced("delete_memory")
    async def delete_thread(self, thread_id: str) -> None:
        """Delete the thread, its messages and their vectors (unknown: no-op)."""
        await self.storage.delete_thread(thread_id)
        if self.vector is not None:
            await self.vector.delete_thread(thread_id)

    @traced("delete_memory")
    async def delete_resource(self, resource_id: str) -> ResourceErasure:
        """Forget a resource (a user): its threads, their messages and vectors,
        and its working memory. No id stays reserved; an unknown id is no
        error. Resumable: if a backend fails half-way, calling again finishes
        the erasure (see :meth:`BaseStorage.delete_resource`).

        Returns:
            :class:`ResourceErasure`: what was removed.

        Raises:
            ValidationError: bad id (before any I/O).
            BackendError: a store failed (call again to finish).
        """
        erased = await self.storage.delete_resource(resource_id)
        if self.vector is not None:
            for thread_id in erased.thread_ids:
                await self._vector_call("delete_resource", self.vector.delete_thread(thread_id))
        return erased

    @traced("delete_memory")
    async def prune(self, policy: RetentionPolicy, *, dry_run: bool = False) -> PruneReport:
        """Delete messages or threads older than ``policy`` allows, with their
        vectors (R-PRUNE; semantics in :mod:`memory_core.retention`).

        Each batch's vectors are deleted just before its messages, so an
        interrupted run leaves no vector without its message; running again
        with ``RetentionPolicy(before=report.cutoff, ...)`` finishes it.

        Returns:
            :class:`~memory_core.retention.PruneReport`.

        Raises:
            ValidationError: bad ``policy`` or ``dry_run`` (before any I/O).
            BackendError: a store failed (run again to finish).
        """
        hook = None if self.vector is None else self._drop_vectors
        return await self.storage.prune(policy, dry_run=dry_run, before_delete=hook)

    async def _drop_vectors(self, batch: PruneBatch) -> None:
        assert self.vector is not None
        if batch.message_ids is None:
            await self._vector_call("prune", self.vector.delete_thread(batch.thread_id))
        else:
            await self._vector_call("prune", self.vector.delete_messages(list(batch.message_ids)))

    async def list_threads(
        self,
        filter: ThreadFilter | Mapping[str, Any] | None = None,
        page: int = 0,
        per_page: PerPage = 100,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        cursor: str | None = None,
    ) -> Page[Thread]:
        """See :meth:`BaseStorage.list_threads` (Mastra's ``listThreads``)."""
        return await self.storage.list_threads(filter, page, per_page, order_by, cursor)

    @traced("create_memory")
    async def clone_thread(
        self,
        source_id: str,
        new_id: str | None = None,
        *,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        message_limit: int | None = None,
        date_range: DateRange | Mapping[str, Any] | None = None,
    ) -> tuple[Thread, list[Message]]:
        """Copy a thread and its messages under new ids.

        Copies keep ``created_at`` and order and are named ``<new_id>:<32 hex
        digits>``. ``new_id`` defaults to a new UUID4; given, it must be a new
        thread id of at most :data:`MAX_CLONE_ID_LENGTH` (223) characters, so
        every copy's id fits R-ID. ``message_limit`` keeps only the newest N;
        ``date_range`` only messages inside it. The clone's metadata is the
        source's, updated with ``metadata``, plus ``cloned_from`` naming the
        source; its title is ``title`` (a str) when given, else ``"Clone of
        <source title>"`` (Mastra's ``cloneThread``; ``""`` for an untitled
        source). Every input and every
        copy is checked before anything is written. Returns ``(thread,
        messages)``.

        Raises:
            ValidationError: bad ids (``new_id`` too long for its copies' ids,
                or equal to ``source_id``), title, metadata, limit or range.
            NotFoundError: no source thread.
            ConflictError: a thread ``new_id`` already exists (a clone never
                overwrites).
        """
        check_id(source_id, "source_id")
        if new_id is None:
            new_id = str(uuid.uuid4())
        else:
            check_id(new_id, "new_id")
            if len(new_id) > MAX_CLONE_ID_LENGTH:
                raise ValidationError(
                    "new_id",
                    f"must be at most {MAX_CLONE_ID_LENGTH} characters: copies are named '<new_id>:<32 hex>' "
                    f"and ids are at most {MAX_ID_LENGTH}",
                    "R-ID",
                )
            if new_id == source_id:
                raise ValidationError("new_id", "must differ from source_id", "R-ID")
        if title is not None:
            check_text(title, "title")
        extra = _metadata_arg(metadata, "metadata")
        if message_limit is not None:
            message_limit = check_non_negative_int(message_limit, "message_limit")
        check_date_range(date_range, "date_range")
        source = await self.storage.get_thread(source_id)
        if source is None:
            raise NotFoundError(f"thread {source_id!r} does not exist")
        flt = (
            None if date_range is None else MessageFilter(date_range=coerce_model(date_range, DateRange, "date_range"))
        )
        if message_limit is None or message_limit > MAX_PER_PAGE:  # more than any page: all of them
            page = await self.storage.list_messages(source_id, filter=flt, per_page=False)
            originals = page.items
        else:
            page = await self.storage.page_messages(
                MessagePageRequest(thread_ids=(source_id,), filter=flt, per_page=message_limit, newest=True)
            )
            originals = page.items
        clone = Thread(
            new_id,
            source.resource_id,
            (f"Clone of {source.title}" if source.title else "") if title is None else title,
            {**source.metadata, **extra, "cloned_from": source_id},
        )
        copies = [replace(m, id=f"{new_id}:{uuid.uuid4().hex}", thread_id=new_id, sequence=None) for m in originals]
        # A longer id can push a copy over R-SIZE: check every copy before the
        # thread is written, so a failure leaves no half-made clone behind.
        for original, copy in zip(originals, copies, strict=True):
            try:
                check_message(copy, "copy")
            except ValidationError as exc:
                raise ValidationError(f"copy of message {original.id!r}", exc.reason, exc.rule) from None
        thread = await self.storage.insert_thread(clone)  # atomic: a racing clone or create loses
        saved = await self.save_messages(copies)
        return thread, saved

    # ------------------------------------------------------------------ messages

    @traced("update_memory")
    async def save_messages(
        self, messages: Sequence[Message | Mapping[str, Any]], *, persist_system: bool = False
    ) -> list[Message]:
        """Save messages (see :meth:`BaseStorage.save_messages`), then embed them
        into the vector store and run the ``generate_title`` hook.

        Message ids are global in a store (R-ID): saving an id that exists
        updates that message, and a new ``thread_id`` (same resource) MOVES it
        there. So never reuse ids across threads: a mapping without ``id``
        (or with ``id`` None) gets a new time-ordered id
        (:func:`memory_core.ids.new_message_id`, a UUIDv7), and
        :meth:`append_messages` takes plain role/content pairs.

        System messages (role ``system``) are validated but not persisted:
        they are instructions for one model call, not conversation (Mastra's
        memory does not store them either). Pass ``persist_system=True``
        (a session that must store items exactly does) to keep them. Returns
        the stored messages only.

        Raises:
            ValidationError: any bad message (nothing is written).
            NotFoundError / OwnershipError / ConflictError: as for
                :meth:`BaseStorage.save_messages`.
            BackendError: the vector write failed after the messages were saved
                (repair with :meth:`reindex`).
        """
        if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
            raise ValidationError("messages", "must be a list of Message or mappings")
        return await self._save(messages, "messages", persist_system)

    async def _save(
        self, messages: Sequence[Message | Mapping[str, Any]], label: str, persist_system: bool
    ) -> list[Message]:
        """:meth:`save_messages` once the list's shape is checked; errors about
        a message whose id is generated here name it ``<label>[<index>]``."""
        check_bool(persist_system, "persist_system")
        batch: list[Message] = []
        for index, raw in enumerate(messages):
            generated = False
            if isinstance(raw, Mapping) and raw.get("id") is None:
                raw, generated = {**raw, "id": new_message_id()}, True
            message = check_message(raw, f"{label}[{index}]", by_id=not generated)
            if persist_system or message.role != "system":
                batch.append(message)
        saved = await self.storage.save_messages(CheckedMessages(batch)) if batch else []
        await self._index(saved)
        if self.config.generate_title is not None and saved:
            await self._generate_titles(saved)
        return saved

    @traced("update_memory")
    async def append_messages(
        self,
        thread_id: str,
        turns: Sequence[tuple[str, Any] | Mapping[str, Any]],
        *,
        resource_id: str | None = None,
        persist_system: bool = False,
    ) -> list[Message]:
        """Append turns to a thread, in order, with new time-ordered ids and
        "now" as ``created_at`` (R-CLOCK keeps their order).

        Args:
            thread_id: the thread (it must exist; see :meth:`get_or_create_thread`).
            turns: ``(role, content)`` pairs or mappings with ``role``,
                ``content`` and optionally ``metadata``, ``type``, ``id``,
                ``created_at``. Roles: ``user``, ``assistant``, ``tool``,
                ``system``.
            resource_id: when given, must own the thread (else OwnershipError).
            persist_system: store ``system`` turns too (default False: they
                are validated, not stored, as in :meth:`save_messages`).

        Returns:
            The stored messages, in order.

        Raises:
            ValidationError: a malformed turn (named by index), nothing written.
            NotFoundError: no such thread. OwnershipError: another resource's thread.
        """
        check_id(thread_id, "thread_id")
        if isinstance(turns, str | bytes | Mapping) or not isinstance(turns, Sequence):
            raise ValidationError("turns", "must be a list of (role, content) pairs or mappings")
        batch: list[dict[str, Any]] = []
        for index, turn in enumerate(turns):
            field = f"turns[{index}]"
            if isinstance(turn, Mapping):
                unknown = sorted(map(str, set(turn) - _TURN_KEYS))
                if unknown:
                    raise ValidationError(f"{field}.{unknown[0]}", "unknown key of a turn")
                item = dict(turn)
            elif isinstance(turn, tuple | list) and len(turn) == 2:
                item = {"role": turn[0], "content": turn[1]}
            else:
                raise ValidationError(field, "must be a (role, content) pair or a mapping")
            item["thread_id"] = thread_id
            if resource_id is not None:
                item["resource_id"] = resource_id
            batch.append(item)
        return await self._save(batch, "turns", persist_system)

    @traced("update_memory")
    async def update_messages(self, updates: Sequence[Mapping[str, Any]]) -> list[Message]:
        """See :meth:`BaseStorage.update_messages`; changed text or moved
        messages are re-embedded."""
        updated = await self.storage.update_messages(updates)
        touched = {
            u.get("id")
            for u in updates
            if isinstance(u, Mapping) and ("content" in u or "thread_id" in u or "threadId" in u)
        }
        await self._index([m for m in updated if m.id in touched])
        return updated

    @traced("delete_memory")
    async def delete_messages(self, ids: Sequence[str]) -> int:
        """Delete messages and their vectors (unknown ids ignored); returns
        how many messages this call removed (see :meth:`BaseStorage.delete_messages`)."""
        removed = await self.storage.delete_messages(ids)
        if self.vector is not None and ids:
            await self._vector_call("delete_messages", self.vector.delete_messages(list(ids)))
        return removed

    async def get_messages(self, ids: Sequence[str]) -> list[Message]:
        """See :meth:`BaseStorage.get_messages`."""
        return await self.storage.get_messages(ids)

    async def list_messages(
        self,
        thread_id: str | Sequence[str],
        resource_id: str | None = None,
        include: Sequence[Include | Mapping[str, Any]] | None = None,
        filter: MessageFilter | Mapping[str, Any] | None = None,
        page: int = 0,
        per_page: PerPage = 40,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        cursor: str | None = None,
        total: bool = True,
    ) -> Page[Message]:
        """See :meth:`BaseStorage.list_messages`."""
        return await self.storage.list_messages(
            thread_id, resource_id, include, filter, page, per_page, order_by, cursor, total
        )

    @traced("update_memory")
    async def reindex(self, *, thread_id: str | None = None, resource_id: str | None = None) -> int:
        """Re-embed every message of one thread or one resource, replacing their
        vectors: the repair path after a failed vector write. Returns the number
        of messages indexed.

        Raises:
            ValidationError: neither or both of ``thread_id``/``resource_id``,
                or a bad id (before any I/O).
        """
        if (thread_id is None) == (resource_id is None):
            raise ValidationError("reindex", "give exactly one of thread_id or resource_id")
        if thread_id is not None:
            check_id(thread_id, "thread_id")
        if resource_id is not None:
            check_id(resource_id, "resource_id")
        if thread_id is not None:
            page = await self.storage.list_messages(thread_id, per_page=False)
            if self.vector is not None:
                await self._vector_call("reindex", self.vector.delete_thread(thread_id))
        else:
            assert resource_id is not None
            page = await self.storage.list_messages_by_resource(resource_id, per_page=False)
        await self._index(page.items)
        return len(page.items)

    async def _index(self, messages: list[Message]) -> None:
        if self.vector is None or self.embedder is None or not messages:
            return
        chunks: list[tuple[Message, int, str]] = []
        for message in messages:
            for number, text in enumerate(chunk_text(message_text(message), self.embedder.max_input_chars)):
                chunks.append((message, number, text))
        # Replace, not merge: a shorter text must not leave stale chunks behind.
        await self._vector_call("save_messages", self.vector.delete_messages([m.id for m in messages]))
        if not chunks:
            return
        vectors = await self.embedder.embed([text for _, _, text in chunks])
        points = []
        for (message, number, _), vec in zip(chunks, vectors, strict=True):
            assert message.created_at is not None and message.resource_id is not None
            points.append(
                VectorPoint(message.id, number, vec, message.thread_id, message.resource_id, to_us(message.created_at))
            )
        await self._vector_call("save_messages", self.vector.upsert(points))

    @staticmethod
    async def _vector_call(operation: str, call: Awaitable[None]) -> None:
        try:
            await call
        except BackendError:
            raise
        except Exception as exc:
            raise BackendError("vector", operation, f"{type(exc).__name__}: {exc}", original=exc) from exc

    async def _generate_titles(self, saved: list[Message]) -> None:
        assert self.config.generate_title is not None
        by_thread: dict[str, list[Message]] = {}
        for message in saved:
            by_thread.setdefault(message.thread_id, []).append(message)
        for thread_id, new in by_thread.items():
            if not any(m.role == "user" for m in new):
                continue
            thread = await self.storage.get_thread(thread_id)
            if thread is None or thread.title:
                continue
            try:
                title = await self.config.generate_title(thread, new)
            except Exception:
                # A failing hook must not undo or fail a save that succeeded.
                log.exception("generate_title failed for thread %r", thread_id)
                continue
            await self.storage.update_thread(thread_id, title=check_text(title, "generate_title result"))

    # ------------------------------------------------------------------ recall

    @traced("search_memory")
    async def recall(
        self,
        thread_id: str,
        resource_id: str | None = None,
        vector_search_string: str | None = None,
        per_page: PerPage | None = None,
        page: int = 0,
        include: Sequence[Include | Mapping[str, Any]] | None = None,
        filter: MessageFilter | Mapping[str, Any] | None = None,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        thread_config: MemoryConfig | Mapping[str, Any] | None = None,
        cursor: str | None = None,
        max_tokens: int | None = None,
        total: bool = True,
    ) -> RecallResult:
        """The messages an agent should see for its next turn (R-RECALL).

        1. With ``resource_id`` the thread must belong to it. A missing thread
           is a NotFoundError unless semantic recall has resource scope.
        2. ``per_page`` defaults to ``last_messages`` (``False`` there and no
           ``per_page``: no history page, only recalled context).
        3. Without ``order_by`` the page is the newest ``per_page`` messages
           (page 1 = the next older block), returned oldest first.
        4. With ``vector_search_string`` (semantic recall must be on), the
           ``top_k`` nearest messages (in the thread, or across the resource;
           outside the page with ``exclude_recent``; those scoring at least
           ``min_score`` when it is set) become includes with
           ``message_range`` context around each. A blank string searches
           nothing.
        5. Everything is merged and de-duplicated (R-INCLUDE); each message is
           marked with its source and the gaps between non-contiguous
           neighbours are listed (R-SOURCE).
        6. With ``max_tokens``, only the newest messages whose tokens (counted
           by the Memory's ``token_counter``) add up to at most ``max_tokens``
           are kept; a tool call and its results are kept or dropped together
           (R-BUDGET).

        When the search finds nothing (before the floor) while storage holds
        messages in its scope, the vector index is empty or behind: ``warnings`` says so and
        names the repair (:meth:`reindex`); the same is logged.

        Args:
            max_tokens: a token budget (int >= 0), or None (default) for none.
            total: count the history query's matches (default True: an
                unfiltered thread's count is a counter read, O(1)); False:
                ``RecallResult.total`` is None and a filtered history page
                reads only the rows it returns (the framework seams ask for
                none).

        Returns:
            RecallResult; ``semantic_hits`` lists hit message ids, best first;
            ``sources`` and ``gaps`` describe ``messages``.

        Raises:
            ValidationError: bad arguments (``vector_search_string`` longer than
                :data:`~memory_core.validation.MAX_SEARCH_CHARS`, 2**20
                characters, included); ``vector_search_string`` while semantic
                recall is off, or on (through ``thread_config``) without a vector
                store; resource scope without a resource. All before any I/O.
            NotFoundError: missing thread (unless resource scope).
            OwnershipError: the thread belongs to another resource.
        """
        config = self._config(thread_config)
        check_id(thread_id, "thread_id")
        if resource_id is not None:
            check_id(resource_id, "resource_id")
        semantic = config.semantic()
        if vector_search_string is not None:
            check_search_text(vector_search_string)
            if semantic is None:
                raise ValidationError(
                    "vector_search_string",
                    "semantic recall is off: turn it on (MemoryConfig(semantic_recall=True) or thread_config), "
                    "or pass no vector_search_string",
                    "R-RECALL",
                )
        if max_tokens is not None:
            max_tokens = check_non_negative_int(max_tokens, "max_tokens", "R-BUDGET")
        includes = check_includes(include)
        if per_page is None:
            per_page = 0 if config.last_messages is False else config.last_messages
        searching = semantic is not None and bool(vector_search_string and vector_search_string.strip())
        if searching and self.vector is None and semantic is not None and semantic.mode != "lexical":
            raise ValidationError(
                "thread_config.semantic_recall", "semantic recall needs a vector store and Memory has none", "R-RECALL"
            )
        # Windows are read one message wider on each side: the extra neighbour
        # tells whether two runs of the result touch (no gap) and is cut off again.
        wide = [Include(i.id, _wider(i.with_previous), _wider(i.with_next)) for i in includes]
        # thread_ids, resource_id, include, filter, page, per_page, order_by, cursor, newest, total
        listing = _new_request((thread_id,), resource_id, wide, filter, page, per_page, order_by, cursor, True, total)
        hits: list[str] = []
        hit_windows: list[list[Message]] = []
        warnings: list[str] = []
        if not searching:
            parts = await self.storage.message_parts(listing, threads=(thread_id,))
            self._recall_owner(parts.threads.get(thread_id), thread_id, resource_id, semantic)
        else:
            assert semantic is not None and vector_search_string is not None
            before, after = semantic.window()
            if semantic.exclude_recent:
                parts = await self.storage.message_parts(listing, threads=(thread_id,))
                owner = self._recall_owner(parts.threads.get(thread_id), thread_id, resource_id, semantic)
                recent = {m.id for m in parts.main}
                extra = min(semantic.top_k + len(recent), MAX_TOP_K) - semantic.top_k
                found, searched = await self._semantic_hits(vector_search_string, semantic, thread_id, owner, extra)
                hits = [hit for hit in found if hit not in recent][: semantic.top_k]
                hit_windows = await self.storage.include_windows(
                    [Include(hit, _wider(before), _wider(after)) for hit in hits], resource_id
                )
            else:
                thread = await self.storage.get_thread(thread_id)
                owner = self._recall_owner(thread, thread_id, resource_id, semantic)
                found, searched = await self._semantic_hits(vector_search_string, semantic, thread_id, owner, 0)
                hits = found
                hit_includes = [Include(hit, _wider(before), _wider(after)) for hit in hits]
                parts = await self.storage.message_parts(replace(listing, include=wide + hit_includes))
                hit_windows = parts.windows[len(wide) :]
            if not searched:  # nothing in the index at all (not: everything under the floor)
                warnings += await self._index_warnings(semantic, thread_id, owner)
        return self._compose(
            parts, includes, parts.windows[: len(wide)], hits, hit_windows, semantic, max_tokens, warnings
        )

    def _compose(
        self,
        parts: MessageParts,
        includes: list[Include],
        include_windows: list[list[Message]],
        hits: list[str],
        hit_windows: list[list[Message]],
        semantic: SemanticRecall | None,
        max_tokens: int | None,
        warnings: list[str],
    ) -> RecallResult:
        """Merge the history page and the windows, mark sources, apply the
        token budget and find the gaps (R-SOURCE, R-BUDGET)."""
        adjacent: set[tuple[str, str]] = set()  # (older id, newer id) known to be neighbours in their thread
        query = parts.query
        unfiltered = query.created_from_us is None and query.created_to_us is None and not query.metadata
        if unfiltered and (includes or hits or max_tokens is not None):
            # Unfiltered: the page is a run of its thread, read in the query's order.
            ids = [m.id for m in (reversed(parts.main) if query.descending else parts.main)]
            adjacent.update(itertools.pairwise(ids))
        before, after = semantic.window() if semantic is not None else (0, 0)
        shown_includes = [
            _cut(w, i.id, i.with_previous, i.with_next, adjacent)
            for i, w in zip(includes, include_windows, strict=True)
        ]
        shown_hits = [_cut(w, hit, before, after, adjacent) for hit, w in zip(hits, hit_windows, strict=True)]
        merged = parts.merge(shown_includes + shown_hits)
        messages = merged.items
        tokens: int | None = None
        dropped = 0
        if max_tokens is not None:
            kept, tokens = newest_within(sorted(messages, key=order_key), max_tokens, self.token_counter)
            dropped = len(messages) - len(kept)
            messages = [m for m in messages if m.id in kept]
        semantic_ids = set(hits)
        included = {m.id for window in shown_includes for m in window}
        sources: list[RecallSource]
        if not semantic_ids and not included:  # nothing merged in: every message is the history page's
            sources = ["recent"] * len(messages)
        else:
            recent = {m.id for m in parts.main}
            sources = []
            for message in messages:
                if message.id in recent:
                    sources.append("recent")
                elif message.id in semantic_ids:
                    sources.append("semantic")
                elif message.id in included:
                    sources.append("include")
                else:
                    sources.append("context")
        gaps: list[tuple[str, str]]
        if unfiltered and not includes and not hits and not dropped:
            gaps = []  # the page alone: one run of one thread, every neighbour adjacent
        else:
            gaps = [
                (a.id, b.id)
                for a, b in itertools.pairwise(messages)
                if a.thread_id != b.thread_id or ((a.id, b.id) not in adjacent and (b.id, a.id) not in adjacent)
            ]
        for warning in warnings:
            log.warning("%s", warning)
        return _new_result(
            messages,
            merged.total,
            merged.page,
            merged.per_page,
            merged.has_more,
            merged.next_cursor,
            hits,
            sources,
            gaps,
            warnings,
            tokens,
            dropped,
        )

    async def _index_warnings(self, semantic: SemanticRecall, thread_id: str, owner: str | None) -> list[str]:
        """A warning when the search found nothing but storage holds messages
        in its scope (a vector index that is empty or behind)."""
        if semantic.scope == "thread":
            stored, scope = (
                (await self.storage.list_messages(thread_id, per_page=0)).counted_total,
                f"thread {thread_id!r}",
            )
            repair = f"reindex(thread_id={thread_id!r})"
        else:
            assert owner is not None
            stored = (await self.storage.list_messages_by_resource(owner, per_page=0)).counted_total
            scope, repair = f"resource {owner!r}", f"reindex(resource_id={owner!r})"
        if not stored:
            return []
        return [
            f"the vector index has no vectors for {scope} while storage holds {stored} messages there: "
            f"it is empty or behind its storage (an in-memory vector store after a restart?); "
            f"repair with await memory.{repair}"
        ]

    async def check_index(self, *, thread_id: str | None = None, resource_id: str | None = None) -> IndexStatus:
        """Compare the vector index with storage for one thread or one resource.

        Reads every message of the scope (a diagnostic, not for each turn) and
        counts the vectors of the scope.

        Returns:
            :class:`IndexStatus`; ``behind`` is True when the index holds
            fewer vectors than storage has messages with text (repair:
            :meth:`reindex` with the same argument).

        Raises:
            ValidationError: neither or both of ``thread_id``/``resource_id``;
                Memory has no vector store.
        """
        if (thread_id is None) == (resource_id is None):
            raise ValidationError("check_index", "give exactly one of thread_id or resource_id")
        if self.vector is None or self.embedder is None:
            raise ValidationError("vector", "Memory has no vector store to check")
        if thread_id is not None:
            check_id(thread_id, "thread_id")
            listing = await self.storage.list_messages(thread_id, per_page=False)
            indexed = await self.vector.count(thread_id=thread_id)
        else:
            assert resource_id is not None
            check_id(resource_id, "resource_id")
            listing = await self.storage.list_messages_by_resource(resource_id, per_page=False)
            indexed = await self.vector.count(resource_id=resource_id)
        embeddable = sum(1 for m in listing.items if chunk_text(message_text(m), self.embedder.max_input_chars))
        return IndexStatus(thread_id, resource_id, listing.counted_total, embeddable, indexed)

    @staticmethod
    def _recall_owner(
        thread: Thread | None, thread_id: str, resource_id: str | None, semantic: SemanticRecall | None
    ) -> str | None:
        """R-RECALL step 1: the resource recall runs under (None if unknown).

        Raises:
            NotFoundError: no thread, and semantic recall is not resource-scoped.
            OwnershipError: the thread belongs to another resource.
        """
        if thread is None:
            if semantic is None or semantic.scope != "resource":
                raise NotFoundError(f"thread {thread_id!r} does not exist")
        elif resource_id is not None and thread.resource_id != resource_id:
            raise OwnershipError(f"thread {thread_id!r} does not belong to resource {resource_id!r}")
        return resource_id if resource_id is not None else (thread.resource_id if thread else None)

    async def _semantic_hits(
        self, text: str, semantic: SemanticRecall, thread_id: str, resource_id: str | None, extra: int
    ) -> tuple[list[str], bool]:
        """The ids of the ``top_k + extra`` best messages in the scope under
        ``semantic.mode`` (:func:`memory_core.hybrid.search_ids`), best first;
        and whether the index held anything in the scope at all."""
        if semantic.scope == "resource" and resource_id is None:
            raise ValidationError("resource_id", "semantic recall with resource scope needs a resource_id")
        return await search_ids(
            self.storage,
            self.vector,
            self.embedder,
            text,
            semantic.top_k + extra,
            mode=semantic.mode,
            thread_id=thread_id if semantic.scope == "thread" else None,
            resource_id=resource_id,
            min_score=semantic.min_score,
            weights=(semantic.vector_weight, semantic.lexical_weight),
        )

    # ------------------------------------------------------------------ working memory

    @traced("search_memory")
    async def read_working_memory(
        self,
        thread_id: str | None = None,
        resource_id: str | None = None,
        thread_config: MemoryConfig | Mapping[str, Any] | None = None,
    ) -> WorkingMemoryState:
        """The working memory, whether it is stored, and its version.

        Scope ``resource``: ``Resource.working_memory`` of ``resource_id``, or
        of the thread's resource when only ``thread_id`` is given (no thread
        is needed to read a user's memory by user id). Scope ``thread``:
        ``thread.metadata["working_memory"]`` of ``thread_id``.

        Returns:
            :class:`WorkingMemoryState`: ``text`` (the stored value, or the
            template while nothing is stored), ``stored`` and ``version``.

        Raises:
            ValidationError: working memory not enabled; neither id given (or
                no ``thread_id`` with thread scope); a bad id.
            NotFoundError: ``thread_id`` names no thread.
            OwnershipError: the thread belongs to another resource.
        """
        config = self._config(thread_config).working_memory
        _, _, value = await self._memory_state(thread_id, resource_id, config)
        if value is None:
            return WorkingMemoryState(config.template, False, None)
        return WorkingMemoryState(value, True, working_memory_version(value))

    async def get_working_memory(
        self,
        thread_id: str | None = None,
        resource_id: str | None = None,
        thread_config: MemoryConfig | Mapping[str, Any] | None = None,
    ) -> str | None:
        """The stored working memory, or the template while none is stored
        (:meth:`read_working_memory` tells the two apart).

        Raises:
            As :meth:`read_working_memory`.
        """
        return (await self.read_working_memory(thread_id, resource_id, thread_config)).text

    @traced("update_memory")
    async def update_working_memory(
        self,
        thread_id: str | None,
        working_memory: str | Mapping[str, Any],
        resource_id: str | None = None,
        thread_config: MemoryConfig | Mapping[str, Any] | None = None,
        *,
        if_version: str | None = NOT_GIVEN,
    ) -> str:
        """Replace the working memory atomically; returns the stored text.

        ``thread_id`` may be None with resource scope and a ``resource_id``.
        A dict ``working_memory`` is stored as its compact JSON text; with a
        schema, the dict or JSON text must validate against it (nothing is
        written otherwise). ``if_version``
        makes it a compare-and-set: write only if the stored version is still
        this one (a version from :meth:`read_working_memory`; None: only if
        nothing is stored). Omitted: the write is unconditional.

        Raises:
            ValidationError: not enabled, bad type, schema violation, bad ids,
                an ``if_version`` that is not a version (32 lower-case hex
                digits), or a value over R-SIZE.
            NotFoundError / OwnershipError: as for :meth:`read_working_memory`.
            ConflictError: ``if_version`` given and the stored version differs
                (nothing written).
        """
        config = self._config(thread_config).working_memory
        if isinstance(working_memory, Mapping):
            text = codec.dumps(check_json_object(dict(working_memory), "working_memory"))
        elif isinstance(working_memory, str):
            text = check_text(working_memory, "working_memory")
        else:
            raise ValidationError("working_memory", f"must be a str or a dict, got {type(working_memory).__name__}")
        if config.schema is not None:
            _validate_schema(text, config.schema)
        if if_version is not NOT_GIVEN and if_version is not None:
            check_version(if_version)
        self._memory_target(thread_id, resource_id, config)
        # One conditional write: the storage checks the thread, its owner and
        # the version with the write (typed errors as a read would give them).
        await self.storage.write_working_memory(
            text, scope=config.scope, thread_id=thread_id, resource_id=resource_id, if_version=if_version
        )
        return text

    @traced("update_memory")
    async def append_working_memory(
        self,
        thread_id: str | None,
        text: str,
        resource_id: str | None = None,
        thread_config: MemoryConfig | Mapping[str, Any] | None = None,
        *,
        separator: str = "\n",
    ) -> str:
        """Append ``text`` to the working memory atomically (``separator``
        between the old value and ``text``; nothing stored: ``text`` alone).
        Concurrent appends all land: each is a compare-and-set, retried until
        it wins (at most :data:`APPEND_ATTEMPTS` rounds). Returns the new
        stored value.

        Raises:
            ValidationError: not enabled; a schema is set (JSON cannot be
                appended to); ``text``/``separator`` not str; bad ids.
            NotFoundError / OwnershipError: as for :meth:`read_working_memory`.
            ConflictError: still losing after :data:`APPEND_ATTEMPTS` rounds.
        """
        config = self._config(thread_config).working_memory
        check_text(text, "text")
        check_text(separator, "separator")
        if config.schema is not None:
            raise ValidationError("working_memory.schema", "a schema is set: working memory is JSON, use update")
        scope, key, current = await self._memory_state(thread_id, resource_id, config)
        for _ in range(APPEND_ATTEMPTS):
            value = text if current is None else current + separator + text
            if await self._swap_memory(scope, key, current, value):
                return value
            current = await self._stored_memory(scope, key)
        raise ConflictError(f"working memory append lost {APPEND_ATTEMPTS} races in a row")

    async def _memory_state(
        self, thread_id: str | None, resource_id: str | None, config: WorkingMemory
    ) -> tuple[Scope, str, str | None]:
        """Where the working memory lives (``("thread", thread id)`` or
        ``("resource", resource id)``) and its stored value; validates, then
        reads once (the thread, with its owner's record for resource scope)."""
        self._memory_target(thread_id, resource_id, config)
        if thread_id is None:
            assert resource_id is not None
            return "resource", resource_id, await self._stored_memory("resource", resource_id)
        if config.scope == "thread":
            thread = _owned(await self.storage.get_thread(thread_id), thread_id, resource_id)
            return "thread", thread.id, thread_memory(thread)
        found, owner = await self.storage.get_thread_with_owner(thread_id)
        thread = _owned(found, thread_id, resource_id)
        return "resource", thread.resource_id, None if owner is None else owner.working_memory

    @staticmethod
    def _memory_target(thread_id: str | None, resource_id: str | None, config: WorkingMemory) -> None:
        """Validate a working-memory call (enabled; ids; the ids its scope
        needs) before any I/O."""
        if not config.enabled:
            raise ValidationError(
                "working_memory.enabled",
                "working memory is off (the default): turn it on with "
                'MemoryConfig(working_memory={"enabled": True}) or the call\'s thread_config',
            )
        if thread_id is not None:
            check_id(thread_id, "thread_id")
        if resource_id is not None:
            check_id(resource_id, "resource_id")
        if thread_id is None:
            if config.scope == "thread":
                raise ValidationError("thread_id", "working memory with thread scope needs a thread_id")
            if resource_id is None:
                raise ValidationError("resource_id", "give a thread_id or a resource_id")

    async def _stored_memory(self, scope: Scope, key: str) -> str | None:
        if scope == "thread":
            thread = await self.storage.get_thread(key)
            if thread is None:
                raise NotFoundError(f"thread {key!r} does not exist")
            return thread_memory(thread)
        resource = await self.storage.get_resource(key)
        return None if resource is None else resource.working_memory

    async def _swap_memory(self, scope: Scope, key: str, expected: str | None, value: str) -> bool:
        if scope == "thread":
            return await self.storage.swap_thread_working_memory(key, expected, value)
        return await self.storage.swap_working_memory(key, expected, value)


_Built = TypeVar("_Built")


def _built(build: Callable[..., _Built], name: str, url: str, options: Mapping[str, Any] | None) -> _Built:
    """``build(url, **options)`` (no I/O), its errors naming the argument
    (``vector``, ``vector option 'namespace'``) rather than ``url``."""
    try:
        return build(url, **dict(options or {}))
    except ValidationError as exc:
        field = name if exc.field == "url" else f"{name} {exc.field}"
        raise ValidationError(field, exc.reason, exc.rule) from None


def _owned(thread: Thread | None, thread_id: str, resource_id: str | None) -> Thread:
    """The thread, checked to exist and (with ``resource_id``) to be that resource's."""
    if thread is None:
        raise NotFoundError(f"thread {thread_id!r} does not exist")
    if resource_id is not None and thread.resource_id != resource_id:
        raise OwnershipError(f"thread {thread_id!r} does not belong to resource {resource_id!r}")
    return thread


def _cut(window: list[Message], center: str, before: int, after: int, adjacent: set[tuple[str, str]]) -> list[Message]:
    """The asked part of a window read one wider on each side: up to
    ``before`` messages before ``center`` and ``after`` after it. Records every
    neighbouring pair of the whole window in ``adjacent``."""
    ids = [m.id for m in window]
    adjacent.update(itertools.pairwise(ids))
    if center not in ids:
        return []
    index = ids.index(center)
    return window[max(0, index - before) : index + after + 1]


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """What :meth:`Memory.check_index` found for one thread or resource.

    Attributes:
        thread_id: the thread checked, or None.
        resource_id: the resource checked, or None.
        stored: messages in storage.
        embeddable: stored messages with text (empty text gets no vector, R-VEC).
        indexed: what the vector store counts for the scope (``count()``).
    """

    thread_id: str | None
    resource_id: str | None
    stored: int
    embeddable: int
    indexed: int

    @property
    def behind(self) -> bool:
        """True when messages with text have no vectors: run :attr:`repair`."""
        return self.indexed < self.embeddable

    @property
    def repair(self) -> str:
        """The call that rebuilds this scope's vectors."""
        if self.thread_id is not None:
            return f"await memory.reindex(thread_id={self.thread_id!r})"
        return f"await memory.reindex(resource_id={self.resource_id!r})"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (R-JSON)")


def _validate_schema(text: str, schema: dict[str, Any]) -> None:
    from jsonschema import Draft202012Validator

    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        raise ValidationError("working_memory", f"must be JSON when a schema is set: {exc}", "R-JSON") from None
    except RecursionError:
        raise ValidationError("working_memory", "JSON nested too deeply", "R-JSON") from None
    try:
        check_json_value(value, "working_memory")
    except RecursionError:
        raise ValidationError("working_memory", "JSON nested too deeply", "R-JSON") from None
    try:
        error = next(iter(Draft202012Validator(schema).iter_errors(value)), None)
    except Exception as exc:
        # The value is plain JSON, so a failure here is the schema's own (an
        # unresolvable $ref, say): report it as such, not as a raw jsonschema error.
        raise ValidationError("working_memory.schema", f"cannot be applied: {type(exc).__name__}: {exc}") from None
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise ValidationError("working_memory", f"does not match the schema at {where}: {error.message}")

"""The ``Memory`` facade: threads, messages, recall and working memory.

``Memory`` composes a storage (any :class:`~memory_core.storage.BaseStorage`)
with an optional vector store and embedder for semantic recall (SPEC.md §6).
It follows the public Mastra memory API (``recall()``, ``listThreads()``),
with snake_case names.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self

from memory_core import codec
from memory_core.clock import to_us
from memory_core.errors import BackendError, NotFoundError, OwnershipError, ValidationError
from memory_core.models import (
    DateRange,
    Include,
    Message,
    MessageFilter,
    OrderBy,
    Page,
    PerPage,
    RecallResult,
    Thread,
    ThreadFilter,
)
from memory_core.storage import BaseStorage
from memory_core.validation import (
    check_bool,
    check_date_range,
    check_id,
    check_includes,
    check_json_object,
    check_non_negative_int,
    check_text,
    coerce_model,
)
from memory_core.vector import VectorPoint, VectorStore, chunk_text, message_text

if TYPE_CHECKING:
    from memory_core.embedders import Embedder

__all__ = ["Memory", "MemoryConfig", "SemanticRecall", "TitleGenerator", "WorkingMemory"]

log = logging.getLogger("memory_core")

Scope = Literal["resource", "thread"]
TitleGenerator = Callable[[Thread, list[Message]], Awaitable[str]]
"""``async (thread, new_messages) -> title``: called once a thread with an
empty title receives its first user message."""


@dataclass(frozen=True, slots=True)
class SemanticRecall:
    """Semantic recall settings (R-RECALL step 4).

    Attributes:
        top_k: vector hits to fetch (>= 1). Default 4.
        message_range: messages of context around each hit: an int for both
            sides or ``(before, after)``. Default 2.
        scope: ``"resource"`` searches every thread of the resource (needs a
            ``resource_id``); ``"thread"`` only the current thread.
    """

    top_k: int = 4
    message_range: int | tuple[int, int] = 2
    scope: Scope = "resource"

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
        schema: a JSON Schema; when set, working memory is JSON text that must
            validate against it.
    """

    enabled: bool = False
    scope: Scope = "resource"
    template: str | None = None
    schema: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """Memory behaviour (SPEC §6); per-call ``thread_config`` overrides it.

    Attributes:
        last_messages: default history page size for :meth:`Memory.recall`
            (int >= 0), or ``False`` for no history page. Default 10.
        semantic_recall: ``False`` (off), ``True`` (defaults) or
            :class:`SemanticRecall`.
        working_memory: :class:`WorkingMemory` settings.
        generate_title: optional :data:`TitleGenerator` hook.
    """

    last_messages: int | Literal[False] = 10
    semantic_recall: SemanticRecall | bool = False
    working_memory: WorkingMemory = field(default_factory=WorkingMemory)
    generate_title: TitleGenerator | None = None

    def semantic(self) -> SemanticRecall | None:
        """The effective semantic-recall settings, or None when off."""
        if self.semantic_recall is True:
            return SemanticRecall()
        return self.semantic_recall or None


def _check_config(config: MemoryConfig) -> MemoryConfig:
    if config.last_messages is not False:
        check_non_negative_int(config.last_messages, "config.last_messages")
    semantic = config.semantic()
    if semantic is not None:
        if isinstance(semantic.top_k, bool) or not isinstance(semantic.top_k, int) or semantic.top_k < 1:
            raise ValidationError("semantic_recall.top_k", f"must be an int >= 1, got {semantic.top_k!r}")
        before, after = semantic.window()
        check_non_negative_int(before, "semantic_recall.message_range")
        check_non_negative_int(after, "semantic_recall.message_range")
        if semantic.scope not in ("resource", "thread"):
            raise ValidationError("semantic_recall.scope", f"must be 'resource' or 'thread', got {semantic.scope!r}")
    wm = config.working_memory
    check_bool(wm.enabled, "working_memory.enabled")
    if wm.scope not in ("resource", "thread"):
        raise ValidationError("working_memory.scope", f"must be 'resource' or 'thread', got {wm.scope!r}")
    if wm.schema is not None:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(wm.schema)
        except SchemaError as exc:
            raise ValidationError("working_memory.schema", f"not a valid JSON Schema: {exc.message}") from None
    return config


class Memory:
    """Conversation memory over one storage and an optional vector store.

    Args:
        storage: any opened or unopened storage (``await memory_core.connect(url)``).
        vector: optional vector store for semantic recall (R-VEC).
        embedder: turns text into vectors; defaults to the lexical hashing
            embedder when a vector store is given.
        config: defaults for recall and working memory.
        owns_stores: close ``storage`` and ``vector`` on :meth:`close` (default
            True; pass False when they are shared).

    With a vector store, ``save_messages``, ``update_messages``,
    ``delete_messages`` and ``delete_thread`` keep the vectors in step
    synchronously: when a call returns, the store holds exactly one point set
    per stored message. If the vector write fails after the storage write, the
    call raises :class:`~memory_core.errors.BackendError` and
    :meth:`reindex` repairs the thread or resource.
    """

    def __init__(
        self,
        storage: BaseStorage,
        vector: VectorStore | None = None,
        embedder: Embedder | None = None,
        config: MemoryConfig | None = None,
        *,
        owns_stores: bool = True,
    ) -> None:
        self.storage = storage
        self.vector = vector
        if vector is not None and embedder is None:
            from memory_core.embedders import LexicalHashEmbedder

            embedder = LexicalHashEmbedder()
        self.embedder = embedder
        self.config = _check_config(config if config is not None else MemoryConfig())
        self._owns_stores = owns_stores

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
            return _check_config(thread_config)
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
            if name == "semantic_recall" and isinstance(value, Mapping):
                value = coerce_model(_snake(value), SemanticRecall, "thread_config.semantic_recall")
            if name == "working_memory" and isinstance(value, Mapping):
                value = coerce_model(_snake(value), WorkingMemory, "thread_config.working_memory")
            overrides[name] = value
        return _check_config(replace(self.config, **overrides))

    # ------------------------------------------------------------------ threads

    async def create_thread(
        self,
        resource_id: str,
        *,
        thread_id: str | None = None,
        title: str = "",
        metadata: Mapping[str, Any] | None = None,
    ) -> Thread:
        """Create (or replace) a thread; ``thread_id`` defaults to a new UUID4.

        Raises:
            ValidationError: bad id, title or metadata.
        """
        thread = Thread(thread_id or str(uuid.uuid4()), resource_id, title, dict(metadata or {}))
        return await self.storage.save_thread(thread)

    async def get_thread(self, thread_id: str, resource_id: str | None = None) -> Thread | None:
        """See :meth:`BaseStorage.get_thread`."""
        return await self.storage.get_thread(thread_id, resource_id)

    async def update_thread(
        self, thread_id: str, *, title: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Thread:
        """See :meth:`BaseStorage.update_thread`."""
        return await self.storage.update_thread(thread_id, title=title, metadata=metadata)

    async def delete_thread(self, thread_id: str) -> None:
        """Delete the thread, its messages and their vectors (unknown: no-op)."""
        await self.storage.delete_thread(thread_id)
        if self.vector is not None:
            await self.vector.delete_thread(thread_id)

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

        Copies keep ``created_at`` and order. ``message_limit`` keeps only the
        newest N; ``date_range`` only messages inside it. The clone's metadata is
        the source's, updated with ``metadata``, plus ``cloned_from`` naming the
        source. Returns ``(thread, messages)``.

        Raises:
            NotFoundError: no source thread.
            ValidationError: bad ids, limit or range.
        """
        check_id(source_id, "source_id")
        if message_limit is not None:
            check_non_negative_int(message_limit, "message_limit")
        check_date_range(date_range, "date_range")
        source = await self.storage.get_thread(source_id)
        if source is None:
            raise NotFoundError(f"thread {source_id!r} does not exist")
        flt = (
            None if date_range is None else MessageFilter(date_range=coerce_model(date_range, DateRange, "date_range"))
        )
        if message_limit is None:
            page = await self.storage.list_messages(source_id, filter=flt, per_page=False)
            originals = page.items
        else:
            page = await self.storage.page_messages(
                (source_id,), None, None, flt, 0, message_limit, None, None, newest=True
            )
            originals = page.items
        clone = Thread(
            new_id or str(uuid.uuid4()),
            source.resource_id,
            source.title if title is None else title,
            {**source.metadata, **(metadata or {}), "cloned_from": source_id},
        )
        thread = await self.storage.save_thread(clone)
        copies = [
            replace(m, id=f"{thread.id}:{uuid.uuid4().hex}", thread_id=thread.id, sequence=None) for m in originals
        ]
        saved = await self.save_messages(copies)
        return thread, saved

    # ------------------------------------------------------------------ messages

    async def save_messages(self, messages: Sequence[Message | Mapping[str, Any]]) -> list[Message]:
        """Save messages (see :meth:`BaseStorage.save_messages`), then embed them
        into the vector store and run the ``generate_title`` hook.

        Raises:
            BackendError: the vector write failed after the messages were saved
                (repair with :meth:`reindex`).
        """
        saved = await self.storage.save_messages(messages)
        await self._index(saved)
        if self.config.generate_title is not None and saved:
            await self._generate_titles(saved)
        return saved

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

    async def delete_messages(self, ids: Sequence[str]) -> None:
        """Delete messages and their vectors (unknown ids ignored)."""
        await self.storage.delete_messages(ids)
        if self.vector is not None and ids:
            await self._vector_call("delete_messages", self.vector.delete_messages(list(ids)))

    async def get_messages(self, ids: Sequence[str]) -> list[Message]:
        """See :meth:`BaseStorage.get_messages`."""
        return await self.storage.get_messages(ids)

    async def list_messages(self, thread_id: str | Sequence[str], **options: Any) -> Page[Message]:
        """See :meth:`BaseStorage.list_messages`."""
        return await self.storage.list_messages(thread_id, **options)

    async def reindex(self, *, thread_id: str | None = None, resource_id: str | None = None) -> int:
        """Re-embed every message of one thread or one resource, replacing their
        vectors: the repair path after a failed vector write. Returns the number
        of messages indexed.

        Raises:
            ValidationError: neither or both of ``thread_id``/``resource_id``.
        """
        if (thread_id is None) == (resource_id is None):
            raise ValidationError("reindex", "give exactly one of thread_id or resource_id")
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
    ) -> RecallResult:
        """The messages an agent should see for its next turn (R-RECALL).

        1. With ``resource_id`` the thread must belong to it. A missing thread
           is a NotFoundError unless semantic recall has resource scope.
        2. ``per_page`` defaults to ``last_messages`` (``False`` there and no
           ``per_page``: no history page, only recalled context).
        3. Without ``order_by`` the page is the newest ``per_page`` messages
           (page 1 = the next older block), returned oldest first.
        4. With ``vector_search_string`` and semantic recall on, the ``top_k``
           nearest messages (in the thread, or across the resource) become
           includes with ``message_range`` context around each.
        5. Everything is merged and de-duplicated (§5).

        Returns:
            RecallResult; ``semantic_hits`` lists hit message ids, best first.

        Raises:
            ValidationError: bad arguments; resource scope without a resource.
            NotFoundError: missing thread (unless resource scope).
            OwnershipError: the thread belongs to another resource.
        """
        config = self._config(thread_config)
        check_id(thread_id, "thread_id")
        if resource_id is not None:
            check_id(resource_id, "resource_id")
        if vector_search_string is not None and type(vector_search_string) is not str:
            raise ValidationError("vector_search_string", "must be a str")
        includes = check_includes(include)
        semantic = config.semantic()
        thread = await self.storage.get_thread(thread_id)
        if thread is None:
            if semantic is None or semantic.scope != "resource":
                raise NotFoundError(f"thread {thread_id!r} does not exist")
        elif resource_id is not None and thread.resource_id != resource_id:
            raise OwnershipError(f"thread {thread_id!r} does not belong to resource {resource_id!r}")
        owner = resource_id if resource_id is not None else (thread.resource_id if thread else None)
        if per_page is None:
            per_page = 0 if config.last_messages is False else config.last_messages
        hits: list[str] = []
        if vector_search_string and vector_search_string.strip() and semantic is not None and self.vector is not None:
            hits = await self._semantic_hits(vector_search_string, semantic, thread_id, owner)
            before, after = semantic.window()
            includes += [Include(hit, before, after) for hit in hits]
        result = await self.storage.page_messages(
            (thread_id,), resource_id, includes, filter, page, per_page, order_by, cursor, newest=True
        )
        return RecallResult(
            result.items, result.total, result.page, result.per_page, result.has_more, result.next_cursor, hits
        )

    async def _semantic_hits(
        self, text: str, semantic: SemanticRecall, thread_id: str, resource_id: str | None
    ) -> list[str]:
        assert self.vector is not None and self.embedder is not None
        if semantic.scope == "resource" and resource_id is None:
            raise ValidationError("resource_id", "semantic recall with resource scope needs a resource_id")
        query = await self.embedder.embed([text])
        if semantic.scope == "thread":
            found = await self.vector.search(query[0], semantic.top_k, thread_id=thread_id)
        else:
            found = await self.vector.search(query[0], semantic.top_k, resource_id=resource_id)
        return [hit.message_id for hit in found]

    # ------------------------------------------------------------------ working memory

    async def get_working_memory(
        self,
        thread_id: str,
        resource_id: str | None = None,
        thread_config: MemoryConfig | Mapping[str, Any] | None = None,
    ) -> str | None:
        """The stored working memory (or the template while none is stored).

        Scope ``resource`` reads ``Resource.working_memory`` of the thread's
        resource; scope ``thread`` reads ``thread.metadata["working_memory"]``.

        Raises:
            ValidationError: working memory is not enabled.
            NotFoundError / OwnershipError: as for :meth:`recall`.
        """
        config = self._config(thread_config).working_memory
        thread = await self._owned_thread(thread_id, resource_id, config)
        if config.scope == "thread":
            value = thread.metadata.get("working_memory")
        else:
            resource = await self.storage.get_resource(thread.resource_id)
            value = None if resource is None else resource.working_memory
        return value if isinstance(value, str) else config.template

    async def update_working_memory(
        self,
        thread_id: str,
        working_memory: str | Mapping[str, Any],
        resource_id: str | None = None,
        thread_config: MemoryConfig | Mapping[str, Any] | None = None,
    ) -> str:
        """Replace the working memory atomically; returns the stored text.

        With a schema, ``working_memory`` is a dict or JSON text that must
        validate against it (nothing is written otherwise).

        Raises:
            ValidationError: not enabled, bad type, or schema violation.
        """
        config = self._config(thread_config).working_memory
        if isinstance(working_memory, Mapping):
            text = codec.dumps(check_json_object(dict(working_memory), "working_memory"))
        else:
            text = check_text(working_memory, "working_memory")
        if config.schema is not None:
            _validate_schema(text, config.schema)
        thread = await self._owned_thread(thread_id, resource_id, config)
        if config.scope == "thread":
            await self.storage.update_thread(thread_id, metadata={"working_memory": text})
        else:
            await self.storage.update_resource(thread.resource_id, working_memory=text)
        return text

    async def _owned_thread(self, thread_id: str, resource_id: str | None, config: WorkingMemory) -> Thread:
        if not config.enabled:
            raise ValidationError("working_memory.enabled", "working memory is not enabled in the config")
        thread = await self.storage.get_thread(thread_id)
        if thread is None:
            raise NotFoundError(f"thread {thread_id!r} does not exist")
        if resource_id is not None and thread.resource_id != resource_id:
            raise OwnershipError(f"thread {thread_id!r} does not belong to resource {resource_id!r}")
        return thread


def _validate_schema(text: str, schema: dict[str, Any]) -> None:
    from jsonschema import Draft202012Validator

    try:
        value = codec.loads(text)
    except ValueError as exc:
        raise ValidationError("working_memory", f"must be JSON when a schema is set: {exc}") from None
    error = next(iter(Draft202012Validator(schema).iter_errors(value)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise ValidationError("working_memory", f"does not match the schema at {where}: {error.message}")


def _snake(value: Mapping[str, Any]) -> dict[str, Any]:
    aliases = {"topK": "top_k", "messageRange": "message_range"}
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "messageRange" and isinstance(item, Mapping):
            item = (item.get("before", 0), item.get("after", 0))
        out[aliases.get(key, key)] = item
    return out

"""Recall composition: the messages an agent sees for its next turn (R-RECALL).

:class:`Recaller` runs one recall top-down: it checks the call, ranks the
semantic hits (:meth:`Recaller.rank`, the one place a further ranking plugs
in), makes one storage read (the history page, the include and hit windows
and the thread's owner, :meth:`~memory_core.storage.BaseStorage.message_parts`)
and composes the answer in memory (:func:`compose`: merge, sources, token
budget, gaps). :class:`~memory_core.memory.Memory` holds one and its
:meth:`~memory_core.memory.Memory.recall` documents the rules.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memory_core.builders import builder
from memory_core.config import MemoryConfig, SemanticRecall, recall_settings
from memory_core.embedders import Embedder, dimension_mismatch, relevance_floor
from memory_core.errors import NotFoundError, OwnershipError, ValidationError
from memory_core.hybrid import search_ids
from memory_core.indexing import check_recorded
from memory_core.models import (
    Include,
    Message,
    MessageFilter,
    OrderBy,
    PerPage,
    RecallResult,
    RecallSource,
    Thread,
)
from memory_core.storage import WINDOW_SIDE_MAX, MessageParts, Storage, order_key
from memory_core.tokens import TokenCounter, newest_within
from memory_core.validation import MAX_TOP_K, check_recall
from memory_core.vector import VectorStore

__all__ = ["Recaller", "compose"]

log = logging.getLogger("memory_core")

# recall builds these once per call from checked values: builders skip the
# frozen dataclass __init__'s object.__setattr__ per field (positional, in field order).


def _result(
    messages: list[Message],
    total: int | None,
    page: int,
    per_page: PerPage,
    has_more: bool,
    next_cursor: str | None,
    semantic_hits: list[str],
    sources: list[RecallSource],
    gaps: list[tuple[str, str]],
    warnings: list[str],
    tokens: int | None,
    dropped: int,
    /,
) -> RecallResult:
    raise NotImplementedError  # a declaration: builder() reads its signature


def _include(id: str, with_previous: int, with_next: int, thread_id: str | None, /) -> Include:
    raise NotImplementedError  # a declaration: builder() reads its signature


_new_result = builder(RecallResult, _result)
_new_include = builder(Include, _include)


@dataclass(frozen=True, slots=True)
class Recaller:
    """Runs recalls over one storage and an optional vector store.

    Attributes:
        storage: where messages and threads are read.
        vector: the vector store searched for semantic hits (None: no search).
        embedder: embeds the search text (None exactly when ``vector`` is).
        token_counter: counts tokens for ``max_tokens`` (R-BUDGET).
        checked: names of embedders whose fit to the index's record was
            checked (by a search, or by the owning Memory's first write):
            checked once, as writes are, so a recall goes back into the
            vector store only to search.
    """

    storage: Storage
    vector: VectorStore | None
    embedder: Embedder | None
    token_counter: TokenCounter
    checked: set[str] = field(default_factory=set)

    async def recall(
        self,
        config: MemoryConfig,
        thread_config: MemoryConfig | Mapping[str, Any] | None,
        thread_id: str,
        resource_id: str | None,
        vector_search_string: str | None,
        per_page: PerPage | None,
        page: int,
        include: Sequence[Include | Mapping[str, Any]] | None,
        filter: MessageFilter | Mapping[str, Any] | None,
        order_by: OrderBy | Mapping[str, Any] | None,
        cursor: str | None,
        max_tokens: int | None,
        total: bool,
    ) -> RecallResult:
        """One recall under ``config`` overridden by ``thread_config``; the
        arguments, result and errors are
        :meth:`~memory_core.memory.Memory.recall`'s."""
        last_messages, semantic, (before, after) = recall_settings(config, thread_config)
        if per_page is None:
            per_page = last_messages
        includes, max_tokens, history = check_recall(
            thread_id,
            resource_id,
            vector_search_string,
            semantic is not None,
            self.vector is not None or (semantic is not None and semantic.mode == "lexical"),
            max_tokens,
            include,
            (filter, page, per_page, order_by, cursor, total),
        )
        text = vector_search_string if semantic is not None and vector_search_string else ""
        # Windows are read one message wider on each side: the extra neighbour
        # tells whether two runs of the result touch (no gap) and is cut off again.
        wide = [_new_include(i.id, _wider(i.with_previous), _wider(i.with_next), i.thread_id) for i in includes]
        threads = (thread_id,)
        if semantic is None or not text.strip():
            parts = await self.storage.read_message_parts(history, wide, threads)
            owner = _owner(parts.threads.get(thread_id), thread_id, resource_id, semantic)
            missing = _missing_thread(parts.threads.get(thread_id), thread_id, owner)
            return compose(parts, includes, parts.windows, [], [], (0, 0), max_tokens, missing, self.token_counter)
        warnings: list[str] = []
        if semantic.exclude_recent:
            # The hits must lie outside the page: read the page, rank, read the hits' windows.
            parts = await self.storage.read_message_parts(history, wide, threads)
            owner = _owner(parts.threads.get(thread_id), thread_id, resource_id, semantic)
            recent = {m.id for m in parts.main}
            extra = min(semantic.top_k + len(recent), MAX_TOP_K) - semantic.top_k
            found, searched = await self.rank(text, semantic, thread_id, owner, extra)
            hits = [hit for hit in found if hit not in recent][: semantic.top_k]
            hit_windows, _ = await self.storage.read_windows(
                [_new_include(hit, _wider(before), _wider(after), None) for hit in hits], resource_id
            )
            include_windows = parts.windows
        else:
            # Rank first, then one read: the page, every window and the owner.
            owner = resource_id
            if owner is None and semantic.scope == "resource":
                _, known = await self.storage.read_windows((), None, threads)
                owner = _owner(known.get(thread_id), thread_id, None, semantic)
            hits, searched = await self.rank(text, semantic, thread_id, owner, 0)
            hit_includes = [_new_include(hit, _wider(before), _wider(after), None) for hit in hits]
            parts = await self.storage.read_message_parts(history, wide + hit_includes, threads)
            owner = _owner(parts.threads.get(thread_id), thread_id, resource_id, semantic)
            include_windows, hit_windows = parts.windows[: len(wide)], parts.windows[len(wide) :]
        warnings += _missing_thread(parts.threads.get(thread_id), thread_id, owner)
        if not searched:  # nothing in the index at all (not: everything under the floor)
            warnings += await self._index_warnings(semantic, thread_id, owner)
        return compose(
            parts,
            includes,
            include_windows,
            hits,
            hit_windows,
            (before, after),
            max_tokens,
            warnings,
            self.token_counter,
        )

    async def rank(
        self, text: str, semantic: SemanticRecall, thread_id: str, resource_id: str | None, extra: int
    ) -> tuple[list[str], bool]:
        """The ids of the ``top_k + extra`` best messages in the scope under
        ``semantic.mode`` (:func:`memory_core.hybrid.search_ids`), best first,
        those under ``semantic.min_score`` left out of the vector ranking
        (``"auto"``: the floor the embedder declares, :func:`relevance_floor`);
        and whether the index held anything in the scope at all.

        Raises:
            ValidationError: resource scope without a resource.
            EmbedderMismatchError: the index records another embedder of
                this one's dimension (:func:`~memory_core.indexing.check_recorded`).
        """
        if semantic.scope == "resource" and resource_id is None:
            raise ValidationError("resource_id", "semantic recall with resource scope needs a resource_id")
        if self.vector is not None and self.embedder is not None and self.embedder.name not in self.checked:
            await check_recorded(self.vector, self.embedder)
            self.checked.add(self.embedder.name)
        return await search_ids(
            self.storage,
            self.vector,
            self.embedder,
            text,
            semantic.top_k + extra,
            mode=semantic.mode,
            thread_id=thread_id if semantic.scope == "thread" else None,
            resource_id=resource_id,
            min_score=relevance_floor(self.embedder) if semantic.min_score == "auto" else semantic.min_score,
            weights=(semantic.vector_weight, semantic.lexical_weight),
        )

    async def _index_warnings(self, semantic: SemanticRecall, thread_id: str, owner: str | None) -> list[str]:
        """A warning when the search found nothing but storage holds messages
        in its scope (a vector index built by an embedder of another
        dimension, or empty or behind)."""
        if self.vector is not None and self.embedder is not None:
            mismatch = dimension_mismatch(self.embedder, await self.vector.dimension_counts())
            if mismatch is not None:
                return [mismatch]
        if semantic.scope == "thread" or owner is None:
            stored = (await self.storage.list_messages(thread_id, per_page=0)).counted_total
            scope, repair = f"thread {thread_id!r}", f"reindex(thread_id={thread_id!r})"
        else:
            stored = (await self.storage.list_messages_by_resource(owner, per_page=0)).counted_total
            scope, repair = f"resource {owner!r}", f"reindex(resource_id={owner!r})"
        if not stored:
            return []
        return [
            f"the vector index has no vectors for {scope} while storage holds {stored} messages there: "
            f"it is empty or behind its storage (an in-memory vector store after a restart?); "
            f"repair with await memory.{repair}"
        ]


def compose(
    parts: MessageParts,
    includes: list[Include],
    include_windows: list[list[Message]],
    hits: list[str],
    hit_windows: list[list[Message]],
    hit_window: tuple[int, int],
    max_tokens: int | None,
    warnings: list[str],
    token_counter: TokenCounter,
) -> RecallResult:
    """Merge the history page and the windows, mark sources, apply the
    token budget and find the gaps (R-SOURCE, R-BUDGET); no I/O.

    Args:
        parts: the read: the history page (``parts.main``) and its query.
        includes: the checked includes, each with its window (read one wider
            on each side) in ``include_windows``.
        hits: semantic hit ids, best first, each with its window in
            ``hit_windows``; ``hit_window`` is ``(before, after)`` to show.
            A hit its window lacks (storage no longer holds the message: an
            orphaned vector) is dropped, from the messages and from
            ``semantic_hits`` alike.
        max_tokens: the token budget, or None; ``token_counter`` counts.
        warnings: logged, and returned in the result.
    """
    held = [(hit, w) for hit, w in zip(hits, hit_windows, strict=True) if any(m.id == hit for m in w)]
    hits, hit_windows = [hit for hit, _ in held], [w for _, w in held]
    adjacent: set[tuple[str, str]] = set()  # (older id, newer id) known to be neighbours in their thread
    query = parts.query
    unfiltered = query.created_from_us is None and query.created_to_us is None and not query.metadata
    if unfiltered and (includes or hits or max_tokens is not None):
        # Unfiltered: the page is a run of its thread, read in the query's order.
        ids = [m.id for m in (reversed(parts.main) if query.descending else parts.main)]
        adjacent.update(itertools.pairwise(ids))
    before, after = hit_window
    shown_includes = [
        _cut(w, i.id, i.with_previous, i.with_next, adjacent) for i, w in zip(includes, include_windows, strict=True)
    ]
    shown_hits = [_cut(w, hit, before, after, adjacent) for hit, w in zip(hits, hit_windows, strict=True)]
    messages, has_more = parts.merged(shown_includes + shown_hits)
    tokens: int | None = None
    dropped = 0
    if max_tokens is not None:
        kept, tokens = newest_within(sorted(messages, key=order_key), max_tokens, token_counter)
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
        parts.total if parts.wants_total else None,
        parts.page,
        parts.per_page,
        has_more,
        parts.next_cursor,
        hits,
        sources,
        gaps,
        warnings,
        tokens,
        dropped,
    )


def _owner(
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


def _missing_thread(thread: Thread | None, thread_id: str, owner: str | None) -> list[str]:
    """A warning naming ``thread_id`` when it names no thread (R-RECALL step
    1 lets a resource-scoped recall run without it: the page is empty, the
    search covers the resource), so a mistyped or not yet created thread is
    told apart from one that holds nothing; else ``[]``."""
    if thread is not None:
        return []
    return [
        f"thread {thread_id!r} does not exist: recall read no history page for it (semantic recall has resource "
        f"scope, so any hits come from the threads of resource {owner!r}); check the thread id, or create the "
        "thread first"
    ]


def _wider(side: int) -> int:
    """A window side read one message wider (to tell touching runs from
    gaps), at most :data:`~memory_core.storage.WINDOW_SIDE_MAX`: a side of
    2**63 - 1 is valid, and one more is not an int64."""
    return min(side + 1, WINDOW_SIDE_MAX)


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

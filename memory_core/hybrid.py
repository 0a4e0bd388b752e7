"""The ranking a recall's search returns under ``SemanticRecall.mode`` (issue 23).

- ``"vector"``: the vector store's cosine ranking (R-RECALL step 4, as before);
- ``"lexical"``: :func:`memory_core.lexical.bm25_rank` over the scope's
  messages;
- ``"hybrid"``: both rankings, each :data:`FUSION_DEPTH` deep (or the
  request's size when larger), computed concurrently (the search waits for
  the slower of the two, not their sum), fused by weighted reciprocal rank
  fusion (:func:`reciprocal_rank_fusion`).

Where the lexical ranking comes from: the vector store's lexical index
when it keeps one (:mod:`memory_core.lexical_index`: postings of the query's
terms, scored by the core's BM25, kept in step with the vectors); otherwise
(no vector store, or one that declares no lexical index) the core reads the
scope's messages from storage (the thread's, or every thread of the
resource) and scores them with the same BM25 of :mod:`memory_core.lexical`,
at the price of a read of the whole scope per search. Both give the same
ranking for an index in step with storage. The reasons are in
``docs/design.md``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypeVar

import anyio

from memory_core.embedders import Embedder, LexicalHashEmbedder
from memory_core.errors import ValidationError
from memory_core.lexical import bm25_rank
from memory_core.lexical_index import LexicalIndex
from memory_core.models import Message
from memory_core.storage import Storage
from memory_core.validation import check_message_page
from memory_core.vector import VectorStore, message_text

__all__ = ["FUSION_DEPTH", "RRF_K", "SEARCH_MODES", "SearchMode", "reciprocal_rank_fusion", "search_ids"]

A = TypeVar("A")
B = TypeVar("B")

SearchMode = Literal["vector", "lexical", "hybrid"]
SEARCH_MODES: tuple[SearchMode, ...] = ("vector", "lexical", "hybrid")

RRF_K = 60
"""The rank constant of reciprocal rank fusion (Cormack, Clarke & Büttcher,
"Reciprocal Rank Fusion outperforms Condorcet and individual Rank Learning
Methods", SIGIR 2009, which fixes k = 60)."""

FUSION_DEPTH = 50
"""How deep each ranking is read before fusion (hybrid mode): the fused list
can only hold messages that are in the top ``FUSION_DEPTH`` of at least one
ranking."""


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], weights: Sequence[float], k: int = RRF_K
) -> list[tuple[str, float]]:
    """Weighted reciprocal rank fusion (Cormack et al. 2009).

    ``score(d) = sum_i weights[i] / (k + rank_i(d))`` with ranks from 1, over
    the rankings that hold ``d``.

    Args:
        rankings: message ids, best first, one list per ranking (ids distinct
            within a list).
        weights: one float >= 0 per ranking.
        k: the rank constant (int >= 1, default :data:`RRF_K`).

    Returns:
        ``(message_id, fused score)`` for every id of any ranking, by score
        descending, then id ascending.

    Raises:
        ValidationError: ``weights`` not one non-negative number per ranking,
            or a bad ``k``.
    """
    if len(weights) != len(rankings):
        raise ValidationError("weights", f"needs one weight per ranking ({len(rankings)}), got {len(weights)}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValidationError("k", f"must be an int >= 1, got {k!r}")
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, message_id in enumerate(ranking, start=1):
            scores[message_id] = scores.get(message_id, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


async def _scope_messages(storage: Storage, thread_id: str | None, resource_id: str | None) -> list[Message]:
    """Every message of the thread (or else of the resource), R-ORDER
    ascending, in one checked read (the caller checked both ids, and that
    one is given)."""
    scope = (thread_id,) if thread_id is not None else None
    owner = None if thread_id is not None else resource_id
    # thread_ids, resource_id, include, filter, page, per_page, order_by, cursor, total, newest
    page, _ = check_message_page(scope, owner, None, None, 0, False, None, None, False, False)
    return list((await storage.read_message_parts(page)).main)


async def search_ids(
    storage: Storage,
    vector: VectorStore | None,
    embedder: Embedder | None,
    text: str,
    limit: int,
    *,
    mode: SearchMode,
    thread_id: str | None,
    resource_id: str | None,
    min_score: float | None,
    weights: tuple[float, float],
) -> tuple[list[str], bool]:
    """The ids of the ``limit`` best messages of one scope for ``text``.

    Args:
        storage / vector / embedder: the Memory's (lexical mode needs no
            vector store or embedder).
        text: the search string.
        limit: how many ids (int >= 1).
        mode: see the module notes.
        thread_id: search this thread (thread scope), or None.
        resource_id: search this resource (resource scope, when
            ``thread_id`` is None). Both ids are checked by the caller
            (``Memory.recall`` checks its call once): the vector search
            takes them as they are (``VectorStore.search_checked``).
        min_score: cosine floor applied to the vector ranking (before
            fusion); the lexical ranking has none (every lexical hit shares
            at least one term with ``text``). With a floor and the lexical
            hashing embedder, a vector hit must also share a feature with
            ``text`` (:meth:`~memory_core.embedders.LexicalHashEmbedder.shares_feature`:
            a score from hash collisions alone is not relevance); its
            message is read from storage for that (one read of the hits).
        weights: ``(vector, lexical)`` fusion weights (hybrid mode).

    Returns:
        ``(ids best first, searched)``; ``searched`` is whether the vector
        index held anything in the scope (always True in lexical mode, which
        needs no index): False asks the caller to warn about an index that
        is empty or behind.

    Raises:
        ValidationError: vector or hybrid mode without a vector store and
            embedder (field ``vector``).
    """
    if mode != "vector" and thread_id is None and resource_id is None:
        raise ValidationError("resource_id", "a lexical search needs a thread_id or a resource_id")
    if mode == "lexical":
        return await _lexical_ranking(storage, vector, text, limit, thread_id, resource_id), True
    if vector is None or embedder is None:
        raise ValidationError("vector", f"semantic recall in {mode!r} mode needs a vector store and an embedder")
    if mode == "vector":
        return await _vector_ranking(storage, vector, embedder, text, limit, thread_id, resource_id, min_score)
    depth = max(limit, FUSION_DEPTH)
    # Both rankings at once: a hybrid search waits for the slower, not the sum.
    (vector_ids, searched), lexical_ids = await _both(
        functools.partial(_vector_ranking, storage, vector, embedder, text, depth, thread_id, resource_id, min_score),
        functools.partial(_lexical_ranking, storage, vector, text, depth, thread_id, resource_id),
    )
    fused = reciprocal_rank_fusion([vector_ids, lexical_ids], weights)
    return [mid for mid, _ in fused[:limit]], searched


async def _vector_ranking(
    storage: Storage,
    vector: VectorStore,
    embedder: Embedder,
    text: str,
    depth: int,
    thread_id: str | None,
    resource_id: str | None,
    min_score: float | None,
) -> tuple[list[str], bool]:
    """The vector store's ``depth`` best ids for ``text`` (at or above
    ``min_score``; with the lexical hashing embedder, sharing a feature with
    ``text`` too) and whether the index held anything in the scope."""
    query = await embedder.embed([text])
    found = await vector.search_checked(query[0], depth, thread_id, None if thread_id is not None else resource_id)
    ids = [hit.message_id for hit in found if min_score is None or hit.score >= min_score]
    if min_score is not None and ids and isinstance(embedder, LexicalHashEmbedder):
        related = {m.id for m in await storage.get_messages(ids) if embedder.shares_feature(text, message_text(m))}
        ids = [mid for mid in ids if mid in related]
    return ids, bool(found)


async def _lexical_ranking(
    storage: Storage,
    vector: VectorStore | None,
    text: str,
    depth: int,
    thread_id: str | None,
    resource_id: str | None,
) -> list[str]:
    """The ``depth`` best ids of the scope by BM25: from the vector store's
    lexical index when it keeps one, else composed over the scope read from
    storage."""
    if isinstance(vector, LexicalIndex) and vector.lexical_index:
        if thread_id is not None:
            ranked = await vector.lexical_search(text, depth, thread_id=thread_id)
        else:
            ranked = await vector.lexical_search(text, depth, resource_id=resource_id)
    else:
        messages = await _scope_messages(storage, thread_id, resource_id)
        ranked = bm25_rank(text, ((m.id, message_text(m)) for m in messages), depth)
    return [mid for mid, _ in ranked]


async def _both(first: Callable[[], Awaitable[A]], second: Callable[[], Awaitable[B]]) -> tuple[A, B]:
    """Await ``first()`` and ``second()`` concurrently (one anyio task
    group) and return both results. When one raises, the other is cancelled
    and that exception itself propagates (the first raised, not an
    ``ExceptionGroup``), so a caller sees the error types a single search
    raises."""
    results: dict[int, Any] = {}
    raised: list[BaseException] = []

    async def run(slot: int, call: Callable[[], Awaitable[Any]]) -> None:
        try:
            results[slot] = await call()
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:
            raised.append(exc)
            raise

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(run, 0, first)
            group.start_soon(run, 1, second)
    except BaseExceptionGroup:
        if raised:
            raise raised[0] from None
        raise
    return results[0], results[1]

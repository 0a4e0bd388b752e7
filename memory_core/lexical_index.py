"""The lexical index beside the vectors (issue 23): what a vector store
that declares one keeps, and the contract the core calls.

A vector store with ``lexical_index = True`` keeps, next to its points, one
document per indexed message: the message's ids, its length (terms) and its
term counts, tokenised by the core (:func:`memory_core.lexical.document_terms`
of :func:`memory_core.vector.message_text`). It is an inverted index: a
search reads, for the searched thread or resource, the number of documents,
their total length and the query terms' document frequencies, then the
postings (documents and counts) of the query's terms from the rarest,
stopping once the rest cannot change the top (:func:`search_index`:
MaxScore pruning, exact), and the core scores them
with the one BM25
(:func:`memory_core.lexical.bm25_score`), so the ranking is the reference
ranking (:func:`memory_core.lexical.bm25_rank` over the scope) whenever the
index holds the scope's messages.

Kept in step by the calls that keep vectors in step: ``index_documents``
(after a save, a changed content, a move, a copy or import, a reindex:
:class:`memory_core.indexing.VectorIndex`), and the vector store's
``delete_messages`` / ``delete_thread`` / ``delete_resource`` (delete,
erasure, prune), which drop documents with points.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from memory_core.errors import ValidationError
from memory_core.lexical import bm25_idf, bm25_score, bm25_term_bound, document_terms, top_scores
from memory_core.models import Message
from memory_core.vector_layout import PointFilter, message_text

__all__ = [
    "LexicalDocument",
    "LexicalIndex",
    "LexicalPostings",
    "LexicalPrimitives",
    "LexicalStatistics",
    "ReadPostings",
    "ReadStatistics",
    "copied_document",
    "document_of",
    "search_index",
]


@dataclass(frozen=True, slots=True)
class LexicalDocument:
    """One message's entry in a lexical index.

    Attributes:
        message_id / thread_id / resource_id: the message's ids (R-ID).
        length: its number of terms (int >= 0; 0 for a message without text,
            which still counts as a document of its scope).
        counts: term -> count (each >= 1), the :func:`~memory_core.lexical.tokenize`
            terms of its text.
    """

    message_id: str
    thread_id: str
    resource_id: str
    length: int
    counts: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class LexicalStatistics:
    """A scope's collection statistics for a query's terms.

    Attributes:
        documents: documents in the scope (``N`` of BM25).
        total_length: the sum of their lengths.
        frequencies: query term -> documents of the scope holding it (every
            term asked for; 0 when none holds it).
    """

    documents: int
    total_length: int
    frequencies: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class LexicalPostings:
    """Documents a lexical index returns for one scope.

    Attributes:
        matches: ``(message_id, length, term -> count)`` of each document
            read, its counts of the asked terms it holds (ids distinct).
    """

    matches: list[tuple[str, int, dict[str, int]]]


ReadStatistics = Callable[[tuple[str, ...]], Awaitable[LexicalStatistics]]
ReadPostings = Callable[[tuple[str, ...], tuple[str, ...]], Awaitable[LexicalPostings]]


async def search_index(
    terms: tuple[str, ...], top_k: int, statistics: ReadStatistics, postings: ReadPostings
) -> list[tuple[str, float]]:
    """Exact BM25 top ``top_k`` of one scope from a lexical index, reading the
    postings of the query's terms from the rarest and stopping as soon as
    the rest cannot change the answer (MaxScore, Turtle & Flood 1995).

    Reads the scope's statistics; then, term by term from the smallest
    document frequency, the documents holding the term with their counts of
    every query term, each candidate scored exactly. A document holding
    none of the terms read yet scores at most the sum of the other terms'
    :func:`~memory_core.lexical.bm25_term_bound`; once the ``top_k``-th
    candidate scores strictly more, the candidates' top is the answer.

    Args:
        terms: the query's terms (distinct, sorted).
        top_k: how many (int >= 1).
        statistics: reads :class:`LexicalStatistics` of ``terms``.
        postings: ``postings(selecting, counted)`` reads the documents
            holding any ``selecting`` term, with their counts of ``counted``.

    Returns:
        What :func:`memory_core.lexical.bm25_rank` returns over the scope.
    """
    stats = await statistics(terms)
    present = sorted((n, term) for term, n in stats.frequencies.items() if n > 0)
    if not present or stats.documents == 0:
        return []
    counted = tuple(sorted(term for _, term in present))
    idf = {term: bm25_idf(n, stats.documents) for n, term in present}
    mean_length = stats.total_length / stats.documents
    bounds = [bm25_term_bound(n, stats.documents) for n, _ in present]
    scored: set[str] = set()
    best: list[tuple[str, float]] = []
    for index, (_, term) in enumerate(present):
        read = await postings((term,), counted)
        new: list[tuple[str, float]] = []
        for message_id, length, counts in read.matches:
            if message_id not in scored:  # a document's score is final once read (all its counts)
                scored.add(message_id)
                new.append((message_id, bm25_score(counts, length, idf, mean_length)))
        # Final scores: a document once out of the top stays out.
        best = top_scores([*best, *new], top_k)
        # The margin covers rounding in the sums (a bound is not tight anyway).
        if len(best) == top_k and best[-1][1] > sum(bounds[index + 1 :]) * (1 + 1e-9):
            break
    return best


def document_of(message: Message) -> LexicalDocument:
    """The lexical document of a stored message (``resource_id`` set).

    Raises:
        ValidationError: field ``messages``: the message has no
            ``resource_id`` (not a stored message).
    """
    if message.resource_id is None:
        raise ValidationError("messages", f"message {message.id!r} is not a stored message (no resource_id)")
    length, counts = document_terms(message_text(message))
    return LexicalDocument(message.id, message.thread_id, message.resource_id, length, counts)


def copied_document(
    document: LexicalDocument, mapping: Mapping[str, str], thread_id: str, resource_id: str
) -> LexicalDocument:
    """The document of a clone's copy of ``document``'s message: message id
    ``mapping[document.message_id]`` in ``thread_id`` of ``resource_id``,
    length and counts kept (the copy's text is the source's)."""
    return LexicalDocument(mapping[document.message_id], thread_id, resource_id, document.length, document.counts)


@runtime_checkable
class LexicalIndex(Protocol):
    """A vector store's lexical index, as the core calls it
    (:class:`memory_core.vector.BaseVectorStore` implements it; a store
    whose ``lexical_index`` is False has none, and the core composes the
    lexical ranking from storage instead)."""

    @property
    def lexical_index(self) -> bool:
        """Whether this store keeps a lexical index."""

    async def index_documents(self, documents: Sequence[LexicalDocument]) -> None:
        """Insert or replace these messages' documents."""

    async def lexical_search(
        self, query: str, top_k: int, *, thread_id: str | None = None, resource_id: str | None = None
    ) -> list[tuple[str, float]]:
        """The ``top_k`` best ``(message_id, BM25 score)`` of one scope."""

    async def count_documents(self, resource_id: str | None = None, thread_id: str | None = None) -> int:
        """How many documents the index holds under the filter."""

    async def document_ids(self, resource_id: str | None = None, thread_id: str | None = None) -> dict[str, str]:
        """``{message_id: resource_id}`` of the documents under the filter."""


class LexicalPrimitives:
    """The lexical-index primitives of :class:`memory_core.vector.BaseVectorStore`
    (a base of it): a store that sets ``lexical_index = True`` implements
    them; the base's public ``index_documents``, ``lexical_search``,
    ``count_documents`` and ``document_ids`` and its deletes and ``destroy`` call them."""

    lexical_index: ClassVar[bool] = False
    """Whether the store keeps a lexical index (default False: the core
    composes the lexical ranking from storage)."""

    async def _write_documents(self, documents: Sequence[LexicalDocument]) -> None:
        """Insert or replace these documents (distinct message ids), each
        keyed by its message id; visible when this returns."""
        raise NotImplementedError(f"{type(self).__name__} sets lexical_index but has no _write_documents")

    async def _delete_documents(self, flt: PointFilter) -> None:
        """Delete every document matching ``flt`` (never empty)."""
        raise NotImplementedError(f"{type(self).__name__} sets lexical_index but has no _delete_documents")

    async def _copy_documents(self, mapping: dict[str, str], thread_id: str, resource_id: str) -> None:
        """For each ``old -> new`` of ``mapping`` (a clone's copies) whose
        ``old`` has a document, write the document of ``new`` in
        ``thread_id`` of ``resource_id`` (:func:`copied_document`: length
        and counts kept), inside the store (no text is read or tokenised);
        a ``new`` already indexed is replaced. Called by
        :meth:`memory_core.vector.BaseVectorStore.copy_messages` when the
        store copied the points."""
        raise NotImplementedError(f"{type(self).__name__} sets lexical_index but has no _copy_documents")

    async def _read_statistics(self, terms: tuple[str, ...], flt: PointFilter) -> LexicalStatistics:
        """The scope's document count and total length and each of ``terms``'
        document frequency under ``flt``."""
        raise NotImplementedError(f"{type(self).__name__} sets lexical_index but has no _read_statistics")

    async def _read_postings(
        self, selecting: tuple[str, ...], counted: tuple[str, ...], flt: PointFilter
    ) -> LexicalPostings:
        """The documents under ``flt`` holding any ``selecting`` term, with
        their lengths and their counts of the ``counted`` terms (which include
        ``selecting``; all sorted)."""
        raise NotImplementedError(f"{type(self).__name__} sets lexical_index but has no _read_postings")

    async def _search_documents(self, terms: tuple[str, ...], top_k: int, flt: PointFilter) -> list[tuple[str, float]]:
        """The exact BM25 top ``top_k`` (int >= 1) of the scope ``flt`` for
        the query ``terms`` (distinct, sorted): by default
        :func:`search_index` over :meth:`_read_statistics` and
        :meth:`_read_postings` (MaxScore). A store whose index lives in
        process may score the scope at once instead
        (:meth:`memory_core.inverted_index.InvertedIndex.search`), then
        needs neither read primitive."""
        statistics = functools.partial(self._read_statistics, flt=flt)
        return await search_index(terms, top_k, statistics, functools.partial(self._read_postings, flt=flt))

    async def _count_documents(self, flt: PointFilter) -> int:
        """Exact number of documents matching ``flt`` (empty: all)."""
        raise NotImplementedError(f"{type(self).__name__} sets lexical_index but has no _count_documents")

    async def _document_ids(self, flt: PointFilter) -> dict[str, str]:
        """``{message_id: resource_id}`` of every document matching ``flt``
        (empty: all), exact: what :meth:`_count_documents` counts, by id
        (the whole-store reindex drops those of messages storage no longer
        holds; ``check-index`` names their resources)."""
        raise NotImplementedError(f"{type(self).__name__} sets lexical_index but has no _document_ids")

    async def _drop_documents(self) -> None:
        """Delete this store's (namespace's) whole lexical index."""
        raise NotImplementedError(f"{type(self).__name__} sets lexical_index but has no _drop_documents")

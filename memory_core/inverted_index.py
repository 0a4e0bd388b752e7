"""A lexical index in dicts (:class:`InvertedIndex`): the reference vector
store's lexical index, and the in-process mirror a store whose own reads
are slow keeps of the index it persists (the Qdrant engine's).

Per scope (each thread, each resource, the whole index): a row per
document (its message id and length), term -> row -> count, and the
scope's total length; plus each message's document. Every write and delete
keeps them up to date, so a search reads the postings of its terms in its
scope only: either through :meth:`InvertedIndex.statistics` and
:meth:`InvertedIndex.postings` (the primitives the core's MaxScore search
reads, as the reference store serves them) or at once with numpy
(:meth:`InvertedIndex.search`, the Qdrant engine's mirror: issue 23's cost
target).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from memory_core.lexical import bm25_idf, bm25_scores, top_scored
from memory_core.lexical_index import LexicalDocument, LexicalPostings, LexicalStatistics, copied_document
from memory_core.vector_layout import PointFilter

__all__ = ["InvertedIndex"]

_Column = tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]


class _Scope:
    """One scope's documents. Each has a row: ``ids[row]`` its message id
    (``""`` once deleted: the row is free for the next document),
    ``lengths[row]`` its length (float64, capacity doubled as rows are
    added); ``postings`` term -> row -> count; ``columns`` the postings of a
    term as arrays ``(rows, counts)`` for :func:`~memory_core.lexical.bm25_scores`,
    built by the first search that reads the term and dropped whenever its
    postings change (so a write costs its own terms, not the scope)."""

    __slots__ = ("columns", "free", "ids", "lengths", "postings", "rows", "total")

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}
        self.ids: list[str] = []
        self.lengths: npt.NDArray[np.float64] = np.zeros(16)
        self.free: list[int] = []
        self.total = 0
        self.postings: dict[str, dict[int, int]] = {}
        self.columns: dict[str, _Column] = {}

    def add(self, document: LexicalDocument) -> None:
        """Add a document (not in the scope)."""
        if self.free:
            row = self.free.pop()
        else:
            row = len(self.ids)
            self.ids.append("")
            if row == len(self.lengths):
                self.lengths = np.concatenate([self.lengths, np.zeros(row)])
        self.rows[document.message_id] = row
        self.ids[row] = document.message_id
        self.lengths[row] = document.length
        self.total += document.length
        for term, count in document.counts.items():
            self.postings.setdefault(term, {})[row] = count
            self.columns.pop(term, None)

    def remove(self, document: LexicalDocument) -> None:
        """Remove a document of the scope (as it was added)."""
        row = self.rows.pop(document.message_id)
        self.ids[row] = ""
        self.free.append(row)
        self.total -= document.length
        for term in document.counts:
            posting = self.postings[term]
            del posting[row]
            if not posting:
                del self.postings[term]
            self.columns.pop(term, None)

    def column(self, term: str) -> _Column:
        """The postings of ``term`` (held by the scope) as arrays."""
        column = self.columns.get(term)
        if column is None:
            posting = self.postings[term]
            rows = np.fromiter(posting.keys(), np.intp, len(posting))
            column = rows, np.fromiter(posting.values(), np.float64, len(posting))
            self.columns[term] = column
        return column


class InvertedIndex:
    """An exact lexical index in memory (:mod:`memory_core.lexical_index`'s
    documents, statistics and postings, and a whole-scope :meth:`search`).
    Not thread-safe: call it from one thread (the event loop's)."""

    def __init__(self, documents: Iterable[LexicalDocument] = ()) -> None:
        self._documents: dict[str, LexicalDocument] = {}
        self._scopes: dict[tuple[str, str], _Scope] = {}
        self.write(documents)

    def _remove(self, message_id: str) -> None:
        document = self._documents.pop(message_id, None)
        if document is None:
            return
        for key in _keys(document):
            scope = self._scopes[key]
            scope.remove(document)
            if not scope.rows:
                del self._scopes[key]

    def write(self, documents: Iterable[LexicalDocument]) -> None:
        """Insert or replace these documents (keyed by message id)."""
        for document in documents:
            self._remove(document.message_id)
            self._documents[document.message_id] = document
            for key in _keys(document):
                scope = self._scopes.get(key)
                if scope is None:
                    scope = self._scopes[key] = _Scope()
                scope.add(document)

    def copy(self, mapping: Mapping[str, str], thread_id: str, resource_id: str) -> None:
        """Write, for each ``old -> new`` of ``mapping`` whose ``old`` has a
        document, the document of ``new`` in ``thread_id`` of ``resource_id``
        (:func:`~memory_core.lexical_index.copied_document`)."""
        sources = [self._documents[old] for old in mapping if old in self._documents]
        self.write([copied_document(document, mapping, thread_id, resource_id) for document in sources])

    def _selected(self, flt: PointFilter) -> list[str]:
        return [mid for mid, document in self._documents.items() if flt.matches(_fields(document))]

    def delete(self, flt: PointFilter) -> None:
        """Delete every document matching ``flt`` (empty: all)."""
        for message_id in self._selected(flt):
            self._remove(message_id)

    def _view(self, flt: PointFilter) -> _Scope:
        """The documents of a search scope."""
        if flt.thread_id is not None and flt.resource_id is not None:  # not a search scope: gather them
            scope = _Scope()
            for message_id in self._selected(flt):
                scope.add(self._documents[message_id])
            return scope
        key = ("thread", flt.thread_id) if flt.thread_id is not None else ("resource", flt.resource_id or "")
        key = ("all", "") if flt.thread_id is None and flt.resource_id is None else key
        return self._scopes.get(key) or _Scope()

    def statistics(self, terms: tuple[str, ...], flt: PointFilter) -> LexicalStatistics:
        """The scope's document count, total length and ``terms``' document
        frequencies (``LexicalPrimitives._read_statistics``)."""
        scope = self._view(flt)
        return LexicalStatistics(
            len(scope.rows), scope.total, {term: len(scope.postings.get(term, {})) for term in terms}
        )

    def postings(self, selecting: tuple[str, ...], counted: tuple[str, ...], flt: PointFilter) -> LexicalPostings:
        """The scope's documents holding any ``selecting`` term with their
        counts of ``counted`` (``LexicalPrimitives._read_postings``)."""
        scope = self._view(flt)
        wanted = frozenset(counted)
        matches = []
        for row in {row for term in selecting for row in scope.postings.get(term, {})}:
            document = self._documents[scope.ids[row]]
            counts = {term: count for term, count in document.counts.items() if term in wanted}
            matches.append((document.message_id, document.length, counts))
        return LexicalPostings(matches)

    def search(self, terms: tuple[str, ...], top_k: int, flt: PointFilter) -> list[tuple[str, float]]:
        """The exact BM25 top ``top_k`` of the scope (``LexicalPrimitives._search_documents``):
        every document holding a term scored at once
        (:func:`~memory_core.lexical.bm25_scores`), so equal to the last bit
        to :func:`memory_core.lexical_index.search_index` over
        :meth:`statistics` and :meth:`postings`, and to
        :func:`~memory_core.lexical.bm25_rank` over the scope.

        Args:
            terms: the query's terms (distinct, sorted).
            top_k: how many (int >= 0).
            flt: the scope (a thread or a resource).
        """
        scope = self._view(flt)
        size = len(scope.rows)
        columns = [
            (bm25_idf(len(scope.postings[term]), size), *scope.column(term)) for term in terms if term in scope.postings
        ]
        if not columns:
            return []
        return top_scored(scope.ids, bm25_scores(columns, scope.lengths, scope.total / size), top_k)

    def count(self, flt: PointFilter) -> int:
        """How many documents match ``flt`` (empty: all)."""
        return len(self._selected(flt))

    def owners(self, flt: PointFilter) -> dict[str, str]:
        """``{message_id: resource_id}`` of the documents matching ``flt``
        (empty: all; ``LexicalPrimitives._document_ids``)."""
        return {mid: self._documents[mid].resource_id for mid in self._selected(flt)}

    def clear(self) -> None:
        """Delete every document."""
        self._documents.clear()
        self._scopes.clear()


def _keys(document: LexicalDocument) -> tuple[tuple[str, str], ...]:
    """The scopes a document counts in: its thread, its resource, the store."""
    return (("thread", document.thread_id), ("resource", document.resource_id), ("all", ""))


def _fields(document: LexicalDocument) -> dict[str, str]:
    """A document's ids as a point payload (for :meth:`PointFilter.matches`)."""
    return {"message_id": document.message_id, "thread_id": document.thread_id, "resource_id": document.resource_id}

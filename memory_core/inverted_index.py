"""A lexical index in dicts (:class:`InvertedIndex`): the reference vector
store's lexical index, and the in-process mirror a store whose own reads
are slow keeps of the index it persists (the Qdrant engine's).

Per scope (each thread, each resource, the whole index): term -> message
id -> count, and the scope's document count and total length; plus each
message's document. Every write and delete keeps them up to date, so a
search reads the postings of its terms in its scope only.
"""

from __future__ import annotations

from collections.abc import Iterable

from memory_core.lexical_index import LexicalDocument, LexicalPostings, LexicalStatistics
from memory_core.vector_layout import PointFilter

__all__ = ["InvertedIndex"]

_Postings = dict[str, dict[str, int]]


class InvertedIndex:
    """An exact lexical index in memory (:mod:`memory_core.lexical_index`'s
    documents, statistics and postings). Not thread-safe: call it from one
    thread (the event loop's)."""

    def __init__(self, documents: Iterable[LexicalDocument] = ()) -> None:
        self._documents: dict[str, LexicalDocument] = {}
        self._postings: dict[tuple[str, str], _Postings] = {}
        self._sizes: dict[tuple[str, str], list[int]] = {}
        self.write(documents)

    def _remove(self, message_id: str) -> None:
        document = self._documents.pop(message_id, None)
        if document is None:
            return
        for key in _keys(document):
            size = self._sizes[key]
            size[0] -= 1
            size[1] -= document.length
            postings = self._postings[key]
            for term in document.counts:
                posting = postings[term]
                del posting[message_id]
                if not posting:
                    del postings[term]
            if size[0] == 0:
                del self._sizes[key], self._postings[key]

    def write(self, documents: Iterable[LexicalDocument]) -> None:
        """Insert or replace these documents (keyed by message id)."""
        for document in documents:
            self._remove(document.message_id)
            self._documents[document.message_id] = document
            for key in _keys(document):
                size = self._sizes.setdefault(key, [0, 0])
                size[0] += 1
                size[1] += document.length
                postings = self._postings.setdefault(key, {})
                for term, count in document.counts.items():
                    postings.setdefault(term, {})[document.message_id] = count

    def _selected(self, flt: PointFilter) -> list[str]:
        return [mid for mid, document in self._documents.items() if flt.matches(_fields(document))]

    def delete(self, flt: PointFilter) -> None:
        """Delete every document matching ``flt`` (empty: all)."""
        for message_id in self._selected(flt):
            self._remove(message_id)

    def _view(self, flt: PointFilter) -> tuple[list[int], _Postings]:
        """``([documents, total length], term -> posting)`` of a search scope."""
        if flt.thread_id is not None and flt.resource_id is not None:  # not a search scope: count them
            selected = [self._documents[mid] for mid in self._selected(flt)]
            postings: _Postings = {}
            for document in selected:
                for term, count in document.counts.items():
                    postings.setdefault(term, {})[document.message_id] = count
            return [len(selected), sum(document.length for document in selected)], postings
        key = ("thread", flt.thread_id) if flt.thread_id is not None else ("resource", flt.resource_id or "")
        key = ("all", "") if flt.thread_id is None and flt.resource_id is None else key
        return self._sizes.get(key, [0, 0]), self._postings.get(key, {})

    def statistics(self, terms: tuple[str, ...], flt: PointFilter) -> LexicalStatistics:
        """The scope's document count, total length and ``terms``' document
        frequencies (``LexicalPrimitives._read_statistics``)."""
        size, postings = self._view(flt)
        return LexicalStatistics(size[0], size[1], {term: len(postings.get(term, {})) for term in terms})

    def postings(self, selecting: tuple[str, ...], counted: tuple[str, ...], flt: PointFilter) -> LexicalPostings:
        """The scope's documents holding any ``selecting`` term with their
        counts of ``counted`` (``LexicalPrimitives._read_postings``)."""
        _, scope = self._view(flt)
        wanted = frozenset(counted)
        matches = []
        for message_id in {mid for term in selecting for mid in scope.get(term, {})}:
            document = self._documents[message_id]
            counts = {term: count for term, count in document.counts.items() if term in wanted}
            matches.append((message_id, document.length, counts))
        return LexicalPostings(matches)

    def count(self, flt: PointFilter) -> int:
        """How many documents match ``flt`` (empty: all)."""
        return len(self._selected(flt))

    def clear(self) -> None:
        """Delete every document."""
        self._documents.clear()
        self._postings.clear()
        self._sizes.clear()


def _keys(document: LexicalDocument) -> tuple[tuple[str, str], ...]:
    """The scopes a document counts in: its thread, its resource, the store."""
    return (("thread", document.thread_id), ("resource", document.resource_id), ("all", ""))


def _fields(document: LexicalDocument) -> dict[str, str]:
    """A document's ids as a point payload (for :meth:`PointFilter.matches`)."""
    return {"message_id": document.message_id, "thread_id": document.thread_id, "resource_id": document.resource_id}

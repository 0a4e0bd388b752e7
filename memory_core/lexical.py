"""The lexical ranking of hybrid recall (issue 23): one tokeniser and one BM25.

Defined once, here, so every storage/vector pairing ranks a fixed corpus
identically:

- :func:`tokenize`: Unicode NFKC, case-folded, runs of letters and digits
  (``[^\\W_]+``), English stop words (:data:`STOP_WORDS`) dropped, then the
  S-stemmer (:func:`s_stem`, Harman 1991) so ``"dogs"`` finds ``"dog"``;
- :func:`bm25_rank`: Okapi BM25 with ``k1 = 1.2`` and ``b = 0.75`` and the
  non-negative IDF ``ln(1 + (N - n + 0.5) / (n + 0.5))`` (Robertson &
  Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond",
  Foundations and Trends in IR 3(4), 2009, eq. 3.26 with the +1 inside the
  logarithm that Lucene uses so a term in most documents never scores
  below zero); collection statistics (``N``, document frequencies, mean
  length) are those of the searched scope; ties in score go to the smaller
  message id.

A message's document is its whole text (:func:`memory_core.vector.message_text`),
not its embedding chunks.
"""

from __future__ import annotations

import heapq
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from memory_core.errors import ValidationError

__all__ = [
    "BM25_B",
    "BM25_K1",
    "DOCUMENT_CACHE",
    "STOP_WORDS",
    "bm25_rank",
    "bm25_idf",
    "bm25_score",
    "bm25_scores",
    "bm25_term_bound",
    "document_terms",
    "s_stem",
    "tokenize",
    "top_scores",
    "top_scored",
]

BM25_K1 = 1.2
"""BM25 term-frequency saturation (Robertson & Zaragoza 2009, section 3.4.3)."""

BM25_B = 0.75
"""BM25 document-length normalisation (Robertson & Zaragoza 2009, section 3.4.3)."""

STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)
"""English function words left out of every document and query (the classic
SMART-style short list, lower case; a word is dropped after case folding and
before stemming)."""

_WORD = re.compile(r"[^\W_]+")


def s_stem(word: str) -> str:
    """The S-stemmer (Harman, "How effective is suffixing?", JASIS 42(1), 1991):
    ``-ies`` -> ``-y`` (not after ``e``/``a``), ``-es`` -> ``-e`` (not after
    ``a``/``e``/``o``), ``-s`` -> ``""`` (not after ``u``/``s``); one rule,
    the first that applies; words of three characters or fewer are kept."""
    if len(word) <= 3:
        return word
    if word.endswith("ies") and word[-4] not in "ea":
        return word[:-3] + "y"
    if word.endswith("es") and word[-3] not in "aeo":
        return word[:-1]
    if word.endswith("s") and word[-2] not in "us":
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """The terms of ``text``, in order (repeats kept): NFKC, case-folded,
    runs of Unicode letters/digits, :data:`STOP_WORDS` dropped,
    :func:`s_stem` applied."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return [s_stem(word) for word in _WORD.findall(folded) if word not in STOP_WORDS]


DOCUMENT_CACHE = 65536
"""Documents whose term counts are kept between searches (an LRU keyed by the
text: a pure function of it, so a cached entry is never stale)."""


@lru_cache(maxsize=DOCUMENT_CACHE)
def _document_terms(text: str) -> tuple[int, dict[str, int]]:
    tokens = tokenize(text)
    return len(tokens), dict(Counter(tokens))


def document_terms(text: str) -> tuple[int, dict[str, int]]:
    """``(number of terms, term -> count)`` of one document's ``text`` (its
    :func:`tokenize` terms; cached by text). The caller must not mutate the
    dict."""
    return _document_terms(text)


def _check(top_k: int, k1: float, b: float) -> None:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise ValidationError("top_k", f"must be an int >= 0, got {top_k!r}")
    if not isinstance(k1, int | float) or not k1 >= 0:
        raise ValidationError("k1", f"must be a number >= 0, got {k1!r}")
    if not isinstance(b, int | float) or not 0 <= b <= 1:
        raise ValidationError("b", f"must be a number from 0 to 1, got {b!r}")


def bm25_idf(frequency: int, size: int) -> float:
    """The non-negative IDF of a term held by ``frequency`` of ``size``
    documents: ``ln(1 + (N - n + 0.5) / (n + 0.5))``."""
    return math.log(1.0 + (size - frequency + 0.5) / (frequency + 0.5))


def bm25_score(
    counts: Mapping[str, int],
    length: int,
    idf: Mapping[str, float],
    mean_length: float,
    *,
    k1: float = BM25_K1,
    b: float = BM25_B,
) -> float:
    """One document's BM25 score: the sum, in term order, of
    ``idf * tf * (k1 + 1) / (tf + k1 (1 - b + b length / mean_length))`` over
    its ``counts`` of the query's terms (each in ``idf``). The one formula of
    :func:`bm25_rank` and of every lexical index, so their scores are equal
    to the last bit."""
    norm = k1 * (1.0 - b + b * length / mean_length)
    return sum(idf[term] * tf * (k1 + 1.0) / (tf + norm) for term, tf in sorted(counts.items()))


def bm25_scores(
    columns: Sequence[tuple[float, npt.NDArray[np.intp], npt.NDArray[np.float64]]],
    lengths: npt.NDArray[np.float64],
    mean_length: float,
    *,
    k1: float = BM25_K1,
    b: float = BM25_B,
) -> npt.NDArray[np.float64]:
    """:func:`bm25_score` of every document of a scope at once (numpy),
    equal to it to the last bit: the same operations in the same order
    (IEEE-754 rounds each elementwise ``+ - * /`` as Python does its
    floats), each term's part added, term by term, only to the documents
    holding the term.

    Args:
        columns: one ``(idf, rows, counts)`` per query term held by the scope,
            in term order (sorted, as :func:`bm25_score` sums): the term's
            IDF, the positions in ``lengths`` of the documents holding it
            (distinct ints, shape ``(n,)``) and their counts of it (float64,
            each >= 1, shape ``(n,)``).
        lengths: each document's length in terms (float64, shape ``(D,)``;
            a position no column names may hold anything).
        mean_length: the scope's mean document length (> 0).
        k1 / b: as :func:`bm25_score`.

    Returns:
        Shape ``(D,)`` float64: each document's score, 0.0 for a document
        holding none of the terms (a document holding one scores > 0).
    """
    scores = np.zeros(len(lengths))
    for idf, rows, counts in columns:
        norm = k1 * (1.0 - b + b * lengths[rows] / mean_length)
        scores[rows] += idf * counts * (k1 + 1.0) / (counts + norm)
    return scores


def bm25_term_bound(frequency: int, size: int, *, k1: float = BM25_K1) -> float:
    """The most one query term of document frequency ``frequency`` (in a
    scope of ``size`` documents) can add to a document's :func:`bm25_score`:
    its IDF times ``k1 + 1`` (the limit of ``tf (k1 + 1) / (tf + norm)``),
    for pruning as in MaxScore (Turtle & Flood, "Query evaluation:
    strategies and optimizations", IP&M 31(6), 1995)."""
    return bm25_idf(frequency, size) * (k1 + 1.0)


def top_scores(scores: Iterable[tuple[str, float]], top_k: int) -> list[tuple[str, float]]:
    """The ``top_k`` best ``(message_id, score)``: by score descending, then
    message id ascending."""
    return heapq.nsmallest(top_k, scores, key=lambda pair: (-pair[1], pair[0]))


def top_scored(ids: Sequence[str], scores: npt.NDArray[np.float64], top_k: int) -> list[tuple[str, float]]:
    """:func:`top_scores` of the documents with a positive score (from
    :func:`bm25_scores`; ``ids[i]`` names position ``i``): numpy keeps the
    ``top_k``-th best score and those above or equal (ties at the cut
    included), then they are ordered as :func:`top_scores` orders."""
    hits = np.flatnonzero(scores > 0) if top_k > 0 else np.empty(0, np.intp)
    if len(hits) > top_k:
        cut = len(hits) - top_k
        hits = hits[scores[hits] >= np.partition(scores[hits], cut)[cut]]
    return top_scores(zip([ids[i] for i in hits.tolist()], scores[hits].tolist(), strict=True), top_k)


def bm25_rank(
    query: str,
    documents: Iterable[tuple[str, str]],
    top_k: int,
    *,
    k1: float = BM25_K1,
    b: float = BM25_B,
) -> list[tuple[str, float]]:
    """Rank ``documents`` for ``query`` with Okapi BM25 (see the module notes):
    the reference ranking, over the whole scope's texts.

    Args:
        query: the search text (its repeated terms count once).
        documents: ``(message_id, text)`` pairs: the whole scope, which
            also gives the collection statistics. Ids are distinct.
        top_k: how many to return (int >= 0).
        k1: term-frequency saturation (float >= 0, default :data:`BM25_K1`).
        b: length normalisation (0 to 1, default :data:`BM25_B`).

    Returns:
        Up to ``top_k`` ``(message_id, score)``, score > 0 (at least one
        query term), ordered by score descending, then message id ascending.

    Raises:
        ValidationError: ``top_k``, ``k1`` or ``b`` out of range.
    """
    _check(top_k, k1, b)
    terms = set(tokenize(query))
    if not terms or top_k == 0:
        return []
    matches: list[tuple[str, int, dict[str, int]]] = []
    frequency: Counter[str] = Counter()
    size = 0
    total_length = 0
    for message_id, text in documents:
        length, counts = _document_terms(text)
        size += 1
        total_length += length
        matched = {term: counts[term] for term in terms if term in counts}
        if matched:
            frequency.update(matched.keys())
            matches.append((message_id, length, matched))
    if not matches:
        return []
    mean_length = total_length / size
    idf = {term: bm25_idf(n, size) for term, n in frequency.items()}
    scored = ((mid, bm25_score(counts, length, idf, mean_length, k1=k1, b=b)) for mid, length, counts in matches)
    return top_scores(scored, top_k)

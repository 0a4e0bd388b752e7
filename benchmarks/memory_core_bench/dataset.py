"""Deterministic benchmark data: resources, threads, messages and vectors.

A dataset of ``size`` messages has ``ceil(size / 1000)`` resources with
:data:`THREADS_PER_RESOURCE` threads each, so a store grows the way real
ones do: by having more users, while one user's history stays the same size
(about 1,000 messages over 100 threads). The first resource is the *probe*
resource; its first thread is the *deep* thread (up to 1,100 messages, for
deep pages and filters) and the next :data:`PROBE_THREADS` threads hold 40
messages each (for newest-20 recall). The remaining messages are spread
evenly over every other thread. The probes are the same at every size, so a
latency that grows with ``size`` grows because the *store* grew.

Everything is a pure function of ``(size, seed)``: messages of one thread are
regenerated from that thread's own random stream, so nothing has to be held
in memory while a store is populated (the client's peak RSS measures the
store, not the dataset).

Content is English-like text of about 200 bytes; metadata looks like what an
agent framework stores (source, topic, language, turn, token count, a flag).
Times are integer microseconds since the epoch.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "BASE_TIME_US",
    "DEFAULT_SEED",
    "PROBE_SIZE",
    "PROBE_THREADS",
    "THREADS_PER_RESOURCE",
    "TOPICS",
    "BenchMessage",
    "Dataset",
    "ThreadSpec",
    "WriteStream",
]

DEFAULT_SEED = 20_240_601
THREADS_PER_RESOURCE = 100
PROBE_THREADS = 10
PROBE_SIZE = 40
DEEP_MAX = 1_100
BASE_TIME_US = 1_704_067_200_000_000
"""2024-01-01T00:00:00Z in µs: every generated time lies in 2024-2025."""

TOPICS = ("billing", "travel", "health", "cooking", "music", "code", "garden", "sports", "movies", "finance")
"""Message ``metadata["topic"]`` values, drawn uniformly (so a topic filter
matches about 10% of a thread)."""

_SOURCES = ("web", "mobile", "api", "slack")
_LANGS = ("en", "en", "en", "de", "fr", "es")
_WORDS = (
    "the",
    "a",
    "my",
    "your",
    "our",
    "this",
    "that",
    "some",
    "every",
    "any",
    "about",
    "after",
    "again",
    "against",
    "all",
    "also",
    "always",
    "and",
    "another",
    "around",
    "as",
    "at",
    "back",
    "because",
    "before",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "down",
    "each",
    "early",
    "even",
    "first",
    "for",
    "from",
    "get",
    "give",
    "go",
    "good",
    "great",
    "have",
    "help",
    "here",
    "how",
    "if",
    "in",
    "into",
    "just",
    "keep",
    "know",
    "last",
    "late",
    "later",
    "let",
    "like",
    "little",
    "long",
    "look",
    "made",
    "make",
    "many",
    "may",
    "maybe",
    "more",
    "most",
    "much",
    "must",
    "need",
    "never",
    "new",
    "next",
    "no",
    "not",
    "now",
    "of",
    "off",
    "old",
    "on",
    "once",
    "one",
    "only",
    "or",
    "other",
    "out",
    "over",
    "own",
    "part",
    "people",
    "place",
    "plan",
    "please",
    "put",
    "quite",
    "rather",
    "really",
    "right",
    "same",
    "say",
    "see",
    "seem",
    "should",
    "show",
    "since",
    "small",
    "so",
    "something",
    "soon",
    "still",
    "such",
    "sure",
    "take",
    "tell",
    "than",
    "thanks",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "think",
    "those",
    "through",
    "time",
    "to",
    "today",
    "together",
    "tomorrow",
    "too",
    "try",
    "under",
    "until",
    "up",
    "use",
    "very",
    "want",
    "was",
    "way",
    "week",
    "well",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "why",
    "will",
    "with",
    "without",
    "work",
    "would",
    "year",
    "yes",
    "yet",
    "you",
    "account",
    "booking",
    "invoice",
    "flight",
    "hotel",
    "recipe",
    "garden",
    "song",
    "album",
    "doctor",
    "appointment",
    "budget",
    "meeting",
    "project",
    "deadline",
    "ticket",
    "refund",
    "password",
    "order",
    "package",
    "delivery",
    "train",
    "weather",
    "weekend",
    "vacation",
    "birthday",
    "dinner",
    "lunch",
    "coffee",
    "report",
    "draft",
    "review",
    "question",
    "answer",
    "idea",
    "problem",
    "issue",
    "feature",
    "request",
    "reminder",
    "schedule",
    "calendar",
    "note",
    "list",
    "summary",
    "update",
    "change",
    "detail",
    "version",
    "price",
    "payment",
    "card",
    "bank",
    "loan",
    "rent",
    "salary",
    "tax",
    "gym",
    "run",
    "match",
    "game",
    "team",
    "score",
    "movie",
    "series",
    "episode",
    "book",
    "chapter",
    "story",
    "photo",
    "camera",
    "phone",
    "laptop",
    "screen",
    "battery",
    "charger",
    "cable",
    "router",
    "network",
    "server",
    "database",
    "query",
    "error",
    "bug",
    "test",
    "release",
    "branch",
)


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(7, 15))]
    return " ".join(words).capitalize() + rng.choice((".", ".", ".", "?", "!"))


@dataclass(frozen=True, slots=True)
class BenchMessage:
    """One generated message (plain values; subjects convert it as they need).

    Attributes:
        id: UUID4-shaped text, unique in the dataset.
        thread_id / resource_id: owners.
        role: ``"user"`` or ``"assistant"``, alternating within a thread.
        content: about 200 bytes of text.
        metadata: ``source``, ``topic`` (one of :data:`TOPICS`), ``lang``,
            ``turn`` (int), ``tokens`` (int), ``flagged`` (bool).
        created_at_us: µs since the epoch, strictly increasing in a thread.
    """

    id: str
    thread_id: str
    resource_id: str
    role: str
    content: str
    metadata: dict[str, Any]
    created_at_us: int


@dataclass(frozen=True, slots=True)
class ThreadSpec:
    """One generated thread and where its messages come from.

    Attributes:
        index: position in :attr:`Dataset.threads` (seeds its random stream).
        id / resource_id / title / metadata / created_at_us: the thread record.
        size: how many messages it holds after population.
    """

    index: int
    id: str
    resource_id: str
    title: str
    metadata: dict[str, Any]
    created_at_us: int
    size: int


@dataclass
class Dataset:
    """The deterministic dataset of ``size`` messages for ``seed``.

    Args:
        size: total messages (>= 1).
        seed: base of every random stream.
        threads_per_resource: threads per resource (default 100).
    """

    size: int
    seed: int = DEFAULT_SEED
    threads_per_resource: int = THREADS_PER_RESOURCE
    _sentences: list[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError("size must be >= 1")
        rng = random.Random(self.seed)
        self._sentences = [_sentence(rng) for _ in range(4096)]

    # ------------------------------------------------------------------ layout

    @cached_property
    def resources(self) -> list[str]:
        """Resource ids, ``user-00000`` first (the probe resource)."""
        count = max(1, math.ceil(self.size / 1000))
        return [f"user-{k:05d}" for k in range(count)]

    @cached_property
    def deep_size(self) -> int:
        """Messages in the deep thread: ``min(1100, size // 2)``."""
        return min(DEEP_MAX, self.size // 2)

    @cached_property
    def probe_size(self) -> int:
        """Messages in each probe thread (40, less for tiny datasets)."""
        return max(1, min(PROBE_SIZE, (self.size - self.deep_size) // (2 * PROBE_THREADS)))

    @cached_property
    def threads(self) -> list[ThreadSpec]:
        """Every thread, resource by resource; sizes add up to ``size``."""
        n_threads = len(self.resources) * self.threads_per_resource
        fixed = [self.deep_size] + [self.probe_size] * PROBE_THREADS
        rest = self.size - sum(fixed)
        n_rest = n_threads - len(fixed)
        if rest < 0 or n_rest <= 0:
            raise ValueError(f"size {self.size} is too small for the dataset layout")
        base, extra = divmod(rest, n_rest)
        rng = random.Random(self.seed ^ 0x7E4D)
        specs: list[ThreadSpec] = []
        for index in range(n_threads):
            resource = self.resources[index // self.threads_per_resource]
            size = fixed[index] if index < len(fixed) else base + (1 if index - len(fixed) < extra else 0)
            topic = TOPICS[index % len(TOPICS)]
            specs.append(
                ThreadSpec(
                    index=index,
                    id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    resource_id=resource,
                    title=f"Conversation about {topic} #{index}",
                    metadata={"channel": _SOURCES[index % len(_SOURCES)], "topic": topic, "archived": index % 9 == 0},
                    created_at_us=BASE_TIME_US + rng.randrange(300 * 86_400_000_000),
                    size=size,
                )
            )
        return specs

    @property
    def deep(self) -> ThreadSpec:
        """The deep thread (first thread of the probe resource)."""
        return self.threads[0]

    @property
    def probes(self) -> list[ThreadSpec]:
        """The probe threads used for newest-N recall."""
        return self.threads[1 : 1 + PROBE_THREADS]

    @property
    def probe_resource(self) -> str:
        """The resource holding the deep and probe threads."""
        return self.resources[0]

    # ------------------------------------------------------------------ messages

    def thread_messages(self, spec: ThreadSpec) -> list[BenchMessage]:
        """The messages of ``spec`` in creation order (regenerated each call)."""
        return list(self.iter_thread_messages(spec))

    def iter_thread_messages(self, spec: ThreadSpec) -> Iterator[BenchMessage]:
        """The messages of ``spec`` in creation order, one at a time (a long
        thread is never held whole in memory)."""
        rng = random.Random((self.seed * 1_000_003) ^ (spec.index + 1))
        at = spec.created_at_us
        for turn in range(spec.size):
            at += rng.randint(20_000_000, 600_000_000)
            yield (
                BenchMessage(
                    id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    thread_id=spec.id,
                    resource_id=spec.resource_id,
                    role="user" if turn % 2 == 0 else "assistant",
                    content=self.content(rng),
                    metadata={
                        "source": _SOURCES[rng.randrange(len(_SOURCES))],
                        "topic": TOPICS[rng.randrange(len(TOPICS))],
                        "lang": _LANGS[rng.randrange(len(_LANGS))],
                        "turn": turn,
                        "tokens": rng.randint(8, 120),
                        "flagged": rng.random() < 0.05,
                    },
                    created_at_us=at,
                )
            )

    def content(self, rng: random.Random) -> str:
        """About 200 bytes of text from the sentence pool."""
        parts: list[str] = []
        length = 0
        while length < 180:
            sentence = self._sentences[rng.randrange(len(self._sentences))]
            parts.append(sentence)
            length += len(sentence) + 1
        return " ".join(parts)

    def batches(self, batch_size: int = 100) -> Iterator[list[BenchMessage]]:
        """Every message in batches of ``batch_size`` (thread after thread; a
        batch may span threads of one resource)."""
        batch: list[BenchMessage] = []
        for spec in self.threads:
            for message in self.thread_messages(spec):
                batch.append(message)
                if len(batch) == batch_size:
                    yield batch
                    batch = []
        if batch:
            yield batch

    def vectors(self, spec: ThreadSpec, dimension: int) -> npt.NDArray[np.float32]:
        """Unit vectors for the messages of ``spec``, shape ``(spec.size,
        dimension)``, float32 (one per message, in creation order)."""
        rng = np.random.default_rng([self.seed, spec.index, dimension])
        block = rng.standard_normal((spec.size, dimension), dtype=np.float32)
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        unit: npt.NDArray[np.float32] = (block / norms).astype(np.float32, copy=False)
        return unit

    def query_vectors(self, count: int, dimension: int) -> npt.NDArray[np.float32]:
        """``count`` unit query vectors, shape ``(count, dimension)``."""
        rng = np.random.default_rng([self.seed, 991, dimension])
        block = rng.standard_normal((count, dimension), dtype=np.float32)
        unit: npt.NDArray[np.float32] = (block / np.linalg.norm(block, axis=1, keepdims=True)).astype(
            np.float32, copy=False
        )
        return unit

    def writer(self, tag: str) -> WriteStream:
        """A stream of new messages for write workloads (ids unique per ``tag``)."""
        return WriteStream(self, tag)


class WriteStream:
    """New messages for write workloads, in scratch threads of the probe
    resource, timed after everything in the dataset.

    Args:
        dataset: the dataset the store was populated with.
        tag: makes ids and scratch threads unique per subject and workload.
    """

    def __init__(self, dataset: Dataset, tag: str) -> None:
        self.dataset = dataset
        self.tag = tag
        self._rng = random.Random(f"{dataset.seed}:{tag}")
        self._at = BASE_TIME_US + 400 * 86_400_000_000
        self._turn = 0

    def scratch_thread(self, number: int) -> ThreadSpec:
        """A new, empty thread in the probe resource (not in the dataset)."""
        return ThreadSpec(
            index=-1,
            id=f"scratch-{self.tag}-{number}",
            resource_id=self.dataset.probe_resource,
            title=f"scratch {number}",
            metadata={"channel": "api", "topic": "code", "archived": False},
            created_at_us=self._at,
            size=0,
        )

    def messages(self, thread: ThreadSpec, count: int) -> list[BenchMessage]:
        """``count`` new messages for ``thread`` (times strictly increasing)."""
        out: list[BenchMessage] = []
        rng = self._rng
        for _ in range(count):
            self._at += 1_000
            self._turn += 1
            out.append(
                BenchMessage(
                    id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    thread_id=thread.id,
                    resource_id=thread.resource_id,
                    role="user" if self._turn % 2 else "assistant",
                    content=self.dataset.content(rng),
                    metadata={
                        "source": _SOURCES[rng.randrange(len(_SOURCES))],
                        "topic": TOPICS[rng.randrange(len(TOPICS))],
                        "lang": "en",
                        "turn": self._turn,
                        "tokens": rng.randint(8, 120),
                        "flagged": False,
                    },
                    created_at_us=self._at,
                )
            )
        return out

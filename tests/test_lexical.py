"""The core's lexical scorer and rank fusion (issue 23): tokeniser, S-stemmer,
BM25 against a hand computation, tie-breaking, RRF, and the checks of
``SemanticRecall``'s new fields."""

from __future__ import annotations

import math
import random
from typing import Any

import anyio
import numpy as np
import pytest

from memory_core import Memory, MemoryConfig, Message, SemanticRecall
from memory_core.embedders import LexicalHashEmbedder
from memory_core.errors import BackendError, ValidationError
from memory_core.hybrid import reciprocal_rank_fusion
from memory_core.inverted_index import InvertedIndex
from memory_core.lexical import bm25_rank, bm25_score, bm25_scores, document_terms, s_stem, tokenize
from memory_core.lexical_index import LexicalDocument, LexicalPostings
from memory_core.reference import InMemoryStorage
from memory_core.reference_vector import InMemoryVectorStore
from memory_core.vector import PointFilter, VectorHit


def test_tokenize_folds_drops_stop_words_and_stems() -> None:
    assert tokenize("The DOGS went to \uff30aris on 7 May, studies & classes; bus_stop") == [
        "dog",
        "went",
        "pari",
        "7",
        "may",
        "study",
        "classe",
        "bus",
        "stop",
    ]
    assert tokenize("") == [] and tokenize("the and of") == []


@pytest.mark.parametrize(
    ("word", "stem"),
    [("ponies", "pony"), ("series", "sery"), ("horses", "horse"), ("toes", "toe"), ("cats", "cat"), ("bus", "bus")],
)
def test_s_stem_follows_harman(word: str, stem: str) -> None:
    assert s_stem(word) == stem


def test_bm25_matches_a_hand_computation_and_breaks_ties_by_id() -> None:
    docs = [("b", "red apple"), ("a", "red apple"), ("c", "green pear tree"), ("d", "red red red apple pie")]
    ranked = bm25_rank("red", docs, 10)
    mean = (2 + 2 + 3 + 5) / 4
    idf = math.log(1 + (4 - 3 + 0.5) / (3 + 0.5))

    def score(tf: int, length: int) -> float:
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / mean))

    assert [m for m, _ in ranked] == ["d", "a", "b"]
    assert ranked[0][1] == pytest.approx(score(3, 5)) and ranked[1][1] == pytest.approx(score(1, 2))
    assert bm25_rank("red", docs, 1) == ranked[:1] and bm25_rank("the", docs, 3) == []
    with pytest.raises(ValidationError, match="top_k"):
        bm25_rank("red", docs, -1)
    with pytest.raises(ValidationError, match="b"):
        bm25_rank("red", docs, 1, b=2)


def test_rrf_weights_ranks_and_ties() -> None:
    fused = reciprocal_rank_fusion([["x", "y"], ["y", "z"]], (1.0, 1.0), k=60)
    assert [m for m, _ in fused] == ["y", "x", "z"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    assert [m for m, _ in reciprocal_rank_fusion([["b"], ["a"]], (1.0, 1.0))] == ["a", "b"]
    assert [m for m, _ in reciprocal_rank_fusion([["b"], ["a"]], (1.0, 2.0))] == ["a", "b"]
    with pytest.raises(ValidationError, match="weights"):
        reciprocal_rank_fusion([["a"]], (1.0, 1.0))


def test_semantic_recall_checks_mode_and_weights() -> None:
    assert SemanticRecall(mode="hybrid", lexical_weight=2).lexical_weight == 2.0
    with pytest.raises(ValidationError, match=r"semantic_recall\.mode"):
        SemanticRecall(mode="bm25")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"semantic_recall\.vector_weight"):
        SemanticRecall(vector_weight=-1)
    with pytest.raises(ValidationError, match=r"semantic_recall\.lexical_weight"):
        SemanticRecall(vector_weight=0, lexical_weight=0)


@pytest.mark.anyio
async def test_lexical_mode_needs_no_vector_store_and_other_modes_do() -> None:
    config = MemoryConfig(last_messages=False, semantic_recall=SemanticRecall(2, 0, "thread", mode="lexical"))
    async with Memory(InMemoryStorage(), config=config) as memory:
        thread = await memory.create_thread(resource_id="r1")
        await memory.save_messages(
            [{"thread_id": thread.id, "role": "user", "content": text} for text in ("Rex is my dog", "hello")]
        )
        result = await memory.recall(thread.id, "r1", "dog", thread_config=config)
        assert [m.content for m in result.messages] == ["Rex is my dog"] and result.sources == ["semantic"]
        hybrid = MemoryConfig(semantic_recall=SemanticRecall(mode="hybrid"))
        with pytest.raises(ValidationError, match="vector store"):
            await memory.recall(thread.id, "r1", "dog", thread_config=hybrid)
    with pytest.raises(ValidationError, match="semantic_recall"):
        Memory(InMemoryStorage(), config=MemoryConfig(semantic_recall=SemanticRecall(mode="hybrid")))


@pytest.mark.anyio
async def test_lexical_index_pruning_stops_early_and_ranks_like_bm25_rank() -> None:
    rng = random.Random(5)
    words = [f"w{n}" for n in range(300)]
    weights = [1.0 / (n + 1) for n in range(len(words))]
    texts = {f"m{i:04d}": " ".join(rng.choices(words, weights, k=rng.randint(3, 25))) for i in range(600)}
    store = InMemoryVectorStore()
    async with store:
        await store.index_documents([LexicalDocument(m, "t", "r", *document_terms(t)) for m, t in texts.items()])
        reads: list[tuple[str, ...]] = []
        read = store._read_postings

        async def counting(selecting: tuple[str, ...], counted: tuple[str, ...], flt: PointFilter) -> LexicalPostings:
            reads.append(selecting)
            return await read(selecting, counted, flt)

        store._read_postings = counting  # type: ignore[method-assign]
        early = 0
        for query in [" ".join(rng.choices(words, weights, k=rng.randint(1, 12))) for _ in range(60)]:
            for top_k in (1, 5, 10):
                reads.clear()
                got = await store.lexical_search(query, top_k, resource_id="r")
                assert got == bm25_rank(query, texts.items(), top_k), (query, top_k)
                early += len(reads) < len(set(tokenize(query)))
        assert early > 0  # MaxScore stopped before reading every term at least once


def test_bm25_scores_equal_bm25_score_to_the_last_bit() -> None:
    rng = random.Random(11)
    for _ in range(200):
        terms = sorted(rng.sample([f"t{n}" for n in range(8)], rng.randint(1, 6)))
        documents = [
            {term: rng.randint(1, 9) for term in rng.sample(terms, rng.randint(0, len(terms)))} for _ in range(30)
        ]
        lengths = [sum(counts.values()) + rng.randint(0, 40) for counts in documents]
        mean = rng.uniform(0.5, 50.0)
        idf = {term: rng.uniform(0.01, 9.0) for term in terms}
        k1, b = rng.choice([(1.2, 0.75), (rng.uniform(0.1, 3), rng.uniform(0, 1))])
        columns = []
        for term in terms:
            rows = [i for i, counts in enumerate(documents) if term in counts]
            counts = [documents[i][term] for i in rows]
            columns.append((idf[term], np.array(rows, np.intp), np.array(counts, np.float64)))
        got = bm25_scores(columns, np.array(lengths, np.float64), mean, k1=k1, b=b)
        want = [
            bm25_score(counts, length, idf, mean, k1=k1, b=b) for counts, length in zip(documents, lengths, strict=True)
        ]
        assert got.tolist() == want  # exact, not approx


def test_inverted_index_search_ranks_like_bm25_rank_after_rewrites_and_deletes() -> None:
    rng = random.Random(3)
    words = [f"w{n}" for n in range(200)]
    weights = [1.0 / (n + 1) for n in range(len(words))]
    pool = [" ".join(rng.choices(words, weights, k=rng.randint(0, 20))) for _ in range(150)]  # repeats: ties
    texts: dict[str, tuple[str, str]] = {}
    index = InvertedIndex()

    def write(message_ids: list[str]) -> None:
        for mid in message_ids:
            texts[mid] = (rng.choice(["t1", "t2", "t3"]), rng.choice(pool))
        index.write(LexicalDocument(mid, texts[mid][0], "r", *document_terms(texts[mid][1])) for mid in message_ids)

    def check() -> None:
        for query in [" ".join(rng.choices(words, weights, k=rng.randint(1, 10))) for _ in range(15)]:
            terms = tuple(sorted(set(tokenize(query))))
            for top_k in (1, 5, 10, 50):
                want = bm25_rank(query, [(m, text) for m, (_, text) in texts.items()], top_k)
                assert index.search(terms, top_k, PointFilter(resource_id="r")) == want, (query, top_k)
                in_t1 = [(m, text) for m, (thread, text) in texts.items() if thread == "t1"]
                assert index.search(terms, top_k, PointFilter(thread_id="t1")) == bm25_rank(query, in_t1, top_k)

    write([f"m{i:03d}" for i in range(400)])
    check()
    write(rng.sample(sorted(texts), 120))  # rewritten, some moved to another thread
    gone = rng.sample(sorted(texts), 150)
    index.delete(PointFilter(message_ids=tuple(gone)))
    for mid in gone:
        del texts[mid]
    write([f"n{i:03d}" for i in range(100)])  # reuses the freed rows
    check()
    assert index.search(("w1",), 5, PointFilter(thread_id="nowhere")) == []


class RendezvousStore(InMemoryVectorStore):
    """Its vector search waits until its lexical search has started, and the
    lexical search until the vector search has: only a hybrid search that
    runs both at once returns. ``fail`` makes the lexical search raise."""

    def __init__(self, fail: BaseException | None = None) -> None:
        super().__init__()
        self.fail = fail
        self.vector_started = anyio.Event()
        self.lexical_started = anyio.Event()

    async def search_checked(
        self, vector: Any, top_k: int, thread_id: str | None, resource_id: str | None
    ) -> list[VectorHit]:
        self.vector_started.set()
        await self.lexical_started.wait()
        return await super().search_checked(vector, top_k, thread_id, resource_id)

    async def lexical_search(
        self, query: str, top_k: int, *, thread_id: str | None = None, resource_id: str | None = None
    ) -> list[tuple[str, float]]:
        self.lexical_started.set()
        await self.vector_started.wait()
        if self.fail is not None:
            raise self.fail
        return await super().lexical_search(query, top_k, thread_id=thread_id, resource_id=resource_id)


@pytest.mark.anyio
async def test_hybrid_search_runs_both_rankings_at_once_and_raises_their_own_errors() -> None:
    texts = ("Rex is my dog", "my cat Pixel", "dogs and cats", "hello there", "the dog park")
    config = MemoryConfig(last_messages=False, semantic_recall=SemanticRecall(3, 0, "resource", mode="hybrid"))
    answers = []
    for store in (InMemoryVectorStore(), RendezvousStore()):
        async with Memory(InMemoryStorage(), store, LexicalHashEmbedder(), config=config) as memory:
            thread = await memory.create_thread(resource_id="r1", thread_id="t1")
            await memory.save_messages([Message(f"m{n}", thread.id, "user", t) for n, t in enumerate(texts)])
            with anyio.fail_after(10):  # one ranking after the other would wait for ever
                answers.append([m.id for m in (await memory.recall("t1", "r1", "my dog")).messages])
    assert answers[0] == answers[1] and len(answers[0]) == 3
    failing = RendezvousStore(BackendError("reference", "lexical_search", "down", retryable=True))
    async with Memory(InMemoryStorage(), failing, LexicalHashEmbedder(), config=config) as memory:
        await memory.create_thread(resource_id="r1", thread_id="t1")
        await memory.save_messages([Message("m1", "t1", "user", "Rex is my dog")])
        with anyio.fail_after(10), pytest.raises(BackendError, match="down") as caught:
            await memory.recall("t1", "r1", "my dog")
        assert caught.value.operation == "lexical_search" and caught.value.retryable

"""Evidence coverage of whole ``Memory.recall`` results over LoCoMo.

Where :mod:`memory_core_bench.retrieval` scores the semantic hits alone, this
scores what an agent actually receives: every message id of
``Memory.recall(thread, resource, vector_search_string=question)`` in
resource scope, i.e. the last ``--last-messages`` messages of the
conversation's last session (default 0: none) plus the ``top_k`` hits and
``message_range`` messages of context around each. It shows what
``message_range`` adds and, with a history page, what
``SemanticRecall(exclude_recent=True)`` adds (each pair is run both ways).

With ``--cache DIR`` (the folder :mod:`memory_core_bench.hybrid_retrieval`
and :mod:`memory_core_bench.retrieval` keep), the turns and questions are
embedded once, or read from that folder, and every ``Memory`` call that
embeds a text already seen is answered from them (:class:`MemoEmbedder`):
the vectors are the embedder's own, only computed once.

Run::

    python -m memory_core_bench.recall_coverage /path/to/locomo10 --embedder lexical --embedder minilm
    python -m memory_core_bench.recall_coverage /path/to/locomo10 --embedder minilm --last-messages 10
    python -m memory_core_bench.recall_coverage /path/to/locomo10 --embedder minilm --mode hybrid --cache CACHE
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from memory_core import Memory, MemoryConfig, SemanticRecall, connect, connect_vector
from memory_core.cli.host import line_console
from memory_core.cli.locomo import LOCOMO_DIR_HELP, Conversation, load_dir, require_locomo_dir
from memory_core.embedders import Embedder, Matrix, get_embedder
from memory_core.vector import chunk_text, message_text
from rich.table import Table

from memory_core_bench.hybrid_retrieval import halves
from memory_core_bench.retrieval import coverage, embed_texts, locomo_questions

__all__ = ["MemoEmbedder", "main", "run_coverage"]


class MemoEmbedder:
    """An embedder that answers texts it has seen from their vectors and
    embeds only the rest (once each) with the embedder it wraps.

    Args:
        inner: the embedder (its ``name``, ``dimension`` and
            ``max_input_chars`` are this one's).
        known: text -> its vector by ``inner`` (unit float32 rows of length
            ``inner.dimension``), e.g. read from a cache.

    Attributes:
        misses: how many texts ``inner`` has embedded so far.
    """

    def __init__(self, inner: Embedder, known: dict[str, Matrix]) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.max_input_chars = inner.max_input_chars
        self.known = dict(known)
        self.misses = 0

    async def embed(self, texts: Sequence[str]) -> Matrix:
        """The vectors of ``texts``, shape ``(len(texts), dimension)``
        float32 (``inner.embed``'s rows for the texts not seen before)."""
        missing = [text for text in dict.fromkeys(texts) if text not in self.known]
        if missing:
            for text, vector in zip(missing, await self.inner.embed(missing), strict=True):
                self.known[text] = vector
        self.misses += len(missing)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self.known[text] for text in texts]).astype(np.float32, copy=False)


async def memo_embedder(embedder: Embedder, conversations: Sequence[Conversation], cache_dir: Path) -> MemoEmbedder:
    """``embedder`` knowing every chunk of every turn (as Memory
    chunks them) and every question with evidence, embedded in two batches
    kept in ``cache_dir`` under the keys of
    :func:`~memory_core_bench.retrieval.embed_conversations` and the retrieval
    reports' question batch, so a cache they left is read, not recomputed."""
    turns = [
        text
        for conversation in conversations
        for message in conversation.messages
        for text in chunk_text(message_text(message), embedder.max_input_chars)
    ]
    questions = [case.question for case in locomo_questions(conversations)]
    known = dict(zip(turns, await embed_texts(embedder, turns, cache_dir), strict=True))
    known.update(zip(questions, await embed_texts(embedder, questions, cache_dir), strict=True))
    return MemoEmbedder(embedder, known)


async def run_coverage(
    folder: Path,
    embedder_name: str,
    top_ks: Sequence[int],
    ranges: Sequence[int],
    vector_url: str,
    last_messages: int = 0,
    modes: Sequence[str] = ("vector",),
    cache_dir: Path | None = None,
    lexical_weight: float | None = None,
) -> list[dict[str, Any]]:
    """Load every conversation into ``memory://`` + ``vector_url`` through
    ``Memory`` (so vectors are made exactly as in production), then score the
    coverage of each (top_k, message_range), and with ``last_messages`` > 0
    each also with ``exclude_recent``, under each ``SemanticRecall.mode`` of
    ``modes``. With ``cache_dir``, texts are embedded through
    :func:`memo_embedder` (each once, kept there); ``lexical_weight`` is
    hybrid mode's (default: ``SemanticRecall``'s). Returns one row per
    setting, with the coverage of all questions and of each half
    (:func:`~memory_core_bench.hybrid_retrieval.halves`: ``coverage_tune``,
    ``coverage_held_out``)."""
    weights = {} if lexical_weight is None else {"lexical_weight": lexical_weight}
    conversations = load_dir(folder)
    split = halves(conversations)
    storage = await connect("memory://")
    vectors = await connect_vector(vector_url)
    rows: list[dict[str, Any]] = []
    embedder: Embedder = get_embedder(embedder_name)
    if cache_dir is not None:
        embedder = await memo_embedder(embedder, conversations, cache_dir)
    # A measuring run over memory://: a persistent --vector store is meant for this run only.
    async with Memory(storage, vectors, embedder, allow_volatile_vectors=True) as memory:
        started = time.perf_counter()
        for conversation in conversations:
            for thread in conversation.threads:
                await storage.save_thread(thread)
            by_thread: dict[str, list[Any]] = {}
            for message in conversation.messages:
                by_thread.setdefault(message.thread_id, []).append(message)
            for batch in by_thread.values():
                await memory.save_messages(batch)
        load_seconds = time.perf_counter() - started
        settings = [
            (mode, top_k, message_range, exclude)
            for mode in modes
            for top_k in top_ks
            for message_range in ranges
            for exclude in ((False, True) if last_messages else (False,))
        ]
        for mode, top_k, message_range, exclude in settings:
            kind: Any = mode
            semantic = SemanticRecall(top_k, message_range, "resource", exclude_recent=exclude, mode=kind, **weights)
            config = MemoryConfig(last_messages=last_messages or False, semantic_recall=semantic)
            returned: list[list[str]] = []
            evidence: list[list[str]] = []
            owners: list[str] = []
            sizes: list[int] = []
            started = time.perf_counter()
            for conversation in conversations:
                anchor = conversation.threads[-1].id
                for question in conversation.questions:
                    if not question.evidence:
                        continue
                    result = await memory.recall(
                        anchor,
                        conversation.resource_id,
                        vector_search_string=question.question,
                        thread_config=config,
                    )
                    returned.append([m.id for m in result.messages])
                    evidence.append(list(question.evidence))
                    owners.append(conversation.resource_id)
                    sizes.append(len(result.messages))
            elapsed = time.perf_counter() - started
            rows.append(
                {
                    "embedder": embedder_name,
                    "mode": mode,
                    "top_k": top_k,
                    "message_range": message_range,
                    "last_messages": last_messages,
                    "exclude_recent": exclude,
                    "questions": len(evidence),
                    "coverage": coverage(returned, evidence),
                    **{
                        name: coverage(
                            [got for got, owner in zip(returned, owners, strict=True) if owner in half],
                            [want for want, owner in zip(evidence, owners, strict=True) if owner in half],
                        )
                        for name, half in zip(("coverage_tune", "coverage_held_out"), split, strict=True)
                    },
                    "lexical_weight": semantic.lexical_weight,
                    "mean_messages_returned": sum(sizes) / len(sizes),
                    "recall_ms_mean": 1000 * elapsed / len(sizes),
                    "load_seconds": load_seconds,
                    "embedded_uncached": embedder.misses if isinstance(embedder, MemoEmbedder) else None,
                }
            )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m memory_core_bench.recall_coverage LOCOMO_DIR``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("locomo", type=require_locomo_dir, help=f"LOCOMO_DIR: {LOCOMO_DIR_HELP}")
    parser.add_argument("--embedder", action="append", default=None, help="lexical | minilm (repeat)")
    parser.add_argument("--top-k", action="append", type=int, default=None)
    parser.add_argument("--message-range", action="append", type=int, default=None)
    parser.add_argument("--last-messages", type=int, default=0, help="history page size (0: none)")
    parser.add_argument("--mode", action="append", default=None, help="vector | lexical | hybrid (repeat)")
    parser.add_argument("--vector", default="qdrant::memory:")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--cache", type=Path, default=None, help="embedding cache folder (embed each text once)")
    parser.add_argument("--lexical-weight", type=float, default=None, help="hybrid mode's lexical weight")
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for name in args.embedder or ["lexical"]:
        rows += asyncio.run(
            run_coverage(
                args.locomo,
                name,
                args.top_k or [5, 10],
                args.message_range or [0, 2],
                args.vector,
                args.last_messages,
                args.mode or ["vector"],
                args.cache,
                args.lexical_weight,
            )
        )
    table = Table(title="LoCoMo evidence coverage of whole recall results (resource scope)")
    columns = ["embedder", "mode", "last", "top_k", "message_range", "exclude_recent", "coverage", "tune", "held-out"]
    columns.append("messages returned")
    for column in (*columns, "recall ms"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            row["embedder"],
            row["mode"],
            str(row["last_messages"]),
            str(row["top_k"]),
            str(row["message_range"]),
            str(row["exclude_recent"]),
            f"{row['coverage']:.3f}",
            f"{row['coverage_tune']:.3f}",
            f"{row['coverage_held_out']:.3f}",
            f"{row['mean_messages_returned']:.1f}",
            f"{row['recall_ms_mean']:.2f}",
        )
    line_console().print(table)
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

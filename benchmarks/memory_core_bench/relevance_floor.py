"""Choosing semantic recall's relevance floor (``SemanticRecall.min_score``) on LoCoMo.

A search always returns ``top_k`` hits, however unrelated the query. A floor
on the cosine score drops the unrelated ones; set too high, it drops evidence
too. For each candidate floor this report scores, with the exact cosine
search of :mod:`memory_core_bench.retrieval` (the engine agrees with it; see
that report):

- **evidence recall@k** of every LoCoMo question with evidence, searched in
  its own conversation's resource, keeping only hits scoring at least the
  floor (k = 4, the framework tools' ``top_k``, and 5, ADK's);
- **hits left** for queries that have no answer in the resource: the
  questions of the *next* conversation (other people, other lives) searched
  in this one, and a fixed list of off-topic queries (:data:`OFF_TOPIC`,
  ``"pears"`` first, as in ADK's own memory-service example); mean hits of 5
  and the share of queries left with none.

It also prints the score distribution behind the choice: each question's
best evidence score, and the top score of the unrelated queries.

Run::

    python -m memory_core_bench.relevance_floor LOCOMO_DIR --embedder minilm --cache .cache/embeddings
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from memory_core.cli.locomo import LOCOMO_DIR_HELP, load_dir, require_locomo_dir
from memory_core.embedders import LexicalHashEmbedder, get_embedder
from memory_core.vector import message_text

from memory_core_bench.retrieval import (
    embed_conversations,
    embed_texts,
    evidence_recall,
    exact_search,
    locomo_questions,
)

__all__ = ["DEFAULT_FLOORS", "OFF_TOPIC", "main", "run_floors"]

DEFAULT_FLOORS = (None, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4)
"""Candidate floors (cosine similarity, -1 to 1; None: no floor)."""

OFF_TOPIC = (
    "pears",
    "What do I know about pears?",
    "quantum chromodynamics on a lattice",
    "How do I reset my router password?",
    "asdf qwerty zxcv",
    "the capital city of Mongolia",
    "sourdough starter hydration ratio",
    "Python asyncio event loop policy",
    "When is the tax return deadline?",
    "Which GPU has the most VRAM?",
    "carburetor idle mixture screw",
    "stock price of a semiconductor company",
)
"""Queries no LoCoMo conversation answers."""

_K = 5
_PERCENTILES = (5, 25, 50, 75, 95)


def _kept(
    tops: list[list[tuple[str, float]]],
    floor: float | None,
    k: int,
    related: list[Callable[[str], bool]] | None = None,
) -> list[list[str]]:
    """Each query's top ``k`` ids at or above ``floor``; with ``related``
    (one test per query), those it passes too, as recall applies the
    lexical embedder's shared-feature rule under a floor."""
    return [
        [mid for mid, score in top[:k] if floor is None or (score >= floor and (related is None or related[row](mid)))]
        for row, top in enumerate(tops)
    ]


async def run_floors(
    folder: Path, embedder_name: str, floors: Sequence[float | None] = DEFAULT_FLOORS, cache_dir: Path | None = None
) -> dict[str, Any]:
    """Score every floor (see the module docstring).

    Returns:
        A JSON-ready dict: ``embedder``, ``rows`` (one per floor, and with
        the lexical embedder one more per floor applying its shared-feature
        rule as recall does, ``shared_feature`` True: ``floor``,
        ``recall@4``, ``recall@5``, ``recall@10``, ``evidence_hits_kept``,
        ``other_hits``, ``other_none``, ``off_topic_hits``, ``off_topic_none``)
        and ``scores`` (percentiles of the best evidence score per question
        and of the unrelated queries' top scores).
    """
    embedder = get_embedder(embedder_name)
    conversations = load_dir(folder)
    questions = locomo_questions(conversations)
    embedded = await embed_conversations(conversations, embedder, cache_dir)
    question_vectors = await embed_texts(embedder, [q.question for q in questions], cache_dir)
    off_vectors = await embedder.embed(list(OFF_TOPIC))
    rows_of: dict[str, list[int]] = {}
    for row, case in enumerate(questions):
        rows_of.setdefault(case.resource_id, []).append(row)
    said = {m.id: message_text(m) for c in conversations for m in c.messages}
    own_queries: list[str] = []
    other_queries: list[str] = []
    off_queries: list[str] = []
    own: list[list[tuple[str, float]]] = []
    evidence: list[list[str]] = []
    best_evidence: list[float] = []
    other: list[list[tuple[str, float]]] = []
    off: list[list[tuple[str, float]]] = []
    for index, corpus in enumerate(embedded):
        mine = rows_of.get(corpus.conversation.resource_id, [])
        tops, scores = exact_search(corpus, question_vectors[mine], 10)
        own += tops
        own_queries += [questions[row].question for row in mine]
        for row, per_message in zip(mine, scores, strict=True):
            wanted = list(questions[row].evidence)
            evidence.append(wanted)
            best_evidence.append(max((per_message[e] for e in wanted if e in per_message), default=-1.0))
        neighbour = embedded[(index + 1) % len(embedded)].conversation.resource_id
        other += exact_search(corpus, question_vectors[rows_of.get(neighbour, [])], _K)[0]
        other_queries += [questions[row].question for row in rows_of.get(neighbour, [])]
        off += exact_search(corpus, off_vectors, _K)[0]
        off_queries += list(OFF_TOPIC)

    def tests(queries: list[str]) -> list[Callable[[str], bool]] | None:
        if not isinstance(embedder, LexicalHashEmbedder):
            return None
        lexical = embedder

        def related(query: str) -> Callable[[str], bool]:
            return lambda mid: lexical.shares_feature(query, said[mid])

        return [related(q) for q in queries]

    variants = [False, True] if isinstance(embedder, LexicalHashEmbedder) else [False]
    rows = []
    for floor, shared in ((f, v) for f in floors for v in variants if f is not None or not v):
        own_t, other_t, off_t = (tests(q) if shared else None for q in (own_queries, other_queries, off_queries))
        recall = evidence_recall(_kept(own, floor, 10, own_t), evidence, (4, 5, 10))
        kept_own = _kept(own, floor, _K, own_t)
        kept_other, kept_off = _kept(other, floor, _K, other_t), _kept(off, floor, _K, off_t)
        rows.append(
            {
                "floor": floor,
                "shared_feature": shared,
                "recall@4": recall[4],
                "recall@5": recall[5],
                "recall@10": recall[10],
                "evidence_hits_kept": float(np.mean([len(h) for h in kept_own])),
                "other_hits": float(np.mean([len(h) for h in kept_other])),
                "other_none": float(np.mean([not h for h in kept_other])),
                "off_topic_hits": float(np.mean([len(h) for h in kept_off])),
                "off_topic_none": float(np.mean([not h for h in kept_off])),
            }
        )

    def spread(values: Sequence[float]) -> dict[str, float]:
        return {f"p{p}": float(np.percentile(values, p)) for p in _PERCENTILES}

    return {
        "embedder": embedder.name,
        "questions": len(questions),
        "other_queries": len(other),
        "off_topic_queries": len(off),
        "rows": rows,
        "scores": {
            "best_evidence": spread(best_evidence),
            "own_top1": spread([t[0][1] for t in own if t]),
            "other_top1": spread([t[0][1] for t in other if t]),
            "off_topic_top1": spread([t[0][1] for t in off if t]),
        },
    }


def render(report: dict[str, Any]) -> str:
    """The report as Markdown tables."""
    lines = [
        f"embedder {report['embedder']}: {report['questions']} questions, "
        f"{report['other_queries']} other-conversation queries, {report['off_topic_queries']} off-topic queries",
        "",
        "| floor | recall@4 | recall@5 | recall@10 | own hits of 5 | other: hits of 5 | other: none "
        "| off-topic: hits of 5 | off-topic: none |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        floor = "none" if r["floor"] is None else f"{r['floor']:.2f}"
        floor += " + shared word" if r["shared_feature"] else ""
        lines.append(
            f"| {floor} | {r['recall@4']:.3f} | {r['recall@5']:.3f} | {r['recall@10']:.3f} "
            f"| {r['evidence_hits_kept']:.2f} | {r['other_hits']:.2f} | {r['other_none']:.0%} "
            f"| {r['off_topic_hits']:.2f} | {r['off_topic_none']:.0%} |"
        )
    lines += ["", "| scores | " + " | ".join(f"p{p}" for p in _PERCENTILES) + " |", "|---" * 6 + "|"]
    for name, spread in report["scores"].items():
        lines.append(f"| {name} | " + " | ".join(f"{spread[f'p{p}']:.3f}" for p in _PERCENTILES) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m memory_core_bench.relevance_floor LOCOMO_DIR``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("locomo", type=require_locomo_dir, help=f"LOCOMO_DIR: {LOCOMO_DIR_HELP}")
    parser.add_argument("--embedder", default="minilm", help="lexical | minilm (default minilm)")
    parser.add_argument("--floor", action="append", type=float, default=None, help="a candidate (repeat)")
    parser.add_argument("--cache", type=Path, default=None, help="embedding cache folder")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    floors = [None, *args.floor] if args.floor else DEFAULT_FLOORS
    report = asyncio.run(run_floors(args.locomo, args.embedder, floors, args.cache))
    print(render(report))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

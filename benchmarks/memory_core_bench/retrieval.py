"""Retrieval report over LoCoMo: does semantic recall find the evidence?

Each LoCoMo conversation is loaded with :mod:`memory_core.cli.locomo` (one
conversation = one resource, one session = one thread, one turn = one
message). For every embedder and vector backend the report:

1. embeds every turn (chunked at the embedder's ``max_input_chars`` exactly
   as :class:`memory_core.Memory` does) and stores the points;
2. embeds every question that has evidence and searches the question's
   resource (scope ``resource``) for the top ``max(ks)`` messages;
3. scores **evidence recall@k**: the fraction of a question's evidence
   message ids among the first k hits, averaged over questions;
4. repeats the search exactly with numpy (brute-force cosine over the
   resource's chunks, best chunk per message) and reports how often the
   engine's ranking equals the exact one (**agreement**, up to ties: every
   position's score within 1e-5 of the exact score at that position).

Run::

    python -m memory_core_bench.retrieval /path/to/locomo10 --json retrieval.json

``--embedder`` (``lexical``, ``minilm``) and ``--backend`` (``edge`` =
``qdrant::memory:``, ``local`` = qdrant-client's local mode, or any vector
URL such as ``qdrant://localhost:6333``) repeat. qdrant-client's local mode
scans in Python and is slow, so it runs on the first
``--local-conversations`` conversations only (default 2); its row also
shows the exact figures on that subset.

Reusable pieces: :func:`evidence_recall` and :func:`coverage` score any list
of returned message ids per question (e.g. the ids of a whole
``Memory.recall`` result with ``message_range`` 0 or 2), and
:func:`locomo_questions` lists the questions with evidence.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from memory_core.cli.locomo import LOCOMO_DIR_HELP, Conversation, load_dir, require_locomo_dir
from memory_core.embedders import Embedder, get_embedder
from memory_core.models import Message
from memory_core.vector import VectorPoint, VectorStore, chunk_text, message_text

__all__ = [
    "DEFAULT_KS",
    "EmbeddedConversation",
    "TURN_FORMATS",
    "QuestionCase",
    "RetrievalRow",
    "agreement",
    "coverage",
    "embed_conversations",
    "embed_texts",
    "evidence_recall",
    "exact_search",
    "locomo_questions",
    "main",
    "render",
    "run_retrieval",
]

Matrix = npt.NDArray[np.float32]
DEFAULT_KS = (1, 5, 10, 20)
TIE = 1e-5

TURN_FORMATS: dict[str, Callable[[Message], str]] = {
    "content": message_text,
    "speaker": lambda m: f"{m.metadata.get('speaker', '')}: {message_text(m)}",
}
"""How a turn becomes the embedded text. ``content`` is what
:class:`memory_core.Memory` embeds (R-VEC: the message text).
``speaker`` prefixes the speaker's name (``"Caroline: I went to ..."``): LoCoMo
questions name the speaker, and the name is otherwise only in metadata."""


# --------------------------------------------------------------------------- scoring


@dataclass(frozen=True, slots=True)
class QuestionCase:
    """One LoCoMo question with evidence, mapped to memory-core ids.

    Attributes:
        resource_id: the conversation's resource (search scope).
        question: the question text (the vector search string).
        evidence: message ids the answer rests on (non-empty).
        category: LoCoMo category (1 multi-hop, 2 temporal, 3 open-domain,
            4 single-hop, 5 adversarial).
    """

    resource_id: str
    question: str
    evidence: tuple[str, ...]
    category: int


def locomo_questions(conversations: Sequence[Conversation]) -> list[QuestionCase]:
    """Every question that has evidence, in file order."""
    return [
        QuestionCase(c.resource_id, q.question, q.evidence, q.category)
        for c in conversations
        for q in c.questions
        if q.evidence
    ]


def evidence_recall(
    returned: Sequence[Sequence[str]], evidence: Sequence[Sequence[str]], ks: Sequence[int] = DEFAULT_KS
) -> dict[int, float]:
    """Mean evidence recall@k.

    Args:
        returned: per question, the returned message ids, best first.
        evidence: per question, the evidence message ids (non-empty).
        ks: cut-offs.

    Returns:
        k -> mean over questions of ``|evidence ∩ returned[:k]| / |evidence|``
        (0.0 for every k when there are no questions).

    Raises:
        ValueError: the two lists differ in length, or an evidence list is empty.
    """
    if len(returned) != len(evidence):
        raise ValueError(f"{len(returned)} results for {len(evidence)} questions")
    sums = dict.fromkeys(ks, 0.0)
    for got, wanted in zip(returned, evidence, strict=True):
        if not wanted:
            raise ValueError("a question without evidence cannot be scored")
        targets = set(wanted)
        for k in ks:
            sums[k] += len(targets.intersection(got[:k])) / len(targets)
    count = len(evidence)
    return {k: (sums[k] / count if count else 0.0) for k in ks}


def coverage(returned: Sequence[Sequence[str]], evidence: Sequence[Sequence[str]]) -> float:
    """Mean fraction of each question's evidence anywhere in what was returned
    (no cut-off): the score of a whole recall result, e.g. every message id of
    ``Memory.recall(..., vector_search_string=question)`` with its context
    windows.

    Raises:
        ValueError: the two lists differ in length, or an evidence list is empty.
    """
    if len(returned) != len(evidence):
        raise ValueError(f"{len(returned)} results for {len(evidence)} questions")
    total = 0.0
    for got, wanted in zip(returned, evidence, strict=True):
        if not wanted:
            raise ValueError("a question without evidence cannot be scored")
        total += len(set(wanted).intersection(got)) / len(set(wanted))
    return total / len(evidence) if evidence else 0.0


def agreement(
    engine: Sequence[Sequence[tuple[str, float]]],
    exact: Sequence[Sequence[tuple[str, float]]],
    exact_scores: Sequence[dict[str, float]],
    tie: float = TIE,
) -> float:
    """Fraction of questions whose engine ranking equals the exact one up to ties.

    Args:
        engine: per question, ``(message_id, score)`` from the vector store.
        exact: per question, the exact ``(message_id, score)`` top-k.
        exact_scores: per question, the exact score of every message (to judge
            an engine hit that is not in the exact list).
        tie: scores closer than this count as tied.

    Returns:
        In [0, 1]: a question agrees when both lists have the same length and,
        at every position, the engine's message has (exactly computed) the
        score of the exact list's message at that position, within ``tie``.
    """
    if not engine:
        return 0.0
    agreeing = 0
    for got, want, scores in zip(engine, exact, exact_scores, strict=True):
        same = len(got) == len(want) and all(
            abs(scores.get(mid, -2.0) - wscore) <= tie for (mid, _), (_, wscore) in zip(got, want, strict=True)
        )
        agreeing += same
    return agreeing / len(engine)


# --------------------------------------------------------------------------- embedding


@dataclass(slots=True)
class EmbeddedConversation:
    """One conversation's points, chunked as Memory chunks them.

    Attributes:
        conversation: the source.
        points: one :class:`VectorPoint` per chunk.
        chunk_vectors: shape ``(len(points), dim)``, unit rows.
        chunk_rows: for each chunk, the row of its message in ``message_ids``.
        message_ids: the conversation's messages that have text.
    """

    conversation: Conversation
    points: list[VectorPoint]
    chunk_vectors: Matrix
    chunk_rows: npt.NDArray[np.int64]
    message_ids: list[str]


def _cache_key(embedder: Embedder, texts: list[str]) -> str:
    digest = hashlib.sha256(embedder.name.encode())
    for text in texts:
        digest.update(b"\x00" + text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:24]


def _cache_path(cache_dir: Path | None, embedder: Embedder, texts: list[str]) -> Path | None:
    return None if cache_dir is None else cache_dir / f"{embedder.name}-{_cache_key(embedder, texts)}.npy"


def _cache_load(path: Path | None) -> Matrix | None:
    if path is None or not path.exists():
        return None
    cached: Matrix = np.load(path)
    return cached


def _cache_save(path: Path | None, vectors: Matrix) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)


async def embed_texts(embedder: Embedder, texts: list[str], cache_dir: Path | None) -> Matrix:
    """``embedder.embed(texts)``, shape ``(len(texts), dim)``, kept in
    ``cache_dir`` (keyed by embedder name and texts) when one is given."""
    path = _cache_path(cache_dir, embedder, texts)
    cached = _cache_load(path)
    if cached is not None:
        return cached
    vectors = await embedder.embed(texts)
    _cache_save(path, vectors)
    return vectors


async def embed_conversations(
    conversations: Sequence[Conversation],
    embedder: Embedder,
    cache_dir: Path | None = None,
    turn_text: Callable[[Message], str] = message_text,
) -> list[EmbeddedConversation]:
    """Chunk and embed every message of every conversation.

    Args:
        conversations: from :func:`memory_core.cli.locomo.load_dir`.
        embedder: the embedder.
        cache_dir: where to keep embeddings between runs (keyed by embedder
            name and texts), or None.
        turn_text: the text embedded for a message (default: what Memory
            embeds); see :data:`TURN_FORMATS`.
    """
    plans: list[tuple[Conversation, list[tuple[Any, int, str]]]] = []
    texts: list[str] = []
    for conversation in conversations:
        chunks = []
        for message in conversation.messages:
            for number, text in enumerate(chunk_text(turn_text(message), embedder.max_input_chars)):
                chunks.append((message, number, text))
                texts.append(text)
        plans.append((conversation, chunks))
    vectors = await embed_texts(embedder, texts, cache_dir)
    out = []
    start = 0
    for conversation, chunks in plans:
        block = vectors[start : start + len(chunks)]
        start += len(chunks)
        rows: dict[str, int] = {}
        points = []
        chunk_rows = []
        for (message, number, _), vector in zip(chunks, block, strict=True):
            rows.setdefault(message.id, len(rows))
            chunk_rows.append(rows[message.id])
            created = int(message.created_at.timestamp() * 1_000_000) if message.created_at else 0
            points.append(VectorPoint(message.id, number, vector, message.thread_id, conversation.resource_id, created))
        out.append(
            EmbeddedConversation(conversation, points, block, np.asarray(chunk_rows, dtype=np.int64), list(rows))
        )
    return out


def exact_search(
    corpus: EmbeddedConversation, queries: Matrix, top_k: int
) -> tuple[list[list[tuple[str, float]]], list[dict[str, float]]]:
    """Exact cosine search of ``queries`` (unit rows) over one conversation:
    best chunk per message, ranked by (-score, message id) like the store.

    Returns:
        ``(top, scores)``: per query the top-k ``(message_id, score)``, and
        per query every message's score.
    """
    chunk_scores = queries @ corpus.chunk_vectors.T  # (q, chunks)
    best = np.full((queries.shape[0], len(corpus.message_ids)), -np.inf, dtype=np.float32)
    np.maximum.at(best.T, corpus.chunk_rows, chunk_scores.T)
    ids = np.asarray(corpus.message_ids)
    tops, all_scores = [], []
    for row in best:
        order = np.lexsort((ids, -row))[:top_k]
        tops.append([(str(ids[i]), float(row[i])) for i in order])
        all_scores.append(dict(zip(corpus.message_ids, row.tolist(), strict=True)))
    return tops, all_scores


# --------------------------------------------------------------------------- running


@dataclass(slots=True)
class RetrievalRow:
    """One (embedder, backend) line of the report.

    Attributes:
        embedder: embedder key (``lexical``, ``minilm``).
        embedder_name: the embedder's full name.
        backend: backend key (``edge``, ``local`` or a URL).
        backend_label: what the backend is.
        turns: the turn format (:data:`TURN_FORMATS`).
        conversations / questions / points: what was measured.
        recall: engine evidence recall@k (k as str, for JSON).
        exact_recall: numpy brute-force recall@k on the same questions.
        agreement: fraction of questions whose engine top-k equals the exact
            top-k up to ties (k = the largest cut-off).
        load_s: seconds to upsert every point.
        search_p50_ms / search_p95_ms: per-question search latency.
        embed_s: seconds to embed the turns (about 0 when cached).
    """

    embedder: str
    embedder_name: str
    backend: str
    backend_label: str
    turns: str
    conversations: int
    questions: int
    points: int
    recall: dict[str, float]
    exact_recall: dict[str, float]
    agreement: float
    load_s: float
    search_p50_ms: float
    search_p95_ms: float
    embed_s: float = 0.0
    notes: list[str] = field(default_factory=list)


async def _open_backend(spec: str, namespace: str) -> tuple[VectorStore, str, Any]:
    if spec == "local":
        from memory_core_qdrant import QdrantServerStore
        from qdrant_client import AsyncQdrantClient

        client = AsyncQdrantClient(location=":memory:")
        store = QdrantServerStore(client=client, namespace=namespace)
        await store.open()
        return store, "qdrant-client local", client
    from memory_core.registry import connect_vector

    url = "qdrant::memory:" if spec == "edge" else spec
    label = "edge (qdrant::memory:)" if spec == "edge" else url
    return await connect_vector(url, namespace=namespace), label, None


async def _measure(
    embedded: list[EmbeddedConversation],
    questions_by_resource: dict[str, list[QuestionCase]],
    query_vectors: dict[str, Matrix],
    backend: str,
    ks: Sequence[int],
    embedder_key: str,
    embedder_name: str,
    turns: str,
) -> RetrievalRow:
    top_k = max(ks)
    store, label, client = await _open_backend(backend, f"retrieval{uuid.uuid4().hex[:8]}")
    try:
        points = [p for c in embedded for p in c.points]
        started = time.perf_counter()
        for c in embedded:
            await store.upsert(c.points)
        load_s = time.perf_counter() - started
        engine_ids, engine_pairs, exact_pairs, exact_scores, evidence = [], [], [], [], []
        latencies = []
        for c in embedded:
            resource = c.conversation.resource_id
            cases = questions_by_resource.get(resource, [])
            if not cases:
                continue
            queries = query_vectors[resource]
            tops, scores = exact_search(c, queries, top_k)
            exact_pairs += tops
            exact_scores += scores
            for case, query in zip(cases, queries, strict=True):
                t0 = time.perf_counter()
                hits = await store.search(query, top_k, resource_id=resource)
                latencies.append(time.perf_counter() - t0)
                engine_ids.append([h.message_id for h in hits])
                engine_pairs.append([(h.message_id, h.score) for h in hits])
                evidence.append(case.evidence)
        if hasattr(store, "destroy"):
            await store.destroy()
    finally:
        await store.close()
        if client is not None:
            await client.close()
    recall = evidence_recall(engine_ids, evidence, ks)
    exact = evidence_recall([[m for m, _ in top] for top in exact_pairs], evidence, ks)
    lat = np.asarray(latencies) * 1000 if latencies else np.zeros(1)
    return RetrievalRow(
        embedder=embedder_key,
        embedder_name=embedder_name,
        backend=backend,
        backend_label=label,
        turns=turns,
        conversations=len(embedded),
        questions=len(evidence),
        points=len(points),
        recall={str(k): round(v, 4) for k, v in recall.items()},
        exact_recall={str(k): round(v, 4) for k, v in exact.items()},
        agreement=round(agreement(engine_pairs, exact_pairs, exact_scores), 4),
        load_s=round(load_s, 3),
        search_p50_ms=round(float(np.percentile(lat, 50)), 3),
        search_p95_ms=round(float(np.percentile(lat, 95)), 3),
    )


async def run_retrieval(
    path: str | Path,
    *,
    embedders: Sequence[str] = ("lexical", "minilm"),
    backends: Sequence[str] = ("edge", "local"),
    ks: Sequence[int] = DEFAULT_KS,
    local_conversations: int = 2,
    cache_dir: Path | None = None,
    turn_formats: Sequence[str] = ("content",),
    progress: Any = None,
) -> dict[str, Any]:
    """Measure evidence recall for every embedder x backend.

    Args:
        path: the LoCoMo folder (``*.json`` conversations).
        embedders: names for :func:`memory_core.embedders.get_embedder`; one
            that cannot load (e.g. ``minilm`` without its extra) is reported
            as skipped.
        backends: ``"edge"``, ``"local"`` or vector URLs.
        ks: recall cut-offs.
        local_conversations: how many conversations the slow ``"local"``
            backend gets.
        cache_dir: embedding cache folder, or None.
        turn_formats: names from :data:`TURN_FORMATS` (each is measured).
        progress: optional callable(str) for progress lines.

    Returns:
        A JSON-ready dict: ``dataset``, ``rows`` (:class:`RetrievalRow` as
        dicts), ``skipped``.
    """
    say = progress or (lambda text: None)
    conversations = load_dir(path)
    questions = locomo_questions(conversations)
    by_resource: dict[str, list[QuestionCase]] = {}
    for case in questions:
        by_resource.setdefault(case.resource_id, []).append(case)
    known = {m.id for c in conversations for m in c.messages}
    dangling = sum(e not in known for q in questions for e in q.evidence)
    report: dict[str, Any] = {
        "dataset": {
            "path": str(path),
            "conversations": len(conversations),
            "messages": sum(len(c.messages) for c in conversations),
            "questions_with_evidence": len(questions),
            "evidence_ids": sum(len(q.evidence) for q in questions),
            "evidence_ids_not_in_any_conversation": dangling,
            "scope": "resource",
            "ks": list(ks),
        },
        "rows": [],
        "skipped": [],
    }
    for name in embedders:
        try:
            embedder = get_embedder(name)
        except ImportError as exc:
            report["skipped"].append({"embedder": name, "reason": str(exc)})
            say(f"skip {name}: {exc}")
            continue
        query_vectors: dict[str, Matrix] = {}
        all_queries = await embed_texts(embedder, [case.question for case in questions], cache_dir)
        offset = 0
        for c in conversations:
            count = len(by_resource.get(c.resource_id, []))
            query_vectors[c.resource_id] = all_queries[offset : offset + count]
            offset += count
        for turns in turn_formats:
            say(f"embedding turns ({turns}) with {embedder.name} ...")
            started = time.perf_counter()
            embedded = await embed_conversations(conversations, embedder, cache_dir, TURN_FORMATS[turns])
            embed_s = time.perf_counter() - started
            for backend in backends:
                subset = embedded[:local_conversations] if backend == "local" else embedded
                say(f"{embedder.name} / {turns} on {backend}: {len(subset)} conversations ...")
                row = await _measure(subset, by_resource, query_vectors, backend, ks, name, embedder.name, turns)
                row.embed_s = round(embed_s, 2)
                if backend == "local":
                    row.notes.append(f"first {len(subset)} conversations only (local mode scans in Python)")
                report["rows"].append(asdict(row))
    return report


def render(report: dict[str, Any], console: Any = None) -> None:
    """Print the report as a rich table."""
    from memory_core.cli.host import line_console
    from rich import box
    from rich.table import Table

    out = console or line_console()
    data = report["dataset"]
    ks = data["ks"]
    table = Table(
        title=(
            f"LoCoMo evidence recall, resource scope: {data['conversations']} conversations, "
            f"{data['messages']} turns, {data['questions_with_evidence']} questions"
        ),
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 0),
        pad_edge=False,
    )
    for header in ("embedder", "turns", "store"):
        table.add_column(header, no_wrap=True)
    for header in ("q", *(f"@{k}" for k in ks), f"exact@{max(ks)}", "agree", "ms"):
        table.add_column(header, justify="right", no_wrap=True)

    def fmt(value: float) -> str:
        return f"{value:.3f}".removeprefix("0")

    for row in report["rows"]:
        table.add_row(
            row["embedder"],
            row["turns"],
            row["backend"],
            str(row["questions"]),
            *(fmt(row["recall"][str(k)]) for k in ks),
            fmt(row["exact_recall"][str(max(ks))]),
            fmt(row["agreement"]),
            f"{row['search_p50_ms']:.1f}",
        )
    out.print(table)
    for skipped in report["skipped"]:
        out.print(f"[yellow]skipped {skipped['embedder']}[/]: {skipped['reason']}")
    out.print(
        "[dim]turns: content = the message text (what Memory embeds), speaker = 'Name: text'. "
        "@k: recall@k, the mean fraction of a question's evidence messages among the top k hits; "
        "exact: numpy brute force "
        "with the same embedder; agree: share of questions whose engine ranking equals the exact one (up to ties); "
        "ms: search p50.[/]"
    )
    for row in report["rows"]:
        for note in row["notes"]:
            out.print(f"[dim]{row['embedder']} / {row['turns']} / {row['backend']}: {note}[/]")
    labels = sorted({(r["embedder"], r["embedder_name"]) for r in report["rows"]})
    labels += sorted({(r["backend"], r["backend_label"]) for r in report["rows"]})
    out.print("[dim]" + "; ".join(f"{key} = {label}" for key, label in labels) + "[/]")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m memory_core_bench.retrieval PATH [options]``."""
    import anyio

    parser = argparse.ArgumentParser(prog="python -m memory_core_bench.retrieval", description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=require_locomo_dir, help=f"LOCOMO_DIR: {LOCOMO_DIR_HELP}")
    parser.add_argument("--embedder", action="append", help="lexical | minilm (repeat; default both)")
    parser.add_argument("--backend", action="append", help="edge | local | a vector URL (repeat; default edge, local)")
    parser.add_argument("--k", action="append", type=int, help=f"recall cut-off (repeat; default {DEFAULT_KS})")
    parser.add_argument("--local-conversations", type=int, default=2, help="conversations for the local backend")
    parser.add_argument(
        "--turns", action="append", choices=sorted(TURN_FORMATS), help="turn text format (repeat; default content)"
    )
    parser.add_argument("--cache", type=Path, default=None, help="embedding cache folder")
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    args = parser.parse_args(argv)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    report = anyio.run(
        lambda: run_retrieval(
            args.path,
            embedders=args.embedder or ("lexical", "minilm"),
            backends=args.backend or ("edge", "local"),
            ks=tuple(sorted(set(args.k))) if args.k else DEFAULT_KS,
            local_conversations=args.local_conversations,
            cache_dir=args.cache,
            turn_formats=args.turns or ("content",),
            progress=say,
        )
    )
    render(report)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        say(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

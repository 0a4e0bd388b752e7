"""What hybrid recall costs next to vector-only recall (issue 23's target:
hybrid over one resource's 10^4 messages at most 2x vector-only).

Loads ``--messages`` messages (default 10^4) into one resource (threads of
``--per-thread`` messages) through :class:`memory_core.Memory` with the
lexical hashing embedder, then times ``--queries`` resource-scope
``Memory.recall`` calls per ``SemanticRecall.mode`` (top_k 10, message_range
0, no history page) and prints p50/p95 milliseconds and each mode's p50 over
vector's. The modes are interleaved: each query runs in every mode, in an
order rotated from one query to the next, so a load from other processes
falls on every mode alike (the ratios stay meaningful on a shared machine);
the run's load averages are printed with them. Texts are drawn from a fixed vocabulary with a seeded RNG (Zipf-like
word frequencies), so runs are comparable.

Run::

    python -m memory_core_bench.hybrid_cost --storage memory:// --vector memory://
    python -m memory_core_bench.hybrid_cost --storage sqlite:///tmp/h.db --vector qdrant::memory:
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from memory_core import Memory, MemoryConfig, SemanticRecall, connect, connect_vector
from memory_core.embedders import get_embedder
from memory_core.hybrid import SEARCH_MODES

__all__ = ["main", "run_cost"]

_VOCABULARY = [f"w{n}" for n in range(5000)]
_WEIGHTS = [1.0 / (n + 1) for n in range(len(_VOCABULARY))]


def _texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(_VOCABULARY, _WEIGHTS, k=rng.randint(8, 30))) for _ in range(count)]


async def run_cost(
    storage_url: str, vector_url: str, messages: int, per_thread: int, queries: int
) -> list[dict[str, Any]]:
    """Load, then time the modes interleaved; one row per mode (``p50_ms``,
    ``p95_ms``, ``ratio_to_vector``, ``load_1min``: the 1-minute load average
    before and after the timed queries)."""
    storage = await connect(storage_url)
    vectors = await connect_vector(vector_url)
    rows: list[dict[str, Any]] = []
    async with Memory(storage, vectors, get_embedder("lexical"), allow_volatile_vectors=True) as memory:
        texts = _texts(messages, 7)
        for start in range(0, messages, per_thread):
            thread = await memory.create_thread(resource_id="bench-resource")
            await memory.save_messages(
                [
                    {"thread_id": thread.id, "role": "user", "content": text}
                    for text in texts[start : start + per_thread]
                ]
            )
        asks = _texts(queries, 11)
        anchor = thread.id
        configs = {
            mode: MemoryConfig(last_messages=False, semantic_recall=SemanticRecall(10, 0, "resource", mode=mode))
            for mode in SEARCH_MODES
        }
        for config in configs.values():
            await memory.recall(anchor, "bench-resource", asks[0], thread_config=config)  # warm
        times: dict[str, list[float]] = {mode: [] for mode in SEARCH_MODES}
        load = [os.getloadavg()[0]]
        for number, ask in enumerate(asks):
            turn = number % len(SEARCH_MODES)
            for mode in (*SEARCH_MODES[turn:], *SEARCH_MODES[:turn]):
                started = time.perf_counter()
                await memory.recall(anchor, "bench-resource", ask, thread_config=configs[mode])
                times[mode].append(1000 * (time.perf_counter() - started))
        load.append(os.getloadavg()[0])
        for mode in SEARCH_MODES:
            rows.append(
                {
                    "mode": mode,
                    "messages": messages,
                    "p50_ms": round(float(np.percentile(times[mode], 50)), 2),
                    "p95_ms": round(float(np.percentile(times[mode], 95)), 2),
                    "load_1min": [round(value, 1) for value in load],
                }
            )
    base = rows[0]["p50_ms"]
    for row in rows:
        row["ratio_to_vector"] = round(row["p50_ms"] / base, 2)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m memory_core_bench.hybrid_cost [options]``."""
    import anyio

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--storage", default="memory://")
    parser.add_argument("--vector", default="memory://")
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--per-thread", type=int, default=500)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = anyio.run(run_cost, args.storage, args.vector, args.messages, args.per_thread, args.queries)
    for row in rows:
        print(
            f"{args.storage} + {args.vector}: {row['mode']:8} {row['messages']} messages  p50 {row['p50_ms']} ms  "
            f"p95 {row['p95_ms']} ms  x{row['ratio_to_vector']} of vector  (load {row['load_1min']})"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

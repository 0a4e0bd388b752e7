"""Filtered top-k latency of the embedded Qdrant engine against numpy.

Loads ``--points`` random unit vectors (``--dim`` dimensions) spread evenly
over ``--resources`` resources and ten times as many threads into
``qdrant::memory:`` through the memory-core store, then times, for random
resources (a different one each query, as in real traffic):

- ``store``: ``QdrantEdgeStore.search(top_k, resource_id=...)``, the whole
  memory-core path (worker thread, over-fetch, de-duplication);
- ``engine``: the engine's own filtered query, called directly;
- ``numpy``: exact brute force over that resource's share of the vectors,
  kept as one contiguous matrix per resource (the ceiling: no filtering);

and the same with a thread filter. The methods take turns query by query,
each with its own random resources. With ``--optimize`` the store's
``optimize()`` (points regrouped by resource) runs after the load, before
any timing; the engine figures then describe the optimized shard too. Run::

    python -m memory_core_bench.vector_latency --points 100000 --dim 384 --resources 100 [--optimize]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import numpy as np
from memory_core.vector import VectorPoint

__all__ = ["main", "measure"]


def _percentiles(samples: list[float]) -> dict[str, float]:
    ms = np.asarray(samples) * 1000
    return {"p50_ms": round(float(np.percentile(ms, 50)), 3), "p95_ms": round(float(np.percentile(ms, 95)), 3)}


async def measure(
    points: int, dim: int, resources: int, queries: int, top_k: int, optimize: bool = False, seed: int = 7
) -> dict[str, Any]:
    """Load the data and time the three searches (see the module docstring).

    ``optimize``: call ``QdrantEdgeStore.optimize()`` after the load.

    Returns:
        A JSON-ready dict: settings, load seconds and p50/p95 per method.
    """
    import qdrant_edge as qe
    from memory_core_qdrant import QdrantEdgeStore

    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((points, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    owner = rng.integers(0, resources, points)
    thread = owner * 10 + rng.integers(0, 10, points)
    shares = {r: np.ascontiguousarray(vectors[owner == r]) for r in range(resources)}
    thread_shares = {t: np.ascontiguousarray(vectors[thread == t]) for t in np.unique(thread)}
    result: dict[str, Any] = {"points": points, "dim": dim, "resources": resources, "top_k": top_k}
    result["optimized"] = optimize
    async with QdrantEdgeStore() as store:
        started = time.perf_counter()
        batch = 5000
        for start in range(0, points, batch):
            await store.upsert(
                [
                    VectorPoint(f"m{i}", 0, vectors[i], f"t{thread[i]}", f"r{owner[i]}", i)
                    for i in range(start, min(points, start + batch))
                ]
            )
        result["load_s"] = round(time.perf_counter() - started, 2)
        if optimize:
            started = time.perf_counter()
            await store.optimize()
            result["optimize_s"] = round(time.perf_counter() - started, 2)
        shard = store._shards[store.collection(dim)]
        methods = ("numpy", "engine", "store")
        # Each method gets its own random resources (one per resource first,
        # untimed: the first touch of a freshly written segment's pages is a
        # page fault, a cost a long-running process pays once) and queries.
        picks = {m: np.concatenate([rng.permutation(resources), rng.integers(0, resources, queries)]) for m in methods}
        probes = {m: rng.standard_normal((resources + queries, dim)).astype(np.float32) for m in methods}

        def engine_query(key: str, value: str, query: np.ndarray) -> Any:
            flt = qe.Filter(must=[qe.FieldCondition(key=key, match=qe.MatchValue(value))])
            request = qe.QueryRequest(
                query=qe.Query.Nearest(query.tolist()), limit=top_k, filter=flt, with_payload=["message_id"]
            )
            return shard.query(request)

        def numpy_top(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
            scores = matrix @ query
            top = np.argpartition(-scores, min(top_k, len(scores) - 1))[:top_k]
            return top[np.argsort(-scores[top])]

        async def time_scope(key: str, share_of: Callable[[int], np.ndarray], label_of: Callable[[int], str]) -> Any:
            async def run(method: str, r: int, query: np.ndarray) -> None:
                if method == "numpy":
                    numpy_top(share_of(r), query)
                elif method == "engine":
                    engine_query(key, label_of(r), query)
                else:
                    await store.search(query, top_k, **{key: label_of(r)})

            timings: dict[str, list[float]] = {m: [] for m in methods}
            # The methods take turns, in a rotating order, so that a busy
            # moment on a shared machine slows them all alike; none reads
            # vectors another just brought into the CPU cache (its own picks).
            for index in range(resources + queries):
                for step in range(len(methods)):
                    method = methods[(index + step) % len(methods)]
                    t0 = time.perf_counter()
                    await run(method, int(picks[method][index]), probes[method][index])
                    timings[method].append(time.perf_counter() - t0)
            report: dict[str, Any] = {m: _percentiles(values[resources:]) for m, values in timings.items()}
            report["points_per_filter"] = int(np.mean([len(share_of(r)) for r in range(min(resources, 20))]))
            return report

        result["resource"] = await time_scope("resource_id", lambda r: shares[r], lambda r: f"r{r}")
        result["thread"] = await time_scope("thread_id", lambda r: thread_shares[r * 10], lambda r: f"t{r * 10}")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m memory_core_bench.vector_latency [options]``."""
    parser = argparse.ArgumentParser(prog="python -m memory_core_bench.vector_latency")
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--resources", type=int, default=100)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--optimize", action="store_true", help="call store.optimize() after the load")
    args = parser.parse_args(argv)
    report = anyio.run(lambda: measure(args.points, args.dim, args.resources, args.queries, args.top_k, args.optimize))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

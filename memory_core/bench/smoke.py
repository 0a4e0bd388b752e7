"""The benchmark's smoke run (CI): every workload, tiny size, checked shape.

``run_smoke(urls)`` runs every workload a few times on each URL (no timing
budget) with the raw drivers' answers verified against the adapter's;
``smoke_problems(report, backends)`` lists everything that is missing or
malformed (an empty list means the run is well formed). Tests of a backend
whose server lives in its own fixture call both with that server's URL.
Nothing here looks at how fast anything was.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

from memory_core.bench.report import BenchReport, Result, markdown
from memory_core.bench.runner import BenchConfig, StorageTarget, VectorTarget, run_bench
from memory_core.bench.workloads import READ_WORKLOADS, STORAGE_WORKLOADS, Semantic

__all__ = ["SMOKE_SIZE", "run_smoke", "smoke_problems"]

SMOKE_SIZE = 300


def run_smoke(
    storage_urls: Sequence[str],
    vector_urls: Sequence[str | None] = (None,),
    *,
    workdir: Path,
    size: int = SMOKE_SIZE,
    peers: bool = False,
    raw: bool = True,
) -> BenchReport:
    """Every workload a few times at a tiny size on the given URLs.

    Args:
        storage_urls: storage URLs (fresh namespaces are used and destroyed).
        vector_urls: vector URLs; ``None`` runs only the vector baselines.
        workdir: scratch folder for peers and file baselines.
        size: messages in the dataset (>= 200).
        peers: also run the installed peer libraries.
        raw: also run the raw drivers (their answers are verified).

    Returns:
        The :class:`BenchReport` (check it with :func:`smoke_problems`).
    """
    config = BenchConfig(
        storage=[StorageTarget(url) for url in storage_urls],
        vectors=[VectorTarget(url) for url in vector_urls],
        sizes=(size,),
        duration=0.0,
        min_ops=3,
        max_ops=3,
        warmup=1,
        concurrency=2,
        raw=raw,
        peers=peers,
        dimension=32,
        workdir=workdir,
    )
    return asyncio.run(run_bench(config, command=["run_smoke", *storage_urls]))


def _result_problems(r: Result) -> list[str]:
    where = f"{r.backend}/{r.subject}/{r.workload}@{r.size}"
    if r.error is not None:
        return [f"{where}: failed: {r.error}"]
    lat = r.latency
    problems: list[str] = []
    values = [lat.min_us, lat.p50_us, lat.p95_us, lat.p99_us, lat.max_us]
    if not all(math.isfinite(v) and v > 0 for v in [*values, lat.mean_us]):
        problems.append(f"{where}: latencies not finite and positive: {lat}")
    if values != sorted(values):
        problems.append(f"{where}: latencies out of order: {lat}")
    if r.ops < 1 or not (r.ops_per_s > 0 and math.isfinite(r.ops_per_s)) or r.seconds <= 0:
        problems.append(f"{where}: no throughput (ops {r.ops}, {r.ops_per_s} ops/s over {r.seconds} s)")
    if r.items and not r.items_per_s > 0:
        problems.append(f"{where}: wrote {r.items} items but {r.items_per_s} items/s")
    if r.kind == "raw" and r.verified is False:
        problems.append(f"{where}: answers differ from the adapter's")
    return problems


def smoke_problems(
    report: BenchReport,
    backends: Iterable[str],
    *,
    raw_backends: Iterable[str] = (),
    peers: Iterable[str] = (),
    vector_backends: Iterable[str] = ("vectors",),
) -> list[str]:
    """Everything missing or malformed in a smoke report.

    Args:
        report: from :func:`run_smoke`.
        backends: backends whose adapter must have run every storage workload.
        raw_backends: backends whose raw driver must have run every storage
            workload and agreed with the adapter (reads: the same answers;
            writes: the adapter reads back what the raw driver wrote).
        peers: peer labels (``Subject.label``) that must have run at least
            one workload.
        vector_backends: vector groups where numpy brute force must have run
            the semantic workload.

    Returns:
        Human-readable problems; empty when the report is well formed.
    """
    problems = [p for r in report.results for p in _result_problems(r)]
    for backend in backends:
        for workload in STORAGE_WORKLOADS:
            found = [r for r in report.results if (r.backend, r.kind, r.workload) == (backend, "adapter",
                                                                                         workload.name)]
            if not found:
                problems.append(f"{backend}: the adapter did not run {workload.name}")
            elif workload in READ_WORKLOADS and found[0].returned < 1:
                problems.append(f"{backend}: {workload.name} returned nothing")
    for backend in raw_backends:
        for workload in STORAGE_WORKLOADS:
            found = [r for r in report.results if (r.backend, r.kind, r.workload) == (backend, "raw", workload.name)]
            if not found or found[0].verified is not True:
                problems.append(f"{backend}: the raw driver did not run {workload.name} with the adapter's answers")
    for label in peers:
        if not any(r.subject == label and r.error is None for r in report.results):
            problems.append(f"peer {label} ran nothing")
    for backend in vector_backends:
        if not any(r.backend == backend and r.workload == Semantic.name and r.subject.startswith("numpy")
                   for r in report.results):
            problems.append(f"{backend}: numpy brute force did not run {Semantic.name}")
    for size in report.sizes():
        if not any(p.size == size for p in report.populate):
            problems.append(f"no populate record at size {size}")
    text = markdown(report)
    for r in report.results:
        if r.workload not in text:
            problems.append(f"the Markdown report misses {r.workload}")
    return problems

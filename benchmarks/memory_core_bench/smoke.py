"""The benchmark's smoke run (CI): every workload, tiny size, checked shape.

``run_smoke(urls, servers=True)`` runs every workload a few times on each URL
(and on valkey and secantusdb, started for the run and stopped after it) with
no timing budget, the raw drivers' answers verified against the adapter's;
``smoke_problems(report, backends, ...)`` lists everything that is missing
or malformed (an empty list means the run is well formed). Nothing here looks
at how fast anything was.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from memory_core_bench.report import BenchReport, Result, markdown
from memory_core_bench.runner import BenchConfig, StorageTarget, VectorTarget, run_bench
from memory_core_bench.servers import RunningServer, bench_servers
from memory_core_bench.workloads import READ_WORKLOADS, STORAGE_WORKLOADS, Semantic

__all__ = ["SMOKE_SIZE", "run_smoke", "smoke_problems"]

SMOKE_SIZE = 200
"""Messages in the smoke dataset (one resource; deep thread 100, probe
threads 5 each)."""

NUMPY_PREFIX = "numpy"


def run_smoke(
    storage_urls: Sequence[str],
    vector_urls: Sequence[str | None] = (None,),
    *,
    workdir: Path,
    size: int = SMOKE_SIZE,
    peers: bool = False,
    raw: bool = True,
    servers: bool = False,
    processes: int = 0,
) -> BenchReport:
    """Every workload a few times (1 warm-up op, 3 timed) at a tiny size.

    Args:
        storage_urls: storage URLs (fresh namespaces are used and destroyed).
        vector_urls: vector URLs; ``None`` runs only the vector baselines.
        workdir: scratch folder for peers and file baselines.
        size: messages in the dataset (>= 200).
        peers: also run the installed peer libraries.
        raw: also run the raw drivers (their answers are verified).
        servers: also start valkey (backend ``valkey``) and secantusdb
            (backend ``mongodb``) for the run; they are stopped before this
            returns or raises. One that cannot start is left out, with a
            note in the report.
        processes: worker processes of the ``multi_process`` workload (0,
            the default: not run; spawning interpreters takes seconds).

    Returns:
        The :class:`BenchReport` (check it with :func:`smoke_problems`).
    """
    notes: list[str] = []
    running: AbstractContextManager[list[RunningServer]] = bench_servers(notes.append) if servers else nullcontext([])
    with running as started:
        config = BenchConfig(
            storage=[StorageTarget(url) for url in storage_urls]
            + [StorageTarget(s.url, backend=s.backend, server_pid=s.pid) for s in started],
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
            processes=processes,
        )
        report = asyncio.run(run_bench(config, command=["run_smoke", *storage_urls]))
    report.notes.extend(notes)
    return report


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
    if r.verified is False:
        problems.append(f"{where}: answers differ from the reference's (adapter, or numpy for vectors)")
    return problems


def _found(report: BenchReport, backend: str, workload: str, kind: str) -> list[Result]:
    """Results of ``kind`` subjects of ``backend`` that ran ``workload``."""
    return [
        r for r in report.results if (r.backend, r.kind, r.workload) == (backend, kind, workload) and r.error is None
    ]


def smoke_problems(
    report: BenchReport,
    backends: Iterable[str],
    *,
    raw_backends: Iterable[str] = (),
    peers: Iterable[str] = (),
    vector_backends: Iterable[str] = (),
    raw_vector_backends: Iterable[str] = (),
) -> list[str]:
    """Everything missing or malformed in a smoke report.

    Always checked: nothing is in ``report.failures``; every result has no
    error, finite positive and ordered latencies, throughput, and no answer
    check that failed; every size has populate records; the Markdown report
    has a section per backend and names every workload that ran.

    Args:
        report: from :func:`run_smoke` (or a loaded ``results.json``).
        backends: storage backends whose adapter must have run every storage
            workload (reads returning at least one item).
        raw_backends: storage backends whose raw driver must have run every
            storage workload and agreed with the adapter (reads: the same
            answers; writes: the adapter reads back what the raw driver
            wrote).
        peers: peer labels (``Subject.label``) that must have run at least
            one workload.
        vector_backends: vector groups where numpy brute force and the
            adapter must have run ``semantic``, the adapter returning
            numpy's exact top-k.
        raw_vector_backends: vector groups where a raw engine (not numpy)
            must have run ``semantic`` returning numpy's exact top-k.

    Returns:
        Human-readable problems; empty when the report is well formed.
    """
    problems = [f"failed: {text}" for text in report.failures]
    problems += [p for r in report.results for p in _result_problems(r)]
    for backend in backends:
        for workload in STORAGE_WORKLOADS:
            found = _found(report, backend, workload.name, "adapter")
            if not found:
                problems.append(f"{backend}: the adapter did not run {workload.name}")
            elif workload in READ_WORKLOADS and found[0].returned < 1:
                problems.append(f"{backend}: {workload.name} returned nothing")
    for backend in raw_backends:
        for workload in STORAGE_WORKLOADS:
            if not any(r.verified for r in _found(report, backend, workload.name, "raw")):
                problems.append(f"{backend}: the raw driver did not run {workload.name} with the adapter's answers")
    for label in peers:
        if not any(r.subject == label and r.error is None for r in report.results):
            problems.append(f"peer {label} ran nothing")
    for backend in vector_backends:
        if not any(r.subject.startswith(NUMPY_PREFIX) for r in _found(report, backend, Semantic.name, "raw")):
            problems.append(f"{backend}: numpy brute force did not run {Semantic.name}")
        if not any(r.verified and r.returned > 0 for r in _found(report, backend, Semantic.name, "adapter")):
            problems.append(f"{backend}: the adapter did not run {Semantic.name} with numpy's answers")
    for backend in raw_vector_backends:
        if not any(
            r.verified and not r.subject.startswith(NUMPY_PREFIX) for r in _found(report, backend, Semantic.name, "raw")
        ):
            problems.append(f"{backend}: no raw engine ran {Semantic.name} with numpy's answers")
    for size in report.sizes():
        if not any(p.size == size for p in report.populate):
            problems.append(f"no populate record at size {size}")
    text = markdown(report)
    for backend in report.backends():
        if f"## {backend}, " not in text:
            problems.append(f"the Markdown report has no section for {backend}")
    for name in dict.fromkeys(r.workload for r in report.results):
        if f"| {name} |" not in text:
            problems.append(f"the Markdown report has no row for {name}")
    return problems

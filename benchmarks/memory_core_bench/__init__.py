"""memory-core-bench: workloads, runner, raw-driver baselines, reports.

``memory-core bench`` (registered through the ``memory_core.cli`` entry-point
group by :mod:`memory_core_bench.cli`; see :mod:`memory_core_bench.command`) runs the named
workloads of :mod:`memory_core_bench.workloads` on any storage URL (and
vector URL) at several store sizes, beside the raw driver doing the same work
on the adapter's own schema and, where installed, peer libraries; it reports
throughput, p50/p95/p99 latency (µs), peak RSS and growth with size as JSON,
Markdown and PNG plots (matplotlib: ``pip install 'memory-core-bench[plots]'``).
The run ends with a summary per backend computed from its numbers
(:mod:`memory_core_bench.summary`: good at, costs, when to pick it) and a
warning naming measurements whose repeats disagree (a noisy machine);
:mod:`memory_core_bench.multiprocess` is the ``multi_process`` workload (N
spawned processes sharing one store), :mod:`memory_core_bench.plots` the
PNGs, :mod:`memory_core_bench.report` the records, Markdown and targets.

Library use::

    from memory_core_bench import BenchConfig, StorageTarget, run_bench
    report = asyncio.run(run_bench(BenchConfig(storage=[StorageTarget("memory://")], sizes=(1000,))))

:func:`run_smoke` runs every workload once at a tiny size (CI).
"""

from memory_core_bench.report import BenchReport, Result, markdown, targets
from memory_core_bench.runner import BenchConfig, StorageTarget, VectorTarget, run_bench
from memory_core_bench.smoke import run_smoke, smoke_problems
from memory_core_bench.workloads import WORKLOADS

__all__ = [
    "WORKLOADS",
    "BenchConfig",
    "BenchReport",
    "Result",
    "StorageTarget",
    "VectorTarget",
    "markdown",
    "run_bench",
    "run_smoke",
    "smoke_problems",
    "targets",
]

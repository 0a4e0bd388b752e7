"""The multi-process workload: N processes on one store doing the agent loop.

The deployment question that separates an embedded store from a server: what
happens when several worker processes (gunicorn workers, a job queue's
consumers) share one store. Each of ``processes`` processes, started with
``multiprocessing``'s *spawn* method (a fresh interpreter, as a separate
worker would be), connects to the same URL and namespace the runner
populated, creates its own thread, runs a few untimed turns, waits for the
others at a barrier, then runs agent turns (save the user's and the
assistant's message, recall the newest 20) for ``duration`` seconds.

The result is one :class:`~memory_core_bench.report.Result` named
``multi_process``: ``ops`` is every process's turns together, ``seconds`` the
wall time from the first process's start to the last one's end (system-wide
``time.monotonic_ns``), latencies are per turn (µs), and ``repeat_cv`` is the
coefficient of variation of the processes' median turn latency (how unevenly
the store served them).

``memory://`` lives in one process's memory: there is nothing to share, so
the runner reports ``n/a`` for it (:func:`shares_across_processes`).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import statistics
import time
import uuid
from dataclasses import dataclass, field
from queue import Empty
from typing import Any

from memory_core.registry import url_scheme

from memory_core_bench.dataset import Dataset
from memory_core_bench.report import LatencyStats, Result, summarize
from memory_core_bench.subjects import AdapterSubject
from memory_core_bench.workloads import PER_PAGE

__all__ = [
    "DEFAULT_PROCESSES",
    "MULTI_PROCESS",
    "MULTI_PROCESS_TITLE",
    "ProcessRun",
    "run_processes",
    "shares_across_processes",
]

MULTI_PROCESS = "multi_process"
"""The workload's name in reports and in ``--workloads``."""

MULTI_PROCESS_TITLE = "agent loop in N processes"

DEFAULT_PROCESSES = 4

WARMUP_TURNS = 3
START_TIMEOUT_S = 120.0
"""Seconds the processes get to start, connect and warm up."""

_SINGLE_PROCESS_SCHEMES = frozenset({"memory"})


def shares_across_processes(url: str) -> bool:
    """Whether two processes opening ``url`` see one store (False for
    ``memory://``, which lives inside one process)."""
    return url_scheme(url) not in _SINGLE_PROCESS_SCHEMES


@dataclass(frozen=True, slots=True)
class ProcessRun:
    """What one worker process measured.

    Attributes:
        index: the process's number (0-based).
        started_ns / ended_ns: ``time.monotonic_ns`` at its first timed turn
            and after its last (one clock for every process on Linux).
        latencies_ns: each timed turn's wall time.
        error: ``"Type: text"`` when the process failed, else None.
    """

    index: int
    started_ns: int
    ended_ns: int
    latencies_ns: list[int] = field(default_factory=list)
    error: str | None = None


async def _turns(
    url: str, namespace: str, size: int, seed: int, index: int, duration: float, max_ops: int, barrier: Any
) -> ProcessRun:
    subject = AdapterSubject("worker", url, namespace)
    await subject.open()
    try:
        stream = Dataset(size, seed).writer(f"{MULTI_PROCESS}-{index}-{uuid.uuid4().hex[:8]}")
        thread = stream.scratch_thread(0)
        await subject.create_threads([thread])
        for _ in range(WARMUP_TURNS):
            await subject.save(subject.prepare(stream.messages(thread, 2)))
            await subject.recall_newest(thread, PER_PAGE)
        barrier.wait(START_TIMEOUT_S)  # every process starts timing together
        latencies: list[int] = []
        started = time.monotonic_ns()
        deadline = started + int(duration * 1e9)
        while len(latencies) < max_ops and (not latencies or time.monotonic_ns() < deadline):
            prepared = subject.prepare(stream.messages(thread, 2))
            t0 = time.perf_counter_ns()
            await subject.save(prepared)
            await subject.recall_newest(thread, PER_PAGE)
            latencies.append(time.perf_counter_ns() - t0)
        return ProcessRun(index, started, time.monotonic_ns(), latencies)
    finally:
        # Close only: the namespace belongs to the runner's adapter subject.
        await subject.storage.close()


def _worker(
    url: str,
    namespace: str,
    size: int,
    seed: int,
    index: int,
    duration: float,
    max_ops: int,
    barrier: Any,
    queue: Any,
) -> None:
    """Process entry point (module level: spawn pickles it by name)."""
    try:
        run = asyncio.run(_turns(url, namespace, size, seed, index, duration, max_ops, barrier))
    except BaseException as exc:
        barrier.abort()  # the others must not wait for a process that died
        now = time.monotonic_ns()
        run = ProcessRun(index, now, now, error=f"{type(exc).__name__}: {exc}")
    queue.put(run)


def run_processes(
    backend: str,
    url: str,
    namespace: str,
    dataset: Dataset,
    *,
    processes: int = DEFAULT_PROCESSES,
    duration: float = 1.0,
    max_ops: int = 5_000,
) -> Result:
    """Run the multi-process agent loop on ``url`` (blocking; call it in a
    thread from async code).

    Args:
        backend: the report's group name.
        url / namespace: the store the runner populated (shared, not destroyed).
        dataset: the dataset it holds (workers write scratch threads of its
            probe resource).
        processes: worker processes (>= 1).
        duration: timed seconds per process (at least one turn each).
        max_ops: timed turns per process, at most.

    Returns:
        The ``multi_process`` :class:`Result` (kind ``adapter``); ``error`` is
        set when a process failed or did not report in time.

    Raises:
        ValueError: ``processes`` < 1 or ``url`` is a single-process store.
    """
    if processes < 1:
        raise ValueError(f"processes must be >= 1, got {processes}")
    if not shares_across_processes(url):
        raise ValueError(f"{url_scheme(url)}:// is a single-process store: processes cannot share it")
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(processes)
    queue = ctx.Queue()
    workers = [
        ctx.Process(
            target=_worker,
            args=(url, namespace, dataset.size, dataset.seed, k, duration, max_ops, barrier, queue),
            name=f"memory-core-bench-{k}",
        )
        for k in range(processes)
    ]
    for worker in workers:
        worker.start()
    runs: list[ProcessRun] = []
    wait = START_TIMEOUT_S + duration * 10 + 60
    deadline = time.monotonic() + wait
    try:
        while len(runs) < processes and time.monotonic() < deadline:
            try:
                runs.append(queue.get(timeout=0.5))
            except Empty:
                # A process killed before reporting (e.g. cannot import its
                # __main__) never will: stop waiting once none is left.
                if not any(w.is_alive() for w in workers) and queue.empty():
                    break
    finally:
        for worker in workers:
            worker.join(timeout=10)
            if worker.is_alive():
                worker.kill()
                worker.join()
    params: dict[str, Any] = {"processes": processes, "per_page": PER_PAGE}
    errors = [f"process {r.index}: {r.error}" for r in runs if r.error is not None]
    if len(runs) < processes:
        errors.append(f"{processes - len(runs)} of {processes} processes exited or timed out without a result")
    if errors:
        zero = LatencyStats(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        return Result(
            backend, "memory-core", "adapter", MULTI_PROCESS, dataset.size, 0, 0, 0.0, zero, 0.0, 0.0, -1,
            params=params, error="; ".join(errors),
        )  # fmt: skip
    latencies = [v for r in runs for v in r.latencies_ns]
    seconds = max(1e-9, (max(r.ended_ns for r in runs) - min(r.started_ns for r in runs)) / 1e9)
    medians = [statistics.median(r.latencies_ns) for r in runs]
    mean = statistics.fmean(medians)
    return Result(
        backend=backend,
        subject="memory-core",
        kind="adapter",
        workload=MULTI_PROCESS,
        size=dataset.size,
        ops=len(latencies),
        items=2 * len(latencies),
        seconds=seconds,
        latency=summarize(latencies),
        ops_per_s=len(latencies) / seconds,
        items_per_s=2 * len(latencies) / seconds,
        returned=-1,
        params=params,
        repeat_cv=statistics.pstdev(medians) / mean if len(medians) > 1 and mean > 0 else None,
    )

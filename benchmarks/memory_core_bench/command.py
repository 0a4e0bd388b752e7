"""``memory-core bench``: options -> targets -> live run -> JSON, Markdown,
PNG -> the plain-language summary per backend (and the project's targets
table with ``--targets``).

Also ``--compare A.json B.json``, which prints B/A ratios of p50 latency and
throughput for every measurement both files hold.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from memory_core.cli.host import os_error_line
from memory_core.errors import ValidationError
from memory_core.registry import VECTOR_GROUP, known_schemes, storage_class
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from memory_core_bench.baselines import missing_peers
from memory_core_bench.dataset import Dataset
from memory_core_bench.history import HISTORY_WORKLOADS
from memory_core_bench.multiprocess import DEFAULT_PROCESSES, MULTI_PROCESS
from memory_core_bench.report import BenchReport, compare_reports, markdown, targets
from memory_core_bench.runner import (
    DEFAULT_SIZES,
    HUGE_SIZE,
    BenchConfig,
    StorageTarget,
    VectorTarget,
    run_bench,
)
from memory_core_bench.servers import RunningServer, bench_servers
from memory_core_bench.summary import backend_summaries, heading, noise_warning
from memory_core_bench.workloads import WORKLOADS

__all__ = [
    "BenchOptions",
    "RichProgress",
    "parse_lengths",
    "parse_sizes",
    "parse_target",
    "print_comparison",
    "print_summary",
    "run_command",
]


class RichProgress:
    """A live rich display: overall progress, the current step, a log above.

    Args:
        console: where to draw.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._overall: TaskID | None = None
        self._current: TaskID | None = None

    def __enter__(self) -> RichProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def begin(self, total_steps: int) -> None:
        """See :class:`~memory_core_bench.runner.ProgressSink`."""
        self._overall = self.progress.add_task("[bold]benchmark[/]", total=total_steps)

    def step(self, description: str, total: int | None = None) -> None:
        """See :class:`~memory_core_bench.runner.ProgressSink`."""
        if self._current is not None:
            self.progress.remove_task(self._current)
        self._current = self.progress.add_task(description, total=total)

    def advance(self, units: int = 1) -> None:
        """See :class:`~memory_core_bench.runner.ProgressSink`."""
        if self._current is not None:
            self.progress.advance(self._current, units)

    def end_step(self) -> None:
        """See :class:`~memory_core_bench.runner.ProgressSink`."""
        if self._current is not None:
            self.progress.remove_task(self._current)
            self._current = None
        if self._overall is not None:
            self.progress.advance(self._overall, 1)

    def log(self, text: str) -> None:
        """See :class:`~memory_core_bench.runner.ProgressSink`."""
        self.progress.console.print(text, highlight=False)


def parse_target(text: str) -> tuple[str, str]:
    """``"name=URL"`` or ``"URL"`` -> (name, url); name is "" when not given."""
    head, sep, rest = text.partition("=")
    if sep and "://" not in head and ":" not in head:
        return head, rest
    return "", text


def _parse_counts(text: str, option: str, check: Callable[[int], None]) -> tuple[int, ...]:
    """Comma-separated message counts (``_`` allowed), each passed to
    ``check`` (which raises ValueError for a bad one)."""
    counts: list[int] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        try:
            count = int(item.replace("_", ""))
        except ValueError:
            raise ValidationError(option, f"{item!r} is not an integer") from None
        try:
            check(count)
        except ValueError as exc:
            raise ValidationError(option, f"{item!r}: {exc}") from None
        counts.append(count)
    if not counts:
        raise ValidationError(option, f"needs at least one count of messages, got {text!r}")
    return tuple(counts)


def _check_size(size: int) -> None:
    Dataset(size).threads  # noqa: B018 - laying the dataset out is the check (size < 1, too small)


def _check_length(length: int) -> None:
    if length < 1:
        raise ValueError("a thread holds at least 1 message")


def parse_sizes(text: str) -> tuple[int, ...]:
    """``"1000,10_000"`` -> ``(1000, 10000)``: store sizes in messages.

    Raises:
        ValidationError: (field ``--sizes``) no size, a size that is not an
            integer, or one too small for the benchmark's dataset layout.
    """
    return _parse_counts(text, "--sizes", _check_size)


def parse_lengths(text: str) -> tuple[int, ...]:
    """``"100,1_000"`` -> ``(100, 1000)``: thread lengths in messages (>= 1)
    for the history-length axis.

    Raises:
        ValidationError: (field ``--history-lengths``) no length, one that is
            not an integer, or one below 1.
    """
    return _parse_counts(text, "--history-lengths", _check_length)


@dataclass
class BenchOptions:
    """What the CLI was asked (see ``memory-core bench --help``)."""

    storage: list[str] = field(default_factory=list)
    vector: list[str] = field(default_factory=list)
    sizes: tuple[int, ...] = DEFAULT_SIZES
    huge: bool = False
    history: bool = False
    workloads: list[str] = field(default_factory=list)
    servers: bool = False
    cluster: bool = False
    raw: bool = True
    peers: bool = True
    duration: float = 1.0
    min_ops: int = 30
    max_ops: int = 5_000
    max_seconds: float = 20.0
    concurrency: int = 8
    dimension: int = 384
    seed: int | None = None
    out: Path = Path("bench-results")
    plots: bool = True
    limits: dict[str, int] = field(default_factory=dict)
    processes: int = DEFAULT_PROCESSES
    targets: bool = False
    cpu: int | None = None


def _usable_cpus() -> set[int]:
    """The CPUs this process may run on (empty where the OS cannot pin, i.e.
    not Linux)."""
    getter = getattr(os, "sched_getaffinity", None)
    return set(getter(0)) if getter is not None else set()


def _default_vectors() -> list[str]:
    schemes = known_schemes(VECTOR_GROUP)
    return ["qdrant::memory:"] if "qdrant" in schemes else ["none"]


def run_command(options: BenchOptions, console: Console, argv: Sequence[str] | None = None) -> int:
    """Run the benchmark as the CLI does; returns the exit code.

    Starts valkey and secantusdb with ``servers`` and a Valkey Cluster with
    ``cluster`` (stopped again however the
    run ends), writes ``results.json``, ``results.md`` and the plots into
    ``options.out``, says what to install for missing peers or plots, prints
    the targets table (``options.targets``) and ends with the summary per
    backend and a warning naming noisy measurements.

    Returns:
        0 when everything ran; 1 when a result failed, a raw driver's answers
        differed from the adapter's or a whole target failed; 2 for bad
        options (unknown workload, a storage URL no installed adapter
        handles, unwritable ``out``), before anything starts.
    """
    known = list(HISTORY_WORKLOADS) if options.history else [*WORKLOADS, MULTI_PROCESS]
    unknown = [w for w in options.workloads if w not in known]
    if unknown:
        axis = "the history-length axis" if options.history else "store sizes"
        console.print(f"[red]unknown workload(s) {unknown} for {axis}; known: {', '.join(known)}[/]")
        return 2
    if options.processes < 0:
        console.print(f"[red]--processes must be >= 0, got {options.processes}[/]")
        return 2
    usable = _usable_cpus()
    if options.cpu is not None and options.cpu not in usable:
        console.print(f"[red]--cpu {options.cpu}: not a CPU this process may run on; usable: {sorted(usable)}[/]")
        return 2
    # A storage URL no installed adapter handles is a typo, not a result.
    for text in options.storage:
        try:
            storage_class(parse_target(text)[1])
        except ValidationError as exc:
            console.print(f"[red]error: --storage {escape(text)}: {escape(exc.reason)}[/]", soft_wrap=True)
            return 2
    # Before anything starts: an unwritable --out must not waste a long run.
    try:
        options.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        console.print(f"[red]error: cannot write results: {escape(os_error_line(exc))}[/]", soft_wrap=True)
        return 2
    work = Path(tempfile.mkdtemp(prefix="memory-core-bench-"))
    backends = [*(("valkey", "mongodb") if options.servers else ()), *(("valkey-cluster",) if options.cluster else ())]
    servers: AbstractContextManager[list[RunningServer]] = (
        bench_servers(console.print, backends) if backends else nullcontext([])
    )
    try:
        with servers as started:
            return _run(options, console, argv, work, started)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(
    options: BenchOptions, console: Console, argv: Sequence[str] | None, work: Path, started: list[RunningServer]
) -> int:
    """The run itself, with the ``started`` servers up: targets, live run,
    files; returns the exit code."""
    storage: list[StorageTarget] = []
    for text in options.storage or ["memory://", f"sqlite:///{work / 'bench.db'}"]:
        name, url = parse_target(text)
        target = StorageTarget(url, backend=name)
        storage.append(StorageTarget(url, backend=name, max_size=options.limits.get(target.name)))
    for server in started:
        storage.append(
            StorageTarget(
                server.url,
                backend=server.backend,
                server_pid=server.pid,
                note=f"{server.name} {server.version} started by the benchmark",
                max_size=options.limits.get(server.backend),
            )
        )
    vectors: list[VectorTarget] = []
    for text in options.vector or _default_vectors():
        name, url = parse_target(text)
        vectors.append(
            VectorTarget(None if url == "none" else url, backend=name or ("vectors" if url == "none" else ""))
        )
    huge = {HUGE_SIZE} if options.huge and not options.history else set()
    sizes = tuple(sorted(set(options.sizes) | huge))
    config = BenchConfig(
        storage=storage,
        vectors=vectors,
        sizes=sizes,
        workloads=frozenset(options.workloads) if options.workloads else None,
        duration=options.duration,
        min_ops=options.min_ops,
        max_ops=options.max_ops,
        max_seconds=options.max_seconds,
        concurrency=options.concurrency,
        raw=options.raw,
        peers=options.peers,
        dimension=options.dimension,
        workdir=work,
        checkpoint=options.out / "results.partial.json",
        processes=options.processes,
        axis="history" if options.history else "store",
    )
    if options.seed is not None:
        config.seed = options.seed
    if options.peers:
        for backend in {t.name for t in storage}:
            for text in missing_peers(backend):
                console.print(f"[yellow]{escape(text)}[/]", soft_wrap=True)
    if options.cpu is not None:
        # After the servers started (they keep every CPU); threads started from
        # here on (aiosqlite's workers, the progress display) inherit the mask.
        os.sched_setaffinity(0, {options.cpu})
    with RichProgress(console) as live:
        report = asyncio.run(run_bench(config, live, ["memory-core", *(argv or sys.argv[1:])]))
    for server in started:
        report.notes.append(f"{server.name} {server.version} was started by the benchmark (pid {server.pid}).")
    report.write_json(options.out / "results.json")
    (options.out / "results.partial.json").unlink(missing_ok=True)
    (options.out / "results.md").write_text(markdown(report), encoding="utf-8")
    console.print(f"wrote {options.out / 'results.json'} and {options.out / 'results.md'}")
    if options.plots:
        try:
            from memory_core_bench.plots import write_plots

            for path in write_plots(report, options.out):
                console.print(f"wrote {path}")
        except ImportError as exc:
            # escape: "[plots]" in the pip hint is not rich markup.
            console.print(f"[yellow]no plots: {escape(str(exc))}[/]", soft_wrap=True)
    if options.targets:
        _print_targets(report, console)
    print_summary(report, console)
    failed = [r for r in report.results if r.error is not None or r.verified is False]
    for text in report.failures:
        console.print(f"[red]failed: {escape(text)}[/]")
    return 1 if failed or report.failures else 0


def _print_targets(report: BenchReport, console: Console) -> None:
    table = Table(title="targets (measured, not asserted)", title_justify="left")
    for column in ("target", "backend", "workload", "size", "measured", "met"):
        table.add_column(column)
    for check in targets(report):
        table.add_row(
            check.target,
            check.backend,
            check.workload,
            f"{check.size:,}",
            f"{check.measured:.2f}",
            "[green]yes[/]" if check.met else "[red]no[/]",
        )
    _print_wide(console, table)


def print_summary(report: BenchReport, console: Console) -> None:
    """Per backend, what the run says it is good at (+), what it costs (-)
    and when to pick it (->); then a warning naming noisy measurements."""
    console.print()
    console.print("[bold]What this run says, backend by backend[/] (computed from the numbers above)")
    for s in backend_summaries(report):
        name, _, rest = heading(report, s).partition(" ")
        console.print(f"[bold]{escape(name)}[/] {escape(rest)}:", highlight=False)
        for text in s.good_at:
            console.print(f"  [green]+[/] {escape(text)}", highlight=False, soft_wrap=True)
        for text in s.costs:
            console.print(f"  [red]-[/] {escape(text)}", highlight=False, soft_wrap=True)
        console.print(f"  [bold]->[/] {escape(s.pick)}", highlight=False, soft_wrap=True)
    for line in noise_warning(report):
        console.print(f"[yellow]{escape(line)}[/]", highlight=False, soft_wrap=True)


def _print_wide(console: Console, table: Table) -> None:
    """Print ``table``; piped output is not wrapped at 80 columns, so rows
    stay whole (greppable)."""
    if console.is_terminal:
        console.print(table)
        return
    width = console.width
    console.width = max(width, 180)
    try:
        console.print(table)
    finally:
        console.width = width


def print_comparison(a_path: Path, b_path: Path, console: Console) -> int:
    """Print B/A ratios for every measurement in both reports; returns the
    exit code (2 when a file is not a readable report)."""
    try:
        a = BenchReport.read_json(a_path)
        b = BenchReport.read_json(b_path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        said = os_error_line(exc) if isinstance(exc, OSError) else str(exc)
        console.print(f"[red]cannot compare: {escape(said)}[/]", soft_wrap=True)
        return 2
    rows = compare_reports(a, b)
    table = Table(title=f"B / A  (A = {a_path}, B = {b_path}); p50 ratio < 1: B is faster", title_justify="left")
    for column in ("backend", "subject", "workload", "size", "p50 A (µs)", "p50 B (µs)", "p50 B/A", "ops/s B/A"):
        table.add_column(column, justify="right" if column[0] in "ps" and column != "subject" else "left")
    for row in rows:
        colour = "green" if row.p50_ratio < 0.95 else "red" if row.p50_ratio > 1.05 else "white"
        table.add_row(
            row.backend,
            row.subject,
            row.workload,
            f"{row.size:,}",
            f"{row.p50_a_us:,.0f}",
            f"{row.p50_b_us:,.0f}",
            f"[{colour}]{row.p50_ratio:.2f}[/]",
            f"{row.ops_ratio:.2f}",
        )
    _print_wide(console, table)
    if not rows:
        console.print("[yellow]no measurement appears in both files[/]")
    return 0

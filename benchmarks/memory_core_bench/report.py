"""Benchmark results: the records, JSON in and out, Markdown, targets, compare.

Latencies are in **microseconds** (µs) of wall time per op, measured with
``time.perf_counter_ns`` around the awaited call; throughput is ops (and
messages) per second of timed wall time. Peak RSS is in MiB: the client
process's high-water mark while one subject ran one workload (Linux
``VmHWM``, reset before each phase), and the server's where the runner
started the server.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memory_core_bench.workloads import READ_WORKLOADS

__all__ = [
    "BenchReport",
    "Comparison",
    "Growth",
    "LatencyStats",
    "PopulateRecord",
    "Result",
    "TargetCheck",
    "compare_reports",
    "growth",
    "markdown",
    "noisy",
    "repeat_cv",
    "summarize",
    "targets",
]

SCHEMA_VERSION = 1

NOISY_CV = 0.25
"""A result whose repeats disagree by more than this coefficient of
variation is flagged as noisy (other work competing for the CPUs)."""


@dataclass(frozen=True, slots=True)
class LatencyStats:
    """Order statistics of one sample of op latencies, in µs."""

    p50_us: float
    p95_us: float
    p99_us: float
    mean_us: float
    min_us: float
    max_us: float


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile of an ascending, non-empty sequence."""
    if len(ordered) == 1:
        return float(ordered[0])
    pos = q * (len(ordered) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (pos - low))


def summarize(latencies_ns: Sequence[int]) -> LatencyStats:
    """p50 / p95 / p99 / mean / min / max of ``latencies_ns`` (ns), in µs.

    Raises:
        ValueError: empty sample.
    """
    if not latencies_ns:
        raise ValueError("no latencies to summarize")
    ordered = sorted(v / 1000 for v in latencies_ns)
    return LatencyStats(
        p50_us=_quantile(ordered, 0.50),
        p95_us=_quantile(ordered, 0.95),
        p99_us=_quantile(ordered, 0.99),
        mean_us=sum(ordered) / len(ordered),
        min_us=ordered[0],
        max_us=ordered[-1],
    )


@dataclass(slots=True)
class Result:
    """One (backend, subject, workload, size) measurement.

    Attributes:
        backend / subject / kind: who ran (``kind``: adapter, raw, peer).
        workload / size: what ran, on a store of ``size`` messages.
        ops: timed ops; ``items`` messages written by them (0 for reads).
        seconds: timed wall time (s).
        latency: per-op latency statistics (µs).
        ops_per_s / items_per_s: throughput over ``seconds``.
        returned: items in the last answer (reads; -1 for writes).
        client_rss_mib / server_rss_mib: peak RSS during this phase (MiB).
        verified: for raw drivers, whether their answers equal the adapter's
            on the same data (None where not compared).
        params: the workload's shape (page, depth, batch ...).
        error: set when the workload failed (then the stats are zeros).
        repeat_cv: how much the repeats of this measurement disagree: the
            coefficient of variation (stdev / mean) of the medians of its
            consecutive blocks of ops (of each process's median for
            ``multi_process``); None with fewer than 3 blocks. A quiet
            machine keeps it well under :data:`NOISY_CV`.
    """

    backend: str
    subject: str
    kind: str
    workload: str
    size: int
    ops: int
    items: int
    seconds: float
    latency: LatencyStats
    ops_per_s: float
    items_per_s: float
    returned: int
    client_rss_mib: float | None = None
    server_rss_mib: float | None = None
    verified: bool | None = None
    params: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    repeat_cv: float | None = None

    @property
    def key(self) -> tuple[str, str, str, int]:
        """(backend, subject, workload, size)."""
        return (self.backend, self.subject, self.workload, self.size)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Result:
        """Inverse of ``asdict``."""
        values = dict(data)
        values["latency"] = LatencyStats(**values["latency"])
        return Result(**values)


@dataclass(frozen=True, slots=True)
class PopulateRecord:
    """Loading a store with the dataset by batched saves (batches of 100).

    ``messages_per_s`` includes creating the threads.
    """

    backend: str
    subject: str
    kind: str
    size: int
    messages: int
    threads: int
    seconds: float
    messages_per_s: float
    client_rss_mib: float | None = None
    server_rss_mib: float | None = None


@dataclass(slots=True)
class BenchReport:
    """A whole run: metadata, populate records and results.

    Attributes:
        notes: free remarks for the reader (servers started ...).
        failures: what could not run at all (a whole target, a vector
            subject or installed peer that would not open), one line each; a
            failing workload is a :class:`Result` with ``error`` instead.
    """

    meta: dict[str, Any] = field(default_factory=dict)
    populate: list[PopulateRecord] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (``schema`` 1), growth and targets included."""
        return {
            "schema": SCHEMA_VERSION,
            "meta": self.meta,
            "populate": [asdict(p) for p in self.populate],
            "results": [asdict(r) for r in self.results],
            "growth": [asdict(g) for g in growth(self)],
            "targets": [asdict(t) for t in targets(self)],
            "notes": self.notes,
            "failures": self.failures,
        }

    def write_json(self, path: Path) -> None:
        """Write :meth:`to_json` to ``path`` (UTF-8, indented)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    @staticmethod
    def read_json(path: Path) -> BenchReport:
        """Load a report written by :meth:`write_json`.

        Raises:
            ValueError: not a memory-core bench report.
        """
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("schema") != SCHEMA_VERSION:
            raise ValueError(f"{path} is not a memory-core bench report (schema {SCHEMA_VERSION})")
        return BenchReport(
            meta=data["meta"],
            populate=[PopulateRecord(**p) for p in data["populate"]],
            results=[Result.from_dict(r) for r in data["results"]],
            notes=list(data.get("notes", [])),
            failures=list(data.get("failures", [])),
        )

    def find(self, backend: str, subject: str, workload: str, size: int) -> Result | None:
        """The result for this key, or None."""
        for result in self.results:
            if result.key == (backend, subject, workload, size) and result.error is None:
                return result
        return None

    def sizes(self) -> list[int]:
        """Store sizes measured, ascending."""
        return sorted({r.size for r in self.results})

    def backends(self) -> list[str]:
        """Backends in first-seen order."""
        return list(dict.fromkeys(r.backend for r in self.results))


@dataclass(frozen=True, slots=True)
class Growth:
    """How p50 latency grows with store size for one series.

    ``slope`` is the log-log slope between consecutive sizes
    (``log(p50_b / p50_a) / log(size_b / size_a)``): 0 means flat, 1 means
    linear in the store size. ``ratio`` is p50 at the largest size over p50
    at the smallest.
    """

    backend: str
    subject: str
    workload: str
    sizes: list[int]
    p50_us: list[float]
    slopes: list[float]
    ratio: float


def growth(report: BenchReport) -> list[Growth]:
    """One :class:`Growth` per (backend, subject, workload) measured at two or
    more sizes."""
    series: dict[tuple[str, str, str], list[Result]] = {}
    for result in report.results:
        if result.error is None:
            series.setdefault((result.backend, result.subject, result.workload), []).append(result)
    out: list[Growth] = []
    for (backend, subject, workload), found in series.items():
        found.sort(key=lambda r: r.size)
        if len(found) < 2:
            continue
        sizes = [r.size for r in found]
        p50 = [r.latency.p50_us for r in found]
        slopes = [
            math.log(p50[k + 1] / p50[k]) / math.log(sizes[k + 1] / sizes[k]) if p50[k] > 0 and p50[k + 1] > 0 else 0.0
            for k in range(len(found) - 1)
        ]
        out.append(Growth(backend, subject, workload, sizes, p50, slopes, p50[-1] / p50[0] if p50[0] else math.inf))
    return out


@dataclass(frozen=True, slots=True)
class TargetCheck:
    """One target of issue 14 and its measured figure (never asserted).

    ``measured`` is the ratio the target bounds; ``met`` whether it holds.
    """

    target: str
    backend: str
    workload: str
    size: int
    measured: float
    bound: float
    met: bool
    detail: str


OPENAI_SESSION = "openai-agents SQLiteSession"
OPENAI_SQLALCHEMY = "openai-agents SQLAlchemySession"
ADK_DATABASE = "adk DatabaseSessionService"
LANGGRAPH_STORE = "langgraph AsyncSqliteStore"
PEER_TARGETS: dict[str, tuple[float, frozenset[str]]] = {
    OPENAI_SESSION: (1.0, frozenset({"recall_newest", "agent_loop"})),
    LANGGRAPH_STORE: (3.0, frozenset(w.name for w in READ_WORKLOADS)),
}
"""Peer label -> (how many times faster memory-core must be, on which
workloads), issue 14: faster than OpenAI Agents' ``SQLiteSession`` on
newest 20 and the agent loop; at least 3x LangGraph's store on every read."""

SEMANTIC_BOUND = 1.25
"""Semantic recall filtered by resource ÷ numpy over that resource (issue 14)."""

HISTORY_FLAT = 1.2
"""History-length axis: a read of a thread of the longest length ÷ the same
read of the shortest thread, at most (memory-core, every backend)."""

HISTORY_SEMANTIC = 2.0
"""History-length axis: semantic recall over the longest thread's resource ÷
the same at :data:`HISTORY_SEMANTIC_BASE` messages, at most."""

HISTORY_SEMANTIC_BASE = 1_000

SWAP_WITHIN = 2.0
"""``MemoryCoreSession`` on a server backend ÷ the SDK's ``SQLiteSession``
(a local file), at most."""


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else math.inf


def targets(report: BenchReport) -> list[TargetCheck]:
    """Every target of issue 14 with its measured ratio, from p50 latencies:

    - adapter / raw driver ≤ 1.25, per workload, backend and size;
    - peer / adapter as :data:`PEER_TARGETS` says (the adapter of the
      peer's backend);
    - cursor page at depth 1,000 / first page ≤ 1.5 (adapters);
    - newest-20 recall at the largest size / at the smallest ≤ 1.5;
    - semantic search (adapter) / numpy brute force ≤ :data:`SEMANTIC_BOUND`.
    """
    checks: list[TargetCheck] = []
    adapters = [r for r in report.results if r.kind == "adapter" and r.error is None]
    for a in adapters:
        for other in report.results:
            same = (other.backend, other.workload, other.size) == (a.backend, a.workload, a.size)
            if other.error is not None or not same:
                continue
            if other.kind == "raw" and not other.subject.startswith("numpy"):  # numpy: the target below
                ratio = _ratio(a.latency.p50_us, other.latency.p50_us)
                checks.append(
                    TargetCheck(
                        "adapter ≤ 1.25x raw driver",
                        a.backend,
                        a.workload,
                        a.size,
                        ratio,
                        1.25,
                        ratio <= 1.25,
                        f"{a.subject} {a.latency.p50_us:.0f} µs vs {other.subject} {other.latency.p50_us:.0f} µs",
                    )
                )
            elif other.kind == "peer" and a.workload in PEER_TARGETS.get(other.subject, (0.0, frozenset()))[1]:
                bound = PEER_TARGETS[other.subject][0]
                ratio = _ratio(other.latency.p50_us, a.latency.p50_us)
                checks.append(
                    TargetCheck(
                        f"≥ {bound:g}x faster than {other.subject}" if bound > 1 else f"faster than {other.subject}",
                        a.backend,
                        a.workload,
                        a.size,
                        ratio,
                        bound,
                        ratio >= bound if bound > 1 else ratio > bound,
                        f"{other.subject} {other.latency.p50_us:.0f} µs vs {a.subject} {a.latency.p50_us:.0f} µs",
                    )
                )
    for a in adapters:
        if a.workload != "page_cursor":
            continue
        first = report.find(a.backend, a.subject, "page_first", a.size)
        if first is not None:
            ratio = _ratio(a.latency.p50_us, first.latency.p50_us)
            checks.append(
                TargetCheck(
                    "cursor page at depth 1000 ≤ 1.5x first page",
                    a.backend,
                    a.workload,
                    a.size,
                    ratio,
                    1.5,
                    ratio <= 1.5,
                    f"depth {a.params.get('depth')}: {a.latency.p50_us:.0f} µs vs first {first.latency.p50_us:.0f} µs",
                )
            )
    sizes = report.sizes()
    if len(sizes) >= 2:
        for backend in report.backends():
            low = [r for r in adapters if (r.backend, r.workload, r.size) == (backend, "recall_newest", sizes[0])]
            high = [r for r in adapters if (r.backend, r.workload, r.size) == (backend, "recall_newest", sizes[-1])]
            if low and high:
                ratio = _ratio(high[0].latency.p50_us, low[0].latency.p50_us)
                checks.append(
                    TargetCheck(
                        f"newest 20 at {sizes[-1]:,} ≤ 1.5x at {sizes[0]:,}",
                        backend,
                        "recall_newest",
                        sizes[-1],
                        ratio,
                        1.5,
                        ratio <= 1.5,
                        f"{high[0].latency.p50_us:.0f} µs vs {low[0].latency.p50_us:.0f} µs",
                    )
                )
    for a in adapters:
        if a.workload != "semantic":
            continue
        for other in report.results:
            if (
                (other.backend, other.workload, other.size) == (a.backend, "semantic", a.size)
                and other.kind == "raw"
                and other.subject.startswith("numpy")
                and other.error is None
            ):
                ratio = _ratio(a.latency.p50_us, other.latency.p50_us)
                checks.append(
                    TargetCheck(
                        f"semantic ≤ {SEMANTIC_BOUND:g}x numpy brute force",
                        a.backend,
                        "semantic",
                        a.size,
                        ratio,
                        SEMANTIC_BOUND,
                        ratio <= SEMANTIC_BOUND,
                        f"{a.latency.p50_us:.0f} µs vs numpy {other.latency.p50_us:.0f} µs",
                    )
                )
    if report.meta.get("axis") == "history":
        checks.extend(_history_targets(report))
    return checks


def _history_targets(report: BenchReport) -> list[TargetCheck]:
    """The history-length axis' targets, from p50 latencies:

    - every memory-core result at the longest thread ≤ :data:`HISTORY_FLAT`
      times the same at the shortest;
    - semantic recall at the longest ≤ :data:`HISTORY_SEMANTIC` times at
      :data:`HISTORY_SEMANTIC_BASE` messages (the shortest length at least);
    - swap section, at every length: ``MemoryCoreSession`` faster than the
      SDK's ``SQLiteSession`` on a SQLite backend and within
      :data:`SWAP_WITHIN` of it on the others, faster than
      ``SQLAlchemySession``; ``MemoryCoreSessionService`` faster than
      ``DatabaseSessionService``.
    """
    checks: list[TargetCheck] = []
    adapters = [r for r in report.results if r.kind == "adapter" and r.error is None]
    series: dict[tuple[str, str, str], list[Result]] = {}
    for r in adapters:
        series.setdefault((r.backend, r.subject, r.workload), []).append(r)
    for (backend, subject, workload), found in series.items():
        found.sort(key=lambda r: r.size)
        if len(found) < 2:
            continue
        low, high = found[0], found[-1]
        bases = [(HISTORY_FLAT, low)]
        if workload == "thread_semantic":
            base = next((r for r in found if r.size >= HISTORY_SEMANTIC_BASE), None)
            if base is not None and base is not high:
                bases.append((HISTORY_SEMANTIC, base))
        for bound, base in bases:
            ratio = _ratio(high.latency.p50_us, base.latency.p50_us)
            checks.append(
                TargetCheck(
                    f"{subject}: thread of {high.size:,} ≤ {bound:g}x thread of {base.size:,}",
                    backend,
                    workload,
                    high.size,
                    ratio,
                    bound,
                    ratio <= bound,
                    f"{high.latency.p50_us:.0f} µs vs {base.latency.p50_us:.0f} µs",
                )
            )
    schemes = {t["backend"]: str(t.get("url", "")).split(":", 1)[0] for t in report.meta.get("storage", [])}
    for a in adapters:
        if not a.workload.startswith("swap_"):
            continue
        for peer in report.results:
            same = (peer.backend, peer.workload, peer.size) == (a.backend, a.workload, a.size)
            if peer.kind != "peer" or peer.error is not None or not same:
                continue
            faster = _ratio(peer.latency.p50_us, a.latency.p50_us)
            if peer.subject == OPENAI_SESSION and schemes.get(a.backend) != "sqlite":
                ratio = _ratio(a.latency.p50_us, peer.latency.p50_us)
                name, met, bound = f"{a.subject} within {SWAP_WITHIN:g}x of {peer.subject}", ratio, SWAP_WITHIN
                ok = ratio <= SWAP_WITHIN
            else:
                name, met, bound, ok = f"{a.subject} faster than {peer.subject}", faster, 1.0, faster > 1.0
            checks.append(
                TargetCheck(
                    name,
                    a.backend,
                    a.workload,
                    a.size,
                    met,
                    bound,
                    ok,
                    f"{peer.subject} {peer.latency.p50_us:.0f} µs vs {a.subject} {a.latency.p50_us:.0f} µs",
                )
            )
    return checks


def repeat_cv(latencies_ns: Sequence[int], block: int) -> float | None:
    """Coefficient of variation of the medians of consecutive ``block``-op
    slices of ``latencies_ns`` (a last, shorter slice counts when it holds
    at least half a block); None with fewer than 3 slices.

    Raises:
        ValueError: ``block`` < 1.
    """
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}")
    medians = [
        _quantile(sorted(latencies_ns[k : k + block]), 0.5)
        for k in range(0, len(latencies_ns), block)
        if len(latencies_ns[k : k + block]) * 2 >= block
    ]
    if len(medians) < 3:
        return None
    mean = sum(medians) / len(medians)
    if mean <= 0:
        return None
    return math.sqrt(sum((m - mean) ** 2 for m in medians) / len(medians)) / mean


def noisy(report: BenchReport, threshold: float = NOISY_CV) -> list[Result]:
    """The results whose repeats disagree widely (``repeat_cv`` above
    ``threshold``), worst first: their numbers depend on what else the
    machine was doing."""
    found = [r for r in report.results if r.error is None and r.repeat_cv is not None and r.repeat_cv > threshold]
    return sorted(found, key=lambda r: -(r.repeat_cv or 0.0))


# ---------------------------------------------------------------------- Markdown


def _us(value: float) -> str:
    if value >= 10_000:
        return f"{value / 1000:,.1f} ms"
    if value >= 1000:
        return f"{value / 1000:,.2f} ms"
    return f"{value:,.0f} µs"


def _rate(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:,.1f}"


def _mib(value: float | None) -> str:
    return "" if value is None else f"{value:,.0f}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


_AXIS_WORDS = {
    "store": {
        "size": "{size:,} messages",
        "populate": "Populate (batched saves of 100, threads created first)",
        "axis": "store size",
    },
    "history": {
        "size": "one thread of {size:,} messages",
        "populate": "Load (one thread, bulk saves of 1,000 through each store's own API)",
        "axis": "thread length",
    },
}


def markdown(report: BenchReport) -> str:
    """The whole report as Markdown: the per-backend summary and noise
    warning (:mod:`memory_core_bench.summary`), one table per backend and
    size (each subject's p50/p95/p99, throughput and the spread of its
    repeats, with the ratio to the backend's adapter), populate speed,
    growth with size, and every target."""
    out: list[str] = ["# memory-core benchmark results", ""]
    meta = report.meta
    words = _AXIS_WORDS["history" if meta.get("axis") == "history" else "store"]
    if meta:
        out.append(f"- date: {meta.get('date', '?')}")
        out.append(f"- command: `{meta.get('command', '?')}`")
        out.append(f"- machine: {meta.get('machine', '?')}")
        cpus = meta.get("cpus")
        if cpus and len(cpus) < (meta.get("cpu_count") or 0):
            out.append(f"- benchmark process pinned to CPU {', '.join(map(str, cpus))} (`--cpu`); servers not pinned")
        if meta.get("load_average_start"):
            out.append(
                f"- load average (1/5/15 min) at start {meta['load_average_start']}, "
                f"at end {meta.get('load_average_end')}"
            )
        versions = meta.get("versions", {})
        if versions:
            out.append("- versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
        out.append(
            "- latencies in µs or ms per op (wall time, p50/p95/p99); throughput in ops/s; RSS in MiB; "
            "spread: coefficient of variation of the repeats (blocks of ops; processes for multi_process)"
        )
        out.append("")
    # summary builds on this module: imported here, not at the top.
    from memory_core_bench.summary import summary_text

    lines = summary_text(report)
    if lines:
        out.append("## Summary (computed from this run)")
        out.append("")
        out.append("```text")
        out.extend(lines)
        out.append("```")
        out.append("")
    for note in report.notes:
        out.append(f"> {note}")
    for failure in report.failures:
        out.append(f"> **failed:** {failure}")
    if report.notes or report.failures:
        out.append("")
    for backend in report.backends():
        for size in report.sizes():
            rows = [r for r in report.results if r.backend == backend and r.size == size]
            if not rows:
                continue
            out.append(f"## {backend}, {words['size'].format(size=size)}")
            out.append("")
            header = [
                "workload",
                "subject",
                "p50",
                "p95",
                "p99",
                "ops/s",
                "msgs/s",
                "p50 / adapter",
                "RSS client",
                "RSS server",
                "spread",
                "ok",
            ]
            body: list[list[str]] = []
            for r in rows:
                if r.error is not None:
                    body.append([r.workload, r.subject, "error", "", "", "", "", "", "", "", "", r.error[:60]])
                    continue
                base = next(
                    (a for a in rows if a.kind == "adapter" and a.workload == r.workload and a.error is None), None
                )
                ratio = ""
                if base is not None and r.kind != "adapter":
                    ratio = f"{_ratio(r.latency.p50_us, base.latency.p50_us):.2f}"
                ok = "" if r.verified is None else ("same answers" if r.verified else "**DIFFERENT**")
                body.append(
                    [
                        r.workload,
                        r.subject,
                        _us(r.latency.p50_us),
                        _us(r.latency.p95_us),
                        _us(r.latency.p99_us),
                        _rate(r.ops_per_s),
                        _rate(r.items_per_s) if r.items else "",
                        ratio,
                        _mib(r.client_rss_mib),
                        _mib(r.server_rss_mib),
                        "" if r.repeat_cv is None else f"{r.repeat_cv:.0%}",
                        ok,
                    ]
                )
            out.extend(_table(header, body))
            out.append("")
    if report.populate:
        out.append(f"## {words['populate']}")
        out.append("")
        out.extend(
            _table(
                ["backend", "subject", "size", "seconds", "msgs/s", "RSS client", "RSS server"],
                [
                    [
                        p.backend,
                        p.subject,
                        f"{p.size:,}",
                        f"{p.seconds:,.1f}",
                        _rate(p.messages_per_s),
                        _mib(p.client_rss_mib),
                        _mib(p.server_rss_mib),
                    ]
                    for p in report.populate
                ],
            )
        )
        out.append("")
    grown = growth(report)
    if grown:
        out.append(f"## Growth with {words['axis']} (p50; log-log slope between sizes: 0 = flat, 1 = linear)")
        out.append("")
        out.extend(
            _table(
                ["backend", "subject", "workload", "p50 by size", "slopes", "largest / smallest"],
                [
                    [
                        g.backend,
                        g.subject,
                        g.workload,
                        " → ".join(_us(v) for v in g.p50_us),
                        ", ".join(f"{s:+.2f}" for s in g.slopes),
                        f"{g.ratio:.2f}",
                    ]
                    for g in grown
                ],
            )
        )
        out.append("")
    checks = targets(report)
    if checks:
        out.append("## Targets (measured, not asserted)")
        out.append("")
        out.extend(
            _table(
                ["target", "backend", "workload", "size", "measured", "bound", "met", "detail"],
                [
                    [
                        c.target,
                        c.backend,
                        c.workload,
                        f"{c.size:,}",
                        f"{c.measured:.2f}",
                        f"{c.bound:g}",
                        "yes" if c.met else "**no**",
                        c.detail,
                    ]
                    for c in checks
                ],
            )
        )
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------- compare


@dataclass(frozen=True, slots=True)
class Comparison:
    """One key present in both reports: p50 and throughput, B over A."""

    backend: str
    subject: str
    workload: str
    size: int
    p50_a_us: float
    p50_b_us: float
    p50_ratio: float
    ops_ratio: float


def compare_reports(a: BenchReport, b: BenchReport) -> list[Comparison]:
    """Ratios B / A of p50 latency and of ops/s for every (backend, subject,
    workload, size) measured without error in both reports (a p50 ratio
    below 1 means B is faster)."""
    index = {r.key: r for r in a.results if r.error is None}
    out: list[Comparison] = []
    for rb in b.results:
        ra = index.get(rb.key)
        if ra is None or rb.error is not None:
            continue
        out.append(
            Comparison(
                rb.backend,
                rb.subject,
                rb.workload,
                rb.size,
                ra.latency.p50_us,
                rb.latency.p50_us,
                _ratio(rb.latency.p50_us, ra.latency.p50_us),
                _ratio(rb.ops_per_s, ra.ops_per_s),
            )
        )
    return out

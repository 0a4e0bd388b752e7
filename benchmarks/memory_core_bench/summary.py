"""The plain-language summary that ends ``memory-core bench``: per backend,
what it is good at, what it costs and when to pick it, every sentence
computed from the run's numbers (change a number, the text changes).

The facts it draws on (adapter results only; raw drivers and peers are
the yardsticks):

- reads: ``recall_newest`` p50 at the largest size every storage backend ran,
  ranked; its growth from the smallest to the largest size the backend ran
  (flat when at most :data:`FLAT_GROWTH`);
- writes: ``save_batch`` messages/s (ranked) and ``save_one`` p50;
- sharing: ``multi_process`` turns/s against the one-process ``agent_loop``;
  ``n/a`` for a store that lives in one process (``memory://``);
- footprint: the server's peak RSS, or the client's for an in-process store;
- memory-core's own overhead: the median adapter / raw driver p50 ratio;
- vectors: ``semantic`` p50 against numpy brute force, and whether the top
  10 equals the exact one;
- noise: results whose repeats disagree (:func:`memory_core_bench.report.noisy`).

On the history-length axis (``meta["axis"] == "history"``) the summary is
about a long-running agent instead: how newest 20 and the agent's turn grow
from the shortest to the longest thread (flat when at most
:data:`~memory_core_bench.report.HISTORY_FLAT`), which other reads grow, and
how memory-core's framework sessions compare with the frameworks' own
stores at the longest thread both ran.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from memory_core.errors import ValidationError

from memory_core_bench.multiprocess import MULTI_PROCESS
from memory_core_bench.report import ADK_DATABASE, HISTORY_FLAT, OPENAI_SESSION, BenchReport, Result, noisy

__all__ = ["FLAT_GROWTH", "BackendSummary", "backend_summaries", "heading", "noise_warning", "summary_text"]

FLAT_GROWTH = 1.5
"""Largest / smallest-size p50 up to which reads count as flat with size."""

_SIMILAR = 1.2
"""Within this factor of the best, a backend counts as among the best."""


@dataclass(frozen=True, slots=True)
class BackendSummary:
    """What one backend's numbers say.

    Attributes:
        backend: the report's group name.
        size: the largest store size (messages or vectors) it ran.
        good_at / costs: short sentences, each carrying its number.
        pick: when to choose it, one sentence.
    """

    backend: str
    size: int
    good_at: list[str] = field(default_factory=list)
    costs: list[str] = field(default_factory=list)
    pick: str = ""


def _us(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:,.2f} s"
    if value >= 1000:
        return f"{value / 1000:,.1f} ms" if value >= 10_000 else f"{value / 1000:,.2f} ms"
    return f"{value:,.0f} µs"


def _per_s(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def _times(value: float) -> str:
    return f"{value:,.0f}x" if value >= 10 else f"{value:.1f}x"


def _ordinal(rank: int, of: int, first: str = "fastest", last: str = "slowest") -> str:
    """``rank`` of ``of`` in words; ``first``/``last`` name the ends (``most``/
    ``fewest`` for rates)."""
    if rank == 1:
        return f"the {first} of {of}" if of > 1 else "the only one measured"
    if rank == of:
        return f"the {last} of {of}"
    return f"{rank}{ {2: 'nd', 3: 'rd'}.get(rank, 'th') } of {of}"


def _close_to(rank: int, ratio: float, best: str) -> str:
    """How a strength that is not first compares with the first (a strength
    listed as "the slowest of 2" read as a contradiction)."""
    return "" if rank == 1 else f", within {ratio:.2f}x of {best}"


class _Facts:
    """Index of the adapter results of a report."""

    def __init__(self, report: BenchReport) -> None:
        self.report = report
        self.ok = [r for r in report.results if r.error is None]
        self.adapters = [r for r in self.ok if r.kind == "adapter"]
        storage_meta = report.meta.get("storage", [])
        self.urls = {t["backend"]: t.get("url", "") for t in storage_meta}
        self.shared = {t["backend"]: t.get("multi_process", True) for t in storage_meta}
        self.processes = int(report.meta.get("processes", 0) or 0)

    def get(self, backend: str, workload: str, size: int) -> Result | None:
        return next((r for r in self.adapters if (r.backend, r.workload, r.size) == (backend, workload, size)), None)

    def sizes(self, backend: str, workload: str) -> list[int]:
        return sorted({r.size for r in self.adapters if (r.backend, r.workload) == (backend, workload)})

    def storage_backends(self) -> list[str]:
        stored = {r.backend for r in self.adapters if r.workload != "semantic"}
        return [b for b in self.report.backends() if b in stored]

    def common_size(self, backends: list[str], workload: str) -> int | None:
        """The largest size at which every backend that ran ``workload`` ran it."""
        sets = [set(self.sizes(b, workload)) for b in backends if self.sizes(b, workload)]
        shared = set.intersection(*sets) if sets else set()
        return max(shared) if shared else None

    def ranked(self, backends: list[str], workload: str, value: str) -> dict[str, tuple[int, int, Result]]:
        """backend -> (rank, of, result) at the common size; ``value``:
        ``"p50"`` (lower is better) or ``"rate"`` (higher is better)."""
        size = self.common_size(backends, workload)
        if size is None:
            return {}
        found = [(b, r) for b in backends if (r := self.get(b, workload, size)) is not None]
        if value == "p50":
            found.sort(key=lambda item: item[1].latency.p50_us)
        else:
            found.sort(key=lambda item: -_rate(item[1]))
        return {b: (k + 1, len(found), r) for k, (b, r) in enumerate(found)}


def _rate(r: Result) -> float:
    return r.items_per_s if r.items and r.workload.startswith("save") else r.ops_per_s


def _has_server(url: str) -> bool:
    return bool(urlsplit(url).hostname)


def _storage_summary(facts: _Facts, backend: str, others: list[str]) -> BackendSummary:
    good: list[str] = []
    costs: list[str] = []
    sizes = sorted({r.size for r in facts.adapters if r.backend == backend})
    largest = sizes[-1]
    reads = facts.ranked(others, "recall_newest", "p50")
    if backend in reads:
        rank, of, r = reads[backend]
        text = f"newest 20 of a thread in {_us(r.latency.p50_us)} at {r.size:,} messages ({_ordinal(rank, of)})"
        best = next(x for x in reads.values() if x[0] == 1)[2]
        if rank == 1 or r.latency.p50_us <= best.latency.p50_us * _SIMILAR:
            good.append(text + _close_to(rank, r.latency.p50_us / best.latency.p50_us, best.backend))
        elif r.latency.p50_us >= 2 * best.latency.p50_us:
            costs.append(f"{text}, {_times(r.latency.p50_us / best.latency.p50_us)} {best.backend}")
    grown = facts.sizes(backend, "recall_newest")
    if len(grown) >= 2:
        low = facts.get(backend, "recall_newest", grown[0])
        high = facts.get(backend, "recall_newest", grown[-1])
        if low is not None and high is not None and low.latency.p50_us > 0:
            ratio = high.latency.p50_us / low.latency.p50_us
            span = f"from {grown[0]:,} to {grown[-1]:,} messages"
            if ratio <= FLAT_GROWTH:
                good.append(f"reads stay flat as the store grows ({ratio:.2f}x {span})")
            else:
                costs.append(f"reads slow down as the store grows ({ratio:.1f}x {span})")
    writes = facts.ranked(others, "save_batch", "rate")
    if backend in writes:
        rank, of, r = writes[backend]
        best = next(x for x in writes.values() if x[0] == 1)[2]
        text = f"{_per_s(r.items_per_s)} messages/s in batches of 100 ({_ordinal(rank, of, 'most', 'fewest')})"
        if rank == 1 or r.items_per_s * _SIMILAR >= best.items_per_s:
            good.append(text + _close_to(rank, best.items_per_s / r.items_per_s, best.backend))
        elif r.items_per_s * 2 <= best.items_per_s:
            costs.append(f"{text}, {_times(best.items_per_s / r.items_per_s)} fewer than {best.backend}")
    one = facts.get(backend, "save_one", largest)
    single = facts.ranked(others, "save_one", "p50")
    if one is not None and backend in single:
        best = next(x for x in single.values() if x[0] == 1)[2]
        if single[backend][0] > 1 and one.latency.p50_us >= 2 * best.latency.p50_us:
            costs.append(
                f"one message per save takes {_us(one.latency.p50_us)}, "
                f"{_times(one.latency.p50_us / best.latency.p50_us)} {best.backend}"
            )
    loop = facts.get(backend, "agent_loop", largest)
    if not facts.shared.get(backend, True):
        costs.append("one process only: other processes cannot share it (multi-process: n/a)")
    else:
        multi = facts.ranked([b for b in others if facts.shared.get(b, True)], MULTI_PROCESS, "rate")
        if backend in multi:
            rank, of, r = multi[backend]
            n = r.params.get("processes", facts.processes)
            best = next(x for x in multi.values() if x[0] == 1)[2]
            text = f"{n} processes sharing it: {_per_s(r.ops_per_s)} agent turns/s, p95 {_us(r.latency.p95_us)}"
            here = facts.get(backend, "agent_loop", r.size)
            if here is not None and here.ops_per_s > 0:
                text += f" (one process: {_per_s(here.ops_per_s)} turns/s)"
            if rank == 1 or r.ops_per_s * _SIMILAR >= best.ops_per_s:
                ratio = best.ops_per_s / r.ops_per_s
                good.append(f"{text}, {_ordinal(rank, of, 'most', 'fewest')}{_close_to(rank, ratio, best.backend)}")
            elif here is not None and r.ops_per_s < here.ops_per_s:
                costs.append(f"{text}: more processes get less done, they queue for the store")
            else:
                costs.append(f"{text}, {_times(best.ops_per_s / r.ops_per_s)} fewer than {best.backend}")
    rss = [r.server_rss_mib for r in facts.adapters if r.backend == backend and r.size == largest and r.server_rss_mib]
    if rss:
        costs.append(f"a server process holding {max(rss):,.0f} MiB at {largest:,} messages")
    elif not _has_server(facts.urls.get(backend, "")) and not facts.shared.get(backend, True):
        client = [r.client_rss_mib for r in facts.adapters if r.backend == backend and r.size == largest]
        known = [c for c in client if c]
        if known:
            costs.append(f"the whole store lives in the process ({max(known):,.0f} MiB at {largest:,} messages)")
    overhead = _overhead(facts, backend, largest)
    if overhead is not None:
        ratio, count = overhead
        costs.append(
            f"memory-core's typed API costs {ratio:.2f}x the hand-written driver (median of {count} workloads)"
        )
    return BackendSummary(backend, largest, good, costs, _pick(facts, backend, good, costs, loop))


def _overhead(facts: _Facts, backend: str, size: int) -> tuple[float, int] | None:
    ratios = []
    for a in facts.adapters:
        if (a.backend, a.size) != (backend, size) or a.latency.p50_us <= 0:
            continue
        raw = next(
            (
                r
                for r in facts.ok
                if r.kind == "raw" and (r.backend, r.workload, r.size) == (backend, a.workload, size)
                and r.latency.p50_us > 0
            ),
            None,
        )  # fmt: skip
        if raw is not None:
            ratios.append(a.latency.p50_us / raw.latency.p50_us)
    return (statistics.median(ratios), len(ratios)) if ratios else None


def _pick(facts: _Facts, backend: str, good: list[str], costs: list[str], loop: Result | None) -> str:
    server = _has_server(facts.urls.get(backend, ""))
    shares = facts.shared.get(backend, True)
    fast_reads = any(g.startswith("newest 20") for g in good)
    flat = any(g.startswith("reads stay flat") for g in good)
    best_shared = any("processes sharing it" in g for g in good)
    if not shares:
        scale = "small stores" if not flat else "any size that fits in memory"
        return f"Pick it for tests and single-process tools with {scale}; it cannot be shared and keeps nothing."
    if best_shared and server:
        return "Pick it when many worker processes or hosts share one store: it served them best in this run."
    if not server:
        reads = "the fastest reads here" if fast_reads else "no server to run"
        shared = "" if best_shared else "; several processes take turns writing to one file"
        return f"Pick it for one process or one machine: {reads}{shared}."
    if fast_reads:
        return "Pick it for low read latency from processes on many hosts."
    return (
        "Pick it where this server is already your system of record; in this run other backends were "
        "faster at what it was measured on."
    )


def _vector_summary(facts: _Facts, backend: str) -> BackendSummary | None:
    sizes = facts.sizes(backend, "semantic")
    if not sizes:
        return None
    largest = sizes[-1]
    r = facts.get(backend, "semantic", largest)
    if r is None:
        raise ValidationError("results", f"{backend}: no semantic result at size {largest}")
    good: list[str] = []
    costs: list[str] = []
    numpy = next(
        (
            x
            for x in facts.ok
            if x.kind == "raw"
            and x.subject.startswith("numpy")
            and (x.backend, x.workload, x.size) == (backend, "semantic", largest)
        ),
        None,
    )
    text = f"top 10 by cosine within one resource in {_us(r.latency.p50_us)} at {largest:,} vectors"
    ratio = r.latency.p50_us / numpy.latency.p50_us if numpy is not None and numpy.latency.p50_us > 0 else None
    if ratio is not None and ratio <= 2:
        good.append(f"{text} ({ratio:.2f}x numpy brute force)")
    elif ratio is not None:
        costs.append(f"{text}, {_times(ratio)} numpy brute force over the same resource")
    else:
        good.append(text)
    recall = r.params.get("recall_vs_exact")
    if recall is not None:
        (good if recall >= 1.0 else costs).append(f"top 10 equal to the exact one: {recall:.0%}")
    pick = (
        "Pick it for semantic recall at this scale."
        if ratio is None or ratio <= 2
        else f"At {largest:,} vectors brute force is still faster; pick it for stores that grow past that."
    )
    return BackendSummary(backend, largest, good, costs, pick)


_HISTORY_READS = {
    "thread_cursor_walk": "the cursor walk back",
    "thread_include_middle": "includes in the middle",
    "thread_semantic": "semantic recall over the resource",
}
_SWAPS = (
    ("swap_get_items", OPENAI_SESSION, "get_items(limit=20)"),
    ("swap_agent_loop", OPENAI_SESSION, "the Agents SDK loop"),
    ("swap_get_session", ADK_DATABASE, "get_session(20 events)"),
    ("swap_append_event", ADK_DATABASE, "append_event"),
)


def _growth(facts: _Facts, backend: str, workload: str) -> tuple[Result, Result] | None:
    """The results at the shortest and the longest thread, when both ran."""
    lengths = facts.sizes(backend, workload)
    if len(lengths) < 2:
        return None
    low, high = facts.get(backend, workload, lengths[0]), facts.get(backend, workload, lengths[-1])
    if low is None or high is None or low.latency.p50_us <= 0:
        return None
    return low, high


def _history_summary(facts: _Facts, backend: str) -> BackendSummary:
    """What the history-length numbers mean for a long-running agent."""
    good: list[str] = []
    costs: list[str] = []
    largest = max(r.size for r in facts.adapters if r.backend == backend)
    turn_growth = None
    for workload, what in (
        ("thread_newest", "newest 20"),
        ("thread_agent_loop", "an agent turn (newest 20, append 2)"),
    ):
        found = _growth(facts, backend, workload)
        if found is None:
            continue
        low, high = found
        ratio = high.latency.p50_us / low.latency.p50_us
        turn_growth = max(turn_growth or 0.0, ratio)
        span = f"{_us(low.latency.p50_us)} at {low.size:,} messages, {_us(high.latency.p50_us)} at {high.size:,}"
        if ratio <= HISTORY_FLAT:
            good.append(f"{what} costs the same however long the thread ({span})")
        else:
            costs.append(f"{what} grows with the thread: {span} ({_times(ratio)}), paid on every turn")
    grown: list[str] = []
    flat: list[str] = []
    for workload, what in _HISTORY_READS.items():
        found = _growth(facts, backend, workload)
        if found is not None:
            ratio = found[1].latency.p50_us / found[0].latency.p50_us
            (flat if ratio <= HISTORY_FLAT else grown).append(f"{what} {ratio:.1f}x")
    if flat:
        good.append("flat with the thread's length: " + ", ".join(flat))
    if grown:
        costs.append("grows with the thread's length: " + ", ".join(grown))
    for workload, peer_label, what in _SWAPS:
        sizes = facts.sizes(backend, workload)
        ours = facts.get(backend, workload, sizes[-1]) if sizes else None
        peer = next(
            (
                r
                for r in facts.ok
                if ours is not None
                and r.kind == "peer"
                and r.subject.startswith(peer_label)
                and (r.backend, r.workload, r.size) == (backend, workload, ours.size)
            ),
            None,
        )
        if ours is None or peer is None or ours.latency.p50_us <= 0:
            continue
        ratio = peer.latency.p50_us / ours.latency.p50_us
        text = f"{ours.subject} {what} at {ours.size:,} messages: {_us(ours.latency.p50_us)}"
        if ratio >= 1:
            good.append(f"{text}, {ratio:.1f}x faster than {peer.subject}")
        else:
            costs.append(f"{text}, {1 / ratio:.1f}x {peer.subject}")
    if turn_growth is None:
        pick = "Run thread_newest and thread_agent_loop at two lengths or more to see what a long thread costs."
    elif turn_growth <= HISTORY_FLAT:
        pick = "Pick it for long-running agents: a turn costs the same at any length measured."
    else:
        pick = (
            f"Keep threads short on it: at the longest thread a turn costs {_times(turn_growth)} what it costs at "
            "the shortest; start a new thread (or summarize) before one grows long."
        )
    return BackendSummary(backend, largest, good, costs, pick)


def backend_summaries(report: BenchReport) -> list[BackendSummary]:
    """One :class:`BackendSummary` per backend of ``report`` (storage
    backends first, then vector ones), from its adapter results; a backend
    with no successful adapter result is left out. On the history-length
    axis, one per storage backend about a long-running agent."""
    facts = _Facts(report)
    if report.meta.get("axis") == "history":
        return [_history_summary(facts, b) for b in report.backends() if any(r.backend == b for r in facts.adapters)]
    storage = facts.storage_backends()
    out = [_storage_summary(facts, b, storage) for b in storage]
    for backend in report.backends():
        if backend not in storage:
            found = _vector_summary(facts, backend)
            if found is not None:
                out.append(found)
    return out


def heading(report: BenchReport, summary: BackendSummary) -> str:
    """``"<backend> (up to <size>)"``; the size is the longest thread's on
    the history-length axis (``"... messages in one thread"``)."""
    unit = " messages in one thread" if report.meta.get("axis") == "history" else ""
    return f"{summary.backend} (up to {summary.size:,}{unit})"


def summary_text(report: BenchReport) -> list[str]:
    """The summary as plain lines (no markup): per backend its good points,
    costs and pick, then a warning naming the noisy results, if any."""
    lines: list[str] = []
    for s in backend_summaries(report):
        lines.append(f"{heading(report, s)}:")
        for text in s.good_at:
            lines.append(f"  + {text}")
        for text in s.costs:
            lines.append(f"  - {text}")
        lines.append(f"  -> {s.pick}")
    lines.extend(noise_warning(report))
    return lines


def noise_warning(report: BenchReport) -> list[str]:
    """One warning line naming the results whose repeats disagree widely
    (empty when none do)."""
    found = noisy(report)
    if not found:
        return []
    named = ", ".join(f"{r.backend} {r.workload} @ {r.size:,} (CV {r.repeat_cv:.2f})" for r in found[:8])
    more = f" and {len(found) - 8} more" if len(found) > 8 else ""
    return [
        f"warning: noisy machine: the repeats of {len(found)} measurement(s) disagree widely: {named}{more}; "
        "trust the ratios (subjects ran interleaved) more than the absolute times, or re-run on an idle machine"
    ]

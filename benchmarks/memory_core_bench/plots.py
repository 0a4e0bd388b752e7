"""PNG plots of a :class:`BenchReport` (matplotlib, imported lazily).

- ``latency_<backend>.png``: p50 latency (µs, log scale) against store size
  (log scale; the thread's length on the history-length axis), one panel
  per workload, one line per subject (adapter, raw driver, peers); the
  shaded band and the dashed line above it reach p95.
- ``latency_adapters.png``: the memory-core adapters of every backend on one
  chart per workload.
- ``throughput.png``: at the largest size, one panel per workload, one bar
  per backend and subject: messages/s for the saves, turns/s for the agent
  loops, ops/s for the reads (log scale).

Every subject keeps one colour in every plot of every run
(:func:`subject_colour`): a backend's hue is fixed, its adapter is the dark
shade and its raw driver the light one; peers and numpy have colours of
their own. Every panel labels its value axis with numbers and units, and a
figure is at most :data:`MAX_WIDTH_PX` pixels wide.

matplotlib is an optional dependency: ``pip install 'memory-core-bench[plots]'``.
"""

from __future__ import annotations

import math
import re
import zlib
from pathlib import Path
from typing import Any

from memory_core_bench.history import HISTORY_WORKLOADS
from memory_core_bench.multiprocess import MULTI_PROCESS, MULTI_PROCESS_TITLE
from memory_core_bench.report import BenchReport, Result
from memory_core_bench.workloads import WORKLOADS

__all__ = [
    "DPI",
    "MATPLOTLIB_HINT",
    "MAX_WIDTH_PX",
    "latency_figure",
    "subject_colour",
    "throughput_figure",
    "write_plots",
]

MATPLOTLIB_HINT = "plots need matplotlib: pip install 'memory-core-bench[plots]'"
DPI = 100
MAX_WIDTH_PX = 1600
_COLS = 4
_PANEL_W = MAX_WIDTH_PX / DPI / _COLS  # inches
_PANEL_H = 3.0

_TITLES = WORKLOADS | {MULTI_PROCESS: MULTI_PROCESS_TITLE} | HISTORY_WORKLOADS

# tab20 holds pairs (dark, light) of one hue: adapter dark, raw driver light.
_TAB20 = [
    "#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896",
    "#9467bd", "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7",
    "#bcbd22", "#dbdb8d", "#17becf", "#9edae5",
]  # fmt: skip
_BACKEND_HUE = {
    "sqlite": 0, "mongodb": 2, "valkey": 3, "redis": 3, "postgres": 4, "postgresql": 4,
    "redis7": 6, "memory": 8, "qdrant": 9,
}  # fmt: skip
_FIXED = {"numpy": "#555555", "openai-agents": "#e6550d", "langgraph": "#31a354"}
_FREE_HUES = [1, 5, 7]  # hues no known backend uses


def subject_colour(backend: str, subject: str, kind: str) -> str:
    """The colour of ``subject`` of ``backend`` in every plot of every run.

    A known backend has a fixed hue (an unknown one a hue chosen from its
    name by CRC-32, so it is stable across runs); the adapter gets the dark
    shade, a raw driver the light one; peers and numpy brute force have
    fixed colours of their own.
    """
    for prefix, colour in _FIXED.items():
        if subject.startswith(prefix):
            return colour
    name = backend.lower()
    hue = _BACKEND_HUE.get(name)
    if hue is None:
        hue = _FREE_HUES[zlib.crc32(name.encode()) % len(_FREE_HUES)]
    if kind == "peer":
        return _TAB20[(2 * (zlib.crc32(subject.encode()) % 10)) % 20]
    return _TAB20[2 * hue + (1 if kind == "raw" else 0)]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError(MATPLOTLIB_HINT) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _tick(value: float, _: object = None) -> str:
    """Plain tick text (no mathtext: rendering ``10^n`` labels is slow)."""
    if value >= 1:
        return f"{value:,.0f}"
    return f"{value:g}"


def _log_ticks(low: float, high: float) -> list[float]:
    """Tick values on a log axis from ``low`` to ``high``: the 1-2-5 series
    inside, thinned to at most 6; when fewer than 2 fall inside (a narrow
    range), three values spread inside it, rounded to 2 significant digits."""
    if low <= 0 or high <= 0:
        return []
    ticks = [
        m * 10.0**e
        for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
        for m in (1, 2, 5)
        if low <= m * 10.0**e <= high
    ]
    while len(ticks) > 6:
        ticks = ticks[::2]
    if len(ticks) < 2:
        inner = [low + (high - low) * f for f in (0.1, 0.5, 0.9)]
        for digits in (2, 3, 4):  # as few digits as keep 2 ticks on the axis
            ticks = sorted({v for v in (float(f"{x:.{digits}g}") for x in inner) if low <= v <= high})
            if len(ticks) >= 2:
                break
    return ticks


def _value_axis(ax: Any, values: list[float], label: str) -> None:
    """A labelled log value axis with readable ticks covering ``values``."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    positive = [v for v in values if v > 0]
    ax.set_yscale("log")
    if positive:
        low, high = min(positive) / 1.25, max(positive) * 1.25
        ax.set_ylim(low, high)
        ax.yaxis.set_major_locator(FixedLocator(_log_ticks(low, high)))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(_tick))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel(label, fontsize=8)


def _grid(count: int) -> tuple[int, int]:
    cols = min(_COLS, max(1, count))
    return math.ceil(count / cols), cols


def _legend(fig: Any, axes: Any, rows: int) -> None:
    handles, labels = [], []
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    fig.legend(handles, labels, loc="lower center", ncol=min(4, max(1, len(labels))), fontsize=8)
    legend_rows = math.ceil(len(labels) / 4)
    bottom = min(0.4, (0.25 * legend_rows + 0.15) / (_PANEL_H * rows + 0.8))
    fig.tight_layout(rect=(0, bottom, 1, 0.95))


def latency_figure(title: str, series: dict[str, dict[str, list[Result]]], xlabel: str = "messages in store") -> Any:
    """The latency-vs-size figure of ``series`` (workload -> line label ->
    results, any order); a line's colour comes from its results'
    (backend, subject, kind); ``xlabel`` names the size axis. Returns the
    matplotlib ``Figure``.

    Raises:
        ImportError: matplotlib is not installed (:data:`MATPLOTLIB_HINT`).
    """
    plt = _pyplot()
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    workloads = [w for w in _TITLES if w in series]
    sizes_all = sorted({r.size for lines in series.values() for results in lines.values() for r in results})
    rows, cols = _grid(len(workloads))
    fig, axes = plt.subplots(rows, cols, figsize=(_PANEL_W * cols, _PANEL_H * rows + 0.8), squeeze=False, dpi=DPI)
    for ax in axes.flat[len(workloads) :]:
        ax.set_visible(False)
    for ax, workload in zip(axes.flat, workloads, strict=False):
        values: list[float] = []
        for label, results in sorted(series[workload].items()):
            results = sorted(results, key=lambda r: r.size)
            first = results[0]
            colour = subject_colour(first.backend, first.subject, first.kind)
            sizes = [r.size for r in results]
            p50 = [r.latency.p50_us for r in results]
            p95 = [r.latency.p95_us for r in results]
            values.extend(p50 + p95)
            ax.plot(sizes, p50, marker="o", markersize=4, label=label, color=colour, linewidth=1.6)
            ax.fill_between(sizes, p50, p95, color=colour, alpha=0.18, linewidth=0)
            ax.plot(sizes, p95, color=colour, linewidth=0.8, linestyle="--", alpha=0.8)
        ax.set_xscale("log")
        # Ticks at the measured sizes only (automatic log ticks are slow and
        # degenerate when one size was run).
        ax.xaxis.set_major_locator(FixedLocator(sizes_all))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.set_xlim(sizes_all[0] / 1.6, sizes_all[-1] * 1.6)
        _value_axis(ax, values, "latency per op (µs)")
        ax.set_title(_TITLES[workload], fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="major", alpha=0.3)
    fig.suptitle(f"{title}  (line: p50, band up to dashed line: p95)", fontsize=10)
    _legend(fig, axes, rows)
    return fig


def _rate(r: Result) -> float:
    return r.items_per_s if r.workload in ("save_batch", "save_one") else r.ops_per_s


def _rate_unit(workload: str) -> str:
    if workload in ("save_batch", "save_one"):
        return "messages/s"
    if workload in ("agent_loop", MULTI_PROCESS, "thread_agent_loop", "swap_agent_loop"):
        return "agent turns/s"
    return "ops/s"


def throughput_figure(report: BenchReport, size: int) -> Any:
    """Throughput at ``size``: one panel per workload, one bar per (backend,
    subject), in the subject's fixed colour. Returns the ``Figure``.

    Raises:
        ImportError: matplotlib is not installed (:data:`MATPLOTLIB_HINT`).
    """
    plt = _pyplot()
    results = [r for r in report.results if r.size == size and r.error is None]
    workloads = [w for w in _TITLES if any(r.workload == w for r in results)]
    subjects = list(dict.fromkeys((r.backend, r.subject, r.kind) for r in results))
    rows, cols = _grid(len(workloads))
    fig, axes = plt.subplots(rows, cols, figsize=(_PANEL_W * cols, _PANEL_H * rows + 0.8), squeeze=False, dpi=DPI)
    for ax in axes.flat[len(workloads) :]:
        ax.set_visible(False)
    for ax, workload in zip(axes.flat, workloads, strict=False):
        values: list[float] = []
        position = 0
        for backend, subject, kind in subjects:
            found = [r for r in results if (r.backend, r.subject, r.workload) == (backend, subject, workload)]
            if not found:
                continue
            value = _rate(found[0])
            values.append(value)
            ax.bar(
                position, value, width=0.8, color=subject_colour(backend, subject, kind), label=f"{backend} · {subject}"
            )
            position += 1
        ax.set_xticks([])
        ax.set_xlim(-0.7, max(position, 1) - 0.3)
        _value_axis(ax, values, _rate_unit(workload))
        ax.set_title(_TITLES[workload], fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(True, axis="y", which="major", alpha=0.3)
    fig.suptitle(f"throughput at {size:,} messages (higher is better)", fontsize=10)
    _legend(fig, axes, rows)
    return fig


def _save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def write_plots(report: BenchReport, folder: Path) -> list[Path]:
    """Write every plot of ``report`` into ``folder``; returns the paths.

    Raises:
        ImportError: matplotlib is not installed (:data:`MATPLOTLIB_HINT`).
    """
    _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    ok = [r for r in report.results if r.error is None]
    history = report.meta.get("axis") == "history"
    versus, xlabel = ("thread length", "messages in the thread") if history else ("store size", "messages in store")
    for backend in report.backends():
        series: dict[str, dict[str, list[Result]]] = {}
        for r in ok:
            if r.backend == backend:
                series.setdefault(r.workload, {}).setdefault(r.subject, []).append(r)
        if series:
            fig = latency_figure(f"{backend}: latency vs {versus}", series, xlabel)
            written.append(_save(fig, folder / f"latency_{_safe(backend)}.png"))
    adapters: dict[str, dict[str, list[Result]]] = {}
    for r in ok:
        if r.kind == "adapter":
            adapters.setdefault(r.workload, {}).setdefault(r.backend, []).append(r)
    if adapters:
        fig = latency_figure(f"memory-core adapters: latency vs {versus}", adapters, xlabel)
        written.append(_save(fig, folder / "latency_adapters.png"))
    sizes = report.sizes()
    if sizes:
        written.append(_save(throughput_figure(report, sizes[-1]), folder / "throughput.png"))
    return written

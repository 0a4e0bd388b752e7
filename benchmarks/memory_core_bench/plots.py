"""PNG plots of a :class:`BenchReport` (matplotlib, imported lazily).

- ``latency_<backend>.png``: p50 latency (µs, log scale) against store size
  (log scale), one panel per workload, one line per subject (adapter, raw
  driver, peers); the p95 is the shaded band's top.
- ``latency_adapters.png``: the memory-core adapters of every backend on one
  chart per workload.
- ``throughput.png``: bars at the largest size: messages/s for the write
  workloads, ops/s for the reads, per backend and subject (log scale).

matplotlib is an optional dependency (``pip install 'memory-core-bench[plots]'``).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from memory_core_bench.report import BenchReport, Result
from memory_core_bench.workloads import WORKLOADS

__all__ = ["write_plots"]

_WRITES = ("save_batch", "save_one", "agent_loop")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plots need matplotlib: pip install 'memory-core-bench[plots]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _tick(value: float, _: object = None) -> str:
    """Plain tick text (no mathtext: rendering ``10^n`` labels is slow)."""
    if value >= 1:
        return f"{value:,.0f}"
    return f"{value:g}"


def _grid(count: int) -> tuple[int, int]:
    cols = min(4, max(1, count))
    return math.ceil(count / cols), cols


def _latency_figure(plt: Any, title: str, series: dict[str, dict[str, list[Result]]], path: Path) -> None:
    """``series``: workload -> line label -> results (any order)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    workloads = [w for w in WORKLOADS if w in series]
    sizes_all = sorted({r.size for lines in series.values() for results in lines.values() for r in results})
    labels = sorted({label for lines in series.values() for label in lines})
    colours = {label: f"C{k % 10}" for k, label in enumerate(labels)}
    rows, cols = _grid(len(workloads))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    for ax in axes.flat[len(workloads) :]:
        ax.set_visible(False)
    for ax, workload in zip(axes.flat, workloads, strict=False):
        for label, results in sorted(series[workload].items()):
            results = sorted(results, key=lambda r: r.size)
            sizes = [r.size for r in results]
            p50 = [r.latency.p50_us for r in results]
            p95 = [r.latency.p95_us for r in results]
            ax.plot(sizes, p50, marker="o", label=label, color=colours[label])
            ax.fill_between(sizes, p50, p95, color=colours[label], alpha=0.12)
        ax.set_xscale("log")
        ax.set_yscale("log")
        # Ticks at the measured sizes only (automatic log ticks are slow and
        # degenerate when one size was run).
        ax.xaxis.set_major_locator(FixedLocator(sizes_all))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.set_xlim(sizes_all[0] / 1.6, sizes_all[-1] * 1.6)
        ax.yaxis.set_major_formatter(FuncFormatter(_tick))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_title(WORKLOADS[workload], fontsize=9)
        ax.set_xlabel("messages in store", fontsize=8)
        ax.set_ylabel("p50 latency (µs)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="both", alpha=0.25)
    handles, labels = [], []
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    fig.legend(handles, labels, loc="lower center", ncol=min(5, len(labels)), fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0.06, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _throughput_figure(plt: Any, report: BenchReport, size: int, path: Path) -> None:
    from matplotlib.ticker import FuncFormatter, NullFormatter

    results = [r for r in report.results if r.size == size and r.error is None]
    groups = [
        ("writes (messages/s; agent loop: turns/s)", [w for w in _WRITES]),
        ("reads (ops/s)", [w for w in WORKLOADS if w not in _WRITES]),
    ]
    labels = list(dict.fromkeys(f"{r.backend} · {r.subject}" for r in results))
    fig, axes = plt.subplots(2, 1, figsize=(max(8.0, 1.1 * len(WORKLOADS) * max(1, len(labels)) / 3), 8.5))
    for ax, (title, workloads) in zip(axes, groups, strict=True):
        present = [w for w in workloads if any(r.workload == w for r in results)]
        width = 0.8 / max(1, len(labels))
        for k, label in enumerate(labels):
            values = []
            for workload in present:
                found = [r for r in results if f"{r.backend} · {r.subject}" == label and r.workload == workload]
                if not found:
                    values.append(0.0)
                    continue
                r = found[0]
                values.append(r.items_per_s if r.workload in ("save_batch", "save_one") else r.ops_per_s)
            positions = [i + (k - (len(labels) - 1) / 2) * width for i in range(len(present))]
            ax.bar(positions, values, width=width, label=label, color=f"C{k % 10}")
        ax.set_xticks(range(len(present)))
        ax.set_xticklabels([WORKLOADS[w] for w in present], rotation=20, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(_tick))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_title(title, fontsize=10)
        ax.grid(True, axis="y", which="both", alpha=0.25)
    axes[0].legend(fontsize=7, ncol=3)
    fig.suptitle(f"throughput at {size:,} messages", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_plots(report: BenchReport, folder: Path) -> list[Path]:
    """Write every plot of ``report`` into ``folder``; returns the paths.

    Raises:
        ImportError: matplotlib is not installed.
    """
    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    ok = [r for r in report.results if r.error is None]
    for backend in report.backends():
        series: dict[str, dict[str, list[Result]]] = {}
        for r in ok:
            if r.backend == backend:
                series.setdefault(r.workload, {}).setdefault(r.subject, []).append(r)
        if series:
            path = folder / f"latency_{_safe(backend)}.png"
            _latency_figure(plt, f"{backend}: p50 latency vs store size (band: p50-p95)", series, path)
            written.append(path)
    adapters: dict[str, dict[str, list[Result]]] = {}
    for r in ok:
        if r.kind == "adapter":
            adapters.setdefault(r.workload, {}).setdefault(r.backend, []).append(r)
    if adapters:
        path = folder / "latency_adapters.png"
        _latency_figure(plt, "memory-core adapters: p50 latency vs store size", adapters, path)
        written.append(path)
    sizes = report.sizes()
    if sizes:
        path = folder / "throughput.png"
        _throughput_figure(plt, report, sizes[-1], path)
        written.append(path)
    return written

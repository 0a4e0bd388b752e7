"""The plots: a sane size, every panel's value axis labelled with numbers and
units, one colour per subject whatever else is in the plot, and an exact
install hint (not eaten by rich markup) when matplotlib is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from memory_core.cli import app
from typer.testing import CliRunner

from memory_core_bench.multiprocess import MULTI_PROCESS
from memory_core_bench.report import BenchReport, LatencyStats, Result

plots = pytest.importorskip("memory_core_bench.plots")
pytest.importorskip("matplotlib")


def _result(backend: str, subject: str, kind: str, workload: str, size: int, p50: float) -> Result:
    items = 100 if workload.startswith("save") else 0
    return Result(
        backend, subject, kind, workload, size, 50, items, 1.0,
        LatencyStats(p50, p50 * 1.3, p50 * 1.6, p50, p50 / 2, p50 * 2),
        1e6 / p50, items * 1e6 / p50 / 50 if items else 0.0, -1,
    )  # fmt: skip


def _report(backends: tuple[str, ...] = ("sqlite", "valkey", "memory")) -> BenchReport:
    results = []
    workloads = ("recall_newest", "page_first", "filter_meta", "save_batch", "save_one", "agent_loop", MULTI_PROCESS)
    for b_index, backend in enumerate(backends):
        for size in (1000, 10000, 100000):
            for w_index, workload in enumerate(workloads):
                # A narrow range (310-330 µs) must still get labelled ticks.
                p50 = 310.0 + 10 * b_index + w_index + size / 1e5
                results.append(_result(backend, "memory-core", "adapter", workload, size, p50))
                if backend != "memory":
                    results.append(_result(backend, f"{backend} raw", "raw", workload, size, p50 / 2))
    return BenchReport(results=results)


def _check_axes(fig: object) -> None:
    fig.canvas.draw()  # type: ignore[attr-defined]
    visible = [ax for ax in fig.axes if ax.get_visible()]  # type: ignore[attr-defined]
    assert visible
    for ax in visible:
        label = ax.get_ylabel()
        assert label.endswith(("(µs)", "/s")), label
        ticks = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
        assert len(ticks) >= 2, (ax.get_title(), ticks)


def test_figures_label_every_value_axis_with_numbers_and_units() -> None:
    report = _report()
    series: dict[str, dict[str, list[Result]]] = {}
    for r in report.results:
        if r.backend == "sqlite":
            series.setdefault(r.workload, {}).setdefault(r.subject, []).append(r)
    _check_axes(plots.latency_figure("sqlite", series))
    _check_axes(plots.throughput_figure(report, 100000))


def test_written_pngs_are_at_most_1600_pixels_wide(tmp_path: Path) -> None:
    from PIL import Image

    paths = plots.write_plots(_report(), tmp_path)
    assert {p.name for p in paths} == {
        "latency_sqlite.png", "latency_valkey.png", "latency_memory.png", "latency_adapters.png", "throughput.png",
    }  # fmt: skip
    for path in paths:
        with Image.open(path) as image:
            width, height = image.size
        assert 800 <= width <= plots.MAX_WIDTH_PX and 300 <= height <= 1600, (path.name, image.size)


def test_a_subject_keeps_its_colour_in_every_plot() -> None:
    def colours(report: BenchReport) -> dict[str, str]:
        fig = plots.throughput_figure(report, 100000)
        found = {}
        for ax in fig.axes:
            for bars in ax.containers:
                found[bars.get_label()] = bars.patches[0].get_facecolor()
        return {label: "#" + "".join(f"{round(c * 255):02x}" for c in rgba[:3]) for label, rgba in found.items()}

    both = colours(_report(("sqlite", "valkey", "memory")))
    alone = colours(_report(("valkey",)))
    assert alone["valkey · memory-core"] == both["valkey · memory-core"]
    assert alone["valkey · valkey raw"] == both["valkey · valkey raw"]
    assert len(set(both.values())) == len(both)  # distinct subjects, distinct colours
    assert plots.subject_colour("sqlite", "memory-core", "adapter") == both["sqlite · memory-core"]


def test_missing_matplotlib_says_exactly_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes ``import matplotlib`` raise ImportError, as
    # in an environment without it.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = CliRunner().invoke(
        app,
        [
            "bench", "--storage", "memory://", "--sizes", "200", "--workloads", "recall_newest",
            "--duration", "0", "--min-ops", "2", "--max-ops", "2", "--vector", "none", "--out", str(tmp_path),
        ],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "no plots: plots need matplotlib: pip install 'memory-core-bench[plots]'" in result.output
    assert not list(tmp_path.glob("*.png"))


def test_missing_peers_say_exactly_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_core_bench.baselines import missing_peers

    # The peer module must be imported afresh, with its library absent.
    monkeypatch.delitem(sys.modules, "memory_core_bench.baselines.peer_openai", raising=False)
    monkeypatch.setitem(sys.modules, "agents", None)
    lines = missing_peers("sqlite")
    assert any(
        line.startswith("peer openai not run on sqlite: ") and line.endswith("pip install -e './benchmarks[peers]')")
        for line in lines
    ), lines
    assert missing_peers("valkey") == []  # no peers are compared on valkey

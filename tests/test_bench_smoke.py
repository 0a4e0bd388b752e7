"""Smoke test of ``memory-core bench``: every workload runs and reports well.

No timing is asserted anywhere: these tests check that each workload ran on
``memory://`` and SQLite (adapter, raw aiosqlite with answers equal to the
adapter's, and the peers that are installed), that every result is well
formed, and that JSON, Markdown, plots and ``--compare`` work. Other
backends run the same check from their own server fixtures with
``run_smoke([url])`` and ``smoke_problems(report, [backend], raw_backends=[...])``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_core.bench import BenchReport, run_smoke, smoke_problems
from memory_core.bench.report import compare_reports, markdown, targets
from memory_core.bench.workloads import READ_WORKLOADS, STORAGE_WORKLOADS
from memory_core.cli import app

pytest.importorskip("memory_core_sqlite")


def _installed(module: str) -> bool:
    # find_spec of a dotted name imports its parent, which raises when absent.
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> BenchReport:
    folder = tmp_path_factory.mktemp("bench")
    return run_smoke(["memory://", f"sqlite:///{folder / 'bench.db'}"], [None], workdir=folder / "work", peers=True)


def test_every_workload_ran_and_is_well_formed(report: BenchReport) -> None:
    peers = []
    if _installed("agents"):
        peers.append("openai-agents SQLiteSession")
    if _installed("langgraph.store.sqlite"):
        peers.append("langgraph AsyncSqliteStore")
    problems = smoke_problems(report, ["memory", "sqlite"], raw_backends=["sqlite"], peers=peers)
    assert problems == []


def test_raw_sqlite_runs_every_storage_workload(report: BenchReport) -> None:
    ran = {r.workload for r in report.results if r.backend == "sqlite" and r.kind == "raw" and r.error is None}
    assert ran == {w.name for w in STORAGE_WORKLOADS}


def test_read_answers_have_the_dataset_shape(report: BenchReport) -> None:
    # size 300: probe threads hold 7 messages, the deep thread 150.
    returned = {(r.backend, r.workload): r.returned for r in report.results if r.kind == "adapter"}
    for backend in ("memory", "sqlite"):
        assert returned[(backend, "recall_newest")] == 7
        assert returned[(backend, "page_first")] == 20
        assert returned[(backend, "page_cursor")] == 20
        assert returned[(backend, "list_threads")] == 20
        assert returned[(backend, "include_windows")] > returned[(backend, "recall_newest")]


def test_targets_and_growth_are_reported(report: BenchReport) -> None:
    checks = targets(report)
    names = {(c.target, c.backend, c.workload) for c in checks}
    for workload in READ_WORKLOADS:
        assert ("adapter ≤ 1.25x raw driver", "sqlite", workload.name) in names
    assert any(c.target.startswith("cursor page") and c.backend == "memory" for c in checks)
    text = markdown(report)
    assert "## Targets" in text and "## sqlite, 300 messages" in text


def test_json_round_trip_and_compare(report: BenchReport, tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    report.write_json(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["meta"]["latency_unit"] == "µs"
    again = BenchReport.read_json(path)
    assert [r.key for r in again.results] == [r.key for r in report.results]
    ratios = compare_reports(report, again)
    assert len(ratios) == sum(1 for r in report.results if r.error is None)
    assert all(c.p50_ratio == 1.0 for c in ratios)


def test_cli_compare_prints_ratios(report: BenchReport, tmp_path: Path) -> None:
    report.write_json(tmp_path / "a.json")
    report.write_json(tmp_path / "b.json")
    result = CliRunner().invoke(app, ["bench", "--compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert result.exit_code == 0, result.output
    assert "recall_newest" in result.output and "1.00" in result.output


def test_cli_compare_rejects_a_non_report(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{}", encoding="utf-8")
    result = CliRunner().invoke(app, ["bench", "--compare", str(tmp_path / "x.json"), str(tmp_path / "x.json")])
    assert result.exit_code == 2


def test_plots_are_written(report: BenchReport, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from memory_core.bench.plots import write_plots

    written = write_plots(report, tmp_path)
    names = {p.name for p in written}
    assert {"latency_memory.png", "latency_sqlite.png", "latency_adapters.png", "throughput.png"} <= names
    assert all(p.stat().st_size > 1000 for p in written)


def test_cli_bench_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(app, [
        "bench", "--sizes", "200", "--workloads", "recall_newest,save_one", "--duration", "0", "--min-ops", "2",
        "--max-ops", "2", "--no-peers", "--no-plots", "--vector", "none", "--out", str(out),
        "--storage", "memory://", "--storage", f"sqlite:///{tmp_path / 'cli.db'}",
    ])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    ran = {(r["backend"], r["kind"], r["workload"]) for r in data["results"]}
    assert ("sqlite", "raw", "recall_newest") in ran and ("memory", "adapter", "save_one") in ran
    assert (out / "results.md").read_text(encoding="utf-8").startswith("# memory-core benchmark results")

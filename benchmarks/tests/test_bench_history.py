"""Smoke test of the history-length axis (``memory-core bench --history-lengths``).

Tiny threads (10 and 100 messages) on ``memory://`` and a SQLite file, a few
ops each: every workload and every installed swap store ran, answered with
the expected shape, and the report, targets and summary speak of thread
length. Nothing here looks at how fast anything was.
"""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest
from memory_core.cli import app
from typer.testing import CliRunner

from memory_core_bench import BenchConfig, BenchReport, StorageTarget, VectorTarget, markdown, run_bench, targets
from memory_core_bench.history import ADK_OURS, OPENAI_OURS, THREAD_WORKLOADS, ThreadSemantic
from memory_core_bench.report import ADK_DATABASE, OPENAI_SESSION
from memory_core_bench.summary import summary_text

# One worker runs this module (its module-scoped fixture once): the README's `--dist loadgroup`.
pytestmark = pytest.mark.xdist_group("bench_history")

LENGTHS = (10, 100)


def _installed(*modules: str) -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except ModuleNotFoundError:
        return False


SQLITE = _installed("memory_core_sqlite", "aiosqlite")
VECTORS = _installed("memory_core_qdrant", "qdrant_edge")
AGENTS = _installed("agents")
ADK = _installed("google.adk", "sqlalchemy", "greenlet")
BACKENDS = ["memory", *(["sqlite"] if SQLITE else [])]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> BenchReport:
    folder = tmp_path_factory.mktemp("history")
    storage = [StorageTarget("memory://")]
    if SQLITE:
        storage.append(StorageTarget(f"sqlite:///{folder / 'bench.db'}"))
    config = BenchConfig(
        storage=storage,
        vectors=[VectorTarget("qdrant::memory:" if VECTORS else None)],
        sizes=LENGTHS,
        duration=0.0,
        min_ops=3,
        max_ops=3,
        warmup=1,
        workdir=folder / "work",
        processes=0,
        axis="history",
    )
    return asyncio.run(run_bench(config))


def _adapter(report: BenchReport, backend: str, workload: str, length: int) -> int:
    found = [
        r
        for r in report.results
        if (r.backend, r.workload, r.size, r.kind) == (backend, workload, length, "adapter") and r.error is None
    ]
    assert len(found) == 1, (backend, workload, length, found)
    return found[0].returned


def test_the_run_is_on_the_history_axis(report: BenchReport) -> None:
    assert report.meta["axis"] == "history"
    assert report.sizes() == list(LENGTHS)
    assert report.failures == []
    assert [r for r in report.results if r.error is not None] == []
    assert all(p.threads == 1 and p.messages == p.size for p in report.populate)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("length", LENGTHS)
def test_every_thread_workload_reads_the_newest_20(report: BenchReport, backend: str, length: int) -> None:
    page = min(20, length)
    for workload in THREAD_WORKLOADS:
        if workload is ThreadSemantic and not VECTORS:
            continue
        returned = _adapter(report, backend, workload.name, length)
        if workload.name in ("thread_include_middle", "thread_semantic"):
            assert page <= returned <= length, workload.name  # windows merged into the page
        else:
            assert returned == page, workload.name
    newest = next(r for r in report.results if (r.backend, r.workload, r.size) == (backend, "thread_newest", length))
    assert newest.params["thread_length"] == length


@pytest.mark.skipif(not AGENTS, reason="openai-agents is not installed")
@pytest.mark.parametrize("backend", BACKENDS)
def test_agents_sessions_hold_the_same_items(report: BenchReport, backend: str) -> None:
    for workload in ("swap_get_items", "swap_agent_loop"):
        for length in LENGTHS:
            rows = {
                r.subject: r for r in report.results if (r.backend, r.workload, r.size) == (backend, workload, length)
            }
            assert rows[OPENAI_OURS].kind == "adapter" and rows[OPENAI_OURS].returned == min(20, length)
            assert rows[OPENAI_SESSION].verified is True  # same newest 20 as ours


@pytest.mark.skipif(not ADK, reason="google-adk or sqlalchemy[asyncio] is not installed")
@pytest.mark.parametrize("backend", BACKENDS)
def test_adk_services_hold_the_same_events(report: BenchReport, backend: str) -> None:
    for length in LENGTHS:
        rows = {
            r.subject: r
            for r in report.results
            if (r.backend, r.workload, r.size) == (backend, "swap_get_session", length)
        }
        assert rows[ADK_OURS].returned == min(20, length)
        assert rows[f"{ADK_DATABASE} (sqlite)"].verified is True
        appended = {
            r.subject
            for r in report.results
            if (r.backend, r.workload, r.size) == (backend, "swap_append_event", length)
        }
        assert appended == {ADK_OURS, f"{ADK_DATABASE} (sqlite)"}


def test_report_targets_and_summary_speak_of_thread_length(report: BenchReport, tmp_path: Path) -> None:
    text = markdown(report)
    assert "one thread of 100 messages" in text and "Growth with thread length" in text
    flat = [c for c in targets(report) if c.target == "memory-core: thread of 100 ≤ 1.2x thread of 10"]
    assert {(c.backend, c.workload) for c in flat} >= {(b, "thread_newest") for b in BACKENDS}
    if AGENTS and SQLITE:
        swap = [c for c in targets(report) if c.backend == "sqlite" and c.workload == "swap_get_items"]
        assert {c.size for c in swap} == set(LENGTHS)
    lines = summary_text(report)
    assert any(line.startswith("memory (up to 100 messages in one thread)") for line in lines)
    assert any("newest 20" in line for line in lines)
    report.write_json(tmp_path / "r.json")
    assert BenchReport.read_json(tmp_path / "r.json").meta["axis"] == "history"


def test_the_cli_runs_the_history_axis(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "--history-lengths",
            "10",
            "--storage",
            "memory://",
            "--workloads",
            "thread_newest,thread_cursor_walk",
            "--duration",
            "0",
            "--min-ops",
            "3",
            "--max-ops",
            "3",
            "--no-plots",
            "--out",
            str(out),
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    saved = BenchReport.read_json(out / "results.json")
    assert {r.workload for r in saved.results} == {"thread_newest", "thread_cursor_walk"}
    assert "one thread" in result.output or "in one thread" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--history-lengths", "10", "--workloads", "recall_newest"], "unknown workload"),
        (["--history-lengths", "0"], "at least 1 message"),
    ],
)
def test_the_cli_refuses_bad_history_options(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["bench", *args, "--out", str(tmp_path)], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert message in result.output

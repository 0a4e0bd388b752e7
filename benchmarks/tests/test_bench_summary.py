"""The summary that ends ``memory-core bench`` is computed from the report
(other numbers, other sentences), the targets table appears only with
``--targets``, and noisy measurements are named. Reports here are built from
hand-written results (a real run's numbers are not predictable); the CLI
tests run the real command on memory:// at a tiny size."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from memory_core.cli import app
from typer.testing import CliRunner

from memory_core_bench.multiprocess import MULTI_PROCESS
from memory_core_bench.report import BenchReport, LatencyStats, Result, markdown, noisy, repeat_cv
from memory_core_bench.summary import backend_summaries, noise_warning, summary_text


def _result(
    backend: str,
    workload: str,
    size: int,
    p50: float,
    *,
    kind: str = "adapter",
    rate: float = 1000.0,
    items: int = 0,
    cv: float | None = 0.05,
    server_rss: float | None = None,
    client_rss: float | None = None,
    params: dict[str, object] | None = None,
) -> Result:
    subject = {"adapter": "memory-core", "raw": "raw driver"}.get(kind, kind)
    return Result(
        backend, subject, kind, workload, size, 100, items, 1.0,
        LatencyStats(p50, p50 * 1.5, p50 * 2, p50, p50 / 2, p50 * 3),
        rate, rate * (items / 100 if items else 0), -1,
        client_rss_mib=client_rss, server_rss_mib=server_rss, params=params or {}, repeat_cv=cv,
    )  # fmt: skip


def _report() -> BenchReport:
    """memory:// (in process, reads grow), sqlite (fast reads, weak when
    shared), valkey (a server, best shared) and a vector backend."""
    results: list[Result] = []
    for size, memory_read in ((1000, 1000.0), (10000, 9000.0)):
        results += [
            _result("memory", "recall_newest", size, memory_read, client_rss=300.0),
            _result("memory", "save_batch", size, 3000.0, rate=300, items=100 * 100),
            _result("memory", "agent_loop", size, 40000.0, rate=150),
            _result("sqlite", "recall_newest", size, 300.0),
            _result("sqlite", "recall_newest", size, 150.0, kind="raw"),
            _result("sqlite", "save_batch", size, 4000.0, rate=200, items=100 * 100),
            _result("sqlite", "save_one", size, 300.0),
            _result("sqlite", "agent_loop", size, 6000.0, rate=1500),
            _result("sqlite", MULTI_PROCESS, size, 9000.0, rate=700, params={"processes": 4}),
            _result("valkey", "recall_newest", size, 700.0, server_rss=250.0),
            _result("valkey", "save_batch", size, 8000.0, rate=120, items=100 * 100),
            _result("valkey", "save_one", size, 1500.0),
            _result("valkey", "agent_loop", size, 10000.0, rate=900),
            _result("valkey", MULTI_PROCESS, size, 2000.0, rate=2600, params={"processes": 4}, server_rss=260.0),
            _result("qdrant", "semantic", size, 260.0, params={"recall_vs_exact": 1.0}),
            replace(_result("qdrant", "semantic", size, 150.0, kind="raw"), subject="numpy brute force"),
        ]
    return BenchReport(
        meta={
            "processes": 4,
            "storage": [
                {"backend": "memory", "url": "memory://", "multi_process": False},
                {"backend": "sqlite", "url": "sqlite:////tmp/x.db", "multi_process": True},
                {"backend": "valkey", "url": "redis://127.0.0.1:6390/0", "multi_process": True},
            ],
        },
        results=results,
    )


def _by_backend(report: BenchReport) -> dict[str, tuple[str, ...]]:
    return {s.backend: (*s.good_at, *s.costs, s.pick) for s in backend_summaries(report)}


def test_summary_covers_every_backend_with_its_measured_numbers() -> None:
    found = _by_backend(_report())
    assert list(found) == ["memory", "sqlite", "valkey", "qdrant"]
    memory, sqlite, valkey, qdrant = found["memory"], found["sqlite"], found["valkey"], found["qdrant"]
    assert any("multi-process: n/a" in t for t in memory)
    assert any(t.startswith("reads slow down as the store grows (9.0x") for t in memory)
    assert any("300 MiB" in t for t in memory)
    assert memory[-1].startswith("Pick it for tests and single-process tools with small stores")
    assert any(t.startswith("newest 20 of a thread in 300 µs at 10,000 messages (the fastest of 3)") for t in sqlite)
    assert any("reads stay flat" in t for t in sqlite)
    assert any("4 processes sharing it: 700 agent turns/s" in t and "one process: 1,500" in t for t in sqlite)
    assert any("typed API costs 2.00x the hand-written driver (median of 1 workloads)" in t for t in sqlite)
    assert sqlite[-1].startswith("Pick it for one process or one machine: the fastest reads here")
    assert any("4 processes sharing it: 2,600 agent turns/s" in t and "the most of 2" in t for t in valkey)
    assert any("server process holding 260 MiB" in t for t in valkey)
    assert any(t.startswith("one message per save takes 1.50 ms, 5.0x sqlite") for t in valkey)
    assert valkey[-1].startswith("Pick it when many worker processes or hosts share one store")
    assert any("(1.73x numpy brute force)" in t for t in qdrant)
    assert any("top 10 equal to the exact one: 100%" in t for t in qdrant)


def test_other_numbers_give_another_summary() -> None:
    report = _report()
    before = _by_backend(report)
    # valkey's reads become the fastest, and sqlite's shared throughput beats it.
    for r in report.results:
        if (r.backend, r.workload) == ("valkey", "recall_newest"):
            r.latency = replace(r.latency, p50_us=100.0)
        if (r.backend, r.workload) == ("sqlite", MULTI_PROCESS):
            r.ops_per_s = 5000.0
    after = _by_backend(report)
    assert after != before
    assert "newest 20 of a thread in 100 µs at 10,000 messages (the fastest of 3)" in after["valkey"]
    assert "newest 20 of a thread in 300 µs at 10,000 messages (2nd of 3), 3.0x valkey" in after["sqlite"]
    assert any("5,000 agent turns/s" in t and "the most of 2" in t for t in after["sqlite"])
    assert after["valkey"][-1] == "Pick it for low read latency from processes on many hosts."


def test_noisy_results_are_named_in_a_warning() -> None:
    report = _report()
    assert noisy(report) == [] and noise_warning(report) == []
    for r in report.results:
        if (r.backend, r.workload, r.size) == ("sqlite", "save_one", 10000):
            r.repeat_cv = 0.6
    assert [(r.backend, r.workload) for r in noisy(report)] == [("sqlite", "save_one")]
    (line,) = noise_warning(report)
    assert line.startswith("warning: noisy machine") and "sqlite save_one @ 10,000 (CV 0.60)" in line
    assert line in summary_text(report)
    assert line in markdown(report)


def test_repeat_cv_is_the_spread_of_block_medians() -> None:
    assert repeat_cv([100] * 24, 8) == 0.0
    spread = repeat_cv([100] * 8 + [200] * 8 + [300] * 8, 8)
    assert spread is not None and abs(spread - 0.408) < 0.001
    assert repeat_cv([100] * 16, 8) is None  # two blocks are not enough to judge


def _cli(tmp_path: Path, *extra: str) -> str:
    result = CliRunner().invoke(
        app,
        [
            "bench", "--storage", "memory://", "--sizes", "200", "--workloads", "recall_newest,save_one",
            "--duration", "0", "--min-ops", "2", "--max-ops", "2", "--vector", "none", "--no-plots",
            "--out", str(tmp_path / "out"), *extra,
        ],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return result.output


def test_cli_ends_with_the_summary_and_prints_targets_only_when_asked(tmp_path: Path) -> None:
    plain = _cli(tmp_path)
    assert "targets (measured, not asserted)" not in plain
    tail = plain[plain.index("What this run says, backend by backend") :]
    assert "memory (up to 200):" in tail and "->" in tail and "multi-process: n/a" in tail
    with_targets = _cli(tmp_path, "--targets")
    assert "targets (measured, not asserted)" in with_targets
    assert with_targets.index("targets (measured") < with_targets.index("What this run says")


def test_a_strength_that_is_not_first_says_how_close_it_is() -> None:
    # Two backends, valkey's batches 10% behind sqlite's: listed as a strength,
    # so it must not read "the slowest", and a rate is "fewest", not "slowest".
    report = _report()
    report.results = [r for r in report.results if r.backend in ("sqlite", "valkey")]
    for r in report.results:
        if (r.backend, r.workload) == ("valkey", "save_batch"):
            r.items_per_s = 18_000.0
        if (r.backend, r.workload) == ("sqlite", "save_batch"):
            r.items_per_s = 20_000.0
    valkey = next(s for s in backend_summaries(report) if s.backend == "valkey")
    batches = next(t for t in valkey.good_at if "in batches of 100" in t)
    assert batches == "18,000 messages/s in batches of 100 (the fewest of 2), within 1.11x of sqlite"
    assert not any("slowest" in t for t in valkey.good_at)

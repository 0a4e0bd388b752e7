"""What one trip to a worker thread costs, by executor arrangement (issue 14, item 5).

memory-core-sqlite runs every operation as one job on aiosqlite's worker
thread (one per store). This probe times, as p50 of ``--ops`` calls each, an
empty job and a one-row ``SELECT`` through:

- ``aiosqlite``: the store's arrangement (``Connection._execute``: a
  ``SimpleQueue`` to a dedicated thread, the result back through
  ``call_soon_threadsafe``);
- ``executor``: ``loop.run_in_executor`` on a one-thread
  ``ThreadPoolExecutor`` holding its own ``sqlite3`` connection;
- ``to_thread``: ``asyncio.to_thread`` (the loop's default pool);
- ``inline``: the same call on the event loop thread (no hop; it would block
  the loop whenever SQLite waits on a lock or the disk, so it is the floor,
  not an option),

first with the process free to use every CPU, then pinned to one CPU
(``os.sched_setaffinity``, Linux), where the worker and the event loop share
a core and a hop is a plain context switch instead of waking another core.

Usage (venv active)::

    python -m memory_core_bench.thread_hop [--ops 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import aiosqlite
from rich.console import Console
from rich.table import Table

__all__ = ["main", "measure"]

Call = Callable[[], Awaitable[Any]]


async def _p50_us(call: Call, ops: int) -> float:
    for _ in range(min(200, ops)):  # warm up
        await call()
    samples = []
    for _ in range(ops):
        start = time.perf_counter_ns()
        await call()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


async def measure(path: Path, ops: int) -> dict[tuple[str, str], float]:
    """p50 µs per (arrangement, job) for ``ops`` calls each on the database at ``path``."""
    loop = asyncio.get_running_loop()
    db = await aiosqlite.connect(path, isolation_level=None)
    pool = ThreadPoolExecutor(max_workers=1)
    pooled: sqlite3.Connection = await loop.run_in_executor(
        pool, lambda: sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    )
    inline = sqlite3.connect(path, isolation_level=None)
    jobs: dict[str, Callable[[sqlite3.Connection], Any]] = {
        "empty job": lambda conn: None,
        "one-row SELECT": lambda conn: conn.execute("SELECT value FROM t WHERE id = 1").fetchone(),
    }
    results: dict[tuple[str, str], float] = {}
    try:
        for job_name, job in jobs.items():
            for name, call in _arrangements(job, db, pool, pooled, inline).items():
                results[(name, job_name)] = await _p50_us(call, ops)
    finally:
        await db.close()
        pool.submit(pooled.close).result()
        pool.shutdown()
        inline.close()
    return results


def _arrangements(
    job: Callable[[sqlite3.Connection], Any],
    db: aiosqlite.Connection,
    pool: ThreadPoolExecutor,
    pooled: sqlite3.Connection,
    inline: sqlite3.Connection,
) -> dict[str, Call]:
    """``job`` run each way, as a no-argument awaitable call."""
    loop = asyncio.get_running_loop()
    return {
        "aiosqlite": lambda: db._execute(lambda: job(db._conn)),  # type: ignore[no-untyped-call]
        "executor": lambda: loop.run_in_executor(pool, job, pooled),
        "to_thread": lambda: asyncio.to_thread(job, pooled),
        "inline": lambda: _ready(job(inline)),
    }


async def _ready(value: Any) -> Any:
    return value


def _prepare(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, value TEXT)")
        conn.execute("INSERT INTO t VALUES (1, 'x')")


def main(argv: list[str] | None = None) -> None:
    """Print the table (µs, p50) unpinned and pinned to one CPU."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=3000, help="timed calls per cell (default 3000)")
    ops = parser.parse_args(argv).ops
    if ops < 1:
        parser.error("--ops must be >= 1")
    console = Console()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "hop.db"
        _prepare(path)
        runs = {f"all {os.cpu_count()} CPUs": asyncio.run(measure(path, ops))}
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
            runs["pinned to 1 CPU"] = asyncio.run(measure(path, ops))
    table = Table(title=f"p50 µs per call, {ops} calls each")
    table.add_column("arrangement")
    table.add_column("job")
    for label in runs:
        table.add_column(label, justify="right")
    first = next(iter(runs.values()))
    for key in first:
        table.add_row(*key, *(f"{run[key]:.1f}" for run in runs.values()))
    console.print(table)


if __name__ == "__main__":
    main()

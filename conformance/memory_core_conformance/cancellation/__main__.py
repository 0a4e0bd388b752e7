"""``python -m memory_core_conformance.cancellation``: seeded cancellation
trials of every public write on one backend, printed as a Markdown table.

Backends: ``memory`` (``memory://``), ``sqlite`` (a file in a temporary
folder), or a URL (each trial in a fresh ``namespace``; server backends
are not started here: give the URL of a running PostgreSQL, MongoDB or
Redis/Valkey). Exit status 1 when a trial failed (each failure printed)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import memory_core
from memory_core import Memory

from . import OpenMemory, check_case, table
from .cases import all_cases


def opener(backend: str, folder: str) -> OpenMemory:
    """``open_memory`` for ``backend`` (see the module docstring)."""

    @asynccontextmanager
    async def opened() -> AsyncIterator[Memory]:
        fresh = f"c{uuid.uuid4().hex[:16]}"
        if backend == "memory":
            storage = await memory_core.connect("memory://")
        elif backend == "sqlite":
            storage = await memory_core.connect(f"sqlite:///{folder}/{fresh}.db")
        else:
            storage = await memory_core.connect(backend, namespace=fresh)
        memory = Memory(storage)
        try:
            yield memory
        finally:
            await storage.destroy()
            await memory.close()

    return opened


async def run(backend: str, trials: int, seed: int, only: list[str]) -> int:
    """Run the cases (those named in ``only``, else all); print the table."""
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for case in all_cases():
            if only and case.name not in only:
                continue
            result = await check_case(opener(backend, folder), case, trials=trials, seed=seed)
            results.append(result)
            print(f"{case.name}: {result.trials} trials, {len(result.failures)} failed", file=sys.stderr, flush=True)
    print(table(results))
    failures = [line for r in results for line in r.failures]
    for line in failures[:50]:
        print(line)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memory_core_conformance.cancellation", description=__doc__)
    parser.add_argument("--backend", default="memory", help="memory, sqlite or a storage URL (default memory)")
    parser.add_argument("--trials", type=int, default=100, help="trials per write (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random cancellation points (default 0)")
    parser.add_argument("--case", action="append", default=[], help="run only this write (repeatable)")
    args = parser.parse_args(argv)
    return asyncio.run(run(args.backend, args.trials, args.seed, args.case))


if __name__ == "__main__":
    sys.exit(main())

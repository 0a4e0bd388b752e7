"""``python -m memory_core_conformance.cancellation``: seeded cancellation
trials of every public write on one backend, printed as a Markdown table.

Backends: ``memory`` (``memory://``), ``sqlite`` (a file in a temporary
folder), or a URL (each trial in a fresh ``namespace``; server backends
are not started here: give the URL of a running PostgreSQL, MongoDB or
Redis/Valkey). Each Memory pairs the storage with a vector store
(``--vector``, default the in-memory reference store ``memory://``, each
trial in a fresh namespace; ``none`` for none) and the lexical embedder, so
every write is checked with its vectors. Exit status 1 when a trial failed
(each failure printed)."""

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
from memory_core.embedders import get_embedder
from memory_core.vector import BaseVectorStore

from . import OpenMemory, check_case, table
from .cases import all_cases


def opener(backend: str, folder: str, vector: str = "memory://") -> OpenMemory:
    """``open_memory`` for ``backend`` and ``vector`` (see the module docstring)."""

    @asynccontextmanager
    async def opened() -> AsyncIterator[Memory]:
        fresh = f"c{uuid.uuid4().hex[:16]}"
        if backend == "memory":
            storage = await memory_core.connect("memory://")
        elif backend == "sqlite":
            storage = await memory_core.connect(f"sqlite:///{folder}/{fresh}.db")
        else:
            storage = await memory_core.connect(backend, namespace=fresh)
        vectors = None if vector == "none" else await memory_core.connect_vector(vector, namespace=fresh)
        embedder = None if vectors is None else get_embedder("lexical")
        memory = Memory(storage, vectors, embedder, owns_stores=False, allow_volatile_vectors=True)
        try:
            yield memory
        finally:
            await memory.close()  # the paired writes in flight finish first
            await storage.destroy()
            if isinstance(vectors, BaseVectorStore):
                await vectors.destroy()
            elif vectors is not None:
                await vectors.close()

    return opened


async def run(backend: str, trials: int, seed: int, only: list[str], vector: str = "memory://") -> int:
    """Run the cases (those named in ``only``, else all); print the table."""
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for case in all_cases():
            if only and case.name not in only:
                continue
            result = await check_case(opener(backend, folder, vector), case, trials=trials, seed=seed)
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
    parser.add_argument("--vector", default="memory://", help="vector store URL, or none (default memory://)")
    parser.add_argument("--case", action="append", default=[], help="run only this write (repeatable)")
    args = parser.parse_args(argv)
    return asyncio.run(run(args.backend, args.trials, args.seed, args.case, args.vector))


if __name__ == "__main__":
    sys.exit(main())

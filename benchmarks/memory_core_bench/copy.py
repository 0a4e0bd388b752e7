"""Copy throughput and export/import memory of ``memory_core.transfer``.

Builds a SQLite store of N messages (``--messages``, default 10^5: 100
resources x 10 threads, about 100 messages per thread, short texts with
metadata), then:

1. copies it to each destination (``--to``: ``sqlite``, another file;
   ``redis``, valkey; ``mongodb``, secantusdb; default all; and every
   ``--url``, a server of yours such as PostgreSQL, used in a namespace of
   its own that is destroyed afterwards) with
   :func:`memory_core.transfer.copy_store` and prints messages/s of the whole
   copy (export, import, verification);
2. exports it to a file and imports that into a fresh SQLite file, printing
   the peak Python heap (tracemalloc) of each, and the peak RSS of this
   process at the end.

Run::

    python -m memory_core_bench.copy --messages 100000
    python -m memory_core_bench.copy --to sqlite --url postgresql://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from memory_core import Message, Storage, Thread, connect
from memory_core.errors import ConflictError
from memory_core.transfer import copy_store, export_lines, import_lines

from memory_core_bench.servers import bench_servers

__all__ = ["build_source", "main"]

THREADS_PER_RESOURCE = 10


async def build_source(storage: Storage, messages: int) -> None:
    """Fill ``storage`` with ``messages`` messages over 100 resources of
    :data:`THREADS_PER_RESOURCE` threads each (fewer resources for small N)."""
    resources = max(1, min(100, messages // 1000))
    threads = resources * THREADS_PER_RESOURCE
    start = datetime(2024, 1, 1, tzinfo=UTC)
    for t in range(threads):
        await storage.save_thread(Thread(f"t{t}", f"r{t % resources}", f"thread {t}", {"n": t}, start, start))
    for r in range(resources):
        await storage.update_resource(f"r{r}", working_memory=f"# user {r}\n- likes benchmarks")
    batch: list[Message] = []
    for n in range(messages):
        thread = n % threads
        created = start + timedelta(milliseconds=n)
        text = f"message {n}: the quick brown fox jumps over the lazy dog"
        batch.append(
            Message(f"m{n}", f"t{thread}", "user" if n % 2 else "assistant", text, None, "v2", {"i": n}, created)
        )
        if len(batch) == 1000:
            await storage.save_messages(batch)
            batch = []
    await storage.save_messages(batch)


async def _copy(source: Storage, url: str, options: dict[str, Any], total: int, log: Callable[[str], None]) -> None:
    destination = await connect(url, **options)
    try:
        started = time.perf_counter()
        report = await copy_store(source, destination)
        whole = time.perf_counter() - started
        copied = report.imported.written["messages"]
        if not report.verified or copied != total:
            raise ConflictError(f"copy of {total} messages not verified ({copied} written): {report.difference}")
        where = urlsplit(url)
        host = f"{where.hostname}:{where.port}" if where.hostname else "a file"
        log(f"sqlite -> {where.scheme} at {host}: {total / whole:,.0f} messages/s (copy + verify, {whole:.1f} s)")
    finally:
        await destination.destroy()


async def _memory(source: Storage, folder: Path, log: Callable[[str], None]) -> None:
    file = folder / "export.jsonl"
    tracemalloc.start()
    started = time.perf_counter()
    with file.open("w", encoding="utf-8") as out:
        async for line in export_lines(source):
            out.write(line)
            out.write("\n")
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    log(f"export: {seconds:.1f} s, {file.stat().st_size / 2**20:.1f} MiB file, peak heap {peak / 2**20:.1f} MiB")
    destination = await connect(f"sqlite:///{folder / 'imported.db'}")
    try:
        tracemalloc.start()
        started = time.perf_counter()
        with file.open(encoding="utf-8") as lines:
            report = await import_lines(destination, lines)
        seconds = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        log(f"import: {seconds:.1f} s ({report.messages} messages), peak heap {peak / 2**20:.1f} MiB")
    finally:
        await destination.close()


async def _run(messages: int, backends: set[str], urls: Sequence[str], log: Callable[[str], None]) -> None:
    with tempfile.TemporaryDirectory(prefix="mc-copy-bench-") as tmp:
        folder = Path(tmp)
        source = await connect(f"sqlite:///{folder / 'source.db'}")
        started = time.perf_counter()
        await build_source(source, messages)
        log(f"built sqlite source: {messages} messages in {time.perf_counter() - started:.1f} s")
        with bench_servers(log) as servers:
            targets: list[tuple[str, dict[str, Any]]] = [(f"sqlite:///{folder / 'copy.db'}", {})]
            targets += [(server.url, {"namespace": "copybench"}) for server in servers]
            targets = [(url, options) for url, options in targets if url.split(":", 1)[0] in backends]
            targets += [(url, {"namespace": "copybench"}) for url in urls]
            for url, options in targets:
                await _copy(source, url, options, messages, log)
        await _memory(source, folder, log)
        await source.close()
    log(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m memory_core_bench.copy [--messages N]``."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000, help="messages in the source store")
    parser.add_argument(
        "--to", action="append", choices=["sqlite", "redis", "mongodb"], help="destinations (default: all three)"
    )
    parser.add_argument(
        "--url",
        action="append",
        default=[],
        help="another destination storage URL (used in namespace 'copybench', destroyed afterwards)",
    )
    args = parser.parse_args(argv)
    asyncio.run(_run(args.messages, set(args.to or ["sqlite", "redis", "mongodb"]), args.url, print))
    return 0


if __name__ == "__main__":
    sys.exit(main())

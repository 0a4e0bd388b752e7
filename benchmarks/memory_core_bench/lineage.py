"""Clone and branch of a long thread against reading it out and saving it
back through the public API (issue 24, target: >= 10x on every backend).

For each store, a thread of ``--size`` messages (default 10^4) is saved
once; then, ``--repeat`` times each (median reported):

- ``clone``: :func:`memory_core.lineage.clone_thread` of the whole thread;
- ``branch``: :func:`memory_core.lineage.branch_thread` at its last message;
- ``baseline``: ``list_messages(per_page=False)``, ``insert_thread`` and
  ``save_messages`` of the copies under new ids (what a caller without
  ``clone_thread`` does);

with the storage calls each makes (every public ``BaseStorage`` call counts
one; a store whose ``_copy_thread`` runs inside the backend makes each of
them one round trip, so a clone is 3 and a branch 4 whatever the size).

Usage (venv active)::

    python -m memory_core_bench.lineage [--size 10000] [--repeat 3] [--batch 1000] [--servers] [--cluster] [URL ...]

URLs default to ``memory://`` and a temporary ``sqlite:///`` file; pass
``--servers`` to also start valkey and secantusdb (MongoDB) for the run,
``--cluster`` a Valkey Cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from memory_core import connect, lineage
from memory_core.ids import new_message_ids
from memory_core.models import Message, Thread
from memory_core.storage import Storage

from memory_core_bench.servers import bench_servers

__all__ = ["main", "measure"]

_BATCH = 1000
_PUBLIC = (
    "get_thread",
    "insert_thread",
    "save_messages",
    "get_messages",
    "list_messages",
    "page_messages",
    "copy_thread",
)


class _Counted:
    """Counts the public storage calls made through it (the rest pass on)."""

    def __init__(self, store: Storage) -> None:
        self.store = store
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.store, name)
        if name not in _PUBLIC:
            return attr

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return await attr(*args, **kwargs)

        return counted


async def _baseline(store: Any, source: str, target: str, batch: int) -> None:
    """Read every message out and save copies back, through the public API,
    ``batch`` messages per ``save_messages``."""
    found = await store.get_thread(source)
    originals = (await store.list_messages(source, per_page=False)).items
    await store.insert_thread(Thread(target, found.resource_id, "copy"))
    ids = new_message_ids(len(originals))
    copies = [replace(m, id=i, thread_id=target, sequence=None) for m, i in zip(originals, ids, strict=True)]
    for start in range(0, len(copies), batch):
        await store.save_messages(copies[start : start + batch])


async def _timed(store: Storage, run: Callable[[Any, str], Awaitable[Any]], repeat: int) -> tuple[float, int]:
    times, calls = [], 0
    for i in range(repeat):
        counted = _Counted(store)
        target = f"copy-{time.perf_counter_ns()}-{i}"
        start = time.perf_counter()
        await run(counted, target)
        times.append(time.perf_counter() - start)
        calls = counted.calls
        await store.delete_thread(target)
    return statistics.median(times), calls


async def measure(url: str, size: int, repeat: int, batch: int = _BATCH) -> dict[str, tuple[float, int]]:
    """Seconds (median) and storage calls of clone, branch and baseline on
    ``url`` (messages saved ``batch`` per call, for the thread and the baseline)."""
    store = await connect(url)
    try:
        await store.save_thread(Thread("source", "bench"))
        for start in range(0, size, batch):
            await store.save_messages(
                [
                    Message(f"m{i:07d}", "source", "user" if i % 2 else "assistant", f"message {i} " + "x" * 200)
                    for i in range(start, min(size, start + batch))
                ]
            )
        last = f"m{size - 1:07d}"
        return {
            "clone": await _timed(store, lambda s, t: lineage.clone_thread(s, "source", t), repeat),
            "branch": await _timed(store, lambda s, t: lineage.branch_thread(s, "source", last, t), repeat),
            "baseline": await _timed(store, lambda s, t: _baseline(s, "source", t, batch), repeat),
        }
    finally:
        await store.destroy()


def _report(name: str, result: dict[str, tuple[float, int]], size: int) -> None:
    base = result["baseline"][0]
    cells = " | ".join(f"{result[k][0]:.3f} s ({result[k][1]} calls)" for k in ("clone", "branch", "baseline"))
    speed = " | ".join(f"{base / result[k][0]:.1f}x" for k in ("clone", "branch"))
    print(f"| {name} | {size} | {cells} | {speed} |", flush=True)


async def _run(stores: Sequence[tuple[str, str]], size: int, repeat: int, batch: int = _BATCH) -> None:
    print("| store | messages | clone | branch | baseline | clone speed-up | branch speed-up |")
    print("|---|---|---|---|---|---|---|")
    for name, url in stores:
        try:
            _report(name, await measure(url, size, repeat, batch), size)
        except Exception as exc:  # one store failing leaves the others' rows
            print(f"| {name} | {size} | failed: {type(exc).__name__}: {exc} | | | | |", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line (see the module docstring); prints a Markdown table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("urls", nargs="*", help="storage URLs (default: memory:// and a temporary SQLite file)")
    parser.add_argument("--size", type=int, default=10_000, help="messages in the thread (default 10000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, median reported (default 3)")
    parser.add_argument("--batch", type=int, default=_BATCH, help="messages per save_messages (default 1000)")
    parser.add_argument("--servers", action="store_true", help="also start valkey and secantusdb")
    parser.add_argument("--cluster", action="store_true", help="also start a Valkey Cluster")
    args = parser.parse_args(argv)
    backends = [*(("valkey", "mongodb") if args.servers else ()), *(("valkey-cluster",) if args.cluster else ())]
    with tempfile.TemporaryDirectory() as folder:
        urls = list(args.urls) or ["memory://", f"sqlite:///{Path(folder) / 'bench.db'}"]
        stores = [(url.split("://")[0], url) for url in urls]
        with bench_servers(print, backends) as servers:
            asyncio.run(_run([*stores, *((s.name, s.url) for s in servers)], args.size, args.repeat, args.batch))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

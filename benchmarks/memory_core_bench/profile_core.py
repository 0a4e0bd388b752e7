"""Profile one workload of the memory-core adapter with pyinstrument.

Populates a store of ``--size`` messages on ``--url`` (fresh namespace), runs
``--ops`` ops of the workload under pyinstrument and prints the call tree,
so the share of time in the core (validation, composition), the adapter and
the driver is visible. Also counts the driver round trips per op for
``sqlite://`` (aiosqlite thread hops).

Usage (from the repo root, venv active)::

    python -m memory_core_bench.profile_core --url sqlite:////tmp/prof.db --workload recall_newest --size 10000
    python -m memory_core_bench.profile_core --url redis://127.0.0.1:6379/0 --workload save_one

Needs ``pip install pyinstrument``.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from typing import Any

from memory_core_bench.dataset import Dataset
from memory_core_bench.subjects import AdapterSubject
from memory_core_bench.workloads import STORAGE_WORKLOADS, AgentLoop, Workload


def _count_hops() -> dict[str, int]:
    """Count aiosqlite calls that cross to its worker thread (when imported)."""
    counter = {"hops": 0}
    try:
        import aiosqlite.core as core
    except ImportError:
        return counter
    original: Any = core.Connection._execute

    async def counted(self: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
        counter["hops"] += 1
        return await original(self, fn, *args, **kwargs)

    core.Connection._execute = counted  # type: ignore[method-assign]
    return counter


async def main(url: str, workload_name: str, size: int, ops: int) -> None:
    from pyinstrument import Profiler

    dataset = Dataset(size)
    subject = AdapterSubject(url.split(":", 1)[0], url, f"prof_{uuid.uuid4().hex[:8]}")
    await subject.open()
    try:
        await subject.create_threads(dataset.threads)
        for batch in dataset.batches():
            await subject.save(subject.prepare(batch))
        cls = {w.name: w for w in STORAGE_WORKLOADS}[workload_name]
        workload: Workload = AgentLoop(dataset, subject, 1) if cls is AgentLoop else cls(dataset, subject)
        await workload.setup()
        for i in range(5):
            await workload.run(workload.args(i))
        hops = _count_hops()
        args = [workload.args(5 + i) for i in range(ops)]
        profiler = Profiler(interval=0.0001, async_mode="enabled")
        profiler.start()
        for a in args:
            await workload.run(a)
        profiler.stop()
        print(profiler.output_text(unicode=True, color=False, show_all=False))
        if hops["hops"]:
            print(f"aiosqlite thread hops per op: {hops['hops'] / ops:.1f}")
    finally:
        await subject.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="sqlite:////tmp/memory-core-profile.db")
    parser.add_argument("--workload", default="recall_newest", choices=[w.name for w in STORAGE_WORKLOADS])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--ops", type=int, default=500)
    options = parser.parse_args()
    asyncio.run(main(options.url, options.workload, options.size, options.ops))

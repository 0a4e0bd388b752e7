"""Cancellation safety (issue 25): every public write, cancelled at any await
point (what a timeout or Ctrl-C does), has happened completely or not at all.

A :class:`WriteCase` builds a small store (``setup``), runs one write
(``operation``) and reads the store back through public calls (``view``, a
plain comparable value; the reads are the "next caller", so a write that
leaves an intent the next caller completes is judged as that caller sees it).
:func:`check_case` runs the write once uncancelled to learn the *after* view
and how many times it suspends (its await points, ``n``), then once per trial
on a fresh store, cancelled at the k-th suspension: every k from 1 to ``n``
in turn, then k drawn from a seeded ``random.Random`` (1 to ``n + 1``; past
``n`` the write completes first). The cancelled write must raise
``CancelledError`` (or have completed) and the view must equal the *before*
view or the *after* one. A case marked ``resumable`` (a documented unit
smaller than the call, such as a prune's batches) may stop between units:
then running the write again, uncancelled, must reach the *after* view.

"Cancelled at the k-th suspension" is exact: the write runs in its own task
through a wrapper that counts the futures it awaits and calls
``task.cancel()`` as the k-th is handed to the event loop, so the
``CancelledError`` is raised at that very await. A write a driver hands to
another thread (aiosqlite) or already sent to a server still lands after the
cancellation: the view is read after a quiet moment, as a later caller would.

For adapter authors: ``open_memory`` is a factory of async context managers
that yield a :class:`~memory_core.Memory` over a fresh, empty store and clean
it up (as the suite's fixtures do); :func:`storage_cases` and
:func:`seam_cases` are the cases of memory-core's own public writes.

Run 1,000 seeded trials per write on a backend::

    python -m memory_core_conformance.cancellation --trials 1000 --backend sqlite
"""

from __future__ import annotations

import asyncio
import random
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

from memory_core import Memory
from memory_core.models import Thread, ThreadFilter

__all__ = [
    "CaseResult",
    "OpenMemory",
    "WriteCase",
    "cancel_at",
    "check_case",
    "count_suspensions",
    "snapshot",
    "table",
]

OpenMemory = Callable[[], AbstractAsyncContextManager[Memory]]
"""``open_memory()``: an async context manager yielding a Memory over a
fresh, empty store, cleaned up on exit."""

QUIET_TURNS = 20
"""Event-loop turns (and one read) given to a cancelled write's in-flight
driver work before the store is viewed."""


@dataclass(frozen=True, slots=True)
class WriteCase:
    """One public write under test.

    Attributes:
        name: what the table and failures call it.
        setup: builds the store the write starts from (uncancelled).
        operation: the write (cancelled in the trials).
        view: the store as later callers see it: a plain value compared with
            ``==`` (leave out what differs between runs: times, random ids).
        resumable: the write's documented unit is smaller than the call: a
            view between *before* and *after* is allowed when running the
            write again reaches *after*.
    """

    name: str
    setup: Callable[[Memory], Awaitable[None]]
    operation: Callable[[Memory], Awaitable[Any]]
    view: Callable[[Memory], Awaitable[Any]]
    resumable: bool = False


@dataclass(slots=True)
class CaseResult:
    """The trials of one :class:`WriteCase`.

    Attributes:
        name: the case's name.
        suspensions: the await points of an uncancelled run (``n``).
        trials: trials run.
        before: trials that left the *before* view.
        after: trials that left the *after* view.
        resumed: trials of a resumable case stopped between units (and
            completed by a second run).
        failures: one line per failed trial (seed, k, what was wrong).
    """

    name: str
    suspensions: int = 0
    trials: int = 0
    before: int = 0
    after: int = 0
    resumed: int = 0
    failures: list[str] = field(default_factory=list)


@types.coroutine
def _counted(awaitable: Awaitable[Any], on_suspend: Callable[[int], None]) -> Generator[Any, Any, Any]:
    """Run ``awaitable``, calling ``on_suspend(i)`` just before its i-th
    suspension (1-based) is handed to the event loop."""
    inner = awaitable.__await__()
    value: Any = None
    error: BaseException | None = None
    count = 0
    while True:
        try:
            yielded = inner.send(value) if error is None else inner.throw(error)
        except StopIteration as stop:
            return stop.value
        count += 1
        on_suspend(count)
        try:
            value, error = (yield yielded), None
        except BaseException as exc:  # handed back to the awaitable, which decides
            value, error = None, exc


async def count_suspensions(operation: Awaitable[Any]) -> tuple[int, Any]:
    """Run ``operation`` to the end in this task: ``(its suspensions, its result)``."""
    seen = [0]

    def note(i: int) -> None:
        seen[0] = i

    result = await _counted(operation, note)
    return seen[0], result


async def cancel_at(operation: Awaitable[Any], k: int) -> bool:
    """Run ``operation`` in a task cancelled at its k-th suspension (k >= 1).

    Returns:
        True if it ended cancelled, False if it completed first (k past its
        last suspension).

    Raises:
        AssertionError: it swallowed the cancellation (completed although
            cancelled) or raised something else.
    """
    task: asyncio.Task[Any] | None = None

    def cancel(i: int) -> None:
        if i == k and task is not None:
            task.cancel()

    async def run() -> Any:
        return await _counted(operation, cancel)

    task = asyncio.create_task(run())
    try:
        await task
    except asyncio.CancelledError:
        if not task.cancelled():
            raise
        return True
    if task.cancelling():
        raise AssertionError(f"cancelled at suspension {k} but completed: the cancellation was swallowed")
    return False


async def _quiet(memory: Memory) -> None:
    for _ in range(QUIET_TURNS):
        await asyncio.sleep(0)
    await memory.storage.get_resource("cancellation-quiet")


async def check_case(open_memory: OpenMemory, case: WriteCase, *, trials: int, seed: int = 0) -> CaseResult:
    """Run ``trials`` cancelled runs of ``case`` (each on a fresh store):
    k = 1..n first, then seeded random k (see the module docstring).

    Returns:
        :class:`CaseResult`; ``failures`` is empty when every trial passed.
    """
    result = CaseResult(case.name)
    async with open_memory() as memory:
        await case.setup(memory)
        before = await case.view(memory)
        result.suspensions, _ = await count_suspensions(case.operation(memory))
        after = await case.view(memory)
    n = result.suspensions
    rng = random.Random(f"{seed}:{case.name}")
    for trial in range(trials):
        k = trial + 1 if trial < n else rng.randint(1, n + 1)
        async with open_memory() as memory:
            await case.setup(memory)
            where = f"{case.name}: seed {seed}, trial {trial}, cancelled at suspension {k} of {n}"
            try:
                await cancel_at(case.operation(memory), k)
            except AssertionError as exc:
                result.failures.append(f"{where}: {exc}")
                continue
            await _quiet(memory)
            seen = await case.view(memory)
            result.trials += 1
            if seen == before:
                result.before += 1
            elif seen == after:
                result.after += 1
            elif case.resumable:
                try:
                    await case.operation(memory)
                except Exception as exc:  # a write that cannot be resumed: reported, not raised
                    result.failures.append(f"{where}: a second run failed: {exc!r}")
                    continue
                if await case.view(memory) == after:
                    result.resumed += 1
                else:
                    result.failures.append(f"{where}: a second run did not complete the write")
            else:
                result.failures.append(f"{where}: the store is neither before nor after:\n  {seen!r}")
    return result


async def snapshot(memory: Memory) -> dict[str | None, Any]:
    """Every resource, thread and message through public reads, without
    times: ``{resource_id: (working_memory, metadata, {thread_id: (title,
    metadata, [(id, role, content, type, metadata), ...], indexed)})}``
    (threads of a resource: those listed for it; messages oldest first;
    ``indexed``: the thread's messages with vectors, per
    :meth:`~memory_core.Memory.check_index`, None without a vector store),
    and, with a vector store, ``None`` keyed to the store's whole count of
    messages with vectors (so vectors left of deleted messages show)."""
    storage = memory.storage
    out: dict[str | None, Any] = {}
    if memory.vector is not None:
        await memory.check_index(thread_id="cancellation-quiet")  # the next caller: paired writes settle first
        out[None] = await memory.vector.count()
    async for rid in _resource_ids(memory):
        record = await storage.get_resource(rid)
        threads: dict[str, Any] = {}
        async for thread in _threads(memory, rid):
            page = await storage.list_messages(thread.id, per_page=False)
            items = [(m.id, m.role, m.content, m.type, dict(m.metadata)) for m in page.items]
            indexed = None if memory.vector is None else (await memory.check_index(thread_id=thread.id)).indexed
            threads[thread.id] = (thread.title, dict(thread.metadata), items, indexed)
        out[rid] = (
            None if record is None else record.working_memory,
            None if record is None else dict(record.metadata),
            threads,
        )
    return out


async def _resource_ids(memory: Memory) -> AsyncIterator[str]:
    cursor: str | None = None
    while True:
        page = await memory.storage.list_resource_ids(per_page=100, cursor=cursor)
        for rid in page.items:
            yield rid
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


async def _threads(memory: Memory, resource_id: str) -> AsyncIterator[Thread]:
    cursor: str | None = None
    while True:
        page = await memory.storage.list_threads(ThreadFilter(resource_id=resource_id), per_page=100, cursor=cursor)
        for thread in page.items:
            yield thread
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def table(results: Sequence[CaseResult]) -> str:
    """A Markdown table of ``results``: write, await points, trials, before,
    after, resumed, failures."""
    lines = [
        "| write | await points | trials | before | after | resumed | failures |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.name} | {r.suspensions} | {r.trials} | {r.before} | {r.after} | {r.resumed} | {len(r.failures)} |"
        )
    return "\n".join(lines)

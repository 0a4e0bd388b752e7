"""Cancellation safety (issue 25): every public write, cancelled at any await
point (what a timeout or Ctrl-C does), has happened completely or not at all.

A :class:`WriteCase` builds a small store (``setup``), runs one write
(``operation``) and reads the store back through public calls (``view``, a
plain comparable value; the reads are the "next caller", so a write that
leaves an intent the next caller completes is judged as that caller sees it).
Each run of a case writes in its own :class:`Scope` of the store: its ids
carry the scope's prefix, so trials can share an open store (opening a
server store per trial cost seconds) yet never see each other; views are
compared with the prefix taken out.

:func:`check_case` runs the write once uncancelled to learn the *after* view
and how many times it suspends (its await points, ``n``), then once per trial
in a fresh scope, cancelled at the k-th suspension: every k from 1 to ``n``
in turn, then k drawn from a seeded ``random.Random`` (1 to ``n + 1``; past
``n`` the write completes first). The cancelled write must raise
``CancelledError`` (or have completed), the view must equal the *before*
view or the *after* one, and the whole vector store's counts (vectors,
lexical documents: :func:`totals`) must have changed as they did up to that
state. A case marked ``resumable`` (a documented unit smaller than the
call, such as a prune's batches) may stop between units: then running the
write again, uncancelled, must reach the *after* view. Every ``full_every``
trials (and after the last) a full check views those trials' scopes again
(a write landing late, or in another scope, changes one) and compares the
store's totals with the sum of their changes.

"Cancelled at the k-th suspension" is exact: the write runs in its own task
through a wrapper that counts the futures it awaits and calls
``task.cancel()`` as the k-th is handed to the event loop, so the
``CancelledError`` is raised at that very await. A write a driver hands to
another thread (aiosqlite) or already sent to a server still lands after the
cancellation: the view is read after a quiet moment, as a later caller would.

For adapter authors: ``open_memory`` is a factory of async context managers
that yield a :class:`~memory_core.Memory` over a store (fresh or shared: the
trials write in their own scopes) and clean it up (as the suite's fixtures
do); :func:`~memory_core_conformance.cancellation.cases.storage_cases` and
:func:`~memory_core_conformance.cancellation.cases.seam_cases` are the cases
of memory-core's own public writes.

Run 1,000 seeded trials per write on a backend::

    python -m memory_core_conformance.cancellation --trials 1000 --backend sqlite
"""

from __future__ import annotations

import asyncio
import itertools
import random
import types
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memory_core import Memory
from memory_core.lexical_index import LexicalIndex
from memory_core.models import Thread, ThreadFilter

__all__ = [
    "FULL_EVERY",
    "T0",
    "CaseResult",
    "OpenMemory",
    "Scope",
    "WriteCase",
    "cancel_at",
    "check_case",
    "count_suspensions",
    "snapshot",
    "table",
    "totals",
]

OpenMemory = Callable[[], AbstractAsyncContextManager[Memory]]
"""``open_memory()``: an async context manager yielding a Memory over a
store (fresh or shared), cleaned up on exit; entered once per case."""

QUIET_TURNS = 20
"""Event-loop turns (and one read) given to a cancelled write's in-flight
driver work before the store is viewed."""

FULL_EVERY = 100
"""Trials between two full checks of :func:`check_case` (default)."""

T0 = datetime(2025, 1, 1, tzinfo=UTC)
"""The time of a case's first message; message i of a thread is ``T0 + i``
minutes."""

_SCOPES = itertools.count(1)


@dataclass(frozen=True, slots=True)
class Scope:
    """The ids and times one run of a case writes with, in a store other
    runs share.

    Attributes:
        prefix: put before every id the case writes (``""``: unscoped).
        resources: the unscoped resource ids :func:`snapshot` views.
    """

    prefix: str = ""
    resources: tuple[str, ...] = ("r1", "r2", "r9")

    @classmethod
    def fresh(cls) -> Scope:
        """A scope no other has used in this process (prefix ``c<n>.<random>-``)."""
        n = next(_SCOPES)
        return cls(f"c{n}.{uuid.uuid4().hex[:6]}-")

    def id(self, name: str) -> str:
        """``name`` in this scope."""
        return self.prefix + name

    def resource_ids(self) -> list[str]:
        """:attr:`resources` in this scope."""
        return [self.id(r) for r in self.resources]

    def unscoped(self, value: Any) -> Any:
        """``value`` (a view: dicts, lists, tuples, sets, strs, scalars)
        with the prefix taken out of every str, keys included, so views of
        two scopes compare."""
        if not self.prefix:
            return value
        if isinstance(value, str):
            return value.replace(self.prefix, "")
        if isinstance(value, dict):
            return {self.unscoped(k): self.unscoped(v) for k, v in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return type(value)(self.unscoped(v) for v in value)
        return value


@dataclass(frozen=True, slots=True)
class WriteCase:
    """One public write under test; each callable takes the Memory and the
    run's :class:`Scope` (every id it writes or reads through
    :meth:`Scope.id`).

    Attributes:
        name: what the table and failures call it.
        setup: builds the store the write starts from (uncancelled).
        operation: the write (cancelled in the trials).
        view: the scope as later callers see it: a plain value compared with
            ``==`` once unscoped (leave out what differs between runs:
            times, random ids).
        resumable: the write's documented unit is smaller than the call: a
            view between *before* and *after* is allowed when running the
            write again reaches *after*.
    """

    name: str
    setup: Callable[[Memory, Scope], Awaitable[None]]
    operation: Callable[[Memory, Scope], Awaitable[Any]]
    view: Callable[[Memory, Scope], Awaitable[Any]]
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
        CancelledError: the caller's task was cancelled meanwhile (the
            operation's task with it).
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
        caller = asyncio.current_task()
        if not task.cancelled() or (caller is not None and caller.cancelling()):
            raise  # this call was cancelled (a timeout, Ctrl-C): not the trial's own cancellation
        return True
    if task.cancelling():
        raise AssertionError(f"cancelled at suspension {k} but completed: the cancellation was swallowed")
    return False


async def _quiet(memory: Memory) -> None:
    for _ in range(QUIET_TURNS):
        await asyncio.sleep(0)
    await memory.storage.get_resource("cancellation-quiet")


async def totals(memory: Memory) -> tuple[int, ...]:
    """The whole vector store's count of messages with vectors and, with a
    lexical index, of lexical documents (``()`` without a vector store),
    once the Memory's paired writes in flight have settled: a trial's
    change of these must be its scope's (nothing lands outside it)."""
    vector = memory.vector
    if vector is None:
        return ()
    await memory.check_index(thread_id="cancellation-quiet")  # the next caller: paired writes settle first
    if isinstance(vector, LexicalIndex) and vector.lexical_index:
        return await vector.count(), await vector.count_documents()
    return (await vector.count(),)


def _minus(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x - y for x, y in zip(a, b, strict=True))


@dataclass(frozen=True, slots=True)
class _State:
    """A view with its scope's ids unscoped, and the :func:`totals` of the
    Memory's vector store changed since before the setup."""

    view: Any
    change: tuple[int, ...]


@dataclass(slots=True)
class _Window:
    """The trials since the last full check: each one's Memory (kept open
    until the check), scope, the view it left (as read) and where; per
    vector store (by identity), its totals before the window's first trial
    on it and the sum of the trials' changes."""

    memories: AsyncExitStack = field(default_factory=AsyncExitStack)
    views: list[tuple[Memory, Scope, Any, str]] = field(default_factory=list)
    start: dict[int, tuple[Memory, tuple[int, ...]]] = field(default_factory=dict)
    change: dict[int, tuple[int, ...]] = field(default_factory=dict)

    async def open(self, open_memory: OpenMemory) -> Memory:
        """A Memory for the next trial, open until :meth:`check`."""
        memory = await self.memories.enter_async_context(open_memory())
        if id(memory.vector) not in self.start:
            self.start[id(memory.vector)] = (memory, await totals(memory))
        return memory

    def add(self, memory: Memory, scope: Scope, seen: Any, where: str, change: tuple[int, ...]) -> None:
        """Note one trial: its scope, the view it left and its totals' change."""
        self.views.append((memory, scope, seen, where))
        before = self.change.get(id(memory.vector))
        self.change[id(memory.vector)] = change if before is None else _plus(before, change)

    async def check(self, case: WriteCase) -> list[str]:
        """The full check: every scope viewed again (a write that lands late,
        or in another trial's scope, changes one), each vector store's
        totals against its trials' changes; then the Memories are closed."""
        failures = []
        for memory, scope, seen, where in self.views:
            again = await case.view(memory, scope)
            if again != seen:
                failures.append(f"{where}: changed after the trial (full check):\n  {seen!r}\n  {again!r}")
        for key, (memory, start) in self.start.items():
            now = _minus(await totals(memory), start)
            if now != self.change.get(key, now):
                failures.append(
                    f"{case.name}: full check: vector totals changed by {now}, the trials' by {self.change[key]}"
                )
        await self.memories.aclose()
        return failures


def _plus(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x + y for x, y in zip(a, b, strict=True))


async def check_case(
    open_memory: OpenMemory, case: WriteCase, *, trials: int, seed: int = 0, full_every: int = FULL_EVERY
) -> CaseResult:
    """Run ``trials`` cancelled runs of ``case``, each in a fresh
    :class:`Scope` of the Memory ``open_memory()`` yields (entered once per
    trial, left open until the next full check): k = 1..n first, then
    seeded random k (see the module docstring); every ``full_every`` trials
    and after the last, a full check (every scope of those trials viewed
    again, the vector stores' :func:`totals`).

    Returns:
        :class:`CaseResult`; ``failures`` is empty when every trial passed.
    """
    result = CaseResult(case.name)
    async with open_memory() as memory:
        scope = Scope.fresh()
        base = await totals(memory)
        await case.setup(memory, scope)
        before = _State(scope.unscoped(await case.view(memory, scope)), _minus(await totals(memory), base))
        result.suspensions, _ = await count_suspensions(case.operation(memory, scope))
        after = _State(scope.unscoped(await case.view(memory, scope)), _minus(await totals(memory), base))
    n = result.suspensions
    rng = random.Random(f"{seed}:{case.name}")
    window = _Window()
    try:
        for trial in range(trials):
            k = trial + 1 if trial < n else rng.randint(1, n + 1)
            where = f"{case.name}: seed {seed}, trial {trial}, cancelled at suspension {k} of {n}"
            outcome = await _trial(await window.open(open_memory), case, k, where, (before, after), window)
            if outcome in ("before", "after", "resumed"):
                result.trials += 1
                setattr(result, outcome, getattr(result, outcome) + 1)
            else:
                result.trials += not outcome.startswith(f"{where}: cancelled")
                result.failures.append(outcome)
            if (trial + 1) % full_every == 0 or trial + 1 == trials:
                result.failures += await window.check(case)
                window = _Window()
    finally:
        await window.memories.aclose()
    return result


async def _trial(
    memory: Memory, case: WriteCase, k: int, where: str, ends: tuple[_State, _State], window: _Window
) -> str:
    """One trial in a fresh scope: ``"before"``, ``"after"``, ``"resumed"``,
    or the failure's line (starting with ``where``)."""
    before, after = ends
    scope = Scope.fresh()
    base = await totals(memory)
    await case.setup(memory, scope)
    try:
        await cancel_at(case.operation(memory, scope), k)
    except AssertionError as exc:
        window.add(memory, scope, await case.view(memory, scope), where, _minus(await totals(memory), base))
        return f"{where}: cancelled, then {exc}"
    await _quiet(memory)
    seen = await case.view(memory, scope)
    change = _minus(await totals(memory), base)
    state = _State(scope.unscoped(seen), change)
    outcome = "before" if state == before else "after" if state == after else None
    if outcome is None and case.resumable:
        try:
            await case.operation(memory, scope)
        except Exception as exc:  # a write that cannot be resumed: reported, not raised
            outcome = f"{where}: a second run failed: {exc!r}"
        else:
            seen = await case.view(memory, scope)
            change = _minus(await totals(memory), base)
            resumed = _State(scope.unscoped(seen), change) == after
            outcome = "resumed" if resumed else f"{where}: a second run did not complete the write"
    elif outcome is None:
        wrong = state.view not in (before.view, after.view)
        what = "the store is neither before nor after" if wrong else f"the vector totals changed by {change}"
        outcome = f"{where}: {what} (before {before.change}, after {after.change}):\n  {state.view!r}"
    window.add(memory, scope, seen, where, change)
    return outcome


async def snapshot(memory: Memory, scope: Scope) -> dict[str, Any]:
    """The scope's resources (:meth:`Scope.resource_ids`), their threads and
    messages through public reads, without times: ``{resource_id:
    (working_memory, metadata, {thread_id: (title, metadata, [(id, role,
    content, type, metadata), ...], index)}, index)}`` (``working_memory``
    and ``metadata`` None when the resource has no record; threads of a
    resource: those listed for it; messages oldest first; ``index``: what
    :meth:`~memory_core.Memory.check_index` counts for the thread or the
    resource, ``(vectors, lexical documents or None)``, so vectors and
    documents left of deleted messages show; None without a vector
    store). With a vector store, the Memory's paired writes in flight
    settle first (as for every Memory read that pairs them)."""
    storage = memory.storage
    out: dict[str, Any] = {}
    if memory.vector is not None:
        await memory.check_index(thread_id="cancellation-quiet")  # the next caller: paired writes settle first
    for rid in scope.resource_ids():
        record = await storage.get_resource(rid)
        threads: dict[str, Any] = {}
        async for thread in _threads(memory, rid):
            page = await storage.list_messages(thread.id, per_page=False)
            items = [(m.id, m.role, m.content, m.type, dict(m.metadata)) for m in page.items]
            threads[thread.id] = (thread.title, dict(thread.metadata), items, await _index(memory, thread_id=thread.id))
        out[rid] = (
            None if record is None else record.working_memory,
            None if record is None else dict(record.metadata),
            threads,
            await _index(memory, resource_id=rid),
        )
    return out


async def _index(memory: Memory, **where: str) -> tuple[int, int | None] | None:
    if memory.vector is None:
        return None
    status = await memory.check_index(**where)  # type: ignore[arg-type]
    return status.indexed, status.documents


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

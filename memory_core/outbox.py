"""Writes that pair storage and the vector index, carried out whole.

A :class:`~memory_core.Memory` write such as ``save_messages`` is two
writes: the messages into storage, then their vectors into the vector
store. Cancelled between the two (a timeout, Ctrl-C), the messages would
stay stored without vectors and semantic recall would never find them. So
each such write runs as a job of an :class:`Outbox`: a task of its own that
the caller awaits through :func:`asyncio.shield`. Cancelling the caller
raises ``CancelledError`` there at once while the job carries on to the end
(the write has then happened completely, as if the cancellation came just
after it; cancelled before the job starts, nothing is written).

The next caller completes what is outstanding: every paired write, recall,
:meth:`~memory_core.Memory.check_index`, :meth:`~memory_core.Memory.reindex`
and :meth:`~memory_core.Memory.close` first waits for the jobs in flight
(:meth:`Outbox.settle`), so a recall after a cancelled save finds its
messages, and a later write on the same thread never overtakes an earlier
one. A job whose caller was cancelled and that then failed is logged: as a
warning naming the repair (``reindex``, as for any failed vector write)
when it may have left something behind, that is when it failed after its
storage write was made (the method marks that point with :func:`wrote`) or
with anything but a refusal (a ``ValidationError``, ``NotFoundError``,
``OwnershipError`` or ``ConflictError``, raised by the checks or by a
storage write, which is all or nothing: it wrote nothing); a refused job
(say the first save to a thread that does not exist yet, which a framework
seam then creates) stored nothing, and is logged at debug level only.

The jobs live in the process: a process killed while a job runs leaves
what its storage write stored without vectors, which
:meth:`~memory_core.Memory.check_index` reports as ``behind`` and
:meth:`~memory_core.Memory.reindex` repairs. Jobs of an event loop that has
been closed are dropped (they can never run again), never waited for by
another loop. A job its loop cancelled (``asyncio.run`` returned while the
job still ran: the loop's shutdown cancels what is left) is logged as a
warning, as a failed one is: its storage write may have happened without
its vectors, which ``check_index`` reports and ``reindex`` repairs.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from memory_core.errors import ConflictError, NotFoundError, OwnershipError, ValidationError

__all__ = ["Outbox", "paired", "wrote"]

T = TypeVar("T")
P = ParamSpec("P")
S = TypeVar("S", bound="_Paired")

log = logging.getLogger("memory_core")

_REFUSALS = (ValidationError, NotFoundError, OwnershipError, ConflictError)
"""What a check or an all-or-nothing storage write raises having written nothing."""


class _Progress:
    """How far one job got: whether it started (its ``work`` awaited) and
    whether its storage write was made."""

    __slots__ = ("started", "work", "wrote")

    def __init__(self, work: Coroutine[Any, Any, Any]) -> None:
        self.work = work
        self.started = False
        self.wrote = False


_progress: ContextVar[_Progress | None] = ContextVar("memory_core_outbox_progress", default=None)


def wrote() -> None:
    """Mark the running job (a :func:`paired` method's): its storage write
    has been made, so a failure from here on may leave part of it behind
    (logged with its repair when its caller was cancelled). A no-op outside
    a job."""
    progress = _progress.get()
    if progress is not None:
        progress.wrote = True


async def _tracked(work: Coroutine[Any, Any, T], progress: _Progress) -> T:
    progress.started = True
    _progress.set(progress)  # the job's own context: a task runs in a copy
    return await work


class Outbox:
    """The paired writes of one :class:`~memory_core.Memory` in flight
    (see the module docstring). Used from any number of event loops, in
    any number of threads: each job belongs to the loop that started it,
    and the book of jobs is read and changed under one lock (three threads
    each running a loop made one's listing fail with "Set changed size
    during iteration" while another added a job)."""

    __slots__ = ("_abandoned", "_book", "_jobs", "_progress")

    def __init__(self) -> None:
        self._book = threading.Lock()
        self._jobs: set[asyncio.Task[Any]] = set()
        self._abandoned: set[asyncio.Task[Any]] = set()
        self._progress: dict[asyncio.Task[Any], _Progress] = {}

    @property
    def pending(self) -> int:
        """Jobs of the running loop not yet finished (0 outside a loop)."""
        return len(self._current())

    async def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Carry out ``work`` whole, after the jobs already in flight.

        Returns:
            what ``work`` returns.

        Raises:
            CancelledError: this call was cancelled (``work``, once started,
                still runs to its end).
            Exception: whatever ``work`` raises, when the caller still waits.
        """
        try:
            await self.settle()
        except BaseException:
            work.close()
            raise
        progress = _Progress(work)
        job = asyncio.get_running_loop().create_task(_tracked(work, progress))
        with self._book:
            self._jobs.add(job)
            self._progress[job] = progress
        job.add_done_callback(self._finished)
        try:
            return await asyncio.shield(job)
        except asyncio.CancelledError:
            if not job.done():
                with self._book:
                    self._abandoned.add(job)
            raise

    async def settle(self) -> None:
        """Wait until the running loop's jobs (and any they were waiting
        behind) have finished; their errors belong to their callers.
        Cancelling this wait leaves the jobs running."""
        while jobs := self._current():
            await asyncio.wait(jobs)

    def _current(self) -> set[asyncio.Task[Any]]:
        loop = asyncio.get_running_loop()
        with self._book:
            for job in [j for j in self._jobs if j.get_loop().is_closed()]:
                self._jobs.discard(job)
                self._abandoned.discard(job)
                self._progress.pop(job, None)
            return {j for j in self._jobs if j.get_loop() is loop and not j.done()}

    def _finished(self, job: asyncio.Task[Any]) -> None:
        with self._book:
            self._jobs.discard(job)
            abandoned = job in self._abandoned
            self._abandoned.discard(job)
            progress = self._progress.pop(job, None)
        if job.cancelled() and progress is not None and not progress.started:
            # Cancelled before its first step (asyncio.run ended just after the
            # call made it): nothing was written, and its work is closed unrun.
            progress.work.close()
            log.debug("a Memory write was cancelled by its event loop's shutdown before it started; nothing stored")
            return
        if job.cancelled():
            # Only the job's loop cancels a job (its shutdown: asyncio.run ends
            # with the write unfinished), so what it stored may lack vectors.
            log.warning(
                "a Memory write was cut off by its event loop's shutdown; what it stored may lack vectors "
                "(Memory.check_index reports it, Memory.reindex repairs it)"
            )
            return
        error = job.exception()  # retrieved here, so an abandoned job's error is never "never retrieved"
        if error is None or not abandoned:
            return
        if (progress is not None and progress.wrote) or not isinstance(error, _REFUSALS):
            log.warning("a Memory write whose caller was cancelled failed: %r (repair: Memory.reindex)", error)
        else:
            log.debug("a Memory write whose caller was cancelled was refused, nothing stored: %r", error)


class _Paired(Protocol):
    _outbox: Outbox


def paired(
    method: Callable[Concatenate[S, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, T]]:
    """Decorate a :class:`~memory_core.Memory` method that writes storage
    and then the vector index: each call runs as one job of the Memory's
    :class:`Outbox` (whole, whatever happens to the caller)."""

    @functools.wraps(method)
    async def run(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._outbox.run(method(self, *args, **kwargs))

    return run

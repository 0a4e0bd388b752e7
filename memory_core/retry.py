"""One retry policy for every retry loop, and the fault hooks that test it.

Every loop in the core and the adapters that repeats work because of a
transient state (a write that found the core's reads stale, a transaction
the server rolled back, a compare-and-set that lost a race, a reservation
held by a dead write) runs under a :class:`RetryPolicy`: a fixed number of
attempts, a pause between them (exponential backoff with full jitter,
capped) and, for exception-driven retries, a predicate naming which errors
are retried. No such loop is unbounded: when the attempts run out the last
error (or the caller's typed error) is raised.

Each recovery path an adapter has is also a *fault point*
(:class:`FaultPoint`) it declares in ``fault_points`` and fires through
:class:`Faults` (a store's ``faults``) at the place in its own code where
the real fault would surface, producing the fault the way the backend does
(PostgreSQL: the server itself raises the SQLSTATE). Tests arm a point with
:meth:`Faults.arm`; the conformance suite's ``test_faults_*`` cases arm every
declared point, so each retry path runs on every run instead of only when a
real deadlock happens to occur. Unarmed, a fault point costs one dictionary
lookup.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from memory_core.errors import ValidationError

__all__ = [
    "COMPARE_AND_SET",
    "ROLLED_BACK",
    "STALE_WRITES",
    "FaultPoint",
    "Faults",
    "RetryPolicy",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently one kind of work is repeated.

    Attributes:
        attempts: how many times the work runs at most (>= 1; 1 = no retry).
        pause_s: backoff base, in seconds: before attempt ``n + 1`` the
            policy sleeps a random 0 to ``min(max_pause_s, pause_s * 2**n)``
            seconds (full jitter, so writers that keep colliding spread
            out). 0 (the default): no pause.
        max_pause_s: the cap of one pause, in seconds (default 0).

    Raises:
        ValidationError: ``attempts`` < 1 or a negative pause.
    """

    attempts: int
    pause_s: float = 0.0
    max_pause_s: float = 0.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValidationError("attempts", f"must be >= 1, got {self.attempts}")
        if self.pause_s < 0 or self.max_pause_s < 0:
            raise ValidationError("pause_s", "pauses must be >= 0 seconds")

    def tries(self) -> Iterator[int]:
        """The attempt numbers ``1 .. attempts``: loop over them, ``return``
        on success and ``await pause(tried)`` before the next; after the loop
        raise the typed error of work that never succeeded."""
        return iter(range(1, self.attempts + 1))

    async def pause(self, tried: int) -> None:
        """Sleep before the attempt after ``tried`` (>= 1): a random 0 to
        ``min(max_pause_s, pause_s * 2**tried)`` seconds; nothing after the
        last attempt or when ``pause_s`` is 0."""
        if tried < self.attempts and self.pause_s > 0:
            await asyncio.sleep(random.uniform(0, min(self.max_pause_s, self.pause_s * 2**tried)))

    async def run(self, call: Callable[[], Awaitable[T]], retry_if: Callable[[Exception], bool]) -> T:
        """``await call()``, repeated while it raises an exception for which
        ``retry_if`` is True, at most ``attempts`` times with :meth:`pause`
        between.

        Returns:
            What ``call`` returned the first time it succeeded.

        Raises:
            Exception: what ``call`` raised, when ``retry_if`` says it is not
                retryable or on the last attempt.
        """
        for tried in range(1, self.attempts):
            try:
                return await call()
            except Exception as exc:
                if not retry_if(exc):
                    raise
            await self.pause(tried)
        return await call()


STALE_WRITES = RetryPolicy(attempts=8, pause_s=0.001, max_pause_s=0.05)
"""Optimistic writes (read, check, write re-verifying the reads): a write
whose reads went stale (:class:`~memory_core.errors.StaleStateError`) is read,
checked and written again, 8 times at most."""

ROLLED_BACK = RetryPolicy(attempts=10, pause_s=0.001, max_pause_s=0.05)
"""A transaction the server rolled back whole (a deadlock's victim, a
serialization failure) runs again, 10 times at most (24 concurrent batches
of ``[a, b]`` beside ``[b, a]`` on PostgreSQL once lost 5 in a row)."""

COMPARE_AND_SET = RetryPolicy(attempts=50)
"""A compare-and-set of one record (a version read, a write conditional on
it) that lost to another writer reads again at once, 50 times at most: each
round one of the racing writers wins."""


class FaultPoint(StrEnum):
    """A recovery path an adapter has, which tests can trigger on demand."""

    STALE_WRITE = "stale_write"
    """The write finds the core's reads stale (what a concurrent writer
    causes): the adapter raises StaleStateError from where it really detects
    it, and the core reads, checks and writes again (:data:`STALE_WRITES`)."""
    ROLLED_BACK = "rolled_back"
    """The server rolls the write's transaction back (deadlock victim,
    serialization failure): the adapter runs it again (:data:`ROLLED_BACK`)."""
    CONNECTION_LOST = "connection_lost"
    """The server closes the call's connection mid-call: the call raises a
    retryable BackendError (or succeeds on a new connection) and the store
    keeps working; no broken connection stays in use."""
    BUSY = "busy"
    """Another connection holds the backend's write lock for a moment (what a
    second writer on the same database causes): the write waits for it (the
    backend's busy handling: SQLite's busy timeout) and then succeeds."""
    LOCK_TIMEOUT = "lock_timeout"
    """Another connection holds the backend's write lock past the store's
    wait for it (SQLite: the busy timeout runs out): the call raises a
    retryable BackendError, writes nothing, and the store keeps working."""
    DEAD_WRITE = "dead_write"
    """A writer of a write taking several steps (a Redis Cluster's: claim,
    one step per slot, apply) died: ids it reserved for another resource
    stay reserved, and it never ran the write's last step; the lease of its
    intents has run out. The next write meeting such a reservation releases
    it, the next listing rolls the intents forward, and every answer is the
    one the finished write gives."""
    SCRIPTS_LOST = "scripts_lost"
    """The server forgets the scripts the adapter loaded (a restart, a
    failover, ``SCRIPT FLUSH``): the adapter loads them again and the call
    succeeds."""


class Faults:
    """The fault points armed on one store (its ``faults`` attribute).

    An adapter calls :meth:`take` at each of its fault points and, when it
    returns True, produces that fault the way its backend does. Tests call
    :meth:`arm`. Not thread-safe by design: arm it from the test's loop.

    Args:
        points: the fault points the adapter declares (its ``fault_points``).
    """

    __slots__ = ("_armed", "_fired", "points")

    def __init__(self, points: frozenset[FaultPoint]) -> None:
        self.points = points
        self._armed: dict[FaultPoint, int] = {}
        self._fired: dict[FaultPoint, int] = {}

    def arm(self, point: FaultPoint, times: int = 1) -> None:
        """Make the next ``times`` (>= 0; 0 disarms) passes through ``point``
        produce its fault.

        Raises:
            ValidationError: the adapter does not declare ``point``, or
                ``times`` < 0.
        """
        if point not in self.points:
            raise ValidationError("point", f"{point.value!r} is not one of this store's fault points")
        if times < 0:
            raise ValidationError("times", f"must be >= 0, got {times}")
        self._armed[point] = times

    def take(self, point: FaultPoint) -> bool:
        """Whether the fault at ``point`` fires now (the adapter's side):
        True uses up one armed pass and counts it in :meth:`fired`."""
        left = self._armed.get(point, 0)
        if left <= 0:
            return False
        self._armed[point] = left - 1
        self._fired[point] = self._fired.get(point, 0) + 1
        return True

    def fired(self, point: FaultPoint) -> int:
        """How many times the fault at ``point`` has fired (0 if never)."""
        return self._fired.get(point, 0)

    def armed(self, point: FaultPoint) -> int:
        """How many armed passes through ``point`` are left."""
        return self._armed.get(point, 0)

"""Time: the injectable clock and the microsecond conversions every store uses.

Rule R-TIME keeps datetimes as timezone-aware UTC with microsecond precision;
adapters store them as integer microseconds since the Unix epoch, which is
exact and orders correctly across the supported range (1900-2199).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

__all__ = [
    "EPOCH",
    "TIME_MAX",
    "TIME_MAX_US",
    "TIME_MIN",
    "TIME_MIN_US",
    "Clock",
    "ManualClock",
    "SystemClock",
    "bump_us",
    "from_us",
    "system_clock",
    "to_us",
]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US = timedelta(microseconds=1)

TIME_MIN = datetime(1900, 1, 1, tzinfo=UTC)
"""R-TIME: the earliest supported datetime (inclusive)."""
TIME_MAX = datetime(2199, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
"""R-TIME: the latest supported datetime (inclusive)."""
TIME_MIN_US = (TIME_MIN - EPOCH) // _ONE_US
""":data:`TIME_MIN` in µs since the epoch (negative)."""
TIME_MAX_US = (TIME_MAX - EPOCH) // _ONE_US
""":data:`TIME_MAX` in µs since the epoch; bumps and assigned times saturate here."""


def to_us(value: datetime) -> int:
    """Aware datetime -> integer microseconds since 1970-01-01T00:00:00Z."""
    return (value - EPOCH) // _ONE_US


def from_us(value: int) -> datetime:
    """Integer microseconds since the epoch -> aware UTC datetime."""
    return EPOCH + timedelta(0, 0, value)  # positional: twice as fast as microseconds=


def bump_us(previous_us: int, now_us: int) -> int:
    """R-BUMP: the new ``updated_at`` is now, but strictly after the previous
    value (previous + 1 µs when the clock has not moved).

    Saturates at :data:`TIME_MAX_US` (2199-12-31T23:59:59.999999Z): a value
    already at the top of the R-TIME range stays there rather than leaving it,
    so a bump never stores a time the store could not read back.
    """
    return min(max(now_us, previous_us + 1), TIME_MAX_US)


@runtime_checkable
class Clock(Protocol):
    """Where stores get "now" from (R-CLOCK, R-BUMP).

    ``now()`` returns an aware UTC datetime. ``assign()`` returns the time for
    a newly saved message that has none: "now", but strictly later (by at
    least 1 µs) than the previous time this clock assigned (saturating at
    :data:`TIME_MAX`, the end of the R-TIME range).
    """

    def now(self) -> datetime: ...

    def assign(self) -> datetime: ...


class _AssigningClock:
    """Shared ``assign()``: strictly increasing assigned times per clock."""

    def __init__(self) -> None:
        self._last_assigned_us: int | None = None
        self._lock = threading.Lock()

    def now(self) -> datetime:  # pragma: no cover - overridden
        raise NotImplementedError

    def assign(self) -> datetime:
        """Now, but at least 1 µs after the previously assigned time.

        Saturates at :data:`TIME_MAX` like :func:`bump_us`: times assigned
        there are equal, and R-ORDER's sequence keeps their save order.
        """
        with self._lock:
            now_us = to_us(self.now())
            if self._last_assigned_us is not None:
                now_us = bump_us(self._last_assigned_us, now_us)
            self._last_assigned_us = now_us
            return from_us(now_us)


class SystemClock(_AssigningClock):
    """The wall clock in UTC. Use the process-wide :data:`system_clock` so
    assigned times are strictly increasing across every store in a process."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock(_AssigningClock):
    """A clock that only moves when told to; for tests.

    Args:
        start: the initial time (aware; naive is read as UTC).
    """

    def __init__(self, start: datetime) -> None:
        super().__init__()
        self._now = start if start.tzinfo else start.replace(tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def set(self, value: datetime) -> None:
        """Jump to ``value`` (aware; naive is read as UTC)."""
        self._now = value if value.tzinfo else value.replace(tzinfo=UTC)

    def advance(self, seconds: float) -> None:
        """Move forward by ``seconds`` (may be fractional)."""
        self._now = self._now + timedelta(seconds=seconds)


system_clock = SystemClock()
"""The default clock: one per process, so R-CLOCK holds across stores."""

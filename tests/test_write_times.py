"""A write's times are decided once per call, in the core (issue 25): an
attempt that found its reads stale and runs again writes the same
``created_at`` and bump time (the Redis standalone two-process state
machine saw a 1 µs ``created_at`` mismatch after such a retry)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.clock import ManualClock, to_us
from memory_core.errors import StaleStateError
from memory_core.models import Message, Thread
from memory_core.reference import InMemoryStorage

pytestmark = pytest.mark.anyio

T = datetime(2025, 3, 1, tzinfo=UTC)


class StaleOnce(InMemoryStorage):
    """The reference store whose first write attempt decides, then finds its
    reads stale (as an adapter does when another process got in between)."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock=clock)
        self.manual = clock
        self.stale = 0
        self.bumps: list[int] = []

    async def _save_checked(self, wanted: Any, ids: Any, decide: Any, now_us: int) -> Any:
        self.bumps.append(now_us)
        if self.stale:
            self.stale -= 1
            await self._read_and_decide(wanted, ids, decide)
            self.manual.advance(0.001)  # time passes before the retry
            raise StaleStateError("another writer got in between")
        return await super()._save_checked(wanted, ids, decide, now_us)

    async def _read_and_decide(self, wanted: Any, ids: Any, decide: Any) -> None:
        threads = {t: await self.get_thread(t) for t in wanted}
        decide({k: v for k, v in threads.items() if v is not None}, await self.get_messages(ids))


async def test_a_retried_save_keeps_the_created_at_and_bump_decided_first() -> None:
    """Before: the retry assigned ``created_at`` again (T + 1 µs, as the
    clock had not moved, or the new now) and bumped at its own now."""
    clock = ManualClock(T)
    storage = StaleOnce(clock)
    async with storage:
        await storage.save_thread(Thread("t", "r", created_at=T - timedelta(days=1)))
        storage.stale = 1
        storage.bumps.clear()
        (saved,) = await storage.save_messages([Message("m", "t", "user", "hi", "r")])
        assert saved.created_at == T
        (stored,) = await storage.get_messages(["m"])
        assert stored.created_at == T
        assert storage.bumps == [to_us(T), to_us(T)]


async def test_a_save_refused_by_its_checks_takes_no_time_from_the_clock() -> None:
    clock = ManualClock(T)
    async with InMemoryStorage(clock=clock) as storage:
        await storage.save_thread(Thread("t", "r", created_at=T))
        with pytest.raises(LookupError):
            await storage.save_messages([Message("x", "missing", "user", "hi", "r")])
        (saved,) = await storage.save_messages([Message("m", "t", "user", "hi", "r")])
        assert saved.created_at == T  # the refused save assigned nothing

"""``guarded`` (every read path's single backend call) delivers a
cancellation requested while the task ran before it calls the backend: the
request is otherwise delivered at the task's next suspension, which a
driver's ``wait_for`` can swallow (issue 25: Ctrl-C ignored by a copy into
Redis on Python 3.11)."""

from __future__ import annotations

import asyncio

import pytest

from memory_core.errors import guarded

pytestmark = pytest.mark.anyio


class _Backend:
    backend_name = "test"
    backend_address = "nowhere"

    def is_retryable(self, exc: Exception) -> bool:
        return False


async def test_a_pending_cancellation_stops_the_call_before_it_is_made() -> None:
    calls: list[str] = []

    async def primitive() -> str:  # never suspends: a pending request would pass it by
        calls.append("called")
        return "result"

    async def requested_while_running() -> str:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()  # as asyncio.Runner's SIGINT handler does, between two bytecodes of the task
        return await guarded(_Backend(), "read", primitive)

    with pytest.raises(asyncio.CancelledError):
        await asyncio.create_task(requested_while_running())
    assert calls == []


async def test_a_handled_cancellation_does_not_stop_later_calls() -> None:
    async def primitive() -> str:
        return "result"

    async def cleans_up_after_a_cancellation() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return await guarded(_Backend(), "read", primitive)  # a clean-up call after the cancellation
        return "not cancelled"

    task = asyncio.create_task(cleans_up_after_a_cancellation())
    await asyncio.sleep(0)
    task.cancel()
    assert await task == "result"

"""memory_core.retry: every loop bounded, pauses capped, faults armed only
where an adapter declares them."""

from __future__ import annotations

import pytest

from memory_core.errors import StaleStateError, ValidationError
from memory_core.retry import COMPARE_AND_SET, ROLLED_BACK, STALE_WRITES, FaultPoint, Faults, RetryPolicy

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_run_retries_only_what_it_is_told_and_at_most_attempts_times() -> None:
    calls: list[int] = []

    async def failing() -> int:
        calls.append(1)
        raise StaleStateError("again")

    policy = RetryPolicy(attempts=4)
    with pytest.raises(StaleStateError):
        await policy.run(failing, lambda exc: isinstance(exc, StaleStateError))
    assert len(calls) == 4
    calls.clear()
    with pytest.raises(StaleStateError):
        await policy.run(failing, lambda exc: False)
    assert len(calls) == 1


async def test_run_returns_the_first_success() -> None:
    failures = iter([StaleStateError("a"), StaleStateError("b")])

    async def call() -> int:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return 7

    assert await RetryPolicy(attempts=3, pause_s=0.0001, max_pause_s=0.001).run(call, lambda exc: True) == 7


def test_policies_are_bounded_and_checked() -> None:
    assert [STALE_WRITES.attempts, ROLLED_BACK.attempts, COMPARE_AND_SET.attempts] == [8, 10, 50]
    assert list(RetryPolicy(attempts=3).tries()) == [1, 2, 3]
    for bad in ({"attempts": 0}, {"attempts": 2, "pause_s": -1.0}):
        with pytest.raises(ValidationError):
            RetryPolicy(**bad)  # type: ignore[arg-type]


def test_faults_fire_as_armed_and_only_declared_points() -> None:
    faults = Faults(frozenset({FaultPoint.ROLLED_BACK}))
    with pytest.raises(ValidationError, match="stale_write"):
        faults.arm(FaultPoint.STALE_WRITE)
    faults.arm(FaultPoint.ROLLED_BACK, times=2)
    assert [faults.take(FaultPoint.ROLLED_BACK) for _ in range(3)] == [True, True, False]
    assert (faults.fired(FaultPoint.ROLLED_BACK), faults.armed(FaultPoint.ROLLED_BACK)) == (2, 0)
    assert not faults.take(FaultPoint.STALE_WRITE)

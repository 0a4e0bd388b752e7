"""Plumbing shared by the differential machines: an event loop for
Hypothesis' synchronous state machines, a reference and a candidate opened
inside it, and answer comparison (exceptions compared by whether one was
raised)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager, AsyncExitStack
from typing import Any, ClassVar, Generic, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import note, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from memory_core_conformance.profiles import active_profile, shrink_time_limit

__all__ = ["DifferentialMachine", "Outcome", "integration_settings", "run_machine"]

S = TypeVar("S")

MAX_RUNS = 15
"""Sequences per run at most (a framework's reference is slower than the
reference store; the storage machine covers the storage itself)."""
MAX_STEPS = 25


def integration_settings() -> settings:
    """The active profile's state-machine settings, capped at
    :data:`MAX_RUNS` sequences of :data:`MAX_STEPS` steps."""
    profile = active_profile()
    return settings(
        profile.stateful_settings(),
        max_examples=min(profile.stateful_runs, MAX_RUNS),
        stateful_step_count=min(profile.stateful_steps, MAX_STEPS),
    )


class Outcome:
    """An answer or the exception type raised instead (compared by kind:
    both sides raising counts as agreement, as frameworks' error types
    differ)."""

    __slots__ = ("error", "value")

    def __init__(self, value: Any = None, error: BaseException | None = None) -> None:
        self.value = value
        self.error = error

    def __repr__(self) -> str:
        return f"raised {type(self.error).__name__}: {self.error}" if self.error else repr(self.value)


async def _outcome(call: Awaitable[Any]) -> Outcome:
    try:
        return Outcome(await call)
    except Exception as exc:
        return Outcome(error=exc)


class DifferentialMachine(RuleBasedStateMachine, Generic[S]):
    """Base of the integration machines.

    ``open_reference`` and ``open_candidate`` (class attributes set by the
    runner) are zero-argument callables returning an async context manager
    that yields the side's object (a session factory, a service ...); both are
    entered in one event loop and left at teardown.
    """

    open_reference: ClassVar[Callable[[], AbstractAsyncContextManager[Any]]]
    open_candidate: ClassVar[Callable[[], AbstractAsyncContextManager[Any]]]

    def __init__(self) -> None:
        super().__init__()
        self._portal_cm: AbstractContextManager[BlockingPortal] = start_blocking_portal("asyncio")
        self.portal = self._portal_cm.__enter__()
        self._stack = AsyncExitStack()
        try:
            self.reference: S = self.portal.call(self._stack.enter_async_context, type(self).open_reference())
            self.candidate: S = self.portal.call(self._stack.enter_async_context, type(self).open_candidate())
        except BaseException:
            self.portal.call(self._stack.aclose)
            self._portal_cm.__exit__(None, None, None)
            raise

    def both(self, label: str, call: Callable[[S], Awaitable[Any]]) -> tuple[Outcome, Outcome]:
        """Run ``call`` on the reference, then the candidate; note both answers."""
        note(label)
        expected = self.portal.call(_outcome, call(self.reference))
        actual = self.portal.call(_outcome, call(self.candidate))
        note(f"  -> {expected!r}")
        return expected, actual

    def compare(
        self, label: str, call: Callable[[S], Awaitable[Any]], normalise: Callable[[Any], Any] = lambda v: v
    ) -> Any:
        """:meth:`both`, then assert the answers agree (after ``normalise``);
        returns the reference's answer."""
        expected, actual = self.both(label, call)
        if expected.error is not None or actual.error is not None:
            assert (expected.error is None) == (actual.error is None), (
                f"{label}: reference {expected!r}, candidate {actual!r}"
            )
            return None
        want, got = normalise(expected.value), normalise(actual.value)
        assert got == want, f"{label}:\n  reference: {want!r}\n  candidate: {got!r}"
        return expected.value

    def teardown(self) -> None:
        try:
            self.portal.call(self._stack.aclose)
        finally:
            self._portal_cm.__exit__(None, None, None)


def run_machine(
    machine: type[DifferentialMachine[Any]],
    open_reference: Callable[[], AbstractAsyncContextManager[Any]],
    open_candidate: Callable[[], AbstractAsyncContextManager[Any]],
    machine_settings: settings | None = None,
) -> None:
    """Run ``machine`` with these sides (default settings:
    :func:`integration_settings`).

    Raises:
        AssertionError: an answer differed; the notes hold the shrunk script.
    """
    run = type(
        machine.__name__ + "Run",
        (machine,),
        {"open_reference": staticmethod(open_reference), "open_candidate": staticmethod(open_candidate)},
    )
    with shrink_time_limit(active_profile().shrink_seconds):
        run_state_machine_as_test(run, settings=machine_settings or integration_settings())

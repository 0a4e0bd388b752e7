"""The two-process state machine on a standalone server, step by step: a
save the child process decides on its cached view of the store, refused by
what this process stored."""

from __future__ import annotations

from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st
from memory_core import Message, Thread
from memory_core.clock import Clock
from memory_core_conformance.processes import ChildProcess, StoreAddress, TwoProcessStateMachine

from memory_core_redis import RedisStorage

from .conftest import new_namespace


def test_a_save_refused_after_a_guess_keeps_the_two_processes_clock_in_step(redis_standalone: str) -> None:
    """The child has cached thread ``t2`` (it saved it) but not message
    ``m3`` (this process saved it, in another resource's ``t1``), so its
    save of ``m3`` into ``t2`` is decided on a guess, draws a
    ``created_at``, and is refused by the write (ConflictError, as the
    reference refuses it). Before: the machine took that drawn time into
    the clock history both processes share, and the next message saved
    without a time got 1 µs more than the reference's (the failure of
    ``test_stateful_two_processes_match_reference[valkey]``)."""

    def factory(clock: Clock | None = None) -> RedisStorage:
        return RedisStorage.from_url(redis_standalone, clock=clock, namespace=new_namespace())

    def address(store: RedisStorage) -> StoreAddress:
        return StoreAddress(RedisStorage.from_url, (redis_standalone,), {"namespace": store.prefix})

    @settings(phases=[Phase.explicit], database=None, deadline=None)
    @given(st.none())
    @example(None)
    def steps(_: None) -> None:  # in a Hypothesis run: the machine's steps note themselves
        attributes = {"factory": staticmethod(factory), "addresser": staticmethod(address), "process": child}
        machine = type("Steps", (TwoProcessStateMachine,), attributes)()
        try:  # steps alternate: this process, the child, this process...
            threads = (Thread("t1", "r2"), Thread("t2", "r1"), Thread("t3", "r1"), Thread("T1", "r1"))
            machine.seed_threads(threads=threads)
            machine.save_messages(batch=[Message("m3", "t1", "user", "")])  # here
            machine.save_one_message_now(item=Message("m3", "t2", "user", ""))  # the child: refused on its guess
            machine.save_one_message_now(item=Message("m5", "t1", "tool", ""))  # here: the reference's time
        finally:
            machine.teardown()

    with ChildProcess() as child:
        steps()

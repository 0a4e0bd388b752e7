"""The two-process state machine on a standalone server, step by step: a
save one process decides on its cached view of the store, where the other
process stored one of its message ids."""

from __future__ import annotations

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st
from memory_core import Message, Thread
from memory_core.clock import Clock
from memory_core_conformance.processes import ChildProcess, StoreAddress, TwoProcessStateMachine

from memory_core_redis import RedisStorage

from .conftest import new_namespace


@pytest.mark.parametrize("stored_by", ["this process", "the child"])
def test_a_save_decided_on_a_stale_cache_keeps_the_two_processes_clock_in_step(
    redis_standalone: str, stored_by: str
) -> None:
    """Steps alternate: this process, the child, this process, ... Thread
    ``t1`` (another resource's) is saved here and ``t2`` in the child, so
    each process has cached its own. Then one process stores ``m3`` and the
    other saves ``m3`` again without a time, deciding on its cache (the
    thread known, the id not): it draws a ``created_at`` before its write
    finds ``m3`` stored, and the save is refused (into ``t2``: ``m3`` is
    another resource's) or keeps the stored time (into ``t1``). The next
    save without a time gets the reference's time. Before: the machine kept
    the drawn time in the clock history both processes share, and that
    save got 1 µs more than the reference's (the failures of
    ``test_stateful_two_processes_match_reference[valkey]``, dev and ci
    profiles)."""

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
        try:
            threads = (Thread("t1", "r2"), Thread("t2", "r1"), Thread("t3", "r1"), Thread("T1", "r1"))
            machine.seed_threads(threads=threads)  # here, child, here, child
            if stored_by == "this process":
                machine.save_messages(batch=[Message("m3", "t1", "user", "")])  # here
                machine.save_one_message_now(item=Message("m3", "t2", "user", ""))  # child: refused on its guess
            else:
                machine.list_resource_ids(per_page=False)  # here: a step that writes nothing
                machine.save_messages(batch=[Message("m3", "t1", "user", "")])  # child
                machine.save_one_message_now(item=Message("m3", "t1", "user", "again"))  # here: keeps its time
            machine.save_one_message_now(item=Message("m5", "t1", "tool", ""))  # the reference's time
        finally:
            machine.teardown()

    with ChildProcess() as child:
        steps()

"""R-BUMP at the top of R-TIME: bumps and assigned times saturate at the end
of the supported range instead of leaving it."""

from __future__ import annotations

import pytest

from memory_core import (
    ManualClock,
    Memory,
    Message,
    Thread,
    connect,
)
from memory_core.clock import TIME_MAX, TIME_MAX_US, bump_us, from_us

pytestmark = pytest.mark.anyio


def test_bump_us_saturates_at_the_end_of_r_time() -> None:
    assert bump_us(TIME_MAX_US, TIME_MAX_US) == TIME_MAX_US
    assert bump_us(TIME_MAX_US - 1, 0) == TIME_MAX_US
    assert bump_us(TIME_MAX_US, TIME_MAX_US + 5) == TIME_MAX_US
    assert bump_us(10, 10) == 11 and bump_us(10, 50) == 50


async def test_bumps_and_assigned_times_stay_inside_r_time_on_the_reference_store() -> None:
    clock = ManualClock(TIME_MAX)
    async with Memory(await connect("memory://", clock=clock)) as memory:
        await memory.storage.save_thread(Thread("t1", "r1", created_at=TIME_MAX, updated_at=TIME_MAX))
        updated = await memory.update_thread("t1", title="at the end of time")
        assert updated.updated_at == TIME_MAX
        saved = await memory.save_messages([Message("a", "t1", "user", "one"), Message("b", "t1", "user", "two")])
        assert [m.created_at for m in saved] == [TIME_MAX, TIME_MAX]
        assert [m.id for m in (await memory.list_messages("t1")).items] == ["a", "b"]
        thread = await memory.get_thread("t1")
        assert thread is not None and thread.updated_at == TIME_MAX
        await memory.storage.update_resource("r1", working_memory="x")
        resource = await memory.storage.update_resource("r1", working_memory="y")
        assert resource.updated_at == TIME_MAX
        # Everything stored can be read back and paged (a 2200 value could not).
        page = await memory.list_threads(order_by={"field": "updated_at", "direction": "DESC"}, per_page=1)
        assert [t.id for t in page.items] == ["t1"]
    assert from_us(TIME_MAX_US) == TIME_MAX

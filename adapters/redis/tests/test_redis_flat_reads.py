"""Reads cost what they return, not what the thread holds (issue 22, R-PAGE).

Redis has no EXPLAIN, so the check is structural, not a timing: every read
shape of :data:`memory_core_conformance.plans.READ_SHAPES` runs under
MONITOR, which also shows each command a Lua script runs, on a thread of
200 messages and on one of 10^4. The commands the scripts issue must be
the same, in number and kind, at both lengths (a loop over the thread, a
chunked walk or a count of rows would issue more), and every range read
must be bounded by the page: a ``LIMIT`` from offset 0 of at most a page
(an offset in ``LIMIT`` walks every skipped member) or a rank window of at
most a page, never ``0 -1``. Counts are ``ZCARD`` (the writes keep the
sorted sets) or ``ZLEXCOUNT`` (O(log N) bounds), never a walk.

Standalone servers only: MONITOR shows one server, and a cluster's scripts
are the same scripts.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter

import pytest
from memory_core.plan import ReadPlan
from memory_core_conformance.plans import LONG_THREAD, READ_SHAPES, load_long_thread

from memory_core_redis import RedisStorage

pytestmark = pytest.mark.anyio

SHORT_THREAD = 200
PAGE = 21
"""The widest window a read shape asks: 20 rows and one past the page."""
RANGE_READS = {"ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZRANGE", "ZREVRANGE"}
ALLOWED = RANGE_READS | {"ZCARD", "ZLEXCOUNT", "HMGET", "HGET", "EXISTS"}
"""Every command a read script may run: range reads bounded by the page,
O(1) or O(log N) counts, and one record per returned row."""


def _standalone_targets() -> list[str]:
    return ["valkey", *(["env"] if os.environ.get("REDIS_URL") else [])]


@pytest.fixture(params=_standalone_targets())
def standalone_url(request: pytest.FixtureRequest) -> str:
    """A standalone server: the session's valkey, or REDIS_URL's when set."""
    if request.param == "valkey":
        return str(request.getfixturevalue("redis_standalone"))
    return os.environ["REDIS_URL"]


async def _script_commands(store: RedisStorage, plan: ReadPlan) -> list[list[str]]:
    """The commands the scripts ran (as split words) while ``store`` read ``plan``."""
    await store._read(plan)  # warm the location caches: the measured read is one script
    marker = f"end-{uuid.uuid4().hex}"
    seen: list[list[str]] = []
    async with store.client.monitor() as monitor:
        await store._read(plan)
        await store.client.echo(marker)
        while True:
            info = await monitor.next_command()
            words = info["command"].split(" ")
            if words[0].upper() == "ECHO" and words[-1] == marker:
                return seen
            if info["client_type"] == "lua" and any(store.prefix in word for word in words[1:2]):
                seen.append([words[0].upper(), *words[1:]])


def _unbounded(command: list[str]) -> str | None:
    """Why a range read in ``command`` is not bounded by the page, or None."""
    name, args = command[0], command[1:]
    if name in ("ZRANGEBYLEX", "ZREVRANGEBYLEX"):
        if "LIMIT" not in (a.upper() for a in args):
            return "no LIMIT"
        offset, count = int(args[-2]), int(args[-1])
        if offset != 0 or not 0 <= count <= PAGE:
            return f"LIMIT {offset} {count}"
    elif name in ("ZRANGE", "ZREVRANGE"):
        start, stop = int(args[1]), int(args[2])
        if start < 0 or stop < 0 or stop - start + 1 > PAGE or len(args) > 3:
            return f"rank window {start} {stop} {args[3:]}"
    return None


async def _load(url: str, count: int) -> tuple[RedisStorage, list[str]]:
    store = RedisStorage.from_url(url, namespace=f"flat-{uuid.uuid4().hex[:12]}")
    await store.open()
    return store, await load_long_thread(store, count=count)


async def test_every_read_shape_touches_only_what_it_returns(standalone_url: str) -> None:
    short, short_ids = await _load(standalone_url, SHORT_THREAD)
    long, long_ids = await _load(standalone_url, LONG_THREAD)
    try:
        for shape, plan_of in READ_SHAPES.items():
            at_short = await _script_commands(short, plan_of(short_ids))
            at_long = await _script_commands(long, plan_of(long_ids))
            assert at_long, f"{shape}: no script command seen"
            names = Counter(c[0] for c in at_long)
            assert names == Counter(c[0] for c in at_short), (
                f"{shape}: the scripts' work grows with the thread: {names} at {LONG_THREAD:,} messages, "
                f"{Counter(c[0] for c in at_short)} at {SHORT_THREAD}"
            )
            assert set(names) <= ALLOWED, f"{shape}: unexpected commands {set(names) - ALLOWED}"
            for command in at_long:
                reason = _unbounded(command)
                assert reason is None, f"{shape}: {' '.join(command)} is not bounded by the page ({reason})"
    finally:
        for store in (short, long):
            await store.destroy()
            await store.close()

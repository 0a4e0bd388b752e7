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

On a cluster MONITOR watches the node that holds the long thread's
resource slot (every read script of these plans runs there).
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from memory_core.plan import ReadPlan
from memory_core_conformance.plans import LONG_RESOURCE_ID, LONG_THREAD, READ_SHAPES, load_long_thread
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from memory_core_redis import RedisStorage

pytestmark = pytest.mark.anyio

SHORT_THREAD = 200
PAGE = 21
"""The widest window a read shape asks: 20 rows and one past the page."""
RANGE_READS = {"ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZRANGE", "ZREVRANGE"}
ALLOWED = RANGE_READS | {"ZCARD", "ZLEXCOUNT", "HMGET", "HGET", "EXISTS"}
"""Every command a read script may run: range reads bounded by the page,
O(1) or O(log N) counts, and one record per returned row."""


def _server_of(store: RedisStorage) -> Redis:
    """A client of the server holding the long thread's resource slot."""
    client = store.client
    if isinstance(client, RedisCluster):
        node = client.get_node_from_key(store._slot(LONG_RESOURCE_ID))
        assert node is not None
        return Redis(host=node.host, port=int(node.port), decode_responses=True)
    return Redis(connection_pool=client.connection_pool)


async def _script_commands(store: RedisStorage, plan: ReadPlan) -> list[list[str]]:
    """The commands the scripts ran (as split words) while ``store`` read ``plan``."""
    await store._read(plan)  # warm the location caches: the measured read is one script
    marker = f"end-{uuid.uuid4().hex}"
    seen: list[list[str]] = []
    server = _server_of(store)
    try:
        async with server.monitor() as monitor:
            await store._read(plan)
            await server.echo(marker)
            while True:
                info = await monitor.next_command()
                words = info["command"].split(" ")
                if words[0].upper() == "ECHO" and words[-1] == marker:
                    return seen
                if info["client_type"] == "lua" and len(words) > 1 and store.prefix in words[1]:
                    seen.append([words[0].upper(), *words[1:]])
    finally:
        await server.aclose()  # a standalone server's pool is the store's: left open


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


async def test_every_read_shape_touches_only_what_it_returns(redis_target: str) -> None:
    short, short_ids = await _load(redis_target, SHORT_THREAD)
    long, long_ids = await _load(redis_target, LONG_THREAD)
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

"""EXPLAIN: every listing, count, window and id lookup is served by an index.

The planner is told to avoid sequential scans and sorts
(``enable_seqscan``/``enable_sort`` off): it still uses them when no index
can answer a query, so a ``Seq Scan`` on a table or a ``Sort`` node in such a
plan means a query shape has no index (a page would cost the whole match set).
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from memory_core.plan import ReadPlan
from memory_core.query import MessageQuery, ThreadQuery
from memory_core_conformance.plans import LONG_THREAD, READ_SHAPES, PlanStep, assert_flat, load_long_thread
from memory_core_conformance.query_shapes import MESSAGE_QUERIES, META, THREAD_QUERIES

from memory_core_postgres import PostgresStorage, _sql

# One worker runs this module (its module-scoped fixture once): the README's `--dist loadgroup`.
pytestmark = pytest.mark.xdist_group("postgres_plans")


@pytest.fixture
async def store(make_store: Callable[..., PostgresStorage]) -> AsyncIterator[PostgresStorage]:
    storage = make_store()
    await storage.open()
    yield storage
    await storage.destroy()


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    found = [plan]
    for child in plan.get("Plans", []):
        found.extend(_nodes(child))
    return found


async def _plan(store: PostgresStorage, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    async with store.pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off")
        raw = await conn.fetchval(f"EXPLAIN (FORMAT JSON) {sql}", *params)
    return _nodes(json.loads(raw)[0]["Plan"])


def _indexes_used(nodes: list[dict[str, Any]], *, sorted_by_index: bool = True) -> set[str]:
    for node in nodes:
        assert not (node["Node Type"] == "Seq Scan" and node.get("Relation Name") in ("messages", "threads")), nodes
        if sorted_by_index:
            assert node["Node Type"] not in ("Sort", "Incremental Sort"), nodes
    return {node["Index Name"] for node in nodes if "Index Name" in node}


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(MESSAGE_QUERIES))
async def test_message_page_uses_the_order_index(store: PostgresStorage, name: str) -> None:
    query = MESSAGE_QUERIES[name]
    used = _indexes_used(await _plan(store, *_sql.page_messages(query)))
    # With both a thread and its resource, either order index serves the page
    # (the planner picks by statistics); a thread alone needs the thread one.
    expected = {"messages_thread_order"} if query.thread_ids else {"messages_resource_order"}
    if query.thread_ids and query.resource_id:
        expected.add("messages_resource_order")
    assert expected & used, used


@pytest.mark.anyio
async def test_several_threads_search_the_thread_index(store: PostgresStorage) -> None:
    query = MessageQuery(("t1", "t2", "t3"), "r1", limit=10)
    # The merge of several threads is sorted; each thread is still an index search.
    used = _indexes_used(await _plan(store, *_sql.page_messages(query)), sorted_by_index=False)
    assert "messages_thread_order" in used or "messages_resource_order" in used, used


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(THREAD_QUERIES))
async def test_thread_page_uses_the_order_index(store: PostgresStorage, name: str) -> None:
    query = THREAD_QUERIES[name]
    used = _indexes_used(await _plan(store, *_sql.page_threads(query)))
    expected = f"threads_{'resource_' if query.resource_id else ''}{query.order_field.split('_')[0]}"
    assert expected in used, used


@pytest.mark.anyio
async def test_include_windows_and_id_lookups_use_indexes(store: PostgresStorage) -> None:
    used = _indexes_used(await _plan(store, *_sql.message_windows(["m1", "m2"], [3, 1], [3, 0])))
    assert {"messages_pkey", "messages_thread_order"} <= used, used
    used = _indexes_used(await _plan(store, *_sql.read_state(["t1"], ["m1", "m2"])))
    assert {"messages_pkey", "threads_pkey"} <= used, used


@pytest.mark.anyio
async def test_metadata_only_thread_filter_can_use_the_gin_index(store: PostgresStorage) -> None:
    query = ThreadQuery(None, META, "created_at", True, 0, None, None)
    sql, params = _sql.page_threads(query)
    count_only = sql.split(" LEFT JOIN LATERAL")[0].removeprefix("SELECT c.total, w.* FROM (").removesuffix(") c")
    used = _indexes_used(await _plan(store, count_only, params[:1]))
    assert "threads_meta" in used, used


@pytest.mark.anyio
@pytest.mark.parametrize("after", [None, "r1"])
async def test_resource_listing_walks_both_indexes(store: PostgresStorage, after: str | None) -> None:
    # The union sorts at most two pages of ids; each side is an ordered index walk.
    used = _indexes_used(await _plan(store, *_sql.resource_ids(after, 10)), sorted_by_index=False)
    # Either index led by resource_id walks the owners in order.
    assert "resources_pkey" in used and used & {"threads_resource_created", "threads_resource_updated"}, used


# ---------------------------------------------------------------- a long thread
# The reads of memory_core_conformance.plans.READ_SHAPES on a 10^4-message
# thread loaded in bulk, with the planner's defaults (no ANALYZE: autovacuum
# is off for the schema's tables) and after ANALYZE, and on a 10^3-message one
# without statistics (where the planner's guess of an equality's rows is 2):
# each statement _read runs is EXPLAINed with the planner free to choose, and
# must read the messages through an index in key order with a limit, sorting
# nothing.

_KINDS = {
    "Index Scan": "index",
    "Index Only Scan": "index",
    "Seq Scan": "scan",
    "Bitmap Heap Scan": "scan",
    "Sort": "sort",
    "Incremental Sort": "sort",
    "Limit": "limit",
}


@dataclass(frozen=True)
class LongThread:
    """A loaded long thread: where it lives and its message ids, oldest first."""

    url: str
    schema: str
    ids: list[str]


async def _load(url: str, namespace: str, count: int, analyzed: bool) -> LongThread:
    store = PostgresStorage.from_url(url, namespace=namespace)
    await store.open()
    try:
        await store.pool.execute(
            "ALTER TABLE messages SET (autovacuum_enabled = off); ALTER TABLE threads SET (autovacuum_enabled = off)"
        )
        ids = await load_long_thread(store, count=count)
        if analyzed:
            await store.pool.execute("ANALYZE messages; ANALYZE threads")
        return LongThread(url, store.schema, ids)
    finally:
        await store.close()


async def _drop(url: str, namespace: str) -> None:
    store = PostgresStorage.from_url(url, namespace=namespace)
    await store.destroy()


_TARGETS = ["pgserver", *(["env"] if os.environ.get("POSTGRES_URL") else [])]  # as conftest.TARGETS


_LOADS = [(LONG_THREAD, "no statistics"), (LONG_THREAD, "analyzed"), (1_000, "no statistics")]


@pytest.fixture(scope="module", params=[(t, *load) for t in _TARGETS for load in _LOADS], ids=str)
def long_thread(request: pytest.FixtureRequest) -> Iterator[LongThread]:
    """One long thread per target and statistics state, loaded once per module
    (its own event loop: each test opens its own store on the schema)."""
    target, count, statistics = request.param
    url = str(request.getfixturevalue("pg_url")) if target == "pgserver" else os.environ["POSTGRES_URL"]
    namespace = f"t{uuid.uuid4().hex[:16]}"
    loaded = asyncio.run(_load(url, namespace, count, statistics == "analyzed"))
    try:
        yield loaded
    finally:
        asyncio.run(_drop(url, namespace))


@pytest.fixture
async def long_store(long_thread: LongThread) -> AsyncIterator[PostgresStorage]:
    store = PostgresStorage.from_url(long_thread.url, schema=long_thread.schema)
    await store.open()
    yield store
    await store.close()


def _steps(plan: dict[str, Any]) -> list[PlanStep]:
    """Every node of an EXPLAIN (FORMAT JSON) plan, as the kit's PlanSteps."""
    steps = []
    for node in _nodes(plan):
        kind = _KINDS.get(node["Node Type"], "other")
        detail = " ".join(
            str(node[key])
            for key in ("Node Type", "Scan Direction", "Index Cond", "Filter", "One-Time Filter", "Sort Key")
            if key in node
        )
        steps.append(PlanStep(kind, node.get("Relation Name"), node.get("Index Name"), detail))  # type: ignore[arg-type]
    return steps


async def _explain(store: PostgresStorage, plan: ReadPlan) -> list[PlanStep]:
    """The plan of the one statement ``_read(plan)`` runs, normalised."""
    sql, params = _sql.read_plan(plan)
    raw = await store.pool.fetchval(f"EXPLAIN (FORMAT JSON) {sql}", *params)
    return _steps(json.loads(raw)[0]["Plan"])


@pytest.mark.anyio
@pytest.mark.parametrize("shape", sorted(READ_SHAPES))
async def test_long_thread_reads_cost_what_they_return(
    long_thread: LongThread, long_store: PostgresStorage, shape: str
) -> None:
    plan = READ_SHAPES[shape](long_thread.ids)
    steps = await _explain(long_store, plan)
    assert_flat(shape, steps)
    read = [s for s in steps if s.relation == "messages"]
    if plan.windows or (plan.messages is not None and plan.messages.limit):
        # The rows come from an order index walked from one end (or from a
        # window's target), stopped by a limit.
        assert any(s.index in ("messages_thread_order", "messages_resource_order") for s in read), steps
        assert any(s.kind == "limit" for s in steps), steps
    else:  # the total alone is the thread's counter: no message row is read
        assert not read, steps
    # The answer itself is what the core asked for.
    parts = await long_store._read(plan)
    if plan.messages is not None:
        expected = len(long_thread.ids) + (0 if plan.messages.thread_ids else 50)  # + the side thread
        assert parts.message_total == (expected if plan.messages.count and plan.messages.unfiltered else 0)
        assert len(parts.messages) == (plan.messages.limit or 0)


@pytest.mark.anyio
async def test_a_read_that_loses_its_index_fails_the_plan_check(long_store: PostgresStorage) -> None:
    # Without the thread order index the newest page must scan or sort the
    # thread: the normalised plan shows it and assert_flat refuses it.
    plan = READ_SHAPES["newest 20"]([])
    async with long_store.pool.acquire() as conn:
        transaction = conn.transaction()
        await transaction.start()
        try:
            await conn.execute("DROP INDEX messages_thread_order")
            sql, params = _sql.read_plan(plan)
            raw = await conn.fetchval(f"EXPLAIN (FORMAT JSON) {sql}", *params)
        finally:
            await transaction.rollback()  # the index stays for the other tests
    with pytest.raises(AssertionError, match="newest 20"):
        assert_flat("newest 20", _steps(json.loads(raw)[0]["Plan"]))
